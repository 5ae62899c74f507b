//! The command line: clap's [`Cli`] and the [`Opts`] the rest of the program uses.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use zk_campaign::checker::CheckOptions;

use crate::paths::ROOT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackendKind {
    Embedded,
    Apache,
    Ensemble,
    /// An Apache ensemble that `reconfig` changes (`--reconfigurable`): its
    /// servers are replaced on new ports by the `rolling-replace` kind, and
    /// the workers' clients follow `/zookeeper/config`.
    Reconfigurable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    Run,
    Worker,
    Check(PathBuf),
    Leaks(String),
}

pub(crate) const USAGE: &str = "\
zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
                   [--session-ms N] [--apache | --ensemble | --reconfigurable [--servers N]
                   [--tracker-delay-ms N] [--no-ensemble-tracker]] [--dir DIR] [--hold-ms N]
                   [--long-hold-permille N] [--long-lead-permille N] [--think-ms N] [--acquire-timeout-ms N]
                   [--short-timeout-percent N] [--overshoot-margin-ms N] [--max-overshoot-ms N]
                   [--faults all|partitions|composed|KIND,...] [--min-partition-faults N]
                   [--min-each N] [--max-seconds N] [--cache] [--counter] [--registration]
                   [--partition]
       zk-campaign --check DIR [--connect HOST:PORT] [--overshoot-margin-ms N] [--max-overshoot-ms N]
       zk-campaign --leaks HOST:PORT [--root /campaign] [--leak-wait-ms N]";

