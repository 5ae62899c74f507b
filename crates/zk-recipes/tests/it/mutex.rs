//! InterProcessMutex: Curator's §7.1, §7.2 and §7.7 scenarios ported by name
//! (the scenarios every lock shares are in `lock_contract`),
//! plus loss signals, fencing tokens, the herd count and bad input. Runs on the
//! embedded server by default and on Apache ZooKeeper with
//! `ZK_TEST_SERVER=apache`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::support::{client, lock_children, server, timing};
use crossbeam_channel::unbounded;
use parking_lot::Mutex;
use zk_framework::proto::OpCode;
use zk_framework::ConnectionState;
use zk_recipes::{Error, InterProcessMutex, LockEvent, LockStatus, Revoker};
use zk_testing::{wait_until, Backend, TestingServer};

const LOCK: &str = "/locks/our-lock";

#[test]
fn test_reentrant() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let foo = m.try_acquire_for(Duration::from_secs(10)).unwrap().unwrap();
    let before = s.embedded().map(|e| e.stats());
    {
        let bar = m.try_acquire_for(Duration::from_secs(10)).unwrap().unwrap();
        assert!(m.is_acquired_in_this_process());
        {
            let snafu = m.acquire().unwrap();
            assert_eq!(m.hold_count(), 3);
            drop(snafu);
        }
        assert!(m.is_acquired_in_this_process());
        drop(bar);
    }
    if let (Some(e), Some(before)) = (s.embedded(), before) {
        let after = e.stats();
        for op in [
            OpCode::Create,
            OpCode::Create2,
            OpCode::GetChildren,
            OpCode::GetChildren2,
            OpCode::Delete,
        ] {
            assert_eq!(
                after.requests(op),
                before.requests(op),
                "a nested acquire/release makes no {op:?} request"
            );
        }
    }
    assert!(m.is_acquired_in_this_process());
    drop(foo);
    assert!(!m.is_acquired_in_this_process());
    assert!(m.participant_nodes().unwrap().is_empty());
}

#[test]
fn reentrant_reacquire_is_cheap_and_makes_no_request() {
    let s = TestingServer::start_backend(Backend::Embedded).unwrap();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let outer = m.acquire().unwrap();
    let e = s.embedded().unwrap();
    // The holding's own-node watch is set right after the grant, without the
    // acquire waiting for it: let it arrive before counting.
    assert!(wait_until(timing().wait(), || e.stats().requests(OpCode::Exists) >= 1));
    let before: u64 = OpCode::ALL.iter().map(|&op| e.stats().requests(op)).sum();
    for _ in 0..1000 {
        let g = m.acquire().unwrap();
        drop(g);
    }
    let after: u64 = OpCode::ALL.iter().map(|&op| e.stats().requests(op)).sum();
    // Pings may happen meanwhile; nothing else.
    let pings = e.stats().requests(OpCode::Ping);
    assert!(
        after - before <= pings,
        "nested acquires sent requests: {before} -> {after}"
    );
    drop(outer);
}

