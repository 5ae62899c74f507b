//! Following the ensemble (`CuratorFrameworkBuilder::ensemble_tracker`) on a
//! reconfigurable 3-node Apache ensemble whose every server is replaced by
//! one on new ports, one by one, while the clients hold an ephemeral node:
//! a tracking client (plain and chrooted) keeps its session, follows every
//! config version and ends connected to a server of the final ensemble, its
//! list exactly the final members; a client without the tracker keeps its
//! start-up list and, once every server it knew is gone, cannot connect.
//! Apache-only (prints a line and passes without Java, unless
//! `ZK_TEST_REQUIRE_APACHE=1`).

use std::time::{Duration, Instant};

use zk_framework::{ConnectionState, CreateMode, CuratorFramework};
use zk_testing::apache::{ApacheConfig, ReconfigurableEnsemble};

use crate::support::{init_log, timing, wait_until};

fn client(connect: &str, track: bool) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(connect.to_string())
        .session_timeout(t.scale(Duration::from_secs(20)))
        .connection_timeout(t.connection())
        .ensemble_tracker(track)
        .ensemble_tracker_delay(Duration::from_millis(200))
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

#[test]
fn tracking_clients_follow_every_server_replaced_and_keep_their_sessions() {
    if !zk_testing::apache::available_or_skip("ensemble_tracker::tracking_clients_follow") {
        return;
    }
    let _serial = crate::support::one_ensemble_at_a_time();
    init_log();
    let t = timing();
    let mut e = ReconfigurableEnsemble::start(3, ApacheConfig::default()).expect("start");
    let start = e.connect_string();
    let admin = client(&start, true);
    admin.create().for_path("/app").unwrap();
    let tracking = client(&start, true);
    let chrooted = client(&format!("{start}/app"), true);
    let fixed = client(&start, false);
    for (i, c) in [&tracking, &chrooted].into_iter().enumerate() {
        c.create()
            .with_mode(CreateMode::Ephemeral)
            .for_path(&format!("/held-{i}"))
            .unwrap();
    }
    let sessions = [
        tracking.zookeeper_client().session_id(),
        chrooted.zookeeper_client().session_id(),
    ];
    let lost = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    for c in [&tracking, &chrooted] {
        let seen = lost.clone();
        c.add_listener(move |s| {
            if s == ConnectionState::Lost {
                seen.lock().push(s);
            }
        })
        .detach();
    }
    // The trackers read the first config.
    assert!(wait_until(t.wait(), || tracking.ensemble_config().is_some()
        && chrooted.ensemble_config().is_some()));

    for old in [1, 2, 3] {
        let t0 = Instant::now();
        let new = e.replace_server(old).expect("replace");
        let version = e.config().version();
        let members = {
            let mut m: Vec<String> = e.connect_string().split(',').map(String::from).collect();
            m.sort();
            m
        };
        // Each tracking client follows: the same version, the same servers,
        // connected to one of them, on its session.
        for (name, c) in [("tracking", &tracking), ("chrooted", &chrooted)] {
            let followed = wait_until(t.wait(), || {
                let mut list = c.server_list();
                list.sort();
                c.ensemble_config().is_some_and(|cfg| cfg.version() == version)
                    && list == members
                    && c.connected_to().is_some_and(|s| members.contains(&s))
            });
            assert!(
                followed,
                "{name}: after server {old} was replaced by {new}: version {:?} (want {version:#x}), list {:?}, on {:?}, want {members:?}",
                c.ensemble_config().map(|c| c.version()),
                c.server_list(),
                c.connected_to()
            );
            println!(
                "{name} followed the replacement of {old} by {new} in {:?}",
                t0.elapsed()
            );
        }
    }
    assert_eq!(
        [
            tracking.zookeeper_client().session_id(),
            chrooted.zookeeper_client().session_id()
        ],
        sessions
    );
    assert!(tracking.check_exists("/held-0").unwrap().is_some());
    // The chroot kept: the chrooted client's node is under /app.
    assert!(chrooted.check_exists("/held-1").unwrap().is_some());
    assert!(admin.check_exists("/app/held-1").unwrap().is_some());
    assert!(lost.lock().is_empty(), "a tracking client lost its session");

    // Without the tracker, the start-up list names only servers that are gone.
    let mut fixed_list = fixed.server_list();
    fixed_list.sort();
    let mut first: Vec<String> = start.split(',').map(String::from).collect();
    first.sort();
    assert_eq!(fixed_list, first);
    assert!(
        wait_until(t.wait(), || fixed.connected_to().is_none()),
        "the untracked client is still connected to {:?}",
        fixed.connected_to()
    );
    for c in [admin, tracking, chrooted, fixed] {
        c.close();
    }
}

