//! What a participant knows about its leadership, kept in one place for the
//! latch and the selector: the holding of its node while it leads, the
//! three-valued status drawn from that holding, and the events that tell
//! each change, in order, under one lock.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::holding::{Holding, LockStatus};
use crate::locks::internals::LockInternals;
use crate::locks::stats::LossCause;
use crate::locks::transaction::GuardedTransaction;

/// Whether this participant leads, as far as this process can know.
///
/// # Examples
///
/// ```
/// use zk_recipes::LeaderStatus;
/// assert!(LeaderStatus::Leader.is_leader());
/// assert!(!LeaderStatus::Uncertain.is_leader());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaderStatus {
    /// Certainly the leader: our node is first, it belongs to our current
    /// session, and the connection is up and answering.
    Leader,
    /// Perhaps the leader: we were, and the connection is suspended or
    /// read-only, or nothing was heard from the server for a read timeout
    /// (the rule the locks' `check()` uses). Only with
    /// [`SuspendPolicy::Session`]; the standard policy gives leadership up
    /// instead.
    Uncertain,
    /// Not the leader.
    NotLeader,
}

impl LeaderStatus {
    /// Whether this is [`LeaderStatus::Leader`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::LeaderStatus::NotLeader.is_leader());
    /// ```
    pub fn is_leader(self) -> bool {
        self == LeaderStatus::Leader
    }
}

/// Why a leadership ended (or, for a participant that never led, why it is
/// not the leader).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotLeaderReason {
    /// The connection was suspended or read-only, or the server was silent
    /// for a read timeout, and the policy is [`SuspendPolicy::Standard`]: the
    /// leadership was given up at once (the node is kept; it leads again if
    /// the session survives and the node is still first).
    Suspended,
    /// The session expired or was replaced: the node went with it.
    SessionExpired,
    /// Our node was deleted by someone else (an operator, `zk-lock break`).
    NodeDeleted,
    /// This participant stepped down ([`resign`](super::LeaderLatch::resign)
    /// or a hand-off).
    Resigned,
    /// This participant was closed (reported only by a latch with
    /// [`CloseMode::NotifyLeader`](super::CloseMode::NotifyLeader)).
    Closed,
    /// The client was closed.
    ClientClosed,
    /// A selector's leadership was interrupted
    /// ([`interrupt_leadership`](super::LeaderSelector::interrupt_leadership)).
    Interrupted,
    /// A selector's work returned (or panicked): its leadership ends with it.
    Finished,
}

/// A change of leadership, as a participant hears it: in the order the
/// changes happened, from the moment each happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaderEvent {
    /// Certainly the leader now (elected, or certain again after an
    /// uncertain spell or a suspension), in the leadership with this term.
    Leader {
        /// The leadership's fencing term (its node's czxid).
        term: i64,
    },
    /// Perhaps no longer the leader (see [`LeaderStatus::Uncertain`]): stop
    /// work that needs a single leader until `Leader` or `NotLeader` follows.
    Uncertain,
    /// Certainly not the leader any more.
    NotLeader {
        /// Why.
        reason: NotLeaderReason,
    },
}

/// What a leader does when its connection is suspended: Curator's two
/// connection-state error policies, as one setting.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::SuspendPolicy::default(), zk_recipes::SuspendPolicy::Standard);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SuspendPolicy {
    /// Give leadership up at once (Curator's
    /// `StandardConnectionStateErrorPolicy`, the default): a suspension
    /// ends the leadership (`NotLeader { reason: Suspended }`); the node is
    /// kept, and if the session survives and the node is still first the
    /// participant leads again, in the same term. Never two leaders, at the
    /// price of a leadership change at every blip.
    #[default]
    Standard,
    /// Stay leader, uncertain, until the session is known lost (Curator's
    /// `SessionConnectionStateErrorPolicy`): a suspension makes the status
    /// [`LeaderStatus::Uncertain`] and `check()` fail, and a reconnection on
    /// the same session makes it `Leader` again without a change of leader.
    Session,
}

/// The checks every election's path gets (a latch's, a selector's, an
/// observer's): ZooKeeper's path rules (`InvalidPath`), and not the root.
pub(crate) fn check_election_path(path: &str) -> Result<()> {
    zk_framework::proto::path::validate_path(path, false).map_err(zk_framework::Error::from)?;
    if path == "/" {
        return Err(Error::InvalidArgument(
            "an election cannot live at the root path".into(),
        ));
    }
    Ok(())
}

pub(crate) use crate::core::Stage as Lifecycle;

