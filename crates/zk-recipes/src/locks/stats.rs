use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_framework::recipe::NodeKey;
use zk_framework::CuratorFramework;

/// Why a held lock was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LossCause {
    /// The lock node was deleted by someone else (an operator breaking the
    /// lock, `zk-lock break`), or found gone.
    NodeDeleted,
    /// The session expired or was replaced (connection state `Lost`), or its
    /// client could no longer authenticate (`AuthFailed`).
    SessionExpired,
    /// The client was closed while the lock was held.
    ClientClosed,
}

impl LossCause {
    /// Every cause, in order.
    pub const ALL: [LossCause; 3] = [
        LossCause::NodeDeleted,
        LossCause::SessionExpired,
        LossCause::ClientClosed,
    ];

    /// `node_deleted`, `session_expired`, `client_closed` (the metric label).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::LossCause::NodeDeleted.name(), "node_deleted");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            LossCause::NodeDeleted => "node_deleted",
            LossCause::SessionExpired => "session_expired",
            LossCause::ClientClosed => "client_closed",
        }
    }

    fn index(self) -> usize {
        match self {
            LossCause::NodeDeleted => 0,
            LossCause::SessionExpired => 1,
            LossCause::ClientClosed => 2,
        }
    }
}

/// The upper bounds of the histogram buckets (a last bucket takes the rest).
pub const BUCKETS: [Duration; 16] = [
    Duration::from_micros(250),
    Duration::from_micros(500),
    Duration::from_millis(1),
    Duration::from_micros(2500),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(2500),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(60),
];

#[derive(Default)]
struct Histogram {
    /// One count per bucket of [`BUCKETS`], then one for larger values.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn record(&self, d: Duration) {
        let i = BUCKETS.iter().position(|b| d <= *b).unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
            sum: Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)),
        }
    }
}

/// A histogram's counts at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistogramSnapshot {
    /// One count per bucket of [`BUCKETS`] (values up to its bound), then one
    /// for larger values.
    pub counts: Vec<u64>,
    /// The sum of the values.
    pub sum: Duration,
}

impl HistogramSnapshot {
    /// How many values were recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_recipes::LockStats::default();
    /// assert_eq!(s.wait_time.count(), 0);
    /// ```
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The mean, or zero with no values.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_recipes::LockStats::default();
    /// assert_eq!(s.hold_time.mean(), std::time::Duration::ZERO);
    /// ```
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.count()) {
            Ok(0) => Duration::ZERO,
            Ok(n) => self.sum / n,
            Err(_) => Duration::from_secs_f64(self.sum.as_secs_f64() / self.count() as f64),
        }
    }

    /// The upper bound of the bucket holding the `q` quantile (0.0 to 1.0);
    /// `None` with no values, or when it falls in the last, unbounded bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_recipes::LockStats::default();
    /// assert_eq!(s.wait_time.quantile_bound(0.5), None);
    /// ```
    pub fn quantile_bound(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let want = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return BUCKETS.get(i).copied();
            }
        }
        None
    }
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        HistogramSnapshot {
            counts: vec![0; BUCKETS.len() + 1],
            sum: Duration::ZERO,
        }
    }
}

