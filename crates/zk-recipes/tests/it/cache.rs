//! `CuratorCache` and `PersistentWatcher` against a real server (the backend
//! `ZK_TEST_SERVER` names): the first load, live changes in zxid order, a
//! node deleted and created again (live and while disconnected), a partition
//! that heals before expiry, a new session, the freshness through all of it,
//! the bound on memory, the options, listeners that panic or block, and bad
//! input.
//!
//! Every test checks the events against the server: replayed from an empty
//! view, the events a cache told must give exactly what the server holds
//! (each creation of a node the cache did not show, each change and
//! deletion of the node it showed, with the data it showed), and the node
//! events between two `Initialized` come in the order of their zxids.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::Error;
use zk_recipes::{CacheEvent, ChildData, CuratorCache, Freshness};
use zk_recipes::{PersistentWatcher, WatcherEvent};
use zk_testing::proxy::FaultProxy;

use crate::support::{client, init_log, server, timing, tree, wait_until};

/// What a node is, for comparing: czxid, mzxid, data.
type Node = (i64, i64, Option<Vec<u8>>);

fn node_of(d: &ChildData) -> Node {
    (d.stat().czxid, d.stat().mzxid, d.data().map(<[u8]>::to_vec))
}

/// The server's subtree at `root`, read by `c`.
fn server_view(c: &CuratorFramework, root: &str) -> BTreeMap<String, Node> {
    let mut paths = vec![root.to_string()];
    paths.extend(tree(c, root));
    paths
        .into_iter()
        .filter_map(|p| {
            let (data, st) = c.get_data(&p).ok()?;
            Some((p, (st.czxid, st.mzxid, Some(data))))
        })
        .collect()
}

fn cache_view(cache: &CuratorCache) -> BTreeMap<String, Node> {
    cache
        .snapshot()
        .iter()
        .map(|d| (d.path().to_string(), node_of(d)))
        .collect()
}

/// Replays `events` from an empty view: each must apply (a creation of an
/// absent node, a change or deletion of the node shown, with what it
/// showed), and live events must come in zxid order. Returns the view.
fn replay(events: &[CacheEvent]) -> BTreeMap<String, Node> {
    let mut v: BTreeMap<String, Node> = BTreeMap::new();
    let mut last_zxid = i64::MIN;
    for ev in events {
        match ev {
            CacheEvent::Created(d) => {
                assert!(
                    v.insert(d.path().to_string(), node_of(d)).is_none(),
                    "created twice: {ev:?}"
                );
                // At the zxid of the state it shows (a creation read after
                // later changes of the node shows them: one event).
                assert!(
                    d.stat().mzxid >= last_zxid,
                    "out of zxid order: {ev:?} after {last_zxid:#x}"
                );
                last_zxid = d.stat().mzxid;
            }
            CacheEvent::Changed { old, new } => {
                assert_eq!(
                    v.get(old.path()),
                    Some(&node_of(old)),
                    "changed from what was not shown: {ev:?}"
                );
                assert_eq!(old.stat().czxid, new.stat().czxid, "a change is of one node: {ev:?}");
                assert!(new.stat().mzxid > old.stat().mzxid, "a change moves on: {ev:?}");
                assert!(
                    new.stat().mzxid >= last_zxid,
                    "out of zxid order: {ev:?} after {last_zxid:#x}"
                );
                last_zxid = new.stat().mzxid;
                v.insert(new.path().to_string(), node_of(new));
            }
            CacheEvent::Deleted(d) => {
                assert_eq!(
                    v.remove(d.path()),
                    Some(node_of(d)),
                    "deleted what was not shown: {ev:?}"
                );
            }
            // A re-synchronisation's difference is ordered by its own rule
            // (deletions at their latest possible zxid).
            CacheEvent::Initialized => last_zxid = i64::MIN,
            _ => {}
        }
    }
    v
}

/// Collects events until `done` holds on what was collected, within the
/// test wait.
fn collect_until(rx: &Receiver<CacheEvent>, all: &mut Vec<CacheEvent>, done: impl Fn(&[CacheEvent]) -> bool) {
    let end = Instant::now() + timing().wait();
    while !done(all) {
        match rx.recv_deadline(end) {
            Ok(ev) => all.push(ev),
            Err(e) => panic!("events ended ({e}) before the condition held; got {all:#?}"),
        }
    }
}

/// The next failure the cache tells, within the test wait.
fn next_failure(rx: &Receiver<CacheEvent>) -> Error {
    let end = Instant::now() + timing().wait();
    loop {
        match rx.recv_deadline(end) {
            Ok(CacheEvent::Failed(e)) => return e,
            Ok(_) => {}
            Err(e) => panic!("no failure told: {e}"),
        }
    }
}

fn initialized_count(evs: &[CacheEvent]) -> usize {
    evs.iter().filter(|e| **e == CacheEvent::Initialized).count()
}

