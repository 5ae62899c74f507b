//! Persistent watches (ZooKeeper 3.6+): addWatch in both modes and the events
//! each gets, removeWatches / checkWatches, chroot and namespace paths, the
//! re-registration after a reconnect (SetWatches2, nothing replayed), the
//! session's states, and watchers that panic. On the backend `ZK_TEST_SERVER`
//! selects: the embedded server must answer as Apache ZooKeeper 3.8 does,
//! its quirks included (ZOOKEEPER-4466, watcher types 4 and 5).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver};

use crate::support::plain::proxy::Proxy;
use crate::support::plain::{open, test_root, wait_until, TestServer, WAIT};
use zk_framework::proto::{CreateMode, ErrorCode, EventType, KeeperState, OpCode};
use zk_framework::{AddWatchMode, Client, ClientConfig, Error, WatchedEvent, WatcherType};

type Ev = (EventType, Option<String>);

fn node(t: EventType, p: &str) -> Ev {
    (t, Some(p.to_string()))
}

fn state(s: KeeperState) -> WatchedEvent {
    WatchedEvent {
        event_type: EventType::None,
        state: s,
        path: None,
    }
}

/// Receives events until `last` (included), failing after [`WAIT`]; node
/// events only as (type, path), session states kept as they are.
fn until(rx: &Receiver<WatchedEvent>, last: &Ev) -> Vec<Ev> {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        match rx.recv_deadline(deadline) {
            Ok(e) => {
                let ev = (e.event_type, e.path.clone());
                let done = ev == *last;
                seen.push(ev);
                if done {
                    return seen;
                }
            }
            Err(_) => panic!("no {last:?}; saw {seen:?}"),
        }
    }
}

/// The next `n` events as (type, path), failing after [`WAIT`].
fn take(rx: &Receiver<WatchedEvent>, n: usize) -> Vec<Ev> {
    (0..n)
        .map(|_| {
            let e = next(rx);
            (e.event_type, e.path)
        })
        .collect()
}

/// The next event, failing after [`WAIT`].
fn next(rx: &Receiver<WatchedEvent>) -> WatchedEvent {
    rx.recv_timeout(WAIT).expect("an event")
}

fn config(session: Duration) -> ClientConfig {
    ClientConfig::default()
        .with_session_timeout(session)
        .with_connect_timeout(Duration::from_millis(500))
}

fn mk(zk: &Client, p: &str) {
    zk.create(p, b"", &open(), CreateMode::Persistent).unwrap();
}

/// The table of events of the spec (§1.2), one connection per mode.
#[test]
fn persistent_and_recursive_watches_get_the_events_of_3_8() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-table");
    let pw = format!("{root}/pw");
    let (k, g) = (format!("{pw}/k"), format!("{pw}/k/g"));
    let p_client = server.client(Duration::from_secs(10));
    let r_client = server.client(Duration::from_secs(10));
    let (ptx, prx) = unbounded();
    let (rtx, rrx) = unbounded();
    p_client.add_watch(&pw, AddWatchMode::Persistent, ptx).unwrap();
    r_client.add_watch(&pw, AddWatchMode::PersistentRecursive, rtx).unwrap();

    mk(&writer, &pw);
    mk(&writer, &k);
    mk(&writer, &g);
    writer.set_data(&k, b"1", None).unwrap();
    writer.delete(&g, None).unwrap();
    writer.set_data(&pw, b"1", None).unwrap();
    writer.delete(&k, None).unwrap();
    writer.delete(&pw, None).unwrap();
    mk(&writer, &pw); // the watch survived the deletion
    writer.set_data(&pw, b"end", None).unwrap();

    use EventType::{NodeChildrenChanged, NodeCreated, NodeDataChanged, NodeDeleted};
    let end = node(NodeDataChanged, &pw);
    assert_eq!(
        take(&prx, 7),
        vec![
            node(NodeCreated, &pw),
            node(NodeChildrenChanged, &pw),
            node(NodeDataChanged, &pw),
            node(NodeChildrenChanged, &pw),
            node(NodeDeleted, &pw),
            node(NodeCreated, &pw),
            end.clone(),
        ]
    );
    assert_eq!(
        take(&rrx, 10),
        vec![
            node(NodeCreated, &pw),
            node(NodeCreated, &k),
            node(NodeCreated, &g),
            node(NodeDataChanged, &k),
            node(NodeDeleted, &g),
            node(NodeDataChanged, &pw),
            node(NodeDeleted, &k),
            node(NodeDeleted, &pw),
            node(NodeCreated, &pw),
            end.clone(),
        ]
    );
    assert_eq!(p_client.registered_watches().persistent, vec![pw.clone()]);
    assert_eq!(r_client.registered_watches().persistent_recursive, vec![pw.clone()]);
    assert_eq!(r_client.registered_watches().callbacks, 1);
}

