//! What a cache and a watcher promise under load and around their close
//! (issue 40), on the backend `ZK_TEST_SERVER` names:
//!
//! * a cache under writes sustained past any round limit never says
//!   `Current` while it is behind what its client has been told, and after
//!   the writers stop it shows the server's subtree within a bound;
//! * closing a cache or a watcher leaves another recipe's one-shot watch
//!   of the same client on the same path in place (on ZooKeeper 3.6-3.8 the
//!   persistent watch is removed with `removeWatches` type `Any`, which
//!   takes the one-shot watches with it);
//! * a watcher tells node events and connection states in the one order
//!   the client delivered them, and a cache cut off and reconnected under
//!   writes still tells its events in zxid order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use zk_framework::{AddWatchMode, CuratorFramework, EventType, ExponentialBackoffRetry, KeeperState, WatchedEvent};
use zk_recipes::{CacheEvent, CuratorCache};
use zk_recipes::{PersistentWatcher, WatcherEvent};
use zk_testing::proxy::FaultProxy;

use crate::support::{client, init_log, server, timing, wait_until};

fn mk(c: &CuratorFramework, path: &str, data: &[u8]) {
    c.create()
        .creating_parents_if_needed()
        .with_data(data.to_vec())
        .for_path(path)
        .unwrap();
}

fn proxied(proxy: &FaultProxy) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// A small deterministic generator (xorshift), so that a run can be told
/// again from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("seed {s}");
    s
}

/// (czxid, mzxid, data) of each node under `root`, read by `c` after a
/// `sync` (so no server that lags the writes answers).
fn synced_view(c: &CuratorFramework, root: &str) -> BTreeMap<String, (i64, i64, Vec<u8>)> {
    c.zookeeper_client().sync(root).unwrap();
    let mut out = BTreeMap::new();
    for k in c.get_children(root).unwrap() {
        let p = format!("{root}/{k}");
        if let Ok((d, st)) = c.get_data(&p) {
            out.insert(p, (st.czxid, st.mzxid, d));
        }
    }
    out
}

fn cached(cache: &CuratorCache, root: &str) -> BTreeMap<String, (i64, i64, Vec<u8>)> {
    cache
        .snapshot()
        .into_iter()
        .filter(|d| d.path() != root)
        .map(|d| {
            (
                d.path().to_string(),
                (d.stat().czxid, d.stat().mzxid, d.data().unwrap_or_default().to_vec()),
            )
        })
        .collect()
}

// ---- (a) sustained writes past the round limit --------------------------------------------

/// What the test thread finds comparing the cache with what the cache's own
/// client reads, node by node.
#[derive(Default)]
struct Checker {
    /// `get_current` answers (the cache said it was current).
    checked: u64,
    /// `get_current` refusals (not current).
    refused: u64,
    /// `snapshot_current` answers.
    snapshots: u64,
    /// Answers behind what the client had read just before.
    behind: Vec<String>,
    /// Per node: the first zxid read from the server that the view had not
    /// reached, and when.
    waiting: std::collections::HashMap<String, (i64, Instant)>,
    /// The longest time the view took to reach a state read from the
    /// server (at most a sweep's time more than its true lag).
    max_lag: Duration,
}

impl Checker {
    /// Reads each child through the cache's own client (its answer comes
    /// after every notification of a change it shows, on that connection),
    /// then asks the cache: `get_current` must not answer with a node older
    /// than that read; and how long the view takes to reach it.
    fn sweep(&mut self, c: &CuratorFramework, cache: &CuratorCache, children: &[String]) {
        let mut read = std::collections::HashMap::new();
        for p in children {
            let (_, st) = c.get_data(p).unwrap();
            read.insert(p.as_str(), st.mzxid);
            let now = Instant::now();
            let shown = cache.get(p).map_or(i64::MIN, |d| d.stat().mzxid);
            self.reached(p, shown, now);
            if shown < st.mzxid && !self.waiting.contains_key(p) {
                self.waiting.insert(p.clone(), (st.mzxid, now));
            }
            match cache.get_current(p) {
                Ok(Some(d)) => {
                    self.checked += 1;
                    if d.stat().mzxid < st.mzxid {
                        self.behind.push(format!(
                            "{p}: the cache said current with mzxid {:#x}, its client had read {:#x}",
                            d.stat().mzxid,
                            st.mzxid
                        ));
                    }
                }
                Ok(None) => self.behind.push(format!("{p}: current and missing")),
                Err(_) => self.refused += 1,
            }
        }
        // The whole view, when current, is at least as new as every read of
        // the sweep (all made before it).
        if let Ok(view) = cache.snapshot_current() {
            self.snapshots += 1;
            for d in view {
                if read.get(d.path()).is_some_and(|&m| d.stat().mzxid < m) {
                    self.behind
                        .push(format!("{}: a current snapshot behind the sweep's read", d.path()));
                }
            }
        }
    }

