//! [`Client`], the handle of one session: connecting, waiting for the
//! connection, credentials, the session's state, and closing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::inner::{state_error, Inner, Settings, Worker};
use super::types::{ClientConfig, ClientState, RegisteredWatches, SessionEvent};
use super::{connect_string, events, io};
use crate::error::{Error, Result, SaslError, TlsError};
use zk_proto::{xid, AuthPacket, ErrorCode, OpCode};

/// How long `close` waits for the closeSession reply.
const CLOSE_SESSION_WAIT: Duration = Duration::from_secs(1);
/// How long `close` waits for the threads to end before detaching them.
const JOIN_WAIT: Duration = Duration::from_millis(500);

/// A handle to one ZooKeeper session. Clone it freely: clones share the session,
/// the connection and the threads. The session is closed by [`Client::close`] or
/// when the last clone is dropped.
///
/// A watcher that captures a clone keeps the handle alive until it fires or the
/// client is closed.
///
/// # Errors
///
/// Every operation returns [`Error`]: client-side checks
/// ([`Error::InvalidPath`], [`Error::DataTooLarge`], [`Error::InvalidArgument`])
/// before anything is sent; [`Error::ConnectionLoss`] when not connected or when
/// the connection died with the call in flight (it may or may not have been
/// applied); [`Error::OperationTimeout`] past the call bound;
/// [`Error::SessionExpired`], [`Error::AuthFailed`] or [`Error::Closed`] on a
/// dead handle; otherwise the server's code for the path.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_framework::{Client, ClientConfig};
///
/// let zk = Client::connect("127.0.0.1:2181,127.0.0.1:2182/app", ClientConfig::default())?;
/// zk.wait_connected_timeout(Duration::from_secs(10))?;
/// let worker = zk.clone();
/// std::thread::spawn(move || worker.exists("/x")).join().unwrap()?;
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    handle: Arc<Handle>,
    /// Every request of this handle ends by then (plus the grace).
    deadline: Option<Instant>,
}

/// Closes the session when the last `Client` clone goes away (the threads hold
/// only `Inner`).
struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        close_inner(&self.inner);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let core = self.inner().core.lock();
        f.debug_struct("Client")
            .field("session_id", &format_args!("{:#x}", core.session_id))
            .field("state", &core.state)
            .field("chroot", &self.inner().chroot)
            .finish()
    }
}

fn close_inner(inner: &Arc<Inner>) {
    if inner.closing.swap(true, Ordering::AcqRel) {
        return;
    }
    let connected = inner.core.lock().state.is_connected();
    if connected {
        let deadline = Instant::now() + CLOSE_SESSION_WAIT;
        match inner.call(OpCode::CloseSession, None, None, true, Some(deadline), None) {
            Ok(r) if r.header.err == 0 => log::debug!("session closed"),
            Ok(r) => log::debug!("closeSession answered {}", r.header.err),
            Err(e) => log::debug!("closeSession: {e}"),
        }
    }
    inner.terminate(ClientState::Closed);
    let _ = inner.wake_tx.try_send(());
    let workers = std::mem::take(&mut *inner.workers.lock());
    let me = thread::current().id();
    let deadline = Instant::now() + JOIN_WAIT;
    for w in workers {
        if w.handle.thread().id() == me {
            continue; // closing from a watcher: this thread ends after it returns
        }
        w.join_until(deadline);
    }
}

fn timeout_ms(what: &str, d: Duration) -> Result<i32> {
    if d.is_zero() {
        return Err(Error::InvalidArgument(format!("{what} must not be zero")));
    }
    i32::try_from(d.as_millis())
        .ok()
        .filter(|&ms| ms > 0)
        .ok_or_else(|| Error::InvalidArgument(format!("{what} {d:?} is out of range (1 ms ..= i32::MAX ms)")))
}

