//! The support module of zk-lock's integration tests: locating and running
//! the binary (`CARGO_BIN_EXE_zk-lock`, or `ZK_LOCK_BIN`), scratch
//! directories, clients, lock nodes, critical sections logged by COMMAND and
//! checked for overlap, processes and signals; [`curator`]: a Curator (Java)
//! contender, when Debian's Curator jars exist.

pub mod curator;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_testing::{wait_until, TestingServer, Timing};

/// The zk-lock binary: `ZK_LOCK_BIN` when set, else the one cargo built for
/// this test (`CARGO_BIN_EXE_zk-lock`).
pub fn zk_lock_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var_os("ZK_LOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zk-lock")), PathBuf::from)
    })
}

pub fn timing() -> Timing {
    Timing::from_env()
}

/// A scratch directory for one test, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("zk-lock-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
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
pub struct Run {
    pub child: Child,
    pub stderr: PathBuf,
    pub stdout: PathBuf,
    pub started: Instant,
}

impl Run {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (bounded) for exit; returns the status and the stderr text.
    pub fn finish(mut self, timeout: Duration) -> (ExitStatus, String) {
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

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits (bounded) for exit; returns the status, stdout and stderr.
    pub fn finish_out(self, timeout: Duration) -> (ExitStatus, String, String) {
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
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What it printed on stderr so far.
    pub fn stderr_now(&self) -> String {
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

pub static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `zk-lock --connect <server> ARGS...` (no connect when `connect` is None).
pub fn spawn(connect: Option<&str>, args: &[&str]) -> Run {
    spawn_env(connect, args, &[])
}

/// As [`spawn`], with `env` added to zk-lock's environment.
pub fn spawn_env(connect: Option<&str>, args: &[&str], env: &[(&str, &str)]) -> Run {
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
pub fn run(connect: Option<&str>, args: &[&str]) -> (i32, String, Duration) {
    let r = spawn(connect, args);
    let started = r.started;
    let (status, stderr) = r.finish(timing().wait());
    let code = status
        .code()
        .unwrap_or_else(|| panic!("zk-lock killed by a signal: {status}; {stderr}"));
    (code, stderr, started.elapsed())
}

/// Runs zk-lock to completion; (exit code, stdout, stderr).
pub fn run_out(connect: Option<&str>, args: &[&str]) -> (i32, String, String) {
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

pub fn client(server: &TestingServer) -> CuratorFramework {
    client_auth(server, None)
}

/// A client with `digest` credentials `user:password`, if given.
pub fn client_auth(server: &TestingServer, digest: Option<&str>) -> CuratorFramework {
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
pub fn lock_nodes(c: &CuratorFramework, path: &str) -> Vec<String> {
    let mut v = c.get_children(path).unwrap_or_default();
    v.sort();
    v
}

pub fn wait_for_file(path: &Path) {
    assert!(
        wait_until(timing().wait(), || path.exists()),
        "{} did not appear",
        path.display()
    );
}

/// Waits for a pid a shell wrote with `echo $$ > file` (the file exists
/// before the line is in it) and returns it.
pub fn wait_for_pid(path: &Path) -> String {
    let read = || std::fs::read_to_string(path).ok().filter(|s| s.ends_with('\n'));
    assert!(
        wait_until(timing().wait(), || read().is_some()),
        "{} has no pid",
        path.display()
    );
    read().unwrap_or_default().trim().to_string()
}

/// A shell command that logs `NAME START <ns>`, sleeps, logs `NAME END <ns>`.
pub fn section_script(name: &str, log: &Path, sleep: &str) -> String {
    format!(
        "echo \"{name} START $(date +%s%N)\" >> '{log}'; sleep {sleep}; echo \"{name} END $(date +%s%N)\" >> '{log}'",
        log = log.display()
    )
}

/// A critical section from a log.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: String,
    pub start: u128,
    pub end: u128,
}

/// Parses `NAME START ns` / `NAME END ns` lines (any number per name, in order).
pub fn sections(log: &Path) -> Vec<Section> {
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

pub fn overlap(a: &Section, b: &Section) -> bool {
    a.start < b.end && b.start < a.end
}

pub fn assert_exclusive(all: &[Section]) {
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(!overlap(a, b), "critical sections overlapped: {a:?} and {b:?}");
        }
    }
}

/// Runs a zero-timeout zk-lock (`-n`, `--timeout 0`) on a free lock until it
/// exits 0, with a deadline. Its one attempt's replies get the deadline's
/// grace (20 ms, `zk_framework::deadline::GRACE`), which a loaded machine can
/// exceed (seen on Apache under load 12): that try then ends without
/// running COMMAND (`ran` says whether COMMAND's effect is there), as "not
/// acquired" (exit 1) or, when a reply came after the grace, honestly as "no
/// answer" (exit 69), and the next try gets the lock.
pub fn run_zero_timeout_until_acquired(cs: &str, args: &[&str], ran: impl Fn() -> bool) {
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

/// Expires the session that owns `node` (embedded), or deletes the node
/// (Apache: the session password is not known outside zk-lock); both are a
/// certain loss of the lock.
pub fn take_lock_away(server: &TestingServer, c: &CuratorFramework, node: &str) {
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

pub fn wait_for_single_node(c: &CuratorFramework, path: &str) -> String {
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

pub fn process_gone(pid: &str) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Dead: no `/proc/<pid>`, or a zombie not reaped yet (an orphan's reaper,
/// PID 1 of a container, may be slow or never reap it).
pub fn process_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

pub fn read_pid(file: &Path) -> String {
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

pub fn send_signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

pub const SECRET: &str = "s3cret-Pw-never-printed";

/// A holder script: touches READY, saves its environment, waits for GO.
pub fn holding_script(ready: &Path, env_dump: &Path, go: &Path) -> String {
    format!(
        "env > '{env}'; touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        env = env_dump.display(),
        ready = ready.display(),
        go = go.display()
    )
}

/// The participant objects of `status --json` output, in order.
pub fn json_participants(json: &str) -> Vec<String> {
    let list = json
        .split_once("\"participants\":[")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no participants in {json}"));
    list.split("{\"node\":").skip(1).map(str::to_string).collect()
}
