//! The `metrics` feature: every lock event reaches the `metrics` facade, so
//! any exporter sees it. A recorder of our own (installed globally, as an
//! exporter would be) counts what arrives; the counts must equal the
//! operations run, and agree with `zk_recipes::stats`. Run with
//! `cargo test -p zk-recipes --features metrics --test metrics` (embedded
//! server; `ZK_TEST_SERVER=apache` for Apache ZooKeeper).
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use parking_lot::Mutex;
use zk_framework::CuratorFramework;
use zk_recipes::LossCause;
use zk_recipes::{InterProcessMutex, InterProcessSemaphoreV2, LockEvent};
use zk_testing::{wait_until, TestingServer, Timing};

/// One metric's value: a counter, a gauge (f64 bits) and recorded samples.
#[derive(Default)]
struct Cell {
    counter: AtomicU64,
    gauge: Mutex<f64>,
    samples: Mutex<Vec<f64>>,
}

impl CounterFn for Cell {
    fn increment(&self, v: u64) {
        self.counter.fetch_add(v, Ordering::SeqCst);
    }
    fn absolute(&self, v: u64) {
        self.counter.store(v, Ordering::SeqCst);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, v: f64) {
        *self.gauge.lock() += v;
    }
    fn decrement(&self, v: f64) {
        *self.gauge.lock() -= v;
    }
    fn set(&self, v: f64) {
        *self.gauge.lock() = v;
    }
}

impl HistogramFn for Cell {
    fn record(&self, v: f64) {
        self.samples.lock().push(v);
    }
}

/// Metrics by `name{label=value,...}` (labels sorted).
#[derive(Default, Clone)]
struct TestRecorder {
    cells: Arc<Mutex<HashMap<String, Arc<Cell>>>>,
}

fn key_text(key: &Key) -> String {
    let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl TestRecorder {
    fn cell(&self, key: &Key) -> Arc<Cell> {
        self.cells.lock().entry(key_text(key)).or_default().clone()
    }

    fn get(&self, name: &str, labels: &str) -> Option<Arc<Cell>> {
        self.cells.lock().get(&format!("{name}{{{labels}}}")).cloned()
    }

    fn counter(&self, name: &str, labels: &str) -> u64 {
        self.get(name, labels).map_or(0, |c| c.counter.load(Ordering::SeqCst))
    }

    fn gauge(&self, name: &str, labels: &str) -> f64 {
        self.get(name, labels).map_or(0.0, |c| *c.gauge.lock())
    }

    fn samples(&self, name: &str, labels: &str) -> usize {
        self.get(name, labels).map_or(0, |c| c.samples.lock().len())
    }
}

impl Recorder for TestRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.cell(key))
    }
}

/// The process's recorder (an exporter is installed once, globally).
fn recorder() -> &'static TestRecorder {
    static R: OnceLock<TestRecorder> = OnceLock::new();
    R.get_or_init(|| {
        let r = TestRecorder::default();
        metrics::set_global_recorder(r.clone()).expect("no other recorder");
        r
    })
}

