//! [`CuratorFrameworkBuilder`]: the options of a managed client, checked and
//! turned into a running [`CuratorFramework`] (its session monitor, dispatch and
//! background threads started).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::acl::{AclProvider, FixedAclProvider, OpenAclProvider};
use super::background::Background;
use super::dispatch::{Dispatch, StateListener};
use super::handle::CuratorFramework;
use super::hooks::CloseHooks;
use super::inner::{ConnInner, Handle, Inner};
use super::session::session_monitor;
use crate::client::{Client, ClientConfig};
use crate::error::{Error, Result};
use crate::paths::validate_namespace;
use crate::retry::{ExponentialBackoffRetry, RetryPolicy};
use crate::state::ConnectionState;
use zk_proto::Acl;

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
    horizon_margin: Option<Duration>,
    auth: Vec<(String, Vec<u8>)>,
    container_parents: bool,
    acl_provider: Arc<dyn AclProvider>,
    listeners: Vec<Arc<StateListener>>,
    tls: Option<crate::client::TlsConfig>,
    sasl: Option<crate::client::SaslConfig>,
    ensemble_tracker: bool,
    ensemble_tracker_delay: Duration,
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
            // The schemes only: credentials are never shown.
            .field("auth", &self.auth.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>())
            .field("container_parents", &self.container_parents)
            .field("acl_provider", &self.acl_provider)
            .field("listeners", &self.listeners.len())
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("ensemble_tracker", &self.ensemble_tracker)
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
            horizon_margin: None,
            auth: Vec::new(),
            container_parents: true,
            acl_provider: Arc::new(OpenAclProvider),
            listeners: Vec::new(),
            sasl: None,
            ensemble_tracker: false,
            ensemble_tracker_delay: Duration::from_secs(1),
            tls: None,
        }
    }
}

/// Making a client.
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
}

impl CuratorFrameworkBuilder {
    /// `host:port[,host:port...][/chroot]` (required).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181");
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
    /// let b = zk_framework::CuratorFramework::builder().session_timeout(std::time::Duration::from_secs(10));
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
    /// let b = zk_framework::CuratorFramework::builder().connection_timeout(std::time::Duration::from_secs(3));
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
    /// use zk_framework::RetryNTimes;
    /// let b = zk_framework::CuratorFramework::builder().retry_policy(RetryNTimes::new(3, Duration::from_millis(100)));
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
    /// let b = zk_framework::CuratorFramework::builder().namespace("app");
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
    /// let b = zk_framework::CuratorFramework::builder().default_data(b"me".to_vec());
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
    /// let b = zk_framework::CuratorFramework::builder().can_be_read_only(true);
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
    /// let b = zk_framework::CuratorFramework::builder().simulated_session_expiration_percent(50);
    /// # let _ = b;
    /// ```
    pub fn simulated_session_expiration_percent(mut self, percent: u32) -> Self {
        self.simulated_expiration_percent = percent;
        self
    }

    /// The margin taken off the session's safe horizon
    /// ([`CuratorFramework::session_horizon`]): by default a twentieth of
    /// the negotiated session timeout, at least 50 ms. Give more where a
    /// server may answer for a session its leader has expired already (a
    /// follower cut off from its quorum answers until its `syncLimit` ×
    /// `tickTime` has passed). A margin at or above the session timeout makes
    /// the horizon the last answered request's send time.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = zk_framework::CuratorFramework::builder().session_horizon_margin(Duration::from_secs(2));
    /// # let _ = b;
    /// ```
    pub fn session_horizon_margin(mut self, margin: Duration) -> Self {
        self.horizon_margin = Some(margin);
        self
    }

