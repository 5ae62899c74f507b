//! Leader election (`zk_recipes::leader`) on the backend `ZK_TEST_SERVER` names: the
//! election section of the lock contract (its cases that apply: no false loss on a normal
//! close, deletion and expiry noticed and told, deadlines held with no server, a frozen
//! connection, a contended election and a zero timeout, namespaces, a closed client, no
//! orphan node), and
//! the latch, the selector and the observer; the three-valued state under
//! faults (expiry, deletion, a cut and a frozen connection through the fault
//! proxy); terms; resign and hand-off; bad input. Every wait is a condition
//! with a deadline; every deadline is asserted as a bound.
//!
//! The election section states its cases here rather than instantiating
//! `lock_contract`'s macro: the contract asserts a lock's outcomes, which an
//! election does not share by design. A broken or expired holding stays lost
//! and its release says `LockLost`; a latch whose node is deleted or whose
//! session expires rejoins (a new node, a new term) and its `close()`
//! succeeds. A timed acquire on a frozen connection says `NoAnswer`; an await
//! may say `Ok(false)`. A lock's guard is the holding; a latch's leadership
//! comes and goes under one started latch, told as `LeaderEvent`s with a
//! reason. An adapter mapping these onto the contract's `LockStatus`,
//! `LockEvent` and `Error::LockLost` would assert the mapping instead of the
//! latch, and drop the reasons, terms and rejoins asserted here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::Error;
use zk_recipes::{
    CloseMode, ElectionKind, LeaderEvent, LeaderLatch, LeaderObserver, LeaderSelector, LeaderStatus, NotLeaderReason,
    SuspendPolicy,
};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

use crate::support::{
    client, close_while_held, held_client, nothing_left_under, proxied_client, timing, watched_by, Release,
};

/// How far past its deadline a call may return (as the lock contract's).
fn margin() -> Duration {
    timing().scale(Duration::from_millis(150))
}

fn latch(c: &CuratorFramework, path: &str, id: &str) -> LeaderLatch {
    let l = LeaderLatch::builder(c, path).id(id).build().unwrap();
    l.start().unwrap();
    l
}

fn next_event(rx: &Receiver<LeaderEvent>) -> LeaderEvent {
    rx.recv_timeout(timing().wait()).expect("a leader event in time")
}

fn children(c: &CuratorFramework, path: &str) -> Vec<String> {
    c.get_children(path).unwrap_or_default()
}

/// The latches that are certainly leader now.
fn leaders(latches: &[LeaderLatch]) -> Vec<usize> {
    (0..latches.len()).filter(|&i| latches[i].check().is_ok()).collect()
}

#[test]
fn one_leader_at_a_time_and_terms_only_grow() {
    let s = TestingServer::start().unwrap();
    let path = "/leader/basic";
    let clients: Vec<_> = (0..3).map(|_| client(&s)).collect();
    let mut latches: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| latch(c, path, &format!("p{i}")))
        .collect();
    let mut last_term = 0;
    for round in 0..3 {
        assert!(
            wait_until(timing().wait(), || leaders(&latches).len() == 1),
            "round {round}: one leader"
        );
        let l = leaders(&latches)[0];
        let term = latches[l].term().unwrap();
        assert!(term > last_term, "term {term} after {last_term}");
        last_term = term;
        // Everyone reads the same leader from the server.
        let leader = latches[0].leader().unwrap().unwrap();
        assert_eq!(leader.id, latches[l].id());
        assert_eq!(leader.fencing_token, term);
        assert!(leader.holds);
        // (Every latch queues on its own thread after start(): on a loaded
        // machine the last one may still be on its way at round 0.)
        assert!(
            wait_until(timing().wait(), || latches[0].participants().unwrap().len()
                == latches.len()),
            "round {round}: every latch takes part: {:?}",
            latches[0].participants()
        );
        latches.remove(l).close().unwrap();
        if latches.is_empty() {
            break;
        }
    }
    assert!(wait_until(timing().wait(), || children(&clients[0], path).is_empty()));
}

#[test]
fn curators_layout_protected_latch_nodes_with_the_id_as_data() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let l = latch(&c, "/leader/layout", "the-id");
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    let kids = children(&c, "/leader/layout");
    assert_eq!(kids.len(), 1);
    let name = &kids[0];
    assert!(name.starts_with("_c_") && name.contains("-latch-"), "{name}");
    let seq = name.rsplit("-latch-").next().unwrap();
    assert_eq!(seq.len(), 10);
    assert!(seq.chars().all(|ch| ch.is_ascii_digit()));
    let (data, stat) = c.get_data(&format!("/leader/layout/{name}")).unwrap();
    assert_eq!(data, b"the-id");
    assert_eq!(stat.ephemeral_owner, c.session_id());
    assert_eq!(l.term(), Some(stat.czxid));
    // The default id is the holder identity the locks write.
    let d = LeaderLatch::new(&c, "/leader/layout").unwrap();
    assert!(matches!(
        zk_recipes::HolderIdentity::parse(d.id().as_bytes()),
        zk_recipes::HolderIdentity::Process(_)
    ));
    l.close().unwrap();
}

#[test]
fn events_tell_each_change_in_order_and_a_silent_close_is_no_loss() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let l = LeaderLatch::builder(&c, "/leader/events").id("a").build().unwrap();
    let rx = l.events();
    l.start().unwrap();
    let LeaderEvent::Leader { term: t1 } = next_event(&rx) else {
        panic!("first event")
    };
    l.resign().unwrap();
    assert_eq!(
        next_event(&rx),
        LeaderEvent::NotLeader {
            reason: NotLeaderReason::Resigned
        }
    );
    // Alone: leads again, in a new term.
    let LeaderEvent::Leader { term: t2 } = next_event(&rx) else {
        panic!("leads again")
    };
    assert!(t2 > t1);
    l.close().unwrap();
    // Silent close: the channel ends, nothing else.
    assert_eq!(
        rx.recv_timeout(timing().wait()),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
    assert!(children(&c, "/leader/events").is_empty());
}

#[test]
fn notify_leader_close_tells_the_leader_once() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (tx, done) = crossbeam_channel::unbounded();
    let l = {
        let seen = seen.clone();
        LeaderLatch::builder(&c, "/leader/notify")
            .close_mode(CloseMode::NotifyLeader)
            .listener(move |e| {
                seen.lock().push(e);
                let _ = tx.send(());
            })
            .build()
            .unwrap()
    };
    l.start().unwrap();
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    done.recv_timeout(timing().wait()).unwrap();
    l.close().unwrap();
    done.recv_timeout(timing().wait()).unwrap();
    let seen = seen.lock().clone();
    assert!(matches!(seen[0], LeaderEvent::Leader { .. }));
    assert_eq!(
        seen[1..],
        [LeaderEvent::NotLeader {
            reason: NotLeaderReason::Closed
        }]
    );
}

