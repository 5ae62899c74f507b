//! Sessions that survive faults: blips, partitions, expiry, garbage, lost
//! replies, dead hosts, all hosts down; watches across reconnects; watchers that
//! call the client or panic; bounded close.
//!
//! Network faults go through a loopback proxy (`support::plain::proxy`), so they
//! run on both backends; the embedded server's own fault injection is used in
//! `client_embedded_faults.rs`.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::plain::proxy::Proxy;
use crate::support::plain::{closed_port, expect_event, open, test_root, wait_until, TestServer, WAIT};
use crossbeam_channel::unbounded;
use zk_framework::proto::{Acl, CreateMode, EventType};
use zk_framework::Error;
use zk_framework::{Client, ClientConfig, ClientState, SessionEvent, WatchedEvent};

fn config(session: Duration) -> ClientConfig {
    ClientConfig::default()
        .with_session_timeout(session)
        .with_connect_timeout(Duration::from_millis(500))
}

fn connect(addr: &str, config: ClientConfig) -> Client {
    let c = Client::connect(addr, config).unwrap();
    c.wait_connected_timeout(WAIT).unwrap();
    c
}

/// Waits for `want` on `rx`, failing on a timeout; returns the events before it.
#[test]
fn busy_client_keeps_its_session_across_a_blip() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(4)));
    let direct = server.client(Duration::from_secs(4));
    let root = test_root(&direct, "blip");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let sid = zk.session_id();
    let events = zk.state_receiver();

    let stop = Arc::new(AtomicBool::new(false));
    let ok_after = Arc::new(AtomicUsize::new(0));
    let reconnected = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let (zk, root, stop, ok_after, reconnected) = (
                zk.clone(),
                root.clone(),
                stop.clone(),
                ok_after.clone(),
                reconnected.clone(),
            );
            thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let p = format!("{root}/w{t}-{i}");
                    i += 1;
                    match zk.create(&p, b"x", &open(), CreateMode::Persistent) {
                        Ok(_) | Err(Error::NodeExists { .. }) => {
                            if reconnected.load(Ordering::Relaxed) {
                                ok_after.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(Error::ConnectionLoss) => thread::yield_now(),
                        Err(e) => panic!("unexpected error during a blip: {e}"),
                    }
                }
            })
        })
        .collect();
    assert!(wait_until(WAIT, || zk.last_zxid() > 20));
    proxy.cut();
    expect_event(&events, SessionEvent::Disconnected);
    expect_event(&events, SessionEvent::SyncConnected);
    reconnected.store(true, Ordering::Relaxed);
    assert!(wait_until(WAIT, || ok_after.load(Ordering::Relaxed) > 20));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(zk.session_id(), sid);
    assert_eq!(zk.state(), ClientState::Connected);
    assert!(direct.exists(&eph).unwrap().is_some(), "the ephemeral survived");
}

#[test]
fn partition_gives_connection_loss_within_the_read_timeout_then_resumes() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let session = Duration::from_secs(4);
    let zk = connect(&proxy.connect_string(), config(session));
    let direct = server.client(session);
    let root = test_root(&direct, "partition");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let sid = zk.session_id();
    let read_timeout = zk.negotiated_timeout().unwrap() * 2 / 3;

    proxy.freeze(true);
    let t0 = Instant::now();
    let r = zk.get_data(&eph);
    let took = t0.elapsed();
    assert_eq!(r, Err(Error::ConnectionLoss));
    assert!(
        took <= read_timeout + Duration::from_millis(500),
        "ConnectionLoss after {took:?}"
    );
    // While disconnected, calls fail fast.
    let t1 = Instant::now();
    assert_eq!(zk.exists("/"), Err(Error::ConnectionLoss));
    assert!(t1.elapsed() < Duration::from_millis(200));
    assert_eq!(zk.state(), ClientState::Connecting);

    proxy.freeze(false);
    zk.wait_connected_timeout(WAIT).unwrap();
    assert_eq!(zk.session_id(), sid);
    assert!(zk.exists(&eph).unwrap().is_some());
}