    fn reached(&mut self, p: &str, shown: i64, now: Instant) {
        if let Some(&(target, since)) = self.waiting.get(p) {
            if shown >= target {
                self.max_lag = self.max_lag.max(now - since);
                self.waiting.remove(p);
            }
        }
    }
}

/// 200 children, written by `writers` (each writes its children as fast as
/// it goes, in turn, until stopped) and, once each at a random moment of the
/// run, `cold` others. The test thread sweeps them with a [`Checker`] while
/// they write; after the writers stop, the cache shows exactly what the
/// server has (read through another client, after a `sync`) within a
/// bound. Returns the checker and the writes.
fn under_writes(name: &str, hot: Vec<Vec<usize>>, cold: Vec<usize>) {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    let root = format!("/ct-{name}");
    mk(&writer, &root, b"");
    let children: Vec<String> = (0..200).map(|i| format!("{root}/c{i:03}")).collect();
    let ops: Vec<zk_framework::Op> = children
        .iter()
        .map(|p| {
            zk_framework::Op::create(
                p.clone(),
                b"0".to_vec(),
                zk_framework::Acl::open_unsafe(),
                zk_framework::CreateMode::Persistent,
            )
        })
        .collect();
    writer.multi_results(ops).unwrap();
    let cache = CuratorCache::builder(&c, &root).build().unwrap();
    // When each state of each node reached the cache's events.
    let events = cache.events();
    let heard = std::thread::spawn(move || {
        let mut at: std::collections::HashMap<String, Vec<(i64, Instant)>> = Default::default();
        for ev in events.iter() {
            if let CacheEvent::Created(d) | CacheEvent::Changed { new: d, .. } = &ev {
                at.entry(d.path().to_string())
                    .or_default()
                    .push((d.stat().mzxid, Instant::now()));
            }
        }
        at
    });
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));

    let run = Duration::from_secs(3);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for mine in hot {
        let (w, stop, root) = (writer.clone(), stop.clone(), root.clone());
        threads.push(std::thread::spawn(move || {
            let mut done = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for i in &mine {
                    n += 1;
                    let p = format!("{root}/c{i:03}");
                    let st = w.set_data(&p, n.to_string().into_bytes(), None).unwrap();
                    done.push((p, st.mzxid, Instant::now()));
                }
            }
            done
        }));
    }
    let mut rng = Rng(seed());
    let mut cold: Vec<(Duration, usize)> = cold
        .into_iter()
        .map(|i| (Duration::from_micros(rng.next() % run.as_micros() as u64), i))
        .collect();
    cold.sort();
    let (w, r) = (writer.clone(), root.clone());
    threads.push(std::thread::spawn(move || {
        let mut done = Vec::new();
        let t0 = Instant::now();
        for (at, i) in cold {
            if let Some(d) = at.checked_sub(t0.elapsed()) {
                std::thread::sleep(d); // a schedule, not a wait for an event
            }
            let p = format!("{r}/c{i:03}");
            let st = w.set_data(&p, b"cold".to_vec(), None).unwrap();
            done.push((p, st.mzxid, Instant::now()));
        }
        done
    }));

    let mut check = Checker::default();
    let t0 = Instant::now();
    let mut longest_sweep = Duration::ZERO;
    while t0.elapsed() < run {
        let t = Instant::now();
        check.sweep(&c, &cache, &children);
        longest_sweep = longest_sweep.max(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    let done: Vec<(String, i64, Instant)> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let writes = done.len();

    // After the writers stop: the server's view, within a bound.
    let stopped = Instant::now();
    let want = synced_view(&writer, &root);
    let bound = timing().scale(Duration::from_secs(5));
    let settled = wait_until(bound, || {
        cache.freshness().is_current() && cached(&cache, &root) == want
    });
    let settle = stopped.elapsed();
    let now = Instant::now();
    for (p, n) in &want {
        check.reached(p, n.1, now);
    }
    let view = cached(&cache, &root);
    let freshness = cache.freshness();
    cache.close();
    // Each write's lag: from its reply to the cache's first event showing it
    // (or a later state of its node).
    let heard = heard.join().unwrap();
    let mut lags: Vec<Duration> = done
        .iter()
        .map(|(p, m, t)| {
            heard
                .get(p)
                .and_then(|v| v.iter().find(|(z, _)| z >= m))
                .map_or(Duration::MAX, |(_, at)| at.saturating_duration_since(*t))
        })
        .collect();
    lags.sort();
    let unheard = lags.iter().filter(|l| **l == Duration::MAX).count();
    let pct = |q: usize| {
        lags.get((lags.len() * q / 100).min(lags.len().saturating_sub(1)))
            .copied()
    };
    let stale: Vec<&String> = want
        .iter()
        .filter(|(p, n)| view.get(*p) != Some(n))
        .map(|(p, _)| p)
        .collect();
    eprintln!(
        "{name}: {writes} writes; {} answers while current ({} whole snapshots), {} refused (not current), {} behind; longest lag seen {:?} (longest sweep {longest_sweep:?}); after the stop: settled {settled} in {settle:?}, {} stale nodes, freshness {:?}",
        check.checked,
        check.snapshots,
        check.refused,
        check.behind.len(),
        check.max_lag,
        stale.len(),
        freshness
    );
    eprintln!(
        "{name}: write-to-event lag p50 {:?} p99 {:?} max {:?}; writes never heard {unheard}",
        pct(50),
        pct(99),
        lags.iter().rev().find(|l| **l != Duration::MAX)
    );
    assert!(
        check.behind.is_empty(),
        "{} answers behind the client: {:#?}",
        check.behind.len(),
        &check.behind[..check.behind.len().min(10)]
    );
    assert!(
        settled,
        "not the server's view {bound:?} after the writers stopped; stale: {stale:?}"
    );
    // Rounds of a round trip, not batches: no state read from the server
    // took the view long to reach (measured from sweep to sweep: two of the
    // longest sweeps of 200 reads allowed on top).
    let lag_bound = timing().scale(Duration::from_secs(1)) + longest_sweep * 2;
    assert!(
        check.max_lag <= lag_bound,
        "a change took {:?} to reach the view (bound {lag_bound:?})",
        check.max_lag
    );
    assert_eq!(unheard, 0, "writes whose state the cache never told");
}

/// The case: 8 children written continuously, the 192 others each
/// once at a random moment: none of the 192 is lost, and the cache never
/// says it is current while behind its client.
#[test]
fn a_cache_under_sustained_writes_is_never_current_behind_its_client() {
    under_writes("sustained", (0..8).map(|i| vec![i]).collect(), (8..200).collect());
}

/// Writers on all 200 children: the view trails by rounds, not by batches.
#[test]
fn a_cache_under_writes_on_every_child_trails_by_rounds() {
    under_writes(
        "every-child",
        (0..8).map(|t| (t * 25..t * 25 + 25).collect()).collect(),
        Vec::new(),
    );
}

// ---- (b) a close keeps the same client's one-shot watches -----------------------------------

/// Which one-shot watch waits on the path.
#[derive(Debug, Clone, Copy)]
enum OneShot {
    Exists,
    ExistsMissing,
    Data,
    Children,
}

fn set_one_shot(c: &CuratorFramework, path: &str, kind: OneShot, tx: Sender<WatchedEvent>) {
    match kind {
        OneShot::Exists => assert!(c.check_exists_w(path, tx).unwrap().is_some()),
        OneShot::ExistsMissing => assert!(c.check_exists_w(path, tx).unwrap().is_none()),
        OneShot::Data => {
            c.get_data_w(path, tx).unwrap();
        }
        OneShot::Children => {
            c.get_children_w(path, tx).unwrap();
        }
    }
}

/// The change that fires `kind`'s watch, and the event it fires.
fn fire(writer: &CuratorFramework, path: &str, kind: OneShot) -> EventType {
    match kind {
        OneShot::Exists | OneShot::Data => {
            writer.set_data(path, b"changed".to_vec(), None).unwrap();
            EventType::NodeDataChanged
        }
        OneShot::ExistsMissing => {
            mk(writer, path, b"made");
            EventType::NodeCreated
        }
        OneShot::Children => {
            mk(writer, &format!("{path}/kid"), b"");
            EventType::NodeChildrenChanged
        }
    }
}

#[track_caller]
fn fires(rx: &Receiver<WatchedEvent>, want: EventType, what: &str) {
    match rx.recv_timeout(timing().wait()) {
        Ok(ev) => assert_eq!(ev.event_type, want, "{what}: {ev:?}"),
        Err(e) => panic!("{what}: the one-shot watch of the same client never fired ({e})"),
    }
}

#[test]
fn closing_a_cache_leaves_a_one_shot_watch_of_its_client_on_its_path() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    for (i, kind) in [
        OneShot::Exists,
        OneShot::ExistsMissing,
        OneShot::Data,
        OneShot::Children,
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("/ct-close-cache/p{i}");
        if !matches!(kind, OneShot::ExistsMissing) {
            mk(&writer, &path, b"v");
        }
        let cache = CuratorCache::builder(&c, &path).build().unwrap();
        cache.start().unwrap();
        assert!(cache.wait_current_for(timing().wait()));
        let (tx, rx) = crossbeam_channel::unbounded();
        set_one_shot(&c, &path, kind, tx);
        cache.close();
        let want = fire(&writer, &path, kind);
        fires(&rx, want, &format!("{kind:?} after the cache's close"));
    }
}

