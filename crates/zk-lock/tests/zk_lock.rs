//! `zk-lock`, the distributed flock(1), as real processes: exclusion between
//! runs, timeouts, exit statuses, a lost session killing COMMAND, signal
//! forwarding, usage errors, an unreachable server, read/write sharing, and
//! exclusion with a Curator (Java) client when Debian's Curator jars exist,
//! and credentials with a creator-only ACL (exit 77 for the others; Curator with
//! the same digest credentials interoperates).
//!
//! Cargo builds the binary for this test (`CARGO_BIN_EXE_zk-lock`); set
//! `ZK_LOCK_BIN` to test another build. Runs on the embedded server by
//! default and on Apache ZooKeeper with `ZK_TEST_SERVER=apache`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_recipes::{InterProcessMutex, InterProcessSemaphoreV2};
use zk_testing::{wait_until, Backend, TestingServer, Timing};

// ---- locating and running the binary ------------------------------------------------------

/// The zk-lock binary: `ZK_LOCK_BIN` when set, else the one cargo built for
/// this test (`CARGO_BIN_EXE_zk-lock`).
fn zk_lock_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var_os("ZK_LOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zk-lock")), PathBuf::from)
    })
}

fn timing() -> Timing {
    Timing::from_env()
}

/// A scratch directory for one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("zk-lock-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running zk-lock whose stderr goes to a file (a pipe could be held open by
/// an orphaned grandchild and block the reader).
struct Run {
    child: Child,
    stderr: PathBuf,
    stdout: PathBuf,
    started: Instant,
}

impl Run {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (bounded) for exit; returns the status and the stderr text.
    fn finish(mut self, timeout: Duration) -> (ExitStatus, String) {
        let mut status = None;
        let done = wait_until(timeout, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        if !done {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "zk-lock did not exit within {timeout:?}; stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
        }
        (
            status.unwrap(),
            std::fs::read_to_string(&self.stderr).unwrap_or_default(),
        )
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits (bounded) for exit; returns the status, stdout and stderr.
    fn finish_out(self, timeout: Duration) -> (ExitStatus, String, String) {
        let stdout = self.stdout.clone();
        let keep = std::env::temp_dir().join(format!(
            "{}-kept",
            stdout.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::hard_link(&stdout, &keep).unwrap();
        let (status, stderr) = self.finish(timeout);
        let out = std::fs::read_to_string(&keep).unwrap_or_default();
        let _ = std::fs::remove_file(&keep);
        (status, out, stderr)
    }

    /// What it printed on stdout so far.
    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What it printed on stderr so far.
    fn stderr_now(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.stderr);
        let _ = std::fs::remove_file(&self.stdout);
    }
}

static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `zk-lock --connect <server> ARGS...` (no connect when `connect` is None).
fn spawn(connect: Option<&str>, args: &[&str]) -> Run {
    spawn_env(connect, args, &[])
}

/// As [`spawn`], with `env` added to zk-lock's environment.
fn spawn_env(connect: Option<&str>, args: &[&str], env: &[(&str, &str)]) -> Run {
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stderr = std::env::temp_dir().join(format!("zk-lock-test-{}-stderr-{n}", std::process::id()));
    let stdout = std::env::temp_dir().join(format!("zk-lock-test-{}-stdout-{n}", std::process::id()));
    let mut cmd = Command::new(zk_lock_bin());
    if let Some(c) = connect {
        cmd.arg("--connect").arg(c);
    }
    cmd.args(args)
        .env_remove("ZK_CONNECT")
        .env_remove("RUST_LOG")
        .env_remove("ZK_LOCK_AUTH")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let child = cmd.spawn().expect("spawn zk-lock");
    Run {
        child,
        stderr,
        stdout,
        started: Instant::now(),
    }
}

/// Runs zk-lock to completion; (exit code, stderr, elapsed).
fn run(connect: Option<&str>, args: &[&str]) -> (i32, String, Duration) {
    let r = spawn(connect, args);
    let started = r.started;
    let (status, stderr) = r.finish(timing().wait());
    let code = status
        .code()
        .unwrap_or_else(|| panic!("zk-lock killed by a signal: {status}; {stderr}"));
    (code, stderr, started.elapsed())
}

/// Runs zk-lock to completion; (exit code, stdout, stderr).
fn run_out(connect: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut r = spawn(connect, args);
    let mut status = None;
    let done = wait_until(timing().wait(), || {
        status = r.child.try_wait().unwrap();
        status.is_some()
    });
    assert!(done, "zk-lock {args:?} did not exit: {}", r.stderr_now());
    let status = status.unwrap();
    let code = status
        .code()
        .unwrap_or_else(|| panic!("zk-lock {args:?} killed by a signal: {status}"));
    (code, r.stdout(), r.stderr_now())
}

fn client(server: &TestingServer) -> CuratorFramework {
    client_auth(server, None)
}

/// A client with `digest` credentials `user:password`, if given.
fn client_auth(server: &TestingServer, digest: Option<&str>) -> CuratorFramework {
    let t = timing();
    let mut b = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(d) = digest {
        b = b.authorization("digest", d.as_bytes());
    }
    let c = b.build().unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// The lock nodes (children) under `path`.
fn lock_nodes(c: &CuratorFramework, path: &str) -> Vec<String> {
    let mut v = c.get_children(path).unwrap_or_default();
    v.sort();
    v
}

fn wait_for_file(path: &Path) {
    assert!(
        wait_until(timing().wait(), || path.exists()),
        "{} did not appear",
        path.display()
    );
}

/// Waits for a pid a shell wrote with `echo $$ > file` (the file exists
/// before the line is in it) and returns it.
fn wait_for_pid(path: &Path) -> String {
    let read = || std::fs::read_to_string(path).ok().filter(|s| s.ends_with('\n'));
    assert!(
        wait_until(timing().wait(), || read().is_some()),
        "{} has no pid",
        path.display()
    );
    read().unwrap_or_default().trim().to_string()
}

/// A shell command that logs `NAME START <ns>`, sleeps, logs `NAME END <ns>`.
fn section_script(name: &str, log: &Path, sleep: &str) -> String {
    format!(
        "echo \"{name} START $(date +%s%N)\" >> '{log}'; sleep {sleep}; echo \"{name} END $(date +%s%N)\" >> '{log}'",
        log = log.display()
    )
}

/// A critical section from a log.
#[derive(Debug, Clone)]
struct Section {
    name: String,
    start: u128,
    end: u128,
}

/// Parses `NAME START ns` / `NAME END ns` lines (any number per name, in order).
fn sections(log: &Path) -> Vec<Section> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut open: HashMap<String, u128> = HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [name, what, ns] = parts[..] else {
            panic!("bad log line {line:?}")
        };
        let ns: u128 = ns.parse().unwrap();
        match what {
            "START" => assert!(open.insert(name.to_string(), ns).is_none(), "{name} started twice"),
            "END" => {
                let start = open
                    .remove(name)
                    .unwrap_or_else(|| panic!("{name} ended without a start"));
                out.push(Section {
                    name: name.to_string(),
                    start,
                    end: ns,
                });
            }
            other => panic!("bad log line {other:?}"),
        }
    }
    assert!(open.is_empty(), "unfinished sections: {open:?}");
    out.sort_by_key(|s| s.start);
    out
}

fn overlap(a: &Section, b: &Section) -> bool {
    a.start < b.end && b.start < a.end
}

fn assert_exclusive(all: &[Section]) {
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(!overlap(a, b), "critical sections overlapped: {a:?} and {b:?}");
        }
    }
}

// ---- the tests ----------------------------------------------------------------------------

#[test]
fn runs_on_one_path_never_overlap() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("exclusion");
    let log = dir.path("sections.log");
    let names = ["a", "b", "c"];
    let runs: Vec<Run> = names
        .iter()
        .map(|n| {
            spawn(
                Some(&cs),
                &["/locks/exclusion", "--", "sh", "-c", &section_script(n, &log, "0.2")],
            )
        })
        .collect();
    for r in runs {
        let (status, stderr) = r.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    let all = sections(&log);
    assert_eq!(all.len(), names.len(), "{all:?}");
    assert_exclusive(&all);
    // Every run released its node and closed its session.
    let c = client(&server);
    assert!(lock_nodes(&c, "/locks/exclusion").is_empty());
}

#[test]
fn timeout_zero_and_timeout_give_exit_1_while_held() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("timeouts");
    let marker = dir.path("ran");
    let marker_s = marker.to_str().unwrap();
    let c = client(&server);
    let path = "/locks/timeouts";
    let m = InterProcessMutex::new(&c, path).unwrap();
    let guard = m.acquire().unwrap();

    let (code, stderr, elapsed) = run(Some(&cs), &["--timeout", "0", path, "--", "touch", marker_s]);
    assert_eq!(code, 1, "{stderr}");
    // Exit 1 means held by another (a server that does not answer is 69).
    assert!(
        stderr.contains("was not acquired") && stderr.contains("it is held"),
        "{stderr}"
    );
    assert!(
        elapsed < timing().scale(Duration::from_secs(5)),
        "--timeout 0 took {elapsed:?}"
    );
    assert!(!marker.exists(), "COMMAND ran without the lock");

    let (code, stderr, elapsed) = run(Some(&cs), &["--timeout", "300ms", path, "--", "touch", marker_s]);
    assert_eq!(code, 1, "{stderr}");
    assert!(elapsed >= Duration::from_millis(300), "gave up after {elapsed:?}");
    assert!(!marker.exists(), "COMMAND ran without the lock");
    // -E tells "not acquired" apart from COMMAND's own status.
    let (code, stderr, _) = run(
        Some(&cs),
        &["--timeout", "500ms", "-E", "100", path, "--", "touch", marker_s],
    );
    assert_eq!(code, 100, "{stderr}");
    // The queued nodes of the failed tries are gone; only the holder remains
    // (a node whose create reply came after the deadline is deleted in the
    // background: wait for it, with a deadline).
    assert!(
        wait_until(timing().wait(), || lock_nodes(&c, path).len() == 1),
        "{:?}",
        lock_nodes(&c, path)
    );

    drop(guard);
    run_zero_timeout_until_acquired(&cs, &["-n", path, "--", "touch", marker_s], || marker.exists());
    assert!(marker.exists());

    // A semaphore with 2 leases: both taken → exit 1; one returned → runs.
    let sem_path = "/locks/sem";
    let sem = InterProcessSemaphoreV2::new(&c, sem_path, 2).unwrap();
    let l1 = sem.acquire().unwrap();
    let l2 = sem.acquire().unwrap();
    let (code, stderr, _) = run(
        Some(&cs),
        &["--semaphore", "2", "--timeout", "0", sem_path, "--", "true"],
    );
    assert_eq!(code, 1, "{stderr}");
    drop(l2);
    run_zero_timeout_until_acquired(
        &cs,
        &["--semaphore", "2", "--timeout", "0", sem_path, "--", "true"],
        || false,
    );
    drop(l1);
}

