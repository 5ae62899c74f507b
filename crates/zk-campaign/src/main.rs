//! `zk-campaign`: a Jepsen-style fault campaign for the lock recipes.
//!
//! ```text
//! zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
//!             [--session-ms N] [--apache | --ensemble] [--dir DIR] [--hold-ms N]
//!             [--long-hold-permille N] [--think-ms N] [--acquire-timeout-ms N]
//!             [--short-timeout-percent N] [--overshoot-margin-ms N] [--max-overshoot-ms N]
//! zk-campaign --check DIR [--connect HOST:PORT] [--overshoot-margin-ms N] [--max-overshoot-ms N]
//! zk-campaign --leaks HOST:PORT [--root /campaign] [--leak-wait-ms N]
//! ```
//!
//! A coordinator starts a server (the embedded one by default, listening on
//! 127.0.0.1; `--apache` for a standalone Apache ZooKeeper; `--ensemble` for a
//! 3-node Apache ensemble), one [`FaultProxy`] per worker (per server node),
//! and at least four worker processes (this binary again, `--worker`). Each
//! worker has one `CuratorFramework` session and several threads that take, at
//! random, an `InterProcessMutex` (`/campaign/mutex`), the read or the write half
//! of an `InterProcessReadWriteLock` (`/campaign/rw`), an
//! `InterProcessSemaphoreMutex` (`/campaign/sem`), or a `MultiLock` over all
//! three (a mutex on `/campaign/mutex`, a semaphore mutex on `/campaign/sem` and
//! the write half on `/campaign/rw`), so every lock kind contends with the
//! others on the same nodes.
//!
//! Meanwhile the coordinator injects faults, chosen by a seeded PRNG (the seed is
//! printed): every kind once in a shuffled first round, then at random.
//!
//! | kind | what |
//! |---|---|
//! | `partition-expire` | one worker's proxy frozen for 1.5 × the session timeout: its session expires the realistic way |
//! | `instant-expire` | the server expires one worker session at once (embedded `expire_session`; Apache: closeSession from a second connection) |
//! | `cut` | one worker's proxy connections cut |
//! | `drop-all` | every client connection dropped (embedded `drop_connections`; Apache: every proxy cut) |
//! | `pause-short` / `pause-long` | the server paused for 0.3–0.7 × / 1.5 × the session timeout (Apache: SIGSTOP/SIGCONT; ensemble: the leader) |
//! | `restart` | the server stopped and restarted (standalone) |
//! | `kill-worker` | `kill -9` of a worker process; a replacement starts |
//! | `break-waiter` | a waiting node of the mutex or of the semaphore's internal mutex deleted by another client (as `zk-lock break --node`), atomically with a check that the queue's head is still there, so that it is never a holder's node: its owner must queue again, never be granted |
//! | `stop-leader`, `kill-leader`, `stop-follower`, `kill-follower` | ensemble only: SIGTERM / SIGKILL of a node, then a restart |
//!
//! Every acquire is a timed `try_acquire_for`: most with `--acquire-timeout-ms`,
//! `--short-timeout-percent` of them with a short one (a fifth of those zero,
//! the rest 10-2000 ms), so that every lock kind reaches its deadline under
//! every fault kind. Workers log every acquire attempt (start, timeout,
//! outcome, error kind, wait) and every critical section (lock, mode, fencing
//! token, session, wall-clock start and end, the first `Suspended`/`Lost` heard
//! on the guard's loss receiver, the guard's status at grant and at the end,
//! release outcome) to their own file, one `write` per line. Every lock kind
//! hands out the same guard, so all of this comes from the guard; a
//! multi-lock's guard gives its worst member's status, every member's events on
//! one receiver, and each member's node and token (one `S`/`E` line each). At the
//! end the coordinator runs the checker on those logs and lists the lock tree
//! through a fresh client; it prints acquisitions by kind, faults by kind,
//! violations, leaked nodes and the longest wait, and exits with 1 on any
//! violation or leak (3 when a fault kind never happened, 2 on a usage or
//! set-up error). `--check DIR` runs the checker on saved logs.
//!
//! The log format is described in [`zk_campaign::history`], the checker's
//! rules in [`zk_campaign::checker`]. Timed acquires that return later than
//! their deadline plus a margin (`--overshoot-margin-ms`, default 50 ms times
//! `ZK_TEST_TIMING`) are reported per fault kind; `--max-overshoot-ms` makes an
//! overshoot beyond it a violation.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{CommandFactory, Parser};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::framework::CuratorFramework;
use zk_framework::retry::ExponentialBackoffRetry;
use zk_recipes::{
    Error as LockError, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    LockEvent, LockStatus, MultiLock,
};
use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::embedded::ServerConfig;
use zk_testing::proxy::FaultProxy;
use zk_testing::TestingServer;

use zk_campaign::checker::{check_dir, leak_report, leaked_nodes, CheckOptions};

const ROOT: &str = "/campaign";
const MUTEX_PATH: &str = "/campaign/mutex";
const RW_PATH: &str = "/campaign/rw";
const SEM_PATH: &str = "/campaign/sem";

// ---------------------------------------------------------------------------
// Small helpers: time, PRNG, hex, error kinds.

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// SplitMix64: tiny, deterministic, good enough to pick faults and hold times.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut r = Rng(seed);
        r.next_u64();
        r
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// Uniform in `lo..=hi` milliseconds.
    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi.saturating_sub(lo) + 1))
    }

    /// `d` times a factor uniform in `lo..hi`.
    fn scale(&mut self, d: Duration, lo: f64, hi: f64) -> Duration {
        let f = lo + (hi - lo) * (self.below(1_000_000) as f64 / 1_000_000.0);
        d.mul_f64(f)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The first word of a `Debug` rendering: the variant name.
fn variant(debug: &str) -> String {
    let w: String = debug.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if w.is_empty() {
        "?".into()
    } else {
        w
    }
}

/// A one-word name for a recipe error (`ZooKeeper.ConnectionLoss`, `NotOwner`,
/// `Multiple[ZooKeeper.ConnectionLoss+ZooKeeper.ConnectionLoss]`).
fn err_kind(e: &LockError) -> String {
    match e {
        LockError::ZooKeeper(z) => format!("ZooKeeper.{}", variant(&format!("{z:?}"))),
        LockError::Multiple(v) => format!("Multiple[{}]", v.iter().map(err_kind).collect::<Vec<_>>().join("+")),
        other => variant(&format!("{other:?}")),
    }
}

fn status_str(s: LockStatus) -> &'static str {
    match s {
        LockStatus::Held => "Held",
        LockStatus::Uncertain => "Uncertain",
        LockStatus::Lost => "Lost",
    }
}

/// A file written one whole line per `write` (O_APPEND), so lines from threads
/// never interleave and a `kill -9` loses at most the line being written.
#[derive(Debug)]
struct LineLog(Mutex<File>);

impl LineLog {
    fn open(path: &Path) -> io::Result<LineLog> {
        Ok(LineLog(Mutex::new(
            OpenOptions::new().create(true).append(true).open(path)?,
        )))
    }

    fn line(&self, s: &str) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = String::with_capacity(s.len() + 1);
        buf.push_str(s);
        buf.push('\n');
        let _ = f.write_all(buf.as_bytes());
    }
}

