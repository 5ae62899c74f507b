//! The peers that run in a process of their own and speak the small protocol
//! of `scripts/bench/CuratorBench.java`: Curator 5.4 (Java) and kazoo 2.8
//! (`scripts/bench/kazoo_bench.py`). The driver passes the connect string, a
//! mode and its arguments (the same window, warm-up and lock paths as ours),
//! prints the `key=value` lines the peer prints, and for the counted modes
//! reads the server's counters between the peer's `ready` and `done` lines.

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::measure::{
    await_watches, deep_waiters, notifications, packets_received, requests, wchs, Deep, DEEP_SESSIONS, HOLD, MANY,
    MANY_THREADS, MANY_WARMUP, THINK,
};
use crate::shared::{self, Ops};
use crate::Ctx;
use crate::{cache, discovery, partition};

/// How to start one peer's benchmark program, and what it can run.
pub struct Driver {
    /// The prefix of its keys, without the dot.
    prefix: &'static str,
    /// The program and its arguments before the connect string.
    command: Vec<String>,
    /// Whether it has a semaphore mutex (`mutex|semaphore` modes).
    semaphore: bool,
    /// Whether it has the `rwherd` and `clients` modes.
    rwlock_and_clients: bool,
}

/// The directory of the compiled `CuratorBench` classes (removed at exit).
pub fn java_dir() -> PathBuf {
    std::env::temp_dir().join(format!("zk-bench-java-{}", std::process::id()))
}

/// A file of `scripts/bench/`.
fn bench_script(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/bench")).join(name)
}

