//! The cache's handle ([`CuratorCache`]) and its close.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;

use super::options::Options;
use super::view::{CacheEvent, ChildData};
use crate::freshness::Freshness;

use super::state::{CacheStats, Listener, Shared, Sink};
use super::sync;
use super::view::View;
use crate::core::{Lifecycle, Worker};
use crate::error::{Error, Result};
use crate::watch::watcher::PersistentWatcher;

/// The default bound on the number of cached nodes.
pub const DEFAULT_MAX_NODES: usize = 100_000;

/// One cache, shared by its clones; closed when the last goes.
pub(crate) struct Inner {
    pub(crate) client: CuratorFramework,
    pub(crate) opts: Options,
    pub(crate) shared: Arc<Shared>,
    pub(crate) watcher: PersistentWatcher,
    pub(crate) lifecycle: Lifecycle<Worker>,
}

impl Inner {
    /// Closes, waiting for both threads (the cache's and its watcher's)
    /// until `deadline` at most: one bound for the whole close.
    pub(crate) fn close_until(&self, deadline: std::time::Instant) {
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
/// `CuratorCache`); see the [family page](crate::cache). Clones share this cache; it
/// closes at `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// use std::time::Duration;
/// let cache = zk_recipes::CuratorCache::builder(&client, "/not/yet").build()?;
/// cache.start()?;
/// let reader = cache.clone(); // the same cache, for another thread
/// let current = std::thread::spawn(move || reader.wait_current_for(Duration::from_secs(10)));
/// assert!(current.join().unwrap());
/// assert_eq!(cache.size(), 0); // followed into existence when created
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CuratorCache {
    pub(crate) inner: Arc<Inner>,
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
/// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
/// #[allow(deprecated)]
/// cache.listen(|ev| println!("{ev:?}"))?.detach();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a CacheListener removes its listener at once; keep it or call `.detach()`"]
pub struct CacheListener {
    pub(crate) id: u64,
    pub(crate) shared: Option<std::sync::Weak<Shared>>,
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
    /// # let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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

    pub(crate) fn shared(&self) -> &Shared {
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
    /// assert!(cache.get("/a/b").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, path: &str) -> Option<ChildData> {
        self.shared().view.read().get(path).cloned()
    }

    /// Runs `f` on the view only while the cache is current, under the lock
    /// that orders its events (so the view is the one the freshness speaks
    /// of); otherwise the error, naming `path`.
    pub(crate) fn current<T>(&self, path: &str, f: impl FnOnce(&View) -> T) -> Result<T> {
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.freshness(), zk_recipes::Freshness::Resyncing);
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
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
    /// let cache = zk_recipes::CuratorCache::builder(&client, "/a").build()?;
    /// assert_eq!(cache.path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.shared.root
    }
}