#[test]
fn closing_a_watcher_leaves_a_one_shot_watch_of_its_client_on_its_path() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    for recursive in [false, true] {
        for (i, kind) in [
            OneShot::Exists,
            OneShot::ExistsMissing,
            OneShot::Data,
            OneShot::Children,
        ]
        .into_iter()
        .enumerate()
        {
            let path = format!("/ct-close-watcher/{recursive}/p{i}");
            if !matches!(kind, OneShot::ExistsMissing) {
                mk(&writer, &path, b"v");
            }
            let w = PersistentWatcher::new(&c, &path, recursive).unwrap();
            let events = w.events();
            w.start().unwrap();
            assert!(events.recv_timeout(timing().wait()).unwrap().is_reset());
            let (tx, rx) = crossbeam_channel::unbounded();
            set_one_shot(&c, &path, kind, tx);
            w.close();
            let want = fire(&writer, &path, kind);
            fires(
                &rx,
                want,
                &format!("{kind:?} after the close of a watcher (recursive {recursive})"),
            );
        }
    }
}

// ---- (c) the client's order -----------------------------------------------------------------

/// A watcher event in words the raw client's events map to one for one.
fn word_of_watcher(ev: &WatcherEvent) -> Option<String> {
    match ev {
        WatcherEvent::Node { event_type, path } => Some(format!("{event_type:?} {path}")),
        WatcherEvent::Suspended => Some("suspended".into()),
        WatcherEvent::Reset { new_session: false } => Some("reset".into()),
        other => Some(format!("{other:?}")),
    }
}