/// One participant's leadership.
pub struct Election {
    /// The recipe's type (`"LeaderLatch"`, `"LeaderSelector"`), for its
    /// errors.
    recipe: &'static str,
    pub(crate) client: CuratorFramework,
    /// The election path (the client's, without its namespace).
    pub(crate) path: String,
    pub(crate) internals: LockInternals,
    /// The participant id (the node's data).
    pub(crate) id: String,
    policy: SuspendPolicy,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    lifecycle: Lifecycle,
    status: LeaderStatus,
    /// Why the status is `NotLeader` (when a leadership ended): a standard
    /// suspension followed by the loss of the node is told twice.
    reason: Option<NotLeaderReason>,
    /// The current leadership's holding (kept through a standard-policy
    /// suspension: the node is still ours).
    holding: Option<Holding>,
    subscribers: Vec<Sender<LeaderEvent>>,
    /// How many events were published (told to every subscriber) so far.
    published: u64,
    /// The latest failure of the participant's thread (cleared at its next
    /// success): what `await` reports instead of waiting on.
    error: Option<Error>,
}

impl Election {
    pub(crate) fn new(
        recipe: &'static str,
        client: &CuratorFramework,
        path: &str,
        internals: LockInternals,
        id: String,
        policy: SuspendPolicy,
    ) -> Arc<Election> {
        Arc::new(Election {
            recipe,
            client: client.clone(),
            path: path.to_string(),
            internals,
            id,
            policy,
            state: Mutex::new(State {
                lifecycle: Lifecycle::New,
                status: LeaderStatus::NotLeader,
                reason: None,
                holding: None,
                subscribers: Vec::new(),
                published: 0,
                error: None,
            }),
            changed: Condvar::new(),
        })
    }

    pub(crate) fn lifecycle(&self) -> Lifecycle {
        self.state.lock().lifecycle
    }

    /// `Ok` while started; [`Error::NotStarted`] before, and
    /// [`Error::Closed`] after `close()`: the one lifecycle check of
    /// every call that needs a started participant.
    pub(crate) fn require_started(&self) -> Result<()> {
        self.started_in(self.state.lock().lifecycle)
    }

    fn started_in(&self, lifecycle: Lifecycle) -> Result<()> {
        lifecycle.check(self.recipe, &self.path)
    }

    /// New to started; the error says why not.
    pub(crate) fn start(&self) -> Result<()> {
        self.state.lock().lifecycle.start(self.recipe, &self.path)
    }

    /// Started to closed: ends the leadership (told to the subscribers only
    /// with `notify`), ends every subscription, wakes every `await`, and
    /// returns the holding to release.
    pub(crate) fn close(&self, notify: bool) -> Result<Option<Holding>> {
        self.close_counted(notify).map(|(h, _)| h)
    }

    /// As [`Election::close`], with the number of events published once the
    /// close was told (see [`Election::subscribe_counted`]).
    pub(crate) fn close_counted(&self, notify: bool) -> Result<(Option<Holding>, u64)> {
        self.draw();
        let mut st = self.state.lock();
        self.started_in(st.lifecycle)?;
        st.lifecycle = Lifecycle::Closed;
        if !notify {
            st.subscribers.clear();
        }
        let holding = self.end_locked(&mut st, NotLeaderReason::Closed);
        st.subscribers.clear();
        self.changed.notify_all();
        Ok((holding, st.published))
    }

    /// A leadership begins with `holding`; a participant closed meanwhile
    /// gives it back (`Err`) for the caller to release.
    pub(crate) fn begin(&self, holding: Holding) -> std::result::Result<(), Holding> {
        // Drawn outside the lock (see `draw`).
        let _ = holding.status();
        let mut st = self.state.lock();
        if st.lifecycle != Lifecycle::Started {
            return Err(holding);
        }
        st.error = None;
        st.holding = Some(holding);
        self.reconcile(&mut st);
        self.changed.notify_all();
        Ok(())
    }

    /// The leadership ends for `reason` (unless it ended already); returns
    /// its holding for the caller to release outside the lock.
    pub(crate) fn end(&self, reason: NotLeaderReason) -> Option<Holding> {
        self.end_counted(reason).0
    }

    /// As [`Election::end`], with the number of events published once the
    /// end was told (see [`Election::subscribe_counted`]).
    pub(crate) fn end_counted(&self, reason: NotLeaderReason) -> (Option<Holding>, u64) {
        self.draw();
        let mut st = self.state.lock();
        let h = self.end_locked(&mut st, reason);
        self.changed.notify_all();
        (h, st.published)
    }

    fn end_locked(&self, st: &mut State, reason: NotLeaderReason) -> Option<Holding> {
        // A loss seen first is told as the loss, not as the reason the
        // caller had for ending it.
        self.reconcile(st);
        let h = st.holding.take();
        // Told unless the leadership had ended already (a loss, told by
        // reconcile, or a standard suspension).
        if st.status != LeaderStatus::NotLeader {
            self.publish(st, LeaderStatus::NotLeader, LeaderEvent::NotLeader { reason });
        }
        h
    }

