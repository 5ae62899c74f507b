//! The server under test (embedded, standalone Apache or an ensemble), the
//! fault kinds it supports, and healing it after a fault.
//!
//! The ensemble's handle (`ApacheCluster`) is behind one lock, and most of
//! its calls are quick, but a restart holds it until the restarted node
//! serves (up to 60 s). The parts of a composed fault run at once, each on
//! its own clock, so nothing here holds that lock while it waits for
//! something another part could be holding up: the quorum and the leader are
//! read from the nodes' `srvr` (the lock only to see which processes run), a
//! paused node is resumed by its pid, and the links between the nodes are cut
//! through a [`LinkBook`] in which each part holds its own directions and
//! gives back only those (`holds.rs`). A restart waits (bounded) until no link is cut:
//! a node cannot join an ensemble cut apart, and holding the handle while it
//! tries would keep the part that cut the links from healing them on time.

use std::io;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::embedded::ServerConfig;
use zk_testing::TestingServer;

use crate::cli::BackendKind;
use crate::holds::{Hold, HoldBook};
use crate::reconf::Reconf;

/// The links between ensemble nodes the parts of a fault hold cut, by
/// direction `(from, to)` ([`crate::holds`]).
pub(crate) type LinkBook = HoldBook<(usize, usize)>;

/// One part's hold on some links ([`Server::hold_links`]): given back on
/// drop, which opens each direction no other part holds cut.
pub(crate) type LinkHold<'a> = Hold<'a, (usize, usize)>;

pub(crate) enum Server {
    Embedded(TestingServer),
    Apache(TestingServer),
    Ensemble(Mutex<ApacheCluster>, Vec<String>, LinkBook),
    /// An ensemble that `reconfig` changes (`src/reconf.rs`): its members
    /// are named by server id, and change.
    Reconfigurable(Box<Reconf>),
}

/// The plain kinds every backend makes, before its own.
const COMMON_KINDS: &[&str] = &[
    "partition-expire",
    "instant-expire",
    "cut",
    "drop-all",
    "pause-short",
    "pause-long",
];

/// The kinds every backend makes after its own.
const LAST_KINDS: &[&str] = &["kill-worker", "break-waiter"];

/// A standalone server's own kind: it restarts.
const STANDALONE_KINDS: &[&str] = &["restart"];

/// The ensemble's node kinds: a node stopped or killed, then restarted.
const NODE_KINDS: &[&str] = &["stop-leader", "kill-leader", "stop-follower", "kill-follower"];

/// The partitions inside the ensemble (its server-to-server links).
pub(crate) const PARTITION_KINDS: &[&str] = &[
    "isolate-leader",
    "isolate-follower",
    "oneway-from-leader",
    "oneway-to-leader",
    "flap-leader",
    "minority-client",
    "pause-leader-sync",
    "pause-holder-minority",
];

/// The composed faults (faults/composed.rs), on every backend.
const COMPOSED_KINDS: &[&str] = &[
    "composed-partition-break-heal",
    "composed-partition-restart",
    "composed-pause-expire-resume",
    "composed-break-during-handoff",
    "composed-random",
];

/// The reconfigurable ensemble's own kind: every server replaced, one by
/// one, on new ports (`src/faults/rolling.rs`).
pub(crate) const ROLLING_KINDS: &[&str] = &["rolling-replace"];

/// The common kinds the reconfigurable ensemble makes: those that need no
/// fault proxy (its workers connect straight to the members: a client that
/// follows `/zookeeper/config` leaves any proxy at its first read, the
/// configuration naming the servers' own addresses).
const RECONF_COMMON_KINDS: &[&str] = &["instant-expire", "pause-short", "pause-long"];

/// The composed faults the reconfigurable ensemble makes (those that need
/// no fault proxy).
const RECONF_COMPOSED_KINDS: &[&str] = &[
    "composed-pause-expire-resume",
    "composed-break-during-handoff",
    "composed-random",
    "composed-rolling",
];

/// The composed faults of the ensemble alone.
const ENSEMBLE_COMPOSED_KINDS: &[&str] = &["composed-ensemble-partition-failover"];

