//! Dynamic reconfiguration from the client's side: `get_config` (with a
//! watch) and `reconfig` on the plain client and the managed one.
//!
//! The first tests run on the backend `ZK_TEST_SERVER` selects: the embedded
//! server publishes a one-node ensemble's configuration, a standalone Apache
//! server none (`Error::Config(Empty)`), and both refuse `reconfig` with
//! ReconfigDisabled. The others are Apache-only (they print a line and pass
//! without Java, unless `ZK_TEST_REQUIRE_APACHE=1`) and run one at a time: a
//! reconfigurable 3-node ensemble (`zk_testing::apache::ReconfigurableEnsemble`)
//! that our clients add servers to, remove them from and replace them in, and
//! a 1-node ensemble with `reconfigEnabled=false`.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::proto::config::{ConfigError, EnsembleConfig, Role, CONFIG_NODE};
use zk_framework::proto::ErrorCode;
use zk_framework::{
    Acl, Client, ClientConfig, ConnectionState, CreateMode, CuratorFramework, Error, EventType,
    ExponentialBackoffRetry, Reconfig, WatchedEvent,
};
use zk_testing::apache::{ApacheCluster, ApacheConfig, ReconfigurableEnsemble, SUPER_AUTH};
use zk_testing::Backend;

use crate::support::plain::TestServer;
use crate::support::{init_log, timing, wait_until};

fn connect(connect_string: &str) -> Client {
    let c = Client::connect(connect_string, ClientConfig::default()).expect("connect");
    c.wait_connected_timeout(timing().wait()).expect("connected");
    c
}

/// A client authenticated as the ensemble's super user.
fn super_client(connect_string: &str) -> Client {
    let c = connect(connect_string);
    c.add_auth("digest", SUPER_AUTH.as_bytes()).expect("addauth super");
    c
}

fn is_keeper(e: &Error, code: ErrorCode) -> bool {
    matches!(e, Error::Keeper { code: c, path } if *c == code && path == CONFIG_NODE)
}

/// The next event of `rx` within the test's wait.
fn event(rx: &Receiver<WatchedEvent>, what: &str) -> WatchedEvent {
    rx.recv_timeout(timing().wait())
        .unwrap_or_else(|_| panic!("no event for {what}"))
}

