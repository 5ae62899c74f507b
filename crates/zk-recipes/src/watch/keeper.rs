//! The watch's state and the thread that keeps it in place: added, told,
//! added again after a reconnect or a new session, removed at close.

use crate::core::{Backoff, Lifecycle, Subscribers, Worker};
use crate::error::Error;
use crate::watch::event::WatcherEvent as Event;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use zk_framework::{AddWatchMode, WatchId};
use zk_framework::{CuratorFramework, EventType, KeeperState, WatchedEvent};

/// The watcher's state, behind the lock that orders what it tells.
pub(crate) struct State {
    pub(crate) subscribers: Subscribers<Event>,
    /// The cache's feed: each event with its number (see [`Shared::told`]).
    pub(crate) numbered: Subscribers<(u64, Event)>,
    /// The registration whose events are told (registrations are numbered
    /// from 1; the events of an older one are ignored).
    pub(crate) reg: u64,
    /// While a `Reset` waits for its proof (the new registration's
    /// `addWatch` returning; after a reconnect, an answer on the new
    /// connection, which the server gives after the watch it re-registers
    /// ahead of it): whether it is a new session's, and the registration's
    /// events meanwhile, told after it in their order.
    pub(crate) pending: Option<(bool, Vec<WatchedEvent>)>,
    /// The current registration's id, once added.
    pub(crate) id: Option<WatchId>,
    /// A `Reset` was told since the last `Suspended` (or the start).
    pub(crate) connected: bool,
    pub(crate) closed: bool,
}

/// What the watcher's thread is to do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
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
    pub(crate) fn tell(&mut self, told: &AtomicU64, ev: Event) {
        let n = told.fetch_add(1, Ordering::AcqRel) + 1;
        self.subscribers.tell(&ev);
        self.numbered.tell(&(n, ev));
    }

    pub(crate) fn suspend(&mut self, told: &AtomicU64) {
        if self.connected {
            self.connected = false;
            self.tell(told, Event::Suspended);
        }
    }

    /// Takes one event of the current registration: held while a `Reset`
    /// waits for its proof, told otherwise.
    pub(crate) fn take(&mut self, told: &AtomicU64, ev: WatchedEvent) -> Next {
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
                    self.tell(told, Event::Node { event_type, path });
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
    pub(crate) fn release(&mut self, told: &AtomicU64, proven: bool) -> Vec<Next> {
        let Some((new_session, held)) = self.pending.take() else {
            return Vec::new();
        };
        if proven {
            self.connected = true;
            self.tell(told, Event::Reset { new_session });
        }
        let mut out = Vec::new();
        for ev in held {
            if self.pending.is_none() && !self.connected && ev.event_type != EventType::None {
                self.connected = true;
                self.tell(told, Event::Reset { new_session });
            }
            out.push(self.take(told, ev));
        }
        out
    }

    /// Whether the connection went while a `Reset` waited for its proof.
    pub(crate) fn pending_lost(&self) -> bool {
        self.pending.as_ref().is_some_and(|(_, held)| {
            held.iter()
                .any(|e| e.event_type == EventType::None && e.state != KeeperState::SyncConnected)
        })
    }
}

/// What the watcher's handles, its thread and its registrations share.
pub(crate) struct Shared {
    pub(crate) client: CuratorFramework,
    pub(crate) path: String,
    pub(crate) recursive: bool,
    pub(crate) lifecycle: Lifecycle<Worker>,
    pub(crate) state: Mutex<State>,
    /// The number of events told so far (the last one's number). Raised on
    /// the client's I/O thread for the events it delivers, before they are
    /// sent: a reply read on that thread after it sees every event told
    /// before it.
    pub(crate) told: Arc<AtomicU64>,
}

/// The registration's callback: the client calls it on its I/O thread with
/// node events and session states in the order its connection brought them
/// (it only signals: a short lock, channel sends).
pub(crate) struct Sink {
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
pub(crate) enum AddFailed {
    /// Try again after a pause.
    Retry(zk_framework::Error),
    /// The watcher stops (told as `Failed`, or closed).
    Stop,
}

impl Shared {
    pub(crate) fn mode(&self) -> AddWatchMode {
        if self.recursive {
            AddWatchMode::PersistentRecursive
        } else {
            AddWatchMode::Persistent
        }
    }

    /// The bound of one request: the read timeout, at least a second.
    pub(crate) fn bounded(&self) -> CuratorFramework {
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
    pub(crate) fn add(
        self: &Arc<Self>,
        next: &Sender<(u64, Next)>,
    ) -> std::result::Result<(u64, Vec<Next>), AddFailed> {
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
        let generation = self.client.recipe().session_generation();
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
                st.tell(&self.told, Event::Failed(Error::ZooKeeper(e)));
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
    pub(crate) fn confirm(&self) -> Option<Vec<Next>> {
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
    pub(crate) fn close_until(&self, deadline: std::time::Instant) {
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
pub(crate) fn keep(shared: &Arc<Shared>, cancel: &Receiver<()>) {
    let client = &shared.client;
    let closed = client.recipe().close_signal();
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
                    add_due |= client.recipe().session_generation() != generation;
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
pub(crate) struct Handle(pub(crate) Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.close_until(std::time::Instant::now() + crate::core::STOP_BOUND);
    }
}
