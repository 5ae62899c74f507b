//! `zk-reconfig-ensemble`: a reconfigurable Apache ZooKeeper ensemble
//! ([`ReconfigurableEnsemble`]) driven by commands on stdin, for scripts
//! (`scripts/reconfig-interop.sh`).
//!
//! ```text
//! zk-reconfig-ensemble [--servers N]
//! ```
//!
//! Starts N servers (default 3) on 127.0.0.1 and prints one line per event on
//! stdout (times: microseconds since the epoch; `members=` the member ids,
//! `connect=` their client addresses, `version=` the configuration's version
//! in hex):
//!
//! ```text
//! READY <us> version=<v> members=<ids> connect=<addrs>
//! REPLACING <us> <old> leader=<id|->         (a `replace` begins)
//! ADDED <us> <new> version=.. members=.. connect=..    (the new server is a member)
//! REMOVING <us> <old>                         (the reconfig removing <old> is sent now)
//! REPLACED <us> <old> <new> version=.. members=.. connect=..
//!                                             (<old> removed and stopped, a quorum again)
//! MEMBERS <us> version=.. members=.. connect=.. leader=<id|->
//! ERROR <us> <message>
//! BYE <us>
//! ```
//!
//! Commands, one per line: `replace <id>` (a new server on new ports, then
//! the old one removed and stopped), `members`, `quit`. End of input is a
//! `quit`: the ensemble is dropped (every JVM killed, its directory removed
//! unless `ZK_TEST_KEEP_DIRS` is set) and the program exits 0. A command that
//! fails prints `ERROR` and the program goes on reading. Exit status 1 when
//! the ensemble cannot start, 2 on bad arguments. The JVMs are children of
//! this process, in its process group (a `timeout` around it reaches them).
//! Logging: `env_logger` on stderr.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use zk_testing::apache::{ApacheConfig, ReconfigurableEnsemble};

const USAGE: &str = "usage: zk-reconfig-ensemble [--servers N]

Starts a reconfigurable Apache ZooKeeper ensemble of N servers (default 3) on
127.0.0.1, then reads commands on stdin, one per line:

  replace ID   add a new server on new ports, then remove server ID
  members      print the current configuration
  quit         stop every server and exit (end of input does the same)

Events are printed on stdout (READY, REPLACING, ADDED, REMOVING, REPLACED,
MEMBERS, ERROR, BYE), each with microseconds since the epoch.";

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// Parses the command line: the number of servers; `Ok(None)` means `--help`.
fn parse(args: &[String]) -> Result<Option<usize>, String> {
    let mut servers = 3;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--servers" => {
                let v = it.next().ok_or("--servers needs a value")?;
                servers = v.parse().map_err(|_| format!("--servers: not a number: {v:?}"))?;
            }
            _ => match arg.strip_prefix("--servers=") {
                Some(v) => servers = v.parse().map_err(|_| format!("--servers: not a number: {v:?}"))?,
                None => return Err(format!("unknown argument {arg:?}")),
            },
        }
    }
    if servers == 0 {
        return Err("--servers must be at least 1".into());
    }
    Ok(Some(servers))
}

/// Prints one event line and flushes it (a script waits for it).
fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn describe(e: &ReconfigurableEnsemble) -> String {
    let ids: Vec<String> = e.members().iter().map(ToString::to_string).collect();
    format!(
        "version={:#x} members={} connect={}",
        e.config().version(),
        ids.join(","),
        e.connect_string()
    )
}

fn leader(e: &ReconfigurableEnsemble) -> String {
    e.leader().map_or_else(|| "-".to_string(), |id| id.to_string())
}

/// `replace old`: as [`ReconfigurableEnsemble::replace_server`], with an event at each step.
fn replace(e: &mut ReconfigurableEnsemble, old: u64) -> std::io::Result<()> {
    if !e.members().contains(&old) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("server {old} is not a member (members: {:?})", e.members()),
        ));
    }
    emit(&format!("REPLACING {} {old} leader={}", now_us(), leader(e)));
    let new = e.add_server()?;
    emit(&format!("ADDED {} {new} {}", now_us(), describe(e)));
    emit(&format!("REMOVING {} {old}", now_us()));
    e.remove_server(old)?;
    emit(&format!("REPLACED {} {old} {new} {}", now_us(), describe(e)));
    Ok(())
}

fn main() -> ExitCode {
    env_logger::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let servers = match parse(&args) {
        Ok(Some(n)) => n,
        Ok(None) => {
            emit(USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zk-reconfig-ensemble: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut ensemble = match ReconfigurableEnsemble::start(servers, ApacheConfig::default()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("zk-reconfig-ensemble: cannot start {servers} servers: {e}");
            return ExitCode::FAILURE;
        }
    };
    emit(&format!("READY {} {}", now_us(), describe(&ensemble)));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["quit"] => break,
            ["members"] => emit(&format!(
                "MEMBERS {} {} leader={}",
                now_us(),
                describe(&ensemble),
                leader(&ensemble)
            )),
            ["replace", id] => match id.parse::<u64>() {
                Ok(old) => {
                    if let Err(e) = replace(&mut ensemble, old) {
                        emit(&format!("ERROR {} replace {old}: {e}", now_us()));
                    }
                }
                Err(_) => emit(&format!("ERROR {} replace: not a server id: {id:?}", now_us())),
            },
            _ => emit(&format!("ERROR {} unknown command {line:?}", now_us())),
        }
    }
    drop(ensemble);
    emit(&format!("BYE {}", now_us()));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parses_the_number_of_servers() {
        assert_eq!(parse(&args(&[])), Ok(Some(3)));
        assert_eq!(parse(&args(&["--servers", "5"])), Ok(Some(5)));
        assert_eq!(parse(&args(&["--servers=5"])), Ok(Some(5)));
        assert_eq!(parse(&args(&["--help"])), Ok(None));
        assert!(parse(&args(&["--servers", "0"])).is_err());
        assert!(parse(&args(&["--servers"])).is_err());
        assert!(parse(&args(&["--servers", "x"])).is_err());
        assert!(parse(&args(&["--port", "1"])).is_err());
    }
}
