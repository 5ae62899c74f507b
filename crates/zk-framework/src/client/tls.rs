//! TLS for the client (rustls with the `ring` provider, no OpenSSL): the public
//! configuration ([`TlsConfig`]; its failures are [`TlsError`], defined with the
//! crate's error type) and the transport under the connection (plain TCP or TLS).
//!
//! The transport is one of two shapes. Plain TCP is a `TcpStream` written by the
//! callers and read by the I/O thread, exactly as before TLS existed (no extra
//! copy, no extra lock). A TLS connection is one rustls state machine shared by
//! both sides under a short mutex: the I/O thread reads raw bytes from the socket
//! with no lock held and feeds them to the state machine under the mutex; a writer
//! encrypts under the mutex into a buffer and writes that buffer to the socket
//! after releasing it. Writers are serialised by the client's `wire` lock and
//! `writing` flag, so records reach the socket in the order they were made.

use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::error::{Error, Result, TlsError, TlsErrorKind};
use zk_proto::frame::FrameBuffer;

fn config_error(message: impl Into<String>) -> Error {
    Error::Tls(TlsError::new(TlsErrorKind::InvalidConfig, message))
}

/// The TLS settings of a client: CA certificates to verify the server with, an
/// optional client certificate and key (mutual TLS, which ZooKeeper maps to the
/// `x509` auth scheme), and whether the server's name is checked.
///
/// Built once with [`TlsConfig::builder`] (every input is checked then: PEM
/// parsing, the key matching the certificate); cheap to clone; given to
/// [`ClientConfig::with_tls`](super::ClientConfig::with_tls) or
/// [`CuratorFrameworkBuilder::tls`](crate::CuratorFrameworkBuilder::tls). Host name
/// verification is on by default: the server's certificate must name the host
/// (or IP literal) of the connect string. For IP-only test setups whose
/// certificates name no IP, [`TlsConfigBuilder::verify_hostname`]`(false)` still
/// verifies the chain against the CAs (and the dates) but not the name.
///
/// `Debug` prints what was configured, never the private key.
///
/// # Examples
///
/// ```no_run
/// use zk_framework::{Client, ClientConfig, TlsConfig};
///
/// let tls = TlsConfig::builder()
///     .ca_pem_file("/etc/zookeeper/ca.pem")
///     .client_cert_pem_files("/etc/zookeeper/client.pem", "/etc/zookeeper/client.key")
///     .build()?;
/// let zk = Client::connect("zk1.example.com:2281", ClientConfig::default().with_tls(tls))?;
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    rustls: Arc<rustls::ClientConfig>,
    ca_certs: usize,
    client_cert: bool,
    client_x509_id: Option<String>,
    verify_hostname: bool,
}

impl PartialEq for TlsConfig {
    /// Two configurations are equal when one is a clone of the other.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.rustls, &other.rustls)
    }
}

impl Eq for TlsConfig {}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_certs", &self.ca_certs)
            .field("client_cert", &self.client_cert)
            .field("verify_hostname", &self.verify_hostname)
            .finish()
    }
}

impl TlsConfig {
    /// A builder with no CA, no client certificate and host name verification on.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::TlsConfig::builder().verify_hostname(false);
    /// assert!(b.build().is_err()); // no CA given
    /// ```
    pub fn builder() -> TlsConfigBuilder {
        TlsConfigBuilder {
            cas: Vec::new(),
            client: None,
            verify_hostname: true,
            error: None,
        }
    }

