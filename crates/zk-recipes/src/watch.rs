//! `PersistentWatcher`: a persistent (optionally recursive) watch on a path
//! (ZooKeeper 3.6+), kept through reconnects and added again on a new
//! session, with its events on a channel (Curator's `PersistentWatcher`).
//! It is the one module that keeps a persistent watch: a
//! [`crate::cache::CuratorCache`] is built on one.
//!
//! * **The client's order.** Node events and connection states are told in
//!   the one order the client delivered them on its connection: the
//!   watcher hears both from its registration (a persistent watch gets the
//!   session's states with its node events), on the client's I/O thread, and
//!   tells each at once. A [`WatcherEvent::Suspended`] is never told after a
//!   node event that came later, and a [`WatcherEvent::Reset`] comes before
//!   every node event of the connection it announces.
//! * **Resets.** The server keeps a persistent watch through a reconnect of
//!   the same session but announces nothing that changed while the
//!   connection was down, and a new session has no watch at all. So the
//!   channel says when the watch is in place again ([`WatcherEvent::Reset`],
//!   told once the server has proven it: the `addWatch` answered, or after a
//!   reconnect an answer on the new connection): whoever needs the changes
//!   made in between reads again then (a [`crate::cache::CuratorCache`]
//!   does this for you).
//! * **Closing** removes the watch from the server. On ZooKeeper 3.6-3.8
//!   that takes a `removeWatches` of type `Any`, which also takes this
//!   client's one-shot watches on the path; the client sets those again at
//!   once ([`zk_framework::Client::remove_watch`]), so a lock waiter or a
//!   barrier watching the same path of the same client still hears its
//!   change.
//!
//! Clones share one watcher; it closes at `close()` or when the last clone
//! is dropped.
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::{AddWatchMode, WatchId};
use zk_framework::{CuratorFramework, EventType, KeeperState, WatchedEvent};

use crate::core::{Backoff, Lifecycle, Subscribers, Worker};
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
    /// The watch is in place at the server: first when the server accepted
    /// the watch (at start, on a new session), then each time the client is
    /// connected again on the same session, once an answer on the new
    /// connection proves it (the client sets its watches again ahead of any
    /// other request there). Every change after it is announced; changes
    /// made while it was not in place were not, and a read sent after this
    /// event sees them. Node events the new connection brought while the
    /// proof was on its way are told after it, in their order.
    Reset {
        /// Whether the watch was added anew (at start, or on a new session)
        /// rather than kept by the server through a reconnect.
        new_session: bool,
    },
    /// The connection is down, or the session ended: nothing is announced
    /// until the next `Reset`.
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

/// The watcher's state, behind the lock that orders what it tells.
struct State {
    subscribers: Subscribers<WatcherEvent>,
    /// The cache's feed: each event with its number (see [`Shared::told`]).
    numbered: Subscribers<(u64, WatcherEvent)>,
    /// The registration whose events are told (registrations are numbered
    /// from 1; the events of an older one are ignored).
    reg: u64,
    /// While a `Reset` waits for its proof (the new registration's
    /// `addWatch` returning; after a reconnect, an answer on the new
    /// connection, which the server gives after the watch it re-registers
    /// ahead of it): whether it is a new session's, and the registration's
    /// events meanwhile, told after it in their order.
    pending: Option<(bool, Vec<WatchedEvent>)>,
    /// The current registration's id, once added.
    id: Option<WatchId>,
    /// A `Reset` was told since the last `Suspended` (or the start).
    connected: bool,
    closed: bool,
}

/// What the watcher's thread is to do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Nothing,
    /// The registration is gone (its session ended, its client closed):
    /// add another.
    Gone,
    /// Connected again: prove the watch is in place, then tell the `Reset`.
    Confirm,
}

impl State {
    /// Tells `ev` to every subscriber, numbered: called under the state's
    /// lock, so numbers and telling go in one order.
    fn tell(&mut self, told: &AtomicU64, ev: WatcherEvent) {
        let n = told.fetch_add(1, Ordering::AcqRel) + 1;
        self.subscribers.tell(&ev);
        self.numbered.tell(&(n, ev));
    }

    fn suspend(&mut self, told: &AtomicU64) {
        if self.connected {
            self.connected = false;
            self.tell(told, WatcherEvent::Suspended);
        }
    }

    /// Takes one event of the current registration: held while a `Reset`
    /// waits for its proof, told otherwise.
    fn take(&mut self, told: &AtomicU64, ev: WatchedEvent) -> Next {
        if let Some((_, held)) = self.pending.as_mut() {
            held.push(ev);
            return Next::Nothing;
        }
        match (ev.event_type, ev.state) {
            (EventType::None, KeeperState::Disconnected) => self.suspend(told),
            (EventType::None, KeeperState::SyncConnected | KeeperState::ConnectedReadOnly) => {
                if !self.connected {
                    self.pending = Some((false, Vec::new()));
                    return Next::Confirm;
                }
            }
            (EventType::None, KeeperState::Expired | KeeperState::Closed | KeeperState::AuthFailed) => {
                self.suspend(told);
                self.id = None;
                return Next::Gone;
            }
            // Our own removal, and states that change nothing.
            (EventType::None | EventType::PersistentWatchRemoved, _) => {}
            (event_type, _) => {
                if let Some(path) = ev.path {
                    self.tell(told, WatcherEvent::Node { event_type, path });
                }
            }
        }
        Next::Nothing
    }

