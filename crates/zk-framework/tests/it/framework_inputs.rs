//! Bad input to the managed client gives typed errors, never a panic or a hang:
//! garbage connect strings, an unreachable server, invalid paths and
//! namespaces, zero or huge timeouts, an out-of-range expiry percent.

use std::time::{Duration, Instant};

use crate::support::framework::*;
use zk_framework::proto::CreateMode;
use zk_framework::CuratorFramework;
use zk_framework::Error;
use zk_framework::{RetryForever, RetryNTimes};

fn unreachable() -> String {
    format!("127.0.0.1:{}", closed_port())
}

#[test]
fn garbage_connect_strings_are_rejected() {
    for cs in [
        "",
        "   ",
        "::::",
        "host:notaport",
        "host:0",
        "host:65536",
        "a:1/bad//chroot",
        "127.0.0.1:2181/trailing/",
        ",",
        "[::1",
        "[zz]:1",
        "bad host:1",
    ] {
        match builder_for(cs).build() {
            Err(Error::InvalidConnectString { input, reason }) => {
                assert!(!reason.is_empty(), "{cs:?}");
                assert_eq!(input, cs);
            }
            Err(e) => panic!("{cs:?}: unexpected error {e:?}"),
            Ok(c) => {
                c.close();
                panic!("{cs:?} was accepted");
            }
        }
    }
    let err = CuratorFramework::builder().build().unwrap_err();
    assert!(matches!(err, Error::InvalidConnectString { .. }), "{err:?}");
}

#[test]
fn an_unreachable_server_gives_connection_loss_in_bounded_time() {
    let cs = unreachable();
    let connection = Duration::from_millis(500);
    let client = builder_for(&cs)
        .connection_timeout(connection)
        .retry_policy(RetryNTimes::new(2, Duration::from_millis(50)))
        .build()
        .expect("building needs no server");
    assert_eq!(client.state(), None);
    let start = Instant::now();
    assert_eq!(
        client.block_until_connected(Duration::from_secs(1)),
        Err(Error::ConnectTimeout {
            waited: Duration::from_secs(1)
        })
    );
    assert!(start.elapsed() >= Duration::from_secs(1));

    let bound = timing().scale(Duration::from_secs(10));
    type Op<'a> = Box<dyn Fn() -> Result<(), Error> + 'a>;
    let ops: Vec<(&str, Op<'_>)> = vec![
        ("exists", Box::new(|| client.check_exists("/").map(|_| ()))),
        ("get_data", Box::new(|| client.get_data("/a").map(|_| ()))),
        ("create", Box::new(|| client.create().for_path("/a").map(|_| ()))),
        (
            "protected create",
            Box::new(|| {
                client
                    .create()
                    .with_protection()
                    .with_mode(CreateMode::EphemeralSequential)
                    .for_path("/l/lock-")
                    .map(|_| ())
            }),
        ),
        ("delete", Box::new(|| client.delete().guaranteed().for_path("/a"))),
    ];
    for (name, op) in ops {
        let start = Instant::now();
        // The cause, not a bare connection loss.
        let r = op();
        assert!(
            matches!(&r, Err(Error::ConnectFailed { reason }) if reason.contains("refused")),
            "{name}: {r:?}"
        );
        let took = start.elapsed();
        assert!(
            took >= connection,
            "{name} gave up after {took:?}, before the connection timeout"
        );
        assert!(took < bound, "{name} took {took:?}");
    }
    // The guaranteed delete and the protected create's cleanup go on in the
    // background until close.
    assert!(client.recipe().pending_background_deletes() >= 2);
    let start = Instant::now();
    client.close();
    assert!(
        start.elapsed() < timing().scale(Duration::from_secs(5)),
        "close is bounded"
    );
    assert_eq!(client.check_exists("/"), Err(Error::Closed));
}

#[test]
fn invalid_paths_fail_before_anything_is_sent() {
    // No server: an invalid path must be reported at once, without waiting
    // for a connection.
    let client = builder_for(&unreachable())
        .connection_timeout(timing().scale(Duration::from_secs(10)))
        .build()
        .unwrap();
    let start = Instant::now();
    for p in ["", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/../b", "/a\u{0}b"] {
        assert!(
            matches!(client.get_data(p), Err(Error::InvalidPath(_))),
            "get_data {p:?}"
        );
        assert!(
            matches!(client.check_exists(p), Err(Error::InvalidPath(_))),
            "exists {p:?}"
        );
        assert!(
            matches!(client.get_children(p), Err(Error::InvalidPath(_))),
            "children {p:?}"
        );
        assert!(
            matches!(client.set_data(p, vec![], None), Err(Error::InvalidPath(_))),
            "set {p:?}"
        );
        assert!(
            matches!(client.create().for_path(p), Err(Error::InvalidPath(_))),
            "create {p:?}"
        );
        assert!(
            matches!(client.delete().for_path(p), Err(Error::InvalidPath(_))),
            "delete {p:?}"
        );
        assert!(
            matches!(client.recipe().delete_in_background(p), Err(Error::InvalidPath(_))),
            "bg {p:?}"
        );
        let (tx, _rx) = crossbeam_channel::unbounded();
        assert!(
            matches!(client.get_data_w(p, tx), Err(Error::InvalidPath(_))),
            "get_data_w {p:?}"
        );
    }
    assert!(matches!(
        client.create().with_protection().for_path("relative"),
        Err(Error::InvalidPath(_))
    ));
    assert!(matches!(
        client.create().with_data(vec![0; 2 << 20]).for_path("/big"),
        Err(Error::DataTooLarge { .. })
    ));
    assert!(
        start.elapsed() < timing().scale(Duration::from_secs(2)),
        "validation waited for a connection"
    );
    assert_eq!(client.recipe().pending_background_deletes(), 0);
    client.close();
}

