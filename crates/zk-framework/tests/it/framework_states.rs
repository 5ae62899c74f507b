//! Connection states of the managed client (Curator's `ConnectionState`s), as
//! seen by listeners and by `state_receiver()`, across server stops, restarts,
//! expiry and simulated expiry; listener threading; `block_until_connected`.
//!
//! Ports `TestEnabledSessionExpiredState`, `TestConnectionStateManager` and
//! `TestBlockUntilConnected` (spec §5, §7.10). Every test runs on the backend
//! chosen by `ZK_TEST_SERVER` (embedded or apache).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::framework::*;
use parking_lot::Mutex;
use zk_framework::proto::CreateMode;
use zk_framework::ConnectionState;
use zk_framework::Error;

/// A short pause in which no state may arrive ("and nothing else").
fn quiet() -> Duration {
    timing().scale(Duration::from_millis(1500))
}

/// A session long enough to survive a stop + restart of either backend.
fn long_session() -> Duration {
    timing().scale(Duration::from_secs(20))
}

#[test]
fn start_reports_connected_exactly_once() {
    let server = server();
    let r = recorded(builder(&server));
    expect_states(&r.states, &[Connected]);
    assert!(r.client.is_connected());
    assert_eq!(r.client.state(), Some(Connected));
    assert_eq!(r.client.recipe().session_generation(), 1);
    assert_ne!(r.client.session_id(), 0);
    expect_quiet(&r.states, quiet());
}

#[test]
fn state_receiver_sees_the_first_connected() {
    let server = server();
    server.stop().unwrap();
    let client = builder(&server).build().unwrap();
    let rx = client.state_receiver();
    assert_eq!(client.state(), None, "nothing is reported before the first connection");
    server.restart().unwrap();
    expect_states(&rx, &[Connected]);
    expect_quiet(&rx, quiet());
    client.close();
}

#[test]
fn test_reconnect_without_expiration() {
    let server = server();
    let r = connected(
        builder(&server)
            .session_timeout(long_session())
            .connection_timeout(Duration::from_millis(300))
            .retry_policy(zk_framework::RetryOneTime::new(Duration::from_millis(10))),
    );
    let rx = r.client.state_receiver();
    let sid = r.client.session_id();
    server.stop().unwrap();
    // An operation fails with the connection's failure (Curator: a
    // ConnectionLoss) once the retries are used up.
    let err = r.client.recipe().call_with_retry(|c| c.exists("/")).unwrap_err();
    assert!(
        matches!(&err, Error::ConnectFailed { reason } if reason.contains("refused")),
        "{err:?}"
    );
    expect_states(&r.states, &[Suspended]);
    expect_states(&rx, &[Suspended]);
    assert!(!r.client.is_connected());
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
    expect_states(&rx, &[Reconnected]);
    assert_eq!(r.client.session_id(), sid, "the same session");
    assert_eq!(r.client.recipe().session_generation(), 1, "the same handle");
    assert!(r.client.check_exists("/").unwrap().is_some());
    expect_quiet(&r.states, quiet());
}

#[test]
fn test_session_expiration_from_timeout() {
    let server = server();
    let r = connected(builder(&server));
    let negotiated = r.client.negotiated_session_timeout().expect("negotiated timeout");
    server.stop().unwrap();
    let at = expect_states(&r.states, &[Suspended, Lost]);
    let took = at[1] - at[0];
    assert!(
        took + Duration::from_millis(300) >= negotiated,
        "LOST came {took:?} after SUSPENDED, before the session timeout {negotiated:?}"
    );
    assert!(
        took <= negotiated + timing().scale(Duration::from_secs(2)),
        "LOST came {took:?} after SUSPENDED; session timeout {negotiated:?}"
    );
    assert!(r.client.block_until_connected(Duration::from_millis(10)).is_err());
}

#[test]
fn test_session_expiration_from_timeout_with_restart() {
    let server = server();
    let r = connected(builder(&server));
    let rx = r.client.state_receiver();
    let old_sid = r.client.session_id();
    r.client.create().for_path("/persistent").unwrap();
    r.client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/ephemeral")
        .unwrap();
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended, Lost]);
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
    expect_states(&rx, &[Suspended, Lost, Reconnected]);
    assert!(r.client.recipe().session_generation() >= 2, "a new handle was built");
    assert_ne!(r.client.session_id(), old_sid, "a new session");
    assert!(r.client.check_exists("/persistent").unwrap().is_some());
    expect_quiet(&r.states, quiet());
    // The old session's ephemeral goes when the server expires it.
    assert!(zk_testing::wait_until(timing().wait(), || r
        .client
        .check_exists("/ephemeral")
        .unwrap()
        .is_none()));
    assert!(r.client.is_connected());
}

