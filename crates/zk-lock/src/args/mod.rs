//! Command-line parsing with `clap` (derive). Everything before the first `--`
//! is given to clap (options and PATH); everything after it is COMMAND, taken
//! verbatim (it may hold options of its own, another `--`, non-UTF-8 bytes).
//! Clap's errors are turned into zk-lock's own messages (exit 64).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
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

/// The TLS options as clap sees them (a group of their own in the help).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "TLS (the server's secureClientPort)")]
struct TlsArgs {
    /// connect over TLS, verifying the server's certificate against the CA
    /// certificate(s) in this PEM file [env: ZK_LOCK_TLS_CA]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        env = "ZK_LOCK_TLS_CA",
        hide_env = true
    )]
    tls_ca: Option<PathBuf>,

    /// client certificate (PEM) for mutual TLS; needs --tls-key
    /// [env: ZK_LOCK_TLS_CERT]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        env = "ZK_LOCK_TLS_CERT",
        hide_env = true
    )]
    tls_cert: Option<PathBuf>,

    /// the client certificate's private key (PEM); needs --tls-cert. Give a
    /// file, never the key itself [env: ZK_LOCK_TLS_KEY]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        env = "ZK_LOCK_TLS_KEY",
        hide_env = true
    )]
    tls_key: Option<PathBuf>,

    /// do not check that the server's certificate names the host connected to
    /// (the chain and dates are still verified): for IP-only test setups
    /// [env: ZK_LOCK_TLS_NO_HOSTNAME_VERIFY=1]
    #[arg(global = true, verbatim_doc_comment, long, env = "ZK_LOCK_TLS_NO_HOSTNAME_VERIFY", hide_env = true, value_parser = clap::builder::BoolishValueParser::new(), action = ArgAction::SetTrue)]
    tls_no_hostname_verify: bool,
}

impl TlsArgs {
    /// Checks the combination: `Ok(None)` without `--tls-ca` and nothing else.
    fn resolve(&self) -> Result<Option<Box<TlsFiles>>, UsageError> {
        let client = match (self.tls_cert.clone(), self.tls_key.clone()) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => return usage("--tls-cert needs --tls-key (the certificate's private key)"),
            (None, Some(_)) => return usage("--tls-key needs --tls-cert (the certificate it belongs to)"),
        };
        match self.tls_ca.clone() {
            Some(ca) => Ok(Some(Box::new(TlsFiles {
                ca,
                client,
                verify_hostname: !self.tls_no_hostname_verify,
            }))),
            None if client.is_some() || self.tls_no_hostname_verify => usage(
                "--tls-cert, --tls-key and --tls-no-hostname-verify need --tls-ca (the CA to verify the server with)",
            ),
            None => Ok(None),
        }
    }
}

/// `zk-lock status`, `break` or `wait`.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Show the holders and the queue.
    Status {
        /// The semaphore's number of leases, when known (`--semaphore N`).
        leases: Option<u32>,
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
    /// `status`, `break` or `wait`.
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

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Parses a duration: `500ms`, `2s`, `1m`, `1h`, `250us`, or plain (possibly
/// fractional) seconds such as `1.5`.
///
/// # Errors
///
/// A message naming the problem.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    let s = input.trim();
    let split = s.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap_or(s.len());
    let (num, unit) = (s[..split].trim(), s[split..].trim());
    let scale = match unit {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" | "mins" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "invalid duration {input:?}: unknown unit {other:?} (use ms, s, m or h, e.g. 500ms, 2s, 1m, 1.5)"
            ))
        }
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!(
            "invalid duration {input:?}: expected a non-negative number with an optional unit (500ms, 2s, 1m, 1.5)"
        ));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {input:?}: {num:?} is not a number"))?;
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("invalid duration {input:?}: out of range"))
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

fn check_namespace(ns: &str) -> Result<(), String> {
    if ns.is_empty() || ns.contains('/') {
        return Err(format!(
            "invalid namespace {ns:?}: it must be a single path segment without '/', e.g. myapp"
        ));
    }
    validate_path(&format!("/{ns}"), false).map_err(|e| format!("invalid namespace {ns:?}: {}", e.reason))
}

const ABOUT: &str = "zk-lock: run a command while holding a ZooKeeper lock (a distributed flock(1))";

const LONG_ABOUT: &str = "\
zk-lock: run a command while holding a ZooKeeper lock (a distributed flock(1))

zk-lock connects to ZooKeeper, takes the lock at PATH, runs COMMAND while it
holds the lock, releases the lock, closes its session and exits with COMMAND's
exit status (128+N if COMMAND was killed by signal N). COMMAND is executed
directly, not through a shell: use `sh -c '...'` for shell syntax.

The lock uses Apache Curator's node layout, so zk-lock and Java services using
Curator's InterProcessMutex (or InterProcessReadWriteLock, InterProcessSemaphoreV2
with --read/--write/--semaphore) on the same path exclude each other. Every
process sharing a PATH must use the same lock kind: a mutex, a read/write lock
and a semaphore on one path do not see each other.";

const AFTER_HELP: &str = "\
OPERATING A LOCK:
    zk-lock status PATH [--json]       who holds PATH and who waits, in order
    zk-lock break PATH [--node NAME] --yes
                                       delete the holder's node: the holder is
                                       told it lost the lock
    zk-lock wait PATH [--timeout D]    wait until nobody holds PATH
    The connection options (--connect, --namespace, --session-timeout,
    --connect-timeout, -v, --auth, --auth-file, --acl) go before or after
    the subcommand; --json prints
    one JSON object. Exit statuses (more in `zk-lock status --help`, ...):
      status  0 held, 1 free
      break   0 deleted, 1 nothing to break (free, no such node)
      wait    0 free, 1 --timeout passed first (or -E N)
      all     64 usage error (break: --yes missing), 69 ZooKeeper unavailable,
              77 permission denied (NoAuth, AuthFailed)

Options may also be written --option=VALUE. Durations: 500ms, 2s, 1m, 1h, or
plain seconds (1.5).

