//! InterProcessSemaphoreV2 and InterProcessSemaphoreMutex: Curator's §7.3 and
//! §7.9 scenarios ported by name (the scenarios every lock shares are in
//! `lock_contract`). Embedded by default; `ZK_TEST_SERVER=apache`
//! runs them on Apache ZooKeeper.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{client, server, timing};
use zk_recipes::{Error, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LockEvent};
use zk_testing::wait_until;

const LOCK: &str = "/locks/our-lock";

#[test]
fn node_layout_matches_curator() {
    let s = server();
    let c = client(&s);
    let m = InterProcessSemaphoreMutex::new(&c, LOCK).unwrap();
    let g = m.acquire().unwrap();
    let leases = c.get_children(&format!("{LOCK}/leases")).unwrap();
    assert_eq!(leases.len(), 1);
    assert!(zk_framework::paths::is_protected(&leases[0]), "{}", leases[0]);
    assert!(leases[0].ends_with("-lease-0000000000"), "{}", leases[0]);
    assert!(g.fencing_token() > 0);
    drop(g);
    assert!(c.get_children(&format!("{LOCK}/leases")).unwrap_or_default().is_empty());
    assert!(c.get_children(&format!("{LOCK}/locks")).unwrap_or_default().is_empty());
}

#[test]
fn not_reentrant_and_any_thread_may_release() {
    let s = server();
    let c = client(&s);
    let m = InterProcessSemaphoreMutex::new(&c, LOCK).unwrap();
    let g = m.acquire().unwrap();
    assert!(
        m.try_acquire_for(Duration::from_millis(200)).unwrap().is_none(),
        "a second acquire by the holder waits (not reentrant)"
    );
    std::thread::scope(|sc| {
        sc.spawn(move || g.release().unwrap()).join().unwrap();
    });
    assert!(!m.is_acquired_in_this_process());
    assert!(matches!(m.release(), Err(Error::NotOwner { .. })));
    // Raw shape: acquire on one thread, release on another.
    m.acquire_raw().unwrap();
    std::thread::scope(|sc| {
        sc.spawn(|| m.release().unwrap()).join().unwrap();
    });
    assert!(m.participant_nodes().unwrap().is_empty());
}

/// Curator's testNoOrphanedNodes on the N-lease path (Curator's algorithm: the
/// waiter's lease node sits in `leases` while it waits).
#[test]
fn test_no_orphaned_nodes() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let sem1 = InterProcessSemaphoreV2::new(&c1, "/test", 2).unwrap();
    let sem2 = InterProcessSemaphoreV2::new(&c2, "/test", 2).unwrap();
    let leases = sem1.acquire_many(2).unwrap();
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| sem2.try_acquire_for(timing().wait()).unwrap());
        assert!(wait_until(timing().wait(), || sem1
            .participant_nodes()
            .is_ok_and(|p| p.len() == 3)));
        // Someone deletes the waiter's lease node: it takes the missing-node path and
        // queues again.
        let theirs = sem1
            .participant_nodes()
            .unwrap()
            .into_iter()
            .find(|p| leases.iter().all(|l| l.lock_path() != p.node))
            .unwrap();
        c1.delete().for_path(&theirs.node).unwrap();
        assert!(wait_until(timing().wait(), || {
            let p = sem1.participant_nodes().unwrap_or_default();
            p.len() == 3 && !p.contains(&theirs)
        }));
        drop(leases);
        let got = waiter.join().unwrap().expect("the waiter acquires");
        drop(got);
    });
    assert!(sem1.participant_nodes().unwrap().is_empty());
    assert!(sem1.acquire().is_ok());
}

/// The one-lease path: a waiter queues with its internal-mutex node; deleting it
/// externally makes the waiter queue again, and nothing is left behind.
#[test]
fn test_no_orphaned_nodes_single_lease() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let m1 = InterProcessSemaphoreMutex::new(&c1, LOCK).unwrap();
    let m2 = InterProcessSemaphoreMutex::new(&c2, LOCK).unwrap();
    let locks = format!("{LOCK}/locks");
    let g = m1.acquire().unwrap();
    let mine = c1.get_children(&locks).unwrap();
    assert_eq!(mine.len(), 1);
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| m2.try_acquire_for(timing().wait()).unwrap().is_some());
        assert!(wait_until(timing().wait(), || c1
            .get_children(&locks)
            .is_ok_and(|k| k.len() == 2)));
        let theirs = c1
            .get_children(&locks)
            .unwrap()
            .into_iter()
            .find(|k| !mine.contains(k))
            .unwrap();
        c1.delete().for_path(&format!("{locks}/{theirs}")).unwrap();
        // The waiter learns of it at its next wake-up (the holder's release), takes
        // the missing-node path, queues again and acquires.
        drop(g);
        assert!(waiter.join().unwrap(), "the waiter acquires");
    });
    // The server may already have reaped the emptied container.
    assert!(c1.get_children(&locks).unwrap_or_default().is_empty());
    assert!(m1.participant_nodes().unwrap().is_empty());
}

