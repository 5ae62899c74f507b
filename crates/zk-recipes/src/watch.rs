//! `PersistentWatcher`: a persistent (optionally recursive) watch on a path
//! (ZooKeeper 3.6+), kept through reconnects and added again on a new
//! session, with its events on a channel (Curator's `PersistentWatcher`).
//!
//! The server keeps a persistent watch through a reconnect of the same
//! session but announces nothing that changed while the connection was
//! down, and a new session has no watch at all. So the channel says when
//! the watch is in place again ([`WatcherEvent::Reset`]): whoever needs the
//! changes made in between reads again then (a [`crate::cache::CuratorCache`]
//! does this for you).
//!
//! # Examples
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
//! use std::time::Duration;
//! use zk_recipes::watch::{PersistentWatcher, WatcherEvent};
//!
//! let watcher = PersistentWatcher::new(&client, "/jobs", true)?;
//! let events = watcher.events();
//! watcher.start()?;
//! assert!(matches!(events.recv_timeout(Duration::from_secs(10))?, WatcherEvent::Reset { .. }));
//! client.create().creating_parents_if_needed().for_path("/jobs/a")?;
//! let ev = events.recv_timeout(Duration::from_secs(10))?;
//! assert!(matches!(ev, WatcherEvent::Node { ref path, .. } if path == "/jobs"));
//! watcher.close();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::{AddWatchMode, WatchId};
use zk_framework::{ConnectionState, CuratorFramework, EventType, WatchedEvent};

use crate::core::Worker;
use crate::{Error, Result};

/// What a [`PersistentWatcher`] tells.
///
/// # Examples
///
/// ```
/// use zk_recipes::watch::WatcherEvent;
/// let ev = WatcherEvent::Reset { new_session: false };
/// assert!(ev.is_reset());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatcherEvent {
    /// A change the server announced: its type and the changed node's path
    /// (relative to the client's namespace).
    Node {
        /// What happened (`NodeCreated`, `NodeDeleted`, `NodeDataChanged`,
        /// or `NodeChildrenChanged` for a non-recursive watch).
        event_type: EventType,
        /// The node that changed.
        path: String,
    },
    /// The watch is in place at the server (an answered request came after
    /// it): first after `start()`, then after each reconnect. Changes made
    /// while it was not in place were not announced; a read made after this
    /// event sees them.
    Reset {
        /// Whether the watch was added anew (at start, or on a new session)
        /// rather than kept by the server through a reconnect.
        new_session: bool,
    },
    /// The connection is down: nothing is announced until the next
    /// `Reset`.
    Suspended,
    /// The watch cannot be kept (the server is older than 3.6 and has no
    /// `addWatch`): the watcher stopped, and the channel ends.
    Failed(Error),
}

impl WatcherEvent {
    /// Whether this is a [`WatcherEvent::Reset`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::watch::WatcherEvent::Suspended.is_reset());
    /// ```
    pub fn is_reset(&self) -> bool {
        matches!(self, WatcherEvent::Reset { .. })
    }
}

struct Inner {
    client: CuratorFramework,
    path: String,
    recursive: bool,
    subscribers: Mutex<Vec<Sender<WatcherEvent>>>,
    closed: AtomicBool,
}

impl Inner {
    fn tell(&self, ev: WatcherEvent) {
        self.subscribers.lock().retain(|s| s.send(ev.clone()).is_ok());
    }
}

/// A persistent watch kept through reconnects and new sessions; see the
/// [module doc](self). Dropping it closes it.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/config", false)?;
/// w.start()?;
/// w.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PersistentWatcher {
    inner: Arc<Inner>,
    worker: Mutex<Option<Worker>>,
    started: AtomicBool,
}

impl std::fmt::Debug for PersistentWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentWatcher")
            .field("path", &self.inner.path)
            .field("recursive", &self.inner.recursive)
            .finish()
    }
}

