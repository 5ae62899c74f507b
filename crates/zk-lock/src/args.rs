//! Command-line parsing with `clap` (derive). Everything before the first `--`
//! is given to clap (options and PATH); everything after it is COMMAND, taken
//! verbatim (it may hold options of its own, another `--`, non-UTF-8 bytes).
//! Clap's errors are turned into zk-lock's own messages (exit 64).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
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

/// Everything a run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The connect string (already resolved from `--connect`, `ZK_CONNECT` or
    /// the default; unused with `--embedded`).
    pub connect: String,
    /// `None`: wait forever; `Some(0)`: a non-blocking try.
    pub timeout: Option<Duration>,
    /// The recipe.
    pub kind: Kind,
    /// Curator namespace (a single path segment).
    pub namespace: Option<String>,
    /// Start a throwaway in-process server.
    pub embedded: bool,
    /// Time between SIGTERM and SIGKILL after the lock is lost.
    pub kill_grace: Duration,
    /// Requested session timeout.
    pub session_timeout: Duration,
    /// How long to wait for the first connection.
    pub connect_timeout: Duration,
    /// Exit status when the lock is not acquired (`-E`, default 1).
    pub conflict_exit_code: i32,
    /// `-v` count.
    pub verbose: u8,
    /// The lock path.
    pub path: String,
    /// COMMAND and its arguments (never empty).
    pub command: Vec<OsString>,
    /// TLS settings (`--tls-*`); `None` for plain TCP.
    pub tls: Option<Box<TlsFiles>>,
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
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "TLS (the server's secureClientPort)")]
struct TlsArgs {
    /// connect over TLS, verifying the server's certificate against the CA
    /// certificate(s) in this PEM file [env: ZK_LOCK_TLS_CA]
    #[arg(
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
    #[arg(verbatim_doc_comment, long, env = "ZK_LOCK_TLS_NO_HOSTNAME_VERIFY", hide_env = true, value_parser = clap::builder::BoolishValueParser::new(), action = ArgAction::SetTrue)]
    tls_no_hostname_verify: bool,
}

impl TlsArgs {
    /// Checks the combination: `Ok(None)` without `--tls-ca` and nothing else.
    fn resolve(self) -> Result<Option<Box<TlsFiles>>, UsageError> {
        let client = match (self.tls_cert, self.tls_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => return usage("--tls-cert needs --tls-key (the certificate's private key)"),
            (None, Some(_)) => return usage("--tls-key needs --tls-cert (the certificate it belongs to)"),
        };
        match self.tls_ca {
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

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run COMMAND under the lock.
    Run(Options),
    /// Print the help.
    Help,
    /// Print the version.
    Version,
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
Options may also be written --option=VALUE. Durations: 500ms, 2s, 1m, 1h, or
plain seconds (1.5).

WHILE COMMAND RUNS:
    If the connection to ZooKeeper is lost, zk-lock warns on stderr that the lock
    may be lost; COMMAND keeps running, and zk-lock reports when it reconnects on
    the same session (the lock is then still held). If the lock is lost for
    certain (the session expired, or someone deleted the lock node), zk-lock sends
    SIGTERM to COMMAND, SIGKILL after --kill-grace, and exits with 75.

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
      1               the lock was not acquired: --timeout passed, or --timeout 0
                      found it held (as flock(1); see --conflict-exit-code)
     64               usage error: bad option, PATH, duration or connect string,
                      or --tls-* files that cannot be read or used (EX_USAGE)
     69               ZooKeeper unavailable (not reachable within
                      --connect-timeout) or another lock error (EX_UNAVAILABLE)
     75               the lock was lost while COMMAND ran; COMMAND was terminated
                      (EX_TEMPFAIL: try again)
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

    # over TLS, with a client certificate (mutual TLS)
    zk-lock --connect zk1:2281 --tls-ca ca.pem --tls-cert me.pem --tls-key me.key \\
        /locks/backup -- ./backup.sh

    # try it without a ZooKeeper server
    zk-lock --embedded -v /demo -- echo \"holding the lock\"";

/// The first line of a usage error's hint, as `--help` shows it.
pub const USAGE_LINE: &str = "zk-lock [OPTIONS] PATH -- COMMAND [ARGS...]";

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

    // (The help is a string: rustdoc would read `[/chroot]` as a link.)
    #[arg(
        long,
        value_name = "S",
        value_parser = connect_string,
        allow_hyphen_values = true,
        help = "ZooKeeper connect string host:port[,host:port...][/chroot]\n\
                [default: $ZK_CONNECT, else 127.0.0.1:2181]"
    )]
    connect: Option<String>,

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