    /// Whether a client certificate is presented (mutual TLS).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let tls = zk_framework::TlsConfig::builder().ca_pem_file("ca.pem").build()?;
    /// assert!(!tls.has_client_cert());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn has_client_cert(&self) -> bool {
        self.client_cert
    }

    /// The `x509` id ZooKeeper gives a connection presenting this
    /// configuration's client certificate: the certificate's subject as
    /// ZooKeeper's `X509AuthenticationProvider` writes it (Java's RFC 2253
    /// form, last attribute first, e.g. `CN=app,O=Example`; see
    /// [`zk_proto::x509::subject_id`]). Use it in `x509` ACL entries
    /// ([`crate::Acl::x509`]). `None` without a client certificate (or if its
    /// subject cannot be read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{perms, Acl, FixedAclProvider, TlsConfig};
    /// let tls = TlsConfig::builder()
    ///     .ca_pem_file("ca.pem")
    ///     .client_cert_pem_files("app.pem", "app.key")
    ///     .build()?;
    /// let me = tls.client_x509_id().expect("a client certificate");
    /// let only_me = FixedAclProvider::new(vec![Acl::x509(me, perms::ALL)]);
    /// # let _ = only_me;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn client_x509_id(&self) -> Option<&str> {
        self.client_x509_id.as_deref()
    }

    /// Whether the server's certificate must name the host connected to.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let tls = zk_framework::TlsConfig::builder().ca_pem_file("ca.pem").build()?;
    /// assert!(tls.verifies_hostname());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn verifies_hostname(&self) -> bool {
        self.verify_hostname
    }

    /// `e` in the light of this configuration: a server that rejects a client
    /// which presented no certificate requires one.
    pub(crate) fn refine(&self, e: TlsError) -> TlsError {
        if e.is_handshake_refused() && !self.client_cert {
            // A TLS 1.2 server (ZooKeeper's default protocol) has no
            // `certificate_required` alert: since Java's JDK-8311644 (in the
            // Java 17 of Debian's current updates) it ends a handshake without
            // the client certificate it requires with `handshake_failure`.
            return TlsError::new(
                TlsErrorKind::ClientCertificateRequired,
                "the server refused the TLS handshake without a client certificate (alert: handshake failure, \
                 what a TLS 1.2 server sends when it requires one): it requires a client certificate (mutual \
                 TLS) and none was configured; give one (client_cert_pem_files; zk-lock --tls-cert and --tls-key)",
            );
        }
        if e.kind() == TlsErrorKind::ClientCertificateRejected && !self.client_cert {
            return TlsError::new(
                TlsErrorKind::ClientCertificateRequired,
                "the server requires a client certificate (mutual TLS) and none was configured (it refused \
                 the connection without one); give one (client_cert_pem_files; zk-lock --tls-cert and --tls-key)",
            );
        }
        e
    }

    /// A new rustls connection to `host` (a name or an IP literal).
    pub(crate) fn connection(&self, host: &str) -> std::result::Result<ClientConnection, TlsError> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| {
            TlsError::new(
                TlsErrorKind::InvalidConfig,
                format!("{host:?} is not a TLS server name: {e}"),
            )
        })?;
        let mut conn = ClientConnection::new(self.rustls.clone(), name).map_err(|e| classify(&e))?;
        // Frames are bounded by max_frame: let whole frames be encrypted at once.
        conn.set_buffer_limit(None);
        Ok(conn)
    }
}

/// Builds a [`TlsConfig`]; inputs are checked by [`TlsConfigBuilder::build`].
///
/// # Examples
///
/// ```no_run
/// use zk_framework::TlsConfig;
/// let tls = TlsConfig::builder()
///     .ca_pem(&std::fs::read("ca.pem").unwrap())
///     .client_cert_pem(&std::fs::read("client.pem").unwrap(), &std::fs::read("client.key").unwrap())
///     .verify_hostname(false)
///     .build()?;
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub struct TlsConfigBuilder {
    cas: Vec<CertificateDer<'static>>,
    client: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    verify_hostname: bool,
    error: Option<Error>,
}

impl fmt::Debug for TlsConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfigBuilder")
            .field("ca_certs", &self.cas.len())
            .field("client_cert", &self.client.is_some())
            .field("verify_hostname", &self.verify_hostname)
            .field("error", &self.error)
            .finish()
    }
}

fn read_file(what: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| config_error(format!("cannot read the {what} {}: {e}", path.display())))
}

