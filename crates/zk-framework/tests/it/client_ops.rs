//! Operations of `zk_framework::Client` against a live server: every
//! call, create modes, multi, ACLs, auth, chroot, watches and their
//! registration rules.

use std::time::Duration;

use crate::support::plain::{open, test_root, wait_until, TestServer};
use crossbeam_channel::unbounded;
use zk_framework::proto::{perms, Acl, CreateMode, ErrorCode, EventType, Id, KeeperState};
use zk_framework::Error;
use zk_framework::{Client, ClientConfig, ClientState, Op, OpResult, WatchedEvent};

const T: Duration = Duration::from_secs(4);
const EVENT_WAIT: Duration = Duration::from_secs(10);

#[test]
fn crud_and_stats() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    assert_eq!(zk.state(), ClientState::Connected);
    assert_ne!(zk.session_id(), 0);
    assert_eq!(zk.session_password().len(), 16);
    assert!(zk.negotiated_timeout().unwrap() >= Duration::from_secs(1));
    let root = test_root(&zk, "crud");
    let a = format!("{root}/a");

    assert_eq!(zk.create(&a, b"one", &open(), CreateMode::Persistent).unwrap(), a);
    assert!(zk.last_zxid() > 0);
    let (data, stat) = zk.get_data(&a).unwrap();
    assert_eq!(data, b"one");
    assert_eq!(stat.version, 0);
    assert_eq!(zk.exists(&a).unwrap().unwrap().czxid, stat.czxid);
    assert_eq!(zk.exists(&format!("{root}/missing")).unwrap(), None);

    let st = zk.set_data(&a, b"two", Some(0)).unwrap();
    assert_eq!(st.version, 1);
    assert!(matches!(zk.set_data(&a, b"x", Some(0)), Err(Error::BadVersion { path }) if path == a));
    assert_eq!(zk.get_data(&a).unwrap().0, b"two");

    assert!(matches!(
        zk.create(&a, b"", &open(), CreateMode::Persistent),
        Err(Error::NodeExists { .. })
    ));
    assert!(matches!(
        zk.create(&format!("{root}/no/parent"), b"", &open(), CreateMode::Persistent),
        Err(Error::NoNode { .. })
    ));

    let (p2, st2) = zk
        .create2(&format!("{root}/b"), b"bb", &open(), CreateMode::Persistent)
        .unwrap();
    assert_eq!(p2, format!("{root}/b"));
    assert_eq!(st2.data_length, 2);

    let s1 = zk
        .create(&format!("{root}/s-"), b"", &open(), CreateMode::PersistentSequential)
        .unwrap();
    let s2 = zk
        .create(&format!("{root}/s-"), b"", &open(), CreateMode::EphemeralSequential)
        .unwrap();
    assert!(s1 < s2, "{s1} {s2}");
    assert_eq!(s1.len(), format!("{root}/s-").len() + 10);
    let eph = zk.exists(&s2).unwrap().unwrap();
    assert_eq!(eph.ephemeral_owner, zk.session_id());
    assert!(matches!(
        zk.create(&format!("{s2}/child"), b"", &open(), CreateMode::Persistent),
        Err(Error::NoChildrenForEphemerals { .. })
    ));

    let mut kids = zk.get_children(&root).unwrap();
    kids.sort();
    assert_eq!(kids.len(), 4);
    assert_eq!(&kids[..2], &["a".to_string(), "b".to_string()]);
    let (kids2, pstat) = zk.get_children2(&root).unwrap();
    assert_eq!(kids2.len(), 4);
    assert_eq!(pstat.num_children, 4);

    zk.sync(&root).unwrap();
    zk.check(&a, 1).unwrap();
    assert!(matches!(zk.check(&a, 7), Err(Error::BadVersion { .. })));
    assert!(matches!(zk.check(&format!("{root}/zz"), 0), Err(Error::NoNode { .. })));

    assert!(matches!(zk.delete(&root, None), Err(Error::NotEmpty { .. })));
    assert!(matches!(zk.delete(&a, Some(5)), Err(Error::BadVersion { .. })));
    zk.delete(&a, Some(1)).unwrap();
    assert!(matches!(zk.delete(&a, None), Err(Error::NoNode { .. })));
    assert!(matches!(zk.get_data(&a), Err(Error::NoNode { .. })));
    assert!(matches!(zk.get_children(&a), Err(Error::NoNode { .. })));
    zk.close();
    assert_eq!(zk.state(), ClientState::Closed);
    assert_eq!(zk.get_data("/"), Err(Error::Closed));
}

