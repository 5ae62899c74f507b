//! The throw-away MIT KDC (`zk_testing::kdc`): the realm and its principals
//! made at start, tickets from keytabs, a stop that refuses connections, a
//! restart on the same port, a pause that accepts and never answers, and a
//! drop that leaves nothing behind. The krb5 tools run with the KDC's
//! `krb5.conf` in their own environment ([`Kdc::env`]), so these tests share
//! their process.
//!
//! Without the KDC's binaries they print a line and pass, unless
//! `ZK_TEST_REQUIRE_KDC=1` (CI).

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use zk_testing::kdc::{self, Kdc, REALM};

fn klist_keytab(kdc: &Kdc, keytab: &std::path::Path) -> String {
    let out = Command::new("klist")
        .envs(kdc.env())
        .arg("-k")
        .arg(keytab)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_new_kdc_has_the_realm_its_principals_and_their_keytabs() {
    if !kdc::available_or_skip("kdc::a_new_kdc_has_the_realm_its_principals_and_their_keytabs") {
        return;
    }
    let kdc = Kdc::start().unwrap();
    assert_eq!(kdc.realm(), REALM);
    let conf = std::fs::read_to_string(kdc.krb5_conf()).unwrap();
    assert!(conf.contains(&format!("kdc = 127.0.0.1:{}", kdc.port())), "{conf}");
    assert_eq!(kdc.env(), vec![("KRB5_CONFIG", kdc.krb5_conf().as_os_str().to_owned())]);
    for (p, keytab) in [
        ("zookeeper/localhost", kdc.server_keytab("localhost")),
        ("zookeeper/127.0.0.1", kdc.server_keytab("127.0.0.1")),
        ("client", kdc.client_keytab()),
    ] {
        let listed = klist_keytab(&kdc, &keytab);
        assert!(listed.contains(&kdc.principal(p)), "{p}: {listed}");
        // The keytab's key is the KDC's: a ticket comes from it.
        let cache = kdc.kinit(p, None).unwrap();
        assert!(kdc.has_valid_ticket(&cache), "{p}");
    }
    assert!(!kdc.keytab("nobody").exists());
    assert!(!kdc.has_valid_ticket("FILE:/nonexistent"));
    assert!(kdc.kinit("nobody", None).is_err());
}

#[test]
fn principals_are_added_deleted_and_rekeyed_on_request() {
    if !kdc::available_or_skip("kdc::principals_are_added_deleted_and_rekeyed_on_request") {
        return;
    }
    let kdc = Kdc::start().unwrap();
    let alice = kdc.add_principal("alice").unwrap();
    assert_eq!(alice, kdc.keytab("alice@EXAMPLE.TEST"));
    assert!(kdc.has_valid_ticket(&kdc.kinit("alice", None).unwrap()));
    // Twice is an error, with kadmin's words.
    let e = kdc.add_principal("alice").unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    // A new key: the keytab is stale.
    kdc.rotate_key("alice").unwrap();
    assert!(kdc.kinit("alice", None).is_err());
    // Deleted: the KDC no longer knows it, the keytab stays.
    let ghost = kdc.add_principal("ghost").unwrap();
    kdc.delete_principal("ghost").unwrap();
    assert!(ghost.is_file());
    let e = kdc.kinit("ghost", None).unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    assert!(kdc.delete_principal("ghost").is_err());
    assert!(kdc.rotate_key("ghost").is_err());
}

#[test]
fn a_short_ticket_expires() {
    if !kdc::available_or_skip("kdc::a_short_ticket_expires") {
        return;
    }
    let kdc = Kdc::start().unwrap();
    // Times are whole seconds: a 3 s ticket has 2 s left at least.
    let cache = kdc.kinit("client", Some(Duration::from_secs(3))).unwrap();
    assert!(kdc.has_valid_ticket(&cache));
    assert!(zk_testing::wait_until(Duration::from_secs(30), || !kdc.has_valid_ticket(&cache)));
}

#[test]
fn stop_restart_pause_and_drop() {
    if !kdc::available_or_skip("kdc::stop_restart_pause_and_drop") {
        return;
    }
    let kdc = Kdc::start().unwrap();
    let port = kdc.port();
    let dir = kdc.dir().to_path_buf();
    assert!(kdc.is_running());
    kdc.stop().unwrap();
    assert!(!kdc.is_running());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(kdc.kinit("client", None).is_err());
    assert!(kdc.pause().is_err());
    kdc.stop().unwrap(); // a no-op
    kdc.restart().unwrap();
    assert_eq!(kdc.port(), port);
    assert!(kdc.has_valid_ticket(&kdc.kinit("client", None).unwrap()));
    // Paused: the port still accepts (the kernel's backlog), nothing answers.
    kdc.pause().unwrap();
    assert!(kdc.is_running());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
    kdc.resume().unwrap();
    assert!(kdc.has_valid_ticket(&kdc.kinit("client", None).unwrap()));
    // A paused KDC is ended by the drop too, and its directory removed.
    kdc.pause().unwrap();
    assert!(format!("{kdc:?}").contains("EXAMPLE.TEST"));
    drop(kdc);
    if std::env::var_os("ZK_TEST_KEEP_DIRS").is_none() {
        assert!(!dir.exists());
    }
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