// ---------------------------------------------------------------------------
// Options.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BackendKind {
    Embedded,
    Apache,
    Ensemble,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Run,
    Worker,
    Check(PathBuf),
    Leaks(String),
}

const USAGE: &str = "\
zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
                   [--session-ms N] [--apache | --ensemble] [--dir DIR] [--hold-ms N]
                   [--long-hold-permille N] [--think-ms N] [--acquire-timeout-ms N]
                   [--short-timeout-percent N] [--overshoot-margin-ms N] [--max-overshoot-ms N]
       zk-campaign --check DIR [--connect HOST:PORT] [--overshoot-margin-ms N] [--max-overshoot-ms N]
       zk-campaign --leaks HOST:PORT [--root /campaign] [--leak-wait-ms N]";

/// The command line (clap); [`Opts`] is what the rest of the program uses.
#[derive(Debug, Parser)]
#[command(
    name = "zk-campaign",
    about = "A Jepsen-style fault campaign for the lock recipes (see scripts/campaign.sh)",
    override_usage = USAGE,
    args_override_self = true,
    disable_version_flag = true,
    after_help = "Exit status: 0 clean; 1 a violation or a leaked node; 3 a fault kind never \
                  happened; 2 a usage or set-up error."
)]
struct Cli {
    /// Run as a worker process (started by the coordinator).
    #[arg(long, hide = true, overrides_with_all = ["check", "leaks"])]
    worker: bool,
    /// Check the logs of a finished campaign in DIR.
    #[arg(long, value_name = "DIR", overrides_with_all = ["worker", "leaks"])]
    check: Option<PathBuf>,
    /// List the lock nodes left under --root on the server HOST:PORT.
    #[arg(long, value_name = "HOST:PORT", overrides_with_all = ["worker", "check"])]
    leaks: Option<String>,
    /// How long the load and the faults run [default: 75, or 3600 with --acquisitions].
    #[arg(long, value_name = "N")]
    seconds: Option<f64>,
    /// Stop after this many acquisitions.
    #[arg(long, value_name = "N")]
    acquisitions: Option<u64>,
    /// The fault schedule's seed [default: from the clock; printed].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Worker processes.
    #[arg(long, value_name = "N", default_value_t = 4)]
    workers: usize,
    /// Threads per worker.
    #[arg(long, value_name = "N", default_value_t = 5)]
    threads: usize,
    /// Session timeout [default: 3000 embedded, 4000 Apache, 6000 ensemble].
    #[arg(long, value_name = "N")]
    session_ms: Option<u64>,
    /// A standalone Apache ZooKeeper instead of the embedded server.
    #[arg(long, overrides_with = "ensemble")]
    apache: bool,
    /// A 3-node Apache ZooKeeper ensemble.
    #[arg(long, overrides_with = "apache")]
    ensemble: bool,
    /// Where the logs go [default: a new directory under the temp dir].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Longest ordinary hold.
    #[arg(long, value_name = "N", default_value_t = 15)]
    hold_ms: u64,
    /// Per mille of holds lasting 0.5-1.5 session timeouts.
    #[arg(long, value_name = "N", default_value_t = 5)]
    long_hold_permille: u64,
    /// Longest pause between attempts.
    #[arg(long, value_name = "N", default_value_t = 10)]
    think_ms: u64,
    /// The longest acquire timeout (every acquire is a timed `try_acquire_for`).
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    acquire_timeout_ms: u64,
    /// Percent of acquires with a short timeout instead (a fifth of them zero,
    /// the rest 10-2000 ms), so that deadlines are reached under every fault.
    #[arg(long, value_name = "N", default_value_t = 25)]
    short_timeout_percent: u64,
    /// A timed acquire returning later than its deadline plus this is "late" in
    /// the report [default: 50 x ZK_TEST_TIMING].
    #[arg(long, value_name = "N")]
    overshoot_margin_ms: Option<f64>,
    /// Make an acquire returning more than N ms after its deadline a violation
    /// [default: report overshoots only].
    #[arg(long, value_name = "N")]
    max_overshoot_ms: Option<f64>,
    /// Worker: its slot.
    #[arg(long, hide = true, value_name = "N", default_value_t = 0)]
    slot: usize,
    /// Worker: the server; --check: list leaks there too.
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Worker: its log file.
    #[arg(long, hide = true, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Worker: stop when this file exists.
    #[arg(long, hide = true, value_name = "FILE")]
    stop: Option<PathBuf>,
    /// --leaks: the subtree to list.
    #[arg(long, value_name = "PATH", default_value = ROOT)]
    root: String,
    /// --leaks, --check: how long to wait for expiring nodes to go [default: 10000].
    #[arg(long, value_name = "N")]
    leak_wait_ms: Option<u64>,
}

#[derive(Debug, Clone)]
struct Opts {
    mode: Mode,
    seconds: Option<f64>,
    acquisitions: Option<u64>,
    seed: Option<u64>,
    workers: usize,
    threads: usize,
    session_ms: Option<u64>,
    backend: BackendKind,
    dir: Option<PathBuf>,
    hold_ms: u64,
    long_hold_permille: u64,
    think_ms: u64,
    acquire_timeout_ms: u64,
    short_timeout_percent: u64,
    check: CheckOptions,
    // worker role
    slot: usize,
    connect: Option<String>,
    log: Option<PathBuf>,
    stop: Option<PathBuf>,
    // leaks
    root: String,
    leak_wait_ms: Option<u64>,
}

fn millis(name: &str, ms: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| format!("{name}: {ms} is not a number of milliseconds"))
}

impl Opts {
    /// Parses the arguments after the program name. `Ok(None)`: `--help`.
    fn parse(args: &[String]) -> Result<Option<Opts>, String> {
        let argv = std::iter::once("zk-campaign".to_string()).chain(args.iter().cloned());
        let c = match Cli::try_parse_from(argv) {
            Ok(c) => c,
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => return Ok(None),
            Err(e) => {
                let text = e.render().to_string();
                let line = text.lines().next().unwrap_or("invalid arguments");
                return Err(line.strip_prefix("error: ").unwrap_or(line).to_string());
            }
        };
        let mut check = CheckOptions::default();
        if let Some(ms) = c.overshoot_margin_ms {
            check.overshoot_margin = millis("--overshoot-margin-ms", ms)?;
        }
        if let Some(ms) = c.max_overshoot_ms {
            check.max_overshoot = Some(millis("--max-overshoot-ms", ms)?);
        }
        let mode = match (c.worker, c.check, c.leaks) {
            (true, _, _) => Mode::Worker,
            (_, Some(dir), _) => Mode::Check(dir),
            (_, _, Some(cs)) => Mode::Leaks(cs),
            _ => Mode::Run,
        };
        let o = Opts {
            mode,
            seconds: c.seconds,
            acquisitions: c.acquisitions,
            seed: c.seed,
            workers: c.workers,
            threads: c.threads,
            session_ms: c.session_ms,
            backend: if c.ensemble {
                BackendKind::Ensemble
            } else if c.apache {
                BackendKind::Apache
            } else {
                BackendKind::Embedded
            },
            dir: c.dir,
            hold_ms: c.hold_ms,
            long_hold_permille: c.long_hold_permille,
            think_ms: c.think_ms,
            acquire_timeout_ms: c.acquire_timeout_ms,
            short_timeout_percent: c.short_timeout_percent,
            check,
            slot: c.slot,
            connect: c.connect,
            log: c.log,
            stop: c.stop,
            root: c.root,
            leak_wait_ms: c.leak_wait_ms,
        };
        if o.mode == Mode::Run {
            if o.workers < 1 || o.threads < 1 {
                return Err("--workers and --threads must be at least 1".into());
            }
            if o.acquire_timeout_ms == 0 {
                return Err("--acquire-timeout-ms must be positive".into());
            }
            if o.short_timeout_percent > 100 {
                return Err("--short-timeout-percent must be at most 100".into());
            }
        }
        Ok(Some(o))
    }