/// Waits until the cache is current and shows what the server has.
fn settles(cache: &CuratorCache, c: &CuratorFramework, root: &str) {
    assert!(
        wait_until(timing().wait(), || cache.freshness().is_current()
            && cache_view(cache) == server_view(c, root)),
        "the cache of {root} did not settle: {:?}\ncache  {:?}\nserver {:?}",
        cache.freshness(),
        cache_view(cache),
        server_view(c, root)
    );
}

fn mk(c: &CuratorFramework, path: &str, data: &str) {
    c.create()
        .creating_parents_if_needed()
        .with_data(data.as_bytes().to_vec())
        .for_path(path)
        .unwrap();
}

fn set(c: &CuratorFramework, path: &str, data: &str) {
    c.set_data(path, data.as_bytes().to_vec(), None).unwrap();
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

// ---- the first load and live changes ---------------------------------------------------

#[test]
fn the_first_load_tells_every_node_parents_first_then_initialized() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc1/a", "a");
    mk(&c, "/cc1/a/x", "x");
    mk(&c, "/cc1/b", "b");
    let cache = CuratorCache::builder(&c, "/cc1").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| initialized_count(e) == 1);
    let paths: Vec<&str> = evs.iter().filter_map(CacheEvent::path).collect();
    assert_eq!(paths, vec!["/cc1", "/cc1/a", "/cc1/a/x", "/cc1/b"]);
    assert_eq!(replay(&evs), server_view(&c, "/cc1"));
    settles(&cache, &c, "/cc1");
    assert_eq!(cache.get("/cc1/a/x").unwrap().data(), Some(&b"x"[..]));
    assert_eq!(cache.size(), 4);
    assert_eq!(cache.stats().resyncs, 1);
    cache.close();
}

#[test]
fn live_changes_come_in_zxid_order_and_a_recreation_is_a_delete_and_a_create() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    mk(&c, "/cc2/a", "a1");
    let cache = CuratorCache::builder(&c, "/cc2").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    // Many writes from another session, as fast as they go.
    for i in 0..20 {
        mk(&writer, &format!("/cc2/n{i}"), "0");
        set(&writer, &format!("/cc2/n{i}"), "1");
        set(&writer, "/cc2/a", &format!("a{i}"));
        if i % 3 == 0 {
            writer.delete().for_path(&format!("/cc2/n{i}")).unwrap();
        }
    }
    // Deleted and created again with the same version (0): a delete and a
    // create, never a silent change.
    writer.delete().for_path("/cc2/a").unwrap();
    mk(&writer, "/cc2/a", "again");
    mk(&writer, "/cc2/a/deep/er", "d");
    let want = server_view(&writer, "/cc2");
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| replay(e) == want);
    let a_events: Vec<&CacheEvent> = evs.iter().filter(|e| e.path() == Some("/cc2/a")).collect();
    assert!(
        matches!(
            a_events[a_events.len() - 2..],
            [CacheEvent::Deleted(_), CacheEvent::Created(_)]
        ),
        "{a_events:#?}"
    );
    settles(&cache, &c, "/cc2");
    cache.close();
}