#[test]
fn partition_longer_than_the_session_timeout_is_reported_expired() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(2)));
    let direct = server.client(Duration::from_secs(4));
    let root = test_root(&direct, "longpartition");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let (wtx, wrx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&eph, wtx).unwrap();
    let events = zk.state_receiver();

    proxy.freeze(true);
    expect_event(&events, SessionEvent::Disconnected);
    // The server expires the session: its ephemeral goes.
    assert!(wait_until(WAIT, || direct.exists(&eph).unwrap().is_none()));
    assert_eq!(zk.state(), ClientState::Connecting, "the client never guesses expiry");
    proxy.freeze(false);
    let before = expect_event(&events, SessionEvent::Expired);
    assert!(before.iter().all(|e| *e != SessionEvent::SyncConnected), "{before:?}");
    assert_eq!(zk.state(), ClientState::Expired);
    for r in [
        zk.exists("/").map(|_| ()),
        zk.get_data("/").map(|_| ()),
        zk.sync("/"),
        zk.delete("/x", None),
    ] {
        assert_eq!(r, Err(Error::SessionExpired));
    }
    assert_eq!(
        zk.wait_connected_timeout(Duration::from_secs(1)),
        Err(Error::SessionExpired)
    );
    assert!(zk.registered_watches().is_empty());
    assert!(wrx.try_recv().is_err(), "watchers get no session events");
}

#[test]
fn server_side_expiry_fails_every_call_with_session_expired() {
    let Some(mut server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(4));
    let sid = zk.session_id();
    let events = zk.state_receiver();
    server.expire(&zk);
    expect_event(&events, SessionEvent::Expired);
    assert_eq!(zk.state(), ClientState::Expired);
    assert_eq!(zk.session_id(), sid, "never a new session on the same handle");
    assert_eq!(zk.exists("/"), Err(Error::SessionExpired));
    assert_eq!(
        zk.create("/x", b"", &open(), CreateMode::Persistent),
        Err(Error::SessionExpired)
    );
    assert_eq!(zk.add_auth("digest", b"a:b"), Err(Error::SessionExpired));
    // Local checks still come first.
    assert!(matches!(zk.exists("bad"), Err(Error::InvalidPath(_))));
    let t = Instant::now();
    zk.close();
    assert!(t.elapsed() < Duration::from_millis(600));
    assert_eq!(zk.exists("/"), Err(Error::Closed));
}

#[test]
fn watches_survive_a_blip_and_fire_once() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(4)));
    let other = server.client(Duration::from_secs(4));
    let root = test_root(&other, "wblip");
    let a = format!("{root}/a");
    other.create(&a, b"0", &open(), CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&a, tx).unwrap();
    let events = zk.state_receiver();
    proxy.cut();
    expect_event(&events, SessionEvent::Disconnected);
    expect_event(&events, SessionEvent::SyncConnected);
    assert_eq!(zk.registered_watches().data, vec![a.clone()]);
    other.set_data(&a, b"1", None).unwrap();
    let ev = rx.recv_timeout(WAIT).expect("the watch fired after the reconnect");
    assert_eq!(
        (ev.event_type, ev.path.as_deref()),
        (EventType::NodeDataChanged, Some(a.as_str()))
    );
    other.set_data(&a, b"2", None).unwrap();
    // Make sure any second notification would have arrived: a round trip after it.
    zk.sync("/").unwrap();
    zk.get_data(&a).unwrap();
    assert!(rx.try_recv().is_err(), "fired twice");
}

#[test]
fn changes_missed_while_disconnected_fire_after_set_watches() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(6)));
    let other = server.client(Duration::from_secs(4));
    let root = test_root(&other, "catchup");
    let (data, missing, parent, quiet) = (
        format!("{root}/data"),
        format!("{root}/missing"),
        format!("{root}/parent"),
        format!("{root}/quiet"),
    );
    for p in [&data, &parent, &quiet] {
        other.create(p, b"", &open(), CreateMode::Persistent).unwrap();
    }
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&data, tx.clone()).unwrap();
    assert_eq!(zk.exists_w(&missing, tx.clone()).unwrap(), None);
    zk.get_children_w(&parent, tx.clone()).unwrap();
    zk.get_data_w(&quiet, tx.clone()).unwrap();
    let events = zk.state_receiver();

    proxy.refuse(true);
    proxy.cut();
    expect_event(&events, SessionEvent::Disconnected);
    other.set_data(&data, b"new", None).unwrap();
    other.create(&missing, b"", &open(), CreateMode::Persistent).unwrap();
    other
        .create(&format!("{parent}/kid"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    proxy.refuse(false);
    expect_event(&events, SessionEvent::SyncConnected);

    let mut got: Vec<(EventType, String)> = (0..3)
        .map(|_| {
            let e = rx.recv_timeout(WAIT).expect("catch-up event");
            (e.event_type, e.path.unwrap())
        })
        .collect();
    got.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        got,
        vec![
            (EventType::NodeDataChanged, data.clone()),
            (EventType::NodeCreated, missing.clone()),
            (EventType::NodeChildrenChanged, parent.clone()),
        ]
    );
    // The unchanged node's watch was re-registered and still works, once.
    assert_eq!(zk.registered_watches().data, vec![quiet.clone()]);
    other.set_data(&quiet, b"x", None).unwrap();
    let e = rx.recv_timeout(WAIT).unwrap();
    assert_eq!((e.event_type, e.path.unwrap()), (EventType::NodeDataChanged, quiet));
    zk.sync("/").unwrap();
    assert!(rx.try_recv().is_err());
}

