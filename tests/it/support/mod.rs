//! The one support module of the root package's integration tests, built on
//! `zk_testing` ([`TestingServer`], [`wait_until`], [`Timing`]).
//!
//! * Here: the server on the backend `ZK_TEST_SERVER` selects, the timings
//!   (`ZK_TEST_TIMING`), logging, managed clients for the recipe tests, tree
//!   listings, a closed port, and running one test in a process of its own.
//! * [`framework`]: clients of the managed client whose every connection state
//!   is recorded, and state expectations with deadlines.
//! * [`plain`]: the plain client (`zk_framework::client`) over both backends,
//!   with the faults only the embedded server can inject.

pub mod framework;
pub mod plain;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::{ExponentialBackoffRetry, RetryOneTime};

#[allow(unused_imports)]
pub use zk_testing::{wait_until, Backend, TestingServer, Timing};

/// Logs through `env_logger` (`RUST_LOG`), captured per test.
pub fn init_log() {
    let _ = env_logger::builder().is_test(true).try_init();
}

/// The test timings, scaled by `ZK_TEST_TIMING`.
pub fn timing() -> Timing {
    Timing::from_env()
}

/// A server on the backend named by `ZK_TEST_SERVER` (embedded by default).
pub fn server() -> TestingServer {
    init_log();
    TestingServer::start().expect("start the test server (ZK_TEST_SERVER selects the backend)")
}

/// The embedded server, for faults only it can inject (lost replies, dropped
/// connections).
pub fn embedded_server() -> TestingServer {
    init_log();
    TestingServer::start_backend(Backend::Embedded).expect("start the embedded server")
}

/// A loopback port nothing listens on.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("local address").port()
}

// ---- managed clients for the recipe tests --------------------------------------------------

/// A started client with the session and connection timeouts tests use
/// (`ExponentialBackoffRetry(100 ms, 3)`).
pub fn client(server: &TestingServer) -> CuratorFramework {
    client_with(&server.connect_string(), None)
}

/// As [`client`], in namespace `ns`.
pub fn client_ns(server: &TestingServer, ns: &str) -> CuratorFramework {
    client_with(&server.connect_string(), Some(ns))
}

fn client_with(connect_string: &str, ns: Option<&str>) -> CuratorFramework {
    let t = timing();
    let mut b = CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(ns) = ns {
        b = b.namespace(ns);
    }
    let c = b.build().expect("build client");
    c.block_until_connected(t.wait()).expect("client connects");
    c
}

/// A client that is closed when dropped.
pub struct Client(pub CuratorFramework);