fn word_of_raw(ev: &WatchedEvent) -> Option<String> {
    match (ev.event_type, ev.state, &ev.path) {
        (EventType::None, KeeperState::Disconnected, _) => Some("suspended".into()),
        (EventType::None, KeeperState::SyncConnected, _) => Some("reset".into()),
        (t, _, Some(p)) => Some(format!("{t:?} {p}")),
        _ => Some(format!("{ev:?}")),
    }
}

/// The words from the one naming `first` to the one naming `last`.
fn between(words: &[String], first: &str, last: &str) -> Vec<String> {
    let a = words
        .iter()
        .position(|w| w.ends_with(first))
        .unwrap_or_else(|| panic!("no {first} in {words:?}"));
    let b = words
        .iter()
        .position(|w| w.ends_with(last))
        .unwrap_or_else(|| panic!("no {last} in {words:?}"));
    words[a..=b].to_vec()
}

/// A watcher and a raw persistent watch of the same mode on the same path
/// and client hear one connection; under writes and several cuts, the
/// watcher tells exactly the raw sequence (`(None, Disconnected)` as
/// `Suspended`, `(None, SyncConnected)` as `Reset`): a `Suspended` is never
/// told after node events that came later, and a `Reset` comes before the
/// node events of the connection it announces.
#[test]
fn a_watcher_tells_events_and_states_in_the_clients_order() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let root = "/ct-order";
    mk(&writer, root, b"");
    let (raw_tx, raw_rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    let id = c.add_watch(root, AddWatchMode::PersistentRecursive, raw_tx).unwrap();
    let w = PersistentWatcher::new(&c, root, true).unwrap();
    let events = w.events();
    w.start().unwrap();
    assert!(events.recv_timeout(timing().wait()).unwrap().is_reset());
    mk(&writer, &format!("{root}/first"), b"");
    let mut heard: Vec<String> = Vec::new();
    let mut raw: Vec<String> = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    let (wr, st) = (writer.clone(), stop.clone());
    let writing = std::thread::spawn(move || {
        let mut n = 0u64;
        while !st.load(Ordering::Relaxed) {
            n += 1;
            let _ = wr.set_data(&format!("{root}/first"), n.to_string().into_bytes(), None);
        }
    });
    mk(&writer, &format!("{root}/from"), b"");
    // The marker heard before the first cut (a cut can lose what is in
    // flight, on both registrations alike).
    let end = Instant::now() + timing().wait();
    while !raw.iter().any(|w| w.ends_with("/from")) {
        let ev = raw_rx.recv_deadline(end).expect("the first marker");
        raw.extend(word_of_raw(&ev));
    }
    for cut in 1..=10 {
        proxy.cut();
        let end = Instant::now() + timing().wait();
        // Back on the same session (the client said so), and changes heard
        // on the new connection, before the next cut.
        while raw.iter().filter(|w| *w == "reset").count() < cut || raw.last().is_some_and(|w| w == "reset") {
            match raw_rx.recv_deadline(end) {
                Ok(ev) => raw.extend(word_of_raw(&ev)),
                Err(_) => panic!(
                    "no reconnect after cut {cut}: {:?}",
                    &raw[raw.len().saturating_sub(5)..]
                ),
            }
        }
    }
    mk(&writer, &format!("{root}/to"), b"");
    stop.store(true, Ordering::Relaxed);
    writing.join().unwrap();
    let end = Instant::now() + timing().wait();
    while !heard.iter().any(|w| w.ends_with("/to")) || !raw.iter().any(|w| w.ends_with("/to")) {
        if let Ok(ev) = events.recv_deadline(end.min(Instant::now() + Duration::from_millis(10))) {
            heard.extend(word_of_watcher(&ev));
        }
        raw.extend(raw_rx.try_iter().filter_map(|e| word_of_raw(&e)));
        assert!(
            Instant::now() < end,
            "the markers were not heard: {} events from the watcher, {} from the client",
            heard.len(),
            raw.len()
        );
    }
    let heard = between(&heard, "/from", "/to");
    let raw = between(&raw, "/from", "/to");
    let first_difference = heard.iter().zip(&raw).position(|(a, b)| a != b);
    assert!(
        heard == raw,
        "the watcher's order is not the client's: first difference at {first_difference:?} ({} vs {} events)\nwatcher {:?}\nclient  {:?}",
        heard.len(),
        raw.len(),
        first_difference.map(|i| &heard[i.saturating_sub(3)..(i + 3).min(heard.len())]),
        first_difference.map(|i| &raw[i.saturating_sub(3)..(i + 3).min(raw.len())]),
    );
    assert!(heard.iter().filter(|w| *w == "suspended").count() >= 10, "{heard:?}");
    w.close();
    c.remove_watch(id).unwrap();
}

