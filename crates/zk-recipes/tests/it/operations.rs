//! Operating locks: who holds it (holder identity in the node data, typed
//! participants for every lock kind, judged by the locks' own rule), writes
//! guarded by the lock (a multi with a check of the lock node), and the
//! per-path figures (`zk_recipes::stats`). Embedded by default;
//! `ZK_TEST_SERVER=apache` runs them on Apache ZooKeeper.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{client, server, timing};
use zk_framework::{CreateMode, OpResult};
use zk_recipes::HolderIdentity;
use zk_recipes::{
    inspect_lock as inspect, inspect_lock_as as inspect_as, lock_participants as participants, LockLayout,
    ParticipantKind,
};
use zk_recipes::{lock_stats_of as snapshot_of, LossCause};
use zk_recipes::{
    Error, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, LockEvent, LockStatus, MultiLock,
};
use zk_testing::wait_until;

fn ours(id: &HolderIdentity) -> bool {
    matches!(id, HolderIdentity::Process(p) if p.pid == std::process::id() && !p.name.is_empty())
}

/// Waits until `path` (a mutex or read/write path) has `n` children.
fn wait_children(c: &zk_framework::CuratorFramework, path: &str, n: usize) {
    assert!(
        wait_until(timing().wait(), || crate::support::lock_children(c, path).len() >= n),
        "{path} never had {n} nodes"
    );
}

#[test]
fn lock_nodes_carry_the_holder_identity() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, "/ops/id/mutex").unwrap();
    let g = m.acquire().unwrap();
    let (data, _) = c.get_data(&g.lock_path()).unwrap();
    let HolderIdentity::Process(p) = HolderIdentity::parse(&data) else {
        panic!("not our identity: {:?}", String::from_utf8_lossy(&data));
    };
    assert_eq!(p.pid, std::process::id());
    assert_eq!(p.addr.as_bytes(), c.default_data(), "Curator's address is kept");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((now_ms - p.created_ms).abs() < 60_000, "{p:?}");
    drop(g);

    let rw = InterProcessReadWriteLock::new(&c, "/ops/id/rw").unwrap();
    let w = rw.write_lock().acquire().unwrap();
    assert!(ours(&HolderIdentity::parse(&c.get_data(&w.lock_path()).unwrap().0)));
    let r = w.downgrade().unwrap();
    assert!(ours(&HolderIdentity::parse(&c.get_data(&r.lock_path()).unwrap().0)));
    drop(r);

    for n in [1, 3] {
        let sem = InterProcessSemaphoreV2::new(&c, &format!("/ops/id/sem{n}"), n).unwrap();
        let lease = sem.acquire().unwrap();
        assert!(ours(&HolderIdentity::parse(&c.get_data(&lease.lock_path()).unwrap().0)));
    }
    // A caller's own data is kept as given.
    let own = InterProcessMutex::with_data(&c, "/ops/id/own", b"job-7".to_vec()).unwrap();
    let g = own.acquire().unwrap();
    assert_eq!(c.get_data(&g.lock_path()).unwrap().0, b"job-7");
}

