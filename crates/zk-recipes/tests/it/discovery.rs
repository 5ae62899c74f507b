//! Service discovery (`zk_recipes::ServiceDiscovery`, Curator's
//! `curator-x-discovery` layout and JSON): a register/query round trip with
//! the JSON byte for byte, a registration that comes back once after an
//! expiry and never as a second node (the old session's node still there
//! included), a reconnect that leaves the node in place (same czxid), a
//! close that leaves nothing even with a create in flight, static instances
//! kept at close and deleted by unregister, an unknown field that survives an
//! update, a bad child answered per instance, bad input. On the embedded
//! server and on Apache ZooKeeper (`ZK_TEST_SERVER=apache`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::proto::OpCode;
use zk_framework::{CreateMode, CuratorFramework};
use zk_recipes::{
    AbsentReason, DownInstancePolicy, Error, JsonMode, Payload, ProviderStrategy, Registration, ServiceCacheEvent,
    ServiceDiscovery, ServiceInstance, ServiceType, UncertainReason, UriSpec, ZookeeperInstance,
};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

use crate::support::{
    client, close_while_held, held_client, nothing_left_under, proxied_client, server, timing, Release,
};

fn discovery(c: &CuratorFramework, base: &str) -> ServiceDiscovery {
    let d = ServiceDiscovery::builder(c, base).build().unwrap();
    d.start().unwrap();
    d
}

fn registered_now(d: &ServiceDiscovery, id: &str) {
    assert!(
        d.wait_registered_for(id, timing().wait()).unwrap(),
        "{id} registered: {:?}",
        d.registration(id)
    );
}

/// Waits for a registration event matching `want`; every event up to it.
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

fn children(c: &CuratorFramework, path: &str) -> Vec<String> {
    match c.get_children(path) {
        Ok(mut k) => {
            k.sort();
            k
        }
        Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
        Err(e) => panic!("children of {path}: {e}"),
    }
}

/// The spec's vector (§2.4, a `Void` instance), byte for byte, on the
/// server; and an instance with every field (payload with its class tag)
/// read back equal by both query paths.
#[test]
fn a_registered_instance_is_found_with_every_field_and_its_json_byte_exact() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/roundtrip";
    let d = discovery(&c, base);
    let void = ServiceInstance::builder("svc")
        .id("id-1")
        .address("10.0.0.5")
        .port(8080)
        .registration_time_utc(1_700_000_000_000)
        .build()
        .unwrap();
    d.register(&void).unwrap();
    registered_now(&d, "id-1");
    let (data, stat) = admin.get_data(&format!("{base}/svc/id-1")).unwrap();
    assert_eq!(
        String::from_utf8(data).unwrap(),
        r#"{"name":"svc","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#
    );
    assert_eq!(stat.ephemeral_owner, c.session_id(), "DYNAMIC is ephemeral, ours");

    let full = ServiceInstance::builder("svc")
        .id("id-2")
        .address("fd00:0:0:0:0:0:0:2%eth0")
        .port(80)
        .ssl_port(443)
        .payload(
            ZookeeperInstance::new(Some("application-1"), Some("svc"))
                .with("instance_status", "UP")
                .to_payload(ZookeeperInstance::SPRING),
        )
        .registration_time_utc(1_700_000_000_001)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{ssl-port}").unwrap())
        .build()
        .unwrap();
    d.register(&full).unwrap();
    registered_now(&d, "id-2");
    let found = d.query_for_instance("svc", "id-2").unwrap().unwrap();
    assert_eq!(found, full);
    assert_eq!(
        found.payload().unwrap().as_json(),
        r#"{"@class":"org.springframework.cloud.zookeeper.discovery.ZookeeperInstance","id":"application-1","name":"svc","metadata":{"instance_status":"UP"}}"#
    );
    assert_eq!(d.query_for_names().unwrap(), vec!["svc".to_string()]);
    let all = d.query_for_instances("svc").unwrap();
    assert_eq!(
        all.iter().map(|r| r.node.as_str()).collect::<Vec<_>>(),
        ["id-1", "id-2"]
    );
    assert_eq!(all[0].instance.as_ref().unwrap(), &void);
    assert_eq!(all[1].instance.as_ref().unwrap(), &full);
    assert!(d.query_for_instance("svc", "nobody").unwrap().is_none());
    assert!(d.query_for_instances("nothing").unwrap().is_empty());
    d.close().unwrap();
    assert!(
        children(&admin, &format!("{base}/svc")).is_empty(),
        "close deletes DYNAMIC nodes"
    );
}

