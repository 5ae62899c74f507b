//! The decoder fuzz suite, as proptest properties: the wire decoders of
//! zk-proto never panic, allocate only in proportion to their input, refuse a
//! declared length longer than the input before allocating for it, and
//! whatever decodes re-encodes to the same value; the frame buffer keeps valid
//! streams intact and refuses a frame over its limit before allocating for it.
//! (The client's and the embedded server's side of the connection, fed the
//! same kinds of bytes over TCP, are zk-framework's `fuzz_wire` suite.)
//!
//! The strategies (mutations of valid encodings, the records' valid samples)
//! and the configuration are `zk_test_support::fuzz`: a fixed seed, so a
//! failure reproduces, printed minimal (proptest shrinks it);
//! `PROPTEST_RNG_SEED=N` explores other cases, `PROPTEST_CASES=N` changes how
//! many. Allocations are measured by this binary's global allocator
//! (`crate::alloc`).

use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use zk_proto::frame::{four_letter_word, frame, read_frame, FrameBuffer, DEFAULT_MAX_FRAME, FOUR_LETTER_WORDS};
use zk_proto::jute::{Decode, DecodeError, Encode, Reader};
use zk_proto::*;
use zk_test_support::fuzz::{
    acl, bytes, config, create_req, hexdump, multi_request, multi_response, mutate, mutation, stat, Edit,
};

use crate::alloc::largest_during;

/// A decoder under test: its name, valid encodings, and a function that
/// decodes an input (whole and as a prefix) and checks the properties,
/// returning the value's encoding when the input decoded whole.
struct Target {
    name: &'static str,
    samples: Vec<Vec<u8>>,
    check: Check,
}

type Check = fn(&[u8]) -> Result<Option<Vec<u8>>, TestCaseError>;

/// The largest value a decoder may hold per element of a vector: any single
/// allocation of a decode is at most this much per byte of input (a vector's
/// count is refused beyond the bytes left, and each element takes at least
/// one), plus four elements (a growing vector's first capacity).
fn per_input_byte() -> usize {
    use std::mem::size_of;
    [
        size_of::<MultiOp>(),
        size_of::<MultiResult>(),
        size_of::<Acl>(),
        size_of::<ClientInfo>(),
        size_of::<String>(),
        // A lossy UTF-8 string: three bytes for each invalid one.
        3,
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

/// The bound of every single allocation while decoding `len` bytes.
fn allocation_bound(len: usize) -> usize {
    per_input_byte() * (len + 4)
}

fn check_type<T: Encode + Decode + PartialEq + std::fmt::Debug>(
    input: &[u8],
) -> Result<Option<Vec<u8>>, TestCaseError> {
    // As a prefix: never reads past the end, allocates within the bound.
    let mut r = Reader::new(input);
    let (_, largest) = largest_during(|| T::decode(&mut r).map(drop));
    prop_assert!(r.remaining() <= input.len());
    prop_assert!(
        largest <= allocation_bound(input.len()),
        "one allocation of {largest} bytes decoding {} input bytes (bound {})",
        input.len(),
        allocation_bound(input.len())
    );
    match T::from_bytes(input) {
        Ok(v) => {
            // Round trip: what decodes re-encodes to the same value.
            let encoded = v.to_bytes();
            let again = T::from_bytes(&encoded);
            prop_assert_eq!(again.as_ref(), Ok(&v), "re-encoding changed the value");
            Ok(Some(encoded))
        }
        Err(e) => {
            let _ = e.to_string();
            Ok(None)
        }
    }
}

fn enc<T: Encode>(v: &[T]) -> Vec<Vec<u8>> {
    v.iter().map(Encode::to_bytes).collect()
}

fn all_targets() -> Vec<Target> {
    let v: Vec<(&'static str, Vec<Vec<u8>>, Check)> = vec![
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
            "ReconfigRequest",
            enc(&[
                ReconfigRequest {
                    joining_servers: Some("server.4=127.0.0.1:2890:3890:participant;127.0.0.1:2184".into()),
                    leaving_servers: Some("3".into()),
                    new_members: None,
                    cur_config_id: 0x1_0000_0005,
                },
                ReconfigRequest {
                    joining_servers: None,
                    leaving_servers: None,
                    new_members: Some(String::new()),
                    cur_config_id: -1,
                },
            ]),
            check_type::<ReconfigRequest>,
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
    ];
    v.into_iter()
        .map(|(name, samples, check)| Target { name, samples, check })
        .collect()
}

/// Cases per property. A decoder case runs every decoder (43) on its input:
/// 10,000 cases are 430,000 decodes. The suite takes about a second on a
/// loaded 2-core machine (debug build).
const CASES_DECODERS: u32 = 10_000;
const CASES_LENGTHS: u32 = 5_000;
const CASES_FRAMES: u32 = 5_000;
const CASES_WORDS: u32 = 10_000;

fn targets() -> &'static [Target] {
    static TARGETS: OnceLock<Vec<Target>> = OnceLock::new();
    TARGETS.get_or_init(all_targets)
}

/// One case of the decoders: random bytes (mostly short, one in ten up to
/// 512), given to every decoder, or a mutation, applied to a valid sample of
/// every decoder (the edits' positions are taken within each sample).
#[derive(Debug, Clone)]
enum Input {
    Random(Vec<u8>),
    Mutated(Index, Vec<Edit>),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        9 => bytes(48).prop_map(Input::Random),
        1 => bytes(512).prop_map(Input::Random),
        40 => (any::<Index>(), mutation()).prop_map(|(i, m)| Input::Mutated(i, m)),
    ]
}

