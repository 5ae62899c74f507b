//! The wire's two ends fed bad bytes over TCP, as proptest properties: the
//! client against a lying server, and the embedded server against hostile
//! connections. The decoders themselves are fuzzed with coverage by the
//! `zk-fuzz` crate's targets (scripts/fuzz.sh); the bad bytes here are the
//! inputs of its corpus (`fuzz/corpus/`: what the fuzzer kept because it
//! reached new code, and the seeds), which a plan picks and sends in its
//! turn. The configuration (a fixed seed), the corpus' strategies, the
//! records' valid samples and the panic counter are `zk_test_support::fuzz`.
//!
//! * The client: a fake server (a raw TCP listener) plays one generated plan
//!   per connection (a handshake, an answer per request, unsolicited frames,
//!   garbage and an abrupt close, a lifetime; the replies, handshakes and
//!   bodies that lie are inputs of the `client_reply` corpus) to real
//!   `Client`s making calls.
//!   Every call returns a typed result in bounded time; once the plans are
//!   played and the server behaves, every client works again.
//! * The server: batches of generated hostile connections (a maybe broken
//!   handshake, requests, inputs of the `server_request` and `records`
//!   corpora, frames cut short) at once to the
//!   embedded server, which must keep serving a well-behaved client (a
//!   `set_data`/`get_data` round trip after every batch).
//!
//! A panic hook counts panics on every thread (the client's I/O and event
//! threads, the embedded server's threads); each case asserts none happened.
//! Other suites in this binary panic on purpose (a panicking watcher, panicking
//! state listeners), so each test here runs alone in a process of its own
//! (`support::in_own_process`). A failing case is printed (shrunk, within a
//! few steps: a case takes connections); `PROPTEST_RNG_SEED=N` explores
//! other cases, `PROPTEST_CASES=N` runs more of them. Every count is printed.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, TestRunner};

use crate::support::in_own_process;
use zk_framework::proto::frame::{frame, FrameBuffer, DEFAULT_MAX_FRAME};
use zk_framework::proto::jute::{Decode, Encode, Reader};
use zk_framework::proto::*;
use zk_framework::CuratorFramework;
use zk_framework::RetryNTimes;
use zk_framework::{Client, ClientConfig, ClientState, Op, WatchedEvent};
use zk_test_support::fuzz::{
    acl, assert_no_panics, config, count_panics, from_corpus, interesting_i32, multi_request, multi_response,
    panic_sites, panics, reply_payload, stat,
};
use zk_testing::{wait_until, Backend, TestingServer, Timing};

/// A configuration of `cases` cases for these suites: a case takes
/// connections (and seconds), so a failure is shrunk a few steps only.
fn wire_config(cases: u32) -> Config {
    Config {
        max_shrink_iters: 8,
        ..config(cases)
    }
}

/// Fails the case with the panics counted on any thread so far.
fn no_panics(what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(panics(), 0, "{}: panics: {:?}", what, panic_sites());
    Ok(())
}

// ---------------------------------------------------------------------------
// The client against a lying server.

/// How a fuzzed connection answers the client's handshake.
#[derive(Debug, Clone)]
enum Handshake {
    /// A valid ConnectResponse.
    Right,
    /// A payload of the `client_reply` corpus in a frame.
    Corpus(Vec<u8>),
    /// Four bytes: a bare length and nothing after it.
    BareLength(i32),
    /// No answer: the connection is shut.
    Close,
}

fn handshake() -> impl Strategy<Value = Handshake> {
    prop_oneof![
        85 => Just(Handshake::Right),
        8 => reply_payload().prop_map(Handshake::Corpus),
        4 => interesting_i32().prop_map(Handshake::BareLength),
        3 => Just(Handshake::Close),
    ]
}