fn parse_certs(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| config_error(format!("the {what} is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(config_error(format!("the {what} has no CERTIFICATE block")));
    }
    Ok(certs)
}

impl TlsConfigBuilder {
    fn keep_first_error(&mut self, r: Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Adds the CA certificate(s) of a PEM text (one or more `CERTIFICATE` blocks).
    ///
    /// # Examples
    ///
    /// ```
    /// let e = zk_framework::TlsConfig::builder().ca_pem(b"").build().unwrap_err();
    /// assert!(e.to_string().contains("no CERTIFICATE block"));
    /// ```
    pub fn ca_pem(mut self, pem: &[u8]) -> Self {
        let r = parse_certs("CA PEM", pem).map(|c| self.cas.extend(c));
        self.keep_first_error(r);
        self
    }

    /// Adds the CA certificate(s) of a PEM file.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = zk_framework::TlsConfig::builder().ca_pem_file("/nonexistent/ca.pem").build().unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent/ca.pem"));
    /// ```
    pub fn ca_pem_file(mut self, path: impl AsRef<Path>) -> Self {
        let r = read_file("CA file", path.as_ref())
            .and_then(|pem| parse_certs(&format!("CA file {}", path.as_ref().display()), &pem))
            .map(|c| self.cas.extend(c));
        self.keep_first_error(r);
        self
    }

    /// Sets the client certificate chain (PEM, the client's own certificate
    /// first) and its private key (PEM: PKCS#8, PKCS#1 or SEC1), for mutual TLS.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = zk_framework::TlsConfig::builder().client_cert_pem(b"x", b"y").build().unwrap_err();
    /// assert!(e.to_string().contains("client certificate"));
    /// ```
    pub fn client_cert_pem(mut self, cert_pem: &[u8], key_pem: &[u8]) -> Self {
        let r = parse_certs("client certificate PEM", cert_pem).and_then(|chain| {
            let key = PrivateKeyDer::from_pem_slice(key_pem)
                .map_err(|e| config_error(format!("the client key PEM has no usable private key: {e}")))?;
            self.client = Some((chain, key));
            Ok(())
        });
        self.keep_first_error(r);
        self
    }

    /// [`TlsConfigBuilder::client_cert_pem`] from files.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = zk_framework::TlsConfig::builder()
    ///     .client_cert_pem_files("/nonexistent/c.pem", "/nonexistent/c.key")
    ///     .build()
    ///     .unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent/c.pem"));
    /// ```
    pub fn client_cert_pem_files(self, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        let files = read_file("client certificate file", cert.as_ref())
            .and_then(|c| read_file("client key file", key.as_ref()).map(|k| (c, k)));
        match files {
            Ok((c, k)) => self.client_cert_pem(&c, &k),
            Err(e) => {
                let mut b = self;
                b.keep_first_error(Err(e));
                b
            }
        }
    }

    /// Whether the server's certificate must name the host connected to
    /// (default `true`). `false` still verifies the chain against the CAs and
    /// the validity dates, only not the name: for IP-only test setups.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = zk_framework::TlsConfig::builder().verify_hostname(false);
    /// assert!(format!("{b:?}").contains("verify_hostname: false"));
    /// ```
    pub fn verify_hostname(mut self, on: bool) -> Self {
        self.verify_hostname = on;
        self
    }

    /// Checks everything and builds the configuration.
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] of kind [`TlsErrorKind::InvalidConfig`]: a file that cannot
    /// be read, PEM without a certificate or key, a CA certificate that is not
    /// valid DER, no CA at all, or a private key that does not match the client
    /// certificate (or that rustls cannot use).
    ///
    /// # Examples
    ///
    /// ```
    /// let e = zk_framework::TlsConfig::builder().build().unwrap_err();
    /// assert!(e.to_string().contains("no CA certificate"));
    /// ```
    pub fn build(self) -> Result<TlsConfig> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.cas.is_empty() {
            return Err(config_error(
                "no CA certificate given to verify the server with (ca_pem or ca_pem_file)",
            ));
        }
        let mut roots = RootCertStore::empty();
        let ca_certs = self.cas.len();
        for c in self.cas {
            roots
                .add(c)
                .map_err(|e| config_error(format!("a CA certificate cannot be used: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| config_error(format!("cannot build the certificate verifier: {e}")))?;
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| config_error(format!("no usable TLS version: {e}")))?;
        let builder = if self.verify_hostname {
            builder.with_webpki_verifier(webpki)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier(webpki)))
        };
        let client_cert = self.client.is_some();
        let client_x509_id = self
            .client
            .as_ref()
            .and_then(|(chain, _)| chain.first())
            .and_then(|c| zk_proto::x509::subject_id(c.as_ref()));
        let config = match self.client {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
                config_error(format!(
                    "the client key cannot be used with the client certificate: {e}"
                ))
            })?,
        };
        Ok(TlsConfig {
            rustls: Arc::new(config),
            ca_certs,
            client_cert,
            client_x509_id,
            verify_hostname: self.verify_hostname,
        })
    }
}

