//! `zk-campaign`: a Jepsen-style fault campaign for the lock recipes.
//!
//! ```text
//! zk-campaign [--seconds N] [--acquisitions N] [--seed N] [--workers N] [--threads N]
//!             [--session-ms N] [--apache | --ensemble] [--dir DIR] [--hold-ms N]
//!             [--long-hold-permille N] [--think-ms N] [--acquire-timeout-ms N]
//!             [--short-timeout-percent N] [--overshoot-margin-ms N] [--max-overshoot-ms N]
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
//! others on the same nodes.
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
//! through a fresh client; it prints acquisitions by kind, faults by kind,
//! violations, leaked nodes and the longest wait, and exits with 1 on any
//! violation or leak (3 when a fault kind never happened, 2 on a usage or
//! set-up error). `--check DIR` runs the checker on saved logs.
//!
//! The log format is described in [`zk_campaign::history`], the checker's
//! rules in [`zk_campaign::checker`]. Timed acquires that return later than
//! their deadline plus a margin (`--overshoot-margin-ms`, default 50 ms times
//! `ZK_TEST_TIMING`) are reported per fault kind; `--max-overshoot-ms` makes an
//! overshoot beyond it a violation.

mod check;
mod cli;
mod coordinator;
mod faults;
mod fleet;
mod leaks;
mod paths;
mod prng;
mod record;
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
