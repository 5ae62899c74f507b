//! The inspection of a service registry and of a set partitioner, with no
//! recipe of the reader's running (`zk_recipes::inspect_service`,
//! `service_names`, `inspect_partition`): a service's instances with their
//! nodes' owners (a dynamic instance's session, a static one's none) and a
//! bad child answered per child; a partition's members, who holds each item
//! (a member by identifier, a session outside the party) and who waits; bad
//! input as typed errors. On the embedded server and on Apache ZooKeeper
//! (`ZK_TEST_SERVER=apache`).

use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_recipes::{
    inspect_partition, inspect_service, service_names, Error, InterProcessMutex, LockHolder, PartitionState,
    ServiceDiscovery, ServiceInstance, ServiceType, SetPartitioner,
};
use zk_testing::wait_until;

use crate::support::{client, server, timing};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn registered(d: &ServiceDiscovery, id: &str) {
    assert!(
        d.wait_registered_for(id, timing().wait()).unwrap(),
        "{id} registered: {:?}",
        d.registration(id)
    );
}

fn czxid(c: &CuratorFramework, path: &str) -> i64 {
    c.check_exists(path).unwrap().expect("node exists").czxid
}

#[test]
fn a_service_reads_as_its_instances_with_their_owners_and_a_bad_child_alone() {
    let s = server();
    let (c, admin, reader) = (client(&s), client(&s), client(&s));
    let base = "/insp/svc";
    let d = ServiceDiscovery::builder(&c, base).build().unwrap();
    d.start().unwrap();
    let dynamic = ServiceInstance::builder("api").id("d1").port(8080).build().unwrap();
    let fixed = ServiceInstance::builder("api")
        .id("s1")
        .address("10.0.0.9")
        .service_type(ServiceType::Static)
        .build()
        .unwrap();
    d.register(&dynamic).unwrap();
    d.register(&fixed).unwrap();
    registered(&d, "d1");
    registered(&d, "s1");
    admin
        .create()
        .with_data(b"{\"name\":".to_vec())
        .for_path(&format!("{base}/api/zz-bad"))
        .unwrap();

    let r = inspect_service(&reader, base, "api").unwrap();
    assert_eq!(r.path, "/insp/svc/api");
    assert_eq!(r.name, "api");
    let nodes: Vec<&str> = r.instances.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(nodes, ["d1", "s1", "zz-bad"], "sorted by node name");
    let (d1, s1, bad) = (&r.instances[0], &r.instances[1], &r.instances[2]);
    assert_eq!(d1.instance.as_ref().unwrap(), &dynamic);
    assert_eq!(
        d1.session_id,
        c.session_id(),
        "a dynamic instance's node is its session's"
    );
    assert_eq!(d1.path, "/insp/svc/api/d1");
    assert_eq!(d1.czxid, czxid(&admin, "/insp/svc/api/d1"));
    assert!((now_ms() - d1.created_ms).abs() < 60_000, "{d1:?}");
    assert_eq!(s1.instance.as_ref().unwrap().address(), Some("10.0.0.9"));
    assert_eq!(s1.session_id, 0, "a static instance's node is persistent");
    match &bad.instance {
        Err(Error::InstanceJson { node, .. }) => assert_eq!(node, "/insp/svc/api/zz-bad"),
        other => panic!("the bad child read as {other:?}"),
    }
    assert_eq!(bad.session_id, 0);
    assert_eq!(r.readable().count(), 2);
    assert_eq!(r.unreadable().map(|n| n.node.as_str()).collect::<Vec<_>>(), ["zz-bad"]);
    // One leading `/` of the name is dropped, as Curator's makePath does.
    assert_eq!(inspect_service(&reader, base, "/api").unwrap().instances, r.instances);

    // The names, the ones a discovery lists too.
    admin.create().for_path(&format!("{base}/web")).unwrap();
    assert_eq!(service_names(&reader, base).unwrap(), ["api", "web"]);
    assert_eq!(service_names(&reader, base).unwrap(), d.query_for_names().unwrap());
    // A base is checked as a discovery's builder checks it.
    assert!(matches!(
        service_names(&reader, &format!("{base}/")),
        Err(Error::ZooKeeper(_))
    ));

    // A dynamic instance goes with its session: the next read no longer
    // lists it (and the static one stays).
    d.unregister("d1").unwrap();
    let after = inspect_service(&reader, base, "api").unwrap();
    let nodes: Vec<&str> = after.instances.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(nodes, ["s1", "zz-bad"]);
    d.unregister("s1").unwrap();
    d.close().unwrap();
}

