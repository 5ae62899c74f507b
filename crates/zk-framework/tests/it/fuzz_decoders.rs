//! Property tests with a seeded, deterministic PRNG (SplitMix64; no extra
//! crate): the wire decoders never panic, on either side of the connection.
//! The decoders' and `FrameBuffer`'s own are zk-proto's `fuzz_decoders`
//! suite; the PRNG, the mutations, the panic counter and the valid samples are
//! its `support::fuzz`, included here.
//!
//! * The client: a fake server (a raw TCP listener) answers real `Client`s with
//!   random and mutated frames (handshakes, replies, notifications, garbage
//!   lengths, wrong xids, abrupt closes). Every call returns a typed result in
//!   bounded time; when the server behaves again the clients work again.
//! * The server: random and mutated frames on several connections at once to
//!   the embedded server, which must keep serving a well-behaved client (a
//!   `set_data`/`get_data` round trip after every batch).
//!
//! A panic hook counts panics on every thread (the client's I/O and event
//! threads, the embedded server's threads); each test asserts none happened.
//! Other suites in this binary panic on purpose (a panicking watcher, panicking
//! state listeners), so each test here runs alone in a process of its own
//! (`support::in_own_process`).
//! `ZK_FUZZ_SEED` changes the seed (default 1); every case count is printed.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::in_own_process;
use zk_framework::proto::frame::{frame, FrameBuffer, DEFAULT_MAX_FRAME};
use zk_framework::proto::jute::{Decode, Encode, Reader};
use zk_framework::proto::*;
use zk_framework::CuratorFramework;
use zk_framework::RetryNTimes;
use zk_framework::{Client, ClientConfig, ClientState, Op, WatchedEvent};
use zk_testing::{wait_until, Backend, TestingServer, Timing};

// The PRNG, the mutations, the panic counter and the valid samples, shared with
// zk-proto's decoder tests (written once, there).
#[path = "../../../zk-proto/tests/it/support/fuzz.rs"]
mod fuzz;
use fuzz::*;

// ---------------------------------------------------------------------------
// The client against a fake server.

/// A reply body that fits the request's opcode (before mutation).
fn reply_body(op: i32, rng: &mut Rng) -> Vec<u8> {
    match OpCode::from_code(op) {
        Some(OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl) => {
            if rng.chance(50) {
                Create2Response {
                    path: "/a".into(),
                    stat: stat(1),
                }
                .to_bytes()
            } else {
                PathRecord { path: "/a".into() }.to_bytes()
            }
        }
        Some(OpCode::Exists | OpCode::SetData | OpCode::SetAcl) => stat(2).to_bytes(),
        Some(OpCode::GetData) => GetDataResponse {
            data: rng.bytes(16),
            stat: stat(3),
        }
        .to_bytes(),
        Some(OpCode::GetAcl) => GetAclResponse {
            acl: acl(),
            stat: stat(4),
        }
        .to_bytes(),
        Some(OpCode::GetChildren) => GetChildrenResponse {
            children: vec!["x".into(), "_c_1-lock-0000000001".into()],
        }
        .to_bytes(),
        Some(OpCode::GetChildren2) => GetChildren2Response {
            children: vec!["y".into()],
            stat: stat(5),
        }
        .to_bytes(),
        Some(OpCode::Sync) => PathRecord { path: "/".into() }.to_bytes(),
        Some(OpCode::Multi | OpCode::MultiRead) => multi_response().to_bytes(),
        _ => Vec::new(),
    }
}

fn reply(xid: i32, zxid: i64, err: i32, body: &[u8]) -> Vec<u8> {
    frame(|o| {
        ReplyHeader { xid, zxid, err }.encode(o);
        o.extend_from_slice(body);
    })
}

#[derive(Default)]
struct FakeStats {
    conns: AtomicUsize,
    frames: AtomicUsize,
    requests: AtomicUsize,
}

