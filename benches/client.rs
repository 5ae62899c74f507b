//! Client benchmark: our `zk_framework::Client`, the `zookeeper` 0.8
//! crate and Apache's Java client (Debian's jars), side by side against the same
//! server in one run. Prints `key=value` lines.
//!
//! ```text
//! cargo bench --bench client                      # real ZooKeeper 3.8 (Debian's package)
//! cargo bench --bench client -- --embedded        # the embedded server
//! cargo bench --bench client -- --connect HOST:PORT [--seconds N] [--rounds N]
//! ```
//!
//! Figures: sequential create+delete pairs/s and getChildren/s from one thread,
//! and pipelined getChildren/s and create+delete pairs/s from 8 and 32 threads
//! sharing one handle. Each client is measured `--rounds` times (alternating)
//! and the best round is kept, to damp the noise of a shared machine.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_framework::proto::{Acl, CreateMode};
use zk_framework::{Client, ClientConfig};
use zk_testing::{Backend, TestingServer};

/// The operations measured, for either client.
trait Bench: Send + Sync + 'static {
    fn create_delete(&self, path: &str);
    fn children(&self, path: &str) -> usize;
    fn ensure(&self, path: &str);
}

impl Bench for Client {
    fn create_delete(&self, path: &str) {
        self.create(path, b"x", &Acl::open_unsafe(), CreateMode::Persistent)
            .unwrap();
        self.delete(path, None).unwrap();
    }
    fn children(&self, path: &str) -> usize {
        self.get_children(path).unwrap().len()
    }
    fn ensure(&self, path: &str) {
        let _ = self.create(path, b"", &Acl::open_unsafe(), CreateMode::Persistent);
    }
}

impl Bench for zookeeper::ZooKeeper {
    fn create_delete(&self, path: &str) {
        self.create(
            path,
            b"x".to_vec(),
            zookeeper::Acl::open_unsafe().clone(),
            zookeeper::CreateMode::Persistent,
        )
        .unwrap();
        self.delete(path, None).unwrap();
    }
    fn children(&self, path: &str) -> usize {
        self.get_children(path, false).unwrap().len()
    }
    fn ensure(&self, path: &str) {
        let _ = self.create(
            path,
            vec![],
            zookeeper::Acl::open_unsafe().clone(),
            zookeeper::CreateMode::Persistent,
        );
    }
}

static SECS: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

fn secs() -> Duration {
    *SECS.get().unwrap_or(&Duration::from_secs(2))
}

/// Runs `op` from `threads` threads for the measurement time; returns ops/s.
fn run<B: Bench>(c: &Arc<B>, threads: usize, op: impl Fn(&B, usize, u64) + Send + Sync + Copy + 'static) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (c, stop, count) = (c.clone(), stop.clone(), count.clone());
            thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    op(&c, t, i);
                    i += 1;
                }
                count.fetch_add(i, Ordering::Relaxed);
            })
        })
        .collect();
    thread::sleep(secs());
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn suite<B: Bench>(name: &str, c: B, root: &str) -> Vec<(String, f64)> {
    let c = Arc::new(c);
    c.ensure(root);
    let kids = format!("{root}/kids");
    c.ensure(&kids);
    for i in 0..10 {
        c.ensure(&format!("{kids}/k{i}"));
    }
    let cd = format!("{root}/{name}");
    c.ensure(&cd);
    let mut out = Vec::new();
    let cd: &'static str = Box::leak(cd.into_boxed_str());
    let kids: &'static str = Box::leak(kids.into_boxed_str());
    let r = run(&c, 1, move |c: &B, t, i| c.create_delete(&format!("{cd}/n{t}-{i}")));
    out.push(("create_delete_pairs_per_s.threads_1".to_string(), r));
    for threads in [1, 8, 32] {
        let r = run(&c, threads, move |c: &B, _, _| {
            assert_eq!(c.children(kids), 10);
        });
        out.push((format!("get_children_per_s.threads_{threads}"), r));
    }
    for threads in [8, 32] {
        let r = run(&c, threads, move |c: &B, t, i| {
            c.create_delete(&format!("{cd}/n{t}-{i}"))
        });
        out.push((format!("create_delete_pairs_per_s.threads_{threads}"), r));
    }
    out
}