/// One lock path's figures at one moment.
///
/// # The figures, per lock path
///
/// Lock metrics, per lock path: acquisitions, timeouts, errors, losses by
/// cause, current holders and waiters, wait-time and hold-time distributions.
///
/// Always kept, in atomics (no dependency), by the client the locks were made
/// with: read them with [`lock_stats`](crate::lock_stats) or [`lock_stats_of`](crate::lock_stats_of) of that client. Two
/// clients of one process keep separate figures, even for the same path; a
/// client's figures go when it closes. With the cargo feature `metrics`, the same events also go
/// to the [`metrics`](https://docs.rs/metrics) facade, so that any exporter
/// (Prometheus and others) sees them:
///
/// | metric | kind | labels |
/// |---|---|---|
/// | `zk_lock_acquisitions_total` | counter | `path` |
/// | `zk_lock_timeouts_total` | counter | `path` |
/// | `zk_lock_errors_total` | counter | `path` |
/// | `zk_lock_losses_total` | counter | `path`, `cause` (`node_deleted`, `session_expired`, `client_closed`) |
/// | `zk_lock_holders` | gauge | `path` |
/// | `zk_lock_waiters` | gauge | `path` |
/// | `zk_lock_wait_seconds` | histogram | `path` |
/// | `zk_lock_hold_seconds` | histogram | `path` |
///
/// What is counted: an *acquisition* is a grant of a lock node or lease (a
/// reentrant acquire, which asks the server nothing, is not one); a
/// *timeout* an acquire whose deadline passed first; an *error* an acquire
/// that failed. A holding ends once, as a release or as a loss (the cause of
/// [`crate::LockEvent::Lost`]); the hold time runs from the grant to that end.
/// The wait time runs from the start of the acquire to the grant. The path is
/// the lock's path as the server sees it (namespace included). A
/// `MultiLock` counts in its members' paths.
///
/// Each path registers its metrics with the recorder once, at its first
/// event, and keeps the handles: install the exporter (the global recorder)
/// before the first lock is taken, as exporters ask anyway.
///
/// Figures are kept per path (and, with the feature, one `path` label value
/// per path) while a lock instance on the path exists, and after that until
/// more than [`LOCK_STATS_KEPT_PATHS`](crate::LOCK_STATS_KEPT_PATHS) paths are known: then the figures of every path
/// no instance uses and nobody holds or waits for are dropped, so that a
/// service locking many short-lived paths (one per order, per user) does not
/// grow without bound. [`forget_lock_stats`](crate::forget_lock_stats) drops one path's figures at once.
///
/// [`set_enabled`]`(&client, false)` turns all of it off for that client (the
/// benchmark's baseline).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStats {
    /// The lock path as the server sees it (namespace included).
    pub path: String,
    /// Grants of a lock node or lease.
    pub acquisitions: u64,
    /// Acquires whose deadline passed first.
    pub timeouts: u64,
    /// Acquires that failed.
    pub errors: u64,
    /// Holdings lost, by cause, in [`LossCause::ALL`] order.
    pub losses: [u64; 3],
    /// Holdings released normally.
    pub releases: u64,
    /// Holdings now held (granted, neither released nor lost).
    pub holders: i64,
    /// Acquires now waiting.
    pub waiters: i64,
    /// From the start of an acquire to its grant.
    pub wait_time: HistogramSnapshot,
    /// From a grant to its release or loss.
    pub hold_time: HistogramSnapshot,
}

impl LockStats {
    /// The losses of one cause.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{LockStats, LossCause};
    /// let s = LockStats::default();
    /// assert_eq!(s.losses_by(LossCause::NodeDeleted), 0);
    /// ```
    pub fn losses_by(&self, cause: LossCause) -> u64 {
        self.losses[cause.index()]
    }

    /// Every loss.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::LockStats::default().total_losses(), 0);
    /// ```
    pub fn total_losses(&self) -> u64 {
        self.losses.iter().sum()
    }
}

/// The live counters of one path.
pub(crate) struct PathStats {
    path: String,
    acquisitions: AtomicU64,
    timeouts: AtomicU64,
    errors: AtomicU64,
    losses: [AtomicU64; 3],
    releases: AtomicU64,
    holders: AtomicI64,
    waiters: AtomicI64,
    wait_time: Histogram,
    hold_time: Histogram,
    /// The `metrics` facade's handles, registered at the first event.
    facade: OnceLock<facade::Handles>,
    /// The client's on/off switch.
    enabled: Arc<AtomicBool>,
}

