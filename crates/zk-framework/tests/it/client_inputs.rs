//! Bad input gives typed errors, never a panic, and nothing is sent: connect
//! strings, timeouts, paths, data sizes, ACLs, TTLs, auth. No server needed.

use std::time::{Duration, Instant};

use crate::support::closed_port;
use zk_framework::proto::{Acl, CreateMode};
use zk_framework::Error;
use zk_framework::{Client, ClientConfig, Op};

/// A host name that does not resolve (one label over 63 bytes: rejected by the
/// resolver itself, no DNS traffic).
const UNRESOLVABLE: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.invalid:2181";

/// A client that never connects (closed port): local checks must still win.
fn offline() -> Client {
    Client::connect(&format!("127.0.0.1:{}", closed_port()), ClientConfig::default()).unwrap()
}

#[test]
fn connect_strings() {
    let bad = [
        "",
        "   ",
        ",",
        ",,,",
        "/chroot",
        "host:",
        "host:0",
        "host:65536",
        "host:99999999999",
        "host:-1",
        "host:abc",
        "host:1:2",
        "::1",
        "[::1",
        "[zz]:1",
        "[::1]:x",
        "bad host:1",
        "host!:1",
        "127.0.0.1:2181/bad/",
        "127.0.0.1:2181//x",
        "127.0.0.1:2181/a/../b",
        "127.0.0.1:2181/\u{1}",
        // Unresolvable: a label over 63 bytes fails in the resolver without any
        // DNS query leaving the machine.
        UNRESOLVABLE,
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.invalid:2181,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.invalid",
        "\u{0}",
        "💥:1",
    ];
    for s in bad {
        match Client::connect(s, ClientConfig::default()) {
            Err(Error::InvalidConnectString { input, reason }) => {
                assert_eq!(input, s);
                assert!(!reason.is_empty());
            }
            other => panic!("{s:?} gave {other:?}"),
        }
    }
    let port = closed_port();
    for s in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        format!(" 127.0.0.1:{port} , localhost:{port} "),
        format!("localhost:{port},{UNRESOLVABLE}"),
        format!("[::1]:{port}/app"),
        format!("127.0.0.1:{port}/"),
    ] {
        let c = Client::connect(&s, ClientConfig::default()).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        c.close();
    }
}

#[test]
fn timeouts_and_sizes() {
    let addr = format!("127.0.0.1:{}", closed_port());
    let bad = [
        ClientConfig::default().with_session_timeout(Duration::ZERO),
        ClientConfig::default().with_session_timeout(Duration::from_millis(i32::MAX as u64 + 1)),
        ClientConfig::default().with_session_timeout(Duration::MAX),
        ClientConfig::default().with_connect_timeout(Duration::ZERO),
        ClientConfig::default().with_connect_timeout(Duration::MAX),
        ClientConfig {
            max_frame: 0,
            ..ClientConfig::default()
        },
        ClientConfig {
            max_frame: usize::MAX,
            ..ClientConfig::default()
        },
        ClientConfig::default().with_session(0, vec![0; 16]),
    ];
    for cfg in bad {
        let dbg = format!("{cfg:?}");
        assert!(
            matches!(Client::connect(&addr, cfg), Err(Error::InvalidArgument(_))),
            "{dbg} was accepted"
        );
    }
    // Sub-millisecond but non-zero timeouts are fine (rounded up by the server).
    Client::connect(
        &addr,
        ClientConfig::default().with_session_timeout(Duration::from_millis(1)),
    )
    .unwrap()
    .close();
}

