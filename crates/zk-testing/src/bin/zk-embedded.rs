//! `zk-embedded`: runs the embedded ZooKeeper server as a standalone process.
//!
//! ```text
//! zk-embedded [--port PORT] [--tick-ms N] [--min-session-timeout-ms N]
//!             [--max-session-timeout-ms N] [--container-check-ms N]
//! ```
//!
//! Prints `listening on 127.0.0.1:PORT` on stdout once it serves, then runs until killed.
//! Logging goes through `env_logger` (`RUST_LOG=debug` for per-request detail).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use zk_testing::embedded::{EmbeddedServer, ServerConfig};

const USAGE: &str = "usage: zk-embedded [--port PORT] [--tick-ms N] [--min-session-timeout-ms N] \
[--max-session-timeout-ms N] [--container-check-ms N]

Runs an in-process ZooKeeper 3.8-compatible server on 127.0.0.1 until killed.

  --port PORT                  TCP port (default 0: pick a free one)
  --tick-ms N                  session expiry bucket, ms (default 50)
  --min-session-timeout-ms N   smallest negotiated session timeout, ms (default 1000)
  --max-session-timeout-ms N   largest negotiated session timeout, ms (default 60000)
  --container-check-ms N       container / TTL sweep interval, ms (default 100)
  -h, --help                   print this help";

/// Parses the command line into a config; `Ok(None)` means `--help`.
fn parse(args: &[String]) -> Result<Option<ServerConfig>, String> {
    let mut config = ServerConfig::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if matches!(name, "-h" | "--help") {
            return Ok(None);
        }
        if !matches!(
            name,
            "--port" | "--tick-ms" | "--min-session-timeout-ms" | "--max-session-timeout-ms" | "--container-check-ms"
        ) {
            return Err(format!("unknown argument {arg:?}"));
        }
        let value = match inline {
            Some(v) => v,
            None => it.next().cloned().ok_or_else(|| format!("{name} needs a value"))?,
        };
        let ms = || -> Result<Duration, String> {
            value
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("{name}: not a number of milliseconds: {value:?}"))
        };
        match name {
            "--port" => config.port = value.parse().map_err(|_| format!("--port: not a port: {value:?}"))?,
            "--tick-ms" => config.tick = ms()?,
            "--min-session-timeout-ms" => config.min_session_timeout = ms()?,
            "--max-session-timeout-ms" => config.max_session_timeout = ms()?,
            "--container-check-ms" => config.container_check_interval = ms()?,
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if config.tick.is_zero() {
        return Err("--tick-ms must be positive".into());
    }
    if config.min_session_timeout > config.max_session_timeout {
        return Err("--min-session-timeout-ms is larger than --max-session-timeout-ms".into());
    }
    Ok(Some(config))
}

fn main() -> ExitCode {
    env_logger::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(Some(c)) => c,
        Ok(None) => {
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "zk-embedded: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = match EmbeddedServer::start(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zk-embedded: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on {}", server.connect_string());
    let _ = out.flush();
    drop(out);
    loop {
        std::thread::park();
    }
}
