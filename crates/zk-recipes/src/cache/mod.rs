//! `CuratorCache`: a local copy of a subtree, a node, or a node and its
//! children, kept by one persistent recursive watch (ZooKeeper 3.6+), that
//! says how fresh it is.
//!
//! * **One watch, plain reads.** The cache adds one persistent watch on its
//!   root (recursive unless it caches one node) and reads each announced
//!   node with a plain `getData`; it re-reads the whole subtree at start,
//!   after a reconnect (the server replays nothing a persistent watch
//!   missed while the connection was down) and on a new session.
//! * **Exact events, in zxid order.** Each event is the difference between
//!   what the cache showed and what the server has: a node deleted and
//!   created again is a [`CacheEvent::Deleted`] and a
//!   [`CacheEvent::Created`] (judged by `czxid`, not by version, so the gap
//!   of Curator's CURATOR-391 is closed), changes come in the order of the
//!   server's zxids, and [`CacheEvent::Initialized`] comes at start and
//!   again after every re-synchronisation. Two changes of one node's data
//!   that no read saw apart are one event: ZooKeeper keeps only the latest
//!   data.
//! * **Freshness.** [`CuratorCache::freshness`] says whether the view is
//!   [`Freshness::Current`], [`Freshness::Stale`] (since when, as of which
//!   zxid) or [`Freshness::Resyncing`]; every change of it is an event, and
//!   [`CuratorCache::get_current`] answers only while it is current.
//! * **Bounded.** A subtree larger than [`CuratorCacheBuilder::max_nodes`]
//!   is refused with [`Error::CacheTooLarge`] (the cache stops following
//!   the server and says so), never grown without bound.
//!
//! Listeners run on a thread of their own each: one that panics or blocks
//! stops neither the others nor the cache, nor the client's threads.
//!
//! # Examples
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
//! use std::time::Duration;
//! use zk_recipes::cache::{CacheEvent, CuratorCache};
//!
//! client.create().creating_parents_if_needed().with_data(b"v1".to_vec()).for_path("/config/a")?;
//! let cache = CuratorCache::builder(&client, "/config").build()?;
//! let events = cache.events();
//! cache.start()?;
//! assert!(cache.wait_current_for(Duration::from_secs(10)));
//! assert_eq!(cache.get("/config/a").unwrap().data(), Some(&b"v1"[..]));
//!
//! client.set_data("/config/a", b"v2".to_vec(), None)?;
//! let changed = events
//!     .iter()
//!     .find(|e| matches!(e, CacheEvent::Changed { .. }))
//!     .unwrap();
//! assert_eq!(changed.path(), Some("/config/a"));
//! cache.close();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bridges;
mod builder;
mod freshness;
mod metrics;
mod sync;
mod view;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex, RwLock};
use zk_framework::CuratorFramework;

pub use bridges::{NodeCache, PathChildrenCache, PathChildrenCacheEvent};
pub use builder::CuratorCacheBuilder;
pub(crate) use builder::Options;
pub use freshness::Freshness;
pub use view::{CacheEvent, ChildData};

use crate::core::Worker;
use crate::{Error, Result};
use view::View;

/// The default bound on the number of cached nodes.
pub const DEFAULT_MAX_NODES: usize = 100_000;

/// What a cache has told and done so far.
///
/// # Examples
///
/// ```
/// let s = zk_recipes::cache::CacheStats::default();
/// assert_eq!(s.events, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Node events told (created, changed, deleted).
    pub events: u64,
    /// Whole-subtree reads completed (the first load included).
    pub resyncs: u64,
    /// Reads sent to the server.
    pub reads: u64,
    /// Nodes the view holds now.
    pub entries: usize,
    /// Time spent not current (stale or re-synchronising), ended spells
    /// and the current one.
    pub time_not_current: Duration,
}

/// A subscriber: tells it an event (sending, never blocking), `false` once
/// it is gone.
pub(crate) type Sink = Box<dyn FnMut(&CacheEvent) -> bool + Send>;

/// Where a cache's events go: channels, listener threads, and waiters.
pub(crate) struct Outlets {
    subscribers: Vec<Sink>,
    listeners: Vec<(u64, Sender<CacheEvent>)>,
    freshness: Freshness,
    /// Since when the view has not been current (`None` while it is).
    not_current_since: Option<Instant>,
    not_current_total: Duration,
    initialized: u64,
    failed: Option<Error>,
    closed: bool,
}