    fn session(&self) -> Duration {
        Duration::from_millis(self.session_ms.unwrap_or(match self.backend {
            BackendKind::Embedded => 3000,
            BackendKind::Apache => 4000,
            BackendKind::Ensemble => 6000,
        }))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match Opts::parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{}", Cli::command().render_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zk-campaign: {e}\nusage: {USAGE}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = env_logger::try_init();
    }
    match opts.mode.clone() {
        Mode::Worker => worker_main(&opts),
        Mode::Run => coordinator_main(&opts),
        Mode::Check(dir) => check_main(&dir, opts.connect.as_deref(), &opts),
        Mode::Leaks(cs) => {
            let wait = Duration::from_millis(opts.leak_wait_ms.unwrap_or(10_000));
            match check_leaks(&cs, &opts.root, wait) {
                Ok(leaks) => {
                    print_leaks(&leaks);
                    if leaks.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("zk-campaign: leak check failed: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The worker process.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mutex,
    Read,
    Write,
    Semaphore,
    Multi,
}

impl Kind {
    fn mode(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Semaphore => "semaphore",
            Kind::Multi => "multi",
        }
    }

    fn lock(self) -> &'static str {
        match self {
            Kind::Mutex => MUTEX_PATH,
            Kind::Read | Kind::Write => RW_PATH,
            Kind::Semaphore => SEM_PATH,
            Kind::Multi => "multi",
        }
    }

    fn pick(rng: &mut Rng) -> Kind {
        match rng.below(100) {
            0..=24 => Kind::Mutex,
            25..=44 => Kind::Read,
            45..=59 => Kind::Write,
            60..=79 => Kind::Semaphore,
            _ => Kind::Multi,
        }
    }
}

struct Worker {
    pid: u32,
    slot: usize,
    log: LineLog,
    client: CuratorFramework,
    stop: AtomicBool,
    acquire_timeout: Duration,
    /// Percent of acquires with a short timeout (0 or 10-2000 ms).
    short_timeout_percent: u64,
    hold_max_ms: u64,
    /// Per mille of sections held for 0.5–1.5 session timeouts, so that faults
    /// catch holders in the middle of their work.
    long_hold_permille: u64,
    session: Duration,
    think_max_ms: u64,
    /// How long a holder whose lock looks lost waits for the loss signal.
    grace: Duration,
}

/// One lock of a critical section (a `MultiLock` has three).
struct Member {
    lock: &'static str,
    token: i64,
    /// The lock node's name (`-` when it is not known).
    node: String,
}

impl Member {
    fn new(lock: &'static str, token: i64, node: &str) -> Member {
        let name = node.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("-");
        Member {
            lock,
            token,
            node: name.to_string(),
        }
    }
}

/// The lock path of a member of the campaign's multi-lock, from its node's path.
fn member_lock(node: &str) -> &'static str {
    [MUTEX_PATH, RW_PATH, SEM_PATH]
        .into_iter()
        .find(|p| node.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')))
        .unwrap_or("?")
}

/// The members of a held lock, from its guard's nodes (joined by `,` for a
/// multi-lock) and tokens (in the same order).
fn members(kind: Kind, nodes: &str, tokens: &[i64]) -> Vec<Member> {
    match kind {
        Kind::Multi => nodes
            .split(',')
            .zip(tokens)
            .map(|(n, t)| Member::new(member_lock(n), *t, n))
            .collect(),
        _ => vec![Member::new(kind.lock(), tokens.first().copied().unwrap_or(0), nodes)],
    }
}

/// What the holder hears on its guard's loss receiver (for a multi-lock, the
/// events of every member on one channel), and the guard's status.
struct Signal {
    rx: Receiver<LockEvent>,
    closed: bool,
    told: Option<(u64, LockEvent)>,
    told_late: Option<u64>,
    st0: &'static str,
    st_end: &'static str,
}

impl Signal {
    fn new(rx: Receiver<LockEvent>, st0: LockStatus) -> Signal {
        Signal {
            rx,
            closed: false,
            told: None,
            told_late: None,
            st0: status_str(st0),
            st_end: status_str(st0),
        }
    }
}

fn is_loss(ev: LockEvent) -> bool {
    matches!(ev, LockEvent::Suspended | LockEvent::Lost)
}

/// Waits until `until` for a `Suspended`/`Lost`. While holding (`late ==
/// false`) it records `told` and returns at once (the holder stops working);
/// before a release (`late == true`) it records `told_late`.
fn wait_for_loss(sig: &mut Signal, until: Instant, late: bool) {
    loop {
        let now = Instant::now();
        if now >= until {
            return;
        }
        if sig.closed || sig.told.is_some() || (late && sig.told_late.is_some()) {
            if !late {
                std::thread::sleep(until - now); // keep "working" until the end of the hold
            }
            return;
        }
        match sig.rx.recv_timeout(until - now) {
            Ok(ev) if is_loss(ev) => {
                let t = now_ns();
                if late {
                    sig.told_late = Some(t);
                } else {
                    sig.told = Some((t, ev));
                }
                return;
            }
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => return,
            Err(RecvTimeoutError::Disconnected) => sig.closed = true,
        }
    }
}

/// Takes every pending event without waiting; records the first loss (at
/// `at`, or now).
fn drain(sig: &mut Signal, at: Option<u64>) {
    while sig.told.is_none() {
        match sig.rx.try_recv() {
            Ok(ev) if is_loss(ev) => sig.told = Some((at.unwrap_or_else(now_ns), ev)),
            Ok(_) => {}
            Err(_) => break,
        }
    }
}

struct Attempt<'a> {
    w: &'a Worker,
    thr: usize,
    att: u64,
    kind: Kind,
    started: Instant,
}

impl Attempt<'_> {
    fn result(&self, outcome: &str, err: &str) {
        let wait = self.started.elapsed().as_nanos() as u64;
        self.w.line(&format!(
            "R {} {} {} {} {} {} {outcome} {err} {wait}",
            self.w.pid,
            self.thr,
            self.att,
            self.kind.lock(),
            self.kind.mode(),
            now_ns()
        ));
    }

    /// Records the grant and the section start (the loss receiver is already
    /// subscribed); an event already queued means the holder was told at grant.
    fn begin(&self, members: Vec<Member>, mut sig: Signal) -> Section<'_> {
        self.result("acquired", "-");
        let sid = format!("{:x}", self.w.client.session_id());
        let start = now_ns();
        drain(&mut sig, Some(start));
        for m in &members {
            self.w.line(&format!(
                "S {} {} {} {} {} {} {sid} {start} {}",
                self.w.pid,
                self.thr,
                self.att,
                m.lock,
                self.kind.mode(),
                m.token,
                m.node
            ));
        }
        Section {
            a: self,
            members,
            sig,
            sid,
            start,
            end: start,
            connected: true,
        }
    }
}