/// An expiry: the registration says `Absent { SessionExpired }`, then
/// `Registered` once, on the new session, and there is one node for the
/// id, never two (DYNAMIC and DYNAMIC_SEQUENTIAL, whose node keeps its
/// name).
#[test]
fn after_an_expiry_an_instance_comes_back_once_as_one_node() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/expiry";
    let d = discovery(&c, base);
    let dynamic = ServiceInstance::builder("svc").id("dyn").build().unwrap();
    let seq = ServiceInstance::builder("svc")
        .id("seq")
        .service_type(ServiceType::DynamicSequential)
        .build()
        .unwrap();
    d.register(&dynamic).unwrap();
    d.register(&seq).unwrap();
    registered_now(&d, "dyn");
    registered_now(&d, "seq");
    let seq_path = d.node_path("seq").unwrap();
    let name = seq_path.rsplit('/').next().unwrap();
    assert!(name.starts_with("_c_") && name.contains("-seq"), "protected: {name}");
    let before = children(&admin, &format!("{base}/svc"));
    assert_eq!(before.len(), 2, "{before:?}");
    let events = d.events("dyn").unwrap();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    let old = c.session_id();
    s.expire_session(old, &c.zookeeper_client().session_password()).unwrap();
    let seen = wait_event(&events, |r| r.is_registered() && c.session_id() != old);
    let expired_at = seen
        .iter()
        .position(|r| {
            *r == Registration::Absent {
                why: AbsentReason::SessionExpired,
            }
        })
        .unwrap_or_else(|| panic!("the expiry is told: {seen:?}"));
    assert_eq!(
        seen[expired_at..].iter().filter(|r| r.is_registered()).count(),
        1,
        "registered once after the expiry: {seen:?}"
    );
    registered_now(&d, "seq");
    assert_eq!(
        d.node_path("seq").unwrap(),
        seq_path,
        "the sequential node keeps its name"
    );
    let after = children(&admin, &format!("{base}/svc"));
    assert_eq!(after, before, "one node per id, the same names");
    for kid in &after {
        let (_, stat) = admin.get_data(&format!("{base}/svc/{kid}")).unwrap();
        assert_eq!(stat.ephemeral_owner, c.session_id(), "{kid} on the new session");
    }
    d.close().unwrap();
    assert!(children(&admin, &format!("{base}/svc")).is_empty());
}

/// Dubbo #5125: the old session's node is still at our path when we
/// register (its session not yet expired on the server). It is not taken
/// over, not overwritten, not deleted: the registration says so, and ours
/// is created when that one goes. One node, always.
#[test]
fn another_sessions_node_at_our_id_is_left_alone_and_ours_follows_it() {
    let s = server();
    let (c, old, admin) = (client(&s), client(&s), client(&s));
    let base = "/disc/stale";
    let path = format!("{base}/svc/me");
    let stale = ServiceInstance::builder("svc")
        .id("me")
        .port(1)
        .build()
        .unwrap()
        .to_json(JsonMode::Compatible);
    old.create()
        .creating_parent_containers_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .with_data(stale.clone().into_bytes())
        .for_path(&path)
        .unwrap();
    let d = ServiceDiscovery::builder(&c, base)
        .this_instance(ServiceInstance::builder("svc").id("me").port(2).build().unwrap())
        .build()
        .unwrap();
    d.start().unwrap();
    let events = d.events("me").unwrap();
    wait_event(&events, |r| {
        *r == Registration::Absent {
            why: AbsentReason::OwnedByAnotherSession {
                owner: old.session_id(),
            },
        }
    });
    let (data, stat) = admin.get_data(&path).unwrap();
    assert_eq!(
        (data, stat.ephemeral_owner),
        (stale.into_bytes(), old.session_id()),
        "untouched"
    );
    assert_eq!(children(&admin, &format!("{base}/svc")), ["me"]);
    old.close();
    let seen = wait_event(&events, Registration::is_registered);
    assert_eq!(seen.iter().filter(|r| r.is_registered()).count(), 1);
    let (data, stat) = admin.get_data(&path).unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id());
    assert_eq!(ServiceInstance::from_json(&data).unwrap().port(), Some(2));
    assert_eq!(children(&admin, &format!("{base}/svc")), ["me"]);
    d.close().unwrap();
}

