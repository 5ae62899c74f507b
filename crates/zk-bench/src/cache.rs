//! The `cache` scenario: our `CuratorCache` beside Curator 5.4's
//! `CuratorCache` and kazoo 2.8's `TreeCache`, on subtrees the driver makes
//! once (the same for every peer).
//!
//! * **Write-to-event latency**: a second client (session) of the same
//!   process writes a leaf of a watched subtree of 1, 100 and 1,000 leaves
//!   (spread over them, one write at a time); the time from just before the
//!   `setData` to the cache's listener being called with that change, one
//!   clock. `--cache-writes` writes measured after half as many unmeasured.
//! * **Its floor** (ours only): the write, then one `getData` of the
//!   cache's client, one after the other: what a cache that reads each
//!   changed node waits at least.
//! * **The start's floor** (ours only): the same `getData` and
//!   `getChildren` of every node without a cache, one at a time on one
//!   client, then spread over 8 threads of it (8 in flight).
//! * **Requests per change**: the server's request count over the measured
//!   writes, less the writes themselves, per write.
//! * **Start**: `start()` to `Initialized` on a subtree of `--cache-nodes`
//!   leaves (10,000), after one start and close on the 100-leaf subtree (JIT,
//!   classes, allocator arenas); the server's request count in between.
//! * **Memory per cached node**: resident memory grown from before the start
//!   to after it, with the cache still open (Java: after `System.gc()`, and
//!   its heap in use too; Python: after `gc.collect()`), per cached node.
//!   Ours is measured in the driver's process, where the allocator keeps what
//!   it freed and (on the embedded server) the server's transient buffers
//!   count too: on Apache ZooKeeper the server is another process.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use zk_framework::{Acl, CreateMode, CuratorFramework, Op};
use zk_recipes::{CacheEvent, CuratorCache};

use crate::measure::{packets_received, percentile, proc_status, us};
use crate::ours::client;
use crate::Ctx;

/// Leaves of the latency subtrees.
pub const LATENCY_LEAVES: [usize; 3] = [1, 100, 1_000];
/// Leaves per inner node (`ROOT/gI/nJ`).
const FANOUT: usize = 100;
/// Bytes of data of every node.
pub const DATA_LEN: usize = 32;
/// The subtree of the start's warm-up.
pub const WARM_LEAVES: usize = 100;

/// The root of the subtree of `leaves` leaves.
pub fn tree_root(leaves: usize) -> String {
    format!("/bench/cache/tree-{leaves}")
}

/// The path of leaf `i` under `root`.
pub fn leaf(root: &str, i: usize) -> String {
    format!("{root}/g{}/n{}", i / FANOUT, i % FANOUT)
}

/// The nodes a cache of the subtree of `leaves` leaves holds: the root,
/// the inner nodes and the leaves.
pub fn tree_nodes(leaves: usize) -> usize {
    1 + leaves.div_ceil(FANOUT) + leaves
}

/// The 32 bytes of data of write number `seq`.
pub fn data(seq: u64) -> Vec<u8> {
    format!("{seq:0width$}", width = DATA_LEN).into_bytes()
}

/// The latency subtrees that fit the `--cache-nodes` size.
pub fn latency_sizes(x: &Ctx) -> Vec<usize> {
    LATENCY_LEAVES
        .iter()
        .copied()
        .filter(|&n| n <= x.o.cache_nodes.max(1))
        .collect()
}

/// Makes the subtree of `leaves` leaves (if not there yet), in multis of
/// 500 creates.
fn make_tree(c: &CuratorFramework, leaves: usize) {
    let root = tree_root(leaves);
    if c.check_exists(&format!("{root}/done")).ok().flatten().is_some() {
        return;
    }
    let _ = c.delete().deleting_children_if_needed().for_path(&root);
    c.create()
        .creating_parents_if_needed()
        .with_data(data(0))
        .for_path(&root)
        .expect("create the cache subtree's root");
    let acl = Acl::open_unsafe();
    let mut ops = Vec::new();
    let flush = |ops: &mut Vec<Op>| {
        if !ops.is_empty() {
            c.multi_results(std::mem::take(ops)).expect("create the cache subtree");
        }
    };
    for i in 0..leaves {
        if i % FANOUT == 0 {
            ops.push(Op::create(
                format!("{root}/g{}", i / FANOUT),
                data(0),
                acl.clone(),
                CreateMode::Persistent,
            ));
        }
        ops.push(Op::create(leaf(&root, i), data(0), acl.clone(), CreateMode::Persistent));
        if ops.len() >= 500 {
            flush(&mut ops);
        }
    }
    flush(&mut ops);
    // The marker is outside what the latency and start figures look at
    // (one more node, written never).
    c.create()
        .for_path(&format!("{root}/done"))
        .expect("mark the subtree made");
}

