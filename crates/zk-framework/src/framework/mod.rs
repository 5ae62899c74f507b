//! The managed client: Curator's `CuratorFramework` in Rust shapes.
//!
//! It owns the current [`Client`] handle and builds a new one (a new session)
//! after expiry; turns session events into Curator's [`ConnectionState`]s,
//! delivered in order on one dispatch thread; retries what can be retried with a
//! [`RetryPolicy`]; and offers the building blocks recipes need: creates with
//! container parents, protected ephemeral-sequential creates, and guaranteed
//! deletes.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_framework::framework::CuratorFramework;
//! use zk_framework::retry::ExponentialBackoffRetry;
//! use zk_framework::proto::CreateMode;
//!
//! let client = CuratorFramework::builder()
//!     .connect_string("127.0.0.1:2181")
//!     .session_timeout(Duration::from_secs(30))
//!     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
//!     .namespace("app")
//!     .build()?;
//! client.block_until_connected(Duration::from_secs(10))?;
//! let path = client
//!     .create()
//!     .creating_parent_containers_if_needed()
//!     .with_protection()
//!     .with_mode(CreateMode::EphemeralSequential)
//!     .for_path("/locks/a/lock-")?;
//! client.delete().guaranteed().for_path(&path)?;
//! # Ok::<(), zk_framework::Error>(())
//! ```

mod background;
mod ops;
mod retry_loop;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};

pub use ops::{CreateBuilder, CreatedWithListing, DeleteBuilder};

use crate::client::{Client, ClientConfig, ClientState, SessionEvent, WatchedEvent, Watcher};
use crate::paths::{fix_for_namespace, unfix_for_namespace, validate_namespace};
use crate::proto::{Acl, Stat};
use crate::retry::{ExponentialBackoffRetry, RetryPolicy};
use crate::state::{ConnectionState, SessionSignal, StateMachine};
use crate::{Error, Result};

use background::Background;

/// A listener for connection-state changes. It runs on the client's dispatch
/// thread, in order, never on the I/O or event thread, and may call the client.
pub type StateListener = dyn Fn(ConnectionState) + Send + Sync + 'static;

/// Builds a [`CuratorFramework`] (Curator's `CuratorFrameworkFactory.builder()`).
#[derive(Clone)]
pub struct CuratorFrameworkBuilder {
    connect_string: Option<String>,
    session_timeout: Duration,
    connection_timeout: Duration,
    retry_policy: Arc<dyn RetryPolicy>,
    namespace: Option<String>,
    default_data: Option<Vec<u8>>,
    can_be_read_only: bool,
    simulated_expiration_percent: u32,
    auth: Vec<(String, Vec<u8>)>,
    container_parents: bool,
    acl: Vec<Acl>,
    listeners: Vec<Arc<StateListener>>,
}

impl fmt::Debug for CuratorFrameworkBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuratorFrameworkBuilder")
            .field("connect_string", &self.connect_string)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("retry_policy", &self.retry_policy)
            .field("namespace", &self.namespace)
            .field("can_be_read_only", &self.can_be_read_only)
            .field("simulated_expiration_percent", &self.simulated_expiration_percent)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl Default for CuratorFrameworkBuilder {
    fn default() -> Self {
        CuratorFrameworkBuilder {
            connect_string: None,
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            retry_policy: Arc::new(ExponentialBackoffRetry::new(Duration::from_secs(1), 3)),
            namespace: None,
            default_data: None,
            can_be_read_only: false,
            simulated_expiration_percent: 100,
            auth: Vec::new(),
            container_parents: true,
            acl: Acl::open_unsafe(),
            listeners: Vec::new(),
        }
    }
}

impl CuratorFrameworkBuilder {
    /// `host:port[,host:port...][/chroot]` (required).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181");
    /// # let _ = b;
    /// ```
    pub fn connect_string(mut self, s: impl Into<String>) -> Self {
        self.connect_string = Some(s.into());
        self
    }

