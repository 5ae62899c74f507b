//! The settings of the servers and the `zoo.cfg` lines written from them (TLS included).

use std::io;
use std::path::Path;

/// Settings shared by every server that [`ApacheServer`] and [`ApacheCluster`] start.
///
/// The [`Default`] mirrors Curator's `TestingServer`: tick 1000 ms, session timeouts clamped
/// to 1000..=60000 ms, container nodes checked every 100 ms, TTL nodes enabled, 256 MB heap.
/// Every generated `zoo.cfg` also has `4lw.commands.whitelist=*`, `admin.enableServer=false`,
/// `clientPortAddress=127.0.0.1` and `maxClientCnxns=0`, and every JVM runs with
/// `-Dzookeeper.snapshot.trust.empty=true` and `-Dzookeeper.forceSync=no` (data is still
/// written to the OS before a reply, so it survives a SIGKILL of the server).
///
/// # Errors
///
/// Not applicable: this is a plain value. Invalid values (a heap string the JVM rejects, a
/// minimum session timeout above the maximum) make the server fail to start, and
/// [`ApacheServer::start`] then returns an error that quotes the server log.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheConfig, ApacheServer};
///
/// let config = ApacheConfig {
///     max_session_timeout_ms: 10_000,
///     ..ApacheConfig::default()
/// };
/// let server = ApacheServer::start(config)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`ApacheServer`]: super::ApacheServer
/// [`ApacheCluster`]: super::ApacheCluster
/// [`ApacheServer::start`]: super::ApacheServer::start
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApacheConfig {
    /// `tickTime` in milliseconds (the unit of ZooKeeper's internal timers).
    pub tick_time_ms: u32,
    /// `minSessionTimeout`: smaller requested session timeouts are raised to this.
    pub min_session_timeout_ms: u32,
    /// `maxSessionTimeout`: larger requested session timeouts are lowered to this.
    pub max_session_timeout_ms: u32,
    /// How often the server deletes empty container nodes and expired TTL nodes
    /// (`-Dznode.container.checkIntervalMs`).
    pub container_check_interval_ms: u64,
    /// Enables TTL nodes (`-Dzookeeper.extendedTypesEnabled=true`).
    pub extended_types: bool,
    /// Maximum JVM heap, as given to `-Xmx` (for example `"256m"`).
    pub heap: String,
    /// The super user's digest id
    /// (`-Dzookeeper.DigestAuthenticationProvider.superDigest`, e.g. from
    /// `zk_proto::digest::digest_id("super:test")`). Default none.
    pub super_digest: Option<String>,
    /// The subject (RFC 2253) of the client certificate that is a super user
    /// (`-Dzookeeper.X509AuthenticationProvider.superUser`). Default none.
    pub x509_super_user: Option<String>,
    /// Also serve TLS on a `secureClientPort` ([`ApacheServer::secure_port`]) with the
    /// Netty connection factory, PEM key and trust stores written from this
    /// ([`ServerTls`](crate::tls::ServerTls)), and `ssl.clientAuth` as it says. The plain
    /// `clientPort` stays open (the harness polls it). Standalone servers only; an ensemble
    /// ignores it. Default `None`.
    ///
    /// [`ApacheServer::secure_port`]: super::ApacheServer::secure_port
    pub tls: Option<crate::tls::ServerTls>,
    /// SASL: a JAAS `Server` section (DIGEST-MD5 users or a Kerberos keytab), the `sasl` auth
    /// provider and the enforcement switches ([`ApacheSasl`](super::ApacheSasl)). Every server
    /// started with this config gets it (each ensemble member too). Default `None`: no SASL
    /// (a SASL request is answered with a null token).
    pub sasl: Option<super::ApacheSasl>,
}

impl Default for ApacheConfig {
    fn default() -> Self {
        ApacheConfig {
            tick_time_ms: 1000,
            min_session_timeout_ms: 1000,
            max_session_timeout_ms: 60_000,
            container_check_interval_ms: 100,
            extended_types: true,
            heap: "256m".to_string(),
            super_digest: None,
            x509_super_user: None,
            tls: None,
            sasl: None,
        }
    }
}

impl ApacheConfig {
    /// The `zoo.cfg` lines common to standalone servers and ensemble members.
    pub(super) fn common_cfg(&self, data_dir: &Path, client_port: u16) -> String {
        let sasl = self.sasl.as_ref().map(super::ApacheSasl::cfg).unwrap_or_default();
        format!(
            "tickTime={}\n\
             dataDir={}\n\
             clientPort={}\n\
             clientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             minSessionTimeout={}\n\
             maxSessionTimeout={}\n\
             {sasl}",
            self.tick_time_ms,
            data_dir.display(),
            client_port,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
        )
    }
}

/// The `zoo.cfg` lines of a TLS server (`secureClientPort` with Netty, PEM stores written
/// into `dir`).
pub(super) fn tls_cfg(tls: &crate::tls::ServerTls, dir: &Path, secure_port: u16) -> io::Result<String> {
    let (ks, ts) = tls.write_stores(dir)?;
    Ok(format!(
        "secureClientPort={secure_port}\n\
         secureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location={}\n\
         ssl.keyStore.type=PEM\n\
         ssl.trustStore.location={}\n\
         ssl.trustStore.type=PEM\n\
         ssl.clientAuth={}\n",
        ks.display(),
        ts.display(),
        tls.client_auth().zookeeper_value(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_matches_curator_testing_server() {
        let c = ApacheConfig::default();
        assert_eq!(c.tick_time_ms, 1000);
        assert_eq!(c.min_session_timeout_ms, 1000);
        assert_eq!(c.max_session_timeout_ms, 60_000);
        assert_eq!(c.container_check_interval_ms, 100);
        assert!(c.extended_types);
        assert_eq!(c.heap, "256m");
        assert_eq!(c.sasl, None);
        let cfg = c.common_cfg(Path::new("/tmp/x/data"), 1);
        assert!(!cfg.contains("authProvider"), "{cfg}");
    }

    #[test]
    fn a_sasl_server_gets_the_provider_line() {
        let c = ApacheConfig {
            sasl: Some(super::super::ApacheSasl::digest_md5(&[("bob", "pw")]).enforced()),
            ..ApacheConfig::default()
        };
        let cfg = c.common_cfg(Path::new("/tmp/x/data"), 1);
        for line in [
            "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
            "enforce.auth.enabled=true",
            "maxSessionTimeout=60000",
        ] {
            assert!(cfg.lines().any(|l| l == line), "{line} not in {cfg}");
        }
    }

    #[test]
    fn generated_cfg_has_the_required_lines() {
        let cfg = ApacheConfig::default().common_cfg(Path::new("/tmp/x/data"), 12345);
        for line in [
            "tickTime=1000",
            "dataDir=/tmp/x/data",
            "clientPort=12345",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
        ] {
            assert!(cfg.lines().any(|l| l == line), "missing {line:?} in\n{cfg}");
        }
    }
}
