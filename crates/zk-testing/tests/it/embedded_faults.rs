//! Fault injection, session expiry and lifecycle of the embedded server.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::support::{ev, wait_until, Client, Closed, WAIT};
use zk_proto::{EventType, OpCode, PathWatchRequest};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};

fn server() -> EmbeddedServer {
    let _ = env_logger::builder().is_test(true).try_init();
    EmbeddedServer::start(ServerConfig::default()).expect("start")
}

fn get_data_req(path: &str) -> Vec<u8> {
    use zk_proto::Encode;
    PathWatchRequest {
        path: path.into(),
        watch: false,
    }
    .to_bytes()
}

#[test]
fn pause_stops_answers_and_resume_lets_them_flow() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    c.create("/x", b"v", 0).unwrap();
    s.pause();
    assert!(s.is_paused());
    c.send_request(100, OpCode::GetData.code(), &get_data_req("/x"));
    // Nothing arrives while paused (absence check, bounded).
    assert!(c.read_frame(Duration::from_millis(300)).is_err());
    assert!(s.stats().sessions == 1);
    s.resume();
    let r = c.wait_reply(100);
    assert_eq!(r.hdr.err, 0);
    // pause_for resumes by itself.
    s.pause_for(Duration::from_millis(200));
    let t = Instant::now();
    c.send_request(101, OpCode::GetData.code(), &get_data_req("/x"));
    assert_eq!(c.wait_reply(101).hdr.err, 0);
    assert!(t.elapsed() >= Duration::from_millis(150), "answered during the pause");
    assert!(wait_until(WAIT, || !s.is_paused()));
}

#[test]
fn a_pause_longer_than_the_session_timeout_expires_the_session() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect_timeout(&addr, 1000);
    let mut b = Client::connect(&addr);
    a.create("/eph", b"", 1).unwrap();
    b.exists("/eph", true).unwrap();
    s.pause();
    let paused_at = Instant::now();
    // Let more than the session timeout pass; nothing expires while paused.
    while paused_at.elapsed() < Duration::from_millis(1300) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        s.sessions().iter().any(|i| i.id == a.session_id),
        "expired during the pause"
    );
    a.send_request(9, OpCode::GetData.code(), &get_data_req("/eph"));
    s.resume();
    // Expired right at resume, before the waiting request: no reply, connection closed.
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    assert_eq!(b.event(), ev(EventType::NodeDeleted, "/eph"));
    assert!(s.sessions().iter().all(|i| i.id != a.session_id));
    let (_, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.timeout, 0);
}

#[test]
fn expire_session_behaves_like_the_real_server() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/locks", b"", 0).unwrap();
    let e = a.create("/locks/l-", b"", 3).unwrap();
    b.exists(&e, true).unwrap();
    b.children("/locks", true).unwrap();
    let z = s.zxid();
    assert!(s.expire_session(a.session_id));
    assert!(!s.expire_session(a.session_id));
    assert_eq!(s.zxid(), z + 1, "one closeSession transaction");
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    assert_eq!(b.event(), ev(EventType::NodeDeleted, &e));
    assert_eq!(b.event(), ev(EventType::NodeChildrenChanged, "/locks"));
    assert_eq!(b.stat("/locks").pzxid, z + 1);
    let (mut c, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!((resp.timeout, resp.session_id, resp.passwd), (0, 0, vec![0; 16]));
    assert!(matches!(c.read_until_closed(WAIT), Closed::Yes(_)));
}