/// A `Reset` after a reconnect waits for its proof (an answer on the new
/// connection, which comes after the re-registered watch): while the
/// re-registration is held back by the proxy, none is told; a connection
/// lost before the proof tells none; the next one does, and a change after
/// it is announced.
#[test]
fn a_reset_waits_for_its_proof_and_a_connection_lost_before_it_tells_none() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let root = "/ct-proof";
    mk(&writer, root, b"");
    let w = PersistentWatcher::new(&c, root, true).unwrap();
    let events = w.events();
    w.start().unwrap();
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Reset { new_session: true }
    );
    let states = c.state_receiver();
    proxy.delay_set_watches(Duration::from_secs(2));
    proxy.cut();
    assert_eq!(events.recv_timeout(timing().wait()).unwrap(), WatcherEvent::Suspended);
    // Connected again, the re-registration held back: no proof, no Reset.
    let end = Instant::now() + timing().wait();
    loop {
        match states.recv_deadline(end) {
            Ok(zk_framework::ConnectionState::Reconnected) => break,
            Ok(_) => {}
            Err(e) => panic!("no reconnect: {e}"),
        }
    }
    assert!(wait_until(timing().wait(), || proxy.set_watches_delayed() >= 1));
    assert!(events.try_recv().is_err(), "told before the watch was proven in place");
    // Lost before the proof came: no Reset for that connection.
    proxy.delay_set_watches(Duration::ZERO);
    proxy.cut();
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Reset { new_session: false }
    );
    mk(&writer, &format!("{root}/after"), b"");
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        WatcherEvent::Node {
            event_type: EventType::NodeCreated,
            path: format!("{root}/after")
        }
    );
    w.close();
}

