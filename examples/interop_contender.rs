//! One lock contender of this crate, for the foreign-client interop proof
//! (`scripts/foreign-clients.sh`). It logs its critical sections in the format of
//! `scripts/interop/CuratorMutexContender.java`, so that
//! `scripts/interop/check_overlap.py` can check Rust, Java and Python contenders
//! together.
//!
//! ```text
//! interop_contender CONNECT KIND PATHS NAME ITERATIONS HOLD_MS LOG_FILES
//!   KIND       mutex | semaphore | read | write | multi
//!   PATHS      the lock path; for multi, a comma-separated list (a MultiLock of
//!              InterProcessMutexes, taken in canonical order whatever the order given)
//!   LOG_FILES  a comma-separated list: every line goes to each file
//! ```
//!
//! Each iteration acquires (at most 120 s), appends `NAME START <epoch nanos>`,
//! holds for HOLD_MS, appends `NAME END <epoch nanos>` and releases. Each line is
//! one `write(2)` on an `O_APPEND` descriptor, so processes can share a file.
//!
//! With `CONTENDER_LOG_NODE=1`, for `mutex` and `semaphore` the START line also
//! names the sequential node the grant was made to and the czxid of its parent
//! (`NAME START <epoch nanos> <node path> <queue id>`), so that
//! `check_overlap.py --fifo` can check that grants follow the queue order across
//! languages: for the mutex, the guard's lock node; for the semaphore mutex, its
//! lease node (`PATH/leases/...`): the first of `participant_nodes()`, checked to
//! be ours by its czxid, which is the guard's fencing token. (The parent is a
//! container: the server deletes it when empty, and a re-created parent numbers
//! its children from 0 again.)
//!
//! Start barrier (optional): with `CONTENDER_READY_DIR` and `CONTENDER_GO_FILE`
//! set, the contender creates `READY_DIR/NAME` once connected and waits for the
//! go file before contending.
//!
//! Exit status: 0 on success, 1 on any error, 2 on bad arguments.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{
    InterProcessMutex, InterProcessMutexGuard, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreMutexGuard, MultiLock,
};

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(120);
const BARRIER_TIMEOUT: Duration = Duration::from_secs(120);

type BoxError = Box<dyn std::error::Error>;

