//! The lock algorithm, written once: create, sort, decide, watch, wait, clean up
//! (Curator's `LockInternals`), plus the holder's loss monitor.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::framework::{CuratorFramework, ListenerHandle};
use zk_framework::proto::path::{basename, join, validate_path};
use zk_framework::proto::{CreateMode, Stat};
use zk_framework::retry::RetryDecision;
use zk_framework::state::ConnectionState;

use crate::driver::{Decision, Driver, NodeMissing};
use crate::error::{Error, Result};

/// What a lock holder hears about its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockEvent {
    /// The connection was lost: the lock may be lost. Stop work that needs
    /// exclusion until `Reconnected`.
    Suspended,
    /// The connection is back on the same session: the lock is still held.
    Reconnected,
    /// The lock is certainly lost: the session expired or was replaced, or the
    /// lock node was deleted.
    Lost,
}

/// Whether a held lock is still held, as far as this process can know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockStatus {
    /// Held: connected on the session that created the lock node.
    Held,
    /// Uncertain: the connection is suspended; the session may still be alive.
    Uncertain,
    /// Lost for certain.
    Lost,
}

const HELD: u8 = 0;
const UNCERTAIN: u8 = 1;
const LOST: u8 = 2;

/// Shared between a holding and the client listener that watches it.
pub(crate) struct LossState {
    status: AtomicU8,
    subscribers: Mutex<Vec<Sender<LockEvent>>>,
}

impl LossState {
    fn new() -> Arc<Self> {
        Arc::new(LossState {
            status: AtomicU8::new(HELD),
            subscribers: Mutex::new(Vec::new()),
        })
    }

    fn publish(&self, ev: LockEvent) {
        let new = match ev {
            LockEvent::Suspended => UNCERTAIN,
            LockEvent::Reconnected => HELD,
            LockEvent::Lost => LOST,
        };
        // Lost is final.
        let mut cur = self.status.load(Ordering::SeqCst);
        loop {
            if cur == LOST {
                return;
            }
            match self
                .status
                .compare_exchange(cur, new, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
        if ev == LockEvent::Lost {
            log::warn!("a held lock was lost");
        }
        self.subscribers
            .lock()
            .retain(|tx| !matches!(tx.try_send(ev), Err(crossbeam_channel::TrySendError::Disconnected(_))));
    }

    pub(crate) fn status(&self) -> LockStatus {
        match self.status.load(Ordering::SeqCst) {
            HELD => LockStatus::Held,
            UNCERTAIN => LockStatus::Uncertain,
            _ => LockStatus::Lost,
        }
    }
}

/// Watches one held node for loss: connection states (Suspended, Lost,
/// Reconnected), a session change, and (once someone subscribes) the node's
/// deletion.
pub(crate) struct Monitor {
    client: CuratorFramework,
    path: String,
    generation: u64,
    loss: Arc<LossState>,
    _listener: ListenerHandle,
    own_watch: Mutex<bool>,
}

impl Monitor {
    pub(crate) fn start(client: &CuratorFramework, path: &str, generation: u64) -> Monitor {
        let loss = LossState::new();
        let l = loss.clone();
        let listener = client.add_listener(move |s| match s {
            ConnectionState::Suspended => l.publish(LockEvent::Suspended),
            ConnectionState::Lost => l.publish(LockEvent::Lost),
            ConnectionState::Reconnected | ConnectionState::Connected | ConnectionState::ReadOnly => {
                l.publish(LockEvent::Reconnected)
            }
        });
        // The state may have changed before the listener existed.
        match client.state() {
            Some(ConnectionState::Suspended) => loss.publish(LockEvent::Suspended),
            Some(ConnectionState::Lost) => loss.publish(LockEvent::Lost),
            _ => {}
        }
        if client.session_generation() != generation {
            loss.publish(LockEvent::Lost);
        }
        Monitor {
            client: client.clone(),
            path: path.to_string(),
            generation,
            loss,
            _listener: listener,
            own_watch: Mutex::new(false),
        }
    }

    /// The holder's current status.
    pub(crate) fn status(&self) -> LockStatus {
        if self.client.session_generation() != self.generation {
            self.loss.publish(LockEvent::Lost);
        }
        self.loss.status()
    }

    /// A channel of loss events. The first call also watches the node itself,
    /// so that its deletion is reported as `Lost`.
    pub(crate) fn subscribe(&self) -> Receiver<LockEvent> {
        let (tx, rx) = crossbeam_channel::bounded(16);
        // A late subscriber still hears where the lock stands.
        match self.status() {
            LockStatus::Lost => {
                let _ = tx.try_send(LockEvent::Lost);
            }
            LockStatus::Uncertain => {
                let _ = tx.try_send(LockEvent::Suspended);
            }
            LockStatus::Held => {}
        }
        self.loss.subscribers.lock().push(tx);
        let mut armed = self.own_watch.lock();
        if !*armed {
            *armed = true;
            rearm(&self.client, &self.path, self.loss.clone());
        }
        rx
    }
}

/// A lock node we hold.
pub(crate) struct Acquired {
    /// Full user path of our node.
    pub path: String,
    /// The node's Stat at creation (czxid is the fencing token).
    pub stat: Stat,
    pub(crate) monitor: Monitor,
}

impl std::fmt::Debug for Acquired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acquired")
            .field("path", &self.path)
            .field("czxid", &self.stat.czxid)
            .finish()
    }
}

