//! Nodes that come back (`zk_recipes::nodes`): `PersistentNode` re-created
//! after a deletion, a session expiry and the loss of its parent, with an
//! honest registration through a cut, a delete while cut and a heal before
//! expiry; `PersistentTtlNode` (expiry after close, a server without TTL
//! nodes); `GroupMember` (Curator's layout, members seen through the cache);
//! bad input. On the embedded server and on Apache ZooKeeper
//! (`ZK_TEST_SERVER=apache`).

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::{CreateMode, CuratorFramework};
use zk_recipes::nodes::{AbsentReason, GroupMember, PersistentNode, PersistentTtlNode, Registration, UncertainReason};
use zk_recipes::Error;
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

use crate::support::{client, proxied_client, server, timing};

fn node(c: &CuratorFramework, path: &str, mode: CreateMode, data: &[u8]) -> PersistentNode {
    let n = PersistentNode::builder(c, path, mode)
        .data(data.to_vec())
        .build()
        .unwrap();
    n.start().unwrap();
    assert!(n.wait_for_initial_create_for(timing().wait()).unwrap(), "created");
    n
}

/// Waits for a registration event matching `want`, returning every event
/// seen up to it.
fn wait_event(events: &Receiver<Registration>, want: impl Fn(&Registration) -> bool) -> Vec<Registration> {
    let end = Instant::now() + timing().wait() * 2;
    let mut seen = Vec::new();
    while let Ok(ev) = events.recv_timeout(end.saturating_duration_since(Instant::now())) {
        let done = want(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
    panic!("no matching registration event; saw {seen:?}");
}

fn registered(r: &Registration) -> bool {
    r.is_registered()
}

#[test]
fn an_ephemeral_node_is_registered_kept_and_deleted_at_close() {
    let s = server();
    let c = client(&s);
    let admin = client(&s);
    let n = node(&c, "/nodes/basic/host-1", CreateMode::Ephemeral, b"10.0.0.1");
    assert_eq!(
        n.registration(),
        Registration::Registered {
            path: "/nodes/basic/host-1".into()
        }
    );
    let (data, stat) = admin.get_data("/nodes/basic/host-1").unwrap();
    assert_eq!(data, b"10.0.0.1");
    assert_eq!(stat.ephemeral_owner, c.session_id());
    // New data goes to the node and is kept.
    n.set_data(b"10.0.0.2".to_vec()).unwrap();
    assert!(wait_until(timing().wait(), || admin
        .get_data("/nodes/basic/host-1")
        .is_ok_and(|(d, _)| d == b"10.0.0.2")));
    let events = n.events();
    n.close().unwrap();
    assert!(
        admin.check_exists("/nodes/basic/host-1").unwrap().is_none(),
        "deleted at close"
    );
    let seen: Vec<_> = events.iter().collect();
    assert_eq!(
        seen.last(),
        Some(&Registration::Absent {
            why: AbsentReason::Closed
        }),
        "{seen:?}"
    );
    assert!(
        matches!(
            n.close(),
            Err(Error::Closed {
                recipe: "PersistentNode",
                ..
            })
        ),
        "close twice"
    );
    assert!(matches!(n.set_data(vec![]), Err(Error::Closed { .. })));
    assert!(matches!(
        n.wait_for_initial_create_for(Duration::ZERO),
        Err(Error::Closed { .. })
    ));
}

#[test]
fn a_deleted_node_comes_back_with_its_latest_data() {
    let s = server();
    let c = client(&s);
    let admin = client(&s);
    let n = node(&c, "/nodes/deleted/a", CreateMode::Ephemeral, b"one");
    n.set_data(b"two".to_vec()).unwrap();
    let events = n.events();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    admin.delete().for_path("/nodes/deleted/a").unwrap();
    let seen = wait_event(&events, registered);
    assert!(
        seen.contains(&Registration::Absent {
            why: AbsentReason::Deleted
        }),
        "{seen:?}"
    );
    assert_eq!(admin.get_data("/nodes/deleted/a").unwrap().0, b"two");
    assert!(
        wait_until(timing().wait(), || n.creates() == 2),
        "created twice: {}",
        n.creates()
    );
    // The parent deleted with it (a recursive delete): both come back.
    // (The node may come back between the delete of the child and of the
    // parent, as an operator would see it: delete again.)
    assert!(wait_until(timing().wait(), || admin
        .delete()
        .deleting_children_if_needed()
        .for_path("/nodes/deleted")
        .is_ok()));
    assert!(wait_until(timing().wait(), || admin
        .check_exists("/nodes/deleted/a")
        .is_ok_and(|s| s.is_some())));
    assert!(wait_until(timing().wait(), || n.registration().is_registered()));
    n.close().unwrap();
}

#[test]
fn an_ephemeral_node_comes_back_on_the_new_session_after_an_expiry() {
    let s = server();
    let c = client(&s);
    let admin = client(&s);
    let n = node(&c, "/nodes/expiry/a", CreateMode::Ephemeral, b"x");
    let events = n.events();
    let zk = c.zookeeper_client();
    let old = zk.session_id();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    s.expire_session(old, &zk.session_password()).unwrap();
    let seen = wait_event(&events, |r| r.is_registered() && c.session_id() != old);
    // Never registered on the old session after it expired.
    let expired_at = seen
        .iter()
        .position(|r| {
            *r == Registration::Absent {
                why: AbsentReason::SessionExpired,
            }
        })
        .unwrap_or_else(|| panic!("the expiry is told: {seen:?}"));
    assert!(
        seen[expired_at..].iter().filter(|r| r.is_registered()).count() == 1,
        "{seen:?}"
    );
    let (_, stat) = admin.get_data("/nodes/expiry/a").unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id(), "owned by the new session");
    assert_ne!(stat.ephemeral_owner, old);
    n.close().unwrap();
}

/// Composed: a cut, the node deleted by an operator while the client is
/// away, a heal before the session expires. The registration is never
/// `Registered` while the node is not there: uncertain through the cut,
/// uncertain after the heal until the server answered (the node is gone),
/// registered again only once it was created again.
#[test]
fn a_cut_a_delete_and_a_heal_never_show_a_missing_node_registered() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let admin = client(&s);
    let n = node(&c, "/nodes/composed/a", CreateMode::Ephemeral, b"x");
    let session = c.session_id();
    let events = n.events();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    // A partition: the connection cut, new ones refused.
    proxy.refuse(true);
    proxy.cut();
    let seen = wait_event(&events, |r| matches!(r, Registration::Uncertain { .. }));
    assert!(!seen.last().unwrap().is_registered());
    // An operator's break while the client is away, then the heal.
    admin.delete().for_path("/nodes/composed/a").unwrap();
    proxy.refuse(false);
    // Back on the same session: the node is re-created by us.
    let seen = wait_event(&events, registered);
    assert_eq!(c.session_id(), session, "the same session (healed before expiry)");
    let (_, stat) = admin.get_data("/nodes/composed/a").unwrap();
    assert_eq!(stat.ephemeral_owner, session);
    assert!(n.creates() >= 2, "created again after the delete: {seen:?}");
    // Every `Registered` after the cut came after the re-creation: the one
    // registration told is the last event.
    assert_eq!(seen.iter().filter(|r| r.is_registered()).count(), 1, "{seen:?}");
    n.close().unwrap();
}

