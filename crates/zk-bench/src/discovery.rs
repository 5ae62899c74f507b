//! The `discovery` scenario (issue 42 item 5), run only when named
//! (`--only discovery`), ours and then each peer asked for (Curator 5.4's
//! `curator-x-discovery` through `scripts/bench/CuratorDiscoveryBench.java`;
//! kazoo 2.8 has no service discovery: one skip line):
//!
//! * **lookups**: one client registers [`INSTANCES`] instances of one
//!   service (dynamic: ephemeral nodes) under the implementation's own base
//!   path; a second client's provider (round robin; ours
//!   [`ServiceProvider`](zk_recipes::ServiceProvider), Curator's
//!   `ServiceProvider` with `RoundRobinStrategy`), started and showing all
//!   of them, is asked for an instance by each of [`THREADS`] threads as
//!   fast as they can for `--seconds` after `--warmup`: lookups/s (every
//!   answer must be an instance: `misses` counts the others) and the
//!   server's requests per lookup (a cache: about 0).
//! * **query**: the same threads call `query_for_instances` (Curator's
//!   `queryForInstances`) on the second client: a direct read, no cache (a
//!   `getChildren` and a `getData` per instance); queries/s (each must
//!   return the 10 instances) and requests per query.
//! * **registration**: a discovery registers one dynamic instance; the
//!   server expires its session (the harness's `expire_session`), and the
//!   time from just before the expiry to an observer session seeing the
//!   instance's node again, owned by the new session (and from the
//!   observer's notification of the deletion), as the registration
//!   scenario of [`crate::shared`] measures for `PersistentNode`;
//!   p50/p99/max over `--expiries` (after 2 unmeasured). Ours is
//!   [`ServiceDiscovery`]'s registration (a `PersistentNode` underneath),
//!   and also reports the time to its own `Registered` event; Curator's
//!   `ServiceDiscovery` re-registers on `RECONNECTED`.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use zk_recipes::{ServiceDiscovery, ServiceInstance};

use crate::ours::client;
use crate::shared::{self, Ops};
use crate::Ctx;

/// Instances of the looked-up service.
pub const INSTANCES: usize = 10;

/// The threads asking, one run each.
pub const THREADS: [usize; 2] = [1, 4];

/// The looked-up service's name.
pub const SERVICE: &str = "bench";

/// The registered service's name (the registration part).
pub const REG_SERVICE: &str = "svc";

/// The registered instance's id (the registration part).
pub const REG_ID: &str = "reg";

/// Why kazoo has no discovery rows.
pub const KAZOO_NO_DISCOVERY: &str = "kazoo 2.8 has no service discovery recipe (no ServiceDiscovery, \
                                      ServiceProvider or instance format)";

/// The base path of `who`'s looked-up service.
pub fn base_path(who: &str) -> String {
    format!("/bench/discovery/{who}")
}

/// The base path of `who`'s registration.
pub fn reg_base_path(who: &str) -> String {
    format!("/bench/discovery-reg/{who}")
}

/// What a measured operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A provider's `instance()`.
    Lookups,
    /// `query_for_instances`.
    Query,
}

impl Kind {
    /// Its name in the output keys and on the peers' command lines.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Lookups => "lookups",
            Kind::Query => "query",
        }
    }

    /// What one operation is called in the keys (`requests_per_…`).
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Lookups => "lookup",
            Kind::Query => "query",
        }
    }

    /// What many are called in the keys (`…_per_s`, the count).
    pub fn units(self) -> &'static str {
        match self {
            Kind::Lookups => "lookups",
            Kind::Query => "queries",
        }
    }
}

