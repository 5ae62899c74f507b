//! Protected creates (`_c_<uuid>-` names found again after a lost reply, and
//! orphans deleted in the background), guaranteed deletes across an outage,
//! and the create/delete builders.
//!
//! Ports `TestFrameworkEdges#testMissedResponseOnESCreate`,
//! `#testProtectedCreateNodeDeletion`, `#testProtectionWithKilledSession`
//! (CURATOR-498) and `TestFailedDeleteManager#testLostSession` (spec §1.3,
//! §7.10). Lost replies need the embedded server (`drop_next_reply`), so those
//! tests start it explicitly; the others follow `ZK_TEST_SERVER`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::support::framework::*;
use crossbeam_channel::Sender;
use zk_framework::paths::{is_protected, PROTECTED_PREFIX};
use zk_framework::proto::{CreateMode, OpCode};
use zk_framework::Error;
use zk_framework::{RetryDecision, RetryForever, RetryNTimes, RetryOneTime, RetryPolicy};
use zk_testing::TestingServer;

#[test]
fn test_missed_response_on_es_create() {
    let server = embedded_server();
    let r = connected(builder(&server).retry_policy(RetryOneTime::new(Duration::from_millis(1))));
    let sid = r.client.session_id();

    // Curator's own form: a protected EPHEMERAL_SEQUENTIAL create of "/".
    server.embedded().unwrap().drop_next_reply(OpCode::Create2);
    let path = r
        .client
        .create()
        .with_protection()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/")
        .unwrap();
    assert!(path.starts_with("/_c_"), "{path}");
    let ours: Vec<String> = children(&server, "/")
        .unwrap()
        .into_iter()
        .filter(|k| k.starts_with(PROTECTED_PREFIX))
        .collect();
    assert_eq!(ours, vec![path[1..].to_string()], "exactly one node, the one returned");
    assert_eq!(r.client.session_id(), sid, "the session survived the lost reply");
    let stat = r.client.check_exists(&path).unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, sid);

    // Under a parent, as the lock recipes do.
    r.client.create().for_path("/locks").unwrap();
    server.embedded().unwrap().drop_next_reply(OpCode::Create2);
    let path = r
        .client
        .create()
        .with_protection()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/locks/lock-")
        .unwrap();
    assert!(path.starts_with("/locks/_c_"), "{path}");
    let kids = children(&server, "/locks").unwrap();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(format!("/locks/{}", kids[0]), path);
    assert!(is_protected(&kids[0]));
    assert!(kids[0].ends_with("lock-0000000000"), "{kids:?}");
}

#[test]
fn test_protected_create_node_deletion() {
    let server = embedded_server();
    for namespace in [None, Some("nm")] {
        let mut b = builder(&server).retry_policy(RetryNTimes::new(0, Duration::ZERO));
        if let Some(ns) = namespace {
            b = b.namespace(ns);
        }
        let r = connected(b);
        r.client.create().for_path("/parent").unwrap();
        assert!(r.client.get_children("/parent").unwrap().is_empty());
        server.embedded().unwrap().drop_next_reply(OpCode::Create2);
        let err = r
            .client
            .create()
            .with_protection()
            .for_path("/parent/test")
            .unwrap_err();
        assert_eq!(err, Error::ConnectionLoss, "the lost reply reaches the caller");
        // The create was applied; the background find-and-delete removes it.
        let server_parent = r.client.recipe().fix_path("/parent");
        assert!(
            zk_testing::wait_until(timing().wait(), || children(&server, &server_parent)
                .unwrap()
                .is_empty()),
            "protection left an orphan: {:?}",
            children(&server, &server_parent)
        );
        assert!(zk_testing::wait_until(timing().wait(), || r
            .client
            .recipe()
            .pending_background_deletes()
            == 0));
        r.client.delete().for_path("/parent").unwrap();
    }
}

/// A retry policy that stops the server the first time it is asked, then
/// retries forever.
struct StopServerOnFirstRetry {
    server: Arc<TestingServer>,
    stopped: AtomicBool,
    signal: Sender<()>,
    then: RetryForever,
}

