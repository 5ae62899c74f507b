//! An ensemble that reconfigures: `reconfigEnabled=true`, dynamic configuration files,
//! servers added, removed and replaced (on new ports) by `reconfig`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use zk_proto::config::{EnsembleConfig, Role, CONFIG_NODE};
use zk_proto::digest::digest_id;
use zk_proto::frame::request_frame;
use zk_proto::{
    xid, Acl, AuthPacket, CreateMode, CreateRequest, DeleteRequest, ErrorCode, GetDataResponse, OpCode, PathRecord,
    PathWatchRequest, ReconfigRequest,
};

use super::config::ApacheConfig;
use super::files::{keep_dirs, make_temp_dir};
use super::node::Node;
use super::probe::{POLL_INTERVAL, READY_TIMEOUT};
use super::process::{hold_free_ports, is_port_clash, ports_of};
use crate::raw::RawConnection;

const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// The super user's credentials on every server of a [`ReconfigurableEnsemble`]: what a
/// client adds (`addauth digest super:test`) to be allowed to `reconfig`. The password
/// (`test`) is the one kazoo's and kezhuw's tests use.
pub const SUPER_AUTH: &str = "super:test";

/// How many times a server start is tried when it finds one of its ports taken.
const START_ATTEMPTS: u32 = 3;

/// The session timeout the harness's own sessions ask for, ms.
const ADMIN_SESSION_MS: i32 = 10_000;

/// A real Apache ZooKeeper ensemble that can be reconfigured: servers are added, removed and
/// replaced by ZooKeeper's dynamic reconfiguration (`reconfig`), each new server on new ports
/// with the next server id.
///
/// Every server runs `QuorumPeerMain` with `reconfigEnabled=true`, `standaloneEnabled=false`
/// and a `dynamicConfigFile` whose lines give every member's client address
/// (`server.N=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>`, no static
/// `clientPort`), so `/zookeeper/config` publishes where clients reach each member. Every
/// server has the super user [`SUPER_AUTH`] (`zookeeper.DigestAuthenticationProvider.superDigest`,
/// whatever `config.super_digest` says): a client needs it to reconfigure (`addauth digest
/// super:test`). Everything listens on `127.0.0.1`, on ports free when they were picked.
///
/// Servers are named by their server id (`myid`, from 1). The ensemble keeps the last
/// configuration it knows ([`config`](Self::config)): its own operations update it, and
/// [`refresh_config`](Self::refresh_config) reads it again after a change made by someone else
/// (a client's `reconfig`). A server removed from the configuration is stopped by
/// [`remove_server`](Self::remove_server), and its files kept until the ensemble is dropped;
/// dropping the ensemble kills every JVM and removes its directory (unless
/// `ZK_TEST_KEEP_DIRS` is set).
///
/// What ZooKeeper does meanwhile: after a reconfig `/zookeeper/config`'s Stat version is -1
/// and the configuration's version is its `version=` line (the reconfig's zxid); removing the
/// leader makes it hand over leadership, and every client of the ensemble loses its connection
/// for a moment; adding or removing a follower disturbs no client but those of a removed
/// server.
///
/// # Errors
///
/// See the individual methods: every wait is bounded (60 s for a server or a quorum, the same
/// for a reconfiguration), and a timeout is an [`ErrorKind::TimedOut`] naming what was seen
/// last.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheConfig, ReconfigurableEnsemble};
///
/// let mut ensemble = ReconfigurableEnsemble::start(3, ApacheConfig::default())?;
/// for old in ensemble.members() {
///     let new = ensemble.replace_server(old)?; // a new JVM on new ports, then `reconfig`
///     assert!(new > 3);
/// }
/// assert_eq!(ensemble.members(), [4, 5, 6]);
/// println!("connect to {}", ensemble.connect_string());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ReconfigurableEnsemble {
    dir: PathBuf,
    config: ApacheConfig,
    /// Every server started and not yet dropped, by id (members and former members).
    servers: BTreeMap<u64, Server>,
    /// The last configuration known.
    current: EnsembleConfig,
    next_id: u64,
}