    /// prefix PATH with /NS (Curator's namespace)
    #[arg(verbatim_doc_comment, long, value_name = "NS", value_parser = namespace, allow_hyphen_values = true)]
    namespace: Option<String>,

    /// start a throwaway in-process ZooKeeper server for this run only, to try
    /// zk-lock out: other zk-lock processes cannot see it, so it excludes
    /// nobody
    #[arg(verbatim_doc_comment, long, hide = !cfg!(feature = "embedded"))]
    embedded: bool,

    /// after the lock is lost, wait D between SIGTERM and SIGKILL to COMMAND
    /// [default: 5s]
    #[arg(verbatim_doc_comment, long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    kill_grace: Option<Duration>,

    /// ZooKeeper session timeout: how long the server keeps the lock of a
    /// zk-lock that vanished (crash, network partition) before another
    /// process can take it [default: 30s; the server may clamp it]
    #[arg(verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    session_timeout: Option<Duration>,

    /// give up (exit 69) if ZooKeeper cannot be reached within D [default: 15s]
    #[arg(verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    connect_timeout: Option<Duration>,

    /// report progress on stderr (connect, acquire, release); -vv adds the
    /// ZooKeeper client's logs, -vvv debug logs
    #[arg(verbatim_doc_comment, short = 'v', long, action = ArgAction::Count)]
    verbose: u8,