/// Every change of the freshness is an event: a change announced makes the
/// cache `Updating` (told before the change's event), then `Current` again
/// once it is applied; `get_current` refuses in between.
#[test]
fn an_announced_change_is_updating_until_applied() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc20/a", "a1");
    let cache = CuratorCache::builder(&c, "/cc20").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| {
        e.last() == Some(&CacheEvent::Freshness(Freshness::Current))
    });
    evs.clear();
    set(&c, "/cc20/a", "a2");
    collect_until(&rx, &mut evs, |e| {
        e.last() == Some(&CacheEvent::Freshness(Freshness::Current))
    });
    let short: Vec<String> = evs
        .iter()
        .map(|e| match e {
            CacheEvent::Changed { new, .. } => format!("~{}", new.path()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(short, ["Freshness(Updating)", "~/cc20/a", "Freshness(Current)"]);
    assert_eq!(cache.get_current("/cc20/a").unwrap().unwrap().data(), Some(&b"a2"[..]));
    cache.close();
}

#[test]
fn a_cache_follows_its_root_into_existence_and_out_of_it() {
    init_log();
    let s = server();
    let c = client(&s);
    let cache = CuratorCache::builder(&c, "/cc3/not/yet").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    assert_eq!(cache.size(), 0);
    mk(&c, "/cc3/not/yet/child", "c");
    settles(&cache, &c, "/cc3/not/yet");
    assert_eq!(cache.size(), 2);
    c.delete()
        .deleting_children_if_needed()
        .for_path("/cc3/not/yet")
        .unwrap();
    assert!(wait_until(timing().wait(), || cache.size() == 0));
    let evs: Vec<CacheEvent> = rx.try_iter().collect();
    assert!(replay(&evs).is_empty(), "{evs:#?}");
    cache.close();
}

// ---- faults ------------------------------------------------------------------------------

/// A partition that heals before the session expires, with a node deleted
/// and created again, one changed, one created and one deleted while the
/// cache was cut off: after the heal the cache re-reads and tells exactly
/// those, then `Initialized` again. Its freshness went stale (with the
/// zxid of its view), then re-synchronising, then current; `get_current`
/// refused while it was not current.
#[test]
fn a_partition_that_heals_is_stale_then_resyncs_with_the_exact_difference() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    mk(&writer, "/cc4/a", "a1");
    mk(&writer, "/cc4/b", "b1");
    mk(&writer, "/cc4/gone", "g");
    let cache = CuratorCache::builder(&c, "/cc4").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let before = cache_view(&cache);

    proxy.refuse(true);
    proxy.cut();
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| {
        e.iter()
            .any(|e| matches!(e, CacheEvent::Freshness(Freshness::Stale { .. })))
    });
    let Freshness::Stale { last_zxid, .. } = cache.freshness() else {
        panic!("not stale: {:?}", cache.freshness())
    };
    assert!(
        last_zxid >= before.values().map(|n| n.1).max().unwrap(),
        "{last_zxid:#x}"
    );
    assert!(matches!(
        cache.get_current("/cc4/a"),
        Err(Error::CacheNotCurrent { .. })
    ));
    // The view is still served, as it was.
    assert_eq!(cache_view(&cache), before);

    writer.delete().for_path("/cc4/a").unwrap();
    mk(&writer, "/cc4/a", "a2");
    set(&writer, "/cc4/b", "b2");
    mk(&writer, "/cc4/new", "n");
    writer.delete().for_path("/cc4/gone").unwrap();
    proxy.refuse(false);

    let want = server_view(&writer, "/cc4");
    collect_until(&rx, &mut evs, |e| {
        initialized_count(e) == 2 && replay(e) == want && e.last() == Some(&CacheEvent::Freshness(Freshness::Current))
    });
    let after_heal: Vec<String> = evs
        .iter()
        .skip_while(|e| !matches!(e, CacheEvent::Freshness(Freshness::Stale { .. })))
        .filter_map(|e| match e {
            CacheEvent::Created(d) => Some(format!("+{}", d.path())),
            CacheEvent::Changed { new, .. } => Some(format!("~{}", new.path())),
            CacheEvent::Deleted(d) => Some(format!("-{}", d.path())),
            _ => None,
        })
        .collect();
    let mut sorted = after_heal.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec!["+/cc4/a", "+/cc4/new", "-/cc4/a", "-/cc4/gone", "~/cc4/b"],
        "{after_heal:?}"
    );
    let a_pos = |s: &str| after_heal.iter().position(|x| x == s).unwrap();
    assert!(a_pos("-/cc4/a") < a_pos("+/cc4/a"));
    let freshness: Vec<&CacheEvent> = evs.iter().filter(|e| matches!(e, CacheEvent::Freshness(_))).collect();
    assert!(
        freshness.windows(2).any(|w| matches!(
            w,
            [
                CacheEvent::Freshness(Freshness::Resyncing),
                CacheEvent::Freshness(Freshness::Current)
            ]
        )),
        "{freshness:?}"
    );
    // Re-synchronising until `Initialized`, and current with it: told
    // together, the difference first.
    assert!(
        evs.windows(2)
            .any(|w| matches!(w, [CacheEvent::Initialized, CacheEvent::Freshness(Freshness::Current)])),
        "{evs:?}"
    );
    settles(&cache, &c, "/cc4");
    assert_eq!(cache.get_current("/cc4/new").unwrap().unwrap().data(), Some(&b"n"[..]));
    cache.close();
}

/// An expired session: the cache adds its watch again on the new session,
/// re-reads, and tells the difference; live changes after it are told.
#[test]
fn a_new_session_adds_the_watch_again_and_resyncs() {
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    mk(&writer, "/cc5/a", "a1");
    let cache = CuratorCache::builder(&c, "/cc5").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let zk = c.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    writer.delete().for_path("/cc5/a").unwrap();
    mk(&writer, "/cc5/a", "a2");
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| initialized_count(e) == 2);
    mk(&writer, "/cc5/after", "x");
    let want = server_view(&writer, "/cc5");
    collect_until(&rx, &mut evs, |e| replay(e) == want);
    settles(&cache, &c, "/cc5");
    cache.close();
}

// ---- bounds and options ------------------------------------------------------------------