/// Server-side expiry (the session is closed from outside): the client sees its
/// connection go (SUSPENDED), learns of the expiry on reconnecting (LOST), and
/// builds a new session (RECONNECTED) — Curator 5.4 reports the same sequence
/// (scripts/compare-states.sh).
#[test]
fn test_kill_session() {
    let server = server();
    let r = connected(builder(&server).session_timeout(long_session()));
    let old_sid = r.client.session_id();
    let generation = r.client.recipe().session_generation();
    r.client.create().for_path("/persistent").unwrap();
    r.client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/ephemeral")
        .unwrap();
    server
        .expire_session(old_sid, &r.client.zookeeper_client().session_password())
        .unwrap();
    expect_expiry_states(&r.states);
    assert!(r.client.recipe().session_generation() > generation);
    assert_ne!(r.client.session_id(), old_sid);
    // testSessionKilled: persistent data survives, the ephemeral is gone.
    assert!(r.client.check_exists("/persistent").unwrap().is_some());
    assert!(r.client.check_exists("/ephemeral").unwrap().is_none());
    expect_quiet(&r.states, quiet());
}

#[test]
fn test_session_connection_state_error_policy_with_expiration_percent30() {
    let server = server();
    let r = connected(builder(&server).simulated_session_expiration_percent(30));
    let negotiated = r.client.negotiated_session_timeout().unwrap();
    server.stop().unwrap();
    let at = expect_states_within(&r.states, &[Suspended, Lost], negotiated);
    let took = at[1] - at[0];
    let want = negotiated * 30 / 100;
    assert!(
        took + Duration::from_millis(100) >= want,
        "LOST after {took:?}, before 30% of {negotiated:?}"
    );
    assert!(
        took <= want + timing().scale(Duration::from_secs(1)),
        "LOST after {took:?}, want about {want:?}"
    );
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
}

#[test]
fn connected_is_sent_exactly_once_over_many_faults() {
    let server = server();
    let r = connected(builder(&server).session_timeout(long_session()));
    let mut all = vec![Connected];
    for _ in 0..2 {
        server.stop().unwrap();
        expect_states(&r.states, &[Suspended]);
        server.restart().unwrap();
        expect_states(&r.states, &[Reconnected]);
        all.extend([Suspended, Reconnected]);
    }
    server
        .expire_session(r.client.session_id(), &r.client.zookeeper_client().session_password())
        .unwrap();
    all.extend(expect_expiry_states(&r.states));
    expect_quiet(&r.states, quiet());
    assert_eq!(all.iter().filter(|s| **s == Connected).count(), 1);
}

#[test]
fn listeners_run_on_one_thread_in_order() {
    let server = server();
    let log: Arc<Mutex<Vec<(usize, thread::ThreadId, ConnectionState)>>> = Arc::new(Mutex::new(Vec::new()));
    let (l1, l2) = (log.clone(), log.clone());
    let r = recorded(
        builder(&server)
            .session_timeout(long_session())
            .connection_state_listener(move |s| l1.lock().push((1, thread::current().id(), s)))
            .connection_state_listener(move |s| l2.lock().push((2, thread::current().id(), s))),
    );
    let (l3, names) = (log.clone(), Arc::new(Mutex::new(Vec::<String>::new())));
    let n3 = names.clone();
    let _h = r.client.add_listener(move |s| {
        n3.lock().push(thread::current().name().unwrap_or("").to_string());
        l3.lock().push((3, thread::current().id(), s));
    });
    expect_states(&r.states, &[Connected]);
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended]);
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
    // The recorder is the last builder listener; the handle listener runs after it.
    assert!(zk_testing::wait_until(timing().wait(), || log.lock().len() == 9));
    let log = log.lock().clone();
    let me = thread::current().id();
    assert!(
        log.iter().all(|(_, t, _)| *t != me),
        "listeners do not run on the caller's thread"
    );
    // One dispatch thread at a time: the listeners of one state change all run
    // on the same thread (a thread ends after a second with nothing to tell, so
    // a later change may be told by a new one; the names prove it is neither
    // the I/O, event nor session thread).
    for burst in log.chunks(3) {
        assert!(
            burst.iter().all(|(_, t, _)| *t == burst[0].1),
            "one dispatch thread: {log:?}"
        );
    }
    let names = names.lock().clone();
    assert!(names.iter().all(|n| n == "zk-framework-states"), "{names:?}");
    let order: Vec<(usize, ConnectionState)> = log.iter().map(|(i, _, s)| (*i, *s)).collect();
    assert_eq!(
        order,
        vec![
            (1, Connected),
            (2, Connected),
            (3, Connected),
            (1, Suspended),
            (2, Suspended),
            (3, Suspended),
            (1, Reconnected),
            (2, Reconnected),
            (3, Reconnected),
        ]
    );
}