WHILE COMMAND RUNS:
    If the connection to ZooKeeper is lost, zk-lock warns on stderr that the lock
    may be lost; COMMAND keeps running, and zk-lock reports when it reconnects on
    the same session (the lock is then still held). The lock is certain only
    until its safe horizon: the send time of the last request ZooKeeper
    answered plus the session timeout, less a margin (1/20); ZooKeeper cannot
    expire the session, nor grant the lock to another, before it. If the
    connection is not back in time, COMMAND gets SIGTERM at the horizon less
    --kill-grace and SIGKILL just before the horizon, and zk-lock exits 75; a
    reconnect before the SIGTERM cancels it. A grace too long for the session
    is cut (to half of what fits), with a warning at start-up. If the lock is
    lost for certain (the session expired, or someone deleted the lock node),
    zk-lock sends SIGTERM to COMMAND, SIGKILL after --kill-grace, and exits 75.

    COMMAND runs in a process group of its own (unless zk-lock runs in the
    foreground of a terminal: then COMMAND shares zk-lock's group, so that it can
    read the terminal and the terminal's Ctrl-C reaches it). SIGTERM and SIGKILL
    after a loss go to that whole group, and so reach the jobs COMMAND started;
    when COMMAND exits, what is left of its group is killed (SIGKILL) before the
    lock is released, so nothing of COMMAND outlives the lock.

    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zk-lock are
    forwarded to COMMAND (its own process, not its group: a script that starts
    jobs passes such signals on itself); zk-lock then waits for COMMAND, releases
    the lock and exits with COMMAND's status. (A Ctrl-C or Ctrl-\\ typed at the
    terminal already reaches COMMAND directly and is not sent twice.) Such a
    signal received while still waiting for the lock makes zk-lock give up and
    exit with 128+N.

    The lock is always released (its node deleted) and the session closed before
    zk-lock exits. If zk-lock itself dies without cleaning up (kill -9, the OOM
    killer), COMMAND dies with it: on Linux COMMAND gets SIGKILL as soon as
    zk-lock is gone (a parent-death signal, PR_SET_PDEATHSIG), so it never runs
    on after ZooKeeper removes the lock at the session timeout and hands it to
    the next holder. SIGKILL rather than SIGTERM, because COMMAND cannot ignore
    it or outlast the session timeout in a slow handler. Only COMMAND itself gets
    that signal: processes COMMAND started and that left its control (daemons,
    `setsid`) are not covered. On other systems COMMAND keeps running.

EXIT STATUS:
    COMMAND's status  COMMAND ran under the lock (128+N: killed by signal N)
      1               the lock was not acquired: it was held by another when
                      --timeout passed, or --timeout 0 found it held (as
                      flock(1); see --conflict-exit-code); a server that did not
                      answer in time or cannot be reached is 69, not 1
     64               usage error: bad option, PATH, duration or connect string,
                      or --tls-* files that cannot be read or used (EX_USAGE)
     69               ZooKeeper unavailable (not reachable within
                      --connect-timeout) or another lock error (EX_UNAVAILABLE)
     75               the lock was lost while COMMAND ran; COMMAND was terminated
                      (EX_TEMPFAIL: try again)
     77               permission denied: the lock's nodes have an ACL these
                      credentials do not pass (NoAuth), ZooKeeper refused the
                      credentials (AuthFailed), or it refused the ACL of a new
                      node (InvalidACL) (EX_NOPERM)
    126               COMMAND cannot be executed
    127               COMMAND was not found
    128+N             zk-lock got signal N while waiting for the lock

ENVIRONMENT:
    ZK_CONNECT          the connect string when --connect is not given
    ZK_LOCK_TLS_CA, ZK_LOCK_TLS_CERT, ZK_LOCK_TLS_KEY,
    ZK_LOCK_TLS_NO_HOSTNAME_VERIFY
                        the --tls-* options when not given on the command line
    RUST_LOG            log filter (env_logger syntax, e.g. RUST_LOG=debug); it
                        overrides -v. Quiet by default: errors only.
    ZK_LOCK_AUTH        SCHEME:CREDENTIALS when neither --auth nor --auth-file
                        is given (e.g. digest:deployer:s3cret); removed from
                        COMMAND's environment. Credentials are never printed.

    COMMAND runs with these added:
    ZK_LOCK_PATH            the lock path (PATH)
    ZK_LOCK_NODE            the lock node zk-lock holds
    ZK_LOCK_FENCING_TOKEN   the fencing token (the node's czxid): it increases
                            with every grant of the lock; pass it to a storage
                            that rejects writes with a smaller token than one it
                            has seen, to fence off a stale holder

EXAMPLES:
    # one nightly backup at a time across the fleet
    zk-lock --connect zk1:2181,zk2:2181,zk3:2181 /locks/backup -- ./backup.sh

    # skip this run if another host is deploying
    zk-lock -n -E 100 /locks/deploy -- make deploy; [ $? -eq 100 ] && echo busy

    # wait at most 30 s; shell syntax through sh -c
    ZK_CONNECT=zk1:2181/app zk-lock -w 30s /locks/report -- sh -c 'gen > out.csv'

    # readers share, a writer is exclusive
    zk-lock --read  /locks/catalog -- ./read-catalog
    zk-lock --write /locks/catalog -- ./rebuild-catalog

    # at most 3 concurrent downloads
    zk-lock --semaphore 3 /locks/downloads -- curl -O https://example.com/big.iso

    # a lock only holders of the deployer credentials can take, join or break
    ZK_LOCK_AUTH=digest:deployer:s3cret zk-lock --acl creator /locks/deploy -- make deploy

    # over TLS, with a client certificate (mutual TLS)
    zk-lock --connect zk1:2281 --tls-ca ca.pem --tls-cert me.pem --tls-key me.key \\
        /locks/backup -- ./backup.sh

    # try it without a ZooKeeper server
    zk-lock --embedded -v /demo -- echo \"holding the lock\"";

/// The first line of a usage error's hint, as `--help` shows it.
pub const USAGE_LINE: &str = "zk-lock [OPTIONS] PATH -- COMMAND [ARGS...]
       zk-lock [OPTIONS] status|break|wait PATH [...]";

/// The command line as clap sees it (everything before the first `--`, and
/// COMMAND for the help only).
#[derive(Debug, Parser)]
#[command(
    name = "zk-lock",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    override_usage = USAGE_LINE,
    after_help = AFTER_HELP,
    args_override_self = true,
    disable_help_subcommand = true,
    help_template = "{about-with-newline}\nUsage: {usage}\n\n{all-args}\n\n{after-help}\n"
)]
struct Cli {
    #[command(subcommand)]
    op: Option<OpCommand>,

