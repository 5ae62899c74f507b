//! Real Apache ZooKeeper servers run as child processes, for tests that must run against the
//! reference implementation (and for fault injection: kill, stop, restart, pause).
//!
//! The servers come from Debian's `zookeeper` package (jars in `/usr/share/java`) and run
//! under the `java` found on `PATH` (or `$JAVA_HOME/bin/java`). Call [`available`] first and
//! skip the test when it returns `false`.
//!
//! Every server gets a fresh temporary directory (under [`std::env::temp_dir`]) that holds its
//! `zoo.cfg`, its data directory and its log (stdout and stderr of the JVM). Dropping an
//! [`ApacheServer`] or an [`ApacheCluster`] kills the JVMs and removes that directory, unless
//! the environment variable `ZK_TEST_KEEP_DIRS` is set (to anything), which keeps it for
//! post-mortem debugging.
//!
//! Servers listen on `127.0.0.1` only, on ports picked at random (free at the time they are
//! picked). Readiness is judged with the `srvr` four-letter word: a server is ready when the
//! answer has a `Mode:` line (`standalone`, `leader`, `follower`). `ruok` is not used because
//! it answers `imok` before the server accepts sessions.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::fourlw::four_letter_word;

/// Directory that holds Debian's ZooKeeper jars.
const JAVA_LIB: &str = "/usr/share/java";
/// Jars put on the server's class path (the ones that exist). `zookeeper.jar`'s manifest
/// `Class-Path` pulls in the rest (netty, jetty, commons-*, ...).
const SERVER_JARS: &[&str] = &[
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
];
/// What the Netty connection factory (TLS) needs besides `SERVER_JARS`: Debian does not
/// put Netty on zookeeper.jar's class path.
const NETTY_JARS: &[&str] = &[
    "netty-buffer.jar",
    "netty-codec.jar",
    "netty-common.jar",
    "netty-handler.jar",
    "netty-resolver.jar",
    "netty-transport.jar",
    "netty-transport-native-unix-common.jar",
    "netty-transport-native-epoll.jar",
];
const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// How long [`ApacheServer::start`], [`ApacheServer::restart`], [`ApacheCluster::start`] and
/// [`ApacheCluster::restart`] wait for the server(s) to serve clients.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a SIGTERMed JVM gets to exit before it is SIGKILLed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// Timeout of a single `srvr` probe.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// Pause between two readiness probes.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Says whether a real Apache ZooKeeper can be started on this machine: that
/// `/usr/share/java/zookeeper.jar` exists and a `java` executable is found (on `PATH` or in
/// `$JAVA_HOME/bin`).
///
/// Tests that need a real server should print a line and return early when this is `false`,
/// so that `cargo test` passes on a machine with only Rust installed.
///
/// # Errors
///
/// None: any problem (missing file, unreadable `PATH`) makes it return `false`.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache;
///
/// if !apache::available() {
///     eprintln!("skipping: Java or Apache ZooKeeper is not installed");
///     return;
/// }
/// let server = apache::ApacheServer::start(apache::ApacheConfig::default()).unwrap();
/// # drop(server);
/// ```
pub fn available() -> bool {
    Path::new(JAVA_LIB).join("zookeeper.jar").is_file() && find_java().is_some()
}

