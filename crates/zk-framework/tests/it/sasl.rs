//! SASL DIGEST-MD5 on the embedded server (which speaks it as a ZooKeeper 3.8
//! server with a `DigestLoginModule` JAAS section, the `sasl` auth provider
//! and, when asked, SASL enforcement): the exchange, the `sasl:<user>`
//! identity ACLs match, every refusal a typed error and a final state within
//! the connect timeout (never a reconnect loop), the exchange again on every
//! new connection and session, requests held until it is done, and no
//! password in `Debug`, errors or logs; and SASL over TLS on the backend
//! `ZK_TEST_SERVER` selects. The same on real ZooKeeper is
//! `sasl_apache_digest`; Kerberos is `sasl_kerberos`.

use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_framework::{
    perms, Acl, Client, ClientConfig, ClientState, ConnectionState, CreateMode, CuratorFramework, Error, RetryOneTime,
    SaslConfig, SaslErrorKind,
};
use zk_testing::embedded::{EmbeddedServer, ServerConfig, ServerSasl};
use zk_testing::wait_until;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Room for a loaded machine over a bound.
const MARGIN: Duration = Duration::from_secs(2);

fn users() -> ServerSasl {
    ServerSasl::digest(&[("bob", "bobsecret"), ("alice", "alicesecret"), ("admin", "adminsecret")])
}

fn server(sasl: Option<ServerSasl>) -> EmbeddedServer {
    EmbeddedServer::start(ServerConfig {
        sasl,
        ..ServerConfig::default()
    })
    .unwrap()
}

fn config(sasl: Option<SaslConfig>) -> ClientConfig {
    ClientConfig {
        connect_timeout: CONNECT_TIMEOUT,
        session_timeout: Duration::from_secs(10),
        sasl,
        ..ClientConfig::default()
    }
}

fn digest(user: &str, password: &str) -> Option<SaslConfig> {
    Some(SaslConfig::digest_md5(user, password).unwrap())
}

/// A client connected with `sasl` (panics if it does not connect).
fn connected(s: &EmbeddedServer, sasl: Option<SaslConfig>) -> Client {
    let c = Client::connect(&s.connect_string(), config(sasl)).unwrap();
    c.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN).unwrap();
    c
}

/// Connects with `sasl` and expects a refusal of `kind`: the error within the
/// connect timeout, the client ended in `AuthFailed`, the password nowhere.
fn refused(s: &EmbeddedServer, sasl: Option<SaslConfig>, kind: SaslErrorKind, password: &str) -> Client {
    let t0 = Instant::now();
    let c = Client::connect(&s.connect_string(), config(sasl)).unwrap();
    let e = c.wait_connected(Instant::now() + Duration::from_secs(30)).unwrap_err();
    let elapsed = t0.elapsed();
    let Error::Sasl(se) = &e else {
        panic!("not a SASL error: {e:?}")
    };
    assert_eq!(se.kind(), kind, "{e}");
    assert!(elapsed <= CONNECT_TIMEOUT + MARGIN, "refused after {elapsed:?}");
    assert_eq!(c.state(), ClientState::AuthFailed);
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains(password), "{text}");
    }
    // Every later call is told the same, at once.
    let t1 = Instant::now();
    assert!(matches!(c.get_data("/"), Err(Error::Sasl(x)) if x.kind() == kind));
    assert!(t1.elapsed() < MARGIN);
    c
}

