//! Uncertainty has a deadline: the session's safe horizon and health, what a
//! holder is told when its connection freezes (against the next holder's
//! grant), releases bounded in time and truthful, timed acquires that end with
//! a cause, and the loss figures. On the backend `ZK_TEST_SERVER` names, with
//! the connection frozen through the fault proxy (the client notices nothing
//! until its own clock says so).

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;
use zk_framework::{ExponentialBackoffRetry, RetryNTimes};
use zk_framework::{SessionHealth, TlsConfig, TlsErrorKind};
use zk_recipes::{Error, InterProcessMutex, LockEvent, LockStatus, MultiLock};
use zk_testing::proxy::FaultProxy;
use zk_testing::tls::TestPki;

use crate::support::{
    client, closed_port, init_log, lock_nodes, no_orphans, server, timing, wait_until, TestingServer,
};

/// A client through `proxy`, with the test session timeout.
fn proxied(proxy: &FaultProxy) -> CuratorFramework {
    proxied_with(proxy, |b| b)
}

fn proxied_with(
    proxy: &FaultProxy,
    f: impl FnOnce(zk_framework::CuratorFrameworkBuilder) -> zk_framework::CuratorFrameworkBuilder,
) -> CuratorFramework {
    let t = timing();
    let b = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    let c = f(b).build().unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// Ticks every `period` until `until`: the cadence of a holder that samples
/// its lock (no sleeping in the test itself).
fn every(period: Duration, until: Instant) -> impl Iterator<Item = Instant> {
    crossbeam_channel::tick(period)
        .into_iter()
        .take_while(move |t| *t < until)
}

/// Collects `(event, when)` from a loss channel on a thread of its own.
fn record(rx: Receiver<LockEvent>) -> Receiver<(LockEvent, Instant)> {
    let (tx, out) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        while let Ok(ev) = rx.recv() {
            if tx.send((ev, Instant::now())).is_err() {
                return;
            }
        }
    });
    out
}

fn next_event(rx: &Receiver<(LockEvent, Instant)>) -> (LockEvent, Instant) {
    rx.recv_timeout(timing().wait() * 2).expect("a loss event")
}

// ---- the horizon ------------------------------------------------------------------------

/// On a healthy connection the horizon runs ahead by between `7T/9 - margin`
/// (a ping due) and `T - margin` (just answered); the health is Confirmed.
#[test]
fn the_horizon_runs_ahead_on_a_healthy_connection() {
    let s = server();
    let c = client(&s);
    let t = c.negotiated_session_timeout().expect("negotiated");
    let margin = (t / 20).max(Duration::from_millis(50));
    let until = Instant::now() + t * 4 / 3;
    for _ in every(Duration::from_millis(50), until) {
        let lead = c
            .session_horizon()
            .expect("a session")
            .saturating_duration_since(Instant::now());
        assert!(
            lead <= t - margin,
            "lead {lead:?} beyond T - margin ({t:?}, {margin:?})"
        );
        // Two ninths between pings, plus scheduling on a busy machine.
        let low = (t * 7 / 9).saturating_sub(margin + timing().scale(Duration::from_millis(300)));
        assert!(lead >= low, "lead {lead:?} below {low:?} on a healthy connection");
        assert_eq!(c.session_health(), SessionHealth::Confirmed);
    }
    c.close();
    assert_eq!(c.session_horizon(), None, "a closed client has no session");
}

/// The holder of a frozen connection: the loss channel says `Suspended` no
/// later than `check()` first fails (the event is already there when it
/// does), `HorizonPassed` at the horizon, and the horizon comes before the
/// next holder's grant (the server expires the session no sooner).
#[test]
fn a_frozen_holder_is_told_before_the_next_holder_is_granted() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let holder_client = proxied(&proxy);
    let other = client(&s);
    let path = "/uncertainty/frozen";
    let m = InterProcessMutex::new(&holder_client, path).unwrap();
    let g = m.acquire().unwrap();
    let events = record(g.events());
    let waiter = InterProcessMutex::new(&other, path).unwrap();
    std::thread::scope(|sc| {
        let next = sc.spawn(|| {
            let g2 = waiter.acquire().expect("the next holder");
            let granted = Instant::now();
            g2.release().unwrap();
            granted
        });
        // The waiter is queued behind us.
        assert!(wait_until(timing().wait(), || lock_nodes(&other, path).len() == 2));
        proxy.freeze(true);
        let frozen = Instant::now();
        let horizon = g.safe_until().expect("held");
        // Poll as a careful holder does; the channel must already say so.
        let mut last_ok = frozen;
        let mut failed = false;
        for _ in every(Duration::from_millis(2), frozen + timing().wait()) {
            match g.check() {
                Ok(()) => last_ok = Instant::now(),
                Err(Error::LockUncertain { .. }) => {
                    failed = true;
                    break;
                }
                Err(e) => panic!("check after a freeze: {e:?}"),
            }
        }
        assert!(failed, "check() never failed");
        let (ev, _) = events
            .recv_timeout(Duration::from_millis(50))
            .expect("Suspended by now");
        assert_eq!(ev, LockEvent::Suspended, "first event");
        assert!(
            last_ok < horizon,
            "check() was Ok at {last_ok:?}, past the horizon {horizon:?}"
        );
        assert_eq!(g.status(), LockStatus::Uncertain);
        // The horizon passes: told, not before.
        let (ev, at) = next_event(&events);
        assert_eq!(ev, LockEvent::HorizonPassed);
        assert!(at >= horizon, "HorizonPassed {:?} before the horizon", horizon - at);
        let granted = next.join().unwrap();
        let gap = granted.saturating_duration_since(horizon);
        eprintln!(
            "frozen at 0: check() uncertain at {:?}, horizon at {:?}, next holder granted at {:?} (gap {gap:?})",
            last_ok - frozen,
            horizon - frozen,
            granted - frozen
        );
        assert!(granted > horizon, "the next holder was granted before the horizon");
        let (ev, _) = next_event(&events);
        assert_eq!(ev, LockEvent::Lost);
        assert_eq!(g.safe_until(), None);
    });
    proxy.freeze(false);
    assert!(matches!(g.release(), Err(Error::LockLost { .. })));
    no_orphans(&other, path);
}

