//! Wire-level behaviour of the embedded server, driven with raw frames.

use std::io::{Read, Write};
use std::time::Duration;

use crate::support::{connect_request, create_req, ev, wait_until, Client, Closed, Packet, WAIT};
use zk_proto::frame::frame;
use zk_proto::jute::{Encode, JuteWrite};
use zk_proto::{
    Acl, AddWatchRequest, AuthPacket, CheckVersionRequest, ConnectResponse, CreateTtlRequest, Decode, DeleteRequest,
    ErrorCode, EventType, GetAclResponse, GetAllChildrenNumberResponse, GetEphemeralsResponse, Id, MultiOp,
    MultiRequest, MultiResponse, MultiResult, OpCode, PathRecord, PathWatchRequest, SetAclRequest, SetDataRequest,
    SetWatches, SetWatches2, Stat, StatResponse, WatchTypeRequest, WhoAmIResponse,
};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};

fn server() -> EmbeddedServer {
    let _ = env_logger::builder().is_test(true).try_init();
    EmbeddedServer::start(ServerConfig::default()).expect("start")
}

const NO_NODE: i32 = -101;
const NODE_EXISTS: i32 = -110;
const BAD_ARGS: i32 = -8;

#[test]
fn handshake_sizes_and_first_zxid() {
    let s = server();
    let addr = s.connect_string();
    // With the read-only byte: 45 → 37.
    let mut t = Client::tcp(&addr);
    let req = frame(|o| connect_request(0, vec![0; 16], 30000, 0).encode(o));
    assert_eq!(req.len(), 4 + 45);
    t.write_all(&req).unwrap();
    let mut len = [0u8; 4];
    t.read_exact(&mut len).unwrap();
    assert_eq!(i32::from_be_bytes(len), 37);
    let mut body = vec![0u8; 37];
    t.read_exact(&mut body).unwrap();
    let resp = ConnectResponse::from_bytes(&body).unwrap();
    assert_eq!(resp.read_only, Some(false));
    assert_eq!(resp.timeout, 30000);
    assert_ne!(resp.session_id, 0);
    assert_eq!(resp.passwd.len(), 16);
    // Without it: 44 → 36.
    let mut t2 = Client::tcp(&addr);
    let mut r = connect_request(0, vec![0; 16], 30000, 0);
    r.read_only = None;
    t2.write_all(&frame(|o| r.encode(o))).unwrap();
    t2.read_exact(&mut len).unwrap();
    assert_eq!(i32::from_be_bytes(len), 36);
    // Two new sessions used two zxids.
    let mut c = Client::connect(&addr);
    assert_eq!(c.zxid(), 3);
    assert_eq!(s.stats().requests(OpCode::CreateSession), 3);
}

#[test]
fn first_reply_after_connect_carries_zxid_1_and_timeouts_are_clamped() {
    let s = server();
    let addr = s.connect_string();
    let mut c = Client::connect_timeout(&addr, 100);
    assert_eq!(c.timeout, 1000);
    let r = c.rq0(OpCode::Ping);
    assert_eq!((r.hdr.xid, r.hdr.zxid, r.hdr.err), (-2, 1, 0));
    let c2 = Client::connect_timeout(&addr, 10_000_000);
    assert_eq!(c2.timeout, 60000);
}

#[test]
fn reattach_same_session_closes_the_old_connection_and_uses_no_zxid() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    a.create("/x", b"1", 1).unwrap();
    let z = a.zxid();
    let mut other = Client::connect(&addr); // uses a zxid
    let z = z + 1;
    let (mut b, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id);
    assert_eq!(resp.passwd, a.passwd);
    assert_eq!(resp.read_only, Some(false));
    assert_eq!(b.zxid(), z, "a reattach uses no zxid");
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    // The session and its ephemeral survive.
    assert_eq!(b.get_data("/x", false).unwrap().0, b"1");
    assert_eq!(other.stat("/x").ephemeral_owner, a.session_id);
    // A reattach may change the timeout.
    let (c, resp) = Client::handshake(&addr, &connect_request(a.session_id, a.passwd.clone(), 3000, 0)).unwrap();
    assert_eq!(resp.timeout, 3000);
    drop(c);
    assert!(wait_until(WAIT, || s
        .sessions()
        .iter()
        .any(|i| i.id == a.session_id && i.timeout == Duration::from_secs(3))));
}

#[test]
fn wrong_password_gets_timeout_zero_then_close_and_still_kicks_the_owner() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut bad = a.passwd.clone();
    bad[0] ^= 1;
    let (mut b, resp) = Client::handshake(&addr, &connect_request(a.session_id, bad, 30000, 0)).unwrap();
    assert_eq!(
        resp,
        ConnectResponse {
            protocol_version: 0,
            timeout: 0,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false)
        }
    );
    assert!(matches!(b.read_until_closed(WAIT), Closed::Yes(_)));
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(_)));
    // The session itself survives.
    let (mut c, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id);
    c.zxid();
    // Unknown session: same answer, without the read-only byte if the request had none.
    let mut req = connect_request(0x1234, vec![0; 16], 30000, 0);
    req.read_only = None;
    let (_, resp) = Client::handshake(&addr, &req).unwrap();
    assert_eq!((resp.timeout, resp.session_id, resp.read_only), (0, 0, None));
}

#[test]
fn last_zxid_seen_ahead_of_the_server_is_refused_without_reply() {
    let s = server();
    let addr = s.connect_string();
    let r = Client::handshake(&addr, &connect_request(0, vec![0; 16], 30000, 1000));
    assert!(r.is_err(), "expected no ConnectResponse");
    assert_eq!(s.stats().sessions, 0);
}

