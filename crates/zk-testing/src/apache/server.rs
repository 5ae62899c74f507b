//! The standalone server: one node started, stopped, killed, paused and restarted in place.

use std::fs;
use std::io;
use std::path::Path;
use std::time::Instant;

use super::config::{tls_cfg, ApacheConfig};
use super::files::{keep_dirs, make_temp_dir};
use super::node::Node;
use super::probe::READY_TIMEOUT;
use super::process::free_ports;

const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";

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
    /// * [`ErrorKind::NotFound`](io::ErrorKind::NotFound) if `java` or
    ///   `/usr/share/java/zookeeper.jar` is missing (check [`available`](super::available) first).
    /// * [`ErrorKind::TimedOut`](io::ErrorKind::TimedOut) if the server does not serve within
    ///   60 s, or another error if the JVM exits first; the message quotes the end of the server
    ///   log.
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
    /// [`ErrorKind::NotConnected`](io::ErrorKind::NotConnected) if the server is not running, or
    /// an error if `kill -STOP` fails.
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
    /// [`ErrorKind::NotConnected`](io::ErrorKind::NotConnected) if the server is not running, or
    /// an error if `kill -CONT` fails.
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
