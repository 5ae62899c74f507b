//! Credentials and ACLs: a creator-only ACL keeps other sessions out (exit 77
//! for them), Curator with the same digest credentials interoperates,
//! subcommands refused by a digest ACL, and `--creator-nodes` leaves parents
//! open for sibling locks.

use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_recipes::InterProcessMutex;
use zk_testing::{wait_until, TestingServer};

use crate::support::curator::*;
use crate::support::*;

#[test]
fn credentials_and_a_creator_acl_keep_other_sessions_out() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let t = timing();
    let dir = Scratch::new("auth");
    let path = "/locks/secure";
    let auth = format!("digest:deployer:{SECRET}");
    let owner = client_auth(&server, Some(&format!("deployer:{SECRET}")));

    // The holder: credentials from ZK_LOCK_AUTH, nodes creator-only, debug logs on.
    let (ready, env_dump, go) = (dir.path("ready"), dir.path("env"), dir.path("go"));
    let holder = spawn_env(
        Some(&cs),
        &[
            "-vvv",
            "--acl",
            "creator",
            path,
            "--",
            "sh",
            "-c",
            &holding_script(&ready, &env_dump, &go),
        ],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    wait_for_file(&ready);
    let nodes = lock_nodes(&owner, path);
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let node = format!("{path}/{}", nodes[0]);
    let (acl, _) = owner.zookeeper_client().get_acl(&node).unwrap();
    assert_eq!(
        acl,
        vec![zk_framework::Acl::digest("deployer", SECRET, zk_framework::perms::ALL)]
    );
    // COMMAND does not inherit the credentials.
    let env = std::fs::read_to_string(&env_dump).unwrap();
    assert!(env.contains("ZK_LOCK_PATH=") && !env.contains("ZK_LOCK_AUTH"), "{env}");

    // Without credentials, with other ones, with an unknown scheme: exit 77 at once,
    // even without a timeout (no retry loop, no wait), and nothing is left behind.
    let other = dir.path("other-auth");
    std::fs::write(&other, "digest:intruder:guess\n").unwrap();
    let other = other.to_str().unwrap().to_string();
    for (args, why) in [
        (vec![path, "--", "true"], "not authorised"),
        (vec!["--auth-file", &other, path, "--", "true"], "not authorised"),
        (vec!["--auth", "nope:x", path, "--", "true"], "authentication failed"),
    ] {
        let (code, stderr, elapsed) = run(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(
            stderr.contains("permission denied") && stderr.contains(why),
            "{args:?}: {stderr}"
        );
        // (The process starts, connects, is refused and closes its session: no wait.)
        assert!(elapsed <= t.scale(Duration::from_secs(5)), "{args:?} took {elapsed:?}");
    }
    assert_eq!(lock_nodes(&owner, path), nodes, "an intruder's node was left");

    // With the credentials (from a file), a second zk-lock queues and runs after the holder.
    let file = dir.path("auth");
    std::fs::write(&file, format!("{auth}\n")).unwrap();
    let log = dir.path("sections.log");
    let waiter = spawn(
        Some(&cs),
        &[
            "--auth-file",
            file.to_str().unwrap(),
            "-w",
            "60s",
            path,
            "--",
            "sh",
            "-c",
            &section_script("waiter", &log, "0"),
        ],
    );
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "the second zk-lock did not queue"
    );
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains(SECRET),
        "the holder's debug log shows the secret:\n{stderr}"
    );
    assert!(stderr.contains("acquired"), "no debug log at all? {stderr}");
    let (status, stderr) = waiter.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(sections(&log).len(), 1);
    owner.close();
}