#[test]
fn empty_and_large_data() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "data");
    let p = format!("{root}/e");
    zk.create(&p, b"", &open(), CreateMode::Persistent).unwrap();
    assert_eq!(zk.get_data(&p).unwrap().0, Vec::<u8>::new());
    let big = vec![7u8; 1_000_000];
    zk.set_data(&p, &big, None).unwrap();
    assert_eq!(zk.get_data(&p).unwrap().0, big);
    let too_big = vec![0u8; 1_048_576];
    assert!(matches!(
        zk.set_data(&p, &too_big, None),
        Err(Error::DataTooLarge { .. })
    ));
    assert!(matches!(
        zk.create(&format!("{root}/big"), &too_big, &open(), CreateMode::Persistent),
        Err(Error::DataTooLarge { .. })
    ));
    // Nothing was sent: the connection is still fine.
    assert_eq!(zk.get_data(&p).unwrap().1.data_length, 1_000_000);
}

#[test]
fn multi_success_and_failure() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "multi");
    let a = format!("{root}/a");
    let b = format!("{root}/b");
    let res = zk
        .multi(vec![
            Op::create(&a, b"1".to_vec(), open(), CreateMode::Persistent),
            Op::create(&b, b"2".to_vec(), open(), CreateMode::Container),
            Op::set_data(&a, b"3".to_vec(), Some(0)),
            Op::check(&a, 1),
            Op::create(format!("{root}/s-"), vec![], open(), CreateMode::PersistentSequential),
        ])
        .unwrap();
    assert_eq!(res.len(), 5);
    assert_eq!(
        res[0],
        OpResult::Create {
            path: a.clone(),
            stat: None
        }
    );
    assert!(matches!(&res[1], OpResult::Create { path, stat: Some(_) } if *path == b));
    assert!(matches!(&res[2], OpResult::SetData { stat } if stat.version == 1));
    assert_eq!(res[3], OpResult::Check);
    assert!(matches!(&res[4], OpResult::Create { path, .. } if path.starts_with(&format!("{root}/s-"))));
    assert_eq!(zk.get_data(&a).unwrap().0, b"3");

    // A failing multi applies nothing; multi gives the first failing op's error.
    let ops = || {
        vec![
            Op::delete(&a, None),
            Op::create(&b, vec![], open(), CreateMode::Persistent),
            Op::set_data(&a, b"x".to_vec(), None),
        ]
    };
    assert_eq!(zk.multi(ops()), Err(Error::NodeExists { path: b.clone() }));
    let detailed = zk.multi_results(ops()).unwrap();
    assert_eq!(detailed[0], OpResult::RolledBack);
    assert_eq!(detailed[1], OpResult::Error(Error::NodeExists { path: b.clone() }));
    assert_eq!(
        detailed[2].error().and_then(Error::code),
        Some(ErrorCode::RuntimeInconsistency)
    );
    assert!(zk.exists(&a).unwrap().is_some());
    assert_eq!(zk.multi(vec![]).unwrap(), vec![]);
    // Client-side checks inside a multi.
    assert!(matches!(
        zk.multi(vec![Op::delete("bad", None)]),
        Err(Error::InvalidPath(_))
    ));
}

