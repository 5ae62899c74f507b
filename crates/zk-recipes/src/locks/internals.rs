//! The lock algorithm, written once: create, sort, decide, watch, wait, clean up,
//! retry on a vanished node, queue again on a new session (Curator's
//! `LockInternals`). A win becomes a [`Holding`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::proto::path::{basename, join, validate_path};
use zk_framework::proto::{CreateMode, Stat};
use zk_framework::recipe::NodeKey;
use zk_framework::RetryDecision;
use zk_framework::{CuratorFramework, ListenerHandle};

use crate::core::wait::{wait_or_cancel, Woken};
use crate::error::{Error, Result};
use crate::locks::driver::{Decision, Deletion, Driver, NodeMissing};
use crate::locks::holding::{GrantedNode, Holding};
use crate::locks::waiter::WaiterWatch;

/// One lock kind on one path: the algorithm shared by every recipe.
#[derive(Clone)]
pub(crate) struct LockInternals {
    client: CuratorFramework,
    base_path: String,
    lock_name: &'static str,
    driver: Driver,
    /// The path's counters, looked up at the first acquire.
    stats: std::sync::OnceLock<std::sync::Arc<crate::locks::stats::PathStats>>,
    /// The client's grant record, looked up at the first wait (not once
    /// per wait: many threads of a client wait at once).
    granted: std::sync::OnceLock<Arc<Granted>>,
    /// Ends a wait in the queue when it gets a message or its senders go (a
    /// leader latch or selector closing): the attempt ends with
    /// [`Attempt::Cancelled`]. `never` for the locks.
    cancel: Receiver<()>,
}

impl std::fmt::Debug for LockInternals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockInternals")
            .field("base_path", &self.base_path)
            .field("lock_name", &self.lock_name)
            .field("driver", &self.driver)
            .finish()
    }
}

/// The lock nodes of single-holder queues (mutexes) granted through one
/// client (kept by the client: [`Granted::of`]), the most recent
/// `Granted::CAPACITY` of them. A waiter whose predecessor is deleted after
/// its grant holds the lock: when the predecessor was granted, every node
/// before it was gone, and sequence numbers only grow, so none can appear
/// again. So a waiter behind a holder of the same client (another thread)
/// takes the lock on the deletion event alone, without listing the queue
/// again, which is what makes a deep queue drain at one round trip per
/// handoff. A node not found (older, or granted through another client)
/// costs the listing, as before. Per client, not per process: a node name
/// is only a fact about the ensemble the client talks to, and two clients
/// of one process may talk to two ensembles with the same lock paths.
#[derive(Default)]
pub(crate) struct Granted {
    #[allow(clippy::type_complexity)]
    inner: std::sync::Mutex<Option<(std::collections::HashSet<NodeKey>, std::collections::VecDeque<NodeKey>)>>,
}

impl Granted {
    /// Far more than a waiter needs (its predecessor's grant is recent), and
    /// bounded, so that a long-lived process keeps at most this many names
    /// (about 150 KiB).
    const CAPACITY: usize = 1024;

    /// The record of `client` (shared by its clones).
    fn of(client: &CuratorFramework) -> Arc<Granted> {
        client.recipe().extension(Granted::default)
    }

    fn record(&self, node: NodeKey) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = g.get_or_insert_with(Default::default);
        if set.insert(node.clone()) {
            order.push_back(node);
            if order.len() > Self::CAPACITY {
                if let Some(old) = order.pop_front() {
                    set.remove(&old);
                }
            }
        }
    }

    fn contains(&self, node: &NodeKey) -> bool {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().is_some_and(|(set, _)| set.contains(node))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map_or(0, |(set, order)| set.len().max(order.len()))
    }
}

/// What one try at a lock ended with.
pub(crate) enum Attempt {
    /// Our node holds.
    Won(Node),
    /// The deadline passed first (our node is deleted).
    TimedOut,
    /// Our node vanished (deleted, or gone with its session), or the create
    /// ran into an expiry: try again on the current session.
    Missing,
    /// The wait was cancelled ([`LockInternals::with_cancel`]; our node is
    /// deleted).
    Cancelled,
}

