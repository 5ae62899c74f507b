//! `zk-campaign`: a Jepsen-style fault campaign for the lock recipes.
//!
//! ```text
//! zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
//!             [--session-ms N] [--apache | --ensemble | --reconfigurable [--servers N]
//!             [--tracker-delay-ms N] [--no-ensemble-tracker]] [--dir DIR] [--hold-ms N]
//!             [--long-hold-permille N] [--long-lead-permille N] [--think-ms N] [--acquire-timeout-ms N]
//!             [--short-timeout-percent N] [--overshoot-margin-ms N] [--max-overshoot-ms N]
//!             [--faults all|partitions|composed|KIND,...] [--min-partition-faults N]
//!             [--min-each N] [--max-seconds N] [--cache] [--counter] [--registration]
//! zk-campaign --check DIR [--connect HOST:PORT] [--overshoot-margin-ms N] [--max-overshoot-ms N]
//! zk-campaign --leaks HOST:PORT [--root /campaign] [--leak-wait-ms N]
//! ```
//!
//! A coordinator starts a server (the embedded one by default, listening on
//! 127.0.0.1; `--apache` for a standalone Apache ZooKeeper; `--ensemble` for a
//! 3-node Apache ensemble), one [`FaultProxy`](zk_testing::proxy::FaultProxy) per worker (per server node),
//! and at least four worker processes (this binary again, `--worker`). Each
//! worker has one `CuratorFramework` session and several threads that take, at
//! random, an `InterProcessMutex` (`/campaign/mutex`), the read or the write half
//! of an `InterProcessReadWriteLock` (`/campaign/rw`), an
//! `InterProcessSemaphoreMutex` (`/campaign/sem`), or a `MultiLock` over all
//! three (a mutex on `/campaign/mutex`, a semaphore mutex on `/campaign/sem` and
//! the write half on `/campaign/rw`), so every lock kind contends with the
//! others on the same nodes; or leadership of a `LeaderLatch` election
//! (`/campaign/election`, a new latch per turn, either suspension policy),
//! whose section runs from "certainly leader" to the close or the first sign
//! that it may not lead, with the term as its fencing token: the checker then
//! finds two certain leaders at once, a term out of order, an unreported loss
//! or a leaked latch node like any lock's.
//!
//! Meanwhile the coordinator injects faults, chosen by a seeded PRNG (the seed is
//! printed): every kind once in a shuffled first round, then at random.
//!
//! | kind | what |
//! |---|---|
//! | `partition-expire` | one worker's proxy frozen for 1.5 × the session timeout: its session expires the realistic way |
//! | `instant-expire` | the server expires one worker session at once (embedded `expire_session`; Apache: closeSession from a second connection) |
//! | `cut` | one worker's proxy connections cut |
//! | `drop-all` | every client connection dropped (embedded `drop_connections`; Apache: every proxy cut) |
//! | `pause-short` / `pause-long` | the server paused for 0.3–0.7 × / 1.5 × the session timeout (Apache: SIGSTOP/SIGCONT; ensemble: the leader) |
//! | `restart` | the server stopped and restarted (standalone) |
//! | `kill-worker` | `kill -9` of a worker process; a replacement starts |
//! | `break-waiter` | a waiting node of the mutex or of the semaphore's internal mutex deleted by another client (as `zk-lock break --node`), atomically with a check that the queue's head is still there, so that it is never a holder's node: its owner must queue again, never be granted |
//! | `stop-leader`, `kill-leader`, `stop-follower`, `kill-follower` | ensemble only: SIGTERM / SIGKILL of a node, then a restart |
//! | `isolate-leader` | ensemble only: the leader cut off from both followers (its clients still reach it) for a sync limit plus 0.3-3 s |
//! | `isolate-follower` | the follower with the most worker sessions cut off from the others, as long |
//! | `oneway-from-leader`, `oneway-to-leader` | the bytes from (to) the leader to (from) one or both followers held, the other direction flowing |
//! | `flap-leader` | the links between the leader and one or both followers down 0.3-2.5 s, up 0.2-1.5 s, in turn, for a session timeout plus 0-2 s |
//! | `minority-client` | a worker that reaches only one node (its proxies to the others frozen), that node cut off from the others for a session timeout plus a sync limit plus 0.5-1.5 s: its session expires on the majority side |
//! | `pause-leader-sync` | the leader paused (SIGSTOP) past its sync limit, short of the session timeout |
//! | `pause-holder-minority` | as `minority-client`, the worker also paused (SIGSTOP); it resumes 1 s before the heal, still cut off: its `check()` must not say `Ok` |
//!
//! | `composed-partition-break-heal` | a holder's worker cut off; once told `Suspended`, every node of its session deleted by an operator; a rival granted; healed before its session expires, its re-registered watches held back 300-600 ms |
//! | `composed-partition-restart` | a holder's worker cut off; the server (ensemble: the leader) restarted while it is away, half the time with the break too; healed as above |
//! | `composed-pause-expire-resume` | a holder's worker stopped (SIGSTOP) until its session expired and a rival was granted; resumed (its proxies frozen half the time) |
//! | `composed-ensemble-partition-failover` | ensemble only: a holder on a follower; the follower cut off, the holder's connections cut, the break and a rival on the majority; the holder fails over before its session expires (watches held back) |
//! | `composed-break-during-handoff` | an operator break in a leader hand-off: the next leader's node deleted as the leader's goes, or the leader's node deleted while it leads and then the next one's |
//! | `composed-random` | two or three of the kinds above the composed ones at once, on their own threads and clocks, inside the first one's window; made only when every part was |
//! | `composed-rolling` | reconfigurable ensemble only: `rolling-replace` with one or two other plain kinds at once, started anywhere inside its window |
//!
//! `--reconfigurable` runs on a reconfigurable Apache ensemble
//! (`ReconfigurableEnsemble`, `--servers N`, 3 by default): `src/reconf.rs`
//! and `src/faults/rolling.rs`. Its own kind, `rolling-replace`, replaces
//! every member one by one, in a random order, by a new server on new
//! ports (a JVM started, added by `reconfig`, the old member removed by
//! `reconfig` and stopped); its node kinds stop, kill, restart and pause the
//! member that leads or follows *now*, by server id. The workers connect
//! straight to the members (no fault proxies: a client that follows the
//! configuration leaves any proxy at its first read), with
//! `ensemble_tracker(true)` and a `--tracker-delay-ms` delay (300 ms); so the
//! kinds that need a proxy (`partition-expire`, `cut`, `drop-all`, the
//! partitions, the composed partitions) are not made there. At the end, the
//! coordinator reads the final configuration and every worker logs where
//! its client is (`EW`): the checker's E1 wants each connected to a final
//! member, with no removed server in its server list (`--no-ensemble-tracker`
//! shows it failing).
//!
//! The composed kinds (`--faults composed`; not in `all`) are described in
//! `docs/campaign.md` and `src/faults/composed.rs`: each picks a holder from
//! the workers' logs, checks every step, and is logged as not injected when a
//! step did not happen; `--min-each N` keeps a run going until every kind
//! happened N times (`--max-seconds` caps it). A holder told it may have lost
//! its lock keeps watching it and logs every claim it is given afterwards
//! (`Reconnected`, `Leader { term }`, `Ok`, `Held`); the checker judges each
//! against every other holder and the order of tokens and terms.
//!
//! `--cache` (the `ci` and `composed-ci` profiles) adds the cache kind: each
//! worker also runs a `CuratorCache` on `/campaign-cache`, logging every event,
//! and a writer thread that creates, sets, deletes and re-creates nodes there;
//! after the run the writers stop first, the coordinator reads the server's
//! final subtree, and each cache dumps its final view once current. The
//! checker's cache rules (C1-C5, `checker/cache.rs`, `docs/campaign.md`)
//! judge the events against the writers' log and the server.
//!
//! `--counter` (the same profiles) adds the counter kind: every worker also
//! increments one `DistributedAtomicLong` (`/campaign-counter/value`), logging
//! each outcome and its proof; the checker's rules K1-K3 (`checker/counter.rs`)
//! account for every value up to the final one. `--registration` adds the
//! registration kind: every worker keeps an ephemeral `PersistentNode` under
//! `/campaign-reg` (a new one every 2-6 s) and logs its registration events;
//! the coordinator's observer caches them on a client of its own; rules R1-R4
//! (`checker/registration.rs`) and a leak check on `/campaign-reg`.
//!
//! The ensemble is partitionable (`ApacheCluster::start_partitionable`): see
//! `docs/partitions.md`. `--faults partitions` injects the partition kinds only;
//! with every kind, a partition is picked three times in five after the first
//! round. A run lasts at least until every kind happened once (at most twice
//! `--seconds`); with `--acquisitions`, `--min-partition-faults N` keeps it going
//! until N partition faults too. Holders call `check()` at grant and every 5 ms
//! and stop at its first error; each exclusive section writes once into its
//! lock's resource (`/campaign-resource/...`) through a transaction guarded by
//! the lock, and the coordinator reads the resources back after the run.
//!
//! Every acquire is a timed `try_acquire_for`: most with `--acquire-timeout-ms`,
//! `--short-timeout-percent` of them with a short one (a fifth of those zero,
//! the rest 10-2000 ms), so that every lock kind reaches its deadline under
//! every fault kind. Workers log every acquire attempt (start, timeout,
//! outcome, error kind, wait) and every critical section (lock, mode, fencing
//! token, session, wall-clock start and end, the first `Suspended`/`Lost` heard
//! on the guard's loss receiver, the guard's status at grant and at the end,
//! release outcome) to their own file, one `write` per line. Every lock kind
//! hands out the same guard, so all of this comes from the guard; a
//! multi-lock's guard gives its worst member's status, every member's events on
//! one receiver, and each member's node and token (one `S`/`E` line each). At the
//! end the coordinator runs the checker on those logs and lists the lock tree
//! through a fresh client; it prints acquisitions by kind, faults by kind
//! (and those not made, by kind and reason), violations, leaked nodes and the
//! longest wait, and a `verdict:` line that says who fell short, as the exit
//! status does: 0 clean; 1 the library (a violation or a leaked node); 3 the
//! campaign (a fault kind not made as often as planned within the run's cap,
//! a read-back or the leak check not done; no rule broken); 2 a usage or
//! set-up error. `--check DIR` runs the checker on saved logs, with the same
//! statuses.
//!
//! The parts of a composed fault keep their own clocks: each runs on its own
//! thread, and undoes what it did (a stopped worker resumed, a cut healed, a
//! paused node resumed) at its own planned time, whatever another part waits
//! for. The ensemble's links are cut through a book in which each part holds
//! its own directions; a node restart waits until no link is cut (it could
//! not join before), and nothing else holds the ensemble's handle while it
//! waits (`src/server.rs`).
//!
//! The log format is described in [`zk_campaign::history`], the checker's
//! rules in [`zk_campaign::checker`]. Timed acquires that return later than
//! their deadline plus a margin (`--overshoot-margin-ms`, default 50 ms times
//! `ZK_TEST_TIMING`) are reported per fault kind; `--max-overshoot-ms` makes an
//! overshoot beyond it a violation.
//!
//! `ZK_CAMPAIGN_WORKER_STDERR` (any value) sends each worker's standard
//! error to `worker-SLOT-GEN.err` in the run's directory instead of the
//! coordinator's: with `RUST_LOG`, each worker's library log on its own
//! (e.g. `RUST_LOG=zk_framework::framework::ensemble=debug` for the
//! ensemble tracker's reads and moves).

mod cachekind;
mod check;
mod cli;
mod coordinator;
mod counterkind;
mod faults;
mod fleet;
mod holds;
mod leaks;
mod partkind;
mod paths;
mod prng;
mod reconf;
mod record;
mod regkind;
mod resource;
mod server;
mod worker;

use std::process::ExitCode;
use std::time::Duration;

use clap::CommandFactory;

use crate::check::check_main;
use crate::cli::{Cli, Mode, Opts, USAGE};
use crate::coordinator::coordinator_main;
use crate::leaks::{check_leaks, print_leaks};
use crate::worker::worker_main;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match Opts::parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{}", Cli::command().render_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zk-campaign: {e}\nusage: {USAGE}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = env_logger::try_init();
    }
    match opts.mode.clone() {
        Mode::Worker => worker_main(&opts),
        Mode::Run => coordinator_main(&opts),
        Mode::Check(dir) => check_main(&dir, opts.connect.as_deref(), &opts),
        Mode::Leaks(cs) => {
            let wait = Duration::from_millis(opts.leak_wait_ms.unwrap_or(10_000));
            match check_leaks(&cs, &opts.root, wait) {
                Ok(leaks) => {
                    print_leaks(&leaks);
                    if leaks.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("zk-campaign: leak check failed: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
