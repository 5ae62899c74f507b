//! TLS end to end, on the backend `ZK_TEST_SERVER` names: the embedded server
//! serving TLS on its port, or Apache ZooKeeper 3.8 with a `secureClientPort`
//! (Netty). Every certificate is made here by `zk_testing::tls::TestPki`.
//!
//! * the plain client and the managed client over TLS: operations, watches;
//! * a representative part of the lock contract over TLS (locker, two clients,
//!   a killed session, zero and timed tries with no orphans, a frozen
//!   connection's deadlines);
//! * mutual TLS: refused without a client certificate (typed error), works with;
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
use zk_framework::ExponentialBackoffRetry;
use zk_framework::{Client, ClientConfig, SessionEvent};
use zk_framework::{CuratorFramework, Error, TlsConfig, TlsErrorKind};
use zk_recipes::{Error as LockError, InterProcessMutex, LockEvent, LockStatus};
use zk_testing::proxy::FaultProxy;
use zk_testing::tls::{ServerTls, TestPki};
use zk_testing::{wait_until, Backend, TestingServer};

use crate::support::{init_log, timing, tree, zero_timeout_acquires_free};

/// How far past the connection timeout a refused connect may return.
fn margin() -> Duration {
    timing().scale(Duration::from_millis(500))
}

fn pki() -> TestPki {
    init_log();
    TestPki::new("zk-curator test CA").expect("make a CA")
}

fn tls_server(tls: ServerTls) -> TestingServer {
    TestingServer::start_tls(tls).expect("start a TLS server (ZK_TEST_SERVER selects the backend)")
}

/// Trusts `pki`'s CA, no client certificate, host names verified.
fn trust(pki: &TestPki) -> TlsConfig {
    TlsConfig::builder().ca_pem(pki.ca_pem().as_bytes()).build().unwrap()
}

fn builder(connect_string: &str, tls: TlsConfig) -> zk_framework::CuratorFrameworkBuilder {
    let t = timing();
    CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
}

fn managed(s: &TestingServer, tls: &TlsConfig) -> CuratorFramework {
    let c = builder(&s.connect_string(), tls.clone()).build().unwrap();
    c.block_until_connected(timing().wait()).expect("connects over TLS");
    c
}

fn plain_client(connect_string: &str, tls: &TlsConfig) -> Client {
    let t = timing();
    let c = Client::connect(
        connect_string,
        ClientConfig::default()
            .with_session_timeout(t.session())
            .with_connect_timeout(t.connection())
            .with_tls(tls.clone()),
    )
    .unwrap();
    c.wait_connected_timeout(t.wait()).expect("connects over TLS");
    c
}

/// Waits for a refused connection with `wait` (one connection timeout, the
/// return asserted within it plus the margin). A loaded machine (a JVM's TLS
/// handshake under load 12) may not finish the handshake within the timeout:
/// that wait is a `ConnectTimeout`, and the client keeps trying, so wait
/// again, with a deadline, until the refusal itself is seen.
fn bounded_refusal(mut wait: impl FnMut() -> Result<(), Error>) -> Result<(), Error> {
    let t = timing();
    let deadline = Instant::now() + t.wait();
    loop {
        let start = Instant::now();
        let r = wait();
        let elapsed = start.elapsed();
        eprintln!("refused after {elapsed:?}: {r:?}");
        assert!(
            elapsed <= t.connection() + margin(),
            "refusal took {elapsed:?} (connection timeout {:?})",
            t.connection()
        );
        match r {
            Err(Error::ConnectTimeout { .. }) if Instant::now() < deadline => continue,
            r => return r,
        }
    }
}