/// Ours: the discovery scenario.
pub fn ours(x: &Ctx) {
    let base = base_path("ours");
    let reg = client(&x.cs);
    let d = ServiceDiscovery::builder(&reg, &base).build().expect("discovery");
    d.start().expect("start the discovery");
    for i in 0..INSTANCES {
        let inst = ServiceInstance::builder(SERVICE)
            .id(&format!("i{i:02}"))
            .address(&format!("10.0.0.{}", i + 1))
            .port(8080 + i as i32)
            .build()
            .expect("instance");
        d.register(&inst).expect("register");
    }
    for i in 0..INSTANCES {
        assert!(
            d.wait_registered_for(&format!("i{i:02}"), Duration::from_secs(30))
                .expect("wait registered"),
            "instance i{i:02} not registered within 30 s"
        );
    }
    let c = client(&x.cs);
    let q = ServiceDiscovery::builder(&c, &base).build().expect("discovery");
    let provider = q.provider_builder(SERVICE).expect("provider").build();
    provider.start().expect("start the provider");
    let deadline = Instant::now() + Duration::from_secs(30);
    while provider.all_instances().map_or(0, |v| v.len()) != INSTANCES {
        assert!(
            Instant::now() < deadline,
            "the provider does not show {INSTANCES} instances within 30 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for kind in [Kind::Lookups, Kind::Query] {
        for threads in THREADS {
            let op = || match kind {
                Kind::Lookups => matches!(provider.instance(), Ok(Some(_))),
                Kind::Query => q.query_for_instances(SERVICE).is_ok_and(|v| v.len() == INSTANCES),
            };
            window(x, "", kind, threads, op);
        }
    }
    provider.close();
    d.close().expect("close");
    c.close();
    reg.close();
    registration(x);
}

/// Runs `op` on `threads` threads for the warm-up, then for the window;
/// prints the operations per second, the misses (`op` returned false) and
/// the server's requests per operation under `{prefix}discovery.{kind}.threads_{threads}`.
fn window(x: &Ctx, prefix: &str, kind: Kind, threads: usize, op: impl Fn() -> bool + Sync) {
    let key = format!("{prefix}discovery.{}.threads_{threads}", kind.key());
    // 0: warm-up, 1: measured, 2: stop.
    let phase = AtomicU8::new(0);
    let (done, missed) = (AtomicU64::new(0), AtomicU64::new(0));
    let (t0, t1, ops) = std::thread::scope(|s| {
        for _ in 0..threads {
            let (phase, done, missed, op) = (&phase, &done, &missed, &op);
            s.spawn(move || {
                while phase.load(Ordering::Relaxed) < 2 {
                    let ok = op();
                    if phase.load(Ordering::Relaxed) == 1 {
                        done.fetch_add(1, Ordering::Relaxed);
                        if !ok {
                            missed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        std::thread::sleep(x.warmup);
        let o0 = Ops::now(x.server(), &x.cs);
        phase.store(1, Ordering::Relaxed);
        let t0 = Instant::now();
        std::thread::sleep(x.run);
        phase.store(2, Ordering::Relaxed);
        let t1 = Instant::now();
        let o1 = Ops::now(x.server(), &x.cs);
        (t0, t1, Ops::between(o0, o1))
    });
    let n = done.load(Ordering::Relaxed);
    let (unit, units) = (kind.unit(), kind.units());
    println!("{key}.{units}_per_s={:.0}", n as f64 / (t1 - t0).as_secs_f64());
    println!("{key}.{units}={n}");
    println!("{key}.misses={}", missed.load(Ordering::Relaxed));
    Ops::report(ops, &key, unit, n);
}

/// Ours: a registration's return after an expiry.
fn registration(x: &Ctx) {
    let Some(server) = shared::expiring_server(x, "discovery.") else {
        return;
    };
    let base = reg_base_path("ours");
    let path = format!("{base}/{REG_SERVICE}/{REG_ID}");
    let c = client(&x.cs);
    let obs = client(&x.cs);
    let d = ServiceDiscovery::builder(&c, &base).build().expect("discovery");
    d.start().expect("start the discovery");
    let inst = ServiceInstance::builder(REG_SERVICE)
        .id(REG_ID)
        .address("10.0.0.1")
        .port(8080)
        .build()
        .expect("instance");
    d.register(&inst).expect("register");
    assert!(d
        .wait_registered_for(REG_ID, Duration::from_secs(30))
        .expect("wait registered"));
    let events = d.events(REG_ID).expect("registered here");
    let (mut back, mut back_from_deleted, mut registered) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..shared::WARM_EXPIRIES + x.o.expiries {
        let session = c.session_id();
        shared::await_owned(&obs, &path, session);
        std::thread::sleep(shared::SETTLE);
        while events.try_recv().is_ok() {}
        let password = c.zookeeper_client().session_password();
        let t0 = Instant::now();
        let (dt, from_deleted) = shared::expire_and_observe(server, &obs, &path, session, &password);
        let mut was_down = false;
        let reg = loop {
            match events.recv_timeout(Duration::from_secs(60)) {
                Ok(r) if r.is_registered() && was_down => break Instant::now() - t0,
                Ok(r) => was_down |= !r.is_registered(),
                Err(_) => panic!("no Registered event within 60 s of the expiry"),
            }
        };
        if i >= shared::WARM_EXPIRIES {
            back.push(dt);
            back_from_deleted.push(from_deleted);
            registered.push(reg);
        }
    }
    shared::report_times("discovery.registration.expiry_to_node_back", &mut back);
    shared::report_times("discovery.registration.deleted_to_node_back", &mut back_from_deleted);
    shared::report_times("discovery.registration.expiry_to_registered_event", &mut registered);
    d.close().expect("close");
    c.close();
    obs.close();
}
