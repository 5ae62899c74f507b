//! Services and shared work: two instances of a service register in a
//! Curator-compatible registry, a client finds them, one instance's session
//! expires and its registration comes back once; then three workers share
//! six shards with a `SetPartitioner`, and the shards move when one leaves.
//!
//! 1. `api-1` and `api-2` register (ephemeral, Curator's JSON); a provider
//!    over a cache picks them in turn.
//! 2. `api-1`'s session expires: its registration is told `Absent`, then
//!    `Registered` again on the new session; the registry holds one node per
//!    id throughout (embedded server only; with `ZK_CONNECT` this step is
//!    skipped and said so).
//! 3. Three workers join a partition of six shards: each ends with two, the
//!    shares disjoint and covering the set.
//! 4. One worker closes: the other two take its shards after the settle
//!    time, three each.
//!
//! ```text
//! cargo run --example services                        # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example services
//! ```
//!
//! Exits 0 when every check held.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{
    PartitionEvent, ProviderStrategy, Registration, ServiceDiscovery, ServiceInstance, SetPartitioner, UriSpec,
};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const BASE: &str = "/examples/services/registry";
const SHARDS: &str = "/examples/services/shards";

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    c.block_until_connected(Duration::from_secs(10))?;
    Ok(c)
}

/// Waits on a member's events until it holds `n` items, and returns them.
fn holds(name: &str, events: &Receiver<PartitionEvent>, n: usize) -> Result<Vec<String>, BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ev = events
            .recv_deadline(deadline)
            .map_err(|_| format!("{name} did not come to hold {n} shards within 30 s"))?;
        if ev.state.is_acquired() && ev.state.share().len() == n {
            return Ok(ev.state.share().to_vec());
        }
    }
}

/// Waits on a registration's events until `want` says yes.
fn told(
    id: &str,
    events: &Receiver<Registration>,
    what: &str,
    want: impl Fn(&Registration) -> bool,
) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = events
            .recv_deadline(deadline)
            .map_err(|_| format!("{id} was not told {what} within 30 s"))?;
        if want(&r) {
            println!("  {id}: {r:?}");
            return Ok(());
        }
    }
}

fn instance(id: &str, port: i32) -> Result<ServiceInstance, BoxError> {
    Ok(ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.1")
        .port(port)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{port}")?)
        .build()?)
}

fn main() -> Result<(), BoxError> {
    let external = std::env::var("ZK_CONNECT").ok();
    let server = match &external {
        Some(_) => None,
        None => Some(TestingServer::start_backend(Backend::Embedded)?),
    };
    let cs = external.unwrap_or_else(|| server.as_ref().map(TestingServer::connect_string).unwrap_or_default());

    // 1. Two instances register; a provider finds them in turn.
    println!("1. register api-1 and api-2, find them");
    let (s1, s2, user) = (connect(&cs)?, connect(&cs)?, connect(&cs)?);
    let d1 = ServiceDiscovery::builder(&s1, BASE).build()?;
    let d2 = ServiceDiscovery::builder(&s2, BASE).build()?;
    d1.start()?;
    d2.start()?;
    d1.register(&instance("api-1", 8080)?)?;
    d2.register(&instance("api-2", 8081)?)?;
    for (d, id) in [(&d1, "api-1"), (&d2, "api-2")] {
        if !d.wait_registered_for(id, Duration::from_secs(10))? {
            return Err(format!("{id} not registered within 10 s").into());
        }
    }
    let finder = ServiceDiscovery::builder(&user, BASE).build()?;
    finder.start()?;
    let provider = finder
        .provider_builder("api")?
        .strategy(ProviderStrategy::RoundRobin)
        .build();
    provider.start()?;
    if !provider.cache().wait_current_for(Duration::from_secs(10)) {
        return Err("the provider's cache was not current within 10 s".into());
    }
    let mut picked = BTreeSet::new();
    for _ in 0..4 {
        let i = provider.instance()?.ok_or("no instance offered")?;
        println!("  picked {} at {}", i.id(), i.build_uri().unwrap_or_default());
        picked.insert(i.id().to_string());
    }
    if picked.len() != 2 {
        return Err(format!("round robin picked {picked:?}, not both").into());
    }

    // 2. api-1's session expires: told, back once.
    match &server {
        Some(server) => {
            println!("2. api-1's session expires");
            let events = d1.events("api-1").ok_or("no events for api-1")?;
            let zk = s1.zookeeper_client();
            server.expire_session(zk.session_id(), &zk.session_password())?;
            told("api-1", &events, "Absent", |r| matches!(r, Registration::Absent { .. }))?;
            told("api-1", &events, "Registered", Registration::is_registered)?;
            let children = user.get_children(&format!("{BASE}/api"))?;
            if children.len() != 2 {
                return Err(format!("the registry holds {children:?}, not one node per id").into());
            }
            println!("  the registry holds {children:?}");
        }
        None => println!("2. skipped: expiring a session needs the embedded server (ZK_CONNECT is set)"),
    }
    provider.close();
    for d in [&finder, &d1, &d2] {
        d.close()?;
    }

    // 3. Three workers share six shards.
    println!("3. three workers share six shards");
    let shards = ["s0", "s1", "s2", "s3", "s4", "s5"];
    let clients = [connect(&cs)?, connect(&cs)?, connect(&cs)?];
    let mut workers = Vec::new();
    let mut events = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let w = SetPartitioner::builder(c, SHARDS, shards)
            .identifier(format!("worker-{i}"))
            .time_boundary(Duration::from_millis(300))
            .auto_release(true)
            .build()?;
        events.push(w.events());
        w.start()?;
        workers.push(w);
    }
    let mut owned = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        let share = holds(&format!("worker-{i}"), e, 2)?;
        println!("  worker-{i} holds {share:?}");
        for s in share {
            if !owned.insert(s.clone()) {
                return Err(format!("{s} owned by two workers").into());
            }
        }
    }
    if owned.len() != shards.len() {
        return Err(format!("the shares cover {owned:?}, not the set").into());
    }

    // 4. worker-2 leaves: the others take its shards.
    println!("4. worker-2 closes");
    workers[2].close()?;
    let mut owned = BTreeSet::new();
    for (i, e) in events.iter().enumerate().take(2) {
        let share = holds(&format!("worker-{i}"), e, 3)?;
        println!("  worker-{i} holds {share:?}");
        let checked = workers[i].check()?;
        if checked != share {
            return Err(format!("worker-{i}'s check() says {checked:?}, its event {share:?}").into());
        }
        owned.extend(share);
    }
    if owned.len() != shards.len() {
        return Err(format!("after the move the shares cover {owned:?}").into());
    }
    for w in &workers {
        w.close()?;
    }
    println!("every check held");
    Ok(())
}
