//! SASL GSSAPI (Kerberos) against real Apache ZooKeeper 3.8 whose JAAS
//! `Server` section is `Krb5LoginModule`, with a throw-away MIT KDC
//! (`zk_testing::kdc`), both started here on loopback; behind the `gssapi`
//! feature. Each test runs in a process of its own (`in_own_process`): the
//! system's Kerberos library reads `KRB5_CONFIG` (and `KRB5CCNAME`) from the
//! process's environment, which each test sets for its own KDC before any
//! thread starts.
//!
//! Without the KDC's binaries or Apache ZooKeeper the tests print a line and
//! pass, unless `ZK_TEST_REQUIRE_KDC=1` / `ZK_TEST_REQUIRE_APACHE=1` (CI).
//!
//! The identity a connection gets is read back through the `auth` ACL scheme
//! (`Acl::creator_all`), which ZooKeeper expands to the connection's `sasl`
//! id: this client has no whoAmI call.

use std::time::{Duration, Instant};

use zk_framework::{
    perms, Acl, Client, ClientConfig, ClientState, CreateMode, CuratorFramework, Error, GssapiConfig, SaslConfig,
    SaslError, SaslErrorKind,
};
use zk_testing::apache::{self, ApacheConfig, ApacheSasl};
use zk_testing::kdc::{self, Kdc};
use zk_testing::support::{in_own_process, init_log};
use zk_testing::{wait_until, TestingServer};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Room for a loaded machine over a bound.
const MARGIN: Duration = Duration::from_secs(2);
const CLIENT: &str = "client@EXAMPLE.TEST";

/// In the test's own process (`None` in the parent, which ran it there, or
/// when the KDC or ZooKeeper is missing): a KDC, its `krb5.conf` in this
/// process's environment, and `KRB5CCNAME` set to a fresh `kinit` of
/// `client` when `default_cache`.
fn kerberos(test: &str, default_cache: bool) -> Option<(Kdc, Option<String>)> {
    if !kdc::available_or_skip(test) || !apache::available_or_skip(test) || in_own_process(test) {
        return None;
    }
    let kdc = Kdc::start().expect("start a KDC");
    let cache = default_cache.then(|| kdc.kinit("client", None).expect("kinit client"));
    // Before any thread of this process starts: the environment is
    // process-wide and krb5 reads it without Rust's lock.
    kdc.set_process_env(cache.as_deref());
    init_log();
    Some((kdc, cache))
}

/// Apache ZooKeeper with Kerberos as `zookeeper/<host>`, `f` adding switches.
fn server(kdc: &Kdc, host: &str, f: impl FnOnce(ApacheSasl) -> ApacheSasl) -> TestingServer {
    TestingServer::apache_with(ApacheConfig {
        sasl: Some(f(ApacheSasl::kerberos(kdc, host))),
        ..ApacheConfig::default()
    })
    .expect("start ZooKeeper with Kerberos")
}

fn config(sasl: Option<SaslConfig>) -> ClientConfig {
    ClientConfig {
        connect_timeout: CONNECT_TIMEOUT,
        session_timeout: Duration::from_secs(10),
        sasl,
        ..ClientConfig::default()
    }
}

/// `client` with its keytab.
fn keytab(kdc: &Kdc) -> SaslConfig {
    SaslConfig::gssapi(GssapiConfig::default().keytab(kdc.client_keytab(), CLIENT))
}

/// A client connected with `sasl` to `connect` (panics if it does not connect).
fn connected(connect: &str, sasl: SaslConfig) -> Client {
    let t0 = Instant::now();
    let c = Client::connect(connect, config(Some(sasl))).unwrap();
    c.wait_connected(Instant::now() + CONNECT_TIMEOUT + MARGIN)
        .unwrap_or_else(|e| panic!("not connected: {e}"));
    println!("connected and authenticated in {:?}", t0.elapsed());
    c
}

