//! A lock whose nodes carry an `x509` ACL (zk-framework's `x509` suite has
//! the identities themselves), on the backend `ZK_TEST_SERVER` selects: a
//! session with another certificate cannot delete the held node or join the
//! queue (typed `NoAuth`, at once), a session with the owner's certificate
//! locks.

use std::time::{Duration, Instant};

use zk_framework::{perms, Acl, CreateMode, Error as ZkError};
use zk_recipes::{Error, InterProcessMutex};

use crate::support::timing;
use crate::support::x509::*;

#[test]
fn an_x509_acl_keeps_a_lock_from_sessions_with_another_certificate() {
    let pki = pki();
    let s = server(&pki, None);
    let t = timing();
    let app_cert = pki.client_cert("app").unwrap();
    let only_app = vec![Acl::x509("CN=app", perms::ALL)];
    let holder = client(&s, &pki, &app_cert, only_app.clone());
    let lock = InterProcessMutex::new(&holder, "/x509-locks/job").unwrap();
    let held = lock.acquire().unwrap();
    let node = held.lock_path();
    // The lock node and its parents carry the provider's ACL.
    let zk = holder.zookeeper_client();
    for p in [node.as_str(), "/x509-locks/job", "/x509-locks"] {
        assert_eq!(zk.get_acl(p).unwrap().0, only_app, "{p}");
    }

    // A session with another certificate (whose own ACL provider would be open).
    let other = client(&s, &pki, &pki.client_cert("other").unwrap(), open());
    let oz = other.zookeeper_client();
    assert!(matches!(oz.delete(&node, None), Err(ZkError::NoAuth { .. })));
    assert!(matches!(
        oz.create("/x509-locks/job/intruder", b"", &open(), CreateMode::Ephemeral),
        Err(ZkError::NoAuth { .. })
    ));
    let theirs = InterProcessMutex::new(&other, "/x509-locks/job").unwrap();
    let start = Instant::now();
    let got = theirs.try_acquire_for(t.wait());
    assert!(
        matches!(got, Err(Error::ZooKeeper(ZkError::NoAuth { .. }))),
        "{:?}",
        got.map(|g| g.is_some())
    );
    assert!(start.elapsed() < t.wait(), "the acquire waited instead of failing");
    let start = Instant::now();
    assert!(matches!(
        theirs.acquire().map(|_| ()),
        Err(Error::ZooKeeper(ZkError::NoAuth { .. }))
    ));
    assert!(start.elapsed() < t.wait(), "the acquire waited instead of failing");
    assert!(zk.exists(&node).unwrap().is_some(), "the held node is still there");

    // Another session with the owner's certificate queues behind the holder and
    // gets the lock once it is released.
    let twin = client(&s, &pki, &app_cert, only_app.clone());
    let twins = InterProcessMutex::new(&twin, "/x509-locks/job").unwrap();
    assert!(twins.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    held.release().unwrap();
    let g = twins
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("the owner's certificate locks");
    assert_eq!(twin.zookeeper_client().get_acl(&g.lock_path()).unwrap().0, only_app);
    g.release().unwrap();
}