impl PersistentWatcher {
    /// A watcher of `path` (recursive: the path and every descendant), not
    /// started.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with [`zk_framework::Error::InvalidPath`] for a
    /// path that breaks ZooKeeper's rules.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// assert!(zk_recipes::watch::PersistentWatcher::new(&client, "bad", true).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, recursive: bool) -> Result<PersistentWatcher> {
        zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
        Ok(PersistentWatcher {
            inner: Arc::new(Inner {
                client: client.clone(),
                path: path.to_string(),
                recursive,
                subscribers: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
            worker: Mutex::new(None),
            started: AtomicBool::new(false),
        })
    }

    /// Every event from now on, on an unbounded channel that ends when the
    /// watcher closes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
    /// let events = w.events();
    /// w.close();
    /// assert!(events.recv().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<WatcherEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if !self.inner.closed.load(Ordering::SeqCst) {
            self.inner.subscribers.lock().push(tx);
        }
        rx
    }

    /// Adds the watch and keeps it, on a thread of the watcher's (returns
    /// at once; the first [`WatcherEvent::Reset`] says it is in place).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second start,
    /// [`Error::Closed`] after `close()`, [`Error::SpawnFailed`]
    /// when the system refuses a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
    /// w.start()?;
    /// assert!(w.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        let path = self.inner.path.clone();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed {
                recipe: "PersistentWatcher",
                path,
            });
        }
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(Error::AlreadyStarted {
                recipe: "PersistentWatcher",
                path,
            });
        }
        let inner = self.inner.clone();
        let w = Worker::spawn("PersistentWatcher", &path, "persistent-watcher", move |cancel| {
            keep(&inner, &cancel)
        })?;
        *self.worker.lock() = Some(w);
        Ok(())
    }

    /// Removes the watch and ends the channels. Idempotent; bounded in
    /// time.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
    /// w.close();
    /// w.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.lock().take() {
            w.stop();
        }
        self.inner.subscribers.lock().clear();
    }

    /// The watched path.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
    /// assert_eq!(w.path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        self.close();
    }
}

/// The watcher's thread: adds the watch (again on each new session, with a
/// doubling pause after a failure), tells resets and suspensions, and
/// removes the watch at the end.
fn keep(inner: &Inner, cancel: &Receiver<()>) {
    let client = &inner.client;
    let states = client.state_receiver();
    let closed = client.close_signal();
    let (node_tx, nodes) = crossbeam_channel::unbounded::<WatchedEvent>();
    let mode = if inner.recursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    };
    let mut watch: Option<(WatchId, u64)> = None;
    // A reset is due.
    let mut due = true;
    let mut connected = client.is_connected();
    let mut pause = Duration::from_millis(50);
    let never = crossbeam_channel::never::<Instant>();
    loop {
        let mut retry = never.clone();
        if due && connected {
            let generation = client.session_generation();
            let new_session = watch.map(|(_, g)| g) != Some(generation);
            let ok = if !new_session {
                // The client re-registered the watch (SetWatches2) ahead of
                // anything else on the new connection: one answered request
                // after it means the server has it in place.
                let bounded = client.with_deadline(Some(Instant::now() + Duration::from_secs(5)));
                match bounded.check_exists(&inner.path) {
                    Ok(_) => true,
                    Err(e) => {
                        log::debug!("the watch on {} is not confirmed yet: {e}", inner.path);
                        false
                    }
                }
            } else {
                let bounded = client.with_deadline(Some(Instant::now() + Duration::from_secs(5)));
                match bounded.add_watch(&inner.path, mode, node_tx.clone()) {
                    Ok(id) => {
                        watch = Some((id, generation));
                        true
                    }
                    Err(e @ zk_framework::Error::ServerTooOld { .. }) => {
                        log::warn!("the watch on {} cannot be kept: {e}", inner.path);
                        inner.tell(WatcherEvent::Failed(Error::ZooKeeper(e)));
                        inner.subscribers.lock().clear();
                        return;
                    }
                    Err(e) => {
                        log::debug!("the watch on {} is not in place yet: {e}", inner.path);
                        false
                    }
                }
            };
            if ok {
                due = false;
                pause = Duration::from_millis(50);
                inner.tell(WatcherEvent::Reset { new_session });
            } else {
                retry = crossbeam_channel::after(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
        crossbeam_channel::select! {
            recv(cancel) -> _ => break,
            recv(closed) -> _ => break,
            recv(nodes) -> ev => {
                if let Ok(WatchedEvent { event_type, path: Some(path), .. }) = ev {
                    if event_type != EventType::None {
                        inner.tell(WatcherEvent::Node { event_type, path });
                    }
                }
            }
            recv(states) -> st => match st {
                Ok(ConnectionState::Suspended | ConnectionState::Lost) => {
                    if connected {
                        inner.tell(WatcherEvent::Suspended);
                    }
                    connected = false;
                }
                Ok(_) => {
                    // A connection after a suspension (not the first one
                    // told again), or on a session the watch is not on.
                    due |= !connected || watch.map(|(_, g)| g) != Some(client.session_generation());
                    connected = true;
                }
                Err(_) => break,
            },
            recv(retry) -> _ => {}
        }
    }
    if let Some((id, _)) = watch {
        let bounded = client.with_deadline(Some(Instant::now() + Duration::from_secs(1)));
        if let Err(e) = bounded.remove_watch(id) {
            log::debug!("the watch on {} was not removed: {e}", inner.path);
        }
    }
}
