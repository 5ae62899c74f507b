//! Fencing tokens: a storage that remembers the highest token it has seen
//! rejects a write from a stale lock holder.
//!
//! Two holders take the lock in turn and write with increasing tokens. Then a
//! third holder "pauses" (think of a long GC pause or a frozen VM) while the
//! server expires its session; a fourth holder gets the lock and writes. When
//! the paused holder wakes up, still believing it holds the lock, its write
//! carries an older token and is rejected.
//!
//! ```text
//! cargo run --example fencing                       # on an embedded ZooKeeper
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example fencing
//! ```
//!
//! On a real server the session is expired the way Curator's tests do it: a
//! second connection attaches to the session (same id and password) and closes
//! it. Exits 0 when the stale write was rejected and the others accepted.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, LockStatus};
use zk_testing::raw::RawConnection;
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const LOCK: &str = "/examples/fencing/storage";

/// The protected resource: it accepts a write only with a token at least as
/// high as every token it has seen.
#[derive(Default)]
struct Storage {
    highest_token: Mutex<i64>,
    value: Mutex<String>,
}

impl Storage {
    fn write(&self, token: i64, value: &str) -> Result<(), String> {
        let mut highest = self.highest_token.lock().unwrap();
        if token < *highest {
            return Err(format!(
                "token {token} < {}: stale lock holder, write rejected",
                *highest
            ));
        }
        *highest = token;
        *self.value.lock().unwrap() = value.to_string();
        Ok(())
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

/// Expires `client`'s session on the server.
fn expire(server: Option<&TestingServer>, connect: &str, client: &CuratorFramework) -> Result<(), BoxError> {
    let id = client.session_id();
    match server.and_then(TestingServer::embedded) {
        Some(embedded) => {
            if !embedded.expire_session(id) {
                return Err(format!("no session 0x{id:x} on the server").into());
            }
        }
        None => {
            // The first host of the connect string, without a chroot.
            let host = connect.split(['/', ',']).next().unwrap_or(connect).trim();
            let password = client.zookeeper_client().session_password();
            let (mut raw, _) = RawConnection::connect(host, 10_000, Some((id, &password)))?;
            raw.close_session()?;
        }
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let external = std::env::var("ZK_CONNECT").ok();
    let server = match &external {
        Some(_) => None,
        None => Some(TestingServer::start_backend(Backend::Embedded)?),
    };
    let cs = external.unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    println!("ZooKeeper at {cs}; lock {LOCK}\n");
    let storage = Storage::default();
    let mut failures = Vec::new();

    // 1. Two holders in sequence: tokens increase, both writes are accepted.
    println!("1. two holders in sequence");
    for name in ["holder-1", "holder-2"] {
        let client = connect(&cs)?;
        let lock = InterProcessMutex::new(&client, LOCK)?;
        let guard = lock.acquire()?;
        let token = guard.fencing_token();
        match storage.write(token, &format!("written by {name}")) {
            Ok(()) => println!("  {name}: acquired, token {token}; write accepted"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        guard.release()?;
        client.close();
    }

    // 2. A paused holder whose session expires meanwhile.
    println!("\n2. a holder pauses while its session expires");
    let paused_client = connect(&cs)?;
    let paused_lock = InterProcessMutex::new(&paused_client, LOCK)?;
    let paused = paused_lock.acquire()?;
    let stale_token = paused.fencing_token();
    println!("  holder-3: acquired, token {stale_token}; now it pauses (GC, frozen VM...)");
    let next_client = connect(&cs)?;
    let next_lock = InterProcessMutex::new(&next_client, LOCK)?;
    std::thread::scope(|s| -> Result<(), BoxError> {
        let next = s.spawn(|| -> Result<i64, String> {
            println!("  holder-4: waiting for the lock");
            let g = next_lock
                .try_acquire_for(Duration::from_secs(15))
                .map_err(|e| e.to_string())?
                .ok_or("holder-4 never got the lock")?;
            let token = g.fencing_token();
            println!("  holder-4: acquired, token {token}");
            storage.write(token, "written by holder-4")?;
            println!("  holder-4: write accepted");
            g.release().map_err(|e| e.to_string())?;
            Ok(token)
        });
        let t = Instant::now();
        while next_lock.participant_nodes()?.len() < 2 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        println!(
            "  server: expires holder-3's session 0x{:x}",
            paused_client.session_id()
        );
        expire(server.as_ref(), &cs, &paused_client)?;
        let token = next.join().map_err(|_| "holder-4 panicked")??;
        if token <= stale_token {
            failures.push(format!("token {token} is not above the stale {stale_token}"));
        }
        Ok(())
    })?;

    // 3. The paused holder wakes up and writes without checking its lock.
    println!("\n3. holder-3 wakes up and writes, believing it still holds the lock");
    match storage.write(stale_token, "late write by holder-3") {
        Err(e) => println!("  holder-3 (token {stale_token}): {e}"),
        Ok(()) => failures.push("the stale write was accepted".into()),
    }
    // Had it looked, it would have known: its client learns of the expiry when
    // it reconnects, and the lock's status turns Lost.
    let t = Instant::now();
    while paused.status() != LockStatus::Lost && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("  (holder-3's lock status, had it looked: {:?})", paused.status());
    if paused.status() != LockStatus::Lost {
        failures.push("holder-3's lock never reported Lost".into());
    }
    drop(paused);
    let value = storage.value.lock().unwrap().clone();
    println!("  the storage holds: {value:?}");
    if value != "written by holder-4" {
        failures.push(format!("the storage holds {value:?}"));
    }
    paused_client.close();
    next_client.close();

    if failures.is_empty() {
        println!("\nOK: tokens increased with every grant and the stale holder's write was rejected.");
        Ok(())
    } else {
        for f in &failures {
            println!("FAILED: {f}");
        }
        Err("fencing did not behave as shown".into())
    }
}
