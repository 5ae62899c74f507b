//! The coordinator: starts the server, the proxies and the workers, runs the
//! faults for the campaign's length, then checks the logs and the lock tree.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zk_testing::proxy::FaultProxy;

use zk_campaign::checker::{check_dir, Report};

use crate::check::{verdict, EXIT_USAGE};
use crate::cli::Opts;
use crate::faults::{Faults, Holders, Sessions, Switches};
use crate::fleet::{Fleet, Slot};
use crate::leaks::{check_leaks, print_leaks};
use crate::paths::ROOT;
use crate::prng::Rng;
use crate::record::{now_ns, unhex, LineLog};
use crate::server::Server;

/// Counts acquisitions and picks up session reports while the run goes on,
/// reading the worker logs incrementally.
#[derive(Default)]
struct Scanner {
    files: HashMap<PathBuf, (u64, String)>,
    acquired: u64,
}

impl Scanner {
    fn scan(&mut self, dir: &Path, sessions: &Sessions, holders: &Holders) {
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
            let mut book = holders.lock().unwrap_or_else(|e| e.into_inner());
            for line in complete.lines() {
                let f: Vec<&str> = line.split(' ').collect();
                book.line(&f);
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

/// What a run is asked for, from the options: its seed (from the clock
/// unless given; printed), its session timeout, how long the load and the
/// faults last, and where the logs go.
struct Plan {
    seed: u64,
    session: Duration,
    seconds: f64,
    dir: PathBuf,
}

impl Plan {
    fn new(o: &Opts) -> Plan {
        let seed = o.seed.unwrap_or_else(|| now_ns() % 1_000_000);
        let seconds = match (o.seconds, o.acquisitions) {
            (Some(s), _) => s,
            (None, Some(_)) => 3600.0,
            (None, None) => 75.0,
        };
        let dir = o
            .dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("zk-campaign-{seed}-{}", std::process::id())));
        Plan {
            seed,
            session: o.session(),
            seconds,
            dir,
        }
    }
}

/// A run: set up, the load and the faults, the wind-down, the checker and
/// the report; its exit status is the verdict's, or [`EXIT_USAGE`] after a
/// set-up error (said on stderr).
pub(crate) fn coordinator_main(o: &Opts) -> ExitCode {
    campaign(o, &Plan::new(o)).unwrap_or_else(|e| {
        eprintln!("zk-campaign: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

/// The run's steps in turn; `Err`: a set-up error, what to say.
fn campaign(o: &Opts, plan: &Plan) -> Result<ExitCode, String> {
    let dir = &plan.dir;
    prepare_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Workers (replacements too) run a pinned copy of this executable, so a
    // rebuild during a long run cannot mix two versions of the log format.
    let exe = pin_executable(dir).map_err(|e| format!("cannot pin my own executable: {e}"))?;
    let wall = Instant::now();
    let server = Server::start(o.backend, o.servers).map_err(|e| format!("cannot start the server: {e}"))?;
    let log = Arc::new(LineLog::open(&dir.join("coordinator.log")).map_err(|e| e.to_string())?);
    let kinds = server.select_kinds(&o.faults).map_err(|e| format!("--faults: {e}"))?;
    prepare_kinds(o, &server.connect_string(), dir)?;
    announce(o, plan, &server, &log, &kinds);
    let fleet = fleet(o, plan, &server, exe, log.clone())?;
    let observer = Observer::start(o, plan, &server);
    for slot in 0..o.workers {
        fleet
            .spawn(slot, &server.connect_string())
            .map_err(|e| format!("cannot start worker {slot}: {e}"))?;
    }
    let run_start = run_load_and_faults(o, plan, &server, &fleet, &log, kinds);
    // What the campaign could not do (the verdict's "campaign fell short").
    let mut shortfalls: Vec<String> = Vec::new();
    heal(&server, &fleet, &mut shortfalls);
    let run_secs = run_start.elapsed().as_secs_f64();
    let cs = server.connect_string();
    stop_writers(o, plan, &cs, &fleet, &mut shortfalls);
    final_members(&server, plan, &log, &mut shortfalls);
    stop_workers(o, plan, &fleet);
    // Killed workers' sessions expire at the session timeout; the rest closed.
    let leaks = check_leaks(&cs, ROOT, plan.session * 3 + Duration::from_secs(15));
    let reg_leaks = observer.leaks_then_stop(&cs, plan.session);
    let party_leaks = o
        .partition
        .then(|| crate::partkind::leaked(&cs, plan.session * 3 + Duration::from_secs(15)));
    read_back(
        "the guarded resources",
        crate::resource::read_back(&cs, dir),
        |n| println!("guarded resources read back: {n} writes"),
        &mut shortfalls,
    );
    let report = check_dir(dir, &o.check).map_err(|e| format!("cannot read the logs: {e}"))?;
    print_summary(o, plan, &server, run_secs, wall, &report);
    let leak_count = count_leaks("nodes", "the leak check", &leaks, print_leaks, &mut shortfalls)
        + reg_leaks.map_or(0, |l| {
            count_leaks(
                "registration nodes",
                "the registration leak check",
                &l,
                print_registration_leaks,
                &mut shortfalls,
            )
        })
        + party_leaks.map_or(0, |l| {
            count_leaks(
                "party nodes",
                "the party leak check",
                &l,
                print_party_leaks,
                &mut shortfalls,
            )
        });
    println!("logs: {}", dir.display());
    drop(fleet);
    drop(server);
    if !report.missing.is_empty() {
        shortfalls.insert(0, format!("fault kinds missing: {}", report.missing.join(", ")));
    }
    Ok(verdict(report.violations.len(), leak_count, &shortfalls))
}

/// Before the run, what the kinds work on: the guarded resources, and with
/// their kinds the cache subtree, the registration parent and the counter's
/// base value.
fn prepare_kinds(o: &Opts, cs: &str, dir: &Path) -> Result<(), String> {
    crate::resource::prepare(cs).map_err(|e| format!("cannot create the guarded resources: {e}"))?;
    if o.cache {
        crate::cachekind::prepare(cs).map_err(|e| format!("cannot create the cache subtree: {e}"))?;
    }
    if o.registration {
        crate::regkind::prepare(cs).map_err(|e| format!("cannot create the registration parent: {e}"))?;
    }
    if o.counter {
        crate::counterkind::prepare(cs, dir).map_err(|e| format!("cannot read the counter: {e}"))?;
    }
    Ok(())
}

/// The reconfigurable ensemble's members at the end, read again from the
/// servers once every fault has healed: logged (`EM t final ADDR,...
/// VERSION`) and
/// written to [`crate::reconf::FINAL_MEMBERS`], which the workers read
/// after the stop file, each then logging where its client is (`EW`: the
/// end-of-run connection check). Nothing for the other servers; a read
/// that fails is a shortfall of the campaign.
fn final_members(server: &Server, plan: &Plan, log: &LineLog, shortfalls: &mut Vec<String>) {
    let Some(r) = server.reconf() else { return };
    match r.final_members() {
        Ok((addrs, version)) => {
            log.line(&format!("EM {} final {} {version:x}", now_ns(), addrs.join(",")));
            println!("final members: {} (config version {version:#x})", addrs.join(","));
            if let Err(e) = fs::write(plan.dir.join(crate::reconf::FINAL_MEMBERS), addrs.join(",")) {
                shortfalls.push(format!("the final members could not be written ({e})"));
            }
        }
        Err(e) => {
            eprintln!("zk-campaign: cannot read the final members: {e}");
            shortfalls.push(format!("the final members could not be read ({e})"));
        }
    }
}

/// Says what the run is (stdout), and logs its parameters (`P`) for the
/// checker.
fn announce(o: &Opts, plan: &Plan, server: &Server, log: &LineLog, kinds: &[&str]) {
    let Plan {
        seed,
        session,
        seconds,
        dir,
    } = plan;
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
    if server.reconf().is_some() {
        println!(
            "zk-campaign: the workers connect straight to the members{}",
            if o.track_ensemble {
                format!(
                    " and follow /zookeeper/config (tracker delay up to {} ms)",
                    o.tracker_delay.as_millis()
                )
            } else {
                ", WITHOUT following /zookeeper/config (--no-ensemble-tracker)".to_string()
            }
        );
    }
    log.line(&format!(
        "P seed={seed} backend={} workers={} threads={} session_ms={} acquire_timeout_ms={} short_timeout_percent={} min_each={} kinds={}",
        server.name(),
        o.workers,
        o.threads,
        session.as_millis(),
        o.acquire_timeout_ms,
        o.short_timeout_percent,
        o.min_each,
        kinds.join(",")
    ));
}

/// The workers' fleet, none started yet: a fault proxy per server node for
/// each worker, and the options every worker gets.
fn fleet(o: &Opts, plan: &Plan, server: &Server, exe: PathBuf, log: Arc<LineLog>) -> Result<Fleet, String> {
    let mut slots = Vec::new();
    // The reconfigurable ensemble's workers connect straight to its members
    // (the servers change; a client that follows them leaves any proxy).
    let direct = server.reconf().is_some();
    for _ in 0..o.workers {
        let mut proxies = Vec::new();
        for a in server.addrs().into_iter().filter(|_| !direct) {
            proxies.push(FaultProxy::start(&a).map_err(|e| format!("proxy: {e}"))?);
        }
        slots.push(Slot {
            proxies,
            proc_: Mutex::new(None),
            gen: AtomicUsize::new(0),
        });
    }
    Ok(Fleet {
        direct,
        exe,
        dir: plan.dir.clone(),
        stop_file: plan.dir.join("stop"),
        slots,
        common: worker_args(o, plan.session),
        log,
    })
}

/// The options every worker is started with, besides its own (slot,
/// server, log, seed).
fn worker_args(o: &Opts, session: Duration) -> Vec<String> {
    let valued = [
        ("--threads", o.threads.to_string()),
        ("--session-ms", session.as_millis().to_string()),
        ("--acquire-timeout-ms", o.acquire_timeout_ms.to_string()),
        ("--short-timeout-percent", o.short_timeout_percent.to_string()),
        ("--hold-ms", o.hold_ms.to_string()),
        ("--long-hold-permille", o.long_hold_permille.to_string()),
        ("--long-lead-permille", o.long_lead_permille.to_string()),
        ("--think-ms", o.think_ms.to_string()),
        ("--tracker-delay-ms", o.tracker_delay.as_millis().to_string()),
    ];
    let flags = [
        (o.cache, "--cache"),
        (o.counter, "--counter"),
        (o.registration, "--registration"),
        (o.partition, "--partition"),
        (o.track_ensemble, "--track-ensemble"),
    ];
    valued
        .into_iter()
        .flat_map(|(name, value)| [name.to_string(), value])
        .chain(
            flags
                .into_iter()
                .filter(|(on, _)| *on)
                .map(|(_, flag)| flag.to_string()),
        )
        .collect()
}

/// The registration kind's observer: a cache on a client of its own,
/// straight to the server, from before the workers start until after the
/// leak check.
struct Observer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Observer {
    /// Starts it with the registration kind (else there is none).
    fn start(o: &Opts, plan: &Plan, server: &Server) -> Observer {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = o.registration.then(|| {
            let (cs, dir, stop, session) = (server.connect_string(), plan.dir.clone(), stop.clone(), plan.session);
            // On the reconfigurable ensemble, the observer follows its members.
            let follow = server.reconf().is_some();
            std::thread::spawn(move || crate::regkind::run_observer(&cs, &dir, session, follow, &stop))
        });
        Observer { stop, thread }
    }

    /// The registration nodes left (every worker closed its last one; a
    /// killed worker's goes with its session), then the observer stopped;
    /// `None` without the kind.
    fn leaks_then_stop(self, cs: &str, session: Duration) -> Option<Result<Vec<String>, String>> {
        let thread = self.thread?;
        let leaks = crate::regkind::leaked(cs, session * 3 + Duration::from_secs(15));
        self.stop.store(true, Ordering::SeqCst);
        if thread.join().is_err() {
            eprintln!("zk-campaign: the registration observer panicked");
        }
        Some(leaks)
    }
}

/// Stops the fault thread even if the run's scope unwinds.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// What the fault thread and the coordinator's watch share while the run
/// goes on.
#[derive(Default)]
struct Shared {
    sessions: Sessions,
    holders: Holders,
    switches: Switches,
    stop_faults: AtomicBool,
    partitions_done: AtomicUsize,
    round_done: AtomicBool,
}

/// The load and the faults: the workers run while a thread injects the
/// faults and this one watches the workers' logs, until the run is long
/// enough ([`Length`]) or the fault thread ends. Returns when it began.
fn run_load_and_faults(
    o: &Opts,
    plan: &Plan,
    server: &Server,
    fleet: &Fleet,
    log: &LineLog,
    kinds: Vec<&'static str>,
) -> Instant {
    let shared = Shared::default();
    let run_start = Instant::now();
    let mut scanner = Scanner::default();
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&shared.stop_faults);
        let faults = s.spawn(|| {
            let mut f = Faults {
                server,
                fleet,
                log,
                session: plan.session,
                sessions: &shared.sessions,
                holders: &shared.holders,
                switches: &shared.switches,
                rng: Rng::new(plan.seed ^ 0x00FA_0175),
                admin: None,
                kinds,
                partitions_done: &shared.partitions_done,
                round_done: &shared.round_done,
                min_each: o.min_each,
            };
            f.run(&shared.stop_faults);
        });
        let length = Length::new(o, plan.seconds);
        let mut next_report = Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(200));
            scanner.scan(&plan.dir, &shared.sessions, &shared.holders);
            let el = run_start.elapsed();
            if el >= next_report {
                println!(
                    "t={:>4}s acquisitions={} partition faults={}",
                    el.as_secs(),
                    scanner.acquired,
                    shared.partitions_done.load(Ordering::SeqCst)
                );
                next_report += Duration::from_secs(10);
            }
            let partitions = shared.partitions_done.load(Ordering::SeqCst);
            let round = shared.round_done.load(Ordering::SeqCst);
            if length.reached(el, scanner.acquired, partitions, round) || faults.is_finished() {
                break;
            }
        }
        shared.stop_faults.store(true, Ordering::SeqCst);
        if faults.join().is_err() {
            eprintln!("zk-campaign: the fault thread panicked");
        }
    });
    run_start
}