/// Runs a zero-timeout zk-lock (`-n`, `--timeout 0`) on a free lock until it
/// exits 0, with a deadline. Its one attempt's replies get the deadline's
/// grace (20 ms, `zk_framework::deadline::GRACE`), which a loaded machine can
/// exceed (seen on Apache under load 12): that try then ends without
/// running COMMAND (`ran` says whether COMMAND's effect is there), as "not
/// acquired" (exit 1) or, when a reply came after the grace, honestly as "no
/// answer" (exit 69), and the next try gets the lock.
fn run_zero_timeout_until_acquired(cs: &str, args: &[&str], ran: impl Fn() -> bool) {
    let mut tries = Vec::new();
    let acquired = wait_until(timing().wait(), || {
        let (code, stderr, _) = run(Some(cs), args);
        if code != 0 {
            assert!(
                code == 1 || (code == 69 && stderr.contains("did not answer before the deadline")),
                "zk-lock {args:?} on a free lock: exit {code}: {stderr}"
            );
            assert!(!ran(), "COMMAND ran without the lock");
        }
        tries.push((code, stderr));
        code == 0
    });
    assert!(acquired, "zk-lock {args:?} never acquired the free lock: {tries:?}");
    eprintln!("zk-lock {args:?} acquired the free lock on try {}", tries.len());
}

#[test]
fn exit_status_of_command_is_propagated() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("status");
    let p = "/locks/status";
    assert_eq!(run(Some(&cs), &[p, "--", "true"]).0, 0);
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", "exit 7"]).0, 7);
    // Killed by signal N → 128 + N, like a shell.
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", "kill -KILL $$"]).0, 137);
    let (code, stderr, _) = run(Some(&cs), &[p, "--", "zk-lock-test-no-such-command"]);
    assert_eq!(code, 127, "{stderr}");
    assert!(stderr.contains("not found"), "{stderr}");
    let not_exec = dir.path("not-executable.sh");
    std::fs::write(&not_exec, "#!/bin/sh\nexit 0\n").unwrap();
    let (code, stderr, _) = run(Some(&cs), &[p, "--", not_exec.to_str().unwrap()]);
    assert_eq!(code, 126, "{stderr}");
    // COMMAND sees the lock in its environment.
    let env_out = dir.path("env");
    let script = format!(
        "echo \"$ZK_LOCK_PATH $ZK_LOCK_NODE $ZK_LOCK_FENCING_TOKEN\" > '{}'",
        env_out.display()
    );
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", &script]).0, 0);
    let env = std::fs::read_to_string(&env_out).unwrap();
    let fields: Vec<&str> = env.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{env}");
    assert_eq!(fields[0], p);
    assert!(
        fields[1].starts_with("/locks/status/_c_") && fields[1].contains("-lock-"),
        "{env}"
    );
    assert!(fields[2].parse::<i64>().unwrap() > 0, "{env}");
    // Nothing is left behind.
    assert!(lock_nodes(&client(&server), p).is_empty());
    // --embedded needs no server at all (built with the `embedded` feature, off
    // by default: CI runs these tests both ways); without it, --embedded is a
    // usage error that says how to get it.
    #[cfg(feature = "embedded")]
    assert_eq!(run(None, &["--embedded", "/try", "--", "sh", "-c", "exit 3"]).0, 3);
    #[cfg(not(feature = "embedded"))]
    assert_eq!(run(None, &["--embedded", "/try", "--", "sh", "-c", "exit 3"]).0, 64);
    #[cfg(not(feature = "embedded"))]
    assert!(
        run(None, &["--embedded", "/try", "--", "true"])
            .1
            .contains("rebuild with `--features embedded`"),
        "the usage error does not say how to get --embedded"
    );
}

/// Expires the session that owns `node` (embedded), or deletes the node
/// (Apache: the session password is not known outside zk-lock); both are a
/// certain loss of the lock.
fn take_lock_away(server: &TestingServer, c: &CuratorFramework, node: &str) {
    let stat = c.check_exists(node).unwrap().expect("lock node exists");
    match server.embedded() {
        Some(e) => {
            let session = e
                .sessions()
                .into_iter()
                .find(|s| s.id == stat.ephemeral_owner)
                .expect("the lock node's session is live");
            assert!(session.ephemerals.iter().any(|n| n == node), "{session:?}");
            server.expire_session(session.id, &session.password).unwrap();
        }
        None => c.delete().for_path(node).unwrap(),
    }
}

fn wait_for_single_node(c: &CuratorFramework, path: &str) -> String {
    let mut node = String::new();
    assert!(
        wait_until(timing().wait(), || match lock_nodes(c, path).as_slice() {
            [one] => {
                node = format!("{path}/{one}");
                true
            }
            _ => false,
        }),
        "no lock node under {path}"
    );
    node
}

fn process_gone(pid: &str) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn lost_lock_terminates_command_with_75() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("lost");
    let t = timing();

    // A command that dies of SIGTERM.
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let path = "/locks/lost";
    let r = spawn(Some(&cs), &["--kill-grace", "5s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    take_lock_away(&server, &c, &node);
    let started = Instant::now();
    let (status, stderr) = r.finish(t.wait());
    println!("zk-lock's stderr:\n{stderr}");
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        started.elapsed() < t.scale(Duration::from_secs(20)),
        "took {:?}",
        started.elapsed()
    );
    assert!(stderr.contains("lost"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");

    // A command that ignores SIGTERM gets SIGKILL after --kill-grace.
    let pid_file = dir.path("stubborn.pid");
    let script = format!(
        "trap '' TERM; echo $$ > '{}'; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let path = "/locks/lost-stubborn";
    let r = spawn(Some(&cs), &["--kill-grace", "1s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    take_lock_away(&server, &c, &node);
    let started = Instant::now();
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "SIGKILL before the grace: {stderr}"
    );
    assert!(stderr.contains("SIGKILL"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
}

#[test]
fn connection_blip_warns_and_command_keeps_the_lock() {
    let server = TestingServer::start().unwrap();
    let Some(embedded) = server.embedded() else {
        println!("skipping: dropping connections needs the embedded server");
        return;
    };
    let cs = server.connect_string();
    let dir = Scratch::new("blip");
    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let script = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 5",
        ready.display(),
        go.display()
    );
    let r = spawn(Some(&cs), &["/locks/blip", "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    embedded.drop_connections();
    let stderr_has = |what: &str| std::fs::read_to_string(&r.stderr).unwrap_or_default().contains(what);
    assert!(
        wait_until(timing().wait(), || stderr_has("may be lost")),
        "no Suspended warning"
    );
    assert!(
        wait_until(timing().wait(), || stderr_has("held again")),
        "no Reconnected notice"
    );
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = r.finish(timing().wait());
    println!("zk-lock's stderr:\n{stderr}");
    // COMMAND ran to its end, under the same lock: its own status, not 75.
    assert_eq!(status.code(), Some(5), "{stderr}");
    assert!(lock_nodes(&client(&server), "/locks/blip").is_empty());
}

/// Composed faults: the holder is partitioned (its proxy cuts and refuses),
/// an operator breaks its lock with `zk-lock break`, a second zk-lock takes
/// the lock, and the partition heals before the session expires, with the
/// re-registered watches answered late. The reconnect alone never makes the
/// holder say its lock is "held again": its COMMAND is stopped (exit 75,
/// "lost") as soon as the server says the node is gone.
#[test]
fn a_lock_broken_during_a_partition_stops_command_after_the_heal() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let proxy = zk_testing::proxy::FaultProxy::start(&cs).unwrap();
    let dir = Scratch::new("partition-break");
    let path = "/locks/partition-break";
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(
        Some(&proxy.connect_string()),
        &["--session-timeout", "10s", path, "--", "sh", "-c", &script],
    );
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    // The holder watches its node (a reconnect re-registers that watch).
    let session = c.check_exists(&node).unwrap().unwrap().ephemeral_owner;
    assert!(wait_until(timing().wait(), || {
        let wchc = server.four_letter_word("wchc").unwrap_or_default();
        wchc.split(&format!("0x{session:x}\n")).nth(1).is_some_and(|rest| {
            rest.lines()
                .take_while(|l| l.starts_with('\t'))
                .any(|l| l.trim() == node)
        })
    }));
    let stderr_has = |what: &str| {
        std::fs::read_to_string(&holder.stderr)
            .unwrap_or_default()
            .contains(what)
    };
    proxy.refuse(true);
    proxy.cut();
    assert!(
        wait_until(timing().wait(), || stderr_has("may be lost")),
        "no Suspended warning"
    );
    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.starts_with(&format!("deleted {node}")), "{out}");
    // Another zk-lock is granted the broken lock.
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", path, "--", "true"]);
    assert_eq!(code, 0, "the next holder: {stderr}");
    proxy.delay_set_watches(Duration::from_millis(300));
    let healed = Instant::now();
    proxy.refuse(false);
    let (status, stderr) = holder.finish(timing().wait());
    println!(
        "the partitioned holder's zk-lock said ({:?} after the heal):\n{stderr}",
        healed.elapsed()
    );
    assert_eq!(status.code(), Some(75), "the holder learns it lost: {stderr}");
    assert!(stderr.contains("was lost"), "{stderr}");
    assert!(
        !stderr.contains("held again"),
        "a reconnect alone revived the lock: {stderr}"
    );
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    // (Whether the watch was re-registered depends on the reply that set it
    // having reached zk-lock before the cut; the proof decides either way.)
    println!("re-registrations held back: {}", proxy.set_watches_delayed());
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).is_empty()));
}

/// Dead: no `/proc/<pid>`, or a zombie not reaped yet (an orphan's reaper,
/// PID 1 of a container, may be slow or never reap it).
fn process_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn read_pid(file: &Path) -> String {
    wait_for_file(file);
    let mut pid = String::new();
    assert!(
        wait_until(timing().wait(), || {
            pid = std::fs::read_to_string(file).unwrap_or_default().trim().to_string();
            !pid.is_empty()
        }),
        "{} stayed empty",
        file.display()
    );
    pid
}

#[test]
fn command_dies_with_zk_lock_killed_by_sigkill() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("pdeathsig");
    let t = timing();

    // COMMAND (a shell: writes its pid, then sleeps long) under a lock; then
    // zk-lock is killed with SIGKILL and cannot clean up.
    let pid_file = dir.path("command.pid");
    let script = format!("echo $$ > '{}'; sleep 600; exit 0", pid_file.display());
    let path = "/locks/pdeathsig";
    let mut r = spawn(
        Some(&cs),
        &["--session-timeout", "60s", path, "--", "sh", "-c", &script],
    );
    wait_for_single_node(&c, path);
    let pid = read_pid(&pid_file);
    assert!(!process_dead(&pid), "COMMAND (pid {pid}) is not running");
    send_signal(r.pid(), "KILL");
    let status = r.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    let killed = Instant::now();
    // COMMAND goes at once, long before the session (60 s) expires and the
    // lock passes to someone else.
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND (pid {pid}) still runs {:?} after zk-lock was killed",
        killed.elapsed()
    );
    assert!(
        killed.elapsed() < t.scale(Duration::from_secs(5)),
        "{:?}",
        killed.elapsed()
    );
}

