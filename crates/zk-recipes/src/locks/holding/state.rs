//! A holding's truth: its status (held, uncertain, lost, released), drawn
//! from its session, its connection's state and health, its connection epoch
//! and its node, and the events that tell each change to its subscribers (a
//! loss channel, or a multi-lock's set), in order, under one lock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use crossbeam_channel::Sender;
use parking_lot::Mutex;
use zk_framework::ConnectionState;
use zk_framework::SessionHealth;
use zk_framework::{CuratorFramework, ListenerHandle};

use crate::error::{Error, Result};
use crate::locks::stats::{LossCause, PathStats};

/// What a lock holder hears about its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockEvent {
    /// The lock may be lost: the connection was lost or is read-only, or no
    /// request has been answered for a read timeout. Sent at the moment
    /// [`Holding::check`](super::Holding::check) first fails. Stop work that needs exclusion until
    /// `Reconnected`; the lock is still certainly held until
    /// [`Holding::safe_until`](super::Holding::safe_until).
    Suspended,
    /// The safe horizon ([`Holding::safe_until`](super::Holding::safe_until)) has passed while the lock
    /// was uncertain: the server may have expired the session, and another
    /// may hold the lock now. `Reconnected` (the session survived) or `Lost`
    /// follows.
    HorizonPassed,
    /// The connection is back on the same session and answering, and the
    /// server has answered, since it came back, that the lock node is still
    /// there and ours: the lock is still held. (A reconnect alone is never
    /// told as `Reconnected`: a node deleted while the connection was down
    /// gives `Lost` instead, without a `Reconnected` before it.)
    Reconnected,
    /// The lock is certainly lost: the session expired or was replaced, or the
    /// lock node was deleted.
    Lost,
}

/// Whether a held lock is still held, as far as this process can know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockStatus {
    /// Held: connected on the session that created the lock node, and the node
    /// has not been seen deleted; after a reconnect, only once the server has
    /// shown the node still there.
    Held,
    /// Uncertain: the connection is suspended or read-only, or no request has
    /// been answered for a read timeout, or the connection came back and the
    /// server has not yet answered whether the node is still there; the
    /// session may still be alive.
    Uncertain,
    /// Lost for certain.
    Lost,
}

pub(crate) const HELD: u8 = 0;
pub(crate) const UNCERTAIN: u8 = 1;
pub(crate) const LOST: u8 = 2;
pub(super) const RELEASED: u8 = 3;

/// One granted node.
pub(crate) struct HoldState {
    /// Itself (for its client's executor).
    pub(super) me: Weak<HoldState>,
    pub(super) client: CuratorFramework,
    /// The lock's base path (for errors).
    pub(super) base: String,
    /// Our node's full user path.
    pub(super) node: String,
    /// A second node released together with this one (the semaphore mutex's
    /// internal lock node).
    pub(super) companion: Option<String>,
    pub(super) token: i64,
    pub(super) generation: u64,
    /// The session that owns the node.
    pub(super) session_id: i64,
    /// The latest connection epoch in which the server showed the node
    /// present and ours ([`Recipe::connection_epoch`](zk_framework::recipe::Recipe::connection_epoch)): the holding
    /// is held only while this is the client's epoch.
    pub(super) proven: AtomicU64,
    /// The proof asked for, if any.
    pub(super) proof: Mutex<ProofAsk>,
    pub(super) status: AtomicU8,
    pub(super) subscribers: Mutex<Vec<Subscriber>>,
    /// The connection-state and session-health listeners.
    pub(super) listeners: Mutex<Vec<ListenerHandle>>,
    /// Whether `HorizonPassed` was told in the current uncertain spell.
    pub(super) horizon_told: AtomicBool,
    /// How long a release waits for its delete (`0`: the default rule).
    pub(super) release_bound_ms: std::sync::atomic::AtomicU64,
    pub(super) watching: AtomicBool,
    /// The path's counters, when this holding is counted.
    pub(super) stats: Option<Arc<PathStats>>,
    pub(super) granted_at: Instant,
    /// Why it was lost, once lost.
    pub(super) loss_cause: Mutex<Option<LossCause>>,
}

