//! Helpers every crate's integration tests share (they need only this crate
//! and std): the server on the backend `ZK_TEST_SERVER` selects, the timings
//! `ZK_TEST_TIMING` scales, logging captured per test, a closed port, the
//! watches a session holds, a zero-timeout try repeated until it acquires,
//! and a test run in a process of its own ([`in_own_process`],
//! [`ChildTest`]).
//!
//! Helpers that need a client (`zk_framework`'s) live in the workspace's
//! unpublished test-support crate, `crates/zk-test-support`, or beside the
//! one crate's tests that use them; see `docs/testing.md`, "Where does my
//! test go".
//!
//! # Examples
//!
//! ```
//! use zk_testing::support::{server, timing, wait_until};
//! let s = server(); // the embedded server unless ZK_TEST_SERVER=apache
//! assert!(wait_until(timing().wait(), || s.four_letter_word("ruok").is_ok()));
//! ```

use std::io::BufRead;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crossbeam_channel::Receiver;

pub use crate::{wait_until, Backend, TestingServer, Timing};

/// Logs through `env_logger` (`RUST_LOG`), captured per test; safe to call
/// any number of times.
///
/// # Examples
///
/// ```
/// zk_testing::support::init_log();
/// zk_testing::support::init_log();
/// ```
pub fn init_log() {
    let _ = env_logger::builder().is_test(true).try_init();
}

/// The test timings, scaled by `ZK_TEST_TIMING` ([`Timing::from_env`]).
///
/// # Examples
///
/// ```
/// let t = zk_testing::support::timing();
/// assert!(t.wait() >= t.connection());
/// ```
pub fn timing() -> Timing {
    Timing::from_env()
}

/// A server on the backend named by `ZK_TEST_SERVER` (embedded by default),
/// with logging initialised.
///
/// # Panics
///
/// When the server does not start (a bad `ZK_TEST_SERVER`, or Apache selected
/// and not installed).
///
/// # Examples
///
/// ```
/// let s = zk_testing::support::server();
/// assert!(s.connect_string().starts_with("127.0.0.1:"));
/// ```
pub fn server() -> TestingServer {
    init_log();
    TestingServer::start().expect("start the test server (ZK_TEST_SERVER selects the backend)")
}

/// The embedded server whatever `ZK_TEST_SERVER` says, for faults only it can
/// inject (lost replies, dropped connections).
///
/// # Panics
///
/// When the server does not start.
///
/// # Examples
///
/// ```
/// let s = zk_testing::support::embedded_server();
/// assert!(s.embedded().is_some());
/// ```
pub fn embedded_server() -> TestingServer {
    init_log();
    TestingServer::start_backend(Backend::Embedded).expect("start the embedded server")
}

/// A loopback port nothing listens on (bound once, then released).
///
/// # Examples
///
/// ```
/// let port = zk_testing::support::closed_port();
/// assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
/// ```
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("local address").port()
}

/// The watches a session holds, from the server's own `wchc` (the paths listed
/// under `0x<session>`).
///
/// # Panics
///
/// When the server does not answer `wchc`.
///
/// # Examples
///
/// ```
/// let s = zk_testing::support::server();
/// assert!(zk_testing::support::watched_by(&s, 0x1234).is_empty());
/// ```
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

/// Repeats a zero-timeout try on a lock that is free until it acquires, within
/// `limit`. A zero timeout gives its replies the deadline's grace
/// (`zk_framework::deadline::GRACE`, 20 ms, shared by every request of the
/// try); a loaded machine can answer later, and the try then cleanly says
/// `Ok(None)` and deletes its node in the background, so the caller tries again.
/// Any error ends the tries at once.
///
/// Returns the guard and the number of tries, or a description of the failure.
///
/// # Errors
///
/// The first error of a try, or `Ok(None)` on every try until `limit`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zk_testing::support::zero_timeout_acquires_free;
/// let mut n = 0;
/// let r = zero_timeout_acquires_free(Duration::from_secs(5), || {
///     n += 1;
///     Ok::<_, ()>(if n < 3 { None } else { Some("guard") })
/// });
/// assert_eq!(r, Ok(("guard", 3)));
/// let never = zero_timeout_acquires_free(Duration::from_millis(10), || Ok::<Option<()>, ()>(None));
/// assert!(never.is_err());
/// ```
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

// ---- a test in a process of its own -------------------------------------------------------

/// Set in the child process [`in_own_process`] starts, to the test's name.
const OWN_PROCESS_ENV: &str = "ZK_IT_OWN_PROCESS";

