//! The client's public value types: configuration, states, events, watchers and
//! multi operations.

use std::time::Duration;

use super::sasl::SaslConfig;
use super::tls::TlsConfig;
use crate::error::Error;
use zk_proto::frame::DEFAULT_MAX_FRAME;
use zk_proto::{Acl, CreateMode, EventType, KeeperState, Stat};

/// Settings of a [`Client`](super::Client). Build one with `ClientConfig::default()`
/// and struct-update syntax, or with the `with_*` methods.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `session_timeout` | 30 s | requested session timeout; the server clamps it (see [`Client::negotiated_timeout`](super::Client::negotiated_timeout)) |
/// | `connect_timeout` | 5 s | bound on one connection attempt (TCP connect **and** handshake) to one address; the effective value is `min(connect_timeout, session timeout)` |
/// | `read_only` | `false` | sends the read-only flag: a read-only server may accept the session |
/// | `max_frame` | 1 048 575 | largest request frame the client sends (`jute.maxbuffer`); bigger requests fail with [`Error::DataTooLarge`]. Replies may be up to `max_frame + 64 KiB` |
/// | `session` | `None` | `Some((id, password))` resumes an existing session instead of creating one |
/// | `auth` | empty | `(scheme, credentials)` pairs sent after every (re)connect, e.g. `("digest", b"user:pw")` |
/// | `tls` | `None` | [`TlsConfig`]: connect over TLS (the server's secure client port); the TLS handshake is part of the connection attempt and bounded by `connect_timeout` |
/// | `sasl` | `None` | [`SaslConfig`]: authenticate every connection with SASL (DIGEST-MD5 or Kerberos) before anything else is sent on it; the exchange is part of the connection attempt and bounded by `connect_timeout` |
///
/// Timing derived from the negotiated session timeout `T`: the read timeout is
/// `2T/3` (no byte received for that long ⇒ the connection is dead), and a ping is
/// sent when nothing has been sent for a third of the read timeout (`2T/9`).
///
/// # Errors
///
/// [`Client::connect`](super::Client::connect) rejects a zero timeout, a timeout over
/// `i32::MAX` ms, a zero `max_frame`, a `max_frame` over `i32::MAX`, or a resumed
/// session id of 0 with [`Error::InvalidArgument`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zk_framework::ClientConfig;
///
/// let config = ClientConfig {
///     session_timeout: Duration::from_secs(10),
///     ..ClientConfig::default()
/// }
/// .with_auth("digest", b"user:secret");
/// assert_eq!(config.connect_timeout, Duration::from_secs(5));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Requested session timeout (default 30 s).
    pub session_timeout: Duration,
    /// Bound on one connection attempt, TCP connect plus handshake (default 5 s).
    pub connect_timeout: Duration,
    /// Whether a read-only server may serve the session (default `false`).
    pub read_only: bool,
    /// Largest frame sent (default `jute.maxbuffer` = 1 048 575 bytes).
    pub max_frame: usize,
    /// A session to resume: `(session id, password)` (default `None`: a new session).
    pub session: Option<(i64, Vec<u8>)>,
    /// Credentials sent after each (re)connect, as `(scheme, auth)` (default none).
    pub auth: Vec<(String, Vec<u8>)>,
    /// TLS settings; `None` (the default) for plain TCP.
    pub tls: Option<TlsConfig>,
    /// SASL authentication of every connection; `None` (the default) for none.
    pub sasl: Option<SaslConfig>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            session_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            read_only: false,
            max_frame: DEFAULT_MAX_FRAME,
            session: None,
            auth: Vec::new(),
            tls: None,
            sasl: None,
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Passwords and credentials are not printed.
        f.debug_struct("ClientConfig")
            .field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_only", &self.read_only)
            .field("max_frame", &self.max_frame)
            .field("session", &self.session.as_ref().map(|(id, _)| format!("{id:#x}")))
            .field("auth", &self.auth.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>())
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .finish()
    }
}