#[test]
fn processes_commands_start_do_not_outlive_the_lock() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("group");
    let t = timing();

    // COMMAND exits at once, leaving a background job behind: the job is killed
    // before the lock is released.
    let job = dir.path("job.pid");
    let script = format!("sleep 600 & echo $! > '{}'; exit 4", job.display());
    let path = "/locks/group";
    let (code, stderr, _) = run(Some(&cs), &[path, "--", "sh", "-c", &script]);
    assert_eq!(code, 4, "{stderr}");
    let pid = read_pid(&job);
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND's background job (pid {pid}) outlived zk-lock"
    );
    assert!(lock_nodes(&c, path).is_empty());

    // The lock is lost: SIGTERM goes to the whole group, the background job included.
    let job = dir.path("job-lost.pid");
    let ready = dir.path("ready-lost");
    let script = format!(
        "sleep 600 & echo $! > '{}'; touch '{}'; wait",
        job.display(),
        ready.display()
    );
    let r = spawn(Some(&cs), &["--kill-grace", "5s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    wait_for_file(&ready);
    let pid = read_pid(&job);
    take_lock_away(&server, &c, &node);
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND's background job (pid {pid}) outlived the lost lock"
    );
}

fn send_signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

#[test]
fn signals_are_forwarded_to_command() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("signals");
    let t = timing();

    // SIGTERM: the command dies of it; zk-lock exits 143 and releases the lock.
    let path = "/locks/signals";
    let ready = dir.path("ready-term");
    let script = format!("touch '{}'; exec sleep 60", ready.display());
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    assert_eq!(lock_nodes(&c, path).len(), 1);
    send_signal(r.pid(), "TERM");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(lock_nodes(&c, path).is_empty(), "the lock node was left behind");

    // SIGINT sent with kill(1) is forwarded too (a terminal's Ctrl-C reaches the command itself).
    let ready = dir.path("ready-int");
    let script = format!("touch '{}'; exec sleep 60", ready.display());
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    send_signal(r.pid(), "INT");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(130), "{stderr}");

    // SIGUSR1 reaches a command that handles it; zk-lock waits for its own exit status.
    let ready = dir.path("ready-usr1");
    let script = format!(
        "trap 'exit 42' USR1; touch '{}'; while :; do sleep 0.05; done",
        ready.display()
    );
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    send_signal(r.pid(), "USR1");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(42), "{stderr}");
    assert!(lock_nodes(&c, path).is_empty());

    // A signal while still waiting for the lock: zk-lock gives up at once (128+N),
    // its queued node goes, and COMMAND never runs.
    let m = InterProcessMutex::new(&c, path).unwrap();
    let guard = m.acquire().unwrap();
    let marker = dir.path("never");
    let mut r = spawn(Some(&cs), &[path, "--", "touch", marker.to_str().unwrap()]);
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 2),
        "zk-lock did not queue"
    );
    assert!(r.is_running());
    send_signal(r.pid(), "TERM");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 1),
        "the queued node was left behind"
    );
    drop(guard);
    assert!(!marker.exists(), "COMMAND ran");
}

#[test]
fn usage_errors_exit_64() {
    let cases: &[&[&str]] = &[
        &[],
        &["/locks/a"],
        &["/locks/a", "echo", "hi"],
        &["/locks/a", "--"],
        &["--", "true"],
        &["locks/a", "--", "true"],
        &["/", "--", "true"],
        &["/locks//a", "--", "true"],
        &["--timeout", "soon", "/locks/a", "--", "true"],
        &["--timeout", "-1", "/locks/a", "--", "true"],
        &["--kill-grace", "5 parsecs", "/locks/a", "--", "true"],
        &["--semaphore", "0", "/locks/a", "--", "true"],
        &["--semaphore", "many", "/locks/a", "--", "true"],
        &["--read", "--write", "/locks/a", "--", "true"],
        &["--write", "--semaphore", "2", "/locks/a", "--", "true"],
        &["--connect", "garbage!!", "/locks/a", "--", "true"],
        &["--connect", "host:99999", "/locks/a", "--", "true"],
        &["--namespace", "a/b", "/locks/a", "--", "true"],
        &["--no-such-option", "/locks/a", "--", "true"],
        &["-E", "300", "/locks/a", "--", "true"],
        &["status"],
        &["status", "locks/a"],
        &["status", "/locks/a", "--", "true"],
        &["break", "/locks/a"],
        &["--read", "status", "/locks/a"],
        &["wait", "/locks/a", "--timeout", "soon"],
        &["status", "--semaphore", "0", "/locks/a"],
    ];
    for args in cases {
        let (code, stderr, _) = run(None, args);
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(stderr.starts_with("zk-lock: "), "{args:?}: {stderr}");
    }
    // --help documents every option, the exit codes and the environment.
    let out = Command::new(zk_lock_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--connect",
        "--timeout",
        "--read",
        "--write",
        "--semaphore",
        "--namespace",
        "--embedded",
        "--features embedded",
        "--kill-grace",
        "--session-timeout",
        "--connect-timeout",
        "--conflict-exit-code",
        "--nonblock",
        "--verbose",
        "ZK_CONNECT",
        "RUST_LOG",
        "EXIT STATUS",
        " 64 ",
        " 69 ",
        " 75 ",
        "126",
        "127",
        "EXAMPLES",
        "zk-lock status PATH",
        "zk-lock break PATH",
        "zk-lock wait PATH",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
    // Each subcommand's help gives its exit statuses.
    for (sub, needles) in [
        ("status", &["--json", "the lock is held", "the lock is free"][..]),
        ("break", &["--node", "--yes", "a node was deleted", "nothing to break"]),
        ("wait", &["--timeout", "the lock is free", "--timeout passed first"]),
    ] {
        let out = Command::new(zk_lock_bin()).args([sub, "--help"]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        for n in needles {
            assert!(help.contains(n), "{sub} --help lacks {n:?}:\n{help}");
        }
    }
}

#[test]
fn unreachable_server_exits_69() {
    // A loopback port with nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cs = format!("127.0.0.1:{port}");
    let (code, stderr, elapsed) = run(Some(&cs), &["--connect-timeout", "1s", "/locks/a", "--", "true"]);
    assert_eq!(code, 69, "{stderr}");
    assert!(elapsed >= Duration::from_millis(900), "gave up after {elapsed:?}");
    assert!(elapsed < timing().scale(Duration::from_secs(15)), "took {elapsed:?}");
    // The same through ZK_CONNECT.
    let r = {
        let mut cmd = Command::new(zk_lock_bin());
        cmd.args(["--connect-timeout", "500ms", "/locks/a", "--", "true"])
            .env("ZK_CONNECT", &cs)
            .stderr(Stdio::null())
            .stdout(Stdio::null());
        cmd.status().unwrap()
    };
    assert_eq!(r.code(), Some(69));
    // The subcommands too: never "free" when nothing could be asked.
    for sub in [
        &["status", "/locks/a"][..],
        &["wait", "/locks/a"],
        &["break", "/locks/a", "--yes"],
    ] {
        let mut args = vec!["--connect-timeout", "300ms"];
        args.extend_from_slice(sub);
        let (code, stderr, elapsed) = run(Some(&cs), &args);
        assert_eq!(code, 69, "{sub:?}: {stderr}");
        assert!(stderr.contains("ZooKeeper unavailable"), "{stderr}");
        assert!(elapsed < timing().scale(Duration::from_secs(15)), "took {elapsed:?}");
    }
}

#[test]
fn readers_share_and_a_writer_excludes_them() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("rw");
    let log = dir.path("sections.log");
    let gate = dir.path("gate");
    std::fs::create_dir_all(&gate).unwrap();
    let path = "/locks/rw";
    // A reader logs its start, waits (bounded) until the other reader has
    // started too, which is only possible if they share the lock, holds a
    // little longer and logs its end.
    let reader = |name: &str| {
        format!(
            "echo \"{name} START $(date +%s%N)\" >> '{log}'; touch '{gate}/{name}'; i=0; \
             while [ $(ls '{gate}' | wc -l) -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
             sleep 0.3; echo \"{name} END $(date +%s%N)\" >> '{log}'",
            log = log.display(),
            gate = gate.display()
        )
    };
    let r1 = spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &reader("reader-1")]);
    let r2 = spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &reader("reader-2")]);
    wait_for_file(&gate.join("reader-1"));
    wait_for_file(&gate.join("reader-2"));
    // The writer queues while both readers hold.
    let w = spawn(
        Some(&cs),
        &[
            "--write",
            path,
            "--",
            "sh",
            "-c",
            &section_script("writer", &log, "0.3"),
        ],
    );
    assert!(
        wait_until(timing().wait(), || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("writer START")),
        "the writer never ran"
    );
    // A reader arriving while the writer holds waits for it.
    let r3 = spawn(
        Some(&cs),
        &[
            "--read",
            path,
            "--",
            "sh",
            "-c",
            &section_script("reader-3", &log, "0.05"),
        ],
    );
    for r in [r1, r2, w, r3] {
        let (status, stderr) = r.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    let all = sections(&log);
    assert_eq!(all.len(), 4, "{all:?}");
    let by = |n: &str| all.iter().find(|s| s.name == n).unwrap().clone();
    let (a, b, w, c) = (by("reader-1"), by("reader-2"), by("writer"), by("reader-3"));
    assert!(overlap(&a, &b), "the readers did not run together: {a:?} {b:?}");
    for r in [&a, &b, &c] {
        assert!(!overlap(r, &w), "a reader overlapped the writer: {r:?} {w:?}");
    }
    assert!(c.start >= w.end, "reader-3 ran before the writer finished");
}