/// Builds a managed client with `tls` and waits one connection timeout (again
/// while the handshake does not finish in time, see [`bounded_refusal`]): the
/// error must be TLS (of one of `kinds`) and come within the bound.
fn refused(connect_string: &str, tls: TlsConfig, kinds: &[TlsErrorKind]) -> Error {
    let t = timing();
    let c = builder(connect_string, tls).build().unwrap();
    let r = bounded_refusal(|| c.block_until_connected(t.connection()).map(|_| ()));
    let err = r.expect_err("must not connect");
    match &err {
        Error::Tls(e) => assert!(kinds.contains(&e.kind()), "kind {:?} not in {kinds:?}: {e}", e.kind()),
        other => panic!("expected a TLS error of {kinds:?}, got {other:?}"),
    }
    assert!(c.zookeeper_client().connect_attempts() >= 1);
    c.close();
    err
}

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

// ---- the lock contract, a representative part, over TLS -----------------------------------

#[test]
fn lock_locker_and_two_clients_over_tls() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let tls = trust(&pki);
    let (c1, c2) = (managed(&s, &tls), managed(&s, &tls));
    let path = "/tls-locks/two";
    let (l1, l2) = (
        InterProcessMutex::new(&c1, path).unwrap(),
        InterProcessMutex::new(&c2, path).unwrap(),
    );
    {
        let g = l1.try_acquire_for(Duration::from_secs(10)).unwrap().expect("free lock");
        assert_eq!(g.status(), LockStatus::Held);
        g.check().unwrap();
        // Reentrant on the same instance.
        let again = l1.acquire().unwrap();
        drop(again);
        assert!(l2.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
        // A zero timeout is a try: never the held lock (a server slower
        // than its 20 ms grace is honestly "no answer").
        let r = l2.try_acquire_for(Duration::ZERO).map(|g| g.is_some());
        assert!(
            matches!(r, Ok(false) | Err(zk_recipes::Error::NoAnswer { .. })),
            "zero timeout: a try: {r:?}"
        );
        let (tx, rx) = unbounded();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let g = l2
                    .try_acquire_for(timing().wait())
                    .unwrap()
                    .expect("second client acquires");
                tx.send(Instant::now()).unwrap();
                g.release().unwrap();
            });
            assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "still held");
            let released = Instant::now();
            g.release().unwrap();
            let acquired = rx.recv_timeout(timing().wait()).expect("handoff");
            assert!(acquired >= released);
        });
    }
    // Free: a zero timeout acquires. Its replies get the deadline's 20 ms
    // grace, which a loaded machine can exceed (the try then cleanly says
    // `None` and cleans up): try again, with a deadline.
    let (g, _) = zero_timeout_acquires_free(timing().wait(), || l2.try_acquire_for(Duration::ZERO))
        .unwrap_or_else(|e| panic!("free: a zero timeout acquires: {e}"));
    let loss = g.loss_receiver();
    g.release().unwrap();
    assert!(loss.recv_timeout(timing().wait()).is_err(), "a release is not a loss");
    assert!(wait_until(timing().wait(), || tree(&c1, path).iter().all(|p| c1
        .check_exists(p)
        .ok()
        .flatten()
        .map_or(true, |st| st.ephemeral_owner == 0))));
}

#[test]
fn lock_lost_to_a_killed_session_over_tls() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let tls = trust(&pki);
    let (c1, c2) = (managed(&s, &tls), managed(&s, &tls));
    let path = "/tls-locks/killed";
    let (l1, l2) = (
        InterProcessMutex::new(&c1, path).unwrap(),
        InterProcessMutex::new(&c2, path).unwrap(),
    );
    std::thread::scope(|sc| {
        let g = l1.acquire().unwrap();
        let events = g.loss_receiver();
        let waiter = sc.spawn(|| l2.try_acquire_for(timing().wait()).unwrap().map(|g| g.release()));
        let zk = c1.zookeeper_client();
        s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
        assert!(matches!(waiter.join().unwrap(), Some(Ok(()))), "the waiter acquires");
        let mut last = events.recv_timeout(timing().wait()).expect("a loss event");
        while last != LockEvent::Lost {
            last = events.recv_timeout(timing().wait()).expect("Lost follows");
        }
        assert_eq!(g.status(), LockStatus::Lost);
        assert!(matches!(g.release(), Err(LockError::LockLost { .. })));
    });
    // The managed client made a new session, over TLS again, and locks with it.
    assert!(wait_until(timing().wait(), || c1.is_connected()));
    let g = l1
        .try_acquire_for(timing().wait())
        .unwrap()
        .expect("the new session locks");
    g.release().unwrap();
}

