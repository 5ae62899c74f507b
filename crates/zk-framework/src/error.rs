//! The one error type of `zk-framework`, and the TLS failure ([`TlsError`]) that
//! it carries.

use std::fmt;
use std::time::Duration;

use zk_proto::config::ConfigError;
use zk_proto::path::InvalidPath;
use zk_proto::ErrorCode;

/// Everything that can go wrong in `zk-framework`.
///
/// Server result codes that callers commonly match on have their own variant;
/// every other code is [`Error::Keeper`]. [`Error::code`] gives the ZooKeeper
/// code for any variant that has one, and [`Error::is_retryable`] says whether
/// Curator's retry loop would retry it.
///
/// # Examples
///
/// ```
/// use zk_framework::{proto::ErrorCode, Error};
/// let e = Error::from_code(ErrorCode::NoNode, "/a");
/// assert_eq!(e, Error::NoNode { path: "/a".into() });
/// assert_eq!(e.to_string(), "no node: /a");
/// assert!(!e.is_retryable());
/// assert!(Error::ConnectionLoss.is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The connection to the server was lost before the reply came; the request
    /// may or may not have been applied.
    ConnectionLoss,
    /// The session has expired; the handle is dead.
    SessionExpired,
    /// The operation did not complete in time.
    OperationTimeout,
    /// The handle's deadline ([`crate::CuratorFramework::with_deadline`],
    /// [`crate::Client::with_deadline`]) passed before the operation
    /// completed; a request may or may not have been applied. The connection
    /// is not affected.
    DeadlineExceeded,
    /// The session moved to another server.
    SessionMoved,
    /// The node does not exist.
    NoNode {
        /// The path.
        path: String,
    },
    /// The node already exists.
    NodeExists {
        /// The path.
        path: String,
    },
    /// The version did not match.
    BadVersion {
        /// The path.
        path: String,
    },
    /// The node has children.
    NotEmpty {
        /// The path.
        path: String,
    },
    /// Not authorised.
    NoAuth {
        /// The path.
        path: String,
    },
    /// Ephemeral nodes cannot have children.
    NoChildrenForEphemerals {
        /// The path.
        path: String,
    },
    /// The server rejected the arguments (for example an invalid path).
    BadArguments {
        /// The path.
        path: String,
    },
    /// The ACL was refused (`InvalidACL`): it is empty, names an unknown
    /// scheme or a malformed id, or names the `auth` scheme (the creator) on a
    /// session without credentials.
    InvalidAcl {
        /// The path.
        path: String,
    },
    /// Authentication failed: the server refused the credentials (an unknown
    /// scheme or malformed credentials) and closed the session.
    AuthFailed,
    /// The chroot of the connect string (`host:port/chroot`) does not exist
    /// on the server, so nothing can be created under it: a create with
    /// parents failed with `NoNode` at the top, and the chroot's node was
    /// found missing. Create the chroot's node (ZooKeeper does not), or fix
    /// the connect string. [`Error::code`] is `NoNode`; not retryable.
    ChrootMissing {
        /// The chroot, e.g. `/app`.
        chroot: String,
    },
    /// Any other ZooKeeper result code.
    Keeper {
        /// The code.
        code: ErrorCode,
        /// The path, when the request had one.
        path: String,
    },
    /// The path breaks ZooKeeper's rules; nothing was sent.
    InvalidPath(InvalidPath),
    /// The connect string could not be used.
    InvalidConnectString {
        /// What was given.
        input: String,
        /// Why it is unusable.
        reason: String,
    },
    /// An argument is out of range (for example a zero timeout); nothing was sent.
    InvalidArgument(String),
    /// The data is larger than the server accepts; nothing was sent.
    DataTooLarge {
        /// Bytes given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The client has been closed.
    Closed,
    /// [`CuratorFramework::block_until_connected`](crate::CuratorFramework::block_until_connected)
    /// gave up: no connection was made within the time it was given. Unlike
    /// [`Error::ConnectionLoss`], no request was in flight. Retryable: a later
    /// attempt may connect.
    ConnectTimeout {
        /// How long the caller asked to wait.
        waited: Duration,
    },
    /// No connection could be made: every connection attempt since the last
    /// connection failed, the latest for `reason` (for example
    /// `127.0.0.1:2181: Connection refused (os error 111)` or `handshake timed
    /// out`). What a call that could not be served reports when its retry
    /// policy is spent or its deadline has come. Retryable.
    ConnectFailed {
        /// Why the latest attempt failed, with the address tried.
        reason: String,
    },
    /// TLS failed: a configuration that cannot be used (at build time), or a
    /// handshake the server or the client refused (unknown CA, wrong name,
    /// expired certificate, client certificate required, a port that does not
    /// speak TLS). See [`TlsError::kind`]. Not retryable: the same
    /// certificates fail the same way.
    Tls(TlsError),
    /// SASL authentication failed or cannot be done: the server refused the
    /// credentials, has no SASL, requires SASL the client was not given, or
    /// the client's Kerberos credentials or KDC failed. See
    /// [`SaslError::kind`]. Not retryable by a call: a refusal ends the
    /// client ([`ClientState::AuthFailed`](crate::ClientState::AuthFailed));
    /// a local or KDC failure is retried by the client itself at every
    /// connection attempt and told to callers at their deadline.
    Sasl(SaslError),
    /// The ensemble configuration a server sent (`/zookeeper/config`, read by
    /// [`Client::get_config`](crate::Client::get_config) or returned by
    /// [`Client::reconfig`](crate::Client::reconfig)) is not one: empty on a
    /// standalone server ([`ConfigError::Empty`]), or data that does not
    /// parse. Not retryable: the node holds the same data until the next
    /// reconfig. For a reconfig the server answered success: the change was
    /// made.
    Config(ConfigError),
    /// The server is too old for the request: it answered `code`
    /// (`Unimplemented` for addWatch on a server before 3.6,
    /// `MarshallingError` for the persistent watcher types 4 and 5 on a server
    /// before 3.9). Not retryable: the same server answers the same.
    ServerTooOld {
        /// What was asked, e.g. `addWatch`.
        what: String,
        /// The first ZooKeeper version that serves it, e.g. `3.6`.
        needs: String,
        /// The server's answer.
        code: ErrorCode,
    },
}