// ---- Curator (Java) interop -----------------------------------------------------------------

const JAVA: &str = "/usr/share/java";
const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-simple",
];

fn on_path(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Compiles scripts/interop/{CuratorMutexContender,CuratorLockHolder}.java
/// into `out` and returns the class path; `Err(reason)` when Java or Debian's
/// Curator jars are missing.
fn compile_curator_contender(out: &Path) -> Result<String, String> {
    let missing: Vec<_> = CURATOR_JARS
        .iter()
        .filter(|j| !Path::new(&format!("{JAVA}/{j}.jar")).exists())
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing jars in {JAVA}: {missing:?}"));
    }
    if !on_path("java") || !on_path("javac") {
        return Err("java or javac not found".into());
    }
    let jar = |j: &str| format!("{JAVA}/{j}.jar");
    let javac_cp = ["curator-recipes", "curator-framework", "curator-client", "zookeeper"]
        .map(jar)
        .join(":");
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop");
    let st = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(out)
        .arg("-cp")
        .arg(&javac_cp)
        .arg(interop.join("CuratorMutexContender.java"))
        .arg(interop.join("CuratorLockHolder.java"))
        .status()
        .map_err(|e| format!("javac: {e}"))?;
    assert!(st.success(), "javac failed on {}", interop.display());
    let mut cp = vec![out.display().to_string()];
    cp.extend(CURATOR_JARS.map(jar));
    Ok(cp.join(":"))
}

/// Waits for a Java contender; on failure, shows its stderr (kept in a file:
/// the JVM warns noisily about sockets closed under it).
fn java_wait(mut java: Child, stderr: &Path) {
    let mut status = None;
    let done = wait_until(timing().wait() * 2, || {
        status = java.try_wait().unwrap();
        status.is_some()
    });
    if !done {
        let _ = java.kill();
        let _ = java.wait();
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "the Curator contender failed ({status:?}):\n{}",
        std::fs::read_to_string(stderr).unwrap_or_default()
    );
}

const JAVA_OPTS: [&str; 4] = [
    "-Xmx64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
];

/// A Curator mutex holder that releases when `release` appears.
fn java_holder(cp: &str, connect: &str, path: &str, name: &str, log: &Path, release: &Path) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(JAVA_OPTS)
        .args(["-cp", cp, "CuratorLockHolder", connect, path, name])
        .arg(log)
        .arg(release)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

fn java_contender(
    cp: &str,
    connect: &str,
    path: &str,
    name: &str,
    iterations: u32,
    hold_ms: u64,
    log: &Path,
) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(JAVA_OPTS)
        .args(["-cp", cp, "CuratorMutexContender", connect, path, name])
        .args([iterations.to_string(), hold_ms.to_string()])
        .arg(log)
        .arg("mutex")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

#[test]
fn curator_mutex_and_zk_lock_exclude_each_other() {
    let dir = Scratch::new("curator");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator interop test: {why}");
            return;
        }
    };
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let t = timing();
    let path = "/locks/curator";
    let log = dir.path("sections.log");
    let c = client(&server);

    // 1. Curator holds: zk-lock --timeout 1s fails (not --timeout 0: with a JVM
    //    busy beside it, one round trip can take longer than a zero timeout's
    //    20 ms grace, which is honestly "no answer", exit 69); a waiting
    //    zk-lock runs after Curator's release.
    let release = dir.path("release-curator-1");
    let java_err = dir.path("curator-1.err");
    let java = java_holder(&cp, &cs, path, "curator-1", &log, &release)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    let log_has = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);
    assert!(
        wait_until(t.wait(), || log_has("curator-1 START")),
        "the Curator holder never got the lock"
    );
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "1s", path, "--", "true"]);
    assert_eq!(code, 1, "zk-lock got a lock Curator holds: {stderr}");
    let waiting = spawn(
        Some(&cs),
        &[path, "--", "sh", "-c", &section_script("zk-lock-1", &log, "0.1")],
    );
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 2),
        "zk-lock did not queue behind Curator"
    );
    std::fs::write(&release, b"").unwrap();
    let (status, stderr) = waiting.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    java_wait(java, &java_err);

    // 2. zk-lock holds: a Curator client queues and gets the lock only after zk-lock's release.
    let (ready, go) = (dir.path("zk-lock-2-ready"), dir.path("zk-lock-2-go"));
    let script = format!(
        "echo \"zk-lock-2 START $(date +%s%N)\" >> '{log}'; touch '{ready}'; i=0; \
         while [ ! -e '{go}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; \
         echo \"zk-lock-2 END $(date +%s%N)\" >> '{log}'",
        log = log.display(),
        ready = ready.display(),
        go = go.display()
    );
    let holder = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    let release = dir.path("release-curator-3");
    let java_err = dir.path("curator-3.err");
    let java = java_holder(&cp, &cs, path, "curator-3", &log, &release)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 2),
        "Curator did not queue behind zk-lock"
    );
    assert!(!log_has("curator-3 START"), "Curator got a lock zk-lock holds");
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(t.wait(), || log_has("curator-3 START")),
        "Curator never got the lock after zk-lock's release"
    );
    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);

    // 3. Mixed contention: Curator (several rounds) and zk-lock runs in two threads.
    let ready = dir.path("ready");
    std::fs::create_dir_all(&ready).unwrap();
    let go = dir.path("go");
    let java_err = dir.path("curator-2.err");
    let java = java_contender(&cp, &cs, path, "curator-2", 6, 100, &log)
        .env("CONTENDER_READY_DIR", &ready)
        .env("CONTENDER_GO_FILE", &go)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    wait_for_file(&ready.join("curator-2"));
    std::fs::write(&go, b"").unwrap();
    std::thread::scope(|s| {
        for worker in 0..2 {
            let (cs, log) = (&cs, &log);
            s.spawn(move || {
                for round in 0..3 {
                    let name = format!("zk-lock-w{worker}r{round}");
                    let (code, stderr, _) =
                        run(Some(cs), &[path, "--", "sh", "-c", &section_script(&name, log, "0.1")]);
                    assert_eq!(code, 0, "{stderr}");
                }
            });
        }
    });
    java_wait(java, &java_err);

    let all = sections(&log);
    assert_eq!(all.len(), 4 + 6 + 6, "{all:?}");
    assert_exclusive(&all);
    let by = |n: &str| all.iter().find(|s| s.name == n).unwrap();
    assert!(
        by("zk-lock-1").start >= by("curator-1").end,
        "zk-lock ran while Curator held the lock"
    );
    assert!(
        by("curator-3").start >= by("zk-lock-2").end,
        "Curator ran while zk-lock held the lock"
    );
    assert!(lock_nodes(&c, path).is_empty());
    if server.backend() == Backend::Apache {
        println!("Curator interop checked on Apache ZooKeeper");
    }
}

// ---- authentication and ACLs -----------------------------------------------------------------

const SECRET: &str = "s3cret-Pw-never-printed";

/// A holder script: touches READY, saves its environment, waits for GO.
fn holding_script(ready: &Path, env_dump: &Path, go: &Path) -> String {
    format!(
        "env > '{env}'; touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        env = env_dump.display(),
        ready = ready.display(),
        go = go.display()
    )
}

