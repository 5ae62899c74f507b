//! Lock benchmarks. Prints one `key=value` line per figure.
//!
//! ```text
//! cargo run --release --bin zk-bench -- [--connect HOST:PORT | --apache] [--seconds N] [--only NAME,...]
//! ```
//!
//! Without `--connect` it starts the embedded server in-process; `--apache`
//! starts Debian's ZooKeeper 3.8 instead. Scenarios (`--only` picks some):
//! `floor`, `mutex`, `semaphore`, `reentrant`, `handoff`, `herd`, `rwlock`,
//! `multilock`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::Parser;
use zk_framework::proto::OpCode;
use zk_framework::{Acl, CreateMode, CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, MultiLock};
use zk_testing::{Backend, TestingServer};

/// Lock benchmarks on the embedded server (default), Apache ZooKeeper, or
/// a server of yours; one `key=value` line per figure.
#[derive(Debug, Parser)]
#[command(
    name = "zk-bench",
    override_usage = "zk-bench [--connect HOST:PORT | --apache] [--curator] [--seconds N] [--only NAMES]",
    args_override_self = true,
    disable_version_flag = true
)]
struct Opts {
    /// Benchmark the server at HOST:PORT [default: an embedded server, in-process].
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Start Debian's Apache ZooKeeper 3.8 instead of the embedded server.
    #[arg(long)]
    apache: bool,
    /// Also run Curator 5.4 (Debian jars) on the same server.
    #[arg(long)]
    curator: bool,
    /// Seconds per scenario.
    #[arg(long, value_name = "N", default_value_t = 3.0)]
    seconds: f64,
    /// Only these scenarios, comma-separated: floor, mutex, semaphore,
    /// reentrant, handoff, herd, rwlock, multilock.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Option<Vec<String>>,
}

fn parse() -> Opts {
    Opts::parse()
}