#[test]
fn zxid_accounting_including_failed_writes() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    let z0 = c.zxid();
    assert_eq!(z0, 1);
    c.create("/a", b"", 0).unwrap();
    assert_eq!(c.last_zxid, 2);
    assert_eq!(c.create("/a", b"", 0), Err(NODE_EXISTS));
    assert_eq!(
        c.log.last().map(|p| matches!(p, Packet::Reply(h, _) if h.zxid == 3)),
        Some(true)
    );
    assert_eq!(c.zxid(), 3, "reads use no zxid");
    assert_eq!(c.delete("/nope", -1), Err(NO_NODE));
    assert_eq!(c.zxid(), 4);
    assert_eq!(c.set_data("/a", b"x", 5), Err(-103));
    assert_eq!(c.zxid(), 5);
    c.set_data("/a", b"x", -1).unwrap();
    assert_eq!(c.zxid(), 6);
    // check: a write, answered with err 0 on a match.
    let r = c.rq(
        OpCode::Check,
        &CheckVersionRequest {
            path: "/a".into(),
            version: 1,
        },
    );
    assert_eq!((r.hdr.err, r.hdr.zxid), (0, 7));
    let r = c.rq(
        OpCode::Check,
        &CheckVersionRequest {
            path: "/a".into(),
            version: 0,
        },
    );
    assert_eq!((r.hdr.err, r.hdr.zxid), (-103, 8));
    // A malformed write body: MarshallingError, header only, and a zxid.
    let r = c.rq_raw(OpCode::Create.code(), &[0, 0, 0, 9, b'/']);
    assert_eq!((r.hdr.err, r.hdr.zxid, r.body.len()), (-5, 9, 0));
    // A malformed read body: MarshallingError, no zxid, and the connection still works.
    let r = c.rq_raw(OpCode::GetData.code(), &[0xff, 0xff, 0xff, 0xff, 0]);
    assert_eq!((r.hdr.err, r.hdr.zxid, r.body.len()), (-5, 9, 0));
    assert_eq!(c.zxid(), 9);
    assert_eq!(s.zxid(), 9);
    assert_eq!(s.stats().zxid, 9);
}

#[test]
fn initial_tree_and_stat_fields() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    let root = c.stat("/");
    assert_eq!(
        root,
        Stat {
            cversion: -1,
            num_children: 1,
            ..Stat::default()
        }
    );
    let zk = c.stat("/zookeeper");
    assert_eq!((zk.cversion, zk.num_children), (-2, 2));
    let config = c.stat("/zookeeper/config");
    assert_eq!(config.aversion, -1);
    // What a one-node 3.8 ensemble with standaloneEnabled=false publishes (its
    // version 0 here: the zxid before any transaction), Stat version -1.
    let (data, st) = c.get_data("/zookeeper/config", false).unwrap();
    assert_eq!((st.version, st.aversion, st.czxid, st.mzxid), (-1, -1, 0, 0));
    assert!(st.ctime == 0 && st.mtime > 0, "{st:?}");
    assert_eq!(st.data_length as usize, data.len());
    let text = String::from_utf8(data).unwrap();
    let tail = format!(":participant;127.0.0.1:{}\nversion=0", s.port());
    assert!(
        text.starts_with("server.1=127.0.0.1:") && text.ends_with(&tail),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(c.get_data("", false).unwrap().1, root, "\"\" is the root");
    assert_eq!(c.set_data("/zookeeper/config", b"x", -1), Err(-102));
    for p in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
        assert_eq!(c.delete(p, -1), Err(BAD_ARGS), "{p}");
    }
    c.create("/zookeeper/mine", b"", 0).unwrap();

    let (_, st) = c.create2("/p", b"hello", 0).unwrap();
    let z = c.last_zxid;
    assert_eq!((st.czxid, st.mzxid, st.pzxid), (z, z, z));
    assert_eq!((st.version, st.cversion, st.aversion, st.ephemeral_owner), (0, 0, 0, 0));
    assert_eq!((st.data_length, st.num_children), (5, 0));
    assert!(st.ctime > 0 && st.ctime == st.mtime);

    c.create("/p/c", b"", 0).unwrap();
    let zc = c.last_zxid;
    let p = c.stat("/p");
    assert_eq!(
        (p.cversion, p.num_children, p.pzxid, p.mzxid, p.version),
        (1, 1, zc, z, 0)
    );
    c.delete("/p/c", 0).unwrap();
    let zd = c.last_zxid;
    let p = c.stat("/p");
    assert_eq!((p.cversion, p.num_children, p.pzxid, p.mzxid), (2, 0, zd, z));
    let st = c.set_data("/p", b"xy", 0).unwrap();
    assert_eq!((st.version, st.mzxid, st.data_length, st.czxid), (1, c.last_zxid, 2, z));
    assert!(st.mtime >= st.ctime);
    let (_, e) = c.create2("/p/e", b"", 1).unwrap();
    assert_eq!(e.ephemeral_owner, c.session_id);
    let (_, k) = c.create_container("/p/k").unwrap();
    assert_eq!(k.ephemeral_owner, 0, "containers report owner 0");
    let info = s.sessions();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].ephemerals, vec!["/p/e".to_string()]);
    assert!(info[0].connected);
    let tree = s.dump_tree();
    assert!(tree.windows(2).all(|w| w[0].0 < w[1].0));
    let (_, pst, pdata) = tree.iter().find(|(p, _, _)| p == "/p").unwrap();
    assert_eq!((pdata.as_slice(), pst.num_children), (&b"xy"[..], 2));
}