#[test]
fn a_subtree_past_the_limit_is_refused_with_a_clear_error() {
    init_log();
    let s = server();
    let c = client(&s);
    for i in 0..5 {
        mk(&c, &format!("/cc6/n{i}"), "");
    }
    // Too large at the first load.
    let cache = CuratorCache::builder(&c, "/cc6").max_nodes(3).build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    let ev = rx
        .iter()
        .find(|e| matches!(e, CacheEvent::Failed(_)))
        .expect("a failure");
    assert_eq!(
        ev,
        CacheEvent::Failed(Error::CacheTooLarge {
            path: "/cc6".into(),
            limit: 3
        })
    );
    assert!(!cache.wait_current_for(Duration::from_millis(1)));
    assert!(matches!(cache.failure(), Some(Error::CacheTooLarge { limit: 3, .. })));
    cache.close();
    // Growing past the limit while followed.
    let cache = CuratorCache::builder(&c, "/cc6").max_nodes(7).build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    mk(&c, "/cc6/n5", "");
    mk(&c, "/cc6/n6", "");
    assert_eq!(
        next_failure(&rx),
        Error::CacheTooLarge {
            path: "/cc6".into(),
            limit: 7
        }
    );
    assert!(cache.size() <= 8, "{}", cache.size());
    assert!(!cache.freshness().is_current());
    cache.close();
    assert!(matches!(
        CuratorCache::builder(&c, "/cc6").max_nodes(0).build(),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn depth_data_and_filter_options() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc7/a/x", "x");
    mk(&c, "/cc7/b", "b");
    mk(&c, "/cc7/b.tmp", "t");
    let single = CuratorCache::builder(&c, "/cc7").single_node().build().unwrap();
    let children = CuratorCache::builder(&c, "/cc7").max_depth(Some(1)).build().unwrap();
    let stats_only = CuratorCache::builder(&c, "/cc7").data_not_cached().build().unwrap();
    let filtered = CuratorCache::builder(&c, "/cc7")
        .filter(|p| !p.ends_with(".tmp"))
        .build()
        .unwrap();
    for cache in [&single, &children, &stats_only, &filtered] {
        cache.start().unwrap();
        assert!(cache.wait_current_for(timing().wait()));
    }
    let paths = |cache: &CuratorCache| {
        cache
            .snapshot()
            .iter()
            .map(|d| d.path().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&single), vec!["/cc7"]);
    assert_eq!(paths(&children), vec!["/cc7", "/cc7/a", "/cc7/b", "/cc7/b.tmp"]);
    assert_eq!(paths(&filtered), vec!["/cc7", "/cc7/a", "/cc7/a/x", "/cc7/b"]);
    assert!(stats_only.snapshot().iter().all(|d| d.data().is_none()));
    assert_eq!(stats_only.size(), 5);
    // Live: a change below the depth is not followed; a filtered one is not kept.
    mk(&c, "/cc7/a/y", "y");
    mk(&c, "/cc7/c.tmp", "t");
    mk(&c, "/cc7/c", "c");
    set(&c, "/cc7", "root");
    assert!(wait_until(timing().wait(), || {
        single.get("/cc7").and_then(|d| d.data().map(<[u8]>::to_vec)) == Some(b"root".to_vec())
            && children.get("/cc7/c").is_some()
            && filtered.get("/cc7/c").is_some()
            && filtered.get("/cc7/a/y").is_some()
            && stats_only.size() == 8
    }));
    assert_eq!(single.size(), 1);
    assert!(children.get("/cc7/a/y").is_none());
    assert!(filtered.get("/cc7/c.tmp").is_none());
    for cache in [&single, &children, &stats_only, &filtered] {
        cache.close();
    }
}

#[test]
fn close_ends_channels_and_clears_unless_told_not_to() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc8/a", "a");
    let clears = CuratorCache::builder(&c, "/cc8").build().unwrap();
    let keeps = CuratorCache::builder(&c, "/cc8")
        .do_not_clear_on_close()
        .build()
        .unwrap();
    for cache in [&clears, &keeps] {
        cache.start().unwrap();
        assert!(cache.wait_current_for(timing().wait()));
    }
    let rx = clears.events();
    clears.close();
    clears.close();
    keeps.close();
    assert_eq!(clears.size(), 0);
    assert_eq!(keeps.size(), 2);
    assert!(rx.recv_timeout(timing().wait()).is_err(), "the channel ends");
    assert!(matches!(
        clears.start(),
        Err(Error::Closed {
            recipe: "CuratorCache",
            ..
        })
    ));
    assert!(matches!(
        clears.get_current("/cc8/a"),
        Err(Error::CacheNotCurrent { .. })
    ));
    #[allow(deprecated)]
    let listened = clears.listen(|_| {});
    assert!(matches!(listened, Err(Error::Closed { .. })));
    // The watch went with it: the client keeps none for /cc8.
    let w = c.zookeeper_client().registered_watches();
    assert!(!format!("{w:?}").contains("/cc8"), "{w:?}");
}

/// The deprecated `listen(f)` (each listener on a thread of its own).
#[test]
#[allow(deprecated)]
fn a_listener_that_panics_or_blocks_stops_no_one_else() {
    init_log();
    let s = server();
    let c = client(&s);
    let cache = CuratorCache::builder(&c, "/cc9").build().unwrap();
    let (block_tx, block_rx) = crossbeam_channel::bounded::<()>(0);
    let heard = Arc::new(AtomicUsize::new(0));
    let _panics = cache.listen(|_| panic!("a listener's bug")).unwrap();
    let _blocks = cache
        .listen(move |_| {
            let _ = block_rx.recv();
        })
        .unwrap();
    let h = heard.clone();
    let _counts = cache
        .listen(move |ev| {
            if matches!(ev, CacheEvent::Created(_)) {
                h.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    cache.start().unwrap();
    for i in 0..5 {
        mk(&c, &format!("/cc9/n{i}"), "");
    }
    assert!(wait_until(timing().wait(), || heard.load(Ordering::SeqCst) == 6));
    settles(&cache, &c, "/cc9");
    drop(block_tx);
    cache.close();
}

#[test]
fn bad_input_is_a_typed_error() {
    let s = server();
    let c = client(&s);
    for bad in ["", "no-slash", "/trailing/", "/a//b"] {
        assert!(
            matches!(
                CuratorCache::builder(&c, bad).build(),
                Err(Error::ZooKeeper(zk_framework::Error::InvalidPath(_)))
            ),
            "{bad:?}"
        );
        assert!(PersistentWatcher::new(&c, bad, true).is_err(), "{bad:?}");
    }
    let cache = CuratorCache::builder(&c, "/cc10").build().unwrap();
    cache.start().unwrap();
    assert!(matches!(
        cache.start(),
        Err(Error::AlreadyStarted {
            recipe: "CuratorCache",
            ..
        })
    ));
    cache.close();
}

/// The root path: the whole tree (here filtered to this test's part).
#[test]
fn the_root_path_caches_the_tree() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc11/a", "a");
    let cache = CuratorCache::builder(&c, "/")
        .filter(|p| p == "/cc11" || p.starts_with("/cc11/"))
        .build()
        .unwrap();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    assert_eq!(cache_view(&cache), server_view(&c, "/cc11"));
    mk(&c, "/cc11/b", "b");
    assert!(wait_until(timing().wait(), || cache_view(&cache) == server_view(&c, "/cc11")));
    cache.close();
}

// ---- PersistentWatcher ---------------------------------------------------------------------

#[track_caller]
fn next_watch(rx: &Receiver<WatcherEvent>) -> WatcherEvent {
    rx.recv_timeout(timing().wait()).expect("a watcher event")
}

#[test]
fn a_persistent_watcher_is_kept_through_a_cut_and_a_new_session() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    let w = PersistentWatcher::new(&c, "/pw1", true).unwrap();
    let rx = w.events();
    w.start().unwrap();
    assert_eq!(next_watch(&rx), WatcherEvent::Reset { new_session: true });
    mk(&writer, "/pw1/a", "");
    // The parent is created first (creating parents), then the child.
    let mut got = vec![next_watch(&rx), next_watch(&rx)];
    got.sort_by_key(|e| format!("{e:?}"));
    assert!(
        got.iter().all(|e| matches!(
            e,
            WatcherEvent::Node {
                event_type: zk_framework::EventType::NodeCreated,
                ..
            }
        )),
        "{got:?}"
    );

    // A cut: suspended, then reset on the same session.
    proxy.cut();
    assert_eq!(next_watch(&rx), WatcherEvent::Suspended);
    assert_eq!(next_watch(&rx), WatcherEvent::Reset { new_session: false });
    set(&writer, "/pw1/a", "x");
    assert_eq!(
        next_watch(&rx),
        WatcherEvent::Node {
            event_type: zk_framework::EventType::NodeDataChanged,
            path: "/pw1/a".into()
        }
    );

    // A new session: the watch is added again.
    let zk = c.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    let end = Instant::now() + timing().wait();
    loop {
        let ev = rx.recv_deadline(end).expect("a reset on the new session");
        if ev == (WatcherEvent::Reset { new_session: true }) {
            break;
        }
    }
    writer.delete().for_path("/pw1/a").unwrap();
    assert_eq!(
        next_watch(&rx),
        WatcherEvent::Node {
            event_type: zk_framework::EventType::NodeDeleted,
            path: "/pw1/a".into()
        }
    );
    w.close();
    assert!(rx.recv_timeout(timing().wait()).is_err());
}

/// A server before 3.6 has no `addWatch`: the cache and the watcher say so
/// with a typed error and stop, they do not hang or retry forever.
#[test]
fn a_server_before_3_6_is_a_typed_failure_not_a_hang() {
    init_log();
    for which in ["cache", "watcher"] {
        let (addr, served) = zk_testing::support::pre_3_6_server(timing().wait());
        let c = CuratorFramework::builder()
            .connect_string(addr)
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(10), 2))
            .build()
            .unwrap();
        c.block_until_connected(timing().wait()).unwrap();
        let too_old = |e: &Error| matches!(e, Error::ZooKeeper(zk_framework::Error::ServerTooOld { what, .. }) if what == "addWatch");
        if which == "cache" {
            let cache = CuratorCache::builder(&c, "/a").build().unwrap();
            let rx = cache.events();
            cache.start().unwrap();
            let failed = next_failure(&rx);
            assert!(too_old(&failed), "{failed:?}");
            assert!(!cache.wait_current_for(Duration::from_millis(1)));
            cache.close();
        } else {
            let w = PersistentWatcher::new(&c, "/a", true).unwrap();
            let rx = w.events();
            w.start().unwrap();
            match rx.recv_timeout(timing().wait()).unwrap() {
                WatcherEvent::Failed(e) => assert!(too_old(&e), "{e:?}"),
                other => panic!("{other:?}"),
            }
            assert!(rx.recv_timeout(timing().wait()).is_err(), "the channel ends");
            w.close();
        }
        c.close();
        served.join().unwrap();
    }
}