#[test]
fn container_created_with_opcode_19_is_reaped() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "container");
    let c = format!("{root}/c");
    assert_eq!(zk.create(&c, b"", &open(), CreateMode::Container).unwrap(), c);
    let kid = zk
        .create(&format!("{c}/k"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    let (tx, rx) = unbounded::<WatchedEvent>();
    zk.exists_w(&c, tx).unwrap().expect("container exists");
    zk.delete(&kid, None).unwrap();
    let ev = rx.recv_timeout(Duration::from_secs(30)).expect("container reaped");
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    assert_eq!(ev.path.as_deref(), Some(c.as_str()));
    assert_eq!(zk.exists(&c).unwrap(), None);
    // create2 with the container mode too.
    let (c2, _) = zk
        .create2(&format!("{root}/c2"), b"", &open(), CreateMode::Container)
        .unwrap();
    zk.create(&format!("{c2}/k"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    zk.delete(&format!("{c2}/k"), None).unwrap();
    assert!(wait_until(Duration::from_secs(30), || zk
        .exists(&c2)
        .unwrap()
        .is_none()));
}

#[test]
fn ttl_nodes() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "ttl");
    let (p, stat) = zk
        .create_ttl(
            &format!("{root}/t"),
            b"x",
            &open(),
            CreateMode::PersistentWithTtl,
            Duration::from_millis(200),
        )
        .unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    assert!(wait_until(Duration::from_secs(30), || zk.exists(&p).unwrap().is_none()));
    assert!(matches!(
        zk.create(&p, b"", &open(), CreateMode::PersistentWithTtl),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        zk.create_ttl(&p, b"", &open(), CreateMode::Persistent, Duration::from_secs(1)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        zk.create_ttl(&p, b"", &open(), CreateMode::PersistentWithTtl, Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn acl_and_digest_auth() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "acl");
    let (acl, st) = zk.get_acl(&root).unwrap();
    assert_eq!(acl, open());
    assert_eq!(st.aversion, 0);

    zk.add_auth("digest", b"alice:secret").unwrap();
    let p = format!("{root}/private");
    zk.create(&p, b"s", &Acl::creator_all(), CreateMode::Persistent)
        .unwrap();
    assert_eq!(zk.get_data(&p).unwrap().0, b"s");

    let other = server.client(T);
    assert!(matches!(other.get_data(&p), Err(Error::NoAuth { .. })));
    other.add_auth("digest", b"alice:secret").unwrap();
    assert_eq!(other.get_data(&p).unwrap().0, b"s");

    // Credentials given in the config are sent on connect.
    let third = server.client_with(
        ClientConfig::default()
            .with_session_timeout(T)
            .with_auth("digest", b"alice:secret"),
    );
    assert_eq!(third.get_data(&p).unwrap().0, b"s");

    let st = zk.set_acl(&root, &[Acl::world(perms::ALL)], Some(0)).unwrap();
    assert_eq!(st.aversion, 1);
    assert!(matches!(
        zk.set_acl(&root, &open(), Some(0)),
        Err(Error::BadVersion { .. })
    ));
    assert!(matches!(zk.set_acl(&root, &[], None), Err(Error::InvalidAcl { .. })));
    let bad_id = vec![Acl {
        perms: perms::ALL,
        id: Id {
            scheme: "nonsense".into(),
            id: "x".into(),
        },
    }];
    assert!(matches!(
        zk.create(&format!("{root}/bad"), b"", &bad_id, CreateMode::Persistent),
        Err(Error::InvalidAcl { .. })
    ));
}

#[test]
fn unknown_auth_scheme_is_auth_failed() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let events = zk.state_receiver();
    assert_eq!(zk.add_auth("no-such-scheme", b"x"), Err(Error::AuthFailed));
    assert!(wait_until(EVENT_WAIT, || zk.state() == ClientState::AuthFailed));
    assert_eq!(
        events.recv_timeout(EVENT_WAIT).unwrap(),
        zk_framework::SessionEvent::AuthFailed
    );
    assert_eq!(zk.exists("/"), Err(Error::AuthFailed));
}

#[test]
fn chroot_paths() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "chroot");
    let cz = Client::connect(
        &format!("{}{root}", server.connect_string()),
        ClientConfig::default().with_session_timeout(T),
    )
    .unwrap();
    cz.wait_connected_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(cz.chroot(), Some(root.as_str()));
    assert_eq!(cz.create("/x", b"1", &open(), CreateMode::Persistent).unwrap(), "/x");
    let s = cz
        .create("/q-", b"", &open(), CreateMode::PersistentSequential)
        .unwrap();
    assert!(s.starts_with("/q-"), "{s}");
    assert_eq!(zk.get_data(&format!("{root}/x")).unwrap().0, b"1");
    let mut kids = cz.get_children("/").unwrap();
    kids.sort();
    assert_eq!(kids[1], "x");
    let r = cz
        .multi(vec![Op::create("/m", vec![], open(), CreateMode::Persistent)])
        .unwrap();
    assert_eq!(
        r[0],
        OpResult::Create {
            path: "/m".into(),
            stat: None
        }
    );

    let (tx, rx) = unbounded::<WatchedEvent>();
    cz.get_data_w("/x", tx.clone()).unwrap();
    cz.get_children_w("/", tx).unwrap();
    assert_eq!(cz.registered_watches().data, vec!["/x".to_string()]);
    assert_eq!(cz.registered_watches().child, vec!["/".to_string()]);
    zk.set_data(&format!("{root}/x"), b"2", None).unwrap();
    let ev = rx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_deref()),
        (EventType::NodeDataChanged, Some("/x"))
    );
    zk.create(&format!("{root}/y"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    let ev = rx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_deref()),
        (EventType::NodeChildrenChanged, Some("/"))
    );
    assert_eq!(ev.state, KeeperState::SyncConnected);
}

