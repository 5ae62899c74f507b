//! SASL DIGEST-MD5 against real Apache ZooKeeper 3.8 whose JAAS `Server`
//! section is `DigestLoginModule` (`zk_testing::apache::ApacheSasl`), with
//! the `sasl` auth provider and, when asked, enforcement: the `sasl:<user>`
//! identity that `sasl` ACLs match, wrong passwords and unknown users refused
//! within the connect timeout without reconnecting, an unauthenticated
//! client told once that the server requires SASL, a server without SASL,
//! and the exchange again after the server restarts. The same on the
//! embedded server is `sasl`; Kerberos is `sasl_kerberos`.
//!
//! These need Apache ZooKeeper whatever `ZK_TEST_SERVER` says: without it
//! they print a line and pass, unless `ZK_TEST_REQUIRE_APACHE=1` (CI).
//!
//! The identity a connection gets is read back through the `auth` ACL scheme
//! (`Acl::creator_all`), which ZooKeeper expands to the connection's `sasl`
//! id: this client has no whoAmI call.

use std::time::{Duration, Instant};

use zk_framework::{perms, Acl, Client, ClientConfig, ClientState, CreateMode, Error, SaslConfig, SaslErrorKind};
use zk_testing::apache::{self, ApacheConfig, ApacheSasl};
use zk_testing::support::init_log;
use zk_testing::{wait_until, TestingServer};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Room for a loaded machine over a bound.
const MARGIN: Duration = Duration::from_secs(2);

fn users() -> ApacheSasl {
    ApacheSasl::digest_md5(&[("bob", "bobsecret"), ("alice", "alicesecret")])
}

/// Apache ZooKeeper with `sasl` (none: no JAAS section), or `None` when it is
/// not installed (the test then passes, having said so).
fn server(test: &str, sasl: Option<ApacheSasl>) -> Option<TestingServer> {
    if !apache::available_or_skip(test) {
        return None;
    }
    init_log();
    Some(
        TestingServer::apache_with(ApacheConfig {
            sasl,
            ..ApacheConfig::default()
        })
        .expect("start Apache ZooKeeper"),
    )
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

fn connected(s: &TestingServer, sasl: Option<SaslConfig>) -> Client {
    let c = Client::connect(&s.connect_string(), config(sasl)).unwrap();
    c.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN).unwrap();
    c
}