fn client(server: &TestingServer) -> CuratorFramework {
    let t = Timing::from_env();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

#[test]
fn every_lock_event_reaches_the_metrics_facade() {
    let rec = recorder();
    let server = TestingServer::start().unwrap();
    let (c, other) = (client(&server), client(&server));
    let t = Timing::from_env();
    let path = "/metrics/mutex";
    let p = format!("path={path}");
    let m = InterProcessMutex::new(&c, path).unwrap();
    const N: u64 = 7;
    for _ in 0..N {
        m.acquire().unwrap().release().unwrap();
    }
    let busy = InterProcessMutex::new(&other, path).unwrap();
    let held = busy.acquire().unwrap();
    assert_eq!(rec.gauge("zk_lock_holders", &p), 1.0);
    for _ in 0..3 {
        assert!(m.try_acquire_for(Duration::from_millis(10)).unwrap().is_none());
    }
    assert_eq!(rec.gauge("zk_lock_waiters", &p), 0.0);
    drop(held);
    let g = m.acquire().unwrap();
    let loss = g.events();
    other.delete().for_path(&g.lock_path()).unwrap();
    assert_eq!(loss.recv_timeout(t.wait()), Ok(LockEvent::Lost));
    drop(g);

    assert_eq!(rec.counter("zk_lock_acquisitions_total", &p), N + 2);
    assert_eq!(rec.counter("zk_lock_timeouts_total", &p), 3);
    assert_eq!(rec.counter("zk_lock_errors_total", &p), 0);
    assert_eq!(
        rec.counter(
            "zk_lock_losses_total",
            &format!("cause={},{p}", LossCause::NodeDeleted.name())
        ),
        1
    );
    assert_eq!(rec.gauge("zk_lock_holders", &p), 0.0);
    assert_eq!(rec.gauge("zk_lock_waiters", &p), 0.0);
    assert_eq!(rec.samples("zk_lock_wait_seconds", &p) as u64, N + 2);
    assert_eq!(rec.samples("zk_lock_hold_seconds", &p) as u64, N + 2);
    // The plain snapshots say the same, each client for its own locks (the
    // facade sums the two: one `path` label).
    let s = zk_recipes::lock_stats_of(&c, path).unwrap();
    assert_eq!((s.acquisitions, s.timeouts, s.total_losses()), (N + 1, 3, 1));
    let s = zk_recipes::lock_stats_of(&other, path).unwrap();
    assert_eq!((s.acquisitions, s.timeouts, s.total_losses()), (1, 0, 0));

    // A semaphore's leases, and a waiter seen while it waits.
    let spath = "/metrics/sem";
    let sp = format!("path={spath}");
    let sem = Arc::new(InterProcessSemaphoreV2::new(&c, spath, 1).unwrap());
    let lease = sem.acquire().unwrap();
    std::thread::scope(|s| {
        let sem2 = sem.clone();
        let waiter = s.spawn(move || sem2.acquire().map(|l| l.release()));
        assert!(wait_until(t.wait(), || rec.gauge("zk_lock_waiters", &sp) == 1.0));
        drop(lease);
        waiter.join().unwrap().unwrap().unwrap();
    });
    assert_eq!(rec.counter("zk_lock_acquisitions_total", &sp), 2);
    assert_eq!(rec.gauge("zk_lock_waiters", &sp), 0.0);
    assert_eq!(rec.gauge("zk_lock_holders", &sp), 0.0);
    c.close();
    other.close();
}

/// A cache's figures reach the facade and agree with its own `stats()`.
#[test]
fn every_cache_figure_reaches_the_metrics_facade() {
    use zk_recipes::CuratorCache;
    let rec = recorder();
    let server = TestingServer::start().unwrap();
    let c = client(&server);
    let t = Timing::from_env();
    let path = "/metrics/cache";
    c.create()
        .creating_parents_if_needed()
        .for_path(&format!("{path}/a"))
        .unwrap();
    let cache = CuratorCache::builder(&c, path).build().unwrap();
    let events = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(t.wait()));
    c.set_data(&format!("{path}/a"), b"x".to_vec(), None).unwrap();
    c.create().for_path(&format!("{path}/b")).unwrap();
    c.delete().for_path(&format!("{path}/a")).unwrap();
    assert!(wait_until(t.wait(), || cache.get(&format!("{path}/b")).is_some()
        && cache.get(&format!("{path}/a")).is_none()));
    let labels = format!("path={path}");
    let kind = |k: &str| rec.counter("zk_cache_events_total", &format!("kind={k},{labels}"));
    assert!(wait_until(t.wait(), || kind("deleted") == 1));
    let stats = cache.stats();
    assert_eq!(kind("created") + kind("changed") + kind("deleted"), stats.events);
    assert_eq!(kind("created"), 3, "the root, a, b");
    assert_eq!(rec.counter("zk_cache_resyncs_total", &labels), stats.resyncs);
    assert_eq!(rec.counter("zk_cache_reads_total", &labels), stats.reads);
    assert_eq!(rec.gauge("zk_cache_entries", &labels), 2.0);
    assert_eq!(rec.gauge("zk_cache_current", &labels), 1.0);
    // Each spell not current ends when the cache is current again: the one
    // before the first load, and one for each time it read announced
    // changes (`Updating`).
    let spells = events
        .try_iter()
        .filter(|e| *e == zk_recipes::CacheEvent::Freshness(zk_recipes::Freshness::Current))
        .count();
    assert!(spells >= 2, "the first load and at least one update: {spells}");
    assert_eq!(rec.samples("zk_cache_not_current_seconds", &labels), spells);
    cache.close();
}

