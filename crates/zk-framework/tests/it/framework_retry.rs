//! The managed client's retry loop (spec §4, Curator's `RetryLoop` /
//! `ThreadLocalRetryLoop` / `TestRetryLoop`): retries across a server outage,
//! no retries for non-retryable errors, `SessionFailedRetryPolicy`, a budget
//! per loop (nested or not), deadlines, and prompt exit on close.
//!
//! Every test runs on the backend chosen by `ZK_TEST_SERVER`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::framework::*;
use zk_framework::proto::{Acl, CreateMode};
use zk_framework::Error;
use zk_framework::{
    ExponentialBackoffRetry, RetryDecision, RetryForever, RetryNTimes, RetryPolicy, RetryUntilElapsed,
    SessionFailedRetryPolicy,
};

#[test]
fn test_retry_loop_with_failure() {
    let server = server();
    let r = connected(
        builder(&server)
            .session_timeout(timing().scale(Duration::from_secs(30)))
            .connection_timeout(timing().scale(Duration::from_millis(500)))
            .retry_policy(RetryUntilElapsed::new(timing().wait(), Duration::from_millis(100))),
    );
    server.stop().unwrap();
    expect_states(&r.states, &[Suspended]);

    let attempts = Arc::new(AtomicU32::new(0));
    let (c, a) = (r.client.clone(), attempts.clone());
    let raw = thread::spawn(move || {
        c.recipe().call_with_retry(|zk| {
            a.fetch_add(1, Ordering::SeqCst);
            zk.create("/retried", b"x", &Acl::open_unsafe(), CreateMode::Persistent)
        })
    });
    let c = r.client.clone();
    let high_level = thread::spawn(move || c.create().with_data(b"y".to_vec()).for_path("/retried-too"));
    // The first call really ran into the outage, more than once.
    assert!(zk_testing::wait_until(timing().wait(), || attempts
        .load(Ordering::SeqCst)
        >= 2));
    server.restart().unwrap();
    assert_eq!(raw.join().unwrap(), Ok("/retried".to_string()));
    assert_eq!(high_level.join().unwrap(), Ok("/retried-too".to_string()));
    assert!(attempts.load(Ordering::SeqCst) >= 2);
    assert_eq!(r.client.get_data("/retried").unwrap().0, b"x");
    assert_eq!(r.client.get_data("/retried-too").unwrap().0, b"y");
    expect_states(&r.states, &[Reconnected]);
}

#[test]
fn non_retryable_errors_are_returned_at_once() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryNTimes::new(5, Duration::from_secs(1))));
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let err = r
        .client
        .recipe()
        .call_with_retry(|zk| {
            attempts.fetch_add(1, Ordering::SeqCst);
            zk.get_data("/missing")
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::NoNode {
            path: "/missing".into()
        }
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert!(start.elapsed() < Duration::from_secs(1), "no retry sleep");

    // The builder APIs too.
    let start = Instant::now();
    assert!(matches!(r.client.get_data("/missing"), Err(Error::NoNode { .. })));
    assert!(matches!(
        r.client.delete().for_path("/missing"),
        Err(Error::NoNode { .. })
    ));
    assert!(matches!(
        r.client.set_data("/missing", vec![], None),
        Err(Error::NoNode { .. })
    ));
    r.client.create().for_path("/exists").unwrap();
    assert!(matches!(
        r.client.create().for_path("/exists"),
        Err(Error::NodeExists { .. })
    ));
    assert!(matches!(
        r.client.set_data("/exists", vec![], Some(7)),
        Err(Error::BadVersion { .. })
    ));
    assert!(matches!(
        r.client.create().for_path("/no/parent"),
        Err(Error::NoNode { .. })
    ));
    assert!(start.elapsed() < Duration::from_secs(1), "no retry sleep");
    // A guaranteed delete of a missing node is a success.
    r.client.delete().guaranteed().for_path("/missing").unwrap();
}

#[test]
fn retries_follow_the_policy() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryNTimes::new(3, Duration::from_millis(100))));
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let err = r
        .client
        .recipe()
        .call_with_retry(|_| -> zk_framework::Result<()> {
            attempts.fetch_add(1, Ordering::SeqCst);
            Err(Error::OperationTimeout)
        })
        .unwrap_err();
    assert_eq!(err, Error::OperationTimeout);
    assert_eq!(attempts.load(Ordering::SeqCst), 4, "one attempt and three retries");
    assert!(start.elapsed() >= Duration::from_millis(300));
}