/// Connects with `sasl` and expects a SASL error of `kind`: told by the
/// connect timeout (a refusal no retry mends at once, and the client ends in
/// `AuthFailed`; a local or KDC failure at the caller's deadline, the client
/// still trying), with `names` (principals, paths) in its message.
fn refused(connect: &str, sasl: SaslConfig, kind: SaslErrorKind, names: &[&str]) -> (Client, SaslError) {
    let mechanism = sasl.mechanism();
    let t0 = Instant::now();
    let c = Client::connect(connect, config(Some(sasl))).unwrap();
    // A little past one attempt's bound: an attempt still waiting then (for
    // a silent KDC, say) would leave no SASL error to tell.
    let e = c.wait_connected(t0 + CONNECT_TIMEOUT + MARGIN / 2).unwrap_err();
    let elapsed = t0.elapsed();
    let Error::Sasl(se) = &e else {
        panic!("not a SASL error after {elapsed:?}: {e:?}")
    };
    println!("{:?} after {elapsed:?}: {e}", se.kind());
    assert_eq!(se.kind(), kind, "{e}");
    assert_eq!(se.mechanism(), mechanism);
    assert!(elapsed <= CONNECT_TIMEOUT + MARGIN, "told after {elapsed:?}");
    if kind.is_certain() {
        assert_eq!(c.state(), ClientState::AuthFailed);
        // Every later call is told the same, at once.
        let t1 = Instant::now();
        assert!(matches!(c.get_data("/"), Err(Error::Sasl(x)) if x.kind() == kind));
        assert!(t1.elapsed() < MARGIN);
    } else {
        assert_eq!(c.state(), ClientState::Connecting);
    }
    for n in names {
        assert!(e.to_string().contains(n), "{n:?} not in {e}");
    }
    (c, se.clone())
}