impl fmt::Debug for StopServerOnFirstRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StopServerOnFirstRetry")
    }
}

impl RetryPolicy for StopServerOnFirstRetry {
    fn next_retry(&self, retry_count: u32, elapsed: Duration) -> RetryDecision {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            self.server.stop().expect("stop the server");
            let _ = self.signal.send(());
        }
        self.then.next_retry(retry_count, elapsed)
    }
}

/// CURATOR-498: a protected ephemeral create whose reply is lost, then the
/// server goes away for longer than the session. The retry runs on a new
/// session: the old session's node must not be adopted. In the end there is
/// exactly one child, the one returned, owned by the current session.
#[test]
fn test_protection_with_killed_session() {
    let server = Arc::new(embedded_server());
    let (tx, rx) = crossbeam_channel::unbounded();
    let policy = StopServerOnFirstRetry {
        server: server.clone(),
        stopped: AtomicBool::new(false),
        signal: tx,
        then: RetryForever::new(Duration::from_millis(100)).unwrap(),
    };
    let r = connected(builder(&server).retry_policy(policy));
    r.client.create().for_path("/test").unwrap();
    let old_sid = r.client.session_id();

    server.embedded().unwrap().drop_next_reply(OpCode::Create2);
    let c = r.client.clone();
    let create = thread::spawn(move || {
        c.create()
            .with_protection()
            .with_mode(CreateMode::Ephemeral)
            .for_path("/test/hey")
    });
    rx.recv_timeout(timing().wait()).expect("the server was stopped");
    // The session times out while the server is down.
    expect_states(&r.states, &[Suspended, Lost]);
    server.restart().unwrap();
    let path = create.join().unwrap().expect("the protected create succeeds");
    assert!(path.starts_with("/test/_c_") && path.ends_with("-hey"), "{path}");
    let new_sid = r.client.session_id();
    assert_ne!(new_sid, old_sid);
    let name = path.rsplit('/').next().unwrap().to_string();
    assert!(
        zk_testing::wait_until(timing().wait(), || children(&server, "/test")
            == Some(vec![name.clone()])),
        "children of /test: {:?}, want [{name}]",
        children(&server, "/test")
    );
    let stat = r.client.check_exists(&path).unwrap().unwrap();
    assert_eq!(
        stat.ephemeral_owner,
        r.client.session_id(),
        "owned by the current session"
    );
}

/// `TestFailedDeleteManager#testLostSession`, plain and namespaced: a
/// guaranteed delete during an outage fails, and the node is gone after the
/// client reconnects (on a new session).
#[test]
fn test_lost_session() {
    let server = server();
    for namespace in [None, Some("ns")] {
        let mut b = builder(&server)
            .connection_timeout(timing().scale(Duration::from_millis(500)))
            .retry_policy(RetryNTimes::new(2, Duration::from_millis(100)));
        if let Some(ns) = namespace {
            b = b.namespace(ns);
        }
        let r = connected(b);
        r.client.create().for_path("/test-me").unwrap();
        server.stop().unwrap();
        expect_states(&r.states, &[Suspended]);
        let err = r.client.delete().guaranteed().for_path("/test-me").unwrap_err();
        assert!(
            matches!(
                err,
                Error::ConnectionLoss | Error::ConnectFailed { .. } | Error::SessionExpired
            ),
            "guaranteed delete during an outage: {err:?}"
        );
        assert!(r.client.recipe().pending_background_deletes() >= 1);
        expect_states(&r.states, &[Lost]);
        server.restart().unwrap();
        expect_states(&r.states, &[Reconnected]);
        let server_path = r.client.recipe().fix_path("/test-me");
        let raw = raw_client(&server);
        assert!(
            zk_testing::wait_until(timing().wait(), || raw.exists(&server_path).unwrap().is_none()),
            "{server_path} survived the guaranteed delete"
        );
        raw.close();
        assert!(zk_testing::wait_until(timing().wait(), || r
            .client
            .recipe()
            .pending_background_deletes()
            == 0));
    }
}

