//! The managed client's API for recipe authors: what `zk-recipes` builds its
//! locks and elections on, documented as a contract rather than hidden.
//!
//! * **Session generation** ([`CuratorFramework::session_generation`]): 1
//!   for the first session, one more for each new session after an expiry.
//!   Record it when you create an ephemeral node: while it is the same, the
//!   node can still exist; once it has moved on, the node went with its
//!   session.
//! * **Connection epoch** ([`CuratorFramework::connection_epoch`]): moves on
//!   whenever the client may have missed something the server said (a
//!   reconnect, a stale spell). A fact learnt in one epoch (a node exists and
//!   is yours) holds, for a recipe that watches for its change, while the
//!   epoch lasts; after a move, ask again before trusting it. A reconnect
//!   alone proves nothing: the watches it re-registers fire one round trip
//!   later.
//! * **The marked write** ([`Recipe::marked_write`], through
//!   [`CuratorFramework::recipe`]): a transaction that carries its own
//!   marker (an ephemeral node it creates, or a kept one it writes at its
//!   version), applied at most once; after a lost reply
//!   ([`crate::Error::may_have_applied`], the one list of doubtful errors)
//!   the marker settles it on the same session, read after a `sync` on the
//!   connection it is read on, so that no server lagging the write can
//!   answer; after a new session, the read-back ([`Settled::ReadBack`]),
//!   synced too. Counters, shared values, the queue build on it.
//! * **Synced reads** ([`Recipe::sync_then_read`],
//!   [`crate::Client::sync_then_read`]): a `sync` and reads on one
//!   connection, answered by a server that has every write committed before
//!   the sync (the protected create's lookup after a lost reply is one).
//! * **Creates that list** ([`CreateBuilder::for_path_listing_parent`],
//!   [`CreateBuilder::for_paths_together`]): a create (or a group of creates
//!   in one transaction) and the listing of its parent in one round trip, so
//!   that a queue recipe decides whether its node is first without a second
//!   one; with [`CreateBuilder::with_protection`] a create whose reply was
//!   lost is found again by its `_c_<uuid>-` prefix, or cleaned up.
//! * **Detached calls** ([`CuratorFramework::exists_detached`],
//!   [`CuratorFramework::exists_w_detached`],
//!   [`CuratorFramework::delete_detached`]): the request is written and the
//!   call returns; the reply is handed to a callback on the client's I/O
//!   thread, in order with the session's notifications. Callbacks and
//!   watchers only signal (a `try_send`, an atomic): they never block and
//!   never call the client.
//! * **Per-client state** ([`CuratorFramework::extension`]): one value per
//!   type, kept by the client and shared by its clones, so that two clients
//!   of one process share nothing (no process-wide statics).
//! * **The close** ([`CuratorFramework::close_signal`]): a channel that
//!   disconnects when the client closes; select on it beside a watch and a
//!   deadline so that no wait outlives the client.
//! * **Close hooks** ([`CuratorFramework::on_close`], [`CloseHook`]): a
//!   signal run by the thread that closes the client, at once after every
//!   `close_signal()` receiver has disconnected, for a recipe whose own
//!   thread is busy elsewhere (a selector's thread runs its leader's work) and
//!   must still hear the close at once. It only signals, as a watcher does.
//! * **Deadlines** ([`CuratorFramework::with_deadline`]): a handle whose
//!   every operation (the wait for a connection, the retry pauses, each
//!   reply) ends by the deadline.
//! * **Node keys** ([`CuratorFramework::node_key`], [`NodeKey`]): a node as
//!   the server names it (the client's namespace applied), to key what a
//!   recipe records about nodes (figures per lock, nodes granted, a
//!   canonical order of locks) so that two clients with different
//!   namespaces naming one node agree, and a user's path cannot be mistaken
//!   for the server's.
//!
//! # Examples
//!
//! A tiny recipe: an ephemeral node that knows whether it may still exist
//! and whether it was proven in the current connection epoch.
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
//! # client.block_until_connected(std::time::Duration::from_secs(10))?;
//! use zk_framework::CreateMode;
//!
//! let generation = client.session_generation();
//! let epoch = client.connection_epoch();
//! let created = client
//!     .create()
//!     .creating_parent_containers_if_needed()
//!     .with_protection()
//!     .with_mode(CreateMode::EphemeralSequential)
//!     .for_path_listing_parent("/my-recipe/member-")?;
//! let first = created.siblings.as_ref().is_some_and(|kids| kids.len() == 1);
//! // Trusted while both hold; after a move of the epoch, prove it again.
//! let trusted = client.session_generation() == generation && client.connection_epoch() == epoch;
//! assert!(first && trusted);
//! let (tx, rx) = crossbeam_channel::bounded(1);
//! client.exists_detached(&created.path, move |r| {
//!     let _ = tx.try_send(r); // only signal
//! })?;
//! let stat = rx.recv()??.expect("still there");
//! assert_eq!(stat.ephemeral_owner, client.session_id());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`CuratorFramework::session_generation`]: crate::CuratorFramework::session_generation
//! [`CuratorFramework::connection_epoch`]: crate::CuratorFramework::connection_epoch
//! [`CreateBuilder::for_path_listing_parent`]: crate::CreateBuilder::for_path_listing_parent
//! [`CreateBuilder::for_paths_together`]: crate::CreateBuilder::for_paths_together
//! [`CreateBuilder::with_protection`]: crate::CreateBuilder::with_protection
//! [`CuratorFramework::exists_detached`]: crate::CuratorFramework::exists_detached
//! [`CuratorFramework::exists_w_detached`]: crate::CuratorFramework::exists_w_detached
//! [`CuratorFramework::delete_detached`]: crate::CuratorFramework::delete_detached
//! [`CuratorFramework::extension`]: crate::CuratorFramework::extension
//! [`CuratorFramework::close_signal`]: crate::CuratorFramework::close_signal
//! [`CuratorFramework::with_deadline`]: crate::CuratorFramework::with_deadline
//! [`CuratorFramework::node_key`]: crate::CuratorFramework::node_key
//! [`CuratorFramework::on_close`]: crate::CuratorFramework::on_close

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::{CuratorFramework, ReadOp, ReadResult, Result};