#[test]
fn event_only_client_keeps_its_session_past_several_timeouts() {
    let Some(server) = TestServer::start() else { return };
    let session = Duration::from_secs(2);
    let zk = server.client(session);
    let other = server.client(Duration::from_secs(4));
    let root = test_root(&other, "idle");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&eph, tx).unwrap();
    let events = zk.state_receiver();
    let sid = zk.session_id();
    // The client sends nothing itself for 4 session timeouts; only pings keep it.
    let idle = zk.negotiated_timeout().unwrap() * 4;
    assert!(events.recv_timeout(idle).is_err(), "no state change while idle");
    assert_eq!(zk.state(), ClientState::Connected);
    assert_eq!(zk.session_id(), sid);
    assert!(
        other.exists(&eph).unwrap().is_some(),
        "the session is alive on the server"
    );
    other.set_data(&eph, b"ping", None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap().event_type, EventType::NodeDataChanged);
}

#[test]
fn watcher_and_state_consumer_may_call_the_client() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(4)));
    let root = test_root(&zk, "reentrant");
    let a = format!("{root}/a");
    zk.create(&a, b"0", &open(), CreateMode::Persistent).unwrap();

    // A watcher that reads, re-arms itself and writes, from the event thread.
    let (tx, rx) = unbounded::<(Vec<u8>, bool)>();
    let zk2 = zk.clone();
    let a2 = a.clone();
    let tx2 = tx.clone();
    zk.get_data_w(&a, move |_e: WatchedEvent| {
        let (data, _) = zk2.get_data(&a2).unwrap();
        let rearmed = zk2.exists_w(&a2, move |_e: WatchedEvent| drop(tx2)).unwrap().is_some();
        zk2.create(
            &format!("{a2}/from-watcher"),
            b"",
            &Acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .unwrap();
        tx.send((data, rearmed)).unwrap();
    })
    .unwrap();
    zk.set_data(&a, b"1", None).unwrap();
    let (data, rearmed) = rx.recv_timeout(WAIT).expect("the watcher ran without deadlock");
    assert_eq!((data.as_slice(), rearmed), (&b"1"[..], true));
    assert!(zk.exists(&format!("{a}/from-watcher")).unwrap().is_some());

    // A state consumer that calls the client when it reconnects.
    let events = zk.state_receiver();
    let zk3 = zk.clone();
    let (ctx, crx) = unbounded();
    let consumer = thread::spawn(move || {
        for ev in events.iter() {
            if ev == SessionEvent::SyncConnected {
                ctx.send(zk3.exists("/").map(|s| s.is_some())).unwrap();
                return;
            }
        }
    });
    proxy.cut();
    assert_eq!(crx.recv_timeout(WAIT).unwrap(), Ok(true));
    consumer.join().unwrap();
}

#[test]
fn a_panicking_watcher_does_not_kill_the_client() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "panic");
    let a = format!("{root}/a");
    zk.create(&a, b"", &open(), CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&a, |_e: WatchedEvent| panic!("watcher panics on purpose"))
        .unwrap();
    zk.get_data_w(&a, tx.clone()).unwrap();
    zk.set_data(&a, b"1", None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap().event_type, EventType::NodeDataChanged);
    // Still working: calls and later watches.
    zk.get_data_w(&a, |_e: WatchedEvent| panic!("again")).unwrap();
    zk.exists_w(&a, tx).unwrap();
    zk.delete(&a, None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap().event_type, EventType::NodeDeleted);
    assert_eq!(zk.state(), ClientState::Connected);
    assert!(zk.exists(&a).unwrap().is_none());
}

