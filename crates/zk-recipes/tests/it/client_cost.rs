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
    // Each client's executor thread sends its own-node watch just after the
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
    let events: Vec<_> = guards.iter().map(|g| g.events()).collect();
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
    clients[0].recipe().delete_in_background("/client-cost/none").unwrap();
    assert!(wait_until(t.wait(), || clients[0]
        .recipe()
        .pending_background_deletes()
        == 0));
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

/// A leading selector runs one thread of its own, the one that runs its
/// work: its leadership is followed by a signal on its holding, not by a
/// watcher thread (whose name, `leader-selector-watch`, the kernel would
/// also show as `leader-selector`). The signal still cancels the work at
/// once when the leadership ends (a deleted node here) and at the client's
/// close.
#[test]
fn a_leading_selector_runs_one_thread_and_a_signal_follows_its_leadership() {
    if in_own_process("client_cost::a_leading_selector_runs_one_thread_and_a_signal_follows_its_leadership") {
        return;
    }
    use zk_recipes::{LeaderEvent, LeaderSelector, NotLeaderReason};
    let t = timing();
    let server = server();
    let c = client(&server);
    let (led, leading) = crossbeam_channel::unbounded();
    let (ended, work_ended) = crossbeam_channel::unbounded();
    let s = LeaderSelector::builder(&c, "/client-cost/selector", move |l| {
        let _ = led.send(l.term());
        // Waits for the cancellation only.
        let _ = l.cancelled().recv();
        let _ = ended.send(());
    })
    .auto_requeue(true)
    .build()
    .unwrap();
    let events = s.events();
    s.start().unwrap();
    leading.recv_timeout(t.wait()).expect("leads");
    let selector_threads = || thread_names().get("leader-selector").copied().unwrap_or(0);
    assert_eq!(selector_threads(), 1, "while leading: {:?}", thread_names());

    // Someone deletes the leader's node: the signal tells the election and
    // cancels the work, with no thread of its own.
    let node = s
        .participants()
        .unwrap()
        .into_iter()
        .find(|p| p.holds)
        .expect("a leader")
        .node;
    let admin = client(&server);
    admin.delete().for_path(&node).unwrap();
    work_ended
        .recv_timeout(t.wait())
        .expect("the work is cancelled when its node goes");
    let told = events
        .iter()
        .take(3)
        .find(|e| matches!(e, LeaderEvent::NotLeader { .. }));
    assert_eq!(
        told,
        Some(LeaderEvent::NotLeader {
            reason: NotLeaderReason::NodeDeleted
        })
    );

    // Auto-requeue leads again; closing the client cancels that work too.
    leading.recv_timeout(t.wait()).expect("leads again");
    assert_eq!(selector_threads(), 1, "leading again: {:?}", thread_names());
    c.close();
    work_ended
        .recv_timeout(t.wait())
        .expect("the client's close cancels the work");
    s.close().ok();
    admin.close();
}