mod marked;

pub use marked::{Applied, KeptMarker, MarkedWrite, Marker, Settled, Unproven, WriteProof};

/// The managed client as a recipe author uses it ([`CuratorFramework::recipe`]):
/// the marked write and the synced reads, on top of the client's retry
/// policy, namespace and deadline.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let fw = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # fw.block_until_connected(std::time::Duration::from_secs(10))?;
/// use zk_framework::ReadOp;
/// fw.create().for_path("/r")?;
/// let read = fw.recipe().sync_then_read(&[ReadOp::exists("/r")])?;
/// assert!(read[0].stat().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Recipe<'a> {
    fw: &'a CuratorFramework,
}

impl CuratorFramework {
    /// This client's recipe API ([`Recipe`]): the marked write, the synced
    /// reads.
    ///
    /// # Examples
    ///
    /// See [`Recipe`].
    pub fn recipe(&self) -> Recipe<'_> {
        Recipe { fw: self }
    }
}

impl Recipe<'_> {
    /// Runs `write`'s ops in one transaction with its marker's create (or a
    /// kept marker's write at its version), applied at most once, and says
    /// whether it was applied: by the reply, or, when the reply was lost
    /// ([`crate::Error::may_have_applied`]), by the marker.
    ///
    /// The send goes through the client's retry loop. After a lost reply,
    /// the next attempt proves the send first: on the same session, a `sync`
    /// and then, on the same connection, the marker's `exists` (so no
    /// server that has not applied the lost transaction can answer, however
    /// far it lags): a fresh marker there, or a kept one a version on, is
    /// [`Settled::Applied`] with [`WriteProof::Marker`]; a fresh marker
    /// missing, or a kept one at its version, is not applied, and the write
    /// is sent again (a request of the old connection still in flight
    /// cannot be applied after that: a server refuses it once the session
    /// has moved, and one server answers a session's requests in order).
    /// When the session that sent it ended before the proof (its ephemeral
    /// marker went with it), or a kept marker was deleted or written by
    /// someone else, the marker cannot tell: [`Settled::ReadBack`] gives the
    /// read-back paths as read after a `sync`, for the caller's own rule.
    /// When no proof can be made (the sync or the read fails until the
    /// retries or the deadline run out), [`Settled::Unknown`]: never a
    /// guess.
    ///
    /// Without a marker ([`Marker::Unmarked`], for a node whose ACL refuses
    /// one) a lost reply is [`Settled::ReadBack`] with
    /// [`Unproven::NoMarker`] at once.
    ///
    /// Each proof reads `write`'s read-back paths on the same connection,
    /// after the same sync ([`Applied::reads`]). A write the server refuses
    /// is [`Settled::Refused`] with the failing op (a kept marker someone
    /// deleted fails on its own op: make a fresh one; a fresh marker the
    /// node's ACL refuses, likewise).
    ///
    /// # Errors
    ///
    /// [`crate::Error::InvalidPath`] before anything is sent; otherwise only
    /// errors after which the write was certainly not applied: one that
    /// [`crate::Error::may_have_applied`] does not doubt, or one that does
    /// when the retries ran out and a proof showed the write not applied.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let fw = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # fw.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use zk_framework::recipe::{MarkedWrite, Marker, Settled};
    /// use zk_framework::{Acl, Op};
    /// let (_, stat) = fw.create().for_path_with_stat("/counter")?;
    /// let write = MarkedWrite::new(
    ///     vec![Op::set_data("/counter", b"1".to_vec(), Some(stat.version))],
    ///     Marker::fresh("/counter/_c_7d1e-once", Acl::open_unsafe()),
    /// )
    /// .read_back("/counter");
    /// match fw.recipe().marked_write(write)? {
    ///     Settled::Applied(applied) => {
    ///         // Keep the marker for this session's next write.
    ///         let kept = applied.marker.expect("the write had a marker");
    ///         assert_eq!(kept.path(), "/counter/_c_7d1e-once");
    ///     }
    ///     Settled::Refused { error, .. } => println!("not applied: {error}"),
    ///     Settled::ReadBack { reads, .. } => println!("judge by the node: {reads:?}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn marked_write(&self, write: MarkedWrite) -> Result<Settled> {
        marked::marked_write(self, write)
    }

    /// Runs `job` at `at` (at once when due) on this client's executor: one
    /// thread per client that lives while there is work and runs the due
    /// jobs in the order of their times (and jobs of one time in the order
    /// they were scheduled), never a FIFO that makes an early job wait
    /// behind a later one. The thread also runs the client's background
    /// deletes; a job must therefore only signal or send without waiting (a
    /// `try_send`, a detached call), never block. `false` when the client is
    /// closed or no thread could be had: the job was dropped unrun (do its
    /// work at once, or not at all).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let fw = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = crossbeam_channel::bounded(2);
    /// let now = Instant::now();
    /// let late = tx.clone();
    /// assert!(fw.recipe().schedule(now + Duration::from_millis(50), move || drop(late.try_send("late"))));
    /// assert!(fw.recipe().schedule(now + Duration::from_millis(5), move || drop(tx.try_send("early"))));
    /// assert_eq!(rx.recv()?, "early"); // deadline order, not the order scheduled
    /// assert_eq!(rx.recv()?, "late");
    /// fw.close();
    /// assert!(!fw.recipe().schedule(Instant::now(), || {}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule(&self, at: std::time::Instant, job: impl FnOnce() + Send + 'static) -> bool {
        self.fw.inner().executor.schedule(at, Box::new(job)).is_ok()
    }

    /// A `sync` (on the first read's path), then `reads`, on one connection,
    /// through the client's retry loop (the namespace applied): each read is
    /// answered by a server that has applied every write committed before
    /// the sync, whichever server the client is connected to (see
    /// [`crate::Client::sync_then_read`]). What a recipe reads when it must
    /// not be answered by a server that lags a write it made.
    ///
    /// # Errors
    ///
    /// [`crate::Error::InvalidPath`] (nothing sent),
    /// [`crate::Error::InvalidArgument`] for no reads, or the last
    /// retryable error when the retries run out.
    ///
    /// # Examples
    ///
    /// See [`Recipe`].
    pub fn sync_then_read(&self, reads: &[ReadOp]) -> Result<Vec<ReadResult>> {
        let Some(first) = reads.first() else {
            return Err(crate::Error::InvalidArgument("no reads to sync for".into()));
        };
        for r in reads {
            crate::proto::path::validate_path(r.path(), false)?;
        }
        let fw = self.fw;
        let sync_path = fw.fix_path(first.path());
        let reads: Vec<ReadOp> = reads.iter().map(|r| r.map_path(|p| fw.fix_path(p))).collect();
        fw.call_with_retry(|c| c.sync_then_read(&sync_path, &reads))
    }
}

