//! Nodes that come back (`zk_recipes::nodes`): `PersistentNode` re-created
//! after a deletion, a session expiry and the loss of its parent, with an
//! honest registration through a cut, a delete while cut and a heal before
//! expiry; `PersistentTtlNode` (expiry after close, a server without TTL
//! nodes); `GroupMember` (Curator's layout, members seen through the cache);
//! bad input. On the embedded server and on Apache ZooKeeper
//! (`ZK_TEST_SERVER=apache`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::proto::OpCode;
use zk_framework::{CreateMode, CuratorFramework};
use zk_recipes::Error;
use zk_recipes::PathChildrenCacheEvent;
use zk_recipes::{
    AbsentReason, GroupMember, MemberEvent, PersistentNode, PersistentTtlNode, Registration, UncertainReason,
};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

use crate::support::{
    client, close_while_held, held_client, nothing_left_under, proxied_client, server, timing, Release,
};

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
fn wait_event<T: std::fmt::Debug>(events: &Receiver<T>, want: impl Fn(&T) -> bool) -> Vec<T> {
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
    let events = n.events();
    n.start().unwrap();
    assert!(n.wait_for_initial_create_for(timing().wait()).unwrap());
    assert!(n.wait_registered_for(timing().wait()).unwrap());
    wait_event(&events, registered);
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
    assert_eq!(
        events.iter().last(),
        Some(Registration::Absent {
            why: AbsentReason::Closed
        }),
        "told, then ended"
    );
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
    let events = dup.events();
    wait_event(&events, |r| {
        matches!(
            r,
            MemberEvent::Registration(Registration::Absent {
                why: AbsentReason::OwnedByAnotherSession { .. }
            })
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

// ---------------------------------------------------------------------------
// A close never orphans: a create in flight at close() (held at a fault
// proxy), for every mode a PersistentNode allows, protected or not.

/// Every mode a `PersistentNode` allows, protected or not.
fn every_mode() -> Vec<(CreateMode, bool)> {
    let modes = [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
        CreateMode::PersistentWithTtl,
        CreateMode::PersistentSequentialWithTtl,
    ];
    modes.into_iter().flat_map(|m| [(m, false), (m, true)]).collect()
}

/// The request a node's create goes out as.
fn create_op(mode: CreateMode) -> OpCode {
    if mode.is_ttl() {
        OpCode::CreateTtl
    } else {
        OpCode::Create2
    }
}

/// What is held at the proxy while the node closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The node's first request (the look at a node of known name; the
    /// create of a sequential one), let go once `close()` returned: no
    /// create may be sent once the close began.
    FirstRequest,
    /// The create itself.
    Create(Release),
}

/// How long a node left by a create in flight may take to go once the
/// hold is lifted.
fn orphan_bound() -> Duration {
    timing().scale(Duration::from_secs(5))
}

/// The most a `close()` may take: the one stop bound (2 s) and a margin.
fn close_bound() -> Duration {
    Duration::from_secs(2) + timing().scale(Duration::from_secs(1))
}

/// One round: a node in `mode` started with `held` held at its own proxy,
/// closed, the hold lifted; `Err` says what it left (or what else broke).
fn close_a_node_in_flight(
    s: &TestingServer,
    base: &str,
    mode: CreateMode,
    protected: bool,
    held: Held,
) -> Result<(), String> {
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(s);
    let parent = format!("{base}/{mode:?}-{}", if protected { "protected" } else { "plain" });
    admin.create().creating_parents_if_needed().for_path(&parent).unwrap();
    let name = if mode.is_sequential() {
        format!("{parent}/n-")
    } else {
        format!("{parent}/n")
    };
    let mut b = PersistentNode::builder(&c, &name, mode).protected(protected);
    if mode.is_ttl() {
        b = b.ttl(Duration::from_secs(120));
    }
    let n = b.build().unwrap();
    let (op, release) = match held {
        Held::FirstRequest if !mode.is_sequential() => (OpCode::Exists, Release::AfterClose),
        Held::FirstRequest => (create_op(mode), Release::AfterClose),
        Held::Create(r) => (create_op(mode), r),
    };
    proxy.hold_next_request(op);
    n.start().unwrap();
    let took = close_while_held(&proxy, &c, release, || n.close());
    let mut broke = Vec::new();
    if took > close_bound() {
        broke.push(format!("close took {took:?}"));
    }
    if op == OpCode::Exists && create_sent_after(&admin, &parent, || n.creates() != 0) {
        broke.push(format!("{} create(s) sent after close began", n.creates()));
    }
    if let Err(left) = nothing_left_under(&admin, &parent, orphan_bound()) {
        broke.push(format!("left {left:?}"));
    }
    if broke.is_empty() {
        Ok(())
    } else {
        Err(broke.join("; "))
    }
}

/// Whether a create shows up (`created`, or a node under `parent`) within a
/// second once the look it follows was answered: a create the node's thread
/// would send after that answer (the absence of an event, watched for a
/// bounded time).
fn create_sent_after(admin: &CuratorFramework, parent: &str, created: impl Fn() -> bool) -> bool {
    wait_until(timing().scale(Duration::from_secs(1)), || {
        created() || !crate::support::synced_children(admin, parent).is_empty()
    })
}

/// Runs `round` for every mode (protected or not) at once, each on its own
/// proxy and client; panics naming every mode that broke.
fn every_mode_in_flight(base: &str, held: Held) {
    let s = server();
    let results: Vec<(String, Result<(), String>)> = std::thread::scope(|scope| {
        let runs: Vec<_> = every_mode()
            .into_iter()
            .map(|(mode, protected)| {
                let s = &s;
                let label = format!("{mode:?}{}", if protected { " protected" } else { "" });
                (
                    label,
                    scope.spawn(move || close_a_node_in_flight(s, base, mode, protected, held)),
                )
            })
            .collect();
        runs.into_iter()
            .map(|(label, h)| (label, h.join().unwrap_or_else(|_| Err("panicked".into()))))
            .collect()
    });
    for (label, r) in &results {
        eprintln!("{held:?} {label}: {}", r.as_ref().err().map_or("clean", String::as_str));
    }
    let broke: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
    assert!(
        broke.is_empty(),
        "{} of {} modes broke: {broke:?}",
        broke.len(),
        results.len()
    );
}

#[test]
fn a_close_while_the_first_request_is_in_flight_sends_no_create_and_leaves_nothing() {
    every_mode_in_flight("/nodes/inflight/first", Held::FirstRequest);
}

#[test]
fn a_create_answered_after_close_returned_is_deleted_by_the_nodes_thread() {
    every_mode_in_flight("/nodes/inflight/after", Held::Create(Release::AfterClose));
}

#[test]
fn a_create_answered_while_close_waits_is_deleted_before_close_returns() {
    every_mode_in_flight("/nodes/inflight/during", Held::Create(Release::DuringClose));
}

/// A group member closed while its create is in flight leaves no member.
fn close_a_member_in_flight(held: Held) {
    let s = server();
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(&s);
    let group = format!("/nodes/inflight/group-{held:?}").replace(['(', ')'], "-");
    admin.create().creating_parents_if_needed().for_path(&group).unwrap();
    let m = GroupMember::new(&c, &group, "m", b"x".to_vec()).unwrap();
    let (op, release) = match held {
        Held::FirstRequest => (OpCode::Exists, Release::AfterClose),
        Held::Create(r) => (OpCode::Create2, r),
    };
    proxy.hold_next_request(op);
    m.start().unwrap();
    let took = close_while_held(&proxy, &c, release, || m.close());
    let mut broke = Vec::new();
    if took > close_bound() {
        broke.push(format!("close took {took:?}"));
    }
    if held == Held::FirstRequest && create_sent_after(&admin, &group, || false) {
        broke.push("a create sent after close began".to_string());
    }
    if let Err(left) = nothing_left_under(&admin, &group, orphan_bound()) {
        broke.push(format!("left {left:?}"));
    }
    eprintln!(
        "GroupMember {held:?}: {}",
        if broke.is_empty() {
            "clean".to_string()
        } else {
            broke.join("; ")
        }
    );
    assert!(broke.is_empty(), "GroupMember {held:?}: {broke:?}");
}

#[test]
fn a_group_member_closed_while_its_first_request_is_in_flight_leaves_nothing() {
    close_a_member_in_flight(Held::FirstRequest);
}

#[test]
fn a_group_members_create_answered_after_close_returned_is_deleted() {
    close_a_member_in_flight(Held::Create(Release::AfterClose));
}

#[test]
fn a_group_members_create_answered_while_close_waits_is_deleted() {
    close_a_member_in_flight(Held::Create(Release::DuringClose));
}

/// A TTL node's close leaves its node to expire; a create in flight at the
/// close makes a node nobody touches, gone one TTL after that create (plus
/// the server's check intervals): nothing outlives its TTL.
#[test]
fn a_ttl_nodes_create_in_flight_at_close_makes_a_node_that_expires_untouched() {
    let s = server();
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(&s);
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/nodes/ttl-inflight")
        .unwrap();
    let ttl = Duration::from_millis(1500);
    let n = PersistentTtlNode::new(&c, "/nodes/ttl-inflight/job", ttl, b"busy".to_vec()).unwrap();
    proxy.hold_next_request(OpCode::CreateTtl);
    n.start().unwrap();
    let took = close_while_held(&proxy, &c, Release::AfterClose, || n.close());
    assert!(took <= close_bound(), "close took {took:?}");
    // The create went through after the close (the node's thread counts it).
    let created = Instant::now();
    assert!(wait_until(timing().wait(), || n.node().creates() == 1));
    // Gone within a TTL and the server's check intervals (100 ms each),
    // never touched meanwhile.
    let bound = ttl + timing().scale(Duration::from_secs(2));
    let mut touched = false;
    let gone = wait_until(bound + timing().scale(Duration::from_secs(1)), || {
        touched |= admin
            .check_exists("/nodes/ttl-inflight/job/touch")
            .is_ok_and(|t| t.is_some());
        admin.check_exists("/nodes/ttl-inflight/job").is_ok_and(|x| x.is_none())
    });
    let after = created.elapsed();
    assert!(
        gone,
        "the node outlived its TTL: {:?}",
        admin.check_exists("/nodes/ttl-inflight/job")
    );
    assert!(!touched, "touched after the close");
    assert!(
        after <= bound + timing().scale(Duration::from_secs(1)),
        "gone {after:?} after its create"
    );
}

/// A touch in flight at a TTL node's close: no write is begun after the
/// close (the touch's create of its child, which would keep the node a TTL
/// longer, is not sent).
#[test]
fn a_ttl_nodes_touch_in_flight_at_close_begins_nothing_after_it() {
    let s = server();
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(&s);
    // Long enough that the held touch's own deadline (a TTL) outlasts the
    // close: its reply comes in time for it to go on.
    let ttl = Duration::from_secs(6);
    let n = PersistentTtlNode::new(&c, "/nodes/ttl-touch/job", ttl, b"busy".to_vec()).unwrap();
    n.start().unwrap();
    assert!(n.wait_for_initial_create_for(timing().wait()).unwrap());
    // The first touch writes the child (absent yet: NoNode), then creates it.
    proxy.hold_next_request(OpCode::SetData);
    let took = close_while_held(&proxy, &c, Release::AfterClose, || n.close());
    assert!(took <= close_bound(), "close took {took:?}");
    let released = Instant::now();
    let bound = ttl + timing().scale(Duration::from_secs(2));
    let mut touched = false;
    let gone = wait_until(bound + timing().scale(Duration::from_secs(1)), || {
        touched |= admin
            .check_exists("/nodes/ttl-touch/job/touch")
            .is_ok_and(|t| t.is_some());
        admin.check_exists("/nodes/ttl-touch/job").is_ok_and(|x| x.is_none())
    });
    assert!(!touched, "the touch child was created after the close");
    assert!(gone, "the node outlived its TTL");
    assert!(released.elapsed() <= bound + timing().scale(Duration::from_secs(1)));
}

/// What every closing test below checks: each close within the bound, one
/// `Ok` and the others `Closed`, nothing left under `parent`.
fn closed_once_and_nothing_left(results: Vec<(Result<(), Error>, Duration)>, admin: &CuratorFramework, parent: &str) {
    for (_, took) in &results {
        assert!(*took <= close_bound(), "a close took {took:?}");
    }
    let ok = results.iter().filter(|(r, _)| r.is_ok()).count();
    assert_eq!(ok, 1, "one close succeeds: {results:?}");
    assert!(
        results
            .iter()
            .all(|(r, _)| r.is_ok() || matches!(r, Err(Error::Closed { .. }))),
        "{results:?}"
    );
    if let Err(left) = nothing_left_under(admin, parent, orphan_bound()) {
        panic!("left {left:?}");
    }
}

/// Closes `close` from `n` threads at once (clones, each on its thread).
fn close_at_once<T: Clone + Send + 'static>(
    n: usize,
    it: &T,
    close: fn(&T) -> Result<(), Error>,
) -> Vec<(Result<(), Error>, Duration)> {
    let gate = Arc::new(std::sync::Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (it, gate) = (it.clone(), gate.clone());
            std::thread::spawn(move || {
                gate.wait();
                let t0 = Instant::now();
                let r = close(&it);
                (r, t0.elapsed())
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn two_threads_closing_a_node_at_once_close_it_once_and_leave_nothing() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    // Registered, then closed from two threads at once.
    let n = node(&c, "/nodes/twice/a", CreateMode::Ephemeral, b"x");
    closed_once_and_nothing_left(close_at_once(2, &n, PersistentNode::close), &admin, "/nodes/twice");
    // The same while its create is in flight (held at a proxy).
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let held = held_client(&proxy);
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/nodes/twice-held")
        .unwrap();
    let n = PersistentNode::builder(&held, "/nodes/twice-held/n-", CreateMode::PersistentSequential)
        .build()
        .unwrap();
    proxy.hold_next_request(OpCode::Create2);
    n.start().unwrap();
    assert!(wait_until(timing().wait(), || proxy.held_requests() == 1));
    let closes = close_at_once(2, &n, PersistentNode::close);
    proxy.release_held();
    held.check_exists("/").unwrap();
    closed_once_and_nothing_left(closes, &admin, "/nodes/twice-held");
    // A group member and a TTL node alike.
    let m = GroupMember::new(&c, "/nodes/twice-group", "m", vec![]).unwrap();
    m.start().unwrap();
    assert!(m.wait_for_registration_for(timing().wait()).unwrap());
    closed_once_and_nothing_left(close_at_once(2, &m, GroupMember::close), &admin, "/nodes/twice-group");
    let t = PersistentTtlNode::new(&c, "/nodes/twice-ttl/job", Duration::from_secs(60), vec![]).unwrap();
    t.start().unwrap();
    assert!(t.wait_for_initial_create_for(timing().wait()).unwrap());
    let results = close_at_once(2, &t, PersistentTtlNode::close);
    assert_eq!(results.iter().filter(|(r, _)| r.is_ok()).count(), 1, "{results:?}");
    assert!(results.iter().all(|(_, took)| *took <= close_bound()), "{results:?}");
}

/// A user's thread reading a node's events closes the node (a clone of it)
/// when it is told the node is registered: the close returns within its
/// bound, the channel ends, and nothing is left.
#[test]
fn a_node_closed_from_its_event_handler_thread_closes_and_leaves_nothing() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let n = PersistentNode::builder(&c, "/nodes/handler/a", CreateMode::Ephemeral)
        .build()
        .unwrap();
    let events = n.events();
    let handle = n.clone();
    let handler = std::thread::spawn(move || {
        let mut took = None;
        for r in events.iter() {
            if r.is_registered() && took.is_none() {
                let t0 = Instant::now();
                handle.close().unwrap();
                took = Some(t0.elapsed());
            }
        }
        took
    });
    n.start().unwrap();
    let took = handler.join().unwrap().expect("registered, then closed by the handler");
    assert!(took <= close_bound(), "close took {took:?}");
    assert_eq!(
        n.registration(),
        Registration::Absent {
            why: AbsentReason::Closed
        }
    );
    nothing_left_under(&admin, "/nodes/handler", orphan_bound()).unwrap();
    // A group member's events alike.
    let m = GroupMember::new(&c, "/nodes/handler-group", "m", vec![]).unwrap();
    let events = m.events();
    let handle = m.clone();
    let handler = std::thread::spawn(move || {
        for ev in events.iter() {
            if matches!(&ev, MemberEvent::Registration(r) if r.is_registered()) {
                let t0 = Instant::now();
                handle.close().unwrap();
                return Some(t0.elapsed());
            }
        }
        None
    });
    m.start().unwrap();
    let took = handler.join().unwrap().expect("registered, then closed by the handler");
    assert!(took <= close_bound(), "close took {took:?}");
    nothing_left_under(&admin, "/nodes/handler-group", orphan_bound()).unwrap();
}

/// Clones share one node: a clone moved to another thread sets its data and
/// sees it registered; dropping a clone does not close it; dropping the last
/// closes it (and deletes the node); `close()` on one closes every clone.
#[test]
fn clones_share_one_node_and_the_last_one_dropped_closes_it() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let n = node(&c, "/nodes/clones/a", CreateMode::Ephemeral, b"one");
    let other = n.clone();
    std::thread::spawn(move || {
        other.set_data(b"two".to_vec()).unwrap();
        assert!(other.wait_registered_for(timing().wait()).unwrap());
        // `other` is dropped here: the node lives on.
    })
    .join()
    .unwrap();
    assert!(wait_until(timing().wait(), || admin
        .get_data("/nodes/clones/a")
        .is_ok_and(|(d, _)| d == b"two")));
    assert!(n.registration().is_registered(), "a dropped clone closes nothing");
    let last = n.clone();
    drop(n);
    assert!(last.registration().is_registered());
    drop(last);
    assert!(
        wait_until(timing().wait(), || admin
            .check_exists("/nodes/clones/a")
            .is_ok_and(|x| x.is_none())),
        "the last clone dropped closes (and deletes) the node"
    );
    // close() on one clone closes them all.
    let n = node(&c, "/nodes/clones/b", CreateMode::Ephemeral, b"x");
    let other = n.clone();
    n.close().unwrap();
    assert!(matches!(other.close(), Err(Error::Closed { .. })));
    assert!(matches!(other.set_data(vec![]), Err(Error::Closed { .. })));
    // A TTL node and a group member alike.
    let t = PersistentTtlNode::new(&c, "/nodes/clones/ttl", Duration::from_secs(60), vec![]).unwrap();
    let t2 = t.clone();
    std::thread::spawn(move || {
        t2.start().unwrap();
        assert!(t2.wait_for_initial_create_for(timing().wait()).unwrap());
    })
    .join()
    .unwrap();
    assert!(t.registration().is_registered(), "a dropped clone closes nothing");
    drop(t);
    assert!(
        admin.check_exists("/nodes/clones/ttl").unwrap().is_some(),
        "left to expire"
    );
    let m = GroupMember::new(&c, "/nodes/clones/group", "m", vec![]).unwrap();
    let m2 = m.clone();
    std::thread::spawn(move || {
        m2.start().unwrap();
        assert!(m2.wait_for_registration_for(timing().wait()).unwrap());
    })
    .join()
    .unwrap();
    assert!(m.registration().is_registered(), "a dropped clone closes nothing");
    drop(m);
    assert!(wait_until(timing().wait(), || admin
        .check_exists("/nodes/clones/group/m")
        .is_ok_and(|x| x.is_none())));
}

/// `wait_for_initial_create_for` says "created once ever"; `wait_registered_for`
/// says "registered now": a node whose parent is gone (and parent creation
/// off) is not registered, and the second wait waits for it.
#[test]
fn wait_registered_waits_for_the_node_now_and_the_initial_wait_says_once_ever() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    admin
        .create()
        .creating_parents_if_needed()
        .for_path("/nodes/now/p")
        .unwrap();
    let n = PersistentNode::builder(&c, "/nodes/now/p/a", CreateMode::Ephemeral)
        .parent_creation(false)
        .build()
        .unwrap();
    n.start().unwrap();
    assert!(n.wait_registered_for(timing().wait()).unwrap());
    // The parent goes (and the node with it): not registered now, and it
    // cannot come back until the parent does.
    assert!(wait_until(timing().wait(), || admin
        .delete()
        .deleting_children_if_needed()
        .for_path("/nodes/now/p")
        .is_ok()));
    assert!(wait_until(timing().wait(), || !n.registration().is_registered()));
    assert!(
        n.wait_for_initial_create_for(Duration::ZERO).unwrap(),
        "created once: true forever"
    );
    let short = timing().scale(Duration::from_millis(300));
    let t0 = Instant::now();
    assert!(!n.wait_registered_for(short).unwrap(), "not registered now");
    let took = t0.elapsed();
    assert!(
        took >= short && took <= short + timing().scale(Duration::from_millis(500)),
        "{took:?}"
    );
    // The parent back: registered again, and the wait says so.
    admin.create().for_path("/nodes/now/p").unwrap();
    assert!(n.wait_registered_for(timing().wait()).unwrap());
    assert!(n.registration().is_registered());
    // Closed while waiting: the error, not a bare false.
    assert!(wait_until(timing().wait(), || admin
        .delete()
        .deleting_children_if_needed()
        .for_path("/nodes/now/p")
        .is_ok()));
    assert!(wait_until(timing().wait(), || !n.registration().is_registered()));
    let waiter = {
        let n = n.clone();
        std::thread::spawn(move || n.wait_registered_for(timing().wait()))
    };
    n.close().unwrap();
    assert!(matches!(waiter.join().unwrap(), Err(Error::Closed { .. })));
    assert!(matches!(
        n.wait_registered_for(Duration::ZERO),
        Err(Error::Closed { .. })
    ));
}

/// A group member's one channel: its registration (where it stands first)
/// and the group's changes, both told; it ends at close.
#[test]
fn a_group_members_events_tell_its_registration_and_the_group() {
    let s = server();
    let (c1, c2) = (client(&s), client(&s));
    let a = GroupMember::new(&c1, "/nodes/member-events", "a", b"A".to_vec()).unwrap();
    let events = a.events();
    assert_eq!(
        events.recv_timeout(timing().wait()).unwrap(),
        MemberEvent::Registration(Registration::Absent {
            why: AbsentReason::NotStarted
        }),
        "where it stands first"
    );
    a.start().unwrap();
    wait_event(
        &events,
        |e| matches!(e, MemberEvent::Registration(r) if r.is_registered()),
    );
    let b = GroupMember::new(&c2, "/nodes/member-events", "b", b"B".to_vec()).unwrap();
    b.start().unwrap();
    wait_event(
        &events,
        |e| matches!(e, MemberEvent::Group(PathChildrenCacheEvent::ChildAdded(d)) if d.path() == "/nodes/member-events/b"),
    );
    b.close().unwrap();
    wait_event(
        &events,
        |e| matches!(e, MemberEvent::Group(PathChildrenCacheEvent::ChildRemoved(d)) if d.path() == "/nodes/member-events/b"),
    );
    a.close().unwrap();
    let rest: Vec<_> = events.iter().collect();
    assert_eq!(
        rest.last(),
        Some(&MemberEvent::Registration(Registration::Absent {
            why: AbsentReason::Closed
        })),
        "{rest:?}"
    );
    // The deprecated names still answer.
    #[allow(deprecated)]
    let (r, g) = (a.registration_events(), a.group_events());
    assert!(r.recv_timeout(timing().wait()).is_err(), "closed: ended at once");
    assert!(g.recv_timeout(Duration::from_millis(100)).is_err());
}

/// A close between the create's reply and the look that proves the node
/// (held at a proxy) deletes it: the node is ours from its create on.
#[test]
fn a_close_after_the_create_before_its_proof_deletes_the_node() {
    let s = server();
    for mode in [CreateMode::EphemeralSequential, CreateMode::PersistentSequential] {
        let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
        let c = held_client(&proxy);
        let admin = client(&s);
        let parent = format!("/nodes/unproven/{mode:?}");
        admin.create().creating_parents_if_needed().for_path(&parent).unwrap();
        let n = PersistentNode::builder(&c, &format!("{parent}/n-"), mode)
            .build()
            .unwrap();
        // A sequential node's first request is its create; the look follows.
        proxy.hold_next_request(OpCode::Exists);
        n.start().unwrap();
        let took = close_while_held(&proxy, &c, Release::AfterClose, || n.close());
        assert!(took <= close_bound(), "close took {took:?}");
        assert_eq!(n.creates(), 1, "{mode:?}: created before the close");
        if let Err(left) = nothing_left_under(&admin, &parent, orphan_bound()) {
            panic!("{mode:?}: left {left:?}");
        }
    }
}

/// Our ephemeral node gone with an expired session and another session's
/// at its name since: the close deletes nothing of theirs.
#[test]
fn a_close_never_deletes_another_sessions_node_at_our_name() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let (admin, other) = (client(&s), client(&s));
    let n = node(&c, "/nodes/theirs/a", CreateMode::Ephemeral, b"ours");
    let events = n.events();
    // Our client cut off while its session expires: it cannot re-create.
    proxy.freeze(true);
    let zk = c.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(wait_until(timing().wait(), || admin
        .check_exists("/nodes/theirs/a")
        .is_ok_and(|x| x.is_none())));
    other
        .create()
        .with_mode(CreateMode::Ephemeral)
        .with_data(b"theirs".to_vec())
        .for_path("/nodes/theirs/a")
        .unwrap();
    proxy.freeze(false);
    wait_event(&events, |r| {
        matches!(
            r,
            Registration::Absent {
                why: AbsentReason::OwnedByAnotherSession { .. }
            }
        )
    });
    n.close().unwrap();
    let (data, stat) = admin.get_data("/nodes/theirs/a").unwrap();
    assert_eq!(
        (data.as_slice(), stat.ephemeral_owner),
        (&b"theirs"[..], other.session_id()),
        "theirs is left alone"
    );
}

/// A create in flight at the close whose reply is then lost (its outcome
/// unknown to the node's thread): a node of fixed name is looked at and
/// deleted when ours, a protected one found by its prefix and deleted.
#[test]
fn a_create_in_flight_at_close_whose_reply_is_lost_leaves_nothing() {
    let s = server();
    let cases = [
        (CreateMode::Ephemeral, false),
        (CreateMode::Persistent, false),
        (CreateMode::EphemeralSequential, true),
        (CreateMode::PersistentSequential, true),
    ];
    for (mode, protected) in cases {
        let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
        let c = held_client(&proxy);
        let admin = client(&s);
        let parent = format!("/nodes/lost-reply/{mode:?}");
        admin.create().creating_parents_if_needed().for_path(&parent).unwrap();
        let name = if mode.is_sequential() {
            format!("{parent}/n-")
        } else {
            format!("{parent}/n")
        };
        let n = PersistentNode::builder(&c, &name, mode)
            .protected(protected)
            .build()
            .unwrap();
        proxy.hold_next_request(OpCode::Create2);
        n.start().unwrap();
        assert!(wait_until(timing().wait(), || proxy.held_requests() == 1));
        let t0 = Instant::now();
        n.close().unwrap();
        assert!(t0.elapsed() <= close_bound(), "close took {:?}", t0.elapsed());
        // The create reaches the server; its reply never reaches the client.
        proxy.drop_next_reply();
        proxy.release_held();
        assert!(
            wait_until(timing().wait(), || proxy.dropped() == 1),
            "the reply is lost"
        );
        if let Err(left) = nothing_left_under(&admin, &parent, orphan_bound()) {
            panic!("{mode:?}: left {left:?}");
        }
    }
}