/// A connection gets each notification once; the client hands it to every
/// local watcher it matches, one-shot and persistent, each once.
#[test]
fn one_notification_reaches_every_matching_watcher_once() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-once");
    let (a, b) = (format!("{root}/a"), format!("{root}/a/b"));
    mk(&writer, &a);
    mk(&writer, &b);
    let zk = server.client(Duration::from_secs(10));
    let (rtx, rrx) = unbounded();
    let (ptx, prx) = unbounded();
    let (r2tx, r2rx) = unbounded();
    zk.add_watch(&a, AddWatchMode::PersistentRecursive, rtx).unwrap();
    zk.add_watch(&b, AddWatchMode::Persistent, ptx).unwrap();
    // A second registration of the same path and mode: one server watch.
    zk.add_watch(&a, AddWatchMode::PersistentRecursive, r2tx).unwrap();
    let before = server.embedded().map(|s| s.stats().watch_notifications);
    writer.set_data(&b, b"1", None).unwrap();
    writer.set_data(&a, b"1", None).unwrap();
    let end = node(EventType::NodeDataChanged, &a);
    let want = vec![node(EventType::NodeDataChanged, &b), end.clone()];
    assert_eq!(until(&rrx, &end), want);
    assert_eq!(until(&r2rx, &end), want);
    assert_eq!(
        until(&prx, &node(EventType::NodeDataChanged, &b)),
        vec![node(EventType::NodeDataChanged, &b)]
    );
    if let (Some(s), Some(before)) = (server.embedded(), before) {
        assert_eq!(s.stats().watch_notifications - before, 2, "one notification per change");
    }
    assert!(prx.try_recv().is_err(), "{:?}", prx.try_recv());
    assert_eq!(zk.registered_watches().callbacks, 3);
}

/// ZOOKEEPER-4466 (3.6–3.8): one mode per path per connection, the latest.
/// A recursive watch added on a path with a persistent one takes the child
/// table too, so the persistent watch's NodeChildrenChanged never comes.
#[test]
fn a_second_mode_on_one_path_replaces_the_first_as_3_8_does() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-4466");
    let pw = format!("{root}/pw");
    mk(&writer, &pw);
    let zk = server.client(Duration::from_secs(10));
    let (ptx, prx) = unbounded();
    let (rtx, rrx) = unbounded();
    zk.add_watch(&pw, AddWatchMode::Persistent, ptx).unwrap();
    zk.add_watch(&pw, AddWatchMode::PersistentRecursive, rtx).unwrap();
    let k = format!("{pw}/k");
    mk(&writer, &k);
    writer.set_data(&pw, b"1", None).unwrap();
    let end = node(EventType::NodeDataChanged, &pw);
    // The persistent watcher hears no NodeChildrenChanged for /pw/k.
    assert_eq!(until(&prx, &end), vec![end.clone()]);
    assert_eq!(until(&rrx, &end), vec![node(EventType::NodeCreated, &k), end.clone()]);

    // The other order: persistent after recursive takes both tables back;
    // descendants are no longer reported, NodeChildrenChanged is.
    let pw2 = format!("{root}/pw2");
    mk(&writer, &pw2);
    let (r2tx, r2rx) = unbounded();
    let (p2tx, p2rx) = unbounded();
    zk.add_watch(&pw2, AddWatchMode::PersistentRecursive, r2tx).unwrap();
    zk.add_watch(&pw2, AddWatchMode::Persistent, p2tx).unwrap();
    let k2 = format!("{pw2}/k");
    mk(&writer, &k2);
    writer.set_data(&k2, b"1", None).unwrap();
    writer.set_data(&pw2, b"1", None).unwrap();
    let end2 = node(EventType::NodeDataChanged, &pw2);
    assert_eq!(
        until(&p2rx, &end2),
        vec![node(EventType::NodeChildrenChanged, &pw2), end2.clone()]
    );
    assert_eq!(until(&r2rx, &end2), vec![end2.clone()]);
}

