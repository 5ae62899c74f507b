//! The corpus' seeds: valid inputs of every target, from valid encodings of
//! every record. `cargo run -p zk-fuzz --bin zk-fuzz-seeds` writes them to
//! `fuzz/corpus/<target>/seed-<name>`; the regression test checks that the
//! corpus holds every one, byte for byte (an encoding that changes asks for
//! new seeds).

use zk_proto::frame::{frame, request_frame};
use zk_proto::*;

use crate::decode::{AWAITED, RECORDS};

/// A `Stat` whose zxids start at `n`.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::stat(5).mzxid, 6);
/// ```
pub fn stat(n: i64) -> Stat {
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

/// An ACL of two entries (world, and a digest user reading).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::acl().len(), 2);
/// ```
pub fn acl() -> Vec<Acl> {
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

/// A create request for `path` with data, [`acl`] and flags 3.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::create_req("/a").path, "/a");
/// ```
pub fn create_req(path: &str) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: b"data".to_vec(),
        acl: acl(),
        flags: 3,
    }
}

/// A multi request with one op of every kind a multi carries.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::multi_request().ops.len(), 8);
/// ```
pub fn multi_request() -> MultiRequest {
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

/// A multi response with one result of every kind.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::multi_response().results.len(), 8);
/// ```
pub fn multi_response() -> MultiResponse {
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

fn connect_request() -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout: 30_000,
        session_id: 0,
        passwd: vec![0; 16],
        read_only: Some(false),
    }
}

fn connect_response() -> ConnectResponse {
    ConnectResponse {
        protocol_version: 0,
        timeout: 4000,
        session_id: 0x1234,
        passwd: vec![1; 16],
        read_only: Some(false),
    }
}