/// `NotLeader { Resigned }` is told before the next participant can lead: it
/// is on the events channel when `resign()` returns, and a listener (a slow
/// one here) has handled it before the next leader is granted. Likewise a
/// notifying close.
#[test]
fn resign_is_told_before_the_next_participant_leads() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let path = "/leader/resign-told";
    // a's listener takes 50 ms over each NotLeader (work being stopped) and
    // notes when it is done; b's notes when it leads.
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<(LeaderEvent, Instant)>();
    let slow = move |e: LeaderEvent| {
        if matches!(e, LeaderEvent::NotLeader { .. }) {
            let _ = crossbeam_channel::after(Duration::from_millis(50)).recv();
        }
        let _ = done_tx.send((e, Instant::now()));
    };
    let a = LeaderLatch::builder(&c1, path)
        .id("a")
        .close_mode(CloseMode::NotifyLeader)
        .listener(slow)
        .build()
        .unwrap();
    let events = a.events();
    a.start().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let (lead_tx, lead_rx) = crossbeam_channel::unbounded::<(LeaderEvent, Instant)>();
    let b = LeaderLatch::builder(&c2, path)
        .id("b")
        .listener(move |e| {
            let _ = lead_tx.send((e, Instant::now()));
        })
        .build()
        .unwrap();
    b.start().unwrap();
    assert!(wait_until(timing().wait(), || children(&c1, path).len() == 2));
    assert!(matches!(
        done_rx.recv_timeout(timing().wait()).unwrap().0,
        LeaderEvent::Leader { .. }
    ));
    let _ = events.try_iter().count();
    a.resign().unwrap();
    let resigned = LeaderEvent::NotLeader {
        reason: NotLeaderReason::Resigned,
    };
    assert_eq!(events.try_recv(), Ok(resigned), "on the channel when resign() returns");
    let (told, handled_at) = done_rx
        .try_recv()
        .expect("the listener handled it before resign() returned");
    assert_eq!(told, resigned);
    let (e, b_led_at) = lead_rx.recv_timeout(timing().wait()).unwrap();
    assert!(matches!(e, LeaderEvent::Leader { .. }), "{e:?}");
    assert!(
        b_led_at >= handled_at,
        "b led {:?} before a's listener had stopped its work",
        handled_at - b_led_at
    );
    // a queued again behind b; b hands back, and a's notifying close is told
    // the same way.
    assert_eq!(b.hand_off().unwrap().as_deref(), Some("a"));
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let _ = done_rx.recv_timeout(timing().wait()).unwrap(); // Leader
    a.close().unwrap();
    let (told, _) = done_rx
        .try_recv()
        .expect("the listener handled the close before close() returned");
    assert_eq!(
        told,
        LeaderEvent::NotLeader {
            reason: NotLeaderReason::Closed
        }
    );
    b.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&c1, path).is_empty()));
}

#[test]
fn hand_off_gives_leadership_to_the_next_participant() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let a = latch(&c1, "/leader/handoff", "a");
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    // Alone: nothing to hand to, still leading.
    assert_eq!(a.hand_off().unwrap(), None);
    assert!(a.check().is_ok());
    let b = latch(&c2, "/leader/handoff", "b");
    assert!(wait_until(timing().wait(), || b.participants().unwrap().len() == 2));
    let term = a.term().unwrap();
    assert_eq!(a.hand_off().unwrap().as_deref(), Some("b"));
    assert!(a.check().is_err(), "not leader the moment hand_off returns");
    assert!(b.await_leadership_for(timing().wait()).unwrap());
    assert!(b.term().unwrap() > term);
    assert!(a.check().is_err());
    // a queued again behind b.
    assert!(wait_until(timing().wait(), || a.participants().unwrap().len() == 2));
    b.close().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    a.close().unwrap();
}

#[test]
fn a_deleted_node_is_a_reported_loss_and_the_latch_rejoins() {
    let s = TestingServer::start().unwrap();
    let (c, admin) = (client(&s), client(&s));
    let l = LeaderLatch::builder(&c, "/leader/deleted").id("a").build().unwrap();
    let rx = l.events();
    l.start().unwrap();
    let LeaderEvent::Leader { term: t1 } = next_event(&rx) else {
        panic!()
    };
    let node = children(&admin, "/leader/deleted").pop().unwrap();
    admin.delete().for_path(&format!("/leader/deleted/{node}")).unwrap();
    assert_eq!(
        next_event(&rx),
        LeaderEvent::NotLeader {
            reason: NotLeaderReason::NodeDeleted
        }
    );
    let LeaderEvent::Leader { term: t2 } = next_event(&rx) else {
        panic!("rejoined and leads")
    };
    assert!(t2 > t1);
    assert_eq!(children(&admin, "/leader/deleted").len(), 1);
    l.close().unwrap();
}

#[test]
fn an_expired_session_is_a_reported_loss_and_another_leads() {
    crate::support::init_log();
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let a = LeaderLatch::builder(&c1, "/leader/expired").id("a").build().unwrap();
    let rx = a.events();
    a.start().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let b = latch(&c2, "/leader/expired", "b");
    assert!(wait_until(timing().wait(), || b.participants().unwrap().len() == 2));
    let zk = c1.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(b.await_leadership_for(timing().wait()).unwrap());
    // a was told, and never leads beside b.
    let mut saw_loss = false;
    while let Ok(ev) = rx.recv_timeout(timing().wait()) {
        eprintln!("a: {ev:?}");
        if ev
            == (LeaderEvent::NotLeader {
                reason: NotLeaderReason::SessionExpired,
            })
        {
            saw_loss = true;
            break;
        }
    }
    assert!(saw_loss, "the expiry was reported");
    assert!(
        wait_until(timing().wait(), || a.participants().unwrap().len() == 2),
        "{:?} {:?}",
        a.participants(),
        a.status()
    );
    assert!(a.check().is_err() && b.check().is_ok());
    b.close().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    a.close().unwrap();
}

#[test]
fn the_standard_policy_gives_up_at_a_cut_and_leads_again_in_the_same_term() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let l = LeaderLatch::builder(&c, "/leader/standard").id("a").build().unwrap();
    let rx = l.events();
    l.start().unwrap();
    let LeaderEvent::Leader { term } = next_event(&rx) else {
        panic!()
    };
    proxy.cut();
    assert_eq!(
        next_event(&rx),
        LeaderEvent::NotLeader {
            reason: NotLeaderReason::Suspended
        }
    );
    assert!(matches!(l.check(), Err(Error::NotLeader { .. })));
    assert_eq!(next_event(&rx), LeaderEvent::Leader { term });
    assert!(l.check().is_ok());
    l.close().unwrap();
}

#[test]
fn the_session_policy_stays_leader_but_uncertain_through_a_cut() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let l = LeaderLatch::builder(&c, "/leader/session")
        .id("a")
        .policy(SuspendPolicy::Session)
        .build()
        .unwrap();
    let rx = l.events();
    l.start().unwrap();
    let LeaderEvent::Leader { term } = next_event(&rx) else {
        panic!()
    };
    proxy.cut();
    assert_eq!(next_event(&rx), LeaderEvent::Uncertain);
    assert!(matches!(l.check(), Err(Error::LeadershipUncertain { .. })) || l.check().is_ok());
    assert_eq!(next_event(&rx), LeaderEvent::Leader { term });
    l.close().unwrap();
}

