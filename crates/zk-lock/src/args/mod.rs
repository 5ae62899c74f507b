//! Command-line parsing with `clap` (derive). Everything before the first `--`
//! is given to clap (options and PATH); everything after it is COMMAND, taken
//! verbatim (it may hold options of its own, another `--`, non-UTF-8 bytes).
//! Clap's errors are turned into zk-lock's own messages (exit 64).
//!
//! The rooms: `cli` (clap's derive types and the help), `options` (the domain
//! types the rest of zk-lock uses), `errors` (clap's errors in zk-lock's
//! words) and `duration` (the duration parser); this module resolves the
//! environment and the credentials and turns clap's types into `options`.

mod cli;
mod duration;
mod errors;
mod options;

use std::ffi::OsString;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, ConnArgs, OpCommand};
use errors::from_clap;
use options::usage;

pub use cli::{help, SASL_PASSWORD_ENV, USAGE_LINE};
pub(crate) use duration::human;
pub use options::{
    check_lock_path, parse_credentials, AclChoice, Connection, Credentials, Kind, Op, OpOptions, Options, Parsed,
    TlsFiles, UsageError, AUTH_ENV, DEFAULT_CONNECT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_KILL_GRACE,
    DEFAULT_SESSION_TIMEOUT,
};

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
    /// `ZK_LOCK_SASL_PASSWORD` (never printed).
    pub zk_lock_sasl_password: Option<String>,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Env {
        Env {
            zk_connect: std::env::var("ZK_CONNECT").ok(),
            zk_lock_auth: std::env::var(AUTH_ENV).ok(),
            zk_lock_sasl_password: std::env::var(cli::SASL_PASSWORD_ENV).ok(),
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
        Some(n @ ("status" | "break" | "wait" | "services" | "partition")) => Some(n),
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
                "unexpected `-- {}` after a subcommand: status, break, wait, services and partition run no COMMAND",
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

/// Why `--embedded` fails in a zk-lock built without the `embedded` feature,
/// and how to get it.
pub(crate) const EMBEDDED_NOT_BUILT: &str = "--embedded is not available: this zk-lock was built without the \
     `embedded` feature (no in-process test server); rebuild with `--features embedded` \
     (`cargo install zk-lock --features embedded`), or give --connect or ZK_CONNECT instead";

/// The connection options, checked and resolved.
fn connection(a: &ConnArgs, env: &Env) -> Result<Connection, UsageError> {
    if a.embedded && a.connect.is_some() {
        return usage("--embedded and --connect cannot be combined: --embedded starts its own server");
    }
    let tls = a.tls.resolve()?;
    if a.embedded && tls.is_some() {
        return usage("--embedded and --tls-* cannot be combined: the embedded server speaks plain TCP");
    }
    if a.embedded && !cfg!(feature = "embedded") {
        return usage(EMBEDDED_NOT_BUILT);
    }
    let auth = credentials(a.auth.clone(), a.auth_file.as_deref(), env.zk_lock_auth.clone())?;
    let sasl = a.sasl.resolve(env.zk_lock_sasl_password.as_deref())?;
    if a.embedded && sasl.is_some() {
        return usage("--embedded and --sasl cannot be combined: the embedded server of --embedded has no SASL users");
    }
    let acl = a.acl.unwrap_or(AclChoice::Open);
    let has_client_cert = tls.as_ref().is_some_and(|t| t.client.is_some());
    if acl != AclChoice::Open && auth.is_none() && !has_client_cert && sasl.is_none() {
        return usage(format!(
            "--acl {} needs credentials: give --auth, --auth-file or {AUTH_ENV}, --sasl (whose sasl \
             identity then owns the nodes) or a TLS client certificate (--tls-cert, whose x509 identity \
             then owns the nodes)",
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
        sasl,
    })
}

fn op_options(op: OpCommand, conn: Connection) -> Result<Parsed, UsageError> {
    let (path, json, op) = match op {
        OpCommand::Status {
            path,
            json,
            semaphore,
            group,
            counter,
        } => (
            path,
            json,
            Op::Status {
                leases: semaphore,
                group,
                counter,
            },
        ),
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
        OpCommand::Services { base, name, json } => {
            if base != "/" {
                check_lock_path(&base).map_err(|e| UsageError(e.replacen("PATH", "BASE", 1)))?;
            }
            return Ok(Parsed::Op(OpOptions {
                conn,
                path: base,
                json,
                op: Op::Services { name },
            }));
        }
        OpCommand::Partition { path, json } => (path, json, Op::Partition),
    };
    check_lock_path(&path).map_err(UsageError)?;
    Ok(Parsed::Op(OpOptions { conn, path, json, op }))
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
        #[cfg(not(feature = "embedded"))]
        assert!(err(&["--embedded", "/l", "--", "x"]).contains("rebuild with `--features embedded`"));
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
            (
                "/l",
                false,
                Op::Status {
                    leases: None,
                    group: false,
                    counter: false
                }
            )
        );
        let o = op(&["--connect", "z:1", "status", "--json", "--semaphore", "3", "/l", "-v"]);
        assert_eq!(o.conn.connect, "z:1");
        assert_eq!(o.conn.verbose, 1);
        assert_eq!(
            (o.json, o.op),
            (
                true,
                Op::Status {
                    leases: Some(3),
                    group: false,
                    counter: false
                }
            )
        );
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