#[test]
fn a_listener_may_call_the_client() {
    let server = server();
    let (tx, rx) = crossbeam_channel::unbounded();
    let slot: Arc<Mutex<Option<zk_framework::CuratorFramework>>> = Arc::new(Mutex::new(None));
    let s2 = slot.clone();
    let r = recorded(
        builder(&server)
            .session_timeout(long_session())
            .connection_state_listener(move |s| {
                if s.is_connected() {
                    let client = s2.lock().clone();
                    if let Some(c) = client {
                        let _ = tx.send((s, c.check_exists("/").map(|st| st.is_some())));
                    }
                }
            }),
    );
    *slot.lock() = Some(r.client.clone());
    // The first Connected may have gone by before the slot was filled; a
    // handle listener sees the later ones for sure.
    let (tx2, rx2) = crossbeam_channel::unbounded();
    let c2 = r.client.clone();
    let _h = r.client.add_listener(move |s| {
        let _ = tx2.send((s, c2.check_exists("/").map(|st| st.is_some())));
    });
    expect_states(&r.states, &[Connected]);
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended]);
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
    let deadline = Instant::now() + timing().wait();
    let (s, res) = rx.iter().find(|(s, _)| *s == Reconnected).expect("listener result");
    assert_eq!((s, res), (Reconnected, Ok(true)));
    let mut got = Vec::new();
    while got.last().map(|(s, _)| *s) != Some(Reconnected) {
        got.push(rx2.recv_deadline(deadline).expect("handle listener result"));
    }
    // The call made on SUSPENDED waits for the connection or fails; it does not
    // deadlock, and the one on RECONNECTED succeeds.
    assert_eq!(got.last().unwrap().1, Ok(true), "{got:?}");
    let start = Instant::now();
    r.client.close();
    assert!(
        start.elapsed() < timing().scale(Duration::from_secs(5)),
        "close is bounded"
    );
}

#[test]
fn dropping_the_listener_handle_unsubscribes() {
    let server = server();
    let r = connected(builder(&server).session_timeout(long_session()));
    let (tx_a, rx_a) = crossbeam_channel::unbounded();
    let (tx_b, rx_b) = crossbeam_channel::unbounded();
    let a = r.client.add_listener(move |s| {
        let _ = tx_a.send(s);
    });
    let _b = r.client.add_listener(move |s| {
        let _ = tx_b.send(s);
    });
    drop(a);
    let dropped_rx = r.client.state_receiver();
    drop(dropped_rx);
    server.stop().unwrap();
    expect_states(&rx_b, &[Suspended]);
    server.restart().unwrap();
    expect_states(&rx_b, &[Reconnected]);
    expect_states(&r.states, &[Suspended, Reconnected]);
    assert!(rx_a.try_recv().is_err(), "a removed listener got a state");
}

#[test]
fn a_panicking_listener_does_not_break_delivery() {
    let server = server();
    let r = recorded(
        builder(&server)
            .session_timeout(long_session())
            .connection_state_listener(|s| panic!("listener panics on {s}")),
    );
    let _h = r.client.add_listener(|s| panic!("handle listener panics on {s}"));
    expect_states(&r.states, &[Connected]);
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended]);
    server.restart().unwrap();
    expect_states(&r.states, &[Reconnected]);
    assert!(r.client.check_exists("/").unwrap().is_some());
}