#[test]
fn mutex_participants_are_the_queue_in_order() {
    let s = server();
    let clients: Vec<_> = (0..3).map(|_| client(&s)).collect();
    let path = "/ops/queue/mutex";
    let locks: Vec<Arc<InterProcessMutex>> = clients
        .iter()
        .map(|c| Arc::new(InterProcessMutex::new(c, path).unwrap()))
        .collect();
    let holder = locks[0].acquire().unwrap();
    std::thread::scope(|sc| {
        let mut waiters = Vec::new();
        for (i, l) in locks.iter().enumerate().skip(1) {
            wait_children(&clients[0], path, i);
            let l = l.clone();
            waiters.push(sc.spawn(move || l.acquire().map(|g| g.release())));
            wait_children(&clients[0], path, i + 1);
        }
        let ps = locks[0].participant_nodes().unwrap();
        assert_eq!(ps.len(), 3, "{ps:?}");
        // Every instance sees the same queue, in sequence order (Curator's
        // getParticipantNodes order), each participant displayed as its node path.
        assert_eq!(locks[2].participant_nodes().unwrap(), ps);
        let mut kids = crate::support::lock_children(&clients[0], path);
        kids.sort_by_key(|k| k[k.len() - 10..].to_string());
        let paths: Vec<String> = kids.iter().map(|k| format!("{path}/{k}")).collect();
        assert_eq!(ps.iter().map(|p| p.to_string()).collect::<Vec<_>>(), paths);
        assert_eq!(locks[1].participant_paths().unwrap(), paths);
        for (i, p) in ps.iter().enumerate() {
            assert_eq!(p.position, i);
            assert_eq!(p.kind, ParticipantKind::Mutex);
            assert_eq!(p.holds, i == 0, "{p:?}");
            assert_eq!(p.session_id, clients[i].session_id(), "queue order is creation order");
            assert!(ours(&p.identity), "{p:?}");
        }
        assert_eq!(ps[0].node, holder.lock_path());
        assert_eq!(ps[0].fencing_token, holder.fencing_token());
        assert!(ps[0].fencing_token < ps[1].fencing_token);
        // The free function sees the same, without a lock instance.
        let report = inspect(&clients[2], path).unwrap();
        assert_eq!(report.layout, LockLayout::Mutex);
        assert_eq!(report.participants, ps);
        assert_eq!(report.holders().count(), 1);
        drop(holder);
        for w in waiters {
            w.join().unwrap().unwrap().unwrap();
        }
    });
    assert!(!inspect(&clients[0], path).unwrap().is_held());
}

#[test]
fn read_write_participants_follow_the_read_write_rule() {
    let s = server();
    let c: Vec<_> = (0..4).map(|_| client(&s)).collect();
    let path = "/ops/queue/rw";
    let rws: Vec<Arc<InterProcessReadWriteLock>> = c
        .iter()
        .map(|c| Arc::new(InterProcessReadWriteLock::new(c, path).unwrap()))
        .collect();
    // R0 holds, R1 holds with it, W2 waits, R3 waits behind W2.
    let r0 = rws[0].read_lock().acquire().unwrap();
    let r1 = rws[1].read_lock().acquire().unwrap();
    std::thread::scope(|sc| {
        let w = rws[2].clone();
        let writer = sc.spawn(move || w.write_lock().acquire().map(|g| g.release()));
        wait_children(&c[0], path, 3);
        let r = rws[3].clone();
        let reader = sc.spawn(move || r.read_lock().acquire().map(|g| g.release()));
        wait_children(&c[0], path, 4);
        let ps = rws[0].participant_nodes().unwrap();
        let got: Vec<(ParticipantKind, bool, i64)> = ps.iter().map(|p| (p.kind, p.holds, p.session_id)).collect();
        assert_eq!(
            got,
            vec![
                (ParticipantKind::Read, true, c[0].session_id()),
                (ParticipantKind::Read, true, c[1].session_id()),
                (ParticipantKind::Write, false, c[2].session_id()),
                (ParticipantKind::Read, false, c[3].session_id()),
            ]
        );
        assert_eq!(inspect(&c[3], path).unwrap().layout, LockLayout::ReadWrite);
        assert_eq!(ps.iter().map(|p| p.position).collect::<Vec<_>>(), [0, 1, 2, 3]);
        // Each half gives its own kind, numbered in the whole queue.
        let writes = rws[0].write_lock().participant_nodes().unwrap();
        assert_eq!(writes, ps[2..3]);
        assert_eq!(rws[3].write_lock().participant_paths().unwrap(), [ps[2].node.clone()]);
        let reads = rws[1].read_lock().participant_nodes().unwrap();
        assert_eq!(reads, [ps[0].clone(), ps[1].clone(), ps[3].clone()]);
        assert_eq!(
            rws[3].read_lock().participant_paths().unwrap(),
            reads.iter().map(|p| p.node.clone()).collect::<Vec<_>>()
        );
        let writ = crate::support::lock_children(&c[0], path)
            .into_iter()
            .find(|k| k.contains("__WRIT__"))
            .unwrap();
        assert_eq!(
            writes[0],
            format!("{path}/{writ}"),
            "a participant compares as its node path"
        );
        drop(r0);
        drop(r1);
        writer.join().unwrap().unwrap().unwrap();
        reader.join().unwrap().unwrap().unwrap();
    });
}

