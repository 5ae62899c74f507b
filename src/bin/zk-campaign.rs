//! `zk-campaign`: a Jepsen-style fault campaign for the lock recipes.
//!
//! ```text
//! zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
//!             [--session-ms N] [--apache | --ensemble] [--dir DIR] [--hold-ms N]
//!             [--long-hold-permille N] [--think-ms N] [--acquire-timeout-ms N]
//! zk-campaign --check DIR [--connect HOST:PORT]
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
//! | `stop-leader`, `kill-leader`, `stop-follower`, `kill-follower` | ensemble only: SIGTERM / SIGKILL of a node, then a restart |
//!
//! Workers log every acquire attempt (start, outcome, error kind, wait) and
//! every critical section (lock, mode, fencing token, session, wall-clock start
//! and end, the first `Suspended`/`Lost` heard on the guard's loss receiver,
//! status, release outcome) to their own file, one `write` per line. At the
//! end the coordinator runs the checker on those logs and lists the lock tree
//! through a fresh client; it prints acquisitions by kind, faults by kind,
//! violations, leaked nodes and the longest wait, and exits with 1 on any
//! violation or leak (3 when a fault kind never happened, 2 on a usage or
//! set-up error). `--check DIR` runs the checker on saved logs.
//!
//! The log format and the checker's rules are described at [`check_dir`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Select};
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

const ROOT: &str = "/campaign";
const MUTEX_PATH: &str = "/campaign/mutex";
const RW_PATH: &str = "/campaign/rw";
const SEM_PATH: &str = "/campaign/sem";

const USAGE: &str = "usage:
  zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
              [--session-ms N] [--apache | --ensemble] [--dir DIR] [--hold-ms N]
              [--long-hold-permille N] [--think-ms N] [--acquire-timeout-ms N]
  zk-campaign --check DIR [--connect HOST:PORT]
  zk-campaign --leaks HOST:PORT [--root /campaign] [--leak-wait-ms N]";

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

fn status_opt(s: Option<LockStatus>) -> &'static str {
    s.map_or("?", status_str)
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
    // worker role
    slot: usize,
    connect: Option<String>,
    log: Option<PathBuf>,
    stop: Option<PathBuf>,
    // leaks
    root: String,
    leak_wait_ms: Option<u64>,
}

