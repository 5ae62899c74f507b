//! Two managed clients in one process are independent: the locks' state (the
//! grant record, the read levels, the own-node watch timer, the figures, the
//! process name in lock nodes) belongs to the client that made the locks, so
//! closing one client leaves the other's locks, loss signals and figures as
//! they were.

use std::time::Duration;

use zk_recipes::{lock_stats_of as snapshot_of, LossCause};
use zk_recipes::{HolderIdentity, ProcessIdentity};
use zk_recipes::{InterProcessMutex, InterProcessReadWriteLock, LockEvent, LockStatus};

use crate::support::*;

#[test]
fn closing_one_client_leaves_the_others_locks_signals_and_figures_alone() {
    let s = server();
    let t = timing();
    let (a, b, operator) = (client(&s), client(&s), client(&s));
    zk_recipes::set_process_name(&a, "client-a");
    zk_recipes::set_process_name(&b, "client-b");

    // b holds one lock, and waits for one that a holds and one the operator holds.
    let held_b = InterProcessMutex::new(&b, "/clients/held-by-b").unwrap();
    let gb = held_b.acquire().unwrap();
    let loss_b = gb.events();
    let held_a = InterProcessMutex::new(&a, "/clients/held-by-a").unwrap();
    let ga = held_a.acquire().unwrap();
    let by_operator = InterProcessMutex::new(&operator, "/clients/held-by-operator").unwrap();
    let g_op = by_operator.acquire().unwrap();

    // The process name each client writes into its nodes.
    let name_in =
        |c: &zk_framework::CuratorFramework, node: &str| match HolderIdentity::parse(&c.get_data(node).unwrap().0) {
            HolderIdentity::Process(ProcessIdentity { name, .. }) => name,
            other => panic!("not a process identity: {other:?}"),
        };
    assert_eq!(name_in(&operator, &gb.lock_path()), "client-b");
    assert_eq!(name_in(&operator, &ga.lock_path()), "client-a");

    let before_b = snapshot_of(&b, "/clients/held-by-b").unwrap();
    std::thread::scope(|sc| {
        let behind_a = sc.spawn(|| {
            let m = InterProcessMutex::new(&b, "/clients/held-by-a").unwrap();
            m.try_acquire_for(t.wait()).map(|g| g.map(|g| g.release()))
        });
        let behind_op = sc.spawn(|| {
            let m = InterProcessMutex::new(&b, "/clients/held-by-operator").unwrap();
            m.try_acquire_for(t.wait()).map(|g| g.map(|g| g.release()))
        });
        // Both of b's waiters are queued.
        assert!(wait_until(t.wait(), || lock_nodes(&operator, "/clients/held-by-a")
            .len()
            == 2
            && lock_nodes(&operator, "/clients/held-by-operator").len() == 2));

        a.close();
        // a's lock is lost to the close, and b's waiter behind it gets it.
        assert_eq!(ga.status(), LockStatus::Lost);
        assert!(matches!(behind_a.join().unwrap(), Ok(Some(Ok(())))));
        // b's own lock is untouched: held, checked, nothing on its channel.
        assert_eq!(gb.status(), LockStatus::Held);
        gb.check().unwrap();
        assert_eq!(loss_b.try_recv(), Err(crossbeam_channel::TryRecvError::Empty));
        // b's other waiter still waits, and gets the lock when it is released.
        assert_eq!(lock_nodes(&operator, "/clients/held-by-operator").len(), 2);
        drop(g_op);
        assert!(matches!(behind_op.join().unwrap(), Ok(Some(Ok(())))));
    });

    // b's timer still sends own-node watches: a lock b takes now, granted
    // without waiting, is watched only from b's timer, and hears of its
    // node's deletion (before the watch goes out or after: the watch finds
    // the node gone, or is notified). A stopped timer would leave it Held.
    let fresh = InterProcessMutex::new(&b, "/clients/fresh").unwrap();
    let g = fresh.acquire().unwrap();
    let loss = g.events();
    operator.delete().for_path(&g.lock_path()).unwrap();
    assert_eq!(loss.recv_timeout(t.wait()), Ok(LockEvent::Lost));
    drop(g);

    // Figures: a's loss is a's (client_closed); b's are its own.
    let fa = snapshot_of(&a, "/clients/held-by-a").expect("a's figures stay readable after close");
    assert_eq!(fa.losses_by(LossCause::ClientClosed), 1, "{fa:?}");
    let fb = snapshot_of(&b, "/clients/held-by-a").unwrap();
    assert_eq!((fb.acquisitions, fb.releases, fb.total_losses()), (1, 1, 0), "{fb:?}");
    assert_eq!(snapshot_of(&b, "/clients/held-by-b").unwrap(), before_b);
    let ffresh = snapshot_of(&b, "/clients/fresh").unwrap();
    assert_eq!(ffresh.losses_by(LossCause::NodeDeleted), 1);
    assert!(snapshot_of(&a, "/clients/fresh").is_none(), "a never used that path");

    gb.release().unwrap();
    b.close();
    no_orphans(&operator, "/clients");
}

/// The read levels are the client's: a thread holding a read lock through one
/// instance is refused the write lock through another instance of the same
/// client, and the closed client's levels do not leak into a new client.
#[test]
fn read_levels_belong_to_their_client() {
    let s = server();
    let (a, b) = (client(&s), client(&s));
    let rw1 = InterProcessReadWriteLock::new(&a, "/clients/rw").unwrap();
    let rw2 = InterProcessReadWriteLock::new(&a, "/clients/rw").unwrap();
    let r = rw1.read_lock().acquire().unwrap();
    assert!(matches!(
        rw2.write_lock().try_acquire_for(Duration::ZERO),
        Err(zk_recipes::Error::UpgradeRefused { .. })
    ));
    // Another client's write half waits like any other process would.
    let other = InterProcessReadWriteLock::new(&b, "/clients/rw").unwrap();
    assert!(other
        .write_lock()
        .try_acquire_for(Duration::from_millis(50))
        .unwrap()
        .is_none());
    drop(r);
    let w = other
        .write_lock()
        .try_acquire_for(timing().wait())
        .unwrap()
        .expect("free");
    w.release().unwrap();
    a.close();
    b.close();
}