/// `check()` never answers `Ok` past the horizon, even when the margin puts
/// the horizon before the read timeout.
#[test]
fn check_fails_at_the_horizon_whatever_the_margin() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let t = timing().session();
    // Horizon at T/4, read timeout at 2T/3: a window of 5T/12 (1.7 s
    // unscaled) for the checks below, wide enough for a loaded machine.
    let c = proxied_with(&proxy, |b| b.session_horizon_margin(t * 3 / 4));
    let m = InterProcessMutex::new(&c, "/uncertainty/margin").unwrap();
    let g = m.acquire().unwrap();
    proxy.freeze(true);
    let horizon = g.safe_until().expect("held");
    let mut last_ok = None;
    for _ in every(Duration::from_millis(2), Instant::now() + timing().wait()) {
        if g.check().is_err() {
            break;
        }
        last_ok = Some(Instant::now());
    }
    if let Some(at) = last_ok {
        assert!(at < horizon, "Ok {:?} past the horizon", at - horizon);
    }
    // The read timeout (2T/3) is later than this horizon (T/4): not stale
    // yet, but past the horizon.
    let zk = c.zookeeper_client();
    assert!(zk.since_last_confirmed() <= zk.read_timeout(), "stale already");
    assert_eq!(c.session_health(), SessionHealth::PastHorizon);
    assert!(g.check().is_err());
    proxy.freeze(false);
    assert!(
        wait_until(timing().wait(), || g.check().is_ok()),
        "held again after the freeze"
    );
    g.release().unwrap();
}

// ---- releases ---------------------------------------------------------------------------

/// A release under a partition the client has not noticed answers within its
/// bound (the delete goes on in the background) and says `Ok`: the lock was
/// held when the release began. The node is gone once the network heals.
#[test]
fn a_release_under_an_unnoticed_partition_answers_within_its_bound() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let admin = client(&s);
    let m = InterProcessMutex::new(&c, "/uncertainty/release").unwrap();
    let slack = timing().scale(Duration::from_millis(150));
    for bound in [Some(Duration::from_millis(300)), None] {
        let g = m.acquire().unwrap();
        proxy.freeze(true);
        let start = Instant::now();
        let r = match bound {
            Some(b) => g.release_within(b),
            None => g.release(),
        };
        let elapsed = start.elapsed();
        // The default: a tenth of the session timeout, 100 ms..2 s.
        let t = c.negotiated_session_timeout().unwrap();
        let b = bound.unwrap_or((t / 10).clamp(Duration::from_millis(100), Duration::from_secs(2)));
        eprintln!("release under a freeze: {r:?} after {elapsed:?} (bound {b:?})");
        assert!(r.is_ok(), "held when the release began: {r:?}");
        assert!(elapsed <= b + slack, "{elapsed:?} > {b:?} + {slack:?}");
        proxy.freeze(false);
        no_orphans(&admin, "/uncertainty/release");
    }
}