fn keep_best(best: &mut Vec<(String, f64)>, new: Vec<(String, f64)>) {
    if best.is_empty() {
        *best = new;
    } else {
        for (b, n) in best.iter_mut().zip(new) {
            b.1 = b.1.max(n.1);
        }
    }
}

/// Runs the Java client benchmark; returns its figures, keyed like ours.
fn java(cs: &str) -> Option<Vec<(String, f64)>> {
    let j = "/usr/share/java";
    let cp_jars = format!("{j}/zookeeper.jar:{j}/zookeeper-jute.jar:{j}/slf4j-api.jar:{j}/slf4j-nop.jar");
    if !std::path::Path::new(&format!("{j}/zookeeper.jar")).exists() {
        return None;
    }
    let out = std::env::temp_dir().join(format!("zk-client-bench-{}", std::process::id()));
    std::fs::create_dir_all(&out).ok()?;
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench/JavaClientBench.java");
    let ok = std::process::Command::new("javac")
        .args(["-d", out.to_str()?, "-cp", &cp_jars, src])
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    let output = std::process::Command::new("java")
        .args([
            "-Xmx256m",
            "-cp",
            &format!("{}:{cp_jars}", out.display()),
            "JavaClientBench",
            cs,
        ])
        .arg(secs().as_secs_f64().to_string())
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(&out);
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("java."))
            .filter_map(|l| l.split_once('='))
            .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
            .collect(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut backend = Some(Backend::Apache);
    let mut connect = None;
    let mut rounds = 3usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--embedded" => backend = Some(Backend::Embedded),
            "--connect" => {
                connect = args.next();
                backend = None;
            }
            "--seconds" => {
                let _ = SECS.set(Duration::from_secs_f64(
                    args.next().and_then(|v| v.parse().ok()).unwrap_or(2.0),
                ));
            }
            "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).unwrap_or(3),
            "--bench" => {} // passed by `cargo bench`
            other => {
                eprintln!("unknown argument {other}; usage: client [--embedded | --connect HOST:PORT] [--seconds N] [--rounds N]");
                std::process::exit(2);
            }
        }
    }
    let server = backend.map(|b| match TestingServer::start_backend(b) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the server ({e}); try --embedded");
            std::process::exit(1);
        }
    });
    let cs = connect.unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    println!(
        "server={}",
        if backend == Some(Backend::Embedded) {
            "embedded"
        } else if backend.is_some() {
            "apache"
        } else {
            "external"
        }
    );
    let mut ours: Vec<(String, f64)> = Vec::new();
    let mut crate_: Vec<(String, f64)> = Vec::new();
    let mut jv: Vec<(String, f64)> = Vec::new();
    // Warm the server up (a JVM server is slower in its first seconds).
    {
        let warm = Client::connect(&cs, ClientConfig::default()).unwrap();
        warm.wait_connected_timeout(Duration::from_secs(10)).unwrap();
        let saved = secs();
        let _ = suite("warmup", warm, "/bench");
        let _ = saved;
    }
    for _ in 0..rounds {
        let c = Client::connect(&cs, ClientConfig::default()).unwrap();
        c.wait_connected_timeout(Duration::from_secs(10)).unwrap();
        keep_best(&mut ours, suite("ours", c, "/bench"));
        let z = zookeeper::ZooKeeper::connect(&cs, Duration::from_secs(30), |_e: zookeeper::WatchedEvent| {}).unwrap();
        keep_best(&mut crate_, suite("theirs", z, "/bench"));
        if let Some(j) = java(&cs) {
            keep_best(&mut jv, j);
        }
    }
    for (k, v) in &ours {
        println!("ours.{k}={v:.0}");
    }
    for (k, v) in &crate_ {
        println!("zookeeper_crate.{k}={v:.0}");
    }
    for (k, v) in &jv {
        println!("java.{k}={v:.0}");
    }
    for ((k, x), (_, y)) in ours.iter().zip(&crate_) {
        println!("ratio_ours_to_zookeeper_crate.{k}={:.2}", x / y);
    }
}