#[test]
fn semaphore_participants_show_leases_and_the_queue() {
    let s = server();
    let c: Vec<_> = (0..3).map(|_| client(&s)).collect();
    let path = "/ops/queue/sem";
    let sems: Vec<Arc<InterProcessSemaphoreV2>> = c
        .iter()
        .map(|c| Arc::new(InterProcessSemaphoreV2::new(c, path, 2).unwrap()))
        .collect();
    let l0 = sems[0].acquire().unwrap();
    let l1 = sems[1].acquire().unwrap();
    std::thread::scope(|sc| {
        let third = sems[2].clone();
        let waiter = sc.spawn(move || third.acquire().map(|l| l.release()));
        // Curator's protocol: the third waits with a lease node while holding
        // the internal mutex.
        assert!(wait_until(timing().wait(), || sems[0]
            .participant_nodes()
            .unwrap()
            .len()
            == 3));
        let leases = sems[0].participant_nodes().unwrap();
        assert!(leases.iter().all(|p| p.kind == ParticipantKind::Lease), "{leases:?}");
        assert_eq!(leases.iter().map(|p| p.holds).collect::<Vec<_>>(), [true, true, false]);
        assert_eq!(leases.iter().map(|p| p.position).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(leases[0].fencing_token, l0.fencing_token());
        assert_eq!(leases[1].fencing_token, l1.fencing_token());
        assert_eq!(leases[2].session_id, c[2].session_id());
        assert!(leases.iter().all(|p| ours(&p.identity)), "{leases:?}");
        assert_eq!(sems[2].participant_paths().unwrap(), leases);
        let queue = sems[1].lease_queue().unwrap();
        assert!(queue.iter().all(|p| p.kind == ParticipantKind::LeaseQueue && !p.holds));
        // The report of the path with the number of leases is the two together.
        let report = inspect_as(&c[1], path, LockLayout::Semaphore { max_leases: Some(2) }).unwrap();
        assert_eq!(report.participants, [leases.clone(), queue].concat());
        // Without the number of leases, every lease node counts as holding.
        let report = inspect(&c[0], path).unwrap();
        assert_eq!(report.layout, LockLayout::Semaphore { max_leases: None });
        assert_eq!(report.holders().count(), 3);
        drop(l0);
        waiter.join().unwrap().unwrap().unwrap();
    });
    drop(l1);

    // The semaphore mutex: the holder's lease, and a waiter in the lease queue.
    let m0 = InterProcessSemaphoreMutex::new(&c[0], "/ops/queue/semmutex").unwrap();
    let m1 = Arc::new(InterProcessSemaphoreMutex::new(&c[1], "/ops/queue/semmutex").unwrap());
    let g = m0.acquire().unwrap();
    std::thread::scope(|sc| {
        let m = m1.clone();
        let waiter = sc.spawn(move || m.acquire().map(|g| g.release()));
        // The waiter creates its queue node and a lease together, and, not
        // first in the queue, drops the lease at once: wait for that settled
        // state (a waiter that kept its lease fails the wait and the asserts).
        assert!(wait_until(timing().wait(), || {
            crate::support::lock_children(&c[0], "/ops/queue/semmutex/locks").len() == 2
                && crate::support::lock_children(&c[0], "/ops/queue/semmutex/leases").len() == 1
        }));
        let ps = m0.participant_nodes().unwrap();
        assert_eq!(ps.len(), 1, "only the holder's lease: {ps:?}");
        assert_eq!(
            (ps[0].kind, ps[0].position, ps[0].holds),
            (ParticipantKind::Lease, 0, true)
        );
        assert_eq!(ps[0].session_id, c[0].session_id());
        assert_eq!(ps[0].fencing_token, g.fencing_token());
        assert_eq!(m1.participant_paths().unwrap(), ps);
        let queue = m1.lease_queue().unwrap();
        assert_eq!(queue.len(), 2, "{queue:?}");
        assert!(queue.iter().all(|p| p.kind == ParticipantKind::LeaseQueue && !p.holds));
        assert_eq!(queue[0].session_id, c[0].session_id());
        assert_eq!(queue[1].session_id, c[1].session_id());
        assert_eq!(queue.iter().map(|p| p.position).collect::<Vec<_>>(), [0, 1]);
        drop(g);
        waiter.join().unwrap().unwrap().unwrap();
    });
}

#[test]
fn a_curator_style_node_shows_its_address() {
    // Curator writes the host address; a node we did not write is read as such.
    let s = server();
    let c = client(&s);
    c.create()
        .creating_parent_containers_if_needed()
        .with_data(b"10.1.2.3".to_vec())
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/ops/curator/_c_0b4e5d38-1f9a-4c1e-9d2b-6f0a8e7c3b21-lock-")
        .unwrap();
    let ps = participants(&c, "/ops/curator", LockLayout::Mutex).unwrap();
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].identity, HolderIdentity::Address("10.1.2.3".into()));
    assert!(ps[0].holds);
    // Our lock queues behind it and is judged by the same rule.
    let m = InterProcessMutex::new(&c, "/ops/curator").unwrap();
    assert!(m.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
}

