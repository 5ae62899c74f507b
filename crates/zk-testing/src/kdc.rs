//! A throw-away MIT Kerberos KDC on loopback, for tests of Kerberos (SASL
//! GSSAPI) against real ZooKeeper: Debian's `krb5-kdc`, `krb5-admin-server`
//! and `krb5-user` binaries (`kdb5_util`, `kadmin.local`, `krb5kdc`, `kinit`,
//! `klist`), nothing system-wide.
//!
//! [`Kdc::start`] makes a realm ([`REALM`], `EXAMPLE.TEST`) in a fresh
//! temporary directory: its database, a `krb5.conf` (which is also the KDC's
//! profile) naming the KDC at `127.0.0.1:<a free port>` over TCP
//! (`udp_preference_limit = 1`), the principals `zookeeper/localhost`,
//! `zookeeper/127.0.0.1` and `client` with a keytab each, and starts
//! `krb5kdc` in the foreground as a child process. More principals on
//! request ([`Kdc::add_principal`]), tickets in a cache file of their own
//! ([`Kdc::kinit`]), a stop and a restart on the same port ("KDC down"), a
//! pause (SIGSTOP: a KDC that accepts connections and never answers).
//! Dropping it kills the KDC and removes the directory (kept when
//! `ZK_TEST_KEEP_DIRS` is set).
//!
//! Kerberos reads its configuration from the environment: a JVM gets
//! `-Djava.security.krb5.conf=<Kdc::krb5_conf>` (the Apache launcher's
//! [`ApacheSasl::kerberos`](crate::apache::ApacheSasl::kerberos) does it);
//! a process using the system's Kerberos library needs `KRB5_CONFIG` set
//! ([`Kdc::env`] for a child process, [`Kdc::set_process_env`] for the
//! current one: environment variables are process-wide, so a test that sets
//! them runs in a process of its own,
//! [`in_own_process`](crate::support::in_own_process)).
//!
//! Tests call [`available_or_skip`] first: without the binaries they print a
//! line and pass, unless `ZK_TEST_REQUIRE_KDC` is set (not empty, not `0`),
//! as CI sets it: then a missing KDC is a failure.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, ErrorKind};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// The realm every [`Kdc`] serves.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_testing::kdc::REALM, "EXAMPLE.TEST");
/// ```
pub const REALM: &str = "EXAMPLE.TEST";

/// The environment variable that makes a missing KDC a test failure
/// ([`available_or_skip`]).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_testing::kdc::REQUIRE_ENV, "ZK_TEST_REQUIRE_KDC");
/// ```
pub const REQUIRE_ENV: &str = "ZK_TEST_REQUIRE_KDC";

/// The binaries a [`Kdc`] runs, and the Debian package of each.
const BINARIES: &[(&str, &str)] = &[
    ("kdb5_util", "krb5-kdc"),
    ("krb5kdc", "krb5-kdc"),
    ("kadmin.local", "krb5-admin-server"),
    ("kinit", "krb5-user"),
    ("klist", "krb5-user"),
];

/// How long the KDC gets to listen after a start.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

fn find_binary(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // The admin tools are in /usr/sbin, which a user's PATH may lack.
    dirs.extend(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(name)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The binaries that are missing, with their Debian packages.
fn missing_binaries() -> Vec<String> {
    BINARIES
        .iter()
        .filter(|(b, _)| find_binary(b).is_none())
        .map(|(b, p)| format!("{b} ({p})"))
        .collect()
}

/// Whether a [`Kdc`] can start here: MIT krb5's KDC, admin and user tools are
/// installed (Debian: `krb5-kdc krb5-admin-server krb5-user`).
///
/// # Examples
///
/// ```
/// if !zk_testing::kdc::available() {
///     println!("no KDC here");
/// }
/// ```
pub fn available() -> bool {
    missing_binaries().is_empty()
}

/// For a test that needs a KDC: `true` when it can run; otherwise prints that
/// `test` is skipped (and what is missing) and returns `false`, unless
/// `ZK_TEST_REQUIRE_KDC` is set (not empty, not `0`), as CI sets it: then a
/// missing KDC is a failure.
///
/// # Panics
///
/// When `ZK_TEST_REQUIRE_KDC` asks for a KDC and a binary is missing.
///
/// # Examples
///
/// ```no_run
/// if !zk_testing::kdc::available_or_skip("my_kerberos_test") {
///     return;
/// }
/// ```
pub fn available_or_skip(test: &str) -> bool {
    let missing = missing_binaries();
    if missing.is_empty() {
        return true;
    }
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{test}: {REQUIRE_ENV} is set but the KDC's binaries are missing: {}",
        missing.join(", ")
    );
    println!(
        "{test}: skipped (no MIT KDC: missing {}; apt-get install krb5-kdc krb5-admin-server krb5-user)",
        missing.join(", ")
    );
    false
}

/// A throw-away MIT KDC for realm [`REALM`] on `127.0.0.1` (see the module
/// documentation).
///
/// # Examples
///
/// ```no_run
/// use zk_testing::kdc::{self, Kdc};
///
/// if !kdc::available_or_skip("doc") {
///     return Ok(());
/// }
/// let kdc = Kdc::start()?;
/// assert!(kdc.client_keytab().is_file());
/// let cache = kdc.kinit("client", None)?; // FILE:<dir>/cc-1
/// assert!(kdc.has_valid_ticket(&cache));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Kdc {
    dir: PathBuf,
    port: u16,
    conf: PathBuf,
    krb5kdc: PathBuf,
    kadmin: PathBuf,
    kinit: PathBuf,
    klist: PathBuf,
    child: Mutex<Option<Child>>,
    caches: AtomicU64,
}

