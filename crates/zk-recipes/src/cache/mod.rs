//! `CuratorCache`: a local copy of a subtree, a node, or a node and its
//! children, kept by one persistent watch (ZooKeeper 3.6+), that says how
//! fresh it is.
//!
//! * **On a [`PersistentWatcher`]**, as
//!   Curator's is: the watcher keeps the watch (recursive unless the cache
//!   follows one node) through reconnects and new sessions and tells its
//!   node events and connection states in the client's order; the cache
//!   reads each announced node with a plain `getData`, and reads the whole
//!   subtree again after each of the watcher's resets (at start, after a
//!   reconnect: the server replays nothing a persistent watch missed while
//!   the connection was down, and on a new session).
//! * **Exact events, in zxid order.** Each event is the difference between
//!   what the cache showed and what the server has: a node deleted and
//!   created again is a [`CacheEvent::Deleted`] and a
//!   [`CacheEvent::Created`] (judged by `czxid`, not by version, so the gap
//!   of Curator's CURATOR-391 is closed), changes come in the order of the
//!   server's zxids, and [`CacheEvent::Initialized`] comes at start and
//!   again after every re-synchronisation. Two changes of one node's data
//!   that no read saw apart are one event: ZooKeeper keeps only the latest
//!   data.
//! * **Nothing announced is left unread.** Every announced change waits in
//!   one queue until a read shows it; each round reads what waits and
//!   applies what it can at once, so under writes that never pause the view
//!   trails the server by about a round trip, and it is always the server's
//!   subtree as of one moment.
//! * **Freshness.** [`CuratorCache::freshness`] says whether the view is
//!   [`Freshness::Current`] (every change announced to the cache's client
//!   so far is applied), [`Freshness::Updating`] (some are being read),
//!   [`Freshness::Stale`] (since when, as of which zxid) or
//!   [`Freshness::Resyncing`]; every change of it is an event, and
//!   [`CuratorCache::get_current`] answers only while it is current.
//! * **Bounded.** A subtree larger than [`CuratorCacheBuilder::max_nodes`]
//!   is refused with [`Error::CacheTooLarge`] (the cache stops following
//!   the server and says so), never grown without bound.
//!
//! The events reach [`CuratorCache::events`] channels in order, told under
//! the lock that changes the view. Clones of a cache share it; it closes at
//! `close()` or when the last clone is dropped.
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use zk_framework::CuratorFramework;

pub use bridges::{NodeCache, PathChildrenCache, PathChildrenCacheEvent};
pub use builder::CuratorCacheBuilder;
pub(crate) use builder::Options;
pub use freshness::Freshness;
pub use view::{CacheEvent, ChildData};

use crate::core::{Lifecycle, Subscribers, Worker};
use crate::watch::PersistentWatcher;
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
    /// Time spent not current (stale, re-synchronising or updating), ended
    /// spells and the current one.
    pub time_not_current: Duration,
}

/// A subscriber that maps the events (a bridge's channel): tells it an
/// event (sending, never blocking), `false` once it is gone.
pub(crate) type Sink = Box<dyn FnMut(&CacheEvent) -> bool + Send>;

/// A listener of the deprecated [`CuratorCache::listen`]: its channel and
/// the thread that calls it.
struct Listener {
    id: u64,
    tx: Sender<CacheEvent>,
    /// Ends when `tx` goes (after the events queued for it).
    _thread: Worker,
}

/// Where a cache's events go, and what its waiters wait on: behind the lock
/// that orders the events.
pub(crate) struct Outlets {
    channels: Subscribers<CacheEvent>,
    sinks: Vec<Sink>,
    listeners: Vec<Listener>,
    /// The freshness the cache's thread judged last.
    freshness: Freshness,
    /// The number of the last watcher event whose change the view holds
    /// (every one before it too).
    applied: u64,
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
    /// The number of the watcher's last event told (see
    /// [`PersistentWatcher`]): beyond `applied`, a change is announced and
    /// not yet applied.
    told: Arc<AtomicU64>,
    events: AtomicU64,
    resyncs: AtomicU64,
    reads: AtomicU64,
    next_listener: AtomicU64,
    metrics: metrics::Handles,
}