/// A leader whose connection freezes past its session timeout: it is told
/// (check fails) before the next leader is granted, never after.
#[test]
fn a_frozen_leader_stops_being_certain_before_the_next_one_leads() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c1 = proxied_client(&proxy);
    let c2 = client(&s);
    let a = LeaderLatch::builder(&c1, "/leader/frozen")
        .id("a")
        .policy(SuspendPolicy::Session)
        .build()
        .unwrap();
    a.start().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let b = latch(&c2, "/leader/frozen", "b");
    assert!(wait_until(timing().wait(), || b.participants().unwrap().len() == 2));
    proxy.freeze(true);
    let a_last_ok = Arc::new(parking_lot::Mutex::new(Instant::now()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let checker = {
        let (a_last_ok, stop) = (a_last_ok.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if a.check().is_ok() {
                    *a_last_ok.lock() = Instant::now();
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            a
        })
    };
    assert!(b.await_leadership_for(timing().session() * 4).unwrap());
    let granted = Instant::now();
    stop.store(true, Ordering::SeqCst);
    let a = checker.join().unwrap();
    let last_ok = *a_last_ok.lock();
    assert!(last_ok < granted, "a's last Ok check came after b's grant");
    eprintln!(
        "margin between a's last Ok check and b's grant: {:?}",
        granted - last_ok
    );
    assert!(a.check().is_err());
    proxy.freeze(false);
    b.close().unwrap();
    let _ = a.close();
}

#[test]
fn bad_input_is_a_typed_error_and_nothing_hangs() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    // As build()'s docs say: InvalidPath for ZooKeeper's rules, and an
    // election's words for the root path.
    for bad in ["relative", "/a//b", "/a/"] {
        let r = LeaderLatch::new(&c, bad);
        assert!(
            matches!(r, Err(Error::ZooKeeper(zk_framework::Error::InvalidPath(_)))),
            "{bad}: {r:?}"
        );
        let r = LeaderSelector::builder(&c, bad, |_| {}).build();
        assert!(
            matches!(r, Err(Error::ZooKeeper(zk_framework::Error::InvalidPath(_)))),
            "{bad}: {r:?}"
        );
    }
    for r in [
        LeaderLatch::new(&c, "/").map(|_| ()),
        LeaderSelector::builder(&c, "/", |_| {}).build().map(|_| ()),
        LeaderObserver::new(&c, "/", ElectionKind::Latch).map(|_| ()),
    ] {
        match r {
            Err(Error::InvalidArgument(why)) => assert!(why.contains("election"), "{why}"),
            other => panic!("the root path: {other:?}"),
        }
    }
    for id in ["", "a\nb", &"x".repeat(5000)] {
        assert!(matches!(
            LeaderLatch::builder(&c, "/leader/bad").id(id).build(),
            Err(Error::InvalidArgument(_))
        ));
    }
    let l = LeaderLatch::new(&c, "/leader/bad").unwrap();
    assert!(matches!(l.await_leadership(), Err(Error::NotStarted { .. })));
    assert!(matches!(l.close(), Err(Error::NotStarted { .. })));
    assert!(matches!(l.resign(), Err(Error::NotStarted { .. })));
    assert!(
        matches!(l.hand_off(), Err(Error::NotStarted { .. })),
        "{:?}",
        l.hand_off()
    );
    assert!(matches!(l.check(), Err(Error::NotStarted { .. })), "{:?}", l.check());
    l.start().unwrap();
    assert!(matches!(
        l.start(),
        Err(Error::AlreadyStarted {
            recipe: "LeaderLatch",
            ..
        })
    ));
    l.close().unwrap();
    assert!(matches!(l.close(), Err(Error::Closed { .. })));
    assert!(matches!(l.start(), Err(Error::Closed { .. })));
    assert!(matches!(l.await_leadership(), Err(Error::Closed { .. })));
    assert!(matches!(l.hand_off(), Err(Error::Closed { .. })), "{:?}", l.hand_off());
    assert!(matches!(l.check(), Err(Error::Closed { .. })), "{:?}", l.check());
    assert!(matches!(l.resign(), Err(Error::Closed { .. })));
    // A zero timeout is a value.
    let l = latch(&c, "/leader/bad", "z");
    let t0 = Instant::now();
    let _ = l.await_leadership_for(Duration::ZERO).unwrap();
    assert!(t0.elapsed() <= margin());
    // A huge one does not overflow.
    assert!(l.await_leadership_for(Duration::MAX).unwrap());
    l.close().unwrap();
    assert!(children(&c, "/leader/bad").is_empty());
}

#[test]
fn close_wakes_a_thread_waiting_for_leadership() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let a = latch(&c1, "/leader/wake", "a");
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let b = Arc::new(latch(&c2, "/leader/wake", "b"));
    let waiter = {
        let b = b.clone();
        std::thread::spawn(move || b.await_leadership())
    };
    assert!(wait_until(timing().wait(), || b.participants().unwrap().len() == 2));
    let t0 = Instant::now();
    b.close().unwrap();
    let r = waiter.join().unwrap();
    assert!(matches!(r, Err(Error::Closed { .. })), "{r:?}");
    assert!(t0.elapsed() <= Duration::from_secs(2) + margin());
    assert!(wait_until(timing().wait(), || a.participants().unwrap().len() == 1));
    a.close().unwrap();
}

#[test]
fn an_acl_that_forbids_the_create_is_an_error_within_the_deadline() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    c.create()
        .with_acl(zk_framework::proto::Acl::read_unsafe())
        .for_path("/leader-readonly")
        .unwrap();
    let l = latch(&c, "/leader-readonly/election", "a");
    let t0 = Instant::now();
    let r = l.await_leadership_for(Duration::from_secs(3));
    assert!(
        matches!(r, Err(Error::ZooKeeper(zk_framework::Error::NoAuth { .. }))),
        "{r:?}"
    );
    assert!(t0.elapsed() <= Duration::from_secs(3) + margin());
    l.close().unwrap();
    assert!(children(&c, "/leader-readonly").is_empty());
}

#[test]
fn a_guarded_transaction_commits_only_while_leading() {
    let s = TestingServer::start().unwrap();
    let (c, admin) = (client(&s), client(&s));
    c.create().for_path("/leader-data").unwrap();
    let l = latch(&c, "/leader/tx", "a");
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    let tx = l.transaction().unwrap();
    tx.set_data("/leader-data", b"1".to_vec(), None).commit().unwrap();
    assert_eq!(c.get_data("/leader-data").unwrap().0, b"1");
    // A transaction made while leading refuses once the node is gone.
    let stale = l.transaction().unwrap();
    let node = children(&admin, "/leader/tx").pop().unwrap();
    admin.delete().for_path(&format!("/leader/tx/{node}")).unwrap();
    let r = stale.set_data("/leader-data", b"2".to_vec(), None).commit();
    assert!(matches!(r, Err(Error::LockLost { .. })), "{r:?}");
    assert_eq!(c.get_data("/leader-data").unwrap().0, b"1");
    l.close().unwrap();
}

// ---- the selector ---------------------------------------------------------------------------

#[test]
fn selectors_take_turns_one_closure_at_a_time() {
    let s = TestingServer::start().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let turns = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..3).map(|_| client(&s)).collect();
    let selectors: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (running, turns, overlap) = (running.clone(), turns.clone(), overlap.clone());
            let sel = LeaderSelector::builder(c, "/leader/selector", move |l| {
                if running.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlap.fetch_add(1, Ordering::SeqCst);
                }
                assert!(l.check().is_ok());
                assert!(l.term().is_some());
                let _ = l.sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                turns.fetch_add(1, Ordering::SeqCst);
            })
            .id(format!("s{i}"))
            .auto_requeue(true)
            .build()
            .unwrap();
            sel.start().unwrap();
            sel
        })
        .collect();
    assert!(wait_until(timing().wait(), || turns.load(Ordering::SeqCst) >= 12));
    for sel in &selectors {
        sel.close().unwrap();
    }
    assert_eq!(overlap.load(Ordering::SeqCst), 0);
    assert!(wait_until(timing().wait(), || children(
        &clients[0],
        "/leader/selector"
    )
    .is_empty()));
}

