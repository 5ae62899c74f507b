//! [`CuratorFramework`]: the managed client's handle and its operations.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::Mutex;

use super::dispatch::ListenerHandle;
use super::inner::Inner;
use super::{retry_loop, CreateBuilder, CuratorFrameworkBuilder, DeleteBuilder};
use crate::client::{AddWatchMode, Client, PersistentWatcher, WatchId, WatchedEvent, Watcher, WatcherType};
use crate::paths::{fix_for_namespace, unfix_for_namespace};
use crate::proto::Stat;
use crate::retry::RetryPolicy;
use crate::state::{ConnectionState, SessionHealth};
use crate::{Error, Result};

/// The managed client. Cheap to clone; all clones share one session.
#[derive(Clone)]
pub struct CuratorFramework {
    pub(super) inner: Arc<Inner>,
    /// Every operation of this handle ends by then
    /// ([`CuratorFramework::with_deadline`]).
    pub(super) deadline: Option<Instant>,
}

impl fmt::Debug for CuratorFramework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuratorFramework")
            .field("connect_string", &self.inner.connect_string)
            .field("namespace", &self.inner.namespace)
            .field("state", &self.state())
            .field("generation", &self.session_generation())
            .finish()
    }
}

impl CuratorFramework {
    /// A builder with Curator's defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder();
    /// # let _ = b;
    /// ```
    pub fn builder() -> CuratorFrameworkBuilder {
        CuratorFrameworkBuilder::default()
    }

