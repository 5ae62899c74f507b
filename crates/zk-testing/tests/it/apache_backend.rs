//! Integration tests of the real Apache ZooKeeper backends (`zk_testing::apache`).
//!
//! They need Java and Debian's ZooKeeper jars. Without them they print a line and pass, unless
//! `ZK_TEST_REQUIRE_APACHE=1` is set (CI sets it), in which case they fail.

use std::time::Duration;

use crate::support::wait_until;
use zk_testing::apache::{ApacheCluster, ApacheConfig, ApacheServer};
use zk_testing::fourlw::four_letter_word;

const WAIT: Duration = Duration::from_secs(60);

fn apache_or_skip(test: &str) -> bool {
    zk_testing::apache::available_or_skip(test)
}

fn srvr(addr: &str) -> String {
    four_letter_word(addr, "srvr", Duration::from_secs(5)).unwrap_or_else(|e| panic!("srvr to {addr} failed: {e}"))
}

fn mode_of(answer: &str) -> Option<&str> {
    answer.lines().find_map(|l| l.strip_prefix("Mode: "))
}

#[test]
fn standalone_start_stop_restart_on_same_port() {
    if !apache_or_skip("standalone_start_stop_restart_on_same_port") {
        return;
    }
    let mut server = ApacheServer::start(ApacheConfig::default()).expect("start");
    let addr = server.connect_string();
    assert_eq!(addr, format!("127.0.0.1:{}", server.port()));
    assert!(server.is_running());
    assert!(server.data_dir().is_dir());
    assert_eq!(mode_of(&srvr(&addr)), Some("standalone"));

    // The configuration is the one asked for.
    let conf = four_letter_word(&addr, "conf", Duration::from_secs(5)).expect("conf");
    for line in ["tickTime=1000", "minSessionTimeout=1000", "maxSessionTimeout=60000"] {
        assert!(conf.lines().any(|l| l == line), "{line:?} not in conf:\n{conf}");
    }

    // A graceful stop keeps the data directory, and nothing answers on the port any more.
    let port = server.port();
    server.stop().expect("stop");
    assert!(!server.is_running());
    assert!(server.data_dir().is_dir());
    assert!(four_letter_word(&addr, "srvr", Duration::from_secs(2)).is_err());

    server.restart().expect("restart after stop");
    assert_eq!(server.port(), port);
    assert!(server.is_running());
    assert_eq!(mode_of(&srvr(&addr)), Some("standalone"));

    // A crash (SIGKILL) followed by a restart also serves again on the same port.
    server.kill().expect("kill");
    assert!(!server.is_running());
    server.restart().expect("restart after kill");
    assert_eq!(mode_of(&srvr(&addr)), Some("standalone"));

    let log = std::fs::read_to_string(server.log_path()).expect("server log");
    assert!(!log.is_empty());

    // Drop removes the directory (unless asked to keep it for debugging).
    let dir = server.data_dir().parent().unwrap().to_path_buf();
    drop(server);
    if std::env::var_os("ZK_TEST_KEEP_DIRS").is_none() {
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
}

#[test]
fn standalone_pause_and_resume() {
    if !apache_or_skip("standalone_pause_and_resume") {
        return;
    }
    let mut server = ApacheServer::start(ApacheConfig::default()).expect("start");
    let addr = server.connect_string();
    server.pause().expect("pause");
    // A frozen server accepts the TCP connection (kernel backlog) but answers nothing.
    let err = four_letter_word(&addr, "srvr", Duration::from_millis(500)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    server.resume().expect("resume");
    assert!(
        wait_until(WAIT, || {
            four_letter_word(&addr, "srvr", Duration::from_secs(2))
                .map(|a| mode_of(&a) == Some("standalone"))
                .unwrap_or(false)
        }),
        "server did not answer again after resume"
    );
}

#[test]
fn cluster_of_three_survives_leader_loss_and_old_leader_rejoins() {
    if !apache_or_skip("cluster_of_three_survives_leader_loss_and_old_leader_rejoins") {
        return;
    }
    let mut cluster = ApacheCluster::start(3, ApacheConfig::default()).expect("start ensemble");
    assert_eq!(cluster.len(), 3);
    assert_eq!(cluster.connect_string().split(',').count(), 3);

    let modes: Vec<Option<String>> = (0..3).map(|i| cluster.mode(i)).collect();
    let leaders = modes.iter().filter(|m| m.as_deref() == Some("leader")).count();
    let followers = modes.iter().filter(|m| m.as_deref() == Some("follower")).count();
    assert_eq!((leaders, followers), (1, 2), "modes after start: {modes:?}");

    let old = cluster.leader().expect("a leader after start");
    assert_eq!(cluster.mode(old).as_deref(), Some("leader"));

    // Crash the leader: the two survivors elect a new one.
    cluster.kill(old).expect("kill leader");
    assert!(!cluster.is_running(old));
    cluster.wait_for_quorum(WAIT).expect("quorum re-forms");
    let new = cluster.leader().expect("a new leader");
    assert_ne!(new, old);
    assert_eq!(cluster.mode(old), None);

    // The old leader comes back as a follower of the new one.
    cluster.restart(old).expect("restart old leader");
    assert_eq!(cluster.mode(old).as_deref(), Some("follower"));
    cluster.wait_for_quorum(WAIT).expect("full quorum");
    assert_eq!(cluster.leader(), Some(new));
    let followers = (0..3)
        .filter(|&i| cluster.mode(i).as_deref() == Some("follower"))
        .count();
    assert_eq!(followers, 2);

    // A graceful stop of a follower keeps the quorum (2 of 3).
    let follower = (0..3).find(|&i| i != new).unwrap();
    cluster.stop(follower).expect("stop follower");
    cluster.wait_for_quorum(WAIT).expect("quorum of two");
    assert_eq!(cluster.leader(), Some(new));
}