impl Client {
    /// This session, through a handle whose every request ends by
    /// `deadline`: a request waits for its reply until the deadline plus
    /// [`crate::deadline::GRACE`] at most (so that a zero timeout can still
    /// make its one attempt on a healthy connection, and the cleanup after a
    /// deadline is answered), and fails with [`Error::DeadlineExceeded`] when
    /// that is what ended the wait; the connection is left alone (a late reply
    /// is read and dropped). The earlier of this handle's deadline and
    /// `deadline` holds; `None` adds none. Cheap: a clone.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::{Duration, Instant};
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let bounded = zk.with_deadline(Some(Instant::now() + Duration::from_millis(200)));
    /// let _ = bounded.exists("/x"); // at most 200 ms + the grace
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_deadline(&self, deadline: Option<Instant>) -> Client {
        Client {
            handle: self.handle.clone(),
            deadline: crate::deadline::earlier(self.deadline, deadline),
        }
    }

    /// The deadline of this handle ([`Client::with_deadline`]), if any.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// assert_eq!(zk.deadline(), None);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// How long a request of this handle may wait for its reply at most.
    pub(crate) fn request_bound(&self) -> Option<Instant> {
        crate::deadline::request_bound(self.deadline)
    }

    pub(super) fn inner(&self) -> &Arc<Inner> {
        &self.handle.inner
    }