#[test]
fn sequence_suffix_comes_from_the_parent_creation_counter() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    c.create("/s", b"", 0).unwrap();
    assert_eq!(c.create("/s/n-", b"", 2).unwrap(), "/s/n-0000000000");
    c.delete("/s/n-0000000000", -1).unwrap();
    assert_eq!(c.create("/s/n-", b"", 2).unwrap(), "/s/n-0000000001");
    c.delete("/s/n-0000000001", -1).unwrap();
    assert_eq!(c.create("/s/n-", b"", 3).unwrap(), "/s/n-0000000002");
    c.create("/s/x", b"", 0).unwrap();
    assert_eq!(c.create("/s/x", b"", 0), Err(NODE_EXISTS));
    assert_eq!(c.create("/s/n-", b"", 2).unwrap(), "/s/n-0000000004");
    // A trailing '/' is fine for sequential nodes.
    assert_eq!(c.create("/s/", b"", 2).unwrap(), "/s/0000000005");
    let st = c.stat("/s");
    assert_eq!((st.cversion, st.num_children), (2 * 6 - 4, 4));
    // The counter restarts with a new parent.
    for ch in c.children("/s", false).unwrap() {
        c.delete(&format!("/s/{ch}"), -1).unwrap();
    }
    c.delete("/s", -1).unwrap();
    c.create("/s", b"", 0).unwrap();
    assert_eq!(c.create("/s/n-", b"", 2).unwrap(), "/s/n-0000000000");
    // Consecutive suffixes within one multi.
    let (h, r) = c.multi(vec![
        MultiOp::Create {
            op: OpCode::Create,
            request: create_req("/s/m-", b"", 2),
        },
        MultiOp::Create {
            op: OpCode::Create2,
            request: create_req("/s/m-", b"", 2),
        },
    ]);
    assert_eq!(h.err, 0);
    assert_eq!(
        r.results,
        vec![
            MultiResult::Create {
                path: "/s/m-0000000001".into()
            },
            MultiResult::Create {
                path: "/s/m-0000000002".into()
            }
        ]
    );
}

#[test]
fn create_check_order_and_path_rules() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    assert_eq!(c.create("a", b"", 0), Err(BAD_ARGS));
    assert_eq!(c.create("", b"", 0), Err(BAD_ARGS));
    assert_eq!(c.create("/a/", b"", 0), Err(NO_NODE));
    assert_eq!(c.create("/a/./b", b"", 0), Err(NO_NODE));
    assert_eq!(c.create("//a", b"", 0), Err(BAD_ARGS));
    assert_eq!(c.create("/.", b"", 0), Err(BAD_ARGS));
    assert_eq!(c.create("/", b"", 0), Err(NODE_EXISTS));
    assert_eq!(c.create("/bad", b"", 7), Err(BAD_ARGS));
    assert_eq!(c.create("/a\u{1}", b"", 0), Err(BAD_ARGS));
    c.create("/a", b"", 0).unwrap();
    assert_eq!(c.create("/a/", b"", 0), Err(BAD_ARGS));
    // ACL rules.
    let mut req = create_req("/acl", b"", 0);
    req.acl = vec![];
    assert_eq!(c.rq(OpCode::Create, &req).hdr.err, -114);
    req.acl = Acl::creator_all();
    assert_eq!(
        c.rq(OpCode::Create, &req).hdr.err,
        -114,
        "auth scheme without credentials"
    );
    req.acl = vec![Acl {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "someone".into(),
        },
    }];
    assert_eq!(c.rq(OpCode::Create, &req).hdr.err, -114);
    // Ephemeral parents: NodeExists wins over NoChildrenForEphemerals.
    c.create("/e", b"", 1).unwrap();
    assert_eq!(c.create("/e/c", b"", 0), Err(-108));
    assert_eq!(c.create("/e", b"", 0), Err(NODE_EXISTS));
    // Reads do no validation.
    assert_eq!(c.get_data("a", false), Err(NO_NODE));
    assert_eq!(c.children("//a", false), Err(NO_NODE));
    assert_eq!(c.exists("/a\0b", false), Err(BAD_ARGS));
    assert_eq!(c.get_data("/a\0b", false), Err(NO_NODE));
    // delete order: version before NotEmpty.
    c.create("/a/b", b"", 0).unwrap();
    assert_eq!(c.delete("/a", 9), Err(-103));
    assert_eq!(c.delete("/a", -1), Err(-111));
    assert_eq!(c.delete("/a/b/c", -1), Err(NO_NODE));
    // sync echoes the path without an existence check.
    let r = c.rq(OpCode::Sync, &PathRecord { path: "/nonode".into() });
    assert_eq!((r.hdr.err, r.decode::<PathRecord>().path), (0, "/nonode".to_string()));
}

