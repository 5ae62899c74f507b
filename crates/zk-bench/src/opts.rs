//! The command line: which server, which scenarios, which peers.

use clap::{Parser, ValueEnum};

/// Lock benchmarks on the embedded server (default), Apache ZooKeeper, or
/// a server of yours; one `key=value` line per figure.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "zk-bench",
    override_usage = "zk-bench [--connect HOST:PORT | --apache | --ensemble] [--tls] [--peers NAMES | --curator] [--seconds N] [--warmup N] [--only NAMES] [--cache-nodes N] [--cache-writes N] [--failovers N] [--failover-kills N] [--idle-seconds N] [--expiries N] [--barrier-members M] [--barrier-rounds N] [--partition-members K] [--partition-rounds N]",
    args_override_self = true,
    disable_version_flag = true
)]
pub struct Opts {
    /// Benchmark the server at HOST:PORT [default: an embedded server, in-process].
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
    /// Start Debian's Apache ZooKeeper 3.8 instead of the embedded server.
    #[arg(long)]
    pub apache: bool,
    /// Serve and connect over TLS (the embedded server or Apache's
    /// secureClientPort, with certificates made for this run; not with --connect,
    /// --curator or --peers).
    #[arg(long, conflicts_with_all = ["connect", "curator", "peers"])]
    pub tls: bool,
    /// Start a 3-node Apache ZooKeeper 3.8 ensemble instead.
    #[arg(long, conflicts_with = "apache")]
    pub ensemble: bool,
    /// Also run Curator 5.4 (Debian jars) on the same server: the same as
    /// `--peers curator`.
    #[arg(long)]
    pub curator: bool,
    /// Also run these lock implementations, each right after ours (and after
    /// Curator's), on the same server, paths, window and warm-up,
    /// comma-separated: curator (Curator 5.4, Java), zookeeper-client
    /// (kezhuw's async crate 0.11, its Curator-compatible lock), kazoo (2.8,
    /// Python), zookeeper (the zookeeper 0.8 crate: it has no lock recipe, so a
    /// mutex written in this bench on its primitives; keys `zookeeper08.seed_mutex.`).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub peers: Vec<Peer>,
    /// Seconds per timed window.
    #[arg(long, value_name = "N", default_value_t = 3.0)]
    pub seconds: f64,
    /// Seconds of the same work before every timed window, ours and every
    /// peer's alike (the JVM's JIT warm-up).
    #[arg(long, value_name = "N", default_value_t = 5.0)]
    pub warmup: f64,
    /// Only these scenarios, comma-separated: connect, floor, mutex, semaphore,
    /// reentrant, handoff, herd, rwlock, multilock, clients, metrics, cache (the
    /// default set), and the scale scenarios latency, deep, many (run only when
    /// named; `--only scale` names latency, deep, many and clients),
    /// failover (leader election, only when named), and counter,
    /// registration, barrier (issue 33's shared state and registration, only
    /// when named), and discovery, partition (issue 42's service discovery
    /// and set partitioner, only when named).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// The cache scenario: leaves of the subtree whose start and memory are
    /// measured (the latency subtrees of 1, 100 and 1,000 leaves run only
    /// when they are no larger).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub cache_nodes: usize,
    /// The cache scenario: writes measured per latency subtree (after half as
    /// many unmeasured).
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub cache_writes: usize,
    /// The failover scenario: participants of the close and kill failovers.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(2..))]
    pub failover_n: u16,
    /// The failover scenario: close failovers measured (after a tenth as many
    /// unmeasured).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub failovers: usize,
    /// The failover scenario: kill failovers (each waits for a session to
    /// expire; 0: none).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub failover_kills: usize,
    /// The registration scenario: session expiries measured (after 2
    /// unmeasured).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub expiries: usize,
    /// The barrier scenario: members of the double barrier (each its own
    /// session).
    #[arg(long, value_name = "M", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub barrier_members: u16,
    /// The barrier scenario: rounds measured (after a tenth as many
    /// unmeasured).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub barrier_rounds: usize,
    /// The partition scenario: members of the party (each its own session).
    #[arg(long, value_name = "K", default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..))]
    pub partition_members: u16,
    /// The partition scenario: rounds measured (after 1 unmeasured), each an
    /// expiry, a join, a close and a join.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub partition_rounds: usize,
    /// The failover scenario: seconds the idle participants are watched (0:
    /// no idle participants).
    #[arg(long, value_name = "N", default_value_t = 15.0)]
    pub idle_seconds: f64,
}

/// A lock implementation run beside ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Peer {
    /// Curator 5.4 (`scripts/bench/CuratorBench.java`, Debian's jars).
    Curator,
    /// kezhuw's `zookeeper-client` 0.11 and its Curator-compatible lock.
    ZookeeperClient,
    /// kazoo 2.8's `Lock` (`scripts/bench/kazoo_bench.py`, Debian's python3-kazoo).
    Kazoo,
    /// A mutex written here on the `zookeeper` 0.8 crate's primitives.
    Zookeeper,
}