/// A reconnect without an expiry: Curator deletes and re-creates the node;
/// ours proves it (uncertain until the server answered on the new
/// connection) and leaves it in place: the same czxid.
#[test]
fn a_reconnect_leaves_the_node_in_place() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let admin = client(&s);
    let base = "/disc/reconnect";
    let d = discovery(&c, base);
    d.register(&ServiceInstance::builder("svc").id("a").build().unwrap())
        .unwrap();
    registered_now(&d, "a");
    let session = c.session_id();
    let (_, before) = admin.get_data(&format!("{base}/svc/a")).unwrap();
    let events = d.events("a").unwrap();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    proxy.cut();
    let seen = wait_event(&events, Registration::is_registered);
    assert!(
        seen.iter().any(|r| matches!(
            r,
            Registration::Uncertain {
                why: UncertainReason::Disconnected | UncertainReason::Silent | UncertainReason::Unproven
            }
        )),
        "not registered while unproven: {seen:?}"
    );
    assert_eq!(c.session_id(), session, "no expiry");
    let (_, after) = admin.get_data(&format!("{base}/svc/a")).unwrap();
    assert_eq!(after.czxid, before.czxid, "not deleted and re-created");
    assert_eq!(after.mzxid, before.mzxid, "not even rewritten");
    d.close().unwrap();
}

/// Composed: the connection frozen (no reply, no close) past the session
/// timeout, the server expiring the session and its node, then the heal.
/// The registration is never `Registered` from the freeze until the
/// instance is back on the new session, and then there is one node.
#[test]
fn a_freeze_past_the_session_never_shows_a_gone_instance_registered() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let admin = client(&s);
    let base = "/disc/freeze";
    let path = format!("{base}/svc/a");
    let d = discovery(&c, base);
    d.register(&ServiceInstance::builder("svc").id("a").build().unwrap())
        .unwrap();
    registered_now(&d, "a");
    let old = c.session_id();
    let events = d.events("a").unwrap();
    assert!(events.recv().unwrap().is_registered(), "where it stands first");
    proxy.freeze(true);
    assert!(
        wait_until(timing().session() * 4, || admin.check_exists(&path).unwrap().is_none()),
        "the server expired the session and its node"
    );
    assert!(
        !d.registration("a").unwrap().is_registered(),
        "{:?}",
        d.registration("a")
    );
    proxy.freeze(false);
    let seen = wait_event(&events, |r| r.is_registered() && c.session_id() != old);
    assert_eq!(
        seen.iter().filter(|r| r.is_registered()).count(),
        1,
        "registered only once it was back: {seen:?}"
    );
    assert_eq!(children(&admin, &format!("{base}/svc")), ["a"]);
    let (_, stat) = admin.get_data(&path).unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id());
    d.close().unwrap();
}

/// What is held at the proxy while the discovery closes.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// The node's first request (its look), let go after close: no create
    /// may follow.
    Look,
    /// The create, let go as given.
    Create(Release),
}

fn close_in_flight(s: &TestingServer, t: ServiceType, held: Held) -> Result<(), String> {
    let proxy = Arc::new(FaultProxy::start(&s.connect_string()).unwrap());
    let c = held_client(&proxy);
    let admin = client(s);
    let base = format!("/disc/inflight/{t:?}-{held:?}").replace(['(', ')'], "");
    // The service node in place: the create held is the one that makes the
    // instance's node.
    admin
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{base}/svc"))
        .unwrap();
    let d = discovery(&c, &base);
    let (op, release) = match held {
        Held::Look => (OpCode::Exists, Release::AfterClose),
        Held::Create(r) => (OpCode::Create2, r),
    };
    let op = if t == ServiceType::DynamicSequential && op == OpCode::Exists {
        // A sequential node's first request is its create.
        OpCode::Create2
    } else {
        op
    };
    proxy.hold_next_request(op);
    d.register(&ServiceInstance::builder("svc").id("a").service_type(t).build().unwrap())
        .unwrap();
    let took = close_while_held(&proxy, &c, release, || d.close());
    let mut broke = Vec::new();
    if took > Duration::from_secs(2) + timing().scale(Duration::from_secs(1)) {
        broke.push(format!("close took {took:?}"));
    }
    if let Err(left) = nothing_left_under(&admin, &format!("{base}/svc"), timing().scale(Duration::from_secs(5))) {
        broke.push(format!("left {left:?}"));
    }
    if broke.is_empty() {
        Ok(())
    } else {
        Err(broke.join("; "))
    }
}

