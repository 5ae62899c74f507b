//! What every driver measures with: latencies and percentiles, the handoff
//! window and its latch, the deep queue's figures, the server's counters
//! (requests, notifications, watches) and this process's threads and memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_testing::TestingServer;

/// The element at quantile `p` of sorted samples (zero when empty).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// Microseconds, one decimal.
pub fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Runs `f` for `warmup` (at least 20 calls), then repeatedly for `run`,
/// returning per-call latencies (sorted).
pub fn latencies(warmup: Duration, run: Duration, mut f: impl FnMut()) -> Vec<Duration> {
    let end = Instant::now() + warmup;
    for i in 0.. {
        f();
        if i >= 20 && Instant::now() >= end {
            break;
        }
    }
    let mut v = Vec::new();
    let end = Instant::now() + run;
    while Instant::now() < end {
        let t = Instant::now();
        f();
        v.push(t.elapsed());
    }
    v.sort();
    v
}

/// Prints `KEY.median_us`, `KEY.p99_us` and `KEY.ops`.
pub fn report_latency(key: &str, v: &[Duration]) {
    println!("{key}.median_us={}", us(percentile(v, 0.5)));
    println!("{key}.p99_us={}", us(percentile(v, 0.99)));
    println!("{key}.ops={}", v.len());
}

/// The uncontended cycle's figures under `KEY` (as Curator's driver prints
/// them): median, p99 and cycles/s at the median.
pub fn report_cycle(key: &str, v: &[Duration]) {
    println!("{key}.uncontended_acquire_release.median_us={}", us(percentile(v, 0.5)));
    println!("{key}.uncontended_acquire_release.p99_us={}", us(percentile(v, 0.99)));
    println!(
        "{key}.uncontended_cycles_per_s={:.0}",
        1.0 / percentile(v, 0.5).as_secs_f64().max(1e-9)
    );
}

/// Marks grants and releases in a handoff run: the time from one holder's
/// release to the next holder's grant is measured across sessions (one
/// process, one clock).
pub struct Latch {
    epoch: Instant,
    /// When the last holder began its release, in ns since `epoch` (0: none yet).
    last_release: AtomicU64,
    timing: AtomicBool,
    /// How long each holder holds before releasing (its critical section).
    pub hold: Duration,
    /// How long each holder works after its release before it queues again.
    pub think: Duration,
}

impl Latch {
    /// Called at a grant: the wait since the last release, while timing.
    pub fn grant(&self) -> Option<Duration> {
        let granted = self.epoch.elapsed().as_nanos() as u64;
        let prev = self.last_release.load(Ordering::SeqCst);
        (self.timing.load(Ordering::Relaxed) && prev != 0).then(|| Duration::from_nanos(granted.saturating_sub(prev)))
    }

    /// Called right before a release.
    pub fn releasing(&self) {
        self.last_release
            .store(self.epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
    }

    /// Called with a fresh guard: records the wait since the last release,
    /// holds, then releases (dropping the guard), marks the release and
    /// thinks.
    pub fn granted<G>(&self, guard: G) -> Option<Duration> {
        let lat = self.grant();
        if !self.hold.is_zero() {
            std::thread::sleep(self.hold);
        }
        self.releasing();
        drop(guard);
        if !self.think.is_zero() {
            std::thread::sleep(self.think);
        }
        lat
    }
}

/// One holder's loop body in a handoff run: acquires, then hands the guard to
/// the latch; returns the release-to-grant time when timing.
pub type LoopBody = Box<dyn FnMut(&Latch) -> Option<Duration> + Send>;

/// A handoff run's figures.
pub struct Handoff {
    /// Acquisitions per second, all sessions together.
    pub rate: f64,
    /// Acquisitions of each session in the window.
    pub per_client: Vec<u64>,
    /// Release-to-grant times (sorted).
    pub latencies: Vec<Duration>,
    /// CPU time this process spent in the window (all its threads; `None`
    /// off Linux): per handoff, what a client costs its machine. (On the
    /// embedded server it includes the server's own.)
    pub cpu: Option<Duration>,
    /// Voluntary context switches of this process's threads in the window
    /// (`None` off Linux): each is a thread going to sleep to be woken
    /// again, so per handoff, the thread hops a handoff costs.
    pub wakeups: Option<u64>,
}

impl Handoff {
    /// Jain's fairness index of the acquisitions per client: 1 when equal, 1/n
    /// when one client had them all.
    fn jain(&self) -> f64 {
        let n = self.per_client.len() as f64;
        let sum: f64 = self.per_client.iter().map(|&x| x as f64).sum();
        let sq: f64 = self.per_client.iter().map(|&x| (x as f64) * (x as f64)).sum();
        if sq == 0.0 {
            0.0
        } else {
            sum * sum / (n * sq)
        }
    }