#[test]
fn digest_md5_gives_the_connection_a_sasl_identity_that_sasl_acls_match() {
    let s = server(Some(users()));
    let bob = connected(&s, digest("bob", "bobsecret"));
    let alice = connected(&s, digest("alice", "alicesecret"));
    let anonymous = connected(&s, None);

    bob.create(
        "/sasl-a",
        b"mine",
        &[Acl::sasl("bob", perms::ALL)],
        CreateMode::Persistent,
    )
    .unwrap();
    assert_eq!(bob.get_data("/sasl-a").unwrap().0, b"mine");
    assert_eq!(bob.get_acl("/sasl-a").unwrap().0, vec![Acl::sasl("bob", perms::ALL)]);
    for other in [&alice, &anonymous] {
        assert!(matches!(other.get_data("/sasl-a"), Err(Error::NoAuth { .. })));
        assert!(matches!(
            other.set_data("/sasl-a", b"x", None),
            Err(Error::NoAuth { .. })
        ));
    }
    // CREATOR_ALL_ACL (the `auth` scheme) expands to the SASL identity.
    bob.create("/sasl-creator", b"", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    assert_eq!(
        bob.get_acl("/sasl-creator").unwrap().0,
        vec![Acl::sasl("bob", perms::ALL)]
    );
    assert!(matches!(alice.get_data("/sasl-creator"), Err(Error::NoAuth { .. })));
    // ... which an unauthenticated connection does not have.
    assert!(matches!(
        anonymous.create("/sasl-none", b"", &Acl::creator_all(), CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));
    // Two exchanges of two rounds each, and no more.
    assert_eq!(s.stats().requests(OpCode::Sasl), 4);
}

#[test]
fn sasl_acl_ids_must_be_kerberos_names_and_need_the_provider() {
    let s = server(Some(users()));
    let bob = connected(&s, digest("bob", "bobsecret"));
    for (i, good) in ["bob", "app@EXAMPLE.COM", "zookeeper/host@R", "a/b"]
        .into_iter()
        .enumerate()
    {
        bob.create(
            &format!("/good-{i}"),
            b"",
            &[Acl::sasl(good, perms::ALL)],
            CreateMode::Persistent,
        )
        .unwrap();
    }
    for bad in ["a@b@c", "a/b/c@R", "a@R/x"] {
        assert!(
            matches!(
                bob.create("/bad", b"", &[Acl::sasl(bad, perms::ALL)], CreateMode::Persistent),
                Err(Error::InvalidAcl { .. })
            ),
            "{bad}"
        );
    }
    // A server without SASL has no `sasl` scheme.
    let plain = server(None);
    let c = connected(&plain, None);
    assert!(matches!(
        c.create("/s", b"", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));
}

#[test]
fn a_super_user_passes_every_acl() {
    let s = server(Some(users().super_user("admin")));
    let bob = connected(&s, digest("bob", "bobsecret"));
    let admin = connected(&s, digest("admin", "adminsecret"));
    bob.create(
        "/sasl-super",
        b"b",
        &[Acl::sasl("bob", perms::ALL)],
        CreateMode::Persistent,
    )
    .unwrap();
    assert_eq!(admin.get_data("/sasl-super").unwrap().0, b"b");
    admin.delete("/sasl-super", None).unwrap();
}

#[test]
fn wrong_credentials_end_the_client_in_auth_failed_without_reconnecting() {
    for required in [false, true] {
        let s = server(Some(users().required(required)));
        refused(&s, digest("bob", "not-bobs"), SaslErrorKind::Rejected, "not-bobs");
        refused(&s, digest("mallory", "m4ll0ry"), SaslErrorKind::Rejected, "m4ll0ry");
        // One connection each, a challenge and a refused response: the client
        // stopped rather than try again.
        assert_eq!(s.stats().requests(OpCode::Sasl), 4, "required {required}");
    }
}

#[test]
fn a_client_without_sasl_on_a_server_that_requires_it_is_told_so_and_stops() {
    let s = server(Some(users().required(true)));
    let c = Client::connect(&s.connect_string(), config(None)).unwrap();
    // The session is made; the first request meets the refusal.
    c.wait_connected(Instant::now() + CONNECT_TIMEOUT).unwrap();
    let e = c.get_data("/").unwrap_err();
    assert!(
        matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::Required),
        "{e:?}"
    );
    assert_eq!(c.state(), ClientState::AuthFailed);
    assert!(matches!(c.exists("/"), Err(Error::Sasl(x)) if x.kind() == SaslErrorKind::Required));
    let before = s.stats().total_connections;
    // Nothing reconnects: the client ended.
    assert!(!wait_until(Duration::from_millis(1500), || s.stats().total_connections > before));
}

#[test]
fn a_client_with_sasl_on_a_server_without_it_is_told_so() {
    let s = server(None);
    refused(&s, digest("bob", "bobsecret"), SaslErrorKind::NotOffered, "bobsecret");
}

#[test]
fn requests_made_while_connecting_wait_for_the_exchange() {
    let s = server(Some(users().required(true)));
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .sasl(SaslConfig::digest_md5("bob", "bobsecret").unwrap())
        .connection_timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap();
    // No wait for the connection: these calls are made while it is being
    // made, from several threads, and must go out only after the exchange
    // (else -124 would end the client).
    std::thread::scope(|scope| {
        for t in 0..4 {
            let c = &c;
            scope.spawn(move || {
                for i in 0..5 {
                    c.create().for_path(&format!("/early-{t}-{i}")).unwrap();
                }
            });
        }
    });
    assert_eq!(c.get_children("/").unwrap().len(), 21);
    assert_eq!(c.zookeeper_client().state(), ClientState::Connected);
    c.close();
}

#[test]
fn every_new_connection_authenticates_again() {
    let s = server(Some(users().required(true)));
    let bob = connected(&s, digest("bob", "bobsecret"));
    bob.create("/again", b"v", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent)
        .unwrap();
    let session = bob.session_id();
    for round in 1..=3u64 {
        assert!(s.drop_connections() >= 1);
        // Under enforcement a request that raced ahead of the exchange would
        // end the client: a successful read proves the order.
        assert!(wait_until(Duration::from_secs(10), || bob.get_data("/again").is_ok()));
        assert_eq!(bob.session_id(), session);
        assert_eq!(bob.state(), ClientState::Connected);
        assert_eq!(s.stats().requests(OpCode::Sasl), 2 + 2 * round);
    }
}

#[test]
fn a_connection_lost_mid_exchange_is_tried_again_not_refused() {
    let s = server(Some(users().required(true)));
    // The reply to the first SASL token is dropped and the connection closed.
    s.drop_next_reply(OpCode::Sasl);
    let c = connected(&s, digest("bob", "bobsecret"));
    c.create("/mid", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    // The session made before the break is resumed, not left beside another.
    assert_eq!(s.sessions().len(), 1);
}

#[test]
fn a_managed_client_reports_auth_failed_and_authenticates_a_new_session() {
    let s = server(Some(users().required(true)));
    // Refused: block_until_connected says why at once, listeners hear AUTH_FAILED.
    let bad = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .sasl(SaslConfig::digest_md5("bob", "wrong").unwrap())
        .connection_timeout(CONNECT_TIMEOUT)
        .retry_policy(RetryOneTime::new(Duration::from_millis(10)))
        .build()
        .unwrap();
    let states = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = states.clone();
    let _h = bad.add_listener(move |st| seen.lock().push(st));
    let t0 = Instant::now();
    let e = bad.block_until_connected(Duration::from_secs(30)).unwrap_err();
    assert!(
        matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::Rejected),
        "{e:?}"
    );
    assert!(t0.elapsed() <= CONNECT_TIMEOUT + MARGIN, "{:?}", t0.elapsed());
    assert!(wait_until(Duration::from_secs(5), || states
        .lock()
        .contains(&ConnectionState::AuthFailed)));
    assert!(matches!(bad.get_data("/"), Err(Error::Sasl(_))));
    bad.close();

    // Accepted, and again for a new session after an expiry.
    let good = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .sasl(SaslConfig::digest_md5("bob", "bobsecret").unwrap())
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap();
    good.block_until_connected(Duration::from_secs(10)).unwrap();
    good.create()
        .with_acl(vec![Acl::sasl("bob", perms::ALL)])
        .with_data(b"m".to_vec())
        .for_path("/managed")
        .unwrap();
    let first = good.zookeeper_client().session_id();
    assert!(s.expire_session(first));
    assert!(wait_until(Duration::from_secs(20), || {
        good.zookeeper_client().session_id() != first && good.get_data("/managed").is_ok()
    }));
    good.close();
}

#[test]
fn no_password_in_debug_output() {
    let sasl = SaslConfig::digest_md5("bob", "hunter2-secret").unwrap();
    let cfg = ClientConfig::default().with_sasl(sasl.clone());
    let builder = CuratorFramework::builder().sasl(sasl.clone());
    for text in [format!("{sasl:?}"), format!("{cfg:?}"), format!("{builder:?}")] {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("bob"), "{text}");
    }
    let server = format!("{:?}", ServerSasl::digest(&[("bob", "hunter2-secret")]));
    assert!(!server.contains("hunter2"), "{server}");
}

#[test]
fn bad_sasl_settings_are_typed_errors() {
    for (user, password) in [("", "pw"), ("bob", ""), ("bob", "pw\n"), ("b\0b", "pw")] {
        let e = SaslConfig::digest_md5(user, password).unwrap_err();
        assert!(
            matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::InvalidConfig),
            "{e:?}"
        );
        if !password.is_empty() {
            assert!(!e.to_string().contains(password.trim()), "{e}");
        }
    }
    let missing = std::env::temp_dir().join("zk-sasl-no-such-file");
    assert!(matches!(
        SaslConfig::digest_md5_password_file("bob", &missing),
        Err(Error::Sasl(x)) if x.kind() == SaslErrorKind::InvalidConfig
    ));
}

