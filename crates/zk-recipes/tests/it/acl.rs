//! Locks under ACLs (zk-framework's `acl` suite has the client's
//! credentials and providers): the ACL provider on every node the client and
//! the recipes create, per-path providers, locks on a creator-only path
//! (typed `NoAuth`, no retry loop, no hang), and scoped ACLs that keep parents
//! open for sibling locks. Runs on the backend `ZK_TEST_SERVER` selects
//! (embedded by default, Apache ZooKeeper 3.8 with `ZK_TEST_SERVER=apache`).

use std::time::{Duration, Instant};

use zk_framework::{
    perms, Acl, AclProvider, CreateMode, CuratorFramework, Error as ZkError, ExponentialBackoffRetry, FixedAclProvider,
};
use zk_recipes::{
    Error, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
};
use zk_testing::wait_until;

use crate::support::acl::*;
use crate::support::{server, timing, zero_try, Client as Closing};

fn is_no_auth(e: &Error) -> bool {
    matches!(e, Error::ZooKeeper(ZkError::NoAuth { .. }))
}

// ---- the ACL provider on every node ------------------------------------------------------

#[test]
fn the_provider_sets_the_acl_of_every_node_the_client_and_the_recipes_create() {
    let s = server();
    let c = secure_client(&s, Some(ALICE), FixedAclProvider::creator_all());
    let reader = raw(&s, Some(ALICE));

    // Plain creates with parents (persistent and container), protected creates.
    c.create().creating_parents_if_needed().for_path("/acl-p/a/b").unwrap();
    c.create()
        .creating_parent_containers_if_needed()
        .with_protection()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/acl-c/x/node-")
        .unwrap();
    // Every lock kind, held while the tree is read.
    let m = InterProcessMutex::new(&c, "/acl-locks/mutex").unwrap();
    let rw = InterProcessReadWriteLock::new(&c, "/acl-locks/rw").unwrap();
    let sem = InterProcessSemaphoreV2::new(&c, "/acl-locks/sem", 2).unwrap();
    let sm = InterProcessSemaphoreMutex::new(&c, "/acl-locks/sem-mutex").unwrap();
    let _g1 = m.acquire().unwrap();
    let _g2 = rw.write_lock().acquire().unwrap();
    let _g3 = rw.read_lock().acquire().unwrap(); // a downgrade: both nodes exist
    let _l = sem.acquire().unwrap();
    let _g4 = sm.acquire().unwrap();

    let mut nodes = Vec::new();
    for root in ["/acl-p", "/acl-c", "/acl-locks"] {
        nodes.extend(subtree(&reader, root));
    }
    assert!(nodes.len() >= 16, "{nodes:?}");
    // (An empty container, such as the semaphore's `locks`, may be reaped meanwhile.)
    let nobody = raw(&s, None);
    for n in &nodes {
        match reader.get_acl(n) {
            Ok((acl, _)) => assert_eq!(acl, alice_only(), "{n}"),
            Err(ZkError::NoNode { .. }) => continue,
            Err(e) => panic!("{n}: {e}"),
        }
        // Someone else can neither read nor enter them.
        assert!(
            matches!(
                nobody.get_children(n),
                Err(ZkError::NoAuth { .. } | ZkError::NoNode { .. })
            ),
            "{n}"
        );
    }
}

/// Locks are private to the creator; everything else is readable by all.
#[derive(Debug)]
struct PrivateLocks;
impl AclProvider for PrivateLocks {
    fn default_acl(&self) -> Vec<Acl> {
        Acl::creator_all_read_others()
    }
    fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        if path.starts_with("/app/locks") {
            Acl::creator_all()
        } else {
            Vec::new()
        }
    }
}