/// Settings shared by every server that [`ApacheServer`] and [`ApacheCluster`] start.
///
/// The [`Default`] mirrors Curator's `TestingServer`: tick 1000 ms, session timeouts clamped
/// to 1000..=60000 ms, container nodes checked every 100 ms, TTL nodes enabled, 256 MB heap.
/// Every generated `zoo.cfg` also has `4lw.commands.whitelist=*`, `admin.enableServer=false`,
/// `clientPortAddress=127.0.0.1` and `maxClientCnxns=0`, and every JVM runs with
/// `-Dzookeeper.snapshot.trust.empty=true` and `-Dzookeeper.forceSync=no` (data is still
/// written to the OS before a reply, so it survives a SIGKILL of the server).
///
/// # Errors
///
/// Not applicable: this is a plain value. Invalid values (a heap string the JVM rejects, a
/// minimum session timeout above the maximum) make the server fail to start, and
/// [`ApacheServer::start`] then returns an error that quotes the server log.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheConfig, ApacheServer};
///
/// let config = ApacheConfig {
///     max_session_timeout_ms: 10_000,
///     ..ApacheConfig::default()
/// };
/// let server = ApacheServer::start(config)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApacheConfig {
    /// `tickTime` in milliseconds (the unit of ZooKeeper's internal timers).
    pub tick_time_ms: u32,
    /// `minSessionTimeout`: smaller requested session timeouts are raised to this.
    pub min_session_timeout_ms: u32,
    /// `maxSessionTimeout`: larger requested session timeouts are lowered to this.
    pub max_session_timeout_ms: u32,
    /// How often the server deletes empty container nodes and expired TTL nodes
    /// (`-Dznode.container.checkIntervalMs`).
    pub container_check_interval_ms: u64,
    /// Enables TTL nodes (`-Dzookeeper.extendedTypesEnabled=true`).
    pub extended_types: bool,
    /// Maximum JVM heap, as given to `-Xmx` (for example `"256m"`).
    pub heap: String,
    /// The super user's digest id
    /// (`-Dzookeeper.DigestAuthenticationProvider.superDigest`, e.g. from
    /// `zk_proto::digest::digest_id("super:test")`). Default none.
    pub super_digest: Option<String>,
    /// The subject (RFC 2253) of the client certificate that is a super user
    /// (`-Dzookeeper.X509AuthenticationProvider.superUser`). Default none.
    pub x509_super_user: Option<String>,
    /// Also serve TLS on a `secureClientPort` ([`ApacheServer::secure_port`]) with the
    /// Netty connection factory, PEM key and trust stores written from this
    /// ([`ServerTls`](crate::tls::ServerTls)), and `ssl.clientAuth` as it says. The plain
    /// `clientPort` stays open (the harness polls it). Standalone servers only; an ensemble
    /// ignores it. Default `None`.
    pub tls: Option<crate::tls::ServerTls>,
}

impl Default for ApacheConfig {
    fn default() -> Self {
        ApacheConfig {
            tick_time_ms: 1000,
            min_session_timeout_ms: 1000,
            max_session_timeout_ms: 60_000,
            container_check_interval_ms: 100,
            extended_types: true,
            heap: "256m".to_string(),
            super_digest: None,
            x509_super_user: None,
            tls: None,
        }
    }
}

impl ApacheConfig {
    /// The `zoo.cfg` lines common to standalone servers and ensemble members.
    fn common_cfg(&self, data_dir: &Path, client_port: u16) -> String {
        format!(
            "tickTime={}\n\
             dataDir={}\n\
             clientPort={}\n\
             clientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             minSessionTimeout={}\n\
             maxSessionTimeout={}\n",
            self.tick_time_ms,
            data_dir.display(),
            client_port,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
        )
    }
}

/// One ZooKeeper JVM: its files, its port and (while it runs) its process.
#[derive(Debug)]
struct Node {
    dir: PathBuf,
    data_dir: PathBuf,
    cfg_path: PathBuf,
    log_path: PathBuf,
    client_port: u16,
    main_class: &'static str,
    config: ApacheConfig,
    java: PathBuf,
    child: Mutex<Option<Child>>,
}