#[test]
fn a_missing_service_or_base_has_nothing_and_bad_input_is_typed() {
    let s = server();
    let c = client(&s);
    let r = inspect_service(&c, "/insp/none", "api").unwrap();
    assert!(r.instances.is_empty());
    assert_eq!(r.path, "/insp/none/api");
    assert!(service_names(&c, "/insp/none").unwrap().is_empty());
    for bad in ["", "/", "a//b", "a/../b", "api/"] {
        assert!(
            matches!(
                inspect_service(&c, "/insp/none", bad),
                Err(Error::InvalidInstance { .. })
            ),
            "name {bad:?}"
        );
    }
    assert!(matches!(
        inspect_service(&c, "relative", "api"),
        Err(Error::ZooKeeper(_))
    ));
    assert!(matches!(service_names(&c, "relative"), Err(Error::ZooKeeper(_))));
    assert!(matches!(inspect_partition(&c, "relative"), Err(Error::ZooKeeper(_))));
    assert!(matches!(inspect_partition(&c, "/"), Err(Error::InvalidArgument(_))));
    let p = inspect_partition(&c, "/insp/no-partition").unwrap();
    assert!(p.members.is_empty() && p.items.is_empty());
    assert!(p.shares().is_empty());
}

/// Two members split two items: the inspection names each item's holder by
/// the member's identifier, matching what each member says it owns, with
/// the holder's fencing token.
#[test]
fn a_partition_reads_as_its_members_and_each_items_holder() {
    let s = server();
    let (c1, c2, reader) = (client(&s), client(&s), client(&s));
    let path = "/insp/part/two";
    let member = |c: &CuratorFramework, id: &str| {
        let p = SetPartitioner::builder(c, path, ["0", "1", "2", "3"])
            .identifier(id)
            .time_boundary(timing().scale(Duration::from_millis(300)))
            .auto_release(true)
            .build()
            .unwrap();
        p.start().unwrap();
        p
    };
    let (a, b) = (member(&c1, "a"), member(&c2, "b"));
    assert!(
        wait_until(timing().wait() * 2, || a.share().len() == 2 && b.share().len() == 2),
        "shares {:?} {:?}",
        a.state(),
        b.state()
    );
    let r = inspect_partition(&reader, &format!("{path}/")).unwrap();
    assert_eq!(r.path, path);
    let ids: Vec<(&str, i64)> = r.members.iter().map(|m| (m.id.as_str(), m.session_id)).collect();
    assert_eq!(ids, [("a", c1.session_id()), ("b", c2.session_id())]);
    let shares = r.shares();
    assert_eq!(shares["a"], a.share());
    assert_eq!(shares["b"], b.share());
    let tokens: Vec<(String, i64)> = a.fencing_tokens().unwrap();
    for (item, token) in tokens {
        let owner = r.items.iter().find(|i| i.item == item).unwrap();
        assert_eq!(owner.fencing_token(), Some(token), "{item}");
        assert_eq!(owner.lock_path, format!("{path}/locks/{item}"));
        assert_eq!(
            owner.holder,
            Some(LockHolder::Member {
                identifier: "a".into(),
                session: c1.session_id()
            })
        );
        assert!(owner.waiters.is_empty());
    }
    assert_eq!(r.foreign().count(), 0);
    a.close().unwrap();
    b.close().unwrap();
}

/// A lock taken by a process outside the party (kazoo #392): the item reads
/// as held by that session, not a member, with the member waiting for it
/// named by its identifier.
#[test]
fn a_lock_held_outside_the_party_names_the_session_and_the_waiting_member() {
    let s = server();
    let (c, outsider, reader) = (client(&s), client(&s), client(&s));
    let path = "/insp/part/stuck";
    let foreign = InterProcessMutex::new(&outsider, &format!("{path}/locks/b")).unwrap();
    let g = foreign.acquire().unwrap();
    let p = SetPartitioner::builder(&c, path, ["a", "b"])
        .identifier("m")
        .time_boundary(timing().scale(Duration::from_millis(300)))
        .build()
        .unwrap();
    p.start().unwrap();
    let waiting = |r: &zk_recipes::PartitionReport| {
        r.items.iter().any(|i| {
            i.item == "b"
                && i.waiters
                    == [LockHolder::Member {
                        identifier: "m".into(),
                        session: c.session_id(),
                    }]
        })
    };
    let mut last = None;
    assert!(
        wait_until(timing().wait() * 2, || {
            let r = inspect_partition(&reader, path).unwrap();
            let ok = waiting(&r);
            last = Some(r);
            ok
        }),
        "{last:?}"
    );
    let r = last.unwrap();
    let b = r.items.iter().find(|i| i.item == "b").unwrap();
    assert_eq!(
        b.holder,
        Some(LockHolder::NotAMember {
            session: outsider.session_id()
        })
    );
    assert_eq!(b.owner(), None);
    assert_eq!(b.fencing_token(), Some(g.fencing_token()));
    assert_eq!(r.foreign().map(|i| i.item.as_str()).collect::<Vec<_>>(), ["b"]);
    assert_eq!(b.participants.len(), 2);
    assert!(!matches!(p.state(), PartitionState::Acquired { .. }));
    p.close().unwrap();
    g.release().unwrap();
}