impl ClientConfig {
    /// Sets the requested session timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = zk_framework::ClientConfig::default().with_session_timeout(Duration::from_secs(4));
    /// assert_eq!(c.session_timeout, Duration::from_secs(4));
    /// ```
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the per-attempt connect timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = zk_framework::ClientConfig::default().with_connect_timeout(Duration::from_millis(500));
    /// assert_eq!(c.connect_timeout, Duration::from_millis(500));
    /// ```
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Resumes the session `id` with its `password`.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_framework::ClientConfig::default().with_session(0x1234, vec![0; 16]);
    /// assert_eq!(c.session.unwrap().0, 0x1234);
    /// ```
    pub fn with_session(mut self, id: i64, password: Vec<u8>) -> Self {
        self.session = Some((id, password));
        self
    }

    /// Adds credentials sent after each (re)connect. They are checked by
    /// [`ClientConfig::validate_auth`] when a managed client is built
    /// ([`CuratorFrameworkBuilder::build`](crate::CuratorFrameworkBuilder::build)).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_framework::ClientConfig::default().with_auth("digest", b"u:p");
    /// assert_eq!(c.auth.len(), 1);
    /// ```
    pub fn with_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_string(), auth.to_vec()));
        self
    }

    /// Checks one `(scheme, credentials)` pair before it is sent: the rule a
    /// managed client's [`CuratorFrameworkBuilder::build`](crate::CuratorFrameworkBuilder::build)
    /// applies to every [`authorization`](crate::CuratorFrameworkBuilder::authorization),
    /// and that zk-lock applies to `--auth`. The scheme must be non-empty, with
    /// no whitespace, control character or `:` (a space read from a file
    /// would otherwise make an unknown scheme, which the server answers with
    /// `AuthFailed`, closing the session); `digest` credentials must be
    /// `USER:PASSWORD` with a non-empty user (the server cannot make an id of
    /// anything else). Messages never repeat the credentials.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the problem.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ClientConfig, Error};
    /// assert!(ClientConfig::validate_auth("digest", b"deployer:s3cret").is_ok());
    /// assert!(ClientConfig::validate_auth("x509", b"").is_ok());
    /// let e = ClientConfig::validate_auth("digest", b"hunter2").unwrap_err();
    /// assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("USER:PASSWORD")));
    /// assert!(!e.to_string().contains("hunter2"));
    /// assert!(ClientConfig::validate_auth(" digest", b"u:p").is_err());
    /// ```
    pub fn validate_auth(scheme: &str, auth: &[u8]) -> Result<(), Error> {
        if scheme.is_empty() {
            return Err(Error::InvalidArgument(
                "an auth scheme must not be empty (e.g. digest, as in digest with USER:PASSWORD)".into(),
            ));
        }
        if scheme.chars().any(|c| c.is_whitespace() || c.is_control() || c == ':') {
            return Err(Error::InvalidArgument(format!(
                "the auth scheme {scheme:?} contains whitespace, a control character or ':' \
                 (a scheme is a word such as digest)"
            )));
        }
        if scheme == "digest" {
            let user = auth.iter().position(|&b| b == b':').map(|i| &auth[..i]);
            match user {
                None => {
                    return Err(Error::InvalidArgument(
                        "digest credentials must be USER:PASSWORD, e.g. deployer:s3cret (no ':' found)".into(),
                    ))
                }
                Some([]) => {
                    return Err(Error::InvalidArgument(
                        "digest credentials must be USER:PASSWORD, e.g. deployer:s3cret (the user is empty)".into(),
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Allows a read-only server to serve the session.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::ClientConfig::default().with_read_only(true).read_only);
    /// ```
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Connects over TLS with `tls` (see [`TlsConfig`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{ClientConfig, TlsConfig};
    /// let tls = TlsConfig::builder().ca_pem_file("ca.pem").build()?;
    /// let c = ClientConfig::default().with_tls(tls);
    /// assert!(c.tls.is_some());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates every connection with SASL (see [`SaslConfig`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ClientConfig, SaslConfig};
    /// let c = ClientConfig::default().with_sasl(SaslConfig::digest_md5("bob", "bobsecret")?);
    /// assert!(!format!("{c:?}").contains("bobsecret"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn with_sasl(mut self, sasl: SaslConfig) -> Self {
        self.sasl = Some(sasl);
        self
    }
}

/// The state of a [`Client`](super::Client).
///
/// `Connecting → Connected ⇄ Connecting → …`, ending in `Expired`, `AuthFailed` or
/// `Closed`, which are final.
///
/// # Examples
///
/// ```
/// use zk_framework::ClientState;
/// assert!(ClientState::Connected.is_connected());
/// assert!(ClientState::Expired.is_terminal());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientState {
    /// Not connected (never yet, or the connection was lost); the client is trying.
    Connecting,
    /// Connected to a read-write server.
    Connected,
    /// Connected to a read-only server.
    ConnectedReadOnly,
    /// The server expired the session: the handle is dead.
    Expired,
    /// The server rejected the credentials: the handle is dead.
    AuthFailed,
    /// [`Client::close`](super::Client::close) was called or the last handle dropped.
    Closed,
}

impl ClientState {
    /// Whether requests can be sent.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_framework::ClientState::Connecting.is_connected());
    /// ```
    pub fn is_connected(self) -> bool {
        matches!(self, ClientState::Connected | ClientState::ConnectedReadOnly)
    }

    /// Whether the handle is dead for good.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::ClientState::Closed.is_terminal());
    /// ```
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ClientState::Expired | ClientState::AuthFailed | ClientState::Closed
        )
    }
}

/// A session state change, sent to every [`Client::state_receiver`](super::Client::state_receiver).
///
/// These are **not** given to node watchers: watchers are one-shot node watches that
/// are kept across reconnects (and re-registered with SetWatches), so a
/// `Disconnected` is not their business.
///
/// # Examples
///
/// ```
/// use zk_framework::{SessionEvent, proto::KeeperState};
/// assert_eq!(SessionEvent::Expired.keeper_state(), KeeperState::Expired);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEvent {
    /// The connection was lost; the client is reconnecting and the session may survive.
    Disconnected,
    /// Connected (the first time: a new session; later: the same session resumed).
    SyncConnected,
    /// Connected to a read-only server.
    ConnectedReadOnly,
    /// The session expired (final).
    Expired,
    /// Authentication failed (final).
    AuthFailed,
    /// The client was closed (final).
    Closed,
}

impl SessionEvent {
    /// The matching ZooKeeper `KeeperState`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{SessionEvent, proto::KeeperState};
    /// assert_eq!(SessionEvent::Disconnected.keeper_state(), KeeperState::Disconnected);
    /// ```
    pub fn keeper_state(self) -> KeeperState {
        match self {
            SessionEvent::Disconnected => KeeperState::Disconnected,
            SessionEvent::SyncConnected => KeeperState::SyncConnected,
            SessionEvent::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
            SessionEvent::Expired => KeeperState::Expired,
            SessionEvent::AuthFailed => KeeperState::AuthFailed,
            SessionEvent::Closed => KeeperState::Closed,
        }
    }
}

/// A node event delivered to a [`Watcher`].
///
/// # Examples
///
/// ```
/// use zk_framework::{WatchedEvent, proto::{EventType, KeeperState}};
/// let e = WatchedEvent { event_type: EventType::NodeDeleted, state: KeeperState::SyncConnected, path: Some("/a".into()) };
/// assert_eq!(e.path.as_deref(), Some("/a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The session state (always `SyncConnected` for node events).
    pub state: KeeperState,
    /// The node, relative to the chroot.
    pub path: Option<String>,
}