#[test]
fn credentials_and_a_creator_acl_keep_other_sessions_out() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let t = timing();
    let dir = Scratch::new("auth");
    let path = "/locks/secure";
    let auth = format!("digest:deployer:{SECRET}");
    let owner = client_auth(&server, Some(&format!("deployer:{SECRET}")));

    // The holder: credentials from ZK_LOCK_AUTH, nodes creator-only, debug logs on.
    let (ready, env_dump, go) = (dir.path("ready"), dir.path("env"), dir.path("go"));
    let holder = spawn_env(
        Some(&cs),
        &[
            "-vvv",
            "--acl",
            "creator",
            path,
            "--",
            "sh",
            "-c",
            &holding_script(&ready, &env_dump, &go),
        ],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    wait_for_file(&ready);
    let nodes = lock_nodes(&owner, path);
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let node = format!("{path}/{}", nodes[0]);
    let (acl, _) = owner.zookeeper_client().get_acl(&node).unwrap();
    assert_eq!(
        acl,
        vec![zk_framework::Acl::digest("deployer", SECRET, zk_framework::perms::ALL)]
    );
    // COMMAND does not inherit the credentials.
    let env = std::fs::read_to_string(&env_dump).unwrap();
    assert!(env.contains("ZK_LOCK_PATH=") && !env.contains("ZK_LOCK_AUTH"), "{env}");

    // Without credentials, with other ones, with an unknown scheme: exit 77 at once,
    // even without a timeout (no retry loop, no wait), and nothing is left behind.
    let other = dir.path("other-auth");
    std::fs::write(&other, "digest:intruder:guess\n").unwrap();
    let other = other.to_str().unwrap().to_string();
    for (args, why) in [
        (vec![path, "--", "true"], "not authorised"),
        (vec!["--auth-file", &other, path, "--", "true"], "not authorised"),
        (vec!["--auth", "nope:x", path, "--", "true"], "authentication failed"),
    ] {
        let (code, stderr, elapsed) = run(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(
            stderr.contains("permission denied") && stderr.contains(why),
            "{args:?}: {stderr}"
        );
        // (The process starts, connects, is refused and closes its session: no wait.)
        assert!(elapsed <= t.scale(Duration::from_secs(5)), "{args:?} took {elapsed:?}");
    }
    assert_eq!(lock_nodes(&owner, path), nodes, "an intruder's node was left");

    // With the credentials (from a file), a second zk-lock queues and runs after the holder.
    let file = dir.path("auth");
    std::fs::write(&file, format!("{auth}\n")).unwrap();
    let log = dir.path("sections.log");
    let waiter = spawn(
        Some(&cs),
        &[
            "--auth-file",
            file.to_str().unwrap(),
            "-w",
            "60s",
            path,
            "--",
            "sh",
            "-c",
            &section_script("waiter", &log, "0"),
        ],
    );
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "the second zk-lock did not queue"
    );
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains(SECRET),
        "the holder's debug log shows the secret:\n{stderr}"
    );
    assert!(stderr.contains("acquired"), "no debug log at all? {stderr}");
    let (status, stderr) = waiter.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(sections(&log).len(), 1);
    owner.close();
}

#[test]
fn curator_with_the_same_digest_credentials_interoperates_on_a_creator_only_path() {
    let dir = Scratch::new("curator-auth");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator interop test: {why}");
            return;
        }
    };
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let t = timing();
    let path = "/locks/curator-secure";
    let digest = format!("deployer:{SECRET}");
    let auth = format!("digest:{digest}");
    let owner = client_auth(&server, Some(&digest));
    let log = dir.path("sections.log");
    let log_has = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);

    // 1. Curator (digest credentials, CREATOR_ALL_ACL provider) holds the lock.
    let release = dir.path("release-1");
    let java_err = dir.path("curator-1.err");
    let java = java_holder(&cp, &cs, path, "curator-1", &log, &release)
        .env("ZK_DIGEST", &digest)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || log_has("curator-1 START")),
        "the Curator holder never got the lock"
    );
    let nodes = lock_nodes(&owner, path);
    let (acl, _) = owner
        .zookeeper_client()
        .get_acl(&format!("{path}/{}", nodes[0]))
        .unwrap();
    assert_eq!(
        acl,
        vec![zk_framework::Acl::digest("deployer", SECRET, zk_framework::perms::ALL)]
    );
    // Without the credentials: denied at once.
    let (code, stderr, _) = run(Some(&cs), &[path, "--", "true"]);
    assert_eq!(code, 77, "{stderr}");
    // With them: zk-lock queues behind Curator and runs after its release.
    let waiting = spawn_env(
        Some(&cs),
        &[path, "--", "sh", "-c", &section_script("zk-lock-1", &log, "0.05")],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "zk-lock did not queue behind Curator"
    );
    std::fs::write(&release, b"").unwrap();
    let (status, stderr) = waiting.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    java_wait(java, &java_err);

    // 2. zk-lock (creator ACL) holds; Curator with the credentials queues and gets it after.
    let (ready, env_dump, go) = (dir.path("ready"), dir.path("env"), dir.path("go"));
    let holder = spawn_env(
        Some(&cs),
        &[
            "--acl",
            "creator",
            path,
            "--",
            "sh",
            "-c",
            &holding_script(&ready, &env_dump, &go),
        ],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    wait_for_file(&ready);
    let release = dir.path("release-2");
    let java_err = dir.path("curator-2.err");
    let java = java_holder(&cp, &cs, path, "curator-2", &log, &release)
        .env("ZK_DIGEST", &digest)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "Curator did not queue behind zk-lock"
    );
    assert!(!log_has("curator-2 START"), "Curator got a lock zk-lock holds");
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(t.wait(), || log_has("curator-2 START")),
        "Curator never got the lock after zk-lock's release"
    );
    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);
    assert_exclusive(&sections(&log));
    owner.close();
}

// ---- operating a lock: status, break, wait -----------------------------------------------------

/// A zk-lock holding `path` until `go` appears; `ready` appears once COMMAND
/// runs.
fn gated_holder(cs: &str, path: &str, ready: &Path, go: &Path) -> Run {
    let script = format!(
        "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = ready.display(),
        go = go.display()
    );
    spawn(Some(cs), &[path, "--", "sh", "-c", &script])
}

/// The participant objects of `status --json` output, in order.
fn json_participants(json: &str) -> Vec<String> {
    let list = json
        .split_once("\"participants\":[")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no participants in {json}"));
    list.split("{\"node\":").skip(1).map(str::to_string).collect()
}

#[test]
fn status_lists_holders_and_waiters_in_order() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-status");
    let path = "/locks/op-status";

    let (code, out, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 1, "a free lock: {out} {stderr}");
    assert!(out.contains("free"), "{out}");

    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let holder = gated_holder(&cs, path, &ready, &go);
    wait_for_file(&ready);
    let waiter = spawn(Some(&cs), &[path, "--", "true"]);
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 2));

    let (code, json, stderr) = run_out(Some(&cs), &["status", "--json", path]);
    assert_eq!(code, 0, "held: {stderr}");
    assert!(
        json.contains("\"layout\":\"mutex\",\"held\":true,\"holders\":1"),
        "{json}"
    );
    let ps = json_participants(&json);
    assert_eq!(ps.len(), 2, "{json}");
    assert!(ps[0].contains("\"position\":0,\"holds\":true"), "{}", ps[0]);
    assert!(ps[0].contains(&format!("\"pid\":{}", holder.pid())), "{}", ps[0]);
    assert!(ps[0].contains("\"name\":\"zk-lock -- sh\""), "{}", ps[0]);
    assert!(ps[1].contains("\"position\":1,\"holds\":false"), "{}", ps[1]);
    assert!(ps[1].contains(&format!("\"pid\":{}", waiter.pid())), "{}", ps[1]);
    // The fencing token is the node's czxid, as the holder's.
    let node = format!("{path}/{}", lock_nodes(&c, path)[0]);
    let token = c.check_exists(&node).unwrap().unwrap().czxid;
    let first = format!("{path}/{}", {
        let mut v = lock_nodes(&c, path);
        zk_recipes::unstable::driver::Driver::MUTEX.sort(&mut v);
        v[0].clone()
    });
    let first_token = c.check_exists(&first).unwrap().unwrap().czxid;
    assert!(
        ps[0].contains(&format!("\"fencing_token\":{first_token}")),
        "{} {token}",
        ps[0]
    );

    // The table, as an operator reads it (connection options after the subcommand too).
    let (code, table, _) = run_out(None, &["status", path, "--connect", &cs]);
    assert_eq!(code, 0);
    println!("{table}");
    assert!(
        table.contains(&format!("{path}: mutex lock, held by 1, 1 waiting")),
        "{table}"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].starts_with("POS"), "{table}");
    assert!(lines[2].starts_with("0") && lines[2].contains("holds"), "{table}");
    assert!(lines[2].contains(&format!("[{}]@", holder.pid())), "{table}");
    assert!(lines[3].starts_with("1") && lines[3].contains("waits"), "{table}");

    std::fs::write(&go, b"").unwrap();
    assert_eq!(holder.finish(timing().wait()).0.code(), Some(0));
    assert_eq!(waiter.finish(timing().wait()).0.code(), Some(0));
    assert_eq!(run_out(Some(&cs), &["status", path]).0, 1);
}

