//! Tests on a real 3-node Apache ZooKeeper ensemble (`zk_testing::apache::ApacheCluster`):
//! a session fails over to another server when its server crashes, locks keep excluding
//! across a leader change, fencing tokens keep increasing across it, and the managed client
//! reports `Suspended` then `Reconnected` (same session) when its follower crashes.
//!
//! They need Java and Debian's ZooKeeper jars. Without them they print a line and pass,
//! unless `ZK_TEST_REQUIRE_APACHE=1` is set (CI sets it), in which case they fail.
//!
//! Each test starts its own ensemble (3 JVMs, about 2–5 s); the tests take a file-wide lock
//! so that only one ensemble runs at a time (the machine may have 2 cores). Waits poll with
//! deadlines scaled by `ZK_TEST_TIMING`; nothing sleeps for a fixed time to wait for an event.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::support::{init_log, timing};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::proto::{Acl, CreateMode, EventType};
use zk_framework::ConnectionState;
use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_framework::{Client, ClientConfig, ClientState, SessionEvent, WatchedEvent};
use zk_recipes::{InterProcessMutex, InterProcessSemaphoreMutex, LockEvent, LockStatus};
use zk_testing::apache::{ApacheCluster, ApacheConfig};
use zk_testing::fourlw::four_letter_word;
use zk_testing::wait_until;

/// Only one ensemble at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn apache_or_skip(test: &str) -> bool {
    zk_testing::apache::available_or_skip(test)
}

/// A fresh 3-node ensemble (one leader, two followers).
fn ensemble() -> ApacheCluster {
    init_log();
    let t0 = Instant::now();
    let cluster = ApacheCluster::start(3, ApacheConfig::default()).expect("start a 3-node ensemble");
    println!(
        "ensemble {} up in {:?}, leader {:?}",
        cluster.connect_string(),
        t0.elapsed(),
        cluster.leader()
    );
    cluster
}

fn addr(cluster: &ApacheCluster, i: usize) -> String {
    format!("127.0.0.1:{}", cluster.client_port(i))
}

/// The connect string of the given nodes only.
fn connect_of(cluster: &ApacheCluster, nodes: &[usize]) -> String {
    nodes.iter().map(|&i| addr(cluster, i)).collect::<Vec<_>>().join(",")
}

/// The nodes that report `Mode: follower`.
fn followers(cluster: &ApacheCluster) -> Vec<usize> {
    (0..cluster.len())
        .filter(|&i| cluster.mode(i).as_deref() == Some("follower"))
        .collect()
}

/// Whether a `cons` answer lists the session `sid` (`sid=0x<hex>` followed by `,` or `)`).
fn cons_lists(cons: &str, sid: i64) -> bool {
    let needle = format!("sid={:#x}", sid as u64);
    cons.match_indices(&needle)
        .any(|(at, m)| matches!(cons[at + m.len()..].chars().next(), Some(',') | Some(')')))
}

/// The running node whose `cons` lists the session `sid` (the server it is connected to).
fn node_serving(cluster: &ApacheCluster, sid: i64) -> Option<usize> {
    (0..cluster.len()).filter(|&i| cluster.is_running(i)).find(|&i| {
        four_letter_word(&addr(cluster, i), "cons", Duration::from_secs(2))
            .map(|answer| cons_lists(&answer, sid))
            .unwrap_or(false)
    })
}

/// Waits until `sid` is served by a running node; returns it.
fn wait_node_serving(cluster: &ApacheCluster, sid: i64, timeout: Duration) -> usize {
    let mut found = None;
    let ok = wait_until(timeout, || {
        found = node_serving(cluster, sid);
        found.is_some()
    });
    assert!(ok, "no server lists session {sid:#x} in `cons` within {timeout:?}");
    found.unwrap()
}

fn client_config(session_timeout: Duration) -> ClientConfig {
    ClientConfig::default()
        .with_session_timeout(session_timeout)
        .with_connect_timeout(timing().connection())
}

/// A managed client with a listener registered before it starts, so that every
/// connection state it reports is recorded.
fn managed(connect: &str, session_timeout: Duration) -> (CuratorFramework, Receiver<ConnectionState>) {
    let t = timing();
    let (tx, rx) = crossbeam_channel::unbounded();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(session_timeout)
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .connection_state_listener(move |s| {
            let _ = tx.send(s);
        })
        .build()
        .expect("build a managed client");
    client.block_until_connected(t.wait()).expect("managed client connects");
    (client, rx)
}

