//! The managed client: Curator's `CuratorFramework` in Rust shapes.
//!
//! It owns the current [`Client`](crate::Client) handle and builds a new one (a new session)
//! after expiry; turns session events into Curator's [`ConnectionState`](crate::ConnectionState)s,
//! delivered in order, one at a time, on a dispatch thread; retries what can be retried with a
//! [`RetryPolicy`](crate::RetryPolicy); and offers the building blocks recipes need: creates with
//! container parents, protected ephemeral-sequential creates, and guaranteed
//! deletes.
//!
//! A client runs three threads: the connection's I/O and event threads and a
//! session thread. A dispatch thread (listeners) and a cleanup thread
//! (guaranteed deletes that failed) run only while they have work, and end
//! after a second idle.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_framework::{CreateMode, CuratorFramework, ExponentialBackoffRetry};
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

mod acl;
mod background;
mod builder;
mod config;
mod connection;
mod dispatch;
mod ensemble;
mod executor;
mod handle;
mod hooks;
mod horizon;
mod inner;
mod nodes;
mod ops;
mod retry_loop;
mod session;
mod watchers;

pub use acl::{AclProvider, FixedAclProvider, OpenAclProvider, ScopedAclProvider};
pub use builder::CuratorFrameworkBuilder;
pub use dispatch::{ListenerHandle, StateListener};
pub use handle::CuratorFramework;
pub use hooks::CloseHook;
pub use ops::{CreateBuilder, CreatedTogether, CreatedWithListing, DeleteBuilder};