/// Curator 5.4 on Debian's jars: compiles `CuratorBench.java` once per run.
pub fn curator() -> Result<&'static Driver, String> {
    static D: OnceLock<Result<Driver, String>> = OnceLock::new();
    D.get_or_init(|| {
        let j = "/usr/share/java";
        let jars: Vec<String> = [
            "curator-recipes",
            "curator-framework",
            "curator-client",
            "zookeeper",
            "zookeeper-jute",
            "guava",
            "slf4j-api",
            "slf4j-nop",
        ]
        .iter()
        .map(|n| format!("{j}/{n}.jar"))
        .collect();
        if !std::path::Path::new(&jars[0]).exists() {
            return Err("Curator jars missing (apt-get install libcurator-recipes-java)".into());
        }
        let cp = javac(&java_dir(), &jars, "CuratorBench.java")?;
        Ok(Driver {
            prefix: "curator",
            command: ["java", "-Xmx256m", "-cp", &cp, "CuratorBench"]
                .map(String::from)
                .to_vec(),
            semaphore: true,
            rwlock_and_clients: true,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Compiles `scripts/bench/<script>` against `jars` into `out_dir`; returns
/// the class path that runs it.
pub fn javac(out_dir: &std::path::Path, jars: &[String], script: &str) -> Result<String, String> {
    std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let status = Command::new("javac")
        .arg("-nowarn")
        .arg("-d")
        .arg(out_dir)
        .args(["-cp", &jars.join(":")])
        .arg(bench_script(script))
        .status();
    match status {
        Ok(s) if s.success() => Ok(format!("{}:{}", out_dir.display(), jars.join(":"))),
        Ok(s) => Err(format!("javac failed ({s})")),
        Err(e) => Err(format!("no javac ({e}; apt-get install openjdk-17-jdk-headless)")),
    }
}

/// Curator 5.4's `curator-x-discovery` on Debian's jars (with Jackson
/// 2.14): compiles `CuratorDiscoveryBench.java` once per run.
pub fn curator_discovery() -> Result<&'static Driver, String> {
    static D: OnceLock<Result<Driver, String>> = OnceLock::new();
    D.get_or_init(|| {
        let j = "/usr/share/java";
        let jars: Vec<String> = [
            "curator-x-discovery",
            "curator-recipes",
            "curator-framework",
            "curator-client",
            "zookeeper",
            "zookeeper-jute",
            "guava",
            "jackson-databind",
            "jackson-core",
            "jackson-annotations",
            "slf4j-api",
            "slf4j-nop",
        ]
        .iter()
        .map(|n| format!("{j}/{n}.jar"))
        .collect();
        if let Some(missing) = jars.iter().find(|j| !std::path::Path::new(j).exists()) {
            return Err(format!(
                "{missing} missing (apt-get install libcurator-discovery-java libjackson2-databind-java)"
            ));
        }
        let cp = javac(&java_dir().join("discovery"), &jars, "CuratorDiscoveryBench.java")?;
        Ok(Driver {
            prefix: "curator",
            command: ["java", "-Xmx256m", "-cp", &cp, "CuratorDiscoveryBench"]
                .map(String::from)
                .to_vec(),
            semaphore: false,
            rwlock_and_clients: false,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// kazoo 2.8 with Debian's `/usr/bin/python3` and `python3-kazoo`.
pub fn kazoo() -> Result<&'static Driver, String> {
    static D: OnceLock<Result<Driver, String>> = OnceLock::new();
    D.get_or_init(|| {
        let python = "/usr/bin/python3";
        let probe = Command::new(python)
            .args(["-c", "import kazoo.version; print(kazoo.version.__version__)"])
            .stderr(Stdio::null())
            .output();
        match probe {
            Ok(out) if out.status.success() => {}
            Ok(_) => return Err("no python3 kazoo module (apt-get install python3-kazoo)".into()),
            Err(e) => return Err(format!("no {python} ({e})")),
        }
        let script = bench_script("kazoo_bench.py");
        if !script.exists() {
            return Err(format!("{} missing", script.display()));
        }
        Ok(Driver {
            prefix: "kazoo",
            command: vec![python.into(), "-u".into(), script.display().to_string()],
            semaphore: false,
            rwlock_and_clients: false,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Bytes from hex (a session password).
fn hex_bytes(hex: &str) -> Result<Vec<u8>, String> {
    (0..hex.len())
        .step_by(2)
        .map(|k| hex.get(k..k + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| format!("password '{hex}' is not hex"))
}

/// A running peer program whose stdout is read line by line.
struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Running {
    /// The next line, or an error saying what was expected.
    fn line(&mut self, what: &str) -> Result<String, String> {
        match self.lines.next() {
            Some(Ok(l)) => Ok(l),
            _ => Err(format!("the peer exited before '{what}'")),
        }
    }

    /// Expects the line `want`.
    fn expect(&mut self, want: &str) -> Result<(), String> {
        let l = self.line(want)?;
        if l == want {
            Ok(())
        } else {
            Err(format!("expected '{want}', read '{l}'"))
        }
    }

    /// Sends an empty line (the peer's cue to go on).
    fn go(&mut self) -> Result<(), String> {
        writeln!(self.stdin).map_err(|e| format!("the peer's stdin: {e}"))
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

impl Driver {
    fn command(&self, cs: &str, args: &[String]) -> Command {
        let mut c = Command::new(&self.command[0]);
        c.args(&self.command[1..]).arg(cs).args(args).stderr(Stdio::inherit());
        c
    }

    fn spawn(&self, cs: &str, args: &[String]) -> Result<Running, String> {
        let mut child = self
            .command(cs, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", self.command[0]))?;
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Ok(Running { child, stdin, lines })
    }

    /// Runs one mode to its end and prints what it printed.
    fn print_all(&self, cs: &str, args: &[String]) -> Result<(), String> {
        let out = self
            .command(cs, args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", self.command[0]))?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("'{}' exited with {}", args.join(" "), out.status))
        }
    }

    /// Runs the scenario `name` (what the peer has of it) on `x`'s server.
    pub fn run(&self, x: &Ctx, name: &str) {
        if let Err(e) = self.scenario(x, name) {
            println!("{}.error={name}: {e}", self.prefix);
        }
    }

    fn scenario(&self, x: &Ctx, name: &str) -> Result<(), String> {
        let cs = x.cs.as_str();
        let secs = format!("{}", x.run.as_secs_f64());
        let warm = format!("{}", x.warmup.as_secs_f64());
        let a = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
        match name {
            "mutex" => {
                self.print_all(cs, &a(&["latency", "mutex", &secs, &warm, "/bench/mutex"]))?;
                self.cycles(x, "mutex")?;
            }
            "semaphore" if self.semaphore => {
                self.print_all(cs, &a(&["latency", "semaphore", &secs, &warm, "/bench/sem"]))?;
                self.cycles(x, "semaphore")?;
            }
            "handoff" => {
                for sessions in [8, 32, 128] {
                    let n = sessions.to_string();
                    self.print_all(cs, &a(&["handoff", "mutex", &n, &secs, &warm, "/bench/handoff"]))?;
                }
                if self.semaphore {
                    self.print_all(
                        cs,
                        &a(&["handoff", "semaphore", "8", &secs, &warm, "/bench/sem-handoff"]),
                    )?;
                }
            }
            "latency" => {
                for sessions in ["2", "8"] {
                    self.print_all(
                        cs,
                        &a(&[
                            "handoff",
                            "mutex",
                            sessions,
                            &secs,
                            &warm,
                            "/bench/handoff",
                            "latency.mutex",
                        ]),
                    )?;
                }
                let hold = HOLD.as_micros().to_string();
                for (key, think) in [
                    ("latency_hold_2ms.mutex", Duration::ZERO),
                    ("latency_hold_2ms_think_1ms.mutex", THINK),
                ] {
                    let think = think.as_micros().to_string();
                    self.print_all(
                        cs,
                        &a(&[
                            "handoff",
                            "mutex",
                            "8",
                            &secs,
                            &warm,
                            "/bench/handoff",
                            key,
                            &hold,
                            &think,
                        ]),
                    )?;
                }
            }
            "deep" => {
                let deep = deep_waiters();
                for (threads, sessions) in [(deep, 1), (deep, DEEP_SESSIONS.min(deep))] {
                    self.deep(x, threads, sessions)?;
                }
            }
            "many" => {
                let (n, t, w) = (MANY.to_string(), MANY_THREADS.to_string(), MANY_WARMUP.to_string());
                let root = format!("/bench/many-{}", self.prefix);
                self.print_all(cs, &a(&["many", &n, &t, &root, &w]))?;
            }
            "cache" => self.cache(x)?,
            "counter" => self.counter(x)?,
            "registration" => self.registration(x)?,
            "barrier" => self.barrier(x)?,
            "discovery" => self.discovery(x)?,
            "partition" => self.partition(x)?,
            "clients" if self.rwlock_and_clients => self.print_all(cs, &a(&["clients", "16"]))?,
            "herd" if notifications(x.server(), cs).is_some() => {
                let kinds: &[&str] = if self.semaphore {
                    &["mutex", "semaphore"]
                } else {
                    &["mutex"]
                };
                for &kind in kinds {
                    let n = self.counted(x, &a(&["chain", kind, "20"]), "done")?;
                    let key = if kind == "mutex" { "mutex" } else { "semaphore_mutex" };
                    println!("{}.{key}.notifications_per_release={:.2}", self.prefix, n as f64 / 21.0);
                }
            }
            "rwlock" if self.rwlock_and_clients && notifications(x.server(), cs).is_some() => {
                let n = self.counted(x, &a(&["rwherd", "100"]), "released")?;
                println!(
                    "{}.rwlock.notifications_per_writer_release.queued_readers_100={n}",
                    self.prefix
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// The cache scenario (see [`crate::cache`]): the write-to-event
    /// latency on each latency subtree with the requests per change counted
    /// here between `ready` and `done`, then the start on the large subtree,
    /// its requests counted the same way (the peer prints its time and
    /// memory).
    fn cache(&self, x: &Ctx) -> Result<(), String> {
        let prefix = format!("{}.", self.prefix);
        let writes = x.o.cache_writes.max(1);
        let mut seq = 2_000_000u64;
        for leaves in cache::latency_sizes(x) {
            let args = [
                "cache".into(),
                "latency".into(),
                cache::tree_root(leaves),
                leaves.to_string(),
                cache::warm_writes(x).to_string(),
                writes.to_string(),
                seq.to_string(),
            ];
            seq += 1_000_000;
            let packets = self.counted_packets(x, &args)?;
            cache::report_requests_per_change(&prefix, leaves, writes, packets);
        }
        let leaves = x.o.cache_nodes;
        let nodes = cache::tree_nodes(leaves) + 1;
        let args = [
            "cache".into(),
            "start".into(),
            cache::tree_root(leaves),
            leaves.to_string(),
            nodes.to_string(),
            cache::tree_root(cache::WARM_LEAVES),
        ];
        let packets = self.counted_packets(x, &args)?;
        cache::report_start_requests(&prefix, leaves, nodes, packets);
        Ok(())
    }

    /// The counter scenario (see [`crate::shared`]): each session count,
    /// Curator with each retry policy, kazoo with its client's own retry;
    /// the server's requests counted here between `ready` and `done`.
    fn counter(&self, x: &Ctx) -> Result<(), String> {
        let secs = format!("{}", x.run.as_secs_f64());
        let warm = format!("{}", x.warmup.as_secs_f64());
        for sessions in shared::COUNTER_SESSIONS {
            let path = shared::counter_path(self.prefix, sessions);
            let retries: Vec<&str> = if self.prefix == "curator" {
                shared::RETRIES.iter().map(|r| r.key()).collect()
            } else {
                vec!["kazoo_default"]
            };
            for retry in retries {
                let args = [
                    "counter".into(),
                    sessions.to_string(),
                    secs.clone(),
                    warm.clone(),
                    path.clone(),
                    retry.into(),
                ];
                let (ops, lines) = self.counted_ops(x, &args)?;
                let key = format!("{}.counter.sessions_{sessions}.retry_{retry}", self.prefix);
                let applied = lines
                    .iter()
                    .find_map(|l| l.strip_prefix(&format!("{key}.applied=")))
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("no '{key}.applied=' line"))?;
                Ops::report(ops, &key, "increment", applied);
            }
        }
        Ok(())
    }

    /// The registration scenario: the peer's ephemeral `PersistentNode`
    /// (kazoo: a skip line); the peer tells its session on each line asked,
    /// the expiry and the observer are here.
    fn registration(&self, x: &Ctx) -> Result<(), String> {
        if self.prefix == "kazoo" {
            println!("kazoo.registration.skipped={}", shared::KAZOO_NO_REGISTRATION);
            return Ok(());
        }
        let prefix = format!("{}.", self.prefix);
        let Some(server) = shared::expiring_server(x, &prefix) else {
            return Ok(());
        };
        let path = shared::registration_path(self.prefix);
        let (mut back, mut back_from_deleted) =
            self.expiries(x, server, &["registration".into(), path.clone()], &path)?;
        shared::report_times(&format!("{prefix}registration.expiry_to_node_back"), &mut back);
        shared::report_times(
            &format!("{prefix}registration.deleted_to_node_back"),
            &mut back_from_deleted,
        );
        Ok(())
    }

    /// Runs the peer's mode `args`, which prints `ready` once the node at
    /// `path` is in place, then for each line read its client's session
    /// (`session ID PASSWORD`, hex), until `quit`: expires the session
    /// (after 2 unmeasured, `--expiries` times) and returns the times to the
    /// node's return (see [`shared::expire_and_observe`]).
    fn expiries(
        &self,
        x: &Ctx,
        server: &zk_testing::TestingServer,
        args: &[String],
        path: &str,
    ) -> Result<(Vec<Duration>, Vec<Duration>), String> {
        let mut p = self.spawn(&x.cs, args)?;
        p.expect("ready")?;
        let obs = crate::ours::client(&x.cs);
        let (mut back, mut back_from_deleted) = (Vec::new(), Vec::new());
        for i in 0..shared::WARM_EXPIRIES + x.o.expiries {
            p.go()?;
            let l = p.line("session ID PASSWORD")?;
            let mut w = l.split_whitespace();
            let (Some("session"), Some(id), Some(pw)) = (w.next(), w.next(), w.next()) else {
                return Err(format!("expected 'session ID PASSWORD', read '{l}'"));
            };
            let id = u64::from_str_radix(id, 16).map_err(|e| format!("session id '{id}': {e}"))? as i64;
            let pw = hex_bytes(pw)?;
            shared::await_owned(&obs, path, id);
            std::thread::sleep(shared::SETTLE);
            let (d, from_deleted) = shared::expire_and_observe(server, &obs, path, id, &pw);
            if i >= shared::WARM_EXPIRIES {
                back.push(d);
                back_from_deleted.push(from_deleted);
            }
        }
        writeln!(p.stdin, "quit").map_err(|e| e.to_string())?;
        p.finish();
        obs.close();
        Ok((back, back_from_deleted))
    }

    /// The discovery scenario (see [`crate::discovery`]): Curator's
    /// provider lookups and `queryForInstances` per thread count, the
    /// server's requests counted here between `ready` and `done`, then its
    /// registration's return after each expiry (kazoo: a skip line).
    fn discovery(&self, x: &Ctx) -> Result<(), String> {
        if self.prefix == "kazoo" {
            println!("kazoo.discovery.skipped={}", discovery::KAZOO_NO_DISCOVERY);
            return Ok(());
        }
        let d = curator_discovery()?;
        let secs = format!("{}", x.run.as_secs_f64());
        let warm = format!("{}", x.warmup.as_secs_f64());
        for kind in [discovery::Kind::Lookups, discovery::Kind::Query] {
            for threads in discovery::THREADS {
                let args = [
                    "discovery".into(),
                    kind.key().into(),
                    threads.to_string(),
                    secs.clone(),
                    warm.clone(),
                    discovery::base_path(self.prefix),
                    discovery::SERVICE.into(),
                    discovery::INSTANCES.to_string(),
                ];
                let (ops, lines) = d.counted_ops(x, &args)?;
                let key = format!("{}.discovery.{}.threads_{threads}", self.prefix, kind.key());
                let units = kind.units();
                let n = lines
                    .iter()
                    .find_map(|l| l.strip_prefix(&format!("{key}.{units}=")))
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("no '{key}.{units}=' line"))?;
                Ops::report(ops, &key, kind.unit(), n);
            }
        }
        let prefix = format!("{}.discovery.", self.prefix);
        let Some(server) = shared::expiring_server(x, &prefix) else {
            return Ok(());
        };
        let base = discovery::reg_base_path(self.prefix);
        let path = format!("{base}/{}/{}", discovery::REG_SERVICE, discovery::REG_ID);
        let args = [
            "registration".into(),
            base,
            discovery::REG_SERVICE.into(),
            discovery::REG_ID.into(),
        ];
        let (mut back, mut back_from_deleted) = d.expiries(x, server, &args, &path)?;
        shared::report_times(&format!("{prefix}registration.expiry_to_node_back"), &mut back);
        shared::report_times(
            &format!("{prefix}registration.deleted_to_node_back"),
            &mut back_from_deleted,
        );
        Ok(())
    }

    /// The partition scenario (see [`crate::partition`]): kazoo's members
    /// in its process, which times the joins and closes itself and asks
    /// for each expiry (`session ID PASSWORD`, hex): the expiry is done
    /// here, timed from just before it to the peer's `settled AGO_NS` (the
    /// split was settled AGO_NS before the line was printed). Curator: a
    /// skip line.
    fn partition(&self, x: &Ctx) -> Result<(), String> {
        if self.prefix == "curator" {
            println!("curator.partition.skipped={}", partition::CURATOR_NO_PARTITION);
            return Ok(());
        }
        let Some(server) = x.server() else {
            println!("{}.partition.skipped=needs the server this process starts", self.prefix);
            return Ok(());
        };
        let args = [
            "partition".into(),
            x.o.partition_members.to_string(),
            partition::ITEMS.to_string(),
            format!("{}", partition::SETTLE.as_secs_f64()),
            partition::path(self.prefix),
            partition::WARM_ROUNDS.to_string(),
            x.o.partition_rounds.to_string(),
        ];
        let mut p = self.spawn(&x.cs, &args)?;
        let (mut joins, mut expires, mut closes) = (Vec::new(), Vec::new(), Vec::new());
        let mut measured = false;
        loop {
            let l = p.line("done")?;
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["ready"] => measured = true,
                ["done"] => break,
                ["session", id, pw] => {
                    let id = u64::from_str_radix(id, 16).map_err(|e| format!("session id '{id}': {e}"))? as i64;
                    let pw = hex_bytes(pw)?;
                    let t0 = std::time::Instant::now();
                    partition::expire(server, id, &pw);
                    let l = p.line("settled AGO_NS")?;
                    let ago: u64 = l
                        .strip_prefix("settled ")
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("expected 'settled AGO_NS', read '{l}'"))?;
                    let at = std::time::Instant::now() - Duration::from_nanos(ago);
                    if measured {
                        expires.push(at.saturating_duration_since(t0));
                    }
                }
                ["sample", kind, ns] => {
                    let d = Duration::from_nanos(ns.parse().map_err(|e| format!("'{l}': {e}"))?);
                    match (*kind, measured) {
                        (_, false) => {}
                        ("join", true) => joins.push(d),
                        ("close", true) => closes.push(d),
                        _ => return Err(format!("unknown sample '{l}'")),
                    }
                }
                _ => println!("{l}"),
            }
        }
        while let Some(Ok(l)) = p.lines.next() {
            println!("{l}");
        }
        p.finish();
        partition::report(x, &format!("{}.", self.prefix), &mut joins, &mut expires, &mut closes);
        Ok(())
    }

    /// The barrier scenario: the peer's double barrier, rounds timed in its
    /// process, the server's requests per round counted here.
    fn barrier(&self, x: &Ctx) -> Result<(), String> {
        let m = x.o.barrier_members;
        let args = [
            "barrier".into(),
            m.to_string(),
            shared::warm_rounds(x).to_string(),
            x.o.barrier_rounds.to_string(),
            shared::barrier_path(self.prefix),
        ];
        let (ops, _) = self.counted_ops(x, &args)?;
        let key = format!("{}.barrier.members_{m}", self.prefix);
        Ops::report(ops, &key, "round", x.o.barrier_rounds as u64);
        Ok(())
    }

    /// [`Driver::counted_packets`] with the embedded server's `getData` and
    /// `setData` too; also returns the lines printed (after they are printed).
    fn counted_ops(&self, x: &Ctx, args: &[String]) -> Result<(Option<Ops>, Vec<String>), String> {
        let mut p = self.spawn(&x.cs, args)?;
        p.expect("ready")?;
        let o0 = Ops::now(x.server(), &x.cs);
        p.go()?;
        p.expect("done")?;
        let o1 = Ops::now(x.server(), &x.cs);
        p.go()?;
        let mut lines = Vec::new();
        while let Some(Ok(l)) = p.lines.next() {
            println!("{l}");
            lines.push(l);
        }
        let status = p.child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("'{}' exited with {status}", args.join(" ")));
        }
        Ok((Ops::between(o0, o1), lines))
    }

    /// Runs a step that prints `ready`, waits for a line, prints `done`
    /// when its work is over, waits for a line, prints its figures and
    /// exits: the requests the servers received in between.
    fn counted_packets(&self, x: &Ctx, args: &[String]) -> Result<Option<u64>, String> {
        let mut p = self.spawn(&x.cs, args)?;
        p.expect("ready")?;
        let n0 = packets_received(x.server(), &x.cs);
        p.go()?;
        p.expect("done")?;
        let n1 = packets_received(x.server(), &x.cs);
        p.go()?;
        while let Some(Ok(l)) = p.lines.next() {
            println!("{l}");
        }
        let status = p.child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("'{}' exited with {status}", args.join(" ")));
        }
        Ok(n0.zip(n1).map(|(a, b)| b - a))
    }

    /// A holder and `threads` waiters over `sessions` sessions, in the peer's
    /// process; the drain and the server's counts, measured here.
    fn deep(&self, x: &Ctx, threads: usize, sessions: usize) -> Result<(), String> {
        let args = [
            "deep".into(),
            threads.to_string(),
            sessions.to_string(),
            "/bench/deep".into(),
        ];
        let mut p = self.spawn(&x.cs, &args)?;
        p.expect("ready")?;
        // Every waiter has set its watch (on the node ahead).
        await_watches(&x.cs, threads as u64);
        let queued_watches = wchs(&x.cs);
        let n0 = notifications(x.server(), &x.cs);
        p.go()?;
        let drain_line = p.line("drain_ms=")?;
        let ms: f64 = drain_line
            .strip_prefix("drain_ms=")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("expected 'drain_ms=', read '{drain_line}'"))?;
        p.expect("done")?;
        let n1 = notifications(x.server(), &x.cs);
        p.go()?;
        p.finish();
        Deep {
            drain: Duration::from_secs_f64(ms / 1e3),
            notifications: n0.zip(n1).map(|(a, b)| b - a),
            queued_watches,
            cost: None,
        }
        .report(&format!("{}.", self.prefix), threads, sessions);
        Ok(())
    }

    /// Runs a step that prints `ready`, waits for a line, prints `done_line`
    /// when its work is over, waits for a line and exits: the notifications
    /// the server sent in between.
    fn counted(&self, x: &Ctx, args: &[String], done_line: &str) -> Result<u64, String> {
        let mut p = self.spawn(&x.cs, args)?;
        p.expect("ready")?;
        let n0 = notifications(x.server(), &x.cs).unwrap_or(0);
        p.go()?;
        p.expect(done_line)?;
        let n1 = notifications(x.server(), &x.cs).unwrap_or(0);
        p.go()?;
        p.finish();
        Ok(n1 - n0)
    }

    /// Requests and notifications per uncontended cycle, counted by the
    /// embedded server (nothing elsewhere).
    fn cycles(&self, x: &Ctx, kind: &str) -> Result<(), String> {
        let Some(e) = x.server().and_then(|s| s.embedded()) else {
            return Ok(());
        };
        let n = 50u64;
        let mut p = self.spawn(&x.cs, &["cycles".into(), kind.into(), n.to_string()])?;
        p.expect("ready")?;
        let (r0, n0) = (requests(x.server()).unwrap_or(0), e.stats().watch_notifications);
        p.go()?;
        p.expect("done")?;
        let (r1, n1) = (requests(x.server()).unwrap_or(0), e.stats().watch_notifications);
        p.go()?;
        p.finish();
        let key = if kind == "mutex" { "mutex" } else { "semaphore_mutex" };
        println!(
            "{}.{key}.requests_per_cycle={:.1}",
            self.prefix,
            (r1 - r0) as f64 / n as f64
        );
        println!(
            "{}.{key}.notifications_per_cycle={:.1}",
            self.prefix,
            (n1 - n0) as f64 / n as f64
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::hex_bytes;

    #[test]
    fn a_session_password_is_read_from_hex_or_refused() {
        assert_eq!(hex_bytes("00ff7a").unwrap(), [0x00, 0xff, 0x7a]);
        assert_eq!(hex_bytes("").unwrap(), Vec::<u8>::new());
        assert!(hex_bytes("0g").is_err());
        assert!(hex_bytes("abc").is_err(), "an odd length is not bytes");
        assert!(hex_bytes("é0").is_err(), "not ASCII: no panic on a char boundary");
    }
}
