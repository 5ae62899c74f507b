//! What a parsed command line means to the rest of zk-lock: the run's and the
//! subcommands' options, credentials and ACLs, TLS files, the usage error,
//! and the checks of a lock path and a namespace.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use zk_framework::proto::path::validate_path;

/// The connect string used when neither `--connect` nor `ZK_CONNECT` gives one.
pub const DEFAULT_CONNECT: &str = "127.0.0.1:2181";
/// Default `--kill-grace`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(5);
/// Default `--session-timeout`.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--connect-timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Which recipe guards COMMAND.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `InterProcessMutex` (the default).
    Mutex,
    /// The read half of `InterProcessReadWriteLock`.
    Read,
    /// The write half of `InterProcessReadWriteLock`.
    Write,
    /// `InterProcessSemaphoreV2` with this many leases.
    Semaphore(u32),
}

impl Kind {
    /// A short human name.
    pub fn describe(self) -> String {
        match self {
            Kind::Mutex => "mutex".into(),
            Kind::Read => "read lock".into(),
            Kind::Write => "write lock".into(),
            Kind::Semaphore(n) => format!("semaphore lease (of {n})"),
        }
    }
}

// ---- authentication and ACLs (kept together, apart from the other options) ----

/// The environment variable holding `SCHEME:CREDENTIALS` when neither `--auth`
/// nor `--auth-file` is given. zk-lock removes it from COMMAND's environment.
pub const AUTH_ENV: &str = "ZK_LOCK_AUTH";

/// Credentials for ZooKeeper's `addauth` (`--auth`, `--auth-file`,
/// `ZK_LOCK_AUTH`). `Debug` shows the scheme only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The scheme, e.g. `digest`.
    pub scheme: String,
    /// The credentials, e.g. `user:password` (never printed).
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("scheme", &self.scheme)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Parses `SCHEME:CREDENTIALS` (e.g. `digest:user:password`). Whitespace
/// around the whole value (a trailing newline or CR of a file, a leading
/// space) is ignored; the scheme and credentials are then checked by the
/// library's rule ([`zk_framework::ClientConfig::validate_auth`]), the one
/// every managed client applies. Messages never repeat the input.
///
/// # Errors
///
/// A message naming what is missing or wrong.
pub fn parse_credentials(v: &str) -> Result<Credentials, String> {
    let v = v.trim();
    let Some((scheme, secret)) = v.split_once(':') else {
        return Err("expected SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD".into());
    };
    if scheme.is_empty() || secret.is_empty() {
        return Err("expected SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD".into());
    }
    match zk_framework::ClientConfig::validate_auth(scheme, secret.as_bytes()) {
        Ok(()) => {}
        Err(zk_framework::Error::InvalidArgument(m)) => return Err(m),
        Err(e) => return Err(e.to_string()),
    }
    Ok(Credentials {
        scheme: scheme.to_string(),
        secret: secret.as_bytes().to_vec(),
    })
}

/// The ACL of the nodes zk-lock creates (`--acl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AclChoice {
    /// world:anyone, all permissions (ZooKeeper's OPEN_ACL_UNSAFE; the default).
    Open,
    /// Only sessions with the same credentials (CREATOR_ALL_ACL); needs --auth
    /// (or a TLS client certificate: its x509 identity).
    Creator,
    /// The creator may do anything, everyone else may read (and so see who
    /// holds the lock, but not join, delete or break it); needs --auth (or a
    /// TLS client certificate).
    CreatorRead,
    /// The lock's own nodes (PATH and below) creator-only, as `Creator`; the
    /// missing parents it creates on the way let others read them and create
    /// under them (`zk_framework::ScopedAclProvider::creator_nodes`), so that
    /// other users can still lock sibling paths. Needs --auth (or a TLS client
    /// certificate).
    CreatorNodes,
}

impl AclChoice {
    /// The name `--acl` takes.
    pub fn name(self) -> &'static str {
        match self {
            AclChoice::Open => "open",
            AclChoice::Creator => "creator",
            AclChoice::CreatorRead => "creator-read",
            AclChoice::CreatorNodes => "creator-nodes",
        }
    }
}

