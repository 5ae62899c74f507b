//! `zk-framework`: a synchronous ZooKeeper client whose sessions survive faults, and
//! a Curator-style managed client on top, both built on the wire protocol of
//! `zk-proto`.
//!
//! * [`proto`]: the wire protocol (the `zk-proto` crate, re-exported), shared by the
//!   client and by the embedded test server in `zk-testing`.
//! * [`Error`]: the crate's one error type.

pub mod client;
pub mod error;
pub mod framework;
pub mod paths;
pub mod retry;
pub mod state;

pub use client::{Client, ClientConfig, ClientState, Op, OpResult, SessionEvent, WatchedEvent, Watcher};
pub use error::{Error, Result};

/// The wire protocol: the `zk-proto` crate, re-exported so that every
/// `zk_framework::proto::...` path keeps working.
pub use zk_proto as proto;

/// The `backoff` crate, re-exported for [`retry::BackoffRetry`].
pub use backoff;
