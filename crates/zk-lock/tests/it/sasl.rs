//! SASL: zk-lock with `--sasl digest-md5` on a server speaking DIGEST-MD5
//! (the embedded server, or Apache ZooKeeper with a `DigestLoginModule` JAAS
//! section) (the password from a file or the environment, never the
//! command line, and never passed on to COMMAND), `--acl creator` owned by
//! the `sasl` identity, a refused password (exit 77 within the connect
//! timeout), a server requiring SASL (exit 77, no reconnect loop), and the
//! usage errors of the `--sasl*` options (exit 64).

use std::time::Duration;

use zk_framework::{perms, Acl, CuratorFramework, Error, SaslConfig};
use zk_testing::embedded::ServerSasl;
use zk_testing::TestingServer;

use crate::support::*;

const SECRET: &str = "bob-s3cret-pw";

/// A server speaking DIGEST-MD5 on the backend `ZK_TEST_SERVER` selects.
fn server(required: bool) -> TestingServer {
    TestingServer::start_sasl(ServerSasl::digest(&[("bob", SECRET), ("alice", "alice-pw")]).required(required)).unwrap()
}

fn sasl_client(s: &TestingServer, user: &str, password: &str) -> CuratorFramework {
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
            "10s",
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

/// Curator 5.4 (Java, SASL DIGEST-MD5 from its JAAS `Client` section) and
/// zk-lock (`--sasl digest-md5`) on one lock whose nodes' ACL names `sasl`
/// ids: each queues behind the other and gets the lock after its release,
/// never while it is held; a client without SASL, or with an identity the
/// ACL does not name, is refused (exit 77).
#[test]
fn curator_with_sasl_and_zk_lock_share_a_lock_under_a_sasl_acl() {
    use crate::support::curator::*;
    use zk_testing::wait_until;
    let dir = Scratch::new("curator-sasl");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator SASL interop test: {why}");
            return;
        }
    };
    let server = TestingServer::start_sasl(ServerSasl::digest(&[
        ("alice", "alice-pw"),
        ("bob", SECRET),
        ("mallory", "mallory-pw"),
    ]))
    .unwrap();
    let cs = server.connect_string();
    let t = timing();
    let path = "/locks/curator-sasl";
    let jaas = dir.path("jaas.conf");
    std::fs::write(
        &jaas,
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"alice\"\n  password=\"alice-pw\";\n};\n",
    )
    .unwrap();
    let jaas_flag = format!("-Djava.security.auth.login.config={}", jaas.display());
    let java_holder_sasl = |name: &str, release: &std::path::Path, log: &std::path::Path| {
        let cmd = java_holder(&cp, &cs, path, name, log, release);
        // JVM flags go before the class: rebuild the command with ours first.
        let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
        let mut java = std::process::Command::new("java");
        java.arg(&jaas_flag).args(args).env("ZK_SASL_ACL", "alice,bob");
        java.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        java
    };
    let observer = {
        let c = CuratorFramework::builder()
            .connect_string(cs.clone())
            .sasl(SaslConfig::digest_md5("bob", SECRET).unwrap())
            .build()
            .unwrap();
        c.block_until_connected(t.wait()).unwrap();
        c
    };
    // The lock's path, made once (persistent, not a container that goes when
    // empty): its ACL names the two sasl ids.
    let both = vec![Acl::sasl("alice", perms::ALL), Acl::sasl("bob", perms::ALL)];
    observer
        .create()
        .creating_parents_if_needed()
        .with_acl(both.clone())
        .for_path(path)
        .unwrap();
    let nodes = |c: &CuratorFramework| c.get_children(path).unwrap_or_default();
    let log = dir.path("sections.log");
    let log_has = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);
    let bob_args = |extra: &[&str], script: &str| -> Vec<String> {
        let mut v: Vec<String> = ["--sasl", "digest-md5", "--sasl-user", "bob"]
            .map(String::from)
            .to_vec();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.extend([
            path.to_string(),
            "--".into(),
            "sh".into(),
            "-c".into(),
            script.to_string(),
        ]);
        v
    };

    // 1. Curator (alice) holds; its nodes' ACL names sasl:alice and sasl:bob.
    let release = dir.path("release-1");
    let java_err = dir.path("curator-1.err");
    let java = java_holder_sasl("curator-1", &release, &log)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || log_has("curator-1 START")),
        "the Curator holder never got the lock: {}",
        std::fs::read_to_string(&java_err).unwrap_or_default()
    );
    let held = nodes(&observer);
    assert_eq!(held.len(), 1);
    let (acl, _) = observer
        .zookeeper_client()
        .get_acl(&format!("{path}/{}", held[0]))
        .unwrap();
    assert_eq!(acl, both);
    // No SASL, or an identity the ACL does not name: refused at once.
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", path, "--", "true"]);
    assert_eq!(code, 77, "{stderr}");
    let (code, stderr, _) = run_out_env(
        &cs,
        &[
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "mallory",
            "--timeout",
            "10s",
            path,
            "--",
            "true",
        ],
        "mallory-pw",
    );
    assert_eq!(code, 77, "{stderr}");
    // bob queues behind Curator and runs after its release.
    let args = bob_args(&[], &section_script("zk-lock-1", &log, "0.05"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let waiting = spawn_env(Some(&cs), &args, &[("ZK_LOCK_SASL_PASSWORD", SECRET)]);
    assert!(
        wait_until(t.wait(), || nodes(&observer).len() == 2),
        "zk-lock did not queue behind Curator"
    );
    assert!(!log_has("zk-lock-1 START"));
    std::fs::write(&release, b"").unwrap();
    let (status, stderr) = waiting.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    java_wait(java, &java_err);

    // 2. zk-lock (bob) holds with --acl creator-read: its node is sasl:bob's,
    // readable by others (Curator's waiter reads its predecessor's data, so a
    // node it cannot read would fail it); Curator (alice) queues and gets the
    // lock after.
    let (ready, env_dump, go) = (dir.path("ready"), dir.path("env"), dir.path("go"));
    let script = format!(
        "env > {env}; : > {ready}; while [ ! -e {go} ]; do sleep 0.02; done; {section}",
        ready = ready.display(),
        env = env_dump.display(),
        go = go.display(),
        section = section_script("zk-lock-2", &log, "0.01"),
    );
    let args = bob_args(&["--acl", "creator-read"], &script);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let holder = spawn_env(Some(&cs), &args, &[("ZK_LOCK_SASL_PASSWORD", SECRET)]);
    wait_for_file(&ready);
    assert!(!std::fs::read_to_string(&env_dump).unwrap().contains(SECRET));
    let held = nodes(&observer);
    let (acl, _) = observer
        .zookeeper_client()
        .get_acl(&format!("{path}/{}", held[0]))
        .unwrap();
    assert_eq!(acl, vec![Acl::sasl("bob", perms::ALL), Acl::world(perms::READ)]);
    let release = dir.path("release-2");
    let java_err = dir.path("curator-2.err");
    let java = java_holder_sasl("curator-2", &release, &log)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || nodes(&observer).len() == 2),
        "Curator did not queue behind zk-lock: {:?} {}",
        nodes(&observer),
        std::fs::read_to_string(&java_err).unwrap_or_default()
    );
    assert!(!log_has("curator-2 START"), "Curator got a lock zk-lock holds");
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(t.wait(), || log_has("curator-2 START")),
        "Curator never got the lock after zk-lock's release: {}",
        std::fs::read_to_string(&java_err).unwrap_or_default()
    );
    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);
    assert_exclusive(&sections(&log));
    observer.close();
}
