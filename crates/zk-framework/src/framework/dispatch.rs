//! The dispatch thread: connection states reach listeners one at a time, in
//! order, never on the I/O, event or session thread. Subscribers' channels
//! get them straight from the session thread (a send never blocks).
//!
//! The thread exists only while there is something to tell: a state change
//! with listeners registered starts it, and it ends once it has had nothing to
//! do for [`IDLE`], so an idle client, or one whose connection never changes,
//! runs no dispatch thread.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::state::ConnectionState;

/// A listener for connection-state changes. It runs on the client's dispatch
/// thread, in order, never on the I/O or event thread, and may call the client.
pub type StateListener = dyn Fn(ConnectionState) + Send + Sync + 'static;

/// How long the dispatch thread waits for another state before it ends.
const IDLE: Duration = Duration::from_secs(1);

/// The state listeners of a client, each with the id of its [`ListenerHandle`].
pub(super) type Listeners = Mutex<Vec<(u64, Arc<StateListener>)>>;

/// What the dispatch thread and a [`ListenerHandle`] need of the client they
/// work for (the managed client's shared state): held weakly, so that neither
/// keeps the client alive.
pub(super) trait Owner: Send + Sync {
    /// Whether the client has been closed.
    fn is_closed(&self) -> bool;
    /// The state listeners registered now.
    fn listeners(&self) -> Vec<Arc<StateListener>>;
    /// Unregisters the listener (of states or of health) with this id.
    fn remove_listener(&self, id: u64);
}

#[derive(Default)]
struct Queue {
    states: VecDeque<ConnectionState>,
    /// Whether a dispatch thread is running (it clears this under the lock as
    /// it ends, so a state queued later starts a new one).
    running: bool,
    /// The last dispatch thread started, for `close()` to join.
    thread: Option<JoinHandle<()>>,
}

/// The queue between the session thread and the dispatch thread.
#[derive(Default)]
pub(super) struct Dispatch {
    shared: Arc<(Mutex<Queue>, Condvar)>,
    /// The client it works for (set once built).
    owner: Mutex<Option<Weak<dyn Owner>>>,
}

impl Dispatch {
    /// Tells the queue which client it works for; no thread starts yet.
    pub(super) fn attach(&self, owner: Weak<impl Owner + 'static>) {
        *self.owner.lock() = Some(owner);
    }

    /// Hands `states` to the `subscribers` at once and to the `listeners`
    /// through the dispatch thread, starting it if none runs.
    pub(super) fn post(
        &self,
        states: &[ConnectionState],
        subscribers: &Mutex<Vec<Sender<ConnectionState>>>,
        listeners: &Listeners,
    ) {
        if states.is_empty() {
            return;
        }
        let (lock, cv) = &*self.shared;
        let mut q = lock.lock();
        // Under the queue's lock, so that two posts reach everyone in one order.
        subscribers
            .lock()
            .retain(|tx| states.iter().all(|s| tx.send(*s).is_ok()));
        if listeners.lock().is_empty() {
            return;
        }
        q.states.extend(states.iter().copied());
        if q.running {
            cv.notify_all();
            return;
        }
        let shared = self.shared.clone();
        let weak = self.owner.lock().clone();
        match std::thread::Builder::new()
            .name("zk-framework-states".into())
            .spawn(move || dispatch_loop(weak.as_ref(), &shared))
        {
            Ok(t) => {
                q.running = true;
                q.thread = Some(t);
            }
            Err(e) => {
                // Tell the listeners here rather than never.
                log::error!("cannot start the connection-state dispatch thread: {e}");
                let pending: Vec<_> = q.states.drain(..).collect();
                drop(q);
                for s in pending {
                    run_listeners(&snapshot(listeners), s);
                }
            }
        }
    }

    /// Wakes the dispatch thread so that it ends (after telling what is queued)
    /// and joins it, unless called from it.
    pub(super) fn stop(&self) {
        let (lock, cv) = &*self.shared;
        let t = {
            let mut q = lock.lock();
            cv.notify_all();
            q.thread.take()
        };
        if let Some(t) = t {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// The registration of a connection-state listener (from
/// [`CuratorFramework::add_listener`](super::CuratorFramework::add_listener)). Dropping it unsubscribes the listener at
/// once, so keep it as long as the listener should run, or call
/// [`ListenerHandle::detach`] to keep the listener for the client's lifetime.
///
/// `let _ = client.add_listener(..)` drops the handle on the spot: the listener
/// never runs. Bind it to a named variable (`let _states = ...`) or detach it.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let handle = client.add_listener(|s| println!("state {s}"));
/// // ... the listener runs while `handle` lives ...
/// drop(handle); // unsubscribed
/// client.add_listener(|s| println!("for good: {s}")).detach();
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[must_use = "dropping a ListenerHandle unsubscribes its listener at once (`let _ = ...` drops it); \
              keep the handle, or call `.detach()` to keep the listener for the client's lifetime"]
pub struct ListenerHandle {
    id: u64,
    /// `None` once detached.
    owner: Option<Weak<dyn Owner>>,
}

impl ListenerHandle {
    pub(super) fn new(id: u64, owner: Weak<impl Owner + 'static>) -> ListenerHandle {
        ListenerHandle { id, owner: Some(owner) }
    }

    /// Keeps the listener registered for the client's lifetime: it runs until
    /// the client (every clone of it) is gone, and can no longer be removed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// client.add_listener(|s| log::info!("connection state: {s}")).detach();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn detach(mut self) {
        // With no client to upgrade to, the drop below removes nothing.
        self.owner = None;
    }
}

impl fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerHandle").field("id", &self.id).finish()
    }
}

impl Drop for ListenerHandle {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.as_ref().and_then(Weak::upgrade) {
            owner.remove_listener(self.id);
        }
    }
}

fn dispatch_loop(weak: Option<&Weak<dyn Owner>>, shared: &(Mutex<Queue>, Condvar)) {
    let upgrade = || weak.and_then(Weak::upgrade);
    let (lock, cv) = shared;
    loop {
        let state = {
            let mut q = lock.lock();
            loop {
                if let Some(s) = q.states.pop_front() {
                    break s;
                }
                let owner = upgrade();
                if owner.as_ref().map_or(true, |o| o.is_closed()) {
                    q.running = false;
                    drop(q);
                    return;
                }
                // Never hold the client while waiting (its last handle going
                // closes it), nor drop it under the queue's lock.
                MutexGuard::unlocked(&mut q, || drop(owner));
                if !q.states.is_empty() {
                    continue;
                }
                if cv.wait_for(&mut q, IDLE).timed_out() && q.states.is_empty() {
                    q.running = false;
                    return;
                }
            }
        };
        let Some(owner) = upgrade() else {
            lock.lock().running = false;
            return;
        };
        let listeners = owner.listeners();
        drop(owner);
        run_listeners(&listeners, state);
    }
}

/// The listeners registered now.
pub(super) fn snapshot(listeners: &Listeners) -> Vec<Arc<StateListener>> {
    listeners.lock().iter().map(|(_, l)| l.clone()).collect()
}

fn run_listeners(listeners: &[Arc<StateListener>], state: ConnectionState) {
    for l in listeners {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(state))).is_err() {
            log::error!("a connection-state listener panicked on {state}");
        }
    }
}