/// A valid encoding of each record of [`RECORDS`], by name.
fn record_samples() -> Vec<(&'static str, Vec<u8>)> {
    let e = |v: &dyn frame::EncodeDyn| {
        let mut out = Vec::new();
        v.encode_dyn(&mut out);
        out
    };
    vec![
        ("i32", e(&7i32)),
        ("i64", e(&(1i64 << 40))),
        ("bool", e(&true)),
        ("String", e(&"/a/ü".to_string())),
        ("Option<String>", e(&Option::<String>::None)),
        ("Vec<u8>", e(&vec![1u8, 2, 3])),
        ("Option<Vec<u8>>", e(&Option::<Vec<u8>>::None)),
        ("Vec<String>", e(&vec!["a".to_string(), "bc".into()])),
        ("Vec<Acl>", e(&acl())),
        (
            "Id",
            e(&Id {
                scheme: "ip".into(),
                id: "127.0.0.1".into(),
            }),
        ),
        ("Acl", e(&acl()[1])),
        ("Stat", e(&stat(1))),
        ("ConnectRequest", e(&connect_request())),
        ("ConnectResponse", e(&connect_response())),
        ("RequestHeader", e(&RequestHeader { xid: 1, op: 4 })),
        (
            "ReplyHeader",
            e(&ReplyHeader {
                xid: -1,
                zxid: 9,
                err: -101,
            }),
        ),
        (
            "WatcherEvent",
            e(&WatcherEvent {
                event_type: 2,
                state: 3,
                path: "/a".into(),
            }),
        ),
        (
            "AuthPacket",
            e(&AuthPacket {
                auth_type: 0,
                scheme: "digest".into(),
                auth: b"u:p".to_vec(),
            }),
        ),
        (
            "SetWatches",
            e(&SetWatches {
                relative_zxid: 3,
                data_watches: vec!["/a".into()],
                exist_watches: vec![],
                child_watches: vec!["/b".into(), "/c".into()],
            }),
        ),
        (
            "SetWatches2",
            e(&SetWatches2 {
                relative_zxid: 3,
                data_watches: vec!["/a".into()],
                exist_watches: vec!["/e".into()],
                child_watches: vec![],
                persistent_watches: vec!["/p".into()],
                persistent_recursive_watches: vec!["/r".into()],
            }),
        ),
        ("CreateRequest", e(&create_req("/a/b"))),
        ("CreateRequest (server)", e(&create_req("/a"))),
        (
            "CreateTtlRequest",
            e(&CreateTtlRequest {
                path: "/t".into(),
                data: vec![1],
                acl: acl(),
                flags: 5,
                ttl: 1000,
            }),
        ),
        (
            "CreateTtlRequest (server)",
            e(&CreateTtlRequest {
                path: "/t".into(),
                data: vec![],
                acl: acl(),
                flags: 6,
                ttl: 1,
            }),
        ),
        ("PathRecord", e(&PathRecord { path: "/a".into() })),
        ("PathRecord (server)", e(&Option::<String>::None)),
        (
            "Create2Response",
            e(&Create2Response {
                path: "/a".into(),
                stat: stat(2),
            }),
        ),
        (
            "DeleteRequest",
            e(&DeleteRequest {
                path: "/a".into(),
                version: -1,
            }),
        ),
        (
            "DeleteRequest (server)",
            e(&DeleteRequest {
                path: "/a".into(),
                version: 3,
            }),
        ),
        (
            "PathWatchRequest",
            e(&PathWatchRequest {
                path: "/a".into(),
                watch: true,
            }),
        ),
        ("StatResponse", e(&StatResponse { stat: stat(3) })),
        (
            "GetDataResponse",
            e(&GetDataResponse {
                data: b"hello".to_vec(),
                stat: stat(4),
            }),
        ),
        (
            "SetDataRequest",
            e(&SetDataRequest {
                path: "/a".into(),
                data: vec![7; 9],
                version: 4,
            }),
        ),
        (
            "SetDataRequest (server)",
            e(&SetDataRequestOf::<Option<String>, Option<Vec<u8>>> {
                path: Some("/a".into()),
                data: None,
                version: -1,
            }),
        ),
        (
            "GetAclResponse",
            e(&GetAclResponse {
                acl: acl(),
                stat: stat(5),
            }),
        ),
        (
            "SetAclRequest",
            e(&SetAclRequest {
                path: "/a".into(),
                acl: acl(),
                version: -1,
            }),
        ),
        (
            "SetAclRequest (server)",
            e(&SetAclRequest {
                path: "/".into(),
                acl: acl(),
                version: 0,
            }),
        ),
        (
            "GetChildrenResponse",
            e(&GetChildrenResponse {
                children: vec!["a".into(), "b".into()],
            }),
        ),
        (
            "GetChildren2Response",
            e(&GetChildren2Response {
                children: vec!["a".into()],
                stat: stat(6),
            }),
        ),
        (
            "MultiHeader",
            e(&MultiHeader {
                op_type: 1,
                done: false,
                err: -1,
            }),
        ),
        ("ErrorResponse", e(&ErrorResponse { err: -110 })),
        (
            "WatchTypeRequest",
            e(&WatchTypeRequest {
                path: "/a".into(),
                watcher_type: 3,
            }),
        ),
        (
            "AddWatchRequest",
            e(&AddWatchRequest {
                path: "/a".into(),
                mode: 1,
            }),
        ),
        (
            "AddWatchRequest (server)",
            e(&AddWatchRequestOf::<Option<String>> { path: None, mode: 0 }),
        ),
        (
            "GetEphemeralsResponse",
            e(&GetEphemeralsResponse {
                ephemerals: vec!["/e".into()],
            }),
        ),
        (
            "GetAllChildrenNumberResponse",
            e(&GetAllChildrenNumberResponse { total_number: 3 }),
        ),
        (
            "ClientInfo",
            e(&ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into(),
            }),
        ),
        (
            "WhoAmIResponse",
            e(&WhoAmIResponse {
                client_info: vec![ClientInfo {
                    auth_scheme: "ip".into(),
                    user: "x".into(),
                }],
            }),
        ),
        ("MultiRequest", e(&multi_request())),
        ("MultiRequest (server)", e(&MultiRequest::default())),
        ("MultiResponse", e(&multi_response())),
        ("MultiResponse (server)", e(&MultiResponse::default())),
        (
            "ReconfigRequest",
            e(&ReconfigRequest {
                joining_servers: Some("server.4=127.0.0.1:2888:3888:participant;127.0.0.1:2184".into()),
                leaving_servers: Some("3".into()),
                new_members: None,
                cur_config_id: 0x1_0000_0000,
            }),
        ),
        (
            "SaslToken",
            e(&zk_proto::sasl::SaslToken {
                token: Some(zk_proto::sasl::DigestChallenge::server("nonce")),
            }),
        ),
    ]
}