/// A lock on a path this client has not used makes its parent in the same
/// round trip as its node, and needs no listing (its node is the parent's
/// first child); a second acquire sends no parent create; a parent deleted
/// behind the client's back is made again.
#[test]
fn a_fresh_path_costs_one_round_trip_and_a_deleted_parent_is_made_again() {
    let s = TestingServer::start_backend(Backend::Embedded).unwrap();
    let e = s.embedded().unwrap();
    let c = client(&s);
    let admin = client(&s);
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/fresh/root")
        .unwrap();
    let path = "/fresh/root/lock";
    let m = InterProcessMutex::new(&c, path).unwrap();
    let count = |op| e.stats().requests(op);
    let writes = || count(OpCode::Create) + count(OpCode::CreateContainer) + count(OpCode::Create2);
    let (w0, l0) = (writes(), count(OpCode::GetChildren) + count(OpCode::GetChildren2));
    let g = m.acquire().unwrap();
    let (w1, l1) = (writes(), count(OpCode::GetChildren) + count(OpCode::GetChildren2));
    assert_eq!((w1 - w0, l1 - l0), (2, 0), "the parent and the node, no listing");
    assert_eq!(count(OpCode::CreateContainer), 1);
    g.release().unwrap();
    // Known now: a node and a listing, no parent.
    let other = InterProcessMutex::new(&c, path).unwrap();
    let g = other.acquire().unwrap();
    assert_eq!(count(OpCode::CreateContainer), 1, "no second parent create");
    assert_eq!(writes() - w1, 1);
    g.release().unwrap();
    // The parent goes (as an empty container does); the next acquire makes it again.
    admin.delete().for_path(path).unwrap();
    let g = m
        .try_acquire_for(timing().wait())
        .unwrap()
        .expect("acquired under a parent made again");
    assert!(admin.check_exists(path).unwrap().is_some());
    g.release().unwrap();
    assert!(lock_children(&admin, path).is_empty());
}

#[test]
fn test_reentrant_2_threads() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let g1 = m.acquire().unwrap();
    let g2 = m.acquire().unwrap();
    std::thread::scope(|sc| {
        let other = sc.spawn(|| {
            // The second thread contends: its node queues and is removed on timeout.
            let got = m.try_acquire_for(Duration::from_millis(300)).unwrap();
            assert!(got.is_none());
            assert!(!m.is_owned_by_current_thread());
        });
        other.join().unwrap();
    });
    assert!(m.is_acquired_in_this_process());
    assert_eq!(
        m.participant_nodes().unwrap().len(),
        1,
        "the timed-out node was deleted"
    );
    drop(g2);
    assert!(m.is_acquired_in_this_process());
    drop(g1);
    assert!(!m.is_acquired_in_this_process());
    // Now the other thread can take it.
    std::thread::scope(|sc| {
        sc.spawn(|| assert!(m.try_acquire_for(timing().wait()).unwrap().is_some()))
            .join()
            .unwrap();
    });
}

#[test]
fn test_reentrant_single_lock() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let has_lock = AtomicBool::new(false);
    let rounds = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..10 {
            sc.spawn(|| {
                let g = m.try_acquire_for(timing().wait()).unwrap().expect("acquired");
                assert!(
                    has_lock
                        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok(),
                    "two threads of one instance held the lock at once"
                );
                std::thread::yield_now();
                rounds.fetch_add(1, Ordering::SeqCst);
                has_lock.store(false, Ordering::SeqCst);
                drop(g);
            });
        }
    });
    assert_eq!(rounds.load(Ordering::SeqCst), 10);
}

#[test]
fn node_layout_matches_curator() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let g = m.acquire().unwrap();
    let path = g.lock_path();
    let name = path.rsplit('/').next().unwrap();
    assert!(zk_framework::paths::is_protected(name), "{name}");
    assert!(name.ends_with("-lock-0000000000"), "{name}");
    let (data, stat) = c.get_data(&path).unwrap();
    // The holder identity (the guide's "Operating locks"), keeping the client's
    // default data (Curator's: the host address) as its `addr`.
    match zk_recipes::HolderIdentity::parse(&data) {
        zk_recipes::HolderIdentity::Process(p) => assert_eq!(p.addr.as_bytes(), c.default_data()),
        other => panic!("node data is not the holder identity: {other:?}"),
    }
    assert_ne!(stat.ephemeral_owner, 0, "ephemeral");
    assert_eq!(stat.czxid, g.fencing_token());
    if let Some(e) = s.embedded() {
        let tree = e.dump_tree();
        let parent = tree.iter().find(|(p, _, _)| p == LOCK).unwrap();
        assert_eq!(parent.1.ephemeral_owner, 0);
    }
    drop(g);
}