impl fmt::Debug for Kdc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kdc")
            .field("realm", &REALM)
            .field("port", &self.port)
            .field("dir", &self.dir)
            .field("running", &self.is_running())
            .finish()
    }
}

fn make_temp_dir() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zk-testing-kdc-{}-{n}-{nanos:08x}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A loopback port free for both TCP and UDP (the KDC listens on both).
fn free_port() -> io::Result<u16> {
    for _ in 0..50 {
        let tcp = TcpListener::bind("127.0.0.1:0")?;
        let port = tcp.local_addr()?.port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        ErrorKind::AddrInUse,
        "no loopback port free for both TCP and UDP",
    ))
}

fn krb5_conf(dir: &Path, port: u16) -> String {
    let d = dir.display();
    format!(
        "[libdefaults]\n\
         \x20default_realm = {REALM}\n\
         \x20dns_lookup_realm = false\n\
         \x20dns_lookup_kdc = false\n\
         \x20rdns = false\n\
         \x20udp_preference_limit = 1\n\
         \x20ticket_lifetime = 24h\n\
         \x20forwardable = false\n\
         [realms]\n\
         \x20{REALM} = {{\n\
         \x20 kdc = 127.0.0.1:{port}\n\
         \x20 database_name = {d}/db/principal\n\
         \x20 key_stash_file = {d}/db/stash\n\
         \x20 acl_file = {d}/db/kadm5.acl\n\
         \x20 kdc_listen = 127.0.0.1:{port}\n\
         \x20 kdc_tcp_listen = 127.0.0.1:{port}\n\
         \x20 kdc_ports = {port}\n\
         \x20 kdc_tcp_ports = {port}\n\
         \x20}}\n\
         [logging]\n\
         \x20kdc = FILE:{d}/kdc.log\n\
         \x20default = FILE:{d}/krb5.log\n"
    )
}

/// `name` with the realm appended when it has none.
fn full(name: &str) -> String {
    if name.contains('@') {
        name.to_string()
    } else {
        format!("{name}@{REALM}")
    }
}

fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}; stdout: {}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    )
}

