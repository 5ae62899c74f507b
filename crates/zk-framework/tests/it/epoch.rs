//! The connection epoch ([`Recipe::connection_epoch`]) and the
//! detached `exists` a lock's holding proves its node with after a reconnect.

use std::time::Duration;

use zk_framework::{ConnectionState, CuratorFramework, RetryNTimes};
use zk_testing::{wait_until, TestingServer, Timing};

fn embedded() -> TestingServer {
    TestingServer::embedded_with(Default::default()).expect("embedded server")
}

fn client(server: &TestingServer) -> CuratorFramework {
    let timing = Timing::from_env();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(timing.session())
        .connection_timeout(timing.connection())
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(50)))
        .build()
        .expect("client");
    c.block_until_connected(timing.wait()).expect("connected");
    c
}

/// The epoch stays while nothing can have been missed, and moves on with a
/// reconnect on the same session before the client is seen connected again
/// (a listener told `Reconnected` already sees the new epoch), and with a
/// new session.
#[test]
fn the_epoch_moves_on_before_a_reconnect_is_seen() {
    let server = embedded();
    let c = client(&server);
    let timing = Timing::from_env();
    let e0 = c.recipe().connection_epoch();
    c.create().for_path("/e").unwrap();
    assert_eq!(
        c.recipe().connection_epoch(),
        e0,
        "requests answered in order change nothing"
    );
    let (tx, rx) = crossbeam_channel::unbounded();
    let c2 = c.clone();
    let _h = c.add_listener(move |s| {
        let _ = tx.send((s, c2.recipe().connection_epoch()));
    });
    let session = c.session_id();
    server.embedded().unwrap().drop_connections();
    let (state, epoch) = loop {
        let (s, e) = rx.recv_timeout(timing.wait()).expect("a state change");
        if s == ConnectionState::Reconnected {
            break (s, e);
        }
    };
    assert_eq!(state, ConnectionState::Reconnected);
    assert!(epoch > e0, "told Reconnected in epoch {epoch}, the old one was {e0}");
    assert_eq!(c.session_id(), session, "the same session");
    // A new session: a larger epoch again.
    let e1 = c.recipe().connection_epoch();
    let zk = c.zookeeper_client();
    server.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(wait_until(timing.wait(), || c.is_connected() && c.session_id() != session));
    assert!(c.recipe().connection_epoch() > e1);
}

/// The detached `exists` answers with the Stat (the owner a holding checks),
/// or `None` for a missing node, on the client's I/O thread.
#[test]
fn a_detached_exists_answers_with_the_stat() {
    let server = embedded();
    let c = client(&server);
    let timing = Timing::from_env();
    c.create()
        .with_mode(zk_framework::CreateMode::Ephemeral)
        .for_path("/mine")
        .unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let t = tx.clone();
    c.recipe()
        .exists_detached("/mine", move |r| {
            let _ = t.send(r);
        })
        .unwrap();
    c.recipe()
        .exists_detached("/missing", move |r| {
            let _ = tx.send(r);
        })
        .unwrap();
    let mine = rx.recv_timeout(timing.wait()).unwrap().unwrap().expect("exists");
    assert_eq!(mine.ephemeral_owner, c.session_id());
    assert_eq!(rx.recv_timeout(timing.wait()).unwrap().unwrap(), None);
    // A bad path is refused at once; nothing is sent.
    assert!(c.recipe().exists_detached("no-slash", |_| {}).is_err());
}