impl Acquired {
    /// The fencing token: the node's czxid.
    pub(crate) fn fencing_token(&self) -> i64 {
        self.stat.czxid
    }
}

/// One lock kind on one path: the algorithm shared by every recipe.
#[derive(Clone)]
pub(crate) struct LockInternals {
    client: CuratorFramework,
    base_path: String,
    lock_name: &'static str,
    driver: Driver,
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

/// Our freshly created node, with the listing that came back with it.
struct Node {
    path: String,
    generation: u64,
    stat: Stat,
    siblings: Option<Vec<String>>,
}

enum LoopError {
    NodeMissing,
    Other(Error),
}

impl From<zk_framework::Error> for LoopError {
    fn from(e: zk_framework::Error) -> Self {
        LoopError::Other(Error::ZooKeeper(e))
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
        let mut kids = match self.client.get_children(&self.base_path) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        self.driver.sort(&mut kids);
        Ok(kids)
    }

    /// Full paths of the sorted children.
    pub(crate) fn participant_nodes(&self) -> Result<Vec<String>> {
        Ok(self
            .sorted_children()?
            .into_iter()
            .map(|k| join(&self.base_path, &k))
            .collect())
    }

    /// Creates our node and waits until the driver says we hold the lock, or the
    /// deadline passes (`Ok(None)`). `sorting_sequence` makes a non-sequential
    /// ephemeral node carrying that sequence (Curator 5.5's downgrade).
    /// On every path but success, our node is deleted.
    pub(crate) fn attempt_lock(
        &self,
        deadline: Option<Instant>,
        data: Option<Vec<u8>>,
        sorting_sequence: Option<&str>,
    ) -> Result<Option<Acquired>> {
        let start = Instant::now();
        let policy = self.client.retry_policy();
        let mut retries = 0u32;
        loop {
            let mut node = self.create_node(data.clone(), sorting_sequence)?;
            if sorting_sequence.is_some() {
                // A downgrade: the caller already holds the write lock, so the read
                // node is granted at once (Curator's read predicate does the same).
                return Ok(Some(self.hold(node.path, node.generation, node.stat)));
            }
            match self.wait_loop(&mut node, deadline) {
                Ok(true) => return Ok(Some(self.hold(node.path, node.generation, node.stat))),
                Ok(false) => {
                    self.delete_node(&node.path);
                    return Ok(None);
                }
                Err(LoopError::NodeMissing) => {
                    self.delete_node(&node.path);
                    log::debug!("lock node {} vanished while waiting; re-queueing", node.path);
                    let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    match policy.next_retry(retries, start.elapsed()) {
                        RetryDecision::RetryAfter(d) if remaining.map_or(true, |r| r > d) => {
                            retries += 1;
                            std::thread::sleep(d);
                        }
                        RetryDecision::RetryAfter(_) => return Ok(None),
                        RetryDecision::GiveUp => {
                            return Err(Error::NodeVanished {
                                path: self.base_path.clone(),
                            })
                        }
                    }
                }
                Err(LoopError::Other(e)) => {
                    self.delete_node(&node.path);
                    return Err(e);
                }
            }
        }
    }

    /// Waits in the queue with a node created elsewhere (in a transaction with
    /// other nodes): `Ok(Some)` when it holds, `Ok(None)` on timeout or when the
    /// node vanished (`vanished` is then set). The caller deletes the node on
    /// every path but success.
    pub(crate) fn wait_with_node(
        &self,
        path: String,
        generation: u64,
        stat: Stat,
        siblings: Option<Vec<String>>,
        deadline: Option<Instant>,
        vanished: &mut bool,
    ) -> Result<Option<Acquired>> {
        let mut node = Node {
            path,
            generation,
            stat,
            siblings,
        };
        match self.wait_loop(&mut node, deadline) {
            Ok(true) => Ok(Some(self.hold(node.path, node.generation, node.stat))),
            Ok(false) => Ok(None),
            Err(LoopError::NodeMissing) => {
                *vanished = true;
                Ok(None)
            }
            Err(LoopError::Other(e)) => Err(e),
        }
    }

    fn create_node(&self, data: Option<Vec<u8>>, sorting_sequence: Option<&str>) -> Result<Node> {
        let generation = self.client.session_generation();
        let mut b = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection();
        if let Some(d) = data {
            b = b.with_data(d);
        }
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
            self.client.session_generation()
        } else {
            generation
        };
        Ok(Node {
            path,
            generation,
            stat,
            siblings,
        })
    }