#[test]
fn break_makes_the_holder_lose_and_kill_its_command() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-break");
    let t = timing();
    let path = "/locks/op-break";

    assert_eq!(run_out(Some(&cs), &["break", path, "--yes"]).0, 1, "nothing to break");

    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);

    // Without --yes nothing is deleted.
    let (code, _, stderr) = run_out(Some(&cs), &["break", path]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(run_out(Some(&cs), &["break", path, "--node", "nosuch", "--yes"]).0, 1);
    assert!(c.check_exists(&node).unwrap().is_some());

    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.starts_with(&format!("deleted {node} (mutex, holding, held by zk-lock -- sh")),
        "{out}"
    );
    let broken = Instant::now();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(75), "the holder learns it lost: {stderr}");
    assert!(stderr.contains("lost"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    println!("holder exited {:?} after the break", broken.elapsed());
    assert!(lock_nodes(&c, path).is_empty());
}

#[test]
fn wait_returns_when_the_holder_releases_and_times_out() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-wait");
    let t = timing();
    let path = "/locks/op-wait";

    let (code, out, _) = run_out(Some(&cs), &["wait", path]);
    assert_eq!((code, out.contains("is free")), (0, true), "{out}");

    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let holder = gated_holder(&cs, path, &ready, &go);
    wait_for_file(&ready);

    // Timeouts: exit 1 (or -E), within the deadline plus process start-up.
    let started = Instant::now();
    let (code, _, stderr) = run_out(Some(&cs), &["wait", path, "--timeout", "300ms"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("still held"), "{stderr}");
    assert!(
        started.elapsed() <= Duration::from_millis(300) + t.scale(Duration::from_secs(3)),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run_out(Some(&cs), &["wait", path, "-w", "0", "-E", "7"]).0, 7);

    // A waiter queues nothing; it returns when the holder releases.
    let waiter = spawn(Some(&cs), &["-v", "wait", path, "--json"]);
    assert!(
        wait_until(t.wait(), || waiter.stderr_now().contains("waiting")),
        "{}",
        waiter.stderr_now()
    );
    assert_eq!(lock_nodes(&c, path).len(), 1, "wait created a node");
    std::fs::write(&go, b"").unwrap();
    let (status, out, stderr) = waiter.finish_out(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        out.starts_with(&format!("{{\"path\":\"{path}\",\"free\":true")),
        "{out}"
    );
    assert_eq!(holder.finish(t.wait()).0.code(), Some(0));
}

#[test]
fn status_shows_a_curator_holder_and_our_waiter_in_order() {
    let dir = Scratch::new("status-curator");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator status test: {why}");
            return;
        }
    };
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let t = timing();
    let path = "/locks/status-curator";
    let log = dir.path("sections.log");
    let release = dir.path("release");
    let java_err = dir.path("curator.err");
    let java = java_holder(&cp, &cs, path, "curator", &log, &release)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait() * 2, || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("curator START")),
        "the Curator holder never got the lock"
    );
    let waiter = spawn(Some(&cs), &[path, "--", "true"]);
    assert!(wait_until(t.wait(), || lock_nodes(&c, path).len() == 2));

    let (code, json, stderr) = run_out(Some(&cs), &["status", "--json", path]);
    assert_eq!(code, 0, "{stderr}");
    let ps = json_participants(&json);
    assert_eq!(ps.len(), 2, "{json}");
    // Curator's node: its data is the host address.
    assert!(ps[0].contains("\"holds\":true"), "{}", ps[0]);
    assert!(ps[0].contains("\"holder\":{\"type\":\"address\""), "{}", ps[0]);
    assert!(ps[1].contains("\"holds\":false"), "{}", ps[1]);
    assert!(ps[1].contains(&format!("\"pid\":{}", waiter.pid())), "{}", ps[1]);
    let (_, table, _) = run_out(Some(&cs), &["status", path]);
    println!("{table}");
    assert!(table.contains("(address only)"), "{table}");

    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);
    assert_eq!(waiter.finish(t.wait()).0.code(), Some(0));
    if server.backend() == Backend::Apache {
        println!("status with a Curator holder checked on Apache ZooKeeper");
    }
}

#[test]
fn break_a_one_lease_semaphore_frees_the_next_contender() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-break-sem");
    let t = timing();
    let path = "/locks/op-break-sem";
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(Some(&cs), &["--semaphore", "1", path, "--", "sh", "-c", &script]);
    let pid = wait_for_pid(&pid_file);
    let done = dir.path("done");
    let next = spawn(
        Some(&cs),
        &["--semaphore", "1", path, "--", "touch", done.to_str().unwrap()],
    );
    // The contender waits in the internal mutex's queue behind the holder.
    assert!(wait_until(t.wait(), || lock_nodes(&c, &format!("{path}/locks")).len() == 2));

    let (code, out, stderr) = run_out(Some(&cs), &["status", "--semaphore", "1", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("semaphore lock, held by 1"), "{out}");

    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    let deleted: Vec<&str> = out.lines().filter(|l| l.starts_with("deleted ")).collect();
    assert_eq!(deleted.len(), 2, "the lease and the internal mutex node: {out}");
    assert!(
        deleted[0].contains("/leases/") && deleted[0].contains("(lease, holding"),
        "{out}"
    );
    assert!(
        deleted[1].contains("/locks/") && deleted[1].contains("(lease-queue"),
        "{out}"
    );
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    let (status, stderr) = next.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(done.exists());
}

#[test]
fn status_of_a_read_write_lock_shows_both_readers_and_the_queued_writer() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-status-rw");
    let path = "/locks/op-status-rw";
    let go = dir.path("go");
    let gate = format!(
        "i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        go = go.display()
    );
    let readers: Vec<Run> = (0..2)
        .map(|_| spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &gate]))
        .collect();
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 2));
    let writer = spawn(Some(&cs), &["--write", path, "--", "true"]);
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 3));

    let (code, table, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(table.contains("read/write lock, held by 2, 1 waiting"), "{table}");
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows[0].contains("holds  read") && rows[1].contains("holds  read"),
        "{table}"
    );
    assert!(rows[2].contains("waits  write"), "{table}");
    // Two holders: break wants to be told which.
    assert_eq!(run_out(Some(&cs), &["break", path, "--yes"]).0, 64);

    std::fs::write(&go, b"").unwrap();
    for r in readers {
        assert_eq!(r.finish(timing().wait()).0.code(), Some(0));
    }
    assert_eq!(writer.finish(timing().wait()).0.code(), Some(0));
}

// ---- TLS (--tls-*) -------------------------------------------------------------------------

