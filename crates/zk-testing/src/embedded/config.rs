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
    /// Serve SASL DIGEST-MD5 (a ZooKeeper whose JAAS `Server` section is the
    /// `DigestLoginModule`) and register the `sasl` ACL scheme
    /// (`authProvider.N=...SASLAuthenticationProvider`): see [`ServerSasl`].
    /// Default `None`: a SASL request gets a null token, as on a server
    /// without a JAAS section, and `sasl` ACLs are `InvalidACL`.
    pub sasl: Option<ServerSasl>,
}

/// The embedded server's SASL: DIGEST-MD5 users, as a ZooKeeper 3.8 server
/// with `Server { org.apache.zookeeper.server.auth.DigestLoginModule required
/// user_<name>="<password>"; };` and the `sasl` auth provider.
///
/// A connection that authenticates gets the identity `sasl:<name>` (and
/// `super` when the name is [`ServerSasl::super_user`]). A failed exchange
/// is answered with `AuthFailed` (-115), or `SessionClosedRequireSaslAuth`
/// (-124) when SASL is required, and the connection is closed; the session
/// lives. With [`ServerSasl::required`] (`sessionRequireClientSASLAuth=true`,
/// or `enforce.auth.enabled=true` with `enforce.auth.schemes=sasl`), any
/// request but SASL and `auth` on a connection that has not authenticated is
/// answered with -124 and the connection is closed.
///
/// `Debug` prints the users' names, never their passwords.
///
/// # Examples
///
/// ```
/// use zk_testing::embedded::{ServerConfig, ServerSasl};
///
/// let config = ServerConfig {
///     sasl: Some(ServerSasl::digest(&[("bob", "bobsecret")]).required(true)),
///     ..ServerConfig::default()
/// };
/// assert!(!format!("{config:?}").contains("bobsecret"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ServerSasl {
    /// The DIGEST-MD5 users, `(name, password)`.
    pub users: Vec<(String, String)>,
    /// Whether an unauthenticated connection is refused (see the type's
    /// documentation). Default false.
    pub required: bool,
    /// The SASL id that is also a super user (`-Dzookeeper.superUser`).
    /// Default none.
    pub super_user: Option<String>,
}

impl ServerSasl {
    /// DIGEST-MD5 with these `(name, password)` users, not required.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::embedded::ServerSasl::digest(&[("bob", "pw")]);
    /// assert_eq!(s.users.len(), 1);
    /// assert!(!s.required);
    /// ```
    pub fn digest(users: &[(&str, &str)]) -> ServerSasl {
        ServerSasl {
            users: users.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect(),
            required: false,
            super_user: None,
        }
    }

    /// Requires SASL of every connection (or not).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::embedded::ServerSasl::digest(&[]).required(true).required);
    /// ```
    pub fn required(mut self, required: bool) -> ServerSasl {
        self.required = required;
        self
    }

    /// Makes `name` a super user.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::embedded::ServerSasl::digest(&[("admin", "pw")]).super_user("admin");
    /// assert_eq!(s.super_user.as_deref(), Some("admin"));
    /// ```
    pub fn super_user(mut self, name: &str) -> ServerSasl {
        self.super_user = Some(name.to_string());
        self
    }

    /// The password of `name`, if it is a user.
    pub(crate) fn password(&self, name: &str) -> Option<&str> {
        self.users.iter().find(|(u, _)| u == name).map(|(_, p)| p.as_str())
    }
}

impl std::fmt::Debug for ServerSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSasl")
            .field("users", &self.users.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>())
            .field("required", &self.required)
            .field("super_user", &self.super_user)
            .finish()
    }
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
            sasl: None,
        }
    }
}