impl std::ops::Deref for Client {
    type Target = CuratorFramework;
    fn deref(&self) -> &CuratorFramework {
        &self.0
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// As [`client`] to `connect_string`, closed when dropped.
pub fn connect(connect_string: &str) -> Client {
    Client(client_with(connect_string, None))
}

/// A client closed when dropped that retries once (`RetryOneTime(100 ms)`).
pub fn connect_one_time(connect_string: &str) -> Client {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(RetryOneTime::new(Duration::from_millis(100)))
        .build()
        .expect("build client");
    c.block_until_connected(t.wait()).expect("client connects");
    Client(c)
}

/// The lock nodes left under `base` (containers excluded: only ephemerals).
pub fn lock_nodes(c: &CuratorFramework, base: &str) -> Vec<String> {
    tree(c, base)
        .into_iter()
        .filter(|p| {
            c.check_exists(p)
                .ok()
                .flatten()
                .is_some_and(|st| st.ephemeral_owner != 0)
        })
        .collect()
}

/// An operator breaking the lock of session `session` under `base`: every
/// ephemeral node of that session there is deleted (a semaphore's lease and
/// its internal-mutex node, each member of a multi-lock). Returns how many.
pub fn break_lock(admin: &CuratorFramework, base: &str, session: i64) -> usize {
    let owned: Vec<String> = tree(admin, base)
        .into_iter()
        .filter(|p| {
            admin
                .check_exists(p)
                .ok()
                .flatten()
                .is_some_and(|st| st.ephemeral_owner == session)
        })
        .collect();
    for p in &owned {
        admin.delete().for_path(p).expect("delete the held node");
    }
    owned.len()
}

/// The watches a session holds, from the server's own `wchc` (paths listed under
/// `0x<session>`).
pub fn watched_by(s: &TestingServer, session: i64) -> Vec<String> {
    let out = s.four_letter_word("wchc").unwrap();
    let mut paths = Vec::new();
    let mut ours = false;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix('\t') {
            if ours {
                paths.push(p.to_string());
            }
        } else if !line.is_empty() {
            ours = line.trim() == format!("0x{session:x}");
        }
    }
    paths
}

/// Waits (bounded) until no lock node is left under `base`.
pub fn no_orphans(c: &CuratorFramework, base: &str) {
    assert!(
        wait_until(timing().wait(), || lock_nodes(c, base).is_empty()),
        "orphan lock nodes under {base}: {:?}",
        lock_nodes(c, base)
    );
}

/// Children of `path` (empty if it does not exist).
pub fn lock_children(c: &CuratorFramework, path: &str) -> Vec<String> {
    match c.get_children(path) {
        Ok(k) => k,
        Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
        Err(e) => panic!("get_children {path}: {e}"),
    }
}

/// Recursively lists `path` through a client (works on both backends).
pub fn tree(client: &CuratorFramework, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(kids) = client.get_children(path) else {
        return out;
    };
    for k in kids {
        let p = if path == "/" {
            format!("/{k}")
        } else {
            format!("{path}/{k}")
        };
        out.push(p.clone());
        out.extend(tree(client, &p));
    }
    out
}

// ---- a test in a process of its own -------------------------------------------------------

/// Set in the child process [`in_own_process`] starts, to the test's name.
const OWN_PROCESS_ENV: &str = "ZK_IT_OWN_PROCESS";

/// Runs the test named `test` (its full name in this binary, e.g.
/// `fuzz_decoders::decoders`) alone in a child process of this test binary,
/// for tests that watch process-wide state (a panic hook counting every panic
/// in the process) and so must not share their process with other tests.
///
/// Returns `false` in that child: the caller runs its body there. Returns
/// `true` in the parent once the child ran exactly that one test and it
/// passed; panics, with the child's output, otherwise.
pub fn in_own_process(test: &str) -> bool {
    if std::env::var(OWN_PROCESS_ENV).is_ok_and(|v| v == test) {
        return false;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS_ENV, test)
        .stdin(Stdio::null())
        .output()
        .expect("run the test in a child process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(out.status.success(), "{test} failed in its own process: {}", out.status);
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the child process did not run exactly {test}"
    );
    true
}

/// Repeats a zero-timeout try on a lock that is free until it acquires, within
/// `limit`. A zero timeout gives its replies the deadline's grace
/// (`zk_framework::deadline::GRACE`, 20 ms, shared by every request of the
/// try); a loaded machine can answer later, and the try then cleanly says
/// `Ok(None)` and deletes its node in the background, so the caller tries again.
/// Any error ends the tries at once.
///
/// Returns the guard and the number of tries, or a description of the failure.
pub fn zero_timeout_acquires_free<G, E: std::fmt::Debug>(
    limit: Duration,
    mut attempt: impl FnMut() -> Result<Option<G>, E>,
) -> Result<(G, u32), String> {
    let mut tries = 0u32;
    let mut outcome: Option<Result<G, E>> = None;
    wait_until(limit, || {
        tries += 1;
        match attempt() {
            Ok(None) => false,
            Ok(Some(g)) => {
                outcome = Some(Ok(g));
                true
            }
            Err(e) => {
                outcome = Some(Err(e));
                true
            }
        }
    });
    match outcome {
        Some(Ok(g)) => Ok((g, tries)),
        Some(Err(e)) => Err(format!("{e:?}")),
        None => Err(format!("Ok(None) on a free lock, {tries} tries")),
    }
}

/// Repeats a zero-timeout try while it ends in `NoAnswer` (its replies came
/// later than the deadline's grace, `zk_framework::deadline::GRACE`: honest on
/// a loaded machine, and no verdict about the lock), within `timing().wait()`;
/// the first other outcome, or the last `NoAnswer`.
pub fn zero_try<T>(mut attempt: impl FnMut() -> Result<T, zk_recipes::Error>) -> Result<T, zk_recipes::Error> {
    let end = std::time::Instant::now() + timing().wait();
    loop {
        match attempt() {
            Err(zk_recipes::Error::NoAnswer { .. }) if std::time::Instant::now() < end => continue,
            r => return r,
        }
    }
}

/// A test of this binary running in a child process whose stdout is read line
/// by line (for a test that stops and resumes its child with signals). The
/// child is killed and reaped when this is dropped, so an assertion failing in
/// the parent never leaves it behind, stopped or looping.
pub struct ChildTest {
    child: std::process::Child,
    lines: crossbeam_channel::Receiver<String>,
}

impl ChildTest {
    /// Runs the test named `test` alone in a child process, with `env` set
    /// (the child sees it and plays its part).
    pub fn spawn(test: &str, env: (&str, &str)) -> ChildTest {
        use std::io::BufRead;
        let mut child = Command::new(std::env::current_exe().expect("current_exe"))
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(env.0, env.1)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("run the test in a child process");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        ChildTest { child, lines }
    }

    /// The child's process id, for `kill`.
    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// The child's next line containing `prefix`, from the prefix on (the
    /// harness prints "test NAME ... " before the test's own output, on the
    /// same line); panics when none comes within `within`.
    pub fn wait_for(&self, prefix: &str, within: Duration) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(within)
                .unwrap_or_else(|_| panic!("no {prefix} line within {within:?}"));
            if let Some(i) = line.find(prefix) {
                return line[i..].to_string();
            }
        }
    }

    /// Waits for the child to exit: whether it succeeded.
    pub fn succeeded(mut self) -> bool {
        self.child.wait().is_ok_and(|s| s.success())
    }
}

impl Drop for ChildTest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