#[test]
fn invalid_paths_are_rejected_before_sending() {
    let zk = offline();
    let acl = Acl::open_unsafe();
    let bad_paths = [
        "",
        "a",
        "/a/",
        "//a",
        "/a//b",
        "/.",
        "/a/..",
        "/a/./b",
        "/a\0b",
        "/\u{1}",
        "/\u{1F600}",
    ];
    for p in bad_paths {
        let results: Vec<(&str, Result<(), Error>)> = vec![
            ("create", zk.create(p, b"", &acl, CreateMode::Persistent).map(|_| ())),
            ("create2", zk.create2(p, b"", &acl, CreateMode::Persistent).map(|_| ())),
            (
                "create_ttl",
                zk.create_ttl(p, b"", &acl, CreateMode::PersistentWithTtl, Duration::from_secs(1))
                    .map(|_| ()),
            ),
            ("delete", zk.delete(p, None)),
            ("exists", zk.exists(p).map(|_| ())),
            (
                "exists_w",
                zk.exists_w(p, |_e: zk_framework::WatchedEvent| {}).map(|_| ()),
            ),
            ("get_data", zk.get_data(p).map(|_| ())),
            (
                "get_data_w",
                zk.get_data_w(p, |_e: zk_framework::WatchedEvent| {}).map(|_| ()),
            ),
            ("set_data", zk.set_data(p, b"", None).map(|_| ())),
            ("get_children", zk.get_children(p).map(|_| ())),
            (
                "get_children_w",
                zk.get_children_w(p, |_e: zk_framework::WatchedEvent| {}).map(|_| ()),
            ),
            ("get_children2", zk.get_children2(p).map(|_| ())),
            (
                "get_children2_w",
                zk.get_children2_w(p, |_e: zk_framework::WatchedEvent| {}).map(|_| ()),
            ),
            ("sync", zk.sync(p)),
            ("check", zk.check(p, 0)),
            ("get_acl", zk.get_acl(p).map(|_| ())),
            ("set_acl", zk.set_acl(p, &acl, None).map(|_| ())),
            (
                "multi",
                zk.multi(vec![Op::check("/ok", 0), Op::delete(p, None)]).map(|_| ()),
            ),
        ];
        for (op, r) in results {
            assert!(matches!(r, Err(Error::InvalidPath(_))), "{op}({p:?}) gave {r:?}");
        }
    }
    // Valid paths get through the checks and meet the missing connection.
    assert_eq!(zk.exists("/a..b/..."), Err(Error::ConnectionLoss));
    assert_eq!(
        zk.create("/seq/", b"", &acl, CreateMode::PersistentSequential)
            .map(|_| ()),
        Err(Error::ConnectionLoss),
        "a trailing / is fine for sequential nodes"
    );
    assert!(zk.registered_watches().is_empty());
}

#[test]
fn data_acl_ttl_and_auth_arguments() {
    let zk = offline();
    let acl = Acl::open_unsafe();
    let big = vec![0u8; 1_048_576];
    assert!(matches!(
        zk.create("/a", &big, &acl, CreateMode::Persistent),
        Err(Error::DataTooLarge {
            len: 1_048_576,
            max: 1_048_575
        })
    ));
    assert!(matches!(zk.set_data("/a", &big, None), Err(Error::DataTooLarge { .. })));
    // Data under the limit whose whole request is over it.
    let near = vec![0u8; 1_048_570];
    assert!(matches!(
        zk.set_data("/a", &near, None),
        Err(Error::DataTooLarge { .. })
    ));
    assert!(matches!(
        zk.multi(vec![
            Op::set_data("/a", vec![0u8; 600_000], None),
            Op::set_data("/b", vec![0u8; 600_000], None)
        ]),
        Err(Error::DataTooLarge { .. })
    ));
    assert!(matches!(
        zk.create("/a", b"", &[], CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));
    assert!(matches!(zk.set_acl("/a", &[], None), Err(Error::InvalidAcl { .. })));
    assert!(matches!(
        zk.create("/a", b"", &acl, CreateMode::PersistentWithTtl),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        zk.create_ttl("/a", b"", &acl, CreateMode::Ephemeral, Duration::from_secs(1)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        zk.create_ttl(
            "/a",
            b"",
            &acl,
            CreateMode::PersistentWithTtl,
            Duration::from_secs(u64::MAX)
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        zk.multi(vec![Op::create(
            "/a",
            vec![],
            acl.clone(),
            CreateMode::PersistentSequentialWithTtl
        )]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(zk.add_auth("", b"x"), Err(Error::InvalidArgument(_))));
    // Not connected: kept for the next connection, reported as ConnectionLoss.
    assert_eq!(zk.add_auth("digest", b"u:p"), Err(Error::ConnectionLoss));
}

#[test]
fn waiting_for_a_connection_that_never_comes() {
    let zk = offline();
    let t = Instant::now();
    assert_eq!(
        zk.wait_connected_timeout(Duration::from_millis(300)),
        Err(Error::ConnectionLoss)
    );
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(zk.wait_connected(Instant::now()), Err(Error::ConnectionLoss));
    assert_eq!(zk.session_id(), 0);
    assert_eq!(zk.negotiated_timeout(), None);
    zk.close();
    assert_eq!(zk.wait_connected_timeout(Duration::from_secs(1)), Err(Error::Closed));
}
