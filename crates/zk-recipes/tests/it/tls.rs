//! Locks over TLS (zk-framework's `tls` suite has the clients'): a
//! representative part of the lock contract (locker, two clients, a killed
//! session, zero and timed tries with no orphans, a frozen connection's
//! deadlines) and mutual TLS, on the backend `ZK_TEST_SERVER` names: the
//! embedded server serving TLS on its port, or Apache ZooKeeper 3.8 with a
//! `secureClientPort` (Netty). Every certificate is made by
//! `zk_testing::tls::TestPki`.

use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use zk_framework::ExponentialBackoffRetry;
use zk_framework::{TlsConfig, TlsErrorKind};
use zk_recipes::{Error as LockError, InterProcessMutex, LockEvent, LockStatus};
use zk_testing::proxy::FaultProxy;
use zk_testing::wait_until;

use crate::support::tls::*;
use crate::support::{timing, tree, zero_timeout_acquires_free};

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
    let loss = g.events();
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
        let events = g.events();
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