/// The valid encoding of every record of [`RECORDS`], in its order
/// (encodings of the record, which decode whole and re-encode byte for byte).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_fuzz::seeds::records().len(), zk_fuzz::decode::RECORDS.len());
/// ```
pub fn records() -> Vec<(&'static str, Vec<u8>)> {
    let samples = record_samples();
    RECORDS
        .iter()
        .map(|(name, _)| {
            let bytes = samples
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| b.clone())
                .unwrap_or_default();
            (*name, bytes)
        })
        .collect()
}

/// The body of a successful reply to each of [`AWAITED`].
fn reply_body(op: &str) -> Vec<u8> {
    match op {
        "create" | "sync" => "/a".to_string().to_bytes(),
        "create2" => Create2Response {
            path: "/a".into(),
            stat: stat(2),
        }
        .to_bytes(),
        "exists" | "setData" | "setACL" => stat(3).to_bytes(),
        "getData" => GetDataResponse {
            data: b"hello".to_vec(),
            stat: stat(4),
        }
        .to_bytes(),
        "getACL" => GetAclResponse {
            acl: acl(),
            stat: stat(5),
        }
        .to_bytes(),
        "getChildren" => GetChildrenResponse {
            children: vec!["a".into(), "b".into()],
        }
        .to_bytes(),
        "getChildren2" => GetChildren2Response {
            children: vec!["a".into()],
            stat: stat(6),
        }
        .to_bytes(),
        "multi" => multi_response().to_bytes(),
        "getEphemerals" => GetEphemeralsResponse {
            ephemerals: vec!["/e".into()],
        }
        .to_bytes(),
        "getAllChildrenNumber" => GetAllChildrenNumberResponse { total_number: 3 }.to_bytes(),
        "whoAmI" => WhoAmIResponse {
            client_info: vec![ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into(),
            }],
        }
        .to_bytes(),
        _ => Vec::new(),
    }
}

/// A seed: the target's name, the seed's name, its bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// The requests of a well-behaved session, one frame each, by name.
fn requests() -> Vec<(&'static str, Vec<u8>)> {
    let path = |p: &str| PathRecord { path: p.into() };
    let pw = |p: &str, watch| PathWatchRequest { path: p.into(), watch };
    vec![
        ("create", request_frame(1, OpCode::Create, Some(&create_req("/a")))),
        ("create2", request_frame(2, OpCode::Create2, Some(&create_req("/b")))),
        (
            "container",
            request_frame(3, OpCode::CreateContainer, Some(&create_req("/c"))),
        ),
        (
            "ttl",
            request_frame(
                4,
                OpCode::CreateTtl,
                Some(&CreateTtlRequest {
                    path: "/t".into(),
                    data: vec![1],
                    acl: Acl::open_unsafe(),
                    flags: 5,
                    ttl: 1000,
                }),
            ),
        ),
        ("exists", request_frame(5, OpCode::Exists, Some(&pw("/a", true)))),
        ("get-data", request_frame(6, OpCode::GetData, Some(&pw("/a", true)))),
        (
            "set-data",
            request_frame(
                7,
                OpCode::SetData,
                Some(&SetDataRequest {
                    path: "/a".into(),
                    data: vec![7; 9],
                    version: -1,
                }),
            ),
        ),
        ("children", request_frame(8, OpCode::GetChildren, Some(&pw("/", true)))),
        (
            "children2",
            request_frame(9, OpCode::GetChildren2, Some(&pw("/", false))),
        ),
        ("get-acl", request_frame(10, OpCode::GetAcl, Some(&path("/a")))),
        (
            "set-acl",
            request_frame(
                11,
                OpCode::SetAcl,
                Some(&SetAclRequest {
                    path: "/a".into(),
                    acl: Acl::open_unsafe(),
                    version: -1,
                }),
            ),
        ),
        ("sync", request_frame(12, OpCode::Sync, Some(&path("/")))),
        ("multi", request_frame(13, OpCode::Multi, Some(&multi_request()))),
        (
            "multi-read",
            request_frame(
                14,
                OpCode::MultiRead,
                Some(&MultiRequest {
                    ops: vec![MultiOp::GetData(pw("/a", false)), MultiOp::GetChildren(pw("/", false))],
                }),
            ),
        ),
        (
            "check",
            request_frame(
                15,
                OpCode::Check,
                Some(&DeleteRequest {
                    path: "/a".into(),
                    version: 0,
                }),
            ),
        ),
        (
            "set-watches",
            request_frame(
                -8,
                OpCode::SetWatches,
                Some(&SetWatches {
                    relative_zxid: 1,
                    data_watches: vec!["/a".into()],
                    exist_watches: vec!["/x".into()],
                    child_watches: vec!["/".into()],
                }),
            ),
        ),
        (
            "set-watches2",
            request_frame(
                -8,
                OpCode::SetWatches2,
                Some(&SetWatches2 {
                    relative_zxid: 1,
                    data_watches: vec!["/a".into()],
                    exist_watches: vec![],
                    child_watches: vec![],
                    persistent_watches: vec!["/p".into()],
                    persistent_recursive_watches: vec!["/".into()],
                }),
            ),
        ),
        (
            "add-watch",
            request_frame(
                16,
                OpCode::AddWatch,
                Some(&AddWatchRequest {
                    path: "/a".into(),
                    mode: 1,
                }),
            ),
        ),
        (
            "check-watches",
            request_frame(
                17,
                OpCode::CheckWatches,
                Some(&WatchTypeRequest {
                    path: "/a".into(),
                    watcher_type: 1,
                }),
            ),
        ),
        (
            "remove-watches",
            request_frame(
                18,
                OpCode::RemoveWatches,
                Some(&WatchTypeRequest {
                    path: "/a".into(),
                    watcher_type: 3,
                }),
            ),
        ),
        (
            "auth",
            request_frame(
                -4,
                OpCode::Auth,
                Some(&AuthPacket {
                    auth_type: 0,
                    scheme: "digest".into(),
                    auth: b"u:p".to_vec(),
                }),
            ),
        ),
        ("ephemerals", request_frame(19, OpCode::GetEphemerals, Some(&path("/")))),
        (
            "all-children",
            request_frame(20, OpCode::GetAllChildrenNumber, Some(&path("/"))),
        ),
        ("who-am-i", request_frame(21, OpCode::WhoAmI, None)),
        ("ping", request_frame(-2, OpCode::Ping, None)),
        (
            "delete",
            request_frame(
                22,
                OpCode::Delete,
                Some(&DeleteRequest {
                    path: "/b".into(),
                    version: -1,
                }),
            ),
        ),
        ("close", request_frame(23, OpCode::CloseSession, None)),
    ]
}