impl Node {
    /// Creates the directory layout and writes `zoo.cfg` (`cfg` gets the common lines first,
    /// then `extra_cfg`). Does not start the process.
    fn create(
        dir: PathBuf,
        client_port: u16,
        main_class: &'static str,
        config: &ApacheConfig,
        extra_cfg: &str,
        myid: Option<usize>,
    ) -> io::Result<Node> {
        let java = find_java()
            .ok_or_else(|| io::Error::new(ErrorKind::NotFound, "no `java` executable on PATH or in $JAVA_HOME/bin"))?;
        let zk_jar = Path::new(JAVA_LIB).join("zookeeper.jar");
        if !zk_jar.is_file() {
            return Err(io::Error::new(
                ErrorKind::NotFound,
                format!("{} not found (install Debian's `zookeeper` package)", zk_jar.display()),
            ));
        }
        let data_dir = dir.join("data");
        fs::create_dir_all(&data_dir)?;
        if let Some(id) = myid {
            fs::write(data_dir.join("myid"), format!("{id}\n"))?;
        }
        let cfg_path = dir.join("zoo.cfg");
        let mut cfg = config.common_cfg(&data_dir, client_port);
        cfg.push_str(extra_cfg);
        fs::write(&cfg_path, cfg)?;
        Ok(Node {
            log_path: dir.join("server.log"),
            dir,
            data_dir,
            cfg_path,
            client_port,
            main_class,
            config: config.clone(),
            java,
            child: Mutex::new(None),
        })
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    fn classpath(netty: bool) -> String {
        let netty_jars: &[&str] = if netty { NETTY_JARS } else { &[] };
        let jars: Vec<String> = SERVER_JARS
            .iter()
            .chain(netty_jars)
            .map(|j| Path::new(JAVA_LIB).join(j))
            .filter(|p| p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        jars.join(":")
    }

    /// Spawns the JVM (if it is not running already). Returns the log length before the spawn,
    /// so that errors can quote only what this run logged.
    fn spawn(&self) -> io::Result<u64> {
        let mut guard = self.child.lock();
        if let Some(child) = guard.as_mut() {
            if child.try_wait()?.is_none() {
                return Ok(log_len(&self.log_path));
            }
            *guard = None;
        }
        let log = OpenOptions::new().create(true).append(true).open(&self.log_path)?;
        let log_offset = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log_err = log.try_clone()?;
        let c = &self.config;
        let mut cmd = Command::new(&self.java);
        cmd.arg(format!("-Xmx{}", c.heap))
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg("-Dzookeeper.snapshot.trust.empty=true")
            .arg("-Dzookeeper.forceSync=no")
            .arg("-Dzookeeper.preAllocSize=1024")
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg(format!(
                "-Dznode.container.checkIntervalMs={}",
                c.container_check_interval_ms
            ))
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .arg("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
        if c.extended_types {
            cmd.arg("-Dzookeeper.extendedTypesEnabled=true");
        }
        if let Some(d) = &c.super_digest {
            cmd.arg(format!("-Dzookeeper.DigestAuthenticationProvider.superDigest={d}"));
        }
        if let Some(u) = &c.x509_super_user {
            cmd.arg(format!("-Dzookeeper.X509AuthenticationProvider.superUser={u}"));
        }
        cmd.arg("-cp")
            .arg(Self::classpath(c.tls.is_some()))
            .arg(self.main_class)
            .arg(&self.cfg_path)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd.spawn()?;
        log::debug!(
            "started ZooKeeper pid {} on port {} in {}",
            child.id(),
            self.client_port,
            self.dir.display()
        );
        *guard = Some(child);
        Ok(log_offset)
    }

    fn pid(&self) -> Option<u32> {
        let mut guard = self.child.lock();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Returns `Some(exit description)` if the process was started and has exited.
    fn exited(&self) -> Option<String> {
        let mut guard = self.child.lock();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown status ({e})")),
        }
    }

    /// SIGKILL, then reap. A no-op if the process is not running.
    fn kill(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        if let Some(mut child) = guard.take() {
            if child.try_wait()?.is_none() {
                // A paused (SIGSTOPped) JVM dies on SIGKILL too.
                match child.kill() {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::InvalidInput => {} // already exited
                    Err(e) => {
                        *guard = Some(child);
                        return Err(e);
                    }
                }
            }
            child.wait()?;
        }
        Ok(())
    }

    /// SIGTERM, wait up to [`STOP_GRACE`] for the exit, then SIGKILL. A no-op if the process is
    /// not running.
    fn stop(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        let Some(mut child) = guard.take() else {
            return Ok(());
        };
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        // A paused JVM cannot handle SIGTERM: let it continue first.
        let _ = send_signal(child.id(), "CONT");
        if send_signal(child.id(), "TERM").is_ok() {
            let deadline = Instant::now() + STOP_GRACE;
            while Instant::now() < deadline {
                if child.try_wait()?.is_some() {
                    return Ok(());
                }
                thread::sleep(Duration::from_millis(50));
            }
            log::warn!(
                "ZooKeeper pid {} ignored SIGTERM for {:?}; killing it",
                child.id(),
                STOP_GRACE
            );
        }
        let _ = child.kill();
        child.wait()?;
        Ok(())
    }

    fn signal(&self, sig: &str) -> io::Result<()> {
        let pid = self
            .pid()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "the ZooKeeper server is not running"))?;
        send_signal(pid, sig)?;
        if sig == "STOP" {
            // kill(2) returns before every thread has stopped: wait until they all have, so
            // that the caller can rely on the server answering nothing from now on.
            wait_all_threads_stopped(pid, Instant::now() + Duration::from_secs(10));
        }
        Ok(())
    }

    /// The `Mode:` value of `srvr`, if the server answers and is serving.
    fn mode(&self) -> Option<String> {
        srvr_mode(&self.addr())
    }

    /// Spawns the JVM and waits until `srvr` shows one of `modes`. If the JVM exits early
    /// because its ports are still taken, tries again until `deadline`.
    fn start_and_wait(&self, modes: &[&str], deadline: Instant) -> io::Result<()> {
        loop {
            wait_port_free(self.client_port, deadline);
            let log_offset = self.spawn()?;
            match self.wait_mode(modes, deadline, log_offset) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    let exited = self.exited().is_some();
                    let new_log = read_log_from(&self.log_path, log_offset);
                    if exited
                        && new_log.contains("Address already in use")
                        && Instant::now() + Duration::from_secs(1) < deadline
                    {
                        log::info!(
                            "ZooKeeper on port {} hit a port still in use; retrying",
                            self.client_port
                        );
                        self.kill()?;
                        thread::sleep(Duration::from_millis(250));
                        continue;
                    }
                    let _ = self.kill();
                    return Err(e);
                }
            }
        }
    }

    /// Polls `srvr` until its `Mode:` is one of `modes`, the process exits, or `deadline`.
    fn wait_mode(&self, modes: &[&str], deadline: Instant, log_offset: u64) -> io::Result<()> {
        let mut last = None;
        loop {
            if let Some(mode) = self.mode() {
                if modes.contains(&mode.as_str()) {
                    return Ok(());
                }
                last = Some(mode);
            }
            if let Some(status) = self.exited() {
                return Err(self.error(
                    ErrorKind::Other,
                    &format!("exited ({status}) before serving"),
                    log_offset,
                ));
            }
            if Instant::now() >= deadline {
                return Err(self.error(
                    ErrorKind::TimedOut,
                    &format!(
                        "did not reach mode {modes:?} in time (last mode: {})",
                        last.as_deref().unwrap_or("none")
                    ),
                    log_offset,
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    fn error(&self, kind: ErrorKind, what: &str, log_offset: u64) -> io::Error {
        let log = read_log_from(&self.log_path, log_offset);
        let tail = tail_lines(&log, 40);
        let mut msg = format!(
            "ZooKeeper ({}) on 127.0.0.1:{} {what}; log {} (removed on drop unless ZK_TEST_KEEP_DIRS is set)",
            self.main_class.rsplit('.').next().unwrap_or(self.main_class),
            self.client_port,
            self.log_path.display()
        );
        if !tail.is_empty() {
            let _ = write!(msg, ", last lines:\n{tail}");
        }
        io::Error::new(kind, msg)
    }
}

/// A real standalone Apache ZooKeeper server (`ZooKeeperServerMain`) on `127.0.0.1`.
///
/// The server keeps its port and its data directory for its whole life, across
/// [`stop`](ApacheServer::stop)/[`kill`](ApacheServer::kill) and
/// [`restart`](ApacheServer::restart), so clients can reconnect to it and find their data
/// (and, if they reconnect within the session timeout after a restart, their sessions).
/// Dropping it kills the JVM and removes its directory.
///
/// # Errors
///
/// See the individual methods.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{available, ApacheConfig, ApacheServer};
///
/// if !available() {
///     return Ok(());
/// }
/// let mut server = ApacheServer::start(ApacheConfig::default())?;
/// println!("connect to {}", server.connect_string());
/// server.kill()?; // crash it
/// server.restart()?; // same port, same data
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ApacheServer {
    node: Node,
    secure_port: Option<u16>,
}

impl ApacheServer {
    /// Starts a standalone server with `config` on a free port, in a fresh temporary
    /// directory, and waits (up to 60 s) until `srvr` reports `Mode: standalone`.
    ///
    /// # Errors
    ///
    /// * [`ErrorKind::NotFound`] if `java` or `/usr/share/java/zookeeper.jar` is missing
    ///   (check [`available`] first).
    /// * [`ErrorKind::TimedOut`] if the server does not serve within 60 s, or another error if
    ///   the JVM exits first; the message quotes the end of the server log.
    /// * Any I/O error from creating the directory, picking a port or spawning `java`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_testing::apache::{ApacheConfig, ApacheServer};
    ///
    /// let server = ApacheServer::start(ApacheConfig::default())?;
    /// assert!(server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(config: ApacheConfig) -> io::Result<Self> {
        let dir = make_temp_dir("standalone")?;
        let result = (|| {
            let ports = free_ports(if config.tls.is_some() { 2 } else { 1 })?;
            let port = ports[0];
            let secure_port = ports.get(1).copied();
            let extra = match (&config.tls, secure_port) {
                (Some(tls), Some(sport)) => tls_cfg(tls, &dir, sport)?,
                _ => String::new(),
            };
            let node = Node::create(dir.clone(), port, STANDALONE_MAIN, &config, &extra, None)?;
            let deadline = Instant::now() + READY_TIMEOUT;
            node.start_and_wait(&["standalone"], deadline)?;
            Ok(ApacheServer { node, secure_port })
        })();
        if result.is_err() && !keep_dirs() {
            let _ = fs::remove_dir_all(&dir);
        }
        result
    }

    /// The client port (on `127.0.0.1`).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// let addr = format!("127.0.0.1:{}", server.port());
    /// assert_eq!(addr, server.connect_string());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.node.client_port
    }

    /// The `secureClientPort` (TLS, on `127.0.0.1`) when started with
    /// [`ApacheConfig::tls`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// assert_eq!(server.secure_port(), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn secure_port(&self) -> Option<u16> {
        self.secure_port
    }

    /// The connect string for clients: `"127.0.0.1:PORT"`.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// let hosts = server.connect_string();
    /// assert!(hosts.starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.node.addr()
    }

    /// The server's data directory (`dataDir` in its `zoo.cfg`: snapshots and transaction
    /// logs). It survives [`stop`](Self::stop), [`kill`](Self::kill) and
    /// [`restart`](Self::restart), and is removed on drop.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// assert!(server.data_dir().is_dir());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn data_dir(&self) -> &Path {
        &self.node.data_dir
    }

    /// The file that receives the JVM's stdout and stderr (appended to across restarts).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// let log = std::fs::read_to_string(server.log_path())?;
    /// println!("{log}");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn log_path(&self) -> &Path {
        &self.node.log_path
    }

    /// Whether the server process is alive (it may still be starting, or be paused).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// server.stop()?;
    /// assert!(!server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.node.is_running()
    }

    /// The process id of the running JVM, or `None` if it is not running.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// println!("ZooKeeper runs as pid {:?}", server.pid());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pid(&self) -> Option<u32> {
        self.node.pid()
    }

    /// Stops the server gracefully: SIGTERM, then waits for the JVM to exit (SIGKILL after
    /// 15 s). Keeps the port and data directory for [`restart`](Self::restart). Sessions are
    /// not closed by a stop: clients that reconnect after a restart within their session
    /// timeout keep them. Does nothing if the server is not running.
    ///
    /// # Errors
    ///
    /// Returns an error if the process cannot be signalled or waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// server.stop()?;
    /// server.restart()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&mut self) -> io::Result<()> {
        self.node.stop()
    }

    /// Crashes the server: SIGKILL, then waits for the JVM to exit. Keeps the port and data
    /// directory for [`restart`](Self::restart). Does nothing if the server is not running.
    ///
    /// # Errors
    ///
    /// Returns an error if the process cannot be killed or waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// server.kill()?;
    /// assert!(!server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill(&mut self) -> io::Result<()> {
        self.node.kill()
    }

    /// Starts the server again on the same port with the same configuration and data, and
    /// waits (up to 60 s) until it serves. If it is still running it is stopped first (as by
    /// [`stop`](Self::stop)). If the port is briefly still bound, it retries until the
    /// deadline.
    ///
    /// # Errors
    ///
    /// Same as [`start`](Self::start): a timeout or an early exit of the JVM (the message
    /// quotes the server log), or an I/O error from spawning `java`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// let port = server.port();
    /// server.kill()?;
    /// server.restart()?;
    /// assert_eq!(server.port(), port);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self) -> io::Result<()> {
        self.node.stop()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        self.node.start_and_wait(&["standalone"], deadline)
    }

    /// Freezes the server with SIGSTOP: its sockets stay open but it answers nothing, like a
    /// hung or partitioned server. Undo with [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] if the server is not running, or an error if `kill -STOP`
    /// fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// server.pause()?;
    /// // ... clients time out ...
    /// server.resume()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&mut self) -> io::Result<()> {
        self.node.signal("STOP")
    }

    /// Lets a server frozen by [`pause`](Self::pause) continue (SIGCONT).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] if the server is not running, or an error if `kill -CONT`
    /// fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut server = zk_testing::apache::ApacheServer::start(Default::default())?;
    /// server.pause()?;
    /// server.resume()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&mut self) -> io::Result<()> {
        self.node.signal("CONT")
    }
}