/// Makes every subtree the scenario uses.
pub fn prepare(x: &Ctx, c: &CuratorFramework) {
    let t = Instant::now();
    let mut sizes = latency_sizes(x);
    sizes.push(WARM_LEAVES);
    sizes.push(x.o.cache_nodes);
    sizes.sort();
    sizes.dedup();
    for n in sizes {
        make_tree(c, n);
    }
    println!("cache.setup_ms={:.0}", t.elapsed().as_secs_f64() * 1e3);
}

/// The unmeasured writes before the measured ones.
pub fn warm_writes(x: &Ctx) -> usize {
    (x.o.cache_writes / 2).max(10)
}

/// Requests per change, printed under `prefix` (empty or a peer's with its dot).
pub fn report_requests_per_change(prefix: &str, leaves: usize, writes: usize, packets: Option<u64>) {
    if let Some(p) = packets {
        println!(
            "{prefix}cache.requests_per_change.leaves_{leaves}={:.2}",
            (p as f64 - writes as f64) / writes as f64
        );
    }
}

/// The start's requests, printed under `prefix`.
pub fn report_start_requests(prefix: &str, leaves: usize, nodes: usize, packets: Option<u64>) {
    if let Some(p) = packets {
        println!("{prefix}cache.start_requests.leaves_{leaves}={p}");
        println!(
            "{prefix}cache.start_requests_per_node.leaves_{leaves}={:.2}",
            p as f64 / nodes as f64
        );
    }
}

/// A started cache of `root` with a thread reading its events that sends
/// every change's path, data and arrival time (the thread ends with the
/// cache's channel).
fn started(c: &CuratorFramework, root: &str) -> (CuratorCache, mpsc::Receiver<(String, Vec<u8>, Instant)>) {
    let cache = CuratorCache::builder(c, root).build().expect("build the cache");
    let (tx, rx) = mpsc::channel();
    let events = cache.events();
    std::thread::Builder::new()
        .name("bench-cache-events".into())
        .spawn(move || {
            for ev in events.iter() {
                if let CacheEvent::Changed { new, .. } = ev {
                    let at = Instant::now();
                    let _ = tx.send((new.path().to_string(), new.data().unwrap_or_default().to_vec(), at));
                }
            }
        })
        .expect("spawn the event reader");
    cache.start().expect("start the cache");
    assert!(
        cache.wait_current_for(Duration::from_secs(60)),
        "the cache of {root} is not current"
    );
    (cache, rx)
}

/// Writes leaf `seq % leaves` and waits for the cache's event of it: the
/// time from before the write to the event's arrival on the reader's thread.
fn write_and_wait(
    w: &CuratorFramework,
    root: &str,
    leaves: usize,
    seq: u64,
    rx: &mpsc::Receiver<(String, Vec<u8>, Instant)>,
) -> Duration {
    let path = leaf(root, seq as usize % leaves);
    let d = data(seq);
    let t0 = Instant::now();
    w.set_data(&path, d.clone(), None).expect("setData");
    loop {
        let (p, got, at) = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no event for {path} within 30 s"));
        if p == path && got == d {
            return at.saturating_duration_since(t0);
        }
    }
}