impl Server {
    /// Starts the server of `kind` (`servers`: the reconfigurable
    /// ensemble's size).
    pub(crate) fn start(kind: BackendKind, servers: usize) -> io::Result<Server> {
        Ok(match kind {
            BackendKind::Embedded => Server::Embedded(TestingServer::embedded_with(ServerConfig::default())?),
            BackendKind::Apache => Server::Apache(TestingServer::apache_with(ApacheConfig::default())?),
            BackendKind::Ensemble => {
                if !zk_testing::apache::available() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "Apache ZooKeeper is not installed (apt-get install zookeeper) or java is missing",
                    ));
                }
                let c = ApacheCluster::start_partitionable(3, ApacheConfig::default())?;
                let addrs = (0..c.len())
                    .map(|i| format!("127.0.0.1:{}", c.client_port(i)))
                    .collect();
                Server::Ensemble(Mutex::new(c), addrs, LinkBook::default())
            }
            BackendKind::Reconfigurable => {
                if !zk_testing::apache::available() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "Apache ZooKeeper is not installed (apt-get install zookeeper) or java is missing",
                    ));
                }
                Server::Reconfigurable(Box::new(Reconf::start(servers)?))
            }
        })
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Server::Embedded(_) => "embedded",
            Server::Apache(_) => "apache",
            Server::Ensemble(..) => "ensemble",
            Server::Reconfigurable(_) => "reconfigurable",
        }
    }

    /// The servers' client addresses (the reconfigurable ensemble's: its
    /// members now).
    pub(crate) fn addrs(&self) -> Vec<String> {
        match self {
            Server::Embedded(s) | Server::Apache(s) => vec![s.connect_string()],
            Server::Ensemble(_, a, _) => a.clone(),
            Server::Reconfigurable(r) => r.addrs(),
        }
    }

    /// The reconfigurable ensemble, if this is one.
    pub(crate) fn reconf(&self) -> Option<&Reconf> {
        match self {
            Server::Reconfigurable(r) => Some(r),
            _ => None,
        }
    }

    pub(crate) fn connect_string(&self) -> String {
        self.addrs().join(",")
    }

    /// The plain kinds this server supports (`all`), in the order the
    /// first round shuffles: the ensemble's partitions, the common kinds,
    /// the server's own, the last ones.
    pub(crate) fn kinds(&self) -> Vec<&'static str> {
        let (first, common, own): (&[&'static str], &[&'static str], _) = match self {
            Server::Ensemble(..) => (PARTITION_KINDS, COMMON_KINDS, NODE_KINDS),
            Server::Reconfigurable(_) => (ROLLING_KINDS, RECONF_COMMON_KINDS, NODE_KINDS),
            _ => (&[], COMMON_KINDS, STANDALONE_KINDS),
        };
        [first, common, own, LAST_KINDS].concat()
    }

    /// The composed kinds this server supports.
    pub(crate) fn composed_kinds(&self) -> Vec<&'static str> {
        if matches!(self, Server::Reconfigurable(_)) {
            return RECONF_COMPOSED_KINDS.to_vec();
        }
        let mut v = COMPOSED_KINDS.to_vec();
        if matches!(self, Server::Ensemble(..)) {
            v.insert(3, ENSEMBLE_COMPOSED_KINDS[0]);
        }
        v
    }

    /// The fault kinds to inject: `only` (`all`, `partitions`, `composed`,
    /// or kinds separated by commas, where `all` and `composed` stand for
    /// theirs) among those this server supports. `all` is the plain kinds;
    /// the composed ones are asked for by name or as `composed`.
    pub(crate) fn select_kinds(&self, only: &str) -> Result<Vec<&'static str>, String> {
        let all: Vec<&'static str> = self.kinds().into_iter().chain(self.composed_kinds()).collect();
        match only {
            "partitions" if matches!(self, Server::Ensemble(..)) => Ok(PARTITION_KINDS.to_vec()),
            "partitions" => Err("partition faults need --ensemble".into()),
            list => {
                let mut kinds: Vec<&'static str> = Vec::new();
                for k in list.split(',').filter(|k| !k.is_empty()) {
                    let named = match k {
                        "all" => self.kinds(),
                        "composed" => self.composed_kinds(),
                        k => vec![all
                            .iter()
                            .copied()
                            .find(|a| *a == k)
                            .ok_or_else(|| format!("fault kind {k} is not one of {}", all.join(",")))?],
                    };
                    for k in named {
                        if !kinds.contains(&k) {
                            kinds.push(k);
                        }
                    }
                }
                Ok(kinds)
            }
        }
    }

    /// The ensemble's handle, locked: hold it only for quick calls (see the
    /// module's doc).
    pub(crate) fn cluster(&self) -> MutexGuard<'_, ApacheCluster> {
        match self {
            Server::Ensemble(c, ..) => c.lock().unwrap_or_else(|e| e.into_inner()),
            _ => unreachable!("not a partitionable ensemble"),
        }
    }

    fn links(&self) -> &LinkBook {
        match self {
            Server::Ensemble(_, _, l) => l,
            _ => unreachable!("not an ensemble"),
        }
    }

    /// Each ensemble node's `Mode:` (`None`: it does not answer or does not
    /// serve), asked without the handle's lock.
    pub(crate) fn modes(&self) -> Vec<Option<String>> {
        self.addrs()
            .iter()
            .map(|a| {
                zk_testing::fourlw::four_letter_word(a, "srvr", Duration::from_millis(1500))
                    .ok()?
                    .lines()
                    .find_map(|l| l.strip_prefix("Mode:"))
                    .map(|m| m.trim().to_string())
            })
            .collect()
    }

    /// The ensemble node that says it leads, if one does (without the lock).
    pub(crate) fn leader(&self) -> Option<usize> {
        self.modes().iter().position(|m| m.as_deref() == Some("leader"))
    }

    /// Which ensemble nodes' processes run (the lock, briefly).
    pub(crate) fn running(&self) -> Vec<bool> {
        let c = self.cluster();
        (0..c.len()).map(|i| c.is_running(i)).collect()
    }

    /// Waits until the running nodes form a quorum (a majority, one leader,
    /// the others following), as `ApacheCluster::wait_for_quorum`, but
    /// taking the handle's lock only to see which processes run.
    ///
    /// Polled every 100 ms: the nodes' modes are another process's state,
    /// told by nothing but `srvr`.
    pub(crate) fn wait_quorum(&self, timeout: Duration) -> io::Result<()> {
        if let Server::Reconfigurable(r) = self {
            return r.wait_quorum(timeout);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let running = self.running();
            let modes = self.modes();
            let n = running.len();
            let up: Vec<usize> = (0..n).filter(|&i| running[i]).collect();
            let leaders = up.iter().filter(|&&i| modes[i].as_deref() == Some("leader")).count();
            let others_ok = up.iter().all(|&i| {
                matches!(
                    modes[i].as_deref(),
                    Some("leader") | Some("follower") | Some("observer")
                )
            });
            if up.len() > n / 2 && leaders == 1 && others_ok {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let seen: Vec<String> = (0..n)
                    .map(|i| match (running[i], &modes[i]) {
                        (false, _) => format!("{i}:down"),
                        (true, Some(m)) => format!("{i}:{m}"),
                        (true, None) => format!("{i}:not serving"),
                    })
                    .collect();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no quorum within {timeout:?} (modes: {})", seen.join(", ")),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Holds the bytes of each direction `(from, to)` in `dirs` until the
    /// returned [`LinkHold`] is given back (or dropped): another part's hold on
    /// the same direction keeps it cut after this one is given back.
    pub(crate) fn hold_links(&self, dirs: &[(usize, usize)]) -> io::Result<LinkHold<'_>> {
        {
            let c = self.cluster();
            for &(from, to) in dirs {
                // An unknown pair, or an ensemble that cannot be cut: before
                // anything is counted.
                c.is_blocked(from, to)?;
            }
        }
        self.links().hold(
            dirs,
            |(from, to)| self.cluster().block(from, to),
            move |(from, to)| {
                let _ = self.cluster().unblock(from, to);
            },
        )
    }

    /// Cuts node `i` off from every other node, both ways, until the hold is
    /// given back.
    pub(crate) fn isolate(&self, i: usize) -> io::Result<LinkHold<'_>> {
        let n = self.addrs().len();
        let dirs: Vec<(usize, usize)> = (0..n).filter(|&j| j != i).flat_map(|j| [(i, j), (j, i)]).collect();
        self.hold_links(&dirs)
    }

    /// Restarts ensemble node `i` once no link is cut (waiting at most
    /// `patience` for that; then all the same), and waits until it serves (the
    /// handle's restart). Returns how long it waited for the links.
    pub(crate) fn restart_node(&self, i: usize, patience: Duration) -> io::Result<Duration> {
        let t0 = Instant::now();
        let book = self.links();
        let held = book.wait_clear(t0 + patience);
        let waited = t0.elapsed();
        // The handle is taken before the book is let go: no link is cut
        // between the wait and the restart.
        let mut c = self.cluster();
        drop(held);
        c.restart(i)?;
        Ok(waited)
    }

    /// Stops ensemble node `i` gracefully: SIGTERM, and its exit awaited
    /// without the handle's lock (a JVM takes a moment), then reaped by the
    /// handle's `stop` (which kills it if it ignored SIGTERM for 15 s).
    pub(crate) fn stop_node(&self, i: usize) -> io::Result<()> {
        let pid = self.cluster().pid(i);
        if let Some(pid) = pid {
            // A paused JVM cannot handle SIGTERM: let it continue first.
            let _ = crate::fleet::send_signal(pid, "CONT");
            if crate::fleet::send_signal(pid, "TERM").is_ok() {
                zk_testing::wait_until(Duration::from_secs(15), || !crate::fleet::alive(pid));
            }
        }
        self.cluster().stop(i)
    }

    /// Undoes anything a fault may have left behind: resumes, restarts.
    pub(crate) fn heal(&self) -> io::Result<()> {
        match self {
            Server::Embedded(s) => {
                let e = s.embedded().expect("embedded");
                e.resume();
                if !e.is_running() {
                    e.restart()?;
                }
                Ok(())
            }
            Server::Apache(s) => s.resume(),
            Server::Ensemble(..) => {
                self.links().reset(|| {
                    let mut c = self.cluster();
                    c.heal_links();
                    for i in 0..c.len() {
                        let _ = c.resume(i);
                        if !c.is_running(i) {
                            c.restart(i)?;
                        }
                    }
                    Ok(())
                })?;
                self.wait_quorum(Duration::from_secs(60))
            }
            Server::Reconfigurable(r) => r.heal(),
        }
    }
}