impl Shared {
    fn new(root: String, told: Arc<AtomicU64>) -> Shared {
        Shared {
            metrics: metrics::Handles::new(&root),
            root,
            view: RwLock::new(View::new()),
            out: Mutex::new(Outlets {
                channels: Subscribers::new(),
                sinks: Vec::new(),
                listeners: Vec::new(),
                freshness: Freshness::Resyncing,
                applied: 0,
                not_current_since: Some(Instant::now()),
                not_current_total: Duration::ZERO,
                initialized: 0,
                failed: None,
                closed: false,
            }),
            changed: Condvar::new(),
            told,
            events: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            next_listener: AtomicU64::new(0),
        }
    }

    /// The freshness as asked now: the thread's judgement, and `Updating`
    /// while the watcher has told an event the view has not taken (the
    /// thread says so itself a moment later).
    fn freshness_of(&self, out: &Outlets) -> Freshness {
        if out.freshness.is_current() && self.told.load(Ordering::Acquire) > out.applied {
            Freshness::Updating
        } else {
            out.freshness
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
        self.tell_all(&mut out, evs);
    }

    fn tell_all(&self, out: &mut Outlets, evs: Vec<CacheEvent>) {
        self.events.fetch_add(evs.len() as u64, Ordering::Relaxed);
        for ev in evs {
            self.metrics.event(&ev);
            Self::tell(out, ev);
        }
    }

    /// A whole-subtree read is done: under one lock, the view becomes
    /// `fresh`, the difference is told (ordered by zxid), then
    /// `Initialized`, then the freshness `f` with how far the view has taken
    /// the watcher's events. So `Resyncing` lasts until `Initialized`, and
    /// whoever hears `Initialized` finds the view current when it is.
    pub(crate) fn resynced(&self, fresh: View, f: Freshness, applied: u64) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        let mut view = self.view.write();
        let evs = view::resync(&mut view, fresh);
        self.metrics.entries(view.len());
        drop(view);
        self.tell_all(&mut out, evs);
        self.resyncs.fetch_add(1, Ordering::Relaxed);
        self.metrics.resynced();
        out.initialized += 1;
        Self::tell(&mut out, CacheEvent::Initialized);
        self.set_freshness(&mut out, f, applied);
    }

    /// The thread's judgement: the freshness `f` (told when it changed) and
    /// how far the view has taken the watcher's events.
    pub(crate) fn settle(&self, f: Freshness, applied: u64) {
        let mut out = self.out.lock();
        if out.closed {
            return;
        }
        self.set_freshness(&mut out, f, applied);
    }

    fn set_freshness(&self, out: &mut MutexGuard<'_, Outlets>, f: Freshness, applied: u64) {
        let moved = out.applied != applied;
        out.applied = applied;
        if out.freshness != f {
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
            Self::tell(out, CacheEvent::Freshness(f));
        } else if !moved {
            return;
        }
        self.changed.notify_all();
    }

    /// One read sent.
    pub(crate) fn read_sent(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.metrics.read();
    }

    /// The freshness the thread judged last (what it judges from).
    pub(crate) fn freshness_stored(&self) -> Freshness {
        self.out.lock().freshness
    }

    pub(crate) fn freshness(&self) -> Freshness {
        let out = self.out.lock();
        self.freshness_of(&out)
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
        out.channels.tell(&ev);
        out.sinks.retain_mut(|s| s(&ev));
        out.listeners.retain(|l| l.tx.send(ev.clone()).is_ok());
    }
}

/// One cache, shared by its clones; closed when the last goes.
struct Inner {
    client: CuratorFramework,
    opts: Options,
    shared: Arc<Shared>,
    watcher: PersistentWatcher,
    lifecycle: Lifecycle<Worker>,
}

impl Inner {
    /// Closes, waiting for both threads (the cache's and its watcher's)
    /// until `deadline` at most: one bound for the whole close.
    fn close_until(&self, deadline: std::time::Instant) {
        let worker = self.lifecycle.close();
        if let Some(w) = &worker {
            w.cancel();
        }
        // The watcher's thread removes the watch; the feed ends with it.
        self.watcher.close_until(deadline);
        if let Some(w) = worker {
            w.stop_until(deadline);
        }
        let mut out = self.shared.out.lock();
        out.closed = true;
        out.channels.close();
        out.sinks.clear();
        out.listeners.clear();
        if self.opts.clear_on_close {
            self.shared.view.write().clear();
        }
        self.shared.changed.notify_all();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.close_until(std::time::Instant::now() + crate::core::STOP_BOUND);
    }
}