/// Receives the next connection state within `timeout`.
fn next_state(rx: &Receiver<ConnectionState>, timeout: Duration, what: &str) -> ConnectionState {
    match rx.recv_timeout(timeout) {
        Ok(s) => s,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: no connection state within {timeout:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: the state channel closed"),
    }
}

/// The sequence number that ends a sequential node's name.
fn sequence(node: &str) -> u64 {
    let digits = node.len() - node.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    assert!(digits >= 10, "not a sequential node: {node}");
    node[node.len() - digits..].parse().expect("a sequence number")
}

fn drain<T>(rx: &Receiver<T>) -> Vec<T> {
    rx.try_iter().collect()
}

/// Receives the next lock event within `timeout`.
fn next_lock_event(rx: &Receiver<LockEvent>, timeout: Duration, what: &str) -> LockEvent {
    rx.recv_timeout(timeout)
        .unwrap_or_else(|e| panic!("{what}: no lock event within {timeout:?} ({e})"))
}

#[test]
fn client_session_fails_over_when_its_server_is_killed() {
    if !apache_or_skip("client_session_fails_over_when_its_server_is_killed") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();

    let zk = Client::connect(
        &cluster.connect_string(),
        client_config(t.scale(Duration::from_secs(10))),
    )
    .expect("connect");
    let session_events = zk.state_receiver();
    zk.wait_connected_timeout(t.wait()).expect("connected");
    let sid = zk.session_id();
    let negotiated = zk.negotiated_timeout().expect("a negotiated session timeout");
    let open = Acl::open_unsafe();

    zk.create("/failover", b"", &open, CreateMode::Persistent)
        .expect("create /failover");
    zk.create("/failover/data", b"v0", &open, CreateMode::Persistent)
        .expect("create /failover/data");
    let eph = zk
        .create("/failover/eph", b"mine", &open, CreateMode::Ephemeral)
        .expect("create the ephemeral node");

    // Three kinds of watch, set on the first server: data, exists (missing node), children.
    let (wtx, wrx) = crossbeam_channel::unbounded::<WatchedEvent>();
    zk.get_data_w("/failover/data", wtx.clone()).expect("data watch");
    assert!(zk
        .exists_w("/failover/created", wtx.clone())
        .expect("exists watch")
        .is_none());
    zk.get_children_w("/failover", wtx).expect("child watch");
    assert_eq!(zk.registered_watches().len(), 3, "{:?}", zk.registered_watches());

    let victim = wait_node_serving(&cluster, sid, t.wait());
    println!(
        "session {sid:#x} (timeout {negotiated:?}) is on node {victim} ({:?}); killing it",
        cluster.mode(victim)
    );
    drain(&session_events);
    let killed_at = Instant::now();
    cluster.kill(victim).expect("SIGKILL the session's server");

    // The same session goes on on another server, within the session timeout.
    let mut now_on = None;
    let failed_over = wait_until(negotiated, || {
        if zk.state() != ClientState::Connected {
            return false;
        }
        now_on = node_serving(&cluster, sid);
        now_on.is_some()
    });
    let took = killed_at.elapsed();
    assert!(
        failed_over,
        "session {sid:#x} not served by another node within {negotiated:?} (state {:?})",
        zk.state()
    );
    let now_on = now_on.unwrap();
    assert_ne!(now_on, victim);
    assert_eq!(zk.session_id(), sid, "the session id changed");
    println!("session {sid:#x} moved from node {victim} to node {now_on} in {took:?}");

    // The session events are delivered apart from the state the wait above saw
    // (a state of Connected with only [Disconnected] received yet, seen under
    // load): wait for SyncConnected, with a deadline.
    let mut events = drain(&session_events);
    let resumed = wait_until(t.wait(), || {
        events.extend(drain(&session_events));
        events.contains(&SessionEvent::SyncConnected)
    });
    assert_eq!(
        events.first(),
        Some(&SessionEvent::Disconnected),
        "session events after the kill: {events:?}"
    );
    assert!(resumed, "no SyncConnected after the failover: {events:?}");
    assert!(!events.contains(&SessionEvent::Expired), "{events:?}");

    // An operation succeeds, and the session's ephemeral node survived (seen by another
    // session too, owned by ours).
    let stat = zk
        .exists(&eph)
        .expect("exists after failover")
        .expect("the ephemeral node survived");
    assert_eq!(stat.ephemeral_owner, sid);
    let survivors: Vec<usize> = (0..cluster.len()).filter(|&i| i != victim).collect();
    let other = Client::connect(&connect_of(&cluster, &survivors), client_config(t.session())).expect("connect");
    other.wait_connected_timeout(t.wait()).expect("other connected");
    // `other` may be on a follower that has not applied every committed
    // transaction yet (a ZooKeeper read is not linearizable): a sync first.
    other.sync("/failover").expect("sync");
    let stat = other
        .exists(&eph)
        .expect("exists")
        .expect("the ephemeral node is visible to others");
    assert_eq!(stat.ephemeral_owner, sid);

    // The watches set on the dead server were re-registered on the new one and fire.
    other.set_data("/failover/data", b"v1", None).expect("set_data");
    other
        .create("/failover/created", b"", &open, CreateMode::Persistent)
        .expect("create /failover/created");
    let mut fired = Vec::new();
    let deadline = t.deadline(Duration::from_secs(10));
    while fired.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        match wrx.recv_timeout(left) {
            Ok(e) => fired.push((e.event_type, e.path.unwrap_or_default())),
            Err(_) => break,
        }
    }
    fired.sort_by_key(|(e, p)| (p.clone(), *e as i32));
    assert_eq!(
        fired,
        vec![
            (EventType::NodeChildrenChanged, "/failover".to_string()),
            (EventType::NodeCreated, "/failover/created".to_string()),
            (EventType::NodeDataChanged, "/failover/data".to_string()),
        ],
        "watches after failover"
    );

    // The killed node comes back and the ensemble is whole again; the session lives on.
    cluster.restart(victim).expect("restart the killed node");
    cluster.wait_for_quorum(t.wait()).expect("quorum after the restart");
    assert!(cluster.is_running(victim));
    zk.set_data("/failover/data", b"v2", None)
        .expect("set_data after the restart");
    assert_eq!(zk.session_id(), sid);
    assert!(!drain(&session_events).contains(&SessionEvent::Expired));

    zk.close();
    // Closing the session deletes its ephemeral node. The close is committed
    // through the leader and `other`'s server may not have applied it yet
    // (seen under load): each read follows a sync, which makes that server
    // catch up with the leader; and `close` waits at most 1 s for its reply,
    // so the closeSession may still be on its way: poll, with a deadline.
    let gone = wait_until(t.wait(), || {
        other.sync("/failover").expect("sync after the close");
        other.exists(&eph).expect("exists").is_none()
    });
    assert!(gone, "the closed session's ephemeral node {eph} is still there");
    other.close();
}

