//! Lock benchmarks. Prints one `key=value` line per figure.
//!
//! ```text
//! cargo run --release --bin zk-bench -- [--connect HOST:PORT | --apache] [--seconds N] [--only NAME,...]
//! ```
//!
//! Without `--connect` it starts the embedded server in-process; `--apache`
//! starts Debian's ZooKeeper 3.8 instead. Scenarios (`--only` picks some):
//! `connect`, `floor`, `mutex`, `semaphore`, `reentrant`, `handoff`, `herd`,
//! `rwlock`, `multilock`, `clients` and `metrics` (the uncontended mutex cycle
//! with the lock figures on and off, in alternating rounds; built with
//! `--features metrics` the figures also go through the `metrics` facade to a
//! counting recorder) by default; the scale scenarios `latency` (release to
//! next grant, and its floor, alone and with the server kept busy), `deep` (1,000 waiters on one mutex), `many`
//! (10,000 locks held at once) only when named (`--only scale` names them all
//! with `clients`). With `--curator`, Curator 5.4 runs the same scenarios on
//! the same server, paths, window and warm-up (see BENCHMARKS.md). `--tls` runs
//! them over TLS (the server started with a throw-away CA's certificate, every
//! client verifying it).

use std::sync::OnceLock;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::Parser;
use zk_framework::proto::OpCode;
use zk_framework::{Acl, ClientConfig, CreateMode, CuratorFramework, ExponentialBackoffRetry, TlsConfig};
use zk_recipes::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, MultiLock};
use zk_testing::tls::TestPki;
use zk_testing::{Backend, TestingServer};

/// Lock benchmarks on the embedded server (default), Apache ZooKeeper, or
/// a server of yours; one `key=value` line per figure.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "zk-bench",
    override_usage = "zk-bench [--connect HOST:PORT | --apache | --ensemble] [--tls] [--curator] [--seconds N] [--warmup N] [--only NAMES]",
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
    /// Serve and connect over TLS (the embedded server or Apache's
    /// secureClientPort, with certificates made for this run; not with --connect or
    /// --curator).
    #[arg(long, conflicts_with_all = ["connect", "curator"])]
    tls: bool,
    /// Start a 3-node Apache ZooKeeper 3.8 ensemble instead.
    #[arg(long, conflicts_with = "apache")]
    ensemble: bool,
    /// Also run Curator 5.4 (Debian jars) on the same server.
    #[arg(long)]
    curator: bool,
    /// Seconds per timed window.
    #[arg(long, value_name = "N", default_value_t = 3.0)]
    seconds: f64,
    /// Seconds of the same work before every timed window, ours and Curator's
    /// alike (the JVM's JIT warm-up).
    #[arg(long, value_name = "N", default_value_t = 5.0)]
    warmup: f64,
    /// Only these scenarios, comma-separated: connect, floor, mutex, semaphore,
    /// reentrant, handoff, herd, rwlock, multilock, clients, metrics (the
    /// default set), and the scale scenarios latency, deep, many (run only when
    /// named; `--only scale` names latency, deep, many and clients).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Option<Vec<String>>,
}

fn parse() -> Opts {
    Opts::parse()
}

/// The clients' TLS settings with `--tls`.
static TLS: OnceLock<Option<TlsConfig>> = OnceLock::new();

/// The scenarios run only when named.
/// The critical section of the `latency` scenario's `hold_2ms` handoff runs.
const HOLD: Duration = Duration::from_millis(2);
/// The work outside the lock in its `think_1ms` run.
const THINK: Duration = Duration::from_millis(1);

const SCALE: [&str; 3] = ["latency", "deep", "many"];

fn wanted(o: &Opts, name: &str) -> bool {
    match &o.only {
        None => !SCALE.contains(&name),
        Some(v) => v
            .iter()
            .any(|x| x == name || (x == "scale" && (SCALE.contains(&name) || name == "clients"))),
    }
}