#[test]
fn create_modes_containers_and_ttl() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    // Opcode 19 always makes a container, even with flags 0; reply Create2Response.
    let r = c.rq(OpCode::CreateContainer, &create_req("/k1", b"", 0));
    assert_eq!(r.hdr.err, 0);
    let cr: zk_proto::Create2Response = r.decode();
    assert_eq!(cr.path, "/k1");
    // Opcode 1 (or 15) with flags 4: path-only reply, but the transaction is a plain
    // create: the node is persistent and never reaped (as on real 3.8).
    assert_eq!(c.create("/k2", b"", 4).unwrap(), "/k2");
    assert_eq!(c.create2("/k3", b"", 4).unwrap().0, "/k3");
    c.create("/k1/e", b"", 1).unwrap();
    for p in ["/k1", "/k2", "/k3"] {
        c.create(&format!("{p}/child"), b"", 0).unwrap();
        c.delete(&format!("{p}/child"), -1).unwrap();
    }
    c.delete("/k1/e", -1).unwrap();
    assert!(
        wait_until(WAIT, || c.exists("/k1", false).is_err()),
        "opcode 19 makes a container"
    );
    s.run_container_sweep();
    assert!(c.exists("/k2", false).is_ok() && c.exists("/k3", false).is_ok());
    // Opcode 19: a container whatever the flags, sequential if the flags say so; bad flags
    // are still BadArguments.
    assert_eq!(c.rq(OpCode::CreateContainer, &create_req("/sc-", b"", 2)).hdr.err, 0);
    assert_eq!(
        c.rq(OpCode::CreateContainer, &create_req("/bad", b"", 9)).hdr.err,
        BAD_ARGS
    );
    // TTL via opcode 21.
    let ttl = |path: &str, flags: i32, ttl: i64| CreateTtlRequest {
        path: path.into(),
        data: vec![],
        acl: Acl::open_unsafe(),
        flags,
        ttl,
    };
    let r = c.rq(OpCode::CreateTtl, &ttl("/t1", 5, 60_000));
    assert_eq!(r.hdr.err, 0);
    assert_eq!(r.decode::<zk_proto::Create2Response>().stat.ephemeral_owner, 0);
    let r = c.rq(OpCode::CreateTtl, &ttl("/t2-", 6, 60_000));
    assert_eq!(r.decode::<zk_proto::Create2Response>().path, "/t2-0000000005");
    assert_eq!(c.rq(OpCode::CreateTtl, &ttl("/t3", 5, 0)).hdr.err, BAD_ARGS);
    assert_eq!(c.rq(OpCode::CreateTtl, &ttl("/t3", 5, 1 << 40)).hdr.err, BAD_ARGS);
    assert_eq!(c.rq(OpCode::CreateTtl, &ttl("/t3", 0, 100)).hdr.err, BAD_ARGS);
    assert_eq!(c.create("/t3", b"", 5), Err(BAD_ARGS), "opcode 1 passes ttl -1");
    // Children under TTL nodes are allowed.
    c.create("/t1/c", b"", 0).unwrap();

    let s2 = EmbeddedServer::start(ServerConfig {
        extended_types: false,
        ..ServerConfig::default()
    })
    .unwrap();
    let mut c2 = Client::connect(&s2.connect_string());
    assert_eq!(c2.rq(OpCode::CreateTtl, &ttl("/t", 5, 100)).hdr.err, -6);
    let r = c2.rq(OpCode::CreateTtl, &ttl("/t", 5, 100));
    assert_eq!(
        (r.hdr.err, r.hdr.zxid),
        (-6, 3),
        "still uses a zxid, and the connection stays"
    );
}

#[test]
fn containers_and_ttl_nodes_are_reaped_with_events() {
    let s = EmbeddedServer::start(ServerConfig {
        container_check_interval: Duration::from_millis(20),
        ..ServerConfig::default()
    })
    .unwrap();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut w = Client::connect(&addr);
    a.create_container("/c").unwrap();
    a.create_container("/never").unwrap();
    a.create("/c/x", b"", 0).unwrap();
    w.exists("/c", true).unwrap();
    w.children("/", true).unwrap();
    a.delete("/c/x", -1).unwrap();
    assert_eq!(w.event(), ev(EventType::NodeDeleted, "/c"));
    assert_eq!(w.event(), ev(EventType::NodeChildrenChanged, "/"));
    assert_eq!(a.exists("/c", false), Err(NO_NODE));
    // Containers that never had a child stay.
    s.run_container_sweep();
    assert!(a.exists("/never", false).is_ok());
    // TTL nodes go once empty and older than their ttl.
    let r = a.rq(
        OpCode::CreateTtl,
        &CreateTtlRequest {
            path: "/ttl".into(),
            data: vec![],
            acl: Acl::open_unsafe(),
            flags: 5,
            ttl: 50,
        },
    );
    assert_eq!(r.hdr.err, 0);
    assert!(wait_until(WAIT, || s.dump_tree().iter().all(|(p, _, _)| p != "/ttl")));
    // Each deletion is a transaction.
    let z = s.zxid();
    a.create_container("/c2").unwrap();
    a.create("/c2/x", b"", 1).unwrap();
    a.delete("/c2/x", -1).unwrap();
    assert!(wait_until(WAIT, || s.dump_tree().iter().all(|(p, _, _)| p != "/c2")));
    assert_eq!(s.zxid(), z + 4);
}

#[test]
fn ephemerals_go_on_close_session_with_events_to_others() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/lock", b"", 0).unwrap();
    a.create("/lock/e1", b"", 1).unwrap();
    a.create("/lock/e2", b"", 3).unwrap();
    b.exists("/lock/e1", true).unwrap();
    b.children("/lock", true).unwrap();
    let h = a.close_session();
    assert_eq!(h.err, 0);
    let zclose = h.zxid;
    assert!(matches!(a.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    assert_eq!(b.event(), ev(EventType::NodeDeleted, "/lock/e1"));
    assert_eq!(b.event(), ev(EventType::NodeChildrenChanged, "/lock"));
    assert!(b.children("/lock", false).unwrap().is_empty());
    assert_eq!(b.stat("/lock").pzxid, zclose);
    assert!(s.sessions().iter().all(|i| i.id != a.session_id));
    let (_, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.timeout, 0);
}

#[test]
fn one_shot_watches_and_event_before_reply() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/w", b"", 0).unwrap();
    a.get_data("/w", true).unwrap();
    b.get_data("/w", true).unwrap();
    b.exists("/missing", true).unwrap_err();
    // The writer watches: it gets the event first, then its reply.
    let n = a.log.len();
    a.set_data("/w", b"1", -1).unwrap();
    assert!(matches!(&a.log[n], Packet::Event(e) if *e == ev(EventType::NodeDataChanged, "/w")));
    assert!(matches!(&a.log[n + 1], Packet::Reply(..)));
    // Another connection sees the event before any later reply.
    let n = b.log.len();
    b.zxid();
    assert!(matches!(&b.log[n], Packet::Event(e) if *e == ev(EventType::NodeDataChanged, "/w")));
    b.events.clear();
    // One-shot: a second change fires nothing.
    a.set_data("/w", b"2", -1).unwrap();
    let n = b.log.len();
    b.zxid();
    assert_eq!(b.log.len(), n + 1);
    // exists on a missing node registers a creation watch.
    a.create("/missing", b"", 0).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeCreated, "/missing"));
    // NodeDeleted is sent once per connection even with data + child watches.
    b.exists("/missing", true).unwrap();
    b.children("/missing", true).unwrap();
    b.children("/", true).unwrap();
    a.delete("/missing", -1).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeDeleted, "/missing"));
    assert_eq!(b.event(), ev(EventType::NodeChildrenChanged, "/"));
    assert!(b.try_event(Duration::from_millis(100)).is_none());
    // Child watch: NodeChildrenChanged on create, not on setData of the parent.
    b.children("/w", true).unwrap();
    a.set_data("/w", b"3", -1).unwrap();
    a.create("/w/c", b"", 0).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeChildrenChanged, "/w"));
    // getData on a missing node registers nothing.
    b.get_data("/nothing", true).unwrap_err();
    a.create("/nothing", b"", 0).unwrap();
    assert!(b.try_event(Duration::from_millis(100)).is_none());
    assert!(s.stats().watch_notifications >= 6);
}

