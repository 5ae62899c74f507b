//! `MultiLock`: Curator's `TestInterProcessMultiMutex` ported by name (with the
//! inherited mutex scenarios), plus what our version adds: one canonical lock
//! order (no deadlock when two multi-locks list the same locks differently), one
//! deadline for the whole set, and a release that reports every error.
//!
//! Every test runs on the backend chosen by `ZK_TEST_SERVER` (embedded by
//! default, `apache` for real ZooKeeper).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{connect, lock_children, server};
use crossbeam_channel::{unbounded, RecvTimeoutError};
use zk_framework::CuratorFramework;
use zk_recipes::{
    Error, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, MultiLock,
};
use zk_testing::{wait_until, Timing};

const PATH_1: &str = "/locks/our-lock-1";
const PATH_2: &str = "/locks/our-lock-2";

// ---- helpers -------------------------------------------------------------------------------

fn make_lock(c: &CuratorFramework) -> MultiLock {
    MultiLock::from_paths(c, &[PATH_1, PATH_2]).unwrap()
}

fn ten_s() -> Duration {
    Timing::from_env().scale(Duration::from_secs(10))
}

// ---- the inherited TestInterProcessMutexBase scenarios -------------------------------------

#[test]
fn test_locker() {
    let server = server();
    let client = connect(&server.connect_string());
    let lock = make_lock(&client);
    {
        let _g = lock.try_acquire_for(ten_s()).unwrap().expect("acquired");
        assert!(lock.is_acquired_in_this_process());
    }
    assert!(!lock.is_acquired_in_this_process());
    assert!(lock_children(&client, PATH_1).is_empty() && lock_children(&client, PATH_2).is_empty());
}

fn foo_bar_snafu(lock: &MultiLock, in_bar: impl FnOnce()) {
    // foo
    let g1 = lock.try_acquire_for(ten_s()).unwrap().expect("foo");
    assert!(lock.is_acquired_in_this_process());
    {
        // bar
        let g2 = lock.try_acquire_for(ten_s()).unwrap().expect("bar");
        assert!(lock.is_acquired_in_this_process());
        in_bar();
        {
            // snafu
            let g3 = lock.try_acquire_for(ten_s()).unwrap().expect("snafu");
            assert!(lock.is_acquired_in_this_process());
            g3.release().unwrap();
            assert!(lock.is_acquired_in_this_process());
        }
        g2.release().unwrap();
        assert!(lock.is_acquired_in_this_process());
    }
    g1.release().unwrap();
    assert!(!lock.is_acquired_in_this_process());
}

#[test]
fn test_reentrant() {
    let server = server();
    let client = connect(&server.connect_string());
    let lock = make_lock(&client);
    foo_bar_snafu(&lock, || {});
    // Reentrant levels reuse one node per lock.
    assert!(lock_children(&client, PATH_1).is_empty());
}

#[test]
fn test_reentrant_2_threads() {
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let lock = make_lock(&client);
    std::thread::scope(|s| {
        foo_bar_snafu(&lock, || {
            // Another thread contends on the same instance while we hold 2 levels.
            let other = s.spawn(|| {
                lock.try_acquire_for(t.scale(Duration::from_millis(300)))
                    .unwrap()
                    .is_some()
            });
            assert!(!other.join().unwrap(), "the other thread must not get the multi-lock");
            assert!(lock.is_acquired_in_this_process());
        });
    });
    assert!(lock_children(&client, PATH_1).is_empty() && lock_children(&client, PATH_2).is_empty());
}

#[test]
fn test_reentrant_single_lock() {
    const THREADS: usize = 10;
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let lock = make_lock(&client);
    let has_lock = AtomicBool::new(false);
    let first = AtomicBool::new(true);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let g = lock.try_acquire_for(t.wait()).unwrap().expect("acquired");
                assert!(
                    has_lock
                        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok(),
                    "two threads hold the shared multi-lock"
                );
                if first.swap(false, Ordering::SeqCst) {
                    // Hold until every other thread is queued on the first lock.
                    assert!(wait_until(t.wait(), || lock_children(&client, PATH_1).len() == THREADS));
                } else {
                    std::thread::sleep(Duration::from_millis(20));
                }
                has_lock.store(false, Ordering::SeqCst);
                g.release().unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), THREADS);
}

