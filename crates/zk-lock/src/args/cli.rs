//! The command line as clap sees it: the derive types, their help texts and
//! value parsers, and the rendered help.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand};

use super::duration::parse_duration;
use super::options::{check_namespace, parse_credentials, usage, AclChoice, Credentials, TlsFiles, UsageError};

/// The TLS options as clap sees them (a group of their own in the help).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "TLS (the server's secureClientPort)")]
pub(super) struct TlsArgs {
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

/// The SASL options as clap sees them (a group of their own in the help).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "SASL (Kerberos or DIGEST-MD5, on every connection)")]
pub(super) struct SaslArgs {
    /// authenticate every connection with SASL: digest-md5 (a user and a
    /// password; the server's JAAS DigestLoginModule) or gssapi (Kerberos:
    /// a keytab or a credential cache)
    #[arg(global = true, verbatim_doc_comment, long, value_name = "MECH", value_parser = ["digest-md5", "gssapi"])]
    pub(super) sasl: Option<String>,

    /// the DIGEST-MD5 user; its password comes from --sasl-password-file or
    /// $ZK_LOCK_SASL_PASSWORD, never from the command line
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "USER",
        allow_hyphen_values = true
    )]
    pub(super) sasl_user: Option<String>,

    /// read the DIGEST-MD5 password from the first line of FILE (keep it
    /// mode 0600)
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    pub(super) sasl_password_file: Option<PathBuf>,

    /// Kerberos: authenticate as --sasl-principal with the key in this keytab
    /// (Kerberos gets and renews tickets from it); without it, the credential
    /// cache
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    pub(super) sasl_keytab: Option<PathBuf>,

    /// Kerberos: the client principal of --sasl-keytab (e.g. app@EXAMPLE.COM)
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "PRINCIPAL",
        allow_hyphen_values = true
    )]
    pub(super) sasl_principal: Option<String>,

    /// Kerberos: the credential cache to use (e.g. FILE:/tmp/krb5cc_app, what
    /// kinit -c filled) [default: $KRB5CCNAME, Kerberos' default]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    pub(super) sasl_ccache: Option<String>,

    /// Kerberos: the first part of the server's principal [default: zookeeper]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    pub(super) sasl_service: Option<String>,

    /// Kerberos: the host part of the server's principal [default: the host
    /// of the connect string, as given]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "HOST",
        allow_hyphen_values = true
    )]
    pub(super) sasl_host: Option<String>,

    /// Kerberos: the realm of the server's principal [default: the client's]
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "REALM",
        allow_hyphen_values = true
    )]
    pub(super) sasl_realm: Option<String>,

    /// Kerberos: the server's whole principal (e.g.
    /// zookeeper/zk1.example.com@EXAMPLE.COM); overrides --sasl-service,
    /// --sasl-host and --sasl-realm
    #[arg(
        global = true,
        verbatim_doc_comment,
        long,
        value_name = "PRINCIPAL",
        allow_hyphen_values = true
    )]
    pub(super) sasl_server_principal: Option<String>,

    /// Kerberos: let Kerberos canonicalize the server's host name (as its
    /// krb5.conf says, as ZooKeeper's Java client does by default)
    #[arg(global = true, verbatim_doc_comment, long, action = ArgAction::SetTrue)]
    pub(super) sasl_canonicalize_host: bool,
}