#[test]
fn test_block_until_connected_currently_connected() {
    let server = server();
    let r = connected(builder(&server));
    let start = Instant::now();
    r.client.block_until_connected(Duration::from_secs(1)).unwrap();
    r.client.block_until_connected(Duration::ZERO).unwrap();
    r.client.block_until_connected(Duration::MAX).unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn test_block_until_connected_currently_never_connected() {
    let server = server();
    server.stop().unwrap();
    let client = builder(&server).build().unwrap();
    let c = client.clone();
    let wait = timing().wait();
    let waiter = thread::spawn(move || c.block_until_connected(wait));
    server.restart().unwrap();
    assert_eq!(waiter.join().unwrap(), Ok(()));
    assert!(client.zookeeper_client().state().is_connected());
    client.close();
}

#[test]
fn test_block_until_connected_currently_awaiting_reconnect() {
    let server = server();
    let r = connected(builder(&server));
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended, Lost]);
    assert_eq!(
        r.client.block_until_connected(Duration::from_millis(50)),
        Err(Error::ConnectTimeout {
            waited: Duration::from_millis(50)
        })
    );
    server.restart().unwrap();
    r.client.block_until_connected(timing().wait()).unwrap();
    expect_states(&r.states, &[Reconnected]);
}

#[test]
fn test_block_until_connected_connect_timeout() {
    let port = closed_port();
    let client = builder_for(&format!("127.0.0.1:{port}")).build().unwrap();
    let start = Instant::now();
    let timeout = Duration::from_secs(1);
    assert_eq!(
        client.block_until_connected(timeout),
        Err(Error::ConnectTimeout { waited: timeout })
    );
    let took = start.elapsed();
    assert!(took >= timeout, "returned after {took:?}");
    assert!(took < timeout + timing().scale(Duration::from_secs(2)), "took {took:?}");
    assert_eq!(
        client.block_until_connected(Duration::ZERO),
        Err(Error::ConnectTimeout { waited: Duration::ZERO })
    );
    client.close();
}

#[test]
fn block_until_connected_after_close_is_closed() {
    let server = server();
    let r = connected(builder(&server));
    r.client.close();
    assert_eq!(
        r.client.block_until_connected(Duration::from_secs(1)),
        Err(Error::Closed)
    );
    assert!(r.client.is_closed());

    // A waiter is woken by a close from another thread.
    let port = closed_port();
    let client = builder_for(&format!("127.0.0.1:{port}")).build().unwrap();
    let c = client.clone();
    let waiter = thread::spawn(move || {
        let start = Instant::now();
        (c.block_until_connected(Duration::from_secs(3600)), start.elapsed())
    });
    // Only close once the waiter is really waiting is not observable; either
    // way it must return Closed promptly.
    client.close();
    let (res, took) = waiter.join().unwrap();
    assert_eq!(res, Err(Error::Closed));
    assert!(took < timing().scale(Duration::from_secs(5)), "took {took:?}");
}

#[test]
fn test_block_until_connected_tight_loop() {
    let server = server();
    for i in 0..20 {
        let r = recorded(builder(&server));
        r.client.block_until_connected(timing().wait()).unwrap();
        assert!(
            r.client.zookeeper_client().state().is_connected(),
            "not connected after blocking for connection #{i}"
        );
        // Exactly one CONNECTED, however the first connection raced with the
        // client's start-up.
        expect_states(&r.states, &[Connected]);
        expect_quiet(&r.states, Duration::from_millis(50));
    }
}

/// The expiry helper accepts the sequences an Apache expiry can give (the
/// client taking its session back first), and only those.
#[test]
fn expiry_states_allow_the_session_taken_back_first() {
    let feed = |states: &[ConnectionState]| {
        let (tx, rx) = crossbeam_channel::unbounded();
        for s in states {
            tx.send(*s).unwrap();
        }
        rx
    };
    let all = [
        Suspended,
        Reconnected,
        Suspended,
        Reconnected,
        Suspended,
        Lost,
        Reconnected,
    ];
    assert_eq!(expect_expiry_states(&feed(&all)), all.to_vec());
    assert_eq!(
        expect_expiry_states(&feed(&[Suspended, Lost, Reconnected])),
        vec![Suspended, Lost, Reconnected]
    );
    for bad in [
        &[Suspended, Reconnected, Lost][..],
        &[Reconnected][..],
        &[Suspended, Suspended][..],
        &[Connected][..],
    ] {
        let rx = feed(bad);
        let r = std::panic::catch_unwind(|| expect_expiry_states(&rx));
        assert!(r.is_err(), "{bad:?} was accepted");
    }
}
