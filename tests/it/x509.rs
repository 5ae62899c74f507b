//! `x509` identities from TLS client certificates (issue 13), on the backend
//! `ZK_TEST_SERVER` selects: the embedded server serving TLS, or Apache
//! ZooKeeper 3.8 with a `secureClientPort` (which registers
//! `X509AuthenticationProvider` by itself). ZooKeeper names a client by its
//! certificate's subject in Java's RFC 2253 form; the expected ids below are
//! written out by hand, so the same strings pass (and the same ACLs match) on
//! both backends:
//!
//! * a certificate's subject is an `x509` identity that `x509` ACL entries
//!   match: reads, writes, deletes and `getACL` by the owner, `NoAuth` for a
//!   client with another certificate; `addauth x509` succeeds on the owner's
//!   connection;
//! * a subject with several attributes, escaped characters and an attribute
//!   printed as a dotted OID with hex;
//! * `x509` ACL ids must be X.500 names as Java parses them (`InvalidACL`
//!   otherwise), a table of 44 ids;
//! * `CREATOR_ALL_ACL` on a session whose only credential is its certificate
//!   is the `x509` id;
//! * a configured x509 super user passes every ACL (and is not part of what
//!   `CREATOR_ALL_ACL` expands to);
//! * a lock whose nodes carry an `x509` ACL: a session with another
//!   certificate cannot delete the held node or join the queue (typed
//!   `NoAuth`, at once), a session with the owner's certificate locks.

use std::time::{Duration, Instant};

use zk_framework::{perms, Acl, CreateMode, CuratorFramework, Error as ZkError, FixedAclProvider, TlsConfig};
use zk_recipes::{Error, InterProcessMutex};
use zk_testing::apache::ApacheConfig;
use zk_testing::embedded::ServerConfig;
use zk_testing::tls::{CertKey, TestPki};
use zk_testing::{Backend, TestingServer};

use crate::support::{init_log, timing, Client as Closing};

fn pki() -> TestPki {
    init_log();
    TestPki::new("zk-curator x509 test CA").expect("make a CA")
}

/// A TLS server requiring client certificates from `pki`, with `super_user` as
/// the x509 super user (if any), on the backend `ZK_TEST_SERVER` names.
fn server(pki: &TestPki, super_user: Option<&str>) -> TestingServer {
    let tls = pki.server_tls().unwrap().require_client_cert(pki.ca_pem());
    let super_user = super_user.map(str::to_string);
    let s = match Backend::from_env().unwrap() {
        Backend::Embedded => TestingServer::embedded_with(ServerConfig {
            tls: Some(tls),
            x509_auth: true,
            x509_super_user: super_user,
            ..ServerConfig::default()
        }),
        Backend::Apache => TestingServer::apache_with(ApacheConfig {
            tls: Some(tls),
            x509_super_user: super_user,
            ..ApacheConfig::default()
        }),
    };
    s.expect("start a TLS server (ZK_TEST_SERVER selects the backend)")
}

/// Trusts `pki`'s CA and presents `cert`.
fn tls_with(pki: &TestPki, cert: &CertKey) -> TlsConfig {
    TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem(cert.cert_pem().as_bytes(), cert.key_pem().as_bytes())
        .build()
        .unwrap()
}

/// A connected managed client presenting `cert`, with a fixed `acl` for what it
/// creates, and a retry policy that sleeps 2 s before any retry (an operation
/// that retried a `NoAuth` could not meet the bounds below).
fn client(s: &TestingServer, pki: &TestPki, cert: &CertKey, acl: Vec<Acl>) -> Closing {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(zk_framework::RetryNTimes::new(3, Duration::from_secs(2)))
        .tls(tls_with(pki, cert))
        .acl_provider(FixedAclProvider::new(acl))
        .build()
        .unwrap();
    c.block_until_connected(t.wait())
        .expect("connects over TLS with a client certificate");
    Closing(c)
}

fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}