    /// `builder().connect_string(cs).retry_policy(policy).build()`.
    ///
    /// # Errors
    ///
    /// As [`CuratorFrameworkBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_framework::{CuratorFramework, RetryOneTime};
    /// let c = CuratorFramework::new_client("127.0.0.1:2181", RetryOneTime::new(Duration::from_millis(10)))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn new_client(connect_string: &str, policy: impl RetryPolicy + 'static) -> Result<CuratorFramework> {
        CuratorFramework::builder()
            .connect_string(connect_string)
            .retry_policy(policy)
            .build()
    }

    /// The current raw client handle. After an expiry it is replaced, so fetch it
    /// again rather than keeping it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let id = c.zookeeper_client().session_id();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn zookeeper_client(&self) -> Arc<Client> {
        self.inner.current().0
    }

    /// The session generation: 1 for the client's first session, and one
    /// more every time the client builds a new handle (a new session, after
    /// an expiry). Answered locally. A recipe records it when it creates an
    /// ephemeral node: while the generation is the same, the node can still
    /// exist; once it has moved on, the node went with its session (see
    /// [`crate::recipe`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(c.session_generation() >= 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_generation(&self) -> u64 {
        self.inner.handle.lock().generation
    }

    /// The connection epoch: a number that moves on whenever this client may
    /// have missed something the server said about its session. It moves on
    /// with every new session, with every connection (a reconnect on the same
    /// session included) and when an answer comes after the session's health
    /// was stale ([`SessionHealth::Stale`]: a process paused, a connection
    /// silent for a read timeout), each time before the client can be seen
    /// connected or healthy on it. Answered locally.
    ///
    /// A fact learnt from the server while the epoch was `e` (a node exists,
    /// and belongs to this session) holds, for a caller that watches for its
    /// change, while the epoch is still `e`: notifications and replies come
    /// in order on one connection. After a change it is to be asked again:
    /// a reconnect re-registers the watches, but the events they fire (a node
    /// deleted while the client was away) come one round trip later. This is
    /// how a lock's holding knows that a reconnect alone proves nothing: it
    /// stays uncertain until the server has answered an `exists` of its node
    /// sent in the new epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(10))?;
    /// let before = c.connection_epoch();
    /// assert_eq!(c.connection_epoch(), before, "nothing was missed");
    /// server.embedded().unwrap().drop_connections();
    /// zk_testing::wait_until(std::time::Duration::from_secs(10), || c.connection_epoch() != before);
    /// assert!(c.connection_epoch() > before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connection_epoch(&self) -> u64 {
        // Read under the handle's lock, without taking a reference: a lock's
        // `check()` asks for it every time.
        let h = self.inner.handle.lock();
        (h.generation << 40) | (h.client.connection_epoch() & ((1 << 40) - 1))
    }

    /// The current session id (0 before the first connection).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _ = c.session_id();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_id(&self) -> i64 {
        self.zookeeper_client().session_id()
    }

    /// The last reported connection state (`None` before the first).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _ = c.state();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn state(&self) -> Option<ConnectionState> {
        self.inner.conn.lock().machine.current()
    }

    /// Whether the client is connected now.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _ = c.is_connected();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn is_connected(&self) -> bool {
        self.state().is_some_and(ConnectionState::is_connected)
    }

    /// The namespace, if any.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.namespace(), Some("ns"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// The data creates use when given none.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").default_data(b"x".to_vec()).build()?;
    /// assert_eq!(c.default_data(), b"x");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn default_data(&self) -> &[u8] {
        &self.inner.default_data
    }

    /// The ACL provider's default ACL (the builder's `acl_provider(..)` or
    /// `acl(..)`, else open).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.default_acl(), zk_framework::Acl::open_unsafe());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn default_acl(&self) -> Vec<crate::proto::Acl> {
        self.inner.acl_provider.default_acl()
    }

    /// The ACL a node this client creates at `path` (relative to the
    /// namespace, as every path given to this client) gets when no ACL is
    /// given: the provider's ACL for the server path, else its default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.acl_for_path("/app/x"), zk_framework::Acl::open_unsafe());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn acl_for_path(&self, path: &str) -> Vec<crate::proto::Acl> {
        super::acl::acl_of(&*self.inner.acl_provider, &self.fix_path(path))
    }

    /// The connection timeout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.connection_timeout(), std::time::Duration::from_secs(15));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn connection_timeout(&self) -> Duration {
        self.inner.connection_timeout
    }

    /// The retry policy.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _p = c.retry_policy();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn retry_policy(&self) -> Arc<dyn RetryPolicy> {
        self.inner.retry_policy.clone()
    }

    /// The negotiated session timeout of the last connection, if any.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _ = c.negotiated_session_timeout();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn negotiated_session_timeout(&self) -> Option<Duration> {
        self.inner.conn.lock().negotiated_timeout
    }

    /// Waits until the state is connected (Connected, Reconnected or ReadOnly).
    ///
    /// # Errors
    ///
    /// [`Error::ConnectTimeout`] (retryable, carrying `timeout`) when `timeout`
    /// passes first, or [`Error::Tls`] then if the latest connection attempt
    /// failed in TLS (see [`Client::wait_connected`]); [`Error::Tls`] at once
    /// when every server refused the handshake in a way no retry mends
    /// ([`TlsErrorKind::is_certain`](crate::TlsErrorKind::is_certain));
    /// [`Error::AuthFailed`] at once when the server refused the session's
    /// credentials; [`Error::Closed`] when the client is closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn block_until_connected(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now().checked_add(timeout);
        // The deadline is the only timeout: the wait is on the current handle
        // (it wakes when it connects, when every server refused in a way no
        // retry mends, and when it ends) and on the state machine (every
        // change, a new handle and the close wake `conn_cv`).
        let timed_out = |client: &Client| match client.last_tls_error() {
            // A TLS failure says more than a timeout (a wrong CA never heals).
            Some(e) => Error::Tls(e),
            None => Error::ConnectTimeout { waited: timeout },
        };
        loop {
            let (client, generation) = {
                let c = self.inner.conn.lock();
                if self.inner.closed.load(Ordering::SeqCst) {
                    return Err(Error::Closed);
                }
                if c.machine.current().is_some_and(ConnectionState::is_connected) {
                    return Ok(());
                }
                drop(c);
                self.inner.current()
            };
            let far = || Instant::now() + Duration::from_secs(86_400 * 365);
            match client.wait_connected(deadline.unwrap_or_else(far)) {
                // Connected (the session monitor tells the state machine
                // next), or this handle ended (a new one follows an expiry; a
                // closed client is told below).
                Ok(()) | Err(Error::SessionExpired | Error::Closed) => {}
                // Every server refused in a way no retry mends, or the
                // deadline came after a TLS failure.
                Err(Error::Tls(e)) => return Err(Error::Tls(e)),
                // The server refused the session's credentials and closed it:
                // no wait mends that.
                Err(Error::AuthFailed) => return Err(Error::AuthFailed),
                Err(_) => return Err(timed_out(&client)),
            }
            let mut c = self.inner.conn.lock();
            loop {
                if self.inner.closed.load(Ordering::SeqCst) {
                    return Err(Error::Closed);
                }
                if c.machine.current().is_some_and(ConnectionState::is_connected) {
                    return Ok(());
                }
                let state = client.state();
                // A new handle, or this one lost its connection before the
                // state machine heard of it: wait on the handle again.
                if self.inner.handle.lock().generation != generation || state == crate::ClientState::Connecting {
                    break;
                }
                if state == crate::ClientState::AuthFailed {
                    return Err(Error::AuthFailed);
                }
                match deadline {
                    Some(d) => {
                        if self.inner.conn_cv.wait_until(&mut c, d).timed_out()
                            && !c.machine.current().is_some_and(ConnectionState::is_connected)
                        {
                            drop(c);
                            return Err(timed_out(&client));
                        }
                    }
                    None => self.inner.conn_cv.wait(&mut c),
                }
            }
        }
    }

    /// Registers a listener for connection states. It runs on the dispatch
    /// thread in order and may call the client. Dropping the returned handle
    /// removes it (so `let _ = c.add_listener(..)` registers nothing that lasts);
    /// [`ListenerHandle::detach`] keeps it for the client's lifetime.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _h = c.add_listener(|s| println!("state {s}"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_listener(&self, f: impl Fn(ConnectionState) + Send + Sync + 'static) -> ListenerHandle {
        let id = self.inner.next_listener_id.fetch_add(1, Ordering::Relaxed);
        self.inner.listeners.lock().push((id, Arc::new(f)));
        ListenerHandle::new(id, Arc::downgrade(&self.inner))
    }

    /// The instant until which the current session is certainly alive at
    /// the server: the send time of the latest request a server answered,
    /// plus the negotiated session timeout, minus a margin (see
    /// [`CuratorFrameworkBuilder::session_horizon_margin`](super::CuratorFrameworkBuilder::session_horizon_margin)).
    /// The server cannot have expired the session before it, whatever the
    /// network does; after it, it may have. A healthy connection keeps it
    /// about seven ninths of the session timeout ahead (a ping is answered
    /// at least every two ninths). `None` before the first connection and
    /// after the session ended (expired or closed). Answered locally.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(5))?;
    /// let horizon = c.session_horizon().expect("connected");
    /// assert!(horizon > std::time::Instant::now());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_horizon(&self) -> Option<Instant> {
        let (client, _) = self.inner.current();
        self.inner.horizon_of(&client)
    }

    /// The session's health by the client's clock: a request sent within the
    /// read timeout answered, none answered for a read timeout (stale), or
    /// the horizon passed ([`CuratorFramework::session_horizon`]). Answered
    /// locally.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(5))?;
    /// assert_eq!(c.session_health(), zk_framework::SessionHealth::Confirmed);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_health(&self) -> SessionHealth {
        self.inner.health_now().0
    }

    /// Registers a listener for changes of [`CuratorFramework::session_health`],
    /// called at the moment of the change (the client's session thread wakes
    /// for it: a read timeout without an answer, the horizon passing, an
    /// answer after either). It runs on that thread, so it must only signal
    /// (a `try_send`, an atomic): no blocking, no calls into the client.
    /// Dropping the handle removes it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(8);
    /// let _h = c.add_health_listener(move |h| {
    ///     let _ = tx.try_send(h);
    /// });
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_health_listener(&self, f: impl Fn(SessionHealth) + Send + Sync + 'static) -> ListenerHandle {
        let id = self.inner.next_listener_id.fetch_add(1, Ordering::Relaxed);
        self.inner.health_listeners.lock().push((id, Arc::new(f)));
        ListenerHandle::new(id, Arc::downgrade(&self.inner))
    }

    /// Why the client is not connected (`None` while it is): [`Error::Tls`]
    /// for a refused handshake, [`Error::ConnectFailed`] with the reason of
    /// the latest failed attempt, or [`Error::ConnectionLoss`] when no attempt
    /// has ended since the connection was lost. What a call that could not be
    /// served reports instead of a bare timeout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// if let Some(e) = c.connect_failure() {
    ///     eprintln!("ZooKeeper unreachable: {e}");
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn connect_failure(&self) -> Option<Error> {
        let client = self.zookeeper_client();
        if client.state().is_connected() {
            return None;
        }
        Some(client.connect_failure().unwrap_or(Error::ConnectionLoss))
    }

    /// Every connection state from now on, on a channel. Dropping the receiver
    /// unsubscribes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let states = c.state_receiver();
    /// let first = states.recv_timeout(std::time::Duration::from_secs(5));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn state_receiver(&self) -> Receiver<ConnectionState> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.inner.subscribers.lock().push(tx);
        rx
    }

    /// Whether [`CuratorFramework::close`] was called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(!c.is_closed());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Closes the session (its ephemeral nodes go at once) and stops the
    /// client's threads. Bounded in time: it waits at most 1 s for the
    /// server to answer the close and 0.5 s for the connection's threads
    /// (about a millisecond when the server answers); idempotent. A
    /// connection-state listener still running is waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.close();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn close(&self) {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        // Every wait selecting on `close_signal()` ends now (a retry pause, a
        // lock's wait, a recipe's thread).
        drop(self.inner.close_tx.lock().take());
        for hook in crate::recipe::CloseHooks::take(&self.inner.close_hooks) {
            hook();
        }
        self.inner.executor.stop();
        self.inner.conn_cv.notify_all();
        let (client, _) = self.inner.current();
        client.close();
        let threads: Vec<_> = self.inner.threads.lock().drain(..).collect();
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        self.inner.dispatch.stop();
    }

    /// This client, through a handle whose every operation ends by
    /// `deadline`: the wait for a connection, the retry policy's pauses and
    /// the wait for each reply are cut to it, and an operation that the
    /// deadline ended fails with [`Error::DeadlineExceeded`] (or, while the
    /// client is not connected, with why it is not: see
    /// [`connect_failure`](Self::connect_failure)). A request may wait for
    /// its reply until the deadline plus [`crate::deadline::GRACE`], so a
    /// zero timeout still makes its one attempt on a healthy connection. The
    /// earlier of this handle's deadline and `deadline` holds; `None` adds
    /// none. Cheap: a clone sharing the session; builders made from it carry
    /// the deadline.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::{Duration, Instant};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let by = Instant::now() + Duration::from_millis(500);
    /// match c.with_deadline(Some(by)).get_children("/jobs") {
    ///     Err(e) if e == zk_framework::Error::DeadlineExceeded => println!("no answer in time"),
    ///     r => println!("{r:?}"),
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_deadline(&self, deadline: Option<Instant>) -> CuratorFramework {
        CuratorFramework {
            inner: self.inner.clone(),
            deadline: crate::deadline::earlier(self.deadline, deadline),
        }
    }

    /// The deadline of this handle ([`with_deadline`](Self::with_deadline)),
    /// if any.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.deadline(), None);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Sleeps `d` (a retry policy's pause), ending at once with
    /// [`Error::Closed`] when the client closes meanwhile. A pause too long
    /// for the clock (a policy's `Duration::MAX`) lasts until the close. The
    /// pause the managed client's own retries take, for recipes that retry
    /// by the same policy.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] when the client is or becomes closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.pause(std::time::Duration::from_millis(10))?;
    /// c.close();
    /// assert!(matches!(c.pause(std::time::Duration::MAX), Err(zk_framework::Error::Closed)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn pause(&self, d: Duration) -> Result<()> {
        let timer = Instant::now()
            .checked_add(d)
            .map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(self.inner.close_rx) -> _ => Err(Error::Closed),
            recv(timer) -> _ => {
                if self.is_closed() { Err(Error::Closed) } else { Ok(()) }
            }
        }
    }

    /// A channel that is disconnected when this client closes: a wait selects
    /// on it beside its other channels to end when the client goes, instead
    /// of polling [`is_closed`](Self::is_closed). Nothing is ever sent on it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let closed = c.close_signal();
    /// c.close();
    /// assert!(closed.recv().is_err()); // at once: the client is closed
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn close_signal(&self) -> Receiver<()> {
        self.inner.close_rx.clone()
    }

    /// Runs `signal` when this client closes, on the closing thread, at once
    /// after every [`close_signal`](Self::close_signal) receiver has
    /// disconnected; at once on this thread when the client is closed
    /// already. For a recipe whose thread is busy elsewhere (a selector's runs
    /// its leader's work) and that must hear the close at once. The signal
    /// only signals (drops a sender, sets an atomic): it must not block or
    /// call the client. Dropping the returned hook removes it unrun.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let closed = Arc::new(AtomicBool::new(false));
    /// let seen = closed.clone();
    /// let _hook = c.on_close(move || seen.store(true, Ordering::SeqCst));
    /// c.close();
    /// assert!(closed.load(Ordering::SeqCst));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn on_close(&self, signal: impl FnOnce() + Send + 'static) -> crate::recipe::CloseHook {
        match crate::recipe::CloseHooks::add(&self.inner.close_hooks, Box::new(signal)) {
            Ok(hook) => hook,
            Err(run_now) => {
                run_now();
                crate::recipe::CloseHook::inert()
            }
        }
    }

    /// The value of type `T` this client keeps for a layer built on it (a
    /// recipe library keeps its per-client state here: its statistics, its
    /// grant record, its timer): made by `init` the first time it is asked
    /// for, then the same value for this client and every clone of it, also
    /// after [`close`](Self::close) (figures stay readable), and dropped with
    /// the client's last clone. Two clients never share one. A value that
    /// runs a thread ends it on [`close_signal`](Self::close_signal). A value
    /// must not hold a clone of the client (it would keep itself alive).
    ///
    /// `init` runs without any lock held; when two threads ask at once, one
    /// value is kept and the other dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// #[derive(Default)]
    /// struct Calls(AtomicU64);
    /// c.extension(Calls::default).0.fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(c.clone().extension(Calls::default).0.load(Ordering::Relaxed), 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn extension<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let key = std::any::TypeId::of::<T>();
        let found = |map: &super::inner::Extensions| map.get(&key).cloned().and_then(|v| v.downcast::<T>().ok());
        if let Some(v) = found(&self.inner.extensions.lock()) {
            return v;
        }
        let made = Arc::new(init());
        let mut map = self.inner.extensions.lock();
        match found(&map) {
            Some(v) => v,
            None => {
                map.insert(key, made.clone());
                made
            }
        }
    }

    /// The server path for a user path (namespace applied).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.fix_path("/a"), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn fix_path(&self, path: &str) -> String {
        fix_for_namespace(self.inner.namespace.as_deref(), path)
    }

    /// The key of the node at `path` (a user path, this client's namespace
    /// applied): what a recipe records about a node by, so that clients with
    /// different namespaces naming one node agree (see
    /// [`recipe`](crate::recipe)). The path is not validated: an invalid one
    /// names no node, and its key matches none.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.node_key("/a").as_str(), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn node_key(&self, path: &str) -> crate::recipe::NodeKey {
        crate::recipe::NodeKey::new(self.fix_path(path))
    }

    /// The client's path for a server path: the namespace taken off (the
    /// inverse of [`fix_path`](Self::fix_path); a path outside the namespace
    /// is given back as it is). For a path the server reports (a watched
    /// event's, a listing of another tool's).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.unfix_path("/ns/a"), "/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn unfix_path(&self, path: &str) -> String {
        unfix_for_namespace(self.inner.namespace.as_deref(), path)
    }

    fn checked_path(&self, path: &str) -> Result<String> {
        crate::proto::path::validate_path(path, false)?;
        Ok(self.fix_path(path))
    }

    /// Creates the namespace node as a container, once.
    pub(super) fn ensure_namespace(&self, client: &Client) -> Result<()> {
        let Some(ns) = &self.inner.namespace else { return Ok(()) };
        if self.inner.namespace_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let mode = if self.inner.container_parents {
            crate::proto::CreateMode::Container
        } else {
            crate::proto::CreateMode::Persistent
        };
        let path = format!("/{ns}");
        let acl = super::acl::acl_of(&*self.inner.acl_provider, &path);
        match client.create(&path, &[], &acl, mode) {
            Ok(_) | Err(Error::NodeExists { .. }) => {
                self.inner.namespace_ready.store(true, Ordering::Release);
                Ok(())
            }
            // The namespace lives at the client's root: a NoNode there is a
            // missing chroot.
            Err(Error::NoNode { path }) => Err(super::ops::missing_chroot(client).unwrap_or(Error::NoNode { path })),
            Err(e) => Err(e),
        }
    }

    /// Reads a node's data and Stat, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::InvalidPath`], or the last retryable error
    /// when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (data, stat) = c.get_data("/a")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.get_data(&p))
    }

    /// Reads a node's data and leaves a one-shot data watch (event paths are
    /// given without the namespace).
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_data`]; on NoNode no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// c.get_data_w("/a", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<u8>, Stat)> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.call_with_retry(|c| c.get_data_w(&p, slot.attempt()))
    }

    /// Whether a node exists, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let exists = c.check_exists("/a")?.is_some();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_exists(&self, path: &str) -> Result<Option<Stat>> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.exists(&p))
    }

    /// Whether a node exists, leaving a one-shot watch (set even when the node is
    /// missing, so that its creation is reported).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let stat = c.check_exists_w("/a", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_exists_w(&self, path: &str, watcher: impl Watcher) -> Result<Option<Stat>> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.call_with_retry(|c| c.exists_w(&p, slot.attempt()))
    }

    /// Lists children (names only), with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let kids = c.get_children("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.get_children(&p))
    }

    /// Lists children (names only) with the node's own Stat (Curator's
    /// `getChildren().storingStatIn(stat)`), with retries. The Stat's
    /// `pzxid` is the zxid of the last change to the children: every child
    /// listed was created at or before it.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (kids, stat) = c.get_children_with_stat("/")?;
    /// assert_eq!(kids.len(), stat.num_children as usize);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_with_stat(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.get_children2(&p))
    }

    /// As [`get_children_with_stat`](Self::get_children_with_stat), leaving
    /// a one-shot child watch.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let (kids, stat) = c.get_children_with_stat_w("/", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_with_stat_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<String>, Stat)> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.call_with_retry(|c| c.get_children2_w(&p, slot.attempt()))
    }

    /// Lists children and leaves a one-shot child watch.
    ///
    /// # Errors
    ///
    /// As [`CuratorFramework::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let kids = c.get_children_w("/", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_w(&self, path: &str, watcher: impl Watcher) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.call_with_retry(|c| c.get_children_w(&p, slot.attempt()))
    }

    /// Sets a persistent watch on `path` (see [`Client::add_watch`]), with
    /// retries. The namespace is added to `path` and taken off the paths of
    /// the events. The registration belongs to the current session's client:
    /// after the session's expiry (the watcher's final `(None, Expired)`
    /// event) it is gone, and a recipe adds it again on the new session; the
    /// server replays nothing for persistent watches after a reconnect, so a
    /// caller that keeps state re-reads on `(None, SyncConnected)`.
    ///
    /// On ZooKeeper 3.6–3.8 a one-shot and a persistent watch (or two modes)
    /// on the same path of one client interfere (ZOOKEEPER-4466, see
    /// [`Client::add_watch`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; [`Error::ServerTooOld`] on a server before 3.6;
    /// the last retryable error when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::{AddWatchMode, WatchedEvent};
    /// let (tx, rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// let id = c.add_watch("/config", AddWatchMode::PersistentRecursive, tx)?;
    /// c.remove_watch(id)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_watch(&self, path: &str, mode: AddWatchMode, watcher: impl PersistentWatcher) -> Result<WatchId> {
        let p = self.checked_path(path)?;
        let shared: Arc<dyn PersistentWatcher> = Arc::new(Unnamespaced {
            inner: watcher,
            namespace: self.inner.namespace.clone(),
        });
        self.call_with_retry(|c| c.add_watch_arc(&p, mode, shared.clone()))
    }

    /// Removes one [`add_watch`](CuratorFramework::add_watch) registration
    /// (see [`Client::remove_watch`]), with retries. An id of an earlier
    /// session's client is already gone: `Ok`.
    ///
    /// # Errors
    ///
    /// As [`Client::remove_watch`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::{AddWatchMode, WatchedEvent};
    /// let id = c.add_watch("/a", AddWatchMode::Persistent, |e: WatchedEvent| println!("{e:?}"))?;
    /// c.remove_watch(id)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_watch(&self, id: WatchId) -> Result<()> {
        self.call_with_retry(|c| c.remove_watch(id))
    }

    /// Removes every watch of `kind` on `path` (see
    /// [`Client::remove_all_watches`]), with retries; the namespace is added
    /// to `path`.
    ///
    /// # Errors
    ///
    /// As [`Client::remove_all_watches`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::WatcherType;
    /// c.remove_all_watches("/a", WatcherType::Any, false)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn remove_all_watches(&self, path: &str, kind: WatcherType, local: bool) -> Result<()> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.remove_all_watches(&p, kind, local))
    }

    /// Whether this client's connection has a watch of `kind` on `path` on the
    /// server (see [`Client::check_watches`]), with retries; the namespace is
    /// added to `path`.
    ///
    /// # Errors
    ///
    /// As [`Client::check_watches`], after retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// use zk_framework::WatcherType;
    /// let watched = c.check_watches("/a", WatcherType::Any)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn check_watches(&self, path: &str, kind: WatcherType) -> Result<bool> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.check_watches(&p, kind))
    }

    /// Sets a node's data, with retries.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::DataTooLarge`],
    /// [`Error::InvalidPath`], or the last retryable error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.set_data("/a", b"v".to_vec(), None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> Result<Stat> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.set_data(&p, &data, version))
    }

    /// Runs `ops` as one multi, once (no retry: a transaction whose reply
    /// was lost may have been applied), with the namespace applied to every
    /// op's path and removed from created paths. Each op's result comes back
    /// in order; when one op fails, none is applied and the results say which
    /// (`OpResult::Error`). Bounded by this handle's deadline.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a bad path (nothing sent); the connection
    /// errors of a single request (`ConnectionLoss`: the outcome is unknown,
    /// `SessionExpired`, `Closed`, `DeadlineExceeded`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{CreateMode, Op};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("app").build()?;
    /// let results = c.multi_results(vec![
    ///     Op::check("/config", -1),
    ///     Op::create("/config/new", b"v".to_vec(), zk_framework::Acl::open_unsafe(), CreateMode::Persistent),
    /// ])?;
    /// println!("{results:?}"); // created paths without the namespace
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn multi_results(&self, ops: Vec<crate::client::Op>) -> Result<Vec<crate::client::OpResult>> {
        use crate::client::OpResult;
        let ns = self.inner.namespace.as_deref();
        let ops = ops
            .into_iter()
            .map(|op| {
                op.map_path(|p, sequential| {
                    crate::proto::path::validate_path(p, sequential)?;
                    Ok(fix_for_namespace(ns, p))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let results = self
            .zookeeper_client()
            .with_deadline(self.deadline)
            .multi_results(ops)?;
        Ok(results
            .into_iter()
            .map(|r| match r {
                OpResult::Create { path, stat } => OpResult::Create {
                    path: unfix_for_namespace(ns, &path),
                    stat,
                },
                r => r,
            })
            .collect())
    }

    /// Deletes `path` (at `version`, or any) on the current session without
    /// waiting for the reply (the namespace applied): the request is written
    /// and this returns. `on_reply` is called once, on the client's I/O
    /// thread (so it must only signal), with `Ok(())`, the server's error
    /// (`NoNode`, ...), or `ConnectionLoss` when the connection broke first
    /// (the delete may or may not have been applied). A lock's release uses
    /// it to wait for its delete no longer than a bound of its own.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], and the immediate connection errors
    /// (`ConnectionLoss` while disconnected, `SessionExpired`, `Closed`):
    /// nothing was sent then and `on_reply` is not called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// c.delete_detached("/lock/n", None, move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("deleted: {:?}", rx.recv_timeout(std::time::Duration::from_secs(1)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_detached(
        &self,
        path: &str,
        version: Option<i32>,
        on_reply: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<()> {
        let p = self.checked_path(path)?;
        self.zookeeper_client()
            .with_deadline(self.deadline)
            .delete_detached(&p, version, on_reply)
    }

    /// Sets an exists-watch on `path` on the current session without waiting
    /// for the reply (the namespace applied, and removed from the event's
    /// path): `on_reply` is called once, on the client's I/O thread (so it
    /// must only signal), with whether the node exists; the watcher fires
    /// once, as a watch of [`Client::exists_w`] does. Its reply is
    /// read before the reply of any request sent after it.
    ///
    /// # Errors
    ///
    /// As [`delete_detached`](Self::delete_detached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.exists_w_detached("/lock/n", |e| println!("{e:?}"), |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_w_detached(
        &self,
        path: &str,
        watcher: impl Watcher,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.zookeeper_client()
            .with_deadline(self.deadline)
            .exists_w_detached(&p, slot.attempt(), on_reply)
    }

    /// Asks whether `path` exists on the current session without waiting for
    /// the reply and without a watch (the namespace applied): `on_reply` is
    /// called once, on the client's I/O thread (so it must only signal), with
    /// the node's Stat, `None` when it does not exist, or the error. Its reply
    /// is read after every notification the server sent before it.
    ///
    /// A lock's holding uses it after a reconnect: the reply proves that the
    /// node still exists and which session owns it (see
    /// [`CuratorFramework::connection_epoch`]).
    ///
    /// # Errors
    ///
    /// As [`delete_detached`](Self::delete_detached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.exists_detached("/lock/n", |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.checked_path(path)?;
        self.zookeeper_client()
            .with_deadline(self.deadline)
            .exists_detached(&p, on_reply)
    }

    /// Reads `path`'s data and Stat on the current session without waiting
    /// for the reply (the namespace applied; see
    /// [`Client::get_data_detached`]): `on_reply` is called once, on the
    /// client's I/O thread (so it must only signal), with the data and Stat,
    /// `None` when the node does not exist, or the error. Many reads can be
    /// in flight at once; their replies come in the order they were sent.
    ///
    /// # Errors
    ///
    /// As [`delete_detached`](Self::delete_detached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.get_data_detached("/config/a", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<(Vec<u8>, Stat)>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.checked_path(path)?;
        self.zookeeper_client()
            .with_deadline(self.deadline)
            .get_data_detached(&p, on_reply)
    }

    /// Lists `path`'s children on the current session without waiting for
    /// the reply (see [`get_data_detached`](Self::get_data_detached)).
    ///
    /// # Errors
    ///
    /// As [`delete_detached`](Self::delete_detached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.get_children_detached("/config", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Vec<String>>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.checked_path(path)?;
        self.zookeeper_client()
            .with_deadline(self.deadline)
            .get_children_detached(&p, on_reply)
    }

    /// Starts a create (Curator's `client.create()...forPath(path)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = c.create().creating_parent_containers_if_needed().for_path("/a/b")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create(&self) -> CreateBuilder<'_> {
        CreateBuilder::new(self)
    }

    /// Starts a delete (Curator's `client.delete()...forPath(path)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete().guaranteed().for_path("/a/b")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete(&self) -> DeleteBuilder<'_> {
        DeleteBuilder::new(self)
    }

    /// Runs `op` under the retry policy: waits once (up to the connection
    /// timeout) for a connection, then retries ConnectionLoss, OperationTimeout,
    /// SessionMoved and SessionExpired as the policy allows, each attempt on the
    /// current handle. Before a retry, a handle that is not connected gets up to
    /// min(connection timeout, 1 s) to reconnect (the Java client queues such a
    /// request until its next connection attempt). An attempt that fails with
    /// `Closed` on a handle the framework replaced counts as SessionExpired.
    /// Each call has its own retry budget. Under a deadline
    /// ([`with_deadline`](Self::with_deadline)) `op` gets a handle bounded by
    /// it, and no wait outlives it.
    ///
    /// # Errors
    ///
    /// The first non-retryable error, the last error when the policy gives up,
    /// or [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let stat = c.call_with_retry(|zk| zk.exists("/"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn call_with_retry<T>(&self, op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
        retry_loop::call_with_retry(self, op)
    }

    /// Wraps a one-shot watcher so that every retry attempt can register it; the
    /// first event delivered wins, and event paths lose the namespace.
    fn watch_slot(&self, watcher: impl Watcher) -> WatchSlot {
        WatchSlot {
            signals: watcher.only_signals(),
            slot: Arc::new(Mutex::new(Some(Box::new(watcher)))),
            namespace: self.inner.namespace.clone(),
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Queues a background guaranteed delete of a server path (used when a
    /// foreground delete failed).
    pub(crate) fn background_delete(&self, server_path: String, version: Option<i32>) {
        self.inner.background.delete(server_path, version);
    }

    /// Deletes `path` in the background, retrying until it succeeds (NoNode
    /// counts as success) or the client closes. For cleanup that must not block,
    /// such as a lock release while disconnected.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] when the path breaks ZooKeeper's rules.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete_in_background("/locks/a/_c_x-lock-0000000001")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_in_background(&self, path: &str) -> Result<()> {
        let p = self.checked_path(path)?;
        self.background_delete(p, None);
        Ok(())
    }

    /// Paths whose deletion is still pending in the background (for tests and
    /// diagnostics).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.pending_background_deletes(), 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn pending_background_deletes(&self) -> usize {
        self.inner.background.pending()
    }
}