/// A minimal DER certificate whose subject is `O=Example, CN=app`.
fn certificate() -> Vec<u8> {
    let tlv = |tag: u8, c: &[u8]| [&[tag, c.len() as u8][..], c].concat();
    let atv = |oid: &[u8], v: &[u8]| tlv(0x31, &tlv(0x30, &[tlv(0x06, oid), tlv(0x0c, v)].concat()));
    let name = [atv(&[0x55, 4, 10], b"Example"), atv(&[0x55, 4, 3], b"app")].concat();
    let e = tlv(0x30, &[]);
    let tbs = [
        tlv(0x02, &[1]),
        e.clone(),
        e.clone(),
        e.clone(),
        tlv(0x30, &name),
        e.clone(),
    ]
    .concat();
    tlv(0x30, &[tlv(0x30, &tbs), e.clone(), tlv(0x03, &[0])].concat())
}

/// Every target's seeds.
///
/// # Examples
///
/// ```
/// let seeds = zk_fuzz::seeds::all();
/// for t in zk_fuzz::TARGETS {
///     assert!(seeds.iter().any(|(target, _, _)| *target == t.name), "{} has no seed", t.name);
/// }
/// ```
pub fn all() -> Vec<Seed> {
    let mut out: Vec<Seed> = Vec::new();
    for (i, (name, bytes)) in records().into_iter().enumerate() {
        let mut input = vec![i as u8];
        input.extend(bytes);
        out.push(("records", slug(name), input));
    }
    for (i, (op, _)) in AWAITED.iter().enumerate() {
        let mut input = vec![i as u8];
        input.extend(
            ReplyHeader {
                xid: 1,
                zxid: 5,
                err: 0,
            }
            .to_bytes(),
        );
        input.extend(reply_body(op));
        out.push(("client_reply", slug(op), input));
    }
    let header = |xid, err| ReplyHeader { xid, zxid: 9, err }.to_bytes();
    let mut event = vec![0u8];
    event.extend(header(-1, 0));
    event.extend(
        WatcherEvent {
            event_type: 3,
            state: 3,
            path: "/a".into(),
        }
        .to_bytes(),
    );
    out.push(("client_reply", "watch-event".into(), event));
    out.push(("client_reply", "ping".into(), [vec![0], header(-2, 0)].concat()));
    out.push(("client_reply", "error".into(), [vec![4], header(3, -101)].concat()));
    let handshake = (AWAITED.len() + AWAITED.len() % 2) as u8;
    out.push((
        "client_reply",
        "handshake".into(),
        [vec![handshake], connect_response().to_bytes()].concat(),
    ));
    let frames: Vec<u8> = [&b"hello"[..], b"", b"xyz"]
        .iter()
        .flat_map(|b| frame(|o| o.extend_from_slice(b)))
        .collect();
    out.push(("frame", "three-frames".into(), [vec![4, 1], frames.clone()].concat()));
    out.push(("frame", "max-default".into(), [vec![7, 0x35], frames].concat()));
    out.push((
        "frame",
        "over-limit".into(),
        vec![3, 2, 0, 0, 0, 2, 9, 8, 0x7f, 0xff, 0xff, 0xff, 1],
    ));
    out.push(("frame", "negative".into(), vec![7, 0, 0xff, 0xff, 0xff, 0xfe]));
    let hello = frame(|o| connect_request().encode(o));
    let mut session = hello.clone();
    for (name, req) in requests() {
        out.push((
            "server_request",
            format!("request-{name}"),
            [hello.clone(), req.clone()].concat(),
        ));
        session.extend(req);
    }
    out.push(("server_request", "session".into(), session));
    out.push(("server_request", "handshake".into(), hello));
    let reattach = ConnectRequest {
        session_id: 0x1234,
        passwd: vec![1; 16],
        ..connect_request()
    };
    out.push(("server_request", "reattach".into(), frame(|o| reattach.encode(o))));
    for w in ["ruok", "srvr", "stat", "mntr", "cons", "wchs", "dump", "envi"] {
        out.push(("server_request", format!("word-{w}"), w.as_bytes().to_vec()));
    }
    for (name, text) in [
        ("world", "world:anyone"),
        ("digest", "digest:u:Zm9vYmFy"),
        ("ip", "ip:10.0.0.0/8"),
        ("ip-host", "ip:127.0.0.1"),
        ("auth", "auth:"),
        ("x509", "x509:CN=app,O=Example"),
        ("sasl", "sasl:user@REALM"),
        ("super", "super:x"),
    ] {
        out.push(("acl", name.into(), [&[perms::ALL as u8][..], text.as_bytes()].concat()));
    }
    for (name, p) in [
        ("root", "/"),
        ("nested", "/a/b/c"),
        ("trailing", "/a/"),
        ("unicode", "/ü/日本"),
        ("dots", "/a/../b"),
        ("nul", "/a\0b"),
    ] {
        out.push(("path", name.into(), p.as_bytes().to_vec()));
    }
    for (name, s) in [
        ("one", "127.0.0.1:2181"),
        ("many", "a:1, b ,[::1]:3/app/x"),
        ("scheme", "zk://a:1"),
        ("ipv6", "[::1]"),
    ] {
        out.push(("connect_string", name.into(), s.as_bytes().to_vec()));
    }
    out.push(("x509", "subject".into(), certificate()));
    for (name, text) in CONFIGS {
        out.push(("config", (*name).into(), text.as_bytes().to_vec()));
    }
    out
}

/// A file name for a seed's name: letters and digits, '-' for the rest.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

/// `/zookeeper/config` as servers write it, and forms they accept (the
/// `config` target's seeds).
const CONFIGS: &[(&str, &str)] = &[
    (
        "three",
        "server.1=127.0.0.1:25188:25191:participant;127.0.0.1:25185\n\
         server.2=127.0.0.1:25189:25192:participant;127.0.0.1:25186\n\
         server.3=127.0.0.1:25190:25193:participant;0.0.0.0:25187\n\
         version=100000000",
    ),
    (
        "observer-wildcard",
        "server.1=localhost:2888:3888:participant\nserver.100=0.0.0.0:2889:3889:observer;0.0.0.0:2181\nversion=20000000a",
    ),
    (
        "ipv6-multi",
        "server.10=[fe80::1]:2888:3888:observer;[::1]:2181\nserver.2=b:1:2|a:3:4\nversion=1f",
    ),
    (
        "hierarchy",
        "server.1=a:1:2\nserver.2=b:1:2\ngroup.1=1:2\nweight.1=1\nweight.2=1\nversion=5",
    ),
    ("comments", "# comment\r\nclientPort=2181\nserver.3=h:5:6;7\nversion = 3\n"),
];
