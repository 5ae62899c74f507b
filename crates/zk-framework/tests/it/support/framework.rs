//! Helpers of the `framework_*` tests (the managed client,
//! `zk_framework::framework`) that only zk-framework's suites use; the rest
//! (recorded states, waits with deadlines, a plain client) is the shared
//! `zk_test_support::framework`, re-exported here, so that
//! `use crate::support::framework::*` is all a test needs.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::ConnectionState;
use zk_framework::CuratorFrameworkBuilder;
use zk_testing::TestingServer;

pub use zk_test_support::framework::*;

#[allow(unused_imports)]
pub use zk_framework::ConnectionState::{Connected, Lost, Reconnected, Suspended};

/// A builder for `server` with the test timings: session 4 s, connection 2 s
/// (scaled), `RetryNTimes(10, 100 ms)`.
pub fn builder(server: &TestingServer) -> CuratorFrameworkBuilder {
    builder_for(&server.connect_string())
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