/// Ours: every figure of the scenario.
pub fn ours(x: &Ctx, c: &CuratorFramework) {
    prepare(x, c);
    let writer = client(&x.cs);
    let cc = client(&x.cs);
    let mut seq = 1_000_000u64;
    for leaves in latency_sizes(x) {
        let root = tree_root(leaves);
        let (cache, rx) = started(&cc, &root);
        for _ in 0..warm_writes(x) {
            seq += 1;
            write_and_wait(&writer, &root, leaves, seq, &rx);
        }
        let p0 = packets_received(x.server(), &x.cs);
        let mut v = Vec::with_capacity(x.o.cache_writes);
        for _ in 0..x.o.cache_writes.max(1) {
            seq += 1;
            v.push(write_and_wait(&writer, &root, leaves, seq, &rx));
        }
        let p1 = packets_received(x.server(), &x.cs);
        v.sort();
        report_latency("", leaves, &v);
        report_requests_per_change("", leaves, v.len(), p0.zip(p1).map(|(a, b)| b - a));
        cache.close();
    }
    // The floor of one change: the write, then one getData round trip of
    // the cache's client (what any cache that reads a changed node must
    // wait for at least; the notification comes before the write's reply).
    let root = tree_root(1);
    let mut v = Vec::with_capacity(x.o.cache_writes);
    for i in 0..warm_writes(x) + x.o.cache_writes.max(1) {
        seq += 1;
        let path = leaf(&root, 0);
        let t0 = Instant::now();
        writer.set_data(&path, data(seq), None).expect("setData");
        cc.get_data(&path).expect("getData");
        if i >= warm_writes(x) {
            v.push(t0.elapsed());
        }
    }
    v.sort();
    println!("cache.floor.set_then_get.p50_us={}", us(percentile(&v, 0.5)));
    println!("cache.floor.set_then_get.p99_us={}", us(percentile(&v, 0.99)));
    writer.close();
    // The start: once on the warm-up subtree, then measured.
    let warm = CuratorCache::builder(&cc, &tree_root(WARM_LEAVES))
        .build()
        .expect("build the cache");
    warm.start().expect("start");
    assert!(warm.wait_current_for(Duration::from_secs(60)));
    warm.close();
    drop(warm);
    let leaves = x.o.cache_nodes;
    let root = tree_root(leaves);
    let rss0 = proc_status("VmRSS");
    let live0 = crate::alloc::live_bytes();
    let p0 = packets_received(x.server(), &x.cs);
    let t = Instant::now();
    let cache = CuratorCache::builder(&cc, &root)
        .max_nodes(leaves * 2 + 100)
        .build()
        .expect("build the cache");
    cache.start().expect("start");
    assert!(
        cache.wait_current_for(Duration::from_secs(600)),
        "the cache of {root} is not current"
    );
    let took = t.elapsed();
    let p1 = packets_received(x.server(), &x.cs);
    let rss1 = proc_status("VmRSS");
    let live1 = crate::alloc::live_bytes();
    // The marker node counts: it is in the cache.
    let nodes = tree_nodes(leaves) + 1;
    // The heap the process keeps for the cache (what a JVM's heap in use
    // after a GC counts), beside the RSS it grew by.
    println!(
        "cache.live_bytes_per_node.leaves_{leaves}={:.0}",
        live1.saturating_sub(live0) as f64 / nodes as f64
    );
    assert_eq!(cache.size(), nodes, "the cache of {root} holds every node");
    report_start("", leaves, took, nodes, rss1.saturating_sub(rss0));
    report_start_requests("", leaves, nodes, p0.zip(p1).map(|(a, b)| b - a));
    println!("cache.start_reads.leaves_{leaves}={}", cache.stats().reads);
    let paths: Vec<String> = cache.snapshot().iter().map(|d| d.path().to_string()).collect();
    cache.close();
    // The start's requests without a cache: a getData and a getChildren
    // of every node, one at a time on one client (what our start does),
    // then the same spread over 8 threads of that client (8 in flight).
    let read = |c: &CuratorFramework, p: &str| {
        c.get_data(p).expect("getData");
        c.get_children(p).expect("getChildren");
    };
    let t = Instant::now();
    for p in &paths {
        read(&cc, p);
    }
    println!(
        "cache.floor.sequential_reads_ms.leaves_{leaves}={:.1}",
        t.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    std::thread::scope(|s| {
        for chunk in paths.chunks(paths.len().div_ceil(8)) {
            let (cc, read) = (&cc, &read);
            s.spawn(move || chunk.iter().for_each(|p| read(cc, p)));
        }
    });
    println!(
        "cache.floor.reads_8_threads_ms.leaves_{leaves}={:.1}",
        t.elapsed().as_secs_f64() * 1e3
    );
    cc.close();
}

/// The latency figures under `prefix`.
fn report_latency(prefix: &str, leaves: usize, v: &[Duration]) {
    println!(
        "{prefix}cache.write_to_event.p50_us.leaves_{leaves}={}",
        us(percentile(v, 0.5))
    );
    println!(
        "{prefix}cache.write_to_event.p99_us.leaves_{leaves}={}",
        us(percentile(v, 0.99))
    );
    println!("{prefix}cache.write_to_event.writes.leaves_{leaves}={}", v.len());
}

/// The start's time and memory under `prefix`.
fn report_start(prefix: &str, leaves: usize, took: Duration, nodes: usize, rss_kib: u64) {
    println!(
        "{prefix}cache.start_to_initialized_ms.leaves_{leaves}={:.1}",
        took.as_secs_f64() * 1e3
    );
    println!("{prefix}cache.nodes.leaves_{leaves}={nodes}");
    println!(
        "{prefix}cache.rss_bytes_per_node.leaves_{leaves}={:.0}",
        rss_kib as f64 * 1024.0 / nodes as f64
    );
}