    /// Ends the wait of a pending `Reset`: `proven`, it is told first; then
    /// the events held meanwhile are taken in their order (a node event
    /// among them proves the watch was in place on that connection: the
    /// `Reset` is told before it if it was not). What the thread is to do
    /// next.
    fn release(&mut self, told: &AtomicU64, proven: bool) -> Vec<Next> {
        let Some((new_session, held)) = self.pending.take() else {
            return Vec::new();
        };
        if proven {
            self.connected = true;
            self.tell(told, WatcherEvent::Reset { new_session });
        }
        let mut out = Vec::new();
        for ev in held {
            if self.pending.is_none() && !self.connected && ev.event_type != EventType::None {
                self.connected = true;
                self.tell(told, WatcherEvent::Reset { new_session });
            }
            out.push(self.take(told, ev));
        }
        out
    }

    /// Whether the connection went while a `Reset` waited for its proof.
    fn pending_lost(&self) -> bool {
        self.pending.as_ref().is_some_and(|(_, held)| {
            held.iter()
                .any(|e| e.event_type == EventType::None && e.state != KeeperState::SyncConnected)
        })
    }
}

/// What the watcher's handles, its thread and its registrations share.
struct Shared {
    client: CuratorFramework,
    path: String,
    recursive: bool,
    lifecycle: Lifecycle<Worker>,
    state: Mutex<State>,
    /// The number of events told so far (the last one's number). Raised on
    /// the client's I/O thread for the events it delivers, before they are
    /// sent: a reply read on that thread after it sees every event told
    /// before it.
    told: Arc<AtomicU64>,
}

/// The registration's callback: the client calls it on its I/O thread with
/// node events and session states in the order its connection brought them
/// (it only signals: a short lock, channel sends).
struct Sink {
    shared: Weak<Shared>,
    reg: u64,
    next: Sender<(u64, Next)>,
}

impl zk_framework::PersistentWatcher for Sink {
    fn process(&self, ev: WatchedEvent) {
        let Some(shared) = self.shared.upgrade() else { return };
        let mut st = shared.state.lock();
        if st.closed || st.reg != self.reg {
            return;
        }
        let next = st.take(&shared.told, ev);
        if next != Next::Nothing {
            let _ = self.next.try_send((self.reg, next));
        }
    }

    fn only_signals(&self) -> bool {
        true
    }
}

/// Why an `addWatch` did not leave a watch.
enum AddFailed {
    /// Try again after a pause.
    Retry(zk_framework::Error),
    /// The watcher stops (told as `Failed`, or closed).
    Stop,
}

impl Shared {
    fn mode(&self) -> AddWatchMode {
        if self.recursive {
            AddWatchMode::PersistentRecursive
        } else {
            AddWatchMode::Persistent
        }
    }

    /// The bound of one request: the read timeout, at least a second.
    fn bounded(&self) -> CuratorFramework {
        let read = self
            .client
            .negotiated_session_timeout()
            .map_or(self.client.connection_timeout(), |t| t * 2 / 3)
            .max(Duration::from_secs(1));
        self.client.with_deadline(Some(Instant::now() + read))
    }

    /// Adds a new registration (on the client's current session); tells its
    /// `Reset` and what it heard meanwhile. Returns the session generation
    /// it was added on, and what to do next.
    fn add(self: &Arc<Self>, next: &Sender<(u64, Next)>) -> std::result::Result<(u64, Vec<Next>), AddFailed> {
        let (reg, old) = {
            let mut st = self.state.lock();
            if st.closed {
                return Err(AddFailed::Stop);
            }
            // The registration before it (of a session that ended) is done.
            st.suspend(&self.told);
            st.reg += 1;
            st.pending = Some((true, Vec::new()));
            (st.reg, st.id.take())
        };
        if let Some(old) = old {
            // Gone with its session's handle, as a rule (then this is a
            // no-op); removed when it is still this client's.
            let _ = self.bounded().remove_watch(old);
        }
        let sink = Sink {
            shared: Arc::downgrade(self),
            reg,
            next: next.clone(),
        };
        let added = self.bounded().add_watch(&self.path, self.mode(), sink);
        // Read after the call, which may have waited for a new session: the
        // registration is on this one or an older one (whose end is told by
        // the registration itself).
        let generation = self.client.session_generation();
        let mut st = self.state.lock();
        match added {
            Ok(id) if !st.closed && st.reg == reg => {
                st.id = Some(id);
                Ok((generation, st.release(&self.told, true)))
            }
            Ok(id) => {
                // Closed while it was added.
                drop(st);
                let _ = self.bounded().remove_watch(id);
                Err(AddFailed::Stop)
            }
            Err(e @ zk_framework::Error::ServerTooOld { .. }) => {
                log::warn!("the watch on {} cannot be kept: {e}", self.path);
                st.pending = None;
                st.tell(&self.told, WatcherEvent::Failed(Error::ZooKeeper(e)));
                st.subscribers.close();
                st.numbered.close();
                Err(AddFailed::Stop)
            }
            Err(e) => {
                st.pending = None;
                Err(AddFailed::Retry(e))
            }
        }
    }