/// Verifies the chain and dates like webpki, but accepts a certificate that
/// does not name the host.
#[derive(Debug)]
struct ChainOnlyVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // webpki checks the chain (and dates) before the name: a name error
            // means everything else passed.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A rustls error as a [`TlsError`] with a message for people (the host
/// unknown: see [`classify_at`]).
pub(crate) fn classify(e: &rustls::Error) -> TlsError {
    classify_at(e, None)
}

/// A rustls error met while talking to `host` (when known) as a [`TlsError`]
/// whose message says what failed, for which host, and what to check. No
/// rustls `Debug` output reaches the message.
pub(crate) fn classify_at(e: &rustls::Error, host: Option<&str>) -> TlsError {
    use TlsErrorKind as K;
    let server = match host {
        Some(h) => format!("the server's certificate (from {h})"),
        None => "the server's certificate".to_string(),
    };
    if let rustls::Error::AlertReceived(AlertDescription::HandshakeFailure) = e {
        return TlsError::handshake_refused(format!(
            "{} refused the TLS handshake (alert: handshake failure): no protocol version or cipher suite in \
             common, or (a TLS 1.2 server) a client certificate it requires is missing",
            host.map_or_else(|| "the server".to_string(), |h| format!("the server at {h}"))
        ));
    }
    let (kind, msg) = match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => (
                K::UnknownIssuer,
                format!(
                    "{server} is not signed by a trusted CA (unknown issuer); check that the CA certificate(s) \
                     given (ca_pem, ca_pem_file; zk-lock --tls-ca) include the CA that signed the server's certificate"
                ),
            ),
            CertificateError::NotValidForNameContext { expected, presented } => {
                let presented: Vec<&str> = presented.iter().filter_map(|n| presented_name(n)).collect();
                let names = if presented.is_empty() {
                    "it names no host".to_string()
                } else {
                    format!("it names {}", presented.join(", "))
                };
                (
                    K::NameMismatch,
                    format!(
                        "the server's certificate is not valid for {} ({names}); connect with a name it lists, \
                         or set verify_hostname(false) (zk-lock --tls-no-hostname-verify) for IP-only test setups",
                        expected.to_str()
                    ),
                )
            }
            CertificateError::NotValidForName => (
                K::NameMismatch,
                format!(
                    "the server's certificate is not valid for {}; connect with a name it lists, or set \
                     verify_hostname(false) (zk-lock --tls-no-hostname-verify) for IP-only test setups",
                    host.unwrap_or("the host connected to")
                ),
            ),
            CertificateError::ExpiredContext { time, not_after } => (
                K::Expired,
                format!(
                    "{server} expired on {} (now {}); renew it (or check this machine's clock)",
                    utc(not_after.as_secs()),
                    utc(time.as_secs())
                ),
            ),
            CertificateError::Expired => (
                K::Expired,
                format!("{server} has expired; renew it (or check this machine's clock)"),
            ),
            CertificateError::NotValidYetContext { time, not_before } => (
                K::Expired,
                format!(
                    "{server} is not valid before {} (now {}); check this machine's clock, or wait for the \
                     certificate's start date",
                    utc(not_before.as_secs()),
                    utc(time.as_secs())
                ),
            ),
            CertificateError::NotValidYet => (
                K::Expired,
                format!("{server} is not valid yet; check this machine's clock"),
            ),
            other => (
                K::BadCertificate,
                format!("{server} was rejected: {}", certificate_problem(other)),
            ),
        },
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => (
            K::ClientCertificateRequired,
            format!(
                "{} requires a client certificate (mutual TLS) and none was configured; give one \
                 (client_cert_pem_files; zk-lock --tls-cert and --tls-key)",
                host.map_or_else(|| "the server".to_string(), |h| format!("the server at {h}"))
            ),
        ),
        rustls::Error::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::AccessDenied),
        ) => (
            K::ClientCertificateRejected,
            format!(
                "{} rejected the client's certificate or lack of one ({}); check that the client certificate \
                 is signed by a CA the server trusts (its ssl.trustStore) and is still valid",
                host.map_or_else(|| "the server".to_string(), |h| format!("the server at {h}")),
                alert_words(*a)
            ),
        ),
        rustls::Error::InvalidMessage(_) => (
            K::ProtocolMismatch,
            format!(
                "{} does not speak TLS on this port (its reply is not a TLS record); is it the secure client \
                 port (secureClientPort)?",
                host.map_or_else(|| "the server".to_string(), |h| format!("the server at {h}"))
            ),
        ),
        other => (
            K::Handshake,
            match host {
                Some(h) => format!("the TLS handshake with {h} failed: {other}"),
                None => format!("TLS handshake failed: {other}"),
            },
        ),
    };
    TlsError::new(kind, msg)
}