impl Error {
    /// Maps a server result code (never `Ok`) to an error about `path`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{proto::ErrorCode, Error};
    /// assert_eq!(Error::from_code(ErrorCode::ConnectionLoss, "/x"), Error::ConnectionLoss);
    /// ```
    pub fn from_code(code: ErrorCode, path: &str) -> Error {
        let path = path.to_string();
        match code {
            ErrorCode::ConnectionLoss => Error::ConnectionLoss,
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::OperationTimeout => Error::OperationTimeout,
            ErrorCode::SessionMoved => Error::SessionMoved,
            ErrorCode::NoNode => Error::NoNode { path },
            ErrorCode::NodeExists => Error::NodeExists { path },
            ErrorCode::BadVersion => Error::BadVersion { path },
            ErrorCode::NotEmpty => Error::NotEmpty { path },
            ErrorCode::NoAuth => Error::NoAuth { path },
            ErrorCode::NoChildrenForEphemerals => Error::NoChildrenForEphemerals { path },
            ErrorCode::BadArguments => Error::BadArguments { path },
            ErrorCode::AuthFailed => Error::AuthFailed,
            ErrorCode::InvalidAcl => Error::InvalidAcl { path },
            code => Error::Keeper { code, path },
        }
    }

    /// Maps a raw wire code; unknown codes become `SystemError`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::Error;
    /// assert_eq!(Error::from_raw(-101, "/a"), Error::NoNode { path: "/a".into() });
    /// ```
    pub fn from_raw(code: i32, path: &str) -> Error {
        Error::from_code(ErrorCode::from_code(code).unwrap_or(ErrorCode::SystemError), path)
    }

