//! Helpers of the managed client's tests (`zk_framework::framework`; zk-framework's
//! `framework_*` suites and zk-recipes' `namespace`): clients whose every
//! connection state is recorded from the first one on, and waits with
//! deadlines scaled by `ZK_TEST_TIMING`. Re-exports the shared server, timing
//! and port helpers, so that `use ...::framework::*` is all a test needs.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::ConnectionState::{self, Connected};
use zk_framework::RetryNTimes;
use zk_framework::{Client, ClientConfig};
use zk_framework::{CuratorFramework, CuratorFrameworkBuilder};
use zk_testing::TestingServer;

pub use super::{closed_port, embedded_server, server, timing};

/// A builder for `connect_string` with the test timings: session 4 s,
/// connection 2 s (scaled), `RetryNTimes(10, 100 ms)`.
pub fn builder_for(connect_string: &str) -> CuratorFrameworkBuilder {
    let t = timing();
    CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(RetryNTimes::new(10, Duration::from_millis(100)))
}

/// A client and every connection state it reports, from the very first one;
/// closed when dropped.
pub struct Recorded {
    /// The client.
    pub client: CuratorFramework,
    /// Every connection state it reported, in order.
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

/// As [`expect_states`], within `timeout`.
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