/// What is wrong with a certificate rustls rejected for a reason other than
/// its issuer, name or dates, in words.
fn certificate_problem(c: &CertificateError) -> String {
    match c {
        CertificateError::BadEncoding => "it is not a well-formed certificate (bad encoding)".into(),
        CertificateError::Revoked => "it has been revoked".into(),
        CertificateError::BadSignature => "its signature does not verify".into(),
        CertificateError::UnhandledCriticalExtension => "it has a critical extension this client does not know".into(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "it is not issued for TLS server authentication (its extended key usage lacks serverAuth); \
             issue one that allows it"
                .into()
        }
        CertificateError::UnsupportedSignatureAlgorithmContext { .. }
        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "it is signed with an algorithm this client does not support".into()
        }
        CertificateError::UnknownRevocationStatus
        | CertificateError::ExpiredRevocationList
        | CertificateError::ExpiredRevocationListContext { .. } => "its revocation status cannot be established".into(),
        CertificateError::ApplicationVerificationFailure => "the verifier refused it".into(),
        CertificateError::Other(e) => format!("{e}"),
        _ => "it cannot be used (see the CA and the certificate's extensions)".into(),
    }
}

/// A name of the server's certificate as webpki reports it
/// (`DnsName("zk1")`, `IpAddress(127.0.0.1)`) without the wrapper; `None` for
/// entries that are not host names (a directory name, an unsupported kind).
fn presented_name(n: &str) -> Option<&str> {
    for (open, close) in [
        ("DnsName(\"", "\")"),
        ("IpAddress(", ")"),
        ("UniformResourceIdentifier(\"", "\")"),
    ] {
        if let Some(inner) = n.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return Some(inner);
        }
    }
    if n == "DirectoryName" || n.starts_with("Unsupported(") {
        return None;
    }
    Some(n)
}

/// A TLS alert's name in words (`BadCertificate` → `bad certificate`).
fn alert_words(a: AlertDescription) -> String {
    let name = format!("{a:?}");
    let mut out = String::from("alert: ");
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch.is_ascii_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = ch.is_ascii_lowercase();
        out.push(ch.to_ascii_lowercase());
    }
    out
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(secs: u64) -> String {
    let rem = secs % 86_400;
    let (year, month, day) = super::date::civil_from_days((secs / 86_400) as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The rustls error inside an I/O error made by the transport, if any.
pub(crate) fn tls_error_of(e: &io::Error) -> Option<TlsError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(classify)
}

fn tls_io(e: rustls::Error) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, e)
}