    /// Requested session timeout (default 60 s, as Curator; the server clamps it).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().session_timeout(std::time::Duration::from_secs(10));
    /// # let _ = b;
    /// ```
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout = d;
        self
    }

    /// How long an operation waits for a connection before its first attempt, and
    /// the per-attempt TCP connect timeout (default 15 s, as Curator).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().connection_timeout(std::time::Duration::from_secs(3));
    /// # let _ = b;
    /// ```
    pub fn connection_timeout(mut self, d: Duration) -> Self {
        self.connection_timeout = d;
        self
    }

    /// The retry policy (default `ExponentialBackoffRetry(1 s, 3)`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::retry::RetryNTimes;
    /// let b = zk_framework::framework::CuratorFramework::builder().retry_policy(RetryNTimes::new(3, Duration::from_millis(100)));
    /// # let _ = b;
    /// ```
    pub fn retry_policy(mut self, p: impl RetryPolicy + 'static) -> Self {
        self.retry_policy = Arc::new(p);
        self
    }

    /// A namespace: every path is prefixed with `/<ns>`, whose node is created as a
    /// container. It must be a single path segment.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().namespace("app");
    /// # let _ = b;
    /// ```
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    /// Data written by creates that give none (default: this host's IP address
    /// as text, like Curator).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().default_data(b"me".to_vec());
    /// # let _ = b;
    /// ```
    pub fn default_data(mut self, data: Vec<u8>) -> Self {
        self.default_data = Some(data);
        self
    }

    /// Allow read-only connections to a minority server (default false).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().can_be_read_only(true);
    /// # let _ = b;
    /// ```
    pub fn can_be_read_only(mut self, yes: bool) -> Self {
        self.can_be_read_only = yes;
        self
    }

    /// While suspended, declare the session lost after this percent of the
    /// negotiated session timeout (1..=100, default 100).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().simulated_session_expiration_percent(50);
    /// # let _ = b;
    /// ```
    pub fn simulated_session_expiration_percent(mut self, percent: u32) -> Self {
        self.simulated_expiration_percent = percent;
        self
    }

    /// Credentials sent on every connection (for example `("digest", b"user:pw")`).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().authorization("digest", b"u:p");
    /// # let _ = b;
    /// ```
    pub fn authorization(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_string(), auth.to_vec()));
        self
    }

    /// Create missing parents as persistent nodes instead of containers.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().dont_use_container_parents();
    /// # let _ = b;
    /// ```
    pub fn dont_use_container_parents(mut self) -> Self {
        self.container_parents = false;
        self
    }

    /// The ACL for created nodes (default `OPEN_ACL_UNSAFE`).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder().acl(zk_framework::proto::Acl::open_unsafe());
    /// # let _ = b;
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// A connection-state listener registered before the client starts, so that
    /// it sees every state from the first `Connected` on (Curator users add
    /// listeners before `start()`; here `build()` starts the client). It stays
    /// registered for the client's life and runs like one added with
    /// [`CuratorFramework::add_listener`].
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let b = zk_framework::framework::CuratorFramework::builder()
    ///     .connection_state_listener(move |s| { let _ = tx.send(s); });
    /// # let _ = (b, rx);
    /// ```
    pub fn connection_state_listener(mut self, f: impl Fn(ConnectionState) + Send + Sync + 'static) -> Self {
        self.listeners.push(Arc::new(f));
        self
    }

    /// Validates the options and starts the client; it connects in the
    /// background (see [`CuratorFramework::block_until_connected`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConnectString`] for a missing or unusable connect string;
    /// [`Error::InvalidArgument`] for zero or huge timeouts, a percent outside
    /// 1..=100, or a bad namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{framework::CuratorFramework, Error};
    /// let err = CuratorFramework::builder().connect_string("::garbage::").build().unwrap_err();
    /// assert!(matches!(err, Error::InvalidConnectString { .. }));
    /// ```
    pub fn build(self) -> Result<CuratorFramework> {
        let cs = self.connect_string.clone().ok_or_else(|| Error::InvalidConnectString {
            input: String::new(),
            reason: "no connect string was given".into(),
        })?;
        check_duration("session timeout", self.session_timeout)?;
        check_duration("connection timeout", self.connection_timeout)?;
        if !(1..=100).contains(&self.simulated_expiration_percent) {
            return Err(Error::InvalidArgument(format!(
                "simulated session expiration percent {} is outside 1..=100",
                self.simulated_expiration_percent
            )));
        }
        if let Some(ns) = &self.namespace {
            validate_namespace(ns)?;
        }
        let default_data = self.default_data.clone().unwrap_or_else(local_address);
        let client_config = ClientConfig {
            session_timeout: self.session_timeout,
            connect_timeout: self.connection_timeout,
            read_only: self.can_be_read_only,
            auth: self.auth.clone(),
            ..ClientConfig::default()
        };
        let client = Client::connect(&cs, client_config.clone())?;
        let (dispatch_tx, dispatch_rx) = crossbeam_channel::unbounded();
        let inner = Arc::new(Inner {
            connect_string: cs,
            client_config,
            connection_timeout: self.connection_timeout,
            retry_policy: self.retry_policy,
            namespace: self.namespace,
            default_data,
            container_parents: self.container_parents,
            acl: self.acl,
            simulated_expiration_percent: self.simulated_expiration_percent,
            handle: Mutex::new(Handle {
                client: Arc::new(client),
                generation: 1,
            }),
            conn: Mutex::new(ConnInner::default()),
            conn_cv: Condvar::new(),
            listeners: Mutex::new(
                self.listeners
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i as u64 + 1, l.clone()))
                    .collect(),
            ),
            subscribers: Mutex::new(Vec::new()),
            next_listener_id: AtomicU64::new(self.listeners.len() as u64 + 1),
            dispatch_tx,
            closed: AtomicBool::new(false),
            namespace_ready: AtomicBool::new(false),
            background: Background::new(),
            threads: Mutex::new(Vec::new()),
        });
        let fw = CuratorFramework { inner: inner.clone() };
        let weak = Arc::downgrade(&inner);
        let monitor = std::thread::Builder::new()
            .name("zk-framework-session".into())
            .spawn(move || session_monitor(weak))
            .map_err(|e| Error::InvalidArgument(format!("cannot spawn thread: {e}")))?;
        let weak = Arc::downgrade(&inner);
        let dispatch = std::thread::Builder::new()
            .name("zk-framework-states".into())
            .spawn(move || dispatch_loop(weak, dispatch_rx))
            .map_err(|e| Error::InvalidArgument(format!("cannot spawn thread: {e}")))?;
        inner.background.start(Arc::downgrade(&inner));
        inner.threads.lock().extend([monitor, dispatch]);
        Ok(fw)
    }
}