/// Every log record of the process, at every level, while SASL succeeds,
/// fails, reconnects and ends: none carries a password (alone in its
/// process: the logger is process-wide).
#[test]
fn no_password_in_any_log_record() {
    if zk_testing::support::in_own_process("sasl::no_password_in_any_log_record") {
        return;
    }
    struct Recorder(parking_lot::Mutex<Vec<String>>);
    impl log::Log for Recorder {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, r: &log::Record<'_>) {
            self.0.lock().push(format!("{} {}", r.target(), r.args()));
        }
        fn flush(&self) {}
    }
    // The logger lives as long as the process (this test's own).
    let rec: &'static Recorder = Box::leak(Box::new(Recorder(parking_lot::Mutex::new(Vec::new()))));
    log::set_logger(rec).unwrap();
    log::set_max_level(log::LevelFilter::Trace);

    let s = server(Some(users().required(true)));
    let good = connected(&s, digest("bob", "bobsecret"));
    good.create("/logged", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    s.drop_connections();
    assert!(wait_until(Duration::from_secs(10), || good.exists("/logged").is_ok()));
    refused(
        &s,
        digest("bob", "wrong-pw-123"),
        SaslErrorKind::Rejected,
        "wrong-pw-123",
    );
    refused(
        &s,
        digest("nobody", "nobody-pw-456"),
        SaslErrorKind::Rejected,
        "nobody-pw-456",
    );
    good.close();
    let records = rec.0.lock();
    assert!(
        records.len() > 20,
        "too few records to mean anything: {}",
        records.len()
    );
    for r in records.iter() {
        for secret in ["bobsecret", "wrong-pw-123", "nobody-pw-456"] {
            assert!(!r.contains(secret), "{r}");
        }
    }
}