/// zk-lock over TLS with a client certificate (the server requires one): the
/// flags and the environment variables both work, a TLS holder excludes it,
/// a wrong CA is exit 69 within --connect-timeout, bad TLS options are exit 64.
#[test]
fn locks_over_tls_with_flags_and_environment() {
    use zk_testing::tls::TestPki;
    let _ = env_logger::builder().is_test(true).try_init();
    let pki = TestPki::new("zk-lock test CA").unwrap();
    let server = TestingServer::start_tls(pki.server_tls().unwrap().require_client_cert(pki.ca_pem())).unwrap();
    let dir = Scratch::new("tls");
    let ca = dir.path("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let (cert, key) = pki
        .client_cert("zk-lock")
        .unwrap()
        .write_files(&dir.0, "client")
        .unwrap();
    let other_ca = dir.path("other-ca.pem");
    std::fs::write(&other_ca, TestPki::new("other").unwrap().ca_pem()).unwrap();
    let (ca, cert, key, other_ca) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        other_ca.to_str().unwrap(),
    );
    let cs = server.connect_string();
    let out = dir.path("node");
    let script = format!("echo \"$ZK_LOCK_NODE\" > {}", out.display());

    // Flags.
    let (code, stderr, _) = run(
        Some(&cs),
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "/tls/flags",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let node = std::fs::read_to_string(&out).unwrap();
    assert!(node.starts_with("/tls/flags/"), "{node}");
    assert!(!stderr.contains("PRIVATE KEY"), "{stderr}");

    // Environment variables instead of flags.
    let status = Command::new(zk_lock_bin())
        .args(["--connect", &cs, "/tls/env", "--", "true"])
        .env("ZK_LOCK_TLS_CA", ca)
        .env("ZK_LOCK_TLS_CERT", cert)
        .env("ZK_LOCK_TLS_KEY", key)
        .env_remove("ZK_CONNECT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));

    // A holder connected over TLS excludes zk-lock (a non-blocking try: exit 1).
    let tls = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap();
    let t = timing();
    let holder = CuratorFramework::builder()
        .connect_string(cs.clone())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
        .build()
        .unwrap();
    holder.block_until_connected(t.wait()).unwrap();
    let lock = InterProcessMutex::new(&holder, "/tls/held").unwrap();
    let g = lock.acquire().unwrap();
    let tls_args = ["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key];
    let mut args = tls_args.to_vec();
    // A 1 s try, not -n: a zero timeout's one round trip (20 ms of grace)
    // over TLS on a loaded machine is honestly "no answer" (69), not "held".
    let mut held_args = tls_args.to_vec();
    held_args.extend(["--timeout", "1s", "/tls/held", "--", "true"]);
    let (code, stderr, _) = run(Some(&cs), &held_args);
    assert_eq!(code, 1, "held elsewhere: {stderr}");
    args.extend(["-n", "/tls/held", "--", "true"]);
    g.release().unwrap();
    run_zero_timeout_until_acquired(&cs, &args, || false);

    // `--acl creator` with a client certificate and no --auth: the nodes belong
    // to the certificate's x509 identity; another certificate is refused (77).
    let gate = dir.path("x509-go");
    let ready = dir.path("x509-ready");
    let hold = format!(
        "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = ready.display(),
        go = gate.display()
    );
    let mut args = tls_args.to_vec();
    args.extend(["--acl", "creator", "/tls/x509", "--", "sh", "-c", &hold]);
    let x509_holder = spawn(Some(&cs), &args);
    wait_for_file(&ready);
    let nodes = lock_nodes(&holder, "/tls/x509");
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let (acl, _) = holder
        .zookeeper_client()
        .get_acl(&format!("/tls/x509/{}", nodes[0]))
        .unwrap();
    let me = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap()
        .client_x509_id()
        .expect("the client certificate's x509 id")
        .to_string();
    assert_eq!(acl, vec![zk_framework::Acl::x509(&me, zk_framework::perms::ALL)]);
    let (other_cert, other_key) = pki
        .client_cert("someone-else")
        .unwrap()
        .write_files(&dir.0, "other")
        .unwrap();
    let (code, stderr, _) = run(
        Some(&cs),
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            other_cert.to_str().unwrap(),
            "--tls-key",
            other_key.to_str().unwrap(),
            "--timeout",
            "2s",
            "/tls/x509",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 77, "another certificate: {stderr}");
    std::fs::write(&gate, b"").unwrap();
    let (status, stderr) = x509_holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");

    // A wrong CA: exit 69, a TLS message, within the connect timeout.
    let (code, stderr, elapsed) = run(
        Some(&cs),
        &[
            "--connect-timeout",
            "2s",
            "--tls-ca",
            other_ca,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "/tls/wrong",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.contains("TLS") && stderr.contains("not signed by a trusted CA"),
        "{stderr}"
    );
    assert!(
        elapsed <= Duration::from_secs(2) + t.scale(Duration::from_secs(2)),
        "{elapsed:?}"
    );

    // Without a client certificate the server refuses: exit 69 saying so.
    let (code, stderr, _) = run(
        Some(&cs),
        &["--connect-timeout", "2s", "--tls-ca", ca, "/tls/nocert", "--", "true"],
    );
    assert_eq!(code, 69, "{stderr}");
    assert!(stderr.contains("requires a client certificate"), "{stderr}");

    // Bad TLS options: usage errors (64), nothing run.
    for (args, want) in [
        (
            vec!["--tls-ca", ca, "--tls-cert", cert, "/x", "--", "true"],
            "--tls-cert needs --tls-key",
        ),
        (
            vec!["--tls-cert", cert, "--tls-key", key, "/x", "--", "true"],
            "need --tls-ca",
        ),
        (
            vec!["--tls-ca", "/nonexistent/ca.pem", "/x", "--", "true"],
            "/nonexistent/ca.pem",
        ),
        (
            vec!["--tls-ca", ca, "--tls-cert", cert, "--tls-key", ca, "/x", "--", "true"],
            "private key",
        ),
    ] {
        let (code, stderr, _) = run(Some(&cs), &args);
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

// ---- a partition: COMMAND stops before the next holder starts -------------------------------

/// A COMMAND that appends `NAME <unix ns>` to `log` every 5 ms, for `secs`
/// seconds (forever when `None`), flushing each line: the last line of a
/// killed COMMAND is its last moment under the lock. It ignores SIGTERM, the
/// worst case: only the SIGKILL after the grace stops it.
fn stamper(name: &str, log: &Path, secs: Option<f64>) -> Vec<String> {
    let script = "import signal, sys, time\n\
                  signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
                  name, log, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])\n\
                  end = time.monotonic() + secs if secs > 0 else None\n\
                  with open(log, 'a') as f:\n\
                  \x20   while end is None or time.monotonic() < end:\n\
                  \x20       f.write(f'{name} {time.time_ns()}\\n'); f.flush(); time.sleep(0.005)\n";
    vec![
        "python3".into(),
        "-c".into(),
        script.into(),
        name.into(),
        log.display().to_string(),
        secs.unwrap_or(0.0).to_string(),
    ]
}

/// The stamps of `name` in `log`, in ns since the epoch.
fn stamps(log: &Path, name: &str) -> Vec<u128> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(n, _)| *n == name)
        .filter_map(|(_, t)| t.trim().parse().ok())
        .collect()
}

/// `runs` holders, each behind a fault proxy with session timeout `session`,
/// each with a second zk-lock queued on the same path connected directly;
/// every proxy freezes at once (the holders' connections go silent, not
/// closed). Each first COMMAND must have stamped its last before the second
/// COMMAND's first stamp. Returns the gaps.
fn partition_runs(session: &str, runs: usize) -> Vec<Duration> {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new(&format!("partition-{session}"));
    let proxies: Vec<zk_testing::proxy::FaultProxy> = (0..runs)
        .map(|_| zk_testing::proxy::FaultProxy::start(&cs).unwrap())
        .collect();
    let paths: Vec<String> = (0..runs).map(|i| format!("/locks/partition-{session}/{i}")).collect();
    let logs: Vec<PathBuf> = (0..runs).map(|i| dir.path(&format!("stamps-{i}"))).collect();
    let holders: Vec<Run> = (0..runs)
        .map(|i| {
            let pc = proxies[i].connect_string();
            let mut args: Vec<String> = vec![
                "--session-timeout".into(),
                session.into(),
                paths[i].clone(),
                "--".into(),
            ];
            args.extend(stamper("A", &logs[i], None));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            spawn(Some(&pc), &args)
        })
        .collect();
    for log in &logs {
        assert!(
            wait_until(timing().wait(), || !stamps(log, "A").is_empty()),
            "a holder never ran"
        );
    }
    let c = client(&server);
    let nexts: Vec<Run> = (0..runs)
        .map(|i| {
            let mut args: Vec<String> = vec![paths[i].clone(), "--".into()];
            args.extend(stamper("B", &logs[i], Some(0.3)));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            spawn(Some(&cs), &args)
        })
        .collect();
    for p in &paths {
        assert!(
            wait_until(timing().wait(), || lock_nodes(&c, p).len() == 2),
            "the second zk-lock never queued"
        );
    }
    for p in &proxies {
        p.freeze(true);
    }
    let mut gaps = Vec::new();
    for (i, (holder, next)) in holders.into_iter().zip(nexts).enumerate() {
        let (status, stderr) = next.finish(timing().wait() * 2);
        assert_eq!(status.code(), Some(0), "the second zk-lock: {stderr}");
        let (status, holder_err) = holder.finish(timing().wait() * 2);
        assert_eq!(status.code(), Some(75), "the frozen holder: {holder_err}");
        let (a, b) = (stamps(&logs[i], "A"), stamps(&logs[i], "B"));
        let (last_a, first_b) = (*a.iter().max().unwrap(), *b.iter().min().expect("B ran"));
        assert!(
            last_a < first_b,
            "run {i}: the frozen holder's COMMAND stamped {} ms after the next one started\n{holder_err}",
            (last_a - first_b) / 1_000_000
        );
        gaps.push(Duration::from_nanos((first_b - last_a) as u64));
        if i == 0 {
            println!("a frozen holder's zk-lock said:\n{holder_err}");
        }
    }
    for p in &proxies {
        p.freeze(false);
    }
    gaps.sort();
    println!(
        "session {session}, {runs} runs: COMMAND overlap 0; gap from the frozen COMMAND's last stamp to the next \
         COMMAND's first: min {:?}, median {:?}, max {:?}",
        gaps[0],
        gaps[gaps.len() / 2],
        gaps[gaps.len() - 1]
    );
    gaps
}

/// The broken promise of an earlier release: after a freeze (not a close),
/// the holder's COMMAND ran on beside the next holder's for seconds. 20 runs
/// each with the holder's session at 3 s (the default --kill-grace of 5 s is
/// cut to fit, with a warning) and at 10 s.
#[test]
fn a_frozen_holder_stops_command_before_the_next_holder_starts() {
    partition_runs("3s", 20);
    partition_runs("10s", 20);
}

/// A --kill-grace too long for the session is cut at start-up, with a
/// warning that says so.
#[test]
fn a_grace_too_long_for_the_session_is_said_at_start_up() {
    let server = TestingServer::start().unwrap();
    let (code, stderr, _) = run(
        Some(&server.connect_string()),
        &[
            "--session-timeout",
            "3s",
            "--kill-grace",
            "5s",
            "/locks/grace",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("too short for --kill-grace 5s"), "{stderr}");
    let (code, stderr, _) = run(
        Some(&server.connect_string()),
        &[
            "--session-timeout",
            "10s",
            "--kill-grace",
            "2s",
            "/locks/grace",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("too short"), "{stderr}");
}

// ---- refusals: one exit status and a fitting hint in every mode -------------------------

/// A client with digest credentials `user:pw` whose nodes get `provider`'s ACL.
fn owner_with(
    server: &TestingServer,
    user_pw: &str,
    provider: impl zk_framework::AclProvider + 'static,
) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .authorization("digest", user_pw.as_bytes())
        .acl_provider(provider)
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// `status`, `break` and `wait` on a lock whose nodes have a digest ACL the
/// caller does not pass exit 77, as a run does, with the hint for the way
/// the caller authenticates (none, other digest credentials, an unknown
/// scheme); a read-only ACL lets `status` read and refuses
/// `break`'s delete, naming the node that refused.
#[test]
fn subcommands_refused_by_a_digest_acl_exit_77() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let path = "/acl-ops/private";
    let owner = owner_with(
        &server,
        &format!("owner:{SECRET}"),
        zk_framework::FixedAclProvider::creator_all(),
    );
    let lock = InterProcessMutex::new(&owner, path).unwrap();
    let g = lock.acquire().unwrap();

    let ops: [&[&str]; 4] = [
        &["status", path],
        &["break", path, "--yes"],
        &["wait", path, "-w", "1s"],
        &["--timeout", "2s", path, "--", "true"],
    ];
    for op in ops {
        // No credentials: told to give some. (Every try that expects a
        // refusal waits up to 2 s, not -n: a refusal answers at once, and a
        // zero timeout's 20 ms grace on a loaded machine is honestly "no
        // answer", 69.)
        let (code, out, stderr) = run_out(Some(&cs), op);
        assert_eq!(code, 77, "{op:?}: {out} {stderr}");
        assert!(
            stderr.contains("permission denied")
                && stderr.contains("not authorised")
                && stderr.contains(&format!("{path} refused"))
                && stderr.contains("--auth-file"),
            "{op:?}: {stderr}"
        );
        // Other digest credentials: told these do not pass, not to add --auth.
        let mut args = vec!["--auth", "digest:intruder:guess"];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(
            stderr.contains("does not admit these digest credentials") && !stderr.contains("--auth"),
            "{args:?}: {stderr}"
        );
        // An unknown scheme: AuthFailed, 77 too.
        let mut args = vec!["--auth", "nope:x"];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(stderr.contains("authentication failed"), "{args:?}: {stderr}");
    }
    assert_eq!(lock_nodes(&owner, path).len(), 1, "the holder's node is gone");
    g.release().unwrap();

    // Others may read but not delete: status works, break is refused by the
    // lock's node (the delete of its child), with 77.
    let shared = "/acl-ops/readable";
    let owner2 = owner_with(
        &server,
        &format!("owner:{SECRET}"),
        zk_framework::FixedAclProvider::creator_all_read_others(),
    );
    let lock = InterProcessMutex::new(&owner2, shared).unwrap();
    let g = lock.acquire().unwrap();
    let (code, out, stderr) = run_out(Some(&cs), &["status", shared]);
    assert_eq!(code, 0, "readable by others: {out} {stderr}");
    let (code, _, stderr) = run_out(Some(&cs), &["break", shared, "--yes"]);
    assert_eq!(code, 77, "{stderr}");
    assert!(
        stderr.contains(&format!("{shared} refused the delete of a child")),
        "{stderr}"
    );
    assert_eq!(lock_nodes(&owner2, shared).len(), 1);
    g.release().unwrap();
    owner.close();
    owner2.close();
}

/// Over mutual TLS: the subcommands with a certificate an x509 ACL does not
/// name exit 77 with a certificate hint (never "--auth"), as a run does; a
/// TLS refusal while connecting names its reason in every mode (69).
#[test]
fn subcommands_over_tls_refused_by_an_x509_acl_and_tls_reasons() {
    use zk_testing::tls::TestPki;
    let pki = TestPki::new("zk-lock refusal CA").unwrap();
    let server = TestingServer::start_tls(pki.server_tls().unwrap().require_client_cert(pki.ca_pem())).unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("tls-refusals");
    let ca = dir.path("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let (cert, key) = pki.client_cert("owner").unwrap().write_files(&dir.0, "owner").unwrap();
    let (other_cert, other_key) = pki
        .client_cert("someone-else")
        .unwrap()
        .write_files(&dir.0, "other")
        .unwrap();
    let (ca, cert, key, other_cert, other_key) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        other_cert.to_str().unwrap(),
        other_key.to_str().unwrap(),
    );
    let t = timing();
    let tls = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap();
    let owner = CuratorFramework::builder()
        .connect_string(cs.clone())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
        .acl_provider(zk_framework::FixedAclProvider::creator_all())
        .build()
        .unwrap();
    owner.block_until_connected(t.wait()).unwrap();
    let path = "/tls-acl/private";
    let lock = InterProcessMutex::new(&owner, path).unwrap();
    let g = lock.acquire().unwrap();

    let other = ["--tls-ca", ca, "--tls-cert", other_cert, "--tls-key", other_key];
    let ops: [&[&str]; 4] = [
        &["status", path],
        &["break", path, "--yes"],
        &["wait", path, "-w", "1s"],
        &["--timeout", "2s", path, "--", "true"],
    ];
    for op in ops {
        let mut args = other.to_vec();
        args.extend_from_slice(op);
        let (code, out, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{op:?}: {out} {stderr}");
        assert!(
            stderr.contains("permission denied")
                && stderr.contains("client certificate's identity (x509 CN=someone-else")
                && stderr.contains("--tls-cert")
                && !stderr.contains("--auth"),
            "{op:?}: {stderr}"
        );
    }
    g.release().unwrap();

    // No client certificate: the server refuses the TLS handshake, and
    // status says so (as a run does), not just "could not connect".
    for op in [&["status", path][..], &["-n", path, "--", "true"]] {
        let mut args = vec!["--connect-timeout", "2s", "--tls-ca", ca];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 69, "{op:?}: {stderr}");
        assert!(
            stderr.contains("TLS with") && stderr.contains("requires a client certificate"),
            "{op:?}: {stderr}"
        );
    }
    owner.close();
}

/// `--acl creator` makes the missing parents creator-only (as Curator does):
/// a second user cannot lock a sibling path, and the error names the parent
/// that refused. `--acl creator-nodes` keeps the lock's own nodes
/// creator-only and the parents open to others: the sibling lock works, the
/// first user's lock stays closed to the second.
#[test]
fn creator_nodes_leaves_parents_open_for_sibling_locks() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("creator-nodes");
    let alice = format!("digest:alice:{SECRET}");
    let bob = "digest:bob:other-pw";
    let admin = client_auth(&server, Some(&format!("alice:{SECRET}")));

    for (acl, parent) in [("creator", "/team-c"), ("creator-nodes", "/team-n")] {
        let held = format!("{parent}/deploy");
        let sibling = format!("{parent}/other");
        let (ready, go) = (dir.path(&format!("{acl}-ready")), dir.path(&format!("{acl}-go")));
        let hold = format!(
            "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
            ready = ready.display(),
            go = go.display()
        );
        let holder = spawn(
            Some(&cs),
            &["--auth", &alice, "--acl", acl, &held, "--", "sh", "-c", &hold],
        );
        wait_for_file(&ready);

        // Bob on a sibling path under the same parent.
        let (code, stderr, _) = run(
            Some(&cs),
            &["--auth", bob, "--acl", acl, "--timeout", "2s", &sibling, "--", "true"],
        );
        if acl == "creator" {
            assert_eq!(code, 77, "{acl}: {stderr}");
            assert!(
                stderr.contains(&format!("{parent} refused the creation of a child"))
                    && stderr.contains("is a parent of the lock's path")
                    && stderr.contains("--acl creator-nodes"),
                "{acl}: {stderr}"
            );
        } else {
            assert_eq!(code, 0, "{acl}: bob's sibling lock: {stderr}");
            // The parent: alice may do anything, others read and create.
            let (acl_of_parent, _) = admin.zookeeper_client().get_acl(parent).unwrap();
            assert!(
                acl_of_parent.contains(&zk_framework::Acl::world(
                    zk_framework::perms::READ | zk_framework::perms::CREATE
                )) && !acl_of_parent.contains(&zk_framework::Acl::world(zk_framework::perms::ALL)),
                "{acl_of_parent:?}"
            );
            // The lock's own path stays alice's alone.
            let (acl_of_lock, _) = admin.zookeeper_client().get_acl(&held).unwrap();
            assert_eq!(
                acl_of_lock,
                vec![zk_framework::Acl::digest("alice", SECRET, zk_framework::perms::ALL)]
            );
            let (code, stderr, _) = run(Some(&cs), &["--auth", bob, "--timeout", "2s", &held, "--", "true"]);
            assert_eq!(code, 77, "bob on alice's lock: {stderr}");
            assert!(stderr.contains(&format!("{held} refused")), "{stderr}");
        }
        std::fs::write(&go, b"").unwrap();
        let (status, stderr) = holder.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{acl}: {stderr}");
    }
    admin.close();
}

/// A connect string whose chroot does not exist: exit 69 at once with a
/// message naming the chroot and saying to create it (not a NoNode about a
/// lock node); once it exists, the same run works.
#[test]
fn a_missing_chroot_is_named_with_what_to_do() {
    let server = TestingServer::start().unwrap();
    let cs = format!("{}/no-such-root", server.connect_string());
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", "/locks/x", "--", "true"]);
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.contains("the chroot /no-such-root of the connect string does not exist")
            && stderr.contains("create it")
            && !stderr.contains("-lock-"),
        "{stderr}"
    );
    let c = client(&server);
    c.create().for_path("/no-such-root").unwrap();
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", "/locks/x", "--", "true"]);
    assert_eq!(code, 0, "{stderr}");
    c.close();
}

/// `status` reads a leader latch election (ours, Curator's layout) and shows
/// the leader; `break` deletes the leader's node, the latch reports the loss
/// and rejoins, and the next participant leads.
#[test]
fn status_and_break_understand_a_leader_latch_election() {
    use zk_recipes::leader::{LeaderEvent, LeaderLatch, NotLeaderReason};
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let (c1, c2) = (client(&server), client(&server));
    let t = timing();
    let path = "/elections/status";
    let a = LeaderLatch::builder(&c1, path).id("alpha").build().unwrap();
    let events = a.events();
    a.start().unwrap();
    assert!(a.await_leadership_for(t.wait()).unwrap());
    let b = LeaderLatch::builder(&c2, path).id("beta").build().unwrap();
    b.start().unwrap();
    assert!(wait_until(t.wait(), || lock_nodes(&c1, path).len() == 2));
    let (code, out, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.contains("leader latch election, led by unknown (\"alpha\"), 1 queued"),
        "{out}"
    );
    assert!(
        out.contains("leads") && out.contains("queued") && out.contains("latch"),
        "{out}"
    );
    let (code, _, stderr) = run_out(Some(&cs), &["break", "--yes", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(b.await_leadership_for(t.wait()).unwrap());
    let mut told = Vec::new();
    while let Ok(ev) = events.recv_timeout(t.wait()) {
        told.push(ev);
        if ev
            == (LeaderEvent::NotLeader {
                reason: NotLeaderReason::NodeDeleted,
            })
        {
            break;
        }
    }
    assert!(told.contains(&LeaderEvent::NotLeader {
        reason: NotLeaderReason::NodeDeleted
    }));
    // alpha rejoined behind beta.
    assert!(wait_until(t.wait(), || lock_nodes(&c1, path).len() == 2));
    assert!(a.check().is_err());
    a.close().unwrap();
    b.close().unwrap();
}