/// A cache's root the client may not read: the cache stops with the
/// server's `NoAuth`; a descendant it may not read is left out.
#[test]
fn acl_forbidden_nodes_are_a_failure_at_the_root_and_left_out_below() {
    use zk_framework::{perms, Acl, Id};
    init_log();
    let s = server();
    let admin = client(&s);
    let nobody_reads = vec![Acl {
        perms: perms::ALL & !perms::READ,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }];
    mk(&admin, "/cc12/open", "o");
    admin
        .create()
        .with_acl(nobody_reads.clone())
        .for_path("/cc12/closed")
        .unwrap();
    let cache = CuratorCache::builder(&admin, "/cc12").build().unwrap();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let paths: Vec<String> = cache.snapshot().iter().map(|d| d.path().to_string()).collect();
    assert_eq!(paths, vec!["/cc12", "/cc12/open"]);
    cache.close();

    let root = CuratorCache::builder(&admin, "/cc12/closed").build().unwrap();
    let rx = root.events();
    root.start().unwrap();
    let failed = next_failure(&rx);
    assert!(
        matches!(failed, Error::ZooKeeper(zk_framework::Error::NoAuth { .. })),
        "{failed:?}"
    );
    root.close();
}

// ---- the bridges -----------------------------------------------------------------------------