/// Our freshly created node, with the listing that came back with it.
pub(crate) struct Node {
    path: String,
    generation: u64,
    stat: Stat,
    siblings: Option<Vec<String>>,
    /// The exists-watch on this node, once it had to wait (mutexes only).
    waited: Option<Arc<WaiterWatch>>,
    /// The connection epoch ([`Recipe::connection_epoch`](zk_framework::recipe::Recipe::connection_epoch)) read
    /// before the request whose answer showed the node present last (the
    /// create, a listing, or the waiter's watch): the node is proven for it.
    epoch: u64,
}

impl Node {
    /// What a holding is made of.
    pub(crate) fn granted(self) -> GrantedNode {
        GrantedNode {
            path: self.path,
            token: self.stat.czxid,
            generation: self.generation,
            waited: self.waited,
            epoch: self.epoch,
            watch_at_once: false,
        }
    }
}

enum LoopError {
    NodeMissing,
    Cancelled,
    Other(Error),
}

impl From<zk_framework::Error> for LoopError {
    fn from(e: zk_framework::Error) -> Self {
        match e {
            // Our node went with the session: queue again on the new one.
            zk_framework::Error::SessionExpired => LoopError::NodeMissing,
            e => LoopError::Other(Error::ZooKeeper(e)),
        }
    }
}

/// What an acquire whose deadline came while it waited returns: `Ok(None)`
/// (the lock was held by someone else) only while connected; a client that is
/// not connected cannot know, and says why it is not (the latest connection
/// attempt's failure: refused, TLS, ...).
pub(crate) fn timed_out<T>(client: &CuratorFramework) -> Result<Option<T>> {
    match client.connect_failure() {
        None => Ok(None),
        Some(e) => Err(Error::ZooKeeper(e)),
    }
}

impl LockInternals {
    pub(crate) fn new(
        client: CuratorFramework,
        base_path: &str,
        lock_name: &'static str,
        driver: Driver,
    ) -> Result<Self> {
        validate_path(base_path, false).map_err(zk_framework::Error::from)?;
        if base_path == "/" {
            return Err(Error::InvalidArgument("a lock cannot live at the root path".into()));
        }
        Ok(LockInternals {
            client,
            base_path: base_path.to_string(),
            lock_name,
            driver,
            stats: std::sync::OnceLock::new(),
            granted: std::sync::OnceLock::new(),
            cancel: crossbeam_channel::never(),
        })
    }

    /// The same lock, its waits ended by `cancel` (a message, or every
    /// sender gone): an election's participant waits without a deadline
    /// until it leads or closes.
    pub(crate) fn with_cancel(mut self, cancel: Receiver<()>) -> Self {
        self.cancel = cancel;
        self
    }

    fn stats(&self) -> &std::sync::Arc<crate::locks::stats::PathStats> {
        self.stats.get_or_init(|| {
            crate::locks::stats::for_path(&self.client, &self.client.recipe().node_key(&self.base_path))
        })
    }

    pub(crate) fn client(&self) -> &CuratorFramework {
        &self.client
    }

    pub(crate) fn base_path(&self) -> &str {
        &self.base_path
    }

    /// The children of the base path, sorted the driver's way (empty when the
    /// base path does not exist).
    pub(crate) fn sorted_children(&self) -> Result<Vec<String>> {
        let mut kids = self.children_by(&self.client)?;
        self.driver.sort(&mut kids);
        Ok(kids)
    }