#[test]
fn curator_with_the_same_digest_credentials_interoperates_on_a_creator_only_path() {
    let dir = Scratch::new("curator-auth");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator interop test: {why}");
            return;
        }
    };
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let t = timing();
    let path = "/locks/curator-secure";
    let digest = format!("deployer:{SECRET}");
    let auth = format!("digest:{digest}");
    let owner = client_auth(&server, Some(&digest));
    let log = dir.path("sections.log");
    let log_has = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);

    // 1. Curator (digest credentials, CREATOR_ALL_ACL provider) holds the lock.
    let release = dir.path("release-1");
    let java_err = dir.path("curator-1.err");
    let java = java_holder(&cp, &cs, path, "curator-1", &log, &release)
        .env("ZK_DIGEST", &digest)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || log_has("curator-1 START")),
        "the Curator holder never got the lock"
    );
    let nodes = lock_nodes(&owner, path);
    let (acl, _) = owner
        .zookeeper_client()
        .get_acl(&format!("{path}/{}", nodes[0]))
        .unwrap();
    assert_eq!(
        acl,
        vec![zk_framework::Acl::digest("deployer", SECRET, zk_framework::perms::ALL)]
    );
    // Without the credentials: denied at once.
    let (code, stderr, _) = run(Some(&cs), &[path, "--", "true"]);
    assert_eq!(code, 77, "{stderr}");
    // With them: zk-lock queues behind Curator and runs after its release.
    let waiting = spawn_env(
        Some(&cs),
        &[path, "--", "sh", "-c", &section_script("zk-lock-1", &log, "0.05")],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "zk-lock did not queue behind Curator"
    );
    std::fs::write(&release, b"").unwrap();
    let (status, stderr) = waiting.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    java_wait(java, &java_err);

    // 2. zk-lock (creator ACL) holds; Curator with the credentials queues and gets it after.
    let (ready, env_dump, go) = (dir.path("ready"), dir.path("env"), dir.path("go"));
    let holder = spawn_env(
        Some(&cs),
        &[
            "--acl",
            "creator",
            path,
            "--",
            "sh",
            "-c",
            &holding_script(&ready, &env_dump, &go),
        ],
        &[("ZK_LOCK_AUTH", &auth)],
    );
    wait_for_file(&ready);
    let release = dir.path("release-2");
    let java_err = dir.path("curator-2.err");
    let java = java_holder(&cp, &cs, path, "curator-2", &log, &release)
        .env("ZK_DIGEST", &digest)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait(), || lock_nodes(&owner, path).len() == 2),
        "Curator did not queue behind zk-lock"
    );
    assert!(!log_has("curator-2 START"), "Curator got a lock zk-lock holds");
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(t.wait(), || log_has("curator-2 START")),
        "Curator never got the lock after zk-lock's release"
    );
    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);
    assert_exclusive(&sections(&log));
    owner.close();
}

/// A client with digest credentials `user:pw` whose nodes get `provider`'s ACL.
fn owner_with(
    server: &TestingServer,
    user_pw: &str,
    provider: impl zk_framework::AclProvider + 'static,
) -> CuratorFramework {
    let t = timing();
    let c = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .authorization("digest", user_pw.as_bytes())
        .acl_provider(provider)
        .build()
        .unwrap();
    c.block_until_connected(t.wait()).unwrap();
    c
}

/// `status`, `break` and `wait` on a lock whose nodes have a digest ACL the
/// caller does not pass exit 77, as a run does, with the hint for the way
/// the caller authenticates (none, other digest credentials, an unknown
/// scheme); a read-only ACL lets `status` read and refuses
/// `break`'s delete, naming the node that refused.
#[test]
fn subcommands_refused_by_a_digest_acl_exit_77() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let path = "/acl-ops/private";
    let owner = owner_with(
        &server,
        &format!("owner:{SECRET}"),
        zk_framework::FixedAclProvider::creator_all(),
    );
    let lock = InterProcessMutex::new(&owner, path).unwrap();
    let g = lock.acquire().unwrap();

    let ops: [&[&str]; 4] = [
        &["status", path],
        &["break", path, "--yes"],
        &["wait", path, "-w", "1s"],
        &["--timeout", "2s", path, "--", "true"],
    ];
    for op in ops {
        // No credentials: told to give some. (Every try that expects a
        // refusal waits up to 2 s, not -n: a refusal answers at once, and a
        // zero timeout's 20 ms grace on a loaded machine is honestly "no
        // answer", 69.)
        let (code, out, stderr) = run_out(Some(&cs), op);
        assert_eq!(code, 77, "{op:?}: {out} {stderr}");
        assert!(
            stderr.contains("permission denied")
                && stderr.contains("not authorised")
                && stderr.contains(&format!("{path} refused"))
                && stderr.contains("--auth-file"),
            "{op:?}: {stderr}"
        );
        // Other digest credentials: told these do not pass, not to add --auth.
        let mut args = vec!["--auth", "digest:intruder:guess"];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(
            stderr.contains("does not admit these digest credentials") && !stderr.contains("--auth"),
            "{args:?}: {stderr}"
        );
        // An unknown scheme: AuthFailed, 77 too.
        let mut args = vec!["--auth", "nope:x"];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{args:?}: {stderr}");
        assert!(stderr.contains("authentication failed"), "{args:?}: {stderr}");
    }
    assert_eq!(lock_nodes(&owner, path).len(), 1, "the holder's node is gone");
    g.release().unwrap();

    // Others may read but not delete: status works, break is refused by the
    // lock's node (the delete of its child), with 77.
    let shared = "/acl-ops/readable";
    let owner2 = owner_with(
        &server,
        &format!("owner:{SECRET}"),
        zk_framework::FixedAclProvider::creator_all_read_others(),
    );
    let lock = InterProcessMutex::new(&owner2, shared).unwrap();
    let g = lock.acquire().unwrap();
    let (code, out, stderr) = run_out(Some(&cs), &["status", shared]);
    assert_eq!(code, 0, "readable by others: {out} {stderr}");
    let (code, _, stderr) = run_out(Some(&cs), &["break", shared, "--yes"]);
    assert_eq!(code, 77, "{stderr}");
    assert!(
        stderr.contains(&format!("{shared} refused the delete of a child")),
        "{stderr}"
    );
    assert_eq!(lock_nodes(&owner2, shared).len(), 1);
    g.release().unwrap();
    owner.close();
    owner2.close();
}