#[test]
fn create_and_delete_builders() {
    let server = server();
    let r = connected(builder(&server).default_data(b"default".to_vec()));
    let c = &r.client;

    // Container parents (default) and persistent parents.
    let p = c
        .create()
        .creating_parent_containers_if_needed()
        .for_path("/c1/c2/leaf")
        .unwrap();
    assert_eq!(p, "/c1/c2/leaf");
    assert_eq!(c.get_data("/c1/c2/leaf").unwrap().0, b"default");
    c.create().creating_parents_if_needed().for_path("/p1/p2/leaf").unwrap();
    c.create().creating_parents_if_needed().for_path("/p1/p2/gone").unwrap();
    // Container parents are reaped once empty; persistent ones stay.
    c.delete().for_path("/p1/p2/gone").unwrap();
    c.delete().for_path("/c1/c2/leaf").unwrap();
    assert!(zk_testing::wait_until(timing().wait(), || c
        .check_exists("/c1")
        .unwrap()
        .is_none()));
    assert!(c.check_exists("/p1/p2").unwrap().is_some());

    // Stat of the created node.
    let (p, stat) = c.create().with_data(b"v".to_vec()).for_path_with_stat("/s").unwrap();
    assert_eq!(p, "/s");
    assert_eq!((stat.version, stat.data_length), (0, 1));

    // Protected, sequential, persistent.
    let p = c
        .create()
        .with_protection()
        .with_mode(CreateMode::PersistentSequential)
        .creating_parent_containers_if_needed()
        .for_path("/prot/n-")
        .unwrap();
    let name = p.rsplit('/').next().unwrap();
    assert!(is_protected(name), "{p}");
    assert_eq!(zk_framework::paths::normalize(name), "n-0000000000");

    // Deletes: version, children, guaranteed of a missing node.
    assert!(matches!(
        c.delete().with_version(5).for_path("/s"),
        Err(Error::BadVersion { .. })
    ));
    c.delete().with_version(0).for_path("/s").unwrap();
    assert!(matches!(c.delete().for_path("/p1"), Err(Error::NotEmpty { .. })));
    c.delete().deleting_children_if_needed().for_path("/p1").unwrap();
    assert!(c.check_exists("/p1").unwrap().is_none());
    c.delete().guaranteed().for_path("/p1").unwrap();

    // A background delete.
    c.create().for_path("/bg").unwrap();
    c.recipe().delete_in_background("/bg").unwrap();
    assert!(zk_testing::wait_until(timing().wait(), || c
        .check_exists("/bg")
        .unwrap()
        .is_none()));
    assert!(zk_testing::wait_until(timing().wait(), || c
        .recipe()
        .pending_background_deletes()
        == 0));
}

/// A protected group (`for_paths_together`) whose transaction reply is lost:
/// the retry finds both nodes by their shared prefix instead of creating a
/// second pair, on the same session.
#[test]
fn protected_group_with_a_lost_reply_is_found_not_duplicated() {
    let server = embedded_server();
    let r = connected(builder(&server).retry_policy(RetryOneTime::new(Duration::from_millis(1))));
    let sid = r.client.session_id();
    for dir in ["/grp/a", "/grp/b"] {
        r.client.create().creating_parents_if_needed().for_path(dir).unwrap();
    }
    let multis = server.embedded().unwrap().stats().requests(OpCode::Multi);
    server.embedded().unwrap().drop_next_reply(OpCode::Multi);
    let made = r
        .client
        .create()
        .creating_parent_containers_if_needed()
        .with_protection()
        .with_mode(CreateMode::EphemeralSequential)
        .for_paths_together(&[("/grp/a/n-", b"1".to_vec()), ("/grp/b/n-", b"2".to_vec())])
        .unwrap();
    assert_eq!(made.session_id, sid);
    assert_eq!(made.paths.len(), 2);
    // One transaction was sent; the lost reply (the connection closes after
    // the transaction is applied, before the pipelined listings) was answered
    // by finding the nodes: one look in each directory, after a sync (so that
    // a server lagging the transaction could not hide them).
    let stats = server.embedded().unwrap().stats();
    assert_eq!(stats.requests(OpCode::Multi) - multis, 1);
    assert!(
        stats.requests(OpCode::GetChildren2) >= 2,
        "{}",
        stats.requests(OpCode::GetChildren2)
    );
    assert!(stats.requests(OpCode::Sync) >= 1, "the look was not synced");
    for (dir, path) in ["/grp/a", "/grp/b"].iter().zip(&made.paths) {
        let kids = children(&server, dir).unwrap();
        assert_eq!(kids.len(), 1, "exactly one node in {dir}: {kids:?}");
        assert!(path.starts_with(&format!("{dir}/_c_")), "{path}");
        assert_eq!(r.client.check_exists(path).unwrap().unwrap().ephemeral_owner, sid);
    }
    // Both share one protected id.
    let id = |p: &str| p.rsplit('/').next().unwrap()[..40].to_string();
    assert_eq!(id(&made.paths[0]), id(&made.paths[1]));
    // An empty group is refused.
    assert!(matches!(
        r.client.create().for_paths_together(&[]),
        Err(Error::InvalidArgument(_))
    ));
}