/// ZOOKEEPER-4466 with a one-shot watch: a getData watch set on a path with a
/// persistent watch takes the data table (one-shot): it fires once, to both
/// local watchers, and then the server sends no more data events for the
/// path; the child table keeps the persistent mode.
#[test]
fn a_one_shot_watch_on_a_persistent_path_takes_its_data_half_as_3_8_does() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-4466-once");
    let pw = format!("{root}/pw");
    mk(&writer, &pw);
    let zk = server.client(Duration::from_secs(10));
    let (ptx, prx) = unbounded();
    let (dtx, drx) = unbounded();
    zk.add_watch(&pw, AddWatchMode::Persistent, ptx).unwrap();
    zk.get_data_w(&pw, dtx).unwrap();
    writer.set_data(&pw, b"1", None).unwrap();
    writer.set_data(&pw, b"2", None).unwrap();
    let k = format!("{pw}/k");
    mk(&writer, &k);
    let changed = node(EventType::NodeDataChanged, &pw);
    let children = node(EventType::NodeChildrenChanged, &pw);
    assert_eq!(until(&prx, &children), vec![changed.clone(), children.clone()]);
    assert_eq!(take(&drx, 1), vec![changed]);
    assert!(zk.check_watches(&pw, WatcherType::Children).unwrap());
    assert!(!zk.check_watches(&pw, WatcherType::Data).unwrap());
}

/// remove_watch: the watcher's last event is PersistentWatchRemoved, the
/// server's watch is gone (checkWatches says so), and other registrations on
/// the path keep theirs until the last one goes.
#[test]
fn remove_watch_ends_a_registration_and_the_server_watch() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-remove");
    let pw = format!("{root}/pw");
    mk(&writer, &pw);
    let zk = server.client(Duration::from_secs(10));
    let (tx1, rx1) = unbounded();
    let (tx2, rx2) = unbounded();
    let id1 = zk.add_watch(&pw, AddWatchMode::Persistent, tx1).unwrap();
    let id2 = zk.add_watch(&pw, AddWatchMode::Persistent, tx2).unwrap();
    assert_ne!(id1, id2);
    assert!(zk.check_watches(&pw, WatcherType::Any).unwrap());
    assert!(zk.check_watches(&pw, WatcherType::Data).unwrap());
    assert!(zk.check_watches(&pw, WatcherType::Children).unwrap());

    zk.remove_watch(id1).unwrap();
    assert_eq!(
        next(&rx1),
        WatchedEvent {
            event_type: EventType::PersistentWatchRemoved,
            state: KeeperState::SyncConnected,
            path: Some(pw.clone()),
        }
    );
    // id2 still holds the server watch.
    assert!(zk.check_watches(&pw, WatcherType::Any).unwrap());
    writer.set_data(&pw, b"1", None).unwrap();
    let changed = node(EventType::NodeDataChanged, &pw);
    assert_eq!(until(&rx2, &changed), vec![changed.clone()]);
    assert!(rx1.try_recv().is_err());

    zk.remove_watch(id2).unwrap();
    assert_eq!(next(&rx2).event_type, EventType::PersistentWatchRemoved);
    assert!(!zk.check_watches(&pw, WatcherType::Any).unwrap());
    assert_eq!(zk.registered_watches().persistent, Vec::<String>::new());
    // Gone already: Ok, and nothing more is heard.
    zk.remove_watch(id2).unwrap();
    writer.set_data(&pw, b"2", None).unwrap();
    zk.sync(&pw).unwrap();
    zk.get_data(&pw).unwrap();
    assert!(rx2.try_recv().is_err());

    // A recursive one too.
    let (tx3, rx3) = unbounded();
    let id3 = zk.add_watch(&pw, AddWatchMode::PersistentRecursive, tx3).unwrap();
    assert!(zk.check_watches(&pw, WatcherType::Any).unwrap());
    zk.remove_watch(id3).unwrap();
    assert_eq!(next(&rx3).event_type, EventType::PersistentWatchRemoved);
    assert!(!zk.check_watches(&pw, WatcherType::Any).unwrap());
}

