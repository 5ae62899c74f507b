//! Faults injected by the embedded server itself (drop_connections, pause,
//! drop_next_reply) and what its statistics show of the client's behaviour
//! (pings, SetWatches, createContainer, server-side watches). These tests skip
//! on Apache (`ZK_TEST_SERVER=apache`), except the restart test, which runs on
//! both.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::plain::{expect_event, open, test_root, wait_until, TestServer, WAIT};
use crossbeam_channel::unbounded;
use zk_framework::proto::{Acl, CreateMode, EventType, OpCode};
use zk_framework::Error;
use zk_framework::{ClientState, SessionEvent, WatchedEvent};

fn embedded() -> Option<TestServer> {
    let server = TestServer::start()?;
    if !server.is_embedded() {
        eprintln!("skipping: needs the embedded server's fault injection");
        return None;
    }
    Some(server)
}

#[test]
fn drop_connections_blips_keep_a_busy_session_and_match_replies() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "eblip");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let sid = zk.session_id();
    let events = zk.state_receiver();
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    // Each worker's node exists before the blips start, so that a drop cannot
    // hit a worker's very first request.
    for t in 0..8 {
        let mine = format!("{root}/w{t}");
        zk.create(&mine, mine.as_bytes(), &Acl::open_unsafe(), CreateMode::Persistent)
            .unwrap();
    }
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (zk, root, stop, ok) = (zk.clone(), root.clone(), stop.clone(), ok.clone());
            thread::spawn(move || {
                let mine = format!("{root}/w{t}");
                let mut version = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Every reply must be this caller's own: data and versions match.
                    match zk.get_data(&mine) {
                        Ok((data, stat)) => {
                            assert_eq!(data, mine.as_bytes(), "a reply went to the wrong caller");
                            assert!(stat.version >= version);
                            version = stat.version;
                        }
                        Err(Error::ConnectionLoss) => {}
                        Err(e) => panic!("unexpected error during a blip: {e}"),
                    }
                    match zk.set_data(&mine, mine.as_bytes(), None) {
                        Ok(stat) => {
                            assert!(stat.version > version);
                            version = stat.version;
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::ConnectionLoss) => thread::yield_now(),
                        Err(e) => panic!("unexpected error during a blip: {e}"),
                    }
                }
            })
        })
        .collect();
    for _ in 0..3 {
        let before = ok.load(Ordering::Relaxed);
        assert!(wait_until(WAIT, || ok.load(Ordering::Relaxed) > before + 100));
        assert!(es.drop_connections() >= 1);
        expect_event(&events, SessionEvent::Disconnected);
        expect_event(&events, SessionEvent::SyncConnected);
    }
    let after = ok.load(Ordering::Relaxed);
    assert!(wait_until(WAIT, || ok.load(Ordering::Relaxed) > after + 100));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(zk.session_id(), sid);
    assert_eq!(es.sessions().len(), 1, "no second session was created");
    assert!(zk.exists(&eph).unwrap().is_some());
}

#[test]
fn pause_shorter_than_the_session_timeout_resumes_the_session() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(3));
    let sid = zk.session_id();
    let read_timeout = zk.negotiated_timeout().unwrap() * 2 / 3;
    es.pause();
    let t = Instant::now();
    assert_eq!(zk.get_data("/"), Err(Error::ConnectionLoss));
    assert!(
        t.elapsed() <= read_timeout + Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(zk.state(), ClientState::Connecting);
    es.resume();
    zk.wait_connected_timeout(WAIT).unwrap();
    assert_eq!(zk.session_id(), sid);
    assert!(zk.get_data("/").is_ok());
}

#[test]
fn pause_longer_than_the_session_timeout_is_reported_expired() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(1));
    let events = zk.state_receiver();
    es.pause();
    expect_event(&events, SessionEvent::Disconnected);
    // Past the session timeout (plus the server's expiry tick) on the server's clock.
    let t = Instant::now();
    assert!(!wait_until(Duration::from_millis(1300), || zk.state() != ClientState::Connecting));
    assert!(t.elapsed() >= Duration::from_millis(1300));
    es.resume();
    expect_event(&events, SessionEvent::Expired);
    assert_eq!(zk.get_children("/"), Err(Error::SessionExpired));
    assert!(es.sessions().is_empty());
}