/// The user's watcher behind the watches of a call's attempts (a retried call
/// sets one watch per attempt): the first to fire runs it.
struct WatchSlot {
    slot: Arc<Mutex<Option<Box<dyn Watcher>>>>,
    namespace: Option<String>,
    /// Whether the user's watcher only signals (so do the attempts').
    signals: bool,
}

impl WatchSlot {
    fn attempt(&self) -> impl Watcher {
        SlotAttempt {
            slot: self.slot.clone(),
            namespace: self.namespace.clone(),
            signals: self.signals,
        }
    }
}

/// One attempt's watcher: takes the user's watcher from the slot and runs it
/// with the path as the user knows it (namespace taken off).
struct SlotAttempt {
    slot: Arc<Mutex<Option<Box<dyn Watcher>>>>,
    namespace: Option<String>,
    signals: bool,
}

impl Watcher for SlotAttempt {
    fn process(self: Box<Self>, mut e: WatchedEvent) {
        let Some(w) = self.slot.lock().take() else { return };
        if let Some(p) = e.path.take() {
            e.path = Some(unfix_for_namespace(self.namespace.as_deref(), &p));
        }
        w.process(e)
    }

    fn only_signals(&self) -> bool {
        self.signals
    }
}

/// A persistent watcher that is given event paths without the namespace.
struct Unnamespaced<W> {
    inner: W,
    namespace: Option<String>,
}

impl<W: PersistentWatcher> PersistentWatcher for Unnamespaced<W> {
    fn process(&self, mut e: WatchedEvent) {
        if let Some(p) = e.path.take() {
            e.path = Some(unfix_for_namespace(self.namespace.as_deref(), &p));
        }
        self.inner.process(e)
    }

    /// Taking the namespace off a path only signals too.
    fn only_signals(&self) -> bool {
        self.inner.only_signals()
    }
}