    /// The children of the base path as the server lists them, through `zk`
    /// (a handle bounded by an acquire's deadline); empty when the base path
    /// does not exist.
    fn children_by(&self, zk: &CuratorFramework) -> zk_framework::Result<Vec<String>> {
        match zk.get_children(&self.base_path) {
            Ok(k) => Ok(k),
            Err(zk_framework::Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Full paths of the sorted children.
    pub(crate) fn participant_paths(&self) -> Result<Vec<String>> {
        Ok(self
            .sorted_children()?
            .into_iter()
            .map(|k| join(&self.base_path, &k))
            .collect())
    }

    /// Creates our node and waits until the driver says we hold the lock, or the
    /// deadline passes (`Ok(None)`). `sorting_sequence` makes a non-sequential
    /// ephemeral node carrying that sequence (Curator 5.5's downgrade).
    ///
    /// Every exit but a win leaves no node of ours: it is deleted (in the
    /// background when the connection or the deadline does not allow more),
    /// and a create whose outcome is unknown is cleaned up by its protected
    /// prefix. A node that vanishes while we wait (deleted, or gone with an
    /// expired session) is replaced by a new one on the current session, as
    /// often as the retry policy allows and the deadline leaves time for.
    /// Every request goes through a handle bounded by `deadline`
    /// ([`CuratorFramework::with_deadline`]), so that no request or retry
    /// outlives it.
    pub(crate) fn attempt_lock(
        &self,
        deadline: Option<Instant>,
        data: Option<Vec<u8>>,
        sorting_sequence: Option<&str>,
    ) -> Result<Option<Holding>> {
        let waiting = self.stats().start_wait();
        let won = self.attempt_node(deadline, data, sorting_sequence);
        waiting.finish_with(&won);
        Ok(won?.map(|node| self.hold(node)))
    }

    /// As [`LockInternals::attempt_lock`], returning the won node's path
    /// untracked (no watch, no listener): for a lock held only for a moment
    /// inside another recipe (the semaphore's internal mutex). The caller
    /// deletes it with [`LockInternals::delete_node`].
    pub(crate) fn attempt_untracked(&self, deadline: Option<Instant>) -> Result<Option<String>> {
        Ok(self.attempt_node(deadline, None, None)?.map(|node| node.path))
    }

    fn attempt_node(
        &self,
        deadline: Option<Instant>,
        data: Option<Vec<u8>>,
        sorting_sequence: Option<&str>,
    ) -> Result<Option<Node>> {
        let zk = self.client.with_deadline(deadline);
        let mut requeue = Requeue::new(&self.client, deadline);
        loop {
            match self.attempt_once(&zk, data.clone(), sorting_sequence)? {
                Attempt::Won(node) => return Ok(Some(node)),
                Attempt::TimedOut | Attempt::Cancelled => return timed_out(&self.client),
                // A create that ran into an expiry, or a node that vanished
                // while we waited: queue again on the current session.
                Attempt::Missing => {
                    if !requeue.pause(&self.base_path)? {
                        return timed_out(&self.client);
                    }
                }
            }
        }
    }

    /// One try: create our node and wait with it until it holds, the
    /// deadline of `zk` passes, or it vanishes; every exit but a win deletes
    /// it. The semaphore's lease uses it as it is (a vanished lease is taken
    /// again through the internal mutex).
    pub(crate) fn attempt_once(
        &self,
        zk: &CuratorFramework,
        data: Option<Vec<u8>>,
        sorting_sequence: Option<&str>,
    ) -> Result<Attempt> {
        let deadline = zk.deadline();
        let mut node = match self.create_node(zk, data, sorting_sequence) {
            Ok(n) => n,
            Err(Error::ZooKeeper(zk_framework::Error::SessionExpired)) if sorting_sequence.is_none() => {
                return Ok(Attempt::Missing)
            }
            Err(e) => return Err(e),
        };
        if sorting_sequence.is_some() {
            // A downgrade: the caller already holds the write lock, so the read
            // node is granted at once (Curator's read predicate does the same).
            return Ok(Attempt::Won(node));
        }
        match self.wait_loop(zk, &mut node) {
            Ok(true) => Ok(Attempt::Won(node)),
            Ok(false) => {
                self.delete_node(&node.path, deadline);
                Ok(Attempt::TimedOut)
            }
            Err(LoopError::NodeMissing) => {
                self.delete_node(&node.path, deadline);
                log::debug!("lock node {} vanished while waiting; queueing again", node.path);
                Ok(Attempt::Missing)
            }
            Err(LoopError::Cancelled) => {
                self.delete_node(&node.path, deadline);
                Ok(Attempt::Cancelled)
            }
            Err(LoopError::Other(e)) => {
                self.delete_node(&node.path, deadline);
                Err(e)
            }
        }
    }

    /// As [`LockInternals::attempt_once`] (no deadline but the cancel
    /// channel's), counted in the path's figures: a win is an acquisition
    /// (an election's leadership), a failure an error; a vanished node or a
    /// cancelled wait is neither.
    pub(crate) fn attempt_counted(&self, zk: &CuratorFramework, data: Vec<u8>) -> Result<Attempt> {
        let waiting = self.stats().start_wait();
        let r = self.attempt_once(zk, Some(data), None);
        match &r {
            Ok(Attempt::Won(_)) => waiting.finish(crate::locks::stats::Outcome::Acquired),
            Err(_) => waiting.finish(crate::locks::stats::Outcome::Failed),
            Ok(_) => drop(waiting),
        }
        r
    }

    /// Waits in the queue with a node created elsewhere (in a transaction with
    /// other nodes): `Ok(Some(epoch))` when it holds (the node stays
    /// untracked: the caller makes it part of a holding; `epoch` is the
    /// connection epoch it is proven for), `Ok(None)` on timeout or when the
    /// node vanished (`vanished` is then set). The caller deletes the node on
    /// every path but success. `listing` is a listing of the base path taken
    /// with the create, if any, and `epoch` the connection epoch read before
    /// that create.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wait_with_node(
        &self,
        path: String,
        generation: u64,
        stat: Stat,
        listing: Option<Vec<String>>,
        epoch: u64,
        deadline: Option<Instant>,
        vanished: &mut bool,
    ) -> Result<Option<u64>> {
        let mut node = Node {
            path,
            generation,
            stat,
            siblings: listing,
            waited: None,
            epoch,
        };
        match self.wait_loop(&self.client.with_deadline(deadline), &mut node) {
            Ok(won) => Ok(won.then_some(node.epoch)),
            Err(LoopError::NodeMissing) | Err(LoopError::Cancelled) => {
                *vanished = true;
                Ok(None)
            }
            Err(LoopError::Other(e)) => Err(e),
        }
    }

    fn create_node(
        &self,
        zk: &CuratorFramework,
        data: Option<Vec<u8>>,
        sorting_sequence: Option<&str>,
    ) -> Result<Node> {
        let generation = self.client.recipe().session_generation();
        let epoch = self.client.recipe().connection_epoch();
        let mut b = zk.create().creating_parent_containers_if_needed().with_protection();
        b = b.with_data(data.unwrap_or_else(|| crate::locks::identity::node_data(&self.client)));
        let (path, stat, siblings) = match sorting_sequence {
            Some(seq) => {
                let (p, st) = b
                    .with_mode(CreateMode::Ephemeral)
                    .for_path_with_stat(&format!("{}/{}{}", self.base_path, self.lock_name, seq))?;
                (p, st, None)
            }
            // The create and the first listing go out together: an uncontended
            // acquire decides after one round trip.
            None => {
                let c = b
                    .with_mode(CreateMode::EphemeralSequential)
                    .for_path_listing_parent(&format!("{}/{}", self.base_path, self.lock_name))?;
                (c.path, c.stat, c.siblings)
            }
        };
        // The create may have been retried onto a newer session; the node then
        // belongs to that one.
        let generation = if stat.ephemeral_owner == self.client.session_id() {
            self.client.recipe().session_generation()
        } else {
            generation
        };
        Ok(Node {
            path,
            generation,
            stat,
            siblings,
            waited: None,
            epoch,
        })
    }

    /// Waits in the queue until `node` holds (`Ok(true)`) or the deadline of
    /// `zk` passes (`Ok(false)`).
    fn wait_loop(&self, zk: &CuratorFramework, node: &mut Node) -> Result<bool, LoopError> {
        let deadline = zk.deadline();
        let generation = node.generation;
        let ours = basename(&node.path).to_string();
        let (_states_listener, states) = state_changes(&self.client);
        // A mutex waiter may be granted on its predecessor's deletion alone
        // (`Driver::granted_on_deletion`); the client's grant record says
        // which predecessors were granted.
        let shortcut = self.driver.grants_without_listing();
        let granted = self.granted.get_or_init(|| Granted::of(&self.client));
        loop {
            if self.client.is_closed() {
                return Err(LoopError::Other(Error::ZooKeeper(zk_framework::Error::Closed)));
            }
            if self.client.recipe().session_generation() != generation {
                return Err(LoopError::NodeMissing);
            }
            // The listing came with the create (proven for its epoch) or is
            // taken now (proven for the epoch read before it).
            let (mut children, epoch) = match node.siblings.take() {
                Some(kids) => (kids, node.epoch),
                None => {
                    let epoch = self.client.recipe().connection_epoch();
                    (self.children_by(zk)?, epoch)
                }
            };
            // Decided on the listing as it came (a mutex's in one pass, no
            // sort): a deep queue's listing is long.
            let decision = self.driver.decide_unsorted(&mut children, &ours);
            log::trace!("{ours}: {} children, {decision:?}", children.len());
            drop(children);
            // A listing taken on a newer session may still show our old node.
            if self.client.recipe().session_generation() != generation {
                return Err(LoopError::NodeMissing);
            }
            let (pred, pred_is_head) = match decision {
                Err(NodeMissing) => return Err(LoopError::NodeMissing),
                Ok((Decision::Acquired, _)) => {
                    if shortcut {
                        granted.record(self.client.recipe().node_key(&node.path));
                    }
                    node.epoch = epoch;
                    return Ok(true);
                }
                Ok((Decision::Watch(p), head)) => (p, head),
                Ok((Decision::WatchChildren, _)) => return self.wait_for_children(zk, node, &ours, &states),
            };
            // A try whose time is up leaves no watch behind.
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Ok(false);
            }
            // A grant without a listing needs to know that our node is still
            // there: watch it, in the same round trip as the predecessor.
            if shortcut && !node.waited.as_ref().is_some_and(|w| w.usable()) {
                node.waited = Some(WaiterWatch::send(&self.client, &node.path));
            }
            // One channel per watch: an event of an earlier watch (set before a
            // reconnect, on the same predecessor or another) must never be read
            // as news about this predecessor.
            // A channel's sender only signals: the client may run it on its
            // I/O thread, one thread hop closer to this waiter.
            let (watcher, rx) = crossbeam_channel::bounded::<zk_framework::WatchedEvent>(1);
            match zk.get_data_w(&join(&self.base_path, &pred), watcher) {
                Ok(_) => {}
                Err(zk_framework::Error::NoNode { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Ok(false);
            }
            let woken = wait_or_cancel(&self.client, &rx, &states, deadline, &self.cancel);
            log::trace!("{ours}: woken {woken:?}");
            match woken {
                Woken::Watch(ev) => {
                    // Our node's deletion, had it come before this one, was
                    // heard of first (the session's events arrive in order),
                    // unless the connection changed meanwhile (a new epoch
                    // since our node's watch was answered): then list.
                    let facts = || Deletion {
                        watched_was_head: pred_is_head,
                        watched_was_granted: !pred_is_head
                            && granted.contains(&self.client.recipe().node_key(&join(&self.base_path, &pred))),
                        own_node_watched: node.waited.as_ref().is_some_and(|w| w.present()),
                        steady_session: self.client.recipe().session_generation() == generation
                            && states.is_empty()
                            && node
                                .waited
                                .as_ref()
                                .is_some_and(|w| w.epoch() == self.client.recipe().connection_epoch()),
                    };
                    if shortcut
                        && ev.map(|e| e.event_type) == Some(zk_framework::proto::EventType::NodeDeleted)
                        && self.driver.granted_on_deletion(facts())
                    {
                        granted.record(self.client.recipe().node_key(&node.path));
                        // Proven for the epoch its own watch was sent in
                        // (a reconnect since makes the holding prove it).
                        if let Some(w) = &node.waited {
                            node.epoch = w.epoch();
                        }
                        return Ok(true);
                    }
                }
                // Watch our node again after a connection change: the events
                // of re-registered watches need not come in order.
                Woken::StateChanged => node.waited = None,
                Woken::Closed => return Err(LoopError::Other(Error::ZooKeeper(zk_framework::Error::Closed))),
                Woken::Deadline => return Ok(false),
                Woken::Cancelled => return Err(LoopError::Cancelled),
            }
        }
    }

    /// Waits for the children to change until the driver grants `ours` (a
    /// semaphore's lease: any lease that goes may make room). Each turn sets
    /// a children watch with its listing, so no change is missed between a
    /// listing and the watch.
    fn wait_for_children(
        &self,
        zk: &CuratorFramework,
        node: &mut Node,
        ours: &str,
        states: &crossbeam_channel::Receiver<()>,
    ) -> Result<bool, LoopError> {
        loop {
            if self.client.recipe().session_generation() != node.generation {
                return Err(LoopError::NodeMissing);
            }
            if zk.deadline().is_some_and(|d| d <= Instant::now()) {
                return Ok(false);
            }
            let (tx, rx) = crossbeam_channel::bounded::<zk_framework::WatchedEvent>(1);
            let epoch = self.client.recipe().connection_epoch();
            let mut kids = match zk.get_children_w(&self.base_path, tx) {
                Ok(k) => k,
                // The parent was reaped: our node went with an ended session.
                Err(zk_framework::Error::NoNode { .. }) => return Err(LoopError::NodeMissing),
                Err(e) => return Err(e.into()),
            };
            self.driver.sort(&mut kids);
            match self.driver.decide(&kids, ours) {
                Err(NodeMissing) => return Err(LoopError::NodeMissing),
                Ok(Decision::Acquired) => {
                    node.epoch = epoch;
                    return Ok(true);
                }
                Ok(_) => {}
            }
            match wait_or_cancel(&self.client, &rx, states, zk.deadline(), &self.cancel) {
                Woken::Watch(_) | Woken::StateChanged => {}
                Woken::Closed => return Err(LoopError::Other(Error::ZooKeeper(zk_framework::Error::Closed))),
                Woken::Deadline => return Ok(false),
                Woken::Cancelled => return Err(LoopError::Cancelled),
            }
        }
    }

    /// Turns a won node into a holding.
    pub(crate) fn hold(&self, node: Node) -> Holding {
        Holding::granted(&self.client, &self.base_path, node.granted(), None, self.stats())
    }

    /// As [`LockInternals::hold`], with the own-node watch sent at once: a
    /// leadership's (long-lived: the short delay a lock's holding waits saves
    /// nothing there, and a break right after an election is heard of at
    /// once).
    pub(crate) fn hold_watched_at_once(&self, node: Node) -> Holding {
        let granted = GrantedNode {
            watch_at_once: true,
            ..node.granted()
        };
        Holding::granted(&self.client, &self.base_path, granted, None, self.stats())
    }

    /// Deletes a node we created: guaranteed (retried until `deadline`, plus
    /// a request's grace, then in the background).
    pub(crate) fn delete_node(&self, path: &str, deadline: Option<Instant>) {
        if let Err(e) = self.client.with_deadline(deadline).delete().guaranteed().for_path(path) {
            log::debug!("delete of lock node {path} failed ({e}); it continues in the background");
        }
    }
}

/// Queueing again after our node vanished (deleted, or gone with its session):
/// the retry policy's pauses, never past the deadline. Shared by every lock
/// kind's acquire loop.
pub(crate) struct Requeue {
    client: CuratorFramework,
    policy: std::sync::Arc<dyn zk_framework::RetryPolicy>,
    start: Instant,
    retries: u32,
    deadline: Option<Instant>,
}

impl Requeue {
    pub(crate) fn new(client: &CuratorFramework, deadline: Option<Instant>) -> Self {
        Requeue {
            client: client.clone(),
            policy: client.retry_policy(),
            start: Instant::now(),
            retries: 0,
            deadline,
        }
    }

    /// Sleeps as the policy says: `Ok(true)` to try again, `Ok(false)` when the
    /// deadline leaves no time for it, [`Error::NodeVanished`] (for `path`) when
    /// the policy gives up. A closed client ends the sleep with `Closed`, so
    /// a policy's long (even `Duration::MAX`) pause never outlives `close()`.
    pub(crate) fn pause(&mut self, path: &str) -> Result<bool> {
        let left = self.deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            return Ok(false);
        }
        match self.policy.next_retry(self.retries, self.start.elapsed()) {
            RetryDecision::RetryAfter(d) if left.is_some_and(|l| l <= d) => Ok(false),
            RetryDecision::RetryAfter(d) => {
                self.retries += 1;
                self.client.recipe().pause(d)?;
                Ok(true)
            }
            RetryDecision::GiveUp => Err(Error::NodeVanished { path: path.to_string() }),
        }
    }
}

/// Wakes a waiter on every connection-state change, for as long as the
/// returned handle lives (dropping it unsubscribes at once, so waits leave
/// nothing behind in the client).
pub(crate) fn state_changes(client: &CuratorFramework) -> (ListenerHandle, Receiver<()>) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let handle = client.add_listener(move |_| {
        let _ = tx.try_send(());
    });
    (handle, rx)
}

#[cfg(test)]
mod granted_tests {
    use super::Granted;

    #[test]
    fn granted_keeps_the_most_recent_names_and_no_more() {
        // Keys need a client (they are the server's paths); no server.
        let c = zk_framework::CuratorFramework::builder()
            .connect_string("127.0.0.1:1")
            .build()
            .unwrap();
        let key = |i: usize| c.recipe().node_key(&format!("/l/_c_{i}-lock-{i:010}"));
        let g = Granted::default();
        for i in 0..3 * Granted::CAPACITY {
            g.record(key(i));
        }
        assert_eq!(g.len(), Granted::CAPACITY);
        let last = 3 * Granted::CAPACITY - 1;
        assert!(g.contains(&key(last)));
        assert!(!g.contains(&key(0)));
        // A name recorded twice is kept once.
        g.record(key(last));
        assert_eq!(g.len(), Granted::CAPACITY);
        c.close();
    }
}
