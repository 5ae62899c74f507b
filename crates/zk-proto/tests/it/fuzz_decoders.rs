//! Property tests with a seeded, deterministic PRNG (SplitMix64; no extra
//! crate): the wire decoders never panic (the client's and the server's side
//! of the connection are zk-framework's `fuzz_decoders` suite).
//!
//! * Every `Decode` impl of `zk_proto` (every record, the multi request and
//!   response, the connect request and response, the primitives) gets random
//!   bytes and mutations of valid encodings; whatever decodes must re-encode
//!   to something that decodes to the same value.
//! * `FrameBuffer` (and `read_frame`) gets random streams and valid frame
//!   streams cut at random points; valid streams must come out frame for frame.
//!
//! A panic hook counts panics on every thread; each test asserts none
//! happened, alone in a process of its own (`support::in_own_process`), as in
//! zk-framework's suite. `ZK_FUZZ_SEED` changes the seed (default 1); every
//! case count is printed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::support::fuzz::*;
use crate::support::in_own_process;
use zk_proto::frame::{four_letter_word, frame, read_frame, FrameBuffer, DEFAULT_MAX_FRAME};
use zk_proto::jute::{Decode, Encode, Reader};
use zk_proto::*;
use zk_testing::Timing;

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