/// The connection's `sasl` id, as ZooKeeper expands `auth` ACLs to it.
fn identity(c: &Client, path: &str) -> Vec<Acl> {
    c.create(path, b"", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    c.get_acl(path).unwrap().0
}

#[test]
fn a_keytab_authenticates_as_the_client_principal_that_sasl_acls_name() {
    let name = "sasl_kerberos::a_keytab_authenticates_as_the_client_principal_that_sasl_acls_name";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let alice_keytab = kdc.add_principal("alice").unwrap();
    let s = server(&kdc, "127.0.0.1", |x| x);
    let sasl = keytab(&kdc);
    // Debug names the principal and the keytab, which holds the keys.
    let debug = format!("{sasl:?}");
    assert!(
        debug.contains(CLIENT) && debug.contains(&kdc.client_keytab().display().to_string()),
        "{debug}"
    );

    let c = connected(&s.connect_string(), sasl);
    assert_eq!(identity(&c, "/who"), vec![Acl::sasl(CLIENT, perms::ALL)]);
    c.create("/mine", b"m", &[Acl::sasl(CLIENT, perms::ALL)], CreateMode::Persistent)
        .unwrap();
    assert_eq!(c.get_data("/mine").unwrap().0, b"m");

    // Another principal, and no principal at all, are other identities.
    let alice = connected(
        &s.connect_string(),
        SaslConfig::gssapi(GssapiConfig::default().keytab(&alice_keytab, "alice@EXAMPLE.TEST")),
    );
    assert_eq!(
        identity(&alice, "/who-alice"),
        vec![Acl::sasl("alice@EXAMPLE.TEST", perms::ALL)]
    );
    let anonymous = Client::connect(&s.connect_string(), config(None)).unwrap();
    anonymous.wait_connected(Instant::now() + CONNECT_TIMEOUT).unwrap();
    for other in [&alice, &anonymous] {
        assert!(matches!(other.get_data("/mine"), Err(Error::NoAuth { .. })));
        assert!(matches!(other.set_data("/mine", b"x", None), Err(Error::NoAuth { .. })));
    }
    // A reconnect reuses the tickets: a keytab's live in a cache of its own,
    // and the KDC is not asked again.
    let asked = || {
        std::fs::read_to_string(kdc.log_path())
            .unwrap()
            .lines()
            .filter(|l| l.contains("_REQ") && l.contains(CLIENT))
            .count()
    };
    // The KDC may log a request after answering it: wait for the service ticket's.
    let log_has_tgs = || {
        std::fs::read_to_string(kdc.log_path()).is_ok_and(|log| {
            log.lines()
                .any(|l| l.contains("TGS_REQ") && l.contains(CLIENT) && l.contains("zookeeper/127.0.0.1"))
        })
    };
    assert!(wait_until(Duration::from_secs(10), log_has_tgs));
    let before = asked();
    s.restart().unwrap();
    assert!(wait_until(Duration::from_secs(30), || c.get_data("/mine").is_ok()));
    assert_eq!(asked(), before);
}

#[test]
fn a_kinit_cache_authenticates_as_the_process_default_or_by_name() {
    let name = "sasl_kerberos::a_kinit_cache_authenticates_as_the_process_default_or_by_name";
    let Some((kdc, Some(_default))) = kerberos(name, true) else {
        return;
    };
    kdc.add_principal("bob").unwrap();
    let bobs = kdc.kinit("bob", None).unwrap();
    let s = server(&kdc, "127.0.0.1", |x| x);
    // Neither keytab nor cache: KRB5CCNAME's tickets (client's).
    let c = connected(&s.connect_string(), SaslConfig::gssapi(GssapiConfig::default()));
    assert_eq!(identity(&c, "/default"), vec![Acl::sasl(CLIENT, perms::ALL)]);
    // A named cache: its own principal (bob's).
    let b = connected(
        &s.connect_string(),
        SaslConfig::gssapi(GssapiConfig::default().credential_cache(&bobs)),
    );
    assert_eq!(identity(&b, "/named"), vec![Acl::sasl("bob@EXAMPLE.TEST", perms::ALL)]);
}

#[test]
fn the_server_principal_asked_for_follows_the_settings() {
    let name = "sasl_kerberos::the_server_principal_asked_for_follows_the_settings";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    // The server is zookeeper/localhost; clients dial 127.0.0.1.
    let s = server(&kdc, "localhost", |x| x);
    let by_address = s.connect_string();
    let by_name = format!("localhost:{}", s.port());
    let with = |g: GssapiConfig| SaslConfig::gssapi(g.keytab(kdc.client_keytab(), CLIENT));
    for (connect, sasl) in [
        (&by_address, with(GssapiConfig::default().server_host("localhost"))),
        (
            &by_address,
            with(GssapiConfig::default().server_principal("zookeeper/localhost@EXAMPLE.TEST")),
        ),
        (
            &by_address,
            with(
                GssapiConfig::default()
                    .server_host("localhost")
                    .server_realm("EXAMPLE.TEST"),
            ),
        ),
        (&by_name, with(GssapiConfig::default())),
        // A host-based service name, which Kerberos canonicalizes.
        (&by_name, with(GssapiConfig::default().canonicalize_hostname(true))),
    ] {
        let c = connected(connect, sasl);
        assert_eq!(
            identity(&c, &format!("/p{}", c.session_id())),
            vec![Acl::sasl(CLIENT, perms::ALL)]
        );
    }
    // The default for an address is zookeeper/127.0.0.1: the KDC has it,
    // this server does not accept it, and says so.
    refused(
        &by_address,
        with(GssapiConfig::default()),
        SaslErrorKind::Rejected,
        &[CLIENT],
    );
    // A principal the KDC does not know: the settings are wrong, every
    // attempt would meet the same answer.
    refused(
        &by_address,
        with(GssapiConfig::default().server_host("nowhere.example")),
        SaslErrorKind::InvalidConfig,
        &["zookeeper/nowhere.example"],
    );
}

#[test]
fn the_server_may_drop_the_realm_from_ids_and_name_a_super_user() {
    let name = "sasl_kerberos::the_server_may_drop_the_realm_from_ids_and_name_a_super_user";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let admin = kdc.add_principal("admin").unwrap();
    let s = server(&kdc, "127.0.0.1", |x| x.removing_realm().with_super_user("admin"));
    let c = connected(&s.connect_string(), keytab(&kdc));
    assert_eq!(identity(&c, "/short"), vec![Acl::sasl("client", perms::ALL)]);
    let a = connected(
        &s.connect_string(),
        SaslConfig::gssapi(GssapiConfig::default().keytab(&admin, "admin@EXAMPLE.TEST")),
    );
    a.set_data("/short", b"super", None).unwrap();
    assert_eq!(c.get_data("/short").unwrap().0, b"super");
}

#[test]
fn a_restarted_server_resumes_the_session_and_authenticates_again() {
    let name = "sasl_kerberos::a_restarted_server_resumes_the_session_and_authenticates_again";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let s = server(&kdc, "127.0.0.1", ApacheSasl::enforced);
    let c = connected(&s.connect_string(), keytab(&kdc));
    c.create("/kept", b"k", &[Acl::sasl(CLIENT, perms::ALL)], CreateMode::Persistent)
        .unwrap();
    let session = c.session_id();
    for _ in 0..2 {
        s.restart().unwrap();
        // Under enforcement a request ahead of the exchange would end the
        // client (-124): a read proves the order, and the identity.
        assert!(wait_until(Duration::from_secs(30), || c.get_data("/kept").is_ok()));
        assert_eq!(c.session_id(), session);
        assert_eq!(c.state(), ClientState::Connected);
    }
}

#[test]
fn a_new_session_after_an_expiry_authenticates_again() {
    let name = "sasl_kerberos::a_new_session_after_an_expiry_authenticates_again";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let s = server(&kdc, "127.0.0.1", |x| x);
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .sasl(keytab(&kdc))
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap();
    c.block_until_connected(CONNECT_TIMEOUT + MARGIN).unwrap();
    c.create()
        .with_acl(vec![Acl::sasl(CLIENT, perms::ALL)])
        .with_data(b"e".to_vec())
        .for_path("/expiry")
        .unwrap();
    let first = c.zookeeper_client().session_id();
    let password = c.zookeeper_client().session_password();
    s.expire_session(first, &password).unwrap();
    // A new session, and its connection authenticated (the ACL lets only us read).
    assert!(wait_until(Duration::from_secs(30), || {
        c.zookeeper_client().session_id() != first && c.get_data("/expiry").is_ok()
    }));
    c.close();
}

#[test]
fn enforcement_admits_kerberos_and_tells_an_unauthenticated_client_once() {
    let name = "sasl_kerberos::enforcement_admits_kerberos_and_tells_an_unauthenticated_client_once";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    for switch in [
        ApacheSasl::enforced as fn(ApacheSasl) -> ApacheSasl,
        ApacheSasl::requiring_client_sasl,
    ] {
        let s = server(&kdc, "127.0.0.1", switch);
        let c = connected(&s.connect_string(), keytab(&kdc));
        c.create("/in", b"", &Acl::open_unsafe(), CreateMode::Persistent)
            .unwrap();
        let plain = Client::connect(&s.connect_string(), config(None)).unwrap();
        plain.wait_connected(Instant::now() + CONNECT_TIMEOUT).unwrap();
        let t0 = Instant::now();
        let e = plain.get_data("/in").unwrap_err();
        assert!(t0.elapsed() <= CONNECT_TIMEOUT + MARGIN, "{:?}", t0.elapsed());
        assert!(
            matches!(&e, Error::Sasl(x) if x.kind() == SaslErrorKind::Required),
            "{e:?}"
        );
        assert_eq!(plain.state(), ClientState::AuthFailed);
        // It ended: no reconnect loop.
        let attempts = plain.connect_attempts();
        assert!(!wait_until(Duration::from_millis(1500), || plain.connect_attempts() > attempts));
        assert!(c.get_data("/in").is_ok());
    }
}

#[test]
fn bad_keytabs_and_unknown_principals_are_credentials_errors_within_the_deadline() {
    let name = "sasl_kerberos::bad_keytabs_and_unknown_principals_are_credentials_errors_within_the_deadline";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let alice = kdc.add_principal("alice").unwrap();
    let stale = kdc.add_principal("stale").unwrap();
    kdc.rotate_key("stale").unwrap();
    let ghost = kdc.add_principal("ghost").unwrap();
    kdc.delete_principal("ghost").unwrap();
    let missing = kdc.dir().join("no-such.keytab");
    let garbage = kdc.dir().join("garbage.keytab");
    std::fs::write(&garbage, b"this is not a keytab").unwrap();
    let s = server(&kdc, "127.0.0.1", |x| x);
    let cases: Vec<(&str, std::path::PathBuf, &str)> = vec![
        ("a missing keytab", missing.clone(), CLIENT),
        ("a directory", kdc.dir().to_path_buf(), CLIENT),
        ("a file that is not a keytab", garbage.clone(), CLIENT),
        ("another principal's keytab", alice.clone(), CLIENT),
        (
            "a keytab whose key the KDC changed",
            stale.clone(),
            "stale@EXAMPLE.TEST",
        ),
        ("a principal the KDC does not know", ghost.clone(), "ghost@EXAMPLE.TEST"),
    ];
    for (what, path, principal) in cases {
        println!("-- {what}");
        let sasl = SaslConfig::gssapi(GssapiConfig::default().keytab(&path, principal));
        let (c, e) = refused(
            &s.connect_string(),
            sasl,
            SaslErrorKind::Credentials,
            &[principal, &path.display().to_string()],
        );
        assert!(!e.message().is_empty());
        c.close();
    }
    // An unreadable file (root reads every file: then there is nothing to try).
    let locked = kdc.dir().join("locked.keytab");
    std::fs::copy(kdc.client_keytab(), &locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&locked).is_err() {
        let sasl = SaslConfig::gssapi(GssapiConfig::default().keytab(&locked, CLIENT));
        refused(
            &s.connect_string(),
            sasl,
            SaslErrorKind::Credentials,
            &["locked.keytab"],
        );
    } else {
        println!("-- an unreadable keytab: not tried (this process reads a mode 000 file: root)");
    }
}

#[test]
fn an_expired_ticket_is_a_credentials_error_until_a_kinit_renews_it() {
    let name = "sasl_kerberos::an_expired_ticket_is_a_credentials_error_until_a_kinit_renews_it";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let s = server(&kdc, "127.0.0.1", |x| x);
    let short = kdc.kinit("client", Some(Duration::from_secs(2))).unwrap();
    assert!(wait_until(Duration::from_secs(30), || !kdc.has_valid_ticket(&short)));
    let sasl = SaslConfig::gssapi(GssapiConfig::default().credential_cache(&short));
    let cache_path = short.trim_start_matches("FILE:");
    let (c, _) = refused(&s.connect_string(), sasl, SaslErrorKind::Credentials, &[cache_path]);
    // The client keeps trying; a new ticket in the same cache lets it in.
    let fresh = kdc.kinit("client", None).unwrap();
    std::fs::copy(fresh.trim_start_matches("FILE:"), cache_path).unwrap();
    c.wait_connected(Instant::now() + Duration::from_secs(30)).unwrap();
    assert_eq!(identity(&c, "/renewed"), vec![Acl::sasl(CLIENT, perms::ALL)]);
}

#[test]
fn a_kdc_down_or_silent_is_kdc_unreachable_within_the_deadline_and_the_client_recovers() {
    let name = "sasl_kerberos::a_kdc_down_or_silent_is_kdc_unreachable_within_the_deadline_and_the_client_recovers";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let bob = kdc.add_principal("bob").unwrap();
    let s = server(&kdc, "127.0.0.1", |x| x);

    // Down: the port refuses connections.
    kdc.stop().unwrap();
    let (c, _) = refused(
        &s.connect_string(),
        keytab(&kdc),
        SaslErrorKind::KdcUnreachable,
        &[CLIENT],
    );
    kdc.restart().unwrap();
    let t0 = Instant::now();
    c.wait_connected(Instant::now() + Duration::from_secs(30)).unwrap();
    println!("connected {:?} after the KDC came back", t0.elapsed());
    assert_eq!(identity(&c, "/back"), vec![Acl::sasl(CLIENT, perms::ALL)]);

    // Silent: it accepts connections and never answers (krb5 alone would wait ~25 s).
    kdc.pause().unwrap();
    let sasl = SaslConfig::gssapi(GssapiConfig::default().keytab(&bob, "bob@EXAMPLE.TEST"));
    let (b, _) = refused(
        &s.connect_string(),
        sasl,
        SaslErrorKind::KdcUnreachable,
        &["bob@EXAMPLE.TEST"],
    );
    kdc.resume().unwrap();
    b.wait_connected(Instant::now() + Duration::from_secs(30)).unwrap();
    assert_eq!(identity(&b, "/bob"), vec![Acl::sasl("bob@EXAMPLE.TEST", perms::ALL)]);

    // Tickets in hand: a reconnect needs no KDC.
    kdc.stop().unwrap();
    s.restart().unwrap();
    assert!(wait_until(Duration::from_secs(30), || c.exists("/back").is_ok()));
    assert_eq!(c.state(), ClientState::Connected);
}

#[test]
fn mechanism_mismatches_and_a_server_without_sasl_are_typed_errors() {
    let name = "sasl_kerberos::mechanism_mismatches_and_a_server_without_sasl_are_typed_errors";
    let Some((kdc, _)) = kerberos(name, false) else { return };
    let krb = server(&kdc, "127.0.0.1", |x| x);
    let digest = TestingServer::apache_with(ApacheConfig {
        sasl: Some(ApacheSasl::digest_md5(&[("client", "clientsecret")])),
        ..ApacheConfig::default()
    })
    .unwrap();
    let plain = TestingServer::apache_with(ApacheConfig::default()).unwrap();
    // DIGEST-MD5 to a Kerberos server: its GSSAPI refuses the empty first token.
    refused(
        &krb.connect_string(),
        SaslConfig::digest_md5("client", "clientsecret").unwrap(),
        SaslErrorKind::Rejected,
        &[],
    );
    // GSSAPI to a DIGEST-MD5 server: it answers with a challenge, which is
    // no Kerberos token (the message says which mechanism it is).
    refused(
        &digest.connect_string(),
        keytab(&kdc),
        SaslErrorKind::Protocol,
        &["DIGEST-MD5"],
    );
    // GSSAPI to a server without SASL.
    refused(&plain.connect_string(), keytab(&kdc), SaslErrorKind::NotOffered, &[]);
}
