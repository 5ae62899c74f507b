//! Connection states and a held lock's loss events, with faults injected into
//! the embedded ZooKeeper by the example itself:
//!
//! * dropping every connection: `Suspended`, then `Reconnected` on the same
//!   session; the lock reports `Suspended` / `Reconnected` and is still held;
//! * expiring the session: `Lost`, then `Reconnected` on a new session; the lock
//!   reports `Lost` and is gone for good, so the example acquires it again.
//!
//! ```text
//! cargo run --example connection_states
//! ```
//!
//! With `ZK_CONNECT` set (a real server, no embedded one to inject faults into)
//! it shows `Connected`, explains, and exits 0. Exits 1 if a state it
//! provoked did not arrive.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{ConnectionState, CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, LockEvent, LockStatus};
use zk_testing::{Backend, TestingServer};

type BoxError = Box<dyn std::error::Error>;

const LOCK: &str = "/examples/connection-states/job";
const WAIT: Duration = Duration::from_secs(15);

/// Waits for `want` on `rx`, printing every item seen on the way.
fn expect<T: std::fmt::Debug + PartialEq>(rx: &Receiver<T>, want: T, who: &str, t0: Instant) -> Result<(), BoxError> {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(got) => {
                println!("[{:6.3}s]   {who}: {got:?}", t0.elapsed().as_secs_f64());
                if got == want {
                    return Ok(());
                }
            }
            Err(_) => return Err(format!("{who}: no {want:?} within {WAIT:?}").into()),
        }
    }
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    let t0 = Instant::now();
    let external = std::env::var("ZK_CONNECT").ok();
    let server = match &external {
        Some(_) => None,
        None => Some(TestingServer::start_backend(Backend::Embedded)?),
    };
    let connect = external
        .clone()
        .unwrap_or_else(|| server.as_ref().unwrap().connect_string());
    println!("ZooKeeper at {connect}\n");

    // A listener registered before the client starts sees every state,
    // the first Connected included.
    let (tx, states) = crossbeam_channel::unbounded();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(5))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .connection_state_listener(move |s| {
            let _ = tx.send(s);
        })
        .build()?;
    println!("starting the client");
    expect(&states, ConnectionState::Connected, "client state", t0)?;
    println!("  session 0x{:x}", client.session_id());

    let Some(embedded) = server.as_ref().and_then(TestingServer::embedded) else {
        println!(
            "\nZK_CONNECT is set: this example shows Suspended, Reconnected and Lost by injecting \
             faults (dropped connections, an expired session) into its own embedded ZooKeeper, and \
             a server named by ZK_CONNECT is not under its control. Run it without ZK_CONNECT to \
             see them."
        );
        client.close();
        return Ok(());
    };

    let lock = InterProcessMutex::new(&client, LOCK)?;
    let guard = lock.acquire()?;
    let loss = guard.events();
    println!(
        "\nholding {LOCK}: status {:?}, fencing token {}",
        guard.status(),
        guard.fencing_token()
    );

    // 1. A connection blip: the session survives.
    let session = client.session_id();
    println!("\n1. fault: the server drops every connection (the session lives on)");
    let dropped = embedded.drop_connections();
    println!("  {dropped} connection(s) dropped");
    expect(&states, ConnectionState::Suspended, "client state", t0)?;
    expect(&loss, LockEvent::Suspended, "lock event", t0)?;
    expect(&states, ConnectionState::Reconnected, "client state", t0)?;
    expect(&loss, LockEvent::Reconnected, "lock event", t0)?;
    let same = client.session_id() == session;
    println!(
        "  same session 0x{:x}: {same}; lock status {:?}",
        client.session_id(),
        guard.status()
    );
    if !same || guard.status() != LockStatus::Held {
        return Err("after a blip the lock should still be held on the same session".into());
    }

    // 2. Session expiry: the lock node is gone; the client builds a new session.
    println!("\n2. fault: the server expires the session 0x{session:x}");
    if !embedded.expire_session(session) {
        return Err("the server did not know our session".into());
    }
    expect(&states, ConnectionState::Lost, "client state", t0)?;
    expect(&loss, LockEvent::Lost, "lock event", t0)?;
    expect(&states, ConnectionState::Reconnected, "client state", t0)?;
    println!(
        "  new session 0x{:x}; the old lock's status: {:?}",
        client.session_id(),
        guard.status()
    );
    if client.session_id() == session || guard.status() != LockStatus::Lost {
        return Err("after expiry the lock should be lost and the session new".into());
    }
    let old_token = guard.fencing_token();
    drop(guard); // its node went with the old session

    // 3. Start over on the new session.
    let again = lock.try_acquire_for(WAIT)?.ok_or("could not acquire again")?;
    println!(
        "\n3. acquired again on the new session: status {:?}, fencing token {} (was {old_token})",
        again.status(),
        again.fencing_token()
    );
    drop(again);
    client.close();
    println!("\nOK: Suspended/Reconnected kept the lock; Lost took it, and it was acquired again.");
    Ok(())
}
