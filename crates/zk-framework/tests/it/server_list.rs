//! A server list that changes (`update_server_list`, ZooKeeper's
//! `updateServerList`): the list in use and the server connected to are
//! visible, garbage changes nothing, a client whose server stays in a list
//! that did not grow stays, and one whose server is gone moves, keeping its
//! session on an ensemble (3-node Apache) and connecting to a server of the
//! new list; a managed client's new sessions use the new list. The rule's
//! odds themselves are the unit table of `client::hosts`.

use std::time::{Duration, Instant};

use zk_framework::{Client, ClientConfig, ConnectionState, CreateMode, CuratorFramework, Error, RetryNTimes};
use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};

use crate::support::{init_log, timing, wait_until};

fn embedded() -> EmbeddedServer {
    EmbeddedServer::start(ServerConfig::default()).unwrap()
}

#[test]
fn the_list_and_the_server_in_use_are_visible_and_garbage_changes_nothing() {
    let (a, b) = (embedded(), embedded());
    let c = Client::connect(
        &format!("{},{}", a.connect_string(), b.connect_string()),
        ClientConfig::default(),
    )
    .unwrap();
    c.wait_connected(Instant::now() + timing().wait()).unwrap();
    let mut list = c.server_list();
    list.sort();
    let mut want = vec![a.connect_string(), b.connect_string()];
    want.sort();
    assert_eq!(list, want);
    let on = c.connected_to().unwrap();
    assert!(want.contains(&on), "{on}");

    for garbage in ["", ",", "host:0", "a:1;b:2", "bad host:1", "/chroot-only"] {
        assert!(
            matches!(c.update_server_list(garbage), Err(Error::InvalidConnectString { .. })),
            "{garbage:?}"
        );
        assert_eq!(c.server_list().len(), 2);
    }
    // The same servers (another order): nobody moves.
    let session = c.session_id();
    assert!(!c
        .update_server_list(&format!("{},{}", b.connect_string(), a.connect_string()))
        .unwrap());
    // The list shrank to the server in use: stay.
    assert!(!c.update_server_list(&on).unwrap());
    assert_eq!(c.server_list(), vec![on.clone()]);
    assert_eq!(c.connected_to().as_deref(), Some(on.as_str()));
    assert_eq!(c.session_id(), session);
    c.close();
    assert!(matches!(c.update_server_list(&on), Err(Error::Closed)));
}

#[test]
fn a_managed_client_moves_off_a_server_that_left_the_list_and_new_sessions_use_the_new_list() {
    let (a, b) = (embedded(), embedded());
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(a.connect_string())
        .connection_timeout(t.connection())
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(100)))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    assert_eq!(c.connected_to(), Some(a.connect_string()));
    let states = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = states.clone();
    let _h = c.add_listener(move |s| seen.lock().push(s));
    // Two standalone servers are two ensembles: on b the session of a is
    // unknown, so the move ends it and a new session starts there.
    assert!(c.update_server_list(&b.connect_string()).unwrap());
    assert!(wait_until(t.wait(), || c.connected_to() == Some(b.connect_string())));
    c.create().for_path("/on-b").unwrap();
    assert!(b.dump_tree().iter().any(|(p, _, _)| p == "/on-b"));
    assert!(wait_until(t.wait(), || states
        .lock()
        .contains(&ConnectionState::Reconnected)));
    // A later new session still goes to b, never back to a.
    let sid = c.zookeeper_client().session_id();
    assert!(b.expire_session(sid));
    assert!(wait_until(t.wait(), || {
        c.zookeeper_client().session_id() != sid && c.connected_to() == Some(b.connect_string())
    }));
    assert_eq!(c.server_list(), vec![b.connect_string()]);
    c.close();
}

#[test]
fn on_an_ensemble_a_client_whose_server_is_removed_moves_with_its_session() {
    if !zk_testing::apache::available_or_skip("server_list::on_an_ensemble") {
        return;
    }
    init_log();
    let t = timing();
    let cluster = ApacheCluster::start(3, ApacheConfig::default()).unwrap();
    let addr = |i: usize| format!("127.0.0.1:{}", cluster.client_port(i));
    let c = CuratorFramework::builder()
        .connect_string(addr(0))
        .session_timeout(t.scale(Duration::from_secs(10)))
        .connection_timeout(t.connection())
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    assert_eq!(c.connected_to(), Some(addr(0)));
    c.create().with_mode(CreateMode::Ephemeral).for_path("/mine").unwrap();
    let session = c.zookeeper_client().session_id();
    let states = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = states.clone();
    let _h = c.add_listener(move |s| seen.lock().push(s));

    // Server 0 leaves the list: the client moves to 1 or 2 with its session.
    assert!(c.update_server_list(&format!("{},{}", addr(1), addr(2))).unwrap());
    assert!(wait_until(t.wait(), || c
        .connected_to()
        .is_some_and(|s| s == addr(1) || s == addr(2))));
    assert_eq!(c.zookeeper_client().session_id(), session);
    assert!(c.check_exists("/mine").unwrap().is_some());
    // Suspended then Reconnected on the same session, never Lost.
    assert!(wait_until(t.wait(), || states
        .lock()
        .contains(&ConnectionState::Reconnected)));
    assert!(!states.lock().contains(&ConnectionState::Lost), "{:?}", states.lock());
    // Growing the list back (2 → 3) moves a client with probability 1/3 only:
    // whatever the draw, it stays connected on its session.
    let _ = c
        .update_server_list(&format!("{},{},{}", addr(0), addr(1), addr(2)))
        .unwrap();
    assert!(wait_until(t.wait(), || c.connected_to().is_some()));
    assert_eq!(c.zookeeper_client().session_id(), session);
    c.close();
}
