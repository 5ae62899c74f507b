//! A synchronous ZooKeeper client whose sessions survive faults.
//!
//! One [`Client`] handle (cheap to clone, `Send + Sync`) is shared by any number of
//! threads. Requests are pipelined over one TCP connection: each caller writes
//! its own request and waits for its own reply; replies are matched to the FIFO
//! of in-flight requests.
//!
//! # Session rules (those of the Java 3.8 client)
//!
//! * [`Client::connect`] parses and validates, starts two threads (I/O and
//!   events) and returns at once; the first connection is made in the background
//!   ([`Client::wait_connected`] waits for it).
//! * Each connection attempt (TCP connect + handshake) to one address is bounded
//!   by `min(connect_timeout, session timeout)`, so a host that drops SYNs or
//!   never answers the handshake is skipped. Hosts are shuffled and tried in
//!   turn; after a full round of failures the client pauses (exponential
//!   backoff, 100 ms doubling up to 1 s), so it never spins.
//! * Connected, with negotiated session timeout `T`: the read timeout is `2T/3`
//!   (nothing received for that long ⇒ the connection is dead); a ping goes out
//!   when nothing has been sent for `2T/9`, also when the client only receives
//!   events.
//! * When the connection dies (read timeout, EOF, error, a garbage or
//!   out-of-order frame), every in-flight call fails at once with
//!   [`Error::ConnectionLoss`], a [`SessionEvent::Disconnected`] is sent, and the
//!   client reattaches with its session id, password and last zxid. Calls made
//!   while disconnected fail fast with `ConnectionLoss`; they are never queued.
//! * Expiry is known only from the server (a ConnectResponse with timeout ≤ 0),
//!   never guessed from the client's clock. Then the handle is dead: state
//!   [`ClientState::Expired`], [`SessionEvent::Expired`], and every pending and
//!   later call fails with [`Error::SessionExpired`]. A new session needs a new
//!   `Client`.
//! * After a reconnect the client sends its credentials, then SetWatches with
//!   every still-registered watch and `relativeZxid` = the last zxid seen, before
//!   any user request; the server fires what was missed.
//!
//! # Time bounds
//!
//! * A call never blocks longer than the read timeout plus the connect timeout
//!   (`2T/3 + connect_timeout`, using the requested `T` before the first
//!   connection) plus scheduling noise; when that bound passes without a reply it
//!   returns [`Error::OperationTimeout`] and the connection is dropped (the
//!   session survives). In practice a dead connection is noticed within the read
//!   timeout, and a dropped reply within about `2T/9` (the next ping's reply
//!   overtakes it).
//! * [`Client::close`] (and dropping the last handle) takes at most about 1.5 s:
//!   up to 1 s for the closeSession reply, then up to 0.5 s to join the threads
//!   (a thread still busy, e.g. in a connect attempt or a user watcher, is
//!   detached and ends on its own).
//!
//! # Threads and the request path
//!
//! Each client has an I/O thread (connects, reads and dispatches replies, pings)
//! and an event thread (runs watchers). A caller encodes its request, takes a
//! short lock to get an xid and queue itself, and writes the frame itself (no
//! thread hop); concurrent callers' frames are combined into one write. The I/O
//! thread hands each reply to its caller, who decodes it. `TCP_NODELAY` is set.
//!
//! # Not done (as in or unlike Java)
//!
//! * A session on a read-only server stays there: there is no search for a
//!   read-write server (Java's `pingRwServer`).
//! * No persistent watches (addWatch), removeWatches or SASL.
//! * A server that refuses the handshake because it has not seen the client's
//!   last zxid is retried forever with backoff, as Java does.
//!
//! # TLS
//!
//! With [`ClientConfig::with_tls`] (or a `zks://` connect string plus TLS
//! settings) every connection is TLS ([`TlsConfig`]: CA certificates, an
//! optional client certificate, host name verification on by default). The TLS
//! handshake is part of the connection attempt and shares its bound; a refused
//! handshake is a failed attempt like any other, reported by
//! [`Client::wait_connected`] as [`Error::Tls`]. Plain TCP connections are
//! unchanged (no extra copy or lock).
//!
//! # Watches
//!
//! Watches are one-shot callbacks ([`Watcher`]) on nodes. A watch is registered
//! only when the server really set it: `get_data_w`/`get_children_w` on success,
//! `exists_w` on success and on NoNode. Registered watches survive reconnects.
//! Session events are **not** delivered to watchers (unlike Java, which sends
//! `Disconnected` to every watcher); they go to [`Client::state_receiver`].
//! Callbacks run on a dedicated event thread, never on the I/O thread and never
//! under a lock, so they may call the client; a panicking callback is caught and
//! logged. They run one at a time: keep them short.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_framework::{Client, ClientConfig};
//! use zk_framework::proto::{Acl, CreateMode};
//!
//! let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
//! zk.wait_connected_timeout(Duration::from_secs(10))?;
//! let path = zk.create("/jobs-", b"payload", &Acl::open_unsafe(), CreateMode::EphemeralSequential)?;
//! let (data, stat) = zk.get_data(&path)?;
//! assert_eq!(data, b"payload");
//! zk.delete(&path, Some(stat.version))?;
//! # Ok::<(), zk_framework::Error>(())
//! ```