/// One client's figures (kept by the client: [`Figures::of`]).
struct Figures {
    /// Shared with every path's counters.
    enabled: Arc<AtomicBool>,
    registry: Mutex<Registry>,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            enabled: Arc::new(AtomicBool::new(true)),
            registry: Mutex::new(Registry {
                paths: BTreeMap::new(),
                sweep_at: KEPT_PATHS,
            }),
        }
    }

    fn of(client: &CuratorFramework) -> Arc<Figures> {
        client.recipe().extension(Figures::new)
    }

    fn for_path(&self, server_path: &str) -> Arc<PathStats> {
        let mut r = self.registry.lock();
        if !r.paths.contains_key(server_path) {
            r.sweep(KEPT_PATHS);
        }
        r.paths
            .entry(server_path.to_string())
            .or_insert_with(|| Arc::new(PathStats::new(server_path, self.enabled.clone())))
            .clone()
    }
}

/// Turns the counting on or off for the locks of `client` (on by default).
/// Off, no figure moves and nothing goes to the `metrics` facade; a holding
/// granted while it was on still ends in the figures.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// zk_recipes::set_lock_stats_enabled(&client, false);
/// assert!(!zk_recipes::lock_stats_enabled(&client));
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn set_enabled(client: &CuratorFramework, on: bool) {
    Figures::of(client).enabled.store(on, Ordering::Relaxed);
}

/// Whether counting is on for the locks of `client`.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert!(zk_recipes::lock_stats_enabled(&client));
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn is_enabled(client: &CuratorFramework) -> bool {
    Figures::of(client).enabled.load(Ordering::Relaxed)
}

/// How many paths' figures are kept before those of paths no lock instance
/// uses any more are dropped (see [`LockStats`]).
///
/// # Examples
///
/// ```
/// assert!(zk_recipes::LOCK_STATS_KEPT_PATHS >= 1_000);
/// ```
pub const KEPT_PATHS: usize = 10_000;

/// The figures by path, and the size at which the next sweep runs.
struct Registry {
    paths: BTreeMap<String, Arc<PathStats>>,
    sweep_at: usize,
}

impl Registry {
    /// Drops the figures nobody can count into any more (only the registry
    /// holds them; no holder, no waiter) once there are more than `sweep_at`
    /// paths; the next sweep then runs at twice what is left (at least
    /// `kept`), so that sweeping stays linear however many paths stay in use.
    fn sweep(&mut self, kept: usize) {
        if self.paths.len() <= self.sweep_at {
            return;
        }
        self.paths.retain(|_, s| {
            Arc::strong_count(s) > 1 || s.holders.load(Ordering::Relaxed) > 0 || s.waiters.load(Ordering::Relaxed) > 0
        });
        self.sweep_at = (self.paths.len() * 2).max(kept);
    }
}

impl PathStats {
    fn new(server_path: &str, enabled: Arc<AtomicBool>) -> PathStats {
        PathStats {
            enabled,
            path: server_path.to_string(),
            acquisitions: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            losses: Default::default(),
            releases: AtomicU64::new(0),
            holders: AtomicI64::new(0),
            waiters: AtomicI64::new(0),
            wait_time: Histogram::default(),
            hold_time: Histogram::default(),
            facade: OnceLock::new(),
        }
    }
}

/// The counters of the lock node `key` kept by `client` (created on first
/// use; lock instances look theirs up once), by its server path.
pub(crate) fn for_path(client: &CuratorFramework, key: &NodeKey) -> Arc<PathStats> {
    Figures::of(client).for_path(key.as_str())
}

/// Every lock path's figures kept by `client` (the paths its locks used), by
/// path.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// for s in zk_recipes::lock_stats(&client) {
///     println!("{}: {} acquisitions, {} held now", s.path, s.acquisitions, s.holders);
/// }
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn snapshot(client: &CuratorFramework) -> Vec<LockStats> {
    let all: Vec<Arc<PathStats>> = Figures::of(client).registry.lock().paths.values().cloned().collect();
    all.iter().map(|s| s.snapshot()).collect()
}

