//! The support module of zk-recipes' integration tests: the workspace's
//! shared test support, re-exported whole (`zk_test_support`: managed clients,
//! tree listings, recorded states, the TLS, `x509` and ACL suites' settings,
//! and everything of `zk_testing::support`), and what only these suites use:
//! the helpers about locks (the lock nodes under a path, an operator breaking
//! a lock, waits for no orphan node, zero-timeout tries that say `NoAnswer` on
//! a loaded machine), clients through a fault proxy, a recipe closed while a
//! request of its is held, and [`acl`]'s second user and subtree listing.

pub mod acl;

pub use zk_test_support::*;

use std::time::Duration;

use zk_framework::{CuratorFramework, ExponentialBackoffRetry, RetryOneTime};
use zk_testing::proxy::FaultProxy;

/// A client closed when dropped that retries once (`RetryOneTime(100 ms)`).
pub fn connect_one_time(connect_string: &str) -> Client {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(RetryOneTime::new(Duration::from_millis(100)))
        .build()
        .expect("build client");
    c.block_until_connected(t.wait()).expect("client connects");
    Client(c)
}

/// The lock nodes left under `base` (containers excluded: only ephemerals).
pub fn lock_nodes(c: &CuratorFramework, base: &str) -> Vec<String> {
    tree(c, base)
        .into_iter()
        .filter(|p| {
            c.check_exists(p)
                .ok()
                .flatten()
                .is_some_and(|st| st.ephemeral_owner != 0)
        })
        .collect()
}

/// An operator breaking the lock of session `session` under `base`: every
/// ephemeral node of that session there is deleted (a semaphore's lease and
/// its internal-mutex node, each member of a multi-lock). Returns how many.
pub fn break_lock(admin: &CuratorFramework, base: &str, session: i64) -> usize {
    let owned: Vec<String> = tree(admin, base)
        .into_iter()
        .filter(|p| {
            admin
                .check_exists(p)
                .ok()
                .flatten()
                .is_some_and(|st| st.ephemeral_owner == session)
        })
        .collect();
    for p in &owned {
        admin.delete().for_path(p).expect("delete the held node");
    }
    owned.len()
}

/// Waits (bounded) until no lock node is left under `base`.
pub fn no_orphans(c: &CuratorFramework, base: &str) {
    assert!(
        wait_until(timing().wait(), || lock_nodes(c, base).is_empty()),
        "orphan lock nodes under {base}: {:?}",
        lock_nodes(c, base)
    );
}

/// Children of `path` (empty if it does not exist).
pub fn lock_children(c: &CuratorFramework, path: &str) -> Vec<String> {
    match c.get_children(path) {
        Ok(k) => k,
        Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
        Err(e) => panic!("get_children {path}: {e}"),
    }
}

/// Repeats a zero-timeout try while it ends in `NoAnswer` (its replies came
/// later than the deadline's grace, `zk_framework::deadline::GRACE`: honest on
/// a loaded machine, and no verdict about the lock), within `timing().wait()`;
/// the first other outcome, or the last `NoAnswer`.
pub fn zero_try<T>(mut attempt: impl FnMut() -> Result<T, zk_recipes::Error>) -> Result<T, zk_recipes::Error> {
    let end = std::time::Instant::now() + timing().wait();
    loop {
        match attempt() {
            Err(zk_recipes::Error::NoAnswer { .. }) if std::time::Instant::now() < end => continue,
            r => return r,
        }
    }
}

/// A started client through `proxy` (a fault proxy), with a connection timeout
/// of 15 s and `ExponentialBackoffRetry(100 ms, 10)`: it rides out the faults
/// the proxy injects.
pub fn proxied_client(proxy: &FaultProxy) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// A started client through `proxy` with a long session (15 s, scaled): a
/// request held at the proxy for a few seconds
/// ([`FaultProxy::hold_next_request`]) holds that client's pings behind it,
/// and neither the server nor the client gives the session or the connection
/// up meanwhile.
pub fn held_client(proxy: &FaultProxy) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.scale(Duration::from_secs(15)))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// When a request held at a proxy is let go, relative to a recipe's
/// `close()` (see [`close_while_held`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Once `close()` has returned: the create's reply comes to a closed
    /// recipe.
    AfterClose,
    /// 500 ms into `close()` (which is still waiting for its thread).
    DuringClose,
}

/// Closes a recipe (`close`) while a request of its is held at `proxy`
/// (armed with [`FaultProxy::hold_next_request`] before the recipe started),
/// and lets the request go as `release` says. Returns how long `close()`
/// took, once the held request has reached the server: a request of `c`
/// (the recipe's client) sent after the release is answered, and a session's
/// requests are applied in order.
pub fn close_while_held(
    proxy: &std::sync::Arc<FaultProxy>,
    c: &CuratorFramework,
    release: Release,
    close: impl FnOnce() -> Result<(), zk_recipes::Error>,
) -> Duration {
    assert!(
        wait_until(timing().wait(), || proxy.held_requests() == 1),
        "the request is held"
    );
    let t0 = std::time::Instant::now();
    let took = match release {
        Release::AfterClose => {
            close().expect("close");
            let took = t0.elapsed();
            proxy.release_held();
            took
        }
        Release::DuringClose => {
            let p = proxy.clone();
            // The fault's length (a request in flight for 500 ms), not a wait
            // for an event.
            let releaser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                p.release_held();
            });
            close().expect("close");
            let took = t0.elapsed();
            releaser.join().unwrap();
            took
        }
    };
    c.check_exists("/").expect("a request behind the held one");
    took
}

/// The children of `path` as `admin` reads them after its own `sync` (empty
/// when `path` does not exist).
pub fn synced_children(admin: &CuratorFramework, path: &str) -> Vec<String> {
    match admin
        .recipe()
        .sync_then_read(&[zk_framework::ReadOp::GetChildren(path.to_string())])
    {
        Ok(r) => match r.into_iter().next() {
            Some(zk_framework::ReadResult::Children(Some((kids, _)))) => kids,
            _ => Vec::new(),
        },
        Err(e) => panic!("sync and list {path}: {e}"),
    }
}

/// Waits until nothing is left under `path` (read by `admin` after its own
/// sync), at most `within`: `Err` with what is left when it does not empty.
pub fn nothing_left_under(admin: &CuratorFramework, path: &str, within: Duration) -> Result<(), Vec<String>> {
    if wait_until(within, || synced_children(admin, path).is_empty()) {
        Ok(())
    } else {
        Err(synced_children(admin, path))
    }
}