impl Peer {
    /// The prefix of the peer's output keys (without the dot).
    pub fn prefix(self) -> &'static str {
        match self {
            Peer::Curator => "curator",
            Peer::ZookeeperClient => "zkclient",
            Peer::Kazoo => "kazoo",
            Peer::Zookeeper => "zookeeper08",
        }
    }
}

impl Opts {
    /// The command line, with `--curator` folded into the peers (Curator
    /// first, then the others in the order named, each once).
    pub fn parse_args() -> Opts {
        Opts::fold(Opts::parse())
    }

    /// [`Opts::parse_args`] on these arguments (the program name first).
    #[cfg(test)]
    fn from_args(args: &[&str]) -> Opts {
        Opts::fold(Opts::try_parse_from(args).expect("valid arguments"))
    }

    fn fold(mut o: Opts) -> Opts {
        let mut peers = Vec::new();
        if o.curator {
            peers.push(Peer::Curator);
        }
        for p in o.peers.iter().copied() {
            if !peers.contains(&p) {
                peers.push(p);
            }
        }
        if let Some(i) = peers.iter().position(|&p| p == Peer::Curator) {
            let c = peers.remove(i);
            peers.insert(0, c);
        }
        o.curator = peers.contains(&Peer::Curator);
        o.peers = peers;
        o
    }

    /// Whether the scenario `name` runs.
    pub fn wanted(&self, name: &str) -> bool {
        match &self.only {
            None => !SCALE.contains(&name) && !NAMED_ONLY.contains(&name),
            Some(v) => v
                .iter()
                .any(|x| x == name || (x == "scale" && (SCALE.contains(&name) || name == "clients"))),
        }
    }

    /// These options with only the scenario `name` selected.
    pub fn only(&self, name: &str) -> Opts {
        Opts {
            only: Some(vec![name.to_string()]),
            ..self.clone()
        }
    }
}

/// The scenarios run only when named.
pub const SCALE: [&str; 3] = ["latency", "deep", "many"];

/// Scenarios run only when named, and not by `--only scale` either.
pub const NAMED_ONLY: [&str; 6] = [
    "failover",
    "counter",
    "registration",
    "barrier",
    "discovery",
    "partition",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_is_an_alias_and_goes_first_once() {
        let o = Opts::from_args(&["zk-bench", "--peers", "kazoo,zookeeper-client,curator", "--curator"]);
        assert_eq!(o.peers, [Peer::Curator, Peer::Kazoo, Peer::ZookeeperClient]);
        assert!(o.curator);
        let o = Opts::from_args(&["zk-bench", "--curator"]);
        assert_eq!(o.peers, [Peer::Curator]);
        let o = Opts::from_args(&["zk-bench", "--peers", "zookeeper"]);
        assert_eq!(o.peers, [Peer::Zookeeper]);
        assert!(!o.curator);
        assert_eq!(Peer::Zookeeper.prefix(), "zookeeper08");
    }

    #[test]
    fn unknown_peers_and_tls_with_peers_are_refused() {
        assert!(Opts::try_parse_from(["zk-bench", "--peers", "etcd"]).is_err());
        assert!(Opts::try_parse_from(["zk-bench", "--tls", "--peers", "kazoo"]).is_err());
    }

    #[test]
    fn scale_scenarios_run_only_when_named() {
        let o = Opts::from_args(&["zk-bench"]);
        assert!(o.wanted("mutex") && o.wanted("clients") && o.wanted("cache") && !o.wanted("deep"));
        let o = Opts::from_args(&["zk-bench", "--only", "scale"]);
        assert!(o.wanted("deep") && o.wanted("many") && o.wanted("latency") && o.wanted("clients"));
        assert!(!o.wanted("mutex") && !o.wanted("failover"));
        assert!(!Opts::from_args(&["zk-bench"]).wanted("failover"));
        assert!(Opts::from_args(&["zk-bench", "--only", "failover"]).wanted("failover"));
        for name in ["counter", "registration", "barrier", "discovery", "partition"] {
            assert!(!Opts::from_args(&["zk-bench"]).wanted(name));
            assert!(!Opts::from_args(&["zk-bench", "--only", "scale"]).wanted(name));
        }
        let o = Opts::from_args(&["zk-bench", "--only", "counter,registration,barrier"]);
        assert!(o.wanted("counter") && o.wanted("registration") && o.wanted("barrier") && !o.wanted("mutex"));
        assert_eq!(o.only("deep").only, Some(vec!["deep".to_string()]));
        let o = Opts::from_args(&["zk-bench", "--only", "discovery,partition"]);
        assert!(o.wanted("discovery") && o.wanted("partition") && !o.wanted("registration"));
        assert_eq!((o.partition_members, o.partition_rounds), (4, 6));
    }

    #[test]
    fn a_party_of_one_is_refused() {
        assert!(Opts::try_parse_from(["zk-bench", "--partition-members", "1"]).is_err());
    }
}