struct Section<'a> {
    a: &'a Attempt<'a>,
    members: Vec<Member>,
    sig: Signal,
    sid: String,
    start: u64,
    end: u64,
    connected: bool,
}

impl Section<'_> {
    /// "Works" for `hold`, stopping early at the first loss signal, then checks
    /// the receiver once more, records the guard's status and the end.
    fn hold(&mut self, hold: Duration, status: impl Fn() -> LockStatus) {
        if self.sig.told.is_none() {
            wait_for_loss(&mut self.sig, Instant::now() + hold, false);
        }
        drain(&mut self.sig, None);
        self.end = now_ns();
        self.sig.st_end = status_str(status());
        // Before the release: a worker killed from here on has finished its
        // work, and the lock may be free before its `E` lines are written.
        let a = self.a;
        a.w.line(&format!("D {} {} {} {}", a.w.pid, a.thr, a.att, self.end));
    }

    /// Before releasing: a holder whose lock looks lost (status not `Held`, or
    /// the client disconnected) and that heard nothing yet waits a bounded time
    /// for the signal, so a late signal is told apart from none at all.
    fn before_release(&mut self) {
        self.connected = self.a.w.client.is_connected();
        if self.sig.told.is_none() && (!self.connected || matches!(self.sig.st_end, "Uncertain" | "Lost")) {
            wait_for_loss(&mut self.sig, Instant::now() + self.a.w.grace, true);
        }
    }

    fn finish(self, release: &Result<(), LockError>, took: Duration) {
        let rel = match release {
            Ok(()) => "ok".to_string(),
            Err(e) => err_kind(e),
        };
        let a = self.a;
        let sig = &self.sig;
        let (told, ev) = match sig.told {
            Some((t, ev)) => (t.to_string(), format!("{ev:?}")),
            None => ("-".into(), "-".into()),
        };
        let late = sig.told_late.map_or("-".to_string(), |t| t.to_string());
        for m in &self.members {
            a.w.line(&format!(
                "E {} {} {} {} {} {} {} {} {} {told} {ev} {late} {} {} {} {rel} {}",
                a.w.pid,
                a.thr,
                a.att,
                m.lock,
                a.kind.mode(),
                m.token,
                self.sid,
                self.start,
                self.end,
                sig.st0,
                sig.st_end,
                u8::from(self.connected),
                took.as_nanos(),
            ));
        }
    }
}

impl Worker {
    fn line(&self, s: &str) {
        self.log.line(s);
    }

    /// This attempt's timeout: mostly the full one, sometimes short or zero.
    fn pick_timeout(&self, rng: &mut Rng) -> Duration {
        if rng.below(100) >= self.short_timeout_percent {
            self.acquire_timeout
        } else if rng.below(5) == 0 {
            Duration::ZERO
        } else {
            rng.ms(10, 2000).min(self.acquire_timeout)
        }
    }

    fn run_thread(&self, thr: usize, seed: u64) -> Result<(), String> {
        let c = &self.client;
        let e = |e: LockError| e.to_string();
        let mutex = InterProcessMutex::new(c, MUTEX_PATH).map_err(e)?;
        let rw = InterProcessReadWriteLock::new(c, RW_PATH).map_err(e)?;
        let sem = InterProcessSemaphoreMutex::new(c, SEM_PATH).map_err(e)?;
        // The multi-lock's own instances, on the same paths.
        let m_rw = InterProcessReadWriteLock::new(c, RW_PATH).map_err(e)?;
        let multi = MultiLock::new(vec![
            Arc::new(InterProcessMutex::new(c, MUTEX_PATH).map_err(e)?) as Arc<dyn InterProcessLock>,
            Arc::new(InterProcessSemaphoreMutex::new(c, SEM_PATH).map_err(e)?) as Arc<dyn InterProcessLock>,
            Arc::new(m_rw.write_lock().clone()) as Arc<dyn InterProcessLock>,
        ])
        .map_err(e)?;
        let mut rng = Rng::new(seed);
        let mut att = 0u64;
        while !self.stop.load(Ordering::SeqCst) {
            att += 1;
            let kind = Kind::pick(&mut rng);
            let hold = if rng.below(1000) < self.long_hold_permille {
                rng.scale(self.session, 0.5, 1.5)
            } else {
                Duration::from_millis(rng.below(self.hold_max_ms + 1))
            };
            let timeout = self.pick_timeout(&mut rng);
            // Every acquire is timed: its deadline goes into the history.
            self.line(&format!(
                "A {} {thr} {att} {} {} {} {}",
                self.pid,
                kind.lock(),
                kind.mode(),
                now_ns(),
                timeout.as_nanos()
            ));
            let a = Attempt {
                w: self,
                thr,
                att,
                kind,
                started: Instant::now(),
            };
            let mut failed = false;
            // Every kind hands out the same guard type (over its own lock):
            // status, loss receiver, nodes and tokens come from the guard (a
            // multi-lock's: its worst member's status, every member's events,
            // node and token).
            macro_rules! section {
                ($r:expr) => {
                    match $r {
                        Ok(Some(g)) => {
                            let sig = Signal::new(g.loss_receiver(), g.status());
                            let mut s = a.begin(members(kind, &g.lock_path(), &g.fencing_tokens()), sig);
                            s.hold(hold, || g.status());
                            s.before_release();
                            let released = Instant::now();
                            let r = g.release();
                            s.finish(&r, released.elapsed());
                        }
                        Ok(None) => a.result("timeout", "-"),
                        Err(e) => {
                            failed = true;
                            a.result("error", &err_kind(&e));
                        }
                    }
                };
            }
            match kind {
                Kind::Mutex => section!(mutex.try_acquire_for(timeout)),
                Kind::Read => section!(rw.read_lock().try_acquire_for(timeout)),
                Kind::Write => section!(rw.write_lock().try_acquire_for(timeout)),
                Kind::Semaphore => section!(sem.try_acquire_for(timeout)),
                Kind::Multi => section!(multi.try_acquire_for(timeout)),
            }
            // Think; a little longer after an error, so a dead server is not
            // hammered in a tight loop.
            let think = rng.below(self.think_max_ms + 1) + if failed { 20 + rng.below(80) } else { 0 };
            std::thread::sleep(Duration::from_millis(think));
        }
        Ok(())
    }
}