/// A close hook's signal.
type Signal = Box<dyn FnOnce() + Send>;

/// The close hooks of one client, by id.
#[derive(Default)]
pub(crate) struct CloseHooks {
    next: u64,
    /// `None` once the client closed: a hook added then runs at once.
    hooks: Option<Vec<(u64, Signal)>>,
}

impl CloseHooks {
    pub(crate) fn new() -> Arc<Mutex<CloseHooks>> {
        Arc::new(Mutex::new(CloseHooks {
            next: 0,
            hooks: Some(Vec::new()),
        }))
    }

    /// Adds `f`; `Err(f)` when the client has closed (the caller runs it).
    pub(crate) fn add(this: &Arc<Mutex<CloseHooks>>, f: Signal) -> Result<CloseHook, Signal> {
        let mut h = this.lock();
        h.next += 1;
        let id = h.next;
        match h.hooks.as_mut() {
            Some(list) => {
                list.push((id, f));
                Ok(CloseHook {
                    hooks: Arc::downgrade(this),
                    id,
                })
            }
            None => Err(f),
        }
    }

    /// Takes every hook, for the closing thread to run outside the lock;
    /// later ones run at once.
    pub(crate) fn take(this: &Mutex<CloseHooks>) -> Vec<Signal> {
        this.lock()
            .hooks
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }
}