/// A multi-lock released right after its connection froze: every member was
/// held when the release began, so `Ok`, within the members' bounds; and its
/// loss channel tells each change of the set once, not once per member.
#[test]
fn a_multi_lock_is_told_once_per_change_and_released_truthfully() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied(&proxy);
    let admin = client(&s);
    let multi = MultiLock::from_paths(&c, &["/uncertainty/multi/a", "/uncertainty/multi/b"]).unwrap();
    // Released right after the freeze.
    let g = multi.acquire().unwrap();
    proxy.freeze(true);
    let start = Instant::now();
    let r = g.release();
    eprintln!(
        "multi-lock release under a fresh freeze: {r:?} after {:?}",
        start.elapsed()
    );
    assert!(r.is_ok(), "{r:?}");
    assert!(start.elapsed() <= Duration::from_secs(2) * 2 + timing().scale(Duration::from_millis(300)));
    proxy.freeze(false);
    no_orphans(&admin, "/uncertainty/multi");
    // Events: Suspended, HorizonPassed, Reconnected, each once.
    let g = multi.acquire().unwrap();
    let events = record(g.events());
    proxy.freeze(true);
    let horizon = g.safe_until().expect("held");
    let (ev, _) = next_event(&events);
    assert_eq!(ev, LockEvent::Suspended);
    let (ev, at) = next_event(&events);
    assert_eq!(ev, LockEvent::HorizonPassed);
    assert!(at >= horizon);
    // Heal before the session can expire (the margin's time): held again.
    proxy.freeze(false);
    let (ev, _) = next_event(&events);
    assert!(
        matches!(ev, LockEvent::Reconnected | LockEvent::Lost),
        "after healing: {ev:?}"
    );
    // Nothing repeated per member.
    let rest: Vec<LockEvent> = std::iter::from_fn(|| events.recv_timeout(Duration::from_millis(300)).ok())
        .map(|(e, _)| e)
        .collect();
    assert!(rest.is_empty(), "repeated events: {rest:?}");
    let _ = g.release();
    no_orphans(&admin, "/uncertainty/multi");
}

// ---- timed acquires ----------------------------------------------------------------------

/// A retry policy that is spent before the deadline ends the acquire with the
/// cause (not `Ok(None)`); a deadline shorter than the policy ends it at the
/// deadline, with the cause too.
#[test]
fn a_timed_acquire_against_a_closed_port_ends_with_the_cause() {
    init_log();
    let port = closed_port();
    let c = CuratorFramework::builder()
        .connect_string(format!("127.0.0.1:{port}"))
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(2))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
        .build()
        .unwrap();
    let m = InterProcessMutex::new(&c, "/uncertainty/closed").unwrap();
    for timeout in [Duration::from_secs(3), Duration::from_secs(10)] {
        let start = Instant::now();
        let r = m.try_acquire_for(timeout);
        let elapsed = start.elapsed();
        eprintln!("closed port, try_acquire_for({timeout:?}): {r:?} after {elapsed:?}");
        match &r {
            Err(Error::ZooKeeper(zk_framework::Error::ConnectFailed { reason })) => {
                assert!(reason.contains("refused"), "{reason}")
            }
            _ => panic!("closed port: {r:?}"),
        }
        assert!(elapsed <= timeout + timing().scale(Duration::from_millis(150)));
    }
    c.close();
}

/// A TLS refusal that every server gives (a CA the client does not trust) is
/// returned at once to a lock caller, with its kind, long before the
/// connection timeout.
#[test]
fn a_certain_tls_refusal_reaches_a_lock_caller_at_once() {
    init_log();
    let pki = TestPki::new("uncertainty CA").unwrap();
    let other = TestPki::new("another CA").unwrap();
    let s = TestingServer::start_tls(pki.server_tls().unwrap()).unwrap();
    let tls = TlsConfig::builder().ca_pem(other.ca_pem().as_bytes()).build().unwrap();
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .tls(tls)
        .build()
        .unwrap();
    let m = InterProcessMutex::new(&c, "/uncertainty/tls").unwrap();
    for timeout in [None, Some(Duration::from_secs(10))] {
        let start = Instant::now();
        let r = match timeout {
            None => m.acquire().map(Some),
            Some(t) => m.try_acquire_for(t),
        };
        let elapsed = start.elapsed();
        eprintln!("untrusted CA, timeout {timeout:?}: {r:?} after {elapsed:?}");
        assert!(
            matches!(&r, Err(Error::ZooKeeper(zk_framework::Error::Tls(e))) if e.kind() == TlsErrorKind::UnknownIssuer),
            "{r:?}"
        );
        // A JVM's handshake on a loaded machine is slow; the connection
        // timeout (15 s) is what it must beat.
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    }
    c.close();
}

// ---- figures ----------------------------------------------------------------------------

/// A lock lost because its client was closed counts as `client_closed`, not
/// as a deleted node.
#[test]
fn a_lock_lost_to_close_counts_as_client_closed() {
    use zk_recipes::{lock_stats_of as snapshot_of, LossCause};
    let s = server();
    let c = client(&s);
    let path = "/uncertainty/closed-client";
    let m = InterProcessMutex::new(&c, path).unwrap();
    let g = m.acquire().unwrap();
    let before = snapshot_of(&c, path).unwrap_or_default();
    c.close();
    assert!(wait_until(timing().wait(), || g.status() == LockStatus::Lost));
    let after = snapshot_of(&c, path).unwrap_or_default();
    assert_eq!(
        after.losses_by(LossCause::ClientClosed),
        before.losses_by(LossCause::ClientClosed) + 1,
        "{after:?}"
    );
    assert_eq!(
        after.losses_by(LossCause::NodeDeleted),
        before.losses_by(LossCause::NodeDeleted)
    );
    drop(g);
}