/// remove_watch on ZooKeeper 3.6-3.8 removes with type `Any`, which takes
/// this connection's one-shot watches on the path from the server too: the
/// client sets them again, so that each still fires on the next change (a
/// data watch, an exists watch of a missing node, a child watch, each on a
/// path of its own with a persistent registration removed there).
#[test]
fn remove_watch_leaves_the_one_shot_watches_of_its_path() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-remove-keeps");
    let zk = server.client(Duration::from_secs(10));
    for (i, mode) in [AddWatchMode::Persistent, AddWatchMode::PersistentRecursive]
        .into_iter()
        .enumerate()
    {
        let data = format!("{root}/data{i}");
        let missing = format!("{root}/missing{i}");
        let kids = format!("{root}/kids{i}");
        mk(&writer, &data);
        mk(&writer, &kids);
        let (dtx, drx) = unbounded();
        let (etx, erx) = unbounded();
        let (ctx, crx) = unbounded();
        let mut ids = Vec::new();
        for p in [&data, &missing, &kids] {
            let (tx, _rx) = unbounded::<WatchedEvent>();
            ids.push(zk.add_watch(p, mode, tx).unwrap());
        }
        zk.get_data_w(&data, dtx).unwrap();
        assert!(zk.exists_w(&missing, etx).unwrap().is_none());
        zk.get_children_w(&kids, ctx).unwrap();
        for id in ids {
            zk.remove_watch(id).unwrap();
        }
        writer.set_data(&data, b"1", None).unwrap();
        mk(&writer, &missing);
        mk(&writer, &format!("{kids}/k"));
        assert_eq!(take(&drx, 1), vec![node(EventType::NodeDataChanged, &data)], "{mode:?}");
        assert_eq!(take(&erx, 1), vec![node(EventType::NodeCreated, &missing)], "{mode:?}");
        assert_eq!(
            take(&crx, 1),
            vec![node(EventType::NodeChildrenChanged, &kids)],
            "{mode:?}"
        );
        // One-shot: nothing more.
        writer.set_data(&data, b"2", None).unwrap();
        zk.sync(&data).unwrap();
        zk.get_data(&data).unwrap();
        assert!(drx.try_recv().is_err());
    }
}

/// The one-shot watch set again after a removal with type `Any` fires for
/// a change made between the removal and its re-registration (held back
/// here by the proxy): it is set relative to the zxid the removal was
/// answered at, as after a reconnect.
#[test]
fn a_change_between_the_removal_and_the_re_registration_still_fires() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-remove-gap");
    let pw = format!("{root}/pw");
    mk(&writer, &pw);
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = Client::connect(&proxy.connect_string(), config(Duration::from_secs(10))).unwrap();
    zk.wait_connected_timeout(WAIT).unwrap();
    let (tx, _rx) = unbounded::<WatchedEvent>();
    let id = zk.add_watch(&pw, AddWatchMode::Persistent, tx).unwrap();
    let (dtx, drx) = unbounded();
    zk.get_data_w(&pw, dtx).unwrap();
    proxy.delay_set_watches(Duration::from_millis(500));
    zk.remove_watch(id).unwrap();
    // The re-registration waits in the proxy: the change comes first.
    writer.set_data(&pw, b"between", None).unwrap();
    assert_eq!(take(&drx, 1), vec![node(EventType::NodeDataChanged, &pw)]);
    assert_eq!(
        proxy.set_watches_delayed(),
        1,
        "the re-registration went through the delay"
    );
}

/// Watcher types 4 and 5 in checkWatches / removeWatches: ZooKeeper 3.8
/// answers MarshallingError (-5), reported as `ServerTooOld`, and the
/// connection stays usable.
#[test]
fn watcher_types_4_and_5_are_refused_as_3_8_does() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(10));
    let root = test_root(&zk, "pw-types");
    let (tx, _rx) = unbounded();
    zk.add_watch(&root, AddWatchMode::Persistent, tx).unwrap();
    for kind in [WatcherType::Persistent, WatcherType::PersistentRecursive] {
        let e = zk.check_watches(&root, kind).unwrap_err();
        assert!(
            matches!(&e, Error::ServerTooOld { code: ErrorCode::MarshallingError, needs, .. } if needs == "3.9"),
            "{e:?}"
        );
        let e = zk.remove_all_watches(&root, kind, false).unwrap_err();
        assert!(matches!(e, Error::ServerTooOld { .. }), "{e:?}");
        assert!(e.to_string().contains("needs ZooKeeper 3.9+"), "{e}");
    }
    // Nothing was removed, and the connection still answers.
    assert!(zk.check_watches(&root, WatcherType::Any).unwrap());
    assert_eq!(zk.registered_watches().persistent, vec![root.clone()]);
    // Local-only removal needs no server.
    zk.remove_all_watches(&root, WatcherType::Persistent, true).unwrap();
    assert!(zk.registered_watches().persistent.is_empty());
}

