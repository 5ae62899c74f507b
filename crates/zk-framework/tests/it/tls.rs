//! TLS end to end, on the backend `ZK_TEST_SERVER` names: the embedded server
//! serving TLS on its port, or Apache ZooKeeper 3.8 with a `secureClientPort`
//! (Netty). Every certificate is made here by `zk_testing::tls::TestPki`.
//!
//! * the plain client and the managed client over TLS: operations, watches;
//! * (locks over TLS and mutual TLS, which ends with a lock, are in
//!   zk-recipes' `tls` suite; the settings both use are in `support::tls`);
//! * refusals are typed and bounded by the connection timeout: a wrong CA, an
//!   expired certificate, a name mismatch (accepted with host name verification
//!   off), a plain client on the secure port, a TLS client on a plain port;
//! * faults: a cut connection through the fault proxy resumes the session over
//!   TLS with its watches; a server restart too;
//! * inputs: missing files, garbage PEM, a key that does not match its
//!   certificate give typed errors at build time, and no `Debug` shows a key.

use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use zk_framework::proto::{Acl, CreateMode, EventType};
use zk_framework::{Client, ClientConfig, SessionEvent};
use zk_framework::{CuratorFramework, Error, TlsConfig, TlsErrorKind};
use zk_testing::proxy::FaultProxy;
use zk_testing::tls::ServerTls;
use zk_testing::{Backend, TestingServer};

use crate::support::timing;
use crate::support::tls::*;

// ---- operations -------------------------------------------------------------------------

#[test]
fn plain_client_operations_and_watches_over_tls() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let zk = plain_client(&s.connect_string(), &trust(&pki));
    let open = Acl::open_unsafe();
    zk.create("/tls", b"v1", &open, CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded();
    let (data, stat) = zk
        .get_data_w("/tls", move |e: zk_framework::WatchedEvent| {
            let _ = tx.send(e.event_type);
        })
        .unwrap();
    assert_eq!(data, b"v1");
    zk.set_data("/tls", b"v2", Some(stat.version)).unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), EventType::NodeDataChanged);
    // A frame bigger than one TLS record (16 KiB) both ways.
    let big = vec![7u8; 200_000];
    zk.set_data("/tls", &big, None).unwrap();
    assert_eq!(zk.get_data("/tls").unwrap().0, big);
    for i in 0..20 {
        zk.create(&format!("/tls/c{i:02}"), b"", &open, CreateMode::Ephemeral)
            .unwrap();
    }
    assert_eq!(zk.get_children("/tls").unwrap().len(), 20);
    // Pipelined callers share the one TLS connection.
    std::thread::scope(|sc| {
        for t in 0..4 {
            let zk = zk.clone();
            sc.spawn(move || {
                for i in 0..50 {
                    assert!(zk.exists(&format!("/tls/c{:02}", (t * 50 + i) % 20)).unwrap().is_some());
                }
            });
        }
    });
    zk.close();
}

// ---- refusals -----------------------------------------------------------------------------

#[test]
fn a_server_signed_by_another_ca_is_refused_within_the_connection_timeout() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let err = refused(&s.connect_string(), trust(&pki_other()), &[TlsErrorKind::UnknownIssuer]);
    assert!(err.to_string().contains("not signed by a trusted CA"), "{err}");
    let host = s.connect_string().rsplit_once(':').unwrap().0.to_string();
    assert!(err.to_string().contains(&format!("(from {host})")), "{err}");
    assert_no_rustls_debug(&err.to_string());
    // The plain client reports the same from wait_connected.
    let t = timing();
    let zk = Client::connect(
        &s.connect_string(),
        ClientConfig::default()
            .with_connect_timeout(t.connection())
            .with_tls(trust(&pki_other())),
    )
    .unwrap();
    let r = bounded_refusal(|| zk.wait_connected_timeout(t.connection()).map(|_| ()));
    assert!(
        matches!(&r, Err(Error::Tls(e)) if e.kind() == TlsErrorKind::UnknownIssuer),
        "{r:?}"
    );
}

