//! The TLS suites' settings (zk-framework's `tls` and its half in zk-recipes,
//! locks over TLS): a throw-away CA, a TLS server on the backend
//! `ZK_TEST_SERVER` names, clients that trust the CA, and refusals bounded by
//! the connection timeout.

use std::time::{Duration, Instant};

use zk_framework::ExponentialBackoffRetry;
use zk_framework::{Client, ClientConfig};
use zk_framework::{CuratorFramework, Error, TlsConfig, TlsErrorKind};
use zk_testing::tls::{ServerTls, TestPki};
use zk_testing::TestingServer;

use super::{init_log, timing};

/// How far past the connection timeout a refused connect may return.
pub fn margin() -> Duration {
    timing().scale(Duration::from_millis(500))
}

/// A throw-away CA for one test (logging set up).
pub fn pki() -> TestPki {
    init_log();
    TestPki::new("zk-curator test CA").expect("make a CA")
}

/// A server speaking TLS with `tls`, on the backend `ZK_TEST_SERVER` names.
pub fn tls_server(tls: ServerTls) -> TestingServer {
    TestingServer::start_tls(tls).expect("start a TLS server (ZK_TEST_SERVER selects the backend)")
}

/// Trusts `pki`'s CA, no client certificate, host names verified.
pub fn trust(pki: &TestPki) -> TlsConfig {
    TlsConfig::builder().ca_pem(pki.ca_pem().as_bytes()).build().unwrap()
}

/// A managed client's builder for `connect_string` over `tls`, with the test
/// timings and `ExponentialBackoffRetry(100 ms, 3)`.
pub fn builder(connect_string: &str, tls: TlsConfig) -> zk_framework::CuratorFrameworkBuilder {
    let t = timing();
    CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
}

/// A managed client connected to `s` over `tls`.
pub fn managed(s: &TestingServer, tls: &TlsConfig) -> CuratorFramework {
    let c = builder(&s.connect_string(), tls.clone()).build().unwrap();
    c.block_until_connected(timing().wait()).expect("connects over TLS");
    c
}

/// A plain client connected to `connect_string` over `tls`.
pub fn plain_client(connect_string: &str, tls: &TlsConfig) -> Client {
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
pub fn bounded_refusal(mut wait: impl FnMut() -> Result<(), Error>) -> Result<(), Error> {
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
pub fn refused(connect_string: &str, tls: TlsConfig, kinds: &[TlsErrorKind]) -> Error {
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

/// A second CA, which the servers of [`pki`] do not trust.
pub fn pki_other() -> TestPki {
    TestPki::new("some other CA").unwrap()
}

/// A TLS message shows no rustls `Debug` output (`ExpiredContext { time:
/// UnixTime(..) }`, `IpAddress(V4(Ipv4Addr([127, 0, 0, 1])))`).
pub fn assert_no_rustls_debug(m: &str) {
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
