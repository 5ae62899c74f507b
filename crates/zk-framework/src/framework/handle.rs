//! [`CuratorFramework`]: the managed client's handle, its settings and its
//! close; and the crate-private steps every operation is made of (the
//! namespace, a path's check, the client bounded by the handle's deadline).
//! The handle's operations are in the rooms above: the connection's states
//! (`connection.rs`), the nodes and watches (`nodes.rs`), the builder
//! (`builder.rs`), and the recipe author's API (`crate::recipe`).

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::hooks::CloseHooks;
use super::inner::Inner;
use crate::client::Client;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::paths::{fix_for_namespace, unfix_for_namespace};
use crate::retry::RetryPolicy;

/// The managed client. Cheap to clone; all clones share one session.
///
/// Its methods are the user's API: the node operations ([`create`](Self::create),
/// [`get_data`](Self::get_data), [`set_data`](Self::set_data),
/// [`delete`](Self::delete), [`check_exists`](Self::check_exists),
/// [`get_children`](Self::get_children), [`multi_results`](Self::multi_results)),
/// the watches ([`add_watch`](Self::add_watch) and the `_w` reads), the
/// connection's states ([`block_until_connected`](Self::block_until_connected),
/// [`add_listener`](Self::add_listener), [`state`](Self::state)), the
/// settings, the deadline and the close. What a recipe author needs besides
/// (session generation and connection epoch, detached calls, the retry loop
/// and its pause, the namespace's paths and node keys, per-client extensions,
/// close hooks, background deletes, the marked write) is
/// [`recipe()`](Self::recipe)'s handle, [`Recipe`](crate::recipe::Recipe).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_framework::{CuratorFramework, RetryOneTime};
/// let client = CuratorFramework::new_client("127.0.0.1:2181", RetryOneTime::new(Duration::from_millis(10)))?;
/// client.block_until_connected(Duration::from_secs(10))?;
/// client.create().creating_parent_containers_if_needed().for_path("/app/config")?;
/// let generation = client.recipe().session_generation();
/// # let _ = generation;
/// # Ok::<(), zk_framework::Error>(())
/// ```
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
            .field("connect_string", &*self.inner.connect_string.lock())
            .field("namespace", &self.inner.namespace)
            .field("state", &self.state())
            .field("generation", &self.inner.generation())
            .finish()
    }
}

/// The client, its settings, its deadline and its close.
impl CuratorFramework {
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

    /// Hands the client a new list of servers (see
    /// [`Client::update_server_list`]: the session is kept and only as many
    /// clients move as balance the new list). New sessions (after an
    /// expiry) use it too. The chroot of the client's connect string is
    /// kept; one in `connect_string` is ignored. Returns whether the current
    /// connection moves.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConnectString`] for a connect string that does not
    /// parse (nothing changes); [`Error::Closed`] on a closed client.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("zk1:2181,zk2:2181,zk3:2181/app").build()?;
    /// c.update_server_list("zk1:2181,zk2:2181,zk4:2181")?;
    /// assert_eq!(c.server_list().len(), 3);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn update_server_list(&self, connect_string: &str) -> Result<bool> {
        let parsed = crate::client::parse_connect_string(connect_string)?;
        if self.is_closed() {
            return Err(crate::error::Error::Closed);
        }
        {
            let mut cs = self.inner.connect_string.lock();
            let chroot = crate::client::parse_connect_string(&cs)
                .ok()
                .and_then(|c| c.chroot)
                .unwrap_or_default();
            let hosts: Vec<String> = parsed.hosts.iter().map(ToString::to_string).collect();
            *cs = format!("{}{chroot}", hosts.join(","));
        }
        self.zookeeper_client().update_server_list(connect_string)
    }

    /// The servers the current session's client chooses from (see
    /// [`Client::server_list`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.server_list(), vec!["127.0.0.1:2181".to_string()]);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn server_list(&self) -> Vec<String> {
        self.zookeeper_client().server_list()
    }

    /// The server of the current connection, `host:port` (see
    /// [`Client::connected_to`]); `None` while not connected.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(5))?;
    /// assert_eq!(c.connected_to().as_deref(), Some("127.0.0.1:2181"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn connected_to(&self) -> Option<String> {
        self.zookeeper_client().connected_to()
    }

    /// The ensemble configuration the client follows, the last one applied
    /// (`None` without [`ensemble_tracker`](crate::CuratorFrameworkBuilder::ensemble_tracker),
    /// or before its first read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").ensemble_tracker(true).build()?;
    /// if let Some(config) = c.ensemble_config() {
    ///     println!("following config {:#x}: {} members", config.version(), config.members().len());
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn ensemble_config(&self) -> Option<zk_proto::config::EnsembleConfig> {
        self.inner.ensemble.lock().applied.clone()
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
    pub fn default_acl(&self) -> Vec<zk_proto::Acl> {
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
    pub fn acl_for_path(&self, path: &str) -> Vec<zk_proto::Acl> {
        super::acl::acl_of(&*self.inner.acl_provider, &self.server_path(path))
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
        for hook in CloseHooks::take(&self.inner.close_hooks) {
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
}

/// The steps every operation is made of (crate-private: the recipe
/// author's are on [`Recipe`](crate::recipe::Recipe)).
impl CuratorFramework {
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// The server path for a user path (the namespace applied).
    pub(crate) fn server_path(&self, path: &str) -> String {
        fix_for_namespace(self.inner.namespace.as_deref(), path)
    }

    /// The user path for a server path (the namespace taken off; a path
    /// outside it is given back as it is).
    pub(crate) fn user_path(&self, server_path: &str) -> String {
        unfix_for_namespace(self.inner.namespace.as_deref(), server_path)
    }

    /// `path` checked by ZooKeeper's rules, as a server path.
    pub(crate) fn checked_path(&self, path: &str) -> Result<String> {
        zk_proto::path::validate_path(path, false)?;
        Ok(self.server_path(path))
    }

    /// The current raw client, bounded by this handle's deadline.
    pub(crate) fn bounded_client(&self) -> Client {
        self.zookeeper_client().with_deadline(self.deadline)
    }

    /// Queues a background guaranteed delete of a server path (used when a
    /// foreground delete failed).
    pub(crate) fn background_delete(&self, server_path: String, version: Option<i32>) {
        self.inner.background.delete(server_path, version);
    }
}