#[test]
fn an_expired_server_certificate_is_refused() {
    let pki = pki();
    let expired = pki.expired_server_cert().unwrap();
    let s = tls_server(ServerTls::new(expired.cert_pem(), expired.key_pem()));
    let err = refused(&s.connect_string(), trust(&pki), &[TlsErrorKind::Expired]);
    assert!(err.to_string().contains("expired"), "{err}");
    // For people: the dates, what to do, no rustls Debug output.
    let m = err.to_string();
    assert!(
        m.contains("expired on 20") && m.contains(" UTC (now 20") && m.contains("renew it"),
        "{m}"
    );
    assert_no_rustls_debug(&m);
}

#[test]
fn a_name_mismatch_is_refused_unless_host_name_verification_is_off() {
    let pki = pki();
    let cert = pki.server_cert_for(&["zk.example.com"]).unwrap();
    let s = tls_server(ServerTls::new(cert.cert_pem(), cert.key_pem()));
    let err = refused(&s.connect_string(), trust(&pki), &[TlsErrorKind::NameMismatch]);
    let host = s.connect_string().rsplit_once(':').unwrap().0.to_string();
    let m = err.to_string();
    assert!(
        m.contains(&format!("not valid for {host} (it names zk.example.com)")) && m.contains("verify_hostname(false)"),
        "{m}"
    );
    assert_no_rustls_debug(&m);
    // Chain verified, name not: connects.
    let lax = TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .verify_hostname(false)
        .build()
        .unwrap();
    assert!(!lax.verifies_hostname());
    let c = managed(&s, &lax);
    c.check_exists("/").unwrap();
    // Verification off still checks the chain.
    let lax_stranger = TlsConfig::builder()
        .ca_pem(pki_other().ca_pem().as_bytes())
        .verify_hostname(false)
        .build()
        .unwrap();
    refused(&s.connect_string(), lax_stranger, &[TlsErrorKind::UnknownIssuer]);
}

#[test]
fn a_plain_client_cannot_use_the_secure_port() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let t = timing();
    let zk = Client::connect(
        &s.connect_string(),
        ClientConfig::default().with_connect_timeout(t.connection()),
    )
    .unwrap();
    let start = Instant::now();
    let r = zk.wait_connected_timeout(t.connection());
    let elapsed = start.elapsed();
    eprintln!("plain client on the secure port: {r:?} after {elapsed:?}");
    assert!(elapsed <= t.connection() + margin(), "took {elapsed:?}");
    match &r {
        Err(Error::Tls(e)) => assert_eq!(e.kind(), TlsErrorKind::ProtocolMismatch, "{e}"),
        // Netty closes without a TLS alert: nothing to tell it from a dead port.
        Err(Error::ConnectionLoss) => assert_eq!(s.backend(), Backend::Apache),
        other => panic!("a plain client on the secure port: {other:?}"),
    }
    assert!(zk.connect_attempts() >= 1);
}

#[test]
fn zks_without_tls_settings_is_an_invalid_connect_string() {
    let e = Client::connect("zks://127.0.0.1:2281", ClientConfig::default()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidConnectString { reason, .. } if reason.contains("zks://")),
        "{e:?}"
    );
    let e = CuratorFramework::builder()
        .connect_string("zks://127.0.0.1:2281")
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidConnectString { .. }), "{e:?}");
}

#[test]
fn a_tls_client_on_a_plain_port_is_refused() {
    let pki = pki();
    let s = crate::support::server();
    let err = refused(&s.connect_string(), trust(&pki), &[TlsErrorKind::ProtocolMismatch]);
    let m = err.to_string();
    assert!(m.contains("secure client port"), "{m}");
    assert_no_rustls_debug(&m);
}