#[test]
fn interrupt_cancels_the_leadership_and_requeue_leads_again() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let (tx, rx) = crossbeam_channel::unbounded();
    let sel = LeaderSelector::builder(&c, "/leader/interrupt", move |l| {
        tx.send("start").unwrap();
        // Honour the cancellation.
        let _ = l.cancelled().recv();
        assert!(l.check().is_err());
        tx.send("stopped").unwrap();
    })
    .build()
    .unwrap();
    sel.start().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "start");
    assert!(sel.has_leadership());
    assert!(!sel.requeue().unwrap(), "busy while leading");
    assert!(sel.interrupt_leadership());
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "stopped");
    assert!(wait_until(timing().wait(), || !sel.has_leadership()));
    assert!(wait_until(timing().wait(), || sel.requeue().unwrap()));
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "start");
    sel.close().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "stopped");
    assert!(wait_until(timing().wait(), || children(&c, "/leader/interrupt").is_empty()));
}

#[test]
fn a_panicking_closure_ends_its_leadership_and_leaks_nothing() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let turns = Arc::new(AtomicUsize::new(0));
    let sel = {
        let turns = turns.clone();
        LeaderSelector::builder(&c, "/leader/panic", move |_| {
            turns.fetch_add(1, Ordering::SeqCst);
            panic!("the leader's work failed");
        })
        .auto_requeue(true)
        .build()
        .unwrap()
    };
    sel.start().unwrap();
    assert!(wait_until(timing().wait(), || turns.load(Ordering::SeqCst) >= 3));
    sel.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&c, "/leader/panic").is_empty()));
}

#[test]
fn the_standard_policy_cancels_a_selector_at_a_cut() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let (tx, rx) = crossbeam_channel::unbounded();
    let sel = LeaderSelector::builder(&c, "/leader/selector-cut", move |l| {
        tx.send("lead").unwrap();
        let _ = l.cancelled().recv();
        tx.send("cancelled").unwrap();
    })
    .build()
    .unwrap();
    sel.start().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "lead");
    proxy.cut();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "cancelled");
    sel.close().unwrap();
}

// ---- the observer ---------------------------------------------------------------------------

#[test]
fn the_observer_reports_each_change_of_leader_and_nothing_else() {
    let s = TestingServer::start().unwrap();
    let (c1, c2, c3) = (client(&s), client(&s), client(&s));
    let observer = LeaderObserver::new(&c3, "/leader/observed", ElectionKind::Latch).unwrap();
    let changes = observer.events();
    assert_eq!(changes.recv_timeout(timing().wait()).unwrap(), None);
    let a = latch(&c1, "/leader/observed", "a");
    let first = changes.recv_timeout(timing().wait()).unwrap().unwrap();
    assert_eq!(first.id, "a");
    let b = latch(&c2, "/leader/observed", "b");
    let extra = latch(&c2, "/leader/observed", "c");
    assert!(wait_until(timing().wait(), || a.participants().unwrap().len() == 3));
    // A participant that joins or leaves behind the leader changes nothing.
    extra.close().unwrap();
    assert!(changes.recv_timeout(Duration::from_millis(300)).is_err());
    a.close().unwrap();
    let second = changes.recv_timeout(timing().wait()).unwrap().unwrap();
    assert_eq!(second.id, "b");
    assert!(second.fencing_token > first.fencing_token);
    assert_eq!(observer.leader().unwrap().id, "b");
    b.close().unwrap();
    assert_eq!(changes.recv_timeout(timing().wait()).unwrap(), None);
}

/// Clones share one participant (and one observer): a clone used from
/// another thread answers for the same node; dropping a clone closes
/// nothing; dropping the last one closes it (its node deleted, its events
/// ended).
#[test]
fn clones_share_one_participant_and_the_last_drop_closes_it() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let a = latch(&c, "/leader/clones", "a");
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let events = a.events();
    let observer = LeaderObserver::new(&c, "/leader/clones", ElectionKind::Latch).unwrap();
    let seen = observer.events();
    let first = seen.recv_timeout(timing().wait()).unwrap().map(|l| l.id);
    assert_eq!(first.as_deref(), Some("a"));
    let (a2, o2) = (a.clone(), observer.clone());
    std::thread::spawn(move || {
        assert!(a2.has_leadership());
        assert_eq!(o2.leader().map(|l| l.id), Some("a".to_string()));
        // Both clones dropped on this thread.
    })
    .join()
    .unwrap();
    assert!(a.has_leadership(), "a clone's drop closed nothing");
    assert_eq!(children(&c, "/leader/clones").len(), 1);
    drop(a);
    assert!(
        wait_until(timing().wait(), || children(&c, "/leader/clones").is_empty()),
        "the last drop closed the latch"
    );
    assert!(wait_until(timing().wait(), || events
        .recv_timeout(Duration::from_millis(10))
        .is_err_and(|e| e == crossbeam_channel::RecvTimeoutError::Disconnected)));
    let kept = observer.clone();
    drop(observer);
    assert!(
        kept.events().recv_timeout(Duration::from_millis(50)).is_ok(),
        "still observing"
    );
    drop(kept);
    assert!(wait_until(timing().wait(), || seen
        .recv_timeout(Duration::from_millis(10))
        .is_err_and(|e| e == crossbeam_channel::RecvTimeoutError::Disconnected)));
}

#[test]
fn the_observer_watches_a_selector_election_and_a_missing_path() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let observer = LeaderObserver::new(&c, "/leader/not-yet/there", ElectionKind::Selector).unwrap();
    let changes = observer.events();
    assert_eq!(changes.recv_timeout(timing().wait()).unwrap(), None);
    let sel = LeaderSelector::builder(&c, "/leader/not-yet/there", |l| {
        let _ = l.cancelled().recv();
    })
    .id("sel")
    .build()
    .unwrap();
    sel.start().unwrap();
    assert_eq!(changes.recv_timeout(timing().wait()).unwrap().unwrap().id, "sel");
    sel.close().unwrap();
}

#[test]
fn leader_status_is_three_valued() {
    assert_ne!(LeaderStatus::Leader, LeaderStatus::Uncertain);
    assert!(LeaderStatus::Leader.is_leader());
}