impl HoldState {
    /// The lock is lost for certain, for `cause` (a closed client's, when the
    /// client was closed: closing deletes the node and ends the session).
    pub(crate) fn lose(&self, cause: LossCause) {
        let cause = if self.client.is_closed() {
            LossCause::ClientClosed
        } else {
            cause
        };
        self.publish_with(LockEvent::Lost, Some(cause));
    }

    /// Why our node is gone when it is seen gone: with its session when the
    /// client has moved to a newer one (a watch re-registered on the new
    /// session reports the expired session's node deleted), else deleted by
    /// someone.
    pub(super) fn deletion_cause(&self) -> LossCause {
        if self.client.recipe().session_generation() != self.generation {
            LossCause::SessionExpired
        } else {
            LossCause::NodeDeleted
        }
    }

    pub(super) fn publish(&self, ev: LockEvent) {
        debug_assert!(ev != LockEvent::Lost, "a loss has a cause: use lose()");
        self.publish_with(ev, None);
    }

    /// Tells that the horizon passed, once per uncertain spell (the status
    /// stays uncertain).
    pub(super) fn horizon_passed(&self) {
        let mut subs = self.subscribers.lock();
        if self.status.load(Ordering::SeqCst) != UNCERTAIN || self.horizon_told.swap(true, Ordering::SeqCst) {
            return;
        }
        send_all(&mut subs, LockEvent::HorizonPassed);
    }