/// A close with a create in flight (or the look before it) leaves no
/// instance node, for every service type (a static one's create in flight
/// is undone too), whether the create is answered during the close or after
/// it returned.
#[test]
fn a_close_during_an_in_flight_create_leaves_nothing() {
    let s = server();
    let mut cases = Vec::new();
    for t in [
        ServiceType::Dynamic,
        ServiceType::DynamicSequential,
        ServiceType::Static,
        ServiceType::Permanent,
    ] {
        for held in [
            Held::Look,
            Held::Create(Release::AfterClose),
            Held::Create(Release::DuringClose),
        ] {
            cases.push((t, held));
        }
    }
    // Every case at once, each on its own proxy and client.
    let results: Vec<(String, Result<(), String>)> = std::thread::scope(|scope| {
        let runs: Vec<_> = cases
            .into_iter()
            .map(|(t, held)| {
                let s = &s;
                (
                    format!("{t:?} {held:?}"),
                    scope.spawn(move || close_in_flight(s, t, held)),
                )
            })
            .collect();
        runs.into_iter()
            .map(|(label, h)| (label, h.join().unwrap_or_else(|_| Err("panicked".into()))))
            .collect()
    });
    for (label, r) in &results {
        eprintln!("{label}: {}", r.as_ref().err().map_or("clean", String::as_str));
    }
    let broke: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
    assert!(broke.is_empty(), "{broke:?}");
}

/// STATIC and PERMANENT: persistent nodes, left in place by close (Curator
/// deletes them, CURATOR-94), taken over with our data by the next
/// discovery, deleted by unregister.
#[test]
fn static_instances_survive_close_and_unregister_deletes_them() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/static";
    for t in [ServiceType::Static, ServiceType::Permanent] {
        let id = format!("{t:?}");
        let path = format!("{base}/svc/{id}");
        let d = discovery(&c, base);
        d.register(
            &ServiceInstance::builder("svc")
                .id(&id)
                .port(1)
                .service_type(t)
                .build()
                .unwrap(),
        )
        .unwrap();
        registered_now(&d, &id);
        let (_, stat) = admin.get_data(&path).unwrap();
        assert_eq!(stat.ephemeral_owner, 0, "{t:?} is persistent");
        d.close().unwrap();
        let (_, kept) = admin.get_data(&path).unwrap();
        assert_eq!(kept.czxid, stat.czxid, "{t:?} left in place by close");

        let d = discovery(&c, base);
        d.register(
            &ServiceInstance::builder("svc")
                .id(&id)
                .port(2)
                .service_type(t)
                .build()
                .unwrap(),
        )
        .unwrap();
        registered_now(&d, &id);
        assert!(wait_until(timing().wait(), || {
            admin.get_data(&path).is_ok_and(|(data, st)| {
                st.czxid == stat.czxid && ServiceInstance::from_json(&data).unwrap().port() == Some(2)
            })
        }));
        assert!(d.unregister(&id).unwrap());
        assert!(
            admin.check_exists(&path).unwrap().is_none(),
            "{t:?} deleted by unregister"
        );
        assert!(!d.unregister(&id).unwrap(), "a second unregister is a no-op");
        d.close().unwrap();
    }
}

/// An instance read with a field we do not know, registered and updated:
/// the field is written back, byte for byte, after the known ones.
#[test]
fn an_unknown_field_survives_an_update() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/unknown";
    let path = format!("{base}/svc/u");
    let newer = br#"{"name":"svc","id":"u","address":"h","port":1,"sslPort":null,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null,"zone":{"b":1,"a":[2.50]}}"#;
    let i = ServiceInstance::from_json(newer).unwrap();
    let d = discovery(&c, base);
    d.register(&i).unwrap();
    registered_now(&d, "u");
    assert_eq!(admin.get_data(&path).unwrap().0, newer.to_vec(), "written back as read");
    d.update(&i.to_builder().port(2).build().unwrap()).unwrap();
    let want = br#"{"name":"svc","id":"u","address":"h","port":2,"sslPort":null,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null,"zone":{"b":1,"a":[2.50]}}"#;
    assert!(
        wait_until(timing().wait(), || admin
            .get_data(&path)
            .is_ok_and(|(d, _)| d == want.to_vec())),
        "{:?}",
        admin
            .get_data(&path)
            .map(|(d, _)| String::from_utf8_lossy(&d).into_owned())
    );
    d.close().unwrap();
}