#[test]
fn a_reconnect_alone_proves_nothing() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let n = node(&c, "/nodes/reconnect/a", CreateMode::Ephemeral, b"x");
    let events = n.events();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    proxy.cut();
    let seen = wait_event(&events, registered);
    // Down (disconnected or silent) or unproven before the proof, and the
    // node was not created again: it was there all along.
    assert!(
        seen.iter().any(|r| matches!(
            r,
            Registration::Uncertain {
                why: UncertainReason::Disconnected | UncertainReason::Silent | UncertainReason::Unproven
            }
        )),
        "{seen:?}"
    );
    assert_eq!(n.creates(), 1);
    n.close().unwrap();
}

#[test]
fn a_sequential_protected_node_keeps_its_name_across_recreations() {
    let s = server();
    let c = client(&s);
    let admin = client(&s);
    let n = node(&c, "/nodes/seq/n-", CreateMode::EphemeralSequential, b"x");
    let first = n.actual_path().unwrap();
    let name = first.rsplit('/').next().unwrap();
    assert!(name.starts_with("_c_") && name.contains("-n-"), "{name}");
    admin.delete().for_path(&first).unwrap();
    assert!(wait_until(timing().wait(), || n.creates() == 2 && n.registration().is_registered()));
    assert_eq!(n.actual_path().unwrap(), first, "the same name");
    assert_eq!(admin.get_children("/nodes/seq").unwrap().len(), 1, "no second node");
    n.close().unwrap();
    assert!(admin.get_children("/nodes/seq").map_or(true, |k| k.is_empty()));
}

