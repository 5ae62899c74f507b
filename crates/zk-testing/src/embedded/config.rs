//! [`ServerConfig`]: what a server is started with. Imports nothing of the server.

use std::time::Duration;

use zk_proto::frame::DEFAULT_MAX_FRAME;

use crate::tls::ServerTls;

/// Configuration of an [`EmbeddedServer`](super::EmbeddedServer).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zk_testing::embedded::ServerConfig;
///
/// let config = ServerConfig { tick: Duration::from_millis(20), ..ServerConfig::default() };
/// assert_eq!(config.port, 0);
/// assert_eq!(config.min_session_timeout, Duration::from_millis(1000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Expiry bucket granularity: a session expires between T and T + tick after its last
    /// request, never before T. Default 50 ms.
    pub tick: Duration,
    /// Smallest negotiated session timeout. Default 1000 ms.
    pub min_session_timeout: Duration,
    /// Largest negotiated session timeout. Default 60000 ms.
    pub max_session_timeout: Duration,
    /// How often empty containers (that once had children) and expired TTL nodes are
    /// deleted. Default 100 ms.
    pub container_check_interval: Duration,
    /// Largest accepted frame (`jute.maxbuffer`). Default [`DEFAULT_MAX_FRAME`].
    pub max_frame: usize,
    /// Whether TTL nodes are allowed (`zookeeper.extendedTypesEnabled`). Default true.
    pub extended_types: bool,
    /// Whether every four-letter word is enabled (`4lw.commands.whitelist=*`). When false,
    /// only `srvr` is, as on a default 3.8 server. Default true.
    pub four_letter_words: bool,
    /// The super user's digest id (`zookeeper.DigestAuthenticationProvider.superDigest`,
    /// e.g. `super:D/InIHSb7yEEbrWz8b9l71RjZJU=` from
    /// [`zk_proto::digest::digest_id`]`("super:test")`): a session that authenticates
    /// with matching `digest` credentials passes every ACL check. Default none.
    pub super_digest: Option<String>,
    /// Whether the `x509` auth scheme is registered (ZooKeeper's
    /// `authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider`,
    /// which ZooKeeper 3.8 registers by itself when it has a `secureClientPort`;
    /// [`TestingServer::start_tls`](crate::TestingServer::start_tls) sets this
    /// for the same reason). When true, `x509` ACL entries are valid (an id
    /// Java's `X500Principal` accepts, e.g. `CN=app,O=Example`) and match, by equality, an `x509` identity of the
    /// connection: when [`ServerConfig::tls`] requires a client certificate, the
    /// verified certificate's subject, formatted as ZooKeeper does
    /// (`X509Certificate.getSubjectX500Principal().getName()`, RFC 2253, e.g.
    /// `CN=app,O=Example`), is added to the connection's identities at the
    /// handshake, and `addauth x509` succeeds only on such a connection. When
    /// false (the default, as on a plain ZooKeeper), `x509` ACLs are
    /// `InvalidACL`, `addauth x509` is `AuthFailed`, and client certificates
    /// give no identity.
    pub x509_auth: bool,
    /// The subject (RFC 2253, as in an `x509` id) of the client certificate that
    /// is a super user (`-Dzookeeper.X509AuthenticationProvider.superUser`): a
    /// connection with that certificate also gets the `super` identity and
    /// passes every ACL check. Needs [`ServerConfig::x509_auth`]. Default none.
    pub x509_super_user: Option<String>,
    /// Serve TLS on the port instead of plain TCP (ZooKeeper's secure client
    /// port): see [`ServerTls`]. Default `None`.
    pub tls: Option<ServerTls>,
    /// How long a connection's re-registered watches (`SetWatches`,
    /// `SetWatches2`) wait before the server processes them, as on a slow or
    /// loaded real server: the events they fire (a watched node deleted while
    /// the client was away) and every later request of that connection come
    /// that much later, in order. [`EmbeddedServer::delay_set_watches`]
    /// changes it on a running server. Default zero.
    ///
    /// [`EmbeddedServer::delay_set_watches`]: super::EmbeddedServer::delay_set_watches
    pub set_watches_delay: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: 0,
            tick: Duration::from_millis(50),
            min_session_timeout: Duration::from_millis(1000),
            max_session_timeout: Duration::from_millis(60000),
            container_check_interval: Duration::from_millis(100),
            max_frame: DEFAULT_MAX_FRAME,
            extended_types: true,
            four_letter_words: true,
            super_digest: None,
            x509_auth: false,
            x509_super_user: None,
            tls: None,
            set_watches_delay: Duration::ZERO,
        }
    }
}