/// The config node as the backend serves it: one member (the server itself,
/// on its client port) on the embedded server, none on a standalone Apache
/// server; absolute whatever the chroot (a chrooted read would be NoNode);
/// reconfig refused with ReconfigDisabled by both; the same through the
/// managed client with a namespace.
#[test]
fn get_config_reads_the_servers_configuration_and_ignores_the_chroot() {
    let Some(s) = TestServer::start() else { return };
    let backend = Backend::from_env().expect("ZK_TEST_SERVER");
    let plain = connect(&s.connect_string());
    plain
        .create("/app", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .or_else(|e| {
            if matches!(e, Error::NodeExists { .. }) {
                Ok(String::new())
            } else {
                Err(e)
            }
        })
        .unwrap();
    let chrooted = connect(&format!("{}/app", s.connect_string()));
    let fw = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .namespace("app")
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(10), 3))
        .build()
        .unwrap();
    fw.block_until_connected(timing().wait()).unwrap();
    let port: u16 = s.connect_string().rsplit(':').next().unwrap().parse().unwrap();
    match backend {
        Backend::Embedded => {
            let (config, stat) = plain.get_config().unwrap();
            assert_eq!(config.members().len(), 1);
            let me = config.member(1).unwrap();
            assert_eq!(me.role, Role::Participant);
            let client = me.client.as_ref().unwrap();
            assert_eq!((client.host.as_str(), client.port), ("127.0.0.1", port));
            assert_eq!(stat.version, -1);
            assert_eq!(config.version() as i64, stat.mzxid);
            assert_eq!(chrooted.get_config().unwrap(), (config.clone(), stat));
            let (tx, _rx) = crossbeam_channel::unbounded();
            assert_eq!(chrooted.get_config_w(tx).unwrap().0, config);
            assert_eq!(fw.get_config().unwrap().0, config);
            assert_eq!(fw.get_config_w(|_: WatchedEvent| {}).unwrap().0, config);
        }
        Backend::Apache => {
            // A standalone server has no dynamic configuration: the node is
            // empty. Chrooted, the read would be NoNode (no /app/zookeeper/config).
            for r in [plain.get_config(), chrooted.get_config(), fw.get_config()] {
                assert_eq!(r, Err(Error::Config(ConfigError::Empty)));
            }
            // The read succeeded: the server set the watch, and so does the client.
            let (tx, _rx) = crossbeam_channel::unbounded();
            assert_eq!(chrooted.get_config_w(tx), Err(Error::Config(ConfigError::Empty)));
            assert_eq!(chrooted.registered_watches().data, [CONFIG_NODE]);
        }
    }
    // reconfigEnabled is false on both, and it is the first check.
    plain.add_auth("digest", b"someone:pw").unwrap();
    let e = plain.reconfig(Reconfig::new().remove([1])).unwrap_err();
    assert!(is_keeper(&e, ErrorCode::ReconfigDisabled), "{e:?}");
    assert!(!e.is_retryable());
    let e = fw.reconfig(Reconfig::new().remove([1]).from_config(5)).unwrap_err();
    assert!(is_keeper(&e, ErrorCode::ReconfigDisabled), "{e:?}");
    // Nothing to send: refused before it is sent.
    assert!(matches!(
        plain.reconfig(Reconfig::new()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(fw.reconfig(Reconfig::new()), Err(Error::InvalidArgument(_))));
    fw.close();
}

/// Our clients change a reconfigurable 3-node Apache ensemble: the configuration read
/// equals the harness's, with Stat version -1 and mzxid = version; a server added, then
/// removed on the version just read, then one replaced (add and remove in one change),
/// then the leader removed through the managed client (whose retry survives the
/// leader's hand-over); each change grows the version, fires the watches of a plain, a
/// chrooted (`/zoo`, `/zookeeper`) and a namespaced client with the path
/// `/zookeeper/config`, and is what the harness reads back. Refusals are typed: a stale
/// `from_config` BadVersion, a client without the super user NoAuth, a joiner without a
/// client port BadArguments.
#[test]
fn our_clients_add_remove_and_replace_servers_of_an_apache_ensemble() {
    if !zk_testing::apache::available_or_skip("reconfig::our_clients_add_remove_and_replace_servers") {
        return;
    }
    let _serial = crate::support::one_ensemble_at_a_time();
    init_log();
    let t0 = Instant::now();
    let mut e = ReconfigurableEnsemble::start(3, ApacheConfig::default()).expect("start the ensemble");
    println!("ensemble up in {:?}", t0.elapsed());
    let cs = e.connect_string();
    let admin = super_client(&cs);
    admin
        .create("/zoo", b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .unwrap();
    let (config, stat) = admin.get_config().unwrap();
    assert_eq!(&config, e.config());
    assert_eq!(stat.version, -1);
    assert_eq!(config.version() as i64, stat.mzxid);

    // Watchers: plain, chrooted at /zoo and at /zookeeper, and a namespaced managed client.
    let zoo = connect(&format!("{cs}/zoo"));
    let zk_chroot = connect(&format!("{cs}/zookeeper"));
    let fw = CuratorFramework::builder()
        .connect_string(cs.clone())
        .namespace("zookeeper")
        .authorization("digest", SUPER_AUTH.as_bytes())
        .session_timeout(timing().scale(Duration::from_secs(15)))
        .connection_timeout(timing().connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(200), 10))
        .build()
        .unwrap();
    fw.block_until_connected(timing().wait()).unwrap();
    let watch_all = |what: &str, version: u64| -> Vec<Receiver<WatchedEvent>> {
        let mut rxs = Vec::new();
        for (name, c) in [("plain", &admin), ("/zoo", &zoo), ("/zookeeper", &zk_chroot)] {
            let (tx, rx) = crossbeam_channel::unbounded();
            c.sync("/").unwrap();
            let (seen, _) = c
                .get_config_w(tx)
                .unwrap_or_else(|err| panic!("{name} before {what}: {err}"));
            assert_eq!(seen.version(), version, "{name} reads the newest after a sync");
            rxs.push(rx);
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        fw.get_config_w(tx).unwrap();
        rxs.push(rx);
        rxs
    };
    let changed = |rxs: Vec<Receiver<WatchedEvent>>, what: &str| {
        for rx in rxs {
            let ev = event(&rx, what);
            assert_eq!(ev.event_type, EventType::NodeDataChanged, "{what}: {ev:?}");
            assert_eq!(ev.path.as_deref(), Some(CONFIG_NODE), "{what}: {ev:?}");
        }
    };

    // Add server 4 (started by the harness, not yet a member).
    let v0 = e.config().version();
    let four = e.prepare_server().unwrap();
    let line = e.server_line(four).unwrap();
    let rxs = watch_all("add", v0);
    let (added, stat) = admin.reconfig(Reconfig::new().add([line.clone()])).unwrap();
    assert_eq!(added.member(four).map(ToString::to_string), Some(line.clone()));
    assert!(added.version() > v0);
    assert_eq!((stat.version, stat.mzxid), (-1, added.version() as i64));
    changed(rxs, "add");
    assert_eq!(e.refresh_config().unwrap(), &added);
    assert_eq!(e.members(), [1, 2, 3, four]);

    // Refusals: stale version, no super user, a joiner without a client port.
    let stale = admin.reconfig(Reconfig::new().remove([four]).from_config(v0 as i64));
    assert_eq!(
        stale,
        Err(Error::BadVersion {
            path: CONFIG_NODE.into()
        })
    );
    let nobody = connect(&cs);
    assert_eq!(
        nobody.reconfig(Reconfig::new().remove([four])),
        Err(Error::NoAuth {
            path: CONFIG_NODE.into()
        })
    );
    let no_client_port = Reconfig::new().add(["server.9=127.0.0.1:1:2:participant"]);
    assert_eq!(
        admin.reconfig(no_client_port),
        Err(Error::BadArguments {
            path: CONFIG_NODE.into()
        })
    );
    // A new member list whose one voter is not running: no quorum of it is in sync.
    let free: Vec<u16> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let absent = format!(
        "server.9=127.0.0.1:{}:{}:participant;127.0.0.1:{}",
        free[0], free[1], free[2]
    );
    let err = admin.reconfig(Reconfig::new().members([absent])).unwrap_err();
    assert!(is_keeper(&err, ErrorCode::NewConfigNoQuorum), "{err:?}");
    assert_eq!(e.refresh_config().unwrap(), &added, "no refusal changed anything");
    // The same members as a whole new list (non-incremental): a new version, same members.
    let lines: Vec<String> = added.members().iter().map(ToString::to_string).collect();
    let rxs = watch_all("members", added.version());
    let (same, _) = admin.reconfig(Reconfig::new().members(lines)).unwrap();
    assert_eq!(same.members(), added.members());
    assert!(same.version() > added.version());
    changed(rxs, "members");
    let added = e.refresh_config().unwrap().clone();
    assert_eq!(added, same);

    // Remove it again, on the version just read.
    let rxs = watch_all("remove", added.version());
    let (removed, _) = admin
        .reconfig(Reconfig::new().remove([four]).from_config(added.version() as i64))
        .unwrap();
    assert!(removed.member(four).is_none() && removed.version() > added.version());
    changed(rxs, "remove");
    e.refresh_config().unwrap();
    e.stop(four).unwrap();
    assert_eq!(e.members(), [1, 2, 3]);

    // Replace a follower by a new server in one change (add and remove).
    let leader = e.leader().expect("a leader");
    let old = [1, 2, 3].into_iter().find(|&id| id != leader).unwrap();
    let five = e.prepare_server().unwrap();
    let rxs = watch_all("replace", e.config().version());
    let (replaced, _) = admin
        .reconfig(Reconfig::new().add([e.server_line(five).unwrap()]).remove([old]))
        .unwrap();
    assert!(replaced.member(old).is_none() && replaced.member(five).is_some());
    changed(rxs, "replace");
    e.refresh_config().unwrap();
    e.stop(old).unwrap();
    e.wait_for_quorum(Duration::from_secs(60)).unwrap();

    // The leader removed through the managed client: every connection is lost during the
    // hand-over; the unconditional change is retried and ends with the leader gone.
    let before = e.config().version();
    let states = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = states.clone();
    let _listener = fw.add_listener(move |s| seen.lock().push(s));
    let t = Instant::now();
    let (no_leader, _) = fw.reconfig(Reconfig::new().remove([leader])).unwrap();
    println!(
        "leader {leader} removed through the managed client in {:?}",
        t.elapsed()
    );
    assert!(no_leader.member(leader).is_none() && no_leader.version() > before);
    // The hand-over cut the managed client's connection too: Suspended, then
    // Reconnected on the same session, never Lost.
    assert!(wait_until(timing().wait(), || states
        .lock()
        .contains(&ConnectionState::Reconnected)));
    let states = states.lock().clone();
    assert!(states.contains(&ConnectionState::Suspended), "{states:?}");
    assert!(!states.contains(&ConnectionState::Lost), "{states:?}");
    e.refresh_config().unwrap();
    e.stop(leader).unwrap();
    e.wait_for_quorum(Duration::from_secs(60)).unwrap();
    let survivors = e.members();
    assert_eq!(survivors.len(), 2);
    assert!(survivors.contains(&five));
    // The clients (whose connect string named the three original servers) still work
    // through the one original server left.
    assert!(wait_until(timing().wait(), || admin
        .get_config()
        .is_ok_and(|(c, _)| c.members().len() == 2)));
    assert!(wait_until(timing().wait(), || zoo
        .exists("/")
        .is_ok_and(|s| s.is_some())));
    fw.close();
    println!("whole test {:?}", t0.elapsed());
}

/// A quorum peer with `reconfigEnabled=false` (a 1-node ApacheCluster): reconfig is
/// ReconfigDisabled even for the super user, and its configuration, written the pre-3.5
/// way (static `clientPort`), has no client address.
#[test]
fn reconfig_disabled_on_a_server_with_it_off() {
    if !zk_testing::apache::available_or_skip("reconfig::reconfig_disabled_on_a_server_with_it_off") {
        return;
    }
    let _serial = crate::support::one_ensemble_at_a_time();
    init_log();
    let config = ApacheConfig {
        super_digest: Some(zk_framework::proto::digest::digest_id(SUPER_AUTH)),
        ..ApacheConfig::default()
    };
    let cluster = ApacheCluster::start(1, config).expect("a 1-node ensemble");
    let c = super_client(&cluster.connect_string());
    let (config, stat): (EnsembleConfig, _) = c.get_config().unwrap();
    assert_eq!(stat.version, -1);
    assert_eq!(config.members().len(), 1);
    assert_eq!(config.member(1).unwrap().client, None, "{config}");
    let e = c.reconfig(Reconfig::new().remove([1])).unwrap_err();
    assert!(is_keeper(&e, ErrorCode::ReconfigDisabled), "{e:?}");
    assert_eq!(
        e.to_string(),
        "zookeeper error reconfigdisabled (-123): /zookeeper/config"
    );
}

/// The managed client sends an unconditional change again after a lost reply
/// (the same membership twice), a conditional one once: its ConnectionLoss
/// says the outcome is unknown. Embedded only (it drops the reply).
#[test]
fn the_managed_client_retries_only_an_unconditional_reconfig() {
    let Some(s) = TestServer::start() else { return };
    let Some(embedded) = s.embedded() else {
        println!("skipped on Apache: the test drops a reply on the embedded server");
        return;
    };
    let fw = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(10), 3))
        .connection_timeout(timing().connection())
        .build()
        .unwrap();
    fw.block_until_connected(timing().wait()).unwrap();
    let sent = || {
        embedded
            .stats()
            .requests
            .get(&zk_framework::proto::OpCode::Reconfig)
            .copied()
            .unwrap_or(0)
    };

    embedded.drop_next_reply(zk_framework::proto::OpCode::Reconfig);
    let e = fw.reconfig(Reconfig::new().remove([1]).from_config(0)).unwrap_err();
    assert_eq!(e, Error::ConnectionLoss);
    assert!(e.may_have_applied());
    assert_eq!(sent(), 1, "a conditional change is sent once");

    embedded.drop_next_reply(zk_framework::proto::OpCode::Reconfig);
    let e = fw.reconfig(Reconfig::new().remove([1])).unwrap_err();
    assert!(is_keeper(&e, ErrorCode::ReconfigDisabled), "{e:?}");
    assert_eq!(sent(), 3, "an unconditional change is sent again after the lost reply");
    fw.close();
}