#[test]
fn inspect_rejects_bad_paths_and_reads_missing_ones_as_free() {
    let s = server();
    let c = client(&s);
    assert!(matches!(inspect(&c, "relative"), Err(Error::ZooKeeper(_))));
    assert!(matches!(inspect(&c, "/"), Err(Error::InvalidArgument(_))));
    let report = inspect(&c, "/ops/nothing/here").unwrap();
    assert!(report.participants.is_empty() && !report.is_held());
}

// ---- writes guarded by the lock ---------------------------------------------------------------

#[test]
fn guarded_transaction_commits_while_held() {
    let s = server();
    let c = client(&s);
    c.create()
        .creating_parent_containers_if_needed()
        .with_data(b"v1".to_vec())
        .for_path("/ops/txn/config")
        .unwrap();
    let m = InterProcessMutex::new(&c, "/ops/txn/lock").unwrap();
    let g = m.acquire().unwrap();
    let results = g
        .transaction()
        .set_data("/ops/txn/config", b"v2".to_vec(), None)
        .create("/ops/txn/log-", b"entry".to_vec(), CreateMode::PersistentSequential)
        .check("/ops/txn/config", 0)
        .commit();
    // Ops apply in order: after the set-data, version 0 is stale, so the
    // whole transaction fails at the caller's op 2 and writes nothing.
    assert!(
        matches!(results, Err(Error::TransactionFailed { index: 2, .. })),
        "{results:?}"
    );
    assert_eq!(c.get_data("/ops/txn/config").unwrap().0, b"v1");
    assert!(c
        .get_children("/ops/txn")
        .unwrap()
        .iter()
        .all(|k| !k.starts_with("log-")));
    assert_eq!(g.status(), LockStatus::Held, "a failed op is not a lost lock");

    let results = g
        .transaction()
        .check("/ops/txn/config", 0)
        .set_data("/ops/txn/config", b"v2".to_vec(), None)
        .create("/ops/txn/log-", b"entry".to_vec(), CreateMode::PersistentSequential)
        .delete("/ops/txn/config", Some(1))
        .commit()
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(matches!(&results[2], OpResult::Create { path, .. } if path.starts_with("/ops/txn/log-")));
    assert!(c.check_exists("/ops/txn/config").unwrap().is_none());
    g.release().unwrap();
}