    /// Changes the status and tells the subscribers, under their lock, so
    /// that events from different threads (connection states, session
    /// health, own-node watch, a caller's `check()`) reach them in the order
    /// of the changes.
    pub(super) fn publish_with(&self, ev: LockEvent, cause: Option<LossCause>) {
        let new = match ev {
            LockEvent::Suspended => UNCERTAIN,
            LockEvent::Reconnected => HELD,
            LockEvent::Lost => LOST,
            LockEvent::HorizonPassed => return self.horizon_passed(),
        };
        let mut subs = self.subscribers.lock();
        // Held again only on a look taken now, under the lock every change is
        // told under: a look taken before a `Suspended` that another thread
        // told meanwhile (a caller preempted between its look and this) must
        // not undo it.
        if ev == LockEvent::Reconnected && !self.trusted() {
            return;
        }
        let mut cur = self.status.load(Ordering::SeqCst);
        loop {
            // Lost and released are final.
            if cur == LOST || cur == RELEASED || cur == new {
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
        if ev == LockEvent::Reconnected {
            self.horizon_told.store(false, Ordering::SeqCst);
        }
        if ev == LockEvent::Lost {
            log::warn!("the lock node {} was lost", self.node);
            *self.loss_cause.lock() = Some(cause.unwrap_or(LossCause::SessionExpired));
            // The holding ends here (from held or uncertain): exactly once.
            if let Some(stats) = &self.stats {
                stats.ended(
                    self.granted_at.elapsed(),
                    Some(cause.unwrap_or(LossCause::SessionExpired)),
                );
            }
        }
        send_all(&mut subs, ev);
    }

    /// The instant until which the lock is certainly held (`None`: lost or
    /// released).
    pub(super) fn safe_until(&self) -> Option<Instant> {
        if matches!(self.status.load(Ordering::SeqCst), LOST | RELEASED)
            || self.client.recipe().session_generation() != self.generation
        {
            return None;
        }
        self.client.session_horizon()
    }

    pub(super) fn status(&self) -> LockStatus {
        match self.status.load(Ordering::SeqCst) {
            LOST | RELEASED => return LockStatus::Lost,
            _ => {}
        }
        if self.client.recipe().session_generation() != self.generation {
            self.lose(LossCause::SessionExpired);
            return LockStatus::Lost;
        }
        if self.client.is_closed() {
            self.lose(LossCause::ClientClosed);
            return LockStatus::Lost;
        }
        // The state machine may be ahead of the listener dispatch.
        let suspended = match self.client.state() {
            Some(ConnectionState::Lost | ConnectionState::AuthFailed) => {
                self.lose(LossCause::SessionExpired);
                return LockStatus::Lost;
            }
            Some(ConnectionState::Suspended | ConnectionState::ReadOnly) => true,
            _ => false,
        };
        // A process that was paused may not have noticed yet that its
        // connection died: no request answered that was sent within a read
        // timeout is uncertain. (Counting any byte received would be fooled
        // by replies read late, on resuming, to pings sent before the pause.)
        // Past the horizon (whatever the margin) the health is `PastHorizon`.
        let health = self.client.session_health();
        if suspended || health != SessionHealth::Confirmed {
            // Tell subscribers now, not only when a listener runs.
            self.publish(LockEvent::Suspended);
            if health == SessionHealth::PastHorizon {
                self.horizon_passed();
            }
            return LockStatus::Uncertain;
        }
        // Connected and answering: held only in an epoch in which the server
        // has shown the node still there (read after the state, which a
        // reconnect changes after the epoch). A reconnect alone proves
        // nothing: ask, and stay uncertain until the answer.
        let epoch = self.client.recipe().connection_epoch();
        if self.proven.load(Ordering::SeqCst) != epoch {
            self.publish(LockEvent::Suspended);
            self.ask_proof(epoch);
            return LockStatus::Uncertain;
        }
        // Proven in the current epoch: held (a change is told here, by
        // whichever thread sees it first), unless the status is final.
        if self.status.load(Ordering::SeqCst) == UNCERTAIN {
            self.publish(LockEvent::Reconnected);
        }
        match self.status.load(Ordering::SeqCst) {
            HELD => LockStatus::Held,
            UNCERTAIN => LockStatus::Uncertain,
            _ => LockStatus::Lost,
        }
    }

    /// Whether everything that makes the holding held holds now (no side
    /// effect): the same session, not closed, connected and not read-only,
    /// answering, and proven in the current connection epoch.
    pub(super) fn trusted(&self) -> bool {
        self.client.recipe().session_generation() == self.generation
            && !self.client.is_closed()
            && !matches!(
                self.client.state(),
                Some(
                    ConnectionState::Lost
                        | ConnectionState::AuthFailed
                        | ConnectionState::Suspended
                        | ConnectionState::ReadOnly
                )
            )
            && self.client.session_health() == SessionHealth::Confirmed
            && self.proven.load(Ordering::SeqCst) == self.client.recipe().connection_epoch()
    }

    pub(super) fn check(&self) -> Result<()> {
        match self.status() {
            LockStatus::Lost => {
                return Err(Error::LockLost {
                    path: self.base.clone(),
                })
            }
            LockStatus::Uncertain => {
                return Err(Error::LockUncertain {
                    path: self.base.clone(),
                })
            }
            // Uncertain from the horizon on, whatever the margin: see `status()`.
            LockStatus::Held => {}
        }
        Ok(())
    }

    pub(super) fn subscribe_with(&self, sub: Subscriber) {
        // `status()` may publish, which takes the subscriber lock: ask first.
        let _ = self.status();
        let mut subs = self.subscribers.lock();
        // Read again under the lock: every change after this read is
        // published under it, after `sub` is in the list.
        match self.status.load(Ordering::SeqCst) {
            RELEASED => {} // `sub` is dropped: the channel has ended
            LOST => {
                sub.send(LockEvent::Lost);
                subs.push(sub);
            }
            raw => {
                if raw == UNCERTAIN {
                    sub.send(LockEvent::Suspended);
                    if self.horizon_told.load(Ordering::SeqCst) {
                        sub.send(LockEvent::HorizonPassed);
                    }
                }
                subs.push(sub);
            }
        }
    }

    /// Marks the holding released (unless it was lost): from now on the
    /// deletion of its node is not a loss. Ends the loss channels. Returns
    /// whether it had been lost.
    pub(super) fn mark_released(&self) -> bool {
        // Take the last look first: a lost session must not read as released.
        let lost = self.status() == LockStatus::Lost;
        let prev = self.status.swap(RELEASED, Ordering::SeqCst);
        if prev == HELD || prev == UNCERTAIN {
            if let Some(stats) = &self.stats {
                stats.ended(self.granted_at.elapsed(), None);
            }
        }
        self.subscribers.lock().clear();
        self.listeners.lock().clear();
        lost || prev == LOST
    }
}

/// Someone told of a holding's events: a loss channel, or a multi-lock's set,
/// which tells its own channel once per change of the whole set.
pub(super) enum Subscriber {
    Channel(Sender<LockEvent>),
    Set(Arc<SetEvents>),
    /// A signal run under the subscriber lock (see
    /// [`Holding::subscribe_signal`](super::Holding::subscribe_signal)).
    Signal(Arc<dyn Fn(LockEvent) -> bool + Send + Sync>),
}

impl Subscriber {
    /// Tells `ev`; `false` when the subscriber is gone.
    fn send(&self, ev: LockEvent) -> bool {
        match self {
            Subscriber::Channel(tx) => tell(tx, ev),
            Subscriber::Set(set) => set.member_changed(ev),
            Subscriber::Signal(f) => f(ev),
        }
    }
}

/// Sends without blocking (a full channel drops the event); `false` when the
/// receiver is gone.
fn tell(tx: &Sender<LockEvent>, ev: LockEvent) -> bool {
    !matches!(tx.try_send(ev), Err(crossbeam_channel::TrySendError::Disconnected(_)))
}

fn send_all(subs: &mut Vec<Subscriber>, ev: LockEvent) {
    subs.retain(|s| s.send(ev));
}

/// A multi-lock's loss channel: the set is as held as its worst member, and
/// its channel hears each change of that once, not once per member.
pub(super) struct SetEvents {
    pub(super) members: Vec<Weak<HoldState>>,
    pub(super) tx: Sender<LockEvent>,
    /// What the channel was last told: the set's status and whether the
    /// horizon passed in this uncertain spell.
    pub(super) told: Mutex<(u8, bool)>,
}

impl SetEvents {
    /// The worst status among the members still held or lost (released ones
    /// are leaving the set).
    fn worst(&self) -> u8 {
        self.members
            .iter()
            .filter_map(Weak::upgrade)
            .map(|m| m.status.load(Ordering::SeqCst))
            .filter(|s| *s != RELEASED)
            .max()
            .unwrap_or(HELD)
    }

    fn member_changed(&self, ev: LockEvent) -> bool {
        let mut told = self.told.lock();
        let worst = self.worst();
        let send = |e| tell(&self.tx, e);
        let mut alive = true;
        if worst != told.0 {
            let e = match worst {
                LOST => LockEvent::Lost,
                UNCERTAIN => LockEvent::Suspended,
                _ => LockEvent::Reconnected,
            };
            if worst == HELD {
                told.1 = false;
            }
            told.0 = worst;
            alive = send(e);
        }
        if ev == LockEvent::HorizonPassed && worst == UNCERTAIN && !told.1 {
            told.1 = true;
            alive = send(LockEvent::HorizonPassed);
        }
        alive
    }
}

/// A holding's proof asked for: the epoch (`None`: none), and whether its
/// request was sent (its answer is awaited) or waits for the executor.
#[derive(Default, Clone, Copy)]
pub(super) struct ProofAsk {
    pub(super) asked: Option<u64>,
    pub(super) sent: bool,
}