impl Opts {
    fn parse(args: &[String]) -> Result<Opts, String> {
        let mut o = Opts {
            mode: Mode::Run,
            seconds: None,
            acquisitions: None,
            seed: None,
            workers: 4,
            threads: 5,
            session_ms: None,
            backend: BackendKind::Embedded,
            dir: None,
            hold_ms: 15,
            long_hold_permille: 5,
            think_ms: 10,
            acquire_timeout_ms: 30_000,
            slot: 0,
            connect: None,
            log: None,
            stop: None,
            root: ROOT.to_string(),
            leak_wait_ms: None,
        };
        let mut it = args.iter();
        fn val<'a>(it: &mut impl Iterator<Item = &'a String>, name: &str) -> Result<&'a String, String> {
            it.next().ok_or_else(|| format!("{name} needs a value"))
        }
        fn num<T: std::str::FromStr>(v: &str, name: &str) -> Result<T, String> {
            v.parse().map_err(|_| format!("{name}: bad number {v:?}"))
        }
        while let Some(a) = it.next() {
            match a.as_str() {
                "--worker" => o.mode = Mode::Worker,
                "--check" => o.mode = Mode::Check(PathBuf::from(val(&mut it, a)?)),
                "--leaks" => o.mode = Mode::Leaks(val(&mut it, a)?.clone()),
                "--seconds" => o.seconds = Some(num(val(&mut it, a)?, a)?),
                "--acquisitions" => o.acquisitions = Some(num(val(&mut it, a)?, a)?),
                "--seed" => o.seed = Some(num(val(&mut it, a)?, a)?),
                "--workers" => o.workers = num(val(&mut it, a)?, a)?,
                "--threads" => o.threads = num(val(&mut it, a)?, a)?,
                "--session-ms" => o.session_ms = Some(num(val(&mut it, a)?, a)?),
                "--apache" => o.backend = BackendKind::Apache,
                "--ensemble" => o.backend = BackendKind::Ensemble,
                "--dir" => o.dir = Some(PathBuf::from(val(&mut it, a)?)),
                "--hold-ms" => o.hold_ms = num(val(&mut it, a)?, a)?,
                "--long-hold-permille" => o.long_hold_permille = num(val(&mut it, a)?, a)?,
                "--think-ms" => o.think_ms = num(val(&mut it, a)?, a)?,
                "--acquire-timeout-ms" => o.acquire_timeout_ms = num(val(&mut it, a)?, a)?,
                "--slot" => o.slot = num(val(&mut it, a)?, a)?,
                "--connect" => o.connect = Some(val(&mut it, a)?.clone()),
                "--log" => o.log = Some(PathBuf::from(val(&mut it, a)?)),
                "--stop" => o.stop = Some(PathBuf::from(val(&mut it, a)?)),
                "--root" => o.root = val(&mut it, a)?.clone(),
                "--leak-wait-ms" => o.leak_wait_ms = Some(num(val(&mut it, a)?, a)?),
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if o.mode == Mode::Run {
            if o.workers < 1 || o.threads < 1 {
                return Err("--workers and --threads must be at least 1".into());
            }
            if o.acquire_timeout_ms == 0 {
                return Err("--acquire-timeout-ms must be positive".into());
            }
        }
        Ok(o)
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
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zk-campaign: {e}\n{USAGE}");
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
    /// The lock node's name (`-` when the recipe does not expose it).
    node: String,
    rx: Receiver<LockEvent>,
    closed: bool,
    told: Option<(u64, LockEvent)>,
    told_late: Option<u64>,
    st0: &'static str,
    st_end: &'static str,
}

impl Member {
    fn with_node(mut self, node: Option<String>) -> Member {
        if let Some(n) = node.filter(|n| !n.is_empty()) {
            self.node = n.rsplit('/').next().unwrap_or(&n).to_string();
        }
        self
    }

    fn new(lock: &'static str, token: i64, rx: Receiver<LockEvent>, st0: &'static str) -> Member {
        Member {
            lock,
            token,
            node: "-".into(),
            rx,
            closed: false,
            told: None,
            told_late: None,
            st0,
            st_end: st0,
        }
    }
}

fn is_loss(ev: LockEvent) -> bool {
    matches!(ev, LockEvent::Suspended | LockEvent::Lost)
}

/// Waits until `until` for a `Suspended`/`Lost` on the receivers of members
/// that have not told yet. While holding (`late == false`) it records `told`
/// and returns at the first one (the holder stops working); before a release
/// (`late == true`) it records `told_late` and waits for every member.
fn wait_for_loss(members: &mut [Member], until: Instant, late: bool) {
    loop {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let idx: Vec<usize> = (0..members.len())
            .filter(|&i| {
                let m = &members[i];
                !m.closed && m.told.is_none() && (!late || m.told_late.is_none())
            })
            .collect();
        if idx.is_empty() {
            if !late {
                std::thread::sleep(until - now); // keep "working" until the end of the hold
            }
            return;
        }
        let mut sel = Select::new();
        for &i in &idx {
            sel.recv(&members[i].rx);
        }
        let Ok(op) = sel.select_timeout(until - now) else {
            return;
        };
        let i = idx[op.index()];
        match op.recv(&members[i].rx) {
            Ok(ev) if is_loss(ev) => {
                let t = now_ns();
                if late {
                    members[i].told_late = Some(t);
                } else {
                    members[i].told = Some((t, ev));
                    return;
                }
            }
            Ok(_) => {}
            Err(_) => members[i].closed = true,
        }
    }
}

/// Takes every pending event without waiting; records the first loss.
fn drain(members: &mut [Member]) {
    for m in members.iter_mut() {
        while m.told.is_none() {
            match m.rx.try_recv() {
                Ok(ev) if is_loss(ev) => m.told = Some((now_ns(), ev)),
                Ok(_) => {}
                Err(_) => break,
            }
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

    /// Records the grant and the section start (the loss receivers are already
    /// subscribed); an event already queued means the holder was told at grant.
    fn begin(&self, mut members: Vec<Member>) -> Section<'_> {
        self.result("acquired", "-");
        let sid = format!("{:x}", self.w.client.session_id());
        let start = now_ns();
        for m in members.iter_mut() {
            while m.told.is_none() {
                match m.rx.try_recv() {
                    Ok(ev) if is_loss(ev) => m.told = Some((start, ev)),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
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
    sid: String,
    start: u64,
    end: u64,
    connected: bool,
}

impl Section<'_> {
    /// "Works" for `hold`, stopping early at the first loss signal, then checks
    /// the receivers once more and records the end.
    fn hold(&mut self, hold: Duration) {
        if self.members.iter().all(|m| m.told.is_none()) {
            wait_for_loss(&mut self.members, Instant::now() + hold, false);
        }
        drain(&mut self.members);
        self.end = now_ns();
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
        let connected = self.connected;
        let needs = self
            .members
            .iter()
            .any(|m| m.told.is_none() && (!connected || matches!(m.st_end, "Uncertain" | "Lost")));
        if needs {
            wait_for_loss(&mut self.members, Instant::now() + self.a.w.grace, true);
        }
    }

    fn finish(self, release: &Result<(), LockError>) {
        let rel = match release {
            Ok(()) => "ok".to_string(),
            Err(e) => err_kind(e),
        };
        let a = self.a;
        for m in &self.members {
            let (told, ev) = match m.told {
                Some((t, ev)) => (t.to_string(), format!("{ev:?}")),
                None => ("-".into(), "-".into()),
            };
            let late = m.told_late.map_or("-".to_string(), |t| t.to_string());
            a.w.line(&format!(
                "E {} {} {} {} {} {} {} {} {} {told} {ev} {late} {} {} {} {rel}",
                a.w.pid,
                a.thr,
                a.att,
                m.lock,
                a.kind.mode(),
                m.token,
                self.sid,
                self.start,
                self.end,
                m.st0,
                m.st_end,
                u8::from(self.connected),
            ));
        }
    }
}

impl Worker {
    fn line(&self, s: &str) {
        self.log.line(s);
    }

    fn run_thread(&self, thr: usize, seed: u64) -> Result<(), String> {
        let c = &self.client;
        let e = |e: LockError| e.to_string();
        let mutex = InterProcessMutex::new(c, MUTEX_PATH).map_err(e)?;
        let rw = InterProcessReadWriteLock::new(c, RW_PATH).map_err(e)?;
        let sem = InterProcessSemaphoreMutex::new(c, SEM_PATH).map_err(e)?;
        // The multi-lock's own instances, on the same paths.
        let m_mutex = Arc::new(InterProcessMutex::new(c, MUTEX_PATH).map_err(e)?);
        let m_sem = Arc::new(InterProcessSemaphoreMutex::new(c, SEM_PATH).map_err(e)?);
        let m_rw = InterProcessReadWriteLock::new(c, RW_PATH).map_err(e)?;
        let m_write = Arc::new(m_rw.write_lock().clone());
        let multi = MultiLock::new(vec![
            m_mutex.clone() as Arc<dyn InterProcessLock>,
            m_sem.clone() as Arc<dyn InterProcessLock>,
            m_write.clone() as Arc<dyn InterProcessLock>,
        ])
        .map_err(e)?;
        let never = crossbeam_channel::never::<LockEvent>;
        let mut rng = Rng::new(seed);
        let timeout = self.acquire_timeout;
        let mut att = 0u64;
        while !self.stop.load(Ordering::SeqCst) {
            att += 1;
            let kind = Kind::pick(&mut rng);
            let hold = if rng.below(1000) < self.long_hold_permille {
                rng.scale(self.session, 0.5, 1.5)
            } else {
                Duration::from_millis(rng.below(self.hold_max_ms + 1))
            };
            self.line(&format!(
                "A {} {thr} {att} {} {} {}",
                self.pid,
                kind.lock(),
                kind.mode(),
                now_ns()
            ));
            let a = Attempt {
                w: self,
                thr,
                att,
                kind,
                started: Instant::now(),
            };
            let mut failed = false;
            let mut outcome = |r: Result<bool, LockError>| match r {
                Ok(true) => {}
                Ok(false) => a.result("timeout", "-"),
                Err(e) => {
                    failed = true;
                    a.result("error", &err_kind(&e));
                }
            };
            match kind {
                Kind::Mutex | Kind::Read | Kind::Write => {
                    // The three guard types differ; the bookkeeping does not.
                    macro_rules! section {
                        ($r:expr) => {
                            match $r {
                                Ok(Some(g)) => {
                                    let rx = g.loss_receiver();
                                    let st0 = status_str(g.status());
                                    let m = Member::new(kind.lock(), g.fencing_token(), rx, st0)
                                        .with_node(Some(g.lock_path()));
                                    let mut s = a.begin(vec![m]);
                                    s.hold(hold);
                                    s.members[0].st_end = status_str(g.status());
                                    s.before_release();
                                    let r = g.release();
                                    s.finish(&r);
                                }
                                Ok(None) => outcome(Ok(false)),
                                Err(e) => outcome(Err(e)),
                            }
                        };
                    }
                    match kind {
                        Kind::Mutex => section!(mutex.try_acquire_for(timeout)),
                        Kind::Read => section!(rw.read_lock().try_acquire_for(timeout)),
                        _ => section!(rw.write_lock().try_acquire_for(timeout)),
                    }
                }
                Kind::Semaphore => match sem.try_acquire_for(timeout) {
                    Ok(Some(g)) => {
                        let rx = sem.loss_receiver().unwrap_or_else(never);
                        let mut s = a.begin(vec![Member::new(SEM_PATH, g.fencing_token(), rx, "?")]);
                        s.hold(hold);
                        s.before_release();
                        let r = g.release();
                        s.finish(&r);
                    }
                    Ok(None) => outcome(Ok(false)),
                    Err(e) => outcome(Err(e)),
                },
                Kind::Multi => match multi.try_acquire_for(timeout) {
                    Ok(Some(g)) => {
                        let members = vec![
                            Member::new(
                                MUTEX_PATH,
                                m_mutex.fencing_token().unwrap_or(0),
                                m_mutex.loss_receiver().unwrap_or_else(never),
                                status_opt(m_mutex.status()),
                            )
                            .with_node(m_mutex.lock_path()),
                            Member::new(
                                SEM_PATH,
                                m_sem.fencing_token().unwrap_or(0),
                                m_sem.loss_receiver().unwrap_or_else(never),
                                "?",
                            ),
                            Member::new(
                                RW_PATH,
                                m_write.fencing_token().unwrap_or(0),
                                m_write.loss_receiver().unwrap_or_else(never),
                                "?",
                            )
                            .with_node(m_write.lock_path()),
                        ];
                        let mut s = a.begin(members);
                        s.hold(hold);
                        s.members[0].st_end = status_opt(m_mutex.status());
                        s.before_release();
                        let r = g.release();
                        s.finish(&r);
                    }
                    Ok(None) => outcome(Ok(false)),
                    Err(e) => outcome(Err(e)),
                },
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
        "P seed={seed} backend={} workers={} threads={} session_ms={} acquire_timeout_ms={} kinds={}",
        server.name(),
        o.workers,
        o.threads,
        session.as_millis(),
        o.acquire_timeout_ms,
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
    let report = match check_dir(&dir) {
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
        if k.contains("_c_") {
            out.push(p.clone());
        }
        out.extend(lock_nodes(client, &p)?);
    }
    Ok(out)
}

fn print_leaks(leaks: &[String]) {
    println!("leaked nodes: {}", leaks.len());
    for l in leaks.iter().take(20) {
        println!("  LEAK: {l}");
    }
}

// ---------------------------------------------------------------------------
// The checker.

fn check_main(dir: &Path, connect: Option<&str>, o: &Opts) -> ExitCode {
    let report = match check_dir(dir) {
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

#[derive(Debug)]
struct AttemptRec {
    lock: String,
    mode: String,
    result: Option<(String, String, u64)>, // outcome, error kind, wait ns
}

#[derive(Debug, Clone)]
struct EndRec {
    end: u64,
    told: Option<u64>,
    told_late: Option<u64>,
    st0: String,
    st_end: String,
    connected: bool,
    release: String,
}

#[derive(Debug, Clone)]
struct SecRec {
    pid: u32,
    thr: u32,
    att: u64,
    lock: String,
    mode: String,
    token: i64,
    sid: String,
    start: u64,
    end: Option<EndRec>,
}

impl SecRec {
    fn describe(&self) -> String {
        format!(
            "[pid {} thread {} attempt {} {} token {} session {}]",
            self.pid, self.thr, self.att, self.mode, self.token, self.sid
        )
    }
}

/// The result of [`check_dir`].
struct Report {
    text: String,
    violations: Vec<String>,
    missing: Vec<String>,
}

fn opt_u64(s: &str) -> Option<u64> {
    if s == "-" {
        None
    } else {
        s.parse().ok()
    }
}

/// Checks the logs of a campaign (`worker-*.log` and `coordinator.log` in
/// `dir`).
///
/// Worker lines (fields separated by one space; times are wall-clock
/// nanoseconds since the epoch):
///
/// * `H pid slot t` — the worker started; `X pid t` — it finished cleanly.
/// * `Z pid slot t session-hex password-hex` — its session changed.
/// * `A pid thread attempt lock mode t` — an acquire attempt began.
/// * `R pid thread attempt lock mode t outcome error-kind wait-ns` — it ended:
///   `acquired`, `timeout` or `error` (with the error kind).
/// * `S pid thread attempt lock mode token session start node` — a critical
///   section began (one line per lock of a multi-lock, mode `multi`); `node` is
///   the lock node's name, or `-` where the recipe does not expose it.
/// * `E pid thread attempt lock mode token session start end told told-event
///   told-late status-at-grant status-at-end connected-before-release release`
///   — it ended. `told` is when the first `Suspended`/`Lost` was received on the
///   guard's loss receiver while holding (`-`: never; equal to `start` when it
///   was already queued at grant); `told-late` when one came while the holder
///   waited before releasing a lock that looked lost.
/// * `D pid thread attempt end` — the work of a section is done; written before
///   the release, so a worker killed during its release is not blamed.
///
/// Coordinator lines: `P key=value…` (parameters), `F kind start end detail`
/// (a fault), `K slot pid t` (a worker was killed -9), `I session-hex t` (a
/// session was expired by the server at once), `W pid exit=N|straggler`.
///
/// Rules (each breach is a violation):
///
/// 1. **Exclusion.** On each lock, no two sections overlap unless both are
///    reads. A section counts as ending at `min(end, told)`: a holder told of a
///    loss before the overlap began is excused; a section told at grant is
///    empty. A killed worker's open section ends at its `D` line, or else when
///    it was killed. One more
///    excuse, counted apart: when the server expired a holder's session
///    *instantly* (`I`), no client can learn of it before another one is
///    granted the lock; such an overlap is "fenced" if that holder was told at
///    all and its fencing token is smaller than the other's.
/// 2. **Fencing.** On each lock, the tokens of exclusive sections (all but
///    reads; empty sections left out) increase strictly in start order. This
///    also covers what rule 1 cannot see: a multi-lock's sections start when
///    the whole set is held, but it may hold its first locks long before
///    (while it waits for the others); a lock granted to someone else in that
///    time comes out of token order.
/// 3. **Losses are reported.** A section whose lock was lost (status `Lost` or
///    `Uncertain` at the end, or a failed release while disconnected), or that
///    was `Uncertain`/`Lost` at grant, must have heard `Suspended`/`Lost`.
///    A release failing with `NotOwner` is a violation too.
/// 4. **No hangs.** Every attempt ended, unless its worker was killed -9;
///    no attempt took longer than its timeout plus 4 session timeouts plus 10 s;
///    every section ended (same excuse); every worker finished cleanly.
fn check_dir(dir: &Path) -> io::Result<Report> {
    let mut params: HashMap<String, String> = HashMap::new();
    let mut attempts: HashMap<(u32, u32, u64), AttemptRec> = HashMap::new();
    let mut sections: HashMap<(u32, u32, u64, String), SecRec> = HashMap::new();
    let mut killed: HashMap<u32, u64> = HashMap::new();
    let mut done: HashMap<(u32, u32, u64), u64> = HashMap::new();
    let mut instant: Vec<(String, u64)> = Vec::new();
    let mut started: HashSet<u32> = HashSet::new();
    let mut exited: HashSet<u32> = HashSet::new();
    let mut worker_status: Vec<(u32, String)> = Vec::new();
    let mut faults: BTreeMap<String, usize> = BTreeMap::new();
    let mut failed_faults = 0usize;
    let mut unparsed = 0usize;
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            (n.starts_with("worker-") && n.ends_with(".log")) || n == "coordinator.log"
        })
        .collect();
    files.sort();
    for path in &files {
        for line in BufReader::new(File::open(path)?).lines() {
            let Ok(line) = line else {
                unparsed += 1;
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            if parse_line(
                &line,
                &mut params,
                &mut attempts,
                &mut sections,
                &mut killed,
                &mut done,
                &mut instant,
                &mut started,
                &mut exited,
                &mut worker_status,
                &mut faults,
                &mut failed_faults,
            )
            .is_none()
            {
                unparsed += 1;
            }
        }
    }
    let session_ms: u64 = params.get("session_ms").and_then(|v| v.parse().ok()).unwrap_or(3000);
    let timeout_ms: u64 = params
        .get("acquire_timeout_ms")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    let overlong = (timeout_ms + 4 * session_ms + 10_000) * 1_000_000;
    let mut violations: Vec<String> = Vec::new();

    // Attempts.
    let mut acquired: BTreeMap<String, u64> = BTreeMap::new();
    let (mut timeouts, mut errors, mut inflight_killed) = (0u64, 0u64, 0u64);
    let mut error_kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut longest: Option<(u64, String)> = None;
    let mut keys: Vec<_> = attempts.keys().copied().collect();
    keys.sort();
    for k in keys {
        let a = &attempts[&k];
        match &a.result {
            None if killed.contains_key(&k.0) => inflight_killed += 1,
            None => violations.push(format!(
                "hung attempt: pid {} thread {} attempt {} ({} on {}) never ended",
                k.0, k.1, k.2, a.mode, a.lock
            )),
            Some((outcome, kind, wait)) => {
                match outcome.as_str() {
                    "acquired" => *acquired.entry(a.mode.clone()).or_default() += 1,
                    "timeout" => timeouts += 1,
                    _ => {
                        errors += 1;
                        *error_kinds.entry(kind.clone()).or_default() += 1;
                    }
                }
                if longest.as_ref().map_or(true, |(w, _)| wait > w) {
                    longest = Some((*wait, format!("{} on {}, {outcome}", a.mode, a.lock)));
                }
                if *wait > overlong {
                    violations.push(format!(
                        "overlong attempt: pid {} thread {} attempt {} ({} on {}) took {} ms",
                        k.0,
                        k.1,
                        k.2,
                        a.mode,
                        a.lock,
                        wait / 1_000_000
                    ));
                }
            }
        }
    }

    // Sections: effective ends, loss reports.
    struct View<'a> {
        s: &'a SecRec,
        eff: u64,
        told_any: bool,
    }
    let mut views: Vec<View<'_>> = Vec::new();
    let (mut cut_short, mut told_at_grant, mut killed_in_section) = (0u64, 0u64, 0u64);
    let (mut release_failed, mut release_failed_connected) = (0u64, 0u64);
    let mut sec_keys: Vec<_> = sections.keys().cloned().collect();
    sec_keys.sort();
    for k in &sec_keys {
        let s = &sections[k];
        let (eff, told_any) = match &s.end {
            Some(e) => {
                let told_any = e.told.is_some() || e.told_late.is_some();
                if let Some(t) = e.told {
                    if t <= s.start {
                        told_at_grant += 1;
                    } else if t <= e.end {
                        cut_short += 1;
                    }
                }
                let lost_at_end = matches!(e.st_end.as_str(), "Lost" | "Uncertain");
                let failed = e.release != "ok";
                if failed {
                    release_failed += 1;
                    if e.connected {
                        release_failed_connected += 1;
                    }
                }
                if e.release.contains("NotOwner") {
                    violations.push(format!("release refused (NotOwner) on {}: {}", s.lock, s.describe()));
                }
                if (lost_at_end || (failed && !e.connected)) && !told_any {
                    violations.push(format!(
                        "unreported loss on {}: {} status {} at the end, release {}, no Suspended/Lost received",
                        s.lock,
                        s.describe(),
                        e.st_end,
                        e.release
                    ));
                }
                if matches!(e.st0.as_str(), "Lost" | "Uncertain") && !told_any {
                    violations.push(format!(
                        "unreported loss on {}: {} status {} at grant, but the loss receiver never said so",
                        s.lock,
                        s.describe(),
                        e.st0
                    ));
                }
                (e.end.min(e.told.unwrap_or(u64::MAX)), told_any)
            }
            None => match killed.get(&s.pid) {
                Some(&t) => {
                    killed_in_section += 1;
                    // Work done (`D`) and the release under way, or killed while
                    // working: then the section lasts until the kill.
                    (done.get(&(s.pid, s.thr, s.att)).copied().unwrap_or(t).min(t), false)
                }
                None => {
                    violations.push(format!("section never ended on {}: {}", s.lock, s.describe()));
                    (s.start, false)
                }
            },
        };
        views.push(View { s, eff, told_any });
    }

    // Exclusion and fencing, per lock.
    let mut by_lock: BTreeMap<&str, Vec<&View<'_>>> = BTreeMap::new();
    for v in &views {
        by_lock.entry(v.s.lock.as_str()).or_default().push(v);
    }
    let (mut fenced, mut fenced_max_ns) = (0u64, 0u64);
    let mut overlaps_checked = 0u64;
    for (lock, list) in by_lock.iter_mut() {
        list.sort_by_key(|v| (v.s.start, v.s.pid, v.s.thr, v.s.att));
        let mut active: Vec<&View<'_>> = Vec::new();
        for v in list.iter() {
            if v.eff <= v.s.start {
                continue;
            }
            active.retain(|a| a.eff > v.s.start);
            for a in &active {
                if a.s.mode == "read" && v.s.mode == "read" {
                    continue;
                }
                overlaps_checked += 1;
                let o_start = v.s.start;
                let o_len = a.eff.min(v.eff) - o_start;
                let expired_before = |p: &View<'_>| instant.iter().any(|(sid, x)| *sid == p.s.sid && *x <= o_start);
                let excused = [(*a, *v), (*v, *a)]
                    .iter()
                    .any(|(p, q)| expired_before(p) && p.told_any && p.s.token < q.s.token);
                if excused {
                    fenced += 1;
                    fenced_max_ns = fenced_max_ns.max(o_len);
                } else {
                    violations.push(format!(
                        "overlap on {lock}: {} [{}..{}] and {} [{}..{}] for {} us",
                        a.s.describe(),
                        a.s.start,
                        a.eff,
                        v.s.describe(),
                        v.s.start,
                        v.eff,
                        o_len / 1000
                    ));
                }
            }
            active.push(v);
        }
        let mut prev: Option<&View<'_>> = None;
        for v in list.iter().filter(|v| v.s.mode != "read" && v.eff > v.s.start) {
            if let Some(p) = prev {
                if v.s.token <= p.s.token {
                    violations.push(format!(
                        "fencing tokens out of order on {lock}: {} started at {} after {} at {}",
                        v.s.describe(),
                        v.s.start,
                        p.s.describe(),
                        p.s.start
                    ));
                }
            }
            prev = Some(v);
        }
    }

    // Workers.
    let mut pids: Vec<_> = started.iter().copied().collect();
    pids.sort_unstable();
    for pid in pids {
        if !exited.contains(&pid) && !killed.contains_key(&pid) {
            violations.push(format!("worker {pid} never finished (no X line) and was not killed"));
        }
    }
    for (pid, st) in &worker_status {
        if st != "exit=0" && !killed.contains_key(pid) {
            violations.push(format!("worker {pid} ended badly: {st}"));
        }
    }

    // Faults.
    let kinds: Vec<String> = params
        .get("kinds")
        .map(|k| k.split(',').filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let missing: Vec<String> = kinds.iter().filter(|k| !faults.contains_key(*k)).cloned().collect();

    // The report.
    let mut t = String::new();
    use std::fmt::Write as _;
    let total: u64 = acquired.values().sum();
    let by_mode = ["mutex", "read", "write", "semaphore", "multi"]
        .iter()
        .map(|m| format!("{m} {}", acquired.get(*m).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(t, "acquisitions: {total} ({by_mode})");
    let _ = writeln!(
        t,
        "attempts: {} (acquired {total}, timed out {timeouts}, errors {errors}, in flight at kill -9 {inflight_killed})",
        attempts.len()
    );
    if !error_kinds.is_empty() {
        let _ = writeln!(
            t,
            "errors by kind: {}",
            error_kinds
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut fault_names: Vec<String> = kinds.clone();
    for k in faults.keys() {
        if !fault_names.contains(k) {
            fault_names.push(k.clone());
        }
    }
    let _ = writeln!(
        t,
        "faults: {} ({}){}",
        faults.values().sum::<usize>(),
        fault_names
            .iter()
            .map(|k| format!("{k} {}", faults.get(k).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", "),
        if failed_faults > 0 {
            format!("; {failed_faults} could not be injected")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        t,
        "missing fault kinds: {}",
        if missing.is_empty() {
            "none".to_string()
        } else {
            missing.join(", ")
        }
    );
    let _ = writeln!(
        t,
        "sections: {} (cut short by a loss signal {cut_short}, told at grant {told_at_grant}, open at kill -9 {killed_in_section}); {overlaps_checked} overlaps checked",
        sections.len()
    );
    let _ = writeln!(
        t,
        "release failures: {release_failed} ({release_failed_connected} began while still connected)"
    );
    let _ = writeln!(
        t,
        "fenced overlaps after an instant expiry: {fenced} (longest {:.3} ms)",
        fenced_max_ns as f64 / 1e6
    );
    match &longest {
        Some((w, what)) => {
            let _ = writeln!(t, "longest wait: {:.1} ms ({what})", *w as f64 / 1e6);
        }
        None => {
            let _ = writeln!(t, "longest wait: none");
        }
    }
    if unparsed > 0 {
        let _ = writeln!(t, "unparsed lines: {unparsed}");
    }
    let _ = writeln!(t, "violations: {}", violations.len());
    for v in violations.iter().take(30) {
        let _ = writeln!(t, "  VIOLATION: {v}");
    }
    if violations.len() > 30 {
        let _ = writeln!(t, "  ... and {} more", violations.len() - 30);
    }
    Ok(Report {
        text: t,
        violations,
        missing,
    })
}

#[allow(clippy::too_many_arguments)]
fn parse_line(
    line: &str,
    params: &mut HashMap<String, String>,
    attempts: &mut HashMap<(u32, u32, u64), AttemptRec>,
    sections: &mut HashMap<(u32, u32, u64, String), SecRec>,
    killed: &mut HashMap<u32, u64>,
    done: &mut HashMap<(u32, u32, u64), u64>,
    instant: &mut Vec<(String, u64)>,
    started: &mut HashSet<u32>,
    exited: &mut HashSet<u32>,
    worker_status: &mut Vec<(u32, String)>,
    faults: &mut BTreeMap<String, usize>,
    failed_faults: &mut usize,
) -> Option<()> {
    let f: Vec<&str> = line.split(' ').collect();
    let p32 = |i: usize| f.get(i)?.parse::<u32>().ok();
    let p64 = |i: usize| f.get(i)?.parse::<u64>().ok();
    let s = |i: usize| f.get(i).map(|s| s.to_string());
    match *f.first()? {
        "P" => {
            for kv in &f[1..] {
                let (k, v) = kv.split_once('=')?;
                params.insert(k.to_string(), v.to_string());
            }
        }
        "F" => {
            f.get(3)?;
            *faults.entry(s(1)?).or_default() += 1;
        }
        "N" => *failed_faults += 1,
        "K" => {
            killed.insert(p32(2)?, p64(3)?);
        }
        "I" => instant.push((s(1)?, p64(2)?)),
        "D" => {
            done.insert((p32(1)?, p32(2)?, p64(3)?), p64(4)?);
        }
        "W" => worker_status.push((p32(1)?, s(2)?)),
        "H" => {
            started.insert(p32(1)?);
        }
        "X" => {
            exited.insert(p32(1)?);
        }
        "Z" => {}
        "A" => {
            f.get(6)?;
            attempts.insert(
                (p32(1)?, p32(2)?, p64(3)?),
                AttemptRec {
                    lock: s(4)?,
                    mode: s(5)?,
                    result: None,
                },
            );
        }
        "R" => {
            let k = (p32(1)?, p32(2)?, p64(3)?);
            let r = (s(7)?, s(8)?, p64(9)?);
            attempts
                .entry(k)
                .or_insert_with(|| AttemptRec {
                    lock: f[4].to_string(),
                    mode: f[5].to_string(),
                    result: None,
                })
                .result = Some(r);
        }
        "S" | "E" => {
            let key = (p32(1)?, p32(2)?, p64(3)?, s(4)?);
            let rec = SecRec {
                pid: key.0,
                thr: key.1,
                att: key.2,
                lock: key.3.clone(),
                mode: s(5)?,
                token: f.get(6)?.parse().ok()?,
                sid: s(7)?,
                start: p64(8)?,
                end: None,
            };
            let e = sections.entry(key).or_insert(rec);
            if f[0] == "E" {
                e.end = Some(EndRec {
                    end: p64(9)?,
                    told: opt_u64(f.get(10)?),
                    told_late: opt_u64(f.get(12)?),
                    st0: s(13)?,
                    st_end: s(14)?,
                    connected: f.get(15)? == &"1",
                    release: s(16)?,
                });
            }
        }
        _ => return None,
    }
    Some(())
}