#[test]
fn garbage_from_the_server_reconnects_on_the_same_session() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(4)));
    let sid = zk.session_id();
    let events = zk.state_receiver();
    proxy.send_garbage();
    expect_event(&events, SessionEvent::Disconnected);
    expect_event(&events, SessionEvent::SyncConnected);
    assert_eq!(zk.session_id(), sid);
    assert!(zk.exists("/").unwrap().is_some());
}

#[test]
fn a_lost_reply_is_noticed_quickly_and_the_session_survives() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(3)));
    let sid = zk.session_id();
    let read_timeout = zk.negotiated_timeout().unwrap() * 2 / 3;
    proxy.drop_next_reply();
    let t = Instant::now();
    assert_eq!(zk.get_data("/"), Err(Error::ConnectionLoss));
    // Noticed when the next ping's reply overtakes it, well before the read timeout.
    assert!(t.elapsed() < read_timeout, "took {:?}", t.elapsed());
    assert_eq!(proxy.dropped(), 1);
    zk.wait_connected_timeout(WAIT).unwrap();
    assert_eq!(zk.session_id(), sid);
    assert!(zk.get_data("/").is_ok());
}

/// A listener whose accept queue is full, so that the kernel drops SYNs: like a
/// host that is down or firewalled (connects time out), on loopback.
fn syn_dropping_listener() -> (TcpListener, Vec<TcpStream>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut fill = Vec::new();
    while fill.len() < 4096 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => fill.push(s),
            Err(_) => break,
        }
    }
    (l, fill)
}

#[test]
fn dead_first_hosts_are_skipped_quickly() {
    let Some(server) = TestServer::start() else { return };
    // One listener that drops SYNs (connect times out), one that never accepts
    // (the kernel completes the TCP handshake, nothing answers), and one that
    // accepts and never answers.
    let (full, _fill) = syn_dropping_listener();
    let t = Instant::now();
    assert!(TcpStream::connect_timeout(&full.local_addr().unwrap(), Duration::from_millis(300)).is_err());
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "the full listener must drop SYNs"
    );
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let mute_port = mute.local_addr().unwrap().port();
    let held = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let held2 = held.clone();
    thread::spawn(move || {
        for s in mute.incoming().flatten() {
            held2.lock().push(s);
        }
    });
    let hosts = format!(
        "127.0.0.1:{},127.0.0.1:{},127.0.0.1:{mute_port},{}",
        full.local_addr().unwrap().port(),
        silent.local_addr().unwrap().port(),
        server.connect_string()
    );
    let mut attempts = 0;
    // Hosts are shuffled: after 6 tries the chance that a dead one was never
    // first is 4^-6.
    for _ in 0..6 {
        let t = Instant::now();
        let zk = Client::connect(&hosts, config(Duration::from_secs(10))).unwrap();
        zk.wait_connected_timeout(WAIT).unwrap();
        // At worst the three dead hosts come first: 3 × 500 ms.
        assert!(
            t.elapsed() < Duration::from_millis(2500),
            "connected after {:?}",
            t.elapsed()
        );
        assert!(zk.connect_attempts() <= 4);
        attempts += zk.connect_attempts();
    }
    assert!(attempts > 6, "the dead hosts were tried");
}