#[test]
fn leader_kill_while_locked_and_waited_keeps_exclusion() {
    if !apache_or_skip("leader_kill_while_locked_and_waited_keeps_exclusion") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    let connect = cluster.connect_string();
    let session_timeout = t.scale(Duration::from_secs(15));
    let (a, a_states) = managed(&connect, session_timeout);
    let (b, b_states) = managed(&connect, session_timeout);
    // Each listener's first state is told on the dispatch thread, which may
    // lag the connection under load: taken here, so that the first state
    // read after the kill is one the kill caused.
    assert_eq!(
        next_state(&a_states, t.wait(), "A at start"),
        ConnectionState::Connected
    );
    assert_eq!(
        next_state(&b_states, t.wait(), "B at start"),
        ConnectionState::Connected
    );
    let (a_sid, b_sid) = (a.session_id(), b.session_id());
    const LOCK: &str = "/leader-kill/lock";

    let a_lock = InterProcessMutex::new(&a, LOCK).expect("A's mutex");
    let a_guard = a_lock.acquire().expect("A acquires");
    let a_token = a_guard.fencing_token();
    let a_node = a_guard.lock_path();
    let a_events = a_guard.events();

    // B queues behind A.
    let a_released = Arc::new(AtomicBool::new(false));
    let b_lock = InterProcessMutex::new(&b, LOCK).expect("B's mutex");
    let waiter = {
        let a_released = Arc::clone(&a_released);
        let wait = t.scale(Duration::from_secs(120));
        std::thread::spawn(move || {
            let guard = b_lock
                .try_acquire_for(wait)
                .expect("B's acquire fails with an error")
                .expect("B acquires before its timeout");
            // Exclusion: A must have released before B holds.
            let excluded = a_released.load(Ordering::SeqCst);
            let token = guard.fencing_token();
            let node = guard.lock_path();
            guard.release().expect("B releases");
            (excluded, token, node)
        })
    };
    assert!(
        wait_until(t.wait(), || a_lock
            .participant_nodes()
            .map(|n| n.len() == 2)
            .unwrap_or(false)),
        "B's lock node did not appear: {:?}",
        a_lock.participant_nodes()
    );
    assert_eq!(
        a_lock.participant_nodes().unwrap()[0],
        a_node,
        "A's node is first in line"
    );
    drain(&a_states);
    drain(&b_states);

    let leader = cluster.leader().expect("a leader");
    println!("killing leader node {leader}; A {a_sid:#x} holds {a_node}, B {b_sid:#x} waits");
    let killed_at = Instant::now();
    cluster.kill(leader).expect("SIGKILL the leader");
    cluster.wait_for_quorum(t.wait()).expect("a new quorum");
    let new_leader = cluster.leader().expect("a new leader");
    assert_ne!(new_leader, leader);
    println!("node {new_leader} leads after {:?}", killed_at.elapsed());

    // Every session was disconnected by the election (followers drop their clients when they
    // lose the leader) and comes back on the same session.
    for (name, client, states, sid) in [("A", &a, &a_states, a_sid), ("B", &b, &b_states, b_sid)] {
        let first = next_state(states, session_timeout, name);
        assert_eq!(first, ConnectionState::Suspended, "{name}'s first state after the kill");
        let second = next_state(states, session_timeout, name);
        assert_eq!(
            second,
            ConnectionState::Reconnected,
            "{name}'s second state after the kill"
        );
        assert_eq!(client.session_id(), sid, "{name}'s session changed");
    }
    // The holder was told (Suspended, then Reconnected) and still holds the lock.
    assert_eq!(next_lock_event(&a_events, t.wait(), "A"), LockEvent::Suspended);
    assert_eq!(next_lock_event(&a_events, t.wait(), "A"), LockEvent::Reconnected);
    assert!(
        wait_until(t.wait(), || a_guard.status() == LockStatus::Held),
        "A's lock status after Reconnected: {:?}",
        a_guard.status()
    );
    let nodes = a_lock.participant_nodes().expect("participants after the election");
    assert_eq!(nodes.len(), 2, "A's and B's nodes, nothing else: {nodes:?}");
    assert_eq!(nodes[0], a_node, "A still first in line");
    assert!(!waiter.is_finished(), "B acquired while A holds the lock");

    // A releases; B, woken by its watch on A's node, acquires.
    a_released.store(true, Ordering::SeqCst);
    a_guard.release().expect("A releases");
    let (excluded, b_token, b_node) = waiter.join().expect("B's thread");
    assert!(excluded, "B held the lock before A released it");
    assert!(b_token > a_token, "B's fencing token {b_token:#x} <= A's {a_token:#x}");
    assert!(
        sequence(&b_node) > sequence(&a_node),
        "B's node {b_node} sorts before A's {a_node}"
    );

    // No orphans: both nodes are gone (a release's delete may finish in the background).
    assert!(
        wait_until(t.wait(), || a.get_children(LOCK).map(|k| k.is_empty()).unwrap_or(false)),
        "orphan lock nodes: {:?}",
        a.get_children(LOCK)
    );
    assert_eq!(a.recipe().pending_background_deletes(), 0);
    assert_eq!(b.recipe().pending_background_deletes(), 0);
    assert_eq!((a.session_id(), b.session_id()), (a_sid, b_sid));
    assert!(!drain(&a_states).contains(&ConnectionState::Lost));
    assert!(!drain(&b_states).contains(&ConnectionState::Lost));
    a.close();
    b.close();
}