/// A local copy of a subtree kept by a persistent watch (Curator 5's
/// `CuratorCache`); see the [module doc](self). Clones share this cache; it
/// closes at `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// use std::time::Duration;
/// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/not/yet").build()?;
/// cache.start()?;
/// let reader = cache.clone(); // the same cache, for another thread
/// let current = std::thread::spawn(move || reader.wait_current_for(Duration::from_secs(10)));
/// assert!(current.join().unwrap());
/// assert_eq!(cache.size(), 0); // followed into existence when created
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CuratorCache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CuratorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuratorCache")
            .field("path", &self.inner.shared.root)
            .field("freshness", &self.freshness())
            .field("size", &self.size())
            .finish()
    }
}

/// A listener added by the deprecated [`CuratorCache::listen`]; dropping it
/// removes the listener (events already queued for it are still
/// delivered), and [`detach`](CacheListener::detach) keeps it for the
/// cache's life.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
/// #[allow(deprecated)]
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
    /// #[allow(deprecated)]
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
            // Its thread goes on with what is queued, then ends.
            let gone: Vec<Listener> = {
                let mut out = shared.out.lock();
                let (gone, kept) = std::mem::take(&mut out.listeners)
                    .into_iter()
                    .partition(|l| l.id == self.id);
                out.listeners = kept;
                gone
            };
            drop(gone);
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

    /// The cache the builder describes, with its watcher, not started.
    pub(crate) fn build(client: CuratorFramework, path: String, opts: Options) -> Result<CuratorCache> {
        let watcher = PersistentWatcher::new(&client, &path, opts.max_depth != Some(0))?;
        let shared = Arc::new(Shared::new(path.clone(), watcher.told()));
        Ok(CuratorCache {
            inner: Arc::new(Inner {
                client,
                opts,
                shared,
                watcher,
                lifecycle: Lifecycle::new("CuratorCache", &path),
            }),
        })
    }

    /// Starts following the server: its watcher adds the watch, and the
    /// cache's thread reads the subtree (returns at once; see
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
    /// assert!(matches!(cache.start(), Err(zk_recipes::Error::AlreadyStarted { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let inner = &self.inner;
        inner.lifecycle.start(|| {
            let feed = sync::Feed {
                events: inner.watcher.numbered_events(),
                told: inner.watcher.told(),
            };
            let (client, opts, shared) = (inner.client.clone(), inner.opts.clone(), inner.shared.clone());
            let w = Worker::spawn("CuratorCache", &shared.root.clone(), "curator-cache", move |cancel| {
                sync::run(&client, &opts, &shared, feed, &cancel)
            })?;
            if let Err(e) = inner.watcher.start() {
                w.stop();
                return Err(e);
            }
            Ok(w)
        })
    }

    /// Stops following the server, for every clone: the cache's thread and
    /// its watcher's end (each within the kit's stop bound) and the watch is
    /// removed (another recipe's one-shot watch of the same client on the
    /// path stays: see [`crate::watch`]); the view is emptied unless the
    /// cache was built with `do_not_clear_on_close`; every channel ends once
    /// its queued events are read. Idempotent.
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
        self.close_until(std::time::Instant::now() + crate::core::STOP_BOUND);
    }

    /// As [`close`](Self::close), waiting until `deadline` at most.
    pub(crate) fn close_until(&self, deadline: std::time::Instant) {
        self.inner.close_until(deadline);
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
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
        self.shared().view.read().get(path).cloned()
    }

    /// Runs `f` on the view only while the cache is current, under the lock
    /// that orders its events (so the view is the one the freshness speaks
    /// of); otherwise the error, naming `path`.
    fn current<T>(&self, path: &str, f: impl FnOnce(&View) -> T) -> Result<T> {
        let shared = self.shared();
        let out = shared.out.lock();
        let freshness = shared.freshness_of(&out);
        if !freshness.is_current() || out.closed || out.failed.is_some() {
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
        let view = shared.view.read();
        Ok(f(&view))
    }

    /// The node at `path`, only while the cache is [`Freshness::Current`]:
    /// then it holds every change the server announced to the cache's
    /// client before this call.
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] with the freshness when it is not current
    /// (stale, re-synchronising, updating, failed or closed).
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
        self.current(path, |v| v.get(path).cloned())
    }

    /// Every node the cache shows, in path order, only while the cache is
    /// [`Freshness::Current`] (as [`get_current`](Self::get_current), for
    /// the whole view at one moment).
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotCurrent`] (naming the cache's root) when it is not
    /// current.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// client.create().creating_parents_if_needed().for_path("/a/b")?;
    /// let cache = zk_recipes::cache::CuratorCache::builder(&client, "/a").build()?;
    /// assert!(cache.snapshot_current().is_err()); // not started
    /// cache.start()?;
    /// assert!(cache.wait_current_for(std::time::Duration::from_secs(10)));
    /// # let _ = zk_testing::wait_until(std::time::Duration::from_secs(10), || cache.snapshot_current().is_ok());
    /// let nodes = cache.snapshot_current()?;
    /// assert_eq!(nodes.iter().map(|d| d.path()).collect::<Vec<_>>(), ["/a", "/a/b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot_current(&self) -> Result<Vec<ChildData>> {
        let root = self.shared().root.clone();
        self.current(&root, |v| v.values().cloned().collect())
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
        self.shared().view.read().values().cloned().collect()
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
        self.shared().view.read().len()
    }

    /// How fresh the view is (see [`Freshness`]). Before `start()`:
    /// `Resyncing`. `Current` only while every change the server announced
    /// to the cache's client so far is applied.
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
        self.shared().freshness()
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
        self.shared().out.lock().failed.clone()
    }

    /// Waits until the view is current (after its first load) or `timeout`
    /// passes: whether it is. A timeout is a value, not an error.
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
        let shared = self.shared();
        let mut out = shared.out.lock();
        loop {
            let current = shared.freshness_of(&out).is_current() && out.initialized > 0;
            if current {
                return true;
            }
            if out.closed || out.failed.is_some() {
                return false;
            }
            match deadline {
                Some(d) => {
                    if shared.changed.wait_until(&mut out, d).timed_out() {
                        return shared.freshness_of(&out).is_current() && out.initialized > 0;
                    }
                }
                None => shared.changed.wait(&mut out),
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
        self.shared().out.lock().channels.subscribe()
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
        let shared = self.shared();
        let mut out = shared.out.lock();
        let snapshot: Vec<ChildData> = shared.view.read().values().cloned().collect();
        (snapshot, out.channels.subscribe())
    }

    /// Reads the view and adds the sink `make` builds from it, under one
    /// lock (nothing missed, nothing twice between them); the bridges'
    /// channels come this way. Returns the view read.
    pub(crate) fn subscribe(&self, make: impl FnOnce(&[ChildData]) -> Sink) -> Vec<ChildData> {
        let shared = self.shared();
        let mut out = shared.out.lock();
        let snapshot: Vec<ChildData> = shared.view.read().values().cloned().collect();
        let sink = make(&snapshot);
        if !out.closed {
            out.sinks.push(sink);
        }
        snapshot
    }

    /// Calls `f` with every event from now on, on a thread of its own (a
    /// listener that panics is logged and goes on with the next event; one
    /// that blocks delays only itself). Deprecated: [`events`](Self::events)
    /// is every recipe's event channel (read it on a thread of yours).
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
    /// #[allow(deprecated)]
    /// let listener = cache.listen(|ev| println!("{ev:?}"))?;
    /// drop(listener); // removed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn listen(&self, f: impl Fn(&CacheEvent) + Send + 'static) -> Result<CacheListener> {
        let shared = self.shared();
        let closed = || Error::Closed {
            recipe: "CuratorCache",
            path: shared.root.clone(),
        };
        if shared.out.lock().closed {
            return Err(closed());
        }
        let (tx, rx) = crossbeam_channel::unbounded::<CacheEvent>();
        let root = shared.root.clone();
        let thread = Worker::spawn("CuratorCache", &shared.root, "curator-cache-listener", move |_cancel| {
            // It ends with its channel (the listener removed, the cache
            // closed), after the events queued for it.
            for ev in rx.iter() {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ev))).is_err() {
                    log::error!("a listener of the cache of {root} panicked on {ev:?}");
                }
            }
        })?;
        let id = shared.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut out = shared.out.lock();
        if out.closed {
            return Err(closed());
        }
        out.listeners.push(Listener {
            id,
            tx,
            _thread: thread,
        });
        Ok(CacheListener {
            id,
            shared: Some(Arc::downgrade(&self.inner.shared)),
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
        let shared = self.shared();
        let out = shared.out.lock();
        CacheStats {
            events: shared.events.load(Ordering::Relaxed),
            resyncs: shared.resyncs.load(Ordering::Relaxed),
            reads: shared.reads.load(Ordering::Relaxed),
            entries: shared.view.read().len(),
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
        &self.inner.shared.root
    }
}