// ---- faults -------------------------------------------------------------------------------

#[test]
fn a_cut_tls_connection_resumes_the_session_with_its_watches() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let tls = trust(&pki);
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let zk = plain_client(&proxy.connect_string(), &tls);
    let direct = plain_client(&s.connect_string(), &tls);
    let open = Acl::open_unsafe();
    direct.create("/cut", b"0", &open, CreateMode::Persistent).unwrap();
    let eph = zk.create("/cut/eph", b"", &open, CreateMode::Ephemeral).unwrap();
    let (tx, rx) = unbounded();
    zk.get_data_w("/cut", move |e: zk_framework::WatchedEvent| {
        let _ = tx.send(e.event_type);
    })
    .unwrap();
    let sid = zk.session_id();
    let events = zk.state_receiver();

    proxy.cut();
    crate::support::plain::expect_event(&events, SessionEvent::Disconnected);
    crate::support::plain::expect_event(&events, SessionEvent::SyncConnected);
    assert_eq!(zk.session_id(), sid, "same session after the cut");
    assert!(proxy.accepted() >= 2, "reconnected through the proxy");
    assert!(zk.exists(&eph).unwrap().is_some(), "the ephemeral survived");
    // The watch was re-registered (SetWatches over TLS): a change made after
    // the reconnect fires it.
    direct.set_data("/cut", b"1", None).unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), EventType::NodeDataChanged);

    // A server restart: the client reconnects over TLS and keeps its session.
    s.restart().unwrap();
    crate::support::plain::expect_event(&events, SessionEvent::Disconnected);
    crate::support::plain::expect_event(&events, SessionEvent::SyncConnected);
    assert_eq!(zk.session_id(), sid);
    assert!(zk.exists(&eph).unwrap().is_some());
}

#[test]
fn a_paused_tls_server_is_noticed_by_the_read_timeout_and_the_session_resumes() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let t = timing();
    let zk = Client::connect(
        &s.connect_string(),
        ClientConfig::default()
            // Long enough that the server (whose clock runs while it is paused)
            // keeps the session: resumed right after the read timeout.
            .with_session_timeout(t.scale(Duration::from_secs(10)))
            .with_connect_timeout(Duration::from_secs(1))
            .with_tls(trust(&pki)),
    )
    .unwrap();
    zk.wait_connected_timeout(t.wait()).unwrap();
    let sid = zk.session_id();
    let read_timeout = zk.negotiated_timeout().unwrap() * 2 / 3;
    let events = zk.state_receiver();
    let paused = Instant::now();
    s.pause().unwrap();
    crate::support::plain::expect_event(&events, SessionEvent::Disconnected);
    let noticed = paused.elapsed();
    s.resume().unwrap();
    crate::support::plain::expect_event(&events, SessionEvent::SyncConnected);
    eprintln!("dead connection noticed after {noticed:?} (read timeout {read_timeout:?})");
    assert!(
        noticed <= read_timeout + timing().scale(Duration::from_millis(500)),
        "noticed after {noticed:?}, read timeout {read_timeout:?}"
    );
    assert_eq!(zk.session_id(), sid);
    zk.exists("/").unwrap();
}

#[test]
fn a_tls_handshake_nobody_answers_is_a_bounded_failed_attempt() {
    // A port that accepts TCP (the kernel's backlog) and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cs = silent.local_addr().unwrap().to_string();
    let pki = pki();
    let connect_timeout = Duration::from_millis(500);
    let zk = Client::connect(
        &cs,
        ClientConfig::default()
            .with_connect_timeout(connect_timeout)
            .with_tls(trust(&pki)),
    )
    .unwrap();
    let wait = connect_timeout * 3;
    let start = Instant::now();
    let r = zk.wait_connected_timeout(wait);
    let elapsed = start.elapsed();
    assert!(elapsed <= wait + margin(), "took {elapsed:?}");
    match &r {
        Err(Error::Tls(e)) => {
            assert_eq!(e.kind(), TlsErrorKind::Handshake, "{e}");
            assert!(e.message().contains("did not finish"), "{e}");
        }
        other => panic!("a silent TLS port: {other:?}"),
    }
    // The client keeps trying, one bounded attempt after another.
    assert!(zk.connect_attempts() >= 2, "attempts: {}", zk.connect_attempts());
    let start = Instant::now();
    zk.close();
    assert!(
        start.elapsed() <= Duration::from_secs(2) + margin(),
        "close took {:?}",
        start.elapsed()
    );
}

