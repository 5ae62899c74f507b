//! The wire records' checks: every record of zk-proto (`records`), and the
//! client's decoding of what a server sends (`client_reply`).

use std::fmt::Debug;

use zk_proto::jute::{Decode, DecodeError, Encode, Reader};
use zk_proto::*;

use crate::alloc::largest_during;
use crate::Outcome;

/// The largest value a decoder may hold per element of a vector: any single
/// allocation of a decode is at most this much per byte of input (a vector's
/// count is refused beyond the bytes left, and each element takes at least
/// one), plus four elements (a growing vector's first capacity).
fn per_input_byte() -> usize {
    use std::mem::size_of;
    [
        size_of::<MultiOp>(),
        size_of::<MultiOpOf<Option<Vec<u8>>>>(),
        size_of::<MultiResult>(),
        size_of::<MultiResultOf<Option<Vec<u8>>>>(),
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
pub fn allocation_bound(len: usize) -> usize {
    per_input_byte() * (len + 4)
}

/// Decodes a `T` from the start of `input` and checks it: it never reads
/// past the end; no single allocation over [`allocation_bound`] of the
/// input's length; what decodes re-encodes to bytes that decode whole to the
/// same value, and encode again to the same bytes (the canonical form); an
/// error's message is written. Returns the value's encoding and how many
/// bytes of `input` it took, when it decoded.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// use zk_proto::{Encode, PathRecord};
/// let bytes = PathRecord { path: "/a".into() }.to_bytes();
/// let (again, used) = zk_fuzz::decode::check_type::<PathRecord>(&bytes).unwrap().unwrap();
/// assert_eq!((again, used), (bytes.clone(), bytes.len()));
/// assert_eq!(zk_fuzz::decode::check_type::<PathRecord>(&[0, 0]), Ok(None));
/// # }
/// ```
pub fn check_type<T: Encode + Decode + PartialEq + Debug>(input: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let mut r = Reader::new(input);
    let (decoded, largest) = largest_during(|| T::decode(&mut r));
    if r.remaining() > input.len() {
        return Err(format!("read past the end: {} left of {}", r.remaining(), input.len()));
    }
    let bound = allocation_bound(input.len());
    if largest > bound {
        return Err(format!(
            "one allocation of {largest} bytes decoding {} input bytes (bound {bound})",
            input.len()
        ));
    }
    match decoded {
        Ok(v) => {
            let used = input.len() - r.remaining();
            let encoded = v.to_bytes();
            match T::from_bytes(&encoded) {
                Ok(again) if again == v => {}
                Ok(again) => return Err(format!("re-encoding changed the value: {v:?} became {again:?}")),
                Err(e) => return Err(format!("the re-encoding of {v:?} does not decode: {e}")),
            }
            if encoded.len() > used.saturating_mul(3) + 4 {
                return Err(format!("{used} bytes decoded to a value of {} bytes", encoded.len()));
            }
            Ok(Some((encoded, used)))
        }
        Err(e) => {
            let _ = e.to_string();
            Ok(None)
        }
    }
}

/// One decoder of the `records` target.
type Decoder = (&'static str, fn(&[u8]) -> Result<Option<(Vec<u8>, usize)>, String>);

/// Every record of zk-proto, the primitives and the nullable forms the
/// embedded server reads requests with.
pub const RECORDS: &[Decoder] = &[
    ("i32", check_type::<i32>),
    ("i64", check_type::<i64>),
    ("bool", check_type::<bool>),
    ("String", check_type::<String>),
    ("Option<String>", check_type::<Option<String>>),
    ("Vec<u8>", check_type::<Vec<u8>>),
    ("Option<Vec<u8>>", check_type::<Option<Vec<u8>>>),
    ("Vec<String>", check_type::<Vec<String>>),
    ("Vec<Acl>", check_type::<Vec<Acl>>),
    ("Id", check_type::<Id>),
    ("Acl", check_type::<Acl>),
    ("Stat", check_type::<Stat>),
    ("ConnectRequest", check_type::<ConnectRequest>),
    ("ConnectResponse", check_type::<ConnectResponse>),
    ("RequestHeader", check_type::<RequestHeader>),
    ("ReplyHeader", check_type::<ReplyHeader>),
    ("WatcherEvent", check_type::<WatcherEvent>),
    ("AuthPacket", check_type::<AuthPacket>),
    ("SetWatches", check_type::<SetWatches>),
    ("SetWatches2", check_type::<SetWatches2>),
    ("CreateRequest", check_type::<CreateRequest>),
    (
        "CreateRequest (server)",
        check_type::<CreateRequestOf<String, Option<Vec<u8>>, Vec<Acl>>>,
    ),
    ("CreateTtlRequest", check_type::<CreateTtlRequest>),
    (
        "CreateTtlRequest (server)",
        check_type::<CreateTtlRequestOf<String, Option<Vec<u8>>, Vec<Acl>>>,
    ),
    ("PathRecord", check_type::<PathRecord>),
    ("PathRecord (server)", check_type::<PathRecordOf<Option<String>>>),
    ("Create2Response", check_type::<Create2Response>),
    ("DeleteRequest", check_type::<DeleteRequest>),
    ("DeleteRequest (server)", check_type::<DeleteRequestOf<Option<String>>>),
    ("PathWatchRequest", check_type::<PathWatchRequest>),
    ("StatResponse", check_type::<StatResponse>),
    ("GetDataResponse", check_type::<GetDataResponse>),
    ("SetDataRequest", check_type::<SetDataRequest>),
    (
        "SetDataRequest (server)",
        check_type::<SetDataRequestOf<Option<String>, Option<Vec<u8>>>>,
    ),
    ("GetAclResponse", check_type::<GetAclResponse>),
    ("SetAclRequest", check_type::<SetAclRequest>),
    (
        "SetAclRequest (server)",
        check_type::<SetAclRequestOf<Option<String>, Vec<Acl>>>,
    ),
    ("GetChildrenResponse", check_type::<GetChildrenResponse>),
    ("GetChildren2Response", check_type::<GetChildren2Response>),
    ("MultiHeader", check_type::<MultiHeader>),
    ("ErrorResponse", check_type::<ErrorResponse>),
    ("WatchTypeRequest", check_type::<WatchTypeRequest>),
    ("AddWatchRequest", check_type::<AddWatchRequest>),
    (
        "AddWatchRequest (server)",
        check_type::<AddWatchRequestOf<Option<String>>>,
    ),
    ("GetEphemeralsResponse", check_type::<GetEphemeralsResponse>),
    (
        "GetAllChildrenNumberResponse",
        check_type::<GetAllChildrenNumberResponse>,
    ),
    ("ClientInfo", check_type::<ClientInfo>),
    ("WhoAmIResponse", check_type::<WhoAmIResponse>),
    ("MultiRequest", check_type::<MultiRequest>),
    ("MultiRequest (server)", check_type::<MultiRequestOf<Option<Vec<u8>>>>),
    ("MultiResponse", check_type::<MultiResponse>),
    ("MultiResponse (server)", check_type::<MultiResponseOf<Option<Vec<u8>>>>),
    ("ReconfigRequest", check_type::<ReconfigRequest>),
    ("SaslToken", check_type::<zk_proto::sasl::SaslToken>),
];

/// The `records` target: the first byte picks a decoder of [`RECORDS`], the
/// rest is its input ([`check_type`]'s properties; for a record that starts
/// with a length or a count ([`LENGTH_FIRST`]), one declared over the input
/// is refused with `BadLength` and no allocation beyond the input's size).
///
/// # Errors
///
/// The property that failed, with the decoder's name.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// assert!(zk_fuzz::decode::records(&[0, 0, 0, 0, 7]).is_ok());
/// # }
/// ```
pub fn records(input: &[u8]) -> Outcome {
    let Some((&which, rest)) = input.split_first() else {
        return Ok(());
    };
    let (name, check) = RECORDS[which as usize % RECORDS.len()];
    check(rest).map(drop).map_err(|e| format!("{name}: {e}"))?;
    if let Some((_, decode)) = LENGTH_FIRST.iter().find(|(n, _)| *n == name) {
        length_first(name, *decode, rest)?;
    }
    Ok(())
}

/// A decoder whose input starts with a length or a count.
type LengthFirst = (&'static str, fn(&[u8]) -> Result<(), DecodeError>);

/// The records of [`RECORDS`] whose encoding starts with a length or a count
/// (data, a string, a path, children, an ACL).
pub const LENGTH_FIRST: &[LengthFirst] = &[
    ("String", |b| String::from_bytes(b).map(drop)),
    ("Option<String>", |b| Option::<String>::from_bytes(b).map(drop)),
    ("Vec<u8>", |b| Vec::<u8>::from_bytes(b).map(drop)),
    ("Option<Vec<u8>>", |b| Option::<Vec<u8>>::from_bytes(b).map(drop)),
    ("Vec<String>", |b| Vec::<String>::from_bytes(b).map(drop)),
    ("Vec<Acl>", |b| Vec::<Acl>::from_bytes(b).map(drop)),
    ("PathRecord", |b| PathRecord::from_bytes(b).map(drop)),
    ("GetDataResponse", |b| GetDataResponse::from_bytes(b).map(drop)),
    ("GetChildrenResponse", |b| GetChildrenResponse::from_bytes(b).map(drop)),
    ("SetAclRequest", |b| SetAclRequest::from_bytes(b).map(drop)),
    ("GetAclResponse", |b| GetAclResponse::from_bytes(b).map(drop)),
];

/// A length or count declared longer than the bytes after it (or negative,
/// other than -1 for null) is refused with `BadLength` of that value before
/// anything of its size is allocated: no allocation beyond the input's own
/// size.
fn length_first(name: &str, decode: fn(&[u8]) -> Result<(), DecodeError>, input: &[u8]) -> Outcome {
    let Some(head) = input.get(..4) else { return Ok(()) };
    let declared = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if declared == -1 || (declared >= 0 && declared as usize <= input.len() - 4) {
        return Ok(());
    }
    let (r, largest) = largest_during(|| decode(input));
    if r != Err(DecodeError::BadLength(declared)) {
        return Err(format!(
            "{name}: a declared length of {declared} over {} bytes gave {r:?}",
            input.len() - 4
        ));
    }
    if largest > input.len() {
        return Err(format!(
            "{name}: one allocation of {largest} bytes to refuse a declared length of {declared} ({} input bytes)",
            input.len()
        ));
    }
    Ok(())
}

/// What the client awaits: the body it decodes a successful reply with.
/// Replies whose body the client does not read (delete, setWatches, auth...)
/// are `None`.
pub const AWAITED: &[(&str, Option<Decoder>)] = &[
    ("create", Some(("String", check_type::<String>))),
    ("create2", Some(("Create2Response", check_type::<Create2Response>))),
    ("delete", None),
    ("exists", Some(("Stat", check_type::<Stat>))),
    ("getData", Some(("GetDataResponse", check_type::<GetDataResponse>))),
    ("setData", Some(("Stat", check_type::<Stat>))),
    ("getACL", Some(("GetAclResponse", check_type::<GetAclResponse>))),
    ("setACL", Some(("Stat", check_type::<Stat>))),
    (
        "getChildren",
        Some(("GetChildrenResponse", check_type::<GetChildrenResponse>)),
    ),
    (
        "getChildren2",
        Some(("GetChildren2Response", check_type::<GetChildren2Response>)),
    ),
    ("sync", Some(("String", check_type::<String>))),
    ("multi", Some(("MultiResponse", check_type::<MultiResponse>))),
    (
        "getEphemerals",
        Some(("GetEphemeralsResponse", check_type::<GetEphemeralsResponse>)),
    ),
    (
        "getAllChildrenNumber",
        Some((
            "GetAllChildrenNumberResponse",
            check_type::<GetAllChildrenNumberResponse>,
        )),
    ),
    ("whoAmI", Some(("WhoAmIResponse", check_type::<WhoAmIResponse>))),
    ("setWatches", None),
];

/// The `client_reply` target: what a client decodes from a server. The first
/// byte picks what the client awaits: the handshake's answer (a
/// `ConnectResponse`, for an even byte over [`AWAITED`]'s length) or a reply
/// to one of [`AWAITED`]; the rest is a frame's payload. A reply is a
/// `ReplyHeader` (16 bytes, re-encoded byte for byte), then by its xid a
/// watch event (-1, a `WatcherEvent`), a ping's answer (-2, nothing), or,
/// when the error code is 0, the awaited body; every record decoded has
/// [`check_type`]'s properties.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// use zk_proto::{Encode, ReplyHeader};
/// let mut input = vec![3]; // awaiting an exists
/// input.extend(ReplyHeader { xid: 1, zxid: 5, err: -101 }.to_bytes());
/// assert!(zk_fuzz::decode::client_reply(&input).is_ok());
/// # }
/// ```
pub fn client_reply(input: &[u8]) -> Outcome {
    let Some((&which, payload)) = input.split_first() else {
        return Ok(());
    };
    let which = which as usize;
    if which >= AWAITED.len() && which % 2 == 0 {
        return check_type::<ConnectResponse>(payload)
            .map(drop)
            .map_err(|e| format!("ConnectResponse: {e}"));
    }
    let (op, body) = AWAITED[which % AWAITED.len()];
    let Some((header, used)) = check_type::<ReplyHeader>(payload).map_err(|e| format!("ReplyHeader: {e}"))? else {
        return Ok(());
    };
    if header != payload[..used] || used != 16 {
        return Err(format!("a ReplyHeader of {used} bytes re-encoded to other bytes"));
    }
    let Ok(h) = ReplyHeader::from_bytes(&header) else {
        return Err("a ReplyHeader's encoding does not decode".into());
    };
    let rest = &payload[used..];
    match (h.xid, body) {
        (-1, _) => check_type::<WatcherEvent>(rest)
            .map(drop)
            .map_err(|e| format!("WatcherEvent: {e}")),
        (-2, _) => Ok(()),
        (_, Some((name, check))) if h.err == 0 => check(rest).map(drop).map_err(|e| format!("{op}: {name}: {e}")),
        _ => Ok(()),
    }
}