#[test]
fn fencing_tokens_keep_increasing_across_a_leader_change() {
    if !apache_or_skip("fencing_tokens_keep_increasing_across_a_leader_change") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    let (client, states) = managed(&cluster.connect_string(), t.scale(Duration::from_secs(15)));
    let mutex = InterProcessMutex::new(&client, "/fencing/mutex").expect("mutex");
    let semaphore = InterProcessSemaphoreMutex::new(&client, "/fencing/semaphore").expect("semaphore mutex");

    let mut tokens = Vec::new();
    let take = |tokens: &mut Vec<(&'static str, i64)>| {
        let g = mutex.acquire().expect("mutex acquire");
        tokens.push(("mutex", g.fencing_token()));
        g.release().expect("mutex release");
        let g = semaphore.acquire().expect("semaphore acquire");
        tokens.push(("semaphore", g.fencing_token()));
        g.release().expect("semaphore release");
    };
    for _ in 0..3 {
        take(&mut tokens);
    }
    let before = tokens.len();
    let old_epoch = tokens[before - 1].1 >> 32;

    let leader = cluster.leader().expect("a leader");
    cluster.kill(leader).expect("SIGKILL the leader");
    cluster.wait_for_quorum(t.wait()).expect("a new quorum");
    assert_ne!(cluster.leader(), Some(leader));
    // Wait until the client is back (it may or may not have been on the old leader).
    assert!(
        wait_until(t.wait(), || client.is_connected() && client.check_exists("/").is_ok()),
        "the client did not reconnect"
    );
    for _ in 0..3 {
        take(&mut tokens);
    }
    println!("tokens: {:x?}", tokens);
    assert!(
        tokens.windows(2).all(|w| w[0].1 < w[1].1),
        "fencing tokens did not strictly increase: {tokens:x?}"
    );
    // The tokens are czxids: a zxid's high 32 bits are the leader's epoch, which grew.
    let new_epoch = tokens[before].1 >> 32;
    assert!(
        new_epoch > old_epoch,
        "epoch {new_epoch} after the change, {old_epoch} before"
    );
    assert!(!drain(&states).contains(&ConnectionState::Lost));
    client.close();
}