/// A one-shot watch callback.
///
/// Implemented for `FnOnce(WatchedEvent) + Send + 'static` closures and for
/// `crossbeam_channel::Sender<WatchedEvent>` (the event is sent with `try_send`,
/// so a full bounded channel drops it). Callbacks run on the client's event
/// thread, one at a time, with no lock held: they may call the client. A panic is
/// caught and logged. Each registration fires at most once; a watch whose request
/// failed (other than `exists` on a missing node) is dropped without being called.
///
/// # Examples
///
/// ```
/// use zk_framework::{WatchedEvent, Watcher};
/// fn takes(_: impl Watcher) {}
/// takes(|e: WatchedEvent| println!("{e:?}"));
/// let (tx, _rx) = crossbeam_channel::unbounded::<WatchedEvent>();
/// takes(tx);
/// ```
pub trait Watcher: Send + 'static {
    /// Handles the event; called at most once.
    fn process(self: Box<Self>, event: WatchedEvent);

    /// Whether [`process`](Watcher::process) only signals: a `try_send`, an
    /// atomic store, a short uncontended lock; it never blocks, never calls
    /// the client and never runs other code. Such a watcher may run on the
    /// client's I/O thread as soon as its notification is read, instead of
    /// being handed to the event thread (one thread wake-up less between the
    /// server's notification and the thread that waits for it). It runs
    /// there only when every watcher of that notification only signals and
    /// the event thread has nothing queued, so the watchers of one client
    /// still see events in the order the server sent them. It is asked when
    /// the notification is read, so the answer may change over the watcher's
    /// life (one that has nothing left to tell may say so then).
    ///
    /// `false` unless a watcher says otherwise; `true` for
    /// `crossbeam_channel::Sender<WatchedEvent>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{WatchedEvent, Watcher};
    /// let (tx, _rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
    /// assert!(tx.only_signals());
    /// let closure = |_: WatchedEvent| {};
    /// assert!(!closure.only_signals());
    /// ```
    fn only_signals(&self) -> bool {
        false
    }
}