mod connect_string;
mod detached;
mod events;
mod inner;
mod io;
mod tls;
mod types;
mod watches;

use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

/// The TLS failure inside [`Error::Tls`], defined with the error type and
/// kept here too, where the client's TLS settings are.
#[doc(inline)]
pub use crate::error::{TlsError, TlsErrorKind};
pub use connect_string::DEFAULT_PORT;
pub use tls::{TlsConfig, TlsConfigBuilder};
pub use types::{ClientConfig, ClientState, Op, OpResult, RegisteredWatches, SessionEvent, WatchedEvent, Watcher};

use inner::{state_error, Inner, Reply, Settings, Submitted, Worker};
use watches::{WatchMode, WatchReg};

use crate::error::{Error, Result};
use crate::proto::jute::{Decode, DecodeError, Reader};
use crate::proto::path::validate_path;
use crate::proto::{
    xid, Acl, AuthPacket, CreateMode, CreateRequest, CreateRequestRef, CreateTtlRequest, CreateTtlRequestRef,
    DeleteRequest, ErrorCode, GetAclResponse, GetChildren2Response, GetChildrenResponse, GetDataResponse, MultiOp,
    MultiRequest, MultiResponse, MultiResult, OpCode, PathRecord, PathWatchRequest, SetAclRequestRef,
    SetDataRequestRef, Stat,
};

/// How long `close` waits for the closeSession reply.
const CLOSE_SESSION_WAIT: Duration = Duration::from_secs(1);
/// How long `close` waits for the threads to end before detaching them.
const JOIN_WAIT: Duration = Duration::from_millis(500);
/// Largest TTL ZooKeeper accepts, ms (2^40 − 1).
const MAX_TTL_MS: u128 = (1 << 40) - 1;

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

