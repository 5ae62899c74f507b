//! `zk-framework`: a synchronous ZooKeeper client whose sessions survive faults, and
//! a Curator-style managed client on top, both built on the wire protocol of
//! `zk-proto`.
//!
//! Everything a user of the managed client (or of the locks in `zk-recipes`)
//! needs is exported from the crate root:
//!
//! * [`CuratorFramework`] and its [`CuratorFrameworkBuilder`]: the managed
//!   client (new session after expiry, retries, namespaces, protected creates).
//! * [`ConnectionState`] and [`ListenerHandle`]: Curator's connection states and
//!   the handle of a state listener.
//! * The retry policies: [`RetryPolicy`], [`ExponentialBackoffRetry`],
//!   [`BoundedExponentialBackoffRetry`], [`RetryNTimes`], [`RetryOneTime`],
//!   [`RetryForever`], [`RetryUntilElapsed`], [`SessionFailedRetryPolicy`], and
//!   with the `backoff-retry` feature `BackoffRetry` (any schedule of the
//!   `backoff` crate, which stays behind that adapter).
//! * [`Error`] and [`Result`]: the crate's one error type.
//! * The node vocabulary: [`CreateMode`], [`Acl`], [`Id`], [`perms`], [`Stat`].
//! * [`AclProvider`], [`OpenAclProvider`], [`FixedAclProvider`]: the ACL of
//!   every node the managed client creates (Curator's `ACLProvider`).
//! * [`Client`]: the raw client under the managed one.
//! * [`Reconfig`] and [`EnsembleConfig`]: a change of the ensemble's
//!   membership and the configuration it reads (`get_config`, `reconfig` on
//!   both clients).
//!
//! Four modules are public: [`proto`] is the wire protocol (the `zk-proto`
//! crate, re-exported), shared by the client and by the embedded test server
//! in `zk-testing`; [`deadline`] says how a deadline bounds a call (see
//! [`CuratorFramework::with_deadline`]); [`paths`] has Curator's namespace,
//! sorting and protected-name rules; [`recipe`] is the managed client's API
//! for recipe authors, the handle [`recipe::Recipe`] that
//! [`CuratorFramework::recipe`] gives (session generation, connection epoch,
//! the marked write, detached calls, retries, per-client state, the close),
//! what `zk-recipes` is built on.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_framework::{CreateMode, CuratorFramework, ExponentialBackoffRetry};
//! # #[allow(unused_imports)]
//! # use zk_framework::{
//! #     perms, Acl, AclProvider, FixedAclProvider, OpenAclProvider, BoundedExponentialBackoffRetry, Client, ConnectionState,
//! #     CuratorFrameworkBuilder, Error, Id, ListenerHandle, Result, RetryForever, RetryNTimes,
//! #     RetryOneTime, RetryPolicy, RetryUntilElapsed, SessionFailedRetryPolicy, Stat,
//! # };
//!
//! let client = CuratorFramework::builder()
//!     .connect_string("127.0.0.1:2181")
//!     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
//!     .build()?;
//! client.block_until_connected(Duration::from_secs(10))?;
//! let path = client.create().with_mode(CreateMode::Ephemeral).for_path("/me")?;
//! # let _ = path;
//! # Ok::<(), zk_framework::Error>(())
//! ```

// Everything a user needs is at the crate root; the modules are rooms of the
// house, not paths of the API. `deadline` (its grace) and `paths` (ZooKeeper
// path rules and Curator's protected names, for tools that read lock queues)
// are the two a user may name.
mod client;
pub mod deadline;
mod error;
mod framework;
mod metrics;
pub mod paths;
pub mod recipe;
mod retry;
mod state;

/// The wire protocol: the `zk-proto` crate, re-exported so that every
/// `zk_framework::proto::...` path keeps working.
pub use zk_proto as proto;

pub use client::{
    AddWatchMode, Client, ClientConfig, ClientState, ConnectString, GssapiConfig, HostPort, Op, OpResult,
    PersistentWatcher, ReadOp, ReadResult, Reconfig, RegisteredWatches, SaslConfig, SaslError, SaslErrorKind,
    SessionEvent, TlsConfig, TlsConfigBuilder, TlsError, TlsErrorKind, WatchId, WatchedEvent, Watcher, WatcherType,
};
pub use error::{Error, Result};
pub use framework::{
    AclProvider, CreateBuilder, CreatedTogether, CreatedWithListing, CuratorFramework, CuratorFrameworkBuilder,
    DeleteBuilder, FixedAclProvider, ListenerHandle, OpenAclProvider, ScopedAclProvider, StateListener,
};
pub use proto::config::EnsembleConfig;
pub use proto::{perms, Acl, CreateMode, EventType, Id, KeeperState, Stat};
#[cfg(feature = "backoff-retry")]
pub use retry::BackoffRetry;
pub use retry::{
    BoundedExponentialBackoffRetry, ExponentialBackoffRetry, RetryDecision, RetryForever, RetryNTimes, RetryOneTime,
    RetryPolicy, RetryUntilElapsed, SessionFailedRetryPolicy,
};
pub use state::{ConnectionState, HealthListener, SessionHealth};