impl<F: FnOnce(WatchedEvent) + Send + 'static> Watcher for F {
    fn process(self: Box<Self>, event: WatchedEvent) {
        (*self)(event)
    }
}

impl Watcher for crossbeam_channel::Sender<WatchedEvent> {
    fn process(self: Box<Self>, event: WatchedEvent) {
        if let Err(e) = self.try_send(event) {
            log::debug!("watch event not delivered to its channel: {e}");
        }
    }

    fn only_signals(&self) -> bool {
        true
    }
}

/// One operation of a [`Client::multi`](super::Client::multi) transaction.
///
/// # Examples
///
/// ```
/// use zk_framework::Op;
/// use zk_framework::proto::{Acl, CreateMode};
/// let ops = vec![
///     Op::create("/a", b"x".to_vec(), Acl::open_unsafe(), CreateMode::Persistent),
///     Op::set_data("/b", b"y".to_vec(), Some(3)),
///     Op::check("/c", 0),
///     Op::delete("/d", None),
/// ];
/// assert_eq!(ops[3].path(), "/d");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create a node (containers go out as createContainer, TTL modes as createTTL).
    Create {
        /// The path (a prefix for sequential modes).
        path: String,
        /// The data.
        data: Vec<u8>,
        /// The ACL (must not be empty).
        acl: Vec<Acl>,
        /// The mode.
        mode: CreateMode,
        /// The TTL, required for TTL modes and forbidden otherwise.
        ttl: Option<Duration>,
    },
    /// Delete a node.
    Delete {
        /// The path.
        path: String,
        /// Expected version; `None` for any.
        version: Option<i32>,
    },
    /// Set a node's data.
    SetData {
        /// The path.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// Expected version; `None` for any.
        version: Option<i32>,
    },
    /// Check a node's version.
    Check {
        /// The path.
        path: String,
        /// The version the node must have.
        version: i32,
    },
}

impl Op {
    /// The same operation with its path mapped by `f`, which is given the
    /// path and whether the op creates a sequential node (a namespace or a
    /// chroot applied, after the path rules are checked).
    pub(crate) fn map_path(
        self,
        f: impl FnOnce(&str, bool) -> crate::error::Result<String>,
    ) -> crate::error::Result<Op> {
        Ok(match self {
            Op::Create {
                path,
                data,
                acl,
                mode,
                ttl,
            } => Op::Create {
                path: f(&path, mode.is_sequential())?,
                data,
                acl,
                mode,
                ttl,
            },
            Op::Delete { path, version } => Op::Delete {
                path: f(&path, false)?,
                version,
            },
            Op::SetData { path, data, version } => Op::SetData {
                path: f(&path, false)?,
                data,
                version,
            },
            Op::Check { path, version } => Op::Check {
                path: f(&path, false)?,
                version,
            },
        })
    }

    /// A create of a non-TTL mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Op, proto::{Acl, CreateMode}};
    /// let op = Op::create("/a", vec![], Acl::open_unsafe(), CreateMode::Container);
    /// assert_eq!(op.path(), "/a");
    /// ```
    pub fn create(path: impl Into<String>, data: impl Into<Vec<u8>>, acl: Vec<Acl>, mode: CreateMode) -> Op {
        Op::Create {
            path: path.into(),
            data: data.into(),
            acl,
            mode,
            ttl: None,
        }
    }

