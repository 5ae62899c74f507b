//! Property tests with a seeded, deterministic PRNG (SplitMix64; no extra
//! crate): the wire decoders never panic, on either side of the connection.
//!
//! * Every `Decode` impl of `zk_framework::proto` (every record, the multi
//!   request and response, the connect request and response, the primitives)
//!   gets random bytes and mutations of valid encodings; whatever decodes
//!   must re-encode to something that decodes to the same value.
//! * `FrameBuffer` (and `read_frame`) gets random streams and valid frame
//!   streams cut at random points; valid streams must come out frame for frame.
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
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use crate::support::in_own_process;
use zk_framework::proto::frame::{four_letter_word, frame, read_frame, FrameBuffer, DEFAULT_MAX_FRAME};
use zk_framework::proto::jute::{Decode, Encode, Reader};
use zk_framework::proto::*;
use zk_framework::CuratorFramework;
use zk_framework::RetryNTimes;
use zk_framework::{Client, ClientConfig, ClientState, Op, WatchedEvent};
use zk_testing::{wait_until, Backend, TestingServer, Timing};

// ---------------------------------------------------------------------------
// PRNG, panic counting, mutations.

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn seed() -> u64 {
    std::env::var("ZK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

static PANICS: AtomicUsize = AtomicUsize::new(0);
static PANIC_SITES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Counts every panic in the process (client and server threads included).
fn count_panics() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            let name = std::thread::current().name().unwrap_or("?").to_string();
            if let Ok(mut v) = PANIC_SITES.lock() {
                v.push(format!("{name}: {info}"));
            }
            prev(info);
        }));
    });
}

fn assert_no_panics(what: &str) {
    let n = PANICS.load(Ordering::SeqCst);
    assert_eq!(n, 0, "{what}: {n} panics: {:?}", PANIC_SITES.lock().map(|v| v.clone()));
}

const INTERESTING_I32: &[i32] = &[
    -1,
    -2,
    0,
    1,
    2,
    4,
    16,
    255,
    i32::MAX,
    i32::MIN,
    0xfffff,
    0x100000,
    0x7fff_fff0,
    -101,
    -4,
    -8,
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 => v.truncate(rng.below(len + 1)),
            3 => {
                let extra = rng.bytes(16);
                v.extend(extra);
            }
            4 => {
                let at = rng.below(len + 1);
                let extra = rng.bytes(8);
                v.splice(at..at, extra);
            }
            5 if len >= 4 => {
                let at = rng.below(len - 3);
                let x = *rng.pick(INTERESTING_I32);
                v[at..at + 4].copy_from_slice(&x.to_be_bytes());
            }
            6 if len >= 8 => {
                let at = rng.below(len - 7);
                let x = *rng.pick(&[-1i64, 0, 1, i64::MAX, i64::MIN]);
                v[at..at + 8].copy_from_slice(&x.to_be_bytes());
            }
            7 if len > 0 => {
                let a = rng.below(len);
                let b = a + rng.below(len - a + 1);
                let dup = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, dup);
            }
            8 if len > 0 => {
                let a = rng.below(len);
                let b = a + rng.below(len - a + 1);
                v.drain(a..b);
            }
            9 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                v.swap(a, b);
            }
            _ => {
                // A length-like field set to "just past the end".
                if len >= 4 {
                    let at = rng.below(len - 3);
                    let x = (len - at) as i32;
                    v[at..at + 4].copy_from_slice(&x.to_be_bytes());
                }
            }
        }
    }
    v
}

fn hexdump(b: &[u8]) -> String {
    b.iter().take(256).map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Valid samples of every record.

fn stat(n: i64) -> Stat {
    Stat {
        czxid: n,
        mzxid: n + 1,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_001,
        version: 3,
        cversion: -1,
        aversion: 0,
        ephemeral_owner: 0x0100_0000_0000_0001,
        data_length: 5,
        num_children: 2,
        pzxid: n + 2,
    }
}

fn acl() -> Vec<Acl> {
    vec![
        Acl::world(perms::ALL),
        Acl {
            perms: perms::READ,
            id: Id {
                scheme: "digest".into(),
                id: "u:Zm9v".into(),
            },
        },
    ]
}

fn create_req(path: &str) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: b"data".to_vec(),
        acl: acl(),
        flags: 3,
    }
}