#[test]
fn lock_deadlines_hold_through_a_frozen_tls_connection() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap());
    let tls = trust(&pki);
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = builder(&proxy.connect_string(), tls.clone())
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()
        .unwrap();
    c.block_until_connected(timing().wait()).unwrap();
    let lock = InterProcessMutex::new(&c, "/tls-locks/frozen").unwrap();
    lock.try_acquire_for(timing().wait())
        .unwrap()
        .expect("acquired")
        .release()
        .unwrap();
    proxy.freeze(true);
    for timeout in [Duration::ZERO, Duration::from_millis(300)] {
        let start = Instant::now();
        let r = lock.try_acquire_for(timeout);
        let elapsed = start.elapsed();
        assert!(
            elapsed <= timeout + timing().scale(Duration::from_millis(150)),
            "frozen, {timeout:?}: returned after {elapsed:?}"
        );
        // The server does not answer: not a verdict about the lock.
        assert!(matches!(r, Err(LockError::NoAnswer { .. })), "frozen: {r:?}");
    }
    proxy.freeze(false);
    let g = lock
        .try_acquire_for(timing().wait() * 2)
        .unwrap()
        .expect("acquired after the freeze");
    g.release().unwrap();
}

// ---- mutual TLS -------------------------------------------------------------------------

#[test]
fn mutual_tls_refuses_a_client_without_a_certificate_and_accepts_one_with() {
    let pki = pki();
    let s = tls_server(pki.server_tls().unwrap().require_client_cert(pki.ca_pem()));
    let err = refused(
        &s.connect_string(),
        trust(&pki),
        &[TlsErrorKind::ClientCertificateRequired],
    );
    assert!(err.to_string().contains("requires a client certificate"), "{err}");
    assert!(err.to_string().contains("give one"), "{err}");
    assert_no_rustls_debug(&err.to_string());

    // A certificate from another CA is refused too.
    let stranger = pki_other().client_cert("mallory").unwrap();
    let tls = TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem(stranger.cert_pem().as_bytes(), stranger.key_pem().as_bytes())
        .build()
        .unwrap();
    refused(
        &s.connect_string(),
        tls,
        &[TlsErrorKind::ClientCertificateRejected, TlsErrorKind::Handshake],
    );

    let alice = pki.client_cert("alice").unwrap();
    let tls = TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem(alice.cert_pem().as_bytes(), alice.key_pem().as_bytes())
        .build()
        .unwrap();
    assert!(tls.has_client_cert());
    let c = managed(&s, &tls);
    c.create().for_path("/mtls").unwrap();
    // The same over a zks:// connect string.
    let z = plain_client(&format!("zks://{}", s.connect_string()), &tls);
    assert!(z.exists("/mtls").unwrap().is_some());
    let lock = InterProcessMutex::new(&c, "/tls-locks/mtls").unwrap();
    lock.acquire().unwrap().release().unwrap();
}

fn pki_other() -> TestPki {
    TestPki::new("some other CA").unwrap()
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

/// A TLS message shows no rustls `Debug` output (`ExpiredContext { time:
/// UnixTime(..) }`, `IpAddress(V4(Ipv4Addr([127, 0, 0, 1])))`).
fn assert_no_rustls_debug(m: &str) {
    for debug in [
        "Context",
        "UnixTime",
        "Ipv4Addr",
        "IpAddress",
        "{",
        "AlertReceived",
        "InvalidMessage",
    ] {
        assert!(!m.contains(debug), "rustls Debug output in {m:?}");
    }
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