#[test]
fn counters_and_persistent_nodes_reach_the_metrics_facade() {
    let rec = recorder();
    let server = TestingServer::start().unwrap();
    let (c, admin) = (client(&server), client(&server));
    let t = Timing::from_env();

    // A counter: every update by how it ended.
    let counter = zk_recipes::DistributedAtomicLong::new(
        &c,
        "/metrics/counter",
        zk_framework::RetryNTimes::new(3, Duration::from_millis(10)),
    )
    .unwrap();
    for _ in 0..5 {
        assert!(counter.increment().unwrap().succeeded());
    }
    assert!(!counter.compare_and_set(0, 1).unwrap().succeeded());
    let p = "outcome=applied,path=/metrics/counter";
    assert_eq!(rec.counter("zk_counter_updates_total", p), 5);
    let p = "outcome=not_applied,path=/metrics/counter";
    assert_eq!(rec.counter("zk_counter_updates_total", p), 1);

    // A persistent node: registered while it is, and each create counted.
    let path = "/metrics/node";
    let p = format!("path={path}");
    let node = zk_recipes::PersistentNode::builder(&c, path, zk_framework::CreateMode::Ephemeral)
        .build()
        .unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create_for(t.wait()).unwrap());
    assert!(wait_until(t.wait(), || rec.gauge("zk_node_registered", &p) == 1.0));
    assert_eq!(rec.counter("zk_node_creates_total", &p), 1);
    admin.delete().for_path(path).unwrap();
    assert!(wait_until(t.wait(), || rec.counter("zk_node_creates_total", &p) == 2));
    assert!(wait_until(t.wait(), || rec.gauge("zk_node_registered", &p) == 1.0));
    node.close().unwrap();
    assert_eq!(rec.gauge("zk_node_registered", &p), 0.0);
}