fn multi_request() -> MultiRequest {
    MultiRequest {
        ops: vec![
            MultiOp::Create {
                op: OpCode::Create,
                request: create_req("/a"),
            },
            MultiOp::Create {
                op: OpCode::CreateContainer,
                request: create_req("/c"),
            },
            MultiOp::CreateTtl(CreateTtlRequest {
                path: "/t".into(),
                data: vec![],
                acl: acl(),
                flags: 5,
                ttl: 100,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/a".into(),
                version: -1,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/a".into(),
                data: vec![1],
                version: 2,
            }),
            MultiOp::Check(DeleteRequest {
                path: "/a".into(),
                version: 0,
            }),
            MultiOp::GetData(PathWatchRequest {
                path: "/a".into(),
                watch: false,
            }),
            MultiOp::GetChildren(PathWatchRequest {
                path: "/".into(),
                watch: true,
            }),
        ],
    }
}

fn multi_response() -> MultiResponse {
    MultiResponse {
        results: vec![
            MultiResult::Create { path: "/a".into() },
            MultiResult::Create2 {
                path: "/b".into(),
                stat: stat(4),
            },
            MultiResult::Delete,
            MultiResult::SetData { stat: stat(5) },
            MultiResult::Check,
            MultiResult::GetData {
                data: vec![9, 9],
                stat: stat(6),
            },
            MultiResult::GetChildren {
                children: vec!["x".into(), "y".into()],
            },
            MultiResult::Error { err: -101 },
        ],
    }
}

