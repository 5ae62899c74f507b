//! Four-letter words of the embedded server.

use std::io::{Read, Write};
use std::time::Duration;

use crate::support::{Client, WAIT};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};
use zk_testing::fourlw::four_letter_word;

fn word(s: &EmbeddedServer, w: &str) -> String {
    four_letter_word(&s.connect_string(), w, WAIT).expect(w)
}

#[test]
fn basic_words() {
    let s = EmbeddedServer::start(ServerConfig::default()).unwrap();
    assert_eq!(word(&s, "ruok"), "imok");
    assert_eq!(word(&s, "isro"), "rw");
    let srvr = word(&s, "srvr");
    let lines: Vec<&str> = srvr.lines().collect();
    assert!(lines[0].starts_with("Zookeeper version: 3.8.0-embedded"), "{srvr}");
    assert!(lines[1].starts_with("Latency min/avg/max: "));
    assert!(lines.contains(&"Mode: standalone"));
    assert!(lines.contains(&"Node count: 5"), "{srvr}");
    assert!(lines.contains(&"Zxid: 0x0"));
    assert!(lines.contains(&"Connections: 1"), "the 4lw connection counts: {srvr}");
    assert!(lines.contains(&"Outstanding: 0"));
    assert!(srvr.ends_with('\n'));
    let mntr = word(&s, "mntr");
    assert!(mntr.lines().any(|l| l == "zk_server_state\tstandalone"), "{mntr}");
    assert!(mntr.starts_with("zk_version\t3.8.0-embedded"));
    assert!(mntr.lines().any(|l| l == "zk_znode_count\t5"));
    let conf = word(&s, "conf");
    assert!(conf.contains(&format!("clientPort={}\n", s.port())));
    assert!(conf.contains("minSessionTimeout=1000\n") && conf.contains("maxSessionTimeout=60000\n"));
    assert!(word(&s, "envi").starts_with("Environment:\nzookeeper.version=3.8.0-embedded"));
    assert_eq!(word(&s, "gtmk"), "306");
    assert!(word(&s, "dirs").starts_with("datadir_size:"));
}

#[test]
fn words_that_describe_connections_sessions_and_watches() {
    let s = EmbeddedServer::start(ServerConfig::default()).unwrap();
    let addr = s.connect_string();
    let mut a = Client::connect(&addr);
    let mut b = Client::connect(&addr);
    a.create("/x", b"", 0).unwrap();
    a.create("/e", b"", 1).unwrap();
    a.get_data("/x", true).unwrap();
    b.exists("/x", true).unwrap();
    b.exists("/y", true).unwrap_err();
    b.children("/", true).unwrap();
    assert_eq!(word(&s, "wchs"), "2 connections watching 2 paths\nTotal watches:3\n");
    let wchc = word(&s, "wchc");
    assert!(wchc.contains(&format!("0x{:x}\n\t/x\n", a.session_id)), "{wchc}");
    assert!(wchc.contains(&format!("0x{:x}\n\t/x\n\t/y\n", b.session_id)), "{wchc}");
    assert!(wchc.ends_with("\n\n"));
    let wchp = word(&s, "wchp");
    assert!(wchp.contains("/y\n\t0x"), "{wchp}");
    let cons = word(&s, "cons");
    assert!(cons.contains(&format!(",sid=0x{:x},", a.session_id)), "{cons}");
    assert!(cons
        .lines()
        .any(|l| l.starts_with(" /127.0.0.1:") && l.ends_with("(queued=0,recved=1,sent=0)")));
    assert!(cons.ends_with(")\n\n"));
    let stat = word(&s, "stat");
    assert!(stat.contains("Clients:\n /127.0.0.1:"), "{stat}");
    assert!(stat.contains("Mode: standalone\n"));
    assert!(stat.contains("Node count: 7\n"));
    let mntr = word(&s, "mntr");
    for l in [
        "zk_ephemerals_count\t1",
        "zk_global_sessions\t2",
        "zk_watch_count\t4",
        "zk_num_alive_connections\t3",
    ] {
        assert!(mntr.lines().any(|x| x == l), "{l} in {mntr}");
    }
    let dump = word(&s, "dump");
    assert!(dump.starts_with("SessionTracker dump:\n"));
    assert!(
        dump.contains(&format!("Sessions with Ephemerals (1):\n0x{:x}:\n\t/e\n", a.session_id)),
        "{dump}"
    );
}

#[test]
fn whitelist_and_unknown_words() {
    let s = EmbeddedServer::start(ServerConfig {
        four_letter_words: false,
        ..ServerConfig::default()
    })
    .unwrap();
    assert!(word(&s, "srvr").contains("Mode: standalone"));
    assert_eq!(
        word(&s, "ruok"),
        "ruok is not executed because it is not in the whitelist.\n"
    );
    // Unknown 4 bytes are a (too large) frame length: closed with no output.
    let mut t = Client::tcp(&s.connect_string());
    t.write_all(b"abcd").unwrap();
    t.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = Vec::new();
    let _ = t.read_to_end(&mut buf);
    assert!(buf.is_empty());
    // Words split across writes still work.
    let mut t = Client::tcp(&s.connect_string());
    t.write_all(b"sr").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    t.write_all(b"vr").unwrap();
    t.set_read_timeout(Some(WAIT)).unwrap();
    let mut out = String::new();
    t.read_to_string(&mut out).unwrap();
    assert!(out.contains("Mode: standalone"));
}