/// `--acl creator` makes the missing parents creator-only (as Curator does):
/// a second user cannot lock a sibling path, and the error names the parent
/// that refused. `--acl creator-nodes` keeps the lock's own nodes
/// creator-only and the parents open to others: the sibling lock works, the
/// first user's lock stays closed to the second.
#[test]
fn creator_nodes_leaves_parents_open_for_sibling_locks() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("creator-nodes");
    let alice = format!("digest:alice:{SECRET}");
    let bob = "digest:bob:other-pw";
    let admin = client_auth(&server, Some(&format!("alice:{SECRET}")));

    for (acl, parent) in [("creator", "/team-c"), ("creator-nodes", "/team-n")] {
        let held = format!("{parent}/deploy");
        let sibling = format!("{parent}/other");
        let (ready, go) = (dir.path(&format!("{acl}-ready")), dir.path(&format!("{acl}-go")));
        let hold = format!(
            "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
            ready = ready.display(),
            go = go.display()
        );
        let holder = spawn(
            Some(&cs),
            &["--auth", &alice, "--acl", acl, &held, "--", "sh", "-c", &hold],
        );
        wait_for_file(&ready);

        // Bob on a sibling path under the same parent.
        let (code, stderr, _) = run(
            Some(&cs),
            &["--auth", bob, "--acl", acl, "--timeout", "2s", &sibling, "--", "true"],
        );
        if acl == "creator" {
            assert_eq!(code, 77, "{acl}: {stderr}");
            assert!(
                stderr.contains(&format!("{parent} refused the creation of a child"))
                    && stderr.contains("is a parent of the lock's path")
                    && stderr.contains("--acl creator-nodes"),
                "{acl}: {stderr}"
            );
        } else {
            assert_eq!(code, 0, "{acl}: bob's sibling lock: {stderr}");
            // The parent: alice may do anything, others read and create.
            let (acl_of_parent, _) = admin.zookeeper_client().get_acl(parent).unwrap();
            assert!(
                acl_of_parent.contains(&zk_framework::Acl::world(
                    zk_framework::perms::READ | zk_framework::perms::CREATE
                )) && !acl_of_parent.contains(&zk_framework::Acl::world(zk_framework::perms::ALL)),
                "{acl_of_parent:?}"
            );
            // The lock's own path stays alice's alone.
            let (acl_of_lock, _) = admin.zookeeper_client().get_acl(&held).unwrap();
            assert_eq!(
                acl_of_lock,
                vec![zk_framework::Acl::digest("alice", SECRET, zk_framework::perms::ALL)]
            );
            let (code, stderr, _) = run(Some(&cs), &["--auth", bob, "--timeout", "2s", &held, "--", "true"]);
            assert_eq!(code, 77, "bob on alice's lock: {stderr}");
            assert!(stderr.contains(&format!("{held} refused")), "{stderr}");
        }
        std::fs::write(&go, b"").unwrap();
        let (status, stderr) = holder.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{acl}: {stderr}");
    }
    admin.close();
}