#[test]
fn discovery_and_service_cache_figures_reach_the_metrics_facade() {
    use zk_recipes::{ServiceDiscovery, ServiceInstance, ServiceType};
    let rec = recorder();
    let server = TestingServer::start().unwrap();
    let (c, admin) = (client(&server), client(&server));
    let t = Timing::from_env();
    let base = "/metrics/disc";
    let d = ServiceDiscovery::builder(&c, base).build().unwrap();
    d.start().unwrap();
    let registered = |id: &str| rec.gauge("zk_discovery_registered", &format!("base={base},id={id},service=api"));
    let instances = || rec.gauge("zk_discovery_instances", &format!("base={base}"));
    let seen = |name: &str| rec.gauge(name, &format!("path={base}/api"));

    let cache = d.service_cache("api").unwrap();
    cache.start().unwrap();
    assert!(cache.wait_current_for(t.wait()));
    d.register(&ServiceInstance::builder("api").id("a1").port(1).build().unwrap())
        .unwrap();
    d.register(
        &ServiceInstance::builder("api")
            .id("s1")
            .service_type(ServiceType::Static)
            .build()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(instances(), 2.0);
    assert!(d.wait_registered_for("a1", t.wait()).unwrap());
    assert!(d.wait_registered_for("s1", t.wait()).unwrap());
    // Told by the node before its waiters wake: no wait needed.
    assert_eq!(registered("a1"), 1.0);
    assert_eq!(registered("s1"), 1.0);
    assert!(
        wait_until(t.wait(), || seen("zk_service_instances") == 2.0),
        "{}",
        seen("zk_service_instances")
    );
    assert_eq!(seen("zk_service_unreadable_instances"), 0.0);

    // A provider: no answer from a cache not current, then picks; one
    // whose filter keeps nothing answers none.
    let picks = |outcome: &str| {
        rec.counter(
            "zk_service_provider_picks_total",
            &format!("outcome={outcome},path={base}/api"),
        )
    };
    let (picked0, none0, not_current0) = (picks("picked"), picks("none"), picks("not_current"));
    let provider = d.provider_builder("api").unwrap().build();
    assert!(provider.instance().is_err());
    assert_eq!(picks("not_current"), not_current0 + 1);
    provider.start().unwrap();
    assert!(wait_until(t.wait(), || provider.instance().is_ok_and(|i| i.is_some())));
    assert!(picks("picked") > picked0);
    assert_eq!(provider.all_instances().unwrap().len(), 2);
    assert_eq!(seen("zk_service_provider_offered"), 2.0);
    let nothing = d.provider_builder("api").unwrap().filter(|_| false).build();
    nothing.start().unwrap();
    assert!(wait_until(t.wait(), || nothing.instance().is_ok()));
    assert_eq!(nothing.instance().unwrap(), None);
    assert!(picks("none") > none0);
    assert_eq!(seen("zk_service_provider_offered"), 0.0, "the last look offered none");
    nothing.close();
    provider.close();

    // A child that is not an instance: counted apart.
    admin
        .create()
        .with_data(b"no".to_vec())
        .for_path(&format!("{base}/api/bad"))
        .unwrap();
    assert!(wait_until(t.wait(), || seen("zk_service_unreadable_instances") == 1.0));
    assert_eq!(seen("zk_service_instances"), 2.0);

    // Unregistered: the gauges follow (the node closed is not registered).
    assert!(d.unregister("a1").unwrap());
    assert_eq!(instances(), 1.0);
    assert_eq!(registered("a1"), 0.0);
    assert!(wait_until(t.wait(), || seen("zk_service_instances") == 1.0));
    d.close().unwrap();
    assert_eq!(instances(), 0.0);
    assert_eq!(registered("s1"), 0.0, "closed: no longer kept");
    cache.close();
}

#[test]
fn partition_figures_reach_the_metrics_facade() {
    use zk_recipes::{PartitionState, SetPartitioner};
    let rec = recorder();
    let server = TestingServer::start().unwrap();
    let (c1, c2) = (client(&server), client(&server));
    let t = Timing::from_env();
    let path = "/metrics/part";
    let member = |c: &CuratorFramework, id: &str| {
        SetPartitioner::builder(c, path, ["0", "1", "2", "3"])
            .identifier(id)
            .time_boundary(t.scale(Duration::from_millis(300)))
            .auto_release(true)
            .build()
            .unwrap()
    };
    let labels = |m: &str| format!("member={m},path={path}");
    let state = |m: &str, s: &str| rec.gauge("zk_partition_state", &format!("{},state={s}", labels(m)));
    let share = |m: &str| rec.gauge("zk_partition_share", &labels(m));
    let rebalances =
        |m: &str, r: &str| rec.counter("zk_partition_rebalances_total", &format!("{},reason={r}", labels(m)));

    let m1 = member(&c1, "m1");
    let events = m1.events();
    assert_eq!(state("m1", "allocating"), 1.0);
    m1.start().unwrap();
    assert_eq!(m1.wait_for_acquire_for(t.wait() * 2).unwrap().map(|s| s.len()), Some(4));
    assert_eq!(share("m1"), 4.0);
    assert_eq!(state("m1", "acquired"), 1.0);
    for other in ["allocating", "suspended", "release", "stuck", "failure"] {
        assert_eq!(state("m1", other), 0.0, "{other}");
    }

    // A second member: the first gives its share back (a rebalance) and
    // each ends with half.
    let m2 = member(&c2, "m2");
    m2.start().unwrap();
    assert!(
        wait_until(t.wait() * 3, || share("m1") == 2.0 && share("m2") == 2.0),
        "{} {}",
        share("m1"),
        share("m2")
    );
    assert_eq!(m1.share().len(), 2);
    let releases = events
        .try_iter()
        .filter(|e| matches!(e.state, PartitionState::Release { .. }))
        .count() as u64;
    assert!(releases >= 1);
    assert_eq!(rebalances("m1", "membership_changed"), releases);
    assert_eq!(rebalances("m1", "lock_lost"), 0);
    assert_eq!(
        rebalances("m2", "membership_changed"),
        0,
        "m2 never held a share to give back"
    );

    // Closed: failure, nothing owned.
    m2.close().unwrap();
    assert_eq!(state("m2", "failure"), 1.0);
    assert_eq!(share("m2"), 0.0);
    m1.close().unwrap();
    assert_eq!(share("m1"), 0.0);
}

/// The client's own figures (zk-framework's `metrics`, which this feature
/// turns on): server lists handed over (moved or not, and their size), the
/// ensemble config the tracker applied, and SASL failures by kind.
#[test]
fn the_clients_server_lists_config_and_sasl_failures_reach_the_facade() {
    use zk_framework::{SaslConfig, SaslErrorKind};
    use zk_testing::embedded::{EmbeddedServer, ServerConfig, ServerSasl};
    let rec = recorder();
    let t = Timing::from_env();
    let server = EmbeddedServer::start(ServerConfig {
        sasl: Some(ServerSasl::digest(&[("bob", "pw")])),
        ..ServerConfig::default()
    })
    .unwrap();
    let (a, b) = (
        server.connect_string(),
        EmbeddedServer::start(ServerConfig::default()).unwrap(),
    );
    let c = CuratorFramework::builder()
        .connect_string(a.clone())
        .connection_timeout(t.connection())
        .ensemble_tracker(true)
        .ensemble_tracker_delay(Duration::ZERO)
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    // The embedded server's config (one member, version 0) is applied.
    assert!(wait_until(t.wait(), || c.ensemble_config().is_some()));
    let stayed = rec.counter("zk_client_server_list_updates_total", "moved=false");
    let moved = rec.counter("zk_client_server_list_updates_total", "moved=true");
    // One server to two (the current one kept): a move with probability 1/2.
    let _ = c.update_server_list(&format!("{a},{}", b.connect_string())).unwrap();
    assert!(c.update_server_list(&b.connect_string()).unwrap());
    assert_eq!(
        rec.counter("zk_client_server_list_updates_total", "moved=false")
            + rec.counter("zk_client_server_list_updates_total", "moved=true"),
        stayed + moved + 2
    );
    assert!(rec.counter("zk_client_server_list_updates_total", "moved=true") > moved);
    assert_eq!(rec.gauge("zk_client_servers", ""), 1.0);
    assert!(rec.get("zk_ensemble_config_version", "").is_some());
    assert_eq!(rec.gauge("zk_ensemble_config_version", ""), 0.0);
    c.close();

    let rejected = rec.counter("zk_client_sasl_failures_total", "kind=rejected");
    let bad = CuratorFramework::builder()
        .connect_string(a)
        .sasl(SaslConfig::digest_md5("bob", "wrong").unwrap())
        .build()
        .unwrap();
    assert!(matches!(
        bad.block_until_connected(t.wait()),
        Err(zk_framework::Error::Sasl(e)) if e.kind() == SaslErrorKind::Rejected
    ));
    assert_eq!(
        rec.counter("zk_client_sasl_failures_total", "kind=rejected"),
        rejected + 1
    );
    bad.close();
}