impl Drop for ApacheServer {
    fn drop(&mut self) {
        let _ = self.node.kill();
        if !keep_dirs() {
            let _ = fs::remove_dir_all(&self.node.dir);
        }
    }
}

/// A real Apache ZooKeeper ensemble (`QuorumPeerMain` JVMs) on `127.0.0.1`.
///
/// Node `i` (0-based in this API) has server id `i + 1` and its own client, quorum and
/// election ports. Every node keeps its ports and data across kills and restarts. Dropping the
/// cluster kills all JVMs and removes the cluster's directory.
///
/// # Errors
///
/// See the individual methods.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_testing::apache::{ApacheCluster, ApacheConfig};
///
/// let mut cluster = ApacheCluster::start(3, ApacheConfig::default())?;
/// let old = cluster.leader().expect("a leader");
/// cluster.kill(old)?;
/// cluster.wait_for_quorum(Duration::from_secs(60))?;
/// assert_ne!(cluster.leader(), Some(old));
/// cluster.restart(old)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ApacheCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
}

const QUORUM_MODES: &[&str] = &["leader", "follower", "observer"];

impl ApacheCluster {
    /// Starts an ensemble of `n` nodes with `config`, each in its own subdirectory of a fresh
    /// temporary directory, and waits (up to 60 s) for exactly one leader and `n - 1`
    /// followers. `n == 1` gives a quorum of one (mode `leader`, `standaloneEnabled=false`).
    ///
    /// # Errors
    ///
    /// * [`ErrorKind::InvalidInput`] if `n == 0`.
    /// * [`ErrorKind::NotFound`] if `java` or `/usr/share/java/zookeeper.jar` is missing.
    /// * [`ErrorKind::TimedOut`] if no quorum forms within 60 s, or another error if a JVM
    ///   exits early; the message quotes the end of the failing node's log.
    /// * Any I/O error from creating directories, picking ports or spawning `java`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_testing::apache::{ApacheCluster, ApacheConfig};
    ///
    /// let cluster = ApacheCluster::start(3, ApacheConfig::default())?;
    /// println!("connect to {}", cluster.connect_string());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(n: usize, config: ApacheConfig) -> io::Result<Self> {
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "an ensemble needs at least one node",
            ));
        }
        let dir = make_temp_dir("ensemble")?;
        let mut cluster = ApacheCluster {
            dir,
            nodes: Vec::with_capacity(n),
        };
        // On error, dropping `cluster` kills what started and removes the directory.
        let ports = free_ports(3 * n)?;
        let (client, rest) = ports.split_at(n);
        let (quorum, election) = rest.split_at(n);
        let mut servers = String::new();
        for i in 0..n {
            let _ = writeln!(servers, "server.{}=127.0.0.1:{}:{}", i + 1, quorum[i], election[i]);
        }
        let extra = format!(
            "initLimit=10\n\
             syncLimit=5\n\
             reconfigEnabled=false\n\
             standaloneEnabled=false\n\
             {servers}"
        );
        for (i, port) in client.iter().enumerate() {
            let node_dir = cluster.dir.join(format!("node{i}"));
            let node = Node::create(node_dir, *port, QUORUM_MAIN, &config, &extra, Some(i + 1))?;
            cluster.nodes.push(node);
        }
        for node in &cluster.nodes {
            node.spawn()?;
        }
        cluster.wait_for_quorum(READY_TIMEOUT)?;
        Ok(cluster)
    }

    /// The number of nodes in the ensemble (running or not).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// assert_eq!(cluster.len(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always `false`: an ensemble has at least one node.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(1, Default::default())?;
    /// assert!(!cluster.is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The connect string listing every node: `"127.0.0.1:P1,127.0.0.1:P2,..."`.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// assert_eq!(cluster.connect_string().split(',').count(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",")
    }

    /// The client port (on `127.0.0.1`) of node `i`.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let only_node_0 = format!("127.0.0.1:{}", cluster.client_port(0));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_port(&self, i: usize) -> u16 {
        self.node(i).client_port
    }

    /// The mode node `i` reports through `srvr` (`"leader"`, `"follower"`, ...), or `None`
    /// if it does not answer or is not serving (down, or not part of a quorum).
    ///
    /// # Errors
    ///
    /// None: an unreachable node gives `None`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// for i in 0..cluster.len() {
    ///     println!("node {i}: {:?}", cluster.mode(i));
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn mode(&self, i: usize) -> Option<String> {
        self.node(i).mode()
    }

    /// The index of the node that reports `Mode: leader` now, if any. (During an election
    /// there may be none.)
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// let leader = cluster.leader().expect("a quorum has a leader");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn leader(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.mode(i).as_deref() == Some("leader"))
    }

    /// Whether node `i`'s process is alive (it may still be starting, or be paused).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.kill(0)?;
    /// assert!(!cluster.is_running(0));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self, i: usize) -> bool {
        self.node(i).is_running()
    }

    /// The data directory of node `i` (holds its `myid`, snapshots and transaction logs).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// assert!(cluster.data_dir(0).join("myid").is_file());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn data_dir(&self, i: usize) -> &Path {
        &self.node(i).data_dir
    }

    /// The file that receives node `i`'s stdout and stderr (appended to across restarts).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// println!("{}", std::fs::read_to_string(cluster.log_path(0))?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn log_path(&self, i: usize) -> &Path {
        &self.node(i).log_path
    }

    /// The process id of node `i`'s JVM, or `None` if it is not running.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// println!("node 0 runs as pid {:?}", cluster.pid(0));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.node(i).pid()
    }

    /// Crashes node `i` with SIGKILL and waits for the JVM to exit. Does nothing if it is not
    /// running.
    ///
    /// # Errors
    ///
    /// Returns an error if the process cannot be killed or waited for.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// if let Some(leader) = cluster.leader() {
    ///     cluster.kill(leader)?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill(&mut self, i: usize) -> io::Result<()> {
        self.node(i).kill()
    }

    /// Stops node `i` gracefully (SIGTERM; SIGKILL after 15 s) and waits for the JVM to exit.
    /// Does nothing if it is not running.
    ///
    /// # Errors
    ///
    /// Returns an error if the process cannot be signalled or waited for.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.stop(0)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&mut self, i: usize) -> io::Result<()> {
        self.node(i).stop()
    }

    /// Starts node `i` again with its configuration, ports and data (stopping it first if it
    /// is running) and waits (up to 60 s) until it serves again as leader, follower or
    /// observer. That needs a quorum: with a majority of nodes down it times out.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if the node does not serve within 60 s, another error if its
    /// JVM exits early (the message quotes its log), or an I/O error from spawning `java`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.kill(2)?;
    /// cluster.restart(2)?;
    /// println!("node 2 is back as {:?}", cluster.mode(2));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self, i: usize) -> io::Result<()> {
        let node = self.node(i);
        node.stop()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        node.start_and_wait(QUORUM_MODES, deadline)
    }

    /// Freezes node `i` with SIGSTOP (sockets stay open, nothing is answered), like a hung or
    /// partitioned server. Undo with [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] if the node is not running, or an error if `kill -STOP`
    /// fails.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.pause(1)?;
    /// cluster.resume(1)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&mut self, i: usize) -> io::Result<()> {
        self.node(i).signal("STOP")
    }

    /// Lets node `i`, frozen by [`pause`](Self::pause), continue (SIGCONT).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotConnected`] if the node is not running, or an error if `kill -CONT`
    /// fails.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.pause(1)?;
    /// cluster.resume(1)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&mut self, i: usize) -> io::Result<()> {
        self.node(i).signal("CONT")
    }

    /// Waits until the running nodes form a quorum: they are a majority of the ensemble,
    /// exactly one of them reports `Mode: leader` and every other running node reports
    /// `follower` (or `observer`). Right after [`start`](Self::start) that means one leader and
    /// `n - 1` followers; after a [`kill`](Self::kill) of the leader it means a new leader was
    /// elected among the survivors.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if that does not happen within `timeout` (the message lists the
    /// modes seen last), or [`ErrorKind::Other`] if a node that was running exits meanwhile.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let mut cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// cluster.kill(cluster.leader().unwrap())?;
    /// cluster.wait_for_quorum(Duration::from_secs(60))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_for_quorum(&self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        let n = self.nodes.len();
        loop {
            let mut modes = Vec::with_capacity(n);
            let (mut running, mut leaders, mut others_ok) = (0, 0, true);
            for (i, node) in self.nodes.iter().enumerate() {
                if let Some(status) = node.exited() {
                    return Err(node.error(
                        ErrorKind::Other,
                        &format!("(node {i}) exited ({status}) while waiting for a quorum"),
                        0,
                    ));
                }
                if !node.is_running() {
                    modes.push(format!("{i}:down"));
                    continue;
                }
                running += 1;
                let mode = node.mode();
                match mode.as_deref() {
                    Some("leader") => leaders += 1,
                    Some("follower") | Some("observer") => {}
                    _ => others_ok = false,
                }
                modes.push(format!("{i}:{}", mode.as_deref().unwrap_or("not serving")));
            }
            if running > n / 2 && leaders == 1 && others_ok {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "no quorum within {timeout:?} (modes: {}); logs in {}",
                        modes.join(", "),
                        self.dir.display()
                    ),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    fn node(&self, i: usize) -> &Node {
        assert!(
            i < self.nodes.len(),
            "node index {i} out of range: the ensemble has {} nodes",
            self.nodes.len()
        );
        &self.nodes[i]
    }
}