    #[command(flatten)]
    tls: TlsArgs,
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
fn from_clap(e: clap::Error) -> Result<Parsed, UsageError> {
    let arg = context(&e, ContextKind::InvalidArg).unwrap_or_default();
    let name = flag_name(&arg);
    let msg = match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => return Ok(Parsed::Help),
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
        ErrorKind::TooManyValues | ErrorKind::ArgumentConflict if arg.starts_with('-') => {
            format!("{name} takes no value")
        }
        ErrorKind::NoEquals | ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            format!("{name} needs a value")
        }
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

/// Parses the arguments after the program name. `zk_connect_env` is the value
/// of `ZK_CONNECT` (passed in so that parsing is a pure function).
///
/// # Errors
///
/// A [`UsageError`] for anything the user must fix.
///
/// # Examples
///
/// ```ignore
/// let parsed = parse(vec!["/locks/a".into(), "--".into(), "true".into()], None)?;
/// ```
pub fn parse(args: Vec<OsString>, zk_connect_env: Option<String>) -> Result<Parsed, UsageError> {
    // The first `--` ends the options: no option takes `--` as its value.
    let mut args = args;
    let command = args.iter().position(|a| a == "--").map(|i| {
        let rest = args.split_off(i + 1);
        args.pop();
        rest
    });
    let argv = std::iter::once(OsString::from("zk-lock")).chain(args);
    let matches = match Cli::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => return from_clap(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return from_clap(e),
    };
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
    if cli.embedded && cli.connect.is_some() {
        return usage("--embedded and --connect cannot be combined: --embedded starts its own server");
    }
    if cli.embedded && !cfg!(feature = "embedded") {
        return usage(
            "--embedded is not available: this zk-lock was built without the `embedded` feature \
             (no in-process test server); give --connect or ZK_CONNECT instead",
        );
    }
    let tls = cli.tls.resolve()?;
    if cli.embedded && tls.is_some() {
        return usage("--embedded and --tls-* cannot be combined: the embedded server speaks plain TCP");
    }
    let connect = cli
        .connect
        .or(zk_connect_env.filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_string());
    Ok(Parsed::Run(Options {
        connect,
        timeout: if cli.nonblock {
            Some(Duration::ZERO)
        } else {
            cli.timeout
        },
        kind: kinds.first().map_or(Kind::Mutex, |(k, _)| *k),
        namespace: cli.namespace,
        embedded: cli.embedded,
        kill_grace: cli.kill_grace.unwrap_or(DEFAULT_KILL_GRACE),
        session_timeout: cli.session_timeout.unwrap_or(DEFAULT_SESSION_TIMEOUT),
        connect_timeout: cli.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        conflict_exit_code: cli.conflict_exit_code,
        verbose: cli.verbose,
        path,
        command,
        tls,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn run(v: &[&str]) -> Options {
        match parse(args(v), None) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{v:?} gave {other:?}"),
        }
    }

    fn err(v: &[&str]) -> String {
        match parse(args(v), None) {
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
        assert_eq!(o.connect, DEFAULT_CONNECT);
        assert_eq!(o.kill_grace, DEFAULT_KILL_GRACE);
        assert!(!o.embedded);
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
        assert_eq!(o.connect, "zk1:2181");
        assert_eq!(o.timeout, Some(Duration::from_millis(300)));
        assert_eq!(o.kind, Kind::Read);
        assert_eq!(o.verbose, 2);
        assert_eq!(o.namespace.as_deref(), Some("ns"));
        assert_eq!(o.kill_grace, Duration::from_secs(1));
        assert_eq!(o.session_timeout, Duration::from_secs(10));
        assert_eq!(o.command, args(&["sh", "-c", "exit 3"]));
        assert_eq!(run(&["-n", "/l", "--", "x"]).timeout, Some(Duration::ZERO));
        assert_eq!(
            run(&["-w0.5", "/l", "--", "x"]).timeout,
            Some(Duration::from_millis(500))
        );
        assert_eq!(run(&["--semaphore", "3", "/l", "--", "x"]).kind, Kind::Semaphore(3));
        assert_eq!(run(&["--write", "--write", "/l", "--", "x"]).kind, Kind::Write);
        #[cfg(feature = "embedded")]
        assert!(run(&["--embedded", "/l", "--", "x"]).embedded);
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
        let o = match parse(args(&["/l", "--", "x"]), Some("env:1".into())) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{other:?}"),
        };
        assert_eq!(o.connect, "env:1");
        let o = match parse(args(&["--connect", "cli:2", "/l", "--", "x"]), Some("env:1".into())) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{other:?}"),
        };
        assert_eq!(o.connect, "cli:2");
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(args(&["--help"]), None), Ok(Parsed::Help));
        assert_eq!(parse(args(&["/l", "-h"]), None), Ok(Parsed::Help));
        assert_eq!(parse(args(&["-V"]), None), Ok(Parsed::Version));
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
        assert_eq!(run(&["/l", "--", "x"]).tls, None);
        let o = run(&["--tls-ca", "ca.pem", "/l", "--", "x"]);
        assert_eq!(
            o.tls,
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
        let tls = o.tls.unwrap();
        assert_eq!(tls.client, Some(("c.pem".into(), "c.key".into())));
        assert!(!tls.verify_hostname);
        assert!(err(&["--tls-key", "k", "--tls-ca", "c", "/l", "--", "x"]).contains("--tls-key needs --tls-cert"));
        assert!(err(&["--tls-no-hostname-verify", "/l", "--", "x"]).contains("need --tls-ca"));
        assert!(err(&["--embedded", "--tls-ca", "c", "/l", "--", "x"]).contains("cannot be combined"));
    }
}