#[test]
fn timed_out_acquire_leaves_no_lease() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let m1 = InterProcessSemaphoreMutex::new(&c1, LOCK).unwrap();
    let m2 = InterProcessSemaphoreMutex::new(&c2, LOCK).unwrap();
    let g = m1.acquire().unwrap();
    assert!(m2.try_acquire_for(Duration::from_millis(100)).unwrap().is_none());
    assert!(m2.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    // The one-lease holder keeps the internal mutex while it holds; the timed-out
    // waiter left nothing in either directory. (A contender's lease, created with
    // its internal-mutex node and given back at once, and a node whose reply came
    // after the deadline's grace are deleted in the background when the server
    // is slow: wait for them, with a deadline; seen on Apache under load.)
    assert!(
        wait_until(timing().wait(), || m1.participant_nodes().unwrap().len() == 1),
        "only the holder's lease: {:?}",
        m1.participant_nodes()
    );
    assert!(
        wait_until(timing().wait(), || c1
            .get_children(&format!("{LOCK}/locks"))
            .unwrap()
            .len()
            == 1),
        "only the holder's internal-mutex node: {:?}",
        c1.get_children(&format!("{LOCK}/locks"))
    );
    drop(g);
    assert!(c1.get_children(&format!("{LOCK}/locks")).unwrap_or_default().is_empty());
    assert!(c1
        .get_children(&format!("{LOCK}/leases"))
        .unwrap_or_default()
        .is_empty());
}

#[test]
fn test_threads_respect_max_leases() {
    let s = server();
    let c = client(&s);
    let current = AtomicUsize::new(0);
    let max_seen = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..10 {
            sc.spawn(|| {
                let sem = InterProcessSemaphoreV2::new(&c, "/test", 3).unwrap();
                for _ in 0..3 {
                    let lease = sem.try_acquire_for(timing().wait()).unwrap().expect("lease");
                    let now = current.fetch_add(1, Ordering::SeqCst) + 1;
                    max_seen.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    current.fetch_sub(1, Ordering::SeqCst);
                    drop(lease);
                }
            });
        }
    });
    let max = max_seen.load(Ordering::SeqCst);
    assert!(max <= 3, "never more than 3 leases out: {max}");
    assert!(max >= 2, "leases were really shared: {max}");
}

#[test]
fn test_simple_full_semaphore_times_out() {
    let s = server();
    let c = client(&s);
    let sem = InterProcessSemaphoreV2::new(&c, "/test", 2).unwrap();
    let leases = sem.acquire_many(2).unwrap();
    let t0 = Instant::now();
    assert!(sem.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    assert!(t0.elapsed() >= Duration::from_millis(200));
    drop(leases);
    assert!(sem.try_acquire_for(timing().wait()).unwrap().is_some());
    assert!(InterProcessSemaphoreV2::new(&c, "/test", 0).is_err());
    assert!(sem.acquire_many(3).is_err());
}

#[test]
fn test_acquire_after_lost_server() {
    let s = server();
    let c = client(&s);
    let sem = InterProcessSemaphoreV2::new(&c, "/test", 1).unwrap();
    let lease = sem.acquire().unwrap();
    let events = lease.events();
    s.stop().unwrap();
    assert_eq!(events.recv_timeout(timing().wait()).unwrap(), LockEvent::Suspended);
    // The safe horizon passes first (the server may have expired the
    // session), then, longer than the session, the managed client declares
    // it lost.
    assert_eq!(events.recv_timeout(timing().wait()).unwrap(), LockEvent::HorizonPassed);
    assert_eq!(events.recv_timeout(timing().wait()).unwrap(), LockEvent::Lost);
    s.restart().unwrap();
    drop(lease);
    // Ten further acquisitions work on the new session.
    for _ in 0..10 {
        let l = sem
            .try_acquire_for(timing().wait())
            .unwrap()
            .expect("acquire after the outage");
        drop(l);
    }
}
