//! SASL authentication of every connection (ZooKeeper's opcode 102): the
//! public configuration ([`SaslConfig`], [`GssapiConfig`]; failures are
//! [`SaslError`](crate::SaslError)) and the mechanisms' client sides, which
//! the I/O thread steps right after each ConnectResponse, before anything
//! else is sent on that connection (the `auth` packets, the watches, the
//! callers' requests).
//!
//! DIGEST-MD5 is this crate's own (with zk-proto's [`sasl`](zk_proto::sasl)
//! records and hashes); GSSAPI (Kerberos) is the system's MIT krb5 through
//! the `libgssapi` crate, behind the `gssapi` feature.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result, SaslError, SaslErrorKind};

mod digest;
#[cfg(feature = "gssapi")]
mod gssapi;

/// The mechanism name of DIGEST-MD5.
pub(crate) const DIGEST_MD5: &str = "DIGEST-MD5";
/// The mechanism name of Kerberos.
pub(crate) const GSSAPI: &str = "GSSAPI";

/// A password that `Debug` does not print.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    DigestMd5 { user: String, password: Secret },
    Gssapi(GssapiConfig),
}

/// How a client authenticates each connection with SASL: DIGEST-MD5 with a
/// user and password (a server whose JAAS `Server` section is ZooKeeper's
/// `DigestLoginModule`), or Kerberos (GSSAPI, a `Krb5LoginModule` server;
/// the `gssapi` feature). A ZooKeeper 3.8 server speaks exactly one
/// mechanism, chosen by its JAAS section.
///
/// The exchange runs on every new connection (a reconnect to the same or
/// another server, a new session) right after the handshake and before any
/// other request; the connection's identity is then `sasl:<user>`
/// (DIGEST-MD5) or `sasl:<principal>` (GSSAPI), which ACLs name with the
/// `sasl` scheme ([`Id::sasl`](zk_proto::Id::sasl)). A refusal is
/// [`Error::Sasl`] and the state
/// [`ClientState::AuthFailed`](crate::ClientState::AuthFailed), never a hang
/// nor a silently unauthenticated session.
///
/// Cheap to clone. `Debug` prints the mechanism and the user, never the
/// password.
///
/// # Examples
///
/// ```no_run
/// use zk_framework::{Client, ClientConfig, SaslConfig};
///
/// let sasl = SaslConfig::digest_md5("bob", "bobsecret")?;
/// assert!(!format!("{sasl:?}").contains("bobsecret"));
/// let zk = Client::connect("127.0.0.1:2181", ClientConfig::default().with_sasl(sasl))?;
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Clone)]
pub struct SaslConfig {
    kind: Arc<Kind>,
}

impl PartialEq for SaslConfig {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.kind, &other.kind) || self.kind == other.kind
    }
}

impl Eq for SaslConfig {}

impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.kind {
            Kind::DigestMd5 { user, .. } => f
                .debug_struct("SaslConfig")
                .field("mechanism", &DIGEST_MD5)
                .field("user", user)
                .finish_non_exhaustive(),
            Kind::Gssapi(g) => f
                .debug_struct("SaslConfig")
                .field("mechanism", &GSSAPI)
                .field("gssapi", g)
                .finish(),
        }
    }
}

fn invalid(mechanism: &'static str, message: impl Into<String>) -> Error {
    Error::Sasl(SaslError::new(SaslErrorKind::InvalidConfig, mechanism, message))
}

