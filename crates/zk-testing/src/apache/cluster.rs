//! The ensemble: several quorum nodes, their leader and followers, and waiting for a quorum.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::config::ApacheConfig;
use super::files::{keep_dirs, make_temp_dir};
use super::node::Node;
use super::probe::{POLL_INTERVAL, READY_TIMEOUT};
use super::process::free_ports;

const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

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