/// removeAllWatches (18) and checkWatches (17) on one-shot and persistent
/// watches; type Any removes every mode; NoWatcher when nothing matched.
#[test]
fn remove_all_watches_and_check_watches_on_each_kind() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-removeall");
    let (a, b) = (format!("{root}/a"), format!("{root}/b"));
    mk(&writer, &a);
    let zk = server.client(Duration::from_secs(10));
    let (dtx, drx) = unbounded();
    let (ctx, crx) = unbounded();
    zk.get_data_w(&a, dtx).unwrap();
    zk.get_children_w(&a, ctx).unwrap();
    assert!(zk.check_watches(&a, WatcherType::Data).unwrap());
    assert!(zk.check_watches(&a, WatcherType::Children).unwrap());
    assert!(!zk.check_watches(&b, WatcherType::Any).unwrap());
    // checkWatches removes nothing.
    assert!(zk.check_watches(&a, WatcherType::Data).unwrap());

    zk.remove_all_watches(&a, WatcherType::Data, false).unwrap();
    assert_eq!(next(&drx).event_type, EventType::DataWatchRemoved);
    assert!(!zk.check_watches(&a, WatcherType::Data).unwrap());
    assert!(zk.check_watches(&a, WatcherType::Children).unwrap());
    zk.remove_all_watches(&a, WatcherType::Children, false).unwrap();
    assert_eq!(next(&crx).event_type, EventType::ChildWatchRemoved);
    assert!(!zk.check_watches(&a, WatcherType::Any).unwrap());
    assert!(zk.registered_watches().is_empty());
    // Nothing left: NoWatcher, from the server and locally.
    let no_watcher = |r: Result<(), Error>| {
        matches!(
            r,
            Err(Error::Keeper {
                code: ErrorCode::NoWatcher,
                ..
            })
        )
    };
    assert!(no_watcher(zk.remove_all_watches(&a, WatcherType::Any, false)));
    assert!(no_watcher(zk.remove_all_watches(&a, WatcherType::Any, true)));

    // Any removes a persistent and a recursive registration.
    let (ptx, prx) = unbounded();
    let (rtx, rrx) = unbounded();
    zk.add_watch(&a, AddWatchMode::Persistent, ptx).unwrap();
    zk.add_watch(&b, AddWatchMode::PersistentRecursive, rtx).unwrap();
    zk.remove_all_watches(&a, WatcherType::Any, false).unwrap();
    zk.remove_all_watches(&b, WatcherType::Any, false).unwrap();
    assert_eq!(next(&prx).event_type, EventType::PersistentWatchRemoved);
    assert_eq!(next(&rrx).event_type, EventType::PersistentWatchRemoved);
    assert!(!zk.check_watches(&a, WatcherType::Any).unwrap());
    assert!(!zk.check_watches(&b, WatcherType::Any).unwrap());
    assert!(zk.registered_watches().is_empty());

    // Data removes the data half of a persistent watch on 3.8
    // (ZOOKEEPER-4471): the child half still answers.
    let (p2tx, _p2rx) = unbounded();
    zk.add_watch(&a, AddWatchMode::Persistent, p2tx).unwrap();
    zk.remove_all_watches(&a, WatcherType::Data, false).unwrap();
    assert!(!zk.check_watches(&a, WatcherType::Data).unwrap());
    assert!(zk.check_watches(&a, WatcherType::Children).unwrap());
    // ... and the local registration stays (Data means one-shot ones here).
    assert_eq!(zk.registered_watches().persistent, vec![a.clone()]);
}