#[test]
fn all_hosts_down_means_a_few_attempts_per_second() {
    let _ = env_logger::builder().is_test(true).try_init();
    // Refused at once.
    let zk = Client::connect(&format!("127.0.0.1:{}", closed_port()), config(Duration::from_secs(4))).unwrap();
    // Accepted and closed at once (counted on the listener too).
    let closer = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closer.local_addr().unwrap().port();
    let accepts = Arc::new(AtomicUsize::new(0));
    let acc = accepts.clone();
    thread::spawn(move || {
        for s in closer.incoming().flatten() {
            acc.fetch_add(1, Ordering::Relaxed);
            drop(s);
        }
    });
    let zk2 = Client::connect(&format!("127.0.0.1:{port}"), config(Duration::from_secs(4))).unwrap();
    let window = Duration::from_secs(3);
    let t = Instant::now();
    assert_eq!(zk.wait_connected_timeout(window), Err(Error::ConnectionLoss));
    assert!(t.elapsed() >= window);
    // Backoff 100 ms, 200, 400, 800, 1000...: about 6 attempts in 3 s.
    let (a1, a2) = (zk.connect_attempts(), accepts.load(Ordering::Relaxed) as u64);
    assert!((2..=10).contains(&a1), "{a1} attempts on a closed port in {window:?}");
    assert!((2..=10).contains(&a2), "{a2} accepts in {window:?}");
    assert!(zk2.connect_attempts() >= a2);
    assert_eq!(zk.state(), ClientState::Connecting);
    assert_eq!(zk.exists("/"), Err(Error::ConnectionLoss));
    let t = Instant::now();
    drop(zk);
    drop(zk2);
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn close_is_bounded_and_closes_the_session() {
    let Some(server) = TestServer::start() else { return };
    let other = server.client(Duration::from_secs(4));
    let root = test_root(&other, "close");

    // Connected: closeSession removes the ephemerals at once.
    let zk = server.client(Duration::from_secs(30));
    let eph = zk
        .create(&format!("{root}/e1"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let events = zk.state_receiver();
    let t = Instant::now();
    zk.close();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "close took {:?}",
        t.elapsed()
    );
    assert_eq!(events.recv_timeout(WAIT).unwrap(), SessionEvent::Closed);
    assert!(other.exists(&eph).unwrap().is_none());
    zk.close(); // idempotent

    // Dropping the last handle closes too.
    let zk = server.client(Duration::from_secs(30));
    let eph = zk
        .create(&format!("{root}/e2"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let clone = zk.clone();
    drop(zk);
    assert!(other.exists(&eph).unwrap().is_some(), "a clone is still alive");
    let t = Instant::now();
    drop(clone);
    assert!(t.elapsed() < Duration::from_millis(1500));
    assert!(other.exists(&eph).unwrap().is_none());

    // Partitioned: no closeSession reply; a pending call gets Closed.
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(30)));
    proxy.freeze(true);
    let zk2 = zk.clone();
    let pending = thread::spawn(move || zk2.get_data("/"));
    let t = Instant::now();
    zk.close();
    assert!(
        t.elapsed() < Duration::from_millis(2000),
        "close took {:?}",
        t.elapsed()
    );
    assert!(matches!(
        pending.join().unwrap(),
        Err(Error::Closed | Error::ConnectionLoss)
    ));
    proxy.freeze(false);

    // Mid connect attempt to a host that never answers (5 s connect timeout).
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let zk = Client::connect(
        &format!("127.0.0.1:{}", silent.local_addr().unwrap().port()),
        ClientConfig::default().with_connect_timeout(Duration::from_secs(5)),
    )
    .unwrap();
    assert!(wait_until(WAIT, || zk.connect_attempts() >= 1));
    let t = Instant::now();
    drop(zk);
    assert!(t.elapsed() < Duration::from_millis(2000), "drop took {:?}", t.elapsed());
}

#[test]
fn close_from_a_watcher() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(4));
    let root = test_root(&zk, "closew");
    let a = format!("{root}/a");
    zk.create(&a, b"", &open(), CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded();
    let zk2 = zk.clone();
    zk.get_data_w(&a, move |_e: WatchedEvent| {
        zk2.close();
        tx.send(zk2.state()).unwrap();
    })
    .unwrap();
    zk.set_data(&a, b"1", None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), ClientState::Closed);
    assert_eq!(zk.exists("/"), Err(Error::Closed));
}

#[test]
fn no_call_blocks_past_read_plus_connect_timeout() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let cfg = config(Duration::from_secs(3));
    let bound = Duration::from_secs(2) + cfg.connect_timeout;
    let zk = connect(&proxy.connect_string(), cfg);
    proxy.freeze(true);
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let zk = zk.clone();
            thread::spawn(move || {
                let t = Instant::now();
                let r = if i % 2 == 0 {
                    zk.get_children("/").map(|_| ())
                } else {
                    zk.set_data("/nope", b"", None).map(|_| ())
                };
                (r, t.elapsed())
            })
        })
        .collect();
    for h in handles {
        let (r, took) = h.join().unwrap();
        assert_eq!(r, Err(Error::ConnectionLoss));
        assert!(took <= bound + Duration::from_millis(300), "blocked {took:?}");
    }
    proxy.freeze(false);
    zk.wait_connected_timeout(WAIT).unwrap();
}