fn check_duration(what: &str, d: Duration) -> Result<()> {
    if d.is_zero() {
        return Err(Error::InvalidArgument(format!("{what} must be greater than zero")));
    }
    if d.as_millis() > i32::MAX as u128 {
        return Err(Error::InvalidArgument(format!("{what} of {d:?} is too large")));
    }
    Ok(())
}

/// Curator's default node data: this host's address as text, or empty.
fn local_address() -> Vec<u8> {
    use std::net::ToSocketAddrs;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if host.is_empty() {
        return Vec::new();
    }
    match (host.as_str(), 0).to_socket_addrs() {
        Ok(mut addrs) => addrs
            .find(|a| a.is_ipv4())
            .map(|a| a.ip().to_string().into_bytes())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

struct Handle {
    client: Arc<Client>,
    generation: u64,
}

#[derive(Default)]
struct ConnInner {
    machine: StateMachine,
    suspended_since: Option<Instant>,
    last_connected_generation: u64,
    negotiated_timeout: Option<Duration>,
}

pub(crate) struct Inner {
    connect_string: String,
    client_config: ClientConfig,
    connection_timeout: Duration,
    retry_policy: Arc<dyn RetryPolicy>,
    namespace: Option<String>,
    default_data: Vec<u8>,
    container_parents: bool,
    acl: Vec<Acl>,
    simulated_expiration_percent: u32,
    handle: Mutex<Handle>,
    conn: Mutex<ConnInner>,
    conn_cv: Condvar,
    listeners: Mutex<Vec<(u64, Arc<StateListener>)>>,
    subscribers: Mutex<Vec<Sender<ConnectionState>>>,
    next_listener_id: AtomicU64,
    dispatch_tx: Sender<ConnectionState>,
    closed: AtomicBool,
    namespace_ready: AtomicBool,
    background: Background,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Inner {
    fn current(&self) -> (Arc<Client>, u64) {
        let h = self.handle.lock();
        (h.client.clone(), h.generation)
    }

    /// Replaces the handle with a new one (a new session). Returns the new
    /// generation, or `None` when closed.
    fn reset_handle(&self, old_generation: u64) -> Option<u64> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let mut h = self.handle.lock();
        if h.generation != old_generation {
            return Some(h.generation);
        }
        match Client::connect(&self.connect_string, self.client_config.clone()) {
            Ok(c) => {
                let old = std::mem::replace(&mut h.client, Arc::new(c));
                h.generation += 1;
                let g = h.generation;
                drop(h);
                // Closing the old handle is bounded; do it off this thread.
                let _ = std::thread::Builder::new()
                    .name("zk-framework-close".into())
                    .spawn(move || old.close());
                Some(g)
            }
            Err(e) => {
                log::error!("cannot build a new ZooKeeper handle: {e}");
                None
            }
        }
    }

    fn post(&self, signal: SessionSignal) {
        let states = {
            let mut c = self.conn.lock();
            let states = c.machine.apply(signal);
            if let Some(last) = states.last() {
                if *last == ConnectionState::Suspended {
                    c.suspended_since = Some(Instant::now());
                } else if last.is_connected() || *last == ConnectionState::Lost {
                    c.suspended_since = None;
                }
            }
            self.conn_cv.notify_all();
            states
        };
        for s in states {
            log::info!("state change: {s}");
            let _ = self.dispatch_tx.send(s);
        }
    }
}

/// The managed client. Cheap to clone; all clones share one session.
#[derive(Clone)]
pub struct CuratorFramework {
    inner: Arc<Inner>,
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

/// Unsubscribes its listener when dropped.
#[must_use = "the listener is removed when this handle is dropped"]
pub struct ListenerHandle {
    id: u64,
    inner: Weak<Inner>,
}

impl fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerHandle").field("id", &self.id).finish()
    }
}

impl Drop for ListenerHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.listeners.lock().retain(|(id, _)| *id != self.id);
        }
    }
}