#[test]
fn a_per_path_provider_sees_the_namespaced_path_and_with_acl_overrides_the_node_only() {
    let s = server();
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .session_timeout(t.session())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .namespace("app")
        .authorization("digest", ALICE)
        .acl_provider(PrivateLocks)
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    let reader = raw(&s, Some(ALICE));
    let creator_read_others = {
        let mut a = alice_only();
        a.extend(Acl::read_unsafe());
        a
    };
    let lock = InterProcessMutex::new(&c, "/locks/x").unwrap();
    let g = lock.acquire().unwrap();
    c.create()
        .creating_parents_if_needed()
        .with_acl(Acl::open_unsafe())
        .for_path("/config/open")
        .unwrap();
    // The namespace node and /app/config: the default; the lock's nodes: creator only;
    // the node given with_acl: its own.
    assert_eq!(reader.get_acl("/app").unwrap().0, creator_read_others);
    assert_eq!(reader.get_acl("/app/config").unwrap().0, creator_read_others);
    assert_eq!(reader.get_acl("/app/config/open").unwrap().0, Acl::open_unsafe());
    assert_eq!(reader.get_acl("/app/locks").unwrap().0, alice_only());
    assert_eq!(reader.get_acl("/app/locks/x").unwrap().0, alice_only());
    let node = format!("/app{}", g.lock_path());
    assert_eq!(reader.get_acl(&node).unwrap().0, alice_only());
    drop(g);
    c.close();
}

#[test]
fn a_creator_acl_without_credentials_is_invalid_acl() {
    let s = server();
    let c = secure_client(&s, None, FixedAclProvider::creator_all());
    assert!(matches!(
        c.create().for_path("/no-credentials"),
        Err(ZkError::InvalidAcl { .. })
    ));
    let m = InterProcessMutex::new(&c, "/locks/no-credentials").unwrap();
    let start = Instant::now();
    let e = m.try_acquire_for(timing().wait()).unwrap_err();
    assert!(matches!(e, Error::ZooKeeper(ZkError::InvalidAcl { .. })), "{e:?}");
    assert!(
        start.elapsed() < timing().wait(),
        "the acquire waited instead of failing"
    );
}

// ---- locks on a creator-only path --------------------------------------------------------

#[test]
fn a_session_without_the_credentials_cannot_touch_a_creator_only_lock() {
    let s = server();
    let t = timing();
    let owner = secure_client(&s, Some(ALICE), FixedAclProvider::creator_all());
    let lock = InterProcessMutex::new(&owner, "/locks/private").unwrap();
    let held = lock.acquire().unwrap();
    let node = held.lock_path();

    // Mallory's session (other credentials) and an anonymous one, whose retry policy
    // sleeps 2 s before any retry: an acquire that retried could not meet the bound.
    for auth in [Some(MALLORY), None] {
        let mut b = CuratorFramework::builder()
            .connect_string(s.connect_string())
            .session_timeout(t.session())
            .retry_policy(zk_framework::RetryNTimes::new(3, Duration::from_secs(2)));
        if let Some(a) = auth {
            b = b.authorization("digest", a);
        }
        let other = Closing(b.build().unwrap());
        other.block_until_connected(t.wait()).unwrap();
        // It cannot delete the held node...
        let zk = other.zookeeper_client();
        assert!(
            matches!(zk.delete(&node, None), Err(ZkError::NoAuth { .. })),
            "{auth:?}"
        );
        // ...nor queue a node behind it...
        assert!(matches!(
            zk.create(
                "/locks/private/intruder",
                b"",
                &Acl::open_unsafe(),
                CreateMode::Ephemeral
            ),
            Err(ZkError::NoAuth { .. })
        ));
        // ...and every acquire fails at once with a typed NoAuth: no retry loop, no wait.
        let kinds: Vec<Box<dyn Fn() -> Result<bool, Error>>> = vec![
            Box::new(|| {
                let m = InterProcessMutex::new(&other, "/locks/private")?;
                let got = m.try_acquire_for(t.wait())?.is_some();
                Ok(got)
            }),
            Box::new(|| {
                let m = InterProcessMutex::new(&other, "/locks/private")?;
                let got = m.acquire().map(|_| true);
                got
            }),
            Box::new(|| {
                let rw = InterProcessReadWriteLock::new(&other, "/locks/private")?;
                let got = rw.read_lock().try_acquire_for(t.wait())?.is_some();
                Ok(got)
            }),
            Box::new(|| {
                let rw = InterProcessReadWriteLock::new(&other, "/locks/private")?;
                let got = rw.write_lock().try_acquire_for(t.wait())?.is_some();
                Ok(got)
            }),
            Box::new(|| {
                let sem = InterProcessSemaphoreV2::new(&other, "/locks/private", 3)?;
                let got = sem.try_acquire_for(t.wait())?.is_some();
                Ok(got)
            }),
            Box::new(|| {
                let sm = InterProcessSemaphoreMutex::new(&other, "/locks/private")?;
                let got = sm.try_acquire_for(t.wait())?.is_some();
                Ok(got)
            }),
        ];
        for (i, try_it) in kinds.iter().enumerate() {
            let start = Instant::now();
            let r = try_it();
            let elapsed = start.elapsed();
            assert!(matches!(&r, Err(e) if is_no_auth(e)), "kind {i}, {auth:?}: {r:?}");
            // A few round trips, never the retry policy's sleeps or the lock wait.
            assert!(elapsed <= t.scale(Duration::from_secs(1)), "kind {i} took {elapsed:?}");
        }
    }
    // Nothing was left behind, and the holder still holds.
    let alice = raw(&s, Some(ALICE));
    assert_eq!(alice.get_children("/locks/private").unwrap().len(), 1);
    held.check().unwrap();
    held.release().unwrap();
}