    /// Prints the run's figures under `KEY`.
    pub fn report(&self, key: &str, sessions: usize) {
        println!("{key}.handoffs_per_s.sessions_{sessions}={:.0}", self.rate);
        let n: u64 = self.per_client.iter().sum();
        if let (Some(cpu), true) = (self.cpu, n > 0) {
            println!(
                "{key}.handoffs.process_cpu_us_per_handoff.sessions_{sessions}={:.1}",
                cpu.as_secs_f64() * 1e6 / n as f64
            );
        }
        if let (Some(w), true) = (self.wakeups, n > 0) {
            println!(
                "{key}.handoffs.thread_wakeups_per_handoff.sessions_{sessions}={:.1}",
                w as f64 / n as f64
            );
        }
        let min = self.per_client.iter().min().copied().unwrap_or(0);
        let max = self.per_client.iter().max().copied().unwrap_or(0);
        println!("{key}.handoffs.min_per_client.sessions_{sessions}={min}");
        println!("{key}.handoffs.max_per_client.sessions_{sessions}={max}");
        println!("{key}.handoffs.jain.sessions_{sessions}={:.3}", self.jain());
        if !self.latencies.is_empty() {
            println!(
                "{key}.handoff_latency.p50_us.sessions_{sessions}={}",
                us(percentile(&self.latencies, 0.5))
            );
            println!(
                "{key}.handoff_latency.p99_us.sessions_{sessions}={}",
                us(percentile(&self.latencies, 0.99))
            );
        }
    }
}

/// The shared state of a handoff run: the latch, a count per session, the
/// stop flag. Holders (threads or tasks) loop until `stopped()`, count each
/// acquisition and go through the latch.
pub struct Window {
    /// Grants and releases.
    pub latch: Latch,
    counts: Vec<AtomicU64>,
    stop: AtomicBool,
}

impl Window {
    /// A window for `sessions` holders, each holding `hold.0` and thinking `hold.1`.
    pub fn new(sessions: usize, (hold, think): (Duration, Duration)) -> Arc<Window> {
        Arc::new(Window {
            latch: Latch {
                epoch: Instant::now(),
                last_release: AtomicU64::new(0),
                timing: AtomicBool::new(false),
                hold,
                think,
            },
            counts: (0..sessions).map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
        })
    }

    /// Whether the holders should stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Counts one acquisition by holder `i`.
    pub fn count(&self, i: usize) {
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    /// With the holders running: `warmup`, then the timed window of `run`;
    /// sets the stop flag. The rate and each holder's acquisitions (the
    /// latencies are the caller's to collect).
    pub fn measure(&self, warmup: Duration, run: Duration) -> Handoff {
        std::thread::sleep(warmup);
        let before: Vec<u64> = self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let cost0 = Cost::now();
        let t = Instant::now();
        self.latch.timing.store(true, Ordering::Relaxed);
        std::thread::sleep(run);
        self.latch.timing.store(false, Ordering::Relaxed);
        let after: Vec<u64> = self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let elapsed = t.elapsed();
        let cost = Cost::now().zip(cost0).map(|(b, a)| b.since(&a));
        let (cpu, wakeups) = (cost.map(|c| c.cpu), cost.map(|c| c.wakeups));
        self.stop.store(true, Ordering::Relaxed);
        let per_client: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        Handoff {
            rate: per_client.iter().sum::<u64>() as f64 / elapsed.as_secs_f64(),
            per_client,
            latencies: Vec::new(),
            cpu,
            wakeups,
        }
    }
}

/// Contended acquisitions: one thread per client in `clients`, each looping
/// `acquire+release` on one lock (the loop body `make` builds for its
/// client); `warmup` of that, then a timed window of `run`. Each holder holds
/// the lock for `hold.0` before it releases and queues again `hold.1` after
/// its release.
pub fn handoffs_holding<C>(
    clients: &[C],
    warmup: Duration,
    run: Duration,
    hold: (Duration, Duration),
    make: impl Fn(&C) -> LoopBody,
) -> Handoff {
    let sessions = clients.len();
    let window = Window::new(sessions, hold);
    let gate = Arc::new(Barrier::new(sessions + 1));
    let threads: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut f = make(c);
            let (window, gate) = (window.clone(), gate.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                gate.wait();
                while !window.stopped() {
                    if let Some(d) = f(&window.latch) {
                        lat.push(d);
                    }
                    window.count(i);
                }
                lat
            })
        })
        .collect();
    gate.wait();
    let mut h = window.measure(warmup, run);
    for t in threads {
        h.latencies.extend(t.join().unwrap());
    }
    h.latencies.sort();
    h
}