fn bytes_of(t: &Target, input: &Input) -> Vec<u8> {
    match input {
        Input::Random(b) => b.clone(),
        Input::Mutated(i, m) => mutate(&t.samples[i.index(t.samples.len())], m),
    }
}

/// Every valid sample of every decoder decodes, and re-encodes byte for byte.
#[test]
fn every_valid_sample_decodes_and_re_encodes_to_its_bytes() {
    for t in targets() {
        for s in &t.samples {
            match (t.check)(s) {
                Ok(Some(again)) => assert_eq!(&again, s, "{}: a valid sample re-encodes to other bytes", t.name),
                Ok(None) => panic!("{}: a valid sample does not decode: {}", t.name, hexdump(s)),
                Err(e) => panic!("{}: {e} on a valid sample: {}", t.name, hexdump(s)),
            }
        }
    }
}

proptest! {
    #![proptest_config(config(CASES_DECODERS))]

    /// Every decoder (every record, the multi request and response, the connect
    /// request and response, the primitives) on random bytes and on mutations
    /// of its valid encodings: no panic; as a prefix it never reads past the
    /// end; no single allocation beyond `allocation_bound` of the input's
    /// length; whatever decodes whole re-encodes to bytes that decode to the
    /// same value; an error's message is written.
    #[test]
    fn every_decoder_survives_random_and_mutated_bytes(input in input()) {
        for t in targets() {
            let bytes = bytes_of(t, &input);
            (t.check)(&bytes).map_err(|e| TestCaseError::fail(format!("{}: {e} on {}", t.name, hexdump(&bytes))))?;
        }
    }

}

proptest! {
    #![proptest_config(config(CASES_LENGTHS))]

    /// A length or count field declared longer than the bytes left (or
    /// negative, other than -1) is refused with `BadLength` before anything of
    /// its size is allocated: no allocation beyond the input's own size, for a
    /// declared length up to `i32::MAX`. For the reader's buffer, string and
    /// count, and for records that start with one (data, a path, children, an
    /// ACL).
    #[test]
    fn a_declared_length_over_the_input_is_refused_before_allocating(
        which in 0..LENGTH_FIRST.len(),
        tail in bytes(64),
        declared in prop_oneof![3 => any::<i32>(), 1 => select(&[i32::MAX, i32::MAX - 3, 0x100000, -2, i32::MIN][..])],
    ) {
        prop_assume!(declared != -1 && (declared < 0 || declared as usize > tail.len()));
        let mut input = declared.to_be_bytes().to_vec();
        input.extend_from_slice(&tail);
        let (name, decode) = LENGTH_FIRST[which];
        let (r, largest) = largest_during(|| decode(&input));
        prop_assert_eq!(r, Err(DecodeError::BadLength(declared)), "{}", name);
        prop_assert!(
            largest <= input.len(),
            "{name}: one allocation of {largest} bytes for a declared length of {declared} ({} input bytes)",
            input.len()
        );
    }

}