impl Kdc {
    /// Makes the realm [`REALM`] in a fresh temporary directory (database,
    /// `krb5.conf`, the principals `zookeeper/localhost`,
    /// `zookeeper/127.0.0.1` and `client` with a keytab each) and starts the
    /// KDC on a free loopback port, waiting (up to 20 s) until it accepts
    /// connections.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when a binary is missing (check
    /// [`available_or_skip`] first); the error of a tool that failed (its
    /// output quoted); [`ErrorKind::TimedOut`] when the KDC does not listen
    /// in time (the end of its log quoted).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert_eq!(kdc.principal("client"), "client@EXAMPLE.TEST");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start() -> io::Result<Kdc> {
        let missing = missing_binaries();
        if !missing.is_empty() {
            return Err(io::Error::new(
                ErrorKind::NotFound,
                format!("the KDC's binaries are missing: {}", missing.join(", ")),
            ));
        }
        let bin = |n: &str| find_binary(n).ok_or_else(|| io::Error::new(ErrorKind::NotFound, n.to_string()));
        let dir = make_temp_dir()?;
        let kdc = (|| {
            fs::create_dir_all(dir.join("db"))?;
            fs::create_dir_all(dir.join("keytabs"))?;
            let port = free_port()?;
            let conf = dir.join("krb5.conf");
            fs::write(&conf, krb5_conf(&dir, port))?;
            fs::write(dir.join("db/kadm5.acl"), "")?;
            let kdc = Kdc {
                port,
                conf,
                krb5kdc: bin("krb5kdc")?,
                kadmin: bin("kadmin.local")?,
                kinit: bin("kinit")?,
                klist: bin("klist")?,
                child: Mutex::new(None),
                caches: AtomicU64::new(0),
                dir: dir.clone(),
            };
            // A random master password: the database lives as long as the test.
            let master = format!("{:x}{:x}", std::process::id(), kdc.nanos());
            let out = kdc
                .command(&bin("kdb5_util")?)
                .args(["create", "-s", "-r", REALM, "-P", &master])
                .output()?;
            if !out.status.success() {
                return Err(io::Error::other(describe("kdb5_util create", &out)));
            }
            for p in ["zookeeper/localhost", "zookeeper/127.0.0.1", "client"] {
                kdc.add_principal(p)?;
            }
            kdc.spawn()?;
            Ok(kdc)
        })();
        if kdc.is_err() && !keep_dirs() {
            let _ = fs::remove_dir_all(&dir);
        }
        kdc
    }

    fn nanos(&self) -> u32 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    }

    /// A command of the krb5 tools, with this realm's configuration.
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.env("KRB5_CONFIG", &self.conf)
            .env("KRB5_KDC_PROFILE", &self.conf)
            .stdin(Stdio::null())
            .current_dir(&self.dir);
        c
    }

    /// Runs one `kadmin.local` query; it exits 0 even when the query fails,
    /// so its output must contain `expect`.
    fn kadmin(&self, query: &str, expect: &str) -> io::Result<()> {
        let out = self.command(&self.kadmin).args(["-r", REALM, "-q", query]).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && text.contains(expect) {
            Ok(())
        } else {
            Err(io::Error::other(describe(&format!("kadmin.local -q {query:?}"), &out)))
        }
    }

    fn spawn(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        if let Some(c) = guard.as_mut() {
            if c.try_wait()?.is_none() {
                return Ok(());
            }
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("krb5kdc.out"))?;
        let child = self
            .command(&self.krb5kdc)
            .args(["-n", "-r", REALM])
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()?;
        *guard = Some(child);
        drop(guard);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&([127, 0, 0, 1], self.port).into(), Duration::from_millis(200)).is_ok() {
                log::debug!("KDC for {REALM} on 127.0.0.1:{} in {}", self.port, self.dir.display());
                return Ok(());
            }
            let exited = self
                .child
                .lock()
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
                .map(|s| s.to_string());
            if exited.is_some() || Instant::now() >= deadline {
                let _ = self.stop();
                let log = fs::read_to_string(self.dir.join("krb5kdc.out")).unwrap_or_default()
                    + &fs::read_to_string(self.log_path()).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                return Err(io::Error::new(
                    if exited.is_some() {
                        ErrorKind::Other
                    } else {
                        ErrorKind::TimedOut
                    },
                    format!(
                        "krb5kdc on 127.0.0.1:{} {}; last lines:\n{}",
                        self.port,
                        exited.map_or("did not listen in time".to_string(), |s| format!("exited ({s})")),
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    ),
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The realm, [`REALM`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert_eq!(kdc.realm(), "EXAMPLE.TEST");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn realm(&self) -> &'static str {
        REALM
    }

    /// `name` as a full principal: the realm appended when it has none.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert_eq!(kdc.principal("zookeeper/localhost"), "zookeeper/localhost@EXAMPLE.TEST");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn principal(&self, name: &str) -> String {
        full(name)
    }

    /// The KDC's port on `127.0.0.1` (TCP and UDP), kept across
    /// [`stop`](Kdc::stop) and [`restart`](Kdc::restart).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(std::net::TcpStream::connect(("127.0.0.1", kdc.port())).is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `krb5.conf` to give clients and servers (`KRB5_CONFIG`,
    /// `-Djava.security.krb5.conf`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(std::fs::read_to_string(kdc.krb5_conf())?.contains("EXAMPLE.TEST"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn krb5_conf(&self) -> &Path {
        &self.conf
    }

    /// The KDC's directory (database, keytabs, caches, logs).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(kdc.dir().join("krb5.conf").is_file());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The KDC's log (`[logging] kdc`): every request and its answer.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let log = std::fs::read_to_string(kdc.log_path()).unwrap_or_default();
    /// # let _ = log;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("kdc.log")
    }

    /// The keytab made for `principal` by [`start`](Kdc::start) or
    /// [`add_principal`](Kdc::add_principal) (a path in the KDC's
    /// directory; it does not exist for a principal never made).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(kdc.keytab("zookeeper/localhost").is_file());
    /// assert!(!kdc.keytab("nobody").exists());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn keytab(&self, principal: &str) -> PathBuf {
        let file: String = full(principal)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '@' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join("keytabs").join(format!("{file}.keytab"))
    }

    /// The keytab of `zookeeper/<host>` (`localhost` or `127.0.0.1`), for
    /// the server.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(kdc.server_keytab("127.0.0.1").is_file());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn server_keytab(&self, host: &str) -> PathBuf {
        self.keytab(&format!("zookeeper/{host}"))
    }

    /// The keytab of `client`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(kdc.client_keytab().is_file());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_keytab(&self) -> PathBuf {
        self.keytab("client")
    }

    /// Makes the principal `name` (the realm appended when it has none) with
    /// a random key and writes its keytab ([`keytab`](Kdc::keytab)), which
    /// it returns. Works while the KDC is stopped too (the database is a
    /// file).
    ///
    /// # Errors
    ///
    /// `kadmin.local` failing (an existing principal, a bad name): its
    /// output quoted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let keytab = kdc.add_principal("alice")?;
    /// assert_eq!(keytab, kdc.keytab("alice@EXAMPLE.TEST"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn add_principal(&self, name: &str) -> io::Result<PathBuf> {
        let p = full(name);
        self.kadmin(&format!("addprinc -randkey {p}"), &format!("Principal \"{p}\" created"))?;
        let keytab = self.keytab(&p);
        // ktadd gives the principal a new random key and writes it.
        self.kadmin(&format!("ktadd -k {} {p}", keytab.display()), "added to keytab")?;
        Ok(keytab)
    }

    /// Gives `name` a new random key, which its keytab does not have: the
    /// keytab is stale from then on (a client using it is refused by the KDC).
    ///
    /// # Errors
    ///
    /// `kadmin.local` failing (an unknown principal): its output quoted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.add_principal("stale")?;
    /// kdc.rotate_key("stale")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn rotate_key(&self, name: &str) -> io::Result<()> {
        let p = full(name);
        self.kadmin(&format!("cpw -randkey {p}"), "randomized")
    }

    /// Removes the principal `name` from the KDC's database (its keytab
    /// stays): the KDC then answers requests for it as for a principal it
    /// never knew.
    ///
    /// # Errors
    ///
    /// `kadmin.local` failing (an unknown principal): its output quoted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let keytab = kdc.add_principal("ghost")?;
    /// kdc.delete_principal("ghost")?;
    /// assert!(keytab.is_file());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn delete_principal(&self, name: &str) -> io::Result<()> {
        let p = full(name);
        self.kadmin(&format!("delprinc -force {p}"), &format!("Principal \"{p}\" deleted"))
    }

    /// Gets a ticket-granting ticket for `principal` from its keytab into a
    /// new credential cache file in the KDC's directory, lasting `lifetime`
    /// (whole seconds; the realm's 24 h when `None`), and returns the cache's
    /// name (`FILE:<path>`) for `KRB5CCNAME` or a client's settings.
    ///
    /// # Errors
    ///
    /// `kinit` failing (the KDC down, no keytab for `principal`): its output
    /// quoted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let cache = kdc.kinit("client", Some(std::time::Duration::from_secs(5)))?;
    /// assert!(cache.starts_with("FILE:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kinit(&self, principal: &str, lifetime: Option<Duration>) -> io::Result<String> {
        let p = full(principal);
        let n = self.caches.fetch_add(1, Ordering::Relaxed) + 1;
        let cache = format!("FILE:{}", self.dir.join(format!("cc-{n}")).display());
        let mut cmd = self.command(&self.kinit);
        cmd.arg("-c").arg(&cache);
        if let Some(l) = lifetime {
            cmd.arg("-l").arg(format!("{}s", l.as_secs().max(1)));
        }
        cmd.arg("-k").arg("-t").arg(self.keytab(&p)).arg(&p);
        let out = cmd.output()?;
        if out.status.success() {
            Ok(cache)
        } else {
            Err(io::Error::other(describe(&format!("kinit {p}"), &out)))
        }
    }

    /// Whether the credential cache `cache` holds a ticket that has not
    /// expired (`klist -s`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(!kdc.has_valid_ticket("FILE:/nonexistent"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn has_valid_ticket(&self, cache: &str) -> bool {
        self.command(&self.klist)
            .args(["-s", "-c", cache])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Whether the KDC process is alive (it may be paused).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// assert!(kdc.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.child
            .lock()
            .as_mut()
            .is_some_and(|c| c.try_wait().is_ok_and(|s| s.is_none()))
    }

    /// Stops the KDC (SIGKILL, then reaped): "KDC down", a port that refuses
    /// connections. Does nothing when it is not running.
    ///
    /// # Errors
    ///
    /// The process cannot be killed or reaped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.stop()?;
    /// assert!(std::net::TcpStream::connect(("127.0.0.1", kdc.port())).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        if let Some(mut c) = guard.take() {
            if c.try_wait()?.is_none() {
                match c.kill() {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::InvalidInput => {}
                    Err(e) => {
                        *guard = Some(c);
                        return Err(e);
                    }
                }
            }
            c.wait()?;
        }
        Ok(())
    }

    /// Starts the KDC again on the same port (stopping it first if it runs)
    /// and waits until it accepts connections.
    ///
    /// # Errors
    ///
    /// As [`start`](Kdc::start): the KDC exits or does not listen in time.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.stop()?;
    /// kdc.restart()?;
    /// assert!(kdc.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&self) -> io::Result<()> {
        self.stop()?;
        self.spawn()
    }

    /// Freezes the KDC (SIGSTOP): the kernel still accepts connections on its
    /// port, and nothing answers them, like a KDC that hangs. Undo with
    /// [`resume`](Kdc::resume) (a drop also ends a paused KDC).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] when the KDC is not running; `kill` failing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.pause()?;
    /// kdc.resume()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&self) -> io::Result<()> {
        self.signal("STOP")
    }

    /// Lets a KDC frozen by [`pause`](Kdc::pause) go on (SIGCONT).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] when the KDC is not running; `kill` failing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.resume()?; // a running KDC goes on running
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&self) -> io::Result<()> {
        self.signal("CONT")
    }

    fn signal(&self, sig: &str) -> io::Result<()> {
        let pid = {
            let mut guard = self.child.lock();
            let running = match guard.as_mut() {
                Some(c) => c.try_wait()?.is_none().then(|| c.id()),
                None => None,
            };
            running.ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "the KDC is not running"))?
        };
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill -{sig} {pid}: {status}")))
        }
    }

    /// The environment a process needs to use this KDC through the system's
    /// Kerberos library: `KRB5_CONFIG` (for [`Command::envs`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let status = std::process::Command::new("klist").envs(kdc.env()).arg("-s").status()?;
    /// # let _ = status;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![("KRB5_CONFIG", self.conf.clone().into_os_string())]
    }

    /// Sets [`env`](Kdc::env) in this process's environment, and
    /// `KRB5CCNAME` to `cache` when given (the process's default credential
    /// cache), for the system's Kerberos library that a client in this
    /// process uses.
    ///
    /// The environment is process-wide and C code reads it without Rust's
    /// lock: call this in a test that runs in a process of its own
    /// ([`in_own_process`](crate::support::in_own_process)) before it starts
    /// any thread, and start one `Kdc` per such process.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// kdc.set_process_env(None);
    /// assert_eq!(std::env::var_os("KRB5_CONFIG").unwrap(), kdc.krb5_conf().as_os_str());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_process_env(&self, cache: Option<&str>) {
        for (k, v) in self.env() {
            std::env::set_var(k, v);
        }
        if let Some(c) = cache {
            std::env::set_var("KRB5CCNAME", c);
        }
    }
}

fn keep_dirs() -> bool {
    std::env::var_os("ZK_TEST_KEEP_DIRS").is_some()
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let _ = self.stop();
        if !keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_names_the_kdc_on_loopback_over_tcp() {
        let conf = krb5_conf(Path::new("/tmp/k"), 12345);
        for line in [
            " default_realm = EXAMPLE.TEST",
            " udp_preference_limit = 1",
            "  kdc = 127.0.0.1:12345",
            "  kdc_tcp_ports = 12345",
            "  database_name = /tmp/k/db/principal",
        ] {
            assert!(conf.lines().any(|l| l == line), "{line:?} not in\n{conf}");
        }
    }

    #[test]
    fn names_get_the_realm_and_keytabs_a_safe_file_name() {
        assert_eq!(full("client"), "client@EXAMPLE.TEST");
        assert_eq!(full("x@OTHER"), "x@OTHER");
    }
}
