//! Operating a lock: who holds it, breaking it while the holder runs, writes
//! guarded by the lock, and the lock's figures.
//!
//! A worker takes `/examples/operations/report` and writes under it with a
//! guarded transaction; a second worker queues behind it. An operator lists
//! the participants (holder first, with its process, host, age and fencing
//! token), then breaks the lock by deleting the holder's node. The holder
//! learns it lost the lock from its own watch, its next guarded write fails
//! with `LockLost` and writes nothing, and the second worker gets the lock.
//! Finally the per-path figures are printed.
//!
//! ```text
//! cargo run --example operations                       # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example operations
//! ```
//!
//! Exits 0 when all of that happened.

use std::time::Duration;

use zk_framework::{CreateMode, CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{inspect_lock as inspect, LockReport};
use zk_recipes::{Error, InterProcessMutex, LockEvent, LockStatus};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const LOCK: &str = "/examples/operations/report";
const DATA: &str = "/examples/operations/report-data";

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    c.block_until_connected(Duration::from_secs(10))?;
    Ok(c)
}

fn print_report(r: &LockReport) {
    println!(
        "{}: {} lock, {} holder(s), {} participant(s)",
        r.path,
        r.layout.name(),
        r.holders().count(),
        r.participants.len()
    );
    for p in &r.participants {
        println!(
            "  {} {:5} {:5} age {:>6?} token {} session 0x{:x} {}",
            p.position,
            if p.holds { "holds" } else { "waits" },
            p.kind.name(),
            p.age(),
            p.fencing_token,
            p.session_id,
            p.identity
        );
    }
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let (_server, cs) = match std::env::var("ZK_CONNECT") {
        Ok(cs) => (None, cs),
        Err(_) => {
            let s = TestingServer::start_backend(Backend::Embedded)?;
            let cs = s.connect_string();
            (Some(s), cs)
        }
    };
    let worker = connect(&cs)?;
    let second = connect(&cs)?;
    let operator = connect(&cs)?;
    zk_recipes::set_process_name(&worker, "operations-example");
    let _ = operator.delete().for_path(DATA);

    let lock = InterProcessMutex::new(&worker, LOCK)?;
    let guard = lock.acquire()?;
    let loss = guard.events();
    guard
        .transaction()
        .create(DATA, b"v1".to_vec(), CreateMode::Persistent)
        .commit()?;
    println!(
        "worker: holds the lock (token {}), wrote v1 under it",
        guard.fencing_token()
    );

    let outcome = std::thread::scope(|s| -> Result<(), BoxError> {
        let queued = s.spawn(|| -> Result<i64, Error> {
            let lock = InterProcessMutex::new(&second, LOCK)?;
            let g = lock.acquire()?;
            let token = g.fencing_token();
            g.release()?;
            Ok(token)
        });
        let queued_up = zk_testing::wait_until(Duration::from_secs(10), || {
            inspect(&operator, LOCK).is_ok_and(|r| r.participants.len() == 2)
        });
        if !queued_up {
            return Err("the second worker never queued".into());
        }

        println!("\noperator: who holds it?");
        let report = inspect(&operator, LOCK)?;
        print_report(&report);
        let holder = report.holders().next().ok_or("nobody holds the lock")?;
        if holder.node != guard.lock_path() || holder.session_id != worker.session_id() {
            return Err(format!("the report names the wrong holder: {holder:?}").into());
        }

        println!("\noperator: breaking the lock (deleting {})", holder.node);
        operator.delete().for_path(&holder.node)?;

        match loss.recv_timeout(Duration::from_secs(10)) {
            Ok(LockEvent::Lost) => println!("worker: told the lock is lost"),
            other => return Err(format!("the holder was not told: {other:?}").into()),
        }
        if guard.status() != LockStatus::Lost {
            return Err("status() does not say Lost".into());
        }
        match guard
            .transaction()
            .set_data(DATA, b"v2 from a holder that lost the lock".to_vec(), None)
            .commit()
        {
            Err(Error::LockLost { .. }) => println!("worker: guarded write refused: LockLost"),
            other => return Err(format!("a write after the break went through: {other:?}").into()),
        }
        let (data, _) = operator.get_data(DATA)?;
        println!("storage still holds {:?}", String::from_utf8_lossy(&data));
        if data != b"v1" {
            return Err("the stale write changed the data".into());
        }
        let token = queued.join().map_err(|_| "the second worker panicked")??;
        println!("second worker: got the lock after the break (token {token})");
        Ok(())
    });
    drop(guard); // already lost: logs it, deletes nothing of anyone else's
    outcome?;

    // Each client keeps the figures of its own locks: the worker's.
    println!("\nthe worker's figures for {LOCK}:");
    let st = zk_recipes::lock_stats_of(&worker, &worker.recipe().fix_path(LOCK)).ok_or("no figures")?;
    println!(
        "  acquisitions {}  timeouts {}  errors {}  releases {}  losses {} (node deleted {})",
        st.acquisitions,
        st.timeouts,
        st.errors,
        st.releases,
        st.total_losses(),
        st.losses_by(zk_recipes::LossCause::NodeDeleted)
    );
    println!(
        "  holders now {}  waiters now {}  wait mean {:?} (p50 <= {:?})  hold mean {:?}",
        st.holders,
        st.waiters,
        st.wait_time.mean(),
        st.wait_time.quantile_bound(0.5),
        st.hold_time.mean()
    );
    if (st.acquisitions, st.total_losses(), st.holders) != (1, 1, 0) {
        return Err(format!("unexpected figures: {st:?}").into());
    }
    let theirs = zk_recipes::lock_stats_of(&second, &second.recipe().fix_path(LOCK)).ok_or("no figures")?;
    println!(
        "the second worker's: acquisitions {}  releases {}  losses {}",
        theirs.acquisitions,
        theirs.releases,
        theirs.total_losses()
    );
    if (theirs.acquisitions, theirs.total_losses(), theirs.holders) != (1, 0, 0) {
        return Err(format!("unexpected figures: {theirs:?}").into());
    }
    let _ = operator.delete().for_path(DATA);
    for c in [&worker, &second, &operator] {
        c.close();
    }
    println!("\nok");
    Ok(())
}