/// A bad child does not fail the query: each child is answered, a bad one
/// with its node and where its JSON is wrong; an old Curator's JSON (no
/// `enabled`, no `serviceType`) and Dubbo's (extra fields) read with the
/// documented defaults.
#[test]
fn a_bad_child_is_answered_per_instance() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/bad";
    let svc = format!("{base}/svc");
    for (kid, json) in [
        ("a-bad", "{oops"),
        ("b-type", r#"{"name":"svc","id":"b-type","serviceType":"dynamic"}"#),
        (
            "c-old",
            r#"{"name":"svc","id":"c-old","address":"h","port":1,"sslPort":null,"payload":null,"registrationTimeUTC":1,"uriSpec":null}"#,
        ),
        (
            "d-dubbo",
            r#"{"name":"svc","id":"d-dubbo","address":"h","port":20880,"sslPort":null,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":null,"name":"svc","metadata":{"dubbo.metadata.revision":"abc"}},"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"extra":true}"#,
        ),
    ] {
        admin
            .create()
            .creating_parents_if_needed()
            .with_data(json.as_bytes().to_vec())
            .for_path(&format!("{svc}/{kid}"))
            .unwrap();
    }
    let d = ServiceDiscovery::builder(&c, base).build().unwrap();
    let reads = d.query_for_instances("svc").unwrap();
    assert_eq!(reads.len(), 4);
    match &reads[0].instance {
        Err(Error::InstanceJson { node, at, .. }) => {
            assert_eq!((node.as_str(), at.as_str()), (&*format!("{svc}/a-bad"), "$"))
        }
        other => panic!("{other:?}"),
    }
    match &reads[1].instance {
        Err(Error::InstanceJson { at, .. }) => assert_eq!(at, "$.serviceType"),
        other => panic!("{other:?}"),
    }
    let old = reads[2].instance.as_ref().unwrap();
    assert_eq!((old.service_type(), old.enabled()), (Some(ServiceType::Dynamic), true));
    let dubbo = reads[3].instance.as_ref().unwrap();
    let zi = ZookeeperInstance::from_payload(dubbo.payload().unwrap(), ZookeeperInstance::DUBBO).unwrap();
    assert_eq!(zi.metadata["dubbo.metadata.revision"], "abc");
    assert!(ZookeeperInstance::from_payload(dubbo.payload().unwrap(), ZookeeperInstance::SPRING).is_err());
    assert_eq!(dubbo.unknown_fields(), &[("extra".to_string(), "true".to_string())]);
    assert!(matches!(
        d.query_for_instance("svc", "a-bad"),
        Err(Error::InstanceJson { .. })
    ));
}