proptest! {
    #![proptest_config(config(CASES_FRAMES))]

    /// A valid stream of frames (bodies within the limit), fed to the frame
    /// buffer in random pieces, comes out frame for frame and none is refused;
    /// nothing stays buffered; the blocking reader reads the same frames.
    #[test]
    fn valid_frame_streams_come_out_frame_for_frame(
        (max, bodies) in select(MAXES).prop_flat_map(|max| (Just(max), vec(bytes(max.min(64)), 0..8))),
        cuts in vec(any::<Index>(), 0..16),
    ) {
        let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(|o| o.extend_from_slice(b))).collect();
        let (got, refused, fb) = feed(max, &stream, &cuts);
        prop_assert!(!refused, "a valid stream was refused (max {})", max);
        prop_assert_eq!(&got, &bodies, "frames changed in transit");
        prop_assert_eq!(fb.buffered(), 0);
        let mut cursor: &[u8] = &stream;
        let mut read = Vec::new();
        while let Ok(f) = read_frame(&mut cursor, max) {
            read.push(f);
        }
        prop_assert_eq!(&read, &bodies, "the blocking reader read other frames");
    }

}

proptest! {
    #![proptest_config(config(CASES_FRAMES))]

    /// Random bytes, and mutated streams of valid frames, fed to the frame
    /// buffer in random pieces: no panic, no frame over the limit comes out,
    /// it never holds more than it was fed; the blocking reader on the same
    /// bytes never returns a frame over the limit nor allocates beyond it.
    #[test]
    fn the_frame_buffer_survives_random_and_mutated_streams(
        max in select(MAXES),
        stream in prop_oneof![
            bytes(256),
            (vec(bytes(32), 1..=4), mutation()).prop_map(|(bodies, m)| {
                let s: Vec<u8> = bodies.iter().flat_map(|b| frame(|o| o.extend_from_slice(b))).collect();
                mutate(&s, &m)
            }),
        ],
        cuts in vec(any::<Index>(), 0..16),
    ) {
        let (got, _, fb) = feed(max, &stream, &cuts);
        for f in &got {
            prop_assert!(f.len() <= max, "a frame over the limit came out");
        }
        prop_assert!(fb.buffered() <= stream.len());
        let mut cursor: &[u8] = &stream;
        loop {
            let (r, largest) = largest_during(|| read_frame(&mut cursor, max));
            // The frame's bytes at most, or the error's few.
            prop_assert!(largest <= max.max(64), "read_frame allocated {} bytes (max {})", largest, max);
            match r {
                Ok(f) => prop_assert!(f.len() <= max),
                Err(_) => break,
            }
        }
    }

}

proptest! {
    #![proptest_config(config(CASES_LENGTHS))]

    /// A frame whose length is over the limit (or negative) is refused, by
    /// the frame buffer and by the blocking reader, before anything of its
    /// size is allocated; the frame buffer keeps refusing it.
    #[test]
    fn a_frame_length_over_the_limit_is_refused_before_allocating(
        (max, declared) in select(MAXES).prop_flat_map(|max| {
            let over = (max as i64 + 1).min(i32::MAX as i64) as i32;
            (Just(max), prop_oneof![3 => over..=i32::MAX, 1 => i32::MIN..0])
        }),
        tail in bytes(64),
    ) {
        prop_assume!(declared < 0 || declared as usize > max);
        let mut stream = declared.to_be_bytes().to_vec();
        stream.extend_from_slice(&tail);
        let mut fb = FrameBuffer::new(max);
        fb.extend(&stream);
        for _ in 0..2 {
            let (r, largest) = largest_during(|| fb.next_frame());
            prop_assert!(r.is_err(), "a frame of {} bytes was not refused (max {})", declared, max);
            prop_assert_eq!(largest, 0, "the frame buffer allocated {} bytes to refuse it", largest);
        }
        let mut cursor: &[u8] = &stream;
        let (r, largest) = largest_during(|| read_frame(&mut cursor, max).map(drop));
        let e = r.expect_err("read_frame refuses it");
        prop_assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        prop_assert!(largest <= 64, "read_frame allocated {} bytes to refuse it", largest);
    }

}