    #[command(flatten)]
    conn: ConnArgs,

    /// the lock's absolute ZooKeeper path, e.g. /locks/backup (relative to
    /// --namespace and to a chroot, if any)
    #[arg(verbatim_doc_comment, value_name = "PATH")]
    path: Option<String>,

    /// Arguments after PATH without `--` (an error; caught to say so).
    #[arg(hide = true, value_name = "EXTRA")]
    extra: Vec<String>,

    /// the command to run, after `--`
    #[arg(verbatim_doc_comment, value_name = "COMMAND [ARGS...]", last = true)]
    command: Vec<OsString>,

    /// give up (exit 1) if the lock is not acquired within D; 0 tries once
    /// without waiting [default: wait forever]
    #[arg(verbatim_doc_comment, short = 'w', long, value_name = "D", value_parser = parse_duration, overrides_with = "nonblock", allow_hyphen_values = true)]
    timeout: Option<Duration>,

    /// the same as --timeout 0
    #[arg(verbatim_doc_comment, short = 'n', long, overrides_with = "timeout")]
    nonblock: bool,

    /// exit with N instead of 1 when the lock is not acquired, to tell it
    /// apart from COMMAND's own status
    #[arg(verbatim_doc_comment, short = 'E', long, value_name = "N", value_parser = exit_status, default_value_t = 1, allow_hyphen_values = true)]
    conflict_exit_code: i32,

    /// take the shared (read) half of a read/write lock: read holders run
    /// together, never with a --write holder
    #[arg(verbatim_doc_comment, long)]
    read: bool,

    /// take the exclusive (write) half of a read/write lock
    #[arg(verbatim_doc_comment, long)]
    write: bool,

    /// take one of N leases of a counting semaphore: at most N holders run at
    /// once (every holder must give the same N). Without --read, --write or
    /// --semaphore: an exclusive mutex (Curator's InterProcessMutex).
    #[arg(verbatim_doc_comment, long, value_name = "N", value_parser = leases, allow_hyphen_values = true)]
    semaphore: Option<u32>,

    /// after the lock is lost, wait D between SIGTERM and SIGKILL to COMMAND
    /// [default: 5s]
    #[arg(verbatim_doc_comment, long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    kill_grace: Option<Duration>,
}

/// The connection options, shared by a run and the subcommands (global: they
/// go before or after a subcommand's name).
#[derive(Debug, Args)]
struct ConnArgs {
    // (The help is a string: rustdoc would read `[/chroot]` as a link.)
    #[arg(
        global = true,
        long,
        value_name = "S",
        value_parser = connect_string,
        allow_hyphen_values = true,
        help = "ZooKeeper connect string host:port[,host:port...][/chroot]\n\
                [default: $ZK_CONNECT, else 127.0.0.1:2181]"
    )]
    connect: Option<String>,

    /// prefix PATH with /NS (Curator's namespace)
    #[arg(global = true, verbatim_doc_comment, long, value_name = "NS", value_parser = namespace, allow_hyphen_values = true)]
    namespace: Option<String>,

    /// start a throwaway in-process ZooKeeper server for this run only, to try
    /// zk-lock out: other zk-lock processes cannot see it, so it excludes
    /// nobody
    #[arg(global = true, verbatim_doc_comment, long, hide = !cfg!(feature = "embedded"))]
    embedded: bool,

    /// ZooKeeper session timeout: how long the server keeps the lock of a
    /// zk-lock that vanished (crash, network partition) before another
    /// process can take it [default: 30s; the server may clamp it]
    #[arg(global = true, verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    session_timeout: Option<Duration>,

    /// give up (exit 69) if ZooKeeper cannot be reached within D [default: 15s]
    #[arg(global = true, verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    connect_timeout: Option<Duration>,

    /// report progress on stderr (connect, acquire, release); -vv adds the
    /// ZooKeeper client's logs, -vvv debug logs
    #[arg(global = true, verbatim_doc_comment, short = 'v', long, action = ArgAction::Count)]
    verbose: u8,

    // ---- authentication and ACLs ----
    /// credentials sent to ZooKeeper on every connection (addauth), e.g.
    /// digest:USER:PASSWORD. Visible to other users in `ps`: prefer
    /// --auth-file or $ZK_LOCK_AUTH [default: $ZK_LOCK_AUTH]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "SCHEME:CREDENTIALS",
        value_parser = parse_credentials,
        conflicts_with = "auth_file",
        allow_hyphen_values = true,
        help_heading = "Authentication and ACLs"
    )]
    auth: Option<Credentials>,

    /// read SCHEME:CREDENTIALS from the first line of FILE (keep it mode 0600;
    /// whitespace around the line, a CR included, is ignored)
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        allow_hyphen_values = true,
        help_heading = "Authentication and ACLs"
    )]
    auth_file: Option<std::path::PathBuf>,

    /// the ACL of the lock nodes zk-lock creates (and of missing parents):
    /// open (anyone), creator (only sessions with the same credentials; the
    /// missing parents too, as Curator does, which locks others out of
    /// sibling paths), creator-read (others may only read), creator-nodes
    /// (creator-only lock nodes, PATH included; missing parents let others
    /// read and create under them) [default: open]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "ACL",
        value_enum,
        hide_possible_values = true,
        help_heading = "Authentication and ACLs"
    )]
    acl: Option<AclChoice>,

    #[command(flatten)]
    tls: TlsArgs,
}