#[test]
fn test_2_clients() {
    let t = Timing::from_env();
    let server = server();
    let c1 = connect(&server.connect_string());
    let c2 = connect(&server.connect_string());
    let l1 = make_lock(&c1);
    let l2 = make_lock(&c2);
    let (tx, rx) = unbounded::<usize>();
    let (go1_tx, go1_rx) = unbounded::<()>();
    let (go2_tx, go2_rx) = unbounded::<()>();
    std::thread::scope(|s| {
        for (i, l, go) in [(1, &l1, go1_rx), (2, &l2, go2_rx)] {
            let tx = tx.clone();
            s.spawn(move || {
                let g = l.try_acquire_for(t.wait()).unwrap().expect("acquired");
                tx.send(i).unwrap();
                go.recv_timeout(t.wait() * 2).unwrap();
                g.release().unwrap();
            });
        }
        let first = rx.recv_timeout(t.wait()).unwrap();
        let (holder, waiter) = if first == 1 { (&l1, &l2) } else { (&l2, &l1) };
        assert!(holder.is_acquired_in_this_process());
        assert!(!waiter.is_acquired_in_this_process());
        // Still exclusive a while later.
        assert_eq!(
            rx.recv_timeout(t.scale(Duration::from_millis(300))),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(holder.is_acquired_in_this_process() && !waiter.is_acquired_in_this_process());
        if first == 1 { &go1_tx } else { &go2_tx }.send(()).unwrap();
        let second = rx
            .recv_timeout(ten_s())
            .expect("the other client acquires after the release");
        assert_ne!(first, second);
        if second == 1 { &go1_tx } else { &go2_tx }.send(()).unwrap();
    });
}

/// Two instances on one client: the holder's session is expired, the waiter
/// re-queues on the new session and acquires.
#[test]
fn test_killed_session() {
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let (tx, rx) = unbounded::<usize>();
    let (stop_tx, stop_rx) = unbounded::<()>();
    std::thread::scope(|s| {
        for i in 0..2 {
            let (client, tx, stop) = (&client, tx.clone(), stop_rx.clone());
            s.spawn(move || {
                let lock = make_lock(client);
                let g = lock.try_acquire_for(t.wait() * 2).unwrap().expect("acquired");
                tx.send(i).unwrap();
                let _ = stop.recv_timeout(t.wait() * 3);
                // The first holder's lock is gone with its session: its release may
                // fail; it must not panic.
                let _ = g.release();
            });
        }
        let first = rx.recv_timeout(t.wait()).expect("first acquire");
        assert_eq!(
            rx.recv_timeout(t.scale(Duration::from_millis(200))),
            Err(RecvTimeoutError::Timeout)
        );
        let zk = client.zookeeper_client();
        server.expire_session(zk.session_id(), &zk.session_password()).unwrap();
        let second = rx
            .recv_timeout(t.wait())
            .expect("the waiter acquires after the session expiry");
        assert_ne!(first, second);
        drop(stop_tx);
    });
}

// ---- what our MultiLock adds ---------------------------------------------------------------

/// Two multi-locks over {A, B} listed in opposite orders, many rounds: with
/// Curator's list order this can deadlock; ours takes both in one order.
#[test]
fn opposite_orders_never_deadlock() {
    const ROUNDS: usize = 50;
    let t = Timing::from_env();
    let server = Arc::new(server());
    let inside = Arc::new(AtomicBool::new(false));
    let (tx, rx) = unbounded::<std::result::Result<usize, String>>();
    let start = Instant::now();
    for order in [["/multi/A", "/multi/B"], ["/multi/B", "/multi/A"]] {
        let (server, inside, tx) = (server.clone(), inside.clone(), tx.clone());
        // Detached threads: a deadlock fails the test at the deadline instead of
        // hanging it.
        std::thread::spawn(move || {
            let client = connect(&server.connect_string());
            let multi = MultiLock::from_paths(&client, &order).unwrap();
            assert_eq!(multi.order(), vec!["/multi/A".to_string(), "/multi/B".to_string()]);
            for round in 0..ROUNDS {
                match multi.try_acquire_for(t.scale(Duration::from_secs(10))) {
                    Ok(Some(g)) => {
                        if inside.swap(true, Ordering::SeqCst) {
                            let _ = tx.send(Err(format!("{order:?}: two holders in round {round}")));
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                        inside.store(false, Ordering::SeqCst);
                        g.release().unwrap();
                    }
                    Ok(None) => {
                        let _ = tx.send(Err(format!("{order:?}: round {round} timed out")));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("{order:?}: round {round}: {e}")));
                        return;
                    }
                }
            }
            let _ = tx.send(Ok(ROUNDS));
        });
    }
    let deadline = Instant::now() + t.scale(Duration::from_secs(120));
    for _ in 0..2 {
        match rx.recv_deadline(deadline) {
            Ok(Ok(n)) => assert_eq!(n, ROUNDS),
            Ok(Err(e)) => panic!("{e}"),
            Err(_) => panic!("the two multi-locks did not finish before the deadline (deadlock?)"),
        }
    }
    println!(
        "2 x {ROUNDS} rounds over {{A, B}} in opposite orders in {:?}",
        start.elapsed()
    );
}