/// One TLS connection, shared by the reader and the writers.
pub(super) struct TlsShared {
    conn: Mutex<ClientConnection>,
    /// The server's close_notify (or EOF) was seen; the next read reports EOF.
    eof: AtomicBool,
}

/// The byte stream under a connection: plain TCP or TLS over TCP.
pub(super) enum Transport {
    Plain(TcpStream),
    Tls(TcpStream, Arc<TlsShared>),
}

/// Size of the scratch buffer plaintext is read into from rustls.
const PLAINTEXT_CHUNK: usize = 16 * 1024;

impl Transport {
    /// The socket (for timeouts, shutdown and the killer clone).
    pub fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s,
        }
    }

    /// Another handle on the same connection (the writer half).
    pub fn try_clone(&self) -> io::Result<Transport> {
        Ok(match self {
            Transport::Plain(s) => Transport::Plain(s.try_clone()?),
            Transport::Tls(s, t) => Transport::Tls(s.try_clone()?, t.clone()),
        })
    }

    /// Shuts the socket down in both directions.
    pub fn shutdown(&self) {
        let _ = self.socket().shutdown(Shutdown::Both);
    }

    /// Writes all of `buf` (encrypted first over TLS). Callers serialise writes.
    pub fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        match self {
            Transport::Plain(s) => (&*s).write_all(buf),
            Transport::Tls(s, t) => {
                let mut out = Vec::with_capacity(buf.len() + 64);
                {
                    let mut conn = t.conn.lock();
                    conn.writer().write_all(buf)?;
                    while conn.wants_write() {
                        conn.write_tls(&mut out)?;
                    }
                }
                (&*s).write_all(&out)
            }
        }
    }

    /// Reads what the socket has (blocking up to its read timeout) and appends
    /// the plaintext to `fb`. Returns the number of bytes read from the socket:
    /// 0 is EOF (or the server's close_notify). Errors of kind `WouldBlock` or
    /// `TimedOut` are read timeouts; a TLS failure is `InvalidData` wrapping the
    /// rustls error (see [`tls_error_of`]).
    pub fn read_into(&self, buf: &mut [u8], fb: &mut FrameBuffer) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => {
                let n = (&*s).read(buf)?;
                fb.extend(&buf[..n]);
                Ok(n)
            }
            Transport::Tls(s, t) => {
                if t.eof.load(Ordering::Relaxed) {
                    return Ok(0);
                }
                let n = (&*s).read(buf)?;
                if n == 0 {
                    return Ok(0);
                }
                let mut plain = [0u8; PLAINTEXT_CHUNK];
                let mut raw = &buf[..n];
                let mut conn = t.conn.lock();
                loop {
                    if !raw.is_empty() {
                        conn.read_tls(&mut raw)?;
                    }
                    let state = conn.process_new_packets().map_err(tls_io)?;
                    loop {
                        match conn.reader().read(&mut plain) {
                            Ok(0) => {
                                t.eof.store(true, Ordering::Relaxed);
                                break;
                            }
                            Ok(k) => fb.extend(&plain[..k]),
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) => return Err(e),
                        }
                    }
                    if state.peer_has_closed() {
                        t.eof.store(true, Ordering::Relaxed);
                    }
                    if raw.is_empty() {
                        return Ok(n);
                    }
                }
            }
        }
    }
}