impl CuratorFramework {
    /// A builder with Curator's defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::framework::CuratorFramework::builder();
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
    /// use zk_framework::{framework::CuratorFramework, retry::RetryOneTime};
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let id = c.zookeeper_client().session_id();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn zookeeper_client(&self) -> Arc<Client> {
        self.inner.current().0
    }

    /// Increases by one every time a new handle (a new session) is built. Recipes
    /// compare it to know whether their ephemeral nodes can still exist.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(c.session_generation() >= 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_generation(&self) -> u64 {
        self.inner.current().1
    }

    /// The current session id (0 before the first connection).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").default_data(b"x".to_vec()).build()?;
    /// assert_eq!(c.default_data(), b"x");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn default_data(&self) -> &[u8] {
        &self.inner.default_data
    }

    /// The connection timeout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// [`Error::ConnectionLoss`] when `timeout` passes first; [`Error::Closed`]
    /// when the client is closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn block_until_connected(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now().checked_add(timeout);
        let mut c = self.inner.conn.lock();
        loop {
            if self.inner.closed.load(Ordering::SeqCst) {
                return Err(Error::Closed);
            }
            if c.machine.current().is_some_and(ConnectionState::is_connected) {
                return Ok(());
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(d) if now >= d => return Err(Error::ConnectionLoss),
                Some(d) => (d - now).min(Duration::from_millis(100)),
                None => Duration::from_millis(100),
            };
            self.inner.conn_cv.wait_for(&mut c, wait);
        }
    }

    /// Registers a listener for connection states. It runs on the dispatch
    /// thread in order and may call the client; dropping the handle removes it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let _h = c.add_listener(|s| println!("state {s}"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn add_listener(&self, f: impl Fn(ConnectionState) + Send + Sync + 'static) -> ListenerHandle {
        let id = self.inner.next_listener_id.fetch_add(1, Ordering::Relaxed);
        self.inner.listeners.lock().push((id, Arc::new(f)));
        ListenerHandle {
            id,
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Every connection state from now on, on a channel. Dropping the receiver
    /// unsubscribes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(!c.is_closed());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Closes the session (its ephemeral nodes go at once) and stops the
    /// background threads. Bounded in time; idempotent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.close();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn close(&self) {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.background.stop();
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
    }

    /// The server path for a user path (namespace applied).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.fix_path("/a"), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn fix_path(&self, path: &str) -> String {
        fix_for_namespace(self.inner.namespace.as_deref(), path)
    }

    /// The user path for a server path (namespace removed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
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
    fn ensure_namespace(&self, client: &Client) -> Result<()> {
        let Some(ns) = &self.inner.namespace else { return Ok(()) };
        if self.inner.namespace_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let mode = if self.inner.container_parents {
            crate::proto::CreateMode::Container
        } else {
            crate::proto::CreateMode::Persistent
        };
        match client.create(&format!("/{ns}"), &[], &self.inner.acl, mode) {
            Ok(_) | Err(Error::NodeExists { .. }) => {
                self.inner.namespace_ready.store(true, Ordering::Release);
                Ok(())
            }
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let kids = c.get_children("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.get_children(&p))
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// let kids = c.get_children_w("/", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_w(&self, path: &str, watcher: impl Watcher) -> Result<Vec<String>> {
        let p = self.checked_path(path)?;
        let slot = self.watch_slot(watcher);
        self.call_with_retry(|c| c.get_children_w(&p, slot.attempt()))
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.set_data("/a", b"v".to_vec(), None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> Result<Stat> {
        let p = self.checked_path(path)?;
        self.call_with_retry(|c| c.set_data(&p, &data, version))
    }

    /// Starts a create (Curator's `client.create()...forPath(path)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// Nested calls on one thread share one retry budget.
    ///
    /// # Errors
    ///
    /// The first non-retryable error, the last error when the policy gives up,
    /// or [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
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
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete_in_background("/locks/a/_c_x-lock-0000000001")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_in_background(&self, path: &str) -> Result<()> {
        let p = self.checked_path(path)?;
        self.background_delete(p, None);
        Ok(())
    }

    /// Deletes, in the background, every child of `parent` whose name starts with
    /// `prefix` (a protected `_c_<uuid>-` prefix): the cleanup of a protected
    /// create whose outcome is unknown. Retried until it succeeds or the client
    /// closes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] when `parent` breaks ZooKeeper's rules.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete_by_prefix_in_background("/locks/a", "_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_by_prefix_in_background(&self, parent: &str, prefix: &str) -> Result<()> {
        let p = self.checked_path(parent)?;
        self.inner.background.find_and_delete(p, prefix.to_string());
        Ok(())
    }

    /// Paths whose deletion is still pending in the background (for tests and
    /// diagnostics).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.pending_background_deletes(), 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn pending_background_deletes(&self) -> usize {
        self.inner.background.pending()
    }
}

fn session_monitor(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let (client, generation) = inner.current();
        let rx = client.state_receiver();
        match client.state() {
            // The handle may have connected before we subscribed (a duplicate
            // SyncConnected on the channel is ignored by the state machine).
            ClientState::Connected => on_connected(&inner, &client, generation, false),
            ClientState::ConnectedReadOnly => on_connected(&inner, &client, generation, true),
            // It died before we subscribed (a replacement that could not be
            // built, or an expiry in between): lose it and build another.
            ClientState::Expired | ClientState::Closed => {
                lose_and_reset(&inner, generation);
                continue;
            }
            ClientState::Connecting | ClientState::AuthFailed => {}
        }
        drop(inner);
        loop {
            let Some(inner) = weak.upgrade() else { return };
            if inner.closed.load(Ordering::SeqCst) {
                return;
            }
            if inner.current().1 != generation {
                break; // someone replaced the handle; follow the new one
            }
            // Checked on every turn, not only when the channel is quiet.
            if simulated_expiry_due(&inner) {
                log::warn!(
                    "session timeout has elapsed while SUSPENDED; injecting a session expiration (session 0x{:x})",
                    client.session_id()
                );
                lose_and_reset(&inner, generation);
                break;
            }
            let wait = simulated_expiry_wait(&inner);
            match rx.recv_timeout(wait) {
                Ok(SessionEvent::SyncConnected) => on_connected(&inner, &client, generation, false),
                Ok(SessionEvent::ConnectedReadOnly) => on_connected(&inner, &client, generation, true),
                Ok(SessionEvent::Disconnected) => inner.post(SessionSignal::Disconnected),
                Ok(SessionEvent::Expired) => {
                    log::warn!("session 0x{:x} expired; building a new session", client.session_id());
                    lose_and_reset(&inner, generation);
                    break;
                }
                Ok(SessionEvent::AuthFailed) => {
                    log::error!("authentication failed for session 0x{:x}", client.session_id());
                }
                Ok(SessionEvent::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    if inner.closed.load(Ordering::SeqCst) {
                        return;
                    }
                    if inner.current().1 == generation {
                        // The handle died under us: treat it as a lost session.
                        lose_and_reset(&inner, generation);
                    }
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// Reports the session lost and replaces the handle. When no new handle can be
/// built (a host name that does not resolve for a while), waits up to a second
/// (less if the client is closed) so that the caller's next try does not spin.
fn lose_and_reset(inner: &Inner, generation: u64) {
    inner.post(SessionSignal::Expired);
    if inner.reset_handle(generation).is_some() {
        return;
    }
    let end = Instant::now() + Duration::from_secs(1);
    let mut c = inner.conn.lock();
    while !inner.closed.load(Ordering::SeqCst) && Instant::now() < end {
        inner.conn_cv.wait_until(&mut c, end);
    }
}

fn on_connected(inner: &Inner, client: &Client, generation: u64, read_only: bool) {
    let new_handle = {
        let mut c = inner.conn.lock();
        c.negotiated_timeout = client.negotiated_timeout().filter(|d| !d.is_zero());
        let new = c.last_connected_generation != 0 && c.last_connected_generation != generation;
        c.last_connected_generation = generation;
        new
    };
    inner.post(if read_only {
        SessionSignal::ConnectedReadOnly { new_handle }
    } else {
        SessionSignal::Connected { new_handle }
    });
}

fn expiry_budget(inner: &Inner) -> Duration {
    let c = inner.conn.lock();
    let t = c.negotiated_timeout.unwrap_or(inner.client_config.session_timeout);
    t * inner.simulated_expiration_percent / 100
}

fn simulated_expiry_wait(inner: &Inner) -> Duration {
    let since = inner.conn.lock().suspended_since;
    match since {
        None => Duration::from_millis(250),
        Some(s) => expiry_budget(inner)
            .saturating_sub(s.elapsed())
            .clamp(Duration::from_millis(1), Duration::from_millis(250)),
    }
}

fn simulated_expiry_due(inner: &Inner) -> bool {
    let since = inner.conn.lock().suspended_since;
    matches!(since, Some(s) if s.elapsed() >= expiry_budget(inner))
}

fn dispatch_loop(weak: Weak<Inner>, rx: Receiver<ConnectionState>) {
    loop {
        let state = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout) => match weak.upgrade() {
                Some(inner) if !inner.closed.load(Ordering::SeqCst) => continue,
                _ => return,
            },
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let Some(inner) = weak.upgrade() else { return };
        let listeners: Vec<Arc<StateListener>> = inner.listeners.lock().iter().map(|(_, l)| l.clone()).collect();
        inner.subscribers.lock().retain(|tx| tx.send(state).is_ok());
        drop(inner);
        for l in listeners {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(state))).is_err() {
                log::error!("a connection-state listener panicked on {state}");
            }
        }
    }
}

struct WatchSlot {
    slot: Arc<Mutex<Option<Box<dyn Watcher>>>>,
    namespace: Option<String>,
}

impl WatchSlot {
    fn attempt(&self) -> impl Watcher {
        let slot = self.slot.clone();
        let ns = self.namespace.clone();
        move |mut e: WatchedEvent| {
            let Some(w) = slot.lock().take() else { return };
            if let Some(p) = e.path.take() {
                e.path = Some(unfix_for_namespace(ns.as_deref(), &p));
            }
            w.process(e)
        }
    }
}