impl SaslConfig {
    /// DIGEST-MD5 as `user` with `password` (the server's JAAS `Server`
    /// section has `user_<user>="<password>"`). The connection's identity is
    /// then `sasl:<user>`.
    ///
    /// # Errors
    ///
    /// [`Error::Sasl`] of kind
    /// [`InvalidConfig`](SaslErrorKind::InvalidConfig) for an empty user or
    /// password, or one with a control character (a line end read from a
    /// file, say). The message never repeats the password.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::SaslConfig;
    /// let s = SaslConfig::digest_md5("bob", "bobsecret")?;
    /// assert_eq!((s.mechanism(), s.user()), ("DIGEST-MD5", Some("bob")));
    /// assert!(SaslConfig::digest_md5("bob", "line\n").is_err());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn digest_md5(user: &str, password: &str) -> Result<SaslConfig> {
        if user.is_empty() {
            return Err(invalid(DIGEST_MD5, "the user is empty"));
        }
        if user.chars().any(char::is_control) {
            return Err(invalid(
                DIGEST_MD5,
                format!("the user {user:?} has a control character"),
            ));
        }
        if password.is_empty() {
            return Err(invalid(DIGEST_MD5, format!("the password of {user:?} is empty")));
        }
        if password.chars().any(char::is_control) {
            return Err(invalid(
                DIGEST_MD5,
                format!("the password of {user:?} has a control character (a line end read from a file?)"),
            ));
        }
        Ok(SaslConfig {
            kind: Arc::new(Kind::DigestMd5 {
                user: user.to_string(),
                password: Secret(password.to_string()),
            }),
        })
    }

    /// DIGEST-MD5 as `user` with the password read from `path` (its first
    /// line, without the line end): a password that never appears on a
    /// command line nor in the environment.
    ///
    /// # Errors
    ///
    /// [`Error::Sasl`] of kind [`InvalidConfig`](SaslErrorKind::InvalidConfig)
    /// when the file cannot be read or is empty, or as
    /// [`SaslConfig::digest_md5`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("zk-sasl-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("password");
    /// std::fs::write(&file, "bobsecret\n")?;
    /// let s = zk_framework::SaslConfig::digest_md5_password_file("bob", &file)?;
    /// assert_eq!(s.user(), Some("bob"));
    /// assert!(zk_framework::SaslConfig::digest_md5_password_file("bob", dir.join("missing")).is_err());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn digest_md5_password_file(user: &str, path: impl AsRef<Path>) -> Result<SaslConfig> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            invalid(
                DIGEST_MD5,
                format!("cannot read the password file {}: {e}", path.display()),
            )
        })?;
        let first = text.lines().next().unwrap_or("");
        if first.is_empty() {
            return Err(invalid(
                DIGEST_MD5,
                format!("the password file {} is empty", path.display()),
            ));
        }
        SaslConfig::digest_md5(user, first)
    }

    /// Kerberos (GSSAPI) with `config`. The mechanism needs this crate's
    /// `gssapi` feature (and the system's MIT krb5 library); without it a
    /// connection fails with [`SaslErrorKind::Unsupported`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{GssapiConfig, SaslConfig};
    /// let s = SaslConfig::gssapi(GssapiConfig::default().keytab("/etc/app.keytab", "app@EXAMPLE.COM"));
    /// assert_eq!(s.mechanism(), "GSSAPI");
    /// assert_eq!(s.user(), Some("app@EXAMPLE.COM"));
    /// ```
    pub fn gssapi(config: GssapiConfig) -> SaslConfig {
        SaslConfig {
            kind: Arc::new(Kind::Gssapi(config)),
        }
    }

    /// The mechanism's name: `DIGEST-MD5` or `GSSAPI`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::SaslConfig::digest_md5("u", "p").unwrap().mechanism(), "DIGEST-MD5");
    /// ```
    pub fn mechanism(&self) -> &'static str {
        match &*self.kind {
            Kind::DigestMd5 { .. } => DIGEST_MD5,
            Kind::Gssapi(_) => GSSAPI,
        }
    }

    /// The user (DIGEST-MD5) or the client principal when one was given
    /// (GSSAPI).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{GssapiConfig, SaslConfig};
    /// assert_eq!(SaslConfig::gssapi(GssapiConfig::default()).user(), None);
    /// ```
    pub fn user(&self) -> Option<&str> {
        match &*self.kind {
            Kind::DigestMd5 { user, .. } => Some(user),
            Kind::Gssapi(g) => g.client_principal.as_deref(),
        }
    }

    /// Starts the client side of one exchange with the server dialled as
    /// `host` (the connect string's host, as given).
    /// `waiters` is the client's count of threads waiting for a KDC (GSSAPI).
    pub(crate) fn start(
        &self,
        host: &str,
        waiters: &Arc<std::sync::atomic::AtomicUsize>,
    ) -> std::result::Result<Box<dyn Mechanism>, SaslError> {
        match &*self.kind {
            Kind::DigestMd5 { user, password } => Ok(Box::new(digest::DigestMd5::new(user, password))),
            #[cfg(feature = "gssapi")]
            Kind::Gssapi(g) => gssapi::start(g, host, waiters),
            #[cfg(not(feature = "gssapi"))]
            Kind::Gssapi(_) => {
                let _ = (host, waiters);
                Err(SaslError::new(
                    SaslErrorKind::Unsupported,
                    GSSAPI,
                    "this build of zk-framework has no GSSAPI: enable its `gssapi` feature (it needs the system's MIT krb5 library)",
                ))
            }
        }
    }
}

