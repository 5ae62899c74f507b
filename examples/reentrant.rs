//! Reentrancy: the thread holding an `InterProcessMutex` may acquire it again
//! (nested calls that each take the lock) without any server request; each
//! level needs its own release, and another thread waits until the outermost
//! one.
//!
//! ```text
//! cargo run --example reentrant                       # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example reentrant
//! ```
//!
//! Exits 0 when everything shown happened, 1 otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_framework::proto::OpCode;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::InterProcessMutex;
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const LOCK: &str = "/examples/reentrant/account-7";

/// An embedded ZooKeeper unless ZK_CONNECT names a real one.
fn server() -> Result<(Option<TestingServer>, String), BoxError> {
    match std::env::var("ZK_CONNECT") {
        Ok(cs) => Ok((None, cs)),
        Err(_) => {
            let s = TestingServer::start_backend(Backend::Embedded)?;
            let cs = s.connect_string();
            Ok((Some(s), cs))
        }
    }
}

/// Requests the embedded server received, pings excluded (`None` on a real server).
fn requests(server: &Option<TestingServer>) -> Option<u64> {
    let stats = server.as_ref()?.embedded()?.stats();
    Some(
        stats
            .requests
            .iter()
            .filter(|(op, _)| **op != OpCode::Ping)
            .map(|(_, n)| *n)
            .sum(),
    )
}

/// A helper that needs the lock, called by code that already holds it.
fn audit(lock: &InterProcessMutex, depth: u32) -> zk_recipes::Result<()> {
    let _level = lock.acquire()?; // reentrant: no server request
    println!(
        "{:indent$}audit level {depth}: hold count {}",
        "",
        lock.hold_count(),
        indent = depth as usize * 2
    );
    if depth < 3 {
        audit(lock, depth + 1)?;
    }
    Ok(()) // this level is released here
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let (server, connect) = server()?;
    println!("ZooKeeper at {connect}; lock {LOCK}\n");
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.block_until_connected(Duration::from_secs(10))?;
    let lock = InterProcessMutex::new(&client, LOCK)?;
    let mut failures = Vec::new();

    // 1. The outermost acquire creates the lock node.
    let outer = lock.acquire()?;
    println!(
        "main thread: acquired {} (fencing token {}), hold count {}",
        outer.lock_path(),
        outer.fencing_token(),
        lock.hold_count()
    );

    // 2. Nested acquires by the same thread: counted locally, no request.
    let before = requests(&server);
    let t = Instant::now();
    audit(&lock, 2)?;
    let nested_time = t.elapsed();
    let after = requests(&server);
    println!(
        "main thread: nested acquires and releases took {nested_time:?}; hold count back to {}",
        lock.hold_count()
    );
    match (before, after) {
        (Some(b), Some(a)) if a == b => {
            println!("server request counter: {b} before, {a} after: the nested acquires sent nothing")
        }
        (Some(b), Some(a)) => failures.push(format!("nested acquires sent {} requests", a - b)),
        _ => println!("server request counter: only the embedded server has one (skipped)"),
    }
    if lock.hold_count() != 1 {
        failures.push(format!("hold count {} after the nested releases", lock.hold_count()));
    }

    // A second instance on the same path is another owner, even on this thread.
    let other_instance = InterProcessMutex::new(&client, LOCK)?;
    match other_instance.try_acquire_for(Duration::ZERO)? {
        None => println!(
            "a second InterProcessMutex instance on this thread: refused (ownership is per instance and thread)"
        ),
        Some(_) => failures.push("a second instance got the lock".into()),
    }

    // 3. Another thread waits until the outermost release.
    let got_it = AtomicBool::new(false);
    let acquired_at: Mutex<Option<Instant>> = Mutex::new(None);
    let released_at = std::thread::scope(|s| -> Result<Instant, BoxError> {
        let waiter = s.spawn(|| -> zk_recipes::Result<()> {
            println!("worker thread: waiting for the lock");
            let g = lock.acquire()?;
            *acquired_at.lock().unwrap() = Some(Instant::now());
            got_it.store(true, Ordering::SeqCst);
            println!("worker thread: acquired (fencing token {})", g.fencing_token());
            Ok(())
        });
        // Wait until the worker is queued behind us (its node exists).
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock.participant_nodes()?.len() < 2 {
            if Instant::now() > deadline {
                return Err("the worker never queued".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let inner = lock.acquire()?;
        println!(
            "main thread: acquired again (hold count {}), releasing that level",
            lock.hold_count()
        );
        drop(inner);
        std::thread::sleep(Duration::from_millis(300));
        if got_it.load(Ordering::SeqCst) {
            return Err("the worker got the lock before the outermost release".into());
        }
        println!(
            "main thread: hold count {}; 300 ms later the worker still waits",
            lock.hold_count()
        );
        println!("main thread: outermost release");
        let released_at = Instant::now();
        outer.release()?;
        waiter.join().map_err(|_| "the worker panicked")??;
        Ok(released_at)
    })?;
    match *acquired_at.lock().unwrap() {
        Some(at) if at >= released_at => {
            println!(
                "worker thread got the lock {:?} after the outermost release",
                at - released_at
            )
        }
        _ => failures.push("the worker did not wait for the outermost release".into()),
    }

    client.close();
    if failures.is_empty() {
        println!("\nOK: nested acquires were local, and the lock passed on only at the outermost release.");
        Ok(())
    } else {
        for f in &failures {
            println!("FAILED: {f}");
        }
        Err("reentrancy did not behave as shown".into())
    }
}
