//! `InterProcessReadWriteLock`: readers share, a writer is exclusive, a writer
//! may downgrade to a read lock, and a reader's upgrade is refused at once
//! (`Error::UpgradeRefused`) instead of waiting on itself forever.
//!
//! Each party has its own client (its own ZooKeeper session), as separate
//! services would.
//!
//! ```text
//! cargo run --example rwlock                       # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example rwlock
//! ```
//!
//! Exits 0 when everything shown happened, 1 otherwise.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{Error, InterProcessReadWriteLock};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const LOCK: &str = "/examples/rwlock/catalog";
const WAIT: Duration = Duration::from_secs(10);

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
    c.block_until_connected(WAIT)?;
    Ok(c)
}

fn check(ok: bool, what: &str) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err(format!("expected: {what}").into())
    }
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let (_server, cs) = server()?;
    println!("ZooKeeper at {cs}; read/write lock {LOCK}\n");
    let t0 = Instant::now();
    let at = || format!("[{:6.3}s]", t0.elapsed().as_secs_f64());
    let writer_client = connect(&cs)?;
    let writer = InterProcessReadWriteLock::new(&writer_client, LOCK)?;

    // 1. Two readers hold the lock together; a writer is refused meanwhile and
    //    gets it once both have released.
    println!("1. readers overlap, a writer excludes them");
    let inside = AtomicUsize::new(0);
    let both_inside = AtomicUsize::new(0);
    std::thread::scope(|s| -> Result<(), BoxError> {
        let mut readers = Vec::new();
        for id in 1..=2 {
            let (cs, inside, both_inside, at) = (&cs, &inside, &both_inside, &at);
            readers.push(s.spawn(move || -> Result<(), BoxError> {
                let client = connect(cs)?;
                let rw = InterProcessReadWriteLock::new(&client, LOCK)?;
                let guard = rw.read_lock().acquire()?;
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                println!("{} reader-{id} holds the read lock ({n} reader(s) inside)", at());
                // Hold until the other reader is inside too: only possible if they share.
                let deadline = Instant::now() + WAIT;
                while inside.load(Ordering::SeqCst) < 2 {
                    check(Instant::now() < deadline, "both readers inside at once")?;
                    std::thread::sleep(Duration::from_millis(5));
                }
                both_inside.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(400));
                println!("{} reader-{id} releases", at());
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release()?;
                client.close();
                Ok(())
            }));
        }
        let deadline = Instant::now() + WAIT;
        while both_inside.load(Ordering::SeqCst) < 2 {
            check(Instant::now() < deadline, "both readers inside at once")?;
            std::thread::sleep(Duration::from_millis(5));
        }
        let refused = writer.write_lock().try_acquire_for(Duration::ZERO)?.is_none();
        println!(
            "{} writer: non-blocking try while 2 readers hold: {}",
            at(),
            if refused { "refused" } else { "GRANTED" }
        );
        check(refused, "the writer refused while readers hold")?;
        println!("{} writer: waiting for the write lock", at());
        let w = writer
            .write_lock()
            .try_acquire_for(WAIT)?
            .ok_or("the writer never got the lock")?;
        let readers_inside = inside.load(Ordering::SeqCst);
        println!(
            "{} writer holds the write lock (readers inside: {readers_inside})",
            at()
        );
        check(readers_inside == 0, "no reader inside while the writer holds")?;
        for r in readers {
            r.join().map_err(|_| "a reader panicked")??;
        }
        // A reader arriving now is refused until the writer releases.
        let client = connect(&cs)?;
        let rw = InterProcessReadWriteLock::new(&client, LOCK)?;
        let refused = rw.read_lock().try_acquire_for(Duration::ZERO)?.is_none();
        println!(
            "{} reader-3: non-blocking try while the writer holds: {}",
            at(),
            if refused { "refused" } else { "GRANTED" }
        );
        check(refused, "a reader refused while the writer holds")?;
        w.release()?;
        let r3 = rw.read_lock().try_acquire_for(WAIT)?.is_some();
        println!("{} writer released; reader-3 gets the read lock: {r3}", at());
        check(r3, "reader-3 gets the lock after the writer")?;
        client.close();
        Ok(())
    })?;

    // 2. Downgrade: the writer takes the read lock while holding the write lock,
    //    then releases the write lock and keeps reading. Another writer stays
    //    out; another reader may join.
    println!("\n2. downgrade: write -> read");
    let other_client = connect(&cs)?;
    let other = InterProcessReadWriteLock::new(&other_client, LOCK)?;
    {
        let w = writer.write_lock().acquire()?;
        println!("{} writer holds the write lock", at());
        let r = writer
            .read_lock()
            .try_acquire_for(Duration::ZERO)?
            .ok_or("downgrade refused")?;
        println!("{} writer takes the read lock at once (downgrade)", at());
        w.release()?;
        println!("{} writer releases the write lock, still reading", at());
        // Another service's writer (its own thread: this thread holds the read
        // lock, so a write request from it would be an upgrade, refused with
        // Error::UpgradeRefused whatever the instance).
        let refused = std::thread::scope(|s| {
            s.spawn(|| other.write_lock().try_acquire_for(Duration::ZERO).map(|g| g.is_none()))
                .join()
                .map_err(|_| "a writer panicked")
        })??;
        println!(
            "{} another writer, non-blocking: {}",
            at(),
            if refused { "refused" } else { "GRANTED" }
        );
        check(refused, "another writer refused after the downgrade")?;
        let joined = std::thread::scope(|s| {
            s.spawn(|| other.read_lock().try_acquire_for(WAIT).map(|g| g.is_some()))
                .join()
                .map_err(|_| "a reader panicked")
        })??;
        println!("{} another reader joins the downgraded holder: {joined}", at());
        check(joined, "a reader shares with the downgraded holder")?;
        drop(r);
    }

    // 3. Upgrade: a read holder asking for the write lock would wait for itself
    //    forever; it is refused at once.
    println!("\n3. upgrade: read -> write is refused");
    let r = writer.read_lock().acquire()?;
    let t = Instant::now();
    match writer.write_lock().acquire() {
        Err(Error::UpgradeRefused { path }) => {
            println!(
                "{} read holder asks for the write lock: Error::UpgradeRefused on {path} after {:?}",
                at(),
                t.elapsed()
            )
        }
        Err(e) => return Err(format!("expected UpgradeRefused, got {e}").into()),
        Ok(_) => return Err("an upgrade was granted".into()),
    }
    drop(r);

    other_client.close();
    writer_client.close();
    println!(
        "\nOK: readers shared, the writer excluded them, the downgrade kept writers out, the upgrade was refused."
    );
    Ok(())
}
