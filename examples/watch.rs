//! Watching: a service follows its configuration subtree with a
//! `CuratorCache` while another session changes it, through a cut
//! connection, and checks that the cache's events and view match the
//! server.
//!
//! 1. A cache of `/examples/watch/config` starts on an existing subtree:
//!    one `Created` per node, parents first, then `Initialized`.
//! 2. Another session creates, changes and deletes nodes, and deletes a node
//!    and creates it again: a `Deleted` and a `Created`, in zxid order.
//! 3. The cache's connection is cut and kept down (a fault proxy) while the
//!    other session changes the subtree: the cache turns `Stale` (with the
//!    zxid its view is as of) and `get_current` refuses; once the
//!    connection is back it re-reads, tells exactly the difference, and
//!    says `Initialized` again and `Current`.
//!
//! ```text
//! cargo run --example watch        # on an embedded ZooKeeper
//! ```
//!
//! Exits 0 when every check held.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{CacheEvent, CuratorCache, Freshness};
use zk_testing::proxy::FaultProxy;
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const ROOT: &str = "/examples/watch/config";

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    c.block_until_connected(Duration::from_secs(10))?;
    Ok(c)
}

/// The server's subtree: path to (czxid, data).
fn on_server(c: &CuratorFramework) -> Result<BTreeMap<String, (i64, Vec<u8>)>, BoxError> {
    let mut out = BTreeMap::new();
    let mut todo = vec![ROOT.to_string()];
    while let Some(p) = todo.pop() {
        let (data, st) = c.get_data(&p)?;
        out.insert(p.clone(), (st.czxid, data));
        for k in c.get_children(&p)? {
            todo.push(format!("{p}/{k}"));
        }
    }
    Ok(out)
}

fn in_cache(cache: &CuratorCache) -> BTreeMap<String, (i64, Vec<u8>)> {
    cache
        .snapshot()
        .into_iter()
        .map(|d| {
            (
                d.path().to_string(),
                (d.stat().czxid, d.data().unwrap_or_default().to_vec()),
            )
        })
        .collect()
}

/// Takes events until `done` says so (within 10 s), printing them.
fn until(rx: &Receiver<CacheEvent>, mut done: impl FnMut(&CacheEvent) -> bool) -> Result<(), BoxError> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let ev = rx
            .recv_deadline(end)
            .map_err(|e| format!("waiting for an event: {e}"))?;
        match &ev {
            CacheEvent::Created(d) => println!(
                "  created {} = {:?}",
                d.path(),
                String::from_utf8_lossy(d.data().unwrap_or_default())
            ),
            CacheEvent::Changed { old, new } => println!(
                "  changed {}: {:?} -> {:?}",
                new.path(),
                String::from_utf8_lossy(old.data().unwrap_or_default()),
                String::from_utf8_lossy(new.data().unwrap_or_default())
            ),
            CacheEvent::Deleted(d) => println!("  deleted {}", d.path()),
            other => println!("  {other:?}"),
        }
        if done(&ev) {
            return Ok(());
        }
    }
}

/// Waits (10 s at most) until the cache is current and shows what the
/// server has: every change of either is an event, so each event wakes the
/// check.
fn check(
    cache: &CuratorCache,
    events: &Receiver<CacheEvent>,
    writer: &CuratorFramework,
    what: &str,
) -> Result<(), BoxError> {
    let end = Instant::now() + Duration::from_secs(10);
    while in_cache(cache) != on_server(writer)? || !cache.freshness().is_current() {
        if events.recv_deadline(end).is_err() {
            return Err(format!("{what}: the cache does not match the server").into());
        }
    }
    println!(
        "{what}: the cache matches the server ({} nodes, {})",
        cache.size(),
        cache.freshness()
    );
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let server = TestingServer::start_backend(Backend::Embedded)?;
    let proxy = FaultProxy::start(&server.connect_string())?;
    let writer = connect(&server.connect_string())?;
    let reader = connect(&proxy.connect_string())?;
    for (p, v) in [("/db", "postgres://a"), ("/db/pool", "16"), ("/feature", "off")] {
        writer
            .create()
            .creating_parents_if_needed()
            .with_data(v.as_bytes().to_vec())
            .for_path(&format!("{ROOT}{p}"))?;
    }

    println!("1. start");
    let cache = CuratorCache::builder(&reader, ROOT).build()?;
    let events = cache.events();
    cache.start()?;
    until(&events, |e| *e == CacheEvent::Initialized)?;
    check(&cache, &events, &writer, "start")?;

    println!("2. live changes");
    writer.set_data(&format!("{ROOT}/feature"), b"on".to_vec(), None)?;
    writer.delete().for_path(&format!("{ROOT}/db/pool"))?;
    writer
        .create()
        .with_data(b"32".to_vec())
        .for_path(&format!("{ROOT}/db/pool"))?;
    writer
        .create()
        .with_data(b"10s".to_vec())
        .for_path(&format!("{ROOT}/timeout"))?;
    let mut pool = Vec::new();
    until(&events, |e| {
        if e.path() == Some(&format!("{ROOT}/db/pool")[..]) {
            pool.push(matches!(e, CacheEvent::Created(_)));
        }
        e.path() == Some(&format!("{ROOT}/timeout")[..])
    })?;
    if pool != [false, true] {
        return Err(format!("a re-created node must be a delete and a create, got {pool:?}").into());
    }
    check(&cache, &events, &writer, "live")?;

    println!("3. a cut connection");
    proxy.refuse(true);
    proxy.cut();
    until(&events, |e| matches!(e, CacheEvent::Freshness(Freshness::Stale { .. })))?;
    if cache.get_current(&format!("{ROOT}/feature")).is_ok() {
        return Err("a stale cache answered get_current".into());
    }
    writer.set_data(&format!("{ROOT}/db"), b"postgres://b".to_vec(), None)?;
    writer.delete().for_path(&format!("{ROOT}/timeout"))?;
    writer.delete().for_path(&format!("{ROOT}/feature"))?;
    writer
        .create()
        .with_data(b"on".to_vec())
        .for_path(&format!("{ROOT}/feature"))?;
    proxy.refuse(false);
    until(&events, |e| *e == CacheEvent::Initialized)?;
    check(&cache, &events, &writer, "after the cut")?;
    cache.close();
    println!("every check held");
    Ok(())
}