    /// The ZooKeeper result code, for the variants that have one.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{proto::ErrorCode, Error};
    /// assert_eq!(Error::SessionExpired.code(), Some(ErrorCode::SessionExpired));
    /// assert_eq!(Error::Closed.code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        Some(match self {
            Error::ConnectionLoss => ErrorCode::ConnectionLoss,
            Error::SessionExpired => ErrorCode::SessionExpired,
            Error::OperationTimeout => ErrorCode::OperationTimeout,
            Error::SessionMoved => ErrorCode::SessionMoved,
            Error::NoNode { .. } => ErrorCode::NoNode,
            Error::NodeExists { .. } => ErrorCode::NodeExists,
            Error::BadVersion { .. } => ErrorCode::BadVersion,
            Error::NotEmpty { .. } => ErrorCode::NotEmpty,
            Error::NoAuth { .. } => ErrorCode::NoAuth,
            Error::NoChildrenForEphemerals { .. } => ErrorCode::NoChildrenForEphemerals,
            Error::BadArguments { .. } => ErrorCode::BadArguments,
            Error::AuthFailed => ErrorCode::AuthFailed,
            Error::InvalidAcl { .. } => ErrorCode::InvalidAcl,
            Error::ChrootMissing { .. } => ErrorCode::NoNode,
            Error::Keeper { code, .. } => *code,
            Error::ServerTooOld { code, .. } => *code,
            Error::InvalidPath(_)
            | Error::InvalidConnectString { .. }
            | Error::InvalidArgument(_)
            | Error::DataTooLarge { .. }
            | Error::DeadlineExceeded
            | Error::Closed
            | Error::ConnectTimeout { .. }
            | Error::ConnectFailed { .. }
            | Error::Tls(_)
            | Error::Config(_) => return None,
            Error::Sasl(e) => match e.kind() {
                SaslErrorKind::Rejected | SaslErrorKind::Required => ErrorCode::AuthFailed,
                _ => return None,
            },
        })
    }

    /// Whether Curator's retry loop retries this error: ConnectionLoss,
    /// OperationTimeout, SessionMoved and SessionExpired; and
    /// [`Error::ConnectTimeout`] and [`Error::ConnectFailed`], where a later
    /// attempt may connect.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::Error::SessionMoved.is_retryable());
    /// assert!(!zk_framework::Error::Closed.is_retryable());
    /// let waited = std::time::Duration::from_secs(1);
    /// assert!(zk_framework::Error::ConnectTimeout { waited }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::OperationTimeout
                | Error::SessionMoved
                | Error::SessionExpired
                | Error::ConnectTimeout { .. }
                | Error::ConnectFailed { .. }
        )
    }

    /// Whether a write that failed with this error may still have been
    /// applied by the server: no answer to it was read, so it may have left
    /// before the connection failed. The one list every caller that must not
    /// apply a write twice asks (the protected create, the recipe API's
    /// marked write, the recipes): such a write is proven
    /// ([`crate::recipe::Recipe::marked_write`]), never sent again blindly.
    ///
    /// In doubt: [`Error::ConnectionLoss`] (the connection broke with the
    /// request in flight), [`Error::OperationTimeout`] (no reply within the
    /// call's bound), [`Error::DeadlineExceeded`] (the caller stopped
    /// waiting; the request may still be answered),
    /// [`Error::SessionExpired`] and [`Error::Closed`] (the session or the
    /// client ended with the request in flight), and the connection failures
    /// a retried call ends with ([`Error::ConnectFailed`],
    /// [`Error::ConnectTimeout`], [`Error::Tls`], [`Error::Sasl`]: an earlier attempt of the
    /// call may have been sent), and [`Error::Config`] (a reconfig the server
    /// made, whose answer did not parse). The price of a needless doubt is one proof.
    ///
    /// Not in doubt: every answer the server gave (`NoNode`, `BadVersion`,
    /// `NodeExists`, `NoAuth`, ... and `SessionMoved`, which the server
    /// answers instead of applying a request of a session that moved to
    /// another server), and the errors of requests never sent (an invalid
    /// path or argument, data too large, a bad connect string,
    /// `AuthFailed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::Error;
    /// assert!(Error::ConnectionLoss.may_have_applied());
    /// assert!(Error::DeadlineExceeded.may_have_applied());
    /// // The server answered: it refused the request.
    /// assert!(!Error::SessionMoved.may_have_applied());
    /// assert!(!Error::BadVersion { path: "/c".into() }.may_have_applied());
    /// ```
    pub fn may_have_applied(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::OperationTimeout
                | Error::DeadlineExceeded
                | Error::SessionExpired
                | Error::Closed
                | Error::ConnectFailed { .. }
                | Error::ConnectTimeout { .. }
                | Error::Tls(_)
                | Error::Sasl(_)
                | Error::Config(_)
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ConnectionLoss => f.write_str("connection loss"),
            Error::SessionExpired => f.write_str("session expired"),
            Error::OperationTimeout => f.write_str("operation timeout"),
            Error::DeadlineExceeded => f.write_str("the caller's deadline passed before the operation completed"),
            Error::SessionMoved => f.write_str("session moved"),
            Error::NoNode { path } => write!(f, "no node: {path}"),
            Error::NodeExists { path } => write!(f, "node exists: {path}"),
            Error::BadVersion { path } => write!(f, "bad version: {path}"),
            Error::NotEmpty { path } => write!(f, "node not empty: {path}"),
            Error::NoAuth { path } => write!(f, "not authorised: {path}"),
            Error::NoChildrenForEphemerals { path } => write!(f, "no children for ephemerals: {path}"),
            Error::BadArguments { path } => write!(f, "bad arguments: {path}"),
            Error::AuthFailed => f.write_str("authentication failed"),
            Error::InvalidAcl { path } => write!(f, "invalid acl: {path}"),
            Error::ChrootMissing { chroot } => write!(
                f,
                "the chroot {chroot} of the connect string does not exist on the server: create it \
                 (e.g. zkCli.sh create {chroot}) or fix the connect string"
            ),
            Error::Keeper { code, path } => write!(
                f,
                "zookeeper error {} ({}): {path}",
                code.name().to_lowercase(),
                code.code()
            ),
            Error::InvalidPath(p) => write!(f, "{p}"),
            Error::InvalidConnectString { input, reason } => write!(f, "invalid connect string {input:?}: {reason}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::DataTooLarge { len, max } => write!(f, "data too large: {len} bytes, the limit is {max}"),
            Error::Closed => f.write_str("client closed"),
            Error::ConnectTimeout { waited } => write!(f, "not connected within {waited:?}"),
            Error::ConnectFailed { reason } => write!(f, "cannot connect to ZooKeeper: {reason}"),
            Error::Tls(e) => write!(f, "TLS: {e}"),
            Error::Sasl(e) => write!(f, "SASL: {e}"),
            Error::Config(e) => write!(f, "ensemble configuration: {e}"),
            Error::ServerTooOld { what, needs, code } => write!(
                f,
                "{what} needs ZooKeeper {needs}+ (the server answered {}, {})",
                code.name(),
                code.code()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::InvalidPath(p) => Some(p),
            Error::Tls(e) => Some(e),
            Error::Sasl(e) => Some(e),
            Error::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InvalidPath> for Error {
    fn from(p: InvalidPath) -> Self {
        Error::InvalidPath(p)
    }
}

/// What kind of TLS failure a [`TlsError`] is.
///
/// # Examples
///
/// ```
/// use zk_framework::{Error, TlsConfig, TlsErrorKind};
/// let Error::Tls(e) = TlsConfig::builder().build().unwrap_err() else { unreachable!() };
/// assert_eq!(e.kind(), TlsErrorKind::InvalidConfig);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsErrorKind {
    /// The configuration cannot be used: a missing or unreadable file, PEM with no
    /// usable block, a private key that does not match its certificate, no CA.
    InvalidConfig,
    /// The server's certificate is not signed by any of the configured CAs.
    UnknownIssuer,
    /// The server's certificate is not valid for the host name (or IP) connected to.
    NameMismatch,
    /// The server's certificate has expired (or is not valid yet).
    Expired,
    /// The server's certificate was rejected for another reason (bad encoding,
    /// wrong usage, revoked...).
    BadCertificate,
    /// The server requires a client certificate and none was given.
    ClientCertificateRequired,
    /// The server rejected the client certificate.
    ClientCertificateRejected,
    /// The peer does not speak TLS on this port, or speaks TLS where the client
    /// expected plain TCP.
    ProtocolMismatch,
    /// Any other handshake failure (an alert, a timeout inside the handshake).
    Handshake,
}

impl TlsErrorKind {
    /// Whether the same configuration fails the same way on every retry (a
    /// certificate or protocol refusal), as opposed to a handshake that may
    /// pass next time ([`TlsErrorKind::Handshake`]). A client whose every
    /// server refused with a certain kind reports it at once instead of at its
    /// connection timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::TlsErrorKind;
    /// assert!(TlsErrorKind::UnknownIssuer.is_certain());
    /// assert!(!TlsErrorKind::Handshake.is_certain());
    /// ```
    pub fn is_certain(self) -> bool {
        !matches!(self, TlsErrorKind::Handshake)
    }
}

/// A TLS failure: what kind, and a message for people. Returned at
/// configuration time ([`TlsErrorKind::InvalidConfig`]) and, inside
/// [`Error::Tls`], by [`Client::wait_connected`](crate::Client::wait_connected)
/// when the last connection attempt failed in TLS.
///
/// # Examples
///
/// ```
/// use zk_framework::{Error, TlsConfig, TlsErrorKind};
/// let e = TlsConfig::builder().ca_pem(b"not a certificate").build().unwrap_err();
/// let Error::Tls(tls) = &e else { panic!("{e:?}") };
/// assert_eq!(tls.kind(), TlsErrorKind::InvalidConfig);
/// assert!(e.to_string().starts_with("TLS: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    kind: TlsErrorKind,
    message: String,
    /// The server ended the handshake with a bare `handshake_failure`
    /// alert: no protocol or cipher suite in common, or (a TLS 1.2 server,
    /// which has no `certificate_required` alert) a client certificate it
    /// requires is missing. The configuration tells which
    /// ([`TlsConfig::refine`](crate::TlsConfig)).
    handshake_refused: bool,
}

impl TlsError {
    pub(crate) fn new(kind: TlsErrorKind, message: impl Into<String>) -> TlsError {
        TlsError {
            kind,
            message: message.into(),
            handshake_refused: false,
        }
    }

    /// A handshake the server ended with a bare `handshake_failure` alert.
    pub(crate) fn handshake_refused(message: impl Into<String>) -> TlsError {
        TlsError {
            kind: TlsErrorKind::Handshake,
            message: message.into(),
            handshake_refused: true,
        }
    }

    /// Whether the server ended the handshake with a bare
    /// `handshake_failure` alert.
    pub(crate) fn is_handshake_refused(&self) -> bool {
        self.handshake_refused
    }

    /// The kind of failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, TlsConfig, TlsErrorKind};
    /// let Error::Tls(e) = TlsConfig::builder().build().unwrap_err() else { unreachable!() };
    /// assert_eq!(e.kind(), TlsErrorKind::InvalidConfig);
    /// ```
    pub fn kind(&self) -> TlsErrorKind {
        self.kind
    }

    /// The message (also what `Display` prints).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, TlsConfig};
    /// let Error::Tls(e) = TlsConfig::builder().build().unwrap_err() else { unreachable!() };
    /// assert!(e.message().contains("CA"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TlsError {}

/// What kind of SASL failure a [`SaslError`] is.
///
/// The first five are refusals the same configuration meets again on every
/// attempt: a client whose every server refused so (one after the other)
/// ends in [`ClientState::AuthFailed`](crate::ClientState::AuthFailed) and
/// stops reconnecting. The others ([`SaslErrorKind::is_certain`] false) are
/// retried at every connection attempt (a KDC back up, a ticket renewed by
/// `kinit`) and told to callers that wait for a connection at their deadline.
///
/// # Examples
///
/// ```
/// use zk_framework::SaslErrorKind;
/// assert!(SaslErrorKind::Rejected.is_certain());
/// assert!(!SaslErrorKind::KdcUnreachable.is_certain());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SaslErrorKind {
    /// The server refused the credentials: a wrong password, an unknown user
    /// or principal, a Kerberos ticket it cannot accept, or a mechanism other
    /// than the one it speaks (a 3.8 server speaks exactly one). The server
    /// answered `AuthFailed` (-115) or `SessionClosedRequireSaslAuth` (-124)
    /// and closed the connection.
    Rejected,
    /// The server requires SASL (`enforce.auth.enabled`,
    /// `sessionRequireClientSASLAuth`) and the client was given none: it
    /// answered a request with `SessionClosedRequireSaslAuth` (-124).
    Required,
    /// The server has no SASL (no JAAS `Server` section): it answered the
    /// first SASL request with a null token.
    NotOffered,
    /// The server's SASL answer is not what the mechanism expects (a
    /// challenge that does not parse, a DIGEST-MD5 `rspauth` that does not
    /// prove the server knows the password, a GSSAPI token that does not
    /// unwrap).
    Protocol,
    /// The mechanism is not built into this library (GSSAPI without the
    /// `gssapi` feature).
    Unsupported,
    /// The configuration cannot be used: an empty user, an unreadable
    /// password file (told when the configuration is built).
    InvalidConfig,
    /// The client's Kerberos credentials cannot be used: a missing or
    /// unreadable keytab, no ticket in the credential cache, an expired
    /// ticket, a client principal the KDC does not know.
    Credentials,
    /// The KDC could not be reached (or did not answer in time).
    KdcUnreachable,
}

impl SaslErrorKind {
    /// Whether the same configuration meets the same refusal on every
    /// attempt (see the type's documentation).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::SaslErrorKind;
    /// assert!(SaslErrorKind::NotOffered.is_certain());
    /// assert!(!SaslErrorKind::Credentials.is_certain());
    /// ```
    pub fn is_certain(self) -> bool {
        matches!(
            self,
            SaslErrorKind::Rejected
                | SaslErrorKind::Required
                | SaslErrorKind::NotOffered
                | SaslErrorKind::Protocol
                | SaslErrorKind::Unsupported
                | SaslErrorKind::InvalidConfig
        )
    }
}

/// A SASL failure: its kind, the mechanism (`DIGEST-MD5`, `GSSAPI`) and a
/// message for people. Messages name users and principals, never a
/// password, a key or a token.
///
/// # Examples
///
/// ```
/// use zk_framework::{Error, SaslConfig, SaslErrorKind};
/// let Error::Sasl(e) = SaslConfig::digest_md5("", "pw").unwrap_err() else { unreachable!() };
/// assert_eq!(e.kind(), SaslErrorKind::InvalidConfig);
/// assert_eq!(e.mechanism(), "DIGEST-MD5");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslError {
    kind: SaslErrorKind,
    mechanism: &'static str,
    message: String,
}