/// checkWatches on 3.6–3.8 answers for the path, not the connection: it is
/// true when any connection watches the path in the table asked about
/// (`WatchManager.containsWatcher` returns true at the path for any watcher),
/// and false on a descendant of another connection's recursive watch.
#[test]
fn check_watches_answers_for_any_connection_as_3_8_does() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(10));
    let other = server.client(Duration::from_secs(10));
    let root = test_root(&zk, "pw-check");
    let child = format!("{root}/c");
    let (tx, _rx) = unbounded();
    other.add_watch(&root, AddWatchMode::PersistentRecursive, tx).unwrap();
    assert!(other.check_watches(&root, WatcherType::Any).unwrap());
    assert!(
        zk.check_watches(&root, WatcherType::Any).unwrap(),
        "3.8: another connection's watch counts"
    );
    assert!(zk.check_watches(&root, WatcherType::Data).unwrap());
    assert!(!zk.check_watches(&child, WatcherType::Any).unwrap());
    assert!(!other.check_watches(&child, WatcherType::Any).unwrap());
    // removeWatches does mean this connection: NoWatcher for zk.
    assert!(matches!(
        zk.remove_all_watches(&root, WatcherType::Any, false),
        Err(Error::Keeper {
            code: ErrorCode::NoWatcher,
            ..
        })
    ));
    assert!(other.check_watches(&root, WatcherType::Any).unwrap());
}

/// Paths in and out are relative to the chroot.
#[test]
fn a_chroot_is_taken_off_event_paths() {
    let Some(server) = TestServer::start() else { return };
    let direct = server.client(Duration::from_secs(10));
    let root = test_root(&direct, "pw-chroot");
    let zk = Client::connect(
        &format!("{}{root}", server.connect_string()),
        config(Duration::from_secs(10)),
    )
    .unwrap();
    zk.wait_connected_timeout(WAIT).unwrap();
    let (tx, rx) = unbounded();
    zk.add_watch("/", AddWatchMode::PersistentRecursive, tx).unwrap();
    assert_eq!(zk.registered_watches().persistent_recursive, vec!["/".to_string()]);
    mk(&direct, &format!("{root}/x"));
    direct.set_data(&root, b"1", None).unwrap();
    let end = node(EventType::NodeDataChanged, "/");
    assert_eq!(until(&rx, &end), vec![node(EventType::NodeCreated, "/x"), end.clone()]);
    assert!(zk.check_watches("/", WatcherType::Any).unwrap());
    zk.remove_all_watches("/", WatcherType::Any, false).unwrap();
    assert_eq!(next(&rx).path.as_deref(), Some("/"));
}

/// The framework adds its namespace to paths and takes it off event paths.
#[test]
fn the_framework_namespace_is_taken_off_event_paths() {
    let server = crate::support::server();
    let c = crate::support::client_ns(&server, "pwns");
    c.create().for_path("/n").unwrap();
    let (tx, rx) = unbounded();
    let id = c.add_watch("/n", AddWatchMode::PersistentRecursive, tx).unwrap();
    let raw = crate::support::framework::raw_client(&server);
    raw.create("/pwns/n/c", b"", &open(), CreateMode::Persistent).unwrap();
    raw.set_data("/pwns/n", b"1", None).unwrap();
    let end = node(EventType::NodeDataChanged, "/n");
    assert_eq!(
        until(&rx, &end),
        vec![node(EventType::NodeCreated, "/n/c"), end.clone()]
    );
    assert!(c.check_watches("/n", WatcherType::Any).unwrap());
    c.remove_watch(id).unwrap();
    assert_eq!(next(&rx).path.as_deref(), Some("/n"));
    assert!(!c.check_watches("/n", WatcherType::Any).unwrap());
    let (tx2, rx2) = unbounded();
    c.add_watch("/n", AddWatchMode::Persistent, tx2).unwrap();
    c.remove_all_watches("/n", WatcherType::Any, false).unwrap();
    let e = next(&rx2);
    assert_eq!(
        (e.event_type, e.path.as_deref()),
        (EventType::PersistentWatchRemoved, Some("/n"))
    );
    assert!(matches!(
        c.add_watch("n", AddWatchMode::Persistent, |_: WatchedEvent| {}),
        Err(Error::InvalidPath(_))
    ));
    c.close();
}

