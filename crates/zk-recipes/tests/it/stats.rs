//! `zk_recipes::stats`: losses counted by cause, and the switch that turns
//! a client's figures off. Runs on the embedded server (`ZK_TEST_SERVER=apache`
//! for Apache ZooKeeper).

use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_recipes::LossCause;
use zk_recipes::{InterProcessMutex, LockEvent, LockStatus};
use zk_testing::{wait_until, TestingServer, Timing};

fn client(server: &TestingServer) -> CuratorFramework {
    let t = Timing::from_env();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

#[test]
fn losses_by_cause_and_the_switch() {
    let server = TestingServer::start().unwrap();
    let t = Timing::from_env();
    let other = client(&server);

    // The node deleted by someone else.
    let c = client(&server);
    let m = InterProcessMutex::new(&c, "/stats/deleted").unwrap();
    let g = m.acquire().unwrap();
    let loss = g.events();
    other.delete().for_path(&g.lock_path()).unwrap();
    assert_eq!(loss.recv_timeout(t.wait()), Ok(LockEvent::Lost));
    drop(g);

    // The session expired.
    let m = InterProcessMutex::new(&c, "/stats/expired").unwrap();
    let g = m.acquire().unwrap();
    let zk = c.zookeeper_client();
    server.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(wait_until(t.wait(), || g.status() == LockStatus::Lost));
    drop(g);

    // The client closed under a held lock.
    let closing = client(&server);
    let m = InterProcessMutex::new(&closing, "/stats/closed").unwrap();
    let g = m.acquire().unwrap();
    closing.close();
    assert_eq!(g.status(), LockStatus::Lost);
    drop(g);

    for (client, path, cause) in [
        (&c, "/stats/deleted", LossCause::NodeDeleted),
        (&c, "/stats/expired", LossCause::SessionExpired),
        // Figures stay readable after their client closed.
        (&closing, "/stats/closed", LossCause::ClientClosed),
    ] {
        let s = zk_recipes::lock_stats_of(client, path).unwrap();
        assert_eq!(s.losses_by(cause), 1, "{path}: {s:?}");
        assert_eq!((s.total_losses(), s.releases, s.holders), (1, 0, 0), "{path}: {s:?}");
        assert_eq!(s.hold_time.count(), 1, "a loss ends the holding");
    }

    // Off: no figure moves; a holding granted while on still ends in them.
    let c = client(&server);
    let m = InterProcessMutex::new(&c, "/stats/switch").unwrap();
    let held_on = m.acquire().unwrap();
    zk_recipes::set_lock_stats_enabled(&c, false);
    zk_recipes::set_lock_stats_enabled(&other, false);
    assert!(
        !zk_recipes::lock_stats_enabled(&c) && zk_recipes::lock_stats_enabled(&closing),
        "the switch is per client"
    );
    let m2 = InterProcessMutex::new(&other, "/stats/switch").unwrap();
    assert!(m2.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    drop(held_on);
    drop(m2.acquire().unwrap());
    zk_recipes::set_lock_stats_enabled(&c, true);
    zk_recipes::set_lock_stats_enabled(&other, true);
    let s = zk_recipes::lock_stats_of(&c, "/stats/switch").unwrap();
    assert_eq!(
        (s.acquisitions, s.timeouts, s.releases, s.holders, s.waiters),
        (1, 0, 1, 0, 0)
    );
    // The other client's figures for the same path: nothing moved while off.
    let s = zk_recipes::lock_stats_of(&other, "/stats/switch").unwrap_or_default();
    assert_eq!(
        (s.acquisitions, s.timeouts, s.releases, s.holders, s.waiters),
        (0, 0, 0, 0, 0)
    );
    other.close();
    c.close();
}