/// How long a run lasts: `--seconds`, or with `--acquisitions` until that
/// many (and `--min-partition-faults` partition faults); and in either case
/// until every kind happened once at least, or `--min-each` times (at most
/// until `--max-seconds`, twice the time asked for by default).
struct Length {
    limit: Duration,
    cap: Duration,
    acquisitions: Option<u64>,
    min_partition_faults: usize,
}

impl Length {
    fn new(o: &Opts, seconds: f64) -> Length {
        let limit = Duration::from_secs_f64(seconds);
        Length {
            limit,
            cap: o.max_seconds.map_or(limit * 2, Duration::from_secs_f64).max(limit),
            acquisitions: o.acquisitions,
            min_partition_faults: o.min_partition_faults,
        }
    }

    /// Whether a run `el` old, with so many acquisitions and partition
    /// faults, and its round of kinds done or not, may end.
    fn reached(&self, el: Duration, acquired: u64, partitions: usize, round_done: bool) -> bool {
        let enough = self.acquisitions.is_some_and(|a| acquired >= a) && partitions >= self.min_partition_faults;
        let round = round_done || el >= self.cap;
        (enough || el >= self.limit) && round
    }
}

/// After the faults: every worker let go on and its proxies opened, the
/// server healed (a heal that failed is a shortfall).
fn heal(server: &Server, fleet: &Fleet, shortfalls: &mut Vec<String>) {
    fleet.thaw_all();
    if let Err(e) = server.heal() {
        eprintln!("zk-campaign: final heal failed: {e}");
        shortfalls.push(format!("the final heal failed ({e})"));
    }
}