/// A connection drop within the session: Disconnected, then SyncConnected,
/// the watches re-registered (SetWatches2 for a batch with a persistent
/// path), changes made while away not replayed, later ones delivered.
#[test]
fn a_reconnect_reregisters_persistent_watches_and_replays_nothing() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = Client::connect(&proxy.connect_string(), config(Duration::from_secs(6))).unwrap();
    zk.wait_connected_timeout(WAIT).unwrap();
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-reconnect");
    let (p, r) = (format!("{root}/p"), format!("{root}/r"));
    mk(&writer, &p);
    mk(&writer, &r);
    let (ptx, prx) = unbounded();
    let (rtx, rrx) = unbounded();
    zk.add_watch(&p, AddWatchMode::Persistent, ptx).unwrap();
    zk.add_watch(&r, AddWatchMode::PersistentRecursive, rtx).unwrap();
    let before = server.embedded().map(|s| s.stats());

    proxy.refuse(true);
    proxy.cut();
    for rx in [&prx, &rrx] {
        assert_eq!(next(rx), state(KeeperState::Disconnected));
    }
    // Changes while away.
    writer.set_data(&p, b"away", None).unwrap();
    mk(&writer, &format!("{r}/away"));
    proxy.refuse(false);
    for rx in [&prx, &rrx] {
        assert_eq!(next(rx), state(KeeperState::SyncConnected));
    }
    // The re-registration went before this call on the connection.
    zk.sync("/").unwrap();
    if let (Some(s), Some(before)) = (server.embedded(), &before) {
        let now = s.stats();
        assert_eq!(
            now.requests(OpCode::SetWatches2) - before.requests(OpCode::SetWatches2),
            1
        );
        assert_eq!(
            now.requests(OpCode::SetWatches) - before.requests(OpCode::SetWatches),
            0
        );
    }
    writer.set_data(&p, b"back", None).unwrap();
    mk(&writer, &format!("{r}/back"));
    let pend = node(EventType::NodeDataChanged, &p);
    assert_eq!(until(&prx, &pend), vec![pend.clone()], "nothing replayed");
    let rend = node(EventType::NodeCreated, &format!("{r}/back"));
    assert_eq!(until(&rrx, &rend), vec![rend.clone()], "nothing replayed");
    assert!(zk.check_watches(&p, WatcherType::Any).unwrap());
    assert!(zk.check_watches(&r, WatcherType::Any).unwrap());

    // With one-shot watches only, the batch is a SetWatches.
    zk.remove_all_watches(&p, WatcherType::Any, false).unwrap();
    zk.remove_all_watches(&r, WatcherType::Any, false).unwrap();
    let (dtx, drx) = unbounded();
    zk.get_data_w(&p, dtx).unwrap();
    let before = server.embedded().map(|s| s.stats());
    proxy.cut();
    assert!(wait_until(WAIT, || zk.sync("/").is_ok()));
    if let (Some(s), Some(before)) = (server.embedded(), &before) {
        let now = s.stats();
        assert_eq!(
            now.requests(OpCode::SetWatches) - before.requests(OpCode::SetWatches),
            1
        );
        assert_eq!(
            now.requests(OpCode::SetWatches2) - before.requests(OpCode::SetWatches2),
            0
        );
    }
    writer.set_data(&p, b"again", None).unwrap();
    assert_eq!(next(&drx).event_type, EventType::NodeDataChanged);
}

/// Expiry: a final (None, Expired), and the registration is forgotten.
#[test]
fn expiry_is_told_to_persistent_watchers_and_forgets_them() {
    let Some(mut server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(6));
    let root = test_root(&zk, "pw-expiry");
    let (tx, rx) = unbounded();
    zk.add_watch(&root, AddWatchMode::PersistentRecursive, tx).unwrap();
    server.expire(&zk);
    let deadline = Instant::now() + WAIT;
    loop {
        let e = rx.recv_deadline(deadline).expect("an Expired event");
        if e == state(KeeperState::Expired) {
            break;
        }
        // Before it, only the connection's states.
        assert_eq!(e.event_type, EventType::None, "{e:?}");
    }
    assert!(zk.registered_watches().is_empty());
    assert_eq!(
        zk.add_watch(&root, AddWatchMode::Persistent, |_: WatchedEvent| {}),
        Err(Error::SessionExpired)
    );
}

/// Close: a final (None, Closed), then nothing.
#[test]
fn close_is_told_to_persistent_watchers() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(6));
    let (tx, rx) = unbounded();
    zk.add_watch("/", AddWatchMode::Persistent, tx).unwrap();
    zk.close();
    assert_eq!(next(&rx), state(KeeperState::Closed));
    assert!(zk.registered_watches().is_empty());
}