fn client(cs: &str) -> CuratorFramework {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .expect("client");
    c.block_until_connected(Duration::from_secs(30)).expect("connected");
    c
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Runs `f` repeatedly for `run`, returning per-call latencies (sorted).
fn latencies(run: Duration, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..20 {
        f(); // warm-up
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

fn report_latency(key: &str, v: &[Duration]) {
    println!("{key}.median_us={}", us(percentile(v, 0.5)));
    println!("{key}.p99_us={}", us(percentile(v, 0.99)));
    println!("{key}.ops={}", v.len());
}

fn main() {
    let o = parse();
    let want = |name: &str| o.only.as_ref().map_or(true, |v| v.iter().any(|x| x == name));
    let server = if o.connect.is_some() {
        None
    } else if o.apache {
        Some(TestingServer::start_backend(Backend::Apache).expect("start Apache ZooKeeper"))
    } else {
        Some(TestingServer::start_backend(Backend::Embedded).expect("start the embedded server"))
    };
    let cs = o
        .connect
        .clone()
        .unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    let backend = match (&o.connect, o.apache) {
        (Some(_), _) => "external",
        (None, true) => "apache",
        (None, false) => "embedded",
    };
    println!("server={backend}");
    let run = Duration::from_secs_f64(o.seconds);
    let c = client(&cs);
    let zk = c.zookeeper_client();
    let acl = Acl::open_unsafe();
    c.create()
        .creating_parent_containers_if_needed()
        .for_path("/bench/floor/keep")
        .ok();

    if want("floor") {
        let v = latencies(run, || {
            let p = zk
                .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
                .unwrap();
            zk.delete(&p, None).unwrap();
        });
        report_latency("floor.create_delete", &v);
        let v = latencies(run, || {
            let p = zk
                .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
                .unwrap();
            zk.get_children("/bench/floor").unwrap();
            zk.delete(&p, None).unwrap();
        });
        report_latency("floor.create_getchildren_delete", &v);
    }

    if want("mutex") {
        let m = InterProcessMutex::new(&c, "/bench/mutex").unwrap();
        let v = latencies(run, || drop(m.acquire().unwrap()));
        report_latency("mutex.uncontended_acquire_release", &v);
        let counted = count_requests(&server, || drop(m.acquire().unwrap()));
        if let Some(n) = counted {
            println!("mutex.requests_per_cycle={n}");
        }
    }

    if want("semaphore") {
        let m = InterProcessSemaphoreMutex::new(&c, "/bench/sem").unwrap();
        let v = latencies(run, || drop(m.acquire().unwrap()));
        report_latency("semaphore_mutex.uncontended_acquire_release", &v);
        if let Some(n) = count_requests(&server, || drop(m.acquire().unwrap())) {
            println!("semaphore_mutex.requests_per_cycle={n}");
        }
        if let Some(e) = server.as_ref().and_then(|s| s.embedded()) {
            let n0 = e.stats().watch_notifications;
            for _ in 0..50 {
                drop(m.acquire().unwrap());
            }
            println!(
                "semaphore_mutex.notifications_per_cycle={:.1}",
                (e.stats().watch_notifications - n0) as f64 / 50.0
            );
        }
        println!(
            "semaphore_mutex.uncontended_cycles_per_s={:.0}",
            1.0 / percentile(&v, 0.5).as_secs_f64()
        );
    }

    if want("reentrant") {
        let m = InterProcessMutex::new(&c, "/bench/reentrant").unwrap();
        let outer = m.acquire().unwrap();
        let n = 1_000_000u32;
        let t = Instant::now();
        for _ in 0..n {
            drop(m.acquire().unwrap());
        }
        println!("reentrant.reacquire_ns={:.0}", t.elapsed().as_nanos() as f64 / n as f64);
        if let Some(n) = count_requests(&server, || drop(m.acquire().unwrap())) {
            println!("reentrant.requests_per_reacquire={n}");
        }
        drop(outer);
    }

    if want("handoff") {
        for sessions in [8usize, 32, 128] {
            let rate = handoffs(&cs, sessions, run, |c| {
                let m = InterProcessMutex::new(c, "/bench/handoff").unwrap();
                Box::new(move || drop(m.acquire().unwrap()))
            });
            println!("mutex.handoffs_per_s.sessions_{sessions}={rate:.0}");
        }
        let rate = handoffs(&cs, 8, run, |c| {
            let m = InterProcessSemaphoreMutex::new(c, "/bench/sem-handoff").unwrap();
            Box::new(move || drop(m.acquire().unwrap()))
        });
        println!("semaphore_mutex.handoffs_per_s.sessions_8={rate:.0}");
    }

    if want("herd") {
        if let Some(s) = &server {
            if let Some(e) = s.embedded() {
                let per = notifications_per_release(&cs, e, 20);
                println!("mutex.notifications_per_release={per:.2}");
                let per = chain_notifications(&cs, e, 20, true);
                println!("semaphore_mutex.notifications_per_release={per:.2}");
            }
        }
    }

    if want("rwlock") {
        for readers in [1usize, 4, 16] {
            let (r, w) = rw_throughput(&cs, readers, run);
            println!("rwlock.read_acquires_per_s.readers_{readers}_writers_1={r:.0}");
            println!("rwlock.write_acquires_per_s.readers_{readers}_writers_1={w:.0}");
        }
        let rate = handoffs(&cs, 8, run, |c| {
            let rw = InterProcessReadWriteLock::new(c, "/bench/rw-handoff").unwrap();
            Box::new(move || drop(rw.write_lock().acquire().unwrap()))
        });
        println!("rwlock.write_handoffs_per_s.sessions_8={rate:.0}");
        if let Some(s) = &server {
            if let Some(e) = s.embedded() {
                let n = rw_release_notifications(&cs, e, 100);
                println!("rwlock.notifications_per_writer_release.queued_readers_100={n}");
            }
        }
    }

    if want("multilock") {
        let m = MultiLock::from_paths(&c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
        let v = latencies(run, || drop(m.acquire().unwrap()));
        report_latency("multilock3.uncontended_acquire_release", &v);
        let rate = handoffs(&cs, 8, run, |c| {
            let m = MultiLock::from_paths(c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
            Box::new(move || drop(m.acquire().unwrap()))
        });
        println!("multilock3.handoffs_per_s.sessions_8={rate:.0}");
    }
    if want("clients") {
        client_cost(&cs, 16);
    }
    if o.curator {
        curator(&cs, &server, &o, run);
    }
    c.close();
}

/// Runs Curator 5.4 (Debian's jars) on the same server and prints its figures.
fn curator(cs: &str, server: &Option<TestingServer>, o: &Opts, run: Duration) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let want = |name: &str| o.only.as_ref().map_or(true, |v| v.iter().any(|x| x == name));
    let j = "/usr/share/java";
    let jars = [
        "curator-recipes",
        "curator-framework",
        "curator-client",
        "zookeeper",
        "zookeeper-jute",
        "guava",
        "slf4j-api",
        "slf4j-nop",
    ];
    let cp_jars: Vec<String> = jars.iter().map(|n| format!("{j}/{n}.jar")).collect();
    if !std::path::Path::new(&cp_jars[0]).exists() {
        println!("curator.error=Curator jars missing (apt-get install libcurator-recipes-java)");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("zk-bench-java-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench/CuratorBench.java");
    let status = Command::new("javac")
        .args(["-d", out_dir.to_str().unwrap(), "-cp", &cp_jars.join(":"), src])
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        println!("curator.error=javac failed");
        return;
    }
    let cp = format!("{}:{}", out_dir.display(), cp_jars.join(":"));
    let java = |args: &[String]| -> std::process::Child {
        Command::new("java")
            .args(["-Xmx256m", "-cp", &cp, "CuratorBench", cs])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("java")
    };
    let print_all = |child: std::process::Child| {
        let out = child.wait_with_output().expect("java output");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    };
    let secs = format!("{}", run.as_secs_f64());
    if want("mutex") {
        print_all(java(&["latency".into(), "mutex".into(), secs.clone()]));
    }
    if want("semaphore") {
        print_all(java(&["latency".into(), "semaphore".into(), secs.clone()]));
    }
    if want("handoff") {
        for sessions in [8, 32, 128] {
            print_all(java(&[
                "handoff".into(),
                "mutex".into(),
                sessions.to_string(),
                secs.clone(),
            ]));
        }
        print_all(java(&["handoff".into(), "semaphore".into(), "8".into(), secs.clone()]));
    }
    let Some(e) = server.as_ref().and_then(|s| s.embedded()) else {
        return;
    };
    let total = || -> u64 {
        let st = e.stats();
        OpCode::ALL
            .iter()
            .filter(|&&op| op != OpCode::Ping)
            .map(|&op| st.requests(op))
            .sum()
    };
    // Requests and notifications per uncontended cycle, counted by our server.
    for kind in ["mutex", "semaphore"] {
        if !want(kind) {
            continue;
        }
        let n = 50u64;
        let mut child = java(&["cycles".into(), kind.into(), n.to_string()]);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let (r0, n0) = (total(), e.stats().watch_notifications);
        writeln!(stdin).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "done");
        let (r1, n1) = (total(), e.stats().watch_notifications);
        writeln!(stdin).unwrap();
        let _ = child.wait();
        let key = if kind == "mutex" { "mutex" } else { "semaphore_mutex" };
        println!("curator.{key}.requests_per_cycle={:.1}", (r1 - r0) as f64 / n as f64);
        println!(
            "curator.{key}.notifications_per_cycle={:.1}",
            (n1 - n0) as f64 / n as f64
        );
    }
    if want("herd") {
        for kind in ["mutex", "semaphore"] {
            let mut child = java(&["chain".into(), kind.into(), "20".into()]);
            let mut stdin = child.stdin.take().unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            assert_eq!(lines.next().unwrap().unwrap(), "ready");
            let n0 = e.stats().watch_notifications;
            writeln!(stdin).unwrap();
            assert_eq!(lines.next().unwrap().unwrap(), "done");
            let n1 = e.stats().watch_notifications;
            writeln!(stdin).unwrap();
            let _ = child.wait();
            let key = if kind == "mutex" { "mutex" } else { "semaphore_mutex" };
            println!("curator.{key}.notifications_per_release={:.2}", (n1 - n0) as f64 / 21.0);
        }
    }
    if want("rwlock") {
        let mut child = java(&["rwherd".into(), "100".into()]);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let n0 = e.stats().watch_notifications;
        writeln!(stdin).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "released");
        let n1 = e.stats().watch_notifications;
        writeln!(stdin).unwrap();
        let _ = child.wait();
        println!(
            "curator.rwlock.notifications_per_writer_release.queued_readers_100={}",
            n1 - n0
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Server requests made by one call of `f` (embedded server only; pings excluded).
fn count_requests(server: &Option<TestingServer>, mut f: impl FnMut()) -> Option<u64> {
    let e = server.as_ref()?.embedded()?;
    let total = |e: &zk_testing::embedded::EmbeddedServer| -> u64 {
        let st = e.stats();
        OpCode::ALL
            .iter()
            .filter(|&&op| op != OpCode::Ping)
            .map(|&op| st.requests(op))
            .sum()
    };
    f();
    let n = 50;
    let before = total(e);
    for _ in 0..n {
        f();
    }
    Some((total(e) - before + n / 2) / n)
}

/// Contended acquisitions per second: `sessions` clients, each in its own thread,
/// loop `acquire+release` on one lock.
fn handoffs(
    cs: &str,
    sessions: usize,
    run: Duration,
    make: impl Fn(&CuratorFramework) -> Box<dyn FnMut() + Send>,
) -> f64 {
    let clients: Vec<_> = (0..sessions).map(|_| client(cs)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Barrier::new(sessions + 1));
    let threads: Vec<_> = clients
        .iter()
        .map(|c| {
            let mut f = make(c);
            let (stop, count, gate) = (stop.clone(), count.clone(), gate.clone());
            std::thread::spawn(move || {
                gate.wait();
                while !stop.load(Ordering::Relaxed) {
                    f();
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    gate.wait();
    let t = Instant::now();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let n = count.load(Ordering::Relaxed);
    let elapsed = t.elapsed();
    for t in threads {
        t.join().unwrap();
    }
    for c in clients {
        c.close();
    }
    n as f64 / elapsed.as_secs_f64()
}

/// Average watch notifications the server sends per mutex release with `n`
/// waiters queued.
fn notifications_per_release(cs: &str, e: &zk_testing::embedded::EmbeddedServer, n: usize) -> f64 {
    let clients: Vec<_> = (0..4).map(|_| client(cs)).collect();
    let total = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Barrier::new(n + 1));
    let holder = InterProcessMutex::new(&clients[0], "/bench/herd").unwrap();
    let g = holder.acquire().unwrap();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let c = clients[i % clients.len()].clone();
            let (total, gate) = (total.clone(), gate.clone());
            std::thread::spawn(move || {
                let m = InterProcessMutex::new(&c, "/bench/herd").unwrap();
                gate.wait();
                drop(m.acquire().unwrap());
                total.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    gate.wait();
    while holder.participant_nodes().unwrap().len() < n + 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    while e.stats().requests(OpCode::GetData) < n as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = e.stats().watch_notifications;
    drop(g);
    for t in threads {
        t.join().unwrap();
    }
    let after = e.stats().watch_notifications;
    for c in clients {
        c.close();
    }
    (after - before) as f64 / n as f64
}

/// Notifications per release when `n` waiters (one session each) queue behind a
/// holder and each releases right after acquiring.
fn chain_notifications(cs: &str, e: &zk_testing::embedded::EmbeddedServer, n: usize, semaphore: bool) -> f64 {
    let holder_client = client(cs);
    let hold = |c: &CuratorFramework| -> Box<dyn FnOnce() + Send> {
        if semaphore {
            let m = Arc::new(InterProcessSemaphoreMutex::new(c, "/bench/chain").unwrap());
            m.acquire_raw().unwrap();
            Box::new(move || m.release().unwrap())
        } else {
            let m = InterProcessMutex::new(c, "/bench/chain").unwrap();
            m.acquire_raw().unwrap();
            Box::new(move || m.release().unwrap())
        }
    };
    let release_holder = hold(&holder_client);
    let clients: Vec<_> = (0..n).map(|_| client(cs)).collect();
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = clients
        .iter()
        .map(|c| {
            let (c, done) = (c.clone(), done.clone());
            std::thread::spawn(move || {
                if semaphore {
                    let m = InterProcessSemaphoreMutex::new(&c, "/bench/chain").unwrap();
                    drop(m.acquire().unwrap());
                } else {
                    let m = InterProcessMutex::new(&c, "/bench/chain").unwrap();
                    drop(m.acquire().unwrap());
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1000)); // every waiter queued and watching
    let before = e.stats().watch_notifications;
    release_holder();
    for t in threads {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let after = e.stats().watch_notifications;
    for c in clients {
        c.close();
    }
    holder_client.close();
    (after - before) as f64 / (n + 1) as f64
}

/// Read and write acquisitions per second with `readers` reader sessions and one
/// writer session.
fn rw_throughput(cs: &str, readers: usize, run: Duration) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let clients: Vec<_> = (0..=readers).map(|_| client(cs)).collect();
    for (i, c) in clients.iter().enumerate() {
        let c = c.clone();
        let (stop, reads, writes) = (stop.clone(), reads.clone(), writes.clone());
        threads.push(std::thread::spawn(move || {
            let rw = InterProcessReadWriteLock::new(&c, "/bench/rw").unwrap();
            while !stop.load(Ordering::Relaxed) {
                if i == 0 {
                    drop(rw.write_lock().acquire().unwrap());
                    writes.fetch_add(1, Ordering::Relaxed);
                } else {
                    drop(rw.read_lock().acquire().unwrap());
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let t = Instant::now();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let (r, w) = (reads.load(Ordering::Relaxed), writes.load(Ordering::Relaxed));
    let secs = t.elapsed().as_secs_f64();
    for t in threads {
        t.join().unwrap();
    }
    for c in clients {
        c.close();
    }
    (r as f64 / secs, w as f64 / secs)
}

/// Notifications sent when writer W1 releases with `n/2` readers, a writer W2 and
/// `n/2` more readers queued behind it (one session each): only the first half
/// can proceed.
fn rw_release_notifications(cs: &str, e: &zk_testing::embedded::EmbeddedServer, n: usize) -> u64 {
    let half = n / 2;
    let writer = client(cs);
    let rw = InterProcessReadWriteLock::new(&writer, "/bench/rw-herd").unwrap();
    let w = rw.write_lock().acquire().unwrap();
    let finish = Arc::new(AtomicBool::new(false));
    let first_half = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let mut clients = Vec::new();
    for stage in 0..3 {
        let count = if stage == 1 { 1 } else { half };
        for _ in 0..count {
            let c = client(cs);
            clients.push(c.clone());
            let (finish, first_half) = (finish.clone(), first_half.clone());
            threads.push(std::thread::spawn(move || {
                let rw = InterProcessReadWriteLock::new(&c, "/bench/rw-herd").unwrap();
                let lock: &dyn zk_recipes::InterProcessLock = if stage == 1 { rw.write_lock() } else { rw.read_lock() };
                let g = lock.acquire_holding(None).unwrap().unwrap();
                if stage == 0 {
                    first_half.fetch_add(1, Ordering::SeqCst);
                }
                while !finish.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                lock.release_holding(g).unwrap();
            }));
        }
        let want = match stage {
            0 => half,
            1 => half,
            _ => 2 * half,
        };
        if stage == 1 {
            while rw.write_lock().participant_nodes().unwrap().len() < 2 {
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            while rw.read_lock().participant_nodes().unwrap().len() < want {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300)); // every waiter sets its watch
    let before = e.stats().watch_notifications;
    drop(w);
    while first_half.load(Ordering::SeqCst) < half as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300)); // late notifications would show here
    let after = e.stats().watch_notifications;
    finish.store(true, Ordering::SeqCst);
    for c in &clients {
        c.close();
    }
    for t in threads {
        let _ = t.join();
    }
    writer.close();
    after - before
}

/// A number from `/proc/self/status` (`VmRSS` in KiB, `Threads`), 0 elsewhere.
fn proc_status(field: &str) -> u64 {
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
fn task_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| {
        d.flatten()
            .filter(|e| {
                let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
                !comm.starts_with("zk-embedded")
            })
            .count()
    })
}

/// What a client costs: threads (idle, then after using a lock), resident
/// memory, connect-to-ready and `close()` time, over `n` clients.
fn client_cost(cs: &str, n: usize) {
    // One client first, so that process-wide one-offs (the lock watch timer,
    // allocator arenas) are not charged to the clients measured.
    let warm = client(cs);
    drop(
        InterProcessMutex::new(&warm, "/bench/clients/warm")
            .unwrap()
            .acquire()
            .unwrap(),
    );
    let (t0, rss0) = (task_count(), proc_status("VmRSS"));
    let mut ready = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        clients.push(client(cs));
        ready.push(t.elapsed());
    }
    let (t1, rss1) = (task_count(), proc_status("VmRSS"));
    if std::env::var_os("ZK_BENCH_THREAD_NAMES").is_some() {
        let mut names = std::collections::BTreeMap::<String, usize>::new();
        for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let n = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            *names.entry(n.trim().to_string()).or_default() += 1;
        }
        eprintln!("threads: {names:?}");
    }
    for (i, c) in clients.iter().enumerate() {
        let m = InterProcessMutex::new(c, &format!("/bench/clients/l{i}")).unwrap();
        let g = m.acquire().unwrap();
        std::thread::sleep(Duration::from_millis(20)); // the own-node watch goes out
        drop(g);
    }
    let t2 = task_count();
    let mut closes = Vec::new();
    for c in clients {
        let t = Instant::now();
        c.close();
        closes.push(t.elapsed());
    }
    let t3 = task_count();
    ready.sort();
    closes.sort();
    println!("clients.threads_per_client.idle={:.2}", (t1 - t0) as f64 / n as f64);
    println!(
        "clients.threads_per_client.after_lock={:.2}",
        (t2 - t0) as f64 / n as f64
    );
    println!("clients.threads_left_after_close={}", t3.saturating_sub(t0));
    println!(
        "clients.rss_kib_per_client={:.0}",
        rss1.saturating_sub(rss0) as f64 / n as f64
    );
    println!(
        "clients.connect_to_ready_ms.median={:.2}",
        percentile(&ready, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "clients.close_ms.median={:.2}",
        percentile(&closes, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "clients.close_ms.max={:.2}",
        percentile(&closes, 1.0).as_secs_f64() * 1e3
    );
    warm.close();
}