/// The servers' watch tables: (total watches, watched paths), from `wchs`,
/// summed over every server of the connect string.
pub fn wchs(cs: &str) -> Option<(u64, u64)> {
    let mut sum = (0, 0);
    for addr in cs.split('/').next()?.split(',') {
        let text = zk_testing::fourlw::four_letter_word(addr, "wchs", Duration::from_secs(5)).ok()?;
        let total: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("Total watches:"))?
            .trim()
            .parse()
            .ok()?;
        let paths: u64 = text.lines().next()?.split_whitespace().rev().nth(1)?.parse().ok()?;
        sum = (sum.0 + total, sum.1 + paths);
    }
    Some(sum)
}

/// The watches a queue of our mutex holds once every waiter waits: each
/// waiter's data watch on the node ahead and its exists watch on its own, and
/// the holder's on its own. `queue` is in lock order, each node with its
/// session. The server keeps one watch per path and session (a data and an
/// exists watch share its table), so two waiters of one session in a row
/// share one: count distinct (session, path) pairs.
pub fn queue_watches(queue: &[(String, i64)]) -> u64 {
    let mut pairs = std::collections::HashSet::new();
    for (i, (node, session)) in queue.iter().enumerate() {
        pairs.insert((*session, node.as_str()));
        if let Some((_, next)) = queue.get(i + 1) {
            pairs.insert((*next, node.as_str()));
        }
    }
    pairs.len() as u64
}

/// Waits (30 s at most) until the servers hold at least `n` watches.
pub fn await_watches(cs: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while wchs(cs).map_or(0, |(w, _)| w) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Watch notifications sent so far: the embedded server's count; for Apache
/// ZooKeeper its own `mntr` counters (`zk_sum_node_{created,deleted,changed,
/// children}_watch_count`: the watchers each change triggered), summed over
/// every server of the connect string.
pub fn notifications(server: Option<&TestingServer>, cs: &str) -> Option<u64> {
    if let Some(e) = server.and_then(|s| s.embedded()) {
        return Some(e.stats().watch_notifications);
    }
    let mut sum = 0;
    for addr in cs.split('/').next()?.split(',') {
        let text = zk_testing::fourlw::four_letter_word(addr, "mntr", Duration::from_secs(5)).ok()?;
        let triggered: Vec<u64> = text
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once('\t')?;
                let kind = k.strip_prefix("zk_sum_node_")?.strip_suffix("_watch_count")?;
                ["created", "deleted", "changed", "children"]
                    .contains(&kind)
                    .then(|| v.trim().parse().ok())?
            })
            .collect();
        if triggered.len() != 4 {
            return None;
        }
        sum += triggered.iter().sum::<u64>();
    }
    Some(sum)
}

/// Requests the embedded server has served so far, pings excluded (`None`
/// on any other server).
pub fn requests(server: Option<&TestingServer>) -> Option<u64> {
    let st = server?.embedded()?.stats();
    Some(
        OpCode::ALL
            .iter()
            .filter(|&&op| op != OpCode::Ping)
            .map(|&op| st.requests(op))
            .sum(),
    )
}

/// Requests the servers have received so far: the embedded server's count
/// (pings excluded), or Apache ZooKeeper's `mntr` `zk_packets_received`
/// (pings included: one per idle session every third of its timeout),
/// summed over every server of the connect string.
pub fn packets_received(server: Option<&TestingServer>, cs: &str) -> Option<u64> {
    if server.and_then(|s| s.embedded()).is_some() {
        return requests(server);
    }
    let mut sum = 0;
    for addr in cs.split('/').next()?.split(',') {
        let text = zk_testing::fourlw::four_letter_word(addr, "mntr", Duration::from_secs(5)).ok()?;
        sum += text
            .lines()
            .find_map(|l| l.strip_prefix("zk_packets_received\t"))?
            .trim()
            .parse::<u64>()
            .ok()?;
    }
    Some(sum)
}

