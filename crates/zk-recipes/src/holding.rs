//! A holding: one granted lock (or lease) node and the truth about it.
//!
//! From the moment a node is granted, its [`Holding`] tracks, whether or not
//! anyone subscribed:
//! * the deletion of its own node: a mutex waiter watches its node while it
//!   waits (it must, to be granted without a listing) and the holding takes
//!   that watch over; otherwise an exists-watch is sent [`OWN_WATCH_DELAY`]
//!   after the grant, from its client's timer thread and without waiting for its
//!   reply: the acquire gains no round trip, and a lock granted without
//!   waiting and released sooner costs no request and no notification; a
//!   node deleted before the watch is set is reported when the watch finds it
//!   gone;
//! * a session change (the managed client's session generation);
//! * connection states: `Suspended` and `ReadOnly` make it uncertain, `Lost`
//!   is final;
//! * the connection epoch ([`CuratorFramework::connection_epoch`]): a
//!   holding is trusted only in an epoch in which the server has shown its
//!   node present and owned by its session. A reconnect (or an answer after
//!   a stale spell) starts a new epoch, and a reconnect alone proves
//!   nothing: the server fires the deletion of a node removed while the
//!   client was away only when it processes the re-registered watches, one
//!   round trip later. So the holding stays uncertain (no `Ok` from
//!   `check()`, no `Held`, no `Reconnected`) until an `exists` of its node,
//!   sent in the new epoch from its client's timer thread, is answered: the
//!   node there, with its czxid and our session as owner, makes it held
//!   again; the node gone makes it lost (`NodeDeleted`) without ever having
//!   been held again. One request per holding per reconnect, none per
//!   operation.
//!
//! Asking ([`Holding::status`], [`Holding::check`], [`Holding::loss_receiver`])
//! never waits for the server (after a reconnect it asks for the proof
//! without waiting for it). A normal release marks the holding released
//! before its node is deleted, so the deletion is never reported as a loss;
//! the loss channels then end.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::proto::{EventType, Stat};
use zk_framework::ConnectionState;
use zk_framework::SessionHealth;
use zk_framework::{CuratorFramework, ListenerHandle};
use zk_framework::{WatchedEvent, Watcher};

use crate::error::{Error, Result};
use crate::stats::{LossCause, PathStats};
use crate::timer::{Due, Timer};

/// What a lock holder hears about its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockEvent {
    /// The lock may be lost: the connection was lost or is read-only, or no
    /// request has been answered for a read timeout. Sent at the moment
    /// [`Holding::check`] first fails. Stop work that needs exclusion until
    /// `Reconnected`; the lock is still certainly held until
    /// [`Holding::safe_until`].
    Suspended,
    /// The safe horizon ([`Holding::safe_until`]) has passed while the lock
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

const HELD: u8 = 0;
const UNCERTAIN: u8 = 1;
const LOST: u8 = 2;
const RELEASED: u8 = 3;

/// One granted node.
pub(crate) struct HoldState {
    /// Itself (for its client's timer).
    me: Weak<HoldState>,
    client: CuratorFramework,
    /// The lock's base path (for errors).
    base: String,
    /// Our node's full user path.
    node: String,
    /// A second node released together with this one (the semaphore mutex's
    /// internal lock node).
    companion: Option<String>,
    token: i64,
    generation: u64,
    /// The session that owns the node.
    session_id: i64,
    /// The latest connection epoch in which the server showed the node
    /// present and ours ([`CuratorFramework::connection_epoch`]): the holding
    /// is held only while this is the client's epoch.
    proven: AtomicU64,
    /// The proof asked for, if any.
    proof: Mutex<ProofAsk>,
    status: AtomicU8,
    subscribers: Mutex<Vec<Subscriber>>,
    /// The connection-state and session-health listeners.
    listeners: Mutex<Vec<ListenerHandle>>,
    /// Whether `HorizonPassed` was told in the current uncertain spell.
    horizon_told: AtomicBool,
    /// How long a release waits for its delete (`0`: the default rule).
    release_bound_ms: std::sync::atomic::AtomicU64,
    watching: AtomicBool,
    /// The path's counters, when this holding is counted.
    stats: Option<Arc<PathStats>>,
    granted_at: Instant,
    /// Why it was lost, once lost.
    loss_cause: Mutex<Option<LossCause>>,
}