    /// Draws the status from the holding again and tells a change (called
    /// on every holding event, and by every query, so that a caller asking
    /// hears of a change no later than its answer says it).
    pub(crate) fn refresh(&self) -> LeaderStatus {
        self.draw();
        self.follow()
    }

    /// Asks the current holding for its status outside the election's lock
    /// (the lock order is the holding's subscriber lock, then the
    /// election's: never the other way round): a change it finds is told to
    /// its subscribers, a selector's signal among them, under the holding's
    /// lock. Everything under the election's lock then reads the status as
    /// told ([`Holding::told_status`]).
    fn draw(&self) {
        let h = self.state.lock().holding.as_ref().map(Holding::share);
        if let Some(h) = h {
            let _ = h.status();
        }
    }

    /// Follows the holding's status as last told (tells a change): what a
    /// holding's signal calls under the holding's subscriber lock.
    pub(crate) fn follow(&self) -> LeaderStatus {
        let mut st = self.state.lock();
        let before = st.status;
        self.reconcile(&mut st);
        if st.status != before {
            self.changed.notify_all();
        }
        st.status
    }

    /// Whether the current leadership's holding is lost for certain (the
    /// participant must queue again).
    pub(crate) fn holding_lost(&self) -> bool {
        self.draw();
        let st = self.state.lock();
        st.holding.as_ref().is_some_and(|h| h.told_status() == LockStatus::Lost)
    }

    fn reconcile(&self, st: &mut State) {
        let (new, reason) = match &st.holding {
            None => (LeaderStatus::NotLeader, None),
            Some(h) => match h.told_status() {
                LockStatus::Held => (LeaderStatus::Leader, None),
                LockStatus::Uncertain => match self.policy {
                    SuspendPolicy::Session => (LeaderStatus::Uncertain, None),
                    SuspendPolicy::Standard => (LeaderStatus::NotLeader, Some(NotLeaderReason::Suspended)),
                },
                LockStatus::Lost => (LeaderStatus::NotLeader, Some(self.loss_reason(h))),
            },
        };
        if new == st.status && (new != LeaderStatus::NotLeader || reason.is_none() || reason == st.reason) {
            return;
        }
        let ev = match new {
            LeaderStatus::Leader => LeaderEvent::Leader {
                term: st.holding.as_ref().map_or(0, Holding::fencing_token),
            },
            LeaderStatus::Uncertain => LeaderEvent::Uncertain,
            LeaderStatus::NotLeader => match reason {
                Some(reason) => LeaderEvent::NotLeader { reason },
                // The holding went without a word (ended by the caller):
                // `end_locked` tells its reason.
                None => return,
            },
        };
        self.publish(st, new, ev);
    }

    fn loss_reason(&self, h: &Holding) -> NotLeaderReason {
        match h.loss_cause() {
            Some(LossCause::NodeDeleted) => NotLeaderReason::NodeDeleted,
            Some(LossCause::ClientClosed) => NotLeaderReason::ClientClosed,
            Some(LossCause::SessionExpired) | None => NotLeaderReason::SessionExpired,
        }
    }

    fn publish(&self, st: &mut State, status: LeaderStatus, ev: LeaderEvent) {
        st.status = status;
        st.reason = match ev {
            LeaderEvent::NotLeader { reason } => Some(reason),
            _ => None,
        };
        // Unbounded: a slow reader never holds the election up.
        st.subscribers.retain(|s| s.send(ev).is_ok());
        st.published += 1;
    }

    /// Every change from now on; a subscriber of a participant that leads
    /// (or may) first hears where it stands. The channel ends at close.
    pub(crate) fn subscribe(&self) -> Receiver<LeaderEvent> {
        self.subscribe_counted().0
    }

    /// As [`Election::subscribe`], with the count of published events the
    /// channel starts from: once its reader has handled `n` events, it has
    /// handled every event published up to `base + n` (the event that tells
    /// where the participant stands, when there is one, counts as published
    /// just before).
    pub(crate) fn subscribe_counted(&self) -> (Receiver<LeaderEvent>, u64) {
        self.draw();
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut st = self.state.lock();
        self.reconcile(&mut st);
        let now = match st.status {
            LeaderStatus::Leader => Some(LeaderEvent::Leader {
                term: st.holding.as_ref().map_or(0, Holding::fencing_token),
            }),
            LeaderStatus::Uncertain => Some(LeaderEvent::Uncertain),
            LeaderStatus::NotLeader => None,
        };
        let mut base = st.published;
        if let Some(ev) = now {
            let _ = tx.send(ev);
            base = base.saturating_sub(1);
        }
        if st.lifecycle != Lifecycle::Closed {
            st.subscribers.push(tx);
        }
        (rx, base)
    }