/// What the cache's thread and its users share.
pub(crate) struct Shared {
    pub(crate) root: String,
    pub(crate) view: RwLock<View>,
    out: Mutex<Outlets>,
    changed: Condvar,
    events: AtomicU64,
    resyncs: AtomicU64,
    reads: AtomicU64,
    next_listener: AtomicU64,
    metrics: metrics::Handles,
}

impl Shared {
    fn new(root: String) -> Shared {
        Shared {
            metrics: metrics::Handles::new(&root),
            root,
            view: RwLock::new(View::new()),
            out: Mutex::new(Outlets {
                subscribers: Vec::new(),
                listeners: Vec::new(),
                freshness: Freshness::Resyncing,
                not_current_since: Some(Instant::now()),
                not_current_total: Duration::ZERO,
                initialized: 0,
                failed: None,
                closed: false,
            }),
            changed: Condvar::new(),
            events: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            next_listener: AtomicU64::new(0),
        }
    }

    /// Changes the view by `f` and tells the events it returns, in order,
    /// under one lock: a reader of the view never sees it ahead of or
    /// behind the events told.
    pub(crate) fn change(&self, f: impl FnOnce(&mut View) -> Vec<CacheEvent>) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        let mut view = self.view.write();
        let evs = f(&mut view);
        self.metrics.entries(view.len());
        drop(view);
        self.events.fetch_add(evs.len() as u64, Ordering::Relaxed);
        for ev in evs {
            self.metrics.event(&ev);
            Self::tell(&mut out, ev);
        }
    }

    /// A whole-subtree read is done: tells `Initialized`.
    pub(crate) fn initialized(&self) {
        let mut out = self.out.lock();
        self.resyncs.fetch_add(1, Ordering::Relaxed);
        self.metrics.resynced();
        out.initialized += 1;
        Self::tell(&mut out, CacheEvent::Initialized);
        self.changed.notify_all();
    }

    /// Sets the freshness; tells it when it changed.
    pub(crate) fn set_freshness(&self, f: Freshness) {
        let mut out = self.out.lock();
        if out.freshness == f || out.closed {
            return;
        }
        out.freshness = f;
        let now = Instant::now();
        self.metrics.current(f.is_current());
        match (f.is_current(), out.not_current_since) {
            (true, Some(since)) => {
                out.not_current_total += now - since;
                out.not_current_since = None;
                self.metrics.spell_ended(now - since);
            }
            (false, None) => out.not_current_since = Some(now),
            _ => {}
        }
        Self::tell(&mut out, CacheEvent::Freshness(f));
        self.changed.notify_all();
    }

    /// One read sent.
    pub(crate) fn read_sent(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.metrics.read();
    }

    pub(crate) fn freshness(&self) -> Freshness {
        self.out.lock().freshness
    }

    /// The cache stopped for good: tells why.
    pub(crate) fn fail(&self, e: Error) {
        let mut out = self.out.lock();
        if out.failed.is_some() || out.closed {
            return;
        }
        out.failed = Some(e.clone());
        Self::tell(&mut out, CacheEvent::Failed(e));
        self.changed.notify_all();
    }

    fn tell(out: &mut Outlets, ev: CacheEvent) {
        out.subscribers.retain_mut(|s| s(&ev));
        out.listeners.retain(|(_, s)| s.send(ev.clone()).is_ok());
    }
}

/// A local copy of a subtree kept by a persistent watch (Curator 5's
/// `CuratorCache`); see the [module doc](self).
///
/// Dropping the cache closes it.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// use std::time::Duration;
/// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/not/yet").build()?;
/// cache.start()?;
/// assert!(cache.wait_current_for(Duration::from_secs(10)));
/// assert_eq!(cache.size(), 0); // followed into existence when created
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CuratorCache {
    client: CuratorFramework,
    opts: Options,
    shared: Arc<Shared>,
    worker: Mutex<Option<Worker>>,
    started: AtomicBool,
}

impl std::fmt::Debug for CuratorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuratorCache")
            .field("path", &self.shared.root)
            .field("freshness", &self.freshness())
            .field("size", &self.size())
            .finish()
    }
}

/// A listener added by [`CuratorCache::listen`]; dropping it removes the
/// listener (events already queued for it are still delivered), and
/// [`detach`](CacheListener::detach) keeps it for the cache's life.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
/// cache.listen(|ev| println!("{ev:?}"))?.detach();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a CacheListener removes its listener at once; keep it or call `.detach()`"]
pub struct CacheListener {
    id: u64,
    shared: Option<std::sync::Weak<Shared>>,
}

impl std::fmt::Debug for CacheListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheListener").field("id", &self.id).finish()
    }
}

impl CacheListener {
    /// Keeps the listener for the cache's life.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// # let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// cache.listen(|_| {})?.detach();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(mut self) {
        self.shared = None;
    }
}

