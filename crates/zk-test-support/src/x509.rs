//! The `x509` suites' settings (zk-framework's `x509` and its half in
//! zk-recipes, a lock under an `x509` ACL): a throw-away CA, a TLS server
//! (optionally with an `x509` super user) on the backend `ZK_TEST_SERVER`
//! names, and clients that present a certificate.

use std::time::Duration;

use zk_framework::{Acl, CuratorFramework, FixedAclProvider, TlsConfig};
use zk_testing::apache::ApacheConfig;
use zk_testing::embedded::ServerConfig;
use zk_testing::tls::{CertKey, TestPki};
use zk_testing::{Backend, TestingServer};

use super::{init_log, timing, Client as Closing};

/// A throw-away CA for one test (logging set up).
pub fn pki() -> TestPki {
    init_log();
    TestPki::new("zk-curator x509 test CA").expect("make a CA")
}

/// A TLS server requiring client certificates from `pki`, with `super_user` as
/// the x509 super user (if any), on the backend `ZK_TEST_SERVER` names.
pub fn server(pki: &TestPki, super_user: Option<&str>) -> TestingServer {
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
pub fn tls_with(pki: &TestPki, cert: &CertKey) -> TlsConfig {
    TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem(cert.cert_pem().as_bytes(), cert.key_pem().as_bytes())
        .build()
        .unwrap()
}

/// A connected managed client presenting `cert`, with a fixed `acl` for what it
/// creates, and a retry policy that sleeps 2 s before any retry (an operation
/// that retried a `NoAuth` could not meet the bounds below).
pub fn client(s: &TestingServer, pki: &TestPki, cert: &CertKey, acl: Vec<Acl>) -> Closing {
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

/// The open ACL (`world:anyone`, all permissions).
pub fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}
