//! Helpers of the `framework_*` tests (the managed client,
//! `zk_framework::framework`): clients whose every connection state is recorded
//! from the first one on, and waits with deadlines scaled by `ZK_TEST_TIMING`.
//! Re-exports the shared server, timing and port helpers, so that
//! `use crate::support::framework::*` is all a test needs.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::ConnectionState;
use zk_framework::RetryNTimes;
use zk_framework::{Client, ClientConfig};
use zk_framework::{CuratorFramework, CuratorFrameworkBuilder};
use zk_testing::TestingServer;

pub use super::{closed_port, embedded_server, server, timing};

#[allow(unused_imports)]
pub use zk_framework::ConnectionState::{Connected, Lost, Reconnected, Suspended};

/// A builder for `server` with the test timings: session 4 s, connection 2 s
/// (scaled), `RetryNTimes(10, 100 ms)`.
pub fn builder(server: &TestingServer) -> CuratorFrameworkBuilder {
    builder_for(&server.connect_string())
}

pub fn builder_for(connect_string: &str) -> CuratorFrameworkBuilder {
    let t = timing();
    CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(RetryNTimes::new(10, Duration::from_millis(100)))
}

/// A client and every connection state it reports, from the very first one.
pub struct Recorded {
    pub client: CuratorFramework,
    pub states: Receiver<ConnectionState>,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        self.client.close();
    }
}

/// Builds the client with a listener registered before it starts.
pub fn recorded(b: CuratorFrameworkBuilder) -> Recorded {
    let (tx, rx) = crossbeam_channel::unbounded();
    let client = b
        .connection_state_listener(move |s| {
            let _ = tx.send(s);
        })
        .build()
        .expect("build the client");
    Recorded { client, states: rx }
}

/// A connected client (with its states recorded, `Connected` already taken).
pub fn connected(b: CuratorFrameworkBuilder) -> Recorded {
    let r = recorded(b);
    expect_states(&r.states, &[Connected]);
    r
}

/// Receives exactly `want` (in order) within the wait time; any other state
/// fails the test. Returns when each one arrived.
pub fn expect_states(rx: &Receiver<ConnectionState>, want: &[ConnectionState]) -> Vec<Instant> {
    expect_states_within(rx, want, timing().wait())
}

pub fn expect_states_within(
    rx: &Receiver<ConnectionState>,
    want: &[ConnectionState],
    timeout: Duration,
) -> Vec<Instant> {
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    let mut at = Vec::new();
    while seen.len() < want.len() {
        match rx.recv_deadline(deadline) {
            Ok(s) => {
                seen.push(s);
                at.push(Instant::now());
                assert_eq!(
                    &seen[..],
                    &want[..seen.len()],
                    "unexpected state sequence (wanted {want:?})"
                );
            }
            Err(_) => panic!("timed out after {timeout:?} waiting for {want:?}; saw {seen:?}"),
        }
    }
    at
}

/// The states of a session expired by `TestingServer::expire_session`:
/// `Suspended, Lost, Reconnected`. On Apache ZooKeeper the expiry attaches a
/// second connection to the session, which disconnects the client; a client
/// that reconnects at once takes the session back before it is closed (the
/// harness then attaches again), so `Suspended, Reconnected` pairs may come
/// first. Any other state fails the test. Returns every state received.
pub fn expect_expiry_states(rx: &Receiver<ConnectionState>) -> Vec<ConnectionState> {
    let deadline = Instant::now() + timing().wait();
    let mut seen = Vec::new();
    loop {
        let s = rx
            .recv_deadline(deadline)
            .unwrap_or_else(|_| panic!("timed out waiting for an expiry's states; saw {seen:?}"));
        seen.push(s);
        // (Suspended, Reconnected)* then Suspended, Lost, Reconnected.
        let n = seen.len();
        let ok = match s {
            Suspended => n % 2 == 1 && seen[..n - 1].chunks(2).all(|p| p == [Suspended, Reconnected]),
            Lost => n >= 2 && seen[n - 2] == Suspended,
            Reconnected => n >= 2 && (seen[n - 2] == Suspended || seen[n - 2] == Lost),
            _ => false,
        };
        assert!(ok, "unexpected states for an expiry: {seen:?}");
        if n >= 3 && seen[n - 2] == Lost {
            return seen;
        }
    }
}

/// Asserts that no state arrives for `d`.
pub fn expect_quiet(rx: &Receiver<ConnectionState>, d: Duration) {
    match rx.recv_timeout(d) {
        Ok(s) => panic!("unexpected state {s:?} (more: {:?})", rx.try_iter().collect::<Vec<_>>()),
        Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {}
    }
}

/// A plain client straight to the server (no namespace, no framework), for
/// checking what the framework did.
pub fn raw_client(server: &TestingServer) -> Client {
    let c = Client::connect(
        &server.connect_string(),
        ClientConfig::default().with_session_timeout(timing().session()),
    )
    .expect("connect");
    c.wait_connected_timeout(timing().wait()).expect("raw client connected");
    c
}

/// Children of `path` as seen by a fresh plain client (`None` if missing).
pub fn children(server: &TestingServer, path: &str) -> Option<Vec<String>> {
    let c = raw_client(server);
    let r = match c.get_children(path) {
        Ok(mut k) => {
            k.sort();
            Some(k)
        }
        Err(zk_framework::Error::NoNode { .. }) => None,
        Err(e) => panic!("get_children({path}): {e}"),
    };
    c.close();
    r
}