impl HoldState {
    /// The lock is lost for certain, for `cause` (a closed client's, when the
    /// client was closed: closing deletes the node and ends the session).
    fn lose(&self, cause: LossCause) {
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
    fn deletion_cause(&self) -> LossCause {
        if self.client.session_generation() != self.generation {
            LossCause::SessionExpired
        } else {
            LossCause::NodeDeleted
        }
    }

    fn publish(&self, ev: LockEvent) {
        debug_assert!(ev != LockEvent::Lost, "a loss has a cause: use lose()");
        self.publish_with(ev, None);
    }

    /// Tells that the horizon passed, once per uncertain spell (the status
    /// stays uncertain).
    fn horizon_passed(&self) {
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
    fn publish_with(&self, ev: LockEvent, cause: Option<LossCause>) {
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

    /// Asks for the proof of epoch `epoch` (see [`HoldState::proven`]),
    /// unless it was asked for already: sent from the client's timer thread
    /// (the caller may be one of the client's own threads, which must not
    /// send requests).
    fn ask_proof(&self, epoch: u64) {
        {
            let mut p = self.proof.lock();
            if p.asked.is_some_and(|a| a >= epoch) {
                return;
            }
            *p = ProofAsk {
                asked: Some(epoch),
                sent: false,
            };
        }
        self.schedule(Instant::now());
    }

    /// Runs [`Due::run`] at `at` on the client's timer (at once, on this
    /// thread, when there is no timer thread).
    fn schedule(&self, at: Instant) {
        let weak: Weak<dyn Due> = self.me.clone() as Weak<dyn Due>;
        if !Timer::of(&self.client).schedule(at, weak) {
            if let Some(me) = self.me.upgrade() {
                me.run();
            }
        }
    }

    /// Sends the proof: an `exists` of the node in the current epoch (with
    /// the own-node watch when there is none). Its answer decides.
    fn send_proof(&self) {
        let epoch = self.client.connection_epoch();
        *self.proof.lock() = ProofAsk {
            asked: Some(epoch),
            sent: true,
        };
        if self.client.session_generation() != self.generation {
            self.lose(LossCause::SessionExpired);
            return;
        }
        let watch = !self.watching.swap(true, Ordering::SeqCst);
        let weak = self.me.clone();
        let on_reply = move |r: zk_framework::Result<Option<Stat>>| {
            if let Some(st) = weak.upgrade() {
                st.proof_answered(epoch, watch, r);
            }
        };
        let sent = if watch {
            self.client
                .exists_w_detached(&self.node, OwnNodeWatcher(self.me.clone()), on_reply)
        } else {
            self.client.exists_detached(&self.node, on_reply)
        };
        if let Err(e) = sent {
            // Not sent (the connection went again): the next epoch asks again.
            log::debug!("could not prove lock node {}: {e}", self.node);
            if watch {
                self.watching.store(false, Ordering::SeqCst);
            }
            self.proof_done(epoch);
        }
    }

    /// The proof of `epoch` is over (answered or not sent).
    fn proof_done(&self, epoch: u64) {
        let mut p = self.proof.lock();
        if p.asked == Some(epoch) {
            *p = ProofAsk::default();
        }
    }

    /// The answer to the proof of `epoch` (on the client's I/O thread: it
    /// only signals).
    fn proof_answered(&self, epoch: u64, watched: bool, r: zk_framework::Result<Option<Stat>>) {
        self.proof_done(epoch);
        match r {
            Ok(Some(stat)) if self.is_ours(&stat) => {
                self.proven.fetch_max(epoch, Ordering::SeqCst);
                // Held again if nothing else stands in the way (told here).
                let _ = self.status();
            }
            // Gone, or a node of that name that is not ours: ours was deleted.
            Ok(_) => self.lose(self.deletion_cause()),
            Err(e) => {
                if watched {
                    self.watching.store(false, Ordering::SeqCst);
                }
                match e {
                    // The connection or the session went: the next epoch (or
                    // the session's end) decides.
                    zk_framework::Error::ConnectionLoss
                    | zk_framework::Error::SessionExpired
                    | zk_framework::Error::OperationTimeout
                    | zk_framework::Error::Closed => {}
                    e => {
                        // Anything else: ask again a little later; uncertain
                        // meanwhile.
                        log::warn!("proving lock node {} failed: {e}; asking again", self.node);
                        {
                            let mut p = self.proof.lock();
                            if p.asked.is_none() {
                                *p = ProofAsk {
                                    asked: Some(epoch),
                                    sent: false,
                                };
                            }
                        }
                        self.schedule(Instant::now() + PROOF_RETRY);
                    }
                }
            }
        }
    }

    /// Whether `stat` is our node's: its czxid and our session as its owner.
    fn is_ours(&self, stat: &Stat) -> bool {
        stat.czxid == self.token && stat.ephemeral_owner == self.session_id
    }

    /// The instant until which the lock is certainly held (`None`: lost or
    /// released).
    fn safe_until(&self) -> Option<Instant> {
        if matches!(self.status.load(Ordering::SeqCst), LOST | RELEASED)
            || self.client.session_generation() != self.generation
        {
            return None;
        }
        self.client.session_horizon()
    }

    fn status(&self) -> LockStatus {
        match self.status.load(Ordering::SeqCst) {
            LOST | RELEASED => return LockStatus::Lost,
            _ => {}
        }
        if self.client.session_generation() != self.generation {
            self.lose(LossCause::SessionExpired);
            return LockStatus::Lost;
        }
        if self.client.is_closed() {
            self.lose(LossCause::ClientClosed);
            return LockStatus::Lost;
        }
        // The state machine may be ahead of the listener dispatch.
        let suspended = match self.client.state() {
            Some(ConnectionState::Lost) => {
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
        let epoch = self.client.connection_epoch();
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
    fn trusted(&self) -> bool {
        self.client.session_generation() == self.generation
            && !self.client.is_closed()
            && !matches!(
                self.client.state(),
                Some(ConnectionState::Lost | ConnectionState::Suspended | ConnectionState::ReadOnly)
            )
            && self.client.session_health() == SessionHealth::Confirmed
            && self.proven.load(Ordering::SeqCst) == self.client.connection_epoch()
    }

    fn check(&self) -> Result<()> {
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

    fn subscribe_with(&self, sub: Subscriber) {
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
    fn mark_released(&self) -> bool {
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

    /// How long a release waits for its delete: what the caller set, else a
    /// tenth of the session timeout, between 100 ms and 2 s (well under the
    /// session timeout, far over a healthy round trip).
    fn release_bound(&self) -> Duration {
        match self.release_bound_ms.load(Ordering::Relaxed) {
            0 => {
                let t = self
                    .client
                    .negotiated_session_timeout()
                    .unwrap_or(Duration::from_secs(30));
                (t / 10).clamp(Duration::from_millis(100), Duration::from_secs(2))
            }
            ms => Duration::from_millis(ms),
        }
    }
}

/// Someone told of a holding's events: a loss channel, or a multi-lock's set,
/// which tells its own channel once per change of the whole set.
enum Subscriber {
    Channel(Sender<LockEvent>),
    Set(Arc<SetEvents>),
}

impl Subscriber {
    /// Tells `ev`; `false` when the subscriber is gone.
    fn send(&self, ev: LockEvent) -> bool {
        match self {
            Subscriber::Channel(tx) => tell(tx, ev),
            Subscriber::Set(set) => set.member_changed(ev),
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
struct SetEvents {
    members: Vec<Weak<HoldState>>,
    tx: Sender<LockEvent>,
    /// What the channel was last told: the set's status and whether the
    /// horizon passed in this uncertain spell.
    told: Mutex<(u8, bool)>,
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

/// A granted lock node: its path, fencing token and session, and whether it is
/// still held. Every guard and lease owns one; it is the raw layer's currency
/// ([`crate::InterProcessLock`]).
pub struct Holding {
    inner: HoldingKind,
}

enum HoldingKind {
    One(Arc<HoldState>),
    /// A multi-lock's members, in acquisition order.
    Many(Vec<Holding>),
}

impl std::fmt::Debug for Holding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            HoldingKind::One(s) => f
                .debug_struct("Holding")
                .field("node", &s.node)
                .field("token", &s.token)
                .field("status", &s.status())
                .finish(),
            HoldingKind::Many(m) => f.debug_list().entries(m).finish(),
        }
    }
}

/// A node as granted: what a [`Holding`] starts from.
pub(crate) struct GrantedNode {
    /// The node's path.
    pub(crate) path: String,
    /// Its czxid (the fencing token).
    pub(crate) token: i64,
    /// The session generation it was created on.
    pub(crate) generation: u64,
    /// Its exists-watch on itself, if it waited (see [`WaiterWatch`]).
    pub(crate) waited: Option<Arc<WaiterWatch>>,
    /// The connection epoch in which the server last showed the node
    /// present ([`CuratorFramework::connection_epoch`], read before the
    /// request whose answer did).
    pub(crate) epoch: u64,
}

impl Holding {
    /// Starts tracking a granted node: a state listener and an exists-watch
    /// on the node (the one it set while it waited, or one sent shortly after
    /// the grant without waiting for its reply).
    pub(crate) fn granted(
        client: &CuratorFramework,
        base: &str,
        granted: GrantedNode,
        companion: Option<String>,
        stats: &Arc<PathStats>,
    ) -> Holding {
        let GrantedNode {
            path: node,
            token,
            generation,
            waited,
            epoch,
        } = granted;
        let stats = stats.granted().then(|| stats.clone());
        let state = Arc::new_cyclic(|me| HoldState {
            me: me.clone(),
            client: client.clone(),
            base: base.to_string(),
            node,
            companion,
            token,
            generation,
            session_id: client.session_id(),
            proven: AtomicU64::new(epoch),
            proof: Mutex::new(ProofAsk::default()),
            status: AtomicU8::new(HELD),
            subscribers: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            horizon_told: AtomicBool::new(false),
            release_bound_ms: std::sync::atomic::AtomicU64::new(0),
            watching: AtomicBool::new(false),
            stats,
            granted_at: Instant::now(),
            loss_cause: Mutex::new(None),
        });
        // Connection states: `status()` applies the one rule to the state as
        // it is now (a listener may run late) and tells what changed; after
        // a reconnect it asks for the proof (which sets the own-node watch
        // again if the broken connection took it).
        let weak = Arc::downgrade(&state);
        let handle = client.add_listener(move |s| {
            let Some(st) = weak.upgrade() else { return };
            match s {
                ConnectionState::Lost => st.lose(LossCause::SessionExpired),
                _ => {
                    let _ = st.status();
                }
            }
        });
        // The session's health by the clock: uncertain at the moment a read
        // timeout passes without an answer, the horizon when it passes, held
        // again when answers come back and the node is proven (a process
        // resumed after a pause).
        let weak = Arc::downgrade(&state);
        let health = client.add_health_listener(move |_| {
            if let Some(st) = weak.upgrade() {
                let _ = st.status();
            }
        });
        state.listeners.lock().extend([handle, health]);
        // The state may have changed before the listener existed.
        let _ = state.status();
        // A waiter already watches its own node (it had to, to be granted
        // without a listing): that watch now reports to the holding. Otherwise
        // the own-node watch goes out shortly after the grant, so that a lock
        // held for less than that (an uncontended cycle) costs no extra request
        // and no notification at its release.
        if !waited.is_some_and(|w| w.hand_over(&state)) {
            schedule_own_watch(&state);
        }
        Holding {
            inner: HoldingKind::One(state),
        }
    }

    /// The holdings of a multi-lock, as one.
    pub(crate) fn many(members: Vec<Holding>) -> Holding {
        Holding {
            inner: HoldingKind::Many(members),
        }
    }

    /// Another handle on the same holding (for reentrant guards).
    pub(crate) fn share(&self) -> Holding {
        Holding {
            inner: match &self.inner {
                HoldingKind::One(s) => HoldingKind::One(s.clone()),
                HoldingKind::Many(m) => HoldingKind::Many(m.iter().map(Holding::share).collect()),
            },
        }
    }

    /// Whether two handles are on the same holding.
    pub(crate) fn same(&self, other: &Holding) -> bool {
        match (&self.inner, &other.inner) {
            (HoldingKind::One(a), HoldingKind::One(b)) => Arc::ptr_eq(a, b),
            (HoldingKind::Many(a), HoldingKind::Many(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
            }
            _ => false,
        }
    }

    pub(crate) fn members(self) -> Vec<Holding> {
        match self.inner {
            HoldingKind::One(_) => vec![self],
            HoldingKind::Many(m) => m,
        }
    }

    fn one(&self) -> Option<&Arc<HoldState>> {
        match &self.inner {
            HoldingKind::One(s) => Some(s),
            HoldingKind::Many(_) => None,
        }
    }

    /// Whether the lock is held, uncertain (suspended, read-only) or lost; a
    /// multi-lock's is its worst member's. Answered locally, at once.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert_eq!(g.holding().status(), zk_recipes::LockStatus::Held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LockStatus {
        match &self.inner {
            HoldingKind::One(s) => s.status(),
            HoldingKind::Many(m) => m.iter().map(Holding::status).fold(LockStatus::Held, worst),
        }
    }

    /// `Ok` only while the lock is certainly held: call it before each side
    /// effect. Answered locally, at once.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] once the lock is lost; [`Error::LockUncertain`] while
    /// the connection is suspended or read-only, and when no request that the
    /// server has answered was sent within the read timeout (a process that
    /// was paused gets this before its connection thread has noticed, even
    /// after reading replies the server sent before the pause).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// g.holding().check()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<()> {
        match &self.inner {
            HoldingKind::One(s) => s.check(),
            // The worst member's answer: lost before uncertain.
            HoldingKind::Many(m) => {
                let mut uncertain = None;
                for h in m {
                    match h.check() {
                        Ok(()) => {}
                        Err(e @ Error::LockLost { .. }) => return Err(e),
                        Err(e) => {
                            uncertain.get_or_insert(e);
                        }
                    }
                }
                uncertain.map_or(Ok(()), Err)
            }
        }
    }

    /// Loss events from now on: `Suspended`, `Reconnected`, `Lost` (a late
    /// subscriber first hears where the lock stands). The channel ends when
    /// the lock is released normally: a release is never reported as `Lost`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let rx = g.holding().loss_receiver();
    /// g.release()?;
    /// assert!(rx.recv().is_err()); // ended, not Lost
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loss_receiver(&self) -> Receiver<LockEvent> {
        let (tx, rx) = crossbeam_channel::bounded(16);
        match &self.inner {
            HoldingKind::One(s) => s.subscribe_with(Subscriber::Channel(tx)),
            HoldingKind::Many(_) => {
                let leaves = self.leaves();
                let set = Arc::new(SetEvents {
                    members: leaves.iter().map(|l| Arc::downgrade(l)).collect(),
                    tx,
                    told: Mutex::new((HELD, false)),
                });
                for l in leaves {
                    l.subscribe_with(Subscriber::Set(set.clone()));
                }
            }
        }
        rx
    }

    /// The instant until which the lock is certainly still held: the server
    /// cannot have expired the session that holds it before then, whatever
    /// the network does (the send time of the latest request the server
    /// answered, plus the negotiated session timeout, minus a margin: see
    /// [`CuratorFramework::session_horizon`]). A multi-lock's is its earliest
    /// member's. `None` once lost or released. On a healthy connection it
    /// stays about seven ninths of the session timeout ahead; when the
    /// connection is lost it stops moving, and work that needs exclusion must
    /// have stopped by then. [`Holding::check`] fails past it, and the loss
    /// channel says [`LockEvent::HorizonPassed`] when it passes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// let until = g.holding().safe_until().expect("held");
    /// assert!(until > std::time::Instant::now());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn safe_until(&self) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        for l in self.leaves() {
            let h = l.safe_until()?;
            earliest = Some(earliest.map_or(h, |e| e.min(h)));
        }
        earliest
    }

    /// Sets how long the release waits for its delete (every member's, for a
    /// multi-lock) before handing it to the background; see
    /// [`Holding::release_node`].
    pub(crate) fn set_release_bound(&self, bound: Duration) {
        let ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX).max(1);
        for l in self.leaves() {
            l.release_bound_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// Cuts the release's wait for its deletes so that it ends by `end` (a
    /// caller's deadline plus a request's grace: a multi-lock giving back its
    /// members at its deadline); the deletes go on in the background.
    pub(crate) fn limit_release_to(&self, end: Instant) {
        let left = end.saturating_duration_since(Instant::now());
        for l in self.leaves() {
            let ms = u64::try_from(l.release_bound().min(left).as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            l.release_bound_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// The fencing token: the lock node's czxid (for a multi-lock, the largest
    /// of its members'). It increases with every grant of a lock, across
    /// sessions and processes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.holding().fencing_token() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_token(&self) -> i64 {
        match &self.inner {
            HoldingKind::One(s) => s.token,
            HoldingKind::Many(m) => m.iter().map(Holding::fencing_token).max().unwrap_or(0),
        }
    }

    /// Each member's fencing token, in acquisition order (one for a single lock).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert_eq!(g.holding().fencing_tokens().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fencing_tokens(&self) -> Vec<i64> {
        match &self.inner {
            HoldingKind::One(s) => vec![s.token],
            HoldingKind::Many(m) => m.iter().flat_map(Holding::fencing_tokens).collect(),
        }
    }

    /// The lock node's full path (for a multi-lock, the members' joined by `,`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.holding().node().starts_with("/locks/a/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node(&self) -> String {
        match &self.inner {
            HoldingKind::One(s) => s.node.clone(),
            HoldingKind::Many(m) => m.iter().map(Holding::node).collect::<Vec<_>>().join(","),
        }
    }

    /// The single holdings behind this one (itself, or a multi-lock's
    /// members), in acquisition order.
    fn leaves(&self) -> Vec<&Arc<HoldState>> {
        match &self.inner {
            HoldingKind::One(s) => vec![s],
            HoldingKind::Many(m) => m.iter().flat_map(Holding::leaves).collect(),
        }
    }

    /// What a guarded write checks: the client of every member (they must
    /// share one session) and each member's node.
    pub(crate) fn check_targets(&self) -> Result<(CuratorFramework, Vec<String>)> {
        let leaves = self.leaves();
        let Some(first) = leaves.first() else {
            return Err(Error::InvalidArgument("an empty holding".into()));
        };
        let client = first.client.clone();
        if leaves.iter().any(|l| l.client.session_id() != client.session_id()) {
            return Err(Error::InvalidArgument(
                "a guarded transaction needs every lock of the set on one client (one session)".into(),
            ));
        }
        Ok((client, leaves.iter().map(|l| l.node.clone()).collect()))
    }

    /// The client of the first member.
    pub(crate) fn first_client(&self) -> Option<CuratorFramework> {
        self.leaves().first().map(|l| l.client.clone())
    }

    /// Marks member `i` (of [`Holding::check_targets`]) lost: a guarded write
    /// found its node gone.
    pub(crate) fn lose_member(&self, i: usize, cause: LossCause) {
        if let Some(l) = self.leaves().get(i) {
            l.lose(cause);
        }
    }

    /// The lock's base path (a multi-lock's members', joined by `,`).
    /// Why a single holding was lost (`None` while not lost; a multi-lock's:
    /// its first lost member's).
    pub(crate) fn loss_cause(&self) -> Option<LossCause> {
        self.leaves().iter().find_map(|l| *l.loss_cause.lock())
    }

    pub(crate) fn base(&self) -> String {
        match &self.inner {
            HoldingKind::One(s) => s.base.clone(),
            HoldingKind::Many(m) => m.iter().map(Holding::base).collect::<Vec<_>>().join(","),
        }
    }

    /// Releases a single holding: marks it released, then deletes its node
    /// (and companion), waiting for the delete no longer than the release
    /// bound ([`HoldState::release_bound`]); a delete not answered by then,
    /// or that could not be sent, goes on in the background (the guaranteed
    /// delete), and the session's end removes the node anyway. A lost
    /// holding's nodes (protected names: ours alone) are deleted in the
    /// background.
    ///
    /// The result says whether the lock was held until the release began:
    /// `Ok` when it was held then (or the delete found our node still there);
    /// [`Error::LockLost`] when it had been lost (or the delete found it
    /// gone); [`Error::LockUncertain`] when it was uncertain and the delete
    /// could not tell.
    pub(crate) fn release_node(self) -> Result<()> {
        let Some(s) = self.one() else {
            return Err(Error::InvalidArgument("not a single holding".into()));
        };
        let s = s.clone();
        let held_at_start = s.status() == LockStatus::Held;
        let client = &s.client;
        let bound = s.release_bound();
        let lost = s.mark_released();
        let nodes: Vec<&str> = std::iter::once(s.node.as_str()).chain(s.companion.as_deref()).collect();
        let to_background = |n: &str| {
            if let Err(e) = client.delete_in_background(n) {
                log::warn!("cannot hand the delete of {n} to the background: {e}");
            }
        };
        let lost_error = || Error::LockLost { path: s.base.clone() };
        if lost {
            nodes.iter().for_each(|n| to_background(n));
            return Err(lost_error());
        }
        // The deletes go out together without waiting (one round trip for a
        // node and its companion); their replies are awaited until the bound.
        let (tx, rx) = crossbeam_channel::bounded(nodes.len());
        let mut outcomes: Vec<Option<zk_framework::Result<()>>> = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let tx = tx.clone();
            let sent = if client.session_generation() == s.generation {
                client.delete_detached(n, None, move |r| {
                    let _ = tx.try_send((i, r));
                })
            } else {
                Err(zk_framework::Error::SessionExpired)
            };
            outcomes.push(sent.err().map(Err));
        }
        drop(tx);
        // (A multi-lock giving back its members at its deadline cut the
        // bound to what is left of the deadline's grace: `limit_release_to`.)
        let end = Instant::now().checked_add(bound);
        while outcomes.iter().any(Option::is_none) {
            let left = end.map_or(Duration::MAX, |e| e.saturating_duration_since(Instant::now()));
            match rx.recv_timeout(left) {
                Ok((i, r)) => outcomes[i] = Some(r),
                Err(_) => break,
            }
        }
        // What the deletes say: our node was there (deleted), was gone, or
        // nothing could be learnt (not sent, no answer in time, connection
        // lost); anything unfinished goes on in the background.
        let mut found_gone = false;
        let mut unknown = false;
        let mut failure = None;
        for (n, outcome) in nodes.iter().zip(outcomes) {
            match outcome {
                Some(Ok(())) => {}
                Some(Err(zk_framework::Error::NoNode { .. })) => found_gone = true,
                Some(Err(
                    zk_framework::Error::ConnectionLoss
                    | zk_framework::Error::SessionExpired
                    | zk_framework::Error::OperationTimeout
                    | zk_framework::Error::Closed,
                ))
                | None => {
                    unknown = true;
                    to_background(n);
                }
                Some(Err(e)) => {
                    to_background(n);
                    failure = Some(e);
                }
            }
        }
        if let Some(e) = failure {
            return Err(Error::ZooKeeper(e));
        }
        // Held when the release began: given up with nothing overlapping it,
        // whatever happens to the delete (the node goes with the session).
        if held_at_start {
            return Ok(());
        }
        // It was uncertain: the delete's answer tells. Our own node deleted
        // means the session never ended and nobody removed it: held all along.
        if found_gone {
            Err(lost_error())
        } else if unknown {
            Err(Error::LockUncertain { path: s.base.clone() })
        } else {
            Ok(())
        }
    }
}

fn worst(a: LockStatus, b: LockStatus) -> LockStatus {
    let rank = |s| match s {
        LockStatus::Held => 0,
        LockStatus::Uncertain => 1,
        LockStatus::Lost => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// How long after a grant a holding's own-node watch is sent (and, after a
/// revocation request used it up, set again); at most 5 ms more, as the timer
/// works in batches. A node deleted within it is
/// reported as soon as the watch finds it gone. A mutex holder that waited
/// for its lock sends none: it has watched its node since it queued.
///
/// # Examples
///
/// ```
/// assert!(zk_recipes::unstable::OWN_WATCH_DELAY <= std::time::Duration::from_millis(10));
/// ```
pub const OWN_WATCH_DELAY: Duration = Duration::from_millis(10);

/// A holding's own-node watch goes out from its client's timer
/// ([`crate::timer::Timer`]) [`OWN_WATCH_DELAY`] after the grant; a holding
/// released (or dropped) before its time sends none. No timer thread (the
/// system refused one, or the client is closed): at once.
fn schedule_own_watch(st: &Arc<HoldState>) {
    let weak: Weak<dyn Due> = Arc::downgrade(st) as Weak<dyn Due>;
    if !Timer::of(&st.client).schedule(Instant::now() + OWN_WATCH_DELAY, weak) {
        watch_own_node(st);
    }
}

/// How long after a proof that failed (not for a lost connection) it is
/// asked again.
const PROOF_RETRY: Duration = Duration::from_millis(100);

/// A holding's proof asked for: the epoch (`None`: none), and whether its
/// request was sent (its answer is awaited) or waits for the timer.
#[derive(Default, Clone, Copy)]
struct ProofAsk {
    asked: Option<u64>,
    sent: bool,
}

impl Due for HoldState {
    /// On the client's timer thread: sends the proof asked for, or else the
    /// own-node watch if none is set.
    fn run(self: Arc<Self>) {
        if self.status.load(Ordering::SeqCst) >= LOST {
            return;
        }
        let prove = {
            let mut p = self.proof.lock();
            let due = p.asked.is_some() && !p.sent;
            p.sent |= due;
            due
        };
        if prove {
            self.send_proof();
        } else if !self.watching.load(Ordering::SeqCst) {
            watch_own_node(&self);
        }
    }
}

/// A waiting node's exists-watch on itself. A mutex waiter is granted without
/// a listing when the node it watches is deleted; that is only right while its
/// own node still exists, which a listing would have shown and this watch
/// shows instead: a deletion of our node (another client's delete, `zk-lock
/// break --node`) is notified to this session before the deletion of any node
/// that happened after it, so when the watched node's deletion arrives, ours
/// has already been heard of. Granted, the watch carries on as the holding's
/// own-node watch (no second request).
pub(crate) struct WaiterWatch {
    state: Mutex<WaiterWatchState>,
    /// The connection epoch read before the watch was sent.
    epoch: u64,
}

struct WaiterWatchState {
    watched: Watched,
    /// The holding the watch reports to, once granted.
    holder: Option<Weak<HoldState>>,
}

/// Where a [`WaiterWatch`] stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// Sent; no reply yet.
    Pending,
    /// The server said the node exists: the watch is set.
    Set,
    /// The node is gone (the reply said so, or its deletion was notified).
    Deleted,
    /// The watch tells nothing more: not sent, failed, or used up by a data
    /// change.
    Unusable,
}

impl WaiterWatch {
    /// Sends the exists-watch on `node` (a full client path) without waiting;
    /// its reply is read before the reply of any request sent after it.
    pub(crate) fn send(client: &CuratorFramework, node: &str) -> Arc<WaiterWatch> {
        let w = Arc::new(WaiterWatch {
            state: Mutex::new(WaiterWatchState {
                watched: Watched::Pending,
                holder: None,
            }),
            epoch: client.connection_epoch(),
        });
        let (watcher, on_reply) = (WaiterWatcher(w.clone()), w.clone());
        let reply = move |r: zk_framework::Result<Option<Stat>>| on_reply.reply(r.map(|s| s.is_some()));
        if let Err(e) = client.exists_w_detached(node, watcher, reply) {
            log::debug!("could not watch waiting lock node {node}: {e}");
            w.state.lock().watched = Watched::Unusable;
        }
        w
    }

    /// Whether the node is known to exist and is being watched: a deletion of
    /// it would have been reported before any later event of this session.
    pub(crate) fn present(&self) -> bool {
        self.state.lock().watched == Watched::Set
    }

    /// The connection epoch read before the watch was sent: what it shows
    /// holds, in order with the session's other events, while the client's
    /// epoch is still this one.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether the watch can still tell (it is set or its reply is pending).
    pub(crate) fn usable(&self) -> bool {
        matches!(self.state.lock().watched, Watched::Pending | Watched::Set)
    }

    /// The reply comes before any grant (a grant needs `Set`), so there is no
    /// holding to tell yet.
    fn reply(&self, r: zk_framework::Result<bool>) {
        let mut s = self.state.lock();
        if s.watched == Watched::Pending {
            s.watched = match r {
                Ok(true) => Watched::Set,
                Ok(false) => Watched::Deleted,
                Err(_) => Watched::Unusable,
            };
        }
    }

    fn event(&self, e: WatchedEvent) {
        let mut s = self.state.lock();
        s.watched = if e.event_type == EventType::NodeDeleted {
            Watched::Deleted
        } else {
            Watched::Unusable
        };
        let holder = s.holder.take().and_then(|h| h.upgrade());
        drop(s);
        if let Some(st) = holder {
            on_own_node_event(&Arc::downgrade(&st), e);
        }
    }

    /// Whether its event would only change this watch's state: no holding
    /// to tell yet, or one that is over (released, lost or gone).
    fn only_signals(&self) -> bool {
        self.state.lock().holder.as_ref().map_or(true, is_over)
    }

    /// Makes `st` the watch's holding: `true` if the watch is set and now
    /// reports to it (or the node's deletion was already heard of, and `st`
    /// is lost); `false` if the holding must watch its node itself.
    fn hand_over(&self, st: &Arc<HoldState>) -> bool {
        let mut s = self.state.lock();
        match s.watched {
            Watched::Deleted => {
                drop(s);
                st.lose(LossCause::NodeDeleted);
                true
            }
            Watched::Set => {
                s.holder = Some(Arc::downgrade(st));
                st.watching.store(true, Ordering::SeqCst);
                true
            }
            Watched::Pending | Watched::Unusable => false,
        }
    }
}

/// A [`WaiterWatch`]'s watcher. It only signals (and so may run on the
/// client's I/O thread, in order with the session's other events) while the
/// watch has no live holding to tell.
struct WaiterWatcher(Arc<WaiterWatch>);

impl Watcher for WaiterWatcher {
    fn process(self: Box<Self>, e: WatchedEvent) {
        self.0.event(e)
    }

    fn only_signals(&self) -> bool {
        self.0.only_signals()
    }
}

/// A holding's own-node watcher. Once the holding is over (released, lost or
/// gone) its event changes nothing, so it only signals: the notification of a
/// release's own delete is then handled on the client's I/O thread instead
/// of waking the event thread.
struct OwnNodeWatcher(Weak<HoldState>);

impl Watcher for OwnNodeWatcher {
    fn process(self: Box<Self>, e: WatchedEvent) {
        on_own_node_event(&self.0, e)
    }

    fn only_signals(&self) -> bool {
        is_over(&self.0)
    }
}

/// Whether the holding is released, lost or gone: final states, in which an
/// own-node event changes nothing.
fn is_over(st: &Weak<HoldState>) -> bool {
    st.upgrade().map_or(true, |st| st.status.load(Ordering::SeqCst) >= LOST)
}

/// Sets the exists-watch on our own node without waiting. The watcher and the
/// reply callback only signal (they run on the client's threads).
fn watch_own_node(st: &Arc<HoldState>) {
    if st.status.load(Ordering::SeqCst) >= LOST {
        return;
    }
    st.watching.store(true, Ordering::SeqCst);
    if st.client.session_generation() != st.generation {
        st.lose(LossCause::SessionExpired);
        return;
    }
    let (w1, w2) = (Arc::downgrade(st), Arc::downgrade(st));
    let watcher = OwnNodeWatcher(w1);
    let epoch = st.client.connection_epoch();
    let on_reply = move |r: zk_framework::Result<Option<Stat>>| {
        let Some(st) = w2.upgrade() else { return };
        match r {
            // There and ours: proven for the epoch it was sent in too.
            Ok(Some(stat)) if st.is_ours(&stat) => {
                st.proven.fetch_max(epoch, Ordering::SeqCst);
            }
            Ok(_) => st.lose(st.deletion_cause()),
            // Not registered (the connection broke first): the proof after
            // the reconnect sets it again.
            Err(_) => st.watching.store(false, Ordering::SeqCst),
        }
    };
    if let Err(e) = st.client.exists_w_detached(&st.node, watcher, on_reply) {
        log::debug!("could not watch own lock node {}: {e}", st.node);
        st.watching.store(false, Ordering::SeqCst);
    }
}

fn on_own_node_event(weak: &Weak<HoldState>, e: WatchedEvent) {
    let Some(st) = weak.upgrade() else { return };
    // Released and lost are final: nothing to tell, no watch to set again.
    if st.status.load(Ordering::SeqCst) >= LOST {
        return;
    }
    match e.event_type {
        EventType::NodeDeleted => st.lose(st.deletion_cause()),
        EventType::NodeDataChanged | EventType::NodeCreated => {
            // The watch is used up (a revocation request writes data). Setting
            // it again sends a request, which a watcher must not do on the
            // client's event thread: the timer thread does it.
            st.watching.store(false, Ordering::SeqCst);
            schedule_own_watch(&st);
        }
        _ => {}
    }
}