#[test]
fn an_unreachable_server_is_a_typed_error_in_time_and_close_does_not_hang() {
    let c = CuratorFramework::builder()
        .connect_string(format!("127.0.0.1:{}", crate::support::closed_port()))
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()
        .unwrap();
    let l = LeaderLatch::builder(&c, "/leader/unreachable").id("a").build().unwrap();
    l.start().unwrap();
    let t0 = Instant::now();
    let r = l.await_leadership_for(Duration::from_millis(500));
    assert!(
        matches!(r, Err(Error::ZooKeeper(zk_framework::Error::ConnectFailed { .. }))),
        "{r:?}"
    );
    assert!(t0.elapsed() <= Duration::from_millis(500) + margin());
    let t0 = Instant::now();
    l.close().unwrap();
    assert!(t0.elapsed() <= margin(), "close took {:?}", t0.elapsed());
    let sel = LeaderSelector::builder(&c, "/leader/unreachable", |_| {})
        .build()
        .unwrap();
    sel.start().unwrap();
    let t0 = Instant::now();
    sel.close().unwrap();
    assert!(t0.elapsed() <= margin(), "close took {:?}", t0.elapsed());
    c.close();
}

#[test]
fn an_elections_figures_count_leaderships_losses_and_time_as_leader() {
    let s = TestingServer::start().unwrap();
    let (c, admin) = (client(&s), client(&s));
    let l = latch(&c, "/leader/figures", "a");
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    let node = children(&admin, "/leader/figures").pop().unwrap();
    admin.delete().for_path(&format!("/leader/figures/{node}")).unwrap();
    // Lost, rejoined, leads again; then resigns once.
    assert!(wait_until(timing().wait(), || {
        zk_recipes::lock_stats_of(&c, "/leader/figures").is_some_and(|f| f.acquisitions == 2)
    }));
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    l.resign().unwrap();
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    l.close().unwrap();
    let f = zk_recipes::lock_stats_of(&c, "/leader/figures").unwrap();
    assert_eq!(f.acquisitions, 3, "{f:?}");
    assert_eq!(f.losses_by(zk_recipes::LossCause::NodeDeleted), 1, "{f:?}");
    assert_eq!(f.releases, 2, "{f:?}");
    assert_eq!(f.hold_time.count(), 3, "{f:?}");
    assert_eq!(f.holders, 0);
}

const PAUSED_LEADER_ENV: &str = "ZK_PAUSED_LEADER_CHILD";

/// The child: lead, then check every few milliseconds; after a jump in time
/// (the process was stopped) report the very first check and whether an
/// event was already waiting.
fn paused_leader(connect: &str) {
    use std::io::Write;
    let t = timing();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    client.block_until_connected(t.wait()).unwrap();
    let l = LeaderLatch::builder(&client, "/paused/leader")
        .id("paused")
        .policy(SuspendPolicy::Session)
        .build()
        .unwrap();
    let events = l.events();
    l.start().unwrap();
    assert!(l.await_leadership_for(t.wait()).unwrap());
    while events.try_recv().is_ok() {}
    let mut last = Instant::now();
    println!("LEADING");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_millis(2));
        let now = Instant::now();
        if now - last > Duration::from_secs(1) {
            let r = l.check();
            let told = events.try_recv().ok();
            println!("AFTER_RESUME ok={} told={told:?} {r:?}", r.is_ok());
            std::io::stdout().flush().unwrap();
            break;
        }
        last = now;
    }
    let _ = l.close();
    client.close();
}

/// A leader whose process is stopped past its session timeout must not hear
/// `Ok` from `check()` when it resumes, and the event saying so is on its
/// channel by the time that `check()` returns.
#[test]
fn a_leader_resumed_after_a_long_pause_is_not_told_it_leads() {
    if let Ok(connect) = std::env::var(PAUSED_LEADER_ENV) {
        return paused_leader(&connect);
    }
    use std::process::Command;
    let t = timing();
    let s = TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    let child = crate::support::ChildTest::spawn(
        "leader::a_leader_resumed_after_a_long_pause_is_not_told_it_leads",
        (PAUSED_LEADER_ENV, &s.connect_string()),
    );
    let pid = child.pid();
    let wait_for = |prefix: &str| child.wait_for(prefix, t.wait() * 2);
    wait_for("LEADING");
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let stopped = Instant::now();
    let other = client(&s);
    let b = latch(&other, "/paused/leader", "other");
    assert!(
        b.await_leadership_for(t.session() * 3).unwrap(),
        "the next leader after the expiry"
    );
    let past = Duration::from_millis(1500);
    assert!(wait_until(past * 2, || stopped.elapsed() > t.session() + past));
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    let line = wait_for("AFTER_RESUME");
    assert!(
        line.starts_with("AFTER_RESUME ok=false"),
        "the resumed leader was told: {line}"
    );
    assert!(
        line.contains("told=Some(Uncertain)") || line.contains("told=Some(NotLeader"),
        "no event by the time check() returned: {line}"
    );
    b.close().unwrap();
    assert!(child.succeeded());
}

/// Herd-free, read from the server's watch table: an observer of an election with
/// several participants holds one watch, on the leader's node.
#[test]
fn an_observer_holds_one_watch_on_the_leaders_node() {
    let s = TestingServer::start().unwrap();
    let clients: Vec<_> = (0..4).map(|_| client(&s)).collect();
    let watcher = client(&s);
    let latches: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| latch(c, "/leader/herd", &format!("p{i}")))
        .collect();
    assert!(wait_until(timing().wait(), || latches[0].participants().unwrap().len() == 4));
    let observer = LeaderObserver::new(&watcher, "/leader/herd", ElectionKind::Latch).unwrap();
    let changes = observer.events();
    let first = changes.recv_timeout(timing().wait()).unwrap().unwrap();
    assert!(
        wait_until(timing().wait(), || watched_by(&s, watcher.session_id())
            == vec![first.node.clone()]),
        "{:?}",
        watched_by(&s, watcher.session_id())
    );
    for l in latches {
        l.close().unwrap();
    }
}

#[test]
fn a_selector_forbidden_by_an_acl_says_why() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    c.create()
        .with_acl(zk_framework::proto::Acl::read_unsafe())
        .for_path("/selector-readonly")
        .unwrap();
    let sel = LeaderSelector::builder(&c, "/selector-readonly/election", |_| {})
        .auto_requeue(true)
        .build()
        .unwrap();
    sel.start().unwrap();
    assert!(wait_until(timing().wait(), || matches!(
        sel.last_error(),
        Some(Error::ZooKeeper(zk_framework::Error::NoAuth { .. }))
    )));
    assert!(!sel.has_leadership());
    sel.close().unwrap();
    assert!(children(&c, "/selector-readonly").is_empty());
}