/// A listing create under a parent this client does not know: when it makes
/// the parent and its node is the first child, the listing is known without a
/// read; when the parent was there already (with a holder, or emptied after
/// children came and went), the listing is read, in a second round trip.
#[test]
fn a_listing_create_lists_only_when_its_node_may_not_be_the_first_child() {
    let server = embedded_server();
    let e = server.embedded().unwrap();
    let listings = || e.stats().requests(OpCode::GetChildren) + e.stats().requests(OpCode::GetChildren2);
    let a = connected(builder(&server));
    let other = connected(builder(&server));
    let create = |c: &zk_framework::CuratorFramework, path: &str| {
        c.create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_path_listing_parent(path)
            .unwrap()
    };
    let names = |v: &[String]| {
        v.iter()
            .map(|n| zk_framework::paths::normalize(n).to_string())
            .collect::<Vec<_>>()
    };

    // A fresh parent (its own parent there): made by this create, the node is
    // its first child.
    a.client.create().for_path("/fresh").unwrap();
    let l0 = listings();
    let first = create(&a.client, "/fresh/a/lock-");
    assert_eq!(listings(), l0, "no listing sent");
    let first_name = first.path.rsplit('/').next().unwrap().to_string();
    assert_eq!(first.siblings, Some(vec![first_name.clone()]));
    assert!(first.path.ends_with("lock-0000000000"), "{}", first.path);

    // The parent exists, with another session's node in it, unknown to this
    // client: the listing is read and shows both.
    let l1 = listings();
    let second = create(&other.client, "/fresh/a/lock-");
    assert_eq!(listings(), l1 + 1, "one listing");
    let mut seen = names(second.siblings.as_deref().unwrap());
    seen.sort();
    assert_eq!(seen, vec!["lock-0000000000", "lock-0000000001"]);

    // Persistent parents follow the same rule. A fresh one: no listing.
    let persistent = |c: &zk_framework::CuratorFramework| {
        c.create()
            .creating_parents_if_needed()
            .with_mode(CreateMode::PersistentSequential)
            .for_path_listing_parent("/fresh/p/n-")
            .unwrap()
    };
    let l2 = listings();
    let p = persistent(&a.client);
    assert_eq!(listings(), l2);
    assert_eq!(p.siblings, Some(vec!["n-0000000000".to_string()]));

    // A parent that had a child which is gone now (empty, its counter at 1),
    // unknown to a third client: its parent create finds the parent there, and
    // the listing is read.
    a.client.delete().for_path(&p.path).unwrap();
    let third = connected(builder(&server));
    let (l3, parents) = (listings(), e.stats().requests(OpCode::Create));
    let n = persistent(&third.client);
    assert_eq!(e.stats().requests(OpCode::Create), parents + 1, "the parent create");
    assert_eq!(listings(), l3 + 1);
    assert_eq!(n.siblings, Some(vec!["n-0000000001".to_string()]));
}