/// Bad input: typed errors, nothing registered, nothing sent.
#[test]
fn bad_input_is_a_typed_error() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/input";
    let d = ServiceDiscovery::builder(&c, base).build().unwrap();
    let i = ServiceInstance::builder("svc").id("a").build().unwrap();
    assert!(matches!(d.register(&i), Err(Error::NotStarted { .. })));
    d.start().unwrap();
    assert!(matches!(
        ServiceInstance::builder("").build(),
        Err(Error::InvalidInstance { .. })
    ));
    assert!(matches!(
        ServiceInstance::builder("svc").id("a/b").build(),
        Err(Error::InvalidInstance { .. })
    ));
    // No service type (JSON with "serviceType":null), no name, no id.
    for json in [
        &br#"{"name":"svc","id":"n","serviceType":null}"#[..],
        br#"{"id":"n"}"#,
        br#"{"name":"svc"}"#,
    ] {
        let r = d.register(&ServiceInstance::from_json(json).unwrap());
        assert!(matches!(r, Err(Error::InvalidInstance { .. })), "{r:?}");
    }
    let mut bad = std::collections::BTreeMap::new();
    bad.insert(vec![1u8], 1);
    assert!(matches!(
        Payload::typed("x.Y", &bad),
        Err(Error::PayloadNotSerializable { .. })
    ));
    // JSON a node's request cannot carry (the server would drop the
    // connection at every try): refused up front.
    let huge = ServiceInstance::builder("svc")
        .id("huge")
        .payload(Payload::string(&"x".repeat(1 << 20)))
        .build()
        .unwrap();
    assert!(matches!(d.register(&huge), Err(Error::InvalidInstance { .. })));
    d.register(&i).unwrap();
    assert!(matches!(
        d.update(
            &i.to_builder()
                .payload(Payload::string(&"x".repeat(1 << 20)))
                .build()
                .unwrap()
        ),
        Err(Error::InvalidInstance { .. })
    ));
    assert!(matches!(d.register(&i), Err(Error::AlreadyRegistered { .. })));
    let other = ServiceInstance::builder("svc").id("zz").build().unwrap();
    assert!(matches!(d.update(&other), Err(Error::NotRegistered { .. })));
    assert!(matches!(
        d.update(&i.to_builder().name("moved").build().unwrap()),
        Err(Error::InvalidInstance { .. })
    ));
    assert!(matches!(
        d.update(&i.to_builder().service_type(ServiceType::Static).build().unwrap()),
        Err(Error::InvalidInstance { .. })
    ));
    assert!(matches!(
        d.wait_registered_for("zz", Duration::from_millis(10)),
        Err(Error::NotRegistered { .. })
    ));
    assert!(ServiceDiscovery::builder(&c, "no-slash").build().is_err());
    registered_now(&d, "a");
    assert_eq!(children(&admin, &format!("{base}/svc")), ["a"], "only the good one");
    d.close().unwrap();
    assert!(matches!(d.register(&i), Err(Error::Closed { .. })));
    assert!(matches!(d.close(), Err(Error::Closed { .. })));
}

/// A name with `/` is a deeper tree (as Curator's and Spring's): listed by
/// its first segment, found by its full name.
#[test]
fn a_name_with_slashes_is_a_deeper_tree() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/deep";
    let d = discovery(&c, base);
    d.register(&ServiceInstance::builder("/a/b/svc").id("x").build().unwrap())
        .unwrap();
    registered_now(&d, "x");
    assert!(admin.check_exists(&format!("{base}/a/b/svc/x")).unwrap().is_some());
    assert_eq!(d.query_for_names().unwrap(), ["a"]);
    assert_eq!(
        d.query_for_instance("a/b/svc", "x").unwrap().unwrap().name(),
        "/a/b/svc"
    );
    assert_eq!(d.query_for_instances("/a/b/svc").unwrap().len(), 1);
    d.close().unwrap();
}

/// Clones share one discovery: a clone registers from another thread; a
/// dropped clone closes nothing; the last one dropped closes it (its
/// DYNAMIC node deleted).
#[test]
fn clones_share_one_discovery_and_the_last_one_dropped_closes_it() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    let base = "/disc/clones";
    let d = discovery(&c, base);
    let d2 = d.clone();
    std::thread::spawn(move || {
        d2.register(&ServiceInstance::builder("svc").id("a").build().unwrap())
            .unwrap();
        registered_now(&d2, "a");
    })
    .join()
    .unwrap();
    assert!(
        d.registration("a").unwrap().is_registered(),
        "the clone's drop closed nothing"
    );
    assert_eq!(children(&admin, &format!("{base}/svc")), ["a"]);
    drop(d);
    assert!(
        nothing_left_under(&admin, &format!("{base}/svc"), timing().wait()).is_ok(),
        "the last clone's drop deletes the DYNAMIC node"
    );
}

