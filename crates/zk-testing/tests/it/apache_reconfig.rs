//! The reconfigurable Apache ensemble (`zk_testing::apache::ReconfigurableEnsemble`): servers
//! added, removed and replaced by `reconfig`, with raw-frame clients (no client library).
//! Apache-only: without Java and ZooKeeper they print a line and pass, unless
//! `ZK_TEST_REQUIRE_APACHE=1`. One ensemble at a time.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zk_proto::config::{EnsembleConfig, Role, CONFIG_NODE};
use zk_proto::{Acl, CreateMode, CreateRequest, GetDataResponse, OpCode, PathRecord, PathWatchRequest};
use zk_testing::apache::{available_or_skip, ApacheConfig, ReconfigurableEnsemble};
use zk_testing::raw::RawConnection;

static SERIAL: Mutex<()> = Mutex::new(());

/// One ensemble at a time (3 and 5 JVMs).
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A session on the first server of `connect_string` that accepts one.
fn session(connect_string: &str) -> RawConnection {
    for addr in connect_string.split(',') {
        if let Ok((c, resp)) = RawConnection::connect(addr, 10_000, None) {
            if resp.timeout > 0 {
                return c;
            }
        }
    }
    panic!("no server of {connect_string} accepted a session");
}

/// `/zookeeper/config` as `c`'s server has it after a sync: the parsed data and the Stat's
/// version and mzxid.
fn config_of(c: &mut RawConnection) -> (EnsembleConfig, i32, i64) {
    let r = c.request(OpCode::Sync, &PathRecord { path: "/".into() }).unwrap();
    assert_eq!(r.header.err, 0);
    let get = PathWatchRequest {
        path: CONFIG_NODE.into(),
        watch: false,
    };
    let r = c.request(OpCode::GetData, &get).unwrap();
    assert_eq!(r.header.err, 0);
    let d = r.decode::<GetDataResponse>().unwrap();
    (EnsembleConfig::parse(&d.data).unwrap(), d.stat.version, d.stat.mzxid)
}

fn get(c: &mut RawConnection, path: &str) -> Vec<u8> {
    let get = PathWatchRequest {
        path: path.into(),
        watch: false,
    };
    let r = c.request(OpCode::GetData, &get).unwrap();
    assert_eq!(r.header.err, 0, "getData {path}");
    r.decode::<GetDataResponse>().unwrap().data
}

/// Every server of a 3-node ensemble replaced, one by one, by a new one on new ports: after
/// each replacement the ensemble serves (a node written before is read through the new
/// connect string), the configuration names exactly the members the harness says, its
/// version grows and equals the node's mzxid while its Stat version is -1, the old server is
/// stopped, and in the end no port of the original servers is in the connect string.
#[test]
fn every_server_replaced_one_by_one_still_serves() {
    if !available_or_skip("every_server_replaced_one_by_one_still_serves") {
        return;
    }
    let _serial = serial();
    let t0 = Instant::now();
    let mut e = ReconfigurableEnsemble::start(3, ApacheConfig::default()).expect("start");
    assert_eq!(e.members(), [1, 2, 3]);
    let first_version = e.config().version();
    let original = e.connect_string();
    let old_ports: Vec<u16> = (1..=3).map(|id| e.client_port(id).unwrap()).collect();
    let mut c = session(&e.connect_string());
    let create = CreateRequest {
        path: "/kept".into(),
        data: b"before".to_vec(),
        acl: Acl::open_unsafe(),
        flags: CreateMode::Persistent.code(),
    };
    assert_eq!(c.request(OpCode::Create, &create).unwrap().header.err, 0);
    let _ = c.close_session();
    println!("started in {:?}", t0.elapsed());

    let mut version = first_version;
    for old in [1, 2, 3] {
        let t = Instant::now();
        let leader = e.leader();
        let new = e.replace_server(old).expect("replace");
        println!(
            "server {old} (leader: {leader:?}) replaced by {new} in {:?}",
            t.elapsed()
        );
        assert!(new > 3 && !e.members().contains(&old));
        assert!(e.members().contains(&new));
        assert!(!e.is_running(old), "the removed server is stopped");
        assert!(e.config().version() > version, "the version grows");
        version = e.config().version();
        let mut c = session(&e.connect_string());
        let (config, stat_version, mzxid) = config_of(&mut c);
        assert_eq!(config.members().iter().map(|m| m.id).collect::<Vec<_>>(), e.members());
        assert!(config
            .members()
            .iter()
            .all(|m| m.role == Role::Participant && m.client.is_some()));
        assert_eq!(stat_version, -1);
        assert_eq!(mzxid as u64, config.version());
        assert!(config.version() >= version);
        assert_eq!(get(&mut c, "/kept"), b"before");
        let _ = c.close_session();
    }
    assert_eq!(e.members(), [4, 5, 6]);
    let now = e.connect_string();
    for p in old_ports {
        assert!(!now.contains(&format!(":{p}")), "{p} of {original} still in {now}");
    }
    e.wait_for_quorum(Duration::from_secs(60)).unwrap();
    assert!(e.leader().is_some_and(|l| [4, 5, 6].contains(&l)));
    println!("whole test {:?}", t0.elapsed());
}