fn worker_main(o: &Opts) -> ExitCode {
    let (Some(connect), Some(log), Some(stop)) = (o.connect.clone(), o.log.clone(), o.stop.clone()) else {
        eprintln!("zk-campaign --worker needs --connect, --log and --stop");
        return ExitCode::from(2);
    };
    let parent = std::os::unix::process::parent_id();
    let session = o.session();
    let log = match LineLog::open(&log) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("zk-campaign worker: cannot open {}: {e}", log.display());
            return ExitCode::from(2);
        }
    };
    let client = match CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(session)
        .connection_timeout(session)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zk-campaign worker: client: {e}");
            return ExitCode::from(2);
        }
    };
    // A worker may start in the middle of a fault: go on even if not connected
    // yet (its first attempts then fail with typed errors).
    let _ = client.block_until_connected(session * 5);
    let w = Worker {
        pid: std::process::id(),
        slot: o.slot,
        log,
        client,
        stop: AtomicBool::new(false),
        acquire_timeout: Duration::from_millis(o.acquire_timeout_ms),
        short_timeout_percent: o.short_timeout_percent,
        hold_max_ms: o.hold_ms,
        long_hold_permille: o.long_hold_permille,
        session,
        think_max_ms: o.think_ms,
        grace: session,
    };
    w.line(&format!("H {} {} {}", w.pid, w.slot, now_ns()));
    let seed = o.seed.unwrap_or(0);
    let mut failed = false;
    std::thread::scope(|s| {
        let w = &w;
        // The watcher: the stop file, the parent's death, session changes.
        s.spawn(move || {
            let mut last = 0i64;
            while !w.stop.load(Ordering::SeqCst) {
                if stop.exists() || std::os::unix::process::parent_id() != parent {
                    w.stop.store(true, Ordering::SeqCst);
                    break;
                }
                let sid = w.client.session_id();
                if sid != 0 && sid != last {
                    last = sid;
                    let pwd = w.client.zookeeper_client().session_password();
                    w.line(&format!("Z {} {} {} {sid:x} {}", w.pid, w.slot, now_ns(), hex(&pwd)));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let handles: Vec<_> = (0..o.threads)
            .map(|thr| {
                let tseed = seed ^ ((o.slot as u64) << 40) ^ ((w.pid as u64) << 8) ^ thr as u64;
                s.spawn(move || w.run_thread(thr, tseed))
            })
            .collect();
        for (thr, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    eprintln!("zk-campaign worker {}: thread {thr}: {e}", w.pid);
                    failed = true;
                }
                Err(_) => {
                    eprintln!("zk-campaign worker {}: thread {thr} panicked", w.pid);
                    failed = true;
                }
            }
        }
        w.stop.store(true, Ordering::SeqCst);
    });
    w.client.close();
    w.line(&format!("X {} {}", w.pid, now_ns()));
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

// ---------------------------------------------------------------------------
// The coordinator: server, proxies, workers, faults.

enum Server {
    Embedded(TestingServer),
    Apache(TestingServer),
    Ensemble(Mutex<ApacheCluster>, Vec<String>),
}

const STANDALONE_KINDS: &[&str] = &[
    "partition-expire",
    "instant-expire",
    "cut",
    "drop-all",
    "pause-short",
    "pause-long",
    "restart",
    "kill-worker",
    "break-waiter",
];

const ENSEMBLE_KINDS: &[&str] = &[
    "partition-expire",
    "instant-expire",
    "cut",
    "drop-all",
    "pause-short",
    "pause-long",
    "stop-leader",
    "kill-leader",
    "stop-follower",
    "kill-follower",
    "kill-worker",
    "break-waiter",
];

impl Server {
    fn start(kind: BackendKind) -> io::Result<Server> {
        Ok(match kind {
            BackendKind::Embedded => Server::Embedded(TestingServer::embedded_with(ServerConfig::default())?),
            BackendKind::Apache => Server::Apache(TestingServer::apache_with(ApacheConfig::default())?),
            BackendKind::Ensemble => {
                if !zk_testing::apache::available() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "Apache ZooKeeper is not installed (apt-get install zookeeper) or java is missing",
                    ));
                }
                let c = ApacheCluster::start(3, ApacheConfig::default())?;
                let addrs = (0..c.len())
                    .map(|i| format!("127.0.0.1:{}", c.client_port(i)))
                    .collect();
                Server::Ensemble(Mutex::new(c), addrs)
            }
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Server::Embedded(_) => "embedded",
            Server::Apache(_) => "apache",
            Server::Ensemble(..) => "ensemble",
        }
    }

    fn addrs(&self) -> Vec<String> {
        match self {
            Server::Embedded(s) | Server::Apache(s) => vec![s.connect_string()],
            Server::Ensemble(_, a) => a.clone(),
        }
    }

    fn connect_string(&self) -> String {
        self.addrs().join(",")
    }

    fn kinds(&self) -> &'static [&'static str] {
        match self {
            Server::Ensemble(..) => ENSEMBLE_KINDS,
            _ => STANDALONE_KINDS,
        }
    }

    fn cluster(&self) -> std::sync::MutexGuard<'_, ApacheCluster> {
        match self {
            Server::Ensemble(c, _) => c.lock().unwrap_or_else(|e| e.into_inner()),
            _ => unreachable!("not an ensemble"),
        }
    }

    /// Undoes anything a fault may have left behind: resumes, restarts.
    fn heal(&self) -> io::Result<()> {
        match self {
            Server::Embedded(s) => {
                let e = s.embedded().expect("embedded");
                e.resume();
                if !e.is_running() {
                    e.restart()?;
                }
                Ok(())
            }
            Server::Apache(s) => s.resume(),
            Server::Ensemble(..) => {
                let mut c = self.cluster();
                for i in 0..c.len() {
                    let _ = c.resume(i);
                    if !c.is_running(i) {
                        c.restart(i)?;
                    }
                }
                c.wait_for_quorum(Duration::from_secs(60))
            }
        }
    }
}

struct Proc {
    child: Child,
    pid: u32,
}

struct Slot {
    proxies: Vec<FaultProxy>,
    proc_: Mutex<Option<Proc>>,
    gen: AtomicUsize,
}

/// The worker processes and their proxies. Dropping it kills every worker still
/// running (also when the coordinator panics).
struct Fleet {
    exe: PathBuf,
    dir: PathBuf,
    stop_file: PathBuf,
    slots: Vec<Slot>,
    common: Vec<String>,
    log: Arc<LineLog>,
}

impl Fleet {
    fn spawn(&self, slot: usize) -> io::Result<u32> {
        let s = &self.slots[slot];
        let gen = s.gen.fetch_add(1, Ordering::SeqCst);
        let log = self.dir.join(format!("worker-{slot}-{gen}.log"));
        let connect = s
            .proxies
            .iter()
            .map(FaultProxy::connect_string)
            .collect::<Vec<_>>()
            .join(",");
        let child = Command::new(&self.exe)
            .arg("--worker")
            .args(["--slot", &slot.to_string()])
            .args(["--connect", &connect])
            .arg("--log")
            .arg(&log)
            .arg("--stop")
            .arg(&self.stop_file)
            .args(&self.common)
            .args(["--seed", &(gen as u64 * 7919 + slot as u64).to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        let pid = child.id();
        *s.proc_.lock().unwrap_or_else(|e| e.into_inner()) = Some(Proc { child, pid });
        Ok(pid)
    }

    /// `kill -9` of the worker in `slot`; returns its pid. The time logged is
    /// taken after the process is reaped, so it is certainly dead by then.
    fn kill(&self, slot: usize) -> Option<u32> {
        let mut g = self.slots[slot].proc_.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = g.take()?;
        let _ = p.child.kill();
        let _ = p.child.wait();
        self.log.line(&format!("K {slot} {} {}", p.pid, now_ns()));
        Some(p.pid)
    }

    fn pid(&self, slot: usize) -> Option<u32> {
        self.slots[slot]
            .proc_
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|p| p.pid)
    }

    /// Waits for every worker to exit by itself (after the stop file), until
    /// `deadline`; kills and reports the rest. Returns the number of stragglers.
    fn wait_all(&self, deadline: Instant) -> usize {
        let mut stragglers = 0;
        for (slot, s) in self.slots.iter().enumerate() {
            let mut g = s.proc_.lock().unwrap_or_else(|e| e.into_inner());
            let Some(p) = g.as_mut() else { continue };
            let status = loop {
                match p.child.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                    _ => break None,
                }
            };
            match status {
                Some(st) => {
                    let code = st.code().map_or("signal".to_string(), |c| c.to_string());
                    self.log.line(&format!("W {} exit={code}", p.pid));
                }
                None => {
                    eprintln!("zk-campaign: worker {slot} (pid {}) did not stop; killing it", p.pid);
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                    self.log.line(&format!("W {} straggler", p.pid));
                    stragglers += 1;
                }
            }
            *g = None;
        }
        stragglers
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for s in &self.slots {
            if let Some(mut p) = s.proc_.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
            for p in &s.proxies {
                p.freeze(false);
            }
        }
    }
}