#[test]
fn node_cache_follows_one_node() {
    init_log();
    let s = server();
    let c = client(&s);
    let n = zk_recipes::NodeCache::new(&c, "/cc13/flag").unwrap();
    let rx = n.events();
    n.start().unwrap();
    assert!(n.wait_current_for(timing().wait()));
    assert!(n.current().unwrap().is_none());
    mk(&c, "/cc13/flag", "on");
    mk(&c, "/cc13/flag/child", "ignored");
    set(&c, "/cc13/flag", "off");
    // The node alone, as the server has it (a change the first read already
    // saw is in the creation: one event).
    let (data, st) = c.get_data("/cc13/flag").unwrap();
    let want: BTreeMap<String, Node> = [("/cc13/flag".to_string(), (st.czxid, st.mzxid, Some(data)))].into();
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| replay(e) == want);
    assert!(
        evs.iter().all(|e| e.path().is_none_or(|p| p == "/cc13/flag")),
        "{evs:?}"
    );
    assert_eq!(n.current_data().unwrap().data(), Some(&b"off"[..]));
    assert_eq!(n.cache().size(), 1);
    n.close();
}

#[test]
fn path_children_cache_tells_children_and_members() {
    use zk_recipes::{PathChildrenCache, PathChildrenCacheEvent as P};
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let writer = client(&s);
    mk(&writer, "/cc14/a", "10.0.0.1");
    let g = PathChildrenCache::new(&c, "/cc14").unwrap();
    let rx = g.events();
    g.start().unwrap();
    let next = |want: &dyn Fn(&P) -> bool| -> P {
        let end = Instant::now() + timing().wait();
        loop {
            let ev = rx.recv_deadline(end).expect("a children event");
            if want(&ev) {
                return ev;
            }
        }
    };
    let P::ChildAdded(a) = next(&|e| matches!(e, P::ChildAdded(_))) else {
        unreachable!()
    };
    assert_eq!(a.path(), "/cc14/a");
    let P::Initialized(now) = next(&|e| matches!(e, P::Initialized(_))) else {
        unreachable!()
    };
    assert_eq!(now.len(), 1);
    // One step at a time: changes a read sees together are one event.
    mk(&writer, "/cc14/b", "10.0.0.2");
    assert!(matches!(next(&|e| !matches!(e, P::Freshness(_))), P::ChildAdded(d) if d.path() == "/cc14/b"));
    mk(&writer, "/cc14/b/deeper", "not a member");
    set(&writer, "/cc14/a", "10.0.0.9");
    assert!(matches!(next(&|e| !matches!(e, P::Freshness(_))), P::ChildUpdated { new, .. } if new.path() == "/cc14/a"));
    writer.delete().for_path("/cc14/b/deeper").unwrap();
    writer.delete().for_path("/cc14/b").unwrap();
    assert!(matches!(next(&|e| !matches!(e, P::Freshness(_))), P::ChildRemoved(d) if d.path() == "/cc14/b"));
    assert!(wait_until(timing().wait(), || g.members().len() == 1));
    assert_eq!(g.current_members().unwrap()["a"], b"10.0.0.9".to_vec());
    assert_eq!(g.current_data_for("/cc14/a").unwrap().data(), Some(&b"10.0.0.9"[..]));
    assert!(g.current_data_for("/cc14").is_none());

    // A member that leaves and joins again while this process is cut off:
    // removed and added, and Initialized again with the children.
    proxy.refuse(true);
    proxy.cut();
    next(&|e| matches!(e, P::Freshness(Freshness::Stale { .. })));
    assert!(matches!(g.current_members(), Err(Error::CacheNotCurrent { .. })));
    writer.delete().for_path("/cc14/a").unwrap();
    mk(&writer, "/cc14/a", "10.0.0.3");
    proxy.refuse(false);
    assert!(matches!(
        next(&|e| matches!(e, P::ChildRemoved(_) | P::ChildAdded(_))),
        P::ChildRemoved(_)
    ));
    assert!(matches!(next(&|e| matches!(e, P::ChildAdded(_))), P::ChildAdded(d) if d.data() == Some(&b"10.0.0.3"[..])));
    let P::Initialized(now) = next(&|e| matches!(e, P::Initialized(_))) else {
        unreachable!()
    };
    assert_eq!(now.iter().map(|d| d.path()).collect::<Vec<_>>(), vec!["/cc14/a"]);
    g.close();
}