#[test]
fn sessions_expire_between_t_and_t_plus_tick_and_pings_keep_them() {
    let s = EmbeddedServer::start(ServerConfig {
        tick: Duration::from_millis(50),
        ..ServerConfig::default()
    })
    .unwrap();
    let addr = s.connect_string();
    let mut keep = Client::connect_timeout(&addr, 1000);
    let mut idle = Client::connect_timeout(&addr, 1000);
    let mut w = Client::connect(&addr);
    idle.create("/idle", b"", 1).unwrap();
    w.exists("/idle", true).unwrap();
    let last_touch = Instant::now();
    idle.zxid();
    let mut gone_after = None;
    while last_touch.elapsed() < Duration::from_secs(5) {
        keep.rq0(OpCode::Ping);
        if !s.sessions().iter().any(|i| i.id == idle.session_id) {
            gone_after = Some(last_touch.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let gone = gone_after.expect("the idle session expired");
    assert!(gone >= Duration::from_millis(1000), "expired too early: {gone:?}");
    assert!(gone < Duration::from_millis(2500), "expired too late: {gone:?}");
    assert_eq!(w.event(), ev(EventType::NodeDeleted, "/idle"));
    assert!(
        s.sessions().iter().any(|i| i.id == keep.session_id),
        "pings keep a session"
    );
}

#[test]
fn stop_and_restart_keep_data_and_sessions() {
    let s = server();
    let addr = s.connect_string();
    let port = s.port();
    let mut a = Client::connect_timeout(&addr, 2000);
    a.create("/data", b"kept", 0).unwrap();
    a.create("/eph", b"", 1).unwrap();
    let z = s.zxid();
    s.stop();
    assert!(!s.is_running());
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(_)));
    assert!(std::net::TcpStream::connect(&addr).is_err());
    let info = s.sessions();
    assert_eq!(info.len(), 1);
    assert!(!info[0].connected);
    // Longer than the session timeout while stopped: no expiry.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2300) {
        std::thread::sleep(Duration::from_millis(50));
    }
    s.restart().unwrap();
    assert!(s.is_running());
    assert_eq!(s.port(), port);
    let (mut b, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id, "session kept across restart");
    assert_eq!(b.get_data("/data", false).unwrap().0, b"kept");
    assert_eq!(b.stat("/eph").ephemeral_owner, a.session_id);
    assert_eq!(b.zxid(), z);
    assert!(s.sessions()[0].connected);
    // restart while running = stop + start.
    s.restart().unwrap();
    assert!(matches!(b.read_until_closed(WAIT), Closed::Yes(_)));
    let mut c = Client::connect(&addr);
    assert!(c.exists("/data", false).is_ok());
}

#[test]
fn drop_next_reply_applies_the_request_but_loses_the_answer() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    s.drop_next_reply(OpCode::Create2);
    let xid = a.next_xid();
    use zk_proto::Encode;
    a.send_request(
        xid,
        OpCode::Create2.code(),
        &crate::support::create_req("/lost-", b"", 3).to_bytes(),
    );
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    let (mut b, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id);
    assert_eq!(b.children("/", false).unwrap(), vec!["lost-0000000000", "zookeeper"]);
    assert_eq!(s.sessions()[0].ephemerals, vec!["/lost-0000000000".to_string()]);
    // Only the next one.
    assert!(b.create2("/next", b"", 0).is_ok());
}

#[test]
fn drop_connections_keeps_sessions() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/a", b"", 1).unwrap();
    assert_eq!(s.drop_session_connections(b.session_id), 1);
    assert!(matches!(b.read_until_closed(WAIT), Closed::Yes(_)));
    assert_eq!(s.drop_connections(), 1);
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(_)));
    assert!(wait_until(WAIT, || s.sessions().iter().all(|i| !i.connected)));
    assert_eq!(s.sessions().len(), 2);
    let (mut a2, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id);
    assert_eq!(a2.stat("/a").ephemeral_owner, a.session_id);
    assert!(wait_until(WAIT, || s.stats().connections == 1));
}

#[test]
fn stats_count_requests_and_notifications() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/s", b"", 0).unwrap();
    b.get_data("/s", true).unwrap();
    a.set_data("/s", b"1", -1).unwrap();
    b.event();
    a.rq0(OpCode::Ping);
    let st = s.stats();
    assert_eq!(st.requests(OpCode::Create), 1);
    assert_eq!(st.requests(OpCode::GetData), 1);
    assert_eq!(st.requests(OpCode::SetData), 1);
    assert_eq!(st.requests(OpCode::Ping), 1);
    assert_eq!(st.watch_notifications, 1);
    assert_eq!((st.sessions, st.connections, st.zxid), (2, 2, 4));
    assert_eq!(st.nodes, 5);
    s.reset_stats();
    let st = s.stats();
    assert_eq!(
        (st.requests(OpCode::Create), st.watch_notifications, st.sessions),
        (0, 0, 2)
    );
}