    /// Credentials sent on every connection, before any request, and on the
    /// new session built after an expiry (for example `("digest", b"user:pw")`;
    /// may be given several times). The server answers bad credentials (an
    /// unknown scheme) with `AuthFailed` and closes the session: operations
    /// then fail with [`Error::AuthFailed`]. The credentials never appear in
    /// `Debug` output or logs. [`CuratorFrameworkBuilder::build`] checks them
    /// first ([`ClientConfig::validate_auth`]): a scheme with whitespace, or
    /// `digest` credentials that are not `USER:PASSWORD`, is refused there.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder().authorization("digest", b"u:p");
    /// # let _ = b;
    /// ```
    pub fn authorization(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_string(), auth.to_vec()));
        self
    }

    /// Connects over TLS (the server's secure client port) with `tls`; every
    /// connection of every session uses it. See [`TlsConfig`](crate::TlsConfig).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{CuratorFramework, TlsConfig};
    /// let tls = TlsConfig::builder().ca_pem_file("ca.pem").build()?;
    /// let client = CuratorFramework::builder().connect_string("zk1:2281").tls(tls).build()?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn tls(mut self, tls: crate::client::TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates every connection with SASL, DIGEST-MD5 or Kerberos (see
    /// [`SaslConfig`](crate::SaslConfig)): what Curator gets from a JAAS
    /// `Client` section and ZooKeeper's `zookeeper.sasl.*` switches. The
    /// exchange runs on every connection before anything else, and again for
    /// a new session after an expiry. A refusal ends the session's client
    /// ([`ConnectionState::AuthFailed`](crate::ConnectionState::AuthFailed));
    /// [`CuratorFramework::block_until_connected`] and every call then fail
    /// with [`Error::Sasl`]. The password never appears in `Debug`, logs or
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{CuratorFramework, SaslConfig};
    /// let client = CuratorFramework::builder()
    ///     .connect_string("zk1:2181")
    ///     .sasl(SaslConfig::digest_md5("app", "app-secret")?)
    ///     .build()?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn sasl(mut self, sasl: crate::client::SaslConfig) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// Follows the ensemble's configuration (`/zookeeper/config`, ZooKeeper
    /// 3.5+'s dynamic reconfiguration): after every connection and every
    /// change of the config (and every 10 s at the latest, should a change's
    /// event be missed), the client syncs, reads it, and, when its
    /// version is newer than the last applied, hands the members' client
    /// addresses to [`CuratorFramework::update_server_list`] after a random
    /// delay (see [`ensemble_tracker_delay`](Self::ensemble_tracker_delay)):
    /// servers removed are dropped, servers added are used, only as many
    /// clients move as balance the new list, sessions are kept, the chroot
    /// too. A wildcard client address (`0.0.0.0`) is replaced by the
    /// member's quorum host; an address that does not resolve is skipped
    /// (logged); a config with no usable address, or a version older than
    /// the one applied (a server behind the others), changes nothing.
    /// [`CuratorFramework::server_list`] and
    /// [`CuratorFramework::ensemble_config`] show what is in use.
    ///
    /// Off by default, as the field learned (Curator's `EnsembleTracker` is
    /// on by default and Flink, ElasticJob and Hermes switch it off): a
    /// server whose published client addresses are not reachable from the
    /// client (another network, NAT, Kubernetes pod addresses) would take
    /// the client away from addresses that work.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let c = zk_framework::CuratorFramework::builder()
    ///     .connect_string("zk1:2181,zk2:2181,zk3:2181")
    ///     .ensemble_tracker(true)
    ///     .build()?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn ensemble_tracker(mut self, follow: bool) -> Self {
        self.ensemble_tracker = follow;
        self
    }

    /// The longest random delay between reading a new config and moving
    /// (default 1 s), so that the clients of one change do not all move at
    /// the same moment. Zero moves at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder()
    ///     .ensemble_tracker(true)
    ///     .ensemble_tracker_delay(std::time::Duration::from_millis(200));
    /// # let _ = b;
    /// ```
    pub fn ensemble_tracker_delay(mut self, max: Duration) -> Self {
        self.ensemble_tracker_delay = max;
        self
    }

    /// Create missing parents as persistent nodes instead of containers.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder().dont_use_container_parents();
    /// # let _ = b;
    /// ```
    pub fn dont_use_container_parents(mut self) -> Self {
        self.container_parents = false;
        self
    }

    /// One ACL for every created node (default `OPEN_ACL_UNSAFE`): short for
    /// `acl_provider(FixedAclProvider::new(acl))`.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::CuratorFramework::builder().acl(zk_framework::Acl::open_unsafe());
    /// # let _ = b;
    /// ```
    pub fn acl(self, acl: Vec<Acl>) -> Self {
        self.acl_provider(FixedAclProvider::new(acl))
    }

    /// The ACL provider (Curator's `aclProvider`, default [`OpenAclProvider`]):
    /// it chooses the ACL of every node this client and the recipes built on
    /// it create, parents, containers and the namespace node included. An ACL
    /// that names the `auth` scheme (the creator) needs
    /// [`CuratorFrameworkBuilder::authorization`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{CuratorFramework, FixedAclProvider};
    /// let b = CuratorFramework::builder()
    ///     .authorization("digest", b"app:pw")
    ///     .acl_provider(FixedAclProvider::creator_all());
    /// # let _ = b;
    /// ```
    pub fn acl_provider(mut self, provider: impl AclProvider + 'static) -> Self {
        self.acl_provider = Arc::new(provider);
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
    /// let b = zk_framework::CuratorFramework::builder()
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
    /// 1..=100, a bad namespace, or credentials that
    /// [`ClientConfig::validate_auth`] refuses (`digest` without `USER:PASSWORD`,
    /// a scheme with whitespace).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{CuratorFramework, Error};
    /// let err = CuratorFramework::builder().connect_string("::garbage::").build().unwrap_err();
    /// assert!(matches!(err, Error::InvalidConnectString { .. }));
    /// let err = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .authorization("digest", b"no-colon")
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(err, Error::InvalidArgument(m) if m.contains("USER:PASSWORD")));
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
        for (scheme, auth) in &self.auth {
            ClientConfig::validate_auth(scheme, auth)?;
        }
        let default_data = self.default_data.clone().unwrap_or_else(local_address);
        let client_config = ClientConfig {
            session_timeout: self.session_timeout,
            connect_timeout: self.connection_timeout,
            read_only: self.can_be_read_only,
            auth: self.auth.clone(),
            tls: self.tls.clone(),
            sasl: self.sasl.clone(),
            ..ClientConfig::default()
        };
        let client = Client::connect(&cs, client_config.clone())?;
        let (close_tx, close_rx) = crossbeam_channel::bounded(0);
        let (ensemble_wake, ensemble_woken) = crossbeam_channel::bounded(1);
        let executor = super::executor::Executor::new();
        let inner = Arc::new(Inner {
            connect_string: Mutex::new(cs),
            client_config,
            connection_timeout: self.connection_timeout,
            retry_policy: self.retry_policy,
            namespace: self.namespace,
            default_data,
            container_parents: self.container_parents,
            acl_provider: self.acl_provider,
            simulated_expiration_percent: self.simulated_expiration_percent,
            horizon_margin: self.horizon_margin,
            health: Mutex::new(crate::state::SessionHealth::PastHorizon),
            health_listeners: Mutex::new(Vec::new()),
            known_parents: Arc::default(),
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
            dispatch: Dispatch::default(),
            closed: AtomicBool::new(false),
            namespace_ready: AtomicBool::new(false),
            background: Background::new(executor.clone()),
            executor,
            threads: Mutex::new(Vec::new()),
            extensions: Mutex::new(Default::default()),
            close_tx: Mutex::new(Some(close_tx)),
            close_rx,
            close_hooks: CloseHooks::new(),
            ensemble: Mutex::new(super::inner::Tracked::default()),
            ensemble_wake,
        });
        let fw = CuratorFramework {
            inner: inner.clone(),
            deadline: None,
        };
        // The dispatch and background threads start when there is work for them;
        // they know their client before the session monitor can post anything
        // (a `Connected` posted before this was dropped unheard: the listeners
        // of 1 client in about 60 never heard it).
        inner.dispatch.attach(Arc::downgrade(&inner));
        inner.background.attach(Arc::downgrade(&inner));
        let weak = Arc::downgrade(&inner);
        let monitor = std::thread::Builder::new()
            .name("zk-framework-session".into())
            .spawn(move || session_monitor(weak))
            .map_err(|e| Error::InvalidArgument(format!("cannot spawn thread: {e}")))?;
        inner.threads.lock().push(monitor);
        if self.ensemble_tracker {
            super::ensemble::start(&inner, ensemble_woken, self.ensemble_tracker_delay)?;
        }
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