/// A fake ZooKeeper: fuzzes every connection until `well` is set, then answers
/// correctly (handshake, pings, `exists`, closeSession; every other request gets
/// NoNode).
fn fake_server(listener: TcpListener, seed: u64, stop: Arc<AtomicBool>, well: Arc<AtomicBool>, stats: Arc<FakeStats>) {
    listener.set_nonblocking(true).unwrap();
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => {
                n += 1;
                let rng = Rng::new(seed.wrapping_mul(31).wrapping_add(n));
                let (stop, well, stats) = (stop.clone(), well.clone(), stats.clone());
                stats.conns.fetch_add(1, Ordering::Relaxed);
                std::thread::spawn(move || serve(s, rng, &stop, &well, &stats));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn serve(mut s: TcpStream, mut rng: Rng, stop: &AtomicBool, well: &AtomicBool, stats: &FakeStats) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
    let behave = well.load(Ordering::SeqCst);
    let mut fb = FrameBuffer::new(2 * DEFAULT_MAX_FRAME);
    let mut buf = vec![0u8; 64 * 1024];
    let life = if behave {
        Duration::from_secs(3600)
    } else {
        Duration::from_millis(30 + rng.below(400) as u64)
    };
    let until = Instant::now() + life;
    let send = |s: &mut TcpStream, bytes: &[u8]| -> bool {
        stats.frames.fetch_add(1, Ordering::Relaxed);
        s.write_all(bytes).is_ok()
    };
    // The handshake.
    let first = loop {
        if Instant::now() >= until || stop.load(Ordering::SeqCst) {
            return;
        }
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => fb.extend(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
        match fb.next_frame() {
            Ok(Some(f)) => break f,
            Ok(None) => {}
            Err(_) => return,
        }
    };
    let creq = ConnectRequest::from_bytes(&first).unwrap_or_default();
    let sid = if creq.session_id != 0 {
        creq.session_id
    } else {
        (rng.next() >> 1) as i64 | 1
    };
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout: 1500,
        session_id: sid,
        passwd: vec![7; 16],
        read_only: Some(false),
    };
    let fuzz_handshake = !behave && rng.chance(15);
    let ok = if fuzz_handshake {
        match rng.below(4) {
            0 => send(
                &mut s,
                &frame(|o| o.extend_from_slice(&mutate(&mut rng, &resp.to_bytes()))),
            ),
            1 => send(&mut s, &frame(|o| o.extend_from_slice(&rng.bytes(40)))),
            2 => send(&mut s, &(*rng.pick(INTERESTING_I32)).to_be_bytes()),
            _ => false,
        }
    } else {
        send(&mut s, &frame(|o| resp.encode(o)))
    };
    if !ok {
        let _ = s.shutdown(Shutdown::Both);
        return;
    }
    let mut zxid = 100i64;
    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => fb.extend(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
        loop {
            let f = match fb.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            stats.requests.fetch_add(1, Ordering::Relaxed);
            let Ok(h) = RequestHeader::decode(&mut Reader::new(&f)) else {
                return;
            };
            zxid += 1;
            if behave {
                let out = match (h.xid, OpCode::from_code(h.op)) {
                    (_, Some(OpCode::Ping)) => reply(h.xid, zxid, 0, &[]),
                    (_, Some(OpCode::CloseSession)) => {
                        let _ = send(&mut s, &reply(h.xid, zxid, 0, &[]));
                        return;
                    }
                    (_, Some(OpCode::Exists)) => reply(h.xid, zxid, 0, &stat(1).to_bytes()),
                    (_, Some(OpCode::SetWatches | OpCode::SetWatches2 | OpCode::Auth)) => reply(h.xid, zxid, 0, &[]),
                    _ => reply(h.xid, zxid, ErrorCode::NoNode.code(), &[]),
                };
                if !send(&mut s, &out) {
                    return;
                }
                continue;
            }
            // Fuzz: answer this request in some odd way.
            let body = reply_body(h.op, &mut rng);
            let out = match rng.below(60) {
                0..=21 | 40..=59 => reply(h.xid, zxid, 0, &body),
                22..=27 => reply(h.xid, zxid, 0, &mutate(&mut rng, &body)),
                28..=31 => {
                    let code = if rng.chance(70) {
                        rng.pick(ErrorCode::ALL).code()
                    } else {
                        rng.next() as i32
                    };
                    reply(h.xid, zxid, code, &[])
                }
                32 => reply(h.xid.wrapping_add(1 + rng.below(3) as i32), zxid, 0, &body),
                33 | 34 => {
                    let mut v = reply(h.xid, zxid, 0, &body);
                    v.extend(reply(h.xid, zxid, 0, &body));
                    v
                }
                35 => Vec::new(), // no reply at all
                36 | 37 => reply(h.xid, -1, 0, &body),
                _ => frame(|o| o.extend_from_slice(&mutate(&mut rng, &reply(h.xid, zxid, 0, &body)[4..]))),
            };
            if !out.is_empty() && !send(&mut s, &out) {
                return;
            }
        }
        if behave {
            continue;
        }
        // Unsolicited frames.
        if rng.chance(4) {
            let ev = WatcherEvent {
                event_type: *rng.pick(&[1, 2, 3, 4, -1, 99]),
                state: *rng.pick(&[3, -112, 0, 5]),
                path: rng.pick(&["/a", "/", "", "/x/y"]).to_string(),
            }
            .to_bytes();
            let body = if rng.chance(50) { mutate(&mut rng, &ev) } else { ev };
            let xid = *rng.pick(&[-1, -1, -2, -4, -8, 0, i32::MAX]);
            if !send(&mut s, &reply(xid, zxid, 0, &body)) {
                return;
            }
        }
        if rng.below(1000) < 15 {
            // A garbage length, or a frame cut short, then the end.
            let bad: Vec<u8> = match rng.below(3) {
                0 => (*rng.pick(INTERESTING_I32)).to_be_bytes().to_vec(),
                1 => vec![0, 0, 0, 200, 1, 2, 3],
                _ => rng.bytes(12),
            };
            let _ = send(&mut s, &bad);
            let _ = s.shutdown(Shutdown::Both);
            return;
        }
    }
    let _ = s.shutdown(Shutdown::Both);
}

/// Runs one random call; returns its outcome's name.
fn random_call(zk: &Client, rng: &mut Rng, events: &Arc<AtomicUsize>) -> String {
    let acl = Acl::open_unsafe();
    let name = |r: Result<String, zk_framework::Error>| match r {
        Ok(_) => "Ok".to_string(),
        Err(e) => {
            let d = format!("{e:?}");
            d.split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("?")
                .to_string()
        }
    };
    let ev = events.clone();
    let watcher = move |_e: WatchedEvent| {
        ev.fetch_add(1, Ordering::Relaxed);
    };
    let d = |x: &dyn std::fmt::Debug| format!("{x:?}");
    name(match rng.below(12) {
        0 => zk.exists("/a").map(|x| d(&x)),
        1 => zk.exists_w("/a", watcher).map(|x| d(&x)),
        2 => zk.get_data("/a").map(|x| d(&x)),
        3 => zk.get_data_w("/a", watcher).map(|x| d(&x)),
        4 => zk.get_children("/").map(|x| d(&x)),
        5 => zk.get_children2_w("/", watcher).map(|x| d(&x)),
        6 => zk.create2("/a", b"x", &acl, CreateMode::Ephemeral).map(|x| d(&x)),
        7 => zk
            .create("/s/", b"", &acl, CreateMode::EphemeralSequential)
            .map(|x| d(&x)),
        8 => zk.set_data("/a", b"y", None).map(|x| d(&x)),
        9 => zk.get_acl("/a").map(|x| d(&x)),
        10 => zk
            .multi(vec![
                Op::check("/a", 0),
                Op::create("/b", b"".to_vec(), acl, CreateMode::Persistent),
            ])
            .map(|x| d(&x)),
        _ => zk.sync("/").map(|x| d(&x)),
    })
}

#[test]
fn the_client_survives_a_lying_server_and_recovers() {
    if in_own_process("fuzz_decoders::the_client_survives_a_lying_server_and_recovers") {
        return;
    }
    count_panics();
    let t = Timing::from_env();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, well, stats) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(FakeStats::default()),
    );
    let server = {
        let (stop, well, stats) = (stop.clone(), well.clone(), stats.clone());
        let seed = seed();
        std::thread::spawn(move || fake_server(listener, seed, stop, well, stats))
    };
    // The same host listed several times: a failed attempt moves on at once
    // instead of backing off after every single failure.
    let cs = vec![addr.clone(); 4].join(",");
    let config = || {
        ClientConfig::default()
            .with_session_timeout(Duration::from_millis(1500))
            .with_connect_timeout(Duration::from_millis(500))
    };
    let fuzz_for = t.scale(Duration::from_secs(8));
    let call_limit = t.scale(Duration::from_secs(10));
    let events = Arc::new(AtomicUsize::new(0));
    let outcomes: Arc<Mutex<std::collections::BTreeMap<String, usize>>> = Arc::default();
    let replaced = AtomicUsize::new(0);
    let longest = AtomicU64::new(0);
    let clients: Vec<Mutex<Client>> = (0..4)
        .map(|_| Mutex::new(Client::connect(&cs, config()).unwrap()))
        .collect();
    let end = Instant::now() + fuzz_for;
    std::thread::scope(|sc| {
        for (ci, slot) in clients.iter().enumerate() {
            for th in 0..2 {
                let (events, outcomes, replaced, longest) = (&events, &outcomes, &replaced, &longest);
                let cs = &cs;
                sc.spawn(move || {
                    let mut rng = Rng::new(seed() ^ ((ci * 10 + th) as u64) << 32);
                    while Instant::now() < end {
                        let zk = slot.lock().unwrap().clone();
                        if zk.state().is_terminal() {
                            // A fuzzed handshake said "expired" (or auth failed):
                            // that handle is dead by design; take a new one.
                            let mut g = slot.lock().unwrap();
                            if g.state().is_terminal() {
                                let old = std::mem::replace(&mut *g, Client::connect(cs, config()).unwrap());
                                std::thread::spawn(move || old.close());
                                replaced.fetch_add(1, Ordering::Relaxed);
                            }
                            continue;
                        }
                        let started = Instant::now();
                        let out = random_call(&zk, &mut rng, events);
                        let took = started.elapsed();
                        longest.fetch_max(took.as_millis() as u64, Ordering::Relaxed);
                        assert!(took < call_limit, "a client call took {took:?} ({out})");
                        *outcomes.lock().unwrap().entry(out).or_default() += 1;
                        if !zk.state().is_connected() {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                });
            }
        }
    });
    let calls: usize = outcomes.lock().unwrap().values().sum();
    println!(
        "client fuzz: {} connections, {} frames sent, {} requests read, {calls} calls ({:?}), {} watch events, \
         {} clients replaced after a fuzzed handshake, longest call {} ms",
        stats.conns.load(Ordering::Relaxed),
        stats.frames.load(Ordering::Relaxed),
        stats.requests.load(Ordering::Relaxed),
        outcomes.lock().unwrap(),
        events.load(Ordering::Relaxed),
        replaced.load(Ordering::Relaxed),
        longest.load(Ordering::Relaxed)
    );
    assert!(
        stats.conns.load(Ordering::Relaxed) >= 10,
        "too few connections to mean anything"
    );
    // The server behaves again: every client reconnects and works.
    well.store(true, Ordering::SeqCst);
    for (i, slot) in clients.iter().enumerate() {
        let zk = slot.lock().unwrap().clone();
        let attempts = zk.connect_attempts();
        let recovered = wait_until(t.wait(), || {
            if zk.state().is_terminal() {
                return false;
            }
            matches!(zk.exists("/a"), Ok(Some(_)))
        });
        assert!(
            recovered,
            "client {i} did not recover: state {:?}, {attempts} connect attempts",
            zk.state()
        );
        assert_eq!(zk.state(), ClientState::Connected);
        println!("client {i}: recovered after {} connect attempts", zk.connect_attempts());
    }
    for slot in &clients {
        slot.lock().unwrap().close();
    }
    stop.store(true, Ordering::SeqCst);
    server.join().unwrap();
    assert_no_panics("client fuzz");
}

// ---------------------------------------------------------------------------
// The embedded server against random and mutated frames.

const PATHS: &[&str] = &[
    "/fz",
    "/fz/a",
    "/fz/b/c",
    "/",
    "/zookeeper",
    "",
    "bad",
    "/fz/\u{1}",
    "/fz//x",
];

/// The requests a client sends in a session (the rest of `OpCode::ALL` makes
/// the server close the connection at once).
const NORMAL_OPS: &[OpCode] = &[
    OpCode::Create,
    OpCode::Create2,
    OpCode::CreateContainer,
    OpCode::CreateTtl,
    OpCode::Delete,
    OpCode::Exists,
    OpCode::GetData,
    OpCode::SetData,
    OpCode::GetAcl,
    OpCode::SetAcl,
    OpCode::GetChildren,
    OpCode::GetChildren2,
    OpCode::Sync,
    OpCode::Check,
    OpCode::Multi,
    OpCode::MultiRead,
    OpCode::Ping,
    OpCode::SetWatches,
    OpCode::SetWatches2,
    OpCode::CheckWatches,
    OpCode::RemoveWatches,
    OpCode::AddWatch,
    OpCode::GetEphemerals,
    OpCode::GetAllChildrenNumber,
    OpCode::WhoAmI,
    OpCode::Auth,
];

/// A request body that fits `op` (before mutation).
fn request_body(op: OpCode, rng: &mut Rng) -> Vec<u8> {
    let path = rng.pick(PATHS).to_string();
    match op {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => CreateRequest {
            path,
            data: rng.bytes(8),
            acl: if rng.chance(80) { acl() } else { vec![] },
            flags: rng.below(8) as i32 - 1,
        }
        .to_bytes(),
        OpCode::CreateTtl => CreateTtlRequest {
            path,
            data: vec![],
            acl: acl(),
            flags: 5 + rng.below(2) as i32,
            ttl: *rng.pick(&[0i64, 1, 1000, -1, i64::MAX]),
        }
        .to_bytes(),
        OpCode::Delete | OpCode::Check => DeleteRequest {
            path,
            version: *rng.pick(&[-1, 0, 1]),
        }
        .to_bytes(),
        OpCode::Exists | OpCode::GetData | OpCode::GetChildren | OpCode::GetChildren2 => PathWatchRequest {
            path,
            watch: rng.chance(50),
        }
        .to_bytes(),
        OpCode::SetData => SetDataRequest {
            path,
            data: rng.bytes(8),
            version: -1,
        }
        .to_bytes(),
        OpCode::GetAcl | OpCode::Sync | OpCode::GetEphemerals | OpCode::GetAllChildrenNumber => {
            PathRecord { path }.to_bytes()
        }
        OpCode::SetAcl => SetAclRequest {
            path,
            acl: acl(),
            version: -1,
        }
        .to_bytes(),
        OpCode::Multi | OpCode::MultiRead => multi_request().to_bytes(),
        OpCode::Auth => AuthPacket {
            auth_type: 0,
            scheme: rng.pick(&["digest", "ip", "world", ""]).to_string(),
            auth: b"u:p".to_vec(),
        }
        .to_bytes(),
        OpCode::SetWatches => SetWatches {
            relative_zxid: rng.next() as i64,
            data_watches: vec![path.clone()],
            exist_watches: vec![path],
            child_watches: vec!["/".into()],
        }
        .to_bytes(),
        OpCode::SetWatches2 => SetWatches2 {
            relative_zxid: 0,
            data_watches: vec![path.clone()],
            exist_watches: vec![],
            child_watches: vec![],
            persistent_watches: vec![path.clone()],
            persistent_recursive_watches: vec![path],
        }
        .to_bytes(),
        OpCode::CheckWatches | OpCode::RemoveWatches => WatchTypeRequest {
            path,
            watcher_type: rng.below(5) as i32,
        }
        .to_bytes(),
        OpCode::AddWatch => AddWatchRequest {
            path,
            mode: rng.below(3) as i32,
        }
        .to_bytes(),
        _ => rng.bytes(16),
    }
}

/// One hostile connection: a (maybe broken) handshake, then a burst of
/// random and mutated requests, then an abrupt or orderly end.
fn hostile_connection(addr: &str, mut rng: Rng, frames: &AtomicUsize) {
    let Ok(mut s) = TcpStream::connect(addr) else { return };
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(1)));
    let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
    let mut sink = vec![0u8; 64 * 1024];
    let mut drain = |s: &mut TcpStream| {
        while let Ok(n) = s.read(&mut sink) {
            if n == 0 {
                break;
            }
        }
    };
    let creq = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: *rng.pick(&[0i64, 5, i64::MAX]),
        timeout: *rng.pick(&[1000, 4000, 4000, 4000, 0, -1, i32::MAX]),
        session_id: *rng.pick(&[0i64, 0, 0, 0, 0, 0, 42, -1]),
        passwd: vec![0; 16],
        read_only: Some(rng.chance(10)),
    }
    .to_bytes();
    let hello = match rng.below(20) {
        0..=13 => frame(|o| o.extend_from_slice(&creq)),
        14..=16 => frame(|o| o.extend_from_slice(&mutate(&mut rng, &creq))),
        17 => rng.bytes(64),
        18 => rng
            .pick(&[b"ruok", b"srvr", b"stat", b"mntr", b"cons", b"dump", b"wchs", b"envi"])
            .to_vec(),
        _ => (*rng.pick(INTERESTING_I32)).to_be_bytes().to_vec(),
    };
    frames.fetch_add(1, Ordering::Relaxed);
    if s.write_all(&hello).is_err() {
        return;
    }
    drain(&mut s);
    let mut xid = 1i32;
    for _ in 0..10 + rng.below(50) {
        let out = match rng.below(60) {
            0..=51 => {
                let op = if rng.chance(85) {
                    *rng.pick(NORMAL_OPS)
                } else {
                    *rng.pick(OpCode::ALL)
                };
                let body = request_body(op, &mut rng);
                let body = if rng.chance(12) { mutate(&mut rng, &body) } else { body };
                xid = xid.wrapping_add(1);
                let x = if rng.chance(10) {
                    *rng.pick(&[-2, -4, -8, 0, -1])
                } else {
                    xid
                };
                frame(|o| {
                    RequestHeader { xid: x, op: op.code() }.encode(o);
                    o.extend_from_slice(&body);
                })
            }
            52 | 53 => frame(|o| {
                RequestHeader {
                    xid,
                    op: rng.next() as i32,
                }
                .encode(o);
                let b = rng.bytes(32);
                o.extend_from_slice(&b);
            }),
            54 | 55 => frame(|o| {
                let b = rng.bytes(24);
                o.extend_from_slice(&b);
            }),
            56 => frame(|_| {}),
            57 | 58 => {
                // A frame cut short: the server waits for the rest; we leave.
                let mut f = frame(|o| o.extend_from_slice(&rng.bytes(40)));
                f.truncate(rng.below(f.len()));
                let _ = s.write_all(&f);
                frames.fetch_add(1, Ordering::Relaxed);
                break;
            }
            _ => {
                let _ = s.write_all(&(*rng.pick(INTERESTING_I32)).to_be_bytes());
                frames.fetch_add(1, Ordering::Relaxed);
                break;
            }
        };
        frames.fetch_add(1, Ordering::Relaxed);
        if s.write_all(&out).is_err() {
            return;
        }
        drain(&mut s);
    }
    // Usually let the server answer everything before leaving (closing with
    // unread replies would reset the connection and discard our last frames).
    if rng.chance(80) {
        let _ = s.set_read_timeout(Some(Duration::from_millis(5)));
        let until = Instant::now() + Duration::from_millis(100);
        let mut quiet = 0;
        while Instant::now() < until && quiet < 3 {
            match s.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => quiet = 0,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => quiet += 1,
                Err(_) => break,
            }
        }
    }
    if rng.chance(50) {
        let _ = s.shutdown(Shutdown::Both);
    }
}

