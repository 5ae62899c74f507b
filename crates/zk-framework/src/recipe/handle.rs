//! [`Recipe`]: the recipe author's handle on a [`CuratorFramework`]
//! ([`CuratorFramework::recipe`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::key::NodeKey;
use super::marked::{self, MarkedWrite, Settled};
#[cfg(doc)]
use super::marked::{Applied, Marker, Unproven, WriteProof};
use crate::client::{Client, ReadOp, ReadResult, Watcher};
use crate::error::{Error, Result};
use crate::framework::{CloseHook, CuratorFramework};
#[cfg(doc)]
use crate::state::SessionHealth;
use zk_proto::Stat;

/// The managed client as a recipe author uses it ([`CuratorFramework::recipe`]):
/// what `zk-recipes` builds its locks, elections, caches and counters on, on
/// top of the client's retry policy, namespace and deadline (a handle made
/// from [`CuratorFramework::with_deadline`] bounds its calls too). Each
/// method says what it promises; the [module](crate::recipe) says how they
/// fit together.
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

/// The recipe author's handle.
impl CuratorFramework {
    /// This client's recipe API ([`Recipe`]): what a recipe author needs
    /// besides the user's API (the session generation and connection epoch,
    /// the namespace's paths and node keys, the retry loop and its pause, the
    /// marked write and the synced reads, the detached calls, background
    /// deletes and the executor, per-client extensions, the close signal and
    /// close hooks). Cheap: a borrow of this handle, its deadline included.
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("app").build()?;
    /// let recipe = c.recipe();
    /// assert_eq!(recipe.fix_path("/locks/a"), "/app/locks/a");
    /// assert_eq!(recipe.session_generation(), 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn recipe(&self) -> Recipe<'_> {
        Recipe { fw: self }
    }
}

/// The session: which one, and whether anything may have been missed.
impl Recipe<'_> {
    /// The session generation: 1 for the client's first session, and one
    /// more every time the client builds a new handle (a new session, after
    /// an expiry). Answered locally. A recipe records it when it creates an
    /// ephemeral node: while the generation is the same, the node can still
    /// exist; once it has moved on, the node went with its session (see
    /// [`crate::recipe`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// assert!(c.recipe().session_generation() >= 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn session_generation(&self) -> u64 {
        self.fw.inner().generation()
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
    /// let before = c.recipe().connection_epoch();
    /// assert_eq!(c.recipe().connection_epoch(), before, "nothing was missed");
    /// server.embedded().unwrap().drop_connections();
    /// zk_testing::wait_until(std::time::Duration::from_secs(10), || c.recipe().connection_epoch() != before);
    /// assert!(c.recipe().connection_epoch() > before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connection_epoch(&self) -> u64 {
        self.fw.inner().connection_epoch()
    }
}

/// Paths: the namespace applied and taken off, and the key of a node.
impl Recipe<'_> {
    /// The server path for a user path (namespace applied).
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("ns").build()?;
    /// assert_eq!(c.recipe().fix_path("/a"), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn fix_path(&self, path: &str) -> String {
        self.fw.server_path(path)
    }

    /// The client's path for a server path: the namespace taken off (the
    /// inverse of [`fix_path`](Self::fix_path); a path outside the namespace
    /// is given back as it is). For a path the server reports (a watched
    /// event's, a listing of another tool's).
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("ns").build()?;
    /// assert_eq!(c.recipe().unfix_path("/ns/a"), "/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn unfix_path(&self, path: &str) -> String {
        self.fw.user_path(path)
    }

    /// The key of the node at `path` (a user path, this client's namespace
    /// applied): what a recipe records about a node by, so that clients with
    /// different namespaces naming one node agree (see
    /// [`recipe`](crate::recipe)). The path is not validated: an invalid one
    /// names no node, and its key matches none.
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").namespace("ns").build()?;
    /// assert_eq!(c.recipe().node_key("/a").as_str(), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn node_key(&self, path: &str) -> NodeKey {
        NodeKey::new(self.fw.server_path(path))
    }
}

/// Retries: the client's retry loop, and its pause.
impl Recipe<'_> {
    /// Runs `op` under the retry policy: waits once (up to the connection
    /// timeout) for a connection, then retries ConnectionLoss, OperationTimeout,
    /// SessionMoved and SessionExpired as the policy allows, each attempt on the
    /// current handle. Before a retry, a handle that is not connected gets up to
    /// min(connection timeout, 1 s) to reconnect (the Java client queues such a
    /// request until its next connection attempt). An attempt that fails with
    /// `Closed` on a handle the framework replaced counts as SessionExpired.
    /// Each call has its own retry budget. Under a deadline
    /// ([`with_deadline`](CuratorFramework::with_deadline)) `op` gets a
    /// handle bounded by it, and no wait outlives it.
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
    /// let stat = c.recipe().call_with_retry(|zk| zk.exists("/"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn call_with_retry<T>(&self, op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
        self.fw.retry(op)
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
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// c.recipe().pause(std::time::Duration::from_millis(10))?;
    /// c.close();
    /// assert!(matches!(c.recipe().pause(std::time::Duration::MAX), Err(zk_framework::Error::Closed)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn pause(&self, d: Duration) -> Result<()> {
        self.fw.inner().pause(d)
    }
}