// ---- inputs -------------------------------------------------------------------------------

#[test]
fn bad_tls_inputs_are_typed_errors_at_build_time() {
    let pki = pki();
    let alice = pki.client_cert("alice").unwrap();
    let bob = pki.client_cert("bob").unwrap();
    let kind = |r: zk_framework::Result<TlsConfig>| match r {
        Err(Error::Tls(e)) => (e.kind(), e.message().to_string()),
        other => panic!("expected a TLS config error, got {other:?}"),
    };
    let (k, m) = kind(TlsConfig::builder().ca_pem_file("/nonexistent/ca.pem").build());
    assert_eq!(k, TlsErrorKind::InvalidConfig);
    assert!(m.contains("/nonexistent/ca.pem"), "{m}");
    let (k, m) = kind(
        TlsConfig::builder()
            .ca_pem(b"-----BEGIN CERTIFICATE-----\ngarbage!\n")
            .build(),
    );
    assert_eq!(k, TlsErrorKind::InvalidConfig);
    assert!(m.contains("CA"), "{m}");
    let (k, m) = kind(
        TlsConfig::builder()
            .ca_pem(pki.ca_pem().as_bytes())
            .client_cert_pem(alice.cert_pem().as_bytes(), bob.key_pem().as_bytes())
            .build(),
    );
    assert_eq!(k, TlsErrorKind::InvalidConfig);
    assert!(m.contains("does not match") || m.contains("cannot be used"), "{m}");
    let (k, _) = kind(
        TlsConfig::builder()
            .ca_pem(pki.ca_pem().as_bytes())
            .client_cert_pem(alice.cert_pem().as_bytes(), b"no key here")
            .build(),
    );
    assert_eq!(k, TlsErrorKind::InvalidConfig);
    let (k, _) = kind(TlsConfig::builder().build());
    assert_eq!(k, TlsErrorKind::InvalidConfig);
    // The embedded server checks its side when it starts.
    let bad = ServerTls::new(alice.cert_pem(), bob.key_pem());
    let e = TestingServer::start_backend_tls(Backend::Embedded, bad).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
}

#[test]
fn no_debug_output_shows_a_private_key() {
    let pki = pki();
    let alice = pki.client_cert("alice").unwrap();
    let key_body: String = alice.key_pem().lines().filter(|l| !l.starts_with("-----")).collect();
    let builder = TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem(alice.cert_pem().as_bytes(), alice.key_pem().as_bytes());
    let shown_builder = format!("{builder:?}");
    let tls = builder.build().unwrap();
    let config = ClientConfig::default().with_tls(tls.clone());
    let framework = CuratorFramework::builder()
        .connect_string("127.0.0.1:1")
        .tls(tls.clone());
    let server_tls = ServerTls::new(alice.cert_pem(), alice.key_pem());
    for shown in [
        shown_builder,
        format!("{tls:?}"),
        format!("{config:?}"),
        format!("{config:#?}"),
        format!("{framework:?}"),
        format!("{alice:?}"),
        format!("{server_tls:?}"),
    ] {
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        for chunk in key_body.as_bytes().chunks(16) {
            let chunk = std::str::from_utf8(chunk).unwrap();
            assert!(!shown.contains(chunk), "a piece of the key in {shown}");
        }
    }
}