/// With the cache, counter or registration kinds: their writers (the
/// cache's writers, the incrementers, the registrations) stop first; once
/// every live one has said so, the server's final state is read, and then
/// the workers may stop (their caches settle and dump their view).
fn stop_writers(o: &Opts, plan: &Plan, cs: &str, fleet: &Fleet, shortfalls: &mut Vec<String>) {
    if !(o.cache || o.counter || o.registration || o.partition) {
        return;
    }
    let t0 = Instant::now();
    let _ = File::create(plan.dir.join(crate::cachekind::STOP_WRITES));
    let pids: Vec<u32> = (0..o.workers).filter_map(|slot| fleet.pid(slot)).collect();
    let ends: Vec<&str> = [
        (o.cache, "G end"),
        (o.counter, "J stop"),
        (o.registration, "L settled"),
        (o.partition, "O settled"),
    ]
    .into_iter()
    .filter_map(|(on, end)| on.then_some(end))
    .collect();
    let wait = plan.session * 2
        + Duration::from_secs(5)
        + if o.registration {
            crate::regkind::bound(plan.session)
        } else {
            Duration::ZERO
        }
        + if o.partition {
            crate::partkind::bound(plan.session)
        } else {
            Duration::ZERO
        };
    let left = crate::cachekind::wait_writers(&plan.dir, &pids, &ends, Instant::now() + wait);
    if !left.is_empty() {
        eprintln!("zk-campaign: the writers of {left:?} did not say they stopped");
    }
    println!("writers stopped in {:.2} s", t0.elapsed().as_secs_f64());
    if o.cache {
        read_back(
            "the cache subtree",
            crate::cachekind::read_final(cs, &plan.dir),
            |n| {
                println!(
                    "cache subtree read back: {n} nodes ({:.2} s after the writers were told to stop)",
                    t0.elapsed().as_secs_f64()
                )
            },
            shortfalls,
        );
    }
    if o.counter {
        read_back(
            "the counter",
            crate::counterkind::read_final(cs, &plan.dir),
            |v| println!("counter read back: {v}"),
            shortfalls,
        );
    }
}