/// Each `call_with_retry` has its own retry budget, nested or not (the
/// budget travels with the call, not with the thread): with `RetryNTimes(2)`
/// an inner loop that always fails runs 3 times per outer attempt, and the
/// outer loop gives up after its own 3 attempts.
#[test]
fn nested_call_with_retry_each_has_its_own_budget() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryNTimes::new(2, Duration::from_millis(1))));
    let inner = AtomicU32::new(0);
    let outer = AtomicU32::new(0);
    let err = r
        .client
        .recipe()
        .call_with_retry(|_| {
            outer.fetch_add(1, Ordering::SeqCst);
            r.client.recipe().call_with_retry(|_| -> zk_framework::Result<()> {
                inner.fetch_add(1, Ordering::SeqCst);
                Err(Error::ConnectionLoss)
            })
        })
        .unwrap_err();
    assert_eq!(err, Error::ConnectionLoss);
    assert_eq!(outer.load(Ordering::SeqCst), 3);
    assert_eq!(inner.load(Ordering::SeqCst), 9, "3 per outer attempt");
    // A nested loop that succeeds does not use up the outer budget.
    let outer = AtomicU32::new(0);
    let v = r
        .client
        .recipe()
        .call_with_retry(|zk| {
            let n = outer.fetch_add(1, Ordering::SeqCst);
            let st = r.client.recipe().call_with_retry(|zk2| zk2.exists("/"))?;
            assert!(st.is_some());
            if n < 2 {
                Err(Error::ConnectionLoss)
            } else {
                zk.exists("/")
            }
        })
        .unwrap();
    assert!(v.is_some());
    assert_eq!(outer.load(Ordering::SeqCst), 3);
}

/// A handle bounded by a deadline ends its retries by the deadline, and the
/// operation says the deadline ended it.
#[test]
fn a_deadline_handle_ends_its_retries_by_the_deadline() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryNTimes::new(100, Duration::from_millis(20))));
    let deadline = Instant::now() + Duration::from_millis(300);
    let bounded = r.client.with_deadline(Some(deadline));
    assert_eq!(bounded.deadline(), Some(deadline));
    // The earlier deadline holds.
    assert_eq!(
        bounded
            .with_deadline(Some(deadline + Duration::from_secs(1)))
            .deadline(),
        Some(deadline)
    );
    assert_eq!(r.client.deadline(), None, "the client itself has none");
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let err = bounded
        .recipe()
        .call_with_retry(|zk| -> zk_framework::Result<()> {
            assert_eq!(zk.deadline(), Some(deadline), "the attempt's handle carries it");
            attempts.fetch_add(1, Ordering::SeqCst);
            Err(Error::ConnectionLoss)
        })
        .unwrap_err();
    let elapsed = start.elapsed();
    assert_eq!(err, Error::DeadlineExceeded);
    assert!(attempts.load(Ordering::SeqCst) >= 2, "it retried until the deadline");
    assert!(
        elapsed <= Duration::from_millis(300) + timing().scale(Duration::from_millis(150)),
        "{elapsed:?}"
    );
    // The unbounded client goes on as before.
    assert!(r.client.check_exists("/").unwrap().is_some());
}