/// Kerberos (GSSAPI) settings, in the spirit of ZooKeeper's Java client
/// switches (its system properties are named beside each).
///
/// | setting | default | Java's switch |
/// |---|---|---|
/// | [`service`](GssapiConfig::service) | `zookeeper` | `zookeeper.sasl.client.username` |
/// | [`server_host`](GssapiConfig::server_host) | the host of the connect string, as given | — |
/// | [`canonicalize_hostname`](GssapiConfig::canonicalize_hostname) | `false` | `zookeeper.sasl.client.canonicalize.hostname` (Java: `true`) |
/// | [`server_principal`](GssapiConfig::server_principal) | `<service>/<host>[@<realm>]` | `zookeeper.server.principal` |
/// | [`server_realm`](GssapiConfig::server_realm) | the client's default realm | `zookeeper.server.realm` |
/// | [`keytab`](GssapiConfig::keytab) | none: the credential cache | the JAAS `Client` section's `keyTab` and `principal` |
/// | [`credential_cache`](GssapiConfig::credential_cache) | the process's default (`KRB5CCNAME`) | the JAAS `Client` section's `ticketCache` |
///
/// The server's principal is `<service>/<host>@<realm>` and the server
/// accepts only tickets for its own (`zookeeper/<its host>`): the host must
/// be the one in the server's principal. With the default, a client dialling
/// `zk1.example.com:2181` asks for `zookeeper/zk1.example.com`; one dialling
/// an address asks for `zookeeper/<that address>` unless
/// [`canonicalize_hostname`](GssapiConfig::canonicalize_hostname) (Kerberos
/// then canonicalizes the name as its `krb5.conf` says, as Java does) or
/// [`server_host`](GssapiConfig::server_host) says otherwise.
///
/// `Debug` prints every setting (paths and principals; no key is ever held).
///
/// # Examples
///
/// ```
/// use zk_framework::GssapiConfig;
/// let g = GssapiConfig::default().server_host("localhost").keytab("/etc/app.keytab", "app@EXAMPLE.TEST");
/// assert_eq!(g.server_principal_for("127.0.0.1"), "zookeeper/localhost");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GssapiConfig {
    pub(crate) service: Option<String>,
    pub(crate) server_host: Option<String>,
    pub(crate) canonicalize_hostname: bool,
    pub(crate) server_principal: Option<String>,
    pub(crate) server_realm: Option<String>,
    pub(crate) keytab: Option<PathBuf>,
    pub(crate) client_principal: Option<String>,
    pub(crate) credential_cache: Option<String>,
}

impl GssapiConfig {
    /// The first part of the server's principal (default `zookeeper`).
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().service("zk");
    /// assert_eq!(g.server_principal_for("h"), "zk/h");
    /// ```
    pub fn service(mut self, service: &str) -> Self {
        self.service = Some(service.to_string());
        self
    }

    /// The host part of the server's principal, whatever host is dialled.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().server_host("localhost");
    /// assert_eq!(g.server_principal_for("127.0.0.1"), "zookeeper/localhost");
    /// ```
    pub fn server_host(mut self, host: &str) -> Self {
        self.server_host = Some(host.to_string());
        self
    }

    /// Whether Kerberos canonicalizes the dialled host (a host-based service
    /// name `service@host`, resolved as `krb5.conf`'s
    /// `dns_canonicalize_hostname` and `rdns` say) instead of taking it as
    /// given. Java's client does by default; this one does not, so that the
    /// principal asked for is the one the connect string shows.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::GssapiConfig::default().canonicalize_hostname(true).is_canonicalizing());
    /// ```
    pub fn canonicalize_hostname(mut self, yes: bool) -> Self {
        self.canonicalize_hostname = yes;
        self
    }