/// A read-back after the run (`what`: `the counter`, ...): what it found,
/// said by `said`; or that it could not be done, on stderr and as a
/// shortfall of the campaign.
fn read_back<T>(what: &str, r: Result<T, String>, said: impl FnOnce(T), shortfalls: &mut Vec<String>) {
    match r {
        Ok(v) => said(v),
        Err(e) => {
            eprintln!("zk-campaign: cannot read {what} back: {e}");
            shortfalls.push(format!("{what} could not be read back ({e})"));
        }
    }
}

/// The stop file, then every worker exits by itself within its bound (the
/// stragglers are killed).
fn stop_workers(o: &Opts, plan: &Plan, fleet: &Fleet) {
    let _ = File::create(&fleet.stop_file);
    let deadline =
        Instant::now() + Duration::from_millis(o.acquire_timeout_ms) + plan.session * 4 + Duration::from_secs(30);
    let t_stop = Instant::now();
    let stragglers = fleet.wait_all(deadline);
    println!("workers stopped in {:.2} s", t_stop.elapsed().as_secs_f64());
    if stragglers > 0 {
        eprintln!("zk-campaign: {stragglers} workers had to be killed at the end");
    }
}

/// The summary's head (the run's parameters, its length and wall time)
/// and the checker's report.
fn print_summary(o: &Opts, plan: &Plan, server: &Server, run_secs: f64, wall: Instant, report: &Report) {
    println!("== zk-campaign summary ==");
    println!(
        "seed: {}  backend: {}  workers: {} x {} threads  session: {} ms  run: {run_secs:.1} s  wall: {:.1} s",
        plan.seed,
        server.name(),
        o.workers,
        o.threads,
        plan.session.as_millis(),
        wall.elapsed().as_secs_f64()
    );
    print!("{}", report.text);
}

