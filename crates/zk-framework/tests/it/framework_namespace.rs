//! Namespaces: every path goes through `/<namespace>`, the namespace node is a
//! container (so ZooKeeper reaps it once its children are gone), and watch
//! event paths come back without the namespace. Runs on the backend chosen by
//! `ZK_TEST_SERVER`.

use std::time::Duration;

use crate::support::framework::*;
use zk_framework::proto::{Acl, CreateMode, EventType};
use zk_framework::WatchedEvent;

fn event(rx: &crossbeam_channel::Receiver<WatchedEvent>) -> WatchedEvent {
    rx.recv_timeout(timing().wait()).expect("a watch event")
}

#[test]
fn every_path_goes_through_the_namespace() {
    let server = server();
    let r = connected(builder(&server).namespace("app"));
    let c = &r.client;
    let raw = raw_client(&server);
    assert_eq!(c.namespace(), Some("app"));
    assert_eq!(c.recipe().fix_path("/a"), "/app/a");
    assert_eq!(c.recipe().fix_path("/"), "/app");
    assert_eq!(c.recipe().unfix_path("/app/a"), "/a");

    assert_eq!(c.create().with_data(b"1".to_vec()).for_path("/a").unwrap(), "/a");
    assert_eq!(raw.get_data("/app/a").unwrap().0, b"1");
    assert_eq!(
        c.create()
            .creating_parent_containers_if_needed()
            .for_path("/b/c")
            .unwrap(),
        "/b/c"
    );
    assert!(raw.exists("/app/b/c").unwrap().is_some());
    assert_eq!(
        c.create()
            .with_mode(CreateMode::PersistentSequential)
            .for_path("/seq-")
            .unwrap(),
        "/seq-0000000002"
    );
    let mut kids = c.get_children("/").unwrap();
    kids.sort();
    assert_eq!(kids, ["a", "b", "seq-0000000002"]);
    assert!(c.check_exists("/").unwrap().is_some(), "/ is the namespace node");
    assert!(c.check_exists("/app").unwrap().is_none(), "no /app/app");
    c.set_data("/a", b"2".to_vec(), Some(0)).unwrap();
    assert_eq!(raw.get_data("/app/a").unwrap().0, b"2");
    assert_eq!(c.get_data("/a").unwrap().0, b"2");
    c.delete().for_path("/a").unwrap();
    assert!(raw.exists("/app/a").unwrap().is_none());
    // Nothing leaked outside the namespace.
    let mut top = raw.get_children("/").unwrap();
    top.sort();
    assert_eq!(top, ["app", "zookeeper"]);
    raw.close();
}

/// Containers show no mark in the Stat a client gets (ZooKeeper reports their
/// ephemeral owner as 0), so the test watches ZooKeeper reap the namespace
/// node once its children are gone, and a persistent one (without container
/// parents) survive the same sweep.
#[test]
fn the_namespace_node_is_a_container() {
    let server = server();
    let ctr = connected(builder(&server).namespace("ctr"));
    let plain = connected(builder(&server).namespace("plain").dont_use_container_parents());
    ctr.client.create().for_path("/x").unwrap();
    plain.client.create().for_path("/x").unwrap();
    let raw = raw_client(&server);
    assert!(raw.exists("/ctr").unwrap().is_some());
    assert!(raw.exists("/plain").unwrap().is_some());
    plain.client.delete().for_path("/x").unwrap();
    ctr.client.delete().for_path("/x").unwrap();
    assert!(
        zk_testing::wait_until(timing().wait(), || raw.exists("/ctr").unwrap().is_none()),
        "the namespace container was not reaped"
    );
    assert!(
        raw.exists("/plain").unwrap().is_some(),
        "a persistent namespace node was reaped"
    );
    // Creating parents brings the container back.
    ctr.client
        .create()
        .creating_parent_containers_if_needed()
        .for_path("/y")
        .unwrap();
    assert!(raw.exists("/ctr/y").unwrap().is_some());
    raw.close();
}

#[test]
fn watch_event_paths_are_unnamespaced() {
    let server = server();
    let r = connected(builder(&server).namespace("w"));
    let c = &r.client;
    let raw = raw_client(&server);
    c.create().for_path("/node").unwrap();

    let (tx, rx) = crossbeam_channel::unbounded();
    c.get_data_w("/node", tx).unwrap();
    raw.set_data("/w/node", b"new", None).unwrap();
    let e = event(&rx);
    assert_eq!(
        (e.event_type, e.path.as_deref()),
        (EventType::NodeDataChanged, Some("/node"))
    );

    let (tx, rx) = crossbeam_channel::unbounded();
    assert!(c.check_exists_w("/later", tx).unwrap().is_none());
    raw.create("/w/later", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    let e = event(&rx);
    assert_eq!(
        (e.event_type, e.path.as_deref()),
        (EventType::NodeCreated, Some("/later"))
    );

    let (tx, rx) = crossbeam_channel::unbounded();
    c.get_children_w("/", tx).unwrap();
    c.create().for_path("/kid").unwrap();
    let e = event(&rx);
    assert_eq!(
        (e.event_type, e.path.as_deref()),
        (EventType::NodeChildrenChanged, Some("/"))
    );

    // One-shot: a second change is not reported to the same watcher.
    let (tx, rx) = crossbeam_channel::unbounded();
    c.get_data_w("/node", tx).unwrap();
    c.set_data("/node", b"a".to_vec(), None).unwrap();
    c.set_data("/node", b"b".to_vec(), None).unwrap();
    assert_eq!(event(&rx).path.as_deref(), Some("/node"));
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    raw.close();
}

/// Reports the thread it ran on and the event's path; only signals.
struct OnThread(crossbeam_channel::Sender<(String, Option<String>)>);

impl zk_framework::Watcher for OnThread {
    fn process(self: Box<Self>, e: WatchedEvent) {
        let thread = std::thread::current().name().unwrap_or("?").to_string();
        let _ = self.0.send((thread, e.path));
    }

    fn only_signals(&self) -> bool {
        true
    }
}

/// The managed client passes a watcher's `only_signals` on: it runs on the
/// I/O thread, and its path still comes back without the namespace.
#[test]
fn a_watcher_that_only_signals_keeps_running_on_the_io_thread() {
    let server = server();
    let r = connected(builder(&server).namespace("sig"));
    let c = &r.client;
    c.create().for_path("/node").unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    c.get_data_w("/node", OnThread(tx)).unwrap();
    c.set_data("/node", b"x".to_vec(), None).unwrap();
    let got = rx.recv_timeout(timing().wait()).expect("a watch event");
    assert_eq!(got, ("zk-io".to_string(), Some("/node".to_string())));
}

#[test]
fn namespace_inside_a_chroot() {
    let server = server();
    let raw = raw_client(&server);
    raw.create("/root", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    let r = connected(builder_for(&format!("{}/root", server.connect_string())).namespace("app"));
    r.client.create().for_path("/a").unwrap();
    assert!(raw.exists("/root/app/a").unwrap().is_some());
    let (tx, rx) = crossbeam_channel::unbounded();
    r.client.get_data_w("/a", tx).unwrap();
    raw.set_data("/root/app/a", b"x", None).unwrap();
    assert_eq!(event(&rx).path.as_deref(), Some("/a"));
    raw.close();
}