#[test]
fn another_sessions_ephemeral_is_not_taken_over_and_ours_follows_it() {
    let s = server();
    let (c, other) = (client(&s), client(&s));
    other
        .create()
        .creating_parent_containers_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .with_data(b"theirs".to_vec())
        .for_path("/nodes/taken/a")
        .unwrap();
    let n = PersistentNode::builder(&c, "/nodes/taken/a", CreateMode::Ephemeral)
        .data(b"ours".to_vec())
        .build()
        .unwrap();
    let events = n.events();
    n.start().unwrap();
    let seen = wait_event(&events, |r| {
        matches!(
            r,
            Registration::Absent {
                why: AbsentReason::OwnedByAnotherSession { .. }
            }
        )
    });
    assert_eq!(
        seen.last(),
        Some(&Registration::Absent {
            why: AbsentReason::OwnedByAnotherSession {
                owner: other.session_id()
            }
        })
    );
    assert_eq!(c.get_data("/nodes/taken/a").unwrap().0, b"theirs", "not overwritten");
    other.close();
    wait_event(&events, registered);
    let (data, stat) = c.get_data("/nodes/taken/a").unwrap();
    assert_eq!((data.as_slice(), stat.ephemeral_owner), (&b"ours"[..], c.session_id()));
    n.close().unwrap();
}

#[test]
fn a_missing_parent_is_waited_for_without_parent_creation() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let n = PersistentNode::builder(&c, "/nodes/noparent/p/a", CreateMode::Persistent)
        .parent_creation(false)
        .build()
        .unwrap();
    let events = n.events();
    n.start().unwrap();
    wait_event(&events, |r| {
        *r == Registration::Absent {
            why: AbsentReason::ParentMissing,
        }
    });
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/nodes/noparent/p")
        .unwrap();
    wait_event(&events, registered);
    n.close().unwrap();
    assert!(admin.check_exists("/nodes/noparent/p/a").unwrap().is_none());
}

#[test]
fn bad_input_is_a_typed_error() {
    let s = server();
    let c = client(&s);
    let b = |path: &str, mode| PersistentNode::builder(&c, path, mode);
    assert!(matches!(
        b("relative", CreateMode::Ephemeral).build(),
        Err(Error::ZooKeeper(_))
    ));
    assert!(matches!(
        b("/", CreateMode::Persistent).build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        b("/a", CreateMode::Container).build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        b("/a", CreateMode::PersistentWithTtl).build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        b("/a", CreateMode::Ephemeral).ttl(Duration::from_secs(1)).build(),
        Err(Error::InvalidArgument(_))
    ));
    for ttl in [Duration::ZERO, Duration::from_millis(1 << 40)] {
        assert!(matches!(
            PersistentTtlNode::new(&c, "/a", ttl, vec![]),
            Err(Error::InvalidArgument(_))
        ));
    }
    let n = b("/nodes/bad/a", CreateMode::Ephemeral).build().unwrap();
    assert!(matches!(n.close(), Err(Error::NotStarted { .. })));
    assert!(matches!(
        n.wait_for_initial_create_for(Duration::ZERO),
        Err(Error::NotStarted { .. })
    ));
    assert_eq!(
        n.registration(),
        Registration::Absent {
            why: AbsentReason::NotStarted
        }
    );
    for id in ["", ".", "..", "a/b"] {
        assert!(matches!(
            GroupMember::new(&c, "/g", id, vec![]),
            Err(Error::InvalidArgument(_))
        ));
    }
    // A closed client: started, never created, closed within its bound.
    let gone = client(&s);
    let n = PersistentNode::builder(&gone, "/nodes/bad/closed", CreateMode::Ephemeral)
        .build()
        .unwrap();
    gone.close();
    n.start().unwrap();
    assert!(!n.wait_for_initial_create_for(Duration::from_millis(200)).unwrap());
    let t0 = Instant::now();
    n.close().unwrap();
    assert!(t0.elapsed() <= Duration::from_secs(3), "close took {:?}", t0.elapsed());
}

