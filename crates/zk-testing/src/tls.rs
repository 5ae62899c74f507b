//! TLS for test servers: [`ServerTls`] (what a TLS server presents and whom it
//! accepts), and [`TestPki`], a throw-away certificate authority that issues the
//! certificates a test needs (server and client certificates, expired ones,
//! another CA), generated in memory with `rcgen`: nothing is checked in.
//!
//! The same [`ServerTls`] serves the embedded server
//! ([`ServerConfig::tls`](crate::embedded::ServerConfig::tls)) and real Apache
//! ZooKeeper ([`ApacheConfig::tls`](crate::apache::ApacheConfig::tls), a
//! `secureClientPort` with the Netty connection factory and PEM key and trust
//! stores).
//!
//! # Examples
//!
//! ```
//! use zk_testing::tls::TestPki;
//!
//! let pki = TestPki::new("test CA")?;
//! let server = pki.server_cert()?; // for localhost and 127.0.0.1
//! assert!(pki.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
//! assert!(!format!("{server:?}").contains("PRIVATE KEY"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

fn rcgen_err(e: rcgen::Error) -> io::Error {
    io::Error::other(format!("rcgen: {e}"))
}

/// Whether a TLS server asks clients for a certificate (ZooKeeper's
/// `ssl.clientAuth`).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_testing::tls::ClientAuth::default(), zk_testing::tls::ClientAuth::None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// No client certificate is asked for (`ssl.clientAuth=none`).
    #[default]
    None,
    /// A client certificate signed by the client CA is required
    /// (`ssl.clientAuth=need`): a client without one is refused.
    Need,
}

impl ClientAuth {
    /// The value of ZooKeeper's `ssl.clientAuth`.
    pub(crate) fn zookeeper_value(&self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Need => "need",
        }
    }
}