/// How to reach ZooKeeper: shared by every form of zk-lock (a run and the
/// `status`, `break` and `wait` subcommands).
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// The connect string (already resolved from `--connect`, `ZK_CONNECT` or
    /// the default; unused with `--embedded`).
    pub connect: String,
    /// Curator namespace (a single path segment).
    pub namespace: Option<String>,
    /// Start a throwaway in-process server.
    pub embedded: bool,
    /// Requested session timeout.
    pub session_timeout: Duration,
    /// How long to wait for the first connection.
    pub connect_timeout: Duration,
    /// `-v` count.
    pub verbose: u8,
    /// Credentials sent on every connection (`--auth`, `--auth-file`, `ZK_LOCK_AUTH`).
    pub auth: Option<Credentials>,
    /// The ACL of the lock's nodes (`--acl`).
    pub acl: AclChoice,
    /// TLS settings (`--tls-*`); `None` for plain TCP.
    pub tls: Option<Box<TlsFiles>>,
    /// SASL settings (`--sasl*`, the password read); `None` for none.
    pub sasl: Option<zk_framework::SaslConfig>,
}

/// Everything a run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// How to reach ZooKeeper.
    pub conn: Connection,
    /// `None`: wait forever; `Some(0)`: a non-blocking try.
    pub timeout: Option<Duration>,
    /// The recipe.
    pub kind: Kind,
    /// Time between SIGTERM and SIGKILL after the lock is lost.
    pub kill_grace: Duration,
    /// Exit status when the lock is not acquired (`-E`, default 1).
    pub conflict_exit_code: i32,
    /// The lock path.
    pub path: String,
    /// COMMAND and its arguments (never empty).
    pub command: Vec<OsString>,
}

// ---- TLS options (--tls-*) -----------------------------------------------------------------

/// The `--tls-*` options: files, read when the client is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA certificate(s), PEM: what the server's certificate must be signed by.
    pub ca: PathBuf,
    /// Client certificate and key (PEM) for mutual TLS.
    pub client: Option<(PathBuf, PathBuf)>,
    /// Whether the server's certificate must name the host connected to.
    pub verify_hostname: bool,
}

/// `zk-lock status`, `break` or `wait`.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Show the holders and the queue.
    Status {
        /// The semaphore's number of leases, when known (`--semaphore N`).
        leases: Option<u32>,
        /// The path is a group (`--group`): list its members.
        group: bool,
        /// The path is a counter (`--counter`): show its value.
        counter: bool,
    },
    /// Delete the holder's node, or `node`.
    Break {
        /// The node to delete (a child name or a full path).
        node: Option<String>,
    },
    /// Wait until the lock is free.
    Wait {
        /// `None`: wait forever.
        timeout: Option<Duration>,
        /// Exit status on timeout (`-E`, default 1).
        timeout_exit_code: i32,
    },
    /// The services under the path (a registry's base), or the instances
    /// of one.
    Services {
        /// The service (`None`: list the names).
        name: Option<String>,
    },
    /// A set partitioner's members and its items' holders.
    Partition,
}

/// An operator's subcommand and its options.
#[derive(Debug, Clone, PartialEq)]
pub struct OpOptions {
    /// How to reach ZooKeeper.
    pub conn: Connection,
    /// The lock path.
    pub path: String,
    /// JSON output (`--json`).
    pub json: bool,
    /// What to do.
    pub op: Op,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run COMMAND under the lock.
    Run(Options),
    /// `status`, `break`, `wait`, `services` or `partition`.
    Op(OpOptions),
    /// Print the help.
    Help,
    /// Print a subcommand's help (the text).
    SubcommandHelp(String),
    /// Print the version.
    Version,
}

impl Parsed {
    /// The `-v` count of a run or a subcommand (0 otherwise).
    pub fn verbose(&self) -> u8 {
        match self {
            Parsed::Run(o) => o.conn.verbose,
            Parsed::Op(o) => o.conn.verbose,
            _ => 0,
        }
    }
}

/// A usage error: the message to print (exit 64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub(super) fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Checks a lock path the way ZooKeeper would, before anything is sent.
///
/// # Errors
///
/// A message naming the problem.
pub fn check_lock_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!(
            "invalid PATH {path:?}: it must be absolute, e.g. /locks/{path}"
        ));
    }
    if path == "/" {
        return Err("invalid PATH \"/\": a lock cannot live at the root; use e.g. /locks/NAME".into());
    }
    validate_path(path, false).map_err(|e| format!("invalid PATH {path:?}: {}", e.reason))
}

pub(super) fn check_namespace(ns: &str) -> Result<(), String> {
    if ns.is_empty() || ns.contains('/') {
        return Err(format!(
            "invalid namespace {ns:?}: it must be a single path segment without '/', e.g. myapp"
        ));
    }
    validate_path(&format!("/{ns}"), false).map_err(|e| format!("invalid namespace {ns:?}: {}", e.reason))
}