/// The command line (clap); [`Opts`] is what the rest of the program uses.
#[derive(Debug, Parser)]
#[command(
    name = "zk-campaign",
    about = "A Jepsen-style fault campaign for the lock recipes (see scripts/campaign.sh)",
    override_usage = USAGE,
    args_override_self = true,
    disable_version_flag = true,
    after_help = "Exit status: 0 clean; 1 a violation or a leaked node; 3 a fault kind never \
                  happened; 2 a usage or set-up error."
)]
pub(crate) struct Cli {
    /// Run as a worker process (started by the coordinator).
    #[arg(long, hide = true, overrides_with_all = ["check", "leaks"])]
    worker: bool,
    /// Check the logs of a finished campaign in DIR.
    #[arg(long, value_name = "DIR", overrides_with_all = ["worker", "leaks"])]
    check: Option<PathBuf>,
    /// List the lock nodes left under --root on the server HOST:PORT.
    #[arg(long, value_name = "HOST:PORT", overrides_with_all = ["worker", "check"])]
    leaks: Option<String>,
    /// How long the load and the faults run [default: 75, or 3600 with --acquisitions].
    #[arg(long, value_name = "N")]
    seconds: Option<f64>,
    /// Stop after this many acquisitions.
    #[arg(long, value_name = "N")]
    acquisitions: Option<u64>,
    /// The fault schedule's seed [default: from the clock; printed].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Worker processes.
    #[arg(long, value_name = "N", default_value_t = 4)]
    workers: usize,
    /// Threads per worker.
    #[arg(long, value_name = "N", default_value_t = 5)]
    threads: usize,
    /// Session timeout [default: 3000 embedded, 4000 Apache, 6000 ensemble].
    #[arg(long, value_name = "N")]
    session_ms: Option<u64>,
    /// A standalone Apache ZooKeeper instead of the embedded server.
    #[arg(long, overrides_with = "ensemble")]
    apache: bool,
    /// A 3-node Apache ZooKeeper ensemble.
    #[arg(long, overrides_with_all = ["apache", "reconfigurable"])]
    ensemble: bool,
    /// An Apache ensemble that `reconfig` changes (reconfigEnabled): the
    /// `rolling-replace` kind replaces its servers on new ports, the workers
    /// connect straight to its members (no fault proxies) and follow
    /// /zookeeper/config (`ensemble_tracker`); at the end each must be
    /// connected to a member of the final configuration.
    #[arg(long, overrides_with_all = ["apache", "ensemble"])]
    reconfigurable: bool,
    /// With --reconfigurable: how many servers (3 to 7).
    #[arg(long, value_name = "N", default_value_t = 3)]
    servers: usize,
    /// With --reconfigurable: the longest random delay before a worker's
    /// client moves to a new configuration (`ensemble_tracker_delay`).
    #[arg(long, value_name = "N", default_value_t = 300)]
    tracker_delay_ms: u64,
    /// With --reconfigurable: the workers' clients do not follow the
    /// ensemble (a run that shows the end-of-run connection check failing).
    #[arg(long)]
    no_ensemble_tracker: bool,
    /// Worker: follow /zookeeper/config (`ensemble_tracker`).
    #[arg(long, hide = true)]
    track_ensemble: bool,
    /// Where the logs go [default: a new directory under the temp dir].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Longest ordinary hold.
    #[arg(long, value_name = "N", default_value_t = 15)]
    hold_ms: u64,
    /// Per mille of holds lasting 0.5-1.5 session timeouts.
    #[arg(long, value_name = "N", default_value_t = 5)]
    long_hold_permille: u64,
    /// Per mille of leaderships lasting 0.5-1.5 session timeouts [default:
    /// --long-hold-permille].
    #[arg(long, value_name = "N")]
    long_lead_permille: Option<u64>,
    /// Longest pause between attempts.
    #[arg(long, value_name = "N", default_value_t = 10)]
    think_ms: u64,
    /// The longest acquire timeout (every acquire is a timed `try_acquire_for`).
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    acquire_timeout_ms: u64,
    /// Percent of acquires with a short timeout instead (a fifth of them zero,
    /// the rest 10-2000 ms), so that deadlines are reached under every fault.
    #[arg(long, value_name = "N", default_value_t = 25)]
    short_timeout_percent: u64,
    /// A timed acquire returning later than its deadline plus this is "late" in
    /// the report [default: 50 x ZK_TEST_TIMING].
    #[arg(long, value_name = "N")]
    overshoot_margin_ms: Option<f64>,
    /// Make an acquire returning more than N ms after its deadline a violation
    /// [default: report overshoots only].
    #[arg(long, value_name = "N")]
    max_overshoot_ms: Option<f64>,
    /// The fault kinds to inject: `all` (the plain kinds), `partitions` (the
    /// ensemble's partition kinds only), `composed` (the composed kinds), or
    /// kinds separated by commas.
    #[arg(long, value_name = "LIST", default_value = "all")]
    faults: String,
    /// With --acquisitions: also keep going until this many partition faults
    /// happened (--ensemble).
    #[arg(long, value_name = "N", default_value_t = 0)]
    min_partition_faults: usize,
    /// Keep going until every fault kind happened at least N times (the
    /// checker reports a kind that happened fewer times as missing)
    /// [default: every kind tried once].
    #[arg(long, value_name = "N", default_value_t = 0)]
    min_each: usize,
    /// The longest a run may last while it waits for every kind to happen
    /// [default: twice --seconds].
    #[arg(long, value_name = "N")]
    max_seconds: Option<f64>,
    /// The cache kind: every worker also runs a `CuratorCache` on
    /// /campaign-cache and a writer thread that changes nodes there; the
    /// checker judges every cache's events and final view (docs/campaign.md).
    #[arg(long)]
    cache: bool,
    /// The counter kind: every worker also increments one
    /// `DistributedAtomicLong` (/campaign-counter/value), logging every
    /// outcome; the checker judges them against the final value.
    #[arg(long)]
    counter: bool,
    /// The registration kind: every worker also keeps an ephemeral
    /// `PersistentNode` under /campaign-reg (a new one every 2-6 s), logging
    /// its registration; an observer caches them on a client of its own.
    #[arg(long)]
    registration: bool,
    /// The partitioner kind: every worker also runs a `SetPartitioner` on
    /// /campaign/partition over 12 items, logging its events and a claim
    /// (the item's fencing token) before each use of an item it holds.
    #[arg(long)]
    partition: bool,
    /// Worker: its slot.
    #[arg(long, hide = true, value_name = "N", default_value_t = 0)]
    slot: usize,
    /// Worker: the server; --check: list leaks there too.
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Worker: its log file.
    #[arg(long, hide = true, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Worker: stop when this file exists.
    #[arg(long, hide = true, value_name = "FILE")]
    stop: Option<PathBuf>,
    /// --leaks: the subtree to list.
    #[arg(long, value_name = "PATH", default_value = ROOT)]
    root: String,
    /// --leaks, --check: how long to wait for expiring nodes to go [default: 10000].
    #[arg(long, value_name = "N")]
    leak_wait_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub(crate) mode: Mode,
    pub(crate) seconds: Option<f64>,
    pub(crate) acquisitions: Option<u64>,
    pub(crate) seed: Option<u64>,
    pub(crate) workers: usize,
    pub(crate) threads: usize,
    pub(crate) session_ms: Option<u64>,
    pub(crate) backend: BackendKind,
    /// `--servers`: the reconfigurable ensemble's size.
    pub(crate) servers: usize,
    /// `--tracker-delay-ms`.
    pub(crate) tracker_delay: Duration,
    /// Whether the workers' clients follow the ensemble: on a coordinator,
    /// `--reconfigurable` without `--no-ensemble-tracker`; on a worker,
    /// `--track-ensemble`.
    pub(crate) track_ensemble: bool,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) hold_ms: u64,
    pub(crate) long_hold_permille: u64,
    pub(crate) long_lead_permille: u64,
    pub(crate) think_ms: u64,
    pub(crate) acquire_timeout_ms: u64,
    pub(crate) short_timeout_percent: u64,
    pub(crate) check: CheckOptions,
    pub(crate) faults: String,
    pub(crate) min_partition_faults: usize,
    pub(crate) min_each: usize,
    pub(crate) max_seconds: Option<f64>,
    pub(crate) cache: bool,
    pub(crate) counter: bool,
    pub(crate) registration: bool,
    pub(crate) partition: bool,
    // worker role
    pub(crate) slot: usize,
    pub(crate) connect: Option<String>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) stop: Option<PathBuf>,
    // leaks
    pub(crate) root: String,
    pub(crate) leak_wait_ms: Option<u64>,
}