#[test]
fn close_is_bounded_with_busy_and_paused_connections() {
    let s = server();
    let addr = s.connect_string();
    let mut clients: Vec<Client> = (0..8).map(|_| Client::connect(&addr)).collect();
    let _half_open = Client::tcp(&addr);
    s.pause();
    for c in clients.iter_mut() {
        c.send_request(1, OpCode::GetData.code(), &get_data_req("/"));
    }
    let t = Instant::now();
    s.close();
    assert!(t.elapsed() < Duration::from_secs(3), "close took {:?}", t.elapsed());
    assert!(!s.is_running());
    for c in clients.iter_mut() {
        assert!(matches!(c.read_until_closed(WAIT), Closed::Yes(_)));
    }
    drop(s);
}

#[test]
fn connections_that_never_handshake_are_closed_after_10s() {
    let s = server();
    let mut t = Client::tcp(&s.connect_string());
    t.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 8];
    let n = t.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0);
    let e = start.elapsed();
    assert!(e >= Duration::from_secs(9) && e < Duration::from_secs(14), "{e:?}");
}

/// A slow server's re-registration, on the embedded server or through the
/// fault proxy: the events a `SetWatches` fires, its reply and the reply of
/// every later request of that connection come after the delay, in order;
/// requests before it and other connections are not held up.
fn set_watches_answered_late(addr: &str, delay: Duration, configure: impl FnOnce()) {
    let mut c = Client::connect(addr);
    c.create("/present", b"", 0).unwrap();
    configure();
    // Before the SetWatches: answered at once.
    let t = Instant::now();
    c.exists("/present", false).unwrap();
    assert!(t.elapsed() < delay, "a plain request is not delayed");
    let sw = zk_proto::SetWatches {
        relative_zxid: c.zxid(),
        data_watches: vec!["/gone".into()],
        exist_watches: Vec::new(),
        child_watches: Vec::new(),
    };
    let sent = Instant::now();
    c.send_request(50, OpCode::SetWatches.code(), &zk_proto::Encode::to_bytes(&sw));
    c.send_request(51, OpCode::GetData.code(), &get_data_req("/present"));
    // Another connection meanwhile: not held up.
    let mut other = Client::connect(addr);
    other.exists("/present", false).unwrap();
    assert!(sent.elapsed() < delay, "another connection is not held up");
    let mut order = Vec::new();
    while order.len() < 3 {
        match c.next_packet(WAIT).expect("a packet") {
            // NodeDeleted is event type 2.
            crate::support::Packet::Event(e) => order.push(format!("event {} {}", e.event_type, e.path)),
            crate::support::Packet::Reply(h, _) => order.push(format!("reply {}", h.xid)),
        }
        if order.len() == 1 {
            let waited = sent.elapsed();
            assert!(
                waited >= delay,
                "the first answer after the SetWatches came after {waited:?}"
            );
        }
    }
    assert_eq!(
        order,
        ["event 2 /gone", "reply 50", "reply 51"].map(String::from).to_vec()
    );
}

#[test]
fn delayed_set_watches_answer_late_and_in_order() {
    let s = server();
    let delay = Duration::from_millis(300);
    set_watches_answered_late(&s.connect_string(), delay, || s.delay_set_watches(delay));
    assert_eq!(s.config().set_watches_delay, delay);
    // Off again: at once.
    s.delay_set_watches(Duration::ZERO);
    let mut c = Client::connect(&s.connect_string());
    let t = Instant::now();
    let sw = zk_proto::SetWatches::default();
    c.send_request(9, OpCode::SetWatches.code(), &zk_proto::Encode::to_bytes(&sw));
    c.wait_reply(9);
    assert!(t.elapsed() < delay);
}

#[test]
fn the_fault_proxy_delays_set_watches_on_any_server() {
    let s = server();
    let proxy = zk_testing::proxy::FaultProxy::start(&s.connect_string()).unwrap();
    let delay = Duration::from_millis(300);
    set_watches_answered_late(&proxy.connect_string(), delay, || proxy.delay_set_watches(delay));
    assert_eq!(proxy.set_watches_delayed(), 1);
}