    /// Proves the re-registered watch is in place after a reconnect (an
    /// answer on the connection comes after it) and tells its `Reset`;
    /// `None` when the proof is still to come (the read failed while
    /// connected: again after a pause), else what to do next.
    fn confirm(&self) -> Option<Vec<Next>> {
        let answered = self.bounded().check_exists(&self.path);
        let mut st = self.state.lock();
        if st.closed || !st.pending.as_ref().is_some_and(|(new, _)| !new) {
            return Some(Vec::new());
        }
        if st.pending_lost() {
            // The connection went meanwhile: an answer proves nothing about
            // it (the read may have been sent again on the next one). Its
            // node events, if any, still prove the watch was there.
            log::debug!("the watch on {} is not confirmed: the connection went", self.path);
            return Some(st.release(&self.told, false));
        }
        match answered {
            Ok(_) => Some(st.release(&self.told, true)),
            Err(e) => {
                log::debug!("the watch on {} is not confirmed yet: {e}", self.path);
                None
            }
        }
    }

    /// Closes for every handle: the thread ends (within the stop bound) and
    /// removes the watch; the channels end once read.
    /// Closes, waiting for the thread until `deadline` at most.
    fn close_until(&self, deadline: std::time::Instant) {
        {
            let mut st = self.state.lock();
            st.closed = true;
            st.subscribers.close();
            st.numbered.close();
        }
        if let Some(w) = self.lifecycle.close() {
            w.stop_until(deadline);
        }
    }
}

/// The watcher's thread: adds the watch, proves it in place after each
/// reconnect, adds it again when its session ended (with the kit's backoff
/// after a failure), and removes it at the end.
fn keep(shared: &Arc<Shared>, cancel: &Receiver<()>) {
    let client = &shared.client;
    let closed = client.close_signal();
    // Only to notice a new session at once (the old registration's own end
    // comes when the framework closes the old handle): nothing is told from
    // these.
    let states = client.state_receiver();
    let (next_tx, next) = crossbeam_channel::unbounded::<(u64, Next)>();
    let mut backoff = Backoff::new();
    let (mut add_due, mut confirm_due) = (true, false);
    let mut generation = 0;
    let mut retry_at: Option<Instant> = None;
    let follow = |todo: Vec<Next>, add_due: &mut bool, confirm_due: &mut bool| {
        for n in todo {
            match n {
                Next::Gone => *add_due = true,
                Next::Confirm => *confirm_due = true,
                Next::Nothing => {}
            }
        }
    };
    loop {
        if retry_at.map_or(true, |t| Instant::now() >= t) {
            retry_at = None;
            if add_due {
                confirm_due = false;
                match shared.add(&next_tx) {
                    Ok((g, todo)) => {
                        generation = g;
                        add_due = false;
                        backoff.reset();
                        follow(todo, &mut add_due, &mut confirm_due);
                        continue;
                    }
                    Err(AddFailed::Stop) => break,
                    Err(AddFailed::Retry(e)) => {
                        let pause = backoff.next();
                        log::debug!(
                            "the watch on {} is not in place yet ({e}); again in {pause:?}",
                            shared.path
                        );
                        retry_at = Some(Instant::now() + pause);
                    }
                }
            } else if confirm_due {
                match shared.confirm() {
                    Some(todo) => {
                        confirm_due = false;
                        backoff.reset();
                        follow(todo, &mut add_due, &mut confirm_due);
                        continue;
                    }
                    None => retry_at = Some(Instant::now() + backoff.next()),
                }
            }
        }
        let timer = retry_at.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(cancel) -> _ => break,
            recv(closed) -> _ => break,
            recv(next) -> n => {
                if let Ok((reg, n)) = n {
                    if reg == shared.state.lock().reg {
                        follow(vec![n], &mut add_due, &mut confirm_due);
                    }
                }
            }
            recv(states) -> st => match st {
                Ok(s) if s.is_connected() => {
                    add_due |= client.session_generation() != generation;
                }
                Ok(_) => {}
                Err(_) => break,
            },
            recv(timer) -> _ => {}
        }
    }
    let id = shared.state.lock().id.take();
    if let Some(id) = id {
        if let Err(e) = shared.bounded().remove_watch(id) {
            log::debug!("the watch on {} was not removed: {e}", shared.path);
        }
    }
}

/// Closes the watcher when the last clone goes.
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.close_until(std::time::Instant::now() + crate::core::STOP_BOUND);
    }
}

/// A persistent watch kept through reconnects and new sessions; see the
/// [module doc](self). Clones share this watcher; it closes at `close()` or
/// when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
/// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/config", false)?;
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
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
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
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
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
    /// let w = zk_recipes::watch::PersistentWatcher::new(&client, "/a", true)?;
    /// assert_eq!(w.path(), "/a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.shared().path
    }
}