/// What a TLS test server presents (certificate chain and private key, PEM) and
/// whom it accepts (a client CA, and whether a client certificate is required).
/// `Debug` never prints the key.
///
/// # Examples
///
/// ```
/// use zk_testing::tls::{ClientAuth, TestPki};
/// let pki = TestPki::new("ca")?;
/// let tls = pki.server_tls()?.require_client_cert(pki.ca_pem());
/// assert_eq!(tls.client_auth(), ClientAuth::Need);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ServerTls {
    cert_pem: String,
    key_pem: String,
    client_ca_pem: Option<String>,
    client_auth: ClientAuth,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_pem_len", &self.cert_pem.len())
            .field("client_ca", &self.client_ca_pem.is_some())
            .field("client_auth", &self.client_auth)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// A server presenting `cert_pem` (its certificate first, then any
    /// intermediates) with `key_pem` (PKCS#8), asking for no client certificate.
    /// Checked when a server starts with it.
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// let cert = pki.server_cert()?;
    /// let tls = zk_testing::tls::ServerTls::new(cert.cert_pem(), cert.key_pem());
    /// assert_eq!(tls.client_auth(), zk_testing::tls::ClientAuth::None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(cert_pem: &str, key_pem: &str) -> ServerTls {
        ServerTls {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
            client_ca_pem: None,
            client_auth: ClientAuth::None,
        }
    }

    /// Requires a client certificate signed by `client_ca_pem` (mutual TLS,
    /// `ssl.clientAuth=need`).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// let tls = pki.server_tls()?.require_client_cert(pki.ca_pem());
    /// assert_eq!(tls.client_auth(), zk_testing::tls::ClientAuth::Need);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn require_client_cert(mut self, client_ca_pem: &str) -> ServerTls {
        self.client_ca_pem = Some(client_ca_pem.to_string());
        self.client_auth = ClientAuth::Need;
        self
    }

    /// Whether a client certificate is required.
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert_eq!(pki.server_tls()?.client_auth(), zk_testing::tls::ClientAuth::None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    /// The rustls server configuration (ring provider).
    pub(crate) fn rustls_config(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let chain = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("server certificate PEM: {e}")))?;
        if chain.is_empty() {
            return Err(invalid("server certificate PEM has no CERTIFICATE block"));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| invalid(format!("server key PEM: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(format!("TLS versions: {e}")))?;
        let builder = match (&self.client_ca_pem, self.client_auth) {
            (Some(ca), ClientAuth::Need) => {
                let mut roots = RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                    let c = c.map_err(|e| invalid(format!("client CA PEM: {e}")))?;
                    roots.add(c).map_err(|e| invalid(format!("client CA: {e}")))?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| invalid(format!("client verifier: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("server certificate and key: {e}")))?;
        Ok(Arc::new(config))
    }

    /// Writes the files a real ZooKeeper needs into `dir`: a PEM key store (key
    /// and chain) and a PEM trust store (the client CA, else the server chain).
    /// Returns `(keystore, truststore)`.
    pub(crate) fn write_stores(&self, dir: &Path) -> io::Result<(PathBuf, PathBuf)> {
        let ks = dir.join("keystore.pem");
        let ts = dir.join("truststore.pem");
        std::fs::write(&ks, format!("{}\n{}", self.key_pem, self.cert_pem))?;
        std::fs::write(&ts, self.client_ca_pem.as_deref().unwrap_or(&self.cert_pem))?;
        Ok((ks, ts))
    }
}

/// A certificate and its private key, both PEM. `Debug` never prints the key.
///
/// # Examples
///
/// ```
/// let pki = zk_testing::tls::TestPki::new("ca")?;
/// let c = pki.client_cert("alice")?;
/// assert!(c.key_pem().contains("PRIVATE KEY"));
/// assert!(!format!("{c:?}").contains("PRIVATE KEY"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CertKey {
    cert_pem: String,
    key_pem: String,
}

impl fmt::Debug for CertKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertKey")
            .field("cert_pem_len", &self.cert_pem.len())
            .finish_non_exhaustive()
    }
}

impl CertKey {
    /// The certificate (PEM).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.server_cert()?.cert_pem().contains("BEGIN CERTIFICATE"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The private key (PKCS#8 PEM).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.server_cert()?.key_pem().contains("BEGIN PRIVATE KEY"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// Writes `NAME.pem` (certificate) and `NAME.key` (key) into `dir`; returns
    /// their paths.
    ///
    /// # Errors
    ///
    /// Writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// let dir = std::env::temp_dir();
    /// let (cert, key) = pki.client_cert("bob")?.write_files(&dir, &format!("doc-{}", std::process::id()))?;
    /// assert!(cert.is_file() && key.is_file());
    /// # std::fs::remove_file(cert)?; std::fs::remove_file(key)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_files(&self, dir: &Path, name: &str) -> io::Result<(PathBuf, PathBuf)> {
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        std::fs::write(&cert, &self.cert_pem)?;
        std::fs::write(&key, &self.key_pem)?;
        Ok((cert, key))
    }
}

/// A throw-away certificate authority for tests (ECDSA P-256 keys, made in
/// memory).
///
/// # Examples
///
/// ```
/// use zk_testing::tls::TestPki;
/// let pki = TestPki::new("ca")?;
/// let other = TestPki::new("another CA")?;
/// assert_ne!(pki.ca_pem(), other.ca_pem());
/// let expired = pki.expired_server_cert()?;
/// # let _ = expired;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TestPki {
    params: CertificateParams,
    key: KeyPair,
    ca_pem: String,
}

impl fmt::Debug for TestPki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestPki").finish_non_exhaustive()
    }
}

/// Validity of an issued certificate.
enum Validity {
    /// From a day ago to a year ahead.
    Current,
    /// Ended a day ago (began ten days ago).
    Expired,
}