/// A holder cut off from the server (a partition: its session times out on the
/// server) hears `Suspended` at its read timeout (2/3 of the session timeout),
/// before the server can expire the session and let another session in.
#[test]
fn holder_is_told_before_another_session_acquires() {
    let s = server();
    let proxy = zk_testing::proxy::FaultProxy::start(&s.connect_string()).unwrap();
    let t = timing();
    let holder_client = zk_framework::CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(zk_framework::RetryNTimes::new(0, Duration::ZERO))
        .build()
        .unwrap();
    holder_client.block_until_connected(t.wait()).unwrap();
    let other = client(&s);
    let m1 = InterProcessMutex::new(&holder_client, LOCK).unwrap();
    let m2 = InterProcessMutex::new(&other, LOCK).unwrap();
    let g = m1.acquire().unwrap();
    let events = g.events();
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| {
            let got = m2.try_acquire_for(t.wait() * 2).unwrap();
            (got.is_some(), Instant::now())
        });
        assert!(wait_until(t.wait(), || m2
            .participant_nodes()
            .is_ok_and(|p| p.len() == 2)));
        proxy.freeze(true);
        let first = events
            .recv_timeout(t.wait())
            .expect("the holder hears of the partition");
        let told = Instant::now();
        assert_eq!(first, LockEvent::Suspended);
        assert_ne!(g.status(), LockStatus::Held);
        let (acquired, at) = waiter.join().unwrap();
        assert!(
            acquired,
            "the other session acquires once the server expired the holder"
        );
        assert!(
            told < at,
            "told {told:?} must come before the other acquisition at {at:?}"
        );
        proxy.freeze(false);
        let mut last = first;
        while last != LockEvent::Lost {
            last = events.recv_timeout(t.wait()).expect("Lost follows");
        }
    });
    drop(g);
    holder_client.close();
}

#[test]
fn test_waiting_process_killed_server() {
    let s = server();
    let c = client(&s);
    let states = c.state_receiver();
    let done = AtomicUsize::new(0);
    let (held_tx, held_rx) = unbounded::<()>();
    let (go_tx, go_rx) = unbounded::<()>();
    std::thread::scope(|sc| {
        for _ in 0..2 {
            let (c, held_tx, go_rx, done) = (&c, held_tx.clone(), go_rx.clone(), &done);
            sc.spawn(move || {
                let m = InterProcessMutex::new(c, LOCK).unwrap();
                // Each thread has its own instance; both must get the lock in the end.
                loop {
                    match m.try_acquire_for(timing().wait() * 2) {
                        Ok(Some(g)) => {
                            held_tx.send(()).unwrap();
                            let _ = go_rx.recv_timeout(timing().wait() * 2);
                            let _ = g.release(); // may fail while the server is down
                            break;
                        }
                        Ok(None) => panic!("timed out"),
                        Err(e) => {
                            // The waiter may see connection loss while the server is
                            // down; it tries again, like Curator's callers do.
                            assert!(e.is_retryable(), "{e}");
                        }
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        held_rx.recv_timeout(timing().wait()).expect("first holder");
        s.stop().unwrap();
        loop {
            let st = states.recv_timeout(timing().wait()).expect("a state change");
            if !st.is_connected() {
                break;
            }
        }
        s.restart().unwrap();
        go_tx.send(()).unwrap();
        held_rx.recv_timeout(timing().wait() * 2).expect("second holder");
        go_tx.send(()).unwrap();
    });
    assert_eq!(done.load(Ordering::SeqCst), 2);
}

#[test]
fn acquire_after_close_is_a_typed_error() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    c.close();
    let err = m.try_acquire_for(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err, Error::ZooKeeper(zk_framework::Error::Closed));
}

#[test]
fn release_errors_are_typed() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    assert!(
        matches!(m.release(), Err(Error::NotOwner { .. })),
        "release without acquire"
    );
    m.acquire_raw().unwrap();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            assert!(
                matches!(m.release(), Err(Error::NotOwner { .. })),
                "release from another thread"
            )
        })
        .join()
        .unwrap();
    });
    m.release().unwrap();
    assert!(matches!(m.release(), Err(Error::NotOwner { .. })), "double release");
    assert!(m.participant_nodes().unwrap().is_empty());
    for bad in ["", "relative", "/trailing/", "/a/../b", "/a\0b", "/", "/a\u{1}"] {
        assert!(InterProcessMutex::new(&c, bad).is_err(), "{bad:?} must be rejected");
    }
}