/// How many `nodes` a leak check found, printed by `print`; a check that
/// could not be done (`check`) is said and is a shortfall of the campaign.
fn count_leaks(
    nodes: &str,
    check: &str,
    leaks: &Result<Vec<String>, String>,
    print: impl Fn(&[String]),
    shortfalls: &mut Vec<String>,
) -> usize {
    match leaks {
        Ok(l) => {
            print(l);
            l.len()
        }
        Err(e) => {
            println!("leaked {nodes}: unknown ({e})");
            shortfalls.push(format!("{check} could not be done ({e})"));
            0
        }
    }
}

/// The registration nodes left: how many, and every one.
fn print_registration_leaks(leaks: &[String]) {
    println!("leaked registration nodes: {}", leaks.len());
    for n in leaks {
        println!("  LEAK: {n}");
    }
}

/// The partitioner's party nodes left: how many, and every one.
fn print_party_leaks(leaks: &[String]) {
    println!("leaked party nodes: {}", leaks.len());
    for n in leaks {
        println!("  LEAK: {n}");
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
        if (name.starts_with("worker-") && name.ends_with(".log"))
            || name == "coordinator.log"
            || name == "resource.log"
            || name == "stop"
            || name == crate::cachekind::STOP_WRITES
            || name == "cache-server.log"
            || name == "counter-server.log"
            || name == "registration-observer.log"
            || name == crate::reconf::FINAL_MEMBERS
        {
            fs::remove_file(e.path())?;
        }
    }
    Ok(())
}