impl TestPki {
    /// A new CA whose certificate has the common name `name`.
    ///
    /// # Errors
    ///
    /// Key generation or signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.ca_pem().contains("BEGIN CERTIFICATE"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(name: &str) -> io::Result<TestPki> {
        let key = KeyPair::generate().map_err(rcgen_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_err)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, Validity::Current);
        let cert = params.self_signed(&key).map_err(rcgen_err)?;
        Ok(TestPki {
            ca_pem: cert.pem(),
            params,
            key,
        })
    }

    /// The CA certificate (PEM): what clients trust.
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.ca_pem().ends_with("-----END CERTIFICATE-----\n") || pki.ca_pem().ends_with("-----END CERTIFICATE-----"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    fn issue(&self, common_name: &str, sans: &[&str], validity: Validity) -> io::Result<CertKey> {
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        self.issue_dn(dn, sans, validity)
    }

    fn issue_dn(&self, dn: DistinguishedName, sans: &[&str], validity: Validity) -> io::Result<CertKey> {
        let key = KeyPair::generate().map_err(rcgen_err)?;
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).map_err(rcgen_err)?;
        params.distinguished_name = dn;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        set_validity(&mut params, validity);
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).map_err(rcgen_err)?;
        Ok(CertKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A server certificate for `localhost` and `127.0.0.1`.
    ///
    /// # Errors
    ///
    /// Signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.server_cert()?.cert_pem().contains("CERTIFICATE"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn server_cert(&self) -> io::Result<CertKey> {
        self.issue("zookeeper", &["localhost", "127.0.0.1"], Validity::Current)
    }

    /// A server certificate that names only `names` (e.g. a host name the test
    /// does not connect to, for name-mismatch tests).
    ///
    /// # Errors
    ///
    /// A name rcgen rejects.
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// let c = pki.server_cert_for(&["zk.example.com"])?;
    /// # let _ = c;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn server_cert_for(&self, names: &[&str]) -> io::Result<CertKey> {
        self.issue("zookeeper", names, Validity::Current)
    }

    /// A server certificate for `localhost` and `127.0.0.1` that expired
    /// yesterday.
    ///
    /// # Errors
    ///
    /// Signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.expired_server_cert()?.cert_pem().contains("CERTIFICATE"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn expired_server_cert(&self) -> io::Result<CertKey> {
        self.issue("zookeeper", &["localhost", "127.0.0.1"], Validity::Expired)
    }

    /// A client certificate with common name `name` (also valid for
    /// `localhost`/`127.0.0.1`, for servers that check client host names).
    ///
    /// # Errors
    ///
    /// Signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// assert!(pki.client_cert("alice")?.cert_pem().contains("CERTIFICATE"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_cert(&self, name: &str) -> io::Result<CertKey> {
        self.issue(name, &["localhost", "127.0.0.1"], Validity::Current)
    }

    /// A client certificate whose subject is `subject`: `(attribute, value)`
    /// pairs, encoded in this order (so ZooKeeper's RFC 2253 `x509` id lists them
    /// last first), each its own RDN with a UTF8String value. An attribute is
    /// `CN`, `O`, `OU`, `C`, `ST`, `L`, `DC` or a dotted OID (e.g.
    /// `1.2.840.113549.1.9.1`, emailAddress); each at most once. Also valid for
    /// `localhost`/`127.0.0.1`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an unknown attribute name, a malformed OID or an
    /// attribute given twice; signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// // ZooKeeper names this client x509:CN=app,O=Example
    /// let c = pki.client_cert_with_subject(&[("O", "Example"), ("CN", "app")])?;
    /// assert!(c.cert_pem().contains("CERTIFICATE"));
    /// assert!(pki.client_cert_with_subject(&[("XX", "a")]).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn client_cert_with_subject(&self, subject: &[(&str, &str)]) -> io::Result<CertKey> {
        let mut dn = DistinguishedName::new();
        let mut seen = Vec::new();
        for &(attr, value) in subject {
            let ty = match attr {
                "CN" => DnType::CommonName,
                "O" => DnType::OrganizationName,
                "OU" => DnType::OrganizationalUnitName,
                "C" => DnType::CountryName,
                "ST" => DnType::StateOrProvinceName,
                "L" => DnType::LocalityName,
                "DC" => DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 25]),
                oid => {
                    let arcs: Option<Vec<u64>> = oid.split('.').map(|a| a.parse().ok()).collect();
                    match arcs {
                        Some(arcs) if arcs.len() >= 2 && arcs[0] <= 2 => DnType::CustomDnType(arcs),
                        _ => return Err(invalid(format!("unknown subject attribute {attr:?}"))),
                    }
                }
            };
            if seen.contains(&ty) {
                return Err(invalid(format!("subject attribute {attr:?} given twice")));
            }
            seen.push(ty.clone());
            dn.push(ty, value);
        }
        self.issue_dn(dn, &["localhost", "127.0.0.1"], Validity::Current)
    }

    /// [`ServerTls`] with a fresh [`TestPki::server_cert`].
    ///
    /// # Errors
    ///
    /// Signing fails (not expected).
    ///
    /// # Examples
    ///
    /// ```
    /// let pki = zk_testing::tls::TestPki::new("ca")?;
    /// let tls = pki.server_tls()?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn server_tls(&self) -> io::Result<ServerTls> {
        let c = self.server_cert()?;
        Ok(ServerTls::new(c.cert_pem(), c.key_pem()))
    }
}

fn set_validity(params: &mut CertificateParams, validity: Validity) {
    let day = Duration::from_secs(86_400);
    let now = SystemTime::now();
    let (from, to) = match validity {
        Validity::Current => (now - day, now + 365 * day),
        Validity::Expired => (now - 10 * day, now - day),
    };
    params.not_before = from.into();
    params.not_after = to.into();
}