#[test]
fn set_watches_catch_up_rules() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    a.create("/d", b"", 0).unwrap();
    a.create("/k", b"", 0).unwrap();
    let rel = a.zxid();
    a.set_data("/d", b"changed", -1).unwrap();
    a.create("/k/c", b"", 0).unwrap();
    a.create("/now-exists", b"", 0).unwrap();
    let mut b = Client::connect(&addr);
    let sw = SetWatches {
        relative_zxid: rel,
        data_watches: vec!["/d".into(), "/gone".into(), "/k".into()],
        exist_watches: vec!["/now-exists".into(), "/later".into()],
        child_watches: vec!["/k".into(), "/gone2".into(), "/d".into()],
    };
    let xid = 77;
    b.send_request(xid, OpCode::SetWatches.code(), &sw.to_bytes());
    let r = b.wait_reply(xid);
    assert_eq!((r.hdr.err, r.body.len()), (0, 0));
    let events: Vec<_> = b.events.drain(..).collect();
    assert_eq!(
        events,
        vec![
            ev(EventType::NodeDataChanged, "/d"),
            ev(EventType::NodeDeleted, "/gone"),
            ev(EventType::NodeCreated, "/now-exists"),
            ev(EventType::NodeChildrenChanged, "/k"),
            ev(EventType::NodeDeleted, "/gone2"),
        ]
    );
    // The others were registered.
    a.create("/later", b"", 0).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeCreated, "/later"));
    a.set_data("/k", b"x", -1).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeDataChanged, "/k"));
    a.create("/d/c", b"", 0).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeChildrenChanged, "/d"));
    // SetWatches2 with persistent watches.
    let sw2 = SetWatches2 {
        relative_zxid: a.zxid(),
        data_watches: vec![],
        exist_watches: vec![],
        child_watches: vec![],
        persistent_watches: vec!["/p".into()],
        persistent_recursive_watches: vec!["/r".into()],
    };
    assert_eq!(b.rq(OpCode::SetWatches2, &sw2).hdr.err, 0);
    a.create("/p", b"", 0).unwrap();
    a.set_data("/p", b"1", -1).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeCreated, "/p"));
    assert_eq!(b.event(), ev(EventType::NodeDataChanged, "/p"));
    a.create("/r", b"", 0).unwrap();
    a.create("/r/x", b"", 0).unwrap();
    assert_eq!(b.event(), ev(EventType::NodeCreated, "/r"));
    assert_eq!(b.event(), ev(EventType::NodeCreated, "/r/x"));
}

#[test]
fn persistent_and_recursive_watches_and_watch_removal() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/p", b"", 0).unwrap();
    let r = b.rq(
        OpCode::AddWatch,
        &AddWatchRequest {
            path: "/p".into(),
            mode: 0,
        },
    );
    assert_eq!((r.hdr.err, r.body.clone()), (0, vec![0, 0, 0, 0]));
    let r = b.rq(
        OpCode::AddWatch,
        &AddWatchRequest {
            path: "/".into(),
            mode: 1,
        },
    );
    assert_eq!(r.hdr.err, 0);
    a.set_data("/p", b"1", -1).unwrap();
    a.set_data("/p", b"2", -1).unwrap();
    a.create("/p/c", b"", 0).unwrap();
    // One event per change and connection; the recursive watch on "/" never gets
    // NodeChildrenChanged, the persistent one on /p does.
    let got: Vec<_> = (0..4).map(|_| b.event()).collect();
    assert_eq!(
        got,
        vec![
            ev(EventType::NodeDataChanged, "/p"),
            ev(EventType::NodeDataChanged, "/p"),
            ev(EventType::NodeCreated, "/p/c"),
            ev(EventType::NodeChildrenChanged, "/p"),
        ]
    );
    assert!(b.try_event(Duration::from_millis(100)).is_none());
    let wt = |path: &str, t: i32| WatchTypeRequest {
        path: path.into(),
        watcher_type: t,
    };
    // checkWatches does not remove; removeWatches does.
    b.get_data("/p/c", true).unwrap();
    assert_eq!(b.rq(OpCode::CheckWatches, &wt("/p/c", 2)).hdr.err, 0);
    assert_eq!(b.rq(OpCode::CheckWatches, &wt("/p/c", 1)).hdr.err, -121);
    assert_eq!(b.rq(OpCode::CheckWatches, &wt("/p/c", 3)).hdr.err, 0);
    assert_eq!(b.rq(OpCode::CheckWatches, &wt("/p/c", 4)).hdr.err, -5);
    assert_eq!(b.rq(OpCode::RemoveWatches, &wt("/p/c", 3)).hdr.err, 0);
    assert_eq!(b.rq(OpCode::RemoveWatches, &wt("/p/c", 3)).hdr.err, -121);
    assert_eq!(b.rq(OpCode::RemoveWatches, &wt("/p", 3)).hdr.err, 0);
    assert_eq!(b.rq(OpCode::RemoveWatches, &wt("/", 3)).hdr.err, 0);
    a.set_data("/p/c", b"x", -1).unwrap();
    a.set_data("/p", b"x", -1).unwrap();
    assert!(b.try_event(Duration::from_millis(100)).is_none());
    // Watches die with the connection.
    b.get_data("/p", true).unwrap();
    assert_eq!(s.stats().watches, 1);
    b.shutdown();
    assert!(wait_until(WAIT, || s.stats().watches == 0));
}

