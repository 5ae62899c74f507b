//! The coordinator: starts the server, the proxies and the workers, runs the
//! faults for the campaign's length, then checks the logs and the lock tree.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_testing::proxy::FaultProxy;

use zk_campaign::checker::check_dir;

use crate::check::verdict;
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

pub(crate) fn coordinator_main(o: &Opts) -> ExitCode {
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
    let kinds = match server.select_kinds(&o.faults) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("zk-campaign: --faults: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::resource::prepare(&server.connect_string()) {
        eprintln!("zk-campaign: cannot create the guarded resources: {e}");
        return ExitCode::from(2);
    }
    if o.cache {
        if let Err(e) = crate::cachekind::prepare(&server.connect_string()) {
            eprintln!("zk-campaign: cannot create the cache subtree: {e}");
            return ExitCode::from(2);
        }
    }
    if o.registration {
        if let Err(e) = crate::regkind::prepare(&server.connect_string()) {
            eprintln!("zk-campaign: cannot create the registration parent: {e}");
            return ExitCode::from(2);
        }
    }
    if o.counter {
        if let Err(e) = crate::counterkind::prepare(&server.connect_string(), &dir) {
            eprintln!("zk-campaign: cannot read the counter: {e}");
            return ExitCode::from(2);
        }
    }
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
            "--long-lead-permille".into(),
            o.long_lead_permille.to_string(),
            "--think-ms".into(),
            o.think_ms.to_string(),
        ],
        log: log.clone(),
    };
    let mut fleet = fleet;
    for (on, flag) in [
        (o.cache, "--cache"),
        (o.counter, "--counter"),
        (o.registration, "--registration"),
    ] {
        if on {
            fleet.common.push(flag.into());
        }
    }
    // The registration kind's observer: a cache on a client of its own,
    // straight to the server, from before the workers start until after
    // the leak check.
    let observer_stop = Arc::new(AtomicBool::new(false));
    let observer = o.registration.then(|| {
        let (cs, dir, stop) = (server.connect_string(), dir.clone(), observer_stop.clone());
        std::thread::spawn(move || crate::regkind::run_observer(&cs, &dir, session, &stop))
    });
    for slot in 0..o.workers {
        if let Err(e) = fleet.spawn(slot) {
            eprintln!("zk-campaign: cannot start worker {slot}: {e}");
            return ExitCode::from(2);
        }
    }
    let sessions: Sessions = Mutex::new(HashMap::new());
    let holders: Holders = Mutex::new(Default::default());
    let switches = Switches::default();
    let stop_faults = AtomicBool::new(false);
    let partitions_done = AtomicUsize::new(0);
    let round_done = AtomicBool::new(false);
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
                holders: &holders,
                switches: &switches,
                rng: Rng::new(seed ^ 0x00FA_0175),
                admin: None,
                kinds: kinds.clone(),
                partitions_done: &partitions_done,
                round_done: &round_done,
                min_each: o.min_each,
            };
            f.run(&stop_faults);
        });
        let limit = Duration::from_secs_f64(seconds);
        let cap = o.max_seconds.map_or(limit * 2, Duration::from_secs_f64).max(limit);
        let mut next_report = Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(200));
            scanner.scan(&dir, &sessions, &holders);
            let el = run_start.elapsed();
            if el >= next_report {
                println!(
                    "t={:>4}s acquisitions={} partition faults={}",
                    el.as_secs(),
                    scanner.acquired,
                    partitions_done.load(Ordering::SeqCst)
                );
                next_report += Duration::from_secs(10);
            }
            let enough = o.acquisitions.is_some_and(|a| scanner.acquired >= a)
                && partitions_done.load(Ordering::SeqCst) >= o.min_partition_faults;
            // Every kind once at least, or --min-each times (at most until
            // --max-seconds, twice the time asked for by default).
            let round = round_done.load(Ordering::SeqCst) || el >= cap;
            if ((enough || el >= limit) && round) || faults.is_finished() {
                break;
            }
        }
        stop_faults.store(true, Ordering::SeqCst);
        if faults.join().is_err() {
            eprintln!("zk-campaign: the fault thread panicked");
        }
    });
    // What the campaign could not do (the verdict's "campaign fell short").
    let mut shortfalls: Vec<String> = Vec::new();
    fleet.thaw_all();
    if let Err(e) = server.heal() {
        eprintln!("zk-campaign: final heal failed: {e}");
        shortfalls.push(format!("the final heal failed ({e})"));
    }
    let run_secs = run_start.elapsed().as_secs_f64();
    if o.cache || o.counter || o.registration {
        // The writers (the cache's writers, the incrementers, the
        // registrations) stop first; once every live one has said so, the
        // server's final state is read, and then the workers stop (their
        // caches settle and dump their view).
        let t0 = Instant::now();
        let _ = File::create(dir.join(crate::cachekind::STOP_WRITES));
        let pids: Vec<u32> = (0..o.workers).filter_map(|slot| fleet.pid(slot)).collect();
        let mut ends = Vec::new();
        for (on, end) in [(o.cache, "G end"), (o.counter, "J stop"), (o.registration, "L settled")] {
            if on {
                ends.push(end);
            }
        }
        let wait = session * 2
            + Duration::from_secs(5)
            + if o.registration {
                crate::regkind::bound(session)
            } else {
                Duration::ZERO
            };
        let left = crate::cachekind::wait_writers(&dir, &pids, &ends, Instant::now() + wait);
        if !left.is_empty() {
            eprintln!("zk-campaign: the writers of {left:?} did not say they stopped");
        }
        println!("writers stopped in {:.2} s", t0.elapsed().as_secs_f64());
        if o.cache {
            match crate::cachekind::read_final(&server.connect_string(), &dir) {
                Ok(n) => println!(
                    "cache subtree read back: {n} nodes ({:.2} s after the writers were told to stop)",
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    eprintln!("zk-campaign: cannot read the cache subtree back: {e}");
                    shortfalls.push(format!("the cache subtree could not be read back ({e})"));
                }
            }
        }
        if o.counter {
            match crate::counterkind::read_final(&server.connect_string(), &dir) {
                Ok(v) => println!("counter read back: {v}"),
                Err(e) => {
                    eprintln!("zk-campaign: cannot read the counter back: {e}");
                    shortfalls.push(format!("the counter could not be read back ({e})"));
                }
            }
        }
    }
    let _ = File::create(&fleet.stop_file);
    let deadline = Instant::now() + Duration::from_millis(o.acquire_timeout_ms) + session * 4 + Duration::from_secs(30);
    let t_stop = Instant::now();
    let stragglers = fleet.wait_all(deadline);
    println!("workers stopped in {:.2} s", t_stop.elapsed().as_secs_f64());
    if stragglers > 0 {
        eprintln!("zk-campaign: {stragglers} workers had to be killed at the end");
    }
    // Killed workers' sessions expire at the session timeout; the rest closed.
    let leaks = check_leaks(&server.connect_string(), ROOT, session * 3 + Duration::from_secs(15));
    // The registration nodes: every worker closed its last one; a killed
    // worker's goes with its session.
    let reg_leaks = if o.registration {
        let l = crate::regkind::leaked(&server.connect_string(), session * 3 + Duration::from_secs(15));
        observer_stop.store(true, Ordering::SeqCst);
        if let Some(h) = observer {
            if h.join().is_err() {
                eprintln!("zk-campaign: the registration observer panicked");
            }
        }
        Some(l)
    } else {
        None
    };
    match crate::resource::read_back(&server.connect_string(), &dir) {
        Ok(n) => println!("guarded resources read back: {n} writes"),
        Err(e) => {
            eprintln!("zk-campaign: cannot read the guarded resources back: {e}");
            shortfalls.push(format!("the guarded resources could not be read back ({e})"));
        }
    }
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
            shortfalls.push(format!("the leak check could not be done ({e})"));
            0
        }
    };
    let leak_count = leak_count
        + match &reg_leaks {
            None => 0,
            Some(Ok(l)) => {
                println!("leaked registration nodes: {}", l.len());
                for n in l {
                    println!("  LEAK: {n}");
                }
                l.len()
            }
            Some(Err(e)) => {
                println!("leaked registration nodes: unknown ({e})");
                shortfalls.push(format!("the registration leak check could not be done ({e})"));
                0
            }
        };
    println!("logs: {}", dir.display());
    drop(fleet);
    drop(server);
    if !report.missing.is_empty() {
        shortfalls.insert(0, format!("fault kinds missing: {}", report.missing.join(", ")));
    }
    verdict(report.violations.len(), leak_count, &shortfalls)
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
        {
            fs::remove_file(e.path())?;
        }
    }
    Ok(())
}