/// A cache cut off and reconnected several times while another client
/// creates, changes and deletes its nodes: replayed, its events (zxid order
/// between two `Initialized`) give the server's subtree.
#[test]
fn a_cache_cut_off_under_writes_tells_its_events_in_zxid_order() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let root = "/ct-cuts";
    mk(&writer, root, b"");
    let cache = CuratorCache::builder(&c, root).build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let stop = Arc::new(AtomicBool::new(false));
    let (wr, st) = (writer.clone(), stop.clone());
    let mut rng = Rng(seed());
    let writing = std::thread::spawn(move || {
        while !st.load(Ordering::Relaxed) {
            let p = format!("{root}/n{}", rng.next() % 16);
            let _ = match rng.next() % 3 {
                0 => wr.create().with_data(b"0".to_vec()).for_path(&p).map(drop),
                1 => wr.set_data(&p, rng.next().to_string().into_bytes(), None).map(drop),
                _ => wr.delete().for_path(&p),
            };
        }
    });
    let mut evs: Vec<CacheEvent> = Vec::new();
    for cut in 1..=8 {
        proxy.cut();
        // Read again after the cut (the first load was one), and live
        // changes heard after that, before the next cut.
        let end = Instant::now() + timing().wait();
        loop {
            let inits = evs.iter().filter(|e| **e == CacheEvent::Initialized).count();
            let live_after = evs
                .iter()
                .rev()
                .take_while(|e| **e != CacheEvent::Initialized)
                .any(|e| e.path().is_some());
            if inits > cut && live_after {
                break;
            }
            match rx.recv_deadline(end) {
                Ok(ev) => evs.push(ev),
                Err(e) => panic!("cut {cut}: no re-read and live changes after it ({e})"),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    writing.join().unwrap();
    let want = synced_view(&writer, root);
    assert!(
        wait_until(timing().wait(), || cache.freshness().is_current()
            && cached(&cache, root) == want),
        "the cache did not settle on the server's view"
    );
    cache.close();
    evs.extend(rx.iter());
    // Replayed: each event applies, and every event stands at a zxid no
    // earlier than the one before it: a live event at the zxid of the state
    // it shows (its mzxid); in a re-read's difference (from `Resyncing` to
    // `Initialized`, and the first load) a creation at its czxid and a
    // change at its mzxid (a deletion's zxid is not kept: not checked), and
    // the live events after it at or after every state it showed.
    let mut v: BTreeMap<String, (i64, i64, Vec<u8>)> = BTreeMap::new();
    let mut last = i64::MIN;
    let mut newest_shown = i64::MIN;
    let mut in_diff = true;
    let mut out_of_order = Vec::new();
    let mut at = |key: i64, shown: i64, ev: &CacheEvent, last: &mut i64, newest: &mut i64| {
        if key < *last {
            out_of_order.push(format!("{ev:?} after {last:#x}"));
        }
        *last = (*last).max(key);
        *newest = (*newest).max(shown);
    };
    for ev in &evs {
        let node = |d: &zk_recipes::ChildData| (d.stat().czxid, d.stat().mzxid, d.data().unwrap_or_default().to_vec());
        match ev {
            CacheEvent::Created(d) => {
                assert!(
                    v.insert(d.path().to_string(), node(d)).is_none(),
                    "created twice: {ev:?}"
                );
                let key = if in_diff { d.stat().czxid } else { d.stat().mzxid };
                at(key, d.stat().mzxid, ev, &mut last, &mut newest_shown);
            }
            CacheEvent::Changed { old, new } => {
                assert_eq!(v.get(old.path()), Some(&node(old)), "changed from what was not shown");
                v.insert(new.path().to_string(), node(new));
                at(new.stat().mzxid, new.stat().mzxid, ev, &mut last, &mut newest_shown);
            }
            CacheEvent::Deleted(d) => {
                assert_eq!(v.remove(d.path()), Some(node(d)), "deleted what was not shown");
            }
            CacheEvent::Freshness(zk_recipes::Freshness::Resyncing) => in_diff = true,
            CacheEvent::Initialized => {
                in_diff = false;
                last = last.max(newest_shown);
            }
            _ => {}
        }
    }
    v.remove(root);
    assert!(
        out_of_order.is_empty(),
        "{} events out of zxid order: {:#?}",
        out_of_order.len(),
        &out_of_order[..out_of_order.len().min(5)]
    );
    assert_eq!(v, want);
}