/// SASL over TLS (the server's secure client port) on the backend
/// `ZK_TEST_SERVER` selects: the exchange runs inside the TLS connection,
/// the identity and the refusals are the same as without TLS.
#[test]
fn sasl_over_tls() {
    use zk_framework::TlsConfig;
    use zk_testing::apache::{ApacheConfig, ApacheSasl};
    use zk_testing::{Backend, TestingServer};
    let pki = zk_testing::tls::TestPki::new("sasl-over-tls CA").unwrap();
    let tls = pki.server_tls().unwrap();
    let s = match Backend::from_env().unwrap() {
        Backend::Embedded => TestingServer::embedded_with(ServerConfig {
            tls: Some(tls),
            sasl: Some(users().required(true)),
            ..ServerConfig::default()
        }),
        Backend::Apache => TestingServer::apache_with(ApacheConfig {
            tls: Some(tls),
            sasl: Some(
                ApacheSasl::digest_md5(&[("bob", "bobsecret"), ("alice", "alicesecret")]).requiring_client_sasl(),
            ),
            ..ApacheConfig::default()
        }),
    }
    .unwrap();
    assert!(s.is_tls());
    let trust = TlsConfig::builder().ca_pem(pki.ca_pem().as_bytes()).build().unwrap();
    let over_tls = |sasl: Option<SaslConfig>| {
        let mut cfg = config(sasl);
        cfg.tls = Some(trust.clone());
        Client::connect(&s.connect_string(), cfg).unwrap()
    };
    let bob = over_tls(digest("bob", "bobsecret"));
    bob.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN).unwrap();
    bob.create("/tls-sasl", b"", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    assert_eq!(bob.get_acl("/tls-sasl").unwrap().0, vec![Acl::sasl("bob", perms::ALL)]);
    let alice = over_tls(digest("alice", "alicesecret"));
    alice.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN).unwrap();
    assert!(matches!(alice.get_data("/tls-sasl"), Err(Error::NoAuth { .. })));
    // A wrong password over TLS: refused within the connect timeout.
    let t0 = Instant::now();
    let wrong = over_tls(digest("bob", "tls-wrong-pw"));
    let e = wrong
        .wait_connected(Instant::now() + Duration::from_secs(30))
        .unwrap_err();
    assert!(
        matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::Rejected),
        "{e:?}"
    );
    assert!(t0.elapsed() <= CONNECT_TIMEOUT + MARGIN, "{:?}", t0.elapsed());
    assert!(!e.to_string().contains("tls-wrong-pw"));
    // Without SASL, on a server that requires it: told so, over TLS too.
    let none = over_tls(None);
    none.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN).unwrap();
    assert!(matches!(none.get_data("/"), Err(Error::Sasl(x)) if x.kind() == SaslErrorKind::Required));
}
