//! SASL: zk-lock with `--sasl digest-md5` on the embedded server speaking
//! DIGEST-MD5 (the password from a file or the environment, never the
//! command line, and never passed on to COMMAND), `--acl creator` owned by
//! the `sasl` identity, a refused password (exit 77 within the connect
//! timeout), a server requiring SASL (exit 77, no reconnect loop), and the
//! usage errors of the `--sasl*` options (exit 64).

use std::time::Duration;

use zk_framework::{perms, Acl, CuratorFramework, Error, SaslConfig};
use zk_testing::embedded::{EmbeddedServer, ServerConfig, ServerSasl};

use crate::support::*;

const SECRET: &str = "bob-s3cret-pw";

fn server(required: bool) -> EmbeddedServer {
    EmbeddedServer::start(ServerConfig {
        sasl: Some(ServerSasl::digest(&[("bob", SECRET), ("alice", "alice-pw")]).required(required)),
        ..ServerConfig::default()
    })
    .unwrap()
}

fn sasl_client(s: &EmbeddedServer, user: &str, password: &str) -> CuratorFramework {
    let c = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .sasl(SaslConfig::digest_md5(user, password).unwrap())
        .build()
        .unwrap();
    c.block_until_connected(Duration::from_secs(10)).unwrap();
    c
}

#[test]
fn a_lock_with_a_digest_password_from_a_file_or_the_environment() {
    let s = server(true);
    let cs = s.connect_string();
    let dir = Scratch::new("sasl");
    let pwfile = dir.path("pw");
    std::fs::write(&pwfile, format!("{SECRET}\n")).unwrap();
    let pw = pwfile.to_str().unwrap();
    let out = dir.path("env");
    // COMMAND must not see the password variable.
    let script = format!(
        "echo \"node=$ZK_LOCK_NODE pw=$ZK_LOCK_SASL_PASSWORD\" > {}",
        out.display()
    );

    let (code, stderr, _) = run(
        Some(&cs),
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "bob",
            "--sasl-password-file",
            pw,
            "--acl",
            "creator",
            "/sasl/file",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let seen = std::fs::read_to_string(&out).unwrap();
    assert!(seen.starts_with("node=/sasl/file/"), "{seen}");

    let r = spawn_env(
        Some(&cs),
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "bob",
            "/sasl/env",
            "--",
            "sh",
            "-c",
            &script,
        ],
        &[("ZK_LOCK_SASL_PASSWORD", SECRET)],
    );
    let (status, stderr) = r.finish(timing().wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    let seen = std::fs::read_to_string(&out).unwrap();
    assert!(
        seen.starts_with("node=/sasl/env/") && seen.trim_end().ends_with("pw="),
        "{seen}"
    );
    assert!(!stderr.contains(SECRET));

    // --acl creator: the parents are bob's sasl identity's alone.
    let bob = sasl_client(&s, "bob", SECRET);
    assert_eq!(
        bob.zookeeper_client().get_acl("/sasl").unwrap().0,
        vec![Acl::sasl("bob", perms::ALL)]
    );
    let alice = sasl_client(&s, "alice", "alice-pw");
    assert!(matches!(alice.get_children("/sasl"), Err(Error::NoAuth { .. })));
    // ... and zk-lock as alice is refused there: permission denied.
    let (code, stderr, _) = run_out_env(
        &cs,
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "alice",
            "--timeout",
            "0",
            "/sasl/file",
            "--",
            "true",
        ],
        "alice-pw",
    );
    assert_eq!(code, 77, "{stderr}");
}

fn run_out_env(cs: &str, args: &[&str], password: &str) -> (i32, String, Duration) {
    let r = spawn_env(Some(cs), args, &[("ZK_LOCK_SASL_PASSWORD", password)]);
    let started = r.started;
    let (status, stderr) = r.finish(timing().wait());
    (status.code().expect("exited"), stderr, started.elapsed())
}

#[test]
fn a_refused_password_is_permission_denied_within_the_connect_timeout() {
    let s = server(false);
    let (code, stderr, elapsed) = run_out_env(
        &s.connect_string(),
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "bob",
            "--connect-timeout",
            "3s",
            "/sasl/refused",
            "--",
            "true",
        ],
        "not-the-password",
    );
    assert_eq!(code, 77, "{stderr}");
    assert!(stderr.contains("SASL") && stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    assert!(
        elapsed <= Duration::from_secs(3) + timing().scale(Duration::from_secs(2)),
        "{elapsed:?}"
    );
}

#[test]
fn a_server_requiring_sasl_refuses_zk_lock_without_it() {
    let s = server(true);
    let (code, stderr, elapsed) = run(
        Some(&s.connect_string()),
        &["--connect-timeout", "3s", "/sasl/none", "--", "true"],
    );
    assert_eq!(code, 77, "{stderr}");
    assert!(stderr.contains("requires SASL"), "{stderr}");
    assert!(
        elapsed <= Duration::from_secs(3) + timing().scale(Duration::from_secs(2)),
        "{elapsed:?}"
    );
}

#[test]
fn sasl_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--sasl", "digest-md5", "/l", "--", "true"], "--sasl-user"),
        (
            &["--sasl", "digest-md5", "--sasl-user", "bob", "/l", "--", "true"],
            "password",
        ),
        (&["--sasl-user", "bob", "/l", "--", "true"], "needs --sasl"),
        (
            &[
                "--sasl",
                "digest-md5",
                "--sasl-user",
                "bob",
                "--sasl-host",
                "h",
                "/l",
                "--",
                "true",
            ],
            "Kerberos option",
        ),
        (
            &["--sasl", "gssapi", "--sasl-user", "bob", "/l", "--", "true"],
            "DIGEST-MD5 option",
        ),
        (&["--sasl", "plain", "/l", "--", "true"], "plain"),
        // There is no way to give the password on the command line.
        (&["--sasl-password", "x", "/l", "--", "true"], "--sasl-password"),
        (
            &["--sasl", "gssapi", "--sasl-keytab", "/k", "/l", "--", "true"],
            "--sasl-principal",
        ),
    ];
    for (args, needle) in cases {
        let (code, stderr, _) = run(Some("127.0.0.1:1"), args);
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // An empty password file.
    let dir = Scratch::new("sasl-usage");
    let empty = dir.path("empty");
    std::fs::write(&empty, "").unwrap();
    let (code, stderr, _) = run(
        Some("127.0.0.1:1"),
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "bob",
            "--sasl-password-file",
            empty.to_str().unwrap(),
            "/l",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("empty"), "{stderr}");
}