#[test]
fn managed_client_suspended_then_reconnected_when_its_follower_dies() {
    if !apache_or_skip("managed_client_suspended_then_reconnected_when_its_follower_dies") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    // Only the followers in the connect string: the client is on a follower, and the one
    // killed is the one it is on.
    let followers = followers(&cluster);
    assert_eq!(
        followers.len(),
        2,
        "modes: {:?}",
        (0..3).map(|i| cluster.mode(i)).collect::<Vec<_>>()
    );
    let (client, states) = managed(&connect_of(&cluster, &followers), t.scale(Duration::from_secs(10)));
    assert_eq!(next_state(&states, t.wait(), "start"), ConnectionState::Connected);
    let sid = client.session_id();
    let eph = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/states/eph")
        .expect("create an ephemeral node");
    let on = wait_node_serving(&cluster, sid, t.wait());
    assert!(followers.contains(&on), "on node {on}, followers {followers:?}");

    cluster.kill(on).expect("SIGKILL the follower");
    let session_timeout = client.negotiated_session_timeout().expect("negotiated timeout");
    assert_eq!(
        next_state(&states, session_timeout, "after the kill"),
        ConnectionState::Suspended
    );
    assert_eq!(
        next_state(&states, session_timeout, "after Suspended"),
        ConnectionState::Reconnected
    );
    assert_eq!(client.session_id(), sid, "Reconnected on another session");
    let now_on = wait_node_serving(&cluster, sid, t.wait());
    assert_ne!(now_on, on);
    let stat = client
        .check_exists(&eph)
        .expect("exists")
        .expect("the ephemeral node survived");
    assert_eq!(stat.ephemeral_owner, sid);
    // Nothing else was reported (no Lost, no second Suspended).
    assert_eq!(drain(&states), Vec::<ConnectionState>::new());

    cluster.restart(on).expect("restart the follower");
    cluster.wait_for_quorum(t.wait()).expect("quorum after the restart");
    client.close();
}

