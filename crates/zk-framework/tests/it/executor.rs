//! The client's one executor (`fw.recipe().schedule`): jobs in deadline
//! order whatever the order they were queued in (the recipes' timer it
//! replaces was a FIFO: an early job waited behind a later one), the
//! background deletes on the same thread without holding jobs back, and the
//! close.

use std::time::{Duration, Instant};

use crate::support::connect;
use crate::support::framework::*;
use zk_framework::proto::OpCode;
use zk_testing::proxy::FaultProxy;
use zk_testing::wait_until;

/// Jobs queued late-first run early-first, each no earlier than its time;
/// an early job does not wait for a later one queued before it.
#[test]
fn mixed_delays_run_in_deadline_order() {
    let s = server();
    let c = connect(&s.connect_string());
    let (tx, rx) = crossbeam_channel::unbounded();
    let t0 = Instant::now();
    for ms in [100u64, 0, 10, 60, 30] {
        let tx = tx.clone();
        assert!(c.recipe().schedule(t0 + Duration::from_millis(ms), move || {
            let _ = tx.send((ms, t0.elapsed()));
        }));
    }
    let got: Vec<(u64, Duration)> = (0..5).map(|_| rx.recv_timeout(timing().wait()).unwrap()).collect();
    assert_eq!(got.iter().map(|(ms, _)| *ms).collect::<Vec<_>>(), [0, 10, 30, 60, 100]);
    for (ms, at) in &got {
        assert!(*at >= Duration::from_millis(*ms), "{ms} ms job ran at {at:?}");
    }
    // The first did not wait for the 100 ms job queued before it (bound:
    // its time plus a generous scheduling margin).
    assert!(got[0].1 < Duration::from_millis(90), "{:?}", got[0].1);
}

/// A background delete retrying while its client is cut off shares the
/// executor: a job queued meanwhile runs at its time, and the delete is
/// done after the client is back.
#[test]
fn background_deletes_share_the_executor_without_holding_jobs_back() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = builder_for(&proxy.connect_string()).build().unwrap();
    c.block_until_connected(timing().wait()).unwrap();
    let admin = connect(&s.connect_string());
    admin.create().for_path("/exec-bg").unwrap();
    proxy.refuse(true);
    proxy.cut();
    assert!(wait_until(timing().wait(), || !c.is_connected()));
    c.recipe().delete_in_background("/exec-bg").unwrap();
    assert_eq!(c.recipe().pending_background_deletes(), 1);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let t0 = Instant::now();
    assert!(c.recipe().schedule(t0 + Duration::from_millis(20), move || {
        let _ = tx.try_send(t0.elapsed());
    }));
    let ran_at = rx.recv_timeout(timing().wait()).unwrap();
    assert!(ran_at < Duration::from_secs(1), "the job waited {ran_at:?}");
    assert_eq!(
        c.recipe().pending_background_deletes(),
        1,
        "still retrying while cut off"
    );
    proxy.refuse(false);
    assert!(wait_until(timing().wait(), || c.recipe().pending_background_deletes() == 0));
    assert!(admin.check_exists("/exec-bg").unwrap().is_none());
    if let Some(e) = s.embedded() {
        assert!(e.stats().requests(OpCode::Delete) >= 1);
    }
    c.close();
}

/// At the close, queued jobs are dropped unrun (what they own is dropped),
/// and later ones are refused.
#[test]
fn the_close_drops_queued_jobs_and_refuses_new_ones() {
    let s = server();
    let c = connect(&s.connect_string());
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    assert!(c
        .recipe()
        .schedule(Instant::now() + Duration::from_secs(3600), move || {
            let _ = tx.try_send(());
        }));
    c.close();
    // The job's sender was dropped with it, unrun.
    assert_eq!(
        rx.recv_timeout(timing().wait()),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
    assert!(!c.recipe().schedule(Instant::now(), || {}));
}