/// A config change that comes right after a tracker's read must not leave it
/// blind. The tracker reads `/zookeeper/config` with a watch and remembers
/// that its session has one; when the new watch fired before the tracker had
/// noted it (the next change arriving just after the read's reply), the note
/// was stale: the tracker went on reading without a watch and followed only at
/// reconnections (the rolling-replacement campaign found clients left on
/// removed servers). Here a burst of reconfigurations of the same members
/// (each a new version) keeps changes arriving just after the trackers'
/// reads; then, after a quiet moment, one more: every tracking client must
/// apply it, without any reconnection to tell it.
#[test]
fn a_change_right_after_a_read_does_not_leave_the_tracker_blind() {
    if !zk_testing::apache::available_or_skip("ensemble_tracker::a_change_right_after_a_read") {
        return;
    }
    let _serial = crate::support::one_ensemble_at_a_time();
    init_log();
    let t = timing();
    let mut e = ReconfigurableEnsemble::start(3, ApacheConfig::default()).expect("start");
    let start = e.connect_string();
    let admin = CuratorFramework::builder()
        .connect_string(start.clone())
        .session_timeout(t.scale(Duration::from_secs(20)))
        .connection_timeout(t.connection())
        .authorization("digest", zk_testing::apache::SUPER_AUTH.as_bytes())
        .build()
        .unwrap();
    admin.block_until_connected(t.wait()).unwrap();
    let clients: Vec<CuratorFramework> = (0..8)
        .map(|_| {
            let c = CuratorFramework::builder()
                .connect_string(start.clone())
                .session_timeout(t.scale(Duration::from_secs(20)))
                .connection_timeout(t.connection())
                .ensemble_tracker(true)
                .ensemble_tracker_delay(Duration::ZERO)
                .build()
                .unwrap();
            c.block_until_connected(t.wait()).unwrap();
            c
        })
        .collect();
    // Any reconnection would make a tracker read again: there must be none.
    let disturbed = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    for (i, c) in clients.iter().enumerate() {
        let seen = disturbed.clone();
        c.add_listener(move |s| {
            if s != ConnectionState::Connected {
                seen.lock().push((i, s));
            }
        })
        .detach();
    }
    let version0 = e.config().version();
    assert!(wait_until(t.wait(), || clients
        .iter()
        .all(|c| c.ensemble_config().is_some_and(|cfg| cfg.version() == version0))));
    let lines: Vec<String> = e.config().members().iter().map(ToString::to_string).collect();
    let sessions: Vec<i64> = clients.iter().map(|c| c.zookeeper_client().session_id()).collect();
    let burst = Instant::now();
    let mut versions = 0;
    while burst.elapsed() < Duration::from_secs(8) {
        admin
            .reconfig(zk_framework::Reconfig::new().members(lines.clone()))
            .expect("a reconfig of the same members");
        versions += 1;
    }
    // Quiet, then the last change: no reconnection tells anyone of it.
    std::thread::sleep(Duration::from_millis(500));
    let (last, _) = admin
        .reconfig(zk_framework::Reconfig::new().members(lines.clone()))
        .expect("the last reconfig");
    let followed = wait_until(t.wait(), || {
        clients
            .iter()
            .all(|c| c.ensemble_config().is_some_and(|cfg| cfg.version() == last.version()))
    });
    let blind: Vec<String> = clients
        .iter()
        .enumerate()
        .filter(|(_, c)| c.ensemble_config().map(|cfg| cfg.version()) != Some(last.version()))
        .map(|(i, c)| format!("client {i} on {:#x?}", c.ensemble_config().map(|cfg| cfg.version())))
        .collect();
    assert!(
        followed,
        "after {versions} changes in a burst, the last one ({:#x}) was not applied by: {blind:?}",
        last.version()
    );
    // Followed by their watches: no client moved or reconnected meanwhile.
    assert!(disturbed.lock().is_empty(), "{:?}", disturbed.lock());
    assert_eq!(
        clients
            .iter()
            .map(|c| c.zookeeper_client().session_id())
            .collect::<Vec<_>>(),
        sessions
    );
    println!(
        "{} clients followed {versions} changes in a burst and the last one",
        clients.len()
    );
    let _ = e.refresh_config();
    for c in clients {
        c.close();
    }
    admin.close();
}