fn client(cs: &str) -> CuratorFramework {
    let mut b = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(tls) = TLS.get().cloned().flatten() {
        b = b.tls(tls);
    }
    let c = b.build().expect("client");
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

/// Runs `f` for `warmup` (at least 20 calls), then repeatedly for `run`,
/// returning per-call latencies (sorted).
fn latencies(warmup: Duration, run: Duration, mut f: impl FnMut()) -> Vec<Duration> {
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

fn report_latency(key: &str, v: &[Duration]) {
    println!("{key}.median_us={}", us(percentile(v, 0.5)));
    println!("{key}.p99_us={}", us(percentile(v, 0.99)));
    println!("{key}.ops={}", v.len());
}

fn main() {
    let o = parse();
    let want = |name: &str| wanted(&o, name);
    let backend_kind = if o.apache { Backend::Apache } else { Backend::Embedded };
    let cluster = (o.connect.is_none() && o.ensemble).then(|| {
        zk_testing::apache::ApacheCluster::start(3, zk_testing::apache::ApacheConfig::default())
            .expect("start a 3-node Apache ZooKeeper ensemble")
    });
    let server = if o.connect.is_some() || o.ensemble {
        None
    } else if o.tls {
        let pki = TestPki::new("zk-bench CA").expect("make a CA");
        let tls = TlsConfig::builder()
            .ca_pem(pki.ca_pem().as_bytes())
            .build()
            .expect("TLS config");
        let _ = TLS.set(Some(tls));
        let server_tls = pki.server_tls().expect("server certificate");
        Some(TestingServer::start_backend_tls(backend_kind, server_tls).expect("start a TLS server"))
    } else {
        Some(TestingServer::start_backend(backend_kind).expect("start the server"))
    };
    let cs = o
        .connect
        .clone()
        .or_else(|| cluster.as_ref().map(|c| c.connect_string()))
        .unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    let backend = match (&o.connect, o.apache, o.ensemble) {
        (Some(_), _, _) => "external",
        (None, _, true) => "ensemble3",
        (None, true, _) => "apache",
        (None, false, false) => "embedded",
    };
    println!("server={backend}");
    println!("tls={}", o.tls);
    let run = Duration::from_secs_f64(o.seconds);
    let warmup = Duration::from_secs_f64(o.warmup);
    // Curator's figures for a scenario right after ours, on the same server.
    let side_by_side = |name: &str| {
        if o.curator && want(name) {
            let one = Opts {
                only: Some(vec![name.to_string()]),
                ..o.clone()
            };
            curator(&cs, &server, &one, run);
        }
    };
    let c = client(&cs);
    let zk = c.zookeeper_client();
    let acl = Acl::open_unsafe();
    c.create()
        .creating_parent_containers_if_needed()
        .for_path("/bench/floor/keep")
        .ok();

    if want("connect") {
        // A new session: TCP connect, TLS handshake (with --tls), ConnectRequest,
        // and the close.
        let tls = TLS.get().cloned().flatten();
        let mut v = Vec::new();
        let end = Instant::now() + run;
        while Instant::now() < end || v.len() < 20 {
            let config = ClientConfig::default().with_session_timeout(Duration::from_secs(30));
            let config = match &tls {
                Some(t) => config.with_tls(t.clone()),
                None => config,
            };
            let t = Instant::now();
            let zk = zk_framework::Client::connect(&cs, config).expect("connect");
            zk.wait_connected_timeout(Duration::from_secs(10)).expect("connected");
            v.push(t.elapsed());
            zk.close();
        }
        v.sort();
        report_latency("connect.new_session", &v);
    }

    if want("floor") {
        let v = latencies(warmup, run, || {
            let p = zk
                .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
                .unwrap();
            zk.delete(&p, None).unwrap();
        });
        report_latency("floor.create_delete", &v);
        let v = latencies(warmup, run, || {
            let p = zk
                .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
                .unwrap();
            zk.get_children("/bench/floor").unwrap();
            zk.delete(&p, None).unwrap();
        });
        report_latency("floor.create_getchildren_delete", &v);
    }
    side_by_side("floor");

    if want("mutex") {
        let m = InterProcessMutex::new(&c, "/bench/mutex").unwrap();
        let v = latencies(warmup, run, || drop(m.acquire().unwrap()));
        report_latency("mutex.uncontended_acquire_release", &v);
        let counted = count_requests(&server, || drop(m.acquire().unwrap()));
        if let Some(n) = counted {
            println!("mutex.requests_per_cycle={n}");
        }
    }
    side_by_side("mutex");

    if want("semaphore") {
        let m = InterProcessSemaphoreMutex::new(&c, "/bench/sem").unwrap();
        let v = latencies(warmup, run, || drop(m.acquire().unwrap()));
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
    side_by_side("semaphore");

    if want("metrics") {
        metrics_overhead(&c, run);
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
    side_by_side("reentrant");

    if want("handoff") {
        for sessions in [8usize, 32, 128] {
            let h = handoffs(&cs, sessions, warmup, run, |c| {
                let m = InterProcessMutex::new(c, "/bench/handoff").unwrap();
                Box::new(move |l: &Latch| l.granted(m.acquire().unwrap()))
            });
            h.report("mutex", sessions);
        }
        let h = handoffs(&cs, 8, warmup, run, |c| {
            let m = InterProcessSemaphoreMutex::new(c, "/bench/sem-handoff").unwrap();
            Box::new(move |l: &Latch| l.granted(m.acquire().unwrap()))
        });
        h.report("semaphore_mutex", 8);
    }
    side_by_side("handoff");

    // Notifications are counted by the server: the embedded server's count,
    // or Apache ZooKeeper's own `mntr` counters.
    let sent = || notifications(server.as_ref(), &cs);
    if want("herd") && sent().is_some() {
        let per = notifications_per_release(&cs, &sent, 20);
        println!("mutex.notifications_per_release={per:.2}");
        let per = chain_notifications(&cs, &sent, 20, true);
        println!("semaphore_mutex.notifications_per_release={per:.2}");
    }
    side_by_side("herd");

    if want("rwlock") {
        for readers in [1usize, 4, 16] {
            let (r, w) = rw_throughput(&cs, readers, run);
            println!("rwlock.read_acquires_per_s.readers_{readers}_writers_1={r:.0}");
            println!("rwlock.write_acquires_per_s.readers_{readers}_writers_1={w:.0}");
        }
        let h = handoffs(&cs, 8, warmup, run, |c| {
            let rw = InterProcessReadWriteLock::new(c, "/bench/rw-handoff").unwrap();
            Box::new(move |l: &Latch| l.granted(rw.write_lock().acquire().unwrap()))
        });
        println!("rwlock.write_handoffs_per_s.sessions_8={:.0}", h.rate);
        if sent().is_some() {
            let n = rw_release_notifications(&cs, &sent, 100);
            println!("rwlock.notifications_per_writer_release.queued_readers_100={n}");
        }
    }
    side_by_side("rwlock");

    if want("multilock") {
        let m = MultiLock::from_paths(&c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
        let v = latencies(warmup, run, || drop(m.acquire().unwrap()));
        report_latency("multilock3.uncontended_acquire_release", &v);
        let h = handoffs(&cs, 8, warmup, run, |c| {
            let m = MultiLock::from_paths(c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
            Box::new(move |l: &Latch| l.granted(m.acquire().unwrap()))
        });
        println!("multilock3.handoffs_per_s.sessions_8={:.0}", h.rate);
    }
    side_by_side("multilock");
    if want("latency") {
        // The floors: one write plus one notification to a blocked thread, in
        // three rhythms (see BENCHMARKS.md "Handoff latency and its floor").
        let floor = |key: &str, busy: bool, pause: Duration| {
            let f = floor_latencies(&cs, warmup, run, busy, pause);
            let p50 = percentile(&f.notified, 0.5);
            println!("{key}.p50_us={}", us(p50));
            println!("{key}.p99_us={}", us(percentile(&f.notified, 0.99)));
            println!("{key}.write_round_trip_p50_us={}", us(percentile(&f.round_trip, 0.5)));
            p50
        };
        // Back to back, nothing else on the server.
        let hot = floor("floor.write_plus_notification", false, Duration::ZERO);
        // With a third session as busy as a handoff run's re-queueing holders.
        let busy = floor("floor.write_plus_notification.busy_server", true, Duration::ZERO);
        // After the same pause as a holder's critical section below.
        let paused = floor("floor.write_plus_notification.after_2ms_pause", false, HOLD);
        let ratio = |key: &str, h: &Handoff, name: &str, floor: Duration| {
            println!(
                "{key}.handoff_latency.p50_over_{name}.sessions_8={:.2}",
                percentile(&h.latencies, 0.5).as_secs_f64() / floor.as_secs_f64()
            );
        };
        let mutex = |c: &CuratorFramework| -> LoopBody {
            let m = InterProcessMutex::new(c, "/bench/handoff").unwrap();
            Box::new(move |l: &Latch| l.granted(m.acquire().unwrap()))
        };
        // Zero hold time: each holder releases at once and queues again, so
        // the server re-queues one holder while it hands over to the next.
        for sessions in [2usize, 8] {
            let h = handoffs(&cs, sessions, warmup, run, mutex);
            h.report("latency.mutex", sessions);
            if sessions == 8 {
                ratio("latency.mutex", &h, "floor", hot);
                ratio("latency.mutex", &h, "busy_floor", busy);
            }
        }
        // A 2 ms critical section: the holder released before has queued
        // again by the time of the next release, so the server has only the
        // delete to do, as in the floor after the same pause. The released
        // holder queues again at once (while the next one is being woken), or
        // after 1 ms of work outside the lock.
        for (key, think) in [
            ("latency_hold_2ms", Duration::ZERO),
            ("latency_hold_2ms_think_1ms", THINK),
        ] {
            let h = handoffs_holding(&cs, 8, warmup, run, (HOLD, think), mutex);
            let key = format!("{key}.mutex");
            h.report(&key, 8);
            ratio(&key, &h, "paused_floor", paused);
            ratio(&key, &h, "floor", hot);
        }
    }
    side_by_side("latency");
    if want("deep") {
        let deep: usize = std::env::var("ZK_BENCH_DEEP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEEP);
        for (threads, sessions) in [(deep, 1), (deep, DEEP_SESSIONS.min(deep))] {
            let d = deep_queue(&cs, server.as_ref(), threads, sessions);
            d.report("", threads, sessions);
        }
    }
    side_by_side("deep");
    if want("many") {
        many_locks(&c, MANY_WARMUP, MANY_THREADS, "/bench/many-ours-warmup", false);
        many_locks(&c, MANY, MANY_THREADS, "/bench/many-ours", true);
    }
    side_by_side("many");
    if want("clients") {
        client_cost(&cs, 16);
    }
    side_by_side("clients");
    let _ = std::fs::remove_dir_all(java_dir());
    c.close();
}

/// Compiles `CuratorBench.java` once per run; its class path.
fn java_classpath(jars: &[String]) -> Option<String> {
    use std::process::Command;
    static CP: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    CP.get_or_init(|| {
        let out_dir = java_dir();
        std::fs::create_dir_all(&out_dir).ok()?;
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench/CuratorBench.java");
        let status = Command::new("javac")
            .args(["-d", out_dir.to_str()?, "-cp", &jars.join(":"), src])
            .status();
        matches!(status, Ok(s) if s.success()).then(|| format!("{}:{}", out_dir.display(), jars.join(":")))
    })
    .clone()
}

fn java_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("zk-bench-java-{}", std::process::id()))
}

/// Runs Curator 5.4 (Debian's jars) on the same server and prints its figures.
fn curator(cs: &str, server: &Option<TestingServer>, o: &Opts, run: Duration) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let want = |name: &str| wanted(o, name);
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
    let Some(cp) = java_classpath(&cp_jars) else {
        println!("curator.error=javac failed");
        return;
    };
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
    let warm = format!("{}", o.warmup);
    let a = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    if want("mutex") {
        print_all(java(&a(&["latency", "mutex", &secs, &warm, "/bench/mutex"])));
    }
    if want("semaphore") {
        print_all(java(&a(&["latency", "semaphore", &secs, &warm, "/bench/sem"])));
    }
    if want("handoff") {
        for sessions in [8, 32, 128] {
            let n = sessions.to_string();
            print_all(java(&a(&["handoff", "mutex", &n, &secs, &warm, "/bench/handoff"])));
        }
        print_all(java(&a(&[
            "handoff",
            "semaphore",
            "8",
            &secs,
            &warm,
            "/bench/sem-handoff",
        ])));
    }
    if want("latency") {
        for sessions in ["2", "8"] {
            print_all(java(&a(&[
                "handoff",
                "mutex",
                sessions,
                &secs,
                &warm,
                "/bench/handoff",
                "latency.mutex",
            ])));
        }
        let hold = HOLD.as_micros().to_string();
        for (key, think) in [
            ("latency_hold_2ms.mutex", Duration::ZERO),
            ("latency_hold_2ms_think_1ms.mutex", THINK),
        ] {
            print_all(java(&a(&[
                "handoff",
                "mutex",
                "8",
                &secs,
                &warm,
                "/bench/handoff",
                key,
                &hold,
                &think.as_micros().to_string(),
            ])));
        }
    }
    if want("deep") {
        for (threads, sessions) in [(DEEP, 1), (DEEP, DEEP_SESSIONS)] {
            let mut child = java(&a(&[
                "deep",
                &threads.to_string(),
                &sessions.to_string(),
                "/bench/deep",
            ]));
            let mut stdin = child.stdin.take().unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            assert_eq!(lines.next().unwrap().unwrap(), "ready");
            // Every waiter has set its watch.
            let deadline = Instant::now() + Duration::from_secs(30);
            while wchs(cs).map_or(0, |(w, _)| w) < threads as u64 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let queued_watches = wchs(cs);
            let n0 = notifications(server.as_ref(), cs);
            writeln!(stdin).unwrap();
            let drain_line = lines.next().unwrap().unwrap();
            let ms: f64 = drain_line.strip_prefix("drain_ms=").unwrap().parse().unwrap();
            assert_eq!(lines.next().unwrap().unwrap(), "done");
            let n1 = notifications(server.as_ref(), cs);
            writeln!(stdin).unwrap();
            let _ = child.wait();
            Deep {
                drain: Duration::from_secs_f64(ms / 1e3),
                notifications: n0.zip(n1).map(|(a, b)| b - a),
                queued_watches,
            }
            .report("curator.", threads, sessions);
        }
    }
    if want("many") {
        let (n, t, w) = (MANY.to_string(), MANY_THREADS.to_string(), MANY_WARMUP.to_string());
        print_all(java(&a(&["many", &n, &t, "/bench/many-curator", &w])));
    }
    if want("clients") {
        print_all(java(&a(&["clients", "16"])));
    }
    // Notifications counted by the server: the embedded server's count, or
    // Apache ZooKeeper's own `mntr` counters.
    let sent = || notifications(server.as_ref(), cs);
    // Runs a CuratorBench step that prints `ready`, waits for a line, prints
    // `done_line` when its releases are over, waits for a line and exits: the
    // notifications sent in between.
    let counted = |args: &[String], done_line: &str| -> u64 {
        let mut child = java(args);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let n0 = sent().unwrap_or(0);
        writeln!(stdin).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), done_line);
        let n1 = sent().unwrap_or(0);
        writeln!(stdin).unwrap();
        let _ = child.wait();
        n1 - n0
    };
    if sent().is_some() {
        if want("herd") {
            for kind in ["mutex", "semaphore"] {
                let n = counted(&["chain".into(), kind.into(), "20".into()], "done");
                let key = if kind == "mutex" { "mutex" } else { "semaphore_mutex" };
                println!("curator.{key}.notifications_per_release={:.2}", n as f64 / 21.0);
            }
        }
        if want("rwlock") {
            let n = counted(&["rwherd".into(), "100".into()], "released");
            println!("curator.rwlock.notifications_per_writer_release.queued_readers_100={n}");
        }
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

/// Marks grants and releases in a handoff run: the time from one holder's
/// release to the next holder's grant is measured across sessions (one
/// process, one clock).
struct Latch {
    epoch: Instant,
    /// When the last holder began its release, in ns since `epoch` (0: none yet).
    last_release: AtomicU64,
    timing: AtomicBool,
    /// How long each holder holds before releasing (its critical section).
    hold: Duration,
    /// How long each holder works after its release before it queues again.
    think: Duration,
}

impl Latch {
    /// Called with a fresh guard: records the wait since the last release,
    /// then releases (dropping the guard) and marks the release.
    fn granted<G>(&self, guard: G) -> Option<Duration> {
        let granted = self.epoch.elapsed().as_nanos() as u64;
        let prev = self.last_release.load(Ordering::SeqCst);
        let lat = (self.timing.load(Ordering::Relaxed) && prev != 0)
            .then(|| Duration::from_nanos(granted.saturating_sub(prev)));
        if !self.hold.is_zero() {
            std::thread::sleep(self.hold);
        }
        self.last_release
            .store(self.epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
        drop(guard);
        if !self.think.is_zero() {
            std::thread::sleep(self.think);
        }
        lat
    }
}

/// One holder's loop body in a handoff run: acquires, then hands the guard to
/// the latch; returns the release-to-grant time when timing.
type LoopBody = Box<dyn FnMut(&Latch) -> Option<Duration> + Send>;

/// A handoff run's figures.
struct Handoff {
    rate: f64,
    per_client: Vec<u64>,
    latencies: Vec<Duration>,
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

    fn report(&self, key: &str, sessions: usize) {
        println!("{key}.handoffs_per_s.sessions_{sessions}={:.0}", self.rate);
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

/// Contended acquisitions: `sessions` clients, each in its own thread, loop
/// `acquire+release` on one lock; `warmup` of that, then a timed window of
/// `run`. Each loop body gets the latch and returns its release-to-grant time.
fn handoffs(
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    make: impl Fn(&CuratorFramework) -> LoopBody,
) -> Handoff {
    handoffs_holding(cs, sessions, warmup, run, (Duration::ZERO, Duration::ZERO), make)
}

/// [`handoffs`] with each holder holding the lock for `hold.0` before it
/// releases (the clock is not running meanwhile) and queueing again `hold.1`
/// after its release.
fn handoffs_holding(
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    (hold, think): (Duration, Duration),
    make: impl Fn(&CuratorFramework) -> LoopBody,
) -> Handoff {
    let clients: Vec<_> = (0..sessions).map(|_| client(cs)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let latch = Arc::new(Latch {
        epoch: Instant::now(),
        last_release: AtomicU64::new(0),
        timing: AtomicBool::new(false),
        hold,
        think,
    });
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..sessions).map(|_| AtomicU64::new(0)).collect());
    let gate = Arc::new(Barrier::new(sessions + 1));
    let threads: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut f = make(c);
            let (stop, counts, gate, latch) = (stop.clone(), counts.clone(), gate.clone(), latch.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                gate.wait();
                while !stop.load(Ordering::Relaxed) {
                    if let Some(d) = f(&latch) {
                        lat.push(d);
                    }
                    counts[i].fetch_add(1, Ordering::Relaxed);
                }
                lat
            })
        })
        .collect();
    gate.wait();
    std::thread::sleep(warmup);
    let before: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let t = Instant::now();
    latch.timing.store(true, Ordering::Relaxed);
    std::thread::sleep(run);
    latch.timing.store(false, Ordering::Relaxed);
    let after: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let elapsed = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for t in threads {
        latencies.extend(t.join().unwrap());
    }
    for c in clients {
        c.close();
    }
    latencies.sort();
    let per_client: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    Handoff {
        rate: per_client.iter().sum::<u64>() as f64 / elapsed.as_secs_f64(),
        per_client,
        latencies,
    }
}

/// Average watch notifications the server sends per mutex release with `n`
/// waiters queued.
fn notifications_per_release(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize) -> f64 {
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
    while holder.participant_paths().unwrap().len() < n + 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Every waiter has set its watches: on the node ahead and on its own.
    let deadline = Instant::now() + Duration::from_secs(30);
    while wchs(cs).map_or(0, |(w, _)| w) < 2 * n as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = sent().unwrap_or(0);
    drop(g);
    for t in threads {
        t.join().unwrap();
    }
    let after = sent().unwrap_or(0);
    for c in clients {
        c.close();
    }
    (after - before) as f64 / n as f64
}

/// Notifications per release when `n` waiters (one session each) queue behind a
/// holder and each releases right after acquiring.
fn chain_notifications(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize, semaphore: bool) -> f64 {
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
    let before = sent().unwrap_or(0);
    release_holder();
    for t in threads {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let after = sent().unwrap_or(0);
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
fn rw_release_notifications(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize) -> u64 {
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
            while rw.write_lock().participant_paths().unwrap().len() < 2 {
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            while rw.read_lock().participant_paths().unwrap().len() < want {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300)); // every waiter sets its watch
    let before = sent().unwrap_or(0);
    drop(w);
    while first_half.load(Ordering::SeqCst) < half as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300)); // late notifications would show here
    let after = sent().unwrap_or(0);
    finish.store(true, Ordering::SeqCst);
    // Every holder releases before its client closes (a release after the
    // close is, rightly, LockLost); the queued writer and the readers behind
    // it take the lock in turn and release it, since `finish` is set.
    for t in threads {
        let _ = t.join();
    }
    for c in &clients {
        c.close();
    }
    writer.close();
    after - before
}

/// The uncontended mutex cycle with the lock figures (`zk_recipes::stats`,
/// and the `metrics` facade when built with `--features metrics`) on and off:
/// many short rounds in pairs (on/off, then off/on), the overhead being the
/// median over pairs of the ratio of their medians, so that drift in the
/// server or the machine hits both alike. Also prints the bookkeeping's own
/// CPU cost per cycle, measured without a server. `ZK_BENCH_AA=1` keeps the
/// figures on in both halves: the "overhead" it prints is the noise.
fn metrics_overhead(c: &CuratorFramework, run: Duration) {
    let facade = install_recorder();
    let aa = std::env::var_os("ZK_BENCH_AA").is_some();
    let m = InterProcessMutex::new(c, "/bench/metrics").unwrap();
    for _ in 0..50 {
        drop(m.acquire().unwrap()); // warm-up
    }
    let pairs = ((run.as_secs_f64() / 0.2) as usize).max(10);
    let round = run / (2 * pairs as u32);
    let timed = |on: bool| {
        zk_recipes::stats::set_enabled(c, on || aa);
        let mut v = Vec::new();
        let end = Instant::now() + round;
        while Instant::now() < end {
            let t = Instant::now();
            drop(m.acquire().unwrap());
            v.push(t.elapsed());
        }
        v.sort();
        v
    };
    let (mut all_on, mut all_off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..pairs {
        let (on, off) = if pair % 2 == 0 {
            let on = timed(true);
            (on, timed(false))
        } else {
            let off = timed(false);
            (timed(true), off)
        };
        let (mon, moff) = (percentile(&on, 0.5), percentile(&off, 0.5));
        if !moff.is_zero() {
            ratios.push(mon.as_secs_f64() / moff.as_secs_f64());
        }
        all_on.extend(on);
        all_off.extend(off);
    }
    zk_recipes::stats::set_enabled(c, true);
    all_on.sort();
    all_off.sort();
    ratios.sort_by(|a, b| a.total_cmp(b));
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(1.0);
    let bookkeeping = zk_recipes::unstable::bookkeeping_cost(100_000);
    let moff = percentile(&all_off, 0.5);
    println!("metrics.facade={}", if facade { "on" } else { "off" });
    println!("metrics.uncontended.median_on_us={}", us(percentile(&all_on, 0.5)));
    println!("metrics.uncontended.median_off_us={}", us(moff));
    println!("metrics.uncontended.overhead_pct={:.2}", (ratio - 1.0) * 100.0);
    println!(
        "metrics.uncontended.pairs={} ops_on={} ops_off={}",
        ratios.len(),
        all_on.len(),
        all_off.len()
    );
    println!(
        "metrics.bookkeeping_ns_per_cycle={:.0}",
        bookkeeping.as_secs_f64() * 1e9
    );
    println!(
        "metrics.bookkeeping_pct_of_cycle={:.3}",
        bookkeeping.as_secs_f64() / moff.as_secs_f64().max(1e-9) * 100.0
    );
}

/// Installs a counting recorder as an exporter would (with the `metrics`
/// feature); returns whether the facade is in use.
#[cfg(feature = "metrics")]
fn install_recorder() -> bool {
    use metrics::{
        Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString,
        Unit,
    };
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Cell(AtomicU64);
    impl CounterFn for Cell {
        fn increment(&self, v: u64) {
            self.0.fetch_add(v, Ordering::Relaxed);
        }
        fn absolute(&self, v: u64) {
            self.0.store(v, Ordering::Relaxed);
        }
    }
    impl GaugeFn for Cell {
        fn increment(&self, v: f64) {
            self.0.fetch_add(v as u64, Ordering::Relaxed);
        }
        fn decrement(&self, v: f64) {
            self.0.fetch_sub(v as u64, Ordering::Relaxed);
        }
        fn set(&self, v: f64) {
            self.0.store(v as u64, Ordering::Relaxed);
        }
    }
    impl HistogramFn for Cell {
        fn record(&self, v: f64) {
            self.0.fetch_add(v.to_bits() & 1, Ordering::Relaxed);
        }
    }
    /// Registers each key once (as exporters do) and counts into atomics.
    #[derive(Default)]
    struct Counting(Mutex<HashMap<Key, Arc<Cell>>>);
    impl Counting {
        fn cell(&self, key: &Key) -> Arc<Cell> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key.clone())
                .or_default()
                .clone()
        }
    }
    impl Recorder for Counting {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell(key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell(key))
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(self.cell(key))
        }
    }
    metrics::set_global_recorder(Counting::default()).is_ok()
}

#[cfg(not(feature = "metrics"))]
fn install_recorder() -> bool {
    false
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

/// Waiters in the deep-queue scenario, and the sessions of its second run.
const DEEP: usize = 1000;
const DEEP_SESSIONS: usize = 100;
/// Locks held at once in the many-locks scenario, from this many threads;
/// the warm-up round takes fewer, under another root.
const MANY: usize = 10_000;
const MANY_THREADS: usize = 64;
const MANY_WARMUP: usize = 1_000;

/// The floor's samples.
struct Floor {
    /// From the delete call to the moment a thread blocked on the watch (as a
    /// lock waiter is) runs again.
    notified: Vec<Duration>,
    /// The delete's own round trip, in the same cycles.
    round_trip: Vec<Duration>,
}

/// One write round trip plus one notification: a client watches a node, a
/// second one deletes it; the time from the delete call to the moment a
/// thread of the first client's, blocked until the watch fires (as a lock
/// waiter is), runs again. With `busy`, a third session keeps the server
/// about as busy as a handoff run's re-queueing holders do (create, list,
/// read, delete, in a loop).
fn floor_latencies(cs: &str, warmup: Duration, run: Duration, busy: bool, pause: Duration) -> Floor {
    let (a, b) = (client(cs), client(cs));
    let (za, zb) = (a.zookeeper_client(), b.zookeeper_client());
    let acl = Acl::open_unsafe();
    let path = "/bench/floor-notify";
    // The waiting thread: blocks until the watcher signals, then reports when
    // it ran again.
    let (event_tx, event_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let (woke_tx, woke_rx) = std::sync::mpsc::sync_channel::<Instant>(1);
    let waiter = std::thread::spawn(move || {
        while event_rx.recv().is_ok() {
            if woke_tx.send(Instant::now()).is_err() {
                break;
            }
        }
    });
    let once = || {
        zb.create(path, &[], &acl, CreateMode::Ephemeral).unwrap();
        let tx = event_tx.clone();
        za.exists_w(path, move |_| {
            let _ = tx.try_send(());
        })
        .unwrap();
        // Two round trips since the waiter last ran: it is blocked again.
        // As long as a holder holds before its release in the handoff run
        // with a critical section: the machine idles as it does there.
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let t0 = Instant::now();
        zb.delete(path, None).unwrap();
        let round_trip = t0.elapsed();
        let woke = woke_rx.recv_timeout(Duration::from_secs(10)).expect("the watch fires");
        (woke.saturating_duration_since(t0), round_trip)
    };
    let stop_load = Arc::new(AtomicBool::new(false));
    let load = busy.then(|| {
        let (c, stop) = (client(cs), stop_load.clone());
        std::thread::spawn(move || {
            let z = c.zookeeper_client();
            let acl = Acl::open_unsafe();
            while !stop.load(Ordering::Relaxed) {
                let p = z
                    .create("/bench/floor/busy-", &[], &acl, CreateMode::EphemeralSequential)
                    .unwrap();
                z.get_children("/bench/floor").unwrap();
                z.get_data(&p).unwrap();
                z.delete(&p, None).unwrap();
            }
            c.close();
        })
    });
    let end = Instant::now() + warmup;
    while Instant::now() < end {
        once();
    }
    let (mut notified, mut round_trip) = (Vec::new(), Vec::new());
    let end = Instant::now() + run;
    while Instant::now() < end {
        let (n, r) = once();
        notified.push(n);
        round_trip.push(r);
    }
    stop_load.store(true, Ordering::Relaxed);
    if let Some(t) = load {
        t.join().unwrap();
    }
    drop(event_tx);
    waiter.join().unwrap();
    notified.sort();
    round_trip.sort();
    a.close();
    b.close();
    Floor { notified, round_trip }
}

/// The servers' watch tables: (total watches, watched paths), from `wchs`,
/// summed over every server of the connect string.
fn wchs(cs: &str) -> Option<(u64, u64)> {
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

/// A deep queue's figures.
struct Deep {
    drain: Duration,
    /// Notifications the servers sent from the first release to the last
    /// (the embedded server's count, or Apache ZooKeeper's own `mntr`
    /// counters).
    notifications: Option<u64>,
    /// `wchs` with every waiter queued: total watches and watched paths.
    queued_watches: Option<(u64, u64)>,
}

impl Deep {
    fn report(&self, prefix: &str, threads: usize, sessions: usize) {
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
    }
}

/// Watch notifications sent so far: the embedded server's count; for Apache
/// ZooKeeper its own `mntr` counters (`zk_sum_node_{created,deleted,changed,
/// children}_watch_count`: the watchers each change triggered), summed over
/// every server of the connect string.
fn notifications(server: Option<&TestingServer>, cs: &str) -> Option<u64> {
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

/// A holder and `threads` waiters (spread over `sessions` clients) on one
/// mutex; once all are queued the holder releases and each waiter releases as
/// soon as it holds. The drain is from the holder's release to the last one.
fn deep_queue(cs: &str, server: Option<&TestingServer>, threads: usize, sessions: usize) -> Deep {
    let path = "/bench/deep";
    let holder_client = client(cs);
    let holder = InterProcessMutex::new(&holder_client, path).unwrap();
    let g = holder.acquire().unwrap();
    let clients: Vec<_> = (0..sessions).map(|_| client(cs)).collect();
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let (c, last) = (clients[i % sessions].clone(), last.clone());
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let m = InterProcessMutex::new(&c, path).unwrap();
                    drop(m.acquire().unwrap());
                    last.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    while holder.participant_nodes().unwrap().len() < threads + 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Every waiter has set its watches, on the node ahead and on its own (and
    // the holder its own-node watch).
    let deadline = Instant::now() + Duration::from_secs(30);
    while wchs(cs).map_or(0, |(w, _)| w) < 2 * threads as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let queued_watches = wchs(cs);
    let n0 = notifications(server, cs);
    let t0 = epoch.elapsed();
    drop(g);
    for w in workers {
        w.join().unwrap();
    }
    let drain = Duration::from_nanos(last.load(Ordering::SeqCst)) - t0;
    let n1 = notifications(server, cs);
    for c in clients {
        c.close();
    }
    holder_client.close();
    Deep {
        drain,
        notifications: n0.zip(n1).map(|(a, b)| b - a),
        queued_watches,
    }
}

/// `threads` threads of one client take `locks` distinct mutexes under
/// `root` and hold them all at once, then release them; prints acquires/s,
/// releases/s and resident memory per held lock (`report`).
fn many_locks(c: &CuratorFramework, locks: usize, threads: usize, root: &str, report: bool) {
    let held = Arc::new(Barrier::new(threads + 1));
    let release = Arc::new(Barrier::new(threads + 1));
    let released = Arc::new(Barrier::new(threads + 1));
    let rss0 = proc_status("VmRSS");
    let t0 = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (c, held, release, released) = (c.clone(), held.clone(), release.clone(), released.clone());
            let root = root.to_string();
            std::thread::spawn(move || {
                let mutexes: Vec<_> = (t..locks)
                    .step_by(threads)
                    .map(|i| InterProcessMutex::new(&c, &format!("{root}/l{i}")).unwrap())
                    .collect();
                let guards: Vec<_> = mutexes.iter().map(|m| m.acquire().unwrap()).collect();
                held.wait();
                release.wait();
                drop(guards);
                released.wait();
            })
        })
        .collect();
    held.wait();
    let acquired = t0.elapsed();
    // The own-node watches go out OWN_WATCH_DELAY after each grant: count them in.
    std::thread::sleep(Duration::from_millis(50));
    let rss1 = proc_status("VmRSS");
    let t1 = Instant::now();
    release.wait();
    released.wait();
    let releasing = t1.elapsed();
    for w in workers {
        w.join().unwrap();
    }
    if report {
        println!(
            "many.acquires_per_s.locks_{locks}={:.0}",
            locks as f64 / acquired.as_secs_f64()
        );
        println!(
            "many.releases_per_s.locks_{locks}={:.0}",
            locks as f64 / releasing.as_secs_f64()
        );
        println!(
            "many.rss_bytes_per_held_lock={:.0}",
            rss1.saturating_sub(rss0) as f64 * 1024.0 / locks as f64
        );
    }
}