proptest! {
    #![proptest_config(config(CASES_WORDS))]

    /// `four_letter_word` names a word only for that word's own four bytes:
    /// on random bytes and on the words themselves with one byte changed.
    #[test]
    fn a_four_letter_word_is_named_only_for_its_own_bytes(
        w in prop_oneof![
            any::<[u8; 4]>(),
            (select(FOUR_LETTER_WORDS), 0usize..4, any::<u8>()).prop_map(|(word, i, b)| {
                let mut w: [u8; 4] = word.as_bytes().try_into().expect("four letters");
                w[i] = b;
                w
            }),
        ],
    ) {
        if let Some(word) = four_letter_word(w) {
            prop_assert_eq!(word.as_bytes(), &w);
        }
    }
}

/// Every four-letter word is named for its own bytes.
#[test]
fn every_four_letter_word_is_named() {
    for word in FOUR_LETTER_WORDS {
        let w: [u8; 4] = word.as_bytes().try_into().expect("four letters");
        assert_eq!(four_letter_word(w), Some(*word));
    }
}

/// The frame limits the frame buffer properties run with.
const MAXES: &[usize] = &[0, 1, 4, 16, 100, 1024, DEFAULT_MAX_FRAME];

/// Feeds `stream` to a frame buffer of limit `max` in pieces (each cut takes
/// 1 to all of the bytes left; the rest goes in one piece), taking frames as
/// they complete, peeking at each piece's first four bytes as the server does
/// (four-letter words). Returns the frames, whether one was refused (the
/// feeding stops there), and the buffer.
fn feed(max: usize, stream: &[u8], cuts: &[Index]) -> (Vec<Vec<u8>>, bool, FrameBuffer) {
    let mut fb = FrameBuffer::new(max);
    let mut got = Vec::new();
    let mut pos = 0;
    let mut cuts = cuts.iter();
    while pos < stream.len() {
        let n = match cuts.next() {
            Some(c) => 1 + c.index(stream.len() - pos),
            None => stream.len() - pos,
        };
        fb.extend(&stream[pos..pos + n]);
        pos += n;
        let _ = fb.peek4().map(four_letter_word);
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => got.push(f),
                Ok(None) => break,
                Err(e) => {
                    let _ = e.to_string();
                    return (got, true, fb);
                }
            }
        }
    }
    (got, false, fb)
}

/// Decoders whose input starts with a length or a count.
type LengthFirst = (&'static str, fn(&[u8]) -> Result<(), DecodeError>);

const LENGTH_FIRST: &[LengthFirst] = &[
    ("Reader::read_buffer", |b| Reader::new(b).read_buffer().map(drop)),
    ("Reader::read_ustring", |b| Reader::new(b).read_ustring().map(drop)),
    ("Reader::read_count", |b| Reader::new(b).read_count().map(drop)),
    ("Vec<u8>", |b| Vec::<u8>::from_bytes(b).map(drop)),
    ("String", |b| String::from_bytes(b).map(drop)),
    ("Vec<String>", |b| Vec::<String>::from_bytes(b).map(drop)),
    ("Vec<Acl>", |b| Vec::<Acl>::from_bytes(b).map(drop)),
    ("GetDataResponse", |b| GetDataResponse::from_bytes(b).map(drop)),
    ("GetChildrenResponse", |b| GetChildrenResponse::from_bytes(b).map(drop)),
    ("PathRecord", |b| PathRecord::from_bytes(b).map(drop)),
    ("SetAclRequest", |b| SetAclRequest::from_bytes(b).map(drop)),
    ("GetAclResponse", |b| GetAclResponse::from_bytes(b).map(drop)),
];