/// Five servers: removing the leader makes every client of every server lose its
/// connection (the leader hands over), and a new leader is elected among the rest; removing a
/// follower leaves the other servers' clients connected; a server added afterwards is a
/// voting member that serves clients.
#[test]
fn five_servers_removing_the_leader_disconnects_every_client() {
    if !available_or_skip("five_servers_removing_the_leader_disconnects_every_client") {
        return;
    }
    let _serial = serial();
    let mut e = ReconfigurableEnsemble::start(5, ApacheConfig::default()).expect("start");
    assert_eq!(e.members(), [1, 2, 3, 4, 5]);
    let leader = e.leader().expect("a leader");
    // One client on every server.
    let mut clients: Vec<(u64, RawConnection)> = e
        .members()
        .into_iter()
        .map(|id| (id, session(&format!("127.0.0.1:{}", e.client_port(id).unwrap()))))
        .collect();
    let t = Instant::now();
    e.remove_server(leader).expect("remove the leader");
    println!("leader {leader} removed in {:?}", t.elapsed());
    assert!(!e.members().contains(&leader));
    let new_leader = e.leader().expect("a new leader");
    assert_ne!(new_leader, leader);
    for (id, c) in &mut clients {
        assert!(
            c.is_closed_by_peer(Duration::from_secs(10)),
            "the client of server {id} kept its connection"
        );
    }

    // A follower removed: only its own clients are cut.
    let follower = e.members().into_iter().find(|&id| id != new_leader).unwrap();
    let mut clients: Vec<(u64, RawConnection)> = e
        .members()
        .into_iter()
        .map(|id| (id, session(&format!("127.0.0.1:{}", e.client_port(id).unwrap()))))
        .collect();
    e.remove_server(follower).expect("remove a follower");
    assert_eq!(e.leader(), Some(new_leader), "no election for a follower's removal");
    for (id, c) in &mut clients {
        if *id == follower {
            continue;
        }
        assert!(
            !c.is_closed_by_peer(Duration::from_millis(200)),
            "the client of server {id} lost its connection"
        );
        let r = c
            .request(
                OpCode::Exists,
                &PathWatchRequest {
                    path: "/".into(),
                    watch: false,
                },
            )
            .unwrap();
        assert_eq!(r.header.err, 0);
    }

    let added = e.add_server().expect("add");
    assert_eq!(e.members().len(), 4);
    for (id, c) in &mut clients {
        if *id == follower {
            continue;
        }
        assert!(
            !c.is_closed_by_peer(Duration::from_millis(200)),
            "adding a server cut the client of server {id}"
        );
    }
    let mut c = session(&format!("127.0.0.1:{}", e.client_port(added).unwrap()));
    let (config, _, _) = config_of(&mut c);
    assert_eq!(config.member(added).map(|m| m.role), Some(Role::Participant));
    assert_eq!(e.mode(added).as_deref(), Some("follower"));
    let _ = c.close_session();

    // A server added by reconfig restarts from the files it rewrote (its static zoo.cfg
    // points at the dynamic file of the configuration it last saw).
    e.kill(added).unwrap();
    assert!(!e.is_running(added));
    e.wait_for_quorum(Duration::from_secs(60)).unwrap();
    e.restart(added).expect("restart the added server");
    assert_eq!(e.mode(added).as_deref(), Some("follower"));
    e.wait_for_quorum(Duration::from_secs(60)).unwrap();
}