/// Curator's `COMPRESSED_DATA`: nodes written gzip (as Curator's
/// `compressed()` writes them) are read inflated; a node that is not gzip
/// keeps its bytes.
#[test]
fn compressed_data_is_inflated() {
    use std::io::Write;
    init_log();
    let s = server();
    let c = client(&s);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(b"a long configuration value").unwrap();
    let zipped = z.finish().unwrap();
    c.create()
        .creating_parents_if_needed()
        .with_data(zipped.clone())
        .for_path("/cc15/zipped")
        .unwrap();
    mk(&c, "/cc15/plain", "not gzip");
    let inflating = CuratorCache::builder(&c, "/cc15").compressed_data().build().unwrap();
    let raw = CuratorCache::builder(&c, "/cc15").build().unwrap();
    for cache in [&inflating, &raw] {
        cache.start().unwrap();
        assert!(cache.wait_current_for(timing().wait()));
    }
    let data = |cache: &CuratorCache, p: &str| cache.get(p).unwrap().data().unwrap().to_vec();
    assert_eq!(data(&inflating, "/cc15/zipped"), b"a long configuration value");
    assert_eq!(data(&inflating, "/cc15/plain"), b"not gzip");
    assert_eq!(data(&raw, "/cc15/zipped"), zipped);
    inflating.close();
    raw.close();
}

/// A partition that outlasts the session: the client is told Lost, the
/// server expires the session, and after the heal a new session adds the
/// watch again; the cache re-reads and tells the difference (a node
/// re-created while away among it), then follows live changes.
#[test]
fn a_partition_that_heals_after_expiry_resyncs_on_a_new_session() {
    init_log();
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let states = c.state_receiver();
    let writer = client(&s);
    mk(&writer, "/cc16/a", "a1");
    let cache = CuratorCache::builder(&c, "/cc16").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(timing().wait()));
    let session = c.session_id();
    let password = c.zookeeper_client().session_password();
    proxy.refuse(true);
    proxy.cut();
    let end = Instant::now() + timing().wait() * 3;
    loop {
        match states.recv_deadline(end) {
            Ok(zk_framework::ConnectionState::Lost) => break,
            Ok(_) => {}
            Err(e) => panic!("no Lost: {e}"),
        }
    }
    // The server expires it too if it has not yet (its timeout passed with
    // no connection; an error means it is gone already).
    let _ = s.expire_session(session, &password);
    writer.delete().for_path("/cc16/a").unwrap();
    mk(&writer, "/cc16/a", "a2");
    mk(&writer, "/cc16/b", "b");
    proxy.refuse(false);
    let want = server_view(&writer, "/cc16");
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| initialized_count(e) == 2 && replay(e) == want);
    assert_ne!(c.session_id(), session, "a new session");
    let a: Vec<&CacheEvent> = evs.iter().filter(|e| e.path() == Some("/cc16/a")).collect();
    assert!(
        matches!(a[a.len() - 2..], [CacheEvent::Deleted(_), CacheEvent::Created(_)]),
        "{a:?}"
    );
    set(&writer, "/cc16/b", "live");
    settles(&cache, &c, "/cc16");
    cache.close();
}