#[test]
fn sessions_with_the_credentials_lock_normally_on_a_creator_only_path() {
    let s = server();
    let t = timing();
    let a = secure_client(&s, Some(ALICE), FixedAclProvider::creator_all());
    let b = secure_client(&s, Some(ALICE), FixedAclProvider::creator_all());
    // Mutex: b waits for a, then gets it.
    let ma = InterProcessMutex::new(&a, "/locks/shared").unwrap();
    let mb = InterProcessMutex::new(&b, "/locks/shared").unwrap();
    let ga = ma.acquire().unwrap();
    assert!(mb.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| mb.try_acquire_for(t.wait()).map(|g| g.map(|g| g.release())));
        assert!(
            wait_until(t.wait(), || ma.participant_nodes().unwrap().len() == 2),
            "b never queued"
        );
        ga.release().unwrap();
        let got = waiter.join().unwrap().unwrap();
        assert!(matches!(got, Some(Ok(()))), "{got:?}");
    });
    // Read/write: readers share, a writer excludes.
    let rwa = InterProcessReadWriteLock::new(&a, "/locks/shared-rw").unwrap();
    let rwb = InterProcessReadWriteLock::new(&b, "/locks/shared-rw").unwrap();
    let r1 = rwa.read_lock().acquire().unwrap();
    let r2 = rwb
        .read_lock()
        .try_acquire_for(t.wait())
        .unwrap()
        .expect("readers share");
    std::thread::scope(|sc| {
        let busy = sc.spawn(|| zero_try(|| rwb.write_lock().try_acquire_for(Duration::ZERO)).map(|g| g.is_none()));
        assert_eq!(busy.join().unwrap(), Ok(true), "a writer got in beside readers");
    });
    drop((r1, r2));
    let w = rwb.write_lock().try_acquire_for(t.wait()).unwrap().expect("the writer");
    drop(w);
    // Semaphore: two leases between two sessions, a third waits.
    let sa = InterProcessSemaphoreV2::new(&a, "/locks/shared-sem", 2).unwrap();
    let sb = InterProcessSemaphoreV2::new(&b, "/locks/shared-sem", 2).unwrap();
    let l1 = sa.acquire().unwrap();
    let l2 = sb.try_acquire_for(t.wait()).unwrap().expect("a second lease");
    assert!(sb.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    drop((l1, l2));
    let sma = InterProcessSemaphoreMutex::new(&a, "/locks/shared-sm").unwrap();
    let smb = InterProcessSemaphoreMutex::new(&b, "/locks/shared-sm").unwrap();
    let g = sma.acquire().unwrap();
    assert!(smb.try_acquire_for(Duration::from_millis(200)).unwrap().is_none());
    drop(g);
    assert!(smb.try_acquire_for(t.wait()).unwrap().is_some());
}