/// One server: its JVM and its ports.
#[derive(Debug)]
struct Server {
    node: Node,
    quorum_port: u16,
    election_port: u16,
}

impl Server {
    fn line(&self, id: u64, role: Role) -> String {
        format!(
            "server.{id}=127.0.0.1:{}:{}:{role};127.0.0.1:{}",
            self.quorum_port, self.election_port, self.node.client_port
        )
    }
}

impl ReconfigurableEnsemble {
    /// Starts `n` servers (ids 1 to `n`) with `config` and waits (up to 60 s) for a quorum:
    /// one leader, every other server a follower. 3 and 5 are the usual sizes.
    ///
    /// # Errors
    ///
    /// * [`ErrorKind::InvalidInput`] if `n == 0`.
    /// * [`ErrorKind::NotFound`] if `java` or `/usr/share/java/zookeeper.jar` is missing.
    /// * [`ErrorKind::TimedOut`] if no quorum forms within 60 s, or another error if a JVM
    ///   exits early (the message quotes its log); a start whose server found a port taken
    ///   is tried again on fresh ports, twice.
    /// * Any I/O error from creating directories, picking ports, spawning `java`, or
    ///   reading `/zookeeper/config`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_testing::apache::{ApacheConfig, ReconfigurableEnsemble};
    ///
    /// let ensemble = ReconfigurableEnsemble::start(5, ApacheConfig::default())?;
    /// assert_eq!(ensemble.members(), [1, 2, 3, 4, 5]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(n: usize, config: ApacheConfig) -> io::Result<Self> {
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "an ensemble needs at least one server",
            ));
        }
        let config = ApacheConfig {
            super_digest: Some(digest_id(SUPER_AUTH)),
            ..config
        };
        let mut attempt = 1;
        loop {
            match Self::start_once(n, &config) {
                Err(e) if attempt < START_ATTEMPTS && is_port_clash(&e) => {
                    log::info!("an ensemble server found its port taken (attempt {attempt}); starting again");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(n: usize, config: &ApacheConfig) -> io::Result<Self> {
        let dir = make_temp_dir("reconfig")?;
        let mut ensemble = ReconfigurableEnsemble {
            dir,
            config: config.clone(),
            servers: BTreeMap::new(),
            current: EnsembleConfig::new(Vec::new(), 0).map_err(io::Error::other)?,
            next_id: n as u64 + 1,
        };
        // On error, dropping `ensemble` kills what started and removes the directory.
        let held = hold_free_ports(3 * n)?;
        let ports = ports_of(&held)?;
        drop(held);
        for i in 0..n {
            let id = i as u64 + 1;
            let server = ensemble.create_server(id, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2])?;
            ensemble.servers.insert(id, server);
        }
        let mut dynamic = String::new();
        for (id, s) in &ensemble.servers {
            let _ = writeln!(dynamic, "{}", s.line(*id, Role::Participant));
        }
        for s in ensemble.servers.values() {
            fs::write(s.node.dir.join("zoo.cfg.dynamic"), &dynamic)?;
        }
        for s in ensemble.servers.values() {
            s.node.spawn()?;
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        // Until the first read, the members are those started.
        ensemble.current = EnsembleConfig::parse(format!("{dynamic}version=0").as_bytes()).map_err(io::Error::other)?;
        ensemble.wait_for_quorum(READY_TIMEOUT)?;
        ensemble.current = ensemble.read_config_until(deadline)?;
        Ok(ensemble)
    }

    /// Creates server `id`'s directory and static `zoo.cfg` (not its dynamic file).
    fn create_server(&self, id: u64, client: u16, quorum: u16, election: u16) -> io::Result<Server> {
        let dir = self.dir.join(format!("server{id}"));
        fs::create_dir_all(&dir)?;
        let c = &self.config;
        let cfg = format!(
            "tickTime={}\n\
             initLimit=10\n\
             syncLimit=5\n\
             dataDir={}\n\
             maxClientCnxns=0\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             minSessionTimeout={}\n\
             maxSessionTimeout={}\n\
             reconfigEnabled=true\n\
             standaloneEnabled=false\n\
             dynamicConfigFile={}\n",
            c.tick_time_ms,
            dir.join("data").display(),
            c.min_session_timeout_ms,
            c.max_session_timeout_ms,
            dir.join("zoo.cfg.dynamic").display(),
        );
        let myid = usize::try_from(id).map_err(|_| io::Error::new(ErrorKind::InvalidInput, "server id too large"))?;
        let node = Node::create_with_cfg(dir, client, QUORUM_MAIN, c, &cfg, Some(myid))?;
        Ok(Server {
            node,
            quorum_port: quorum,
            election_port: election,
        })
    }

    /// The ids of the members of the last configuration known, ascending.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// assert_eq!(ensemble.members(), [1, 2, 3]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn members(&self) -> Vec<u64> {
        self.current.members().iter().map(|m| m.id).collect()
    }

    /// The last configuration known: read at the start, returned by this ensemble's
    /// reconfigurations, or read by [`refresh_config`](Self::refresh_config).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// assert!(ensemble.config().version() > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn config(&self) -> &EnsembleConfig {
        &self.current
    }

    /// The connect string of the members of the last configuration known:
    /// `127.0.0.1:<client port>,...`, by id.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// assert_eq!(ensemble.connect_string().split(',').count(), 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.current
            .members()
            .iter()
            .filter_map(|m| m.client.as_ref().map(ToString::to_string))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client port of server `id` (a member, a former member still known, or a server
    /// prepared by [`prepare_server`](Self::prepare_server)).
    ///
    /// # Errors
    ///
    /// None: `None` for an id the ensemble never started.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let only_server_1 = format!("127.0.0.1:{}", ensemble.client_port(1).unwrap());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_port(&self, id: u64) -> Option<u16> {
        self.servers.get(&id).map(|s| s.node.client_port)
    }

    /// Server `id`'s configuration line as a participant, `server.<id>=127.0.0.1:<quorum>:
    /// <election>:participant;127.0.0.1:<client>`: what a `reconfig` adds it with.
    ///
    /// # Errors
    ///
    /// None: `None` for an id the ensemble never started.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let id = ensemble.prepare_server()?;
    /// let line = ensemble.server_line(id).unwrap(); // give it to a client's reconfig
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn server_line(&self, id: u64) -> Option<String> {
        self.servers.get(&id).map(|s| s.line(id, Role::Participant))
    }

    /// The `srvr` mode of server `id` (`"leader"`, `"follower"`, `"observer"`), or `None`
    /// when it does not answer, is not serving, or is unknown.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// println!("{:?}", ensemble.mode(1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn mode(&self, id: u64) -> Option<String> {
        self.servers.get(&id).and_then(|s| s.node.mode())
    }

    /// The id of the member that reports `Mode: leader` now, if any (during an election
    /// there may be none).
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let leader = ensemble.leader().expect("a quorum has a leader");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn leader(&self) -> Option<u64> {
        self.members()
            .into_iter()
            .find(|&id| self.mode(id).as_deref() == Some("leader"))
    }

    /// Whether server `id`'s JVM is alive.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// assert!(ensemble.is_running(1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self, id: u64) -> bool {
        self.servers.get(&id).is_some_and(|s| s.node.is_running())
    }

    /// The file that receives server `id`'s output.
    ///
    /// # Errors
    ///
    /// None.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// println!("{}", std::fs::read_to_string(ensemble.log_path(1).unwrap())?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn log_path(&self, id: u64) -> Option<&Path> {
        self.servers.get(&id).map(|s| s.node.log_path.as_path())
    }

    fn server(&self, id: u64) -> io::Result<&Server> {
        self.servers.get(&id).ok_or_else(|| {
            io::Error::new(
                ErrorKind::InvalidInput,
                format!("no server {id} in this ensemble (servers: {:?})", self.servers.keys()),
            )
        })
    }

    /// Stops server `id` gracefully (SIGTERM; SIGKILL after 15 s) and waits for its JVM to
    /// exit. Its membership does not change: a member stopped is a member down.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an unknown id; an error if the process cannot be
    /// signalled or waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// ensemble.stop(3)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&mut self, id: u64) -> io::Result<()> {
        self.server(id)?.node.stop()
    }

    /// Crashes server `id` (SIGKILL) and waits for its JVM to exit.
    ///
    /// # Errors
    ///
    /// As [`stop`](Self::stop).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let leader = ensemble.leader().unwrap();
    /// ensemble.kill(leader)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill(&mut self, id: u64) -> io::Result<()> {
        self.server(id)?.node.kill()
    }

    /// Starts server `id` again (stopping it first if it runs), with its ports, data and
    /// configuration files (which the server rewrote at each reconfiguration), and waits (up
    /// to 60 s) until it serves as leader, follower or observer.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an unknown id; [`ErrorKind::TimedOut`] if it does not
    /// serve within 60 s, another error if its JVM exits early.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// ensemble.kill(2)?;
    /// ensemble.restart(2)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self, id: u64) -> io::Result<()> {
        let node = &self.server(id)?.node;
        node.stop()?;
        node.start_and_wait(&["leader", "follower", "observer"], Instant::now() + READY_TIMEOUT)
    }

    /// Starts a new server, not yet a member: the next id, fresh ports, and a dynamic
    /// configuration file with the current members and itself as an observer (so that it
    /// finds the leader, adopts the committed configuration and follows without a vote, as
    /// ZooKeeper's documentation asks of a joiner). Waits (up to 60 s) until it serves. A
    /// `reconfig` that adds [`server_line`](Self::server_line) makes it a member;
    /// [`add_server`](Self::add_server) does both.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if it does not serve within 60 s, another error if its JVM
    /// exits early (tried again on fresh ports, twice, when a port was taken); I/O errors of
    /// its files.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let id = ensemble.prepare_server()?;
    /// assert!(!ensemble.members().contains(&id));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn prepare_server(&mut self) -> io::Result<u64> {
        let mut attempt = 1;
        loop {
            match self.prepare_once() {
                Err(e) if attempt < START_ATTEMPTS && is_port_clash(&e) => {
                    log::info!("a joining server found its port taken (attempt {attempt}); trying new ports");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn prepare_once(&mut self) -> io::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let held = hold_free_ports(3)?;
        let ports = ports_of(&held)?;
        drop(held);
        let server = self.create_server(id, ports[0], ports[1], ports[2])?;
        let mut dynamic = String::new();
        for m in self.current.members() {
            let _ = writeln!(dynamic, "{m}");
        }
        let _ = writeln!(dynamic, "{}", server.line(id, Role::Observer));
        fs::write(server.node.dir.join("zoo.cfg.dynamic"), dynamic)?;
        let started = server
            .node
            .start_and_wait(&["follower", "observer"], Instant::now() + READY_TIMEOUT);
        // Known even when it failed, so that the drop cleans it up.
        self.servers.insert(id, server);
        started.map(|()| id)
    }

    /// Adds a new server: [`prepare_server`](Self::prepare_server), then `reconfig` adding it
    /// as a participant (as the super user, retried while ZooKeeper answers
    /// `NewConfigNoQuorum` or `ReconfigInProgress`), then waits for a quorum. Returns its id.
    ///
    /// # Errors
    ///
    /// As [`prepare_server`](Self::prepare_server); [`ErrorKind::TimedOut`] if the
    /// reconfiguration or the quorum does not come within 60 s; [`ErrorKind::Other`] if
    /// ZooKeeper refuses it otherwise (the message names the code).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let id = ensemble.add_server()?;
    /// assert_eq!(ensemble.members(), [1, 2, 3, id]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn add_server(&mut self) -> io::Result<u64> {
        let id = self.prepare_server()?;
        let line = self.server(id)?.line(id, Role::Participant);
        let req = ReconfigRequest {
            joining_servers: Some(line),
            cur_config_id: -1,
            ..Default::default()
        };
        self.reconfigure(&req, None, |c| {
            c.member(id).is_some_and(|m| m.role == Role::Participant)
        })?;
        self.wait_for_quorum(READY_TIMEOUT)?;
        Ok(id)
    }

    /// Removes member `id`: `reconfig` removing it (as the super user, retried while
    /// ZooKeeper answers `NewConfigNoQuorum` or `ReconfigInProgress`, and after a lost
    /// connection until the configuration shows it gone; removing the leader loses every
    /// connection for a moment), a write that commits in the new configuration (so that it
    /// is active), then the server is stopped and the remaining members' quorum waited for.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] if `id` is not a member; [`ErrorKind::TimedOut`] if the
    /// reconfiguration or the quorum does not come within 60 s; [`ErrorKind::Other`] if
    /// ZooKeeper refuses it (e.g. `BadArguments` for the last voter).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// ensemble.remove_server(2)?;
    /// assert_eq!(ensemble.members(), [1, 3]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remove_server(&mut self, id: u64) -> io::Result<()> {
        if self.current.member(id).is_none() {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("server {id} is not a member (members: {:?})", self.members()),
            ));
        }
        let req = ReconfigRequest {
            leaving_servers: Some(id.to_string()),
            cur_config_id: -1,
            ..Default::default()
        };
        self.reconfigure(&req, Some(id), |c| c.member(id).is_none())?;
        self.stop(id)?;
        self.wait_for_quorum(READY_TIMEOUT)
    }

    /// Replaces member `id` by a new server on new ports: [`add_server`](Self::add_server),
    /// then [`remove_server`](Self::remove_server)`(id)`. Returns the new server's id.
    ///
    /// # Errors
    ///
    /// As [`add_server`](Self::add_server) and [`remove_server`](Self::remove_server).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let new = ensemble.replace_server(1)?;
    /// assert_eq!(ensemble.members(), [2, 3, new]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn replace_server(&mut self, id: u64) -> io::Result<u64> {
        if self.current.member(id).is_none() {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("server {id} is not a member (members: {:?})", self.members()),
            ));
        }
        let new = self.add_server()?;
        self.remove_server(id)?;
        Ok(new)
    }

    /// Reads `/zookeeper/config` again (after a `sync`, from a running member) and makes it
    /// the configuration known: after a change made by a client's `reconfig`. Retried (until
    /// 60 s) while no member answers, e.g. during an election.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if no running member answers within 60 s (the last error in
    /// the message).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// let version = ensemble.refresh_config()?.version();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn refresh_config(&mut self) -> io::Result<&EnsembleConfig> {
        self.current = self.read_config_until(Instant::now() + READY_TIMEOUT)?;
        Ok(&self.current)
    }

    /// Waits until the members form a quorum: more than half of the voters run, exactly one
    /// running member reports `leader` and every other running member `follower` or
    /// `observer`. Servers that are not members are not asked.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] if that does not happen within `timeout` (the message lists
    /// the modes seen last), or [`ErrorKind::Other`] if a member's JVM exits meanwhile.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let mut ensemble = zk_testing::apache::ReconfigurableEnsemble::start(3, Default::default())?;
    /// ensemble.kill(ensemble.leader().unwrap())?;
    /// ensemble.wait_for_quorum(Duration::from_secs(60))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_for_quorum(&self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut modes = Vec::new();
            let (mut voters, mut running_voters, mut leaders, mut others_ok) = (0, 0, 0, true);
            for m in self.current.members() {
                let voter = m.role == Role::Participant;
                voters += usize::from(voter);
                let Some(s) = self.servers.get(&m.id) else {
                    modes.push(format!("{}:unknown", m.id));
                    continue;
                };
                if let Some(status) = s.node.exited() {
                    return Err(s.node.error(
                        ErrorKind::Other,
                        &format!("(server {}) exited ({status}) while waiting for a quorum", m.id),
                        0,
                    ));
                }
                if !s.node.is_running() {
                    modes.push(format!("{}:down", m.id));
                    continue;
                }
                running_voters += usize::from(voter);
                let mode = s.node.mode();
                match mode.as_deref() {
                    Some("leader") => leaders += 1,
                    Some("follower" | "observer") => {}
                    _ => others_ok = false,
                }
                modes.push(format!("{}:{}", m.id, mode.as_deref().unwrap_or("not serving")));
            }
            if running_voters > voters / 2 && leaders == 1 && others_ok {
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

    /// The client addresses of the running servers known, members first, `avoid` last.
    fn addresses(&self, avoid: Option<u64>) -> Vec<String> {
        let members = self.members();
        let mut ids: Vec<u64> = self.servers.keys().copied().collect();
        ids.sort_by_key(|id| (Some(*id) == avoid, !members.contains(id), *id));
        ids.into_iter()
            .filter(|id| self.is_running(*id))
            .filter_map(|id| self.client_port(id))
            .map(|p| format!("127.0.0.1:{p}"))
            .collect()
    }

    /// Reads the configuration (sync, then getData) from the first running server that
    /// answers, until `deadline`.
    fn read_config_until(&self, deadline: Instant) -> io::Result<EnsembleConfig> {
        let mut last = String::from("no server running");
        loop {
            for addr in self.addresses(None) {
                match read_config(&addr) {
                    Ok(c) => return Ok(c),
                    Err(e) => last = format!("{addr}: {e}"),
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("could not read {CONFIG_NODE} in time; last: {last}"),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// Sends `req` as the super user until the configuration satisfies `done` (the new one
    /// becomes the one known), then makes a write that commits in it. Retried while
    /// ZooKeeper answers `NewConfigNoQuorum` or `ReconfigInProgress`, and after a lost
    /// connection (the configuration is read to see whether the change was made). `avoid`
    /// is the server asked last (the one leaving).
    fn reconfigure(
        &mut self,
        req: &ReconfigRequest,
        avoid: Option<u64>,
        done: impl Fn(&EnsembleConfig) -> bool,
    ) -> io::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::from("not tried");
        loop {
            for addr in self.addresses(avoid) {
                match send_reconfig(&addr, req) {
                    Ok(Ok(config)) if done(&config) => {
                        self.current = config;
                        return Ok(());
                    }
                    Ok(Ok(config)) => last = format!("{addr}: a configuration without the change: {config}"),
                    Ok(Err(code))
                        if code == ErrorCode::NewConfigNoQuorum.code()
                            || code == ErrorCode::ReconfigInProgress.code() =>
                    {
                        last = format!("{addr}: {}", code_name(code));
                        break;
                    }
                    Ok(Err(code)) => {
                        return Err(io::Error::other(format!(
                            "ZooKeeper refused the reconfig {req:?} with {} ({code})",
                            code_name(code)
                        )))
                    }
                    Err(e) => {
                        // The connection was lost, maybe after the change: look.
                        last = format!("{addr}: {e}");
                        if let Ok(config) = read_config_any(&self.addresses(avoid)) {
                            if done(&config) {
                                self.current = config;
                                return self.commit_barrier(deadline);
                            }
                        }
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("reconfig {req:?} not done within {READY_TIMEOUT:?}; last: {last}"),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// A write that commits once the configuration is active (ZooKeeper's documentation:
    /// a reconfig's commit does not mean a quorum of the new configuration activated it; a
    /// later write's does), retried on another server until `deadline`.
    fn commit_barrier(&self, deadline: Instant) -> io::Result<()> {
        loop {
            let mut last = String::new();
            for addr in self.addresses(None) {
                match admin_session(&addr).and_then(|mut c| barrier(&mut c)) {
                    Ok(()) => return Ok(()),
                    Err(e) => last = format!("{addr}: {e}"),
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("no write committed after the reconfig; last: {last}"),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

impl Drop for ReconfigurableEnsemble {
    fn drop(&mut self) {
        for s in self.servers.values() {
            let _ = s.node.kill();
        }
        if !keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn code_name(code: i32) -> &'static str {
    ErrorCode::from_code(code).map_or("an unknown code", ErrorCode::name)
}

/// A session on `addr` authenticated as the super user.
fn admin_session(addr: &str) -> io::Result<RawConnection> {
    let (mut c, resp) = RawConnection::connect(addr, ADMIN_SESSION_MS, None)?;
    if resp.timeout <= 0 {
        return Err(io::Error::other("the server refused a new session"));
    }
    let auth = AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: SUPER_AUTH.as_bytes().to_vec(),
    };
    c.send_raw(&request_frame(xid::AUTH, OpCode::Auth, Some(&auth)))?;
    let r = c.read_reply()?;
    if r.header.err != 0 {
        return Err(io::Error::other(format!(
            "addauth answered {}",
            code_name(r.header.err)
        )));
    }
    Ok(c)
}

/// `reconfig` on `addr`: the new configuration, or the server's error code; then a write
/// that commits in it, and the session closed.
fn send_reconfig(addr: &str, req: &ReconfigRequest) -> io::Result<Result<EnsembleConfig, i32>> {
    let mut c = admin_session(addr)?;
    let r = c.request(OpCode::Reconfig, req)?;
    if r.header.err != 0 {
        let _ = c.close_session();
        return Ok(Err(r.header.err));
    }
    let data = r.decode::<GetDataResponse>()?;
    let config = EnsembleConfig::parse(&data.data).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
    barrier(&mut c)?;
    Ok(Ok(config))
}

/// A write that must commit (an ephemeral node created and deleted), then the session's close.
fn barrier(c: &mut RawConnection) -> io::Result<()> {
    let create = CreateRequest {
        path: "/zk-testing-reconfig-barrier-".into(),
        data: Vec::new(),
        acl: Acl::open_unsafe(),
        flags: CreateMode::EphemeralSequential.code(),
    };
    let r = c.request(OpCode::Create, &create)?;
    if r.header.err != 0 {
        return Err(io::Error::other(format!(
            "barrier create answered {}",
            code_name(r.header.err)
        )));
    }
    let path = r.decode::<PathRecord>()?.path;
    let _ = c.request(OpCode::Delete, &DeleteRequest { path, version: -1 });
    let _ = c.close_session();
    Ok(())
}

/// The configuration `addr` has after a `sync`.
fn read_config(addr: &str) -> io::Result<EnsembleConfig> {
    let (mut c, resp) = RawConnection::connect(addr, ADMIN_SESSION_MS, None)?;
    if resp.timeout <= 0 {
        return Err(io::Error::other("the server refused a new session"));
    }
    let r = c.request(OpCode::Sync, &PathRecord { path: "/".into() })?;
    if r.header.err != 0 {
        return Err(io::Error::other(format!("sync answered {}", code_name(r.header.err))));
    }
    let get = PathWatchRequest {
        path: CONFIG_NODE.into(),
        watch: false,
    };
    let r = c.request(OpCode::GetData, &get)?;
    if r.header.err != 0 {
        return Err(io::Error::other(format!(
            "getData answered {}",
            code_name(r.header.err)
        )));
    }
    let data = r.decode::<GetDataResponse>()?;
    let _ = c.close_session();
    EnsembleConfig::parse(&data.data).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))
}

fn read_config_any(addrs: &[String]) -> io::Result<EnsembleConfig> {
    let mut last = io::Error::other("no server running");
    for a in addrs {
        match read_config(a) {
            Ok(c) => return Ok(c),
            Err(e) => last = e,
        }
    }
    Err(last)
}