/// `watch_instances`: an operator's edit of our node (`enabled: false`, a
/// new port) is what the discovery keeps, so that a re-creation after a
/// delete writes the edit; without it, the re-creation puts our data back.
#[test]
fn with_watch_instances_an_edit_is_kept_through_a_re_creation() {
    let s = server();
    let (c, admin) = (client(&s), client(&s));
    for watch in [true, false] {
        let base = format!("/disc/watch-{watch}");
        let path = format!("{base}/svc/a");
        let d = ServiceDiscovery::builder(&c, &base)
            .watch_instances(watch)
            .json_mode(JsonMode::Full)
            .build()
            .unwrap();
        d.start().unwrap();
        let mine = ServiceInstance::builder("svc").id("a").port(1).build().unwrap();
        d.register(&mine).unwrap();
        registered_now(&d, "a");
        let edited = mine.to_builder().port(7).enabled(false).build().unwrap();
        admin
            .set_data(&path, edited.to_json(JsonMode::Full).into_bytes(), None)
            .unwrap();
        if watch {
            assert!(
                wait_until(timing().wait(), || d.registered() == vec![edited.clone()]),
                "{:?}",
                d.registered()
            );
        }
        let (_, before) = admin.get_data(&path).unwrap();
        admin.delete().for_path(&path).unwrap();
        let want = if watch { edited.clone() } else { mine.clone() };
        assert!(
            wait_until(timing().wait(), || admin.get_data(&path).is_ok_and(|(data, st)| {
                st.czxid != before.czxid && ServiceInstance::from_json(&data).unwrap() == want
            })),
            "watch {watch}: re-created with {:?}",
            admin
                .get_data(&path)
                .map(|(d, _)| String::from_utf8_lossy(&d).into_owned())
        );
        d.close().unwrap();
    }
}

/// The service cache: the initial load, then every change keyed by node
/// name (a bad child told with its error, left out of the list), and a
/// freshness that is not current while the connection is cut: then
/// `current_instances` refuses instead of serving an old list.
#[test]
fn a_service_cache_follows_the_instances_and_says_how_fresh_it_is() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let (owner, admin) = (client(&s), client(&s));
    let base = "/disc/cache";
    let d = discovery(&owner, base);
    d.register(&ServiceInstance::builder("svc").id("a").port(1).build().unwrap())
        .unwrap();
    registered_now(&d, "a");
    let reader = ServiceDiscovery::builder(&c, base).build().unwrap();
    let cache = reader.service_cache("svc").unwrap();
    assert!(
        matches!(cache.current_instances(), Err(Error::CacheNotCurrent { .. })),
        "not started"
    );
    let events = cache.events();
    cache.start().unwrap();
    let next = |want: &dyn Fn(&ServiceCacheEvent) -> bool| -> ServiceCacheEvent {
        let end = Instant::now() + timing().wait();
        loop {
            let ev = events
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .expect("a cache event");
            if want(&ev) {
                return ev;
            }
        }
    };
    match next(&|e| matches!(e, ServiceCacheEvent::Initialized(_))) {
        ServiceCacheEvent::Initialized(now) => {
            assert_eq!(now.len(), 1);
            assert_eq!(now[0].instance.as_ref().unwrap().id(), "a");
        }
        other => panic!("{other:?}"),
    }
    d.register(&ServiceInstance::builder("svc").id("b").port(2).build().unwrap())
        .unwrap();
    match next(&|e| matches!(e, ServiceCacheEvent::Added { .. })) {
        ServiceCacheEvent::Added { node, instance } => {
            assert_eq!((node.as_str(), instance.unwrap().port()), ("b", Some(2)));
        }
        other => panic!("{other:?}"),
    }
    d.update(&ServiceInstance::builder("svc").id("b").port(3).build().unwrap())
        .unwrap();
    match next(&|e| matches!(e, ServiceCacheEvent::Updated { .. })) {
        ServiceCacheEvent::Updated { node, instance } => {
            assert_eq!((node.as_str(), instance.unwrap().port()), ("b", Some(3)));
        }
        other => panic!("{other:?}"),
    }
    admin
        .create()
        .with_data(b"{oops".to_vec())
        .for_path(&format!("{base}/svc/bad"))
        .unwrap();
    match next(&|e| matches!(e, ServiceCacheEvent::Added { .. })) {
        ServiceCacheEvent::Added { node, instance } => {
            assert_eq!(node, "bad");
            assert!(matches!(instance, Err(Error::InstanceJson { .. })));
        }
        other => panic!("{other:?}"),
    }
    assert!(d.unregister("a").unwrap());
    assert_eq!(
        next(&|e| matches!(e, ServiceCacheEvent::Removed { .. })),
        ServiceCacheEvent::Removed { node: "a".into() }
    );
    assert!(wait_until(timing().wait(), || cache.current_instances().is_ok_and(
        |i| i.iter().map(|i| i.id().to_string()).collect::<Vec<_>>() == ["b"]
    )));
    assert_eq!(cache.by_node().len(), 2, "the bad child is kept by node, as an error");
    // Cut off: not current, and the list is refused, not served stale.
    proxy.refuse(true);
    proxy.cut();
    assert!(wait_until(timing().wait(), || !cache.freshness().is_current()));
    assert!(matches!(cache.current_instances(), Err(Error::CacheNotCurrent { .. })));
    assert_eq!(
        cache.instances().len(),
        1,
        "the last list, for who asks for it knowingly"
    );
    proxy.refuse(false);
    assert!(cache.wait_current_for(timing().wait() * 2));
    cache.close();
    d.close().unwrap();
}

