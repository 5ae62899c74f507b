//! The connection's states and the session's health, as the user sees them:
//! the wait for a connection, the state listeners and channel, the session's
//! horizon and health, and why the client is not connected.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::dispatch::ListenerHandle;
use super::handle::CuratorFramework;
use crate::client::{Client, ClientState};
use crate::error::{Error, Result};
use crate::state::{ConnectionState, SessionHealth};

/// The connection's states and the session's health.
impl CuratorFramework {
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
    /// credentials, [`Error::Sasl`] at once when every server refused its SASL
    /// authentication (or at the deadline when the latest attempt failed in
    /// SASL for a reason a retry may mend: a KDC down, an expired ticket);
    /// [`Error::Closed`] when the client is closed.
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
        let timed_out = |client: &Client| match (client.last_tls_error(), client.last_sasl_error()) {
            // A TLS failure says more than a timeout (a wrong CA never heals);
            // so does a SASL one (a KDC down, an expired ticket).
            (Some(e), _) => Error::Tls(e),
            (None, Some(e)) => Error::Sasl(e),
            (None, None) => Error::ConnectTimeout { waited: timeout },
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
                Err(Error::Sasl(e)) if e.kind().is_certain() => return Err(Error::Sasl(e)),
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
                if self.inner.handle.lock().generation != generation || state == ClientState::Connecting {
                    break;
                }
                if state == ClientState::AuthFailed {
                    return Err(client.auth_failure());
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
}