/// A decoder under test: its name and a function that decodes (whole-input
/// and prefix) and checks the re-encoding property, returning whether the
/// input decoded.
type Target = (&'static str, Vec<Vec<u8>>, fn(&[u8]) -> bool);

fn check_type<T: Encode + Decode + PartialEq + std::fmt::Debug>(input: &[u8]) -> bool {
    // Prefix decoding never reads past the end.
    let mut r = Reader::new(input);
    if T::decode(&mut r).is_ok() {
        assert!(r.remaining() <= input.len());
    }
    match T::from_bytes(input) {
        Ok(v) => {
            let again = T::from_bytes(&v.to_bytes());
            assert_eq!(again.as_ref(), Ok(&v), "re-encoding changed the value");
            true
        }
        Err(e) => {
            let _ = e.to_string();
            false
        }
    }
}

fn enc<T: Encode>(v: &[T]) -> Vec<Vec<u8>> {
    v.iter().map(Encode::to_bytes).collect()
}

fn targets() -> Vec<Target> {
    vec![
        ("i32", enc(&[0i32, -1, 7]), check_type::<i32>),
        ("i64", enc(&[0i64, -1, 1 << 40]), check_type::<i64>),
        ("bool", enc(&[true, false]), check_type::<bool>),
        (
            "String",
            enc(&["/a/ü".to_string(), String::new()]),
            check_type::<String>,
        ),
        ("Vec<u8>", enc(&[vec![1u8, 2, 3], vec![]]), check_type::<Vec<u8>>),
        (
            "Vec<String>",
            enc(&[vec!["a".to_string(), "bc".into()], vec![]]),
            check_type::<Vec<String>>,
        ),
        ("Vec<Acl>", enc(&[acl()]), check_type::<Vec<Acl>>),
        (
            "Id",
            enc(&[Id {
                scheme: "ip".into(),
                id: "127.0.0.1".into(),
            }]),
            check_type::<Id>,
        ),
        ("Acl", enc(&acl()), check_type::<Acl>),
        ("Stat", enc(&[stat(1)]), check_type::<Stat>),
        (
            "ConnectRequest",
            enc(&[
                ConnectRequest {
                    protocol_version: 0,
                    last_zxid_seen: 5,
                    timeout: 30_000,
                    session_id: 0,
                    passwd: vec![0; 16],
                    read_only: Some(false),
                },
                ConnectRequest {
                    passwd: vec![3; 16],
                    session_id: 77,
                    read_only: None,
                    ..Default::default()
                },
            ]),
            check_type::<ConnectRequest>,
        ),
        (
            "ConnectResponse",
            enc(&[
                ConnectResponse {
                    protocol_version: 0,
                    timeout: 4000,
                    session_id: 0x1234,
                    passwd: vec![1; 16],
                    read_only: Some(false),
                },
                ConnectResponse {
                    timeout: 0,
                    passwd: vec![],
                    read_only: None,
                    ..Default::default()
                },
            ]),
            check_type::<ConnectResponse>,
        ),
        (
            "RequestHeader",
            enc(&[RequestHeader { xid: 1, op: 4 }]),
            check_type::<RequestHeader>,
        ),
        (
            "ReplyHeader",
            enc(&[ReplyHeader {
                xid: -1,
                zxid: 9,
                err: -101,
            }]),
            check_type::<ReplyHeader>,
        ),
        (
            "WatcherEvent",
            enc(&[WatcherEvent {
                event_type: 2,
                state: 3,
                path: "/a".into(),
            }]),
            check_type::<WatcherEvent>,
        ),
        (
            "AuthPacket",
            enc(&[AuthPacket {
                auth_type: 0,
                scheme: "digest".into(),
                auth: b"u:p".to_vec(),
            }]),
            check_type::<AuthPacket>,
        ),
        (
            "SetWatches",
            enc(&[SetWatches {
                relative_zxid: 3,
                data_watches: vec!["/a".into()],
                exist_watches: vec![],
                child_watches: vec!["/b".into(), "/c".into()],
            }]),
            check_type::<SetWatches>,
        ),
        (
            "SetWatches2",
            enc(&[SetWatches2 {
                relative_zxid: 3,
                data_watches: vec!["/a".into()],
                exist_watches: vec!["/e".into()],
                child_watches: vec![],
                persistent_watches: vec!["/p".into()],
                persistent_recursive_watches: vec!["/r".into()],
            }]),
            check_type::<SetWatches2>,
        ),
        ("CreateRequest", enc(&[create_req("/a/b")]), check_type::<CreateRequest>),
        (
            "CreateTtlRequest",
            enc(&[CreateTtlRequest {
                path: "/t".into(),
                data: vec![1],
                acl: acl(),
                flags: 5,
                ttl: 1000,
            }]),
            check_type::<CreateTtlRequest>,
        ),
        (
            "PathRecord",
            enc(&[PathRecord { path: "/a".into() }]),
            check_type::<PathRecord>,
        ),
        (
            "Create2Response",
            enc(&[Create2Response {
                path: "/a".into(),
                stat: stat(2),
            }]),
            check_type::<Create2Response>,
        ),
        (
            "DeleteRequest",
            enc(&[DeleteRequest {
                path: "/a".into(),
                version: -1,
            }]),
            check_type::<DeleteRequest>,
        ),
        (
            "PathWatchRequest",
            enc(&[PathWatchRequest {
                path: "/a".into(),
                watch: true,
            }]),
            check_type::<PathWatchRequest>,
        ),
        (
            "StatResponse",
            enc(&[StatResponse { stat: stat(3) }]),
            check_type::<StatResponse>,
        ),
        (
            "GetDataResponse",
            enc(&[GetDataResponse {
                data: b"hello".to_vec(),
                stat: stat(4),
            }]),
            check_type::<GetDataResponse>,
        ),
        (
            "SetDataRequest",
            enc(&[SetDataRequest {
                path: "/a".into(),
                data: vec![7; 9],
                version: 4,
            }]),
            check_type::<SetDataRequest>,
        ),
        (
            "GetAclResponse",
            enc(&[GetAclResponse {
                acl: acl(),
                stat: stat(5),
            }]),
            check_type::<GetAclResponse>,
        ),
        (
            "SetAclRequest",
            enc(&[SetAclRequest {
                path: "/a".into(),
                acl: acl(),
                version: -1,
            }]),
            check_type::<SetAclRequest>,
        ),
        (
            "GetChildrenResponse",
            enc(&[GetChildrenResponse {
                children: vec!["a".into(), "b".into()],
            }]),
            check_type::<GetChildrenResponse>,
        ),
        (
            "GetChildren2Response",
            enc(&[GetChildren2Response {
                children: vec!["a".into()],
                stat: stat(6),
            }]),
            check_type::<GetChildren2Response>,
        ),
        (
            "MultiHeader",
            enc(&[MultiHeader {
                op_type: 1,
                done: false,
                err: -1,
            }]),
            check_type::<MultiHeader>,
        ),
        (
            "ErrorResponse",
            enc(&[ErrorResponse { err: -110 }]),
            check_type::<ErrorResponse>,
        ),
        (
            "WatchTypeRequest",
            enc(&[WatchTypeRequest {
                path: "/a".into(),
                watcher_type: 3,
            }]),
            check_type::<WatchTypeRequest>,
        ),
        (
            "AddWatchRequest",
            enc(&[AddWatchRequest {
                path: "/a".into(),
                mode: 1,
            }]),
            check_type::<AddWatchRequest>,
        ),
        (
            "GetEphemeralsResponse",
            enc(&[GetEphemeralsResponse {
                ephemerals: vec!["/e".into()],
            }]),
            check_type::<GetEphemeralsResponse>,
        ),
        (
            "GetAllChildrenNumberResponse",
            enc(&[GetAllChildrenNumberResponse { total_number: 3 }]),
            check_type::<GetAllChildrenNumberResponse>,
        ),
        (
            "ClientInfo",
            enc(&[ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into(),
            }]),
            check_type::<ClientInfo>,
        ),
        (
            "WhoAmIResponse",
            enc(&[WhoAmIResponse {
                client_info: vec![ClientInfo {
                    auth_scheme: "ip".into(),
                    user: "x".into(),
                }],
            }]),
            check_type::<WhoAmIResponse>,
        ),
        (
            "MultiRequest",
            enc(&[multi_request(), MultiRequest::default()]),
            check_type::<MultiRequest>,
        ),
        (
            "MultiResponse",
            enc(&[multi_response(), MultiResponse::default()]),
            check_type::<MultiResponse>,
        ),
    ]
}