impl SaslArgs {
    /// Checks the combination and builds the client's SASL settings; the
    /// password is read here (`password_env`: `ZK_LOCK_SASL_PASSWORD`).
    /// Messages never repeat the password.
    pub(super) fn resolve(&self, password_env: Option<&str>) -> Result<Option<zk_framework::SaslConfig>, UsageError> {
        let kerberos_only = [
            (self.sasl_keytab.is_some(), "--sasl-keytab"),
            (self.sasl_ccache.is_some(), "--sasl-ccache"),
            (self.sasl_service.is_some(), "--sasl-service"),
            (self.sasl_host.is_some(), "--sasl-host"),
            (self.sasl_realm.is_some(), "--sasl-realm"),
            (self.sasl_server_principal.is_some(), "--sasl-server-principal"),
            (self.sasl_canonicalize_host, "--sasl-canonicalize-host"),
        ];
        let digest_only = [
            (self.sasl_user.is_some(), "--sasl-user"),
            (self.sasl_password_file.is_some(), "--sasl-password-file"),
        ];
        let first = |opts: &[(bool, &'static str)]| opts.iter().find(|(set, _)| *set).map(|(_, n)| *n);
        match self.sasl.as_deref() {
            None => match first(&kerberos_only).or(first(&digest_only)) {
                Some(name) => usage(format!("{name} needs --sasl (digest-md5 or gssapi)")),
                None => Ok(None),
            },
            Some("digest-md5") => {
                if let Some(name) = first(&kerberos_only) {
                    return usage(format!("{name} is a Kerberos option: it needs --sasl gssapi"));
                }
                let Some(user) = &self.sasl_user else {
                    return usage("--sasl digest-md5 needs --sasl-user");
                };
                let config = match (&self.sasl_password_file, password_env.filter(|p| !p.is_empty())) {
                    (Some(file), _) => zk_framework::SaslConfig::digest_md5_password_file(user, file),
                    (None, Some(pw)) => zk_framework::SaslConfig::digest_md5(user, pw),
                    (None, None) => {
                        return usage(format!(
                            "--sasl digest-md5 needs a password: --sasl-password-file FILE or ${SASL_PASSWORD_ENV}                              (never on the command line)"
                        ))
                    }
                };
                config
                    .map(Some)
                    .map_err(|e| UsageError(format!("--sasl digest-md5: {e}")))
            }
            Some(_) => {
                if let Some(name) = first(&digest_only) {
                    return usage(format!("{name} is a DIGEST-MD5 option: it needs --sasl digest-md5"));
                }
                match (&self.sasl_keytab, &self.sasl_principal, &self.sasl_ccache) {
                    (Some(_), None, _) => {
                        return usage("--sasl-keytab needs --sasl-principal (the principal of its key)")
                    }
                    (None, Some(_), _) => return usage("--sasl-principal needs --sasl-keytab (the principal's key)"),
                    (Some(_), Some(_), Some(_)) => {
                        return usage(
                            "--sasl-keytab and --sasl-ccache cannot be combined: give one source of credentials",
                        )
                    }
                    _ => {}
                }
                let mut g = zk_framework::GssapiConfig::default().canonicalize_hostname(self.sasl_canonicalize_host);
                if let (Some(k), Some(p)) = (&self.sasl_keytab, &self.sasl_principal) {
                    g = g.keytab(k.clone(), p);
                }
                if let Some(c) = &self.sasl_ccache {
                    g = g.credential_cache(c);
                }
                if let Some(s) = &self.sasl_service {
                    g = g.service(s);
                }
                if let Some(h) = &self.sasl_host {
                    g = g.server_host(h);
                }
                if let Some(r) = &self.sasl_realm {
                    g = g.server_realm(r);
                }
                if let Some(p) = &self.sasl_server_principal {
                    g = g.server_principal(p);
                }
                Ok(Some(zk_framework::SaslConfig::gssapi(g)))
            }
        }
    }
}

/// The environment variable with the DIGEST-MD5 password.
pub const SASL_PASSWORD_ENV: &str = "ZK_LOCK_SASL_PASSWORD";

impl TlsArgs {
    /// Checks the combination: `Ok(None)` without `--tls-ca` and nothing else.
    pub(super) fn resolve(&self) -> Result<Option<Box<TlsFiles>>, UsageError> {
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
                                       (a leader latch election: who leads)
    zk-lock break PATH [--node NAME] --yes
                                       delete the holder's node: the holder is
                                       told it lost the lock
    zk-lock wait PATH [--timeout D]    wait until nobody holds PATH
    zk-lock services BASE [NAME] [--json]
                                       the services registered under BASE
                                       (Curator's service discovery layout),
                                       or service NAME's instances: each
                                       one's fields, its node's session, age
    zk-lock partition PATH [--json]    a set partitioner's members and, for
                                       each item, the member holding its lock
                                       (or a session outside the party) and
                                       who waits
    The connection options (--connect, --namespace, --session-timeout,
    --connect-timeout, -v, --auth, --auth-file, --acl) go before or after
    the subcommand; --json prints
    one JSON object. Exit statuses (more in `zk-lock status --help`, ...):
      status  0 held, 1 free
      break   0 deleted, 1 nothing to break (free, no such node)
      wait    0 free, 1 --timeout passed first (or -E N)
      services  0 services (instances of NAME) found, 1 none
      partition 0 the party has members, 1 it has none
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
    ZK_LOCK_SASL_PASSWORD
                        the --sasl digest-md5 password when --sasl-password-file
                        is not given; removed from COMMAND's environment
    KRB5_CONFIG, KRB5CCNAME, KRB5_CLIENT_KTNAME
                        Kerberos' own (--sasl gssapi): its configuration, the
                        default credential cache and client keytab

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

    # try it without a ZooKeeper server (a zk-lock built with
    # `--features embedded`: cargo install zk-lock --features embedded)
    zk-lock --embedded -v /demo -- echo \"holding the lock\"";

/// The help of `--embedded`, which says how to get it in a build without it.
#[cfg(feature = "embedded")]
const EMBEDDED_HELP: &str = "start a throwaway in-process ZooKeeper server for this run only, to try
zk-lock out: other zk-lock processes cannot see it, so it excludes
nobody (cargo feature `embedded`, which this zk-lock was built with)";
/// The help of `--embedded`, which says how to get it in a build without it.
#[cfg(not(feature = "embedded"))]
const EMBEDDED_HELP: &str = "start a throwaway in-process ZooKeeper server for this run only, to try
zk-lock out: other zk-lock processes cannot see it, so it excludes
nobody. Not in this zk-lock (a usage error, 64): rebuild with
`--features embedded` (cargo install zk-lock --features embedded)";

/// The first line of a usage error's hint, as `--help` shows it.
pub const USAGE_LINE: &str = "zk-lock [OPTIONS] PATH -- COMMAND [ARGS...]
       zk-lock [OPTIONS] status|break|wait PATH [...]
       zk-lock [OPTIONS] services BASE [NAME] [--json]
       zk-lock [OPTIONS] partition PATH [--json]";

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
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) op: Option<OpCommand>,

    #[command(flatten)]
    pub(super) conn: ConnArgs,

    /// the lock's absolute ZooKeeper path, e.g. /locks/backup (relative to
    /// --namespace and to a chroot, if any)
    #[arg(verbatim_doc_comment, value_name = "PATH")]
    pub(super) path: Option<String>,

    /// Arguments after PATH without `--` (an error; caught to say so).
    #[arg(hide = true, value_name = "EXTRA")]
    pub(super) extra: Vec<String>,

    /// the command to run, after `--`
    #[arg(verbatim_doc_comment, value_name = "COMMAND [ARGS...]", last = true)]
    pub(super) command: Vec<OsString>,

    /// give up (exit 1) if the lock is not acquired within D; 0 tries once
    /// without waiting [default: wait forever]
    #[arg(verbatim_doc_comment, short = 'w', long, value_name = "D", value_parser = parse_duration, overrides_with = "nonblock", allow_hyphen_values = true)]
    pub(super) timeout: Option<Duration>,

    /// the same as --timeout 0
    #[arg(verbatim_doc_comment, short = 'n', long, overrides_with = "timeout")]
    pub(super) nonblock: bool,

    /// exit with N instead of 1 when the lock is not acquired, to tell it
    /// apart from COMMAND's own status
    #[arg(verbatim_doc_comment, short = 'E', long, value_name = "N", value_parser = exit_status, default_value_t = 1, allow_hyphen_values = true)]
    pub(super) conflict_exit_code: i32,

    /// take the shared (read) half of a read/write lock: read holders run
    /// together, never with a --write holder
    #[arg(verbatim_doc_comment, long)]
    pub(super) read: bool,

    /// take the exclusive (write) half of a read/write lock
    #[arg(verbatim_doc_comment, long)]
    pub(super) write: bool,

    /// take one of N leases of a counting semaphore: at most N holders run at
    /// once (every holder must give the same N). Without --read, --write or
    /// --semaphore: an exclusive mutex (Curator's InterProcessMutex).
    #[arg(verbatim_doc_comment, long, value_name = "N", value_parser = leases, allow_hyphen_values = true)]
    pub(super) semaphore: Option<u32>,

    /// after the lock is lost, wait D between SIGTERM and SIGKILL to COMMAND
    /// [default: 5s]
    #[arg(verbatim_doc_comment, long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(super) kill_grace: Option<Duration>,
}

/// The connection options, shared by a run and the subcommands (global: they
/// go before or after a subcommand's name).
#[derive(Debug, Args)]
pub(super) struct ConnArgs {
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
    pub(super) connect: Option<String>,

    /// prefix PATH with /NS (Curator's namespace)
    #[arg(global = true, verbatim_doc_comment, long, value_name = "NS", value_parser = namespace, allow_hyphen_values = true)]
    pub(super) namespace: Option<String>,

    // (The help is a constant: it tells whether this build has the server.)
    #[arg(global = true, long, help = EMBEDDED_HELP)]
    pub(super) embedded: bool,

    /// ZooKeeper session timeout: how long the server keeps the lock of a
    /// zk-lock that vanished (crash, network partition) before another
    /// process can take it [default: 30s; the server may clamp it]
    #[arg(global = true, verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    pub(super) session_timeout: Option<Duration>,

    /// give up (exit 69) if ZooKeeper cannot be reached within D [default: 15s]
    #[arg(global = true, verbatim_doc_comment, long, value_name = "D", value_parser = positive_duration, allow_hyphen_values = true)]
    pub(super) connect_timeout: Option<Duration>,

    /// report progress on stderr (connect, acquire, release); -vv adds the
    /// ZooKeeper client's logs, -vvv debug logs
    #[arg(global = true, verbatim_doc_comment, short = 'v', long, action = ArgAction::Count)]
    pub(super) verbose: u8,

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
    pub(super) auth: Option<Credentials>,

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
    pub(super) auth_file: Option<std::path::PathBuf>,

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
    pub(super) acl: Option<AclChoice>,

    #[command(flatten)]
    pub(super) tls: TlsArgs,

    #[command(flatten)]
    pub(super) sasl: SaslArgs,
}

/// The operator's subcommands.
#[derive(Debug, Subcommand)]
pub(super) enum OpCommand {
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
        /// PATH is a group (GroupMember, ours or Curator's): list its members
        /// (id, data, session, age) instead; exit 0 with members, 1 without
        #[arg(verbatim_doc_comment, long, conflicts_with_all = ["semaphore", "counter"])]
        group: bool,
        /// PATH is a counter (DistributedAtomicLong / Integer, SharedCount,
        /// ours or Curator's): show its value instead; exit 0 when the node
        /// exists, 1 when it does not (it reads as 0)
        #[arg(verbatim_doc_comment, long, conflicts_with_all = ["semaphore", "group"])]
        counter: bool,
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
    /// list the services registered under BASE (Curator's service discovery
    /// layout, BASE/NAME/ID: Curator, Spring Cloud Zookeeper, Dubbo, ours),
    /// or with NAME that service's instances: id, address and ports, type,
    /// the session owning a dynamic instance's node, age; an instance whose
    /// JSON cannot be read is shown with why
    #[command(
        after_help = "EXIT STATUS:\n    0   services found (with NAME: instances of NAME, readable or not)\n    1   none\n   64   usage error (a bad BASE or NAME)\n   69   ZooKeeper unavailable, or another error\n   77   permission denied (NoAuth, AuthFailed)",
        verbatim_doc_comment
    )]
    Services {
        /// the registry's absolute base path (Spring's and Dubbo's: /services)
        #[arg(verbatim_doc_comment, value_name = "BASE")]
        base: String,
        /// a service's name: list its instances
        #[arg(verbatim_doc_comment, value_name = "NAME")]
        name: Option<String>,
        /// print JSON (one object) instead of text; each instance's fields
        /// as Curator's JSON (`enabled` included)
        #[arg(verbatim_doc_comment, long)]
        json: bool,
    },
    /// show a set partitioner at PATH (ours: PATH/party/ID members,
    /// PATH/locks/ITEM locks): its members, and for each item the member
    /// whose session holds the item's lock (or a session outside the party,
    /// which keeps the members from settling), the fencing token, and who
    /// waits
    #[command(
        after_help = "EXIT STATUS:\n    0   the party has members\n    1   it has none\n   64   usage error\n   69   ZooKeeper unavailable, or another error\n   77   permission denied (NoAuth, AuthFailed)",
        verbatim_doc_comment
    )]
    Partition {
        /// the partitioner's absolute path
        #[arg(value_name = "PATH")]
        path: String,
        /// print JSON (one object) instead of text
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