#[test]
fn a_client_certificate_is_an_x509_identity_that_x509_acls_match() {
    let pki = pki();
    let s = server(&pki, None);
    let app = client(&s, &pki, &pki.client_cert("app").unwrap(), open());
    let other = client(&s, &pki, &pki.client_cert("other").unwrap(), open());
    let acl = vec![Acl::x509("CN=app", perms::ALL)];
    let (a, o) = (app.zookeeper_client(), other.zookeeper_client());

    a.create("/x509-a", b"mine", &acl, CreateMode::Persistent).unwrap();
    assert_eq!(a.get_data("/x509-a").unwrap().0, b"mine");
    // getACL gives back the same id string on both backends.
    let (got, _) = a.get_acl("/x509-a").unwrap();
    assert_eq!(got, acl);
    assert_eq!((got[0].id.scheme.as_str(), got[0].id.id.as_str()), ("x509", "CN=app"));
    // addauth x509 takes the identity from the certificate, never from the packet.
    a.add_auth("x509", b"").unwrap();
    a.set_data("/x509-a", b"still mine", None).unwrap();

    // Another certificate is another identity.
    assert!(matches!(o.get_data("/x509-a"), Err(ZkError::NoAuth { .. })));
    assert!(matches!(o.set_data("/x509-a", b"x", None), Err(ZkError::NoAuth { .. })));
    a.create("/x509-a/child", b"", &acl, CreateMode::Persistent).unwrap();
    assert!(matches!(o.delete("/x509-a/child", None), Err(ZkError::NoAuth { .. })));
    assert!(matches!(
        o.create("/x509-a/theirs", b"", &open(), CreateMode::Persistent),
        Err(ZkError::NoAuth { .. })
    ));
    // getACL needs READ or ADMIN (ZooKeeper 3.5+).
    assert!(matches!(o.get_acl("/x509-a"), Err(ZkError::NoAuth { .. })));

    a.delete("/x509-a/child", None).unwrap();
    a.delete("/x509-a", None).unwrap();
    assert!(a.exists("/x509-a").unwrap().is_none());
}

#[test]
fn the_x509_id_is_the_subject_in_rfc_2253_form_as_zookeeper_writes_it() {
    let pki = pki();
    let s = server(&pki, None);
    // Encoded in this order; ZooKeeper lists the RDNs last first, escapes the
    // specials and the edge spaces, and prints emailAddress (not an RFC 2253
    // keyword) as its OID with the hex of its DER value (a 15-byte UTF8String).
    let cert = pki
        .client_cert_with_subject(&[
            ("DC", "org"),
            ("C", "US"),
            ("ST", "Some State"),
            ("O", "Example, Inc."),
            ("OU", "R+D;<ops>"),
            ("1.2.840.113549.1.9.1", "app@example.org"),
            ("CN", " app #1=\"x\"\\ "),
        ])
        .unwrap();
    let subject = concat!(
        r#"CN=\ app \#1\=\"x\"\\\ ,"#,
        "1.2.840.113549.1.9.1=#0c0f617070406578616d706c652e6f7267,",
        r"OU=R\+D\;\<ops\>,",
        r"O=Example\, Inc.,",
        "ST=Some State,C=US,DC=org"
    );
    // The client computes the same id from its certificate.
    assert_eq!(tls_with(&pki, &cert).client_x509_id(), Some(subject));
    let no_cert = TlsConfig::builder().ca_pem(pki.ca_pem().as_bytes()).build().unwrap();
    assert_eq!(no_cert.client_x509_id(), None);
    let me = client(&s, &pki, &cert, open());
    let app = client(&s, &pki, &pki.client_cert("app").unwrap(), open());
    let acl = vec![Acl::x509(subject, perms::ALL)];
    let zk = me.zookeeper_client();
    // The server accepts the id as an X.500 name, and its own id for this
    // connection is exactly this string: the read passes only if they are equal.
    zk.create("/x509-rfc2253", b"", &acl, CreateMode::Persistent).unwrap();
    assert!(zk.get_data("/x509-rfc2253").is_ok());
    assert_eq!(zk.get_acl("/x509-rfc2253").unwrap().0, acl);
    assert!(matches!(
        app.zookeeper_client().get_data("/x509-rfc2253"),
        Err(ZkError::NoAuth { .. })
    ));
    zk.delete("/x509-rfc2253", None).unwrap();
}