#[test]
fn multi_is_all_or_nothing_with_per_op_results() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    c.create("/m", b"", 0).unwrap();
    let z = c.zxid();
    let (h, r) = c.multi(vec![
        MultiOp::Create {
            op: OpCode::Create,
            request: create_req("/m/a", b"1", 0),
        },
        MultiOp::Delete(DeleteRequest {
            path: "/m/nope".into(),
            version: -1,
        }),
        MultiOp::Create {
            op: OpCode::Create,
            request: create_req("/m/b", b"", 0),
        },
    ]);
    assert_eq!((h.err, h.zxid), (0, z + 1));
    assert_eq!(
        r.results,
        vec![
            MultiResult::Error { err: 0 },
            MultiResult::Error { err: NO_NODE },
            MultiResult::Error { err: -2 }
        ]
    );
    assert!(c.children("/m", false).unwrap().is_empty());
    assert_eq!(c.stat("/m").cversion, 0, "nothing applied");
    // Success: one zxid, one mtime, checks see earlier ops.
    let mut w = Client::connect(&s.connect_string());
    w.children("/m", true).unwrap();
    let (h, r) = c.multi(vec![
        MultiOp::Create {
            op: OpCode::Create2,
            request: create_req("/m/a", b"1", 0),
        },
        MultiOp::Check(CheckVersionRequest {
            path: "/m/a".into(),
            version: 0,
        }),
        MultiOp::SetData(SetDataRequest {
            path: "/m/a".into(),
            data: b"2".to_vec(),
            version: 0,
        }),
        MultiOp::Check(CheckVersionRequest {
            path: "/m/a".into(),
            version: 1,
        }),
        MultiOp::Create {
            op: OpCode::Create,
            request: create_req("/m/k", b"", 4),
        },
        MultiOp::Create {
            op: OpCode::Create,
            request: create_req("/m/tmp", b"", 0),
        },
        MultiOp::Delete(DeleteRequest {
            path: "/m/tmp".into(),
            version: 0,
        }),
    ]);
    assert_eq!(h.err, 0);
    let zm = h.zxid;
    assert_eq!(zm, c.zxid());
    assert_eq!(r.results.len(), 7);
    assert_eq!(
        r.results[0],
        MultiResult::Create { path: "/m/a".into() },
        "no stat for a plain create2 in a multi"
    );
    assert_eq!(r.results[1], MultiResult::Check);
    let MultiResult::SetData { stat } = &r.results[2] else {
        panic!("{:?}", r.results[2])
    };
    assert_eq!((stat.version, stat.mzxid, stat.czxid), (1, zm, zm));
    assert_eq!(r.results[3], MultiResult::Check);
    assert!(matches!(&r.results[4], MultiResult::Create2 { path, stat } if path == "/m/k" && stat.czxid == zm));
    assert_eq!(r.results[5], MultiResult::Create { path: "/m/tmp".into() });
    assert_eq!(r.results[6], MultiResult::Delete);
    assert_eq!(w.event(), ev(EventType::NodeChildrenChanged, "/m"));
    assert_eq!(c.children("/m", false).unwrap(), vec!["a", "k"]);
    // Empty multi: a zxid, just the done header.
    let (h, r) = c.multi(vec![]);
    assert_eq!((h.err, h.zxid, r.results.len()), (0, zm + 1, 0));
    // A read op in a write multi: MarshallingError, and a zxid.
    let (h, _) = c.multi(vec![MultiOp::GetData(PathWatchRequest {
        path: "/m".into(),
        watch: false,
    })]);
    assert_eq!((h.err, h.zxid), (-5, zm + 2));
    // multiRead: per-op results, no zxid, no rollback.
    let r = c.rq(
        OpCode::MultiRead,
        &MultiRequest {
            ops: vec![
                MultiOp::GetData(PathWatchRequest {
                    path: "/m/a".into(),
                    watch: true,
                }),
                MultiOp::GetChildren(PathWatchRequest {
                    path: "/nope".into(),
                    watch: false,
                }),
                MultiOp::GetChildren(PathWatchRequest {
                    path: "/m".into(),
                    watch: false,
                }),
            ],
        },
    );
    assert_eq!((r.hdr.err, r.hdr.zxid), (0, zm + 2));
    let mr: MultiResponse = r.decode();
    assert!(matches!(&mr.results[0], MultiResult::GetData { data, .. } if data == b"2"));
    assert_eq!(mr.results[1], MultiResult::Error { err: NO_NODE });
    assert!(matches!(&mr.results[2], MultiResult::GetChildren { children } if children.len() == 2));
}

