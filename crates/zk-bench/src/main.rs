//! Lock benchmarks. Prints one `key=value` line per figure.
//!
//! ```text
//! cargo run --release -p zk-bench -- [--connect HOST:PORT | --apache] [--peers NAMES] [--seconds N] [--only NAME,...]
//! ```
//!
//! Without `--connect` it starts the embedded server in-process; `--apache`
//! starts Debian's ZooKeeper 3.8 instead. Scenarios (`--only` picks some):
//! `connect`, `floor`, `mutex`, `semaphore`, `reentrant`, `handoff`, `herd`,
//! `rwlock`, `multilock`, `clients`, `cache` (our `CuratorCache` beside
//! Curator's and kazoo's `TreeCache`: [`cache`]) and `metrics` (the uncontended mutex cycle
//! with the lock figures on and off, in alternating rounds; built with
//! `--features metrics` the figures also go through the `metrics` facade to a
//! counting recorder) by default; the scale scenarios `latency` (release to
//! next grant, and its floors, alone and with the server kept busy; `floor`
//! prints the cross-session handoff's floor too: a delete, the notification,
//! one listing), `deep` (1,000 waiters on one mutex, with the drain's CPU and
//! thread wake-ups per handoff; the seed mutex also with Curator's node
//! names, `zookeeper08.seed_mutex_curator_names.`, as in `handoff`), `many` (10,000 locks held at once) only when
//! named (`--only scale` names them all with `clients`); `failover` (leader
//! election: close and kill failovers, the idle cost; [`failover`]) only when
//! named; `counter`, `registration` and `barrier` (our `DistributedAtomicLong`,
//! ephemeral `PersistentNode` and `DistributedDoubleBarrier` beside Curator's and
//! kazoo's: [`shared`]) only when named; `discovery` (our `ServiceProvider`,
//! `query_for_instances` and `ServiceDiscovery`'s registration after an
//! expiry beside Curator's: [`discovery`]) and `partition` (our
//! `SetPartitioner`'s rebalances beside kazoo's: [`partition`]) only when
//! named.
//!
//! With `--peers curator,zookeeper-client,kazoo,zookeeper` (`--curator` is
//! `--peers curator`) other lock implementations run each scenario right
//! after ours, on the same server, paths, window and warm-up: Curator 5.4
//! (`curator.` keys), kezhuw's zookeeper-client 0.11 (`zkclient.`), kazoo 2.8
//! (`kazoo.`) and a mutex written here on the zookeeper 0.8 crate
//! (`zookeeper08.seed_mutex.`), as far as each has the scenario (see
//! BENCHMARKS.md). `--tls` runs ours over TLS (the server started with a
//! throw-away CA's certificate, every client verifying it).
//!
//! Modules: [`opts`] (the command line), [`ours`] (our scenarios),
//! [`metrics`] (the lock figures' cost), [`peers`] (the Curator and kazoo
//! driver, the zookeeper-client and zookeeper 0.8 drivers), [`measure`]
//! (latencies, handoff windows, the server's counters, reporting).

mod alloc;
mod cache;
mod discovery;
mod failover;
mod measure;
mod metrics;
mod opts;
mod ours;
mod partition;
mod peers;
mod shared;

use std::time::Duration;

use zk_framework::TlsConfig;
use zk_testing::tls::TestPki;
use zk_testing::{Backend, TestingServer};

use crate::opts::Opts;

/// Counts live heap bytes (the cache's memory per node beside a JVM's heap in use).
#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// What every scenario runs against: the options, the server and its
/// connect string, the window and the warm-up.
pub struct Ctx {
    /// The command line.
    pub o: Opts,
    /// The connect string of the server (or ensemble) benchmarked.
    pub cs: String,
    /// The server this process started, if any (the embedded server counts
    /// requests and notifications itself).
    server: Option<TestingServer>,
    /// The timed window.
    pub run: Duration,
    /// The warm-up before every timed window.
    pub warmup: Duration,
}

impl Ctx {
    /// The server this process started, if any.
    pub fn server(&self) -> Option<&TestingServer> {
        self.server.as_ref()
    }
}