/// Curator's `testKillSessionThenCloseShouldElectNewLeader`, with a closure that honours
/// its cancellation: the leader's session expires, its work is cancelled and told, and
/// with auto-requeue the two selectors lead in turn again, never two at once after the
/// expiry was heard of.
#[test]
fn a_selectors_expired_session_cancels_its_work_and_the_election_goes_on() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let running = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = crossbeam_channel::unbounded::<(usize, Option<LeaderEvent>)>();
    let make = |c: &CuratorFramework, i: usize| {
        let (running, overlap, tx) = (running.clone(), overlap.clone(), tx.clone());
        let sel = LeaderSelector::builder(c, "/leader/selector-expiry", move |l| {
            if running.fetch_add(1, Ordering::SeqCst) != 0 {
                overlap.fetch_add(1, Ordering::SeqCst);
            }
            let events = l.events();
            tx.send((i, None)).unwrap();
            let _ = l.cancelled().recv();
            running.fetch_sub(1, Ordering::SeqCst);
            let last = events.try_iter().last();
            tx.send((i, last)).unwrap();
        })
        .auto_requeue(true)
        .build()
        .unwrap();
        sel.start().unwrap();
        sel
    };
    let s1 = make(&c1, 1);
    let (first, _) = rx.recv_timeout(timing().wait()).unwrap();
    assert_eq!(first, 1);
    let s2 = make(&c2, 2);
    assert!(wait_until(timing().wait(), || s1.participants().unwrap().len() == 2));
    let zk = c1.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    // An instant expiry by the server: selector 1 hears of it when the server drops its
    // connection, which may come after selector 2 was granted (a real expiry comes after
    // a session timeout of silence, long after check() failed); so the two messages come
    // in either order.
    let mut got = [
        rx.recv_timeout(timing().wait()).unwrap(),
        rx.recv_timeout(timing().wait()).unwrap(),
    ];
    got.sort_by_key(|(who, _)| *who);
    let [(1, last), (2, None)] = got else { panic!("{got:?}") };
    assert!(
        matches!(
            last,
            Some(LeaderEvent::NotLeader {
                reason: NotLeaderReason::SessionExpired
            }) | Some(LeaderEvent::NotLeader {
                reason: NotLeaderReason::Suspended
            })
        ),
        "{last:?}"
    );
    overlap.store(0, Ordering::SeqCst);
    s2.close().unwrap();
    let (who, _) = rx.recv_timeout(timing().wait()).unwrap();
    assert_eq!(who, 2);
    let (again, _) = rx.recv_timeout(timing().wait()).unwrap();
    assert_eq!(again, 1, "the expired selector queued again on its new session");
    s1.close().unwrap();
    assert_eq!(overlap.load(Ordering::SeqCst), 0);
}

// ---- the lock contract's cases that apply to an election ------------------------------------

#[test]
fn a_contended_await_ends_at_its_deadline_with_false() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let a = latch(&c1, "/leader/contended", "a");
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let b = latch(&c2, "/leader/contended", "b");
    for d in [Duration::ZERO, Duration::from_millis(50), Duration::from_millis(400)] {
        let t0 = Instant::now();
        assert!(!b.await_leadership_for(d).unwrap());
        assert!(t0.elapsed() <= d + margin(), "{d:?}: {:?}", t0.elapsed());
    }
    a.close().unwrap();
    assert!(b.await_leadership_for(timing().wait()).unwrap());
    b.close().unwrap();
}

#[test]
fn an_await_on_a_frozen_connection_ends_at_its_deadline() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let other = client(&s);
    let holder = latch(&other, "/leader/frozen-await", "holder");
    assert!(holder.await_leadership_for(timing().wait()).unwrap());
    let l = latch(&c, "/leader/frozen-await", "waiter");
    assert!(wait_until(timing().wait(), || holder.participants().unwrap().len() == 2));
    proxy.freeze(true);
    let d = Duration::from_millis(500);
    let t0 = Instant::now();
    let r = l.await_leadership_for(d);
    assert!(t0.elapsed() <= d + margin(), "{:?}", t0.elapsed());
    assert!(matches!(r, Ok(false) | Err(_)), "{r:?}");
    proxy.freeze(false);
    let t0 = Instant::now();
    l.close().unwrap();
    assert!(t0.elapsed() <= Duration::from_secs(2) + margin());
    holder.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&other, "/leader/frozen-await").is_empty()));
}

#[test]
fn a_latch_in_a_namespace_lives_under_it() {
    let s = TestingServer::start().unwrap();
    let c = crate::support::client_ns(&s, "apps");
    let root = client(&s);
    let l = latch(&c, "/election", "ns");
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    assert_eq!(children(&root, "/apps/election").len(), 1);
    assert!(l.node().unwrap().starts_with("/election/_c_"));
    assert_eq!(l.leader().unwrap().unwrap().node, l.node().unwrap());
    l.close().unwrap();
    assert!(children(&root, "/apps/election").is_empty());
}

#[test]
fn closing_the_client_ends_the_leadership_and_nothing_hangs() {
    let s = TestingServer::start().unwrap();
    let (c, other) = (client(&s), client(&s));
    let l = LeaderLatch::builder(&c, "/leader/client-closed")
        .id("a")
        .build()
        .unwrap();
    let rx = l.events();
    l.start().unwrap();
    assert!(matches!(next_event(&rx), LeaderEvent::Leader { .. }));
    let b = latch(&other, "/leader/client-closed", "b");
    c.close();
    assert!(matches!(next_event(&rx), LeaderEvent::NotLeader { .. }));
    assert!(l.check().is_err());
    assert!(b.await_leadership_for(timing().wait()).unwrap());
    let t0 = Instant::now();
    let _ = l.close();
    assert!(t0.elapsed() <= Duration::from_secs(2) + margin());
    b.close().unwrap();
    assert!(wait_until(timing().wait(), || children(
        &other,
        "/leader/client-closed"
    )
    .is_empty()));
}

#[test]
fn closing_the_client_cancels_a_selectors_work() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    let (tx, rx) = crossbeam_channel::unbounded();
    let sel = LeaderSelector::builder(&c, "/leader/selector-client-closed", move |l| {
        tx.send("lead").unwrap();
        let _ = l.cancelled().recv();
        assert!(l.check().is_err());
        tx.send("cancelled").unwrap();
    })
    .build()
    .unwrap();
    sel.start().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "lead");
    c.close();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), "cancelled");
    let t0 = Instant::now();
    let _ = sel.close();
    assert!(t0.elapsed() <= Duration::from_secs(2) + margin());
}

/// A closure that ignores its cancellation: `close()` still returns within its bound, and
/// the node stays until the closure returns, so the next leader never starts beside it.
#[test]
fn a_selector_closure_that_ignores_cancellation_keeps_the_next_leader_out() {
    let s = TestingServer::start().unwrap();
    let (c1, c2) = (client(&s), client(&s));
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (finish_tx, finish) = crossbeam_channel::unbounded::<()>();
    let stubborn = LeaderSelector::builder(&c1, "/leader/stubborn", move |_| {
        started_tx.send(()).unwrap();
        let _ = finish.recv(); // ignores l.cancelled()
    })
    .build()
    .unwrap();
    stubborn.start().unwrap();
    started.recv_timeout(timing().wait()).unwrap();
    let (led_tx, led) = crossbeam_channel::unbounded();
    let next = LeaderSelector::builder(&c2, "/leader/stubborn", move |l| {
        led_tx.send(()).unwrap();
        let _ = l.cancelled().recv();
    })
    .build()
    .unwrap();
    next.start().unwrap();
    let t0 = Instant::now();
    stubborn.close().unwrap();
    assert!(t0.elapsed() <= Duration::from_secs(2) + margin(), "{:?}", t0.elapsed());
    assert!(
        led.recv_timeout(Duration::from_millis(500)).is_err(),
        "led beside a running closure"
    );
    finish_tx.send(()).unwrap();
    led.recv_timeout(timing().wait()).unwrap();
    next.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&c1, "/leader/stubborn").is_empty()));
}

// ---- composed faults: a partition, a break, a heal before expiry ----------------------------

