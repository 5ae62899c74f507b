//! The watcher's handle ([`PersistentWatcher`]).

use crate::core::{Lifecycle, Subscribers, Worker};
use crate::error::Result;
use crate::watch::event::WatcherEvent;
use crate::watch::keeper::{keep, Handle, Shared, State};
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use zk_framework::CuratorFramework;

/// A persistent watch kept through reconnects and new sessions; see the
/// [family page](crate::watch). Clones share this watcher; it closes at `close()` or
/// when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let w = zk_recipes::PersistentWatcher::new(&client, "/config", false)?;
/// let events = w.events();
/// let shared = w.clone(); // the same watcher, for another thread
/// std::thread::spawn(move || shared.start()).join().unwrap()?;
/// assert!(events.recv_timeout(std::time::Duration::from_secs(10))?.is_reset());
/// w.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PersistentWatcher {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for PersistentWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.handle.0;
        f.debug_struct("PersistentWatcher")
            .field("path", &s.path)
            .field("recursive", &s.recursive)
            .field("stage", &s.lifecycle.stage())
            .finish()
    }
}

impl PersistentWatcher {
    /// A watcher of `path` (recursive: the path and every descendant), not
    /// started.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper) with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// assert!(zk_recipes::PersistentWatcher::new(&client, "bad", true).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, recursive: bool) -> Result<PersistentWatcher> {
        zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
        let shared = Arc::new(Shared {
            client: client.clone(),
            path: path.to_string(),
            recursive,
            lifecycle: Lifecycle::new("PersistentWatcher", path),
            state: Mutex::new(State {
                subscribers: Subscribers::new(),
                numbered: Subscribers::new(),
                reg: 0,
                pending: None,
                id: None,
                connected: false,
                closed: false,
            }),
            told: Arc::new(AtomicU64::new(0)),
        });
        Ok(PersistentWatcher {
            handle: Arc::new(Handle(shared)),
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.0
    }

    /// Every event from now on, on an unbounded channel that ends when the
    /// watcher closes (at once after the close).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::PersistentWatcher::new(&client, "/a", true)?;
    /// let events = w.events();
    /// w.close();
    /// assert!(events.recv().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<WatcherEvent> {
        self.shared().state.lock().subscribers.subscribe()
    }

    /// The events numbered in the order told (1, 2, ...), for a cache built
    /// on this watcher: with [`PersistentWatcher::told`], it places each
    /// answer it reads among them.
    pub(crate) fn numbered_events(&self) -> Receiver<(u64, WatcherEvent)> {
        self.shared().state.lock().numbered.subscribe()
    }

    /// The number of the last event told (0: none yet). Read on the
    /// client's I/O thread, in a reply's callback, it counts every event the
    /// connection brought before that reply.
    pub(crate) fn told(&self) -> Arc<AtomicU64> {
        self.shared().told.clone()
    }

    /// Adds the watch and keeps it, on a thread of the watcher's (returns
    /// at once; the first [`WatcherEvent::Reset`] says it is in place).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`](crate::Error::AlreadyStarted) on a second start,
    /// [`Error::Closed`](crate::Error::Closed) after `close()`, [`Error::SpawnFailed`](crate::Error::SpawnFailed)
    /// when the system refuses a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::PersistentWatcher::new(&client, "/a", true)?;
    /// w.start()?;
    /// assert!(matches!(w.start(), Err(zk_recipes::Error::AlreadyStarted { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let shared = self.shared().clone();
        self.shared().lifecycle.start(|| {
            let s = shared.clone();
            Worker::spawn("PersistentWatcher", &shared.path, "persistent-watcher", move |cancel| {
                keep(&s, &cancel)
            })
        })
    }

    /// Removes the watch and ends the channels, for every clone.
    /// Idempotent; bounded in time (the thread is waited for at most the
    /// kit's stop bound).
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::PersistentWatcher::new(&client, "/a", true)?;
    /// w.close();
    /// w.close();
    /// assert!(matches!(w.start(), Err(zk_recipes::Error::Closed { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.close_until(std::time::Instant::now() + crate::core::STOP_BOUND);
    }

    /// As [`close`](Self::close), waiting for the thread until `deadline`
    /// at most (a recipe made of several closes them all within one bound).
    pub(crate) fn close_until(&self, deadline: std::time::Instant) {
        self.shared().close_until(deadline);
    }

    /// The watched path.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::PersistentWatcher::new(&client, "/a", true)?;
    /// assert_eq!(w.path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.shared().path
    }
}