fn main() {
    // Silent unless RUST_LOG asks (the peers log every refused reconnect).
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("off"))
        .format_timestamp_millis()
        .init();
    let o = Opts::parse_args();
    let backend_kind = if o.apache { Backend::Apache } else { Backend::Embedded };
    let cluster = (o.connect.is_none() && o.ensemble).then(|| {
        zk_testing::apache::ApacheCluster::start(3, zk_testing::apache::ApacheConfig::default())
            .expect("start a 3-node Apache ZooKeeper ensemble")
    });
    let server = if o.connect.is_some() || o.ensemble {
        None
    } else if o.tls {
        let pki = TestPki::new("zk-bench CA").expect("make a CA");
        let tls = TlsConfig::builder()
            .ca_pem(pki.ca_pem().as_bytes())
            .build()
            .expect("TLS config");
        let _ = ours::TLS.set(Some(tls));
        let server_tls = pki.server_tls().expect("server certificate");
        Some(TestingServer::start_backend_tls(backend_kind, server_tls).expect("start a TLS server"))
    } else {
        Some(TestingServer::start_backend(backend_kind).expect("start the server"))
    };
    let cs = o
        .connect
        .clone()
        .or_else(|| cluster.as_ref().map(|c| c.connect_string()))
        .unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    let backend = match (&o.connect, o.apache, o.ensemble) {
        (Some(_), _, _) => "external",
        (None, _, true) => "ensemble3",
        (None, true, _) => "apache",
        (None, false, false) => "embedded",
    };
    println!("server={backend}");
    println!("tls={}", o.tls);
    if !o.peers.is_empty() {
        let names: Vec<_> = o.peers.iter().map(|p| p.prefix()).collect();
        println!("peers={}", names.join(","));
    }
    let x = Ctx {
        run: Duration::from_secs_f64(o.seconds),
        warmup: Duration::from_secs_f64(o.warmup),
        o,
        cs,
        server,
    };
    let want = |name: &str| x.o.wanted(name);
    let side_by_side = |name: &str| peers::side_by_side(&x, name);
    let c = ours::client(&x.cs);
    c.create()
        .creating_parent_containers_if_needed()
        .for_path("/bench/floor/keep")
        .ok();

    if want("connect") {
        ours::connect(&x);
    }
    if want("floor") {
        ours::floor(&x, &c);
    }
    side_by_side("floor");
    if want("mutex") {
        ours::mutex(&x, &c);
    }
    side_by_side("mutex");
    if want("semaphore") {
        ours::semaphore(&x, &c);
    }
    side_by_side("semaphore");
    if want("metrics") {
        metrics::metrics_overhead(&c, x.run);
    }
    if want("reentrant") {
        ours::reentrant(&x, &c);
    }
    side_by_side("reentrant");
    if want("handoff") {
        ours::handoff(&x);
    }
    side_by_side("handoff");
    if want("herd") {
        ours::herd(&x);
    }
    side_by_side("herd");
    if want("rwlock") {
        ours::rwlock(&x);
    }
    side_by_side("rwlock");
    if want("multilock") {
        ours::multilock(&x, &c);
    }
    side_by_side("multilock");
    if want("latency") {
        ours::latency(&x);
    }
    side_by_side("latency");
    if want("deep") {
        ours::deep(&x);
    }
    side_by_side("deep");
    if want("many") {
        ours::many(&c);
    }
    side_by_side("many");
    if want("clients") {
        ours::clients(&x);
    }
    side_by_side("clients");
    if want("cache") {
        cache::ours(&x, &c);
    }
    side_by_side("cache");
    if want("failover") {
        failover::run(&x);
    }
    if want("counter") {
        shared::counter(&x);
    }
    side_by_side("counter");
    if want("registration") {
        shared::registration(&x);
    }
    side_by_side("registration");
    if want("barrier") {
        shared::barrier(&x);
    }
    side_by_side("barrier");
    if want("discovery") {
        discovery::ours(&x);
    }
    side_by_side("discovery");
    if want("partition") {
        partition::ours(&x);
    }
    side_by_side("partition");
    let _ = std::fs::remove_dir_all(peers::java_dir());
    c.close();
}