/// Writes settled exactly, and reads no lagging server answers.
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
        marked::marked_write(self.fw, write)
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
            return Err(Error::InvalidArgument("no reads to sync for".into()));
        };
        for r in reads {
            zk_proto::path::validate_path(r.path(), false)?;
        }
        let fw = self.fw;
        let sync_path = fw.server_path(first.path());
        let reads: Vec<ReadOp> = reads.iter().map(|r| r.map_path(|p| fw.server_path(p))).collect();
        fw.retry(|c| c.sync_then_read(&sync_path, &reads))
    }
}

/// Detached calls: sent at once, answered on the I/O thread.
impl Recipe<'_> {
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
    /// c.recipe().delete_detached("/lock/n", None, move |r| {
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
        let p = self.fw.checked_path(path)?;
        self.fw.bounded_client().delete_detached(&p, version, on_reply)
    }

    /// Asks whether `path` exists on the current session without waiting for
    /// the reply and without a watch (the namespace applied): `on_reply` is
    /// called once, on the client's I/O thread (so it must only signal), with
    /// the node's Stat, `None` when it does not exist, or the error. Its reply
    /// is read after every notification the server sent before it.
    ///
    /// A lock's holding uses it after a reconnect: the reply proves that the
    /// node still exists and which session owns it (see
    /// [`connection_epoch`](Self::connection_epoch)).
    ///
    /// # Errors
    ///
    /// As [`delete_detached`](Self::delete_detached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.recipe().exists_detached("/lock/n", |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.fw.checked_path(path)?;
        self.fw.bounded_client().exists_detached(&p, on_reply)
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
    /// c.recipe().exists_w_detached("/lock/n", |e| println!("{e:?}"), |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_w_detached(
        &self,
        path: &str,
        watcher: impl Watcher,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.fw.checked_path(path)?;
        let slot = self.fw.watch_slot(watcher);
        self.fw.bounded_client().exists_w_detached(&p, slot.attempt(), on_reply)
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
    /// c.recipe().get_data_detached("/config/a", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<(Vec<u8>, Stat)>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.fw.checked_path(path)?;
        self.fw.bounded_client().get_data_detached(&p, on_reply)
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
    /// c.recipe().get_children_detached("/config", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Vec<String>>>) + Send + 'static,
    ) -> Result<()> {
        let p = self.fw.checked_path(path)?;
        self.fw.bounded_client().get_children_detached(&p, on_reply)
    }
}

/// Work off the caller's thread: background deletes, the executor.
impl Recipe<'_> {
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
    /// c.recipe().delete_in_background("/locks/a/_c_x-lock-0000000001")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete_in_background(&self, path: &str) -> Result<()> {
        let p = self.fw.checked_path(path)?;
        self.fw.background_delete(p, None);
        Ok(())
    }

    /// Paths whose deletion is still pending in the background (for tests and
    /// diagnostics).
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// assert_eq!(c.recipe().pending_background_deletes(), 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn pending_background_deletes(&self) -> usize {
        self.fw.inner().pending_background_deletes()
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
    pub fn schedule(&self, at: Instant, job: impl FnOnce() + Send + 'static) -> bool {
        self.fw.inner().executor.schedule(at, Box::new(job)).is_ok()
    }
}

/// Per-client state and the close.
impl Recipe<'_> {
    /// The value of type `T` this client keeps for a layer built on it (a
    /// recipe library keeps its per-client state here: its statistics, its
    /// grant record, its timer): made by `init` the first time it is asked
    /// for, then the same value for this client and every clone of it, also
    /// after [`close`](CuratorFramework::close) (figures stay readable), and
    /// dropped with the client's last clone. Two clients never share one. A value that
    /// runs a thread ends it on [`close_signal`](Self::close_signal). A value
    /// must not hold a clone of the client (it would keep itself alive).
    ///
    /// `init` runs without any lock held; when two threads ask at once, one
    /// value is kept and the other dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// #[derive(Default)]
    /// struct Calls(AtomicU64);
    /// c.recipe().extension(Calls::default).0.fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(c.clone().recipe().extension(Calls::default).0.load(Ordering::Relaxed), 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn extension<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        self.fw.inner().extension(init)
    }

    /// A channel that is disconnected when this client closes: a wait selects
    /// on it beside its other channels to end when the client goes, instead
    /// of polling [`is_closed`](CuratorFramework::is_closed). Nothing is ever
    /// sent on it.
    ///
    /// # Examples
    ///
    /// ```
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// let closed = c.recipe().close_signal();
    /// c.close();
    /// assert!(closed.recv().is_err()); // at once: the client is closed
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn close_signal(&self) -> Receiver<()> {
        self.fw.inner().close_signal()
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
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:1").build()?;
    /// let closed = Arc::new(AtomicBool::new(false));
    /// let seen = closed.clone();
    /// let _hook = c.recipe().on_close(move || seen.store(true, Ordering::SeqCst));
    /// c.close();
    /// assert!(closed.load(Ordering::SeqCst));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn on_close(&self, signal: impl FnOnce() + Send + 'static) -> CloseHook {
        self.fw.inner().on_close(signal)
    }
}