#[test]
fn huge_timeouts_wait_without_overflow() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let g = m.try_acquire_for(Duration::MAX).unwrap();
    assert!(g.is_some());
}

#[test]
fn fencing_tokens_increase_in_grant_order() {
    let s = server();
    let clients: Vec<_> = (0..3).map(|_| client(&s)).collect();
    let grants = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for c in &clients {
            for _ in 0..3 {
                let grants = &grants;
                sc.spawn(move || {
                    let m = InterProcessMutex::new(c, LOCK).unwrap();
                    for _ in 0..5 {
                        let g = m.try_acquire_for(timing().wait()).unwrap().unwrap();
                        grants.lock().push(g.fencing_token());
                        drop(g);
                    }
                });
            }
        }
    });
    let grants = grants.into_inner();
    assert_eq!(grants.len(), 45);
    assert!(
        grants.windows(2).all(|w| w[0] < w[1]),
        "tokens in grant order: {grants:?}"
    );
    // Across sessions too: a new client's grant is larger still.
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    assert!(m.acquire().unwrap().fencing_token() > *grants.last().unwrap());
}

/// A deep queue whose waiters are threads of one client: each waiter behind
/// a holder of its client takes the lock on its predecessor's deletion alone
/// (the client's grant record knows the predecessor was granted), so the
/// drain lists the queue no more and each release notifies one waiter.
/// Exclusion and FIFO order hold throughout.
#[test]
fn deep_queue_in_one_client_hands_over_without_listing_again() {
    deep_queue(1, "/locks/deep-one");
}

/// The same queue over ten clients (sessions) of one process, as ten
/// processes would be: each client knows only its own grants (per-client
/// state), so a waiter whose predecessor was another client's lists the
/// queue once when it is deleted; never more than one listing per handoff,
/// and still one waiter woken per release.
#[test]
fn deep_queue_over_several_clients_lists_at_most_once_per_handoff() {
    deep_queue(10, "/locks/deep-many");
}

fn deep_queue(sessions: usize, path: &str) {
    const WAITERS: usize = 200;
    let s = server();
    let clients: Vec<_> = (0..sessions).map(|_| client(&s)).collect();
    let holder = InterProcessMutex::new(&clients[0], path).unwrap();
    let g = holder.acquire().unwrap();
    let inside = AtomicBool::new(false);
    let order = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for i in 0..WAITERS {
            let (c, inside, order) = (&clients[i % sessions], &inside, &order);
            sc.spawn(move || {
                let m = InterProcessMutex::new(c, path).unwrap();
                // Queue one at a time, so that the queue's order is known.
                let g = m.try_acquire_for(timing().wait() * 8).unwrap().expect("acquired");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                order.lock().push((i, g.fencing_token()));
                inside.store(false, Ordering::SeqCst);
                drop(g);
            });
            assert!(wait_until(timing().wait(), || holder
                .participant_nodes()
                .is_ok_and(|p| p.len() == i + 2)));
        }
        let e = s.embedded();
        if let Some(e) = e {
            // Every waiter has set its watch.
            assert!(wait_until(timing().wait(), || e.stats().requests(OpCode::GetData)
                >= WAITERS as u64));
        }
        let before = e.map(|e| (e.stats().requests(OpCode::GetChildren), e.stats().watch_notifications));
        drop(g);
        assert!(wait_until(timing().wait() * 8, || order.lock().len() == WAITERS));
        if let (Some(e), Some((lists, notes))) = (e, before) {
            let lists = e.stats().requests(OpCode::GetChildren) - lists;
            let notes = e.stats().watch_notifications - notes;
            // A waiter lists when its predecessor was granted through another
            // client (waiter 0 watched the head, which needs no record).
            let expected = (1..WAITERS).filter(|i| (i - 1) % sessions != i % sessions).count() as u64;
            assert_eq!(lists, expected, "listings during the drain");
            // Per handoff, the next waiter's watch and the releaser's own-node
            // watch (set while it waited) fire on the same delete: one
            // notification when they are one session's (the server notifies a
            // session once per node), two across sessions. The last release
            // may come after the count.
            let per = if sessions == 1 { 1 } else { 2 };
            assert!(
                (per * WAITERS as u64..=per * WAITERS as u64 + 1).contains(&notes),
                "{notes} notifications for {WAITERS} handoffs"
            );
        }
    });
    // Granted in queue order, tokens increasing.
    let order = order.into_inner();
    assert_eq!(
        order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        (0..WAITERS).collect::<Vec<_>>()
    );
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1));
    for c in clients {
        c.close();
    }
}