/// The provider: round robin visits each in turn; sticky keeps its pick
/// while offered; random stays among the offered; filters, down instances
/// (2 errors) and disabled instances are left out; no answer from a cache
/// that is not current.
#[test]
fn a_provider_picks_by_its_strategy_and_never_from_a_stale_list() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let owner = client(&s);
    let base = "/disc/provider";
    let d = ServiceDiscovery::builder(&owner, base)
        .json_mode(JsonMode::Full)
        .build()
        .unwrap();
    d.start().unwrap();
    for (id, enabled) in [("a", true), ("b", true), ("c", true), ("off", false)] {
        d.register(
            &ServiceInstance::builder("svc")
                .id(id)
                .port(1)
                .enabled(enabled)
                .build()
                .unwrap(),
        )
        .unwrap();
        registered_now(&d, id);
    }
    let reader = ServiceDiscovery::builder(&c, base).build().unwrap();
    let ids = |p: &zk_recipes::ServiceProvider| -> Vec<String> {
        p.all_instances().unwrap().iter().map(|i| i.id().to_string()).collect()
    };
    let rr = reader.provider_builder("svc").unwrap().build();
    assert!(
        matches!(rr.instance(), Err(Error::CacheNotCurrent { .. })),
        "not started"
    );
    rr.start().unwrap();
    assert!(wait_until(timing().wait(), || rr
        .all_instances()
        .is_ok_and(|v| v.len() == 3)));
    assert_eq!(ids(&rr), ["a", "b", "c"], "the disabled one is left out");
    let picks: Vec<String> = (0..6)
        .map(|_| rr.instance().unwrap().unwrap().id().to_string())
        .collect();
    assert_eq!(picks[..3], picks[3..], "round robin: {picks:?}");
    let mut first = picks[..3].to_vec();
    first.sort();
    assert_eq!(first, ["a", "b", "c"]);
    // Down after 2 errors (the default policy); one error is not enough.
    let b = d.query_for_instance("svc", "b").unwrap().unwrap();
    rr.note_error(&b);
    assert_eq!(ids(&rr), ["a", "b", "c"]);
    rr.note_error(&b);
    assert_eq!(ids(&rr), ["a", "c"]);

    let sticky = reader
        .provider_builder("svc")
        .unwrap()
        .strategy(ProviderStrategy::StickyRandom)
        .filter(|i| i.id() != "c")
        .build();
    sticky.start().unwrap();
    assert!(wait_until(timing().wait(), || sticky
        .all_instances()
        .is_ok_and(|v| v.len() == 2)));
    let one = sticky.instance().unwrap().unwrap();
    assert!(["a", "b"].contains(&one.id()), "the filter keeps c out");
    for _ in 0..10 {
        assert_eq!(sticky.instance().unwrap().unwrap().id(), one.id(), "sticky");
    }
    let random = reader
        .provider_builder("svc")
        .unwrap()
        .strategy(ProviderStrategy::Random)
        .down_instance_policy(DownInstancePolicy {
            timeout: Duration::from_secs(60),
            error_threshold: 1,
        })
        .build();
    random.start().unwrap();
    assert!(wait_until(timing().wait(), || random
        .all_instances()
        .is_ok_and(|v| v.len() == 3)));
    let a = d.query_for_instance("svc", "a").unwrap().unwrap();
    random.note_error(&a);
    for _ in 0..20 {
        let id = random.instance().unwrap().unwrap().id().to_string();
        assert!(id == "b" || id == "c", "{id}: a is down after 1 error with this policy");
    }
    // Cut off: no answer, typed.
    proxy.refuse(true);
    proxy.cut();
    assert!(wait_until(timing().wait(), || matches!(
        rr.instance(),
        Err(Error::CacheNotCurrent { .. })
    )));
    proxy.refuse(false);
    assert!(wait_until(timing().wait() * 2, || rr.instance().is_ok()));
    for p in [rr, sticky, random] {
        p.close();
    }
    d.close().unwrap();
}
