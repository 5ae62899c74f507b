//! A listener lives as long as its handle, or for the client's lifetime once
//! detached; `let _ = client.add_listener(..)` keeps nothing.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use zk_framework::{ConnectionState, CuratorFramework, RetryNTimes};
use zk_testing::{wait_until, TestingServer, Timing};

fn embedded() -> TestingServer {
    TestingServer::embedded_with(Default::default()).expect("embedded server")
}

fn client(server: &TestingServer) -> CuratorFramework {
    let timing = Timing::from_env();
    let (tx, rx) = crossbeam_channel::unbounded();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(timing.session())
        .connection_timeout(timing.connection())
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(50)))
        .connection_state_listener(move |s| {
            let _ = tx.send(s);
        })
        .build()
        .expect("client");
    // Connected has been dispatched, so listeners added from here on start
    // with what comes next.
    assert_eq!(rx.recv_timeout(timing.wait()), Ok(ConnectionState::Connected));
    c
}

type Seen = Arc<Mutex<Vec<ConnectionState>>>;

fn recorder() -> (Seen, impl Fn(ConnectionState) + Send + Sync + 'static) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    (seen, move |state| s.lock().push(state))
}

#[test]
fn a_detached_listener_runs_and_a_dropped_one_does_not() {
    let server = embedded();
    let c = client(&server);
    let (kept_seen, kept_f) = recorder();
    let (detached_seen, detached_f) = recorder();
    let (dropped_seen, dropped_f) = recorder();
    let (ignored_seen, ignored_f) = recorder();

    let kept = c.add_listener(kept_f);
    c.add_listener(detached_f).detach();
    drop(c.add_listener(dropped_f));
    #[allow(let_underscore_drop)]
    let _ = c.add_listener(ignored_f);

    server.drop_connections().expect("drop connections");
    let wait = Timing::from_env().wait();
    let reconnected = |seen: &Seen| seen.lock().contains(&ConnectionState::Reconnected);
    assert!(
        wait_until(wait, || reconnected(&kept_seen) && reconnected(&detached_seen)),
        "kept {:?}, detached {:?}",
        kept_seen.lock(),
        detached_seen.lock()
    );
    assert_eq!(*detached_seen.lock(), *kept_seen.lock());
    assert_eq!(detached_seen.lock().first(), Some(&ConnectionState::Suspended));
    assert!(dropped_seen.lock().is_empty(), "{:?}", dropped_seen.lock());
    assert!(ignored_seen.lock().is_empty(), "{:?}", ignored_seen.lock());

    // Dropping the kept handle unsubscribes it; the detached listener stays.
    drop(kept);
    let before = kept_seen.lock().len();
    server.drop_connections().expect("drop connections");
    assert!(wait_until(wait, || detached_seen
        .lock()
        .iter()
        .filter(|s| **s == ConnectionState::Reconnected)
        .count()
        == 2));
    assert_eq!(kept_seen.lock().len(), before);
    c.close();
}

#[test]
fn a_detached_listener_is_released_with_the_client() {
    let server = embedded();
    let c = client(&server);
    let token = Arc::new(());
    let held = token.clone();
    c.add_listener(move |_| {
        let _ = &held;
    })
    .detach();
    assert_eq!(Arc::strong_count(&token), 2, "the client keeps the detached listener");
    c.close();
    drop(c);
    assert!(
        wait_until(Timing::from_env().wait(), || Arc::strong_count(&token) == 1),
        "the listener outlived the client"
    );
}

/// `on_close`: a hook runs once, on the closing thread, after every
/// `close_signal()` receiver has disconnected; a dropped hook never runs; a
/// hook added after the close runs at once.
#[test]
fn close_hooks_run_once_at_close_and_dropped_ones_never() {
    let server = embedded();
    let c = client(&server);
    let closed = c.recipe().close_signal();
    let (tx, ran) = crossbeam_channel::unbounded::<(&'static str, bool)>();
    let t = tx.clone();
    let kept = c.recipe().on_close(move || {
        // The close signal has ended before any hook runs.
        let _ = t.send((
            "kept",
            closed.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected),
        ));
    });
    let t = tx.clone();
    let dropped = c.recipe().on_close(move || {
        let _ = t.send(("dropped", true));
    });
    drop(dropped);
    assert!(ran.try_recv().is_err(), "nothing runs before the close");
    c.close();
    assert_eq!(
        ran.try_recv(),
        Ok(("kept", true)),
        "the kept hook ran at close, after the signal"
    );
    assert!(
        ran.try_recv().is_err(),
        "the dropped hook never ran, and the kept one once"
    );
    c.close();
    assert!(ran.try_recv().is_err(), "a second close runs nothing again");
    drop(kept);
    let t = tx.clone();
    let _late = c.recipe().on_close(move || {
        let _ = t.send(("late", true));
    });
    assert_eq!(
        ran.try_recv(),
        Ok(("late", true)),
        "a hook added after the close ran at once"
    );
}