#[test]
fn watch_registration_rules() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "wrules");
    let a = format!("{root}/a");
    let missing = format!("{root}/missing");
    let (tx, rx) = unbounded::<WatchedEvent>();

    // No phantom watches: failed getData / getChildren leave nothing.
    assert!(matches!(zk.get_data_w(&missing, tx.clone()), Err(Error::NoNode { .. })));
    assert!(matches!(
        zk.get_children_w(&missing, tx.clone()),
        Err(Error::NoNode { .. })
    ));
    assert!(matches!(
        zk.get_children2_w(&missing, tx.clone()),
        Err(Error::NoNode { .. })
    ));
    assert!(zk.registered_watches().is_empty());

    // exists on a missing node registers an exist watch, fired by the create.
    assert_eq!(zk.exists_w(&missing, tx.clone()).unwrap(), None);
    assert_eq!(zk.registered_watches().exist, vec![missing.clone()]);
    zk.create(&missing, b"", &open(), CreateMode::Persistent).unwrap();
    let ev = rx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!(
        (ev.event_type, ev.path.clone()),
        (EventType::NodeCreated, Some(missing.clone()))
    );
    assert!(wait_until(EVENT_WAIT, || zk.registered_watches().is_empty()));

    // Data, exists and child watches on an existing node; each fires once.
    zk.create(&a, b"", &open(), CreateMode::Persistent).unwrap();
    zk.get_data_w(&a, tx.clone()).unwrap();
    zk.exists_w(&a, tx.clone()).unwrap().unwrap();
    zk.get_children2_w(&a, tx.clone()).unwrap();
    let w = zk.registered_watches();
    assert_eq!((w.data.len(), w.child.len(), w.len()), (1, 1, 3));
    zk.set_data(&a, b"1", None).unwrap();
    let e1 = rx.recv_timeout(EVENT_WAIT).unwrap();
    let e2 = rx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!(e1.event_type, EventType::NodeDataChanged);
    assert_eq!(e2.event_type, EventType::NodeDataChanged);
    zk.set_data(&a, b"2", None).unwrap();
    zk.create(&format!("{a}/k"), b"", &open(), CreateMode::Persistent)
        .unwrap();
    let e3 = rx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!(e3.event_type, EventType::NodeChildrenChanged);
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "one-shot watches fired twice"
    );

    // NodeDeleted reaches data and child watches of the node.
    zk.get_data_w(&format!("{a}/k"), tx.clone()).unwrap();
    zk.get_children_w(&format!("{a}/k"), tx.clone()).unwrap();
    zk.delete(&format!("{a}/k"), None).unwrap();
    for _ in 0..2 {
        assert_eq!(rx.recv_timeout(EVENT_WAIT).unwrap().event_type, EventType::NodeDeleted);
    }
    assert!(wait_until(EVENT_WAIT, || zk.registered_watches().is_empty()));

    // A closure watcher.
    let (ctx, crx) = unbounded();
    zk.get_data_w(&a, move |e: WatchedEvent| ctx.send(e.event_type).unwrap())
        .unwrap();
    zk.delete(&a, None).unwrap();
    assert_eq!(crx.recv_timeout(EVENT_WAIT).unwrap(), EventType::NodeDeleted);
}