/// Connects TLS over `sock` to `host` and completes the handshake before
/// `deadline`.
pub(super) fn handshake(
    config: &TlsConfig,
    host: &str,
    sock: TcpStream,
    deadline: Instant,
) -> std::result::Result<Transport, HandshakeError> {
    let mut conn = config.connection(host).map_err(HandshakeError::Tls)?;
    while conn.is_handshaking() {
        let now = Instant::now();
        if now >= deadline {
            return Err(HandshakeError::Tls(TlsError::new(
                TlsErrorKind::Handshake,
                format!(
                    "the TLS handshake with {host} did not finish within the connect timeout; is the server \
                     overloaded, or is this a port where nothing answers?"
                ),
            )));
        }
        let left = (deadline - now).max(Duration::from_millis(1));
        sock.set_read_timeout(Some(left)).map_err(HandshakeError::Io)?;
        sock.set_write_timeout(Some(left)).map_err(HandshakeError::Io)?;
        match conn.complete_io(&mut &sock) {
            Ok((0, 0)) if conn.is_handshaking() => {
                return Err(HandshakeError::Tls(TlsError::new(
                    TlsErrorKind::ProtocolMismatch,
                    format!(
                        "the server at {host} closed the connection during the TLS handshake; is it the secure \
                         client port (secureClientPort)?"
                    ),
                )))
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                let rustls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
                return Err(match rustls_error.map(|r| classify_at(r, Some(host))) {
                    Some(t) => HandshakeError::Tls(t),
                    None if e.kind() == ErrorKind::UnexpectedEof => HandshakeError::Tls(TlsError::new(
                        TlsErrorKind::ProtocolMismatch,
                        format!(
                            "the server at {host} closed the connection during the TLS handshake; is it the \
                             secure client port (secureClientPort)?"
                        ),
                    )),
                    None => HandshakeError::Io(e),
                });
            }
        }
    }
    let shared = TlsShared {
        conn: Mutex::new(conn),
        eof: AtomicBool::new(false),
    };
    Ok(Transport::Tls(sock, Arc::new(shared)))
}