/// How a fuzzed connection answers one request.
#[derive(Debug, Clone)]
enum Answer {
    /// The reply the request expects.
    Right,
    /// A body of the `client_reply` corpus (a payload after its header).
    CorpusBody(Vec<u8>),
    /// An error code (a known one or any) and no body.
    Error(i32),
    /// The reply under an xid 1 to 3 past the request's.
    WrongXid(i32),
    /// The reply twice.
    Twice,
    /// No reply at all.
    Silent,
    /// The reply with zxid -1.
    NegativeZxid,
    /// A payload of the `client_reply` corpus (header and body) inside a
    /// right frame, under the request's xid.
    CorpusReply(Vec<u8>),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        42 => Just(Answer::Right),
        6 => reply_payload().prop_map(|p| Answer::CorpusBody(p.get(16..).unwrap_or_default().to_vec())),
        4 => prop_oneof![7 => select(ErrorCode::ALL).prop_map(|c| c.code()), 3 => any::<i32>()].prop_map(Answer::Error),
        1 => (1..=3i32).prop_map(Answer::WrongXid),
        2 => Just(Answer::Twice),
        1 => Just(Answer::Silent),
        2 => Just(Answer::NegativeZxid),
        2 => reply_payload().prop_map(Answer::CorpusReply),
    ]
}

/// What a fuzzed connection does on each turn of its read loop (every 10 ms
/// or after a read), besides answering.
#[derive(Debug, Clone)]
enum Tick {
    /// Nothing.
    Quiet,
    /// An unsolicited notification (or a body of the `client_reply` corpus)
    /// under a notification's or an odd xid.
    Event {
        event_type: i32,
        state: i32,
        path: &'static str,
        corpus: Option<Vec<u8>>,
        xid: i32,
    },
    /// Garbage (a bare length, a frame cut short, a stream of the `frame`
    /// corpus), then the end.
    Garbage(Vec<u8>),
}

fn tick() -> impl Strategy<Value = Tick> {
    let event = (
        select(&[1, 2, 3, 4, -1, 99][..]),
        select(&[3, -112, 0, 5][..]),
        select(&["/a", "/", "", "/x/y"][..]),
        proptest::option::of(reply_payload().prop_map(|p| p.get(16..).unwrap_or_default().to_vec())),
        select(&[-1, -1, -2, -4, -8, 0, i32::MAX][..]),
    )
        .prop_map(|(event_type, state, path, corpus, xid)| Tick::Event {
            event_type,
            state,
            path,
            corpus,
            xid,
        });
    let garbage = prop_oneof![
        interesting_i32().prop_map(|n| n.to_be_bytes().to_vec()),
        Just(vec![0, 0, 0, 200, 1, 2, 3]),
        from_corpus("frame"),
    ]
    .prop_map(Tick::Garbage);
    prop_oneof![945 => Just(Tick::Quiet), 40 => event, 15 => garbage]
}

/// One fuzzed connection of the fake server: its lifetime, its handshake, the
/// session id it hands out (when the client asks for a new session), its
/// answers and ticks (each taken in turn, round and round), and the bodies of
/// its right replies (a create's kind, a read's data).
#[derive(Debug, Clone)]
struct Plan {
    life: Duration,
    handshake: Handshake,
    session: i64,
    answers: Vec<Answer>,
    ticks: Vec<Tick>,
    create2: bool,
    data: Vec<u8>,
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        30..430u64,
        handshake(),
        1..i64::MAX,
        vec(answer(), 1..32),
        vec(tick(), 1..48),
        any::<bool>(),
        select(vec![Vec::new(), b"data".to_vec(), vec![0xff; 16]]),
    )
        .prop_map(|(ms, handshake, session, answers, ticks, create2, data)| Plan {
            life: Duration::from_millis(ms),
            handshake,
            session,
            answers,
            ticks,
            create2,
            data,
        })
}