#[test]
fn server_restart_keeps_the_session() {
    let Some(mut server) = TestServer::start() else { return };
    let zk = server.client(Duration::from_secs(20));
    let root = test_root(&zk, "restart");
    let eph = zk
        .create(&format!("{root}/eph"), b"", &open(), CreateMode::Ephemeral)
        .unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.get_data_w(&eph, tx).unwrap();
    let sid = zk.session_id();
    let events = zk.state_receiver();
    server.stop();
    expect_event(&events, SessionEvent::Disconnected);
    let t = Instant::now();
    assert_eq!(zk.exists("/"), Err(Error::ConnectionLoss));
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "fails fast while the server is down"
    );
    server.restart();
    expect_event(&events, SessionEvent::SyncConnected);
    assert_eq!(zk.session_id(), sid);
    assert!(zk.exists(&eph).unwrap().is_some());
    zk.set_data(&eph, b"after", None).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap().event_type, EventType::NodeDataChanged);
}

/// A reply that arrives late (held up on the way, as the replies a resumed
/// process reads to requests sent before its pause) confirms the session only
/// as of when its request was sent: `since_last_confirmed` stays large while
/// `since_last_receive` is reset by the late bytes. A lock holder's `check()`
/// relies on the former.
#[test]
fn a_reply_read_late_confirms_the_session_only_as_of_its_request() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    // A long session: no ping is due, and the connection is not declared dead,
    // while the proxy holds the request for 1.5 s.
    let zk = Arc::new(connect(&proxy.connect_string(), config(Duration::from_secs(30))));
    assert!(zk.since_last_confirmed() < Duration::from_secs(2));
    let held = Duration::from_millis(1500);
    proxy.freeze(true);
    let sent = Instant::now();
    let caller = {
        let zk = zk.clone();
        thread::spawn(move || zk.exists("/"))
    };
    assert!(wait_until(held * 2, || sent.elapsed() >= held));
    proxy.freeze(false);
    assert!(caller.join().unwrap().unwrap().is_some());
    assert!(
        zk.since_last_receive() < held / 2,
        "the late reply was just read: {:?}",
        zk.since_last_receive()
    );
    assert!(
        zk.since_last_confirmed() >= held - Duration::from_millis(100),
        "confirmed as of the request, not of the late reply: {:?}",
        zk.since_last_confirmed()
    );
    // A request answered at once confirms the session as of now.
    zk.exists("/").unwrap();
    assert!(zk.since_last_confirmed() < held / 2);
}

/// A server that holds a reply until it next hears from the client (Apache
/// ZooKeeper 3.8 was seen doing so on an ensemble, for a ping's interval):
/// a call whose reply is 250 ms late nudges the server with a ping, so it
/// ends after about 250 ms, not at the I/O thread's next ping (10 s here),
/// and its result is the server's answer.
#[test]
fn a_reply_the_server_holds_back_is_nudged_out() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    // A 45 s session: 30 s read timeout, a ping every 10 s.
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(45)));
    let root = test_root(&zk, "nudge");
    let node = format!("{root}/n");
    zk.create(&node, b"v", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    proxy.hold_replies(true);
    for _ in 0..3 {
        let t0 = Instant::now();
        let (data, _) = zk.get_data(&node).unwrap();
        let elapsed = t0.elapsed();
        assert_eq!(data, b"v");
        // The nudge goes out at 250 ms; the margin is for a loaded machine,
        // and stays well under the 10 s of the I/O thread's own ping.
        assert!(
            elapsed <= Duration::from_millis(250) + Duration::from_secs(3),
            "{elapsed:?}"
        );
        assert!(
            elapsed >= Duration::from_millis(200),
            "the reply was not held: {elapsed:?}"
        );
    }
    proxy.hold_replies(false);
    zk.get_data(&node).unwrap();
}

/// The time bound's promise (client module docs): a dropped reply is noticed
/// within about 250 ms, by the nudge's ping overtaking it, not at the I/O
/// thread's next ping (10 s with this 45 s session).
#[test]
fn a_lost_reply_is_noticed_by_the_nudge_long_before_the_next_ping() {
    let Some(server) = TestServer::start() else { return };
    let proxy = Proxy::start(&server.connect_string()).unwrap();
    let zk = connect(&proxy.connect_string(), config(Duration::from_secs(45)));
    let sid = zk.session_id();
    proxy.drop_next_reply();
    let t = Instant::now();
    assert_eq!(zk.get_data("/"), Err(Error::ConnectionLoss));
    let elapsed = t.elapsed();
    assert!(
        elapsed <= Duration::from_millis(250) + Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(proxy.dropped(), 1);
    zk.wait_connected_timeout(WAIT).unwrap();
    assert_eq!(zk.session_id(), sid);
}