#[test]
fn the_embedded_server_survives_hostile_connections_and_keeps_serving() {
    if in_own_process("fuzz_decoders::the_embedded_server_survives_hostile_connections_and_keeps_serving") {
        return;
    }
    count_panics();
    let t = Timing::from_env();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let addr = server.connect_string();
    let good = CuratorFramework::builder()
        .connect_string(&addr)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
        .build()
        .unwrap();
    good.block_until_connected(t.wait()).unwrap();
    good.create().for_path("/fuzz-ok").unwrap();
    let frames = AtomicUsize::new(0);
    let budget = t.scale(Duration::from_secs(6));
    let start = Instant::now();
    let mut rng = Rng::new(seed() ^ 0x5E4E);
    let (mut batches, mut conns) = (0usize, 0usize);
    while start.elapsed() < budget && batches < 150 {
        let n = 6;
        let seeds: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        std::thread::scope(|s| {
            for sd in &seeds {
                let (addr, frames) = (&addr, &frames);
                let sd = *sd;
                s.spawn(move || hostile_connection(addr, Rng::new(sd), frames));
            }
        });
        conns += n;
        batches += 1;
        // A well-behaved round trip after every batch.
        let value = format!("batch {batches}").into_bytes();
        let round_trip = wait_until(t.wait(), || {
            good.set_data("/fuzz-ok", value.clone(), None).is_ok()
                && good.get_data("/fuzz-ok").map(|(d, _)| d) == Ok(value.clone())
        });
        assert!(round_trip, "the server stopped serving after batch {batches}");
    }
    let stats = server.embedded().unwrap().stats();
    println!(
        "server fuzz: {batches} batches, {conns} hostile connections, {} frames sent; server: {} packets received, {} connections accepted, {} sessions live",
        frames.load(Ordering::Relaxed),
        stats.packets_received,
        stats.total_connections,
        stats.sessions
    );
    assert!(
        frames.load(Ordering::Relaxed) >= 1000,
        "too few frames to mean anything"
    );
    good.close();
    assert_no_panics("server fuzz");
}