/// Curator's `TestLeaderLatchCluster.testInCluster`, with our state model: three latches, each
/// client pinned to one server; the ZooKeeper leader is killed. Sampled every few
/// milliseconds throughout, at most one latch's `check()` is `Ok`; afterwards exactly one
/// latch leads, and if leadership moved, the term grew.
#[test]
fn leader_latches_keep_one_leader_across_a_zookeeper_leader_kill() {
    use zk_recipes::LeaderLatch;
    if !apache_or_skip("leader_latches_keep_one_leader_across_a_zookeeper_leader_kill") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    let session = t.scale(Duration::from_secs(6));
    let clients: Vec<_> = (0..3)
        .map(|i| managed(&connect_of(&cluster, &[i]), session).0)
        .collect();
    let latches: Arc<Vec<LeaderLatch>> = Arc::new(
        clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let l = LeaderLatch::builder(c, "/election/cluster")
                    .id(format!("p{i}"))
                    .build()
                    .unwrap();
                l.start().unwrap();
                l
            })
            .collect(),
    );
    let leading = |ls: &[LeaderLatch]| ls.iter().filter(|l| l.check().is_ok()).count();
    assert!(
        wait_until(t.wait(), || leading(&latches) == 1),
        "one leader before the kill"
    );
    let before = latches.iter().find_map(|l| l.term()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (latches, stop) = (latches.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(Ordering::SeqCst) {
                most = most.max(latches.iter().filter(|l| l.check().is_ok()).count());
                std::thread::sleep(Duration::from_millis(2));
            }
            most
        })
    };
    let leader = cluster.leader().expect("a leader");
    cluster.kill(leader).expect("SIGKILL the leader");
    cluster.wait_for_quorum(t.wait()).expect("a new quorum");
    // Two session lengths, as Curator's test waits: the latch on the dead server loses
    // its session (its client cannot reach another server) and the others settle.
    let settle = Instant::now() + session * 2;
    assert!(wait_until(session * 4, || Instant::now() >= settle && leading(&latches) == 1));
    stop.store(true, Ordering::SeqCst);
    let most = sampler.join().unwrap();
    assert!(most <= 1, "{most} latches were certainly leader at once");
    let after = latches.iter().find_map(|l| l.term()).unwrap();
    assert!(after >= before, "term {after} after {before}");
    for l in latches.iter() {
        let _ = l.close();
    }
    for c in clients {
        c.close();
    }
}

/// A cache on a follower whose server is killed while another server takes
/// writes (a node deleted and re-created among them): the session fails
/// over, the persistent watch comes with it (SetWatches2), the cache
/// re-reads and tells exactly the difference, then follows live changes
/// made through another server.
#[test]
fn a_cache_follows_its_subtree_across_a_server_kill() {
    use zk_recipes::{CacheEvent, CuratorCache};
    if !apache_or_skip("a_cache_follows_its_subtree_across_a_server_kill") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    let followers = followers(&cluster);
    assert_eq!(followers.len(), 2);
    let (reader, _states) = managed(&connect_of(&cluster, &followers), t.scale(Duration::from_secs(10)));
    let leader = (0..3).find(|i| !followers.contains(i)).unwrap();
    let (writer, _) = managed(&addr(&cluster, leader), t.scale(Duration::from_secs(10)));
    for p in ["/ec/a", "/ec/b"] {
        writer
            .create()
            .creating_parents_if_needed()
            .with_data(b"1".to_vec())
            .for_path(p)
            .unwrap();
    }
    let cache = CuratorCache::builder(&reader, "/ec").build().unwrap();
    let rx = cache.events();
    cache.start().unwrap();
    assert!(cache.wait_current_for(t.wait()));
    let on = wait_node_serving(&cluster, reader.session_id(), t.wait());
    cluster.kill(on).expect("SIGKILL the cache's server");
    writer.delete().for_path("/ec/a").unwrap();
    writer.create().with_data(b"2".to_vec()).for_path("/ec/a").unwrap();
    writer.set_data("/ec/b", b"2".to_vec(), None).unwrap();
    writer.create().for_path("/ec/c").unwrap();
    // The server's view, read through the leader.
    let server_view = || -> Vec<(String, i64, i64)> {
        let mut v = vec![];
        for p in ["/ec", "/ec/a", "/ec/b", "/ec/c"] {
            if let Ok(Some(st)) = writer.check_exists(p) {
                v.push((p.to_string(), st.czxid, st.mzxid));
            }
        }
        v
    };
    let cache_view = || -> Vec<(String, i64, i64)> {
        cache
            .snapshot()
            .iter()
            .map(|d| (d.path().to_string(), d.stat().czxid, d.stat().mzxid))
            .collect()
    };
    assert!(
        wait_until(t.wait() * 2, || cache.freshness().is_current()
            && cache_view() == server_view()),
        "cache {:?} server {:?} ({:?})",
        cache_view(),
        server_view(),
        cache.freshness()
    );
    let evs: Vec<CacheEvent> = drain(&rx);
    let a: Vec<&CacheEvent> = evs.iter().filter(|e| e.path() == Some("/ec/a")).collect();
    assert!(
        matches!(a[a.len() - 2..], [CacheEvent::Deleted(_), CacheEvent::Created(_)]),
        "the re-created node: {a:?}"
    );
    assert!(
        evs.iter().filter(|e| **e == CacheEvent::Initialized).count() >= 2,
        "{evs:?}"
    );
    writer.set_data("/ec/c", b"live".to_vec(), None).unwrap();
    assert!(wait_until(t.wait(), || cache
        .get("/ec/c")
        .is_some_and(|d| d.data() == Some(&b"live"[..]))));
    cache.close();
    cluster.restart(on).expect("restart the server");
    reader.close();
    writer.close();
}

