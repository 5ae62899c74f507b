//! The server under test (embedded, standalone Apache or an ensemble), the
//! fault kinds it supports, and healing it after a fault.

use std::io;
use std::sync::Mutex;
use std::time::Duration;

use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::embedded::ServerConfig;
use zk_testing::TestingServer;

use crate::cli::BackendKind;

pub(crate) enum Server {
    Embedded(TestingServer),
    Apache(TestingServer),
    Ensemble(Mutex<ApacheCluster>, Vec<String>),
}

const STANDALONE_KINDS: &[&str] = &[
    "partition-expire",
    "instant-expire",
    "cut",
    "drop-all",
    "pause-short",
    "pause-long",
    "restart",
    "kill-worker",
    "break-waiter",
];

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

/// The composed faults of the ensemble alone.
const ENSEMBLE_COMPOSED_KINDS: &[&str] = &["composed-ensemble-partition-failover"];

const ENSEMBLE_KINDS: &[&str] = &[
    "isolate-leader",
    "isolate-follower",
    "oneway-from-leader",
    "oneway-to-leader",
    "flap-leader",
    "minority-client",
    "pause-leader-sync",
    "pause-holder-minority",
    "partition-expire",
    "instant-expire",
    "cut",
    "drop-all",
    "pause-short",
    "pause-long",
    "stop-leader",
    "kill-leader",
    "stop-follower",
    "kill-follower",
    "kill-worker",
    "break-waiter",
];

impl Server {
    pub(crate) fn start(kind: BackendKind) -> io::Result<Server> {
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
                Server::Ensemble(Mutex::new(c), addrs)
            }
        })
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Server::Embedded(_) => "embedded",
            Server::Apache(_) => "apache",
            Server::Ensemble(..) => "ensemble",
        }
    }

    pub(crate) fn addrs(&self) -> Vec<String> {
        match self {
            Server::Embedded(s) | Server::Apache(s) => vec![s.connect_string()],
            Server::Ensemble(_, a) => a.clone(),
        }
    }

    pub(crate) fn connect_string(&self) -> String {
        self.addrs().join(",")
    }

    pub(crate) fn kinds(&self) -> &'static [&'static str] {
        match self {
            Server::Ensemble(..) => ENSEMBLE_KINDS,
            _ => STANDALONE_KINDS,
        }
    }

    /// The composed kinds this server supports.
    pub(crate) fn composed_kinds(&self) -> Vec<&'static str> {
        let mut v = COMPOSED_KINDS.to_vec();
        if matches!(self, Server::Ensemble(..)) {
            v.insert(3, ENSEMBLE_COMPOSED_KINDS[0]);
        }
        v
    }

    /// The fault kinds to inject: `only` (`all`, `partitions`, `composed`,
    /// or kinds separated by commas) among those this server supports.
    /// `all` is the plain kinds; the composed ones are asked for by name or
    /// as `composed`.
    pub(crate) fn select_kinds(&self, only: &str) -> Result<Vec<&'static str>, String> {
        let all: Vec<&'static str> = self.kinds().iter().copied().chain(self.composed_kinds()).collect();
        match only {
            "all" => Ok(self.kinds().to_vec()),
            "partitions" if matches!(self, Server::Ensemble(..)) => Ok(PARTITION_KINDS.to_vec()),
            "partitions" => Err("partition faults need --ensemble".into()),
            "composed" => Ok(self.composed_kinds()),
            list => list
                .split(',')
                .filter(|k| !k.is_empty())
                .map(|k| {
                    all.iter()
                        .copied()
                        .find(|a| *a == k)
                        .ok_or_else(|| format!("fault kind {k} is not one of {}", all.join(",")))
                })
                .collect(),
        }
    }

    pub(crate) fn cluster(&self) -> std::sync::MutexGuard<'_, ApacheCluster> {
        match self {
            Server::Ensemble(c, _) => c.lock().unwrap_or_else(|e| e.into_inner()),
            _ => unreachable!("not an ensemble"),
        }
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
                let mut c = self.cluster();
                c.heal_links();
                for i in 0..c.len() {
                    let _ = c.resume(i);
                    if !c.is_running(i) {
                        c.restart(i)?;
                    }
                }
                c.wait_for_quorum(Duration::from_secs(60))
            }
        }
    }
}