/// A subtree wider than the reads the cache keeps in flight at once (its
/// first load pipelines them in windows): read whole, every node once.
#[test]
fn a_wide_subtree_is_read_whole() {
    init_log();
    let s = server();
    let c = client(&s);
    mk(&c, "/cc18/x", "");
    let ops: Vec<zk_framework::Op> = (0..600)
        .map(|i| {
            zk_framework::Op::create(
                format!("/cc18/x/n{i:04}"),
                format!("v{i}").into_bytes(),
                zk_framework::Acl::open_unsafe(),
                zk_framework::CreateMode::Persistent,
            )
        })
        .collect();
    for chunk in ops.chunks(200) {
        c.multi_results(chunk.to_vec()).unwrap();
    }
    mk(&c, "/cc18/x/n0007/deeper", "d");
    let cache = CuratorCache::builder(&c, "/cc18").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    let want = server_view(&c, "/cc18");
    assert_eq!(want.len(), 603);
    let mut evs = Vec::new();
    collect_until(&rx, &mut evs, |e| initialized_count(e) == 1);
    assert_eq!(replay(&evs), want);
    // Read each node once, and listed only the nodes with children.
    let stats = cache.stats();
    assert_eq!(stats.reads, 603 + 3, "{stats:?}");
    cache.close();
}

// ---- one instance, many handles ------------------------------------------------------------

fn send_sync<T: Send + Sync + Clone + 'static>() {}

/// The receiver ends (disconnected) within the test wait.
#[track_caller]
fn ends<T: std::fmt::Debug>(rx: &Receiver<T>) {
    let end = Instant::now() + timing().wait();
    loop {
        match rx.recv_deadline(end) {
            Ok(_) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            Err(e) => panic!("the channel did not end: {e}"),
        }
    }
}

/// The kit's convention: clones share one cache (a clone used and dropped on
/// another thread leaves it open and following); the drop of the last one
/// closes it (its channels end, its watch goes).
#[test]
fn clones_share_one_cache_and_the_last_drop_closes_it() {
    use zk_recipes::{NodeCache, PathChildrenCache};
    send_sync::<CuratorCache>();
    send_sync::<NodeCache>();
    send_sync::<PathChildrenCache>();
    send_sync::<PersistentWatcher>();
    init_log();
    let s = server();
    let c = client(&s);
    let writer = client(&s);
    mk(&writer, "/cc19/a", "a");
    let cache = CuratorCache::builder(&c, "/cc19").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    let other = cache.clone();
    let seen = std::thread::spawn(move || {
        assert!(other.wait_current_for(timing().wait()));
        other.get("/cc19/a").map(|d| d.data().map(<[u8]>::to_vec))
    })
    .join()
    .unwrap();
    assert_eq!(seen, Some(Some(b"a".to_vec())));
    // One clone gone: still started, still following.
    assert!(matches!(cache.start(), Err(Error::AlreadyStarted { .. })));
    mk(&writer, "/cc19/b", "b");
    assert!(wait_until(timing().wait(), || cache.get("/cc19/b").is_some()));
    drop(cache);
    ends(&rx);
    assert!(wait_until(timing().wait(), || !format!(
        "{:?}",
        c.zookeeper_client().registered_watches()
    )
    .contains("/cc19")));

    let node = NodeCache::new(&c, "/cc19/a").unwrap();
    let children = PathChildrenCache::new(&c, "/cc19").unwrap();
    let (node_rx, children_rx) = (node.events(), children.events());
    node.start().unwrap();
    children.start().unwrap();
    let (n2, c2) = (node.clone(), children.clone());
    let (got_node, got_children) = std::thread::spawn(move || {
        assert!(n2.wait_current_for(timing().wait()) && c2.wait_current_for(timing().wait()));
        (n2.current_data().is_some(), c2.members().len())
    })
    .join()
    .unwrap();
    assert_eq!((got_node, got_children), (true, 2));
    assert!(matches!(node.start(), Err(Error::AlreadyStarted { .. })));
    assert!(matches!(children.start(), Err(Error::AlreadyStarted { .. })));
    drop(node);
    drop(children);
    ends(&node_rx);
    ends(&children_rx);

    let w = PersistentWatcher::new(&c, "/cc19", true).unwrap();
    let events = w.events();
    let w2 = w.clone();
    std::thread::spawn(move || w2.start()).join().unwrap().unwrap();
    assert!(next_watch(&events).is_reset());
    mk(&writer, "/cc19/c", "c");
    assert!(matches!(next_watch(&events), WatcherEvent::Node { .. }));
    drop(w);
    ends(&events);
    assert!(wait_until(timing().wait(), || !format!(
        "{:?}",
        c.zookeeper_client().registered_watches()
    )
    .contains("/cc19")));
}