/// A predecessor that gives up (its timed acquire ends) was never granted:
/// the waiter behind it lists the queue again and keeps waiting for the holder.
#[test]
fn a_waiter_behind_one_that_gave_up_keeps_waiting() {
    let s = server();
    let (a, b, c) = (client(&s), client(&s), client(&s));
    let holder = InterProcessMutex::new(&a, "/locks/gave-up").unwrap();
    let g = holder.acquire().unwrap();
    let released = AtomicBool::new(false);
    let got = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let quitter = sc.spawn(|| {
            let m = InterProcessMutex::new(&b, "/locks/gave-up").unwrap();
            let timed_out = m.try_acquire_for(Duration::from_millis(500)).unwrap().is_none();
            timed_out
        });
        assert!(wait_until(timing().wait(), || holder
            .participant_nodes()
            .is_ok_and(|p| p.len() == 2)));
        sc.spawn(|| {
            let m = InterProcessMutex::new(&c, "/locks/gave-up").unwrap();
            let g = m.try_acquire_for(timing().wait() * 4).unwrap().expect("acquired");
            assert!(released.load(Ordering::SeqCst), "acquired while the holder held");
            got.store(true, Ordering::SeqCst);
            drop(g);
        });
        assert!(wait_until(timing().wait(), || holder
            .participant_nodes()
            .is_ok_and(|p| p.len() == 3)));
        assert!(quitter.join().unwrap(), "the quitter timed out");
        // Its node is gone; the last waiter heard it and must still wait.
        assert!(wait_until(timing().wait(), || holder
            .participant_nodes()
            .is_ok_and(|p| p.len() == 2)));
        assert!(!wait_until(Duration::from_millis(300), || got.load(Ordering::SeqCst)));
        released.store(true, Ordering::SeqCst);
        drop(g);
        assert!(wait_until(timing().wait(), || got.load(Ordering::SeqCst)));
    });
    for c in [a, b, c] {
        c.close();
    }
}