/// The operator's subcommands.
#[derive(Debug, Subcommand)]
enum OpCommand {
    /// show who holds PATH and who waits, in lock order: identity (process,
    /// host; a Curator holder shows its address), age, fencing token, session
    #[command(
        after_help = "EXIT STATUS:\n    0   the lock is held\n    1   the lock is free\n   64   usage error\n   69   ZooKeeper unavailable, or another error\n   77   permission denied (NoAuth, AuthFailed)",
        verbatim_doc_comment
    )]
    Status {
        /// the lock's absolute path
        #[arg(value_name = "PATH")]
        path: String,
        /// print JSON (one object) instead of a table
        #[arg(long)]
        json: bool,
        /// the path is a semaphore with N leases (the number is not stored in
        /// ZooKeeper: without it every lease node counts as holding)
        #[arg(verbatim_doc_comment, long, value_name = "N", value_parser = leases)]
        semaphore: Option<u32>,
    },
    /// delete the holder's lock node (or --node NAME): its holder is told it
    /// lost the lock (zk-lock holders stop their COMMAND and exit 75); prints
    /// what it deleted
    #[command(
        after_help = "EXIT STATUS:\n    0   a node was deleted\n    1   nothing to break: the lock is free, or --node names no participant\n   64   usage error (--yes missing; several holders and no --node)\n   69   ZooKeeper unavailable, or another error\n   77   permission denied (NoAuth, AuthFailed)",
        verbatim_doc_comment
    )]
    Break {
        /// the lock's absolute path
        #[arg(value_name = "PATH")]
        path: String,
        /// the node to delete (a child name or full path, as status shows it)
        /// instead of the holder's
        #[arg(verbatim_doc_comment, long, value_name = "NAME")]
        node: Option<String>,
        /// really delete (without it nothing is deleted)
        #[arg(long)]
        yes: bool,
        /// print JSON (one object) instead of text
        #[arg(long)]
        json: bool,
    },
    /// wait until nobody holds PATH (without queueing: no node of its own)
    #[command(
        after_help = "EXIT STATUS:\n    0   the lock is free\n    1   --timeout passed first (see -E)\n   64   usage error\n   69   ZooKeeper unavailable, or another error\n   77   permission denied (NoAuth, AuthFailed)",
        verbatim_doc_comment
    )]
    Wait {
        /// the lock's absolute path
        #[arg(value_name = "PATH")]
        path: String,
        /// give up after D (exit 1) [default: wait forever]
        #[arg(verbatim_doc_comment, short = 'w', long, value_name = "D", value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// exit with N instead of 1 on timeout
        #[arg(short = 'E', long, value_name = "N", value_parser = exit_status, default_value_t = 1)]
        conflict_exit_code: i32,
        /// print JSON (one object) when done
        #[arg(long)]
        json: bool,
    },
}

fn connect_string(v: &str) -> Result<String, String> {
    if v.trim().is_empty() {
        return Err("empty connect string".into());
    }
    Ok(v.to_string())
}

fn exit_status(v: &str) -> Result<i32, String> {
    v.trim()
        .parse::<u8>()
        .map(i32::from)
        .map_err(|_| format!("{v:?} is not an exit status (0 to 255)"))
}

fn leases(v: &str) -> Result<u32, String> {
    let n: u32 = v
        .trim()
        .parse()
        .map_err(|_| format!("{v:?} is not a number of leases (1, 2, ...)"))?;
    if n == 0 {
        return Err("the number of leases must be at least 1".into());
    }
    Ok(n)
}

fn namespace(v: &str) -> Result<String, String> {
    check_namespace(v)?;
    Ok(v.to_string())
}

fn positive_duration(v: &str) -> Result<Duration, String> {
    let d = parse_duration(v)?;
    if d < Duration::from_millis(1) {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// The long help (what `--help` prints).
pub fn help() -> String {
    Cli::command().render_long_help().to_string()
}

/// A subcommand's long help (`zk-lock status --help`).
pub fn subcommand_help(name: &str) -> String {
    let mut cmd = Cli::command();
    cmd.build();
    match cmd.find_subcommand_mut(name) {
        Some(sub) => sub.render_long_help().to_string(),
        None => help(),
    }
}

/// The flag's name as the user knows it: `--timeout` from `--timeout <D>`,
/// `-w` from `-w <D>`.
fn flag_name(arg: &str) -> String {
    arg.split([' ', '=']).next().unwrap_or(arg).to_string()
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        other => Some(other.to_string()),
    }
}

/// Turns clap's error into zk-lock's message (or the help / version request).
fn from_clap(e: clap::Error, subcommand: Option<&str>) -> Result<Parsed, UsageError> {
    let arg = context(&e, ContextKind::InvalidArg).unwrap_or_default();
    let name = flag_name(&arg);
    let msg = match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return Ok(match subcommand {
                Some(name) => Parsed::SubcommandHelp(subcommand_help(name)),
                None => Parsed::Help,
            })
        }
        ErrorKind::DisplayVersion => return Ok(Parsed::Version),
        ErrorKind::UnknownArgument => format!("unknown option {arg:?} (see zk-lock --help)"),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let value = context(&e, ContextKind::InvalidValue).unwrap_or_default();
            match std::error::Error::source(&e) {
                Some(source) => format!("{name}: {source}"),
                None if value.is_empty() => format!("{name} needs a value"),
                None => format!("{name}: invalid value {value:?}"),
            }
        }
        ErrorKind::ArgumentConflict if context(&e, ContextKind::PriorArg).is_some_and(|p| p != arg) => {
            let prior = flag_name(&context(&e, ContextKind::PriorArg).unwrap_or_default());
            format!("{name} and {prior} cannot be combined")
        }
        ErrorKind::TooManyValues | ErrorKind::ArgumentConflict if arg.starts_with('-') => {
            format!("{name} takes no value")
        }
        ErrorKind::NoEquals | ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            format!("{name} needs a value")
        }
        ErrorKind::MissingRequiredArgument => match subcommand {
            Some(sub) => format!("missing PATH: zk-lock {sub} PATH"),
            None => "missing arguments".to_string(),
        },
        ErrorKind::InvalidUtf8 => "an argument is not valid UTF-8 (only COMMAND, after `--`, may be)".to_string(),
        _ => {
            // Clap's own wording, first line only, without its "error: " prefix.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("invalid arguments");
            line.strip_prefix("error: ").unwrap_or(line).to_string()
        }
    };
    Err(UsageError(msg))
}

