//! What a managed client costs the process: threads, counted in
//! `/proc/self/task` (in a process of its own, so that no other test's clients
//! are counted; the embedded server's `zk-embedded-*` threads are left out),
//! and what `close()` waits for. On the embedded server and on Apache
//! ZooKeeper (`ZK_TEST_SERVER=apache`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_recipes::{InterProcessMutex, LockStatus};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

use crate::support::{client, in_own_process, server, timing};

/// This process's threads by name (`/proc/self/task/*/comm`), without the
/// embedded server's.
fn thread_names() -> BTreeMap<String, usize> {
    let mut names = BTreeMap::new();
    for e in std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        if !comm.starts_with("zk-embedded") {
            *names.entry(comm).or_insert(0) += 1;
        }
    }
    names
}

fn threads() -> usize {
    thread_names().values().sum()
}

/// A connection change every client notices: the embedded server drops every
/// connection; Apache ZooKeeper is stopped and started again.
fn bounce(server: &TestingServer) {
    if server.drop_connections().is_err() {
        server.stop().unwrap();
        server.restart().unwrap();
    }
}

const CLIENTS: usize = 8;

#[test]
fn a_client_runs_at_most_three_threads_and_close_leaves_none() {
    if in_own_process("client_cost::a_client_runs_at_most_three_threads_and_close_leaves_none") {
        return;
    }
    let t = timing();
    let server = server();
    let base = threads();
    let bound = base + 3 * CLIENTS;

    let clients: Vec<CuratorFramework> = (0..CLIENTS).map(|_| client(&server)).collect();
    assert!(threads() <= bound, "idle: {:?} (base {base})", thread_names());

    // Each client holds a lock (a state listener each, an own-node watch each).
    let mutexes: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| InterProcessMutex::new(c, &format!("/client-cost/l{i}")).unwrap())
        .collect();
    let guards: Vec<_> = mutexes.iter().map(|m| m.acquire().unwrap()).collect();
    // Each client's timer thread sends its own-node watch just after the
    // grant, and ends a second after its last work (a client at rest runs
    // none); at most one per client meanwhile.
    assert!(
        threads() <= bound + CLIENTS,
        "granting: {:?} (base {base})",
        thread_names()
    );
    assert!(
        wait_until(t.wait() * 2, || threads() <= bound),
        "holding: {:?} (base {base})",
        thread_names()
    );

    // A connection change with listeners registered: each client starts a
    // dispatch thread to tell them, and it ends once idle.
    let events: Vec<_> = guards.iter().map(|g| g.loss_receiver()).collect();
    bounce(&server);
    for rx in &events {
        rx.recv_timeout(t.wait() * 2)
            .expect("the holder is told of the connection change");
    }
    assert!(
        wait_until(t.wait() * 2, || threads() <= bound),
        "after a connection change: {:?} (base {base})",
        thread_names()
    );
    for g in guards {
        if g.status() == LockStatus::Held {
            g.release().unwrap();
        }
    }
    // A background delete starts the cleanup thread; it ends once idle.
    clients[0].delete_in_background("/client-cost/none").unwrap();
    assert!(wait_until(t.wait(), || clients[0].pending_background_deletes() == 0));
    assert!(
        wait_until(t.wait() * 2, || threads() <= bound),
        "after a background delete: {:?} (base {base})",
        thread_names()
    );
    for c in &clients {
        c.close();
    }
    assert!(
        wait_until(t.wait(), || threads() <= base),
        "after close: {:?} (base {base})",
        thread_names()
    );
}

#[test]
fn close_is_bounded_when_the_server_does_not_answer() {
    let t = timing();
    let server = server();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let c = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    let m = InterProcessMutex::new(&c, "/client-cost/frozen").unwrap();
    let g = m.acquire().unwrap();
    proxy.freeze(true);
    let start = Instant::now();
    c.close();
    let took = start.elapsed();
    // One second for the closeSession reply, half a second for the threads.
    let bound = Duration::from_millis(1500) + t.scale(Duration::from_millis(500));
    assert!(took <= bound, "close took {took:?} (bound {bound:?})");
    drop(g);
    proxy.freeze(false);
}