impl SaslError {
    pub(crate) fn new(kind: SaslErrorKind, mechanism: &'static str, message: impl Into<String>) -> SaslError {
        SaslError {
            kind,
            mechanism,
            message: message.into(),
        }
    }

    /// The kind of failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, SaslConfig, SaslErrorKind};
    /// let Error::Sasl(e) = SaslConfig::digest_md5("bob", "").unwrap_err() else { unreachable!() };
    /// assert_eq!(e.kind(), SaslErrorKind::InvalidConfig);
    /// ```
    pub fn kind(&self) -> SaslErrorKind {
        self.kind
    }

    /// The mechanism: `DIGEST-MD5` or `GSSAPI`; empty for
    /// [`SaslErrorKind::Required`] (the client has none).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, SaslConfig};
    /// let Error::Sasl(e) = SaslConfig::digest_md5("", "pw").unwrap_err() else { unreachable!() };
    /// assert_eq!(e.mechanism(), "DIGEST-MD5");
    /// ```
    pub fn mechanism(&self) -> &'static str {
        self.mechanism
    }

    /// The message (`Display` prints the mechanism, then it).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{Error, SaslConfig};
    /// let Error::Sasl(e) = SaslConfig::digest_md5("", "hunter2").unwrap_err() else { unreachable!() };
    /// assert!(e.message().contains("user"));
    /// assert!(!e.to_string().contains("hunter2"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SaslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mechanism.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.mechanism, self.message)
        }
    }
}