/// A latch leads behind a fault proxy and another waits: the leader is
/// partitioned, an operator deletes its node, the other leads, and the
/// partition heals before the session expires, with the re-registered
/// watches answered late. From the heal on, polled as fast as it can be, the
/// old leader is never told it leads (no `Ok` from `check()`, no `Leader`
/// status, no `Leader` event: its term would go backwards); it is told
/// `NotLeader { NodeDeleted }`, rejoins at the back of the queue and leads
/// again only in a new, larger term.
fn a_reconnect_never_revives_a_broken_leadership(policy: SuspendPolicy) {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let ca = proxied_client(&proxy);
    let (admin, cb) = (client(&s), client(&s));
    let path = format!("/leader/revived-{policy:?}");
    let a = LeaderLatch::builder(&ca, &path).id("a").policy(policy).build().unwrap();
    let events = a.events();
    a.start().unwrap();
    assert!(a.await_leadership_for(timing().wait()).unwrap());
    let LeaderEvent::Leader { term: old_term } = next_event(&events) else {
        panic!("the first event is Leader")
    };
    let b = latch(&cb, &path, "b");
    let node = a.node().unwrap();
    let session = ca.session_id();
    assert!(
        wait_until(timing().wait(), || children(&admin, &path).len() == 2
            && watched_by(&s, session).contains(&node)),
        "b queued and a watching its own node"
    );
    // One round trip more: the reply that set the watch was read.
    ca.check_exists("/").unwrap();
    proxy.refuse(true);
    proxy.cut();
    assert!(wait_until(timing().wait(), || a.status() != LeaderStatus::Leader));
    assert_eq!(crate::support::break_lock(&admin, &path, session), 1);
    // What was told before the break (a stale spell on a loaded machine
    // included) is not judged.
    let before_break: Vec<LeaderEvent> = events.try_iter().collect();
    assert!(
        b.await_leadership_for(timing().wait()).unwrap(),
        "b leads after the break"
    );
    let b_term = b.term().unwrap();
    assert!(b_term > old_term);
    proxy.delay_set_watches(Duration::from_millis(300));
    proxy.refuse(false);
    let deadline = Instant::now() + timing().wait();
    let mut told = Vec::new();
    let (mut polls, mut told_leader) = (0u64, Vec::new());
    let deleted = LeaderEvent::NotLeader {
        reason: NotLeaderReason::NodeDeleted,
    };
    while !told.contains(&deleted) && Instant::now() < deadline {
        let (status, checked) = (a.status(), a.check());
        polls += 1;
        if status == LeaderStatus::Leader || checked.is_ok() {
            told_leader.push((polls, status));
        }
        told.extend(events.try_iter());
    }
    assert!(
        told_leader.is_empty(),
        "told it leads after the break in {} of {polls} polls, first {:?}",
        told_leader.len(),
        told_leader.first()
    );
    assert!(told.contains(&deleted), "told NotLeader {{ NodeDeleted }}: {told:?}");
    assert!(
        !told.iter().any(|e| matches!(e, LeaderEvent::Leader { .. })),
        "a Leader event after the break: {told:?} (before it: {before_break:?})"
    );
    assert_eq!(ca.session_id(), session, "the session survived the partition");
    assert!(proxy.set_watches_delayed() >= 1, "the watches were re-registered late");
    // b leads alone; a rejoined behind it and leads after it, in a larger term.
    assert!(b.check().is_ok());
    b.close().unwrap();
    assert!(
        a.await_leadership_for(timing().wait()).unwrap(),
        "a leads again after b"
    );
    let new_term = a.term().unwrap();
    assert!(
        new_term > b_term,
        "terms only grow: {old_term} -> {b_term} -> {new_term}"
    );
    eprintln!("{polls} polls after the heal, none told leader; events {told:?}; terms {old_term} {b_term} {new_term}");
    a.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&admin, &path).is_empty()));
}

#[test]
fn a_reconnect_never_revives_a_broken_leadership_standard_policy() {
    a_reconnect_never_revives_a_broken_leadership(SuspendPolicy::Standard);
}

#[test]
fn a_reconnect_never_revives_a_broken_leadership_session_policy() {
    a_reconnect_never_revives_a_broken_leadership(SuspendPolicy::Session);
}

/// The same composed fault under a selector whose work runs through the
/// partition (the session policy keeps it running, uncertain): after the
/// heal its work is cancelled, and inside it `check()` is never `Ok` again.
#[test]
fn a_reconnect_never_revives_a_broken_selector_leadership() {
    let s = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let ca = proxied_client(&proxy);
    let admin = client(&s);
    let path = "/leader/revived-selector";
    let (tx, rx) = crossbeam_channel::unbounded::<(&str, bool)>();
    let broken = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tx2, broken2) = (tx.clone(), broken.clone());
    let sel = LeaderSelector::builder(&ca, path, move |l| {
        tx2.send(("start", l.check().is_ok())).unwrap();
        // Poll as the work would, until cancelled: once the node is broken,
        // never Ok.
        let mut ok_after_break = false;
        while l.cancelled().recv_timeout(Duration::from_micros(100))
            == Err(crossbeam_channel::RecvTimeoutError::Timeout)
        {
            if broken2.load(Ordering::SeqCst) && l.check().is_ok() {
                ok_after_break = true;
            }
        }
        tx2.send(("stopped", ok_after_break)).unwrap();
    })
    .id("a")
    .policy(SuspendPolicy::Session)
    .build()
    .unwrap();
    sel.start().unwrap();
    assert_eq!(rx.recv_timeout(timing().wait()).unwrap(), ("start", true));
    let node = sel.leader().unwrap().expect("a leads").node;
    let session = ca.session_id();
    assert!(wait_until(timing().wait(), || watched_by(&s, session).contains(&node)));
    ca.check_exists("/").unwrap();
    proxy.refuse(true);
    proxy.cut();
    assert!(wait_until(timing().wait(), || sel.status() == LeaderStatus::Uncertain));
    broken.store(true, Ordering::SeqCst);
    assert_eq!(crate::support::break_lock(&admin, path, session), 1);
    proxy.delay_set_watches(Duration::from_millis(300));
    proxy.refuse(false);
    let (what, ok_after_break) = rx.recv_timeout(timing().wait()).expect("the work is cancelled");
    assert_eq!(what, "stopped");
    assert!(!ok_after_break, "check() was Ok inside the work after the break");
    assert_eq!(ca.session_id(), session, "the session survived the partition");
    drop(tx);
    sel.close().unwrap();
    assert!(wait_until(timing().wait(), || children(&admin, path).is_empty()));
}

/// A leadership watches its node from the grant (a lock's holding sends its
/// watch a little later: a leadership is long-lived, and a break right after
/// an election must be heard of at once): by the time `await_leadership`
/// returns, the watch request is out, ahead of any later request.
#[test]
fn a_leader_watches_its_node_from_the_grant() {
    let s = TestingServer::start().unwrap();
    let c = client(&s);
    for round in 0..3 {
        let l = latch(&c, &format!("/leader/watched-{round}"), "a");
        assert!(l.await_leadership_for(timing().wait()).unwrap());
        let node = l.node().unwrap();
        // One round trip on the same session: the watch request went before it.
        c.check_exists("/").unwrap();
        assert!(
            watched_by(&s, c.session_id()).contains(&node),
            "round {round}: {node} not watched: {:?}",
            watched_by(&s, c.session_id())
        );
        l.close().unwrap();
    }
}

// ---------------------------------------------------------------------------
// A close never orphans: a latch or selector closed while its node's create
// is in flight (held at a fault proxy) leaves no node.