    fn wait_loop(&self, node: &mut Node, deadline: Option<Instant>) -> Result<bool, LoopError> {
        let generation = node.generation;
        let ours = basename(&node.path).to_string();
        let (_states_listener, states) = state_changes(&self.client);
        // A plain mutex queue only grows at its tail: once the head we watched is
        // deleted, the node right behind it holds the lock, with no new listing.
        // (A read/write queue may gain a downgraded read node at the head's
        // sequence, so it always lists again.)
        let shortcut = matches!(self.driver, Driver::Standard { max_leases: 1, .. });
        loop {
            if self.client.is_closed() {
                return Err(LoopError::Other(Error::ZooKeeper(zk_framework::Error::Closed)));
            }
            if self.client.session_generation() != generation {
                return Err(LoopError::NodeMissing);
            }
            let children = match node.siblings.take() {
                Some(mut kids) => {
                    self.driver.sort(&mut kids);
                    kids
                }
                None => self.sorted_children().map_err(LoopError::Other)?,
            };
            let decision = self.driver.decide(&children, &ours);
            // A listing taken on a newer session may still show our old node.
            if self.client.session_generation() != generation {
                return Err(LoopError::NodeMissing);
            }
            let pred = match decision {
                Err(NodeMissing) => return Err(LoopError::NodeMissing),
                Ok(Decision::Acquired) => return Ok(true),
                Ok(Decision::Watch(p)) => p,
            };
            let pred_is_head = children.first() == Some(&pred);
            // A try whose time is up leaves no watch behind.
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Ok(false);
            }
            // One channel per watch: an event of an earlier watch (set before a
            // reconnect, on the same predecessor or another) must never be read
            // as news about this predecessor.
            let (txc, rx) = crossbeam_channel::bounded::<zk_framework::proto::EventType>(1);
            let watcher = move |e: zk_framework::client::WatchedEvent| {
                let _ = txc.try_send(e.event_type);
            };
            match self.client.get_data_w(&join(&self.base_path, &pred), watcher) {
                Ok(_) => {}
                Err(zk_framework::Error::NoNode { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
            let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if timeout == Some(Duration::ZERO) {
                return Ok(false);
            }
            crossbeam_channel::select! {
                recv(rx) -> ev => {
                    if shortcut
                        && pred_is_head
                        && ev == Ok(zk_framework::proto::EventType::NodeDeleted)
                        && self.client.session_generation() == generation
                    {
                        return Ok(true);
                    }
                }
                recv(states) -> s => {
                    if s.is_err() {
                        return Err(LoopError::Other(Error::ZooKeeper(zk_framework::Error::Closed)));
                    }
                }
                default(timeout.unwrap_or(Duration::from_secs(3600))) => {
                    if deadline.is_some() {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Turns a won node into a holding with its loss monitor.
    fn hold(&self, path: String, generation: u64, stat: Stat) -> Acquired {
        let monitor = Monitor::start(&self.client, &path, generation);
        Acquired { path, stat, monitor }
    }

    /// Deletes a node we created: guaranteed (retried, then in the background).
    pub(crate) fn delete_node(&self, path: &str) {
        if let Err(e) = self.client.delete().guaranteed().for_path(path) {
            log::debug!("delete of lock node {path} failed ({e}); it continues in the background");
        }
    }

    /// Releases a holding: deletes its node (guaranteed). While disconnected the
    /// delete is handed to the background at once, so a release (and a guard's
    /// `Drop`) never waits for the connection; the error says so.
    pub(crate) fn release(&self, held: Acquired) -> Result<()> {
        let path = held.path.clone();
        drop(held);
        if !self.client.is_connected() {
            self.client.delete_in_background(&path)?;
            return Err(Error::ZooKeeper(zk_framework::Error::ConnectionLoss));
        }
        self.client.delete().guaranteed().for_path(&path).map_err(Error::from)
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

fn rearm(client: &CuratorFramework, path: &str, loss: Arc<LossState>) {
    let (l, c, p) = (loss.clone(), client.clone(), path.to_string());
    let watcher = move |e: zk_framework::client::WatchedEvent| match e.event_type {
        zk_framework::proto::EventType::NodeDeleted => l.publish(LockEvent::Lost),
        zk_framework::proto::EventType::NodeDataChanged => {
            // Watchers only signal: re-arming calls the client, so do it elsewhere.
            let _ = std::thread::Builder::new()
                .name("zk-lock-rewatch".into())
                .spawn(move || rearm(&c, &p, l));
        }
        _ => {}
    };
    match client.check_exists_w(path, watcher) {
        Ok(Some(_)) => {}
        Ok(None) => loss.publish(LockEvent::Lost),
        Err(e) => log::debug!("could not watch own lock node {path}: {e}"),
    }
}