/// On the ensemble: a registration (`PersistentNode`) and a counter whose
/// client's server is killed while an operator deletes the registration.
/// The registration is never `Registered` while the node is missing, and
/// comes back on the same session; the counter, incremented through the
/// failover, counts each increment at most once.
#[test]
fn a_registration_and_a_counter_survive_a_server_kill() {
    use zk_recipes::{DistributedAtomicLong, Outcome};
    use zk_recipes::{PersistentNode, Registration};
    if !apache_or_skip("a_registration_and_a_counter_survive_a_server_kill") {
        return;
    }
    let _serial = serial();
    let t = timing();
    let mut cluster = ensemble();
    let followers = followers(&cluster);
    let (c, _states) = managed(&connect_of(&cluster, &followers), t.scale(Duration::from_secs(10)));
    let leader = (0..3).find(|i| !followers.contains(i)).unwrap();
    let (admin, _) = managed(&addr(&cluster, leader), t.scale(Duration::from_secs(10)));
    let node = PersistentNode::builder(&c, "/er/services/a", CreateMode::Ephemeral)
        .data(b"10.0.0.1".to_vec())
        .build()
        .unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create_for(t.wait()).unwrap());
    let events = node.events();
    assert!(events.recv().unwrap().is_registered());
    let counter = DistributedAtomicLong::new(
        &c,
        "/er/counter",
        ExponentialBackoffRetry::new(Duration::from_millis(10), 5),
    )
    .unwrap();
    let (mut applied, mut unknown) = (0, 0);
    let mut count = |r: zk_recipes::Result<zk_recipes::AtomicValue<i64>>| match r.map(|v| v.outcome().clone()) {
        Ok(Outcome::Applied { .. }) => applied += 1,
        Ok(Outcome::Unknown { .. }) => unknown += 1,
        _ => {}
    };
    for _ in 0..20 {
        count(counter.increment());
    }
    let session = c.session_id();
    let on = wait_node_serving(&cluster, session, t.wait());
    cluster.kill(on).expect("SIGKILL the client's server");
    admin.delete().for_path("/er/services/a").unwrap();
    // Increments through the failover.
    for _ in 0..20 {
        count(counter.increment());
    }
    let mut seen = Vec::new();
    let end = Instant::now() + t.wait() * 2;
    while let Ok(r) = events.recv_timeout(end.saturating_duration_since(Instant::now())) {
        let done = r.is_registered();
        seen.push(r);
        if done {
            break;
        }
    }
    assert!(seen.last().is_some_and(Registration::is_registered), "{seen:?}");
    assert_eq!(seen.iter().filter(|r| r.is_registered()).count(), 1, "{seen:?}");
    assert_eq!(c.session_id(), session, "the same session, failed over");
    let (data, stat) = admin.get_data("/er/services/a").unwrap();
    assert_eq!((data.as_slice(), stat.ephemeral_owner), (&b"10.0.0.1"[..], session));
    assert!(node.creates() >= 2);
    let value = admin
        .get_data("/er/counter")
        .map(|(d, _)| i64::from_be_bytes(<[u8; 8]>::try_from(&d[..8]).unwrap()));
    let value = value.unwrap();
    assert!(
        applied <= value && value <= applied + unknown,
        "value {value}, applied {applied}, unknown {unknown}"
    );
    node.close().unwrap();
    c.close();
    admin.close();
}