impl Drop for CacheListener {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take().and_then(|w| w.upgrade()) {
            shared.out.lock().listeners.retain(|(id, _)| *id != self.id);
        }
    }
}

impl CuratorCache {
    /// A builder for a cache of `path` on `client` (paths relative to its
    /// namespace).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/config").build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(client: &CuratorFramework, path: &str) -> CuratorCacheBuilder {
        CuratorCacheBuilder {
            client: client.clone(),
            path: path.to_string(),
            opts: Options {
                max_depth: None,
                load_data: true,
                compressed: false,
                clear_on_close: true,
                max_nodes: DEFAULT_MAX_NODES,
                filter: None,
            },
        }
    }

    /// Starts following the server: adds the watch and reads the subtree
    /// on the cache's thread (returns at once; see
    /// [`wait_current_for`](Self::wait_current_for)).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second start;
    /// [`Error::Closed`] after `close()`; [`Error::SpawnFailed`]
    /// when the system refuses a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// cache.start()?;
    /// assert!(cache.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let path = self.shared.root.clone();
        if self.shared.out.lock().closed {
            return Err(Error::Closed {
                recipe: "CuratorCache",
                path,
            });
        }
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(Error::AlreadyStarted {
                recipe: "CuratorCache",
                path,
            });
        }
        let (client, opts, shared) = (self.client.clone(), self.opts.clone(), self.shared.clone());
        let w = Worker::spawn("CuratorCache", &path, "curator-cache", move |cancel| {
            sync::run(&client, &opts, &shared, &cancel)
        })?;
        *self.worker.lock() = Some(w);
        Ok(())
    }

    /// Stops following the server: the cache's thread ends (within a
    /// bound) and removes its watch; the view is emptied unless the cache
    /// was built with `do_not_clear_on_close`; every channel ends once its
    /// queued events are read. Idempotent.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// cache.start()?;
    /// cache.close();
    /// cache.close();
    /// assert!(cache.events().recv().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        if let Some(w) = self.worker.lock().take() {
            w.stop();
        }
        let mut out = self.shared.out.lock();
        out.closed = true;
        out.subscribers.clear();
        out.listeners.clear();
        if self.opts.clear_on_close {
            self.shared.view.write().clear();
        }
        self.shared.changed.notify_all();
    }

    /// The node at `path` as the cache shows it (`None`: not in the view).
    /// Served whatever the freshness: see [`get_current`](Self::get_current).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert!(cache.get("/a/b").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, path: &str) -> Option<ChildData> {
        self.shared.view.read().get(path).cloned()
    }

    /// The node at `path`, only while the cache is [`Freshness::Current`].
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness when it is not current
    /// (stale, re-synchronising, failed or closed).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// // Not started: not current.
    /// assert!(matches!(cache.get_current("/a"), Err(zk_recipes::Error::CacheNotCurrent { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_current(&self, path: &str) -> Result<Option<ChildData>> {
        let out = self.shared.out.lock();
        let freshness = out.freshness;
        if !freshness.is_current() || out.closed || out.failed.is_some() || !self.started.load(Ordering::SeqCst) {
            let freshness = if freshness.is_current() {
                Freshness::Stale {
                    since: Instant::now(),
                    last_zxid: 0,
                }
            } else {
                freshness
            };
            return Err(Error::CacheNotCurrent {
                path: path.to_string(),
                freshness,
            });
        }
        Ok(self.shared.view.read().get(path).cloned())
    }

    /// Every node the cache shows, in path order (a node before its
    /// descendants).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// for node in cache.snapshot() {
    ///     println!("{} v{}", node.path(), node.stat().version);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Vec<ChildData> {
        self.shared.view.read().values().cloned().collect()
    }

    /// The paths and nodes of the view, in path order, read under one lock
    /// (Curator's `stream()`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.iter().count(), cache.size());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = ChildData> {
        self.snapshot().into_iter()
    }

    /// The number of nodes the cache shows.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.size(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size(&self) -> usize {
        self.shared.view.read().len()
    }

    /// How fresh the view is (see [`Freshness`]). Before `start()`:
    /// `Resyncing`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.freshness(), zk_recipes::cache::Freshness::Resyncing);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn freshness(&self) -> Freshness {
        self.shared.freshness()
    }

    /// Why the cache stopped following the server, if it did (see
    /// [`CacheEvent::Failed`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert!(cache.failure().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure(&self) -> Option<Error> {
        self.shared.out.lock().failed.clone()
    }

    /// Waits until the view is current or `timeout` passes: whether it is.
    /// A timeout is a value, not an error.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// cache.start()?;
    /// assert!(cache.wait_current_for(std::time::Duration::from_secs(10)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_for(&self, timeout: Duration) -> bool {
        self.wait_current_until(Instant::now().checked_add(timeout))
    }

    /// As [`wait_current_for`](Self::wait_current_for), until `deadline`
    /// (`None`: no deadline). Ends early, with `false`, when the cache
    /// closes or fails.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// use std::time::{Duration, Instant};
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// // Not started: never current.
    /// assert!(!cache.wait_current_until(Some(Instant::now() + Duration::from_millis(10))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_current_until(&self, deadline: Option<Instant>) -> bool {
        let mut out = self.shared.out.lock();
        loop {
            if out.freshness.is_current() && out.initialized > 0 {
                return true;
            }
            if out.closed || out.failed.is_some() {
                return false;
            }
            match deadline {
                Some(d) => {
                    if self.shared.changed.wait_until(&mut out, d).timed_out() {
                        return out.freshness.is_current() && out.initialized > 0;
                    }
                }
                None => self.shared.changed.wait(&mut out),
            }
        }
    }

    /// Every event from now on, on an unbounded channel (it ends when the
    /// cache closes). The view read after this call already holds every
    /// event not yet received from it.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// let events = cache.events();
    /// cache.start()?;
    /// let first = events.recv_timeout(std::time::Duration::from_secs(10))?;
    /// println!("{first:?}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<CacheEvent> {
        self.events_with_snapshot().1
    }

    /// The view and the channel of every event after it, taken together
    /// (nothing missed, nothing twice between them).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// let (now, later) = cache.events_with_snapshot();
    /// assert!(now.is_empty());
    /// # drop(later);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events_with_snapshot(&self) -> (Vec<ChildData>, Receiver<CacheEvent>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let snapshot = self.subscribe(|_| Box::new(move |ev| tx.send(ev.clone()).is_ok()));
        (snapshot, rx)
    }

    /// Reads the view and adds the sink `make` builds from it, under one
    /// lock (nothing missed, nothing twice between them); the bridges'
    /// channels come this way. Returns the view read.
    pub(crate) fn subscribe(&self, make: impl FnOnce(&[ChildData]) -> Sink) -> Vec<ChildData> {
        let mut out = self.shared.out.lock();
        let snapshot: Vec<ChildData> = self.shared.view.read().values().cloned().collect();
        let sink = make(&snapshot);
        if !out.closed {
            out.subscribers.push(sink);
        }
        snapshot
    }

    /// Calls `f` with every event from now on, on a thread of its own (a
    /// listener that panics is logged and goes on with the next event; one
    /// that blocks delays only itself).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] after `close()`; [`Error::SpawnFailed`]
    /// when the system refuses a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// let listener = cache.listen(|ev| println!("{ev:?}"))?;
    /// drop(listener); // removed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listen(&self, f: impl Fn(&CacheEvent) + Send + 'static) -> Result<CacheListener> {
        let (tx, rx) = crossbeam_channel::unbounded::<CacheEvent>();
        let root = self.shared.root.clone();
        let root_for_error = root.clone();
        std::thread::Builder::new()
            .name("curator-cache-listener".into())
            .spawn(move || {
                for ev in rx.iter() {
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ev))).is_err() {
                        log::error!("a listener of the cache of {root} panicked on {ev:?}");
                    }
                }
            })
            .map_err(|e| Error::SpawnFailed {
                recipe: "CuratorCache",
                path: root_for_error.clone(),
                reason: e.to_string(),
            })?;
        let id = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut out = self.shared.out.lock();
        if out.closed {
            return Err(Error::Closed {
                recipe: "CuratorCache",
                path: self.shared.root.clone(),
            });
        }
        out.listeners.push((id, tx));
        Ok(CacheListener {
            id,
            shared: Some(Arc::downgrade(&self.shared)),
        })
    }

    /// What the cache has told and done so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.stats().resyncs, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> CacheStats {
        let out = self.shared.out.lock();
        CacheStats {
            events: self.shared.events.load(Ordering::Relaxed),
            resyncs: self.shared.resyncs.load(Ordering::Relaxed),
            reads: self.shared.reads.load(Ordering::Relaxed),
            entries: self.shared.view.read().len(),
            time_not_current: out.not_current_total + out.not_current_since.map_or(Duration::ZERO, |s| s.elapsed()),
        }
    }

    /// The cache's root path.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.shared.root
    }
}

impl Drop for CuratorCache {
    fn drop(&mut self) {
        self.close();
    }
}