/// `ScopedAclProvider::creator_nodes`: the lock's nodes (its path and below)
/// are creator-only, the parents made on the way let others create under
/// them, so a second user locks a sibling path under the same parent; with
/// `FixedAclProvider::creator_all` (Curator's way) the parent is the first
/// user's alone and the second user's lock is refused by it (NoAuth).
// ---- scoped ACLs -------------------------------------------------------------------------

#[test]
fn scoped_acl_keeps_parents_open_for_a_sibling_lock() {
    let s = server();
    // Curator's way: everything creator-only.
    let alice = secure_client(&s, Some(ALICE), FixedAclProvider::creator_all());
    let held = InterProcessMutex::new(&alice, "/fixed-team/deploy").unwrap();
    let g = held.acquire().unwrap();
    let mallory = secure_client(&s, Some(MALLORY), FixedAclProvider::creator_all());
    let sibling = InterProcessMutex::new(&mallory, "/fixed-team/other").unwrap();
    match zero_try(|| sibling.try_acquire_for(Duration::ZERO)) {
        Err(Error::ZooKeeper(ZkError::NoAuth { path })) => {
            assert!(path.starts_with("/fixed-team/"), "{path}")
        }
        other => panic!("a sibling under a creator-only parent: {other:?}"),
    }
    g.release().unwrap();

    // Scoped: the parent is open to others' creates, the lock's nodes are not.
    let alice = secure_client(
        &s,
        Some(ALICE),
        zk_framework::ScopedAclProvider::creator_nodes("/team/deploy").unwrap(),
    );
    let held = InterProcessMutex::new(&alice, "/team/deploy").unwrap();
    let g = held.acquire().unwrap();
    let (parent_acl, _) = alice.zookeeper_client().get_acl("/team").unwrap();
    assert_eq!(
        parent_acl,
        vec![
            Acl::digest("alice", "alice-secret", perms::ALL),
            Acl::world(perms::READ | perms::CREATE)
        ]
    );
    let (lock_acl, _) = alice.zookeeper_client().get_acl("/team/deploy").unwrap();
    assert_eq!(lock_acl, vec![Acl::digest("alice", "alice-secret", perms::ALL)]);
    let node = g.lock_path();
    let (node_acl, _) = alice.zookeeper_client().get_acl(&node).unwrap();
    assert_eq!(node_acl, lock_acl);

    let mallory = secure_client(
        &s,
        Some(MALLORY),
        zk_framework::ScopedAclProvider::creator_nodes("/team/other").unwrap(),
    );
    let sibling = InterProcessMutex::new(&mallory, "/team/other").unwrap();
    let sg = sibling.acquire().expect("a sibling lock under an open parent");
    // Alice's lock stays hers.
    let intruder = InterProcessMutex::new(&mallory, "/team/deploy").unwrap();
    assert!(
        matches!(
            zero_try(|| intruder.try_acquire_for(Duration::ZERO)),
            Err(Error::ZooKeeper(ZkError::NoAuth { .. }))
        ),
        "mallory joined alice's lock"
    );
    // Nor can mallory delete alice's lock directory through the parent.
    assert!(matches!(
        mallory.zookeeper_client().delete("/team/deploy", None),
        Err(ZkError::NoAuth { .. }) | Err(ZkError::NotEmpty { .. })
    ));
    sg.release().unwrap();
    g.release().unwrap();
}