/// The most a `close()` may take: the one stop bound (2 s) and a margin.
fn close_bound() -> Duration {
    Duration::from_secs(2) + timing().scale(Duration::from_secs(1))
}

/// One round: a latch (`selector` false) or a selector started with its
/// node's create held at its own proxy, closed, the hold lifted as
/// `release` says; `Err` says what it left.
fn close_a_participant_in_flight(selector: bool, release: Release) -> Result<(), String> {
    let s = TestingServer::start().unwrap();
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(&s);
    let path = format!(
        "/leader/inflight/{}-{release:?}",
        if selector { "selector" } else { "latch" }
    );
    admin.create().creating_parents_if_needed().for_path(&path).unwrap();
    proxy.hold_next_request(zk_framework::proto::OpCode::Create2);
    let took = if selector {
        let sel = LeaderSelector::builder(&c, &path, |l| while !l.sleep(Duration::from_secs(1)) {})
            .id("s")
            .build()
            .unwrap();
        sel.start().unwrap();
        close_while_held(&proxy, &c, release, || sel.close())
    } else {
        let l = LeaderLatch::builder(&c, &path).id("l").build().unwrap();
        l.start().unwrap();
        close_while_held(&proxy, &c, release, || l.close())
    };
    let mut broke = Vec::new();
    if took > close_bound() {
        broke.push(format!("close took {took:?}"));
    }
    if let Err(left) = nothing_left_under(&admin, &path, timing().scale(Duration::from_secs(5))) {
        broke.push(format!("left {left:?}"));
    }
    let kind = if selector { "LeaderSelector" } else { "LeaderLatch" };
    eprintln!(
        "{kind} {release:?}: {}",
        if broke.is_empty() {
            "clean".to_string()
        } else {
            broke.join("; ")
        }
    );
    if broke.is_empty() {
        Ok(())
    } else {
        Err(broke.join("; "))
    }
}

#[test]
fn a_latch_closed_while_its_create_is_in_flight_leaves_no_node() {
    let after = close_a_participant_in_flight(false, Release::AfterClose);
    let during = close_a_participant_in_flight(false, Release::DuringClose);
    assert!(after.is_ok() && during.is_ok(), "after: {after:?}; during: {during:?}");
}

#[test]
fn a_selector_closed_while_its_create_is_in_flight_leaves_no_node() {
    let after = close_a_participant_in_flight(true, Release::AfterClose);
    let during = close_a_participant_in_flight(true, Release::DuringClose);
    assert!(after.is_ok() && during.is_ok(), "after: {after:?}; during: {during:?}");
}

/// Two threads close one participant at once, while it leads and while its
/// create is in flight: one close succeeds, the other says `Closed`, both
/// within the bound, and no node is left.
#[test]
fn two_threads_closing_a_participant_at_once_close_it_once_and_leave_no_node() {
    let s = TestingServer::start().unwrap();
    let (c, admin) = (client(&s), client(&s));
    let close_twice = |close: &(dyn Fn() -> zk_recipes::Result<()> + Sync)| {
        let gate = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..2)
                .map(|_| {
                    let gate = &gate;
                    scope.spawn(move || {
                        gate.wait();
                        let t0 = Instant::now();
                        (close(), t0.elapsed())
                    })
                })
                .collect();
            runs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results.iter().filter(|(r, _)| r.is_ok()).count(), 1, "{results:?}");
        assert!(
            results
                .iter()
                .all(|(r, took)| (r.is_ok() || matches!(r, Err(Error::Closed { .. }))) && *took <= close_bound()),
            "{results:?}"
        );
    };
    let l = latch(&c, "/leader/twice/latch", "l");
    assert!(l.await_leadership_for(timing().wait()).unwrap());
    close_twice(&|| l.close());
    let sel = LeaderSelector::builder(
        &c,
        "/leader/twice/selector",
        |l| while !l.sleep(Duration::from_secs(1)) {},
    )
    .id("s")
    .build()
    .unwrap();
    sel.start().unwrap();
    assert!(wait_until(timing().wait(), || sel.has_leadership()));
    close_twice(&|| sel.close());
    // While the create is in flight (held at a proxy).
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let held = held_client(&proxy);
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/leader/twice/held")
        .unwrap();
    proxy.hold_next_request(zk_framework::proto::OpCode::Create2);
    let l = latch(&held, "/leader/twice/held", "h");
    assert!(wait_until(timing().wait(), || proxy.held_requests() == 1));
    close_twice(&|| l.close());
    proxy.release_held();
    held.check_exists("/").unwrap();
    for p in ["/leader/twice/latch", "/leader/twice/selector", "/leader/twice/held"] {
        if let Err(left) = nothing_left_under(&admin, p, timing().scale(Duration::from_secs(5))) {
            panic!("{p}: left {left:?}");
        }
    }
}

/// A latch closed from inside its own listener (on the listener's thread),
/// and a selector closed from inside its own work (on its thread): each
/// close returns within the bound and leaves no node.
#[test]
fn a_participant_closed_from_its_own_event_handler_leaves_no_node() {
    let s = TestingServer::start().unwrap();
    let (c, admin) = (client(&s), client(&s));
    let me: Arc<std::sync::OnceLock<std::sync::Weak<LeaderLatch>>> = Arc::default();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let cell = me.clone();
    let l = Arc::new(
        LeaderLatch::builder(&c, "/leader/handler/latch")
            .id("l")
            .listener(move |ev| {
                if matches!(ev, LeaderEvent::Leader { .. }) {
                    if let Some(l) = cell.get().and_then(std::sync::Weak::upgrade) {
                        let t0 = Instant::now();
                        let r = l.close();
                        let _ = tx.try_send((r, t0.elapsed()));
                    }
                }
            })
            .build()
            .unwrap(),
    );
    me.set(Arc::downgrade(&l)).unwrap();
    l.start().unwrap();
    let (r, took) = rx.recv_timeout(timing().wait()).expect("closed by its listener");
    assert!(r.is_ok() && took <= close_bound(), "{r:?} in {took:?}");
    assert!(matches!(l.close(), Err(Error::Closed { .. })));
    let me: Arc<std::sync::OnceLock<std::sync::Weak<LeaderSelector>>> = Arc::default();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let cell = me.clone();
    let sel = Arc::new(
        LeaderSelector::builder(&c, "/leader/handler/selector", move |leadership| {
            if let Some(s) = cell.get().and_then(std::sync::Weak::upgrade) {
                let t0 = Instant::now();
                let r = s.close();
                let _ = tx.try_send((r, t0.elapsed(), leadership.is_cancelled()));
            }
        })
        .id("s")
        .build()
        .unwrap(),
    );
    me.set(Arc::downgrade(&sel)).unwrap();
    sel.start().unwrap();
    let (r, took, cancelled) = rx.recv_timeout(timing().wait()).expect("closed by its work");
    assert!(r.is_ok() && took <= close_bound(), "{r:?} in {took:?}");
    assert!(cancelled, "its own close cancels the leadership it runs in");
    for p in ["/leader/handler/latch", "/leader/handler/selector"] {
        if let Err(left) = nothing_left_under(&admin, p, timing().scale(Duration::from_secs(5))) {
            panic!("{p}: left {left:?}");
        }
    }
}