/// `TestRetryLoop#testRetryForeverWithSessionFailed`: an operation on the
/// session that expired surfaces SessionExpired with
/// `SessionFailedRetryPolicy`, even over `RetryForever`.
#[test]
fn test_retry_forever_with_session_failed() {
    let server = server();
    let r = connected(
        builder(&server)
            .session_timeout(timing().scale(Duration::from_secs(20)))
            .retry_policy(SessionFailedRetryPolicy::new(
                RetryForever::new(Duration::from_millis(100)).unwrap(),
            )),
    );
    let pinned = r.client.zookeeper_client();
    server
        .expire_session(pinned.session_id(), &pinned.session_password())
        .unwrap();
    expect_expiry_states(&r.states);
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let err = r
        .client
        .recipe()
        .call_with_retry(|_| {
            attempts.fetch_add(1, Ordering::SeqCst);
            pinned.create("/test", &[1, 2, 3], &Acl::open_unsafe(), CreateMode::Ephemeral)
        })
        .unwrap_err();
    assert_eq!(err, Error::SessionExpired);
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// SessionExpired is retryable by default: the retry runs on the new session.
#[test]
fn session_expired_is_retried_on_the_new_session() {
    let server = server();
    let r = connected(builder(&server).session_timeout(timing().scale(Duration::from_secs(20))));
    let pinned = r.client.zookeeper_client();
    server
        .expire_session(pinned.session_id(), &pinned.session_password())
        .unwrap();
    expect_expiry_states(&r.states);
    let attempts = AtomicU32::new(0);
    let path = r
        .client
        .recipe()
        .call_with_retry(|zk| {
            let zk = if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                &*pinned
            } else {
                zk
            };
            zk.create("/test", &[1], &Acl::open_unsafe(), CreateMode::Ephemeral)
        })
        .unwrap();
    assert_eq!(path, "/test");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let owner = r.client.check_exists("/test").unwrap().unwrap().ephemeral_owner;
    assert_eq!(owner, r.client.session_id(), "created on the current session");
}

#[test]
fn close_ends_a_retry_loop_promptly() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryForever::new(Duration::from_millis(50)).unwrap()));
    let (tx, rx) = crossbeam_channel::bounded(1);
    let c = r.client.clone();
    let t = thread::spawn(move || {
        c.recipe().call_with_retry(|_| -> zk_framework::Result<()> {
            let _ = tx.try_send(());
            Err(Error::ConnectionLoss)
        })
    });
    rx.recv_timeout(timing().wait()).expect("the loop runs");
    let start = Instant::now();
    r.client.close();
    assert_eq!(t.join().unwrap(), Err(Error::Closed));
    assert!(start.elapsed() < timing().scale(Duration::from_secs(5)));
    assert_eq!(r.client.check_exists("/"), Err(Error::Closed));
    assert_eq!(r.client.create().for_path("/x"), Err(Error::Closed));
}

/// A policy's pause of `Duration::MAX` (longer than the clock can represent)
/// neither panics nor outlives the client: `close()` ends it.
#[test]
fn a_retry_pause_of_duration_max_ends_on_close() {
    let server = server();
    let r = connected(builder(&server).retry_policy(RetryNTimes::new(1, Duration::MAX)));
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let c = r.client.clone();
    // Not a scoped thread: a pause that outlived the client would hang the
    // test instead of failing it.
    thread::spawn(move || {
        let res = c.recipe().call_with_retry(|_| -> zk_framework::Result<()> {
            let _ = tx.try_send(());
            Err(Error::ConnectionLoss)
        });
        let _ = done_tx.send(res);
    });
    rx.recv_timeout(timing().wait()).expect("the loop runs");
    assert!(done.is_empty(), "pausing");
    let start = Instant::now();
    r.client.close();
    let res = done.recv_timeout(timing().wait()).expect("close() ends the pause");
    assert_eq!(res, Err(Error::Closed));
    assert!(start.elapsed() < timing().scale(Duration::from_secs(2)));
}

#[test]
fn test_exponential_backoff_retry_limit() {
    let p = ExponentialBackoffRetry::with_max_sleep(Duration::from_millis(1), u32::MAX, Duration::from_millis(100));
    for count in 0..ExponentialBackoffRetry::MAX_RETRIES_LIMIT {
        match p.next_retry(count, Duration::ZERO) {
            RetryDecision::RetryAfter(d) => assert!(d <= Duration::from_millis(100), "{count}: {d:?}"),
            RetryDecision::GiveUp => panic!("gave up at {count}"),
        }
    }
    assert_eq!(
        p.next_retry(ExponentialBackoffRetry::MAX_RETRIES_LIMIT, Duration::ZERO),
        RetryDecision::GiveUp
    );
    let f = RetryForever::new(Duration::from_millis(1)).unwrap();
    assert_eq!(
        f.next_retry(u32::MAX, Duration::MAX),
        RetryDecision::RetryAfter(Duration::from_millis(1))
    );
}