/// The credentials from `--auth`, `--auth-file` or `ZK_LOCK_AUTH` (in that
/// order); messages name the source, never the secret.
fn credentials(
    flag: Option<Credentials>,
    file: Option<&std::path::Path>,
    env: Option<String>,
) -> Result<Option<Credentials>, UsageError> {
    if flag.is_some() {
        return Ok(flag);
    }
    if let Some(f) = file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| UsageError(format!("--auth-file: cannot read {}: {e}", f.display())))?;
        let line = text.lines().next().unwrap_or("");
        return parse_credentials(line)
            .map(Some)
            .map_err(|e| UsageError(format!("--auth-file {}: {e}", f.display())));
    }
    match env.filter(|v| !v.is_empty()) {
        Some(v) => parse_credentials(&v)
            .map(Some)
            .map_err(|e| UsageError(format!("{AUTH_ENV}: {e}"))),
        None => Ok(None),
    }
}

/// The environment variables zk-lock reads (passed in so that parsing does not
/// read the process environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `ZK_CONNECT`.
    pub zk_connect: Option<String>,
    /// `ZK_LOCK_AUTH` (never printed: see [`Credentials`]).
    pub zk_lock_auth: Option<String>,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Env {
        Env {
            zk_connect: std::env::var("ZK_CONNECT").ok(),
            zk_lock_auth: std::env::var(AUTH_ENV).ok(),
        }
    }
}