/// Latest session (id, password) reported by each worker slot.
type Sessions = Mutex<HashMap<usize, (i64, Vec<u8>)>>;

struct Faults<'a> {
    server: &'a Server,
    fleet: &'a Fleet,
    log: &'a LineLog,
    session: Duration,
    sessions: &'a Sessions,
    rng: Rng,
    /// A client of the coordinator's own (for `break-waiter`), made when needed.
    admin: Option<CuratorFramework>,
}

impl Faults<'_> {
    fn record(&self, kind: &str, start: u64, detail: &str) {
        self.log.line(&format!("F {kind} {start} {} {detail}", now_ns()));
        println!("fault {kind}: {detail}");
    }

    fn random_slot(&mut self) -> usize {
        self.rng.below(self.fleet.slots.len() as u64) as usize
    }

    /// An ensemble node index: the leader, or a running follower.
    fn node(&mut self, leader: bool) -> Option<usize> {
        let c = self.server.cluster();
        let l = c.leader()?;
        if leader {
            return Some(l);
        }
        let f: Vec<usize> = (0..c.len()).filter(|&i| i != l && c.is_running(i)).collect();
        drop(c);
        if f.is_empty() {
            None
        } else {
            Some(f[self.rng.below(f.len() as u64) as usize])
        }
    }

    fn pause_server(&mut self, d: Duration) -> io::Result<String> {
        match self.server {
            Server::Embedded(s) | Server::Apache(s) => {
                s.pause()?;
                std::thread::sleep(d);
                s.resume()?;
                Ok(format!("server paused {} ms", d.as_millis()))
            }
            Server::Ensemble(..) => {
                let i = self.node(true).ok_or_else(|| io::Error::other("no leader to pause"))?;
                self.server.cluster().pause(i)?;
                std::thread::sleep(d);
                self.server.cluster().resume(i)?;
                Ok(format!("leader {i} paused {} ms", d.as_millis()))
            }
        }
    }

    /// Stops (or kills) an ensemble node, waits a moment, restarts it.
    fn bounce_node(&mut self, leader: bool, kill: bool) -> io::Result<String> {
        let i = self
            .node(leader)
            .ok_or_else(|| io::Error::other("no such node (no quorum?)"))?;
        {
            let mut c = self.server.cluster();
            if kill {
                c.kill(i)?;
            } else {
                c.stop(i)?;
            }
        }
        let down = self.rng.ms(500, 3000);
        std::thread::sleep(down);
        let mut c = self.server.cluster();
        c.restart(i)?;
        c.wait_for_quorum(Duration::from_secs(60))?;
        Ok(format!(
            "node {i} ({}) {} for {} ms, restarted",
            if leader { "leader" } else { "follower" },
            if kill { "killed" } else { "stopped" },
            down.as_millis()
        ))
    }

    /// Deletes a waiting node (any but the first in its queue) of the mutex or
    /// of the semaphore's internal mutex, in one transaction with a check
    /// that the first node still exists: while it does, nothing behind it is
    /// granted, so the deleted node was a waiter's. Tries for a few seconds
    /// to find a queue with a waiter.
    fn break_waiter(&mut self) -> io::Result<String> {
        if self.admin.is_none() {
            let c = CuratorFramework::builder()
                .connect_string(self.server.connect_string())
                .session_timeout(Duration::from_secs(20))
                .connection_timeout(Duration::from_secs(5))
                .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
                .build()
                .map_err(io::Error::other)?;
            self.admin = Some(c);
        }
        let c = self.admin.as_ref().expect("just set");
        c.block_until_connected(Duration::from_secs(10))
            .map_err(io::Error::other)?;
        let mut queues = [MUTEX_PATH.to_string(), format!("{SEM_PATH}/locks")];
        if self.rng.below(2) == 1 {
            queues.swap(0, 1);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            for base in &queues {
                let Ok(mut kids) = c.get_children(base) else { continue };
                if kids.len() < 2 {
                    continue;
                }
                zk_framework::paths::sort_by_sequence(&mut kids, "lock-");
                let i = 1 + self.rng.below(kids.len() as u64 - 1) as usize;
                let (head, node) = (format!("{base}/{}", kids[0]), format!("{base}/{}", kids[i]));
                let ops = vec![zk_framework::Op::check(head, -1), zk_framework::Op::delete(&node, None)];
                if c.zookeeper_client().multi(ops).is_ok() {
                    return Ok(format!("waiting node {node} deleted (place {i} of {})", kids.len()));
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other("no waiter to break"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn inject(&mut self, kind: &str) -> io::Result<String> {
        let t = self.session;
        match kind {
            "partition-expire" => {
                let slot = self.random_slot();
                let margin = match self.server {
                    Server::Embedded(_) => Duration::from_millis(300),
                    _ => Duration::from_millis(1500), // Apache expires on 1 s ticks
                };
                let d = t * 3 / 2 + margin;
                let before = self
                    .sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&slot)
                    .cloned();
                for p in &self.fleet.slots[slot].proxies {
                    p.freeze(true);
                }
                std::thread::sleep(d);
                for p in &self.fleet.slots[slot].proxies {
                    p.freeze(false);
                }
                let expired = match (self.server, before) {
                    (Server::Embedded(s), Some((sid, _))) => {
                        let live = s.embedded().expect("embedded").sessions().iter().any(|x| x.id == sid);
                        if live {
                            " (session still live!)"
                        } else {
                            " (session expired)"
                        }
                    }
                    _ => "",
                };
                Ok(format!(
                    "worker {slot} (pid {:?}) partitioned {} ms{expired}",
                    self.fleet.pid(slot),
                    d.as_millis()
                ))
            }
            "instant-expire" => {
                let target = match self.server {
                    Server::Embedded(s) => {
                        // Prefer a session that holds or waits for a lock.
                        let all = s.embedded().expect("embedded").sessions();
                        let busy: Vec<_> = all.iter().filter(|x| !x.ephemerals.is_empty()).collect();
                        let pool: Vec<_> = if busy.is_empty() { all.iter().collect() } else { busy };
                        if pool.is_empty() {
                            return Err(io::Error::other("no session to expire"));
                        }
                        let x = pool[self.rng.below(pool.len() as u64) as usize];
                        (x.id, x.password.clone())
                    }
                    _ => {
                        let slot = self.random_slot();
                        self.sessions
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(&slot)
                            .cloned()
                            .ok_or_else(|| io::Error::other("no session reported yet"))?
                    }
                };
                self.log.line(&format!("I {:x} {}", target.0, now_ns()));
                match self.server {
                    Server::Embedded(s) | Server::Apache(s) => s.expire_session(target.0, &target.1)?,
                    Server::Ensemble(_, addrs) => {
                        let mut last = None;
                        for a in addrs {
                            match zk_testing::raw::RawConnection::connect(a, 30_000, Some((target.0, &target.1))) {
                                Ok((mut c, resp)) => {
                                    if resp.timeout > 0 {
                                        c.close_session()?;
                                    }
                                    last = None;
                                    break;
                                }
                                Err(e) => last = Some(e),
                            }
                        }
                        if let Some(e) = last {
                            return Err(e);
                        }
                    }
                }
                Ok(format!("session 0x{:x} expired by the server", target.0))
            }
            "cut" => {
                let slot = self.random_slot();
                for p in &self.fleet.slots[slot].proxies {
                    p.cut();
                }
                Ok(format!(
                    "worker {slot} (pid {:?}) connections cut",
                    self.fleet.pid(slot)
                ))
            }
            "drop-all" => match self.server {
                Server::Embedded(s) => {
                    let n = s.embedded().expect("embedded").drop_connections();
                    Ok(format!("{n} connections dropped by the server"))
                }
                _ => {
                    for s in &self.fleet.slots {
                        for p in &s.proxies {
                            p.cut();
                        }
                    }
                    Ok("every proxy cut".into())
                }
            },
            "pause-short" => {
                let d = self.rng.scale(t, 0.3, 0.7);
                self.pause_server(d)
            }
            "pause-long" => {
                let d = t * 3 / 2 + Duration::from_millis(300);
                self.pause_server(d)
            }
            "restart" => {
                let (Server::Embedded(s) | Server::Apache(s)) = self.server else {
                    return Err(io::Error::other("restart is for a standalone server"));
                };
                let down = self.rng.ms(200, 1000);
                s.stop()?;
                std::thread::sleep(down);
                s.restart()?;
                Ok(format!("server down {} ms", down.as_millis()))
            }
            "stop-leader" => self.bounce_node(true, false),
            "kill-leader" => self.bounce_node(true, true),
            "stop-follower" => self.bounce_node(false, false),
            "kill-follower" => self.bounce_node(false, true),
            "kill-worker" => {
                let slot = self.random_slot();
                let old = self.fleet.kill(slot);
                let new = self.fleet.spawn(slot)?;
                Ok(format!("worker {slot} pid {old:?} killed -9, replaced by pid {new}"))
            }
            "break-waiter" => self.break_waiter(),
            other => Err(io::Error::other(format!("unknown fault {other}"))),
        }
    }

    /// Injects faults until `stop`: a shuffled round of every kind, then random
    /// ones, with quiet gaps between them.
    fn run(&mut self, stop: &AtomicBool) {
        let kinds = self.server.kinds();
        let mut order: Vec<&str> = kinds.to_vec();
        for i in (1..order.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let mut n = 0usize;
        let sleep_checked = |d: Duration| {
            let until = Instant::now() + d;
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
            }
        };
        sleep_checked(Duration::from_millis(1500)); // let the workers start
        while !stop.load(Ordering::SeqCst) {
            let kind = if n < order.len() {
                order[n]
            } else {
                kinds[self.rng.below(kinds.len() as u64) as usize]
            };
            n += 1;
            let start = now_ns();
            match self.inject(kind) {
                Ok(detail) => self.record(kind, start, &detail),
                Err(e) => {
                    eprintln!("fault {kind} failed: {e}");
                    self.log.line(&format!("N {kind} {start} {e}"));
                    if let Err(e) = self.server.heal() {
                        eprintln!("healing after {kind} failed: {e}");
                    }
                }
            }
            let gap = self.rng.ms(300, 1500);
            sleep_checked(gap);
        }
        if let Some(c) = self.admin.take() {
            c.close();
        }
    }
}

/// Counts acquisitions and picks up session reports while the run goes on,
/// reading the worker logs incrementally.
#[derive(Default)]
struct Scanner {
    files: HashMap<PathBuf, (u64, String)>,
    acquired: u64,
}

impl Scanner {
    fn scan(&mut self, dir: &Path, sessions: &Sessions) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if !(name.starts_with("worker-") && name.ends_with(".log")) {
                continue;
            }
            let path = e.path();
            let (off, partial) = self.files.entry(path.clone()).or_default();
            let Ok(mut f) = File::open(&path) else { continue };
            if f.seek(SeekFrom::Start(*off)).is_err() {
                continue;
            }
            let mut buf = Vec::new();
            if f.read_to_end(&mut buf).is_err() {
                continue;
            }
            *off += buf.len() as u64;
            partial.push_str(&String::from_utf8_lossy(&buf));
            let Some(cut) = partial.rfind('\n') else { continue };
            let complete: String = partial.drain(..=cut).collect();
            for line in complete.lines() {
                let f: Vec<&str> = line.split(' ').collect();
                match f.first() {
                    Some(&"R") if f.get(7) == Some(&"acquired") => self.acquired += 1,
                    Some(&"Z") if f.len() >= 6 => {
                        if let (Ok(slot), Ok(sid), Some(pwd)) =
                            (f[2].parse::<usize>(), i64::from_str_radix(f[4], 16), unhex(f[5]))
                        {
                            sessions
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(slot, (sid, pwd));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

fn coordinator_main(o: &Opts) -> ExitCode {
    let seed = o.seed.unwrap_or_else(|| now_ns() % 1_000_000);
    let session = o.session();
    let seconds = match (o.seconds, o.acquisitions) {
        (Some(s), _) => s,
        (None, Some(_)) => 3600.0,
        (None, None) => 75.0,
    };
    let dir = o
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("zk-campaign-{seed}-{}", std::process::id())));
    if let Err(e) = prepare_dir(&dir) {
        eprintln!("zk-campaign: {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    // Workers (replacements too) run a pinned copy of this executable, so a
    // rebuild during a long run cannot mix two versions of the log format.
    let exe = match pin_executable(&dir) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("zk-campaign: cannot pin my own executable: {e}");
            return ExitCode::from(2);
        }
    };
    let wall = Instant::now();
    let server = match Server::start(o.backend) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zk-campaign: cannot start the server: {e}");
            return ExitCode::from(2);
        }
    };
    let log = match LineLog::open(&dir.join("coordinator.log")) {
        Ok(l) => Arc::new(l),
        Err(e) => {
            eprintln!("zk-campaign: {e}");
            return ExitCode::from(2);
        }
    };
    let kinds = server.kinds();
    println!(
        "zk-campaign: seed {seed}, {} server at {}, {} workers x {} threads, session {} ms, {} s{}, logs in {}",
        server.name(),
        server.connect_string(),
        o.workers,
        o.threads,
        session.as_millis(),
        seconds,
        o.acquisitions
            .map_or(String::new(), |a| format!(" or {a} acquisitions")),
        dir.display()
    );
    log.line(&format!(
        "P seed={seed} backend={} workers={} threads={} session_ms={} acquire_timeout_ms={} short_timeout_percent={} kinds={}",
        server.name(),
        o.workers,
        o.threads,
        session.as_millis(),
        o.acquire_timeout_ms,
        o.short_timeout_percent,
        kinds.join(",")
    ));
    let mut slots = Vec::new();
    for _ in 0..o.workers {
        let mut proxies = Vec::new();
        for a in server.addrs() {
            match FaultProxy::start(&a) {
                Ok(p) => proxies.push(p),
                Err(e) => {
                    eprintln!("zk-campaign: proxy: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        slots.push(Slot {
            proxies,
            proc_: Mutex::new(None),
            gen: AtomicUsize::new(0),
        });
    }
    let fleet = Fleet {
        exe,
        dir: dir.clone(),
        stop_file: dir.join("stop"),
        slots,
        common: vec![
            "--threads".into(),
            o.threads.to_string(),
            "--session-ms".into(),
            session.as_millis().to_string(),
            "--acquire-timeout-ms".into(),
            o.acquire_timeout_ms.to_string(),
            "--short-timeout-percent".into(),
            o.short_timeout_percent.to_string(),
            "--hold-ms".into(),
            o.hold_ms.to_string(),
            "--long-hold-permille".into(),
            o.long_hold_permille.to_string(),
            "--think-ms".into(),
            o.think_ms.to_string(),
        ],
        log: log.clone(),
    };
    for slot in 0..o.workers {
        if let Err(e) = fleet.spawn(slot) {
            eprintln!("zk-campaign: cannot start worker {slot}: {e}");
            return ExitCode::from(2);
        }
    }
    let sessions: Sessions = Mutex::new(HashMap::new());
    let stop_faults = AtomicBool::new(false);
    let run_start = Instant::now();
    let mut scanner = Scanner::default();
    std::thread::scope(|s| {
        /// Stops the fault thread even if this scope unwinds.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _stop = StopOnDrop(&stop_faults);
        let faults = s.spawn(|| {
            let mut f = Faults {
                server: &server,
                fleet: &fleet,
                log: &log,
                session,
                sessions: &sessions,
                rng: Rng::new(seed ^ 0x00FA_0175),
                admin: None,
            };
            f.run(&stop_faults);
        });
        let limit = Duration::from_secs_f64(seconds);
        let mut next_report = Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(200));
            scanner.scan(&dir, &sessions);
            let el = run_start.elapsed();
            if el >= next_report {
                println!("t={:>4}s acquisitions={}", el.as_secs(), scanner.acquired);
                next_report += Duration::from_secs(10);
            }
            if el >= limit || o.acquisitions.is_some_and(|a| scanner.acquired >= a) || faults.is_finished() {
                break;
            }
        }
        stop_faults.store(true, Ordering::SeqCst);
        if faults.join().is_err() {
            eprintln!("zk-campaign: the fault thread panicked");
        }
    });
    if let Err(e) = server.heal() {
        eprintln!("zk-campaign: final heal failed: {e}");
    }
    for s in &fleet.slots {
        for p in &s.proxies {
            p.freeze(false);
        }
    }
    let run_secs = run_start.elapsed().as_secs_f64();
    let _ = File::create(&fleet.stop_file);
    let deadline = Instant::now() + Duration::from_millis(o.acquire_timeout_ms) + session * 4 + Duration::from_secs(30);
    let stragglers = fleet.wait_all(deadline);
    if stragglers > 0 {
        eprintln!("zk-campaign: {stragglers} workers had to be killed at the end");
    }
    // Killed workers' sessions expire at the session timeout; the rest closed.
    let leaks = check_leaks(&server.connect_string(), ROOT, session * 3 + Duration::from_secs(15));
    let report = match check_dir(&dir, &o.check) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-campaign: cannot read the logs: {e}");
            return ExitCode::from(2);
        }
    };
    println!("== zk-campaign summary ==");
    println!(
        "seed: {seed}  backend: {}  workers: {} x {} threads  session: {} ms  run: {run_secs:.1} s  wall: {:.1} s",
        server.name(),
        o.workers,
        o.threads,
        session.as_millis(),
        wall.elapsed().as_secs_f64()
    );
    print!("{}", report.text);
    let leak_count = match &leaks {
        Ok(l) => {
            print_leaks(l);
            l.len()
        }
        Err(e) => {
            println!("leaked nodes: unknown ({e})");
            1
        }
    };
    println!("logs: {}", dir.display());
    drop(fleet);
    drop(server);
    if !report.violations.is_empty() || leak_count > 0 {
        ExitCode::from(1)
    } else if !report.missing.is_empty() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

fn pin_executable(dir: &Path) -> io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let pinned = dir.join("zk-campaign-worker");
    let _ = fs::remove_file(&pinned);
    if fs::hard_link(&exe, &pinned).is_err() {
        fs::copy(&exe, &pinned)?;
    }
    Ok(pinned)
}

fn prepare_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for e in fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if (name.starts_with("worker-") && name.ends_with(".log")) || name == "coordinator.log" || name == "stop" {
            fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Leaks.

/// Lists every node under `root` whose name carries Curator's protection
/// prefix `_c_` (every lock and lease node does), through a fresh client;
/// polls until none is left or `wait` passes.
fn check_leaks(cs: &str, root: &str, wait: Duration) -> Result<Vec<String>, String> {
    let client = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(5))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
        .build()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + wait;
    let result = loop {
        let listed = client
            .block_until_connected(Duration::from_secs(30))
            .and_then(|()| lock_nodes(&client, root));
        match listed {
            Ok(nodes) if nodes.is_empty() || Instant::now() >= deadline => break Ok(nodes),
            Err(e) if Instant::now() >= deadline => break Err(e.to_string()),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    client.close();
    result
}

fn lock_nodes(client: &CuratorFramework, path: &str) -> zk_framework::Result<Vec<String>> {
    let mut out = Vec::new();
    let kids = match client.get_children(path) {
        Ok(k) => k,
        Err(zk_framework::Error::NoNode { .. }) => return Ok(out),
        Err(e) => return Err(e),
    };
    for k in kids {
        let p = if path == "/" {
            format!("/{k}")
        } else {
            format!("{path}/{k}")
        };
        out.extend(leaked_nodes([p.as_str()]));
        out.extend(lock_nodes(client, &p)?);
    }
    Ok(out)
}

fn print_leaks(leaks: &[String]) {
    print!("{}", leak_report(leaks));
}

// ---------------------------------------------------------------------------
// The checker.

fn check_main(dir: &Path, connect: Option<&str>, o: &Opts) -> ExitCode {
    let report = match check_dir(dir, &o.check) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-campaign: cannot read {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    print!("{}", report.text);
    let mut leaks = 0;
    match connect {
        Some(cs) => match check_leaks(cs, &o.root, Duration::from_millis(o.leak_wait_ms.unwrap_or(10_000))) {
            Ok(l) => {
                print_leaks(&l);
                leaks = l.len();
            }
            Err(e) => {
                println!("leaked nodes: unknown ({e})");
                leaks = 1;
            }
        },
        None => println!("leaked nodes: not checked (no --connect)"),
    }
    if !report.violations.is_empty() || leaks > 0 {
        ExitCode::from(1)
    } else if !report.missing.is_empty() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