/// A watcher that reports the thread it ran on and the event's path, and
/// says whether it only signals.
struct Probe {
    tx: crossbeam_channel::Sender<(String, String)>,
    signals: bool,
}

impl zk_framework::Watcher for Probe {
    fn process(self: Box<Self>, e: WatchedEvent) {
        let thread = std::thread::current().name().unwrap_or("?").to_string();
        let _ = self.tx.send((thread, e.path.unwrap_or_default()));
    }

    fn only_signals(&self) -> bool {
        self.signals
    }
}

/// A watcher that only signals runs on the I/O thread when nothing is queued
/// for the event thread; any other runs on the event thread; and one that
/// only signals waits behind the events queued before it, so a client's
/// watchers see events in the server's order.
#[test]
fn watchers_that_only_signal_run_on_the_io_thread_in_order() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "signals");
    let (a, b) = (format!("{root}/a"), format!("{root}/b"));
    zk.create(&a, b"", &open(), CreateMode::Persistent).unwrap();
    zk.create(&b, b"", &open(), CreateMode::Persistent).unwrap();
    let (tx, rx) = unbounded();
    let probe = |signals| Probe {
        tx: tx.clone(),
        signals,
    };

    // Idle: a signalling watcher on the I/O thread, another on the event thread.
    zk.get_data_w(&a, probe(true)).unwrap();
    zk.set_data(&a, b"1", None).unwrap();
    assert_eq!(rx.recv_timeout(EVENT_WAIT).unwrap(), ("zk-io".to_string(), a.clone()));
    zk.get_data_w(&a, probe(false)).unwrap();
    zk.set_data(&a, b"2", None).unwrap();
    assert_eq!(
        rx.recv_timeout(EVENT_WAIT).unwrap(),
        ("zk-event".to_string(), a.clone())
    );
    // A channel's sender only signals.
    let (stx, srx) = unbounded::<WatchedEvent>();
    assert!(zk_framework::Watcher::only_signals(&stx));
    zk.get_data_w(&a, stx).unwrap();
    zk.set_data(&a, b"3", None).unwrap();
    assert_eq!(srx.recv_timeout(EVENT_WAIT).unwrap().path, Some(a.clone()));

    // The event thread busy with a's event: b's signalling watcher waits
    // behind it, and runs on the event thread.
    let (gate_tx, gate_rx) = crossbeam_channel::bounded::<()>(0);
    let (order_tx, order_rx) = unbounded::<String>();
    let first = order_tx.clone();
    zk.get_data_w(&a, move |_e: WatchedEvent| {
        let _ = gate_rx.recv_timeout(EVENT_WAIT);
        let _ = first.send("a".to_string());
    })
    .unwrap();
    let (ptx, prx) = unbounded();
    zk.get_data_w(&b, Probe { tx: ptx, signals: true }).unwrap();
    zk.set_data(&a, b"4", None).unwrap();
    zk.set_data(&b, b"1", None).unwrap();
    // Both notifications read (their watches taken from the registry).
    assert!(wait_until(EVENT_WAIT, || zk.registered_watches().is_empty()));
    assert!(
        prx.try_recv().is_err(),
        "b's watcher ran before a's, which was queued first"
    );
    gate_tx.send(()).unwrap();
    let (thread, path) = prx.recv_timeout(EVENT_WAIT).unwrap();
    assert_eq!((thread.as_str(), path), ("zk-event", b.clone()));
    assert_eq!(order_rx.recv_timeout(EVENT_WAIT).unwrap(), "a");
}

#[test]
fn pipelined_calls_from_many_threads() {
    let Some(server) = TestServer::start() else { return };
    let zk = server.client(T);
    let root = test_root(&zk, "pipeline");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let zk = zk.clone();
            let root = root.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let p = format!("{root}/n{t}-{i}");
                    zk.create(&p, p.as_bytes(), &Acl::open_unsafe(), CreateMode::Persistent)
                        .unwrap();
                    assert_eq!(zk.get_data(&p).unwrap().0, p.as_bytes());
                    zk.delete(&p, Some(0)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(zk.get_children(&root).unwrap().is_empty());
}
