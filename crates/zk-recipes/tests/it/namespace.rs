//! A lock through a client whose chroot is missing (zk-framework's
//! `framework_namespace` suite has the namespaces themselves): a typed error
//! naming the chroot, for the client and for a lock, until the chroot exists.
//! Runs on the backend chosen by `ZK_TEST_SERVER`.

use std::time::Duration;

use crate::support::framework::*;
use zk_framework::proto::{Acl, CreateMode};

/// A chroot that does not exist on the server: a create with parents, a lock
/// and a namespace fail with a typed error naming the chroot (and saying to
/// create it), not with a NoNode about a lock node; once it exists, they work.
#[test]
fn a_missing_chroot_is_a_typed_error_naming_it() {
    use zk_framework::Error;
    use zk_recipes::InterProcessMutex;
    let server = server();
    let raw = raw_client(&server);
    let cs = format!("{}/missing-root", server.connect_string());
    let want = Error::ChrootMissing {
        chroot: "/missing-root".into(),
    };

    let r = connected(builder_for(&cs));
    let c = &r.client;
    let e = c
        .create()
        .creating_parent_containers_if_needed()
        .for_path("/a/b/c")
        .unwrap_err();
    assert_eq!(e, want);
    assert!(
        e.to_string().contains("/missing-root") && e.to_string().contains("create it"),
        "{e}"
    );
    // A node right under the missing root, and a lock.
    assert_eq!(
        c.create().creating_parents_if_needed().for_path("/x").unwrap_err(),
        want
    );
    let lock = InterProcessMutex::new(c, "/locks/x").unwrap();
    assert_eq!(
        lock.try_acquire_for(Duration::ZERO).unwrap_err(),
        zk_recipes::Error::ZooKeeper(want.clone())
    );
    assert_eq!(lock.acquire().unwrap_err(), zk_recipes::Error::ZooKeeper(want.clone()));
    // Without parent creation a NoNode stays a NoNode.
    assert!(matches!(c.create().for_path("/a/b"), Err(Error::NoNode { .. })));

    // With a namespace: the namespace node cannot be made.
    let n = connected(builder_for(&cs).namespace("app"));
    assert_eq!(n.client.create().for_path("/a").unwrap_err(), want);

    // Once the chroot exists, the same lock works.
    raw.create("/missing-root", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    lock.acquire().unwrap().release().unwrap();
    raw.close();
}