fn millis(name: &str, ms: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| format!("{name}: {ms} is not a number of milliseconds"))
}

impl Opts {
    /// Parses the arguments after the program name. `Ok(None)`: `--help`.
    pub(crate) fn parse(args: &[String]) -> Result<Option<Opts>, String> {
        let argv = std::iter::once("zk-campaign".to_string()).chain(args.iter().cloned());
        let c = match Cli::try_parse_from(argv) {
            Ok(c) => c,
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => return Ok(None),
            Err(e) => {
                let text = e.render().to_string();
                let line = text.lines().next().unwrap_or("invalid arguments");
                return Err(line.strip_prefix("error: ").unwrap_or(line).to_string());
            }
        };
        let mut check = CheckOptions::default();
        if let Some(ms) = c.overshoot_margin_ms {
            check.overshoot_margin = millis("--overshoot-margin-ms", ms)?;
        }
        if let Some(ms) = c.max_overshoot_ms {
            check.max_overshoot = Some(millis("--max-overshoot-ms", ms)?);
        }
        let mode = match (c.worker, c.check, c.leaks) {
            (true, _, _) => Mode::Worker,
            (_, Some(dir), _) => Mode::Check(dir),
            (_, _, Some(cs)) => Mode::Leaks(cs),
            _ => Mode::Run,
        };
        let o = Opts {
            mode,
            seconds: c.seconds,
            acquisitions: c.acquisitions,
            seed: c.seed,
            workers: c.workers,
            threads: c.threads,
            session_ms: c.session_ms,
            backend: if c.reconfigurable {
                BackendKind::Reconfigurable
            } else if c.ensemble {
                BackendKind::Ensemble
            } else if c.apache {
                BackendKind::Apache
            } else {
                BackendKind::Embedded
            },
            servers: c.servers,
            tracker_delay: Duration::from_millis(c.tracker_delay_ms),
            track_ensemble: c.track_ensemble || (c.reconfigurable && !c.no_ensemble_tracker),
            dir: c.dir,
            hold_ms: c.hold_ms,
            long_hold_permille: c.long_hold_permille,
            long_lead_permille: c.long_lead_permille.unwrap_or(c.long_hold_permille),
            think_ms: c.think_ms,
            acquire_timeout_ms: c.acquire_timeout_ms,
            short_timeout_percent: c.short_timeout_percent,
            check,
            faults: c.faults,
            min_partition_faults: c.min_partition_faults,
            min_each: c.min_each,
            max_seconds: c.max_seconds,
            cache: c.cache,
            counter: c.counter,
            registration: c.registration,
            partition: c.partition,
            slot: c.slot,
            connect: c.connect,
            log: c.log,
            stop: c.stop,
            root: c.root,
            leak_wait_ms: c.leak_wait_ms,
        };
        if o.mode == Mode::Run {
            if o.workers < 1 || o.threads < 1 {
                return Err("--workers and --threads must be at least 1".into());
            }
            if o.acquire_timeout_ms == 0 {
                return Err("--acquire-timeout-ms must be positive".into());
            }
            if o.short_timeout_percent > 100 {
                return Err("--short-timeout-percent must be at most 100".into());
            }
            if o.backend == BackendKind::Reconfigurable && !(3..=7).contains(&o.servers) {
                return Err("--servers must be 3 to 7".into());
            }
            for (name, v) in [("--seconds", o.seconds), ("--max-seconds", o.max_seconds)] {
                if v.is_some_and(|v| !(v.is_finite() && (0.0..=1e9).contains(&v))) {
                    return Err(format!("{name} must be a number of seconds"));
                }
            }
        }
        Ok(Some(o))
    }

    pub(crate) fn session(&self) -> Duration {
        Duration::from_millis(self.session_ms.unwrap_or(match self.backend {
            BackendKind::Embedded => 3000,
            BackendKind::Apache => 4000,
            BackendKind::Ensemble | BackendKind::Reconfigurable => 6000,
        }))
    }
}
