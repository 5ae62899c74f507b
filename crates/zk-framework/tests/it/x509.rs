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
//! * (a lock whose nodes carry an `x509` ACL is zk-recipes' `x509` suite; the
//!   settings both use are in `support::x509`).

use zk_framework::{perms, Acl, CreateMode, Error as ZkError, TlsConfig};

use crate::support::x509::*;

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