/// A signal registered with [`CuratorFramework::on_close`]: dropping it
/// removes the signal unrun (so a recipe registers per piece of work and
/// leaves nothing behind).
///
/// # Examples
///
/// ```no_run
/// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let (tx, rx) = crossbeam_channel::bounded::<()>(0);
/// let hook = c.on_close(move || drop(tx));
/// c.close();
/// assert!(rx.recv().is_err()); // the hook ran: the sender is gone
/// drop(hook);
/// # Ok::<(), zk_framework::Error>(())
/// ```
///
/// [`CuratorFramework::on_close`]: crate::CuratorFramework::on_close
#[must_use = "dropping the hook removes it"]
pub struct CloseHook {
    hooks: Weak<Mutex<CloseHooks>>,
    id: u64,
}

impl CloseHook {
    /// A hook that was never registered (or already ran).
    pub(crate) fn inert() -> CloseHook {
        CloseHook {
            hooks: Weak::new(),
            id: 0,
        }
    }
}

impl fmt::Debug for CloseHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseHook").field("id", &self.id).finish()
    }
}

impl Drop for CloseHook {
    fn drop(&mut self) {
        if let Some(hooks) = self.hooks.upgrade() {
            let removed = {
                let mut h = hooks.lock();
                let id = self.id;
                h.hooks.as_mut().and_then(|list| {
                    let i = list.iter().position(|(x, _)| *x == id)?;
                    Some(list.swap_remove(i))
                })
            };
            // Dropped outside the lock (the closure may own anything).
            drop(removed);
        }
    }
}

/// A node as the server names it: the path a client was given with its
/// namespace applied (handed out by [`CuratorFramework::node_key`]). Two
/// clients with different namespaces that name one node get equal keys;
/// the order is the server paths' order. Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # let a = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("app").build()?;
/// # let root = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert_eq!(a.node_key("/locks/x"), root.node_key("/app/locks/x"));
/// assert_eq!(a.node_key("/locks/x").as_str(), "/app/locks/x");
/// # Ok::<(), zk_framework::Error>(())
/// ```
///
/// [`CuratorFramework::node_key`]: crate::CuratorFramework::node_key
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKey(Arc<str>);

impl NodeKey {
    pub(crate) fn new(server_path: String) -> NodeKey {
        NodeKey(server_path.into())
    }

    /// The server path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("app").build()?;
    /// assert_eq!(c.node_key("/a").as_str(), "/app/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use crate::CuratorFramework;

    /// A client needs no server to hand out keys: it is built against a port
    /// nothing listens on, and closed.
    fn client(namespace: Option<&str>) -> CuratorFramework {
        let b = CuratorFramework::builder().connect_string("127.0.0.1:1");
        let b = match namespace {
            Some(ns) => b.namespace(ns),
            None => b,
        };
        b.build().expect("a client builds without a server")
    }

    #[test]
    fn one_node_has_one_key_whatever_the_namespace() {
        let app = client(Some("app"));
        let root = client(None);
        let other = client(Some("other"));
        assert_eq!(app.node_key("/locks/x"), root.node_key("/app/locks/x"));
        assert_eq!(app.node_key("/locks/x").as_str(), "/app/locks/x");
        assert_eq!(app.node_key("/locks/x").to_string(), "/app/locks/x");
        assert_ne!(app.node_key("/locks/x"), other.node_key("/locks/x"));
        assert!(root.node_key("/a") < root.node_key("/b"), "ordered as the server paths");
        for c in [app, root, other] {
            c.close();
        }
    }
}