#[test]
fn acl_auth_and_identity() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    // Auth is answered in order, xid -4, zxid 0.
    let auth = AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: b"u:p".to_vec(),
    };
    a.send_request(-4, OpCode::Auth.code(), &auth.to_bytes());
    let r = a.wait_reply(-4);
    assert_eq!((r.hdr.zxid, r.hdr.err), (0, 0));
    let who: WhoAmIResponse = a.rq0(OpCode::WhoAmI).decode();
    let pairs: Vec<(String, String)> = who.client_info.into_iter().map(|i| (i.auth_scheme, i.user)).collect();
    assert_eq!(
        pairs,
        vec![("ip".into(), "127.0.0.1".into()), ("digest".into(), "u".into())]
    );
    let mut req = create_req("/secret", b"s", 0);
    req.acl = Acl::creator_all();
    assert_eq!(a.rq(OpCode::Create, &req).hdr.err, 0);
    assert_eq!(a.get_data("/secret", false).unwrap().0, b"s");
    assert_eq!(b.get_data("/secret", false), Err(-102));
    assert!(b.exists("/secret", false).is_ok(), "exists needs no permission");
    let r = a.rq(OpCode::GetAcl, &PathRecord { path: "/secret".into() });
    let acl: GetAclResponse = r.decode();
    assert_eq!(acl.acl[0].id.scheme, "digest");
    assert!(acl.acl[0].id.id.starts_with("u:") && acl.acl[0].id.id.len() > 4);
    // setACL: aversion check, +1.
    let set = |version| SetAclRequest {
        path: "/secret".into(),
        acl: Acl::open_unsafe(),
        version,
    };
    assert_eq!(b.rq(OpCode::SetAcl, &set(-1)).hdr.err, -102);
    assert_eq!(a.rq(OpCode::SetAcl, &set(3)).hdr.err, -103);
    let st: StatResponse = a.rq(OpCode::SetAcl, &set(0)).decode();
    assert_eq!(st.stat.aversion, 1);
    assert_eq!(b.get_data("/secret", false).unwrap().0, b"s");
    // Unknown scheme: AuthFailed, then the connection is closed.
    let bad = AuthPacket {
        auth_type: 0,
        scheme: "kerberos?".into(),
        auth: vec![],
    };
    b.send_request(-4, OpCode::Auth.code(), &bad.to_bytes());
    let r = b.wait_reply(-4);
    assert_eq!(r.hdr.err, -115);
    assert!(matches!(b.read_until_closed(WAIT), Closed::Yes(_)));
}

#[test]
fn ephemerals_children_count_and_who_am_i() {
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    c.create("/e1", b"", 1).unwrap();
    c.create("/f", b"", 0).unwrap();
    c.create("/f/e2", b"", 1).unwrap();
    c.create("/f/g", b"", 0).unwrap();
    c.create("/f/g/h", b"", 0).unwrap();
    let eph = |c: &mut Client, prefix: Option<&str>| {
        let mut body = Vec::new();
        body.put_buffer(prefix.map(str::as_bytes));
        let mut v = c
            .rq_raw(OpCode::GetEphemerals.code(), &body)
            .decode::<GetEphemeralsResponse>()
            .ephemerals;
        v.sort();
        v
    };
    assert_eq!(eph(&mut c, None), vec!["/e1", "/f/e2"]);
    assert_eq!(eph(&mut c, Some("/")), vec!["/e1", "/f/e2"]);
    assert_eq!(eph(&mut c, Some("/e")), vec!["/e1"]);
    assert_eq!(eph(&mut c, Some("/f")), vec!["/f/e2"]);
    let n = |c: &mut Client, p: &str| {
        let r = c.rq(OpCode::GetAllChildrenNumber, &PathRecord { path: p.into() });
        if r.hdr.err != 0 {
            return r.hdr.err;
        }
        r.decode::<GetAllChildrenNumberResponse>().total_number
    };
    assert_eq!(n(&mut c, "/f"), 3);
    assert_eq!(n(&mut c, "/"), 8);
    assert_eq!(n(&mut c, "/nope"), NO_NODE);
}

#[test]
fn unknown_opcode_is_unimplemented_then_closed_others_unaffected() {
    let s = server();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/e", b"", 1).unwrap();
    a.send_request(5, 999, &[]);
    let f = a.read_until_closed(WAIT);
    let Closed::Yes(frames) = f else {
        panic!("not closed: {f:?}")
    };
    assert_eq!(frames.len(), 1);
    let mut r = zk_proto::jute::Reader::new(&frames[0]);
    let h = zk_proto::ReplyHeader::decode(&mut r).unwrap();
    assert_eq!((h.xid, h.zxid, h.err), (5, -1, ErrorCode::Unimplemented.code()));
    assert!(r.is_empty());
    // The session survives; other connections are fine.
    assert_eq!(b.stat("/e").ephemeral_owner, a.session_id);
    let (mut a2, resp) = Client::reattach(&addr, &a).unwrap();
    assert_eq!(resp.session_id, a.session_id);
    a2.zxid();
}

#[test]
fn x509_acls_need_the_registered_scheme() {
    let x509 = || {
        let mut req = create_req("/x", b"", 0);
        req.acl = vec![Acl {
            perms: zk_proto::perms::ALL,
            id: Id {
                scheme: "x509".into(),
                id: "CN=client".into(),
            },
        }];
        req
    };
    let auth = AuthPacket {
        auth_type: 0,
        scheme: "x509".into(),
        auth: b"CN=forged".to_vec(),
    };
    // Not registered (the default, as on a plain ZooKeeper): the ACL is invalid and
    // addauth x509 fails.
    let s = server();
    let mut c = Client::connect(&s.connect_string());
    assert_eq!(c.rq(OpCode::Create, &x509()).hdr.err, ErrorCode::InvalidAcl.code());
    c.send_request(-4, OpCode::Auth.code(), &auth.to_bytes());
    assert_eq!(c.wait_reply(-4).hdr.err, ErrorCode::AuthFailed.code());
    // Registered: the ACL is valid, but the identity comes only from a verified client
    // certificate, so a plain connection neither matches it nor can claim it.
    let s = EmbeddedServer::start(ServerConfig {
        x509_auth: true,
        ..ServerConfig::default()
    })
    .unwrap();
    let mut c = Client::connect(&s.connect_string());
    assert_eq!(c.rq(OpCode::Create, &x509()).hdr.err, 0);
    assert_eq!(c.get_data("/x", false), Err(ErrorCode::NoAuth.code()));
    c.send_request(-4, OpCode::Auth.code(), &auth.to_bytes());
    assert_eq!(c.wait_reply(-4).hdr.err, ErrorCode::AuthFailed.code());
}