/// Server requests made by one call of `f`, averaged over 50 calls after one
/// (embedded server only; pings excluded).
pub fn count_requests(server: Option<&TestingServer>, mut f: impl FnMut()) -> Option<u64> {
    requests(server)?;
    f();
    let n = 50;
    let before = requests(server)?;
    for _ in 0..n {
        f();
    }
    Some((requests(server)? - before + n / 2) / n)
}

/// A deep queue's figures.
pub struct Deep {
    /// From the holder's release to the last waiter's release.
    pub drain: Duration,
    /// Notifications the servers sent from the first release to the last
    /// (the embedded server's count, or Apache ZooKeeper's own `mntr`
    /// counters).
    pub notifications: Option<u64>,
    /// `wchs` with every waiter queued: total watches and watched paths.
    pub queued_watches: Option<(u64, u64)>,
    /// What the drain cost this process (for the peers run in it).
    pub cost: Option<Cost>,
}

impl Deep {
    /// Prints the figures under `PREFIX` (empty, or a peer's with its dot).
    pub fn report(&self, prefix: &str, threads: usize, sessions: usize) {
        let k = format!("{prefix}deep.threads_{threads}.sessions_{sessions}");
        println!("{k}.drain_ms={:.1}", self.drain.as_secs_f64() * 1e3);
        println!("{k}.handoffs_per_s={:.0}", threads as f64 / self.drain.as_secs_f64());
        if let Some(n) = self.notifications {
            println!("{k}.notifications_per_release={:.3}", n as f64 / threads as f64);
        }
        if let Some((w, p)) = self.queued_watches {
            println!("{k}.queued.server_watches={w}");
            println!("{k}.queued.server_watched_paths={p}");
        }
        if let Some(c) = &self.cost {
            println!(
                "{k}.cpu_us_per_handoff={:.0}",
                c.cpu.as_secs_f64() * 1e6 / threads as f64
            );
            println!(
                "{k}.thread_wakeups_per_handoff={:.1}",
                c.wakeups as f64 / threads as f64
            );
        }
    }
}

/// What a stretch of work cost this process: CPU time and thread wake-ups
/// (voluntary context switches), every thread's, those that ended included.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// User and system CPU time.
    pub cpu: Duration,
    /// Voluntary context switches: a thread that slept and was woken.
    pub wakeups: u64,
}

impl Cost {
    /// This process's cost so far (`getrusage(RUSAGE_SELF)`: every thread,
    /// ended ones included, without reading a file per thread), or `None`
    /// where it is not available.
    pub fn now() -> Option<Cost> {
        rusage_self()
    }

    /// The cost from `earlier` to `self`.
    pub fn since(&self, earlier: &Cost) -> Cost {
        Cost {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            wakeups: self.wakeups.saturating_sub(earlier.wakeups),
        }
    }
}

/// `getrusage(RUSAGE_SELF)` on Linux: the one system call the bench makes
/// by hand, allowed here in plain sight (the workspace denies `unsafe`; the
/// counting allocator in alloc.rs is the other place). The struct is Linux's
/// `struct rusage` on 64-bit targets: two `timeval`s, then 14 `long`s of
/// which `ru_nvcsw` is the 13th.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[allow(unsafe_code)]
fn rusage_self() -> Option<Cost> {
    #[repr(C)]
    struct RUsage {
        utime: [i64; 2],
        stime: [i64; 2],
        rest: [i64; 14],
    }
    extern "C" {
        fn getrusage(who: i32, usage: *mut RUsage) -> i32;
    }
    let mut u = RUsage {
        utime: [0; 2],
        stime: [0; 2],
        rest: [0; 14],
    };
    // SAFETY: `u` is a valid, writable `struct rusage` for the call's
    // duration; RUSAGE_SELF is 0.
    if unsafe { getrusage(0, &mut u) } != 0 {
        return None;
    }
    let us = |t: [i64; 2]| Duration::from_secs(t[0].max(0) as u64) + Duration::from_micros(t[1].max(0) as u64);
    Some(Cost {
        cpu: us(u.utime) + us(u.stime),
        wakeups: u.rest[12].max(0) as u64,
    })
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn rusage_self() -> Option<Cost> {
    None
}

/// Measures a [`Cost`] from [`CostMeter::start`] to [`CostMeter::finish`].
///
/// With `ZK_BENCH_PERF_CTL` naming `perf record --control fifo:`'s control
/// FIFO, `start` enables perf's sampling and `finish` disables it, so a
/// profile (`perf record -D -1 --control fifo:CTL,ACK`) covers the measured
/// stretch only.
pub struct CostMeter {
    at: Option<Cost>,
}

impl CostMeter {
    /// Starts measuring (and perf's sampling, when asked).
    pub fn start() -> CostMeter {
        let at = Cost::now();
        perf_ctl("enable");
        CostMeter { at }
    }

    /// The cost since [`start`](Self::start) (and stops perf's sampling,
    /// when asked).
    pub fn finish(&self) -> Option<Cost> {
        perf_ctl("disable");
        Some(Cost::now()?.since(self.at.as_ref()?))
    }
}

/// Writes `cmd` to the perf control FIFO named by `ZK_BENCH_PERF_CTL`, if any.
fn perf_ctl(cmd: &str) {
    if let Ok(path) = std::env::var("ZK_BENCH_PERF_CTL") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(path) {
            let _ = writeln!(f, "{cmd}");
        }
    }
}