/// With 100 waiters queued, each release wakes exactly one of them.
#[test]
fn herd_each_release_notifies_exactly_one_waiter() {
    let s = TestingServer::start_backend(Backend::Embedded).unwrap();
    let clients: Vec<_> = (0..10).map(|_| client(&s)).collect();
    let holder = InterProcessMutex::new(&clients[0], LOCK).unwrap();
    let mut first = Some(holder.acquire().unwrap());
    let (got_tx, got_rx) = unbounded::<usize>();
    let releases: Vec<_> = (0..100).map(|_| crossbeam_channel::bounded::<()>(1)).collect();
    let start = Barrier::new(101);
    std::thread::scope(|sc| {
        for (i, (_, rel_rx)) in releases.iter().enumerate() {
            let (c, got_tx, start) = (&clients[i % 10], got_tx.clone(), &start);
            sc.spawn(move || {
                let m = InterProcessMutex::new(c, LOCK).unwrap();
                start.wait();
                let g = m.try_acquire_for(timing().wait() * 4).unwrap().expect("acquired");
                got_tx.send(i).unwrap();
                rel_rx.recv().unwrap();
                drop(g);
            });
        }
        start.wait();
        assert!(wait_until(timing().wait(), || holder
            .participant_nodes()
            .is_ok_and(|p| p.len() == 101)));
        let e = s.embedded().unwrap();
        // Let every waiter set its watch (each does getData with a watch on its
        // predecessor right after listing).
        assert!(wait_until(timing().wait(), || e.stats().requests(OpCode::GetData) >= 100));
        let mut current: Option<usize> = None;
        let mut deltas = Vec::new();
        for round in 0..100 {
            let before = e.stats().watch_notifications;
            match current.take() {
                None => drop(first.take()),
                Some(i) => releases[i].0.send(()).unwrap(),
            }
            let next = got_rx.recv_timeout(timing().wait()).expect("next waiter acquires");
            let after = e.stats().watch_notifications;
            deltas.push(after - before);
            current = Some(next);
            let _ = round;
        }
        releases[current.unwrap()].0.send(()).unwrap();
        // Per release: one notification to the next waiter, plus the
        // releasing holder's own-node watch (which keeps its loss signal true
        // from the grant on; it may be counted after the next grant). No
        // other waiter hears anything.
        assert!(
            deltas.iter().all(|&d| (1..=2).contains(&d)),
            "notifications per release: {deltas:?}"
        );
        assert!(
            deltas.iter().sum::<u64>() <= 200,
            "notifications per release: {deltas:?}"
        );
    });
}

#[test]
fn loss_signal_reports_suspended_then_reconnected_on_a_blip() {
    let s = TestingServer::start_backend(Backend::Embedded).unwrap();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let g = m.acquire().unwrap();
    let rx = g.events();
    s.drop_connections().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), LockEvent::Suspended);
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), LockEvent::Reconnected);
    assert!(g.is_held(), "same session: still held");
    assert!(wait_until(timing().wait(), || c.state() == Some(ConnectionState::Reconnected)));
}

#[test]
fn loss_signal_reports_a_deleted_node() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let g = m.acquire().unwrap();
    let rx = g.events();
    let admin = client(&s);
    admin.delete().for_path(&g.lock_path()).unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), LockEvent::Lost);
    assert_eq!(g.status(), LockStatus::Lost);
}

#[test]
fn test_revoking() {
    let s = server();
    let c = client(&s);
    let m = InterProcessMutex::new(&c, LOCK).unwrap();
    let (rev_tx, rev_rx) = unbounded::<()>();
    m.make_revocable(move || {
        let _ = rev_tx.send(());
    });
    std::thread::scope(|sc| {
        let holder = sc.spawn(|| {
            let g = m.acquire().unwrap();
            rev_rx.recv_timeout(timing().wait()).expect("revocation requested");
            drop(g);
        });
        assert!(wait_until(timing().wait(), || m
            .participant_nodes()
            .is_ok_and(|p| p.len() == 1)));
        let node = m.participant_nodes().unwrap().remove(0).node;
        let (data, _) = c.get_data(&node).unwrap();
        assert!(data.is_empty(), "revocable locks write empty data");
        let other = client(&s);
        Revoker::attempt_revoke(&other, &node).unwrap();
        let m2 = InterProcessMutex::new(&other, LOCK).unwrap();
        assert!(m2.try_acquire_for(timing().wait()).unwrap().is_some());
        holder.join().unwrap();
    });
}

