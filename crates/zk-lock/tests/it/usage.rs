//! Usage errors (exit 64), an unreachable server (exit 69), and a missing
//! chroot named with what to do.

use std::process::{Command, Stdio};
use std::time::Duration;

use zk_testing::TestingServer;

use crate::support::*;

#[test]
fn usage_errors_exit_64() {
    let cases: &[&[&str]] = &[
        &[],
        &["/locks/a"],
        &["/locks/a", "echo", "hi"],
        &["/locks/a", "--"],
        &["--", "true"],
        &["locks/a", "--", "true"],
        &["/", "--", "true"],
        &["/locks//a", "--", "true"],
        &["--timeout", "soon", "/locks/a", "--", "true"],
        &["--timeout", "-1", "/locks/a", "--", "true"],
        &["--kill-grace", "5 parsecs", "/locks/a", "--", "true"],
        &["--semaphore", "0", "/locks/a", "--", "true"],
        &["--semaphore", "many", "/locks/a", "--", "true"],
        &["--read", "--write", "/locks/a", "--", "true"],
        &["--write", "--semaphore", "2", "/locks/a", "--", "true"],
        &["--connect", "garbage!!", "/locks/a", "--", "true"],
        &["--connect", "host:99999", "/locks/a", "--", "true"],
        &["--namespace", "a/b", "/locks/a", "--", "true"],
        &["--no-such-option", "/locks/a", "--", "true"],
        &["-E", "300", "/locks/a", "--", "true"],
        &["status"],
        &["status", "locks/a"],
        &["status", "/locks/a", "--", "true"],
        &["break", "/locks/a"],
        &["--read", "status", "/locks/a"],
        &["wait", "/locks/a", "--timeout", "soon"],
        &["status", "--semaphore", "0", "/locks/a"],
    ];
    for args in cases {
        let (code, stderr, _) = run(None, args);
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(stderr.starts_with("zk-lock: "), "{args:?}: {stderr}");
    }
    // --help documents every option, the exit codes and the environment.
    let out = Command::new(zk_lock_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--connect",
        "--timeout",
        "--read",
        "--write",
        "--semaphore",
        "--namespace",
        "--embedded",
        "--features embedded",
        "--kill-grace",
        "--session-timeout",
        "--connect-timeout",
        "--conflict-exit-code",
        "--nonblock",
        "--verbose",
        "ZK_CONNECT",
        "RUST_LOG",
        "EXIT STATUS",
        " 64 ",
        " 69 ",
        " 75 ",
        "126",
        "127",
        "EXAMPLES",
        "zk-lock status PATH",
        "zk-lock break PATH",
        "zk-lock wait PATH",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
    // Each subcommand's help gives its exit statuses.
    for (sub, needles) in [
        ("status", &["--json", "the lock is held", "the lock is free"][..]),
        ("break", &["--node", "--yes", "a node was deleted", "nothing to break"]),
        ("wait", &["--timeout", "the lock is free", "--timeout passed first"]),
    ] {
        let out = Command::new(zk_lock_bin()).args([sub, "--help"]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        for n in needles {
            assert!(help.contains(n), "{sub} --help lacks {n:?}:\n{help}");
        }
    }
}

#[test]
fn unreachable_server_exits_69() {
    // A loopback port with nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cs = format!("127.0.0.1:{port}");
    let (code, stderr, elapsed) = run(Some(&cs), &["--connect-timeout", "1s", "/locks/a", "--", "true"]);
    assert_eq!(code, 69, "{stderr}");
    assert!(elapsed >= Duration::from_millis(900), "gave up after {elapsed:?}");
    assert!(elapsed < timing().scale(Duration::from_secs(15)), "took {elapsed:?}");
    // The same through ZK_CONNECT.
    let r = {
        let mut cmd = Command::new(zk_lock_bin());
        cmd.args(["--connect-timeout", "500ms", "/locks/a", "--", "true"])
            .env("ZK_CONNECT", &cs)
            .stderr(Stdio::null())
            .stdout(Stdio::null());
        cmd.status().unwrap()
    };
    assert_eq!(r.code(), Some(69));
    // The subcommands too: never "free" when nothing could be asked.
    for sub in [
        &["status", "/locks/a"][..],
        &["wait", "/locks/a"],
        &["break", "/locks/a", "--yes"],
    ] {
        let mut args = vec!["--connect-timeout", "300ms"];
        args.extend_from_slice(sub);
        let (code, stderr, elapsed) = run(Some(&cs), &args);
        assert_eq!(code, 69, "{sub:?}: {stderr}");
        assert!(stderr.contains("ZooKeeper unavailable"), "{stderr}");
        assert!(elapsed < timing().scale(Duration::from_secs(15)), "took {elapsed:?}");
    }
}

/// A connect string whose chroot does not exist: exit 69 at once with a
/// message naming the chroot and saying to create it (not a NoNode about a
/// lock node); once it exists, the same run works.
#[test]
fn a_missing_chroot_is_named_with_what_to_do() {
    let server = TestingServer::start().unwrap();
    let cs = format!("{}/no-such-root", server.connect_string());
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", "/locks/x", "--", "true"]);
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.contains("the chroot /no-such-root of the connect string does not exist")
            && stderr.contains("create it")
            && !stderr.contains("-lock-"),
        "{stderr}"
    );
    let c = client(&server);
    c.create().for_path("/no-such-root").unwrap();
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", "/locks/x", "--", "true"]);
    assert_eq!(code, 0, "{stderr}");
    c.close();
}