    /// A create of a TTL mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_framework::{Op, proto::{Acl, CreateMode}};
    /// let op = Op::create_ttl("/t", vec![], Acl::open_unsafe(), CreateMode::PersistentWithTtl, Duration::from_secs(60));
    /// assert_eq!(op.path(), "/t");
    /// ```
    pub fn create_ttl(
        path: impl Into<String>,
        data: impl Into<Vec<u8>>,
        acl: Vec<Acl>,
        mode: CreateMode,
        ttl: Duration,
    ) -> Op {
        Op::Create {
            path: path.into(),
            data: data.into(),
            acl,
            mode,
            ttl: Some(ttl),
        }
    }

    /// A delete (`None`: any version).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Op::delete("/a", Some(2)).path(), "/a");
    /// ```
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Delete {
            path: path.into(),
            version,
        }
    }

    /// A setData (`None`: any version).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Op::set_data("/a", b"v".to_vec(), None).path(), "/a");
    /// ```
    pub fn set_data(path: impl Into<String>, data: impl Into<Vec<u8>>, version: Option<i32>) -> Op {
        Op::SetData {
            path: path.into(),
            data: data.into(),
            version,
        }
    }

    /// A version check.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Op::check("/a", 0).path(), "/a");
    /// ```
    pub fn check(path: impl Into<String>, version: i32) -> Op {
        Op::Check {
            path: path.into(),
            version,
        }
    }

    /// The path the op acts on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Op::check("/x", 1).path(), "/x");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. } | Op::Delete { path, .. } | Op::SetData { path, .. } | Op::Check { path, .. } => {
                path
            }
        }
    }
}

/// The result of one op of a multi.
///
/// A successful multi gives one success variant per op. A failed multi (see
/// [`Client::multi_results`](super::Client::multi_results)) gives `RolledBack` for
/// the ops before the failing one, `Error(e)` for the failing one, and
/// `Error(Keeper { RuntimeInconsistency })` for the ops after it.
///
/// # Examples
///
/// ```
/// use zk_framework::OpResult;
/// let r = OpResult::Delete;
/// assert!(r.error().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// A create: the actual path (relative to the chroot) and, for containers and
    /// TTL nodes, the new node's Stat (plain creates in a multi carry no Stat).
    Create {
        /// The created path.
        path: String,
        /// The Stat, when the server sent one.
        stat: Option<Stat>,
    },
    /// A delete.
    Delete,
    /// A setData, with the node's new Stat.
    SetData {
        /// The new Stat.
        stat: Stat,
    },
    /// A check.
    Check,
    /// In a failed multi, an op that would have succeeded but was rolled back.
    RolledBack,
    /// In a failed multi, the failing op's error, or RuntimeInconsistency for the
    /// ops after it.
    Error(Error),
}

impl OpResult {
    /// The error of an `Error` result.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{OpResult, Error};
    /// assert_eq!(OpResult::Error(Error::ConnectionLoss).error(), Some(&Error::ConnectionLoss));
    /// ```
    pub fn error(&self) -> Option<&Error> {
        match self {
            OpResult::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// One read of [`Client::sync_then_read`](super::Client::sync_then_read): a node's Stat, its data, or its
/// children (with the parent's Stat).
///
/// # Examples
///
/// ```
/// use zk_framework::ReadOp;
/// assert_eq!(ReadOp::get_data("/a").path(), "/a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOp {
    /// `exists`: the node's Stat.
    Exists(String),
    /// `getData`: the node's data and Stat.
    GetData(String),
    /// `getChildren2`: the node's children and its Stat.
    GetChildren(String),
}

impl ReadOp {
    /// `exists(path)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::ReadOp::exists("/a"), zk_framework::ReadOp::Exists("/a".into()));
    /// ```
    pub fn exists(path: impl Into<String>) -> ReadOp {
        ReadOp::Exists(path.into())
    }

    /// `getData(path)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::ReadOp::get_data("/a"), zk_framework::ReadOp::GetData("/a".into()));
    /// ```
    pub fn get_data(path: impl Into<String>) -> ReadOp {
        ReadOp::GetData(path.into())
    }

    /// `getChildren2(path)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::ReadOp::get_children("/a"), zk_framework::ReadOp::GetChildren("/a".into()));
    /// ```
    pub fn get_children(path: impl Into<String>) -> ReadOp {
        ReadOp::GetChildren(path.into())
    }

    /// The path read.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::ReadOp::exists("/x").path(), "/x");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            ReadOp::Exists(p) | ReadOp::GetData(p) | ReadOp::GetChildren(p) => p,
        }
    }