/// A panicking persistent watcher is caught; it and the others keep getting
/// events.
#[test]
fn a_panicking_persistent_watcher_does_not_stop_the_others() {
    let Some(server) = TestServer::start() else { return };
    let writer = server.client(Duration::from_secs(10));
    let root = test_root(&writer, "pw-panic");
    let zk = server.client(Duration::from_secs(10));
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    zk.add_watch(&root, AddWatchMode::Persistent, move |_: WatchedEvent| {
        c2.fetch_add(1, Ordering::SeqCst);
        panic!("a watcher that panics");
    })
    .unwrap();
    let (tx, rx) = unbounded();
    zk.add_watch(&root, AddWatchMode::Persistent, tx).unwrap();
    for i in 0..3 {
        writer.set_data(&root, format!("{i}").as_bytes(), None).unwrap();
        assert_eq!(next(&rx).event_type, EventType::NodeDataChanged);
    }
    assert!(wait_until(WAIT, || calls.load(Ordering::SeqCst) == 3));
    assert!(zk.exists("/").unwrap().is_some());
}

/// Bad input never reaches the server and never panics.
#[test]
fn bad_paths_are_refused_before_sending() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(10));
    for bad in ["", "a", "/a/", "/a//b", "/a/./b", "/a\u{0}"] {
        assert!(
            matches!(
                zk.add_watch(bad, AddWatchMode::Persistent, |_: WatchedEvent| {}),
                Err(Error::InvalidPath(_))
            ),
            "{bad:?}"
        );
        assert!(matches!(
            zk.check_watches(bad, WatcherType::Any),
            Err(Error::InvalidPath(_))
        ));
        assert!(matches!(
            zk.remove_all_watches(bad, WatcherType::Any, false),
            Err(Error::InvalidPath(_))
        ));
    }
    assert!(zk.registered_watches().is_empty());
    // A watch on a missing node is fine: its creation is reported.
    let (tx, rx) = unbounded();
    zk.add_watch("/pw-missing-node", AddWatchMode::Persistent, tx).unwrap();
    zk.create("/pw-missing-node", b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    assert_eq!(next(&rx).event_type, EventType::NodeCreated);
}

/// A server before 3.6 answers addWatch with Unimplemented (-6): a stand-in
/// that speaks the handshake and answers every request so (pings aside).
#[test]
fn add_watch_on_a_server_before_3_6_is_server_too_old() {
    let (addr, server) = zk_testing::support::pre_3_6_server(WAIT);
    let zk = Client::connect(&addr, config(Duration::from_secs(6))).unwrap();
    zk.wait_connected_timeout(WAIT).unwrap();
    let e = zk
        .add_watch("/a", AddWatchMode::Persistent, |_: WatchedEvent| {})
        .unwrap_err();
    assert_eq!(
        e,
        Error::ServerTooOld {
            what: "addWatch".into(),
            needs: "3.6".into(),
            code: ErrorCode::Unimplemented,
        }
    );
    assert_eq!(
        e.to_string(),
        "addWatch needs ZooKeeper 3.6+ (the server answered Unimplemented, -6)"
    );
    assert_eq!(e.code(), Some(ErrorCode::Unimplemented));
    assert!(!e.is_retryable());
    assert!(zk.registered_watches().is_empty(), "nothing registered");
    zk.close();
    server.join().unwrap();
}

/// The four-letter words count persistent watches (they sit in the data
/// table, which is all `wchs`/`wchp`/`wchc` count on 3.8).
#[test]
fn four_letter_words_count_persistent_watches() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(10));
    let root = test_root(&zk, "pw-4lw");
    let (p, r) = (format!("{root}/p"), format!("{root}/r"));
    let (tx, _rx) = unbounded();
    zk.add_watch(&p, AddWatchMode::Persistent, tx.clone()).unwrap();
    zk.add_watch(&r, AddWatchMode::PersistentRecursive, tx).unwrap();
    let word =
        |w: &str| zk_testing::fourlw::four_letter_word(&server.connect_string(), w, WAIT).expect("four-letter word");
    assert_eq!(word("wchs"), "1 connections watching 2 paths\nTotal watches:2\n");
    let wchp = word("wchp");
    assert!(wchp.contains(&format!("{p}\n\t0x{:x}\n", zk.session_id())), "{wchp}");
    assert!(wchp.contains(&format!("{r}\n\t0x{:x}\n", zk.session_id())), "{wchp}");
    let wchc = word("wchc");
    assert!(wchc.contains(&format!("0x{:x}\n", zk.session_id())), "{wchc}");
}
