//! Partitions inside a real 3-node Apache ZooKeeper ensemble
//! (`ApacheCluster::start_partitionable`): a cut really cuts. Everything is judged from the
//! servers' own answers (`srvr`, `mntr`, `conf`), not from what the proxies believe.
//!
//! They need Java and Debian's ZooKeeper jars. Without them they print a line and pass,
//! unless `ZK_TEST_REQUIRE_APACHE=1` is set (CI sets it), in which case they fail.
//! `ZK_TEST_TIMING` stretches the slack of the bounds (not the bounds' base: the sync limit).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::support::wait_until;
use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::fourlw::four_letter_word;
use zk_testing::raw::RawConnection;
use zk_testing::Timing;

fn apache_or_skip(test: &str) -> bool {
    zk_testing::apache::available_or_skip(test)
}

fn addr(c: &ApacheCluster, i: usize) -> String {
    format!("127.0.0.1:{}", c.client_port(i))
}

/// `mntr` as key -> value (empty when the server is not serving).
fn mntr(c: &ApacheCluster, i: usize) -> BTreeMap<String, String> {
    four_letter_word(&addr(c, i), "mntr", Duration::from_secs(2))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The server's own state from `mntr` (`leader`, `follower`), or `None` when not serving.
fn state(c: &ApacheCluster, i: usize) -> Option<String> {
    mntr(c, i).get("zk_server_state").cloned()
}

/// The `server.N=` lines of node `i`'s current view (`conf`'s membership).
fn view(c: &ApacheCluster, i: usize) -> BTreeMap<String, String> {
    four_letter_word(&addr(c, i), "conf", Duration::from_secs(2))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("server."))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every node lists every *other* node at an address of its own (its proxy), and the nodes
/// that list node `j` at all list it at `n` different addresses: no node adopted another's view.
fn assert_own_views(c: &ApacheCluster, when: &str) {
    let views: Vec<_> = (0..c.len()).map(|i| view(c, i)).collect();
    for (i, v) in views.iter().enumerate() {
        assert_eq!(
            v.len(),
            c.len(),
            "{when}: node {i}'s conf has no full membership: {v:?}"
        );
    }
    for j in 1..=c.len() {
        let seen: BTreeSet<&String> = views.iter().map(|v| &v[&j.to_string()]).collect();
        assert_eq!(
            seen.len(),
            c.len(),
            "{when}: server.{j} is listed at the same address by two nodes (a view was adopted): {views:#?}"
        );
    }
}

/// One leader reports `zk_synced_followers` = `n`, every other node is a follower.
fn wait_for_whole_ensemble(c: &ApacheCluster, within: Duration) -> usize {
    let mut leader = None;
    let ok = wait_until(within, || {
        leader = (0..c.len()).find(|&i| state(c, i).as_deref() == Some("leader"));
        leader.is_some_and(|l| {
            mntr(c, l).get("zk_synced_followers").map(String::as_str) == Some("2")
                && (0..c.len())
                    .filter(|&i| i != l)
                    .all(|i| state(c, i).as_deref() == Some("follower"))
        })
    });
    assert!(
        ok,
        "no whole ensemble within {within:?}: states {:?}",
        (0..c.len()).map(|i| state(c, i)).collect::<Vec<_>>()
    );
    leader.expect("a leader")
}

#[test]
fn an_isolated_leader_gives_up_the_majority_elects_another_and_it_heals_back() {
    if !apache_or_skip("an_isolated_leader_gives_up_the_majority_elects_another_and_it_heals_back") {
        return;
    }
    let t = Timing::from_env();
    let c = ApacheCluster::start_partitionable(3, ApacheConfig::default()).expect("start a partitionable ensemble");
    let sync = c.sync_limit();
    // A tick (ZooKeeper checks every half tick) and the polling, stretched by ZK_TEST_TIMING.
    let slack = t.scale(Duration::from_millis(3000));
    let old = wait_for_whole_ensemble(&c, Duration::from_secs(30));
    assert_own_views(&c, "at start");
    let followers: Vec<usize> = (0..3).filter(|&i| i != old).collect();
    // The followers reached the leader through their proxies (quorum and election).
    for &f in &followers {
        assert!(
            c.link_connections(f, old).unwrap() > 0,
            "follower {f} never used its link to {old}"
        );
    }

    // 1. The leader is cut off from both followers; a client of its own still reaches it.
    let (mut client, resp) = RawConnection::connect(&addr(&c, old), 30_000, None).expect("a session on the leader");
    assert!(resp.timeout > 0);
    let cut_at = Instant::now();
    c.isolate(old).unwrap();
    assert!(
        !client.is_closed_by_peer(Duration::from_millis(200)),
        "the isolated leader dropped its client at once; it should keep it until it notices"
    );
    // It gives up leadership within its sync limit (read from its own mntr) ...
    assert!(
        wait_until(sync + slack, || state(&c, old).as_deref() != Some("leader")),
        "the isolated leader {old} still leads {:?} after the cut (sync limit {sync:?})",
        cut_at.elapsed()
    );
    let gave_up = cut_at.elapsed();
    // ... and drops the client it kept.
    assert!(
        wait_until(slack, || client.is_closed_by_peer(Duration::from_millis(50))),
        "the old leader kept its client connection after giving up"
    );
    // The majority elects another leader, which has one synced follower.
    let mut new = None;
    assert!(
        wait_until(sync + 2 * slack, || {
            new = followers
                .iter()
                .copied()
                .find(|&i| state(&c, i).as_deref() == Some("leader"));
            new.is_some_and(|l| {
                let other = followers.iter().copied().find(|&i| i != l).expect("two followers");
                mntr(&c, l).get("zk_synced_followers").map(String::as_str) == Some("1")
                    && state(&c, other).as_deref() == Some("follower")
            })
        }),
        "the majority elected no leader: states {:?}",
        (0..3).map(|i| state(&c, i)).collect::<Vec<_>>()
    );
    let new = new.expect("a new leader");
    let elected = cut_at.elapsed();
    // The isolated node serves no one while cut off: it cannot lead or follow.
    assert_eq!(state(&c, old), None, "the isolated node serves while cut off");
    println!(
        "isolated leader {old}: gave up after {gave_up:?}, node {new} elected after {elected:?} (sync limit {sync:?})"
    );

    // 2. Heal: one ensemble again, the new leader keeps leading, the old one follows it.
    c.heal_links();
    let healed = Instant::now();
    let leader = wait_for_whole_ensemble(&c, Duration::from_secs(30));
    assert_eq!(leader, new, "the healed ensemble changed leaders again");
    println!("healed back into one ensemble in {:?}", healed.elapsed());
    assert_own_views(&c, "after an election and a heal");

    // 3. One way: the leader's bytes to both followers are held, theirs to it flow. The
    // followers hear nothing from their leader and leave it within the sync limit; the
    // leader, left without followers, gives up; the followers elect one of their own.
    let followers: Vec<usize> = (0..3).filter(|&i| i != new).collect();
    let cut_at = Instant::now();
    for &f in &followers {
        c.block(new, f).unwrap();
    }
    assert!(
        wait_until(sync + 2 * slack, || {
            let s = state(&c, new);
            s.as_deref() != Some("leader") || mntr(&c, new).get("zk_synced_followers").map(String::as_str) == Some("0")
        }),
        "leader {new} kept its followers {:?} after its bytes to them were held",
        cut_at.elapsed()
    );
    let mut third = None;
    assert!(
        wait_until(sync + 3 * slack, || {
            third = followers
                .iter()
                .copied()
                .find(|&i| state(&c, i).as_deref() == Some("leader"));
            third.is_some() && state(&c, new).as_deref() != Some("leader")
        }),
        "after the one-way cut: states {:?}",
        (0..3).map(|i| state(&c, i)).collect::<Vec<_>>()
    );
    println!(
        "one-way cut from leader {new}: node {:?} leads after {:?}",
        third,
        cut_at.elapsed()
    );
    c.heal_links();
    wait_for_whole_ensemble(&c, Duration::from_secs(30));
    assert_own_views(&c, "after a one-way cut");
}