impl Drop for ApacheCluster {
    fn drop(&mut self) {
        for node in &self.nodes {
            let _ = node.kill();
        }
        if !keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// The `Mode:` value of a `srvr` answer from `addr`, if any.
fn srvr_mode(addr: &str) -> Option<String> {
    let answer = four_letter_word(addr, "srvr", PROBE_TIMEOUT).ok()?;
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(|m| m.trim().to_string())
}

/// The `zoo.cfg` lines of a TLS server (`secureClientPort` with Netty, PEM stores written
/// into `dir`).
fn tls_cfg(tls: &crate::tls::ServerTls, dir: &Path, secure_port: u16) -> io::Result<String> {
    let (ks, ts) = tls.write_stores(dir)?;
    Ok(format!(
        "secureClientPort={secure_port}\n\
         secureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location={}\n\
         ssl.keyStore.type=PEM\n\
         ssl.trustStore.location={}\n\
         ssl.trustStore.type=PEM\n\
         ssl.clientAuth={}\n",
        ks.display(),
        ts.display(),
        tls.client_auth().zookeeper_value(),
    ))
}

fn find_java() -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("java");
            if is_exec(&candidate) {
                return Some(candidate);
            }
        }
    }
    let home = std::env::var_os("JAVA_HOME")?;
    let candidate = PathBuf::from(home).join("bin").join("java");
    is_exec(&candidate).then_some(candidate)
}