    /// The same read with its path mapped by `f` (a namespace applied).
    pub(crate) fn map_path(&self, f: impl FnOnce(&str) -> String) -> ReadOp {
        match self {
            ReadOp::Exists(p) => ReadOp::Exists(f(p)),
            ReadOp::GetData(p) => ReadOp::GetData(f(p)),
            ReadOp::GetChildren(p) => ReadOp::GetChildren(f(p)),
        }
    }
}

/// The answer to one [`ReadOp`]: `None` when the node does not exist.
///
/// # Examples
///
/// ```
/// use zk_framework::ReadResult;
/// assert_eq!(ReadResult::Data(None).data(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadResult {
    /// The answer to [`ReadOp::Exists`].
    Exists(Option<Stat>),
    /// The answer to [`ReadOp::GetData`].
    Data(Option<(Vec<u8>, Stat)>),
    /// The answer to [`ReadOp::GetChildren`] (the children, and the node's
    /// own Stat).
    Children(Option<(Vec<String>, Stat)>),
    /// The server refused the read (`NoAuth`, ...).
    Error(Error),
}

impl ReadResult {
    /// The Stat read, whichever the read (`None`: no node, or refused).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ReadResult, Stat};
    /// assert_eq!(ReadResult::Exists(Some(Stat::default())).stat(), Some(&Stat::default()));
    /// ```
    pub fn stat(&self) -> Option<&Stat> {
        match self {
            ReadResult::Exists(s) => s.as_ref(),
            ReadResult::Data(d) => d.as_ref().map(|(_, s)| s),
            ReadResult::Children(c) => c.as_ref().map(|(_, s)| s),
            ReadResult::Error(_) => None,
        }
    }

    /// The data and Stat of a [`ReadResult::Data`] answer for an existing
    /// node.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ReadResult, Stat};
    /// let r = ReadResult::Data(Some((b"v".to_vec(), Stat::default())));
    /// assert_eq!(r.data().map(|(d, _)| d.as_slice()), Some(&b"v"[..]));
    /// ```
    pub fn data(&self) -> Option<(&Vec<u8>, &Stat)> {
        match self {
            ReadResult::Data(Some((d, s))) => Some((d, s)),
            _ => None,
        }
    }

    /// The children and Stat of a [`ReadResult::Children`] answer for an
    /// existing node.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ReadResult, Stat};
    /// let r = ReadResult::Children(Some((vec!["a".into()], Stat::default())));
    /// assert_eq!(r.children().map(|(c, _)| c.len()), Some(1));
    /// ```
    pub fn children(&self) -> Option<(&Vec<String>, &Stat)> {
        match self {
            ReadResult::Children(Some((c, s))) => Some((c, s)),
            _ => None,
        }
    }

    /// The server's refusal, if it refused.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, ReadResult};
    /// let r = ReadResult::Error(Error::NoAuth { path: "/a".into() });
    /// assert!(r.error().is_some());
    /// ```
    pub fn error(&self) -> Option<&Error> {
        match self {
            ReadResult::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// The watches a client has registered (paths relative to the chroot), as they
/// will be re-sent with SetWatches after a reconnect.
///
/// # Examples
///
/// ```
/// let w = zk_framework::RegisteredWatches::default();
/// assert_eq!(w.len(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisteredWatches {
    /// Data watches (getData, and exists on an existing node), one entry per path.
    pub data: Vec<String>,
    /// Exists watches on missing nodes, one entry per path.
    pub exist: Vec<String>,
    /// Child watches, one entry per path.
    pub child: Vec<String>,
    /// Persistent watches ([`Client::add_watch`](super::Client::add_watch)
    /// with [`AddWatchMode::Persistent`](super::AddWatchMode::Persistent)),
    /// one entry per path.
    pub persistent: Vec<String>,
    /// Persistent recursive watches, one entry per path.
    pub persistent_recursive: Vec<String>,
    /// Number of registered callbacks (several may share a path), persistent
    /// registrations included.
    pub callbacks: usize,
}

impl RegisteredWatches {
    /// Number of registered callbacks.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::RegisteredWatches::default().is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.callbacks
    }

    /// Whether no callback is registered.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::RegisteredWatches::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.callbacks == 0
    }
}