/// The connection's `sasl` id, as ZooKeeper expands `auth` ACLs to it.
fn identity(c: &Client, path: &str) -> Vec<Acl> {
    c.create(path, b"", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    c.get_acl(path).unwrap().0
}

/// Connects with `sasl` and expects a refusal of `kind`: the error within the
/// connect timeout, the client ended in `AuthFailed` and not reconnecting,
/// the password nowhere.
fn refused(s: &TestingServer, sasl: Option<SaslConfig>, kind: SaslErrorKind, password: &str) {
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
    let attempts = c.connect_attempts();
    assert!(!wait_until(Duration::from_millis(1500), || c.connect_attempts() > attempts));
    assert!(matches!(c.get_data("/"), Err(Error::Sasl(x)) if x.kind() == kind));
}

#[test]
fn the_right_password_gives_a_sasl_id_that_sasl_acls_match() {
    let Some(s) = server(
        "sasl_apache_digest::the_right_password_gives_a_sasl_id_that_sasl_acls_match",
        Some(users()),
    ) else {
        return;
    };
    let bob = connected(&s, digest("bob", "bobsecret"));
    let alice = connected(&s, digest("alice", "alicesecret"));
    let anonymous = connected(&s, None);
    assert_eq!(identity(&bob, "/who-bob"), vec![Acl::sasl("bob", perms::ALL)]);
    assert_eq!(identity(&alice, "/who-alice"), vec![Acl::sasl("alice", perms::ALL)]);
    // Without SASL there is no id for `auth` to expand to.
    assert!(matches!(
        anonymous.create("/who-none", b"", &Acl::creator_all(), CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));

    bob.create("/bobs", b"b", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent)
        .unwrap();
    assert_eq!(bob.get_data("/bobs").unwrap().0, b"b");
    assert_eq!(bob.get_acl("/bobs").unwrap().0, vec![Acl::sasl("bob", perms::ALL)]);
    for other in [&alice, &anonymous] {
        assert!(matches!(other.get_data("/bobs"), Err(Error::NoAuth { .. })));
        assert!(matches!(other.set_data("/bobs", b"x", None), Err(Error::NoAuth { .. })));
    }
    // Read for everyone, write for alice only.
    alice
        .create(
            "/mixed",
            b"m",
            &[Acl::sasl("alice", perms::ALL), Acl::world(perms::READ)],
            CreateMode::Persistent,
        )
        .unwrap();
    assert_eq!(bob.get_data("/mixed").unwrap().0, b"m");
    assert!(matches!(bob.set_data("/mixed", b"x", None), Err(Error::NoAuth { .. })));
}

#[test]
fn a_wrong_password_or_an_unknown_user_is_rejected_within_the_connect_timeout() {
    let name = "sasl_apache_digest::a_wrong_password_or_an_unknown_user_is_rejected_within_the_connect_timeout";
    for sasl in [users(), users().enforced(), users().requiring_client_sasl()] {
        let Some(s) = server(name, Some(sasl)) else { return };
        refused(&s, digest("bob", "not-bobs"), SaslErrorKind::Rejected, "not-bobs");
        refused(&s, digest("mallory", "m4ll0ry"), SaslErrorKind::Rejected, "m4ll0ry");
        // The right password still works there.
        connected(&s, digest("bob", "bobsecret")).exists("/").unwrap();
    }
}

#[test]
fn enforcement_admits_sasl_and_tells_an_unauthenticated_client_once() {
    let name = "sasl_apache_digest::enforcement_admits_sasl_and_tells_an_unauthenticated_client_once";
    for sasl in [users().enforced(), users().requiring_client_sasl()] {
        let Some(s) = server(name, Some(sasl)) else { return };
        let bob = connected(&s, digest("bob", "bobsecret"));
        bob.create("/open", b"o", &Acl::open_unsafe(), CreateMode::Persistent)
            .unwrap();
        // The session is made; its first request meets the refusal.
        let plain = connected(&s, None);
        let t0 = Instant::now();
        let e = plain.get_data("/open").unwrap_err();
        assert!(t0.elapsed() <= CONNECT_TIMEOUT + MARGIN, "{:?}", t0.elapsed());
        assert!(
            matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::Required),
            "{e:?}"
        );
        assert_eq!(plain.state(), ClientState::AuthFailed);
        assert!(matches!(plain.exists("/"), Err(Error::Sasl(x)) if x.kind() == SaslErrorKind::Required));
        // It ended: no reconnect loop.
        let attempts = plain.connect_attempts();
        assert!(!wait_until(Duration::from_millis(1500), || plain.connect_attempts() > attempts));
        assert_eq!(bob.get_data("/open").unwrap().0, b"o");
    }
}

#[test]
fn without_enforcement_an_unauthenticated_client_gets_in_and_only_what_acls_allow() {
    let name = "sasl_apache_digest::without_enforcement_an_unauthenticated_client_gets_in_and_only_what_acls_allow";
    let Some(s) = server(name, Some(users())) else { return };
    let bob = connected(&s, digest("bob", "bobsecret"));
    bob.create("/open", b"o", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    bob.create("/closed", b"c", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent)
        .unwrap();
    let plain = connected(&s, None);
    assert_eq!(plain.get_data("/open").unwrap().0, b"o");
    assert!(matches!(plain.get_data("/closed"), Err(Error::NoAuth { .. })));
    assert_eq!(plain.state(), ClientState::Connected);
}

#[test]
fn a_server_without_sasl_is_told_as_such() {
    let Some(s) = server("sasl_apache_digest::a_server_without_sasl_is_told_as_such", None) else {
        return;
    };
    refused(&s, digest("bob", "bobsecret"), SaslErrorKind::NotOffered, "bobsecret");
    // Nor does it know the `sasl` scheme.
    let plain = connected(&s, None);
    assert!(matches!(
        plain.create("/s", b"", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));
}

#[test]
fn a_restarted_server_authenticates_the_resumed_session_again() {
    let name = "sasl_apache_digest::a_restarted_server_authenticates_the_resumed_session_again";
    let Some(s) = server(name, Some(users().enforced())) else {
        return;
    };
    let bob = connected(&s, digest("bob", "bobsecret"));
    bob.create("/kept", b"k", &[Acl::sasl("bob", perms::ALL)], CreateMode::Persistent)
        .unwrap();
    let session = bob.session_id();
    for round in 0..2 {
        s.restart().unwrap();
        // Under enforcement a request ahead of the exchange would end the
        // client (-124): a read proves the order.
        assert!(wait_until(Duration::from_secs(30), || bob.get_data("/kept").is_ok()));
        assert_eq!(bob.session_id(), session);
        assert_eq!(bob.state(), ClientState::Connected);
        // The new connection's identity is bob's again.
        assert_eq!(
            identity(&bob, &format!("/after-restart-{round}")),
            vec![Acl::sasl("bob", perms::ALL)]
        );
    }
}
