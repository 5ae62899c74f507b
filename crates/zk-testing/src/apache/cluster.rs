//! The ensemble: several quorum nodes, their leader and followers, and waiting for a quorum.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::config::ApacheConfig;
use super::files::{keep_dirs, make_temp_dir};
use super::links::{FlapThread, Links};
use super::node::Node;
use super::probe::{POLL_INTERVAL, READY_TIMEOUT};
use super::process::{hold_free_ports, is_port_clash, ports_of};

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
    /// The server-to-server proxies of a partitionable ensemble.
    links: Option<Links>,
    /// Links made to flap, until [`heal_links`](Self::heal_links).
    flaps: Mutex<Vec<FlapThread>>,
    tick: Duration,
}

const QUORUM_MODES: &[&str] = &["leader", "follower", "observer"];

/// The ensemble's `syncLimit`, in ticks: how long a leader keeps leading without hearing from a
/// quorum of followers, and how long a follower waits for its leader, before giving up.
const SYNC_LIMIT_TICKS: u32 = 5;

/// How many times an ensemble start is tried when a node finds one of its ports taken.
const START_ATTEMPTS: u32 = 3;

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
        Self::start_inner(n, config, false)
    }

    /// Like [`start`](Self::start), but every server-to-server link goes through a proxy that
    /// can hold its bytes, per ordered pair of servers and per direction: a *partitionable*
    /// ensemble (see [`block`](Self::block), [`cut`](Self::cut), [`isolate`](Self::isolate),
    /// [`flap`](Self::flap), [`heal_links`](Self::heal_links)).
    ///
    /// Server `a` reaches server `b`'s quorum and election ports only through proxy `a->b`:
    /// each server has its own `zoo.cfg`, listing its own real ports and every other server at
    /// the ports of its proxies (`reconfigEnabled=false`, so no server adopts another's view of
    /// the membership). A TCP connection between two servers carries bytes both ways, whichever
    /// opened it, so a fault holds one *direction*: the bytes from `a` to `b`, on every
    /// connection between them, quorum and election alike. Held bytes are not dropped: the
    /// sender's writes pile up in its socket buffers and nothing is closed, so each server
    /// notices the partition by its own timeouts (a leader that hears no follower within its
    /// sync limit gives up leadership and drops its clients; a follower that hears no leader
    /// within its sync limit starts an election), as on a network that drops packets; when
    /// the link heals, what was held is delivered, like TCP's retransmissions. New connections
    /// are accepted during a partition and their bytes held the same way. The leader
    /// election's first message carries the sender's own address, which the receiver may use
    /// to connect back: the election proxies rewrite it to the reverse proxy's, so that no
    /// connection bypasses them.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); also any I/O error from binding the proxies' listeners.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_testing::apache::{ApacheCluster, ApacheConfig};
    ///
    /// let cluster = ApacheCluster::start_partitionable(3, ApacheConfig::default())?;
    /// let leader = cluster.leader().expect("a leader");
    /// cluster.isolate(leader)?; // its clients still reach it; its peers do not
    /// // ... within its sync limit it gives up leadership; the other two elect a leader.
    /// cluster.heal_links();
    /// cluster.wait_for_quorum(Duration::from_secs(60))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_partitionable(n: usize, config: ApacheConfig) -> io::Result<Self> {
        Self::start_inner(n, config, true)
    }

    fn start_inner(n: usize, config: ApacheConfig, partitionable: bool) -> io::Result<Self> {
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "an ensemble needs at least one node",
            ));
        }
        // The ports are picked free, then released for the servers to bind: a test running
        // beside this one can bind one of them in between (seen 2 of 4 runs of the campaign
        // suite on 2 cores: a node exited with "Address already in use"). Such a start is
        // tried again on fresh ports; any other failure is returned at once.
        let mut attempt = 1;
        loop {
            match Self::start_once(n, config.clone(), partitionable) {
                Err(e) if attempt < START_ATTEMPTS && is_port_clash(&e) => {
                    log::info!(
                        "an ensemble node found its port taken (attempt {attempt}); starting again on fresh ports"
                    );
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(n: usize, config: ApacheConfig, partitionable: bool) -> io::Result<Self> {
        let dir = make_temp_dir("ensemble")?;
        let mut cluster = ApacheCluster {
            dir,
            nodes: Vec::with_capacity(n),
            links: None,
            flaps: Mutex::new(Vec::new()),
            tick: Duration::from_millis(u64::from(config.tick_time_ms)),
        };
        // On error, dropping `cluster` kills what started and removes the directory.
        let held = hold_free_ports(3 * n)?;
        let ports = ports_of(&held)?;
        let (client, rest) = ports.split_at(n);
        let (quorum, election) = rest.split_at(n);
        if partitionable {
            // Bound while the servers' ports are held, so no proxy takes one of them.
            cluster.links = Some(Links::start(quorum, election)?);
        }
        drop(held);
        let mut servers = String::new();
        for i in 0..n {
            let _ = writeln!(servers, "server.{}=127.0.0.1:{}:{}", i + 1, quorum[i], election[i]);
        }
        for (i, port) in client.iter().enumerate() {
            let servers = match &cluster.links {
                Some(l) => l.server_lines(i, quorum, election),
                None => servers.clone(),
            };
            let extra = format!(
                "initLimit=10\n\
                 syncLimit={SYNC_LIMIT_TICKS}\n\
                 reconfigEnabled=false\n\
                 standaloneEnabled=false\n\
                 {servers}"
            );
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

    /// The sync limit (`syncLimit` ticks of `tickTime`): a leader that has not heard from a
    /// quorum of followers for this long gives up leadership (and drops its clients); a
    /// follower that has not heard from its leader for this long leaves it.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start(3, Default::default())?;
    /// assert_eq!(cluster.sync_limit(), std::time::Duration::from_secs(5)); // 5 ticks of 1 s
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn sync_limit(&self) -> Duration {
        self.tick * SYNC_LIMIT_TICKS
    }

    /// Whether the ensemble was started with [`start_partitionable`](Self::start_partitionable).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// assert!(cluster.is_partitionable());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_partitionable(&self) -> bool {
        self.links.is_some()
    }

    fn links_for(&self, from: usize, to: usize) -> io::Result<&Links> {
        let links = self.links.as_ref().ok_or_else(|| {
            io::Error::new(
                ErrorKind::Unsupported,
                "this ensemble is not partitionable (start it with ApacheCluster::start_partitionable)",
            )
        })?;
        let n = self.nodes.len();
        if from >= n || to >= n || from == to {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("no link from node {from} to node {to} in an ensemble of {n}"),
            ));
        }
        Ok(links)
    }

    /// Holds the bytes from node `from` to node `to` (a one-way partition), on every
    /// connection between them, whichever opened it; the other direction keeps flowing.
    /// See [`start_partitionable`](Self::start_partitionable) for what that means to the
    /// servers.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unsupported`] if the ensemble is not partitionable;
    /// [`ErrorKind::InvalidInput`] if `from == to` or either is not a node index.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// cluster.block(0, 1)?; // node 1 hears nothing from node 0; node 0 still hears node 1
    /// cluster.unblock(0, 1)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn block(&self, from: usize, to: usize) -> io::Result<()> {
        self.links_for(from, to)?.state.set(from, to, true);
        Ok(())
    }

    /// Lets the bytes from node `from` to node `to` flow again (what was held is delivered).
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// cluster.block(2, 0)?;
    /// cluster.unblock(2, 0)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn unblock(&self, from: usize, to: usize) -> io::Result<()> {
        self.links_for(from, to)?.state.set(from, to, false);
        Ok(())
    }

    /// Whether the bytes from node `from` to node `to` are held now.
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// cluster.cut(0, 1)?;
    /// assert!(cluster.is_blocked(0, 1)? && cluster.is_blocked(1, 0)?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_blocked(&self, from: usize, to: usize) -> io::Result<bool> {
        Ok(self.links_for(from, to)?.state.get(from, to))
    }

    /// Connections node `from` has opened to node `to` through its proxy so far (quorum and
    /// election ports together; an election connection opened back on the rewritten address
    /// counts here too). Shows that the servers use the proxies.
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let opened: usize = (1..3).map(|j| cluster.link_connections(j, 0).unwrap_or(0)).sum();
    /// assert!(opened > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn link_connections(&self, from: usize, to: usize) -> io::Result<usize> {
        Ok(self.links_for(from, to)?.state.accepted(from, to))
    }

    /// Cuts the link between nodes `a` and `b` both ways ([`block`](Self::block) in both
    /// directions).
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// cluster.cut(1, 2)?;
    /// cluster.heal_links();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut(&self, a: usize, b: usize) -> io::Result<()> {
        self.block(a, b)?;
        self.block(b, a)
    }

    /// Cuts node `i` off from every other node, both ways. Its clients can still reach it:
    /// a leader keeps their connections until it notices it lost its quorum (within
    /// [`sync_limit`](Self::sync_limit)), then drops them; a follower drops them when it
    /// leaves its leader.
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let leader = cluster.leader().expect("a leader");
    /// cluster.isolate(leader)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn isolate(&self, i: usize) -> io::Result<()> {
        for j in (0..self.nodes.len()).filter(|&j| j != i) {
            self.cut(i, j)?;
        }
        if self.nodes.len() == 1 {
            self.links_for(i, i)?;
        }
        Ok(())
    }

    /// Makes the directions `dirs` (`(from, to)` pairs) flap: held for `down`, open for `up`,
    /// again and again, on a thread of its own, until [`heal_links`](Self::heal_links).
    ///
    /// # Errors
    ///
    /// As [`block`](Self::block) for any pair; or an error if the thread cannot be spawned.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// let leader = cluster.leader().expect("a leader");
    /// let follower = (leader + 1) % 3;
    /// let (down, up) = (Duration::from_millis(1500), Duration::from_millis(500));
    /// cluster.flap(&[(leader, follower), (follower, leader)], down, up)?;
    /// std::thread::sleep(Duration::from_secs(10));
    /// cluster.heal_links();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn flap(&self, dirs: &[(usize, usize)], down: Duration, up: Duration) -> io::Result<()> {
        let mut state = None;
        for &(from, to) in dirs {
            state = Some(self.links_for(from, to)?.state.clone());
        }
        let Some(state) = state else {
            return Ok(());
        };
        let flap = FlapThread::start(state, dirs.to_vec(), down, up)?;
        self.flaps.lock().push(flap);
        Ok(())
    }

    /// Stops every flapping link and lets every link's bytes flow again. Does nothing on an
    /// ensemble that is not partitionable.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = zk_testing::apache::ApacheCluster::start_partitionable(3, Default::default())?;
    /// cluster.isolate(0)?;
    /// cluster.heal_links();
    /// assert!(!cluster.is_blocked(0, 1)?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn heal_links(&self) {
        for mut f in self.flaps.lock().drain(..) {
            f.stop();
        }
        if let Some(l) = &self.links {
            l.state.heal_all();
        }
    }

    /// The switches of a partitionable ensemble's links.
    pub(super) fn link_state(&self) -> io::Result<std::sync::Arc<super::links::LinkState>> {
        self.links.as_ref().map(|l| l.state.clone()).ok_or_else(|| {
            io::Error::new(
                ErrorKind::Unsupported,
                "this ensemble is not partitionable (start it with ApacheCluster::start_partitionable)",
            )
        })
    }

    /// `127.0.0.1:<client port>` of node `i`.
    pub(super) fn node_addr(&self, i: usize) -> String {
        self.node(i).addr()
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
        self.heal_links();
        for node in &self.nodes {
            let _ = node.kill();
        }
        if !keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