/// A reply body that fits the request's opcode.
fn reply_body(op: i32, plan: &Plan) -> Vec<u8> {
    match OpCode::from_code(op) {
        Some(OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl) => {
            if plan.create2 {
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
            data: plan.data.clone(),
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

/// A fake ZooKeeper: the n-th connection plays the n-th plan; once the plans
/// are used up (or dropped), connections are answered correctly (handshake,
/// pings, `exists`, closeSession; every other request gets NoNode).
#[derive(Default)]
struct FakeServer {
    plans: Mutex<VecDeque<Plan>>,
    /// Connections playing a plan now.
    playing: AtomicUsize,
    stop: AtomicBool,
    conns: AtomicUsize,
    played: AtomicUsize,
    frames: AtomicUsize,
    requests: AtomicUsize,
}

impl FakeServer {
    /// Whether every plan was played to its end.
    fn done(&self) -> bool {
        self.plans.lock().unwrap().is_empty() && self.playing.load(Ordering::SeqCst) == 0
    }
}

/// Counts a playing connection down when its serving ends.
struct Playing<'a>(&'a FakeServer);

impl Drop for Playing<'_> {
    fn drop(&mut self) {
        self.0.playing.fetch_sub(1, Ordering::SeqCst);
    }
}

fn fake_server(listener: TcpListener, fake: Arc<FakeServer>) {
    listener.set_nonblocking(true).unwrap();
    while !fake.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => {
                fake.conns.fetch_add(1, Ordering::Relaxed);
                let plan = {
                    let mut plans = fake.plans.lock().unwrap();
                    let plan = plans.pop_front();
                    if plan.is_some() {
                        fake.playing.fetch_add(1, Ordering::SeqCst);
                        fake.played.fetch_add(1, Ordering::Relaxed);
                    }
                    plan
                };
                let fake = fake.clone();
                std::thread::spawn(move || {
                    let _playing = plan.is_some().then(|| Playing(&fake));
                    serve(s, plan.as_ref(), &fake);
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Serves one connection: with `plan`, as it says; without, correctly.
fn serve(mut s: TcpStream, plan: Option<&Plan>, fake: &FakeServer) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
    let mut fb = FrameBuffer::new(2 * DEFAULT_MAX_FRAME);
    let mut buf = vec![0u8; 64 * 1024];
    let life = plan.map_or(Duration::from_secs(3600), |p| p.life);
    let until = Instant::now() + life;
    let send = |s: &mut TcpStream, bytes: &[u8]| -> bool {
        fake.frames.fetch_add(1, Ordering::Relaxed);
        s.write_all(bytes).is_ok()
    };
    // The handshake.
    let first = loop {
        if Instant::now() >= until || fake.stop.load(Ordering::SeqCst) {
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
        plan.map_or(0x5e55_1011, |p| p.session)
    };
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout: 1500,
        session_id: sid,
        passwd: vec![7; 16],
        read_only: Some(false),
    };
    let ok = match plan.map(|p| &p.handshake) {
        None | Some(Handshake::Right) => send(&mut s, &frame(|o| resp.encode(o))),
        Some(Handshake::Corpus(b)) => send(&mut s, &frame(|o| o.extend_from_slice(b))),
        Some(Handshake::BareLength(n)) => send(&mut s, &n.to_be_bytes()),
        Some(Handshake::Close) => false,
    };
    if !ok {
        let _ = s.shutdown(Shutdown::Both);
        return;
    }
    let mut zxid = 100i64;
    let (mut answers, mut ticks) = (0usize, 0usize);
    while Instant::now() < until && !fake.stop.load(Ordering::SeqCst) {
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
            fake.requests.fetch_add(1, Ordering::Relaxed);
            let Ok(h) = RequestHeader::decode(&mut Reader::new(&f)) else {
                return;
            };
            zxid += 1;
            let Some(plan) = plan else {
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
            };
            // Fuzz: answer this request as the plan says.
            let body = reply_body(h.op, plan);
            let out = match &plan.answers[answers % plan.answers.len()] {
                Answer::Right => reply(h.xid, zxid, 0, &body),
                Answer::CorpusBody(b) => reply(h.xid, zxid, 0, b),
                Answer::Error(code) => reply(h.xid, zxid, *code, &[]),
                Answer::WrongXid(d) => reply(h.xid.wrapping_add(*d), zxid, 0, &body),
                Answer::Twice => {
                    let mut v = reply(h.xid, zxid, 0, &body);
                    v.extend(reply(h.xid, zxid, 0, &body));
                    v
                }
                Answer::Silent => Vec::new(),
                Answer::NegativeZxid => reply(h.xid, -1, 0, &body),
                Answer::CorpusReply(p) => frame(|o| {
                    o.extend_from_slice(&h.xid.to_be_bytes());
                    o.extend_from_slice(p.get(4..).unwrap_or_default());
                }),
            };
            answers += 1;
            if !out.is_empty() && !send(&mut s, &out) {
                return;
            }
        }
        let Some(plan) = plan else { continue };
        // Unsolicited frames.
        match &plan.ticks[ticks % plan.ticks.len()] {
            Tick::Quiet => {}
            Tick::Event {
                event_type,
                state,
                path,
                corpus,
                xid,
            } => {
                let body = match corpus {
                    Some(b) => b.clone(),
                    None => WatcherEvent {
                        event_type: *event_type,
                        state: *state,
                        path: path.to_string(),
                    }
                    .to_bytes(),
                };
                if !send(&mut s, &reply(*xid, zxid, 0, &body)) {
                    return;
                }
            }
            Tick::Garbage(bad) => {
                let _ = send(&mut s, bad);
                let _ = s.shutdown(Shutdown::Both);
                return;
            }
        }
        ticks += 1;
    }
    let _ = s.shutdown(Shutdown::Both);
}

/// Makes call `which` (of 12 kinds); returns its outcome's name.
fn call(zk: &Client, which: u8, events: &Arc<AtomicUsize>) -> String {
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
    name(match which % 12 {
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

/// Clients and threads per client in a case.
const CLIENTS: usize = 4;
const THREADS: usize = 2;

/// One case of the client suite: the fake server's plans (one per fuzzed
/// connection) and each calling thread's calls (made in turn, round and
/// round, until every plan is played).
#[derive(Debug, Clone)]
struct ClientCase {
    plans: Vec<Plan>,
    calls: Vec<Vec<u8>>,
}

fn client_case() -> impl Strategy<Value = ClientCase> {
    (vec(plan(), 4..=12), vec(vec(0u8..12, 1..24), CLIENTS * THREADS))
        .prop_map(|(plans, calls)| ClientCase { plans, calls })
}

/// What the client cases add up to, printed at the end.
#[derive(Default)]
struct ClientTally {
    outcomes: Mutex<std::collections::BTreeMap<String, usize>>,
    events: Arc<AtomicUsize>,
    replaced: AtomicUsize,
    longest_ms: AtomicU64,
    conns: AtomicUsize,
    played: AtomicUsize,
    frames: AtomicUsize,
    requests: AtomicUsize,
}

/// Runs one case: calls against the lying server until every plan is played
/// (within a bound), each call within `call_limit`; then every client,
/// replaced when a fuzzed handshake ended its session, works again.
fn client_case_run(case: &ClientCase, tally: &ClientTally, t: &Timing) -> Result<(), TestCaseError> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let fake = Arc::new(FakeServer {
        plans: Mutex::new(case.plans.iter().cloned().collect()),
        ..FakeServer::default()
    });
    let server = {
        let fake = fake.clone();
        std::thread::spawn(move || fake_server(listener, fake))
    };
    // The same host listed several times: a failed attempt moves on at once
    // instead of backing off after every single failure.
    let cs = vec![addr.clone(); 4].join(",");
    let config = || {
        ClientConfig::default()
            .with_session_timeout(Duration::from_millis(1500))
            .with_connect_timeout(Duration::from_millis(500))
    };
    let call_limit = t.scale(Duration::from_secs(10));
    let play_limit = t.scale(Duration::from_secs(10));
    let clients: Vec<Mutex<Client>> = (0..CLIENTS)
        .map(|_| Mutex::new(Client::connect(&cs, config()).unwrap()))
        .collect();
    let end = Instant::now() + play_limit;
    // A fuzzed handshake may say "expired" (or fail auth): that handle is dead
    // by design; take a new one.
    let renew = |slot: &Mutex<Client>| {
        let mut g = slot.lock().unwrap();
        if g.state().is_terminal() {
            let old = std::mem::replace(&mut *g, Client::connect(&cs, config()).unwrap());
            std::thread::spawn(move || old.close());
            tally.replaced.fetch_add(1, Ordering::Relaxed);
        }
    };
    std::thread::scope(|sc| {
        for (i, calls) in case.calls.iter().enumerate() {
            let slot = &clients[i / THREADS];
            let (fake, renew) = (&fake, &renew);
            sc.spawn(move || {
                for which in calls.iter().cycle() {
                    if fake.done() || Instant::now() >= end {
                        break;
                    }
                    let zk = slot.lock().unwrap().clone();
                    if zk.state().is_terminal() {
                        renew(slot);
                        continue;
                    }
                    let started = Instant::now();
                    let out = call(&zk, *which, &tally.events);
                    let took = started.elapsed();
                    tally.longest_ms.fetch_max(took.as_millis() as u64, Ordering::Relaxed);
                    assert!(took < call_limit, "a client call took {took:?} ({out})");
                    *tally.outcomes.lock().unwrap().entry(out).or_default() += 1;
                    // Disconnected, or every plan handed out (only the last
                    // ones still play, the other clients' servers behave):
                    // no need to hurry.
                    if !zk.state().is_connected() || fake.plans.lock().unwrap().is_empty() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            });
        }
    });
    // The server behaves from now on (plans not played by the bound are dropped).
    fake.plans.lock().unwrap().clear();
    let mut result = Ok(());
    for (i, slot) in clients.iter().enumerate() {
        renew(slot);
        let zk = slot.lock().unwrap().clone();
        let attempts = zk.connect_attempts();
        let recovered = wait_until(t.wait(), || {
            if zk.state().is_terminal() {
                renew(slot);
                return false;
            }
            matches!(zk.exists("/a"), Ok(Some(_)))
        });
        let zk = slot.lock().unwrap().clone();
        if !recovered || zk.state() != ClientState::Connected {
            result = Err(TestCaseError::fail(format!(
                "client {i} did not recover: state {:?}, {attempts} connect attempts",
                zk.state()
            )));
        }
    }
    for slot in &clients {
        slot.lock().unwrap().close();
    }
    fake.stop.store(true, Ordering::SeqCst);
    server.join().unwrap();
    for (sum, n) in [
        (&tally.conns, &fake.conns),
        (&tally.played, &fake.played),
        (&tally.frames, &fake.frames),
        (&tally.requests, &fake.requests),
    ] {
        sum.fetch_add(n.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    result?;
    no_panics("client fuzz")
}

/// Real clients making calls against a lying server (one generated plan per
/// connection: broken handshakes, corpus inputs, wrong, doubled, missing replies,
/// unsolicited notifications, garbage and abrupt closes): no panic on any
/// thread, every call returns within a bound, and once the server behaves
/// every client (a new one where a handshake ended the session) works again.
#[test]
fn the_client_survives_a_lying_server_and_recovers() {
    if in_own_process("fuzz_wire::the_client_survives_a_lying_server_and_recovers") {
        return;
    }
    count_panics();
    let t = Timing::from_env();
    let tally = ClientTally::default();
    let mut runner = TestRunner::new(wire_config(40));
    let r = runner.run(&client_case(), |case| client_case_run(&case, &tally, &t));
    let outcomes = tally.outcomes.lock().unwrap().clone();
    println!(
        "client fuzz: {} connections ({} playing a plan), {} frames sent, {} requests read, {} calls ({:?}), \
         {} watch events, {} clients replaced after a fuzzed handshake, longest call {} ms",
        tally.conns.load(Ordering::Relaxed),
        tally.played.load(Ordering::Relaxed),
        tally.frames.load(Ordering::Relaxed),
        tally.requests.load(Ordering::Relaxed),
        outcomes.values().sum::<usize>(),
        outcomes,
        tally.events.load(Ordering::Relaxed),
        tally.replaced.load(Ordering::Relaxed),
        tally.longest_ms.load(Ordering::Relaxed)
    );
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(
        tally.played.load(Ordering::Relaxed) >= 10,
        "too few fuzzed connections to mean anything"
    );
    assert_no_panics("client fuzz");
}

// ---------------------------------------------------------------------------
// The embedded server against hostile connections.

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

/// The fields a request body is made of (each body takes those it has).
#[derive(Debug, Clone)]
struct Fields {
    path: &'static str,
    data: Vec<u8>,
    with_acl: bool,
    flags: i32,
    ttl: i64,
    version: i32,
    watch: bool,
    scheme: &'static str,
    relative_zxid: i64,
    watcher_type: i32,
    mode: i32,
    random: Vec<u8>,
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        (
            select(PATHS),
            select(vec![Vec::new(), b"data".to_vec(), vec![0; 8]]),
            proptest::bool::weighted(0.8),
            -1..7i32,
        ),
        (
            select(&[0i64, 1, 1000, -1, i64::MAX][..]),
            select(&[-1, 0, 1][..]),
            any::<bool>(),
            select(&["digest", "ip", "world", ""][..]),
        ),
        (any::<i64>(), 0..5i32, 0..3i32, from_corpus("records")),
    )
        .prop_map(
            |(
                (path, data, with_acl, flags),
                (ttl, version, watch, scheme),
                (relative_zxid, watcher_type, mode, random),
            )| {
                Fields {
                    path,
                    data,
                    with_acl,
                    flags,
                    ttl,
                    version,
                    watch,
                    scheme,
                    relative_zxid,
                    watcher_type,
                    mode,
                    random,
                }
            },
        )
}

/// A request body that fits `op` (an input of the `records` corpus for an
/// opcode without a body of its own).
fn request_body(op: OpCode, f: &Fields) -> Vec<u8> {
    let path = f.path.to_string();
    match op {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => CreateRequest {
            path,
            data: f.data.clone(),
            acl: if f.with_acl { acl() } else { vec![] },
            flags: f.flags,
        }
        .to_bytes(),
        OpCode::CreateTtl => CreateTtlRequest {
            path,
            data: vec![],
            acl: acl(),
            flags: 5 + f.flags.rem_euclid(2),
            ttl: f.ttl,
        }
        .to_bytes(),
        OpCode::Delete | OpCode::Check => DeleteRequest {
            path,
            version: f.version,
        }
        .to_bytes(),
        OpCode::Exists | OpCode::GetData | OpCode::GetChildren | OpCode::GetChildren2 => {
            PathWatchRequest { path, watch: f.watch }.to_bytes()
        }
        OpCode::SetData => SetDataRequest {
            path,
            data: f.data.clone(),
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
            scheme: f.scheme.to_string(),
            auth: b"u:p".to_vec(),
        }
        .to_bytes(),
        OpCode::SetWatches => SetWatches {
            relative_zxid: f.relative_zxid,
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
            watcher_type: f.watcher_type,
        }
        .to_bytes(),
        OpCode::AddWatch => AddWatchRequest { path, mode: f.mode }.to_bytes(),
        _ => f.random.clone(),
    }
}

/// How a hostile connection opens.
#[derive(Debug, Clone)]
enum Hello {
    /// A ConnectRequest (odd values included).
    Connect {
        last_zxid: i64,
        timeout: i32,
        session: i64,
        read_only: bool,
    },
    /// An input of the `server_request` corpus: a connection's bytes (a
    /// handshake, broken or not, and what follows).
    Corpus(Vec<u8>),
    /// A four-letter word.
    Word(&'static str),
    /// A bare length.
    Length(i32),
}

fn hello() -> impl Strategy<Value = Hello> {
    let connect = (
        select(&[0i64, 5, i64::MAX][..]),
        select(&[1000, 4000, 4000, 4000, 0, -1, i32::MAX][..]),
        select(&[0i64, 0, 0, 0, 0, 0, 42, -1][..]),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(last_zxid, timeout, session, read_only)| Hello::Connect {
            last_zxid,
            timeout,
            session,
            read_only,
        });
    prop_oneof![
        14 => connect,
        4 => from_corpus("server_request").prop_map(Hello::Corpus),
        1 => select(&["ruok", "srvr", "stat", "mntr", "cons", "dump", "wchs", "envi"][..]).prop_map(Hello::Word),
        1 => interesting_i32().prop_map(Hello::Length),
    ]
}

/// One frame of a hostile connection after its hello.
#[derive(Debug, Clone)]
enum Sent {
    /// A request of a known opcode (mostly one a session sends) with a body
    /// that fits it, under the next xid or an odd one.
    Request {
        op: OpCode,
        fields: Fields,
        xid: Option<i32>,
    },
    /// A header with any opcode and an input of the `records` corpus.
    AnyOp(i32, Vec<u8>),
    /// An input of the `server_request` corpus, as it is (frames, or not).
    Corpus(Vec<u8>),
    /// An empty frame.
    Empty,
}

fn sent() -> impl Strategy<Value = Sent> {
    let request = (
        prop_oneof![85 => select(NORMAL_OPS), 15 => select(OpCode::ALL)],
        fields(),
        prop_oneof![90 => Just(None), 10 => select(&[-2, -4, -8, 0, -1][..]).prop_map(Some)],
    )
        .prop_map(|(op, fields, xid)| Sent::Request { op, fields, xid });
    prop_oneof![
        46 => request,
        4 => (any::<i32>(), from_corpus("records")).prop_map(|(op, b)| Sent::AnyOp(op, b)),
        6 => from_corpus("server_request").prop_map(Sent::Corpus),
        1 => Just(Sent::Empty),
    ]
}

/// How a hostile connection's frames end.
#[derive(Debug, Clone)]
enum End {
    /// After its last frame.
    Whole,
    /// With a frame cut short (the server waits for the rest; we leave): an
    /// input of the `records` corpus in a frame, cut.
    CutShort(Vec<u8>, Index),
    /// With a bare length.
    Length(i32),
}

/// One hostile connection: its hello, its frames, how they end, and whether
/// it reads the server's replies before leaving and shuts the socket.
#[derive(Debug, Clone)]
struct Hostile {
    hello: Hello,
    frames: Vec<Sent>,
    end: End,
    read_replies: bool,
    shutdown: bool,
}

fn hostile() -> impl Strategy<Value = Hostile> {
    (
        hello(),
        vec(sent(), 1..60),
        prop_oneof![
            3 => Just(End::Whole),
            2 => (from_corpus("records"), any::<Index>()).prop_map(|(b, i)| End::CutShort(b, i)),
            1 => interesting_i32().prop_map(End::Length),
        ],
        proptest::bool::weighted(0.8),
        any::<bool>(),
    )
        .prop_map(|(hello, frames, end, read_replies, shutdown)| Hostile {
            hello,
            frames,
            end,
            read_replies,
            shutdown,
        })
}

/// Plays one hostile connection to `addr`.
fn hostile_connection(addr: &str, h: &Hostile, frames: &AtomicUsize) {
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
    let hello = match &h.hello {
        Hello::Connect {
            last_zxid,
            timeout,
            session,
            read_only,
        } => {
            let creq = ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: *last_zxid,
                timeout: *timeout,
                session_id: *session,
                passwd: vec![0; 16],
                read_only: Some(*read_only),
            }
            .to_bytes();
            frame(|o| o.extend_from_slice(&creq))
        }
        Hello::Corpus(b) => b.clone(),
        Hello::Word(w) => w.as_bytes().to_vec(),
        Hello::Length(n) => n.to_be_bytes().to_vec(),
    };
    frames.fetch_add(1, Ordering::Relaxed);
    if s.write_all(&hello).is_err() {
        return;
    }
    drain(&mut s);
    let mut next_xid = 1i32;
    for f in &h.frames {
        let out = match f {
            Sent::Request { op, fields, xid } => {
                let body = request_body(*op, fields);
                next_xid = next_xid.wrapping_add(1);
                let x = xid.unwrap_or(next_xid);
                frame(|o| {
                    RequestHeader { xid: x, op: op.code() }.encode(o);
                    o.extend_from_slice(&body);
                })
            }
            Sent::AnyOp(op, b) => frame(|o| {
                RequestHeader { xid: next_xid, op: *op }.encode(o);
                o.extend_from_slice(b);
            }),
            Sent::Corpus(b) => b.clone(),
            Sent::Empty => frame(|_| {}),
        };
        frames.fetch_add(1, Ordering::Relaxed);
        if s.write_all(&out).is_err() {
            return;
        }
        drain(&mut s);
    }
    match &h.end {
        End::Whole => {}
        End::CutShort(b, cut) => {
            let mut f = frame(|o| o.extend_from_slice(b));
            f.truncate(cut.index(f.len()));
            let _ = s.write_all(&f);
            frames.fetch_add(1, Ordering::Relaxed);
        }
        End::Length(n) => {
            let _ = s.write_all(&n.to_be_bytes());
            frames.fetch_add(1, Ordering::Relaxed);
        }
    }
    // Let the server answer everything before leaving (closing with unread
    // replies would reset the connection and discard our last frames).
    if h.read_replies {
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
    if h.shutdown {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// Hostile connections at once per case.
const BATCH: usize = 6;

/// Batches of hostile connections (broken handshakes, four-letter words,
/// requests of every opcode, corpus inputs, odd xids, frames cut short)
/// at once to one embedded server, case after case: no panic on any thread,
/// and after every batch a well-behaved client's `set_data`/`get_data` round
/// trip works.
#[test]
fn the_embedded_server_survives_hostile_connections_and_keeps_serving() {
    if in_own_process("fuzz_wire::the_embedded_server_survives_hostile_connections_and_keeps_serving") {
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
    let batches = AtomicUsize::new(0);
    let mut runner = TestRunner::new(wire_config(40));
    let r = runner.run(&vec(hostile(), BATCH), |batch| {
        std::thread::scope(|s| {
            for h in &batch {
                let (addr, frames) = (&addr, &frames);
                s.spawn(move || hostile_connection(addr, h, frames));
            }
        });
        let n = batches.fetch_add(1, Ordering::Relaxed) + 1;
        let value = format!("batch {n}").into_bytes();
        let round_trip = wait_until(t.wait(), || {
            good.set_data("/fuzz-ok", value.clone(), None).is_ok()
                && good.get_data("/fuzz-ok").map(|(d, _)| d) == Ok(value.clone())
        });
        prop_assert!(round_trip, "the server stopped serving after this batch");
        no_panics("server fuzz")
    });
    let stats = server.embedded().unwrap().stats();
    let n = batches.load(Ordering::Relaxed);
    println!(
        "server fuzz: {n} batches, {} hostile connections, {} frames sent; server: {} packets received, {} connections accepted, {} sessions live",
        n * BATCH,
        frames.load(Ordering::Relaxed),
        stats.packets_received,
        stats.total_connections,
        stats.sessions
    );
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(
        frames.load(Ordering::Relaxed) >= 1000,
        "too few frames to mean anything"
    );
    good.close();
    assert_no_panics("server fuzz");
}