struct Args {
    connect: String,
    kind: String,
    paths: Vec<String>,
    name: String,
    iterations: u32,
    hold: Duration,
    logs: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 7 {
        return Err(format!("expected 7 arguments, got {}", a.len()));
    }
    let kind = a[1].clone();
    if !["mutex", "semaphore", "read", "write", "multi"].contains(&kind.as_str()) {
        return Err(format!(
            "lock kind must be mutex, semaphore, read, write or multi, got {kind}"
        ));
    }
    let paths: Vec<String> = a[2].split(',').filter(|p| !p.is_empty()).map(str::to_string).collect();
    if paths.is_empty() || (kind != "multi" && paths.len() != 1) {
        return Err(format!(
            "{kind} takes {} path(s), got {:?}",
            if kind == "multi" { "1+" } else { "1" },
            a[2]
        ));
    }
    let iterations = a[4].parse().map_err(|e| format!("ITERATIONS {:?}: {e}", a[4]))?;
    let hold = Duration::from_millis(a[5].parse().map_err(|e| format!("HOLD_MS {:?}: {e}", a[5]))?);
    let logs: Vec<String> = a[6].split(',').filter(|p| !p.is_empty()).map(str::to_string).collect();
    if logs.is_empty() {
        return Err("no log file".into());
    }
    Ok(Args {
        connect: a[0].clone(),
        kind,
        paths,
        name: a[3].clone(),
        iterations,
        hold,
        logs,
    })
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn append(logs: &mut [File], line: &str) -> std::io::Result<()> {
    let bytes = format!("{line}\n");
    for f in logs.iter_mut() {
        // One write(2) per line: File is unbuffered.
        f.write_all(bytes.as_bytes())?;
    }
    Ok(())
}

fn barrier(name: &str) -> Result<(), BoxError> {
    let (Ok(ready), Ok(go)) = (std::env::var("CONTENDER_READY_DIR"), std::env::var("CONTENDER_GO_FILE")) else {
        return Ok(());
    };
    if ready.is_empty() || go.is_empty() {
        return Ok(());
    }
    std::fs::write(Path::new(&ready).join(name), b"")?;
    let deadline = Instant::now() + BARRIER_TIMEOUT;
    while !Path::new(&go).exists() {
        if Instant::now() > deadline {
            return Err(format!("{name}: no go signal within {BARRIER_TIMEOUT:?}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Runs the critical sections; `acquire` returns a guard (released on drop)
/// or `None` on timeout; `node` names the lock node of the grant and the czxid of
/// its parent, if there is one to name.
fn contend<G>(
    args: &Args,
    logs: &mut [File],
    mut acquire: impl FnMut() -> zk_recipes::Result<Option<G>>,
    node: impl Fn(&G) -> Result<Option<(String, i64)>, BoxError>,
) -> Result<(), BoxError> {
    let log_node = std::env::var("CONTENDER_LOG_NODE").is_ok_and(|v| v == "1");
    for i in 0..args.iterations {
        let guard = acquire()?
            .ok_or_else(|| format!("{}: iteration {i}: not acquired within {ACQUIRE_TIMEOUT:?}", args.name))?;
        let line = match if log_node { node(&guard)? } else { None } {
            Some((node, queue)) => format!("{} START {} {node} {queue}", args.name, now_nanos()),
            None => format!("{} START {}", args.name, now_nanos()),
        };
        append(logs, &line)?;
        std::thread::sleep(args.hold);
        append(logs, &format!("{} END {}", args.name, now_nanos()))?;
        drop(guard);
    }
    Ok(())
}

type NodeAndQueue = Option<(String, i64)>;

fn no_node<G>(_: &G) -> Result<NodeAndQueue, BoxError> {
    Ok(None)
}

/// `node` and the czxid of its parent (which cannot go while `node` exists).
fn with_queue(client: &CuratorFramework, node: String) -> Result<NodeAndQueue, BoxError> {
    let parent = match node.rfind('/') {
        Some(0) => "/",
        Some(i) => &node[..i],
        None => return Err(format!("not an absolute path: {node}").into()),
    };
    let stat = client
        .check_exists(parent)?
        .ok_or_else(|| format!("the parent of our lock node {node} does not exist"))?;
    Ok(Some((node, stat.czxid)))
}

fn mutex_node(client: &CuratorFramework, guard: &InterProcessMutexGuard<'_>) -> Result<NodeAndQueue, BoxError> {
    let node = guard.lock_path();
    if node.is_empty() {
        return Err("the mutex guard names no lock node".into());
    }
    with_queue(client, node)
}

/// The semaphore mutex's lease node. The guard does not expose it: it is the first
/// lease in sequence order (with one lease, any other lease node was created later,
/// by the next waiter), checked to be ours by its czxid (our fencing token).
fn lease_node(
    client: &CuratorFramework,
    lock: &InterProcessSemaphoreMutex,
    guard: &InterProcessSemaphoreMutexGuard<'_>,
) -> Result<NodeAndQueue, BoxError> {
    let leases = lock.participant_nodes()?;
    let first = leases
        .first()
        .ok_or("no lease node while holding the semaphore mutex")?;
    // The participant carries the node's czxid (its fencing token).
    if first.fencing_token != guard.fencing_token() {
        let nodes: Vec<&str> = leases.iter().map(|p| p.node.as_str()).collect();
        return Err(format!(
            "the first lease node {first} (czxid {:#x}) is not ours (fencing token {:#x}); leases: {nodes:?}",
            first.fencing_token,
            guard.fencing_token()
        )
        .into());
    }
    with_queue(client, first.node.clone())
}

fn run(args: &Args) -> Result<(), BoxError> {
    let mut logs = args
        .logs
        .iter()
        .map(|p| OpenOptions::new().create(true).append(true).open(p))
        .collect::<std::io::Result<Vec<File>>>()?;
    let client = CuratorFramework::builder()
        .connect_string(args.connect.as_str())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()?;
    let result = (|| -> Result<(), BoxError> {
        client
            .block_until_connected(Duration::from_secs(30))
            .map_err(|e| format!("{}: could not connect to {}: {e}", args.name, args.connect))?;
        let path = args.paths[0].as_str();
        match args.kind.as_str() {
            "mutex" => {
                let lock = InterProcessMutex::new(&client, path)?;
                barrier(&args.name)?;
                contend(
                    args,
                    &mut logs,
                    || lock.try_acquire_for(ACQUIRE_TIMEOUT),
                    |g| mutex_node(&client, g),
                )
            }
            "semaphore" => {
                let lock = InterProcessSemaphoreMutex::new(&client, path)?;
                barrier(&args.name)?;
                contend(
                    args,
                    &mut logs,
                    || lock.try_acquire_for(ACQUIRE_TIMEOUT),
                    |g| lease_node(&client, &lock, g),
                )
            }
            "read" => {
                let lock = InterProcessReadWriteLock::new(&client, path)?;
                barrier(&args.name)?;
                contend(
                    args,
                    &mut logs,
                    || lock.read_lock().try_acquire_for(ACQUIRE_TIMEOUT),
                    no_node,
                )
            }
            "write" => {
                let lock = InterProcessReadWriteLock::new(&client, path)?;
                barrier(&args.name)?;
                contend(
                    args,
                    &mut logs,
                    || lock.write_lock().try_acquire_for(ACQUIRE_TIMEOUT),
                    no_node,
                )
            }
            _ => {
                let paths: Vec<&str> = args.paths.iter().map(String::as_str).collect();
                let lock = MultiLock::from_paths(&client, &paths)?;
                barrier(&args.name)?;
                contend(args, &mut logs, || lock.try_acquire_for(ACQUIRE_TIMEOUT), no_node)
            }
        }
    })();
    client.close();
    result
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("usage: interop_contender CONNECT mutex|semaphore|read|write|multi PATH[,PATH...] NAME ITERATIONS HOLD_MS LOG_FILE[,LOG_FILE...]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("{}: {e}", args.name);
        std::process::exit(1);
    }
}