/// One lock path's figures kept by `client` (`server_path` as the server
/// sees it, namespace included); `None` if its locks never used it.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert!(zk_recipes::lock_stats_of(&client, "/never/used").is_none());
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn snapshot_of(client: &CuratorFramework, server_path: &str) -> Option<LockStats> {
    let s = Figures::of(client).registry.lock().paths.get(server_path).cloned();
    s.map(|s| s.snapshot())
}

/// What the figures cost one lock cycle in CPU, measured without a server or
/// a client: runs the bookkeeping of `cycles` acquire/grant/release cycles
/// (an acquire started and granted, a holding counted and released, with the
/// `metrics` facade when the feature and a recorder are on) on the path
/// `/zk-recipes/bookkeeping`, and returns the mean time per cycle.
/// `zk-bench --only metrics` prints it next to the cycle it adds to.
///
/// # Examples
///
/// ```
/// let per_cycle = zk_recipes::lock_stats_bookkeeping_cost(1000);
/// assert!(per_cycle < std::time::Duration::from_millis(1));
/// ```
pub fn bookkeeping_cost(cycles: u32) -> Duration {
    let stats = Figures::new().for_path("/zk-recipes/bookkeeping");
    let started = Instant::now();
    for _ in 0..cycles {
        let w = stats.start_wait();
        w.finish(Outcome::Acquired);
        let granted_at = Instant::now();
        if stats.granted() {
            stats.ended(granted_at.elapsed(), None);
        }
    }
    started.elapsed() / cycles.max(1)
}

/// Drops the figures `client` keeps for `server_path` and returns them as
/// they last were; `None` if there were none. Figures of paths nobody uses
/// are dropped anyway once more than [`KEPT_PATHS`] paths are known (see the
/// [`LockStats`]); this drops one at once. A lock instance
/// that goes on being used keeps counting into its old figures, which are no
/// longer listed; a new instance on the path starts afresh.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert!(zk_recipes::forget_lock_stats(&client, "/never/used").is_none());
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn forget(client: &CuratorFramework, server_path: &str) -> Option<LockStats> {
    let s = Figures::of(client).registry.lock().paths.remove(server_path);
    s.map(|s| s.snapshot())
}

/// An acquire in progress: a waiter until dropped.
pub(crate) struct Waiting {
    stats: Arc<PathStats>,
    started: Instant,
    counted: bool,
}

/// How an acquire ended.
pub(crate) enum Outcome {
    Acquired,
    TimedOut,
    Failed,
}

impl PathStats {
    fn facade(&self) -> &facade::Handles {
        self.facade.get_or_init(|| facade::Handles::new(&self.path))
    }

    fn snapshot(&self) -> LockStats {
        LockStats {
            path: self.path.clone(),
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            losses: [0, 1, 2].map(|i| self.losses[i].load(Ordering::Relaxed)),
            releases: self.releases.load(Ordering::Relaxed),
            holders: self.holders.load(Ordering::Relaxed),
            waiters: self.waiters.load(Ordering::Relaxed),
            wait_time: self.wait_time.snapshot(),
            hold_time: self.hold_time.snapshot(),
        }
    }

    /// Starts an acquire: counts a waiter until the returned value ends.
    pub(crate) fn start_wait(self: &Arc<Self>) -> Waiting {
        let counted = self.enabled.load(Ordering::Relaxed);
        if counted {
            self.waiters.fetch_add(1, Ordering::Relaxed);
            self.facade().waiters(1.0);
        }
        Waiting {
            stats: self.clone(),
            started: Instant::now(),
            counted,
        }
    }

    /// A holding was granted: returns whether it is counted (so that its end
    /// is counted exactly when its start was).
    pub(crate) fn granted(&self) -> bool {
        if !self.enabled.load(Ordering::Relaxed) {
            return false;
        }
        self.holders.fetch_add(1, Ordering::Relaxed);
        self.facade().holders(1.0);
        true
    }