    pub(crate) fn status(&self) -> LeaderStatus {
        self.refresh()
    }

    /// `Ok` only while certainly the leader; asks the holding's own check
    /// (which applies the read-timeout rule and tells its change first).
    /// Before `start()` [`Error::NotStarted`], after `close()`
    /// [`Error::Closed`].
    pub(crate) fn check(&self) -> Result<()> {
        let h = self.state.lock().holding.as_ref().map(Holding::share);
        let checked = h.as_ref().map(Holding::check);
        let mut st = self.state.lock();
        self.started_in(st.lifecycle)?;
        // The leadership checked must still be the current one.
        let checked = checked.filter(|_| match (&h, &st.holding) {
            (Some(a), Some(b)) => a.same(b),
            _ => false,
        });
        self.reconcile(&mut st);
        match (st.status, checked) {
            (LeaderStatus::Leader, Some(Ok(()))) => Ok(()),
            (LeaderStatus::Uncertain, _) => Err(Error::LeadershipUncertain {
                path: self.path.clone(),
            }),
            _ => Err(Error::NotLeader {
                path: self.path.clone(),
            }),
        }
    }

    /// The current leadership's term (while leader or uncertain).
    pub(crate) fn term(&self) -> Option<i64> {
        self.draw();
        let mut st = self.state.lock();
        self.reconcile(&mut st);
        match st.status {
            LeaderStatus::NotLeader => None,
            _ => st.holding.as_ref().map(Holding::fencing_token),
        }
    }

    /// The node the current leadership holds.
    pub(crate) fn leader_node(&self) -> Option<String> {
        self.state.lock().holding.as_ref().map(Holding::lock_path)
    }

    /// The current leadership's safe horizon.
    pub(crate) fn safe_until(&self) -> Option<std::time::Instant> {
        self.draw();
        let mut st = self.state.lock();
        self.reconcile(&mut st);
        match st.status {
            LeaderStatus::NotLeader => None,
            _ => st.holding.as_ref().and_then(Holding::safe_until),
        }
    }

    /// A transaction guarded by the current leadership's node.
    pub(crate) fn transaction(&self) -> Result<GuardedTransaction<'static>> {
        self.check()?;
        let st = self.state.lock();
        match &st.holding {
            Some(h) => Ok(GuardedTransaction::owned(h.share())),
            None => Err(Error::NotLeader {
                path: self.path.clone(),
            }),
        }
    }

    /// Waits (cancellably) until the client is connected, so that a create
    /// is not left waiting on a connection past a close: `false` when
    /// cancelled or the client closed.
    pub(crate) fn wait_connected(&self, cancel: &Receiver<()>) -> bool {
        // Connected (every turn but the rare one): no listener to register.
        if self.client.is_connected() {
            return true;
        }
        let (_handle, states) = crate::locks::internals::state_changes(&self.client);
        let never = crossbeam_channel::never::<()>();
        while !self.client.is_connected() {
            if self.client.is_closed() {
                return false;
            }
            match crate::core::wait::wait_or_cancel(&self.client, &never, &states, None, cancel) {
                crate::core::wait::Woken::Closed | crate::core::wait::Woken::Cancelled => return false,
                _ => {}
            }
        }
        true
    }

    /// The participant thread's latest failure, until a try succeeds.
    pub(crate) fn error(&self) -> Option<Error> {
        self.state.lock().error.clone()
    }

    /// Notes a failure of the participant's thread (`None`: it recovered).
    pub(crate) fn set_error(&self, e: Option<Error>) {
        let mut st = self.state.lock();
        st.error = e;
        self.changed.notify_all();
    }

    /// Waits until certainly the leader (`Ok(true)`), `deadline` passes
    /// (`Ok(false)`), or the participant closes or cannot take part.
    pub(crate) fn await_until(&self, deadline: Option<Instant>) -> Result<bool> {
        loop {
            self.draw();
            let mut st = self.state.lock();
            self.started_in(st.lifecycle)?;
            self.reconcile(&mut st);
            if st.status == LeaderStatus::Leader {
                return Ok(true);
            }
            if let Some(e) = st.error.as_ref().filter(|e| !e.is_retryable()) {
                return Err(e.clone());
            }
            match deadline {
                // Not leader when the time came: a value while connected,
                // the reason otherwise (refused, TLS, ...).
                Some(d) if d <= Instant::now() => {
                    return crate::locks::internals::timed_out::<()>(&self.client).map(|_| false);
                }
                Some(d) => {
                    let _ = self.changed.wait_until(&mut st, d);
                }
                None => self.changed.wait(&mut st),
            }
        }
    }
}