/// Parses the arguments after the program name, with the environment `env`
/// (passed in so that parsing does not read the process environment).
/// `--auth-file` is read here.
///
/// # Errors
///
/// A [`UsageError`] for anything the user must fix.
///
/// # Examples
///
/// ```ignore
/// let parsed = parse(vec!["/locks/a".into(), "--".into(), "true".into()], &Env::default())?;
/// ```
pub fn parse(args: Vec<OsString>, env: &Env) -> Result<Parsed, UsageError> {
    // The first `--` ends the options: no option takes `--` as its value.
    let mut args = args;
    let command = args.iter().position(|a| a == "--").map(|i| {
        let rest = args.split_off(i + 1);
        args.pop();
        rest
    });
    // The subcommand named, if any (for its own help).
    let subcommand = args.iter().find_map(|a| match a.to_str() {
        Some(n @ ("status" | "break" | "wait")) => Some(n),
        _ => None,
    });
    let subcommand = subcommand.map(str::to_string);
    let subcommand = subcommand.as_deref();
    let argv = std::iter::once(OsString::from("zk-lock")).chain(args.clone());
    let matches = match Cli::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => return from_clap(e, subcommand),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return from_clap(e, subcommand),
    };
    let conn = connection(&cli.conn, env)?;
    if let Some(op) = cli.op {
        let run_only = [
            (cli.read, "--read"),
            (cli.write, "--write"),
            (cli.semaphore.is_some(), "--semaphore (before the subcommand)"),
            (cli.timeout.is_some(), "--timeout (before the subcommand)"),
            (cli.nonblock, "--nonblock"),
            (cli.kill_grace.is_some(), "--kill-grace"),
            (cli.conflict_exit_code != 1, "-E (before the subcommand)"),
        ];
        if let Some((_, name)) = run_only.iter().find(|(set, _)| *set) {
            return usage(format!(
                "{name} belongs to a run (zk-lock PATH -- COMMAND), not to {}",
                subcommand.unwrap_or("a subcommand")
            ));
        }
        if let Some(c) = command {
            return usage(format!(
                "unexpected `-- {}` after a subcommand: status, break and wait run no COMMAND",
                c.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default()
            ));
        }
        return op_options(op, conn);
    }
    if let Some(p) = &cli.path {
        if let Some(s) = cli.extra.first() {
            return usage(format!(
                "unexpected argument {s:?} after PATH {p:?}: put `--` before COMMAND, \
                 e.g. zk-lock {p} -- {s} ..."
            ));
        }
    }
    let kinds: Vec<(Kind, &str)> = [
        cli.read.then_some((Kind::Read, "--read")),
        cli.write.then_some((Kind::Write, "--write")),
        cli.semaphore.map(|n| (Kind::Semaphore(n), "--semaphore")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let [(_, a), (_, b), ..] = kinds[..] {
        return usage(format!("{a} and {b} cannot be combined: choose one lock kind"));
    }
    let Some(path) = cli.path else {
        return usage(match command {
            Some(_) => "missing PATH before `--`",
            None => "missing PATH and COMMAND",
        });
    };
    check_lock_path(&path).map_err(UsageError)?;
    let Some(command) = command else {
        return usage(format!(
            "missing `--` and COMMAND after PATH, e.g. zk-lock {path} -- make deploy"
        ));
    };
    if command.is_empty() || command[0].is_empty() {
        return usage("missing COMMAND after `--`");
    }
    Ok(Parsed::Run(Options {
        conn,
        timeout: if cli.nonblock {
            Some(Duration::ZERO)
        } else {
            cli.timeout
        },
        kind: kinds.first().map_or(Kind::Mutex, |(k, _)| *k),
        kill_grace: cli.kill_grace.unwrap_or(DEFAULT_KILL_GRACE),
        conflict_exit_code: cli.conflict_exit_code,
        path,
        command,
    }))
}

/// The connection options, checked and resolved.
fn connection(a: &ConnArgs, env: &Env) -> Result<Connection, UsageError> {
    if a.embedded && a.connect.is_some() {
        return usage("--embedded and --connect cannot be combined: --embedded starts its own server");
    }
    if a.embedded && !cfg!(feature = "embedded") {
        return usage(
            "--embedded is not available: this zk-lock was built without the `embedded` feature \
             (no in-process test server); give --connect or ZK_CONNECT instead",
        );
    }
    let tls = a.tls.resolve()?;
    if a.embedded && tls.is_some() {
        return usage("--embedded and --tls-* cannot be combined: the embedded server speaks plain TCP");
    }
    let auth = credentials(a.auth.clone(), a.auth_file.as_deref(), env.zk_lock_auth.clone())?;
    let acl = a.acl.unwrap_or(AclChoice::Open);
    let has_client_cert = tls.as_ref().is_some_and(|t| t.client.is_some());
    if acl != AclChoice::Open && auth.is_none() && !has_client_cert {
        return usage(format!(
            "--acl {} needs credentials: give --auth, --auth-file or {AUTH_ENV} (or a TLS client \
             certificate: --tls-cert, whose x509 identity then owns the nodes)",
            acl.name()
        ));
    }
    let connect = a
        .connect
        .clone()
        .or(env.zk_connect.clone().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_string());
    Ok(Connection {
        connect,
        namespace: a.namespace.clone(),
        embedded: a.embedded,
        session_timeout: a.session_timeout.unwrap_or(DEFAULT_SESSION_TIMEOUT),
        connect_timeout: a.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        verbose: a.verbose,
        auth,
        acl,
        tls,
    })
}

fn op_options(op: OpCommand, conn: Connection) -> Result<Parsed, UsageError> {
    let (path, json, op) = match op {
        OpCommand::Status { path, json, semaphore } => (path, json, Op::Status { leases: semaphore }),
        OpCommand::Break { path, node, yes, json } => {
            if !yes {
                return usage(format!(
                    "break deletes a lock node: its holder loses the lock. Add --yes to do it \
                     (see `zk-lock status {path}` first)"
                ));
            }
            (path, json, Op::Break { node })
        }
        OpCommand::Wait {
            path,
            timeout,
            conflict_exit_code,
            json,
        } => (
            path,
            json,
            Op::Wait {
                timeout,
                timeout_exit_code: conflict_exit_code,
            },
        ),
    };
    check_lock_path(&path).map_err(UsageError)?;
    Ok(Parsed::Op(OpOptions { conn, path, json, op }))
}

/// `1.5s`, `300ms`.
pub(crate) fn human(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) && d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn run(v: &[&str]) -> Options {
        match parse(args(v), &Env::default()) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{v:?} gave {other:?}"),
        }
    }

    fn err(v: &[&str]) -> String {
        match parse(args(v), &Env::default()) {
            Err(UsageError(m)) => m,
            other => panic!("{v:?} should be a usage error, gave {other:?}"),
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        for bad in [
            "",
            "s",
            "-1",
            "1x",
            "abc",
            "1e3",
            "inf",
            "NaN",
            "1..2",
            "1 2",
            "99999999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn defaults() {
        let o = run(&["/locks/a", "--", "echo", "hi"]);
        assert_eq!(o.path, "/locks/a");
        assert_eq!(o.command, args(&["echo", "hi"]));
        assert_eq!(o.kind, Kind::Mutex);
        assert_eq!(o.timeout, None);
        assert_eq!(o.conn.connect, DEFAULT_CONNECT);
        assert_eq!(o.kill_grace, DEFAULT_KILL_GRACE);
        assert!(!o.conn.embedded);
    }

    #[test]
    fn options() {
        let o = run(&[
            "--connect=zk1:2181",
            "--timeout",
            "300ms",
            "--read",
            "-vv",
            "--namespace",
            "ns",
            "--kill-grace",
            "1",
            "/l",
            "--session-timeout=10s",
            "--",
            "sh",
            "-c",
            "exit 3",
        ]);
        assert_eq!(o.conn.connect, "zk1:2181");
        assert_eq!(o.timeout, Some(Duration::from_millis(300)));
        assert_eq!(o.kind, Kind::Read);
        assert_eq!(o.conn.verbose, 2);
        assert_eq!(o.conn.namespace.as_deref(), Some("ns"));
        assert_eq!(o.kill_grace, Duration::from_secs(1));
        assert_eq!(o.conn.session_timeout, Duration::from_secs(10));
        assert_eq!(o.command, args(&["sh", "-c", "exit 3"]));
        assert_eq!(run(&["-n", "/l", "--", "x"]).timeout, Some(Duration::ZERO));
        assert_eq!(
            run(&["-w0.5", "/l", "--", "x"]).timeout,
            Some(Duration::from_millis(500))
        );
        assert_eq!(run(&["--semaphore", "3", "/l", "--", "x"]).kind, Kind::Semaphore(3));
        assert_eq!(run(&["--write", "--write", "/l", "--", "x"]).kind, Kind::Write);
        #[cfg(feature = "embedded")]
        assert!(run(&["--embedded", "/l", "--", "x"]).conn.embedded);
        #[cfg(not(feature = "embedded"))]
        assert!(err(&["--embedded", "/l", "--", "x"]).contains("not available"));
        // Everything after `--` belongs to COMMAND, options included.
        assert_eq!(
            run(&["/l", "--", "ls", "--read", "--"]).command,
            args(&["ls", "--read", "--"])
        );
    }

    #[test]
    fn conflict_exit_code() {
        assert_eq!(run(&["-E", "100", "/l", "--", "x"]).conflict_exit_code, 100);
        assert_eq!(run(&["-E7", "/l", "--", "x"]).conflict_exit_code, 7);
        assert_eq!(run(&["--conflict-exit-code=0", "/l", "--", "x"]).conflict_exit_code, 0);
        assert_eq!(run(&["/l", "--", "x"]).conflict_exit_code, 1);
    }

    #[test]
    fn connect_from_env() {
        let o = match parse(
            args(&["/l", "--", "x"]),
            &Env {
                zk_connect: Some("env:1".into()),
                ..Env::default()
            },
        ) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{other:?}"),
        };
        assert_eq!(o.conn.connect, "env:1");
        let o = match parse(
            args(&["--connect", "cli:2", "/l", "--", "x"]),
            &Env {
                zk_connect: Some("env:1".into()),
                ..Env::default()
            },
        ) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{other:?}"),
        };
        assert_eq!(o.conn.connect, "cli:2");
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(args(&["--help"]), &Env::default()), Ok(Parsed::Help));
        assert_eq!(parse(args(&["/l", "-h"]), &Env::default()), Ok(Parsed::Help));
        assert_eq!(parse(args(&["-V"]), &Env::default()), Ok(Parsed::Version));
    }

    #[test]
    fn messages_are_zk_locks_own() {
        for v in [
            &["--timeout"][..],
            &["--timeout", "soon", "/l", "--", "x"],
            &["--read=yes", "/l", "--", "x"],
            &["--bogus", "/l", "--", "x"],
            &["/l", "echo"],
            &["-E", "256", "/l", "--", "x"],
            &["--session-timeout", "0", "/l", "--", "x"],
        ] {
            let m = err(v);
            assert!(!m.contains("error:") && !m.contains('\n'), "{v:?}: {m}");
            println!("{v:?}: {m}");
        }
    }

    fn op(v: &[&str]) -> OpOptions {
        match parse(args(v), &Env::default()) {
            Ok(Parsed::Op(o)) => o,
            other => panic!("{v:?} gave {other:?}"),
        }
    }

    #[test]
    fn subcommands() {
        let o = op(&["status", "/l"]);
        assert_eq!(
            (o.path.as_str(), o.json, o.op),
            ("/l", false, Op::Status { leases: None })
        );
        let o = op(&["--connect", "z:1", "status", "--json", "--semaphore", "3", "/l", "-v"]);
        assert_eq!(o.conn.connect, "z:1");
        assert_eq!(o.conn.verbose, 1);
        assert_eq!((o.json, o.op), (true, Op::Status { leases: Some(3) }));
        let o = op(&[
            "break",
            "/l",
            "--node",
            "_c_x-lock-0000000001",
            "--yes",
            "--namespace",
            "ns",
        ]);
        assert_eq!(o.conn.namespace.as_deref(), Some("ns"));
        assert_eq!(
            o.op,
            Op::Break {
                node: Some("_c_x-lock-0000000001".into())
            }
        );
        let o = op(&["wait", "/l", "-w", "2s", "-E", "9"]);
        assert_eq!(
            o.op,
            Op::Wait {
                timeout: Some(Duration::from_secs(2)),
                timeout_exit_code: 9
            }
        );
        // A lock path is never taken for a subcommand, and vice versa.
        assert_eq!(run(&["/status", "--", "x"]).path, "/status");
        assert!(err(&["break", "/l"]).contains("--yes"));
        assert!(err(&["status"]).contains("missing PATH"));
        assert!(err(&["--write", "wait", "/l"]).contains("belongs to a run"));
        assert!(err(&["status", "/l", "--", "x"]).contains("no COMMAND"));
        assert!(matches!(
            parse(args(&["status", "--help"]), &Env::default()),
            Ok(Parsed::SubcommandHelp(h)) if h.contains("EXIT STATUS")
        ));
    }

    #[test]
    fn auth_sources_and_acl() {
        let digest = |s: &str| Credentials {
            scheme: "digest".into(),
            secret: s.as_bytes().to_vec(),
        };
        let o = run(&["--auth", "digest:u:pw:with:colons", "--acl", "creator", "/l", "--", "x"]);
        assert_eq!(o.conn.auth, Some(digest("u:pw:with:colons")));
        assert_eq!(o.conn.acl, AclChoice::Creator);
        assert_eq!(run(&["/l", "--", "x"]).conn.acl, AclChoice::Open);
        assert_eq!(run(&["/l", "--", "x"]).conn.auth, None);
        assert_eq!(
            run(&["--auth=digest:u:p", "--acl=creator-read", "/l", "--", "x"])
                .conn
                .acl,
            AclChoice::CreatorRead
        );
        // The environment, and --auth over it.
        let env = Env {
            zk_lock_auth: Some("digest:env:pw".into()),
            ..Env::default()
        };
        let from_env = |v: &[&str]| match parse(args(v), &env) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{other:?}"),
        };
        assert_eq!(from_env(&["/l", "--", "x"]).conn.auth, Some(digest("env:pw")));
        assert_eq!(
            from_env(&["--auth", "digest:cli:pw", "/l", "--", "x"]).conn.auth,
            Some(digest("cli:pw"))
        );
        // A file: its first line.
        let dir = std::env::temp_dir().join(format!("zk-lock-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("auth");
        std::fs::write(&f, "digest:file:pw\nignored\n").unwrap();
        let fs = f.to_str().unwrap();
        assert_eq!(
            from_env(&["--auth-file", fs, "/l", "--", "x"]).conn.auth,
            Some(digest("file:pw"))
        );
        // Whitespace around the line (CRLF, a leading space, a trailing tab)
        // belongs to neither the scheme nor the password.
        for line in [
            "digest:file:pw\r\n",
            " digest:file:pw \n",
            "\tdigest:file:pw\t\r\nnext\n",
        ] {
            std::fs::write(&f, line).unwrap();
            assert_eq!(
                from_env(&["--auth-file", fs, "/l", "--", "x"]).conn.auth,
                Some(digest("file:pw")),
                "{line:?}"
            );
        }
        // A scheme with a space inside is refused at once (not sent, which
        // would end in AuthFailed).
        std::fs::write(&f, "dig est:file:pw\n").unwrap();
        let m = err(&["--auth-file", fs, "/l", "--", "x"]);
        assert!(m.contains("scheme") && !m.contains("file:pw"), "{m}");
        std::fs::write(&f, "digest:nopassword-hunter2\n").unwrap();
        let m = err(&["--auth-file", fs, "/l", "--", "x"]);
        assert!(m.contains("USER:PASSWORD") && !m.contains("hunter2"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err(&["--auth-file", "/nonexistent/zk-auth", "/l", "--", "x"]).contains("cannot read"));
        // Errors never repeat the secret.
        for bad in ["hunter2", "digest:", ":hunter2", "digest:hunter2", "digest::hunter2"] {
            let m = err(&["--auth", bad, "/l", "--", "x"]);
            assert!(m.starts_with("--auth") && !m.contains("hunter2"), "{bad}: {m}");
        }
        let bad_env = Env {
            zk_lock_auth: Some("hunter2".into()),
            ..Env::default()
        };
        match parse(args(&["/l", "--", "x"]), &bad_env) {
            Err(UsageError(m)) => assert!(m.contains(AUTH_ENV) && !m.contains("hunter2"), "{m}"),
            other => panic!("{other:?}"),
        }
        let m = err(&["--auth", "digest:a:b", "--auth-file", "f", "/l", "--", "x"]);
        assert!(m.contains("cannot be combined") && !m.contains("digest:a:b"), "{m}");
        assert!(err(&["--acl", "creator", "/l", "--", "x"]).contains("needs credentials"));
        assert!(err(&["--acl", "creator-nodes", "/l", "--", "x"]).contains("--acl creator-nodes needs credentials"));
        assert_eq!(
            run(&["--auth=digest:u:p", "--acl=creator-nodes", "/l", "--", "x"])
                .conn
                .acl,
            AclChoice::CreatorNodes
        );
        // A TLS client certificate is a credential too (its x509 identity).
        let o = run(&[
            "--acl",
            "creator",
            "--tls-ca",
            "ca.pem",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "c.key",
            "/l",
            "--",
            "x",
        ]);
        assert_eq!((o.conn.acl, o.conn.auth.is_none()), (AclChoice::Creator, true));
        assert!(err(&["--acl", "everyone", "/l", "--", "x"]).contains("--acl"));
        // Debug output (and so any log of the options) hides the secret.
        let o = run(&["--auth", "digest:u:hunter2", "/l", "--", "x"]);
        let shown = format!("{o:?} {o:#?}");
        assert!(shown.contains("digest") && !shown.contains("hunter2"), "{shown}");
        // So does the help: no default or example secret is shown.
        assert!(help().contains("--auth <SCHEME:CREDENTIALS>"));
    }

    #[test]
    fn usage_errors() {
        assert!(err(&[]).contains("missing PATH"));
        assert!(err(&["/l"]).contains("missing `--`"));
        assert!(err(&["/l", "echo"]).contains("put `--` before COMMAND"));
        assert!(err(&["/l", "--"]).contains("missing COMMAND"));
        assert!(err(&["--", "echo"]).contains("missing PATH"));
        assert!(err(&["locks/a", "--", "x"]).contains("absolute"));
        assert!(err(&["/", "--", "x"]).contains("root"));
        assert!(err(&["/a//b", "--", "x"]).contains("invalid PATH"));
        assert!(err(&["/a/", "--", "x"]).contains("invalid PATH"));
        assert!(err(&["--timeout", "soon", "/l", "--", "x"]).contains("--timeout"));
        assert!(err(&["--timeout"]).contains("needs a value"));
        assert!(err(&["--semaphore", "0", "/l", "--", "x"]).contains("at least 1"));
        assert!(err(&["--semaphore", "-2", "/l", "--", "x"]).contains("--semaphore"));
        assert!(err(&["--read", "--write", "/l", "--", "x"]).contains("cannot be combined"));
        assert!(err(&["--semaphore", "2", "--read", "/l", "--", "x"]).contains("cannot be combined"));
        assert!(err(&["--bogus", "/l", "--", "x"]).contains("unknown option"));
        assert!(err(&["-E", "256", "/l", "--", "x"]).contains("exit status"));
        assert!(err(&["--read=yes", "/l", "--", "x"]).contains("takes no value"));
        assert!(err(&["--namespace", "a/b", "/l", "--", "x"]).contains("namespace"));
        assert!(err(&["--session-timeout", "0", "/l", "--", "x"]).contains("greater than zero"));
        assert!(err(&["--embedded", "--connect", "h:1", "/l", "--", "x"]).contains("cannot be combined"));
        assert!(err(&["--connect", "", "/l", "--", "x"]).contains("empty"));
    }

    #[test]
    fn tls_options() {
        assert_eq!(run(&["/l", "--", "x"]).conn.tls, None);
        let o = run(&["--tls-ca", "ca.pem", "/l", "--", "x"]);
        assert_eq!(
            o.conn.tls,
            Some(Box::new(TlsFiles {
                ca: "ca.pem".into(),
                client: None,
                verify_hostname: true
            }))
        );
        let o = run(&[
            "--tls-ca=ca.pem",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "c.key",
            "--tls-no-hostname-verify",
            "/l",
            "--",
            "x",
        ]);
        let tls = o.conn.tls.unwrap();
        assert_eq!(tls.client, Some(("c.pem".into(), "c.key".into())));
        assert!(!tls.verify_hostname);
        assert!(err(&["--tls-key", "k", "--tls-ca", "c", "/l", "--", "x"]).contains("--tls-key needs --tls-cert"));
        assert!(err(&["--tls-no-hostname-verify", "/l", "--", "x"]).contains("need --tls-ca"));
        assert!(err(&["--embedded", "--tls-ca", "c", "/l", "--", "x"]).contains("cannot be combined"));
    }
}

#[cfg(test)]
mod human_tests {
    use super::human;
    use std::time::Duration;

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_secs(5)), "5s");
        assert_eq!(human(Duration::from_millis(300)), "300ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.500s");
        assert_eq!(human(Duration::ZERO), "0s");
    }
}