#[test]
fn an_x509_super_user_passes_every_acl() {
    let pki = pki();
    let s = server(&pki, Some("CN=admin,O=Ops"));
    let app = client(&s, &pki, &pki.client_cert("app").unwrap(), open());
    let admin_cert = pki.client_cert_with_subject(&[("O", "Ops"), ("CN", "admin")]).unwrap();
    let admin = client(&s, &pki, &admin_cert, open());
    let other = client(&s, &pki, &pki.client_cert("other").unwrap(), open());
    let a = app.zookeeper_client();
    a.create(
        "/x509-su",
        b"",
        &[Acl::x509("CN=app", perms::ALL)],
        CreateMode::Persistent,
    )
    .unwrap();
    assert!(matches!(
        other.zookeeper_client().get_data("/x509-su"),
        Err(ZkError::NoAuth { .. })
    ));
    // Not only x509 ACLs: a digest-only node too.
    a.create(
        "/x509-su/digest",
        b"",
        &[Acl::digest("alice", "pw", perms::ALL)],
        CreateMode::Persistent,
    )
    .unwrap();
    let su = admin.zookeeper_client();
    assert!(su.get_data("/x509-su").is_ok());
    // CREATOR_ALL expands to the x509 id only (the super id is not one).
    su.create("/x509-su/mine", b"", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    assert_eq!(
        su.get_acl("/x509-su/mine").unwrap().0,
        vec![Acl::x509("CN=admin,O=Ops", perms::ALL)]
    );
    su.delete("/x509-su/mine", None).unwrap();
    su.delete("/x509-su/digest", None).unwrap();
    su.delete("/x509-su", None).unwrap();
}

#[test]
fn creator_all_with_only_a_client_certificate_is_the_x509_id() {
    let pki = pki();
    let s = server(&pki, None);
    // No authorization(..): the certificate is the only credential.
    let app = client(&s, &pki, &pki.client_cert("app").unwrap(), Acl::creator_all());
    let other = client(&s, &pki, &pki.client_cert("other").unwrap(), open());
    app.create()
        .creating_parents_if_needed()
        .for_path("/x509-creator/a")
        .unwrap();
    for p in ["/x509-creator", "/x509-creator/a"] {
        assert_eq!(
            app.zookeeper_client().get_acl(p).unwrap().0,
            vec![Acl::x509("CN=app", perms::ALL)],
            "{p}"
        );
    }
    assert!(matches!(
        other.zookeeper_client().delete("/x509-creator/a", None),
        Err(ZkError::NoAuth { .. })
    ));
}

#[test]
fn an_x509_acl_keeps_a_lock_from_sessions_with_another_certificate() {
    let pki = pki();
    let s = server(&pki, None);
    let t = timing();
    let app_cert = pki.client_cert("app").unwrap();
    let only_app = vec![Acl::x509("CN=app", perms::ALL)];
    let holder = client(&s, &pki, &app_cert, only_app.clone());
    let lock = InterProcessMutex::new(&holder, "/x509-locks/job").unwrap();
    let held = lock.acquire().unwrap();
    let node = held.holding().node();
    // The lock node and its parents carry the provider's ACL.
    let zk = holder.zookeeper_client();
    for p in [node.as_str(), "/x509-locks/job", "/x509-locks"] {
        assert_eq!(zk.get_acl(p).unwrap().0, only_app, "{p}");
    }

    // A session with another certificate (whose own ACL provider would be open).
    let other = client(&s, &pki, &pki.client_cert("other").unwrap(), open());
    let oz = other.zookeeper_client();
    assert!(matches!(oz.delete(&node, None), Err(ZkError::NoAuth { .. })));
    assert!(matches!(
        oz.create("/x509-locks/job/intruder", b"", &open(), CreateMode::Ephemeral),
        Err(ZkError::NoAuth { .. })
    ));
    let theirs = InterProcessMutex::new(&other, "/x509-locks/job").unwrap();
    let start = Instant::now();
    let got = theirs.try_acquire_for(t.wait());
    assert!(
        matches!(got, Err(Error::ZooKeeper(ZkError::NoAuth { .. }))),
        "{:?}",
        got.map(|g| g.is_some())
    );
    assert!(start.elapsed() < t.wait(), "the acquire waited instead of failing");
    let start = Instant::now();
    assert!(matches!(
        theirs.acquire().map(|_| ()),
        Err(Error::ZooKeeper(ZkError::NoAuth { .. }))
    ));
    assert!(start.elapsed() < t.wait(), "the acquire waited instead of failing");
    assert!(zk.exists(&node).unwrap().is_some(), "the held node is still there");

    // Another session with the owner's certificate queues behind the holder and
    // gets the lock once it is released.
    let twin = client(&s, &pki, &app_cert, only_app.clone());
    let twins = InterProcessMutex::new(&twin, "/x509-locks/job").unwrap();
    assert!(twins.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    held.release().unwrap();
    let g = twins
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("the owner's certificate locks");
    assert_eq!(
        twin.zookeeper_client().get_acl(&g.holding().node()).unwrap().0,
        only_app
    );
    g.release().unwrap();
}

#[test]
fn x509_acl_ids_are_checked_as_x500_names_as_zookeeper_does() {
    // X509AuthenticationProvider.isValid is `new X500Principal(id)`; these
    // answers are Apache ZooKeeper 3.8's (Java 17).
    let valid = [
        "",
        "CN=app",
        "cn = a",
        "CN=",
        "CN=a;O=b",
        "CN=a+O=b",
        "CN=a, O=b",
        " CN=a",
        r#"CN="a,b""#,
        r"CN=a\,b",
        r"CN=a\41",
        "2.5.4.3=a",
        "OID.2.5.4.3=a",
        "oid.2.5.4.3=a",
        "1.2.3=#0c0161",
        "CN=a=b",
        r#"CN="a"  "#,
        "EMAILADDRESS=a@b",
        "SERIALNUMBER=1",
        "T=x",
        "CN=a\n",
    ];
    let invalid = [
        "garbage",
        "CN=a,garbage",
        "=a",
        "XX=a",
        "1.2.3=#0c01",
        r"CN=a\",
        "CN=a,",
        "CN=#zz",
        r"CN=a\q",
        r"CN=a\4",
        "1.2.3=#0c0161 ",
        r#"CN="a" b"#,
        r#"CN="a"#,
        "CN=a<b",
        r#"CN=a"b"#,
        " ",
        "CN=a,,O=b",
        "OID.2=a",
        "3.1=a",
        "1.40=a",
        "CN=#0c01",
        "CN=a+",
        "XYZ.1=a",
    ];
    let pki = pki();
    let s = server(&pki, None);
    let app = client(&s, &pki, &pki.client_cert("app").unwrap(), open());
    let zk = app.zookeeper_client();
    let mut wrong = Vec::new();
    for (i, (id, ok)) in valid
        .iter()
        .map(|v| (v, true))
        .chain(invalid.iter().map(|v| (v, false)))
        .enumerate()
    {
        let acl = [Acl::x509(id, perms::ALL)];
        let got = zk.create(&format!("/x509-valid-{i}"), b"", &acl, CreateMode::Persistent);
        match (ok, &got) {
            (true, Ok(_)) | (false, Err(ZkError::InvalidAcl { .. })) => {}
            _ => wrong.push(format!("{id:?}: {:?}", got.map(|_| ()))),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