#[test]
fn a_dropped_reply_fails_only_that_call() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "dropreply");
    let sid = zk.session_id();
    let p = format!("{root}/a");
    es.drop_next_reply(OpCode::Create);
    assert_eq!(
        zk.create(&p, b"", &open(), CreateMode::Persistent),
        Err(Error::ConnectionLoss)
    );
    zk.wait_connected_timeout(WAIT).unwrap();
    assert_eq!(zk.session_id(), sid);
    // It was applied although its reply was lost.
    assert!(matches!(
        zk.create(&p, b"", &open(), CreateMode::Persistent),
        Err(Error::NodeExists { .. })
    ));
}

#[test]
fn idle_client_pings_and_keeps_its_session() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(1));
    let events = zk.state_receiver();
    let t = zk.negotiated_timeout().unwrap();
    es.reset_stats();
    assert!(events.recv_timeout(t * 4).is_err(), "no disconnect while idle");
    let pings = es.stats().requests(OpCode::Ping);
    // One ping per 2T/9 of silence: about 18 in 4T.
    assert!(pings >= 8, "only {pings} pings in {:?}", t * 4);
    assert_eq!(es.sessions().len(), 1);
    assert_eq!(zk.state(), ClientState::Connected);
}

#[test]
fn set_watches_re_registers_exactly_the_server_side_watches() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "setwatches");
    let a = format!("{root}/a");
    zk.create(&a, b"", &open(), CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    let base = es.stats().watches;
    // No phantom watch on a failed getData.
    assert!(zk.get_data_w(&format!("{root}/missing"), tx.clone()).is_err());
    assert_eq!(es.stats().watches, base);
    assert!(zk.registered_watches().is_empty());
    zk.get_data_w(&a, tx.clone()).unwrap();
    zk.get_children_w(&root, tx.clone()).unwrap();
    zk.exists_w(&format!("{root}/later"), tx.clone()).unwrap();
    assert_eq!(es.stats().watches, base + 3);

    es.reset_stats();
    let events = zk.state_receiver();
    es.drop_connections();
    expect_event(&events, SessionEvent::SyncConnected);
    assert!(wait_until(WAIT, || es.stats().watches == base + 3));
    assert_eq!(es.stats().requests(OpCode::SetWatches), 1);
    zk.create(&format!("{root}/later"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    let mut got: Vec<EventType> = (0..2).map(|_| rx.recv_timeout(WAIT).unwrap().event_type).collect();
    got.sort_by_key(|e| e.code());
    assert_eq!(got, vec![EventType::NodeCreated, EventType::NodeChildrenChanged]);

    // A reconnect without watches sends no SetWatches.
    zk.set_data(&a, b"1", None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap().event_type, EventType::NodeDataChanged);
    assert!(zk.registered_watches().is_empty());
    es.reset_stats();
    es.drop_connections();
    expect_event(&events, SessionEvent::SyncConnected);
    zk.sync("/").unwrap();
    assert_eq!(es.stats().requests(OpCode::SetWatches), 0);
}

#[test]
fn containers_use_opcode_19_and_are_swept() {
    let Some(server) = embedded() else { return };
    let es = server.embedded().unwrap();
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "esweep");
    es.reset_stats();
    let c = zk
        .create(&format!("{root}/c"), b"", &open(), CreateMode::Container)
        .unwrap();
    assert_eq!(es.stats().requests(OpCode::CreateContainer), 1);
    assert_eq!(es.stats().requests(OpCode::Create), 0);
    zk.create(&format!("{c}/k"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    zk.delete(&format!("{c}/k"), None).unwrap();
    es.run_container_sweep();
    assert!(wait_until(WAIT, || zk.exists(&c).unwrap().is_none()));
}