impl std::error::Error for SaslError {}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_both_ways() {
        for &code in ErrorCode::ALL {
            if code == ErrorCode::Ok {
                continue;
            }
            let e = Error::from_code(code, "/p");
            assert_eq!(e.code(), Some(code), "{code:?}");
            let s = e.to_string();
            assert_eq!(s, s.to_lowercase(), "display is lowercase: {s}");
        }
        assert_eq!(
            Error::from_raw(-9999, "/"),
            Error::Keeper {
                code: ErrorCode::SystemError,
                path: "/".into()
            }
        );
    }

    #[test]
    fn a_missing_chroot_names_itself_and_what_to_do() {
        let e = Error::ChrootMissing { chroot: "/app".into() };
        assert_eq!(e.code(), Some(ErrorCode::NoNode));
        assert!(!e.is_retryable());
        assert_eq!(
            e.to_string(),
            "the chroot /app of the connect string does not exist on the server: create it \
             (e.g. zkCli.sh create /app) or fix the connect string"
        );
    }

    #[test]
    fn connect_timeout_is_its_own_retryable_kind() {
        let e = Error::ConnectTimeout {
            waited: Duration::from_millis(1500),
        };
        assert_ne!(e, Error::ConnectionLoss);
        assert!(e.is_retryable());
        assert_eq!(e.code(), None);
        assert_eq!(e.to_string(), "not connected within 1.5s");
    }

    #[test]
    fn retryable_set_matches_curator() {
        let retryable: Vec<ErrorCode> = ErrorCode::ALL
            .iter()
            .copied()
            .filter(|&c| c != ErrorCode::Ok && Error::from_code(c, "/").is_retryable())
            .collect();
        assert_eq!(
            retryable,
            vec![
                ErrorCode::ConnectionLoss,
                ErrorCode::OperationTimeout,
                ErrorCode::SessionExpired,
                ErrorCode::SessionMoved
            ]
        );
    }

    /// Every variant's doubt, decided by an exhaustive match: a new variant
    /// does not compile here until someone says whether a write that failed
    /// with it may have been applied.
    #[test]
    fn may_have_applied_is_decided_for_every_variant() {
        fn decided(e: &Error) -> bool {
            match e {
                Error::ConnectionLoss
                | Error::OperationTimeout
                | Error::DeadlineExceeded
                | Error::SessionExpired
                | Error::Closed
                | Error::ConnectFailed { .. }
                | Error::ConnectTimeout { .. }
                | Error::Tls(_)
                | Error::Sasl(_)
                | Error::Config(_) => true,
                Error::SessionMoved
                | Error::NoNode { .. }
                | Error::NodeExists { .. }
                | Error::BadVersion { .. }
                | Error::NotEmpty { .. }
                | Error::NoAuth { .. }
                | Error::NoChildrenForEphemerals { .. }
                | Error::BadArguments { .. }
                | Error::InvalidAcl { .. }
                | Error::AuthFailed
                | Error::ChrootMissing { .. }
                | Error::Keeper { .. }
                | Error::InvalidPath(_)
                | Error::InvalidConnectString { .. }
                | Error::InvalidArgument(_)
                | Error::DataTooLarge { .. }
                | Error::ServerTooOld { .. } => false,
            }
        }
        let mut all: Vec<Error> = ErrorCode::ALL
            .iter()
            .filter(|&&c| c != ErrorCode::Ok)
            .map(|&c| Error::from_code(c, "/p"))
            .collect();
        all.extend([
            Error::DeadlineExceeded,
            Error::Closed,
            Error::ConnectFailed {
                reason: "refused".into(),
            },
            Error::ConnectTimeout {
                waited: Duration::from_secs(1),
            },
            Error::Tls(TlsError::new(TlsErrorKind::Handshake, "x")),
            Error::ChrootMissing { chroot: "/a".into() },
            Error::Config(ConfigError::Empty),
            Error::InvalidArgument("x".into()),
            Error::DataTooLarge { len: 2, max: 1 },
            Error::InvalidConnectString {
                input: "x".into(),
                reason: "y".into(),
            },
            Error::ServerTooOld {
                what: "addWatch".into(),
                needs: "3.6".into(),
                code: ErrorCode::Unimplemented,
            },
        ]);
        for e in &all {
            assert_eq!(e.may_have_applied(), decided(e), "{e:?}");
        }
        // The server's refusal of a moved session applied nothing.
        assert!(!Error::SessionMoved.may_have_applied());
        assert!(Error::SessionMoved.is_retryable());
    }
}