/// Why a TLS handshake failed.
pub(super) enum HandshakeError {
    Tls(TlsError),
    Io(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(e: rustls::Error) -> TlsError {
        classify_at(&e, Some("127.0.0.1"))
    }

    fn no_debug(t: &TlsError) {
        let m = t.message();
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
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_607_484), "2026-11-25 11:51:24 UTC");
        assert_eq!(utc(4_102_444_799), "2099-12-31 23:59:59 UTC");
    }

    #[test]
    fn a_bare_handshake_failure_without_a_client_certificate_means_one_is_required() {
        // A TLS 1.2 server (ZooKeeper's default) ends the handshake of a
        // client without the certificate it requires with `handshake_failure`
        // (Java since JDK-8311644); with a certificate given, the alert says
        // nothing certain (no cipher suite in common, say).
        let pki = zk_testing::tls::TestPki::new("ca").unwrap();
        let no_cert = TlsConfig::builder().ca_pem(pki.ca_pem().as_bytes()).build().unwrap();
        let ck = pki.client_cert("alice").unwrap();
        let with_cert = TlsConfig::builder()
            .ca_pem(pki.ca_pem().as_bytes())
            .client_cert_pem(ck.cert_pem().as_bytes(), ck.key_pem().as_bytes())
            .build()
            .unwrap();
        let refused = || at(rustls::Error::AlertReceived(AlertDescription::HandshakeFailure));

        let t = no_cert.refine(refused());
        assert_eq!(t.kind(), TlsErrorKind::ClientCertificateRequired);
        assert!(t.kind().is_certain());
        assert!(
            t.message().contains("requires a client certificate") && t.message().contains("give one"),
            "{t}"
        );
        no_debug(&t);

        let t = with_cert.refine(refused());
        assert_eq!(t.kind(), TlsErrorKind::Handshake);
        assert!(!t.kind().is_certain());

        // Other failures are left as they are.
        let other = at(rustls::Error::HandshakeNotComplete);
        assert_eq!(no_cert.refine(other.clone()), other);
    }

    #[test]
    fn each_kind_says_what_failed_for_which_host_and_what_to_check() {
        let ip = ServerName::try_from("127.0.0.1".to_string()).unwrap();
        let t = at(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForNameContext {
                expected: ip,
                presented: vec!["DnsName(\"localhost\")".into(), "zk1".into(), "DirectoryName".into()],
            },
        ));
        assert_eq!(t.kind(), TlsErrorKind::NameMismatch);
        assert!(
            t.message().starts_with(
                "the server's certificate is not valid for 127.0.0.1 (it names localhost, zk1); \
                 connect with a name it lists, or set verify_hostname(false)"
            ),
            "{t}"
        );
        no_debug(&t);
        assert_eq!(presented_name("IpAddress(10.0.0.1)"), Some("10.0.0.1"));
        let t = at(rustls::Error::InvalidCertificate(CertificateError::NotValidForName));
        assert!(t.message().contains("not valid for 127.0.0.1"), "{t}");

        let t = at(rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: UnixTime::since_unix_epoch(Duration::from_secs(1_795_607_484)),
            not_after: UnixTime::since_unix_epoch(Duration::from_secs(1_795_607_484 - 4 * 86_400)),
        }));
        assert_eq!(t.kind(), TlsErrorKind::Expired);
        assert_eq!(
            t.message(),
            "the server's certificate (from 127.0.0.1) expired on 2026-11-21 11:51:24 UTC \
             (now 2026-11-25 11:51:24 UTC); renew it (or check this machine's clock)"
        );
        let t = at(rustls::Error::InvalidCertificate(
            CertificateError::NotValidYetContext {
                time: UnixTime::since_unix_epoch(Duration::from_secs(0)),
                not_before: UnixTime::since_unix_epoch(Duration::from_secs(86_400)),
            },
        ));
        assert_eq!(t.kind(), TlsErrorKind::Expired);
        assert!(
            t.message()
                .contains("is not valid before 1970-01-02 00:00:00 UTC (now 1970-01-01 00:00:00 UTC)"),
            "{t}"
        );
        no_debug(&t);

        let t = at(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert_eq!(t.kind(), TlsErrorKind::UnknownIssuer);
        assert!(
            t.message().starts_with(
                "the server's certificate (from 127.0.0.1) is not signed by a trusted CA (unknown issuer); \
                 check that the CA certificate(s)"
            ),
            "{t}"
        );

        let t = at(rustls::Error::InvalidCertificate(CertificateError::InvalidPurpose));
        assert_eq!(t.kind(), TlsErrorKind::BadCertificate);
        assert!(t.message().contains("serverAuth"), "{t}");
        let t = at(rustls::Error::InvalidCertificate(CertificateError::Revoked));
        assert_eq!(
            t.message(),
            "the server's certificate (from 127.0.0.1) was rejected: it has been revoked"
        );

        let t = at(rustls::Error::AlertReceived(AlertDescription::CertificateRequired));
        assert_eq!(t.kind(), TlsErrorKind::ClientCertificateRequired);
        assert!(
            t.message().starts_with(
                "the server at 127.0.0.1 requires a client certificate (mutual TLS) and none was configured; give one"
            ),
            "{t}"
        );
        let t = at(rustls::Error::AlertReceived(AlertDescription::HandshakeFailure));
        assert_eq!(t.kind(), TlsErrorKind::Handshake);
        assert!(t.is_handshake_refused());
        assert!(
            t.message().starts_with(
                "the server at 127.0.0.1 refused the TLS handshake (alert: handshake failure): no protocol \
                 version or cipher suite in common, or (a TLS 1.2 server) a client certificate it requires is missing"
            ),
            "{t}"
        );
        no_debug(&t);
        let t = at(rustls::Error::AlertReceived(AlertDescription::UnknownCA));
        assert_eq!(t.kind(), TlsErrorKind::ClientCertificateRejected);
        assert!(
            t.message().starts_with(
                "the server at 127.0.0.1 rejected the client's certificate or lack of one (alert: unknown ca); \
                 check that the client certificate is signed by a CA the server trusts"
            ),
            "{t}"
        );
        no_debug(&t);

        let t = at(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(t.kind(), TlsErrorKind::ProtocolMismatch);
        assert_eq!(
            t.message(),
            "the server at 127.0.0.1 does not speak TLS on this port (its reply is not a TLS record); \
             is it the secure client port (secureClientPort)?"
        );

        let t = at(rustls::Error::HandshakeNotComplete);
        assert_eq!(t.kind(), TlsErrorKind::Handshake);
        assert!(
            t.message().starts_with("the TLS handshake with 127.0.0.1 failed: "),
            "{t}"
        );

        // Without a host (an error after the handshake), the messages still read.
        let t = classify(&rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert!(
            t.message()
                .starts_with("the server's certificate is not signed by a trusted CA"),
            "{t}"
        );
    }
}
