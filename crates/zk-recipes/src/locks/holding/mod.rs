//! A holding: one granted lock (or lease) node and the truth about it.
//!
//! From the moment a node is granted, its [`Holding`] tracks, whether or not
//! anyone subscribed:
//! * the deletion of its own node: a mutex waiter watches its node while it
//!   waits (it must, to be granted without a listing) and the holding takes
//!   that watch over; otherwise an exists-watch is sent [`OWN_WATCH_DELAY`]
//!   after the grant, from its client's executor thread and without waiting for its
//!   reply: the acquire gains no round trip, and a lock granted without
//!   waiting and released sooner costs no request and no notification; a
//!   node deleted before the watch is set is reported when the watch finds it
//!   gone;
//! * a session change (the managed client's session generation);
//! * connection states: `Suspended` and `ReadOnly` make it uncertain, `Lost`
//!   is final;
//! * the connection epoch ([`Recipe::connection_epoch`](zk_framework::recipe::Recipe::connection_epoch)): a
//!   holding is trusted only in an epoch in which the server has shown its
//!   node present and owned by its session. A reconnect (or an answer after
//!   a stale spell) starts a new epoch, and a reconnect alone proves
//!   nothing: the server fires the deletion of a node removed while the
//!   client was away only when it processes the re-registered watches, one
//!   round trip later. So the holding stays uncertain (no `Ok` from
//!   `check()`, no `Held`, no `Reconnected`) until an `exists` of its node,
//!   sent in the new epoch from its client's executor thread, is answered: the
//!   node there, with its czxid and our session as owner, makes it held
//!   again; the node gone makes it lost (`NodeDeleted`) without ever having
//!   been held again. One request per holding per reconnect, none per
//!   operation.
//!
//! Asking ([`Holding::status`], [`Holding::check`], [`Holding::events`])
//! never waits for the server (after a reconnect it asks for the proof
//! without waiting for it). A normal release marks the holding released
//! before its node is deleted, so the deletion is never reported as a loss;
//! the loss channels then end.

mod own_watch;
mod proof;
mod release;
mod state;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use zk_framework::ConnectionState;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::stats::{LossCause, PathStats};
use crate::locks::waiter::WaiterWatch;

use own_watch::schedule_own_watch;
pub use own_watch::OWN_WATCH_DELAY;
pub(crate) use state::HoldState;
use state::ProofAsk;
pub use state::{LockEvent, LockStatus};
use state::{SetEvents, Subscriber, HELD};

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
    /// present ([`Recipe::connection_epoch`](zk_framework::recipe::Recipe::connection_epoch), read before the
    /// request whose answer did).
    pub(crate) epoch: u64,
    /// Whether the own-node watch goes out at the grant instead of a little
    /// later (a leadership: long-lived, so the delay saves nothing, and a
    /// break right after an election must be heard of at once).
    pub(crate) watch_at_once: bool,
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
            watch_at_once,
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
                ConnectionState::Lost | ConnectionState::AuthFailed => st.lose(LossCause::SessionExpired),
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
        if !waited.is_some_and(|w| w.hand_over(&(state.clone() as Arc<dyn crate::locks::waiter::WatchedHolding>))) {
            if watch_at_once {
                own_watch::watch_own_node(&state);
            } else {
                schedule_own_watch(&state);
            }
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

    /// `status() == Held`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// assert!(g.is_held());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_held(&self) -> bool {
        self.status() == LockStatus::Held
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
    /// let rx = g.holding().events();
    /// g.release()?;
    /// assert!(rx.recv().is_err()); // ended, not Lost
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<LockEvent> {
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

    /// The old name of [`events`](Self::events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// #[allow(deprecated)]
    /// let rx = g.holding().loss_receiver();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn loss_receiver(&self) -> Receiver<LockEvent> {
        self.events()
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
    /// assert!(g.lock_path().starts_with("/locks/a/_c_"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_path(&self) -> String {
        match &self.inner {
            HoldingKind::One(s) => s.node.clone(),
            HoldingKind::Many(m) => m.iter().map(Holding::lock_path).collect::<Vec<_>>().join(","),
        }
    }

    /// The old name of [`lock_path`](Self::lock_path) (a guard's name for
    /// it, now that a guard derefs to its holding).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::InterProcessMutex::new(&client, "/locks/a")?;
    /// let g = m.acquire()?;
    /// #[allow(deprecated)]
    /// let node = g.holding().node();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(
        since = "0.1.0",
        note = "one name for one thing: `lock_path()`, as the guard says it"
    )]
    pub fn node(&self) -> String {
        self.lock_path()
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
    /// The status as last told, without drawing it again (no side effect,
    /// no lock): for a caller that must not publish (it holds a lock that a
    /// subscriber takes), after the holding was asked (`status()`) outside
    /// that lock or from inside a subscriber, which runs on every change.
    pub(crate) fn told_status(&self) -> LockStatus {
        self.leaves()
            .iter()
            .map(|l| match l.status.load(std::sync::atomic::Ordering::SeqCst) {
                state::HELD => LockStatus::Held,
                state::UNCERTAIN => LockStatus::Uncertain,
                _ => LockStatus::Lost,
            })
            .fold(LockStatus::Held, worst)
    }

    /// Subscribes `signal` to every change of a single holding (as
    /// [`events`](Self::events), first told where it stands):
    /// it runs on the thread that tells the change, under the holding's
    /// subscriber lock, so it only signals (an atomic, a channel, a lock
    /// that never waits on this holding); it returns `false` to unsubscribe.
    /// Dropped at the release. A multi-lock's holding is not subscribed.
    pub(crate) fn subscribe_signal(&self, signal: Arc<dyn Fn(LockEvent) -> bool + Send + Sync>) {
        if let HoldingKind::One(s) = &self.inner {
            s.subscribe_with(Subscriber::Signal(signal));
        }
    }

    pub(crate) fn loss_cause(&self) -> Option<LossCause> {
        self.leaves().iter().find_map(|l| *l.loss_cause.lock())
    }

    pub(crate) fn base(&self) -> String {
        match &self.inner {
            HoldingKind::One(s) => s.base.clone(),
            HoldingKind::Many(m) => m.iter().map(Holding::base).collect::<Vec<_>>().join(","),
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