    /// A counted holding ended: released (`None`) or lost.
    pub(crate) fn ended(&self, held_for: Duration, lost: Option<LossCause>) {
        self.holders.fetch_sub(1, Ordering::Relaxed);
        self.facade().holders(-1.0);
        self.hold_time.record(held_for);
        self.facade().hold(held_for);
        match lost {
            None => {
                self.releases.fetch_add(1, Ordering::Relaxed);
            }
            Some(cause) => {
                self.losses[cause.index()].fetch_add(1, Ordering::Relaxed);
                self.facade().loss(cause);
            }
        }
    }
}

impl Waiting {
    /// Ends the wait with its outcome.
    pub(crate) fn finish(mut self, outcome: Outcome) {
        if !self.counted {
            return;
        }
        self.counted = false;
        let s = &self.stats;
        s.waiters.fetch_sub(1, Ordering::Relaxed);
        s.facade().waiters(-1.0);
        match outcome {
            Outcome::Acquired => {
                let waited = self.started.elapsed();
                s.acquisitions.fetch_add(1, Ordering::Relaxed);
                s.wait_time.record(waited);
                s.facade().acquired(waited);
            }
            Outcome::TimedOut => {
                s.timeouts.fetch_add(1, Ordering::Relaxed);
                s.facade().timed_out();
            }
            Outcome::Failed => {
                s.errors.fetch_add(1, Ordering::Relaxed);
                s.facade().failed();
            }
        }
    }

    /// Ends the wait with the outcome of an acquire's result.
    pub(crate) fn finish_with<T>(self, r: &crate::error::Result<Option<T>>) {
        self.finish(match r {
            Ok(Some(_)) => Outcome::Acquired,
            Ok(None) => Outcome::TimedOut,
            Err(e) if e.is_deadline() => Outcome::TimedOut,
            Err(_) => Outcome::Failed,
        });
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // An acquire that unwound (a panic) is no longer waiting.
        if self.counted {
            self.stats.waiters.fetch_sub(1, Ordering::Relaxed);
            self.stats.facade().waiters(-1.0);
        }
    }
}

/// The `metrics` facade, with the feature; nothing without it. Each path
/// registers its metrics once, at its first event, and keeps the handles:
/// an event then costs the recorder's handle update only.
#[cfg(feature = "metrics")]
mod facade {
    use std::time::Duration;

    use metrics::{Counter, Gauge, Histogram};

    use super::LossCause;

    pub(super) struct Handles {
        acquisitions: Counter,
        timeouts: Counter,
        errors: Counter,
        losses: [Counter; 3],
        holders: Gauge,
        waiters: Gauge,
        wait: Histogram,
        hold: Histogram,
    }

    impl Handles {
        pub(super) fn new(path: &str) -> Handles {
            let loss = |c: LossCause| metrics::counter!("zk_lock_losses_total", "path" => path.to_string(), "cause" => c.name());
            Handles {
                acquisitions: metrics::counter!("zk_lock_acquisitions_total", "path" => path.to_string()),
                timeouts: metrics::counter!("zk_lock_timeouts_total", "path" => path.to_string()),
                errors: metrics::counter!("zk_lock_errors_total", "path" => path.to_string()),
                losses: LossCause::ALL.map(loss),
                holders: metrics::gauge!("zk_lock_holders", "path" => path.to_string()),
                waiters: metrics::gauge!("zk_lock_waiters", "path" => path.to_string()),
                wait: metrics::histogram!("zk_lock_wait_seconds", "path" => path.to_string()),
                hold: metrics::histogram!("zk_lock_hold_seconds", "path" => path.to_string()),
            }
        }

        pub(super) fn waiters(&self, delta: f64) {
            self.waiters.increment(delta);
        }

        pub(super) fn holders(&self, delta: f64) {
            self.holders.increment(delta);
        }