#[test]
fn a_ttl_node_is_touched_and_expires_after_close() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let ttl = Duration::from_millis(600);
    let n = PersistentTtlNode::new(&c, "/nodes/ttl/job", ttl, b"busy".to_vec()).unwrap();
    n.start().unwrap();
    assert!(n.wait_for_initial_create_for(timing().wait()).unwrap());
    assert_eq!(admin.get_data("/nodes/ttl/job").unwrap().0, b"busy");
    // The touch child appears after half a TTL, and keeps the node alive past
    // its TTL.
    assert!(wait_until(timing().wait(), || admin
        .check_exists("/nodes/ttl/job/touch")
        .is_ok_and(|s| s.is_some())));
    let created = admin.check_exists("/nodes/ttl/job").unwrap().unwrap().ctime;
    // Touched after the node would have expired untouched: still there.
    assert!(wait_until(ttl * 4 + timing().wait(), || admin
        .check_exists("/nodes/ttl/job/touch")
        .ok()
        .flatten()
        .is_some_and(|t| t.mtime - created > ttl.as_millis() as i64 * 3 / 2)));
    assert!(
        admin.check_exists("/nodes/ttl/job").unwrap().is_some(),
        "touched: alive past its TTL"
    );
    n.close().unwrap();
    assert!(
        admin.check_exists("/nodes/ttl/job").unwrap().is_some(),
        "close deletes nothing"
    );
    // Expires: the child after its TTL, then the node (the server's check
    // interval on top).
    assert!(
        wait_until(ttl * 4 + timing().wait(), || admin
            .check_exists("/nodes/ttl/job")
            .is_ok_and(|s| s.is_none())),
        "expired after close"
    );
}

#[test]
fn a_server_without_ttl_nodes_says_so_once() {
    let s = TestingServer::embedded_with(zk_testing::embedded::ServerConfig {
        extended_types: false,
        ..Default::default()
    })
    .unwrap();
    let c = client(&s);
    let n = PersistentTtlNode::new(&c, "/nodes/nottl", Duration::from_secs(5), vec![]).unwrap();
    n.start().unwrap();
    assert!(matches!(
        n.wait_for_initial_create_for(timing().wait()),
        Err(Error::TtlNotEnabled { .. })
    ));
    assert_eq!(
        n.registration(),
        Registration::Absent {
            why: AbsentReason::TtlNotEnabled
        }
    );
    n.close().unwrap();
}

#[test]
fn group_members_see_each_other_in_curators_layout() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let a = GroupMember::new(&c1, "/nodes/group", "a", b"host-a".to_vec()).unwrap();
    let b = GroupMember::new(&c2, "/nodes/group", "b", b"host-b".to_vec()).unwrap();
    a.start().unwrap();
    b.start().unwrap();
    assert!(a.wait_for_registration_for(timing().wait()).unwrap());
    assert!(b.wait_for_registration_for(timing().wait()).unwrap());
    // Curator's layout: `<group>/<id>`, ephemeral, the data as given.
    let (data, stat) = c1.get_data("/nodes/group/b").unwrap();
    assert_eq!(
        (data.as_slice(), stat.ephemeral_owner),
        (&b"host-b"[..], c2.session_id())
    );
    assert!(wait_until(timing().wait(), || a
        .current_members()
        .is_ok_and(|m| m.len() == 2)));
    assert_eq!(a.current_members().unwrap().get("b").unwrap(), b"host-b");
    b.set_this_data(b"host-b2".to_vec()).unwrap();
    assert!(wait_until(timing().wait(), || a
        .current_members()
        .is_ok_and(|m| m.get("b").map(Vec::as_slice) == Some(b"host-b2"))));
    // A second member with an id taken is not registered while it is.
    let c3 = client(&s);
    let dup = GroupMember::new(&c3, "/nodes/group", "b", b"dup".to_vec()).unwrap();
    dup.start().unwrap();
    let events = dup.registration_events();
    wait_event(&events, |r| {
        matches!(
            r,
            Registration::Absent {
                why: AbsentReason::OwnedByAnotherSession { .. }
            }
        )
    });
    b.close().unwrap();
    assert!(dup.wait_for_registration_for(timing().wait()).unwrap());
    dup.close().unwrap();
    assert!(wait_until(timing().wait(), || a
        .current_members()
        .is_ok_and(|m| m.len() == 1)));
    assert!(a.members().contains_key("a"), "a member always sees itself");
    a.close().unwrap();
}