/// Runs the test named `test` (its full name in the running test binary, e.g.
/// `fuzz_wire::the_client_survives_a_lying_server_and_recovers`) alone in a
/// child process of this binary, for tests that watch process-wide state (a
/// panic hook counting every panic in the process) and so must not share
/// their process with other tests.
///
/// Returns `false` in that child: the caller runs its body there. Returns
/// `true` in the parent once the child ran exactly that one test and it
/// passed.
///
/// # Panics
///
/// In the parent, with the child's output, when the child failed or did not
/// run exactly that test.
///
/// # Examples
///
/// ```no_run
/// #[test]
/// fn counts_every_panic() {
///     if zk_testing::support::in_own_process("my_suite::counts_every_panic") {
///         return; // the child ran it and passed
///     }
///     // The body, alone in its process.
/// }
/// ```
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

/// A test of the running test binary in a child process whose stdout is read
/// line by line (for a test that stops and resumes its child with signals).
/// The child is killed and reaped when this is dropped, so an assertion
/// failing in the parent never leaves it behind, stopped or looping.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_testing::support::ChildTest;
/// // The parent: run `suite::the_test` again with ROLE=child set; it prints "READY".
/// let child = ChildTest::spawn("suite::the_test", ("ROLE", "child"));
/// let line = child.wait_for("READY", Duration::from_secs(10));
/// assert!(line.starts_with("READY"));
/// assert!(child.succeeded());
/// ```
pub struct ChildTest {
    child: Child,
    lines: Receiver<String>,
}

impl std::fmt::Debug for ChildTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildTest").field("pid", &self.child.id()).finish()
    }
}

impl ChildTest {
    /// Runs the test named `test` alone in a child process, with `env` set
    /// (the child sees it and plays its part).
    ///
    /// # Panics
    ///
    /// When the child cannot be started.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let child = zk_testing::support::ChildTest::spawn("suite::the_test", ("ROLE", "child"));
    /// # drop(child);
    /// ```
    pub fn spawn(test: &str, env: (&str, &str)) -> ChildTest {
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let child = zk_testing::support::ChildTest::spawn("suite::the_test", ("ROLE", "child"));
    /// let pid: u32 = child.pid().parse().unwrap();
    /// # let _ = pid;
    /// ```
    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// The child's next line containing `prefix`, from the prefix on (the
    /// harness prints "test NAME ... " before the test's own output, on the
    /// same line); each line read may take up to `within`.
    ///
    /// # Panics
    ///
    /// When no such line comes within `within`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let child = zk_testing::support::ChildTest::spawn("suite::the_test", ("ROLE", "child"));
    /// let session = child.wait_for("SESSION ", Duration::from_secs(10));
    /// # let _ = session;
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let child = zk_testing::support::ChildTest::spawn("suite::the_test", ("ROLE", "child"));
    /// assert!(child.succeeded());
    /// ```
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

/// A stand-in for a ZooKeeper server older than 3.6: it accepts one
/// connection, completes the handshake (session `0x35`, timeout 6 s) and
/// answers every request with `Unimplemented` (-6), a ping or a close with
/// success, until the client goes or `idle` passes without a frame. Gives
/// its address and the thread serving it.
///
/// # Examples
///
/// ```
/// let (addr, served) = zk_testing::support::pre_3_6_server(std::time::Duration::from_millis(50));
/// assert!(addr.starts_with("127.0.0.1:"));
/// # drop(std::net::TcpStream::connect(&addr));
/// # served.join().unwrap();
/// ```
pub fn pre_3_6_server(idle: Duration) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{ErrorKind, Read, Write};
    use zk_proto::frame::{frame, FrameBuffer, DEFAULT_MAX_FRAME};
    use zk_proto::jute::Encode;
    use zk_proto::{ConnectResponse, OpCode, ReplyHeader};

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("its address").to_string();
    let served = std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else { return };
        let _ = s.set_read_timeout(Some(idle));
        let mut fb = FrameBuffer::new(DEFAULT_MAX_FRAME);
        let mut buf = vec![0u8; 64 * 1024];
        let mut handshaken = false;
        loop {
            while let Ok(Some(f)) = fb.next_frame() {
                let out = if !handshaken {
                    handshaken = true;
                    frame(|o| {
                        ConnectResponse {
                            protocol_version: 0,
                            timeout: 6000,
                            session_id: 0x35,
                            passwd: vec![1; 16],
                            read_only: Some(false),
                        }
                        .encode(o)
                    })
                } else if f.len() < 8 {
                    return;
                } else {
                    let xid = i32::from_be_bytes([f[0], f[1], f[2], f[3]]);
                    let op = i32::from_be_bytes([f[4], f[5], f[6], f[7]]);
                    let err = if op == OpCode::CloseSession.code() || xid == -2 {
                        0
                    } else {
                        -6
                    };
                    frame(|o| ReplyHeader { xid, zxid: 1, err }.encode(o))
                };
                if s.write_all(&out).is_err() {
                    return;
                }
            }
            match s.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => fb.extend(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => return,
                Err(_) => return,
            }
        }
    });
    (addr, served)
}