/// A number from `/proc/self/status` (`VmRSS` in KiB, `Threads`), 0 elsewhere.
pub fn proc_status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
                .and_then(|l| l[field.len() + 1..].split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Threads of this process, counted in `/proc/self/task`, except the
/// embedded server's own (`zk-embedded-*`).
pub fn task_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| {
        d.flatten()
            .filter(|e| {
                let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
                !comm.starts_with("zk-embedded")
            })
            .count()
    })
}

/// Waiters in the deep-queue scenario (`ZK_BENCH_DEEP` overrides it), and
/// the sessions of its second run.
pub const DEEP: usize = 1000;
/// The sessions of the deep queue's second run.
pub const DEEP_SESSIONS: usize = 100;
/// Locks held at once in the many-locks scenario.
pub const MANY: usize = 10_000;
/// The threads (or tasks) that take them.
pub const MANY_THREADS: usize = 64;
/// The warm-up round takes fewer, under another root.
pub const MANY_WARMUP: usize = 1_000;
/// The critical section of the `latency` scenario's `hold_2ms` handoff runs.
pub const HOLD: Duration = Duration::from_millis(2);
/// The work outside the lock in its `think_1ms` run.
pub const THINK: Duration = Duration::from_millis(1);

/// The waiters of the deep queue: `DEEP`, or `ZK_BENCH_DEEP`.
pub fn deep_waiters() -> usize {
    std::env::var("ZK_BENCH_DEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEEP)
}

/// The many-locks figures, from the time to take and to release `locks`
/// locks and the resident memory grown while they were held (KiB).
pub fn report_many(prefix: &str, locks: usize, acquired: Duration, releasing: Duration, rss_kib: u64) {
    println!(
        "{prefix}many.acquires_per_s.locks_{locks}={:.0}",
        locks as f64 / acquired.as_secs_f64()
    );
    println!(
        "{prefix}many.releases_per_s.locks_{locks}={:.0}",
        locks as f64 / releasing.as_secs_f64()
    );
    println!(
        "{prefix}many.rss_bytes_per_held_lock={:.0}",
        rss_kib as f64 * 1024.0 / locks as f64
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let v: Vec<Duration> = (1..=101).map(Duration::from_micros).collect();
        assert_eq!(percentile(&v, 0.5), Duration::from_micros(51));
        assert_eq!(percentile(&v, 0.99), Duration::from_micros(100));
        assert_eq!(percentile(&v, 1.0), Duration::from_micros(101));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
        assert_eq!(us(Duration::from_nanos(1_250)), "1.2");
    }

    #[test]
    fn a_cost_counts_the_wakeups_and_cpu_of_a_thread_that_ended() {
        let Some(a) = super::Cost::now() else {
            return; // not 64-bit Linux
        };
        std::thread::spawn(|| {
            for _ in 0..20 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let end = std::time::Instant::now() + std::time::Duration::from_millis(30);
            let mut x = 0u64;
            while std::time::Instant::now() < end {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        })
        .join()
        .unwrap();
        let c = super::Cost::now().unwrap().since(&a);
        assert!(c.wakeups >= 20, "{c:?}");
        assert!(c.cpu > std::time::Duration::ZERO, "{c:?}");
    }

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_when_one_had_all() {
        let h = |per_client: Vec<u64>| Handoff {
            rate: 0.0,
            per_client,
            latencies: Vec::new(),
            cpu: None,
            wakeups: None,
        };
        assert!((h(vec![5, 5, 5, 5]).jain() - 1.0).abs() < 1e-9);
        assert!((h(vec![8, 0, 0, 0]).jain() - 0.25).abs() < 1e-9);
        assert_eq!(h(vec![0, 0]).jain(), 0.0);
    }
}