/// A waiter whose session expires re-queues on the new session and leaves no
/// orphan behind (Curator's testKilledSession from the waiter's side).
#[test]
fn waiter_session_expiry_requeues_without_orphans() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let holder = InterProcessMutex::new(&c1, LOCK).unwrap();
    let waiter = InterProcessMutex::new(&c2, LOCK).unwrap();
    let g = holder.acquire().unwrap();
    std::thread::scope(|sc| {
        let w = sc.spawn(|| waiter.try_acquire_for(timing().wait()).unwrap().is_some());
        assert!(wait_until(timing().wait(), || holder
            .participant_nodes()
            .is_ok_and(|p| p.len() == 2)));
        let first_queue = holder.participant_nodes().unwrap();
        let zk = c2.zookeeper_client();
        s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
        // The waiter's old node goes; it queues again with a new one.
        assert!(wait_until(timing().wait(), || {
            let now = holder.participant_nodes().unwrap_or_default();
            now.len() == 2 && now[1] != first_queue[1]
        }));
        drop(g);
        assert!(w.join().unwrap(), "the waiter acquired on its new session");
    });
    assert!(holder.participant_nodes().unwrap().is_empty(), "no orphan");
}

/// Breaks a waiting node (`zk-lock break --node`, or any other client's
/// delete) and then releases the lock ahead of it. The waiter must not be
/// granted a lock whose node is gone: it queues again with a new node, behind
/// a contender that queued meanwhile, and the two never hold at once. With
/// `behind_a_granted_waiter`, the broken waiter watches another waiter of this
/// process that is granted first (the grant a waiter may infer without a
/// listing); otherwise it watches the holder at the head of the queue.
fn a_broken_waiter_queues_again(behind_a_granted_waiter: bool) {
    let s = server();
    let t = timing();
    let (admin, cw, cx) = (client(&s), client(&s), client(&s));
    let head = InterProcessMutex::new(&admin, LOCK).unwrap();
    let nodes = || head.participant_nodes().unwrap_or_default();
    let mut first = Some(head.acquire().unwrap());
    let (granted_tx, granted_rx) = crossbeam_channel::unbounded::<(&str, String)>();
    let (go_tx, go_rx) = crossbeam_channel::unbounded::<()>();
    std::thread::scope(|sc| {
        let waiter = |c: &zk_framework::CuratorFramework, name: &'static str| {
            let m = InterProcessMutex::new(c, LOCK).unwrap();
            let (granted_tx, go_rx) = (granted_tx.clone(), go_rx.clone());
            sc.spawn(move || {
                let g = m.try_acquire_for(t.wait()).unwrap().expect("granted in time");
                g.check().unwrap();
                let node = m.participant_nodes().unwrap()[0].node.clone();
                granted_tx.send((name, node)).unwrap();
                let _ = go_rx.recv_timeout(t.wait());
                g.check().expect("held until released");
                g.release().unwrap();
            })
        };
        let cp = client(&s);
        let mut p = None;
        if behind_a_granted_waiter {
            p = Some(waiter(&cp, "P"));
            assert!(wait_until(t.wait(), || nodes().len() == 2));
        }
        let w = waiter(&cw, "W");
        let queued = if behind_a_granted_waiter { 3 } else { 2 };
        assert!(wait_until(t.wait(), || nodes().len() == queued));
        let broken = nodes()[queued - 1].node.clone();
        admin.delete().for_path(&broken).unwrap();
        if behind_a_granted_waiter {
            // The holder goes; P holds next.
            drop(first.take());
            let (who, _) = granted_rx.recv_timeout(t.wait()).unwrap();
            assert_eq!(who, "P");
        }
        // X queues behind the current holder, where W's node was.
        let x = waiter(&cx, "X");
        assert!(wait_until(t.wait(), || nodes().len() == 2));
        // The holder ahead of both releases.
        if behind_a_granted_waiter {
            go_tx.send(()).unwrap();
        } else {
            drop(first.take());
        }
        let (who, node) = granted_rx.recv_timeout(t.wait()).unwrap();
        assert_eq!(who, "X", "the broken waiter was granted first");
        assert!(nodes().iter().any(|n| n.node == node), "X holds a live node");
        // W queues again behind X with a new node, and is not granted meanwhile.
        assert!(
            wait_until(t.wait(), || {
                let n = nodes();
                n.len() == 2 && n[1].node != broken || !granted_rx.is_empty()
            }),
            "W neither queued again nor was granted"
        );
        assert!(
            granted_rx.is_empty(),
            "W was granted while X holds: {:?}",
            granted_rx.try_recv()
        );
        go_tx.send(()).unwrap();
        let (who, node) = granted_rx.recv_timeout(t.wait()).unwrap();
        assert_eq!(who, "W");
        assert_ne!(node, broken);
        go_tx.send(()).unwrap();
        for h in [Some(w), Some(x), p].into_iter().flatten() {
            h.join().unwrap();
        }
    });
    assert!(nodes().is_empty(), "no node is left");
}