#[test]
fn invalid_namespaces_are_rejected() {
    for ns in ["a/b", "/x", "", "x/", ".", "..", "a\u{0}"] {
        match builder_for("127.0.0.1:2181").namespace(ns).build() {
            Err(Error::InvalidArgument(_)) | Err(Error::InvalidPath(_)) => {}
            Err(e) => panic!("namespace {ns:?}: unexpected {e:?}"),
            Ok(c) => {
                c.close();
                panic!("namespace {ns:?} was accepted");
            }
        }
    }
}

#[test]
fn bad_timeouts_and_percents_are_rejected() {
    let b = || builder_for("127.0.0.1:2181");
    let cases = vec![
        ("zero session timeout", b().session_timeout(Duration::ZERO)),
        ("zero connection timeout", b().connection_timeout(Duration::ZERO)),
        ("huge session timeout", b().session_timeout(Duration::MAX)),
        (
            "huge connection timeout",
            b().connection_timeout(Duration::from_secs(u64::MAX / 2)),
        ),
        (
            "session timeout above i32 ms",
            b().session_timeout(Duration::from_millis(i32::MAX as u64 + 1)),
        ),
        ("percent 0", b().simulated_session_expiration_percent(0)),
        ("percent 101", b().simulated_session_expiration_percent(101)),
        ("percent max", b().simulated_session_expiration_percent(u32::MAX)),
    ];
    for (name, builder) in cases {
        match builder.build() {
            Err(Error::InvalidArgument(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("{name}: unexpected {e:?}"),
            Ok(c) => {
                c.close();
                panic!("{name} was accepted");
            }
        }
    }
    for percent in [1, 100] {
        let c = builder_for(&unreachable())
            .simulated_session_expiration_percent(percent)
            .build()
            .unwrap();
        c.close();
    }
    assert!(matches!(
        RetryForever::new(Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn bad_create_options_are_typed_errors() {
    let server = server();
    let r = connected(builder(&server));
    let c = &r.client;
    assert!(matches!(
        c.create().with_mode(CreateMode::PersistentWithTtl).for_path("/ttl"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.create().with_ttl(Duration::from_secs(1)).for_path("/ttl"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.create().with_acl(vec![]).for_path("/noacl"),
        Err(Error::InvalidAcl { .. })
    ));
    c.create().with_mode(CreateMode::Ephemeral).for_path("/eph").unwrap();
    assert!(matches!(
        c.create().for_path("/eph/child"),
        Err(Error::NoChildrenForEphemerals { .. })
    ));
    // A sequential path may end with '/'.
    c.create().for_path("/seq").unwrap();
    let p = c
        .create()
        .with_mode(CreateMode::PersistentSequential)
        .for_path("/seq/")
        .unwrap();
    assert_eq!(p, "/seq/0000000000");
}

/// Credentials the server could not use are refused by `build()`, before
/// anything is sent, with the rule zk-lock applies to `--auth`
/// (`ClientConfig::validate_auth`); messages never repeat the secret.
#[test]
fn malformed_credentials_are_refused_at_build() {
    let server = server();
    for (scheme, auth, want) in [
        ("digest", &b"hunter2"[..], "USER:PASSWORD"),
        ("digest", b":hunter2", "the user is empty"),
        ("digest ", b"u:hunter2", "scheme"),
        (" digest", b"u:hunter2", "scheme"),
        ("digest\r", b"u:hunter2", "scheme"),
        ("", b"u:hunter2", "scheme"),
    ] {
        match builder(&server).authorization(scheme, auth).build() {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains(want) && !m.contains("hunter2"), "{scheme:?}: {m}");
            }
            Err(e) => panic!("{scheme:?}: unexpected error {e:?}"),
            Ok(c) => {
                c.close();
                panic!("{scheme:?} with bad credentials was accepted");
            }
        }
        assert!(zk_framework::ClientConfig::validate_auth(scheme, auth).is_err());
    }
    // Good credentials, an unknown scheme (the server's to refuse) and a
    // password with ':' in it are accepted.
    for (scheme, auth) in [("digest", &b"u:p:w"[..]), ("no-such-scheme", b"x"), ("x509", b"")] {
        let c = builder(&server).authorization(scheme, auth).build().unwrap();
        c.close();
    }
}