fn shuffle<T>(v: &mut [T]) {
    let mut x = std::collections::hash_map::RandomState::new().hash_one(0u8) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
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

    fn inner(&self) -> &Arc<Inner> {
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
    /// use zk_framework::{client::{Client, ClientConfig}, Error};
    /// let bad = ClientConfig::default().with_auth("digest", b"no-colon");
    /// assert!(matches!(Client::connect("127.0.0.1:2181", bad), Err(Error::InvalidArgument(_))));
    /// ```
    ///
    /// ```
    /// use zk_framework::{client::{Client, ClientConfig}, Error};
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
        let mut hosts = cs.hosts;
        shuffle(&mut hosts);
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
            },
            etx,
        ));
        let spawn_err = |e: std::io::Error| {
            log::error!("cannot start a zk client thread: {e}");
            Error::from_code(ErrorCode::SystemError, "")
        };
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let ev = thread::Builder::new()
            .name("zk-event".into())
            .spawn(move || {
                let _done = done_tx;
                events::event_main(erx)
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
    /// ([`TlsErrorKind::is_certain`]). [`Error::SessionExpired`],
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
                        }
                        return Err(state_error(core.state));
                    }
                }
                s => return Err(state_error(s)),
            }
        }
    }

    /// Why the latest finished connection attempt failed in TLS, if it did.
    pub(crate) fn last_tls_error(&self) -> Option<TlsError> {
        self.inner().last_tls_error.lock().clone()
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
        let reason = inner.last_connect_failure.lock().clone()?;
        Some(Error::ConnectFailed { reason })
    }

    /// A TLS refusal that every server gave in the latest round and that no
    /// retry can mend (see [`TlsErrorKind::is_certain`]).
    pub(crate) fn certain_refusal(&self) -> Option<TlsError> {
        self.inner().certain_refusal.lock().clone()
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

    fn server_path(&self, path: &str, sequential: bool) -> Result<String> {
        validate_path(path, sequential)?;
        Ok(self.inner().server_path(path))
    }

    fn check_data(&self, data: &[u8]) -> Result<()> {
        let max = self.inner().max_frame;
        if data.len() > max {
            return Err(Error::DataTooLarge { len: data.len(), max });
        }
        Ok(())
    }

    fn check_acl(acl: &[Acl], path: &str) -> Result<()> {
        if acl.is_empty() {
            return Err(Error::from_code(ErrorCode::InvalidAcl, path));
        }
        Ok(())
    }

    /// Decodes a successful reply's body; a body that does not decode is a broken
    /// connection (dropped) and the call gets ConnectionLoss.
    fn finish<T>(
        &self,
        reply: Reply,
        path: &str,
        decode: impl FnOnce(&mut Reader<'_>) -> std::result::Result<T, DecodeError>,
    ) -> Result<T> {
        if reply.header.err != 0 {
            return Err(Error::from_raw(reply.header.err, path));
        }
        let mut r = reply.body();
        decode(&mut r).map_err(|e| {
            log::warn!("garbage reply body for {path}: {e}");
            self.inner().kill(Some(reply.gen), "garbage reply body");
            Error::ConnectionLoss
        })
    }

    fn send(&self, op: OpCode, body: &dyn crate::proto::frame::EncodeDyn, watch: Option<WatchReg>) -> Result<Reply> {
        self.inner()
            .call(op, Some(body), watch, false, None, self.request_bound())
    }

    /// Creates a node and returns its actual path (with the sequence suffix for
    /// sequential modes), relative to the chroot.
    ///
    /// `Container` goes out as createContainer (opcode 19); other non-TTL modes as
    /// create (opcode 1). TTL modes need [`Client::create_ttl`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] (a trailing `/` is allowed for sequential modes),
    /// [`Error::DataTooLarge`], [`Error::InvalidArgument`] for a TTL mode,
    /// [`Error::InvalidAcl`] for an empty ACL (nothing sent); from the server
    /// [`Error::NodeExists`], [`Error::NoNode`] (no parent),
    /// [`Error::NoChildrenForEphemerals`], [`Error::NoAuth`], ...; and the
    /// connection errors of [`Client`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let p = zk.create("/queue/item-", b"x", &Acl::open_unsafe(), CreateMode::PersistentSequential)?;
    /// assert!(p.starts_with("/queue/item-"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create(&self, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) -> Result<String> {
        if mode.is_ttl() {
            return Err(Error::InvalidArgument(format!("{mode:?} needs create_ttl")));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let container = mode.is_container();
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let op = if container {
            OpCode::CreateContainer
        } else {
            OpCode::Create
        };
        let reply = self.send(op, &req, None)?;
        let created = self.finish(reply, path, |r| {
            if container {
                crate::proto::Create2Response::decode(r).map(|c| c.path)
            } else {
                String::decode(r)
            }
        })?;
        Ok(self.inner().client_path(&created))
    }

    /// Creates a node (create2) and lists the children of `children_of`, sent
    /// back to back without waiting in between. ZooKeeper answers a session's
    /// requests in order, so the listing already shows the new node: a lock
    /// recipe learns its node and the queue in one round trip of latency.
    ///
    /// Returns the create's result; on success, also the listing's own result.
    ///
    /// # Errors
    ///
    /// As [`Client::create2`] for the create; the listing's errors are those of
    /// [`Client::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let ((path, _stat), kids) =
    ///     zk.create2_then_get_children("/q/n-", b"", &Acl::open_unsafe(), CreateMode::EphemeralSequential, "/q")?;
    /// assert!(kids?.iter().any(|k| path.ends_with(k.as_str())));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn create2_then_get_children(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        children_of: &str,
    ) -> Result<((String, Stat), Result<Vec<String>>)> {
        self.pipelined_create(None, path, data, acl, mode, children_of)
    }

    /// [`Client::create2_then_get_children`] with, first, a create of `parent`
    /// (path, ACL, mode) in the same round trip, whose own outcome (made, or
    /// there already) is not reported.
    ///
    /// With a parent to make, the listing is not pipelined: when this call
    /// made the parent (it was not there) and the sequential node got suffix
    /// `0000000000`, the node is the first child the parent has had (the
    /// suffix is the parent's creation counter, which starts at 0 with the
    /// parent and counts every create under it), so the listing at the
    /// create is known without a read: the node alone. Otherwise (the parent
    /// was there already, or another session's create came first) the
    /// listing follows in a second round trip. A lock on a fresh path so
    /// costs one round trip and two writes.
    #[allow(clippy::type_complexity)]
    pub(crate) fn pipelined_create(
        &self,
        parent: Option<(&str, &[Acl], CreateMode)>,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        children_of: &str,
    ) -> Result<((String, Stat), Result<Vec<String>>)> {
        if mode.is_ttl() || mode.is_container() {
            return Err(Error::InvalidArgument(format!(
                "{mode:?} cannot be pipelined with a listing"
            )));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        let list_sp = self.server_path(children_of, false)?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let inner = self.inner();
        let parent_made = match parent {
            Some((parent_path, parent_acl, parent_mode)) if !parent_mode.is_ttl() && !parent_mode.is_sequential() => {
                let psp = self.server_path(parent_path, false)?;
                Self::check_acl(parent_acl, parent_path)?;
                let preq = CreateRequestRef {
                    path: &psp,
                    data: &[],
                    acl: parent_acl,
                    flags: parent_mode.code(),
                };
                let op = if parent_mode.is_container() {
                    OpCode::CreateContainer
                } else {
                    OpCode::Create
                };
                Some(inner.submit(op, Some(&preq), None, false, None, self.request_bound())?)
            }
            _ => None,
        };
        // The parent's reply is awaited after the create (and the listing, if
        // pipelined) is sent, so that nothing is left in flight. Whether it
        // made the parent matters only to the first-child rule (see above):
        // any other failure fails the create after it too.
        let parent_reply = |parent_made: Option<_>| match parent_made {
            Some(p) => inner.await_reply(p).is_ok_and(|r| r.header.err == 0),
            None => false,
        };
        let created = match inner.submit(OpCode::Create2, Some(&req), None, false, None, self.request_bound()) {
            Ok(c) => c,
            Err(e) => {
                parent_reply(parent_made);
                return Err(e);
            }
        };
        let list = || {
            inner.submit(
                OpCode::GetChildren,
                Some(&PathWatchRequest {
                    path: list_sp.clone(),
                    watch: false,
                }),
                None,
                false,
                None,
                self.request_bound(),
            )
        };
        let decode_listing = |listing: Result<Submitted>| {
            listing.and_then(|l| inner.await_reply(l)).and_then(|r| {
                self.finish(r, children_of, |rd| {
                    crate::proto::GetChildrenResponse::decode(rd).map(|g| g.children)
                })
            })
        };
        // The first child of a parent made just now needs no listing (see
        // above); only a sequential create under that parent can tell.
        let may_be_first =
            parent_made.is_some() && mode.is_sequential() && crate::proto::path::parent(path) == Some(children_of);
        let listing = (!may_be_first).then(list);
        let parent_made = parent_reply(parent_made);
        let created = inner.await_reply(created);
        // Awaited before the create's outcome is looked at: nothing is left
        // in flight.
        let listed = listing.map(decode_listing);
        let c = self.finish(created?, path, crate::proto::Create2Response::decode)?;
        let kids = match listed {
            Some(kids) => kids,
            None if parent_made && c.path.ends_with(FIRST_SEQUENCE) => {
                Ok(vec![crate::proto::path::basename(&c.path).to_string()])
            }
            None => decode_listing(list()),
        };
        Ok(((inner.client_path(&c.path), c.stat), kids))
    }

    /// Creates a node and returns its actual path and its Stat (create2, opcode
    /// 15; containers use createContainer, opcode 19).
    ///
    /// # Errors
    ///
    /// As [`Client::create`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (path, stat) = zk.create2("/a", b"", &Acl::open_unsafe(), CreateMode::Persistent)?;
    /// assert_eq!(stat.version, 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create2(&self, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) -> Result<(String, Stat)> {
        if mode.is_ttl() {
            return Err(Error::InvalidArgument(format!("{mode:?} needs create_ttl")));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let op = if mode.is_container() {
            OpCode::CreateContainer
        } else {
            OpCode::Create2
        };
        let reply = self.send(op, &req, None)?;
        let c = self.finish(reply, path, crate::proto::Create2Response::decode)?;
        Ok((self.inner().client_path(&c.path), c.stat))
    }

    /// Creates a TTL node (createTTL, opcode 21): `mode` must be
    /// `PersistentWithTtl` or `PersistentSequentialWithTtl`. The server must have
    /// TTL nodes enabled (`zookeeper.extendedTypesEnabled`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a non-TTL mode or a TTL outside
    /// 1 ms ..= 2^40 − 1 ms; `Keeper { Unimplemented }` when the server has TTLs
    /// disabled; otherwise as [`Client::create`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (path, _stat) =
    ///     zk.create_ttl("/t", b"", &Acl::open_unsafe(), CreateMode::PersistentWithTtl, Duration::from_secs(60))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create_ttl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        ttl: Duration,
    ) -> Result<(String, Stat)> {
        let ttl = check_ttl(mode, Some(ttl))?.expect("TTL mode");
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateTtlRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
            ttl,
        };
        let reply = self.send(OpCode::CreateTtl, &req, None)?;
        let c = self.finish(reply, path, crate::proto::Create2Response::decode)?;
        Ok((self.inner().client_path(&c.path), c.stat))
    }

    /// Deletes a node; `version` `None` deletes any version.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; from the server [`Error::NoNode`],
    /// [`Error::BadVersion`], [`Error::NotEmpty`], [`Error::NoAuth`],
    /// [`Error::BadArguments`] (`/`, `/zookeeper`); connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.delete("/a", None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(
            OpCode::Delete,
            &DeleteRequest {
                path: sp,
                version: version.unwrap_or(-1),
            },
            None,
        )?;
        self.finish(reply, path, |_| Ok(()))
    }

    fn exists_inner(&self, path: &str, watcher: Option<Box<dyn Watcher>>) -> Result<Option<Stat>> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Exists,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        let reply = self.send(OpCode::Exists, &req, watch)?;
        if reply.header.err == ErrorCode::NoNode.code() {
            return Ok(None);
        }
        self.finish(reply, path, Stat::decode).map(Some)
    }

    /// The node's Stat, or `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoAuth`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// if let Some(stat) = zk.exists("/a")? {
    ///     println!("version {}", stat.version);
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.exists_inner(path, None)
    }

    /// As [`Client::exists`], leaving a one-shot watch: it fires on NodeCreated
    /// (if the node was missing), NodeDataChanged or NodeDeleted. Registered both
    /// when the node exists and when it does not; not registered on other errors.
    ///
    /// # Errors
    ///
    /// As [`Client::exists`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
    /// if zk.exists_w("/lock", tx)?.is_none() {
    ///     let created = rx.recv().unwrap();
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_w(&self, path: &str, watcher: impl Watcher) -> Result<Option<Stat>> {
        self.exists_inner(path, Some(Box::new(watcher)))
    }

    fn get_data_inner(&self, path: &str, watcher: Option<Box<dyn Watcher>>) -> Result<(Vec<u8>, Stat)> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Data,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        let reply = self.send(OpCode::GetData, &req, watch)?;
        self.finish(reply, path, GetDataResponse::decode)
            .map(|r| (r.data, r.stat))
    }

    /// The node's data and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], [`Error::NoAuth`], connection
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (data, stat) = zk.get_data("/config")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.get_data_inner(path, None)
    }

    /// As [`Client::get_data`], leaving a one-shot watch (NodeDataChanged or
    /// NodeDeleted) — only on success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_data`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.get_data_w("/config", |e: WatchedEvent| println!("changed: {e:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<u8>, Stat)> {
        self.get_data_inner(path, Some(Box::new(watcher)))
    }

    /// Replaces the node's data; `version` `None` for any. Returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::DataTooLarge`]; [`Error::NoNode`],
    /// [`Error::BadVersion`], [`Error::NoAuth`]; connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let stat = zk.set_data("/config", b"v2", Some(1))?;
    /// assert_eq!(stat.version, 2);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let sp = self.server_path(path, false)?;
        self.check_data(data)?;
        let req = SetDataRequestRef {
            path: &sp,
            data,
            version: version.unwrap_or(-1),
        };
        let reply = self.send(OpCode::SetData, &req, None)?;
        self.finish(reply, path, Stat::decode)
    }

    fn children_inner(&self, path: &str, op: OpCode, watcher: Option<Box<dyn Watcher>>) -> Result<Reply> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Child,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        self.send(op, &req, watch)
    }

    /// The names of the node's children, in the server's order (unsorted).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], [`Error::NoAuth`], connection
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let mut kids = zk.get_children("/locks")?;
    /// kids.sort();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        let reply = self.children_inner(path, OpCode::GetChildren, None)?;
        self.finish(reply, path, GetChildrenResponse::decode)
            .map(|r| r.children)
    }

    /// As [`Client::get_children`], leaving a one-shot child watch
    /// (NodeChildrenChanged or NodeDeleted) — only on success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let kids = zk.get_children_w("/locks", |e: WatchedEvent| println!("{e:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_w(&self, path: &str, watcher: impl Watcher) -> Result<Vec<String>> {
        let reply = self.children_inner(path, OpCode::GetChildren, Some(Box::new(watcher)))?;
        self.finish(reply, path, GetChildrenResponse::decode)
            .map(|r| r.children)
    }

    /// The node's children (server order) and the node's own Stat
    /// (getChildren2).
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (kids, stat) = zk.get_children2("/locks")?;
    /// assert_eq!(kids.len(), stat.num_children as usize);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children2(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let reply = self.children_inner(path, OpCode::GetChildren2, None)?;
        self.finish(reply, path, GetChildren2Response::decode)
            .map(|r| (r.children, r.stat))
    }

    /// As [`Client::get_children2`], leaving a one-shot child watch — only on
    /// success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// let (kids, stat) = zk.get_children2_w("/locks", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children2_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<String>, Stat)> {
        let reply = self.children_inner(path, OpCode::GetChildren2, Some(Box::new(watcher)))?;
        self.finish(reply, path, GetChildren2Response::decode)
            .map(|r| (r.children, r.stat))
    }

    /// Waits until the server this client is connected to has caught up with
    /// the leader (sync). On a standalone server it returns at once; the path is
    /// not checked for existence.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.sync("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn sync(&self, path: &str) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(OpCode::Sync, &PathRecord { path: sp }, None)?;
        self.finish(reply, path, |_| Ok(()))
    }

    /// Checks that the node exists with data version `version`.
    ///
    /// Sent as a one-op multi (a bare check, opcode 13, gets no reply from a
    /// standalone ZooKeeper 3.8.0 when it matches).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::NoNode`], [`Error::BadVersion`];
    /// connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.check("/config", 3)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check(&self, path: &str, version: i32) -> Result<()> {
        self.multi(vec![Op::check(path, version)]).map(|_| ())
    }

    /// Runs `ops` as one atomic transaction (multi, opcode 14) and returns one
    /// result per op.
    ///
    /// # Errors
    ///
    /// If the transaction fails, the error of the first failing op (for example
    /// [`Error::NodeExists`] with that op's path); nothing was applied. Use
    /// [`Client::multi_results`] to see every op's result. Client-side checks
    /// ([`Error::InvalidPath`], [`Error::InvalidArgument`], [`Error::DataTooLarge`]
    /// for the whole request) and connection errors as for other calls.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let results = zk.multi(vec![
    ///     Op::check("/config", 3),
    ///     Op::create("/config/next", b"x".to_vec(), Acl::open_unsafe(), CreateMode::Persistent),
    ///     Op::delete("/config/old", None),
    /// ])?;
    /// assert_eq!(results.len(), 3);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let results = self.multi_results(ops)?;
        let first = results
            .iter()
            .filter_map(OpResult::error)
            .find(|e| e.code() != Some(ErrorCode::RuntimeInconsistency))
            .or_else(|| results.iter().find_map(OpResult::error));
        match first {
            Some(e) => Err(e.clone()),
            None => Ok(results),
        }
    }

    /// Runs `ops` as one transaction and returns every op's result, also when
    /// the transaction failed: then the ops before the failing one are
    /// [`OpResult::RolledBack`], the failing one is [`OpResult::Error`] with its
    /// error, and the ops after it are `Error(Keeper { RuntimeInconsistency })`.
    ///
    /// # Errors
    ///
    /// Only the errors of the call itself (client-side checks, connection, a
    /// dead handle), never an op's failure.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op, OpResult};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let results = zk.multi_results(vec![Op::check("/a", 0), Op::delete("/b", None)])?;
    /// let failed = results.iter().any(|r| matches!(r, OpResult::Error(_)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi_results(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let mut paths = Vec::with_capacity(ops.len());
        let mut mops = Vec::with_capacity(ops.len());
        for op in ops {
            paths.push(op.path().to_string());
            mops.push(self.multi_op(op)?);
        }
        let req = MultiRequest { ops: mops };
        let reply = self.send(OpCode::Multi, &req, None)?;
        self.decode_multi(reply, &paths)
    }

    /// Runs `ops` as one transaction (as [`Client::multi`]) and lists the
    /// children of each of `children_of`, all sent back to back without waiting
    /// in between. ZooKeeper answers a session's requests in order, so the
    /// listings show the transaction's effect: one round trip of latency.
    ///
    /// Returns the transaction's result (as [`Client::multi`], with the
    /// transaction's zxid, which is the czxid of every node it created) and one
    /// listing result per path.
    ///
    /// # Errors
    ///
    /// The outer error is a failure to send (client-side checks, connection);
    /// the transaction's and the listings' own failures are in the inner
    /// results.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Op};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let acl = Acl::open_unsafe();
    /// let (txn, lists) = zk.multi_then_get_children(
    ///     vec![Op::create("/a/x-", b"", acl.clone(), CreateMode::EphemeralSequential),
    ///          Op::create("/b/y-", b"", acl, CreateMode::EphemeralSequential)],
    ///     &["/a", "/b"],
    /// )?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn multi_then_get_children(
        &self,
        ops: Vec<Op>,
        children_of: &[&str],
    ) -> Result<(Result<(Vec<OpResult>, i64)>, Vec<Result<Vec<String>>>)> {
        let mut paths = Vec::with_capacity(ops.len());
        let mut mops = Vec::with_capacity(ops.len());
        for op in ops {
            paths.push(op.path().to_string());
            mops.push(self.multi_op(op)?);
        }
        let list_sps = children_of
            .iter()
            .map(|p| self.server_path(p, false))
            .collect::<Result<Vec<_>>>()?;
        let inner = self.inner();
        let txn = inner.submit(
            OpCode::Multi,
            Some(&MultiRequest { ops: mops }),
            None,
            false,
            None,
            self.request_bound(),
        )?;
        let listings: Vec<_> = list_sps
            .into_iter()
            .map(|sp| {
                inner.submit(
                    OpCode::GetChildren,
                    Some(&PathWatchRequest { path: sp, watch: false }),
                    None,
                    false,
                    None,
                    self.request_bound(),
                )
            })
            .collect();
        let txn = inner.await_reply(txn).and_then(|r| {
            let zxid = r.header.zxid;
            let results = self.decode_multi(r, &paths)?;
            match results
                .iter()
                .filter_map(OpResult::error)
                .find(|e| e.code() != Some(ErrorCode::RuntimeInconsistency))
            {
                Some(e) => Err(e.clone()),
                None => Ok((results, zxid)),
            }
        });
        let lists = listings
            .into_iter()
            .zip(children_of)
            .map(|(l, path)| {
                l.and_then(|l| inner.await_reply(l))
                    .and_then(|r| self.finish(r, path, |rd| GetChildrenResponse::decode(rd).map(|g| g.children)))
            })
            .collect();
        Ok((txn, lists))
    }

    fn decode_multi(&self, reply: Reply, paths: &[String]) -> Result<Vec<OpResult>> {
        let first_path = paths.first().cloned().unwrap_or_default();
        let resp = self.finish(reply, &first_path, MultiResponse::decode)?;
        let gen_kill = |why: &str| {
            log::warn!("bad multi response: {why}");
            self.inner().kill(None, "bad multi response");
            Error::ConnectionLoss
        };
        if resp.results.len() != paths.len() {
            return Err(gen_kill("wrong number of results"));
        }
        let mut out = Vec::with_capacity(paths.len());
        for (res, path) in resp.results.into_iter().zip(paths) {
            out.push(match res {
                MultiResult::Create { path } => OpResult::Create {
                    path: self.inner().client_path(&path),
                    stat: None,
                },
                MultiResult::Create2 { path, stat } => OpResult::Create {
                    path: self.inner().client_path(&path),
                    stat: Some(stat),
                },
                MultiResult::Delete => OpResult::Delete,
                MultiResult::SetData { stat } => OpResult::SetData { stat },
                MultiResult::Check => OpResult::Check,
                MultiResult::Error { err: 0 } => OpResult::RolledBack,
                MultiResult::Error { err } => OpResult::Error(Error::from_raw(err, path)),
                MultiResult::GetData { .. } | MultiResult::GetChildren { .. } => {
                    return Err(gen_kill("read result in a write multi"));
                }
            });
        }
        Ok(out)
    }

    fn multi_op(&self, op: Op) -> Result<MultiOp> {
        Ok(match op {
            Op::Create {
                path,
                data,
                acl,
                mode,
                ttl,
            } => {
                let ttl = check_ttl(mode, ttl)?;
                let sp = self.server_path(&path, mode.is_sequential())?;
                self.check_data(&data)?;
                Self::check_acl(&acl, &path)?;
                match ttl {
                    Some(ttl) => MultiOp::CreateTtl(CreateTtlRequest {
                        path: sp,
                        data,
                        acl,
                        flags: mode.code(),
                        ttl,
                    }),
                    None => MultiOp::Create {
                        op: if mode.is_container() {
                            OpCode::CreateContainer
                        } else {
                            OpCode::Create
                        },
                        request: CreateRequest {
                            path: sp,
                            data,
                            acl,
                            flags: mode.code(),
                        },
                    },
                }
            }
            Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                path: self.server_path(&path, false)?,
                version: version.unwrap_or(-1),
            }),
            Op::SetData { path, data, version } => {
                let sp = self.server_path(&path, false)?;
                self.check_data(&data)?;
                MultiOp::SetData(crate::proto::SetDataRequest {
                    path: sp,
                    data,
                    version: version.unwrap_or(-1),
                })
            }
            Op::Check { path, version } => MultiOp::Check(DeleteRequest {
                path: self.server_path(&path, false)?,
                version,
            }),
        })
    }

    /// The node's ACL and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (acl, stat) = zk.get_acl("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(OpCode::GetAcl, &PathRecord { path: sp }, None)?;
        self.finish(reply, path, GetAclResponse::decode)
            .map(|r| (r.acl, r.stat))
    }

    /// Replaces the node's ACL; `version` (the ACL version, `aversion`) `None`
    /// for any. Returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::InvalidAcl`] for an empty ACL (not
    /// sent) or one the server rejects, [`Error::NoNode`], [`Error::NoAuth`],
    /// [`Error::BadVersion`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// use zk_framework::Acl;
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.set_acl("/a", &Acl::read_unsafe(), None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        let sp = self.server_path(path, false)?;
        Self::check_acl(acl, path)?;
        let req = SetAclRequestRef {
            path: &sp,
            acl,
            version: version.unwrap_or(-1),
        };
        let reply = self.send(OpCode::SetAcl, &req, None)?;
        self.finish(reply, path, Stat::decode)
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
        let frame = crate::proto::frame::request_frame(
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
                return Err(state_error(core.state));
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

    /// How many TCP connection attempts the client has made (a debugging and
    /// test counter).
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

    /// The watches registered now (those SetWatches would re-send).
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
        let (data, exist, child, callbacks) = inner.core.lock().watches.snapshot();
        let strip = |v: Vec<String>| v.into_iter().map(|p| inner.client_path(&p)).collect();
        RegisteredWatches {
            data: strip(data),
            exist: strip(exist),
            child: strip(child),
            callbacks,
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

/// Checks a mode/TTL pair; returns the TTL in ms for TTL modes.
fn check_ttl(mode: CreateMode, ttl: Option<Duration>) -> Result<Option<i64>> {
    match (mode.is_ttl(), ttl) {
        (true, Some(t)) => {
            let ms = t.as_millis();
            if ms == 0 || ms > MAX_TTL_MS {
                return Err(Error::InvalidArgument(format!(
                    "TTL {t:?} is out of range (1 ms ..= 2^40-1 ms)"
                )));
            }
            Ok(Some(ms as i64))
        }
        (true, None) => Err(Error::InvalidArgument(format!("{mode:?} needs a TTL"))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("{mode:?} does not take a TTL"))),
        (false, None) => Ok(None),
    }
}

/// The sequential suffix of a parent's first child (its creation counter
/// starts at 0 with the parent).
const FIRST_SEQUENCE: &str = "0000000000";

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
    fn ttl_rules() {
        assert!(check_ttl(CreateMode::PersistentWithTtl, None).is_err());
        assert!(check_ttl(CreateMode::PersistentWithTtl, Some(Duration::ZERO)).is_err());
        assert!(check_ttl(CreateMode::PersistentWithTtl, Some(Duration::from_millis(1 << 40))).is_err());
        assert_eq!(
            check_ttl(CreateMode::PersistentWithTtl, Some(Duration::from_millis(5))).unwrap(),
            Some(5)
        );
        assert!(check_ttl(CreateMode::Persistent, Some(Duration::from_millis(5))).is_err());
        assert_eq!(check_ttl(CreateMode::Persistent, None).unwrap(), None);
    }

    #[test]
    fn shuffle_keeps_elements() {
        let mut v: Vec<u32> = (0..50).collect();
        shuffle(&mut v);
        let mut s = v.clone();
        s.sort();
        assert_eq!(s, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn client_is_send_sync() {
        fn ok<T: Send + Sync + Clone>() {}
        ok::<Client>();
    }
}
