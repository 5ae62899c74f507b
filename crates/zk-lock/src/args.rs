//! Command-line parsing (no dependencies: the grammar is small and fixed).

use std::ffi::OsString;
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

struct Builder {
    connect: Option<String>,
    timeout: Option<Duration>,
    kind: Option<(Kind, &'static str)>,
    namespace: Option<String>,
    embedded: bool,
    kill_grace: Duration,
    session_timeout: Duration,
    connect_timeout: Duration,
    conflict_exit_code: i32,
    verbose: u8,
    path: Option<String>,
}

impl Builder {
    fn set_kind(&mut self, kind: Kind, flag: &'static str) -> Result<(), UsageError> {
        match self.kind {
            Some((k, f)) if k != kind => usage(format!("{f} and {flag} cannot be combined: choose one lock kind")),
            _ => {
                self.kind = Some((kind, flag));
                Ok(())
            }
        }
    }
}

/// Parses the arguments after the program name. `zk_connect_env` is the value
/// of `ZK_CONNECT` (passed in so that parsing is a pure function).
///
/// # Errors
///
/// A [`UsageError`] for anything the user must fix.
pub fn parse(args: Vec<OsString>, zk_connect_env: Option<String>) -> Result<Parsed, UsageError> {
    let mut b = Builder {
        connect: None,
        timeout: None,
        kind: None,
        namespace: None,
        embedded: false,
        kill_grace: DEFAULT_KILL_GRACE,
        session_timeout: DEFAULT_SESSION_TIMEOUT,
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        conflict_exit_code: 1,
        verbose: 0,
        path: None,
    };
    let mut it = args.into_iter();
    let mut command: Option<Vec<OsString>> = None;
    while let Some(arg) = it.next() {
        if arg == "--" {
            command = Some(it.by_ref().collect());
            break;
        }
        let Some(s) = arg.to_str() else {
            return usage(format!(
                "argument {arg:?} is not valid UTF-8 (only COMMAND, after `--`, may be)"
            ));
        };
        let s = s.to_string();
        if s == "-" || !s.starts_with('-') {
            if let Some(p) = &b.path {
                return usage(format!(
                    "unexpected argument {s:?} after PATH {p:?}: put `--` before COMMAND, \
                     e.g. zk-lock {p} -- {s} ..."
                ));
            }
            b.path = Some(s);
            continue;
        }
        // `--name=value`, `--name value`, `-w value`, `-wvalue`, `-vv`.
        let (name, inline): (String, Option<String>) = if let Some(long) = s.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (s.clone(), None),
            }
        } else if s.len() > 2 && (s.starts_with("-w") || s.starts_with("-E")) {
            (s[..2].to_string(), Some(s[2..].to_string()))
        } else if s.len() > 2 && s[1..].bytes().all(|c| c == b'v') {
            b.verbose = b.verbose.saturating_add((s.len() - 1) as u8);
            continue;
        } else {
            (s.clone(), None)
        };
        let mut value = |what: &str| -> Result<String, UsageError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            match it.next() {
                Some(v) if v != "--" => v
                    .into_string()
                    .map_err(|v| UsageError(format!("{name}: value {v:?} is not valid UTF-8"))),
                _ => usage(format!("{name} needs a value ({what})")),
            }
        };
        let flag_only = |inline: &Option<String>| -> Result<(), UsageError> {
            match inline {
                Some(_) => usage(format!("{name} takes no value")),
                None => Ok(()),
            }
        };
        let duration = |v: String| parse_duration(&v).map_err(|e| UsageError(format!("{name}: {e}")));
        match name.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "-v" | "--verbose" => {
                flag_only(&inline)?;
                b.verbose = b.verbose.saturating_add(1);
            }
            "--connect" => {
                let v = value("a connect string such as zk1:2181,zk2:2181")?;
                if v.trim().is_empty() {
                    return usage("--connect: empty connect string");
                }
                b.connect = Some(v);
            }
            "-w" | "--timeout" => b.timeout = Some(duration(value("a duration such as 500ms, 2s or 0")?)?),
            "-n" | "--nonblock" => {
                flag_only(&inline)?;
                b.timeout = Some(Duration::ZERO);
            }
            "-E" | "--conflict-exit-code" => {
                let v = value("an exit status, 0 to 255")?;
                b.conflict_exit_code = match v.trim().parse::<u8>() {
                    Ok(n) => i32::from(n),
                    Err(_) => return usage(format!("{name}: {v:?} is not an exit status (0 to 255)")),
                };
            }
            "--read" => {
                flag_only(&inline)?;
                b.set_kind(Kind::Read, "--read")?;
            }
            "--write" => {
                flag_only(&inline)?;
                b.set_kind(Kind::Write, "--write")?;
            }
            "--semaphore" => {
                let v = value("the number of leases, at least 1")?;
                let n: u32 = v
                    .trim()
                    .parse()
                    .map_err(|_| UsageError(format!("--semaphore: {v:?} is not a number of leases (1, 2, ...)")))?;
                if n == 0 {
                    return usage("--semaphore: the number of leases must be at least 1");
                }
                b.set_kind(Kind::Semaphore(n), "--semaphore")?;
            }
            "--namespace" => {
                let v = value("a single path segment such as myapp")?;
                check_namespace(&v).map_err(UsageError)?;
                b.namespace = Some(v);
            }
            "--embedded" => {
                flag_only(&inline)?;
                b.embedded = true;
            }
            "--kill-grace" => b.kill_grace = duration(value("a duration such as 5s")?)?,
            "--session-timeout" => {
                let d = duration(value("a duration such as 30s")?)?;
                if d < Duration::from_millis(1) {
                    return usage("--session-timeout must be greater than zero");
                }
                b.session_timeout = d;
            }
            "--connect-timeout" => {
                let d = duration(value("a duration such as 15s")?)?;
                if d < Duration::from_millis(1) {
                    return usage("--connect-timeout must be greater than zero");
                }
                b.connect_timeout = d;
            }
            _ => return usage(format!("unknown option {s:?} (see zk-lock --help)")),
        }
    }
    let Some(path) = b.path else {
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
    if b.embedded && b.connect.is_some() {
        return usage("--embedded and --connect cannot be combined: --embedded starts its own server");
    }
    let connect = b
        .connect
        .or(zk_connect_env.filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_string());
    Ok(Parsed::Run(Options {
        connect,
        timeout: b.timeout,
        kind: b.kind.map_or(Kind::Mutex, |(k, _)| k),
        namespace: b.namespace,
        embedded: b.embedded,
        kill_grace: b.kill_grace,
        session_timeout: b.session_timeout,
        connect_timeout: b.connect_timeout,
        conflict_exit_code: b.conflict_exit_code,
        verbose: b.verbose,
        path,
        command,
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
        assert!(run(&["--embedded", "/l", "--", "x"]).embedded);
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
}