#[test]
fn a_broken_waiter_behind_the_head_queues_again() {
    a_broken_waiter_queues_again(false);
}

#[test]
fn a_broken_waiter_behind_a_granted_waiter_queues_again() {
    a_broken_waiter_queues_again(true);
}

/// A waiter watches its own node while it waits (so that a grant on its
/// predecessor's deletion, made without a listing, is never the grant of a
/// deleted node), and that watch becomes its holding's: the holding sends no
/// second one (counted on the embedded server) and reports the node's
/// deletion as `Lost`.
#[test]
fn a_waiters_own_node_watch_becomes_its_holdings() {
    let s = server();
    let t = timing();
    let e = s.embedded();
    let exists = || e.map(|e| e.stats().requests(OpCode::Exists));
    let (a, b, admin) = (client(&s), client(&s), client(&s));
    let head = InterProcessMutex::new(&a, LOCK).unwrap();
    let h = head.acquire().unwrap();
    if let Some(e) = e {
        // The first holder's own-node watch (OWN_WATCH_DELAY after its grant).
        assert!(wait_until(t.wait(), || e.stats().requests(OpCode::Exists) >= 1));
    }
    let before = exists();
    let (lost_tx, lost_rx) = crossbeam_channel::bounded(1);
    std::thread::scope(|sc| {
        let w = sc.spawn(|| {
            let m = InterProcessMutex::new(&b, LOCK).unwrap();
            let g = m.acquire().unwrap();
            let loss = g.events();
            lost_tx.send(()).unwrap();
            let event = loss.recv_timeout(t.wait());
            (event, g.check(), g.release())
        });
        assert!(wait_until(t.wait(), || head
            .participant_nodes()
            .is_ok_and(|p| p.len() == 2)));
        let node = head.participant_nodes().unwrap()[1].node.clone();
        drop(h);
        lost_rx.recv_timeout(t.wait()).expect("the waiter is granted");
        if let Some(before) = before {
            // Well past the grant's OWN_WATCH_DELAY: still only the waiter's
            // own watch, sent while it waited.
            let granted = Instant::now();
            assert!(wait_until(t.wait(), || granted.elapsed() > zk_recipes::OWN_WATCH_DELAY * 10));
            assert_eq!(
                exists().unwrap() - before,
                1,
                "one own-node watch per waiter, waiting or holding"
            );
        }
        admin.delete().for_path(&node).unwrap();
        let (event, check, release) = w.join().unwrap();
        assert_eq!(event, Ok(LockEvent::Lost));
        assert!(matches!(check, Err(Error::LockLost { .. })), "{check:?}");
        assert!(matches!(release, Err(Error::LockLost { .. })), "{release:?}");
    });
    assert!(head.participant_nodes().unwrap().is_empty(), "no node is left");
}