    /// Whether [`canonicalize_hostname`](GssapiConfig::canonicalize_hostname) is on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_framework::GssapiConfig::default().is_canonicalizing());
    /// ```
    pub fn is_canonicalizing(&self) -> bool {
        self.canonicalize_hostname && self.server_principal.is_none() && self.server_host.is_none()
    }

    /// The server's whole principal (e.g. `zookeeper/zk1.example.com@EXAMPLE.COM`),
    /// taken verbatim: the service, host and realm settings are then unused.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().server_principal("zookeeper/zk@R");
    /// assert_eq!(g.server_principal_for("other"), "zookeeper/zk@R");
    /// ```
    pub fn server_principal(mut self, principal: &str) -> Self {
        self.server_principal = Some(principal.to_string());
        self
    }

    /// The realm appended to the server's principal (default: none appended,
    /// so Kerberos uses the client's default realm).
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().server_realm("EXAMPLE.TEST");
    /// assert_eq!(g.server_principal_for("h"), "zookeeper/h@EXAMPLE.TEST");
    /// ```
    pub fn server_realm(mut self, realm: &str) -> Self {
        self.server_realm = Some(realm.to_string());
        self
    }

    /// Authenticates as `principal` with the key in `keytab` (Kerberos gets
    /// and renews tickets from it by itself), instead of the credential cache.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().keytab("/etc/app.keytab", "app@EXAMPLE.TEST");
    /// assert_eq!(g.client_principal(), Some("app@EXAMPLE.TEST"));
    /// ```
    pub fn keytab(mut self, keytab: impl Into<PathBuf>, principal: &str) -> Self {
        self.keytab = Some(keytab.into());
        self.client_principal = Some(principal.to_string());
        self
    }

    /// Uses the credential cache `name` (e.g. `FILE:/tmp/krb5cc_app`, what
    /// `kinit -c` filled) instead of the process's default.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = zk_framework::GssapiConfig::default().credential_cache("FILE:/tmp/cc");
    /// assert_eq!(g.client_principal(), None);
    /// ```
    pub fn credential_cache(mut self, name: &str) -> Self {
        self.credential_cache = Some(name.to_string());
        self
    }

    /// The client principal given with [`keytab`](GssapiConfig::keytab).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::GssapiConfig::default().client_principal(), None);
    /// ```
    pub fn client_principal(&self) -> Option<&str> {
        self.client_principal.as_deref()
    }

    /// The server principal asked for when the connect string's host is
    /// `dialled` (before any canonicalization by Kerberos).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::GssapiConfig::default().server_principal_for("zk1"), "zookeeper/zk1");
    /// ```
    pub fn server_principal_for(&self, dialled: &str) -> String {
        if let Some(p) = &self.server_principal {
            return p.clone();
        }
        let service = self.service.as_deref().unwrap_or(zk_proto::sasl::SERVICE);
        let host = self.server_host.as_deref().unwrap_or(dialled);
        match &self.server_realm {
            Some(r) => format!("{service}/{host}@{r}"),
            None => format!("{service}/{host}"),
        }
    }
}

/// What a mechanism does next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this token and wait for the server's reply.
    Send(Vec<u8>),
    /// Authenticated: nothing more to send.
    Done,
}

/// The client side of one SASL exchange on one connection.
pub(crate) trait Mechanism: Send {
    /// `DIGEST-MD5` or `GSSAPI`.
    fn name(&self) -> &'static str;
    /// The first token, sent right after the ConnectResponse (empty for
    /// DIGEST-MD5, which has no initial response).
    fn initial(&mut self) -> std::result::Result<Vec<u8>, SaslError>;
    /// The server's reply to the last token sent (`None`: a null token).
    fn step(&mut self, reply: Option<&[u8]>) -> std::result::Result<Step, SaslError>;
    /// The connection attempt's deadline, told before [`initial`](Mechanism::initial):
    /// a mechanism whose steps may block on a third party (GSSAPI asks the
    /// KDC for tickets) stops waiting then. The default ignores it.
    fn set_deadline(&mut self, _deadline: std::time::Instant) {}
}