    /// Parses `connect_string`, checks `config`, starts the client's threads and
    /// returns at once; the session is established in the background (see
    /// [`Client::wait_connected`]). Calls fail with [`Error::ConnectionLoss`] until
    /// then.
    ///
    /// The connect string is `host[:port][,host[:port]...][/chroot]`: hosts are
    /// IPv4 literals, names, or bracketed IPv6 literals (`[::1]:2181`); the port
    /// defaults to 2181; whitespace around hosts and empty entries are ignored;
    /// the chroot must be a valid path (`/` means none). Hosts are shuffled.
    /// A `zks://` prefix says the servers speak TLS: it requires
    /// [`ClientConfig::with_tls`] (TLS settings alone are enough too).
    /// Names are resolved here once: at least one host must resolve. A host that
    /// does not resolve later is skipped (each attempt resolves again).
    ///
    /// # Errors
    ///
    /// * [`Error::InvalidConnectString`]: empty or malformed string, bad port (0,
    ///   over 65535, not a number), bad chroot, no host resolves, or `zks://`
    ///   without TLS settings.
    /// * [`Error::InvalidArgument`]: a zero timeout, a timeout over `i32::MAX`
    ///   ms, `max_frame` of 0 or over `i32::MAX`, a resumed session id of 0, or
    ///   a malformed credential (see [`ClientConfig::validate_auth`]: a
    ///   `digest` without `:`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    ///
    /// ```
    /// use zk_framework::{Client, ClientConfig, Error};
    /// let bad = ClientConfig::default().with_auth("digest", b"no-colon");
    /// assert!(matches!(Client::connect("127.0.0.1:2181", bad), Err(Error::InvalidArgument(_))));
    /// ```
    ///
    /// ```
    /// use zk_framework::{Client, ClientConfig, Error};
    /// let e = Client::connect("host:99999", ClientConfig::default()).unwrap_err();
    /// assert!(matches!(e, Error::InvalidConnectString { .. }));
    /// ```
    pub fn connect(connect_string: &str, config: ClientConfig) -> Result<Client> {
        // One credential rule for the raw client, the managed one and zk-lock.
        for (scheme, auth) in &config.auth {
            ClientConfig::validate_auth(scheme, auth)?;
        }
        let cs = match connect_string.trim_start().strip_prefix("zks://") {
            Some(_) if config.tls.is_none() => {
                return Err(Error::InvalidConnectString {
                    input: connect_string.to_string(),
                    reason: "zks:// asks for TLS, and no TLS settings were given (ClientConfig::with_tls, \
                             CuratorFrameworkBuilder::tls)"
                        .into(),
                })
            }
            Some(rest) => connect_string::parse(rest)?,
            None => connect_string::parse(connect_string)?,
        };
        let requested_timeout_ms = timeout_ms("session timeout", config.session_timeout)?;
        timeout_ms("connect timeout", config.connect_timeout)?;
        if config.max_frame == 0 || config.max_frame > i32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "max_frame {} is out of range",
                config.max_frame
            )));
        }
        if let Some((id, _)) = &config.session {
            if *id == 0 {
                return Err(Error::InvalidArgument("a resumed session id must not be 0".into()));
            }
        }
        if !cs
            .hosts
            .iter()
            .any(|h| h.resolve().map(|a| !a.is_empty()).unwrap_or(false))
        {
            return Err(Error::InvalidConnectString {
                input: connect_string.to_string(),
                reason: "no host resolves to an address".into(),
            });
        }
        let hosts = cs.hosts;
        let (etx, erx) = crossbeam_channel::unbounded();
        let inner = Arc::new(Inner::new(
            Settings {
                hosts,
                chroot: cs.chroot,
                requested_timeout_ms,
                connect_timeout: config.connect_timeout,
                read_only: config.read_only,
                max_frame: config.max_frame,
                session: config.session,
                auth: config.auth,
                tls: config.tls,
                sasl: config.sasl,
            },
            etx,
        ));
        let spawn_err = |e: std::io::Error| {
            log::error!("cannot start a zk client thread: {e}");
            Error::from_code(ErrorCode::SystemError, "")
        };
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let queued = inner.events_queued.clone();
        let ev = thread::Builder::new()
            .name("zk-event".into())
            .spawn(move || {
                let _done = done_tx;
                events::event_main(erx, queued)
            })
            .map_err(spawn_err)?;
        let _ = inner.event_thread.set(ev.thread().id());
        inner.workers.lock().push(Worker {
            handle: ev,
            done: done_rx,
        });
        let client = Client {
            handle: Arc::new(Handle { inner: inner.clone() }),
            deadline: None,
        };
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let io_inner = inner.clone();
        let io = thread::Builder::new()
            .name("zk-io".into())
            .spawn(move || {
                let _done = done_tx;
                io::io_main(io_inner)
            })
            .map_err(spawn_err)?;
        let _ = inner.io_thread.set(io.thread().id());
        inner.workers.lock().push(Worker {
            handle: io,
            done: done_rx,
        });
        Ok(client)
    }

    /// Waits until the client is connected or `deadline` passes.
    ///
    /// # Errors
    ///
    /// [`Error::ConnectionLoss`] if still not connected at the deadline, or
    /// [`Error::Tls`] then if the latest connection attempt failed in TLS (an
    /// unknown CA, a name mismatch, an expired certificate, a client certificate
    /// required or refused, a port that does not speak TLS, or a plain client on
    /// a TLS port). [`Error::Tls`] at once, before the deadline, when every
    /// server of a whole round refused the handshake in a way no retry mends
    /// ([`TlsErrorKind::is_certain`](crate::error::TlsErrorKind::is_certain)). [`Error::SessionExpired`],
    /// [`Error::AuthFailed`] or [`Error::Closed`] on a dead handle.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::{Duration, Instant};
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.wait_connected(Instant::now() + Duration::from_secs(5))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn wait_connected(&self, deadline: Instant) -> Result<()> {
        let inner = self.inner();
        let mut core = inner.core.lock();
        loop {
            if inner.is_closing() {
                return Err(Error::Closed);
            }
            match core.state {
                s if s.is_connected() => return Ok(()),
                ClientState::Connecting => {
                    // Every server refused in a way no retry mends: say so now.
                    if let Some(e) = inner.certain_refusal.lock().clone() {
                        return Err(Error::Tls(e));
                    }
                    if inner.cond.wait_until(&mut core, deadline).timed_out() {
                        if core.state.is_connected() {
                            return Ok(());
                        }
                        if core.state == ClientState::Connecting {
                            if let Some(e) = inner.last_tls_error.lock().clone() {
                                return Err(Error::Tls(e));
                            }
                            if let Some(e) = inner.last_sasl_error.lock().clone() {
                                return Err(Error::Sasl(e));
                            }
                        }
                        return Err(state_error(inner, core.state));
                    }
                }
                s => return Err(state_error(inner, s)),
            }
        }
    }

    /// Why the latest finished connection attempt failed in TLS, if it did.
    pub(crate) fn last_tls_error(&self) -> Option<TlsError> {
        self.inner().last_tls_error.lock().clone()
    }

    /// What a call on a client ended in `AuthFailed` is told: the SASL
    /// refusal when there is one, else [`Error::AuthFailed`].
    pub(crate) fn auth_failure(&self) -> Error {
        state_error(self.inner(), ClientState::AuthFailed)
    }

    /// Why the latest finished connection attempt failed in SASL, if it did.
    pub(crate) fn last_sasl_error(&self) -> Option<SaslError> {
        self.inner().last_sasl_error.lock().clone()
    }

    /// Why the client is not connected, if a connection attempt has failed
    /// since the last connection: the TLS error, or [`Error::ConnectFailed`]
    /// with the attempt's reason (for example `127.0.0.1:2181: Connection
    /// refused`).
    pub(crate) fn connect_failure(&self) -> Option<Error> {
        let inner = self.inner();
        if let Some(t) = inner.last_tls_error.lock().clone() {
            return Some(Error::Tls(t));
        }
        if let Some(e) = inner.last_sasl_error.lock().clone() {
            return Some(Error::Sasl(e));
        }
        let reason = inner.last_connect_failure.lock().clone()?;
        Some(Error::ConnectFailed { reason })
    }

    /// A TLS refusal that every server gave in the latest round and that no
    /// retry can mend (see [`TlsErrorKind::is_certain`](crate::error::TlsErrorKind::is_certain)).
    pub(crate) fn certain_refusal(&self) -> Option<TlsError> {
        self.inner().certain_refusal.lock().clone()
    }

    /// The connection epoch (see [`Recipe::connection_epoch`](crate::recipe::Recipe::connection_epoch)).
    pub(crate) fn connection_epoch(&self) -> u64 {
        self.inner().epoch()
    }

    /// When the latest request that a server answered was sent (see
    /// [`Client::since_last_confirmed`]).
    pub(crate) fn confirmed_at(&self) -> Instant {
        self.inner().confirmed_at()
    }

    /// [`Client::wait_connected`] with a timeout.
    ///
    /// # Errors
    ///
    /// As [`Client::wait_connected`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.wait_connected_timeout(Duration::from_secs(5))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn wait_connected_timeout(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        self.wait_connected(deadline)
    }

    /// Adds credentials to the session (e.g. `("digest", b"user:password")`) and
    /// waits for the server's answer. The credentials are kept and re-sent after
    /// every reconnect, also when this call fails with ConnectionLoss.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty scheme; [`Error::AuthFailed`] if
    /// the server rejects them (the handle is then dead, as in Java);
    /// [`Error::ConnectionLoss`] when not connected (sent on reconnect);
    /// [`Error::OperationTimeout`], [`Error::SessionExpired`], [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.add_auth("digest", b"alice:secret")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<()> {
        if scheme.is_empty() {
            return Err(Error::InvalidArgument("empty auth scheme".into()));
        }
        let inner = self.inner();
        if inner.is_closing() {
            return Err(Error::Closed);
        }
        let frame = zk_proto::frame::request_frame(
            xid::AUTH,
            OpCode::Auth,
            Some(&AuthPacket {
                auth_type: 0,
                scheme: scheme.to_string(),
                auth: auth.to_vec(),
            }),
        );
        if frame.len() - 4 > inner.max_frame {
            return Err(Error::DataTooLarge {
                len: auth.len(),
                max: inner.max_frame,
            });
        }
        let deadline = Instant::now() + inner.call_bound();
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let Some(wire) = inner.wire.try_lock_until(deadline) else {
                return Err(Error::OperationTimeout);
            };
            let mut core = inner.core.lock();
            if core.state.is_terminal() {
                return Err(state_error(inner, core.state));
            }
            core.auth.push((scheme.to_string(), auth.to_vec()));
            if wire.stream.is_none() || !core.state.is_connected() {
                return Err(Error::ConnectionLoss);
            }
            core.auth_waiters.push_back(Some(tx));
            drop(core);
            inner.write_frame(wire, frame, false);
        }
        match rx.recv_deadline(deadline) {
            Ok(0) => Ok(()),
            Ok(code) => Err(Error::from_raw(code, "")),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(Error::OperationTimeout),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(Error::ConnectionLoss),
        }
    }

    /// A new receiver of session events; it gets every event from now on, in
    /// order. Several receivers may subscribe. The channel is unbounded: drop the
    /// receiver when done. Check [`Client::state`] after subscribing for the
    /// current state.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, SessionEvent};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let events = zk.state_receiver();
    /// for ev in events.iter() {
    ///     if ev == SessionEvent::Expired {
    ///         break; // build a new Client
    ///     }
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn state_receiver(&self) -> Receiver<SessionEvent> {
        self.inner().core.lock().subscribe()
    }

    /// The current state.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, ClientState};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// if zk.state() == ClientState::Expired { /* make a new client */ }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn state(&self) -> ClientState {
        self.inner().core.lock().state
    }

    /// Hands the client a new list of servers (a connect string; its chroot,
    /// if any, is ignored: a client's chroot never changes), as ZooKeeper's
    /// `updateServerList` does: the session is kept, and only as many
    /// clients move as balance the new list (ZooKeeper's probabilistic rule:
    /// from 3 servers to 5, each client moves with probability 2/5, to one
    /// of the 2 new ones; a client whose server is gone always moves; one
    /// whose server stays in a list that did not grow stays). A client that
    /// moves drops its connection at once and reconnects (same session) to a
    /// server chosen by that rule. Returns whether it moves.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConnectString`] for a connect string that does not
    /// parse (nothing changes: a client never has an empty list);
    /// [`Error::Closed`] on a closed client.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("zk1:2181,zk2:2181,zk3:2181", ClientConfig::default())?;
    /// // zk3 was replaced by zk4.
    /// let moved = zk.update_server_list("zk1:2181,zk2:2181,zk4:2181")?;
    /// assert_eq!(zk.server_list().len(), 3);
    /// # let _ = moved;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn update_server_list(&self, connect_string: &str) -> Result<bool> {
        let cs = connect_string::parse(connect_string)?;
        let inner = self.inner();
        if inner.is_closing() {
            return Err(Error::Closed);
        }
        if let (Some(new), old) = (&cs.chroot, &inner.chroot) {
            if Some(new) != old.as_ref() {
                log::warn!("update_server_list: the chroot {new} of the new connect string is ignored (a client's chroot never changes)");
            }
        }
        // DNS before the lock: the I/O thread takes it to pick a server.
        let resolved = super::hosts::HostProvider::resolve_all(&cs.hosts);
        let decision = inner.hosts.lock().update(cs.hosts, &resolved);
        let moved = decision == super::hosts::Decision::Move;
        crate::metrics::server_list_updated(inner.hosts.lock().len(), moved);
        log::info!(
            "server list updated to {} server(s){}",
            inner.hosts.lock().len(),
            if moved { ": moving to another server" } else { "" }
        );
        if moved {
            inner.kill(None, "the server list changed: moving to another server");
        }
        Ok(moved)
    }

    /// The servers the client chooses from, as `host:port` (in the order it
    /// tries them).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let zk = zk_framework::Client::connect("127.0.0.1:2181", Default::default())?;
    /// assert_eq!(zk.server_list(), vec!["127.0.0.1:2181".to_string()]);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn server_list(&self) -> Vec<String> {
        self.inner()
            .hosts
            .lock()
            .hosts()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The server (`host:port`, as the server list names it) of the current
    /// connection; `None` while not connected.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let zk = zk_framework::Client::connect("127.0.0.1:2181", Default::default())?;
    /// zk.wait_connected(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// assert_eq!(zk.connected_to().as_deref(), Some("127.0.0.1:2181"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn connected_to(&self) -> Option<String> {
        if !self.state().is_connected() {
            return None;
        }
        self.inner().hosts.lock().current().map(ToString::to_string)
    }

    /// The session id (0 before the first connection).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// println!("session {:#x}", zk.session_id());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_id(&self) -> i64 {
        self.inner().core.lock().session_id
    }

    /// The session password (16 zero bytes before the first connection); with
    /// [`Client::session_id`] it lets another client resume the session
    /// ([`ClientConfig::session`]).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let resume = ClientConfig::default().with_session(zk.session_id(), zk.session_password());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_password(&self) -> Vec<u8> {
        self.inner().core.lock().password.clone()
    }

    /// The session timeout the server granted (`None` before the first
    /// connection).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let t = zk.negotiated_timeout();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        let ms = self.inner().core.lock().negotiated_ms;
        (ms > 0).then(|| Duration::from_millis(ms as u64))
    }

    /// The largest zxid seen in a reply (0 before any).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let z = zk.last_zxid();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn last_zxid(&self) -> i64 {
        self.inner().core.lock().last_zxid
    }

    /// How many TCP connection attempts the client has made, successful or
    /// not (a diagnostic: a client that reconnects in a loop shows it here).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// println!("{} attempts", zk.connect_attempts());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn connect_attempts(&self) -> u64 {
        self.inner().attempts.load(Ordering::Relaxed)
    }

    /// The chroot of the connect string, if any.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```
    /// # use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:1/app", ClientConfig::default())?;
    /// assert_eq!(zk.chroot(), Some("/app"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn chroot(&self) -> Option<&str> {
        self.inner().chroot.as_deref()
    }

    /// The watches registered now, by kind and path (client paths), and the
    /// number of watcher callbacks behind them: what a reconnect re-registers
    /// with `SetWatches` (a diagnostic, and what tests check).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// assert!(zk.registered_watches().is_empty());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn registered_watches(&self) -> RegisteredWatches {
        let inner = self.inner();
        let snap = inner.core.lock().watches.snapshot();
        let strip = |v: Vec<String>| v.into_iter().map(|p| inner.client_path(&p)).collect();
        RegisteredWatches {
            data: strip(snap.data),
            exist: strip(snap.exist),
            child: strip(snap.child),
            persistent: strip(snap.persistent),
            persistent_recursive: strip(snap.recursive),
            callbacks: snap.callbacks,
        }
    }

    /// Closes the session: sends closeSession when connected (waiting up to 1 s
    /// for the reply), fails every pending call with [`Error::Closed`], sends
    /// [`SessionEvent::Closed`], and stops the threads (waiting up to 0.5 s, then
    /// detaching them). Takes at most about 1.5 s. Idempotent (a second call,
    /// also from another thread, returns at once); also done when the last clone
    /// is dropped. May be called from a watcher.
    ///
    /// # Errors
    ///
    /// None: closing always succeeds locally.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, ClientState};
    /// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.close();
    /// assert_eq!(zk.state(), ClientState::Closed);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn close(&self) {
        close_inner(self.inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_config_is_rejected() {
        let bad = |c: ClientConfig| matches!(Client::connect("127.0.0.1:1", c), Err(Error::InvalidArgument(_)));
        assert!(bad(ClientConfig::default().with_session_timeout(Duration::ZERO)));
        assert!(bad(
            ClientConfig::default().with_session_timeout(Duration::from_secs(u64::MAX / 4))
        ));
        assert!(bad(
            ClientConfig::default().with_session_timeout(Duration::from_millis(i32::MAX as u64 + 1))
        ));
        assert!(bad(ClientConfig::default().with_connect_timeout(Duration::ZERO)));
        assert!(bad(ClientConfig {
            max_frame: 0,
            ..Default::default()
        }));
        assert!(bad(ClientConfig::default().with_session(0, vec![0; 16])));
        assert!(matches!(
            Client::connect(&format!("{}.invalid:2181", "x".repeat(64)), ClientConfig::default()),
            Err(Error::InvalidConnectString { .. })
        ));
    }

    #[test]
    fn client_is_send_sync() {
        fn ok<T: Send + Sync + Clone>() {}
        ok::<Client>();
    }
}