fn keep_dirs() -> bool {
    std::env::var_os("ZK_TEST_KEEP_DIRS").is_some()
}

/// Creates a fresh, uniquely named directory under the system temp dir.
fn make_temp_dir(kind: &str) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    loop {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!(
            "zk-testing-apache-{kind}-{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Picks `n` distinct free ports on 127.0.0.1 (all listeners are held until every port is
/// picked, so they differ, then released).
fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<io::Result<Vec<_>>>()?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port())).collect()
}

/// Waits (polling, until `deadline`) until `port` can be bound on 127.0.0.1 (with
/// SO_REUSEADDR, as the JVM does). Returns whether it became free.
fn wait_port_free(port: u16, deadline: Instant) -> bool {
    loop {
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL_INTERVAL);
    }
}

fn send_signal(pid: u32, sig: &str) -> io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("`kill -{sig} {pid}` failed: {status}")))
    }
}

/// Polls `/proc/PID/task/*/stat` until every thread of `pid` is in state `T` (stopped) or `t`,
/// or until `deadline`. Returns whether they all stopped (`false` too where `/proc` is absent).
fn wait_all_threads_stopped(pid: u32, deadline: Instant) -> bool {
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    loop {
        let all_stopped = fs::read_dir(&task_dir).ok().is_some_and(|entries| {
            entries.filter_map(Result::ok).all(|task| {
                fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|stat| {
                        stat.rsplit_once(')')
                            .map(|(_, rest)| rest.trim_start().starts_with(['T', 't']))
                    })
                    .unwrap_or(true) // a thread that just exited does not count
            })
        });
        if all_stopped {
            return true;
        }
        if Instant::now() >= deadline || !task_dir.exists() {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn log_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn read_log_from(path: &Path, offset: u64) -> String {
    let mut out = Vec::new();
    if let Ok(mut f) = File::open(path) {
        if f.seek(SeekFrom::Start(offset)).is_ok() {
            let _ = f.read_to_end(&mut out);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_matches_curator_testing_server() {
        let c = ApacheConfig::default();
        assert_eq!(c.tick_time_ms, 1000);
        assert_eq!(c.min_session_timeout_ms, 1000);
        assert_eq!(c.max_session_timeout_ms, 60_000);
        assert_eq!(c.container_check_interval_ms, 100);
        assert!(c.extended_types);
        assert_eq!(c.heap, "256m");
    }

    #[test]
    fn generated_cfg_has_the_required_lines() {
        let cfg = ApacheConfig::default().common_cfg(Path::new("/tmp/x/data"), 12345);
        for line in [
            "tickTime=1000",
            "dataDir=/tmp/x/data",
            "clientPort=12345",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
        ] {
            assert!(cfg.lines().any(|l| l == line), "missing {line:?} in\n{cfg}");
        }
    }

    #[test]
    fn free_ports_are_distinct() {
        let mut ports = free_ports(9).unwrap();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 9);
    }

    #[test]
    fn temp_dirs_are_unique() {
        let a = make_temp_dir("unit").unwrap();
        let b = make_temp_dir("unit").unwrap();
        assert_ne!(a, b);
        fs::remove_dir_all(a).unwrap();
        fs::remove_dir_all(b).unwrap();
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("", 2), "");
    }
}