#[test]
fn garbage_oversized_and_negative_frames_close_only_that_connection() {
    let s = EmbeddedServer::start(ServerConfig {
        max_frame: 4096,
        ..ServerConfig::default()
    })
    .unwrap();
    let addr = s.connect_string();
    let mut good = Client::connect(&addr);
    good.create("/g", b"", 0).unwrap();
    let cases: Vec<Vec<u8>> = vec![
        (4097i32).to_be_bytes().to_vec(),
        (-1i32).to_be_bytes().to_vec(),
        i32::MIN.to_be_bytes().to_vec(),
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        vec![0, 0, 0, 3, 1, 2, 3],
        vec![0, 0, 0, 0],
    ];
    for bytes in cases {
        let mut t = Client::tcp(&addr);
        t.write_all(&bytes).unwrap();
        t.set_read_timeout(Some(WAIT)).unwrap();
        let mut buf = [0u8; 64];
        let n = t.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "no answer and closed for {bytes:?}");
    }
    // After the handshake: an oversized frame, then a frame too short for a header.
    let mut c = Client::connect(&addr);
    c.send_raw(&5000i32.to_be_bytes());
    assert!(matches!(c.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    let mut c = Client::connect(&addr);
    c.send_raw(&[0, 0, 0, 2, 0, 0]);
    assert!(matches!(c.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    // A big but legal request is fine; a body bigger than the frame is MarshallingError.
    let mut c = Client::connect(&addr);
    assert!(c.create("/big", &vec![7u8; 3000], 0).is_ok());
    assert_eq!(c.rq_raw(OpCode::Exists.code(), &[0, 0, 0, 100, b'/']).hdr.err, -5);
    assert_eq!(good.get_data("/big", false).unwrap().0.len(), 3000);
    assert!(good.exists("/g", false).is_ok());
    assert_eq!(s.stats().sessions, 4, "closed connections do not end sessions");
}

#[test]
fn split_merged_and_pipelined_frames() {
    let s = server();
    let addr = s.connect_string();
    // ConnectRequest plus pipelined requests in one write (as the Rust crate does).
    let mut t = Client::tcp(&addr);
    let mut bytes = frame(|o| connect_request(0, vec![0; 16], 30000, 0).encode(o));
    for (xid, path) in [(1, "/p1"), (2, "/p2")] {
        bytes.extend(frame(|o| {
            zk_proto::RequestHeader {
                xid,
                op: OpCode::Create.code(),
            }
            .encode(o);
            create_req(path, b"", 1).encode(o);
        }));
    }
    bytes.extend(frame(|o| {
        zk_proto::RequestHeader {
            xid: 3,
            op: OpCode::GetChildren.code(),
        }
        .encode(o);
        PathWatchRequest {
            path: "/".into(),
            watch: false,
        }
        .encode(o);
    }));
    t.write_all(&bytes).unwrap();
    let mut c = Client::wrap(t);
    let f = c.read_frame(WAIT).unwrap();
    assert_eq!(ConnectResponse::from_bytes(&f).unwrap().timeout, 30000);
    for xid in 1..=3 {
        assert_eq!(c.wait_reply(xid).hdr.err, 0);
    }
    // The same byte by byte.
    let mut t = Client::tcp(&addr);
    let mut bytes = frame(|o| connect_request(0, vec![0; 16], 30000, 0).encode(o));
    bytes.extend(frame(|o| {
        zk_proto::RequestHeader {
            xid: 1,
            op: OpCode::Exists.code(),
        }
        .encode(o);
        PathWatchRequest {
            path: "/p1".into(),
            watch: false,
        }
        .encode(o);
    }));
    for b in bytes {
        t.write_all(&[b]).unwrap();
    }
    let mut c = Client::wrap(t);
    c.read_frame(WAIT).unwrap();
    let r = c.wait_reply(1);
    assert_eq!(r.hdr.err, 0);
}

#[test]
fn a_watcher_sees_the_event_before_any_reply_showing_newer_data() {
    let s = server();
    let addr = s.connect_string();
    let mut setup = Client::connect(&addr);
    setup.create("/o", b"", 0).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let addr = addr.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut a = Client::connect(&addr);
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                a.set_data("/o", b"x", -1).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut b = Client::connect(&addr);
    let mut checked = 0;
    for _ in 0..300 {
        b.events.clear();
        let (_, st) = b.get_data("/o", true).unwrap();
        // Read without a watch until the data moves on; the event must already be there.
        loop {
            let (_, now) = b.get_data("/o", false).unwrap();
            if now.version > st.version {
                // Packets are read in order: the event must have been queued before this reply.
                assert!(
                    b.events.iter().any(|e| *e == ev(EventType::NodeDataChanged, "/o")),
                    "reply with version {} before the event",
                    now.version
                );
                checked += 1;
                break;
            }
        }
        // Consume the event of this round.
        while b.events.is_empty() {
            b.next_packet(WAIT).unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(writer.join().unwrap() > 0);
    assert_eq!(checked, 300);
}

#[test]
fn the_timeout_zero_reply_survives_pipelined_client_bytes() {
    let s = server();
    let addr = s.connect_string();
    for _ in 0..20 {
        let mut t = Client::tcp(&addr);
        let mut bytes = frame(|o| connect_request(0x77, vec![1; 16], 30000, 0).encode(o));
        for xid in 1..50 {
            bytes.extend(frame(|o| {
                zk_proto::RequestHeader {
                    xid,
                    op: OpCode::Exists.code(),
                }
                .encode(o);
                PathWatchRequest {
                    path: "/".into(),
                    watch: false,
                }
                .encode(o);
            }));
        }
        t.write_all(&bytes).unwrap();
        let mut c = Client::wrap(t);
        let f = c.read_frame(WAIT).expect("the ConnectResponse arrives");
        let resp = ConnectResponse::from_bytes(&f).unwrap();
        assert_eq!(resp.timeout, 0);
        assert!(matches!(c.read_until_closed(WAIT), Closed::Yes(f) if f.is_empty()));
    }
}