#[test]
fn guarded_transaction_after_a_break_fails_with_lock_lost_and_writes_nothing() {
    let s = server();
    let c = client(&s);
    let operator = client(&s);
    let m = InterProcessMutex::new(&c, "/ops/txn/broken").unwrap();
    let g = m.acquire().unwrap();
    let loss = g.events();
    // Another session breaks the lock. The commit may run before the holder's
    // own watch has told it: the server's check decides.
    operator.delete().for_path(&g.lock_path()).unwrap();
    let r = g
        .transaction()
        .create("/ops/txn/written-", vec![], CreateMode::PersistentSequential)
        .set_data("/ops/txn/broken", b"x".to_vec(), None)
        .commit();
    assert!(matches!(r, Err(Error::LockLost { .. })), "{r:?}");
    assert_eq!(g.status(), LockStatus::Lost, "status() agrees with the failed commit");
    assert!(g.check().is_err());
    assert_eq!(loss.recv_timeout(timing().wait()), Ok(LockEvent::Lost));
    assert!(c
        .get_children("/ops/txn")
        .unwrap()
        .iter()
        .all(|k| !k.starts_with("written-")));
    assert!(matches!(g.release(), Err(Error::LockLost { .. })));

    // Every kind's guard checks its own node: a read guard, a lease, a set.
    let rw = InterProcessReadWriteLock::new(&c, "/ops/txn/rw").unwrap();
    let r = rw.read_lock().acquire().unwrap();
    r.transaction()
        .create("/ops/txn/rw-ok", vec![], CreateMode::Persistent)
        .commit()
        .unwrap();
    operator.delete().for_path(&r.lock_path()).unwrap();
    let e = r
        .transaction()
        .create("/ops/txn/rw-no", vec![], CreateMode::Persistent)
        .commit();
    assert!(matches!(e, Err(Error::LockLost { .. })), "{e:?}");
    assert!(c.check_exists("/ops/txn/rw-no").unwrap().is_none());
    drop(r);

    let sem = InterProcessSemaphoreV2::new(&c, "/ops/txn/sem", 2).unwrap();
    let lease = sem.acquire().unwrap();
    operator.delete().for_path(&lease.lock_path()).unwrap();
    let e = lease
        .transaction()
        .create("/ops/txn/sem-no", vec![], CreateMode::Persistent)
        .commit();
    assert!(matches!(e, Err(Error::LockLost { .. })), "{e:?}");
    assert_eq!(lease.status(), LockStatus::Lost);
    drop(lease);

    let a: Arc<dyn InterProcessLock> = Arc::new(InterProcessMutex::new(&c, "/ops/txn/a").unwrap());
    let b: Arc<dyn InterProcessLock> = Arc::new(InterProcessMutex::new(&c, "/ops/txn/b").unwrap());
    let both = MultiLock::new(vec![a, b]).unwrap();
    let g = both.acquire().unwrap();
    g.transaction()
        .create("/ops/txn/multi-ok", vec![], CreateMode::Persistent)
        .commit()
        .unwrap();
    let second = g.lock_path().split(',').nth(1).unwrap().to_string();
    operator.delete().for_path(&second).unwrap();
    let e = g
        .transaction()
        .create("/ops/txn/multi-no", vec![], CreateMode::Persistent)
        .commit();
    assert!(matches!(e, Err(Error::LockLost { .. })), "{e:?}");
    assert!(c.check_exists("/ops/txn/multi-no").unwrap().is_none());
    assert_eq!(g.status(), LockStatus::Lost);
}

#[test]
fn guarded_transaction_bad_input_is_a_typed_error() {
    let s = server();
    let (c, d) = (client(&s), client(&s));
    let m = InterProcessMutex::new(&c, "/ops/txn/bad").unwrap();
    let g = m.acquire().unwrap();
    // An invalid path: refused before anything is sent; the lock is untouched.
    let r = g
        .transaction()
        .create("/ops/txn/fine", vec![], CreateMode::Persistent)
        .create("relative", vec![], CreateMode::Persistent)
        .commit();
    assert!(matches!(r, Err(Error::ZooKeeper(_))), "{r:?}");
    assert!(c.check_exists("/ops/txn/fine").unwrap().is_none());
    assert_eq!(g.status(), LockStatus::Held);
    // An empty transaction only checks the lock.
    assert_eq!(g.transaction().commit().unwrap(), Vec::new());
    drop(g);
    // A set on two clients (two sessions) cannot be one multi.
    let a: Arc<dyn InterProcessLock> = Arc::new(InterProcessMutex::new(&c, "/ops/txn/ca").unwrap());
    let b: Arc<dyn InterProcessLock> = Arc::new(InterProcessMutex::new(&d, "/ops/txn/cb").unwrap());
    let both = MultiLock::new(vec![a, b]).unwrap();
    let g = both.acquire().unwrap();
    let r = g
        .transaction()
        .create("/ops/txn/x", vec![], CreateMode::Persistent)
        .commit();
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    assert_eq!(g.status(), LockStatus::Held);
}