/// A multi-lock of 3 whose last lock is held elsewhere: `try_acquire_for(300 ms)`
/// gives up after about 300 ms in total (Curator: 300 ms per lock), and releases
/// the first two.
#[test]
fn one_overall_deadline() {
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let other = connect(&server.connect_string());
    let held = InterProcessMutex::new(&other, "/multi/c").unwrap();
    let h = held.acquire().unwrap();
    let multi = MultiLock::from_paths(&client, &["/multi/c", "/multi/a", "/multi/b"]).unwrap();
    assert_eq!(multi.order(), ["/multi/a", "/multi/b", "/multi/c"]);
    let start = Instant::now();
    let got = multi.try_acquire_for(Duration::from_millis(300)).unwrap();
    let took = start.elapsed();
    println!("multi-lock of 3 timed out after {took:?} (one deadline; Curator's per-lock timeouts allow up to 900 ms)");
    assert!(got.is_none());
    assert!(
        took >= Duration::from_millis(250),
        "returned before the deadline: {took:?}"
    );
    assert!(took < t.scale(Duration::from_secs(5)), "took {took:?}");
    assert!(!multi.is_acquired_in_this_process());
    // Nothing of ours remains: the first two were released, our queued node on
    // the third was removed.
    assert!(
        lock_children(&client, "/multi/a").is_empty(),
        "{:?}",
        lock_children(&client, "/multi/a")
    );
    assert!(
        lock_children(&client, "/multi/b").is_empty(),
        "{:?}",
        lock_children(&client, "/multi/b")
    );
    assert_eq!(lock_children(&client, "/multi/c").len(), 1);
    h.release().unwrap();
    // Now it can be taken.
    let g = multi
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("acquired once /multi/c is free");
    g.release().unwrap();
}

/// Any mix of lock kinds; a read/write lock's write half is taken before its
/// read half (a downgrade), whatever the given order.
#[test]
fn mixed_lock_kinds_in_canonical_order() {
    let t = Timing::from_env();
    let server = server();
    let client = connect(&server.connect_string());
    let rw = InterProcessReadWriteLock::new(&client, "/mix/rw").unwrap();
    let locks: Vec<Arc<dyn InterProcessLock>> = vec![
        Arc::new(rw.read_lock().clone()),
        Arc::new(InterProcessSemaphoreMutex::new(&client, "/mix/sem").unwrap()),
        Arc::new(rw.write_lock().clone()),
        Arc::new(InterProcessMutex::new(&client, "/mix/mutex").unwrap()),
    ];
    let multi = MultiLock::new(locks).unwrap();
    assert_eq!(multi.order(), ["/mix/mutex", "/mix/rw", "/mix/rw", "/mix/sem"]);
    let g = multi.try_acquire_for(t.wait()).unwrap().expect("acquired");
    assert!(rw.write_lock().is_acquired_in_this_process() && rw.read_lock().is_acquired_in_this_process());
    // Another client can take none of them.
    let other = connect(&server.connect_string());
    let rw2 = InterProcessReadWriteLock::new(&other, "/mix/rw").unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(rw2
                .read_lock()
                .try_acquire_for(Duration::from_millis(200))
                .unwrap()
                .is_none());
            let m2 = InterProcessMutex::new(&other, "/mix/mutex").unwrap();
            assert!(m2.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
        });
    });
    g.release().unwrap();
    assert!(!rw.write_lock().is_acquired_in_this_process() && !rw.read_lock().is_acquired_in_this_process());
    assert!(lock_children(&client, "/mix/rw").is_empty());
}

/// Two distinct exclusive locks on one path would wait on each other for ever;
/// the multi-lock refuses them up front. The same instance twice is reentrant
/// and fine.
#[test]
fn duplicate_exclusive_locks_are_refused() {
    let server = server();
    let client = connect(&server.connect_string());
    let err = MultiLock::from_paths(&client, &["/dup/a", "/dup/b", "/dup/a"]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    let m = Arc::new(InterProcessMutex::new(&client, "/dup/a").unwrap());
    let same_twice = MultiLock::new(vec![m.clone() as Arc<dyn InterProcessLock>, m.clone()]).unwrap();
    let g = same_twice
        .try_acquire_for(Duration::from_secs(5))
        .unwrap()
        .expect("reentrant");
    g.release().unwrap();
    assert!(!m.is_acquired_in_this_process());
    // Two read halves of distinct read/write locks on one path share.
    let r1 = InterProcessReadWriteLock::new(&client, "/dup/rw").unwrap();
    let r2 = InterProcessReadWriteLock::new(&client, "/dup/rw").unwrap();
    let readers = MultiLock::new(vec![
        Arc::new(r1.read_lock().clone()) as Arc<dyn InterProcessLock>,
        Arc::new(r2.read_lock().clone()),
    ])
    .unwrap();
    readers
        .try_acquire_for(Duration::from_secs(5))
        .unwrap()
        .expect("readers share")
        .release()
        .unwrap();
}
