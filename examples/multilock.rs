//! `MultiLock`: several locks taken as one. Two services list the same two
//! locks in opposite orders and take them many times without deadlocking
//! (a `MultiLock` always takes its locks in one canonical order); then a
//! timeout while one lock is busy rolls back the lock already taken.
//!
//! ```text
//! cargo run --example multilock                       # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example multilock
//! ```
//!
//! Exits 0 when everything shown happened, 1 otherwise.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, MultiLock};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const A: &str = "/examples/multilock/account-a";
const B: &str = "/examples/multilock/account-b";
const ROUNDS: usize = 25;
/// Far longer than a round; hitting it would mean a deadlock.
const DEADLOCK_TIMEOUT: Duration = Duration::from_secs(10);

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

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    c.block_until_connected(Duration::from_secs(10))?;
    Ok(c)
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let (_server, cs) = server()?;
    println!("ZooKeeper at {cs}; locks {A} and {B}\n");

    // 1. Opposite orders, many rounds, no deadlock, never two holders.
    println!("1. two services, {ROUNDS} rounds each, the same locks listed in opposite orders");
    let inside = AtomicUsize::new(0);
    let overlaps = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| -> Result<(), BoxError> {
        let services = [("transfer a->b", [A, B]), ("transfer b->a", [B, A])];
        let handles: Vec<_> = services
            .into_iter()
            .map(|(name, paths)| {
                let (cs, inside, overlaps) = (&cs, &inside, &overlaps);
                s.spawn(move || -> Result<(), BoxError> {
                    let client = connect(cs)?;
                    let both = MultiLock::from_paths(&client, &paths)?;
                    println!("  {name}: lists {paths:?}, takes them in the order {:?}", both.order());
                    for round in 0..ROUNDS {
                        let guard = both
                            .try_acquire_for(DEADLOCK_TIMEOUT)?
                            .ok_or_else(|| format!("{name}: round {round} waited {DEADLOCK_TIMEOUT:?}: deadlock?"))?;
                        if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        std::thread::sleep(Duration::from_millis(5));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        guard.release()?;
                    }
                    client.close();
                    println!("  {name}: {ROUNDS} rounds done");
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a service panicked")??;
        }
        Ok(())
    })?;
    let overlaps = overlaps.load(Ordering::SeqCst);
    println!(
        "  {} rounds in {:.2}s, no deadlock; times both services held the pair at once: {overlaps}",
        2 * ROUNDS,
        t0.elapsed().as_secs_f64()
    );
    if overlaps > 0 {
        return Err("two services held the pair at once".into());
    }

    // 2. A timeout rolls back: another service holds b alone; taking [a, b]
    //    takes a, waits for b, gives up and releases a again.
    println!("\n2. a timeout rolls back what was taken");
    let holder_client = connect(&cs)?;
    let b_alone = InterProcessMutex::new(&holder_client, B)?;
    let b_guard = b_alone.acquire()?;
    println!("  another service holds {B}");
    let client = connect(&cs)?;
    let both = MultiLock::from_paths(&client, &[A, B])?;
    let t = Instant::now();
    let got = both.try_acquire_for(Duration::from_millis(500))?;
    println!(
        "  try_acquire_for(500ms) on [a, b]: {} after {:?}",
        if got.is_some() { "GRANTED" } else { "timed out" },
        t.elapsed()
    );
    if got.is_some() {
        return Err("the multi-lock was granted while b is held".into());
    }
    let a_nodes = InterProcessMutex::new(&holder_client, A)?.participant_nodes()?;
    println!("  lock nodes left on {A}: {}", a_nodes.len());
    let a_free = InterProcessMutex::new(&holder_client, A)?
        .try_acquire_for(Duration::ZERO)?
        .is_some();
    println!("  {A} is free again (rolled back): {a_free}");
    if !a_nodes.is_empty() || !a_free {
        return Err("the lock on a was not rolled back".into());
    }
    drop(b_guard);
    let granted = both.try_acquire_for(Duration::from_secs(5))?.is_some();
    println!("  once b is released, [a, b] is granted: {granted}");
    if !granted {
        return Err("the multi-lock was not granted once b was free".into());
    }
    client.close();
    holder_client.close();
    println!("\nOK: no deadlock in opposite orders, never two holders, and a timeout took nothing.");
    Ok(())
}