// ---- the figures --------------------------------------------------------------------------------

#[test]
fn stats_count_the_operations_run() {
    let s = server();
    let c = client(&s);
    let other = client(&s);
    // A path of this test only: the figures are per client and per path.
    let path = format!("/ops/stats/{}", uuid_like());
    let m = InterProcessMutex::new(&c, &path).unwrap();
    const N: u64 = 5;
    for _ in 0..N {
        let g = m.acquire().unwrap();
        let _reentrant = m.acquire().unwrap(); // no server grant: not counted
        drop(_reentrant);
        g.release().unwrap();
    }
    let busy = InterProcessMutex::new(&other, &path).unwrap();
    let held = busy.acquire().unwrap();
    for _ in 0..2 {
        assert!(m.try_acquire_for(Duration::from_millis(20)).unwrap().is_none());
    }
    {
        // Each client counts its own locks.
        let st = snapshot_of(&other, &path).expect("figures for the path");
        assert_eq!(st.holders, 1);
        let st = snapshot_of(&c, &path).expect("figures for the path");
        assert_eq!((st.holders, st.waiters), (0, 0));
    }
    drop(held);
    // A loss: the node deleted by another session.
    let g = m.acquire().unwrap();
    let loss = g.events();
    other.delete().for_path(&g.lock_path()).unwrap();
    assert_eq!(loss.recv_timeout(timing().wait()), Ok(LockEvent::Lost));
    drop(g);
    let st = snapshot_of(&c, &path).unwrap();
    assert_eq!(st.acquisitions, N + 1, "{st:?}");
    assert_eq!(st.timeouts, 2);
    assert_eq!(st.errors, 0);
    assert_eq!(st.losses_by(LossCause::NodeDeleted), 1);
    assert_eq!(st.total_losses(), 1);
    assert_eq!(st.releases, N);
    assert_eq!(st.holders, 0);
    assert_eq!(st.waiters, 0);
    assert_eq!(st.wait_time.count(), N + 1);
    assert_eq!(st.hold_time.count(), N + 1);
    let st = snapshot_of(&other, &path).unwrap();
    assert_eq!(
        (st.acquisitions, st.releases, st.holders, st.total_losses()),
        (1, 1, 0, 0)
    );

    // Semaphores count leases under their own path.
    let spath = format!("/ops/stats/{}", uuid_like());
    let sem = InterProcessSemaphoreV2::new(&c, &spath, 2).unwrap();
    let leases = sem.acquire_many(2).unwrap();
    assert!(sem.try_acquire_for(Duration::from_millis(20)).unwrap().is_none());
    assert_eq!(snapshot_of(&c, &spath).unwrap().holders, 2);
    drop(leases);
    let st = snapshot_of(&c, &spath).unwrap();
    assert_eq!((st.acquisitions, st.timeouts, st.releases, st.holders), (2, 1, 2, 0));

    // Pruning a path's figures: a new instance on it starts afresh.
    assert_eq!(
        zk_recipes::forget_lock_stats(&c, &spath).map(|s| s.acquisitions),
        Some(2)
    );
    assert!(snapshot_of(&c, &spath).is_none());
    let sem = InterProcessSemaphoreV2::new(&c, &spath, 2).unwrap();
    drop(sem.acquire().unwrap());
    assert_eq!(snapshot_of(&c, &spath).unwrap().acquisitions, 1);
}

/// A fresh name segment (the figures are per process, across tests).
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("p{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}