        pub(super) fn acquired(&self, waited: Duration) {
            self.acquisitions.increment(1);
            self.wait.record(waited.as_secs_f64());
        }

        pub(super) fn timed_out(&self) {
            self.timeouts.increment(1);
        }

        pub(super) fn failed(&self) {
            self.errors.increment(1);
        }

        pub(super) fn hold(&self, held: Duration) {
            self.hold.record(held.as_secs_f64());
        }

        pub(super) fn loss(&self, cause: LossCause) {
            self.losses[cause.index()].increment(1);
        }
    }
}

#[cfg(not(feature = "metrics"))]
mod facade {
    use std::time::Duration;

    use super::LossCause;

    pub(super) struct Handles;

    impl Handles {
        pub(super) fn new(_: &str) -> Handles {
            Handles
        }
        pub(super) fn waiters(&self, _: f64) {}
        pub(super) fn holders(&self, _: f64) {}
        pub(super) fn acquired(&self, _: Duration) {}
        pub(super) fn timed_out(&self) {}
        pub(super) fn failed(&self) {}
        pub(super) fn hold(&self, _: Duration) {}
        pub(super) fn loss(&self, _: LossCause) {}
    }
}

#[cfg(test)]
mod tests {
    fn path_stats(path: &str) -> PathStats {
        PathStats::new(path, Arc::new(AtomicBool::new(true)))
    }

    use super::*;

    #[test]
    fn figures_nobody_uses_are_dropped_past_the_bound_and_the_rest_kept() {
        let mut r = Registry {
            paths: BTreeMap::new(),
            sweep_at: 10,
        };
        let in_use: Vec<Arc<PathStats>> = (0..4)
            .map(|i| {
                let s = Arc::new(path_stats(&format!("/used/{i}")));
                r.paths.insert(s.path.clone(), s.clone());
                s
            })
            .collect();
        // Held or waited for, with no instance left: kept too.
        let held = path_stats("/held");
        held.holders.store(1, Ordering::Relaxed);
        r.paths.insert("/held".into(), Arc::new(held));
        let waited = path_stats("/waited");
        waited.waiters.store(1, Ordering::Relaxed);
        r.paths.insert("/waited".into(), Arc::new(waited));
        for i in 0..4 {
            r.paths
                .insert(format!("/gone/{i}"), Arc::new(path_stats(&format!("/gone/{i}"))));
            r.sweep(10);
        }
        assert_eq!(r.paths.len(), 10, "no sweep at or under the bound");
        r.paths.insert("/gone/4".into(), Arc::new(path_stats("/gone/4")));
        r.sweep(10);
        let left: Vec<&str> = r.paths.keys().map(String::as_str).collect();
        assert_eq!(left, ["/held", "/used/0", "/used/1", "/used/2", "/used/3", "/waited"]);
        assert_eq!(r.sweep_at, 12, "next sweep at twice what is left");
        drop(in_use);
        for i in 0..7 {
            r.paths.insert(format!("/more/{i}"), Arc::new(path_stats("/more")));
        }
        r.sweep(10);
        assert_eq!(r.paths.len(), 2, "instances gone: only the held and waited paths stay");
        assert_eq!(r.sweep_at, 10, "never under the bound");
    }

    #[test]
    fn histogram_buckets_and_quantiles() {
        let h = Histogram::default();
        for ms in [0.1, 0.3, 3.0, 3.0, 70_000.0] {
            h.record(Duration::from_secs_f64(ms / 1000.0));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.counts[0], 1); // <= 250 us
        assert_eq!(s.counts[1], 1); // <= 500 us
        assert_eq!(s.counts[4], 2); // <= 5 ms
        assert_eq!(s.counts[BUCKETS.len()], 1); // > 60 s
        assert_eq!(s.quantile_bound(0.5), Some(Duration::from_millis(5)));
        assert_eq!(s.quantile_bound(1.0), None);
        assert_eq!(s.quantile_bound(0.0), Some(Duration::from_micros(250)));
    }
}