#[test]
fn every_decoder_survives_random_and_mutated_bytes() {
    if in_own_process("fuzz_decoders::every_decoder_survives_random_and_mutated_bytes") {
        return;
    }
    count_panics();
    let t = Timing::from_env();
    let mut rng = Rng::new(seed());
    let per_type = 5_000;
    let budget = t.scale(Duration::from_secs(15));
    let start = Instant::now();
    let (mut cases, mut decoded) = (0usize, 0usize);
    for (name, samples, check) in targets() {
        for s in &samples {
            assert!(check(s), "{name}: a valid sample does not decode: {}", hexdump(s));
        }
        let (mut n, mut ok) = (0usize, 0usize);
        for i in 0..per_type {
            let input = match i % 5 {
                0 => {
                    let max = if rng.chance(10) { 512 } else { 48 };
                    rng.bytes(max)
                }
                _ => {
                    let base = rng.pick(&samples).clone();
                    mutate(&mut rng, &base)
                }
            };
            let r = catch_unwind(AssertUnwindSafe(|| check(&input)));
            match r {
                Ok(true) => ok += 1,
                Ok(false) => {}
                Err(_) => panic!("{name} panicked on input {}", hexdump(&input)),
            }
            n += 1;
        }
        println!("{name:<30} {n:>6} cases, {ok:>5} decoded");
        cases += n;
        decoded += ok;
        assert!(start.elapsed() < budget, "decoder fuzzing is too slow");
    }
    println!("decoders: {cases} cases, {decoded} decoded, in {:?}", start.elapsed());
    assert!(cases >= 100_000);
    assert_no_panics("decoders");
}

#[test]
fn frame_buffer_survives_random_streams_and_keeps_valid_ones_intact() {
    if in_own_process("fuzz_decoders::frame_buffer_survives_random_streams_and_keeps_valid_ones_intact") {
        return;
    }
    count_panics();
    let mut rng = Rng::new(seed() ^ 0xF4A3);
    let (mut streams, mut frames_out, mut errors) = (0usize, 0usize, 0usize);
    for case in 0..6_000 {
        let max = *rng.pick(&[0usize, 1, 4, 16, 100, 1024, DEFAULT_MAX_FRAME]);
        let mut fb = FrameBuffer::new(max);
        let valid = case % 2 == 0;
        let mut expected: Vec<Vec<u8>> = Vec::new();
        let stream = if valid {
            let mut s = Vec::new();
            for _ in 0..rng.below(8) {
                let body = rng.bytes(max.min(64));
                s.extend(frame(|o| o.extend_from_slice(&body)));
                expected.push(body);
            }
            s
        } else if rng.chance(50) {
            rng.bytes(256)
        } else {
            let mut s = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let body = rng.bytes(32);
                s.extend(frame(|o| o.extend_from_slice(&body)));
            }
            mutate(&mut rng, &s)
        };
        // Feed in random pieces, taking frames as they complete.
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut pos = 0;
        let mut failed = false;
        while pos < stream.len() && !failed {
            let n = 1 + rng.below(stream.len() - pos);
            fb.extend(&stream[pos..pos + n]);
            pos += n;
            let _ = fb.peek4().map(four_letter_word);
            loop {
                match fb.next_frame() {
                    Ok(Some(f)) => {
                        assert!(f.len() <= max, "a frame over the limit came out");
                        got.push(f);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = e.to_string();
                        failed = true;
                        errors += 1;
                        break;
                    }
                }
            }
        }
        assert!(fb.buffered() <= stream.len());
        if valid {
            assert!(!failed, "a valid stream was refused (max {max})");
            assert_eq!(got, expected, "frames changed in transit");
        }
        frames_out += got.len();
        // The blocking reader on the same bytes.
        let mut cursor: &[u8] = &stream;
        while let Ok(f) = read_frame(&mut cursor, max) {
            assert!(f.len() <= max);
        }
        streams += 1;
    }
    for _ in 0..20_000 {
        let w = [rng.next() as u8, rng.next() as u8, rng.next() as u8, rng.next() as u8];
        if let Some(word) = four_letter_word(w) {
            assert_eq!(word.as_bytes(), &w);
        }
    }
    println!("frame buffer: {streams} streams, {frames_out} frames out, {errors} refused; 20000 four-letter probes");
    assert_no_panics("frame buffer");
}

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
