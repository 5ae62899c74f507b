//! Operating a lock: `status` (holders and waiters in order, a Curator holder,
//! a read/write lock, a leader latch election), `break` and `wait`.

use std::path::Path;
use std::time::{Duration, Instant};

use zk_testing::{wait_until, Backend, TestingServer};

use crate::support::curator::*;
use crate::support::*;

/// A zk-lock holding `path` until `go` appears; `ready` appears once COMMAND
/// runs.
fn gated_holder(cs: &str, path: &str, ready: &Path, go: &Path) -> Run {
    let script = format!(
        "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = ready.display(),
        go = go.display()
    );
    spawn(Some(cs), &[path, "--", "sh", "-c", &script])
}

#[test]
fn status_lists_holders_and_waiters_in_order() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-status");
    let path = "/locks/op-status";

    let (code, out, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 1, "a free lock: {out} {stderr}");
    assert!(out.contains("free"), "{out}");

    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let holder = gated_holder(&cs, path, &ready, &go);
    wait_for_file(&ready);
    let waiter = spawn(Some(&cs), &[path, "--", "true"]);
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 2));

    let (code, json, stderr) = run_out(Some(&cs), &["status", "--json", path]);
    assert_eq!(code, 0, "held: {stderr}");
    assert!(
        json.contains("\"layout\":\"mutex\",\"held\":true,\"holders\":1"),
        "{json}"
    );
    let ps = json_participants(&json);
    assert_eq!(ps.len(), 2, "{json}");
    assert!(ps[0].contains("\"position\":0,\"holds\":true"), "{}", ps[0]);
    assert!(ps[0].contains(&format!("\"pid\":{}", holder.pid())), "{}", ps[0]);
    assert!(ps[0].contains("\"name\":\"zk-lock -- sh\""), "{}", ps[0]);
    assert!(ps[1].contains("\"position\":1,\"holds\":false"), "{}", ps[1]);
    assert!(ps[1].contains(&format!("\"pid\":{}", waiter.pid())), "{}", ps[1]);
    // The fencing token is the node's czxid, as the holder's.
    let node = format!("{path}/{}", lock_nodes(&c, path)[0]);
    let token = c.check_exists(&node).unwrap().unwrap().czxid;
    let first = format!("{path}/{}", {
        let mut v = lock_nodes(&c, path);
        zk_recipes::Driver::MUTEX.sort(&mut v);
        v[0].clone()
    });
    let first_token = c.check_exists(&first).unwrap().unwrap().czxid;
    assert!(
        ps[0].contains(&format!("\"fencing_token\":{first_token}")),
        "{} {token}",
        ps[0]
    );

    // The table, as an operator reads it (connection options after the subcommand too).
    let (code, table, _) = run_out(None, &["status", path, "--connect", &cs]);
    assert_eq!(code, 0);
    println!("{table}");
    assert!(
        table.contains(&format!("{path}: mutex lock, held by 1, 1 waiting")),
        "{table}"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].starts_with("POS"), "{table}");
    assert!(lines[2].starts_with("0") && lines[2].contains("holds"), "{table}");
    assert!(lines[2].contains(&format!("[{}]@", holder.pid())), "{table}");
    assert!(lines[3].starts_with("1") && lines[3].contains("waits"), "{table}");

    std::fs::write(&go, b"").unwrap();
    assert_eq!(holder.finish(timing().wait()).0.code(), Some(0));
    assert_eq!(waiter.finish(timing().wait()).0.code(), Some(0));
    assert_eq!(run_out(Some(&cs), &["status", path]).0, 1);
}

#[test]
fn break_makes_the_holder_lose_and_kill_its_command() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-break");
    let t = timing();
    let path = "/locks/op-break";

    assert_eq!(run_out(Some(&cs), &["break", path, "--yes"]).0, 1, "nothing to break");

    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);

    // Without --yes nothing is deleted.
    let (code, _, stderr) = run_out(Some(&cs), &["break", path]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(run_out(Some(&cs), &["break", path, "--node", "nosuch", "--yes"]).0, 1);
    assert!(c.check_exists(&node).unwrap().is_some());

    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.starts_with(&format!("deleted {node} (mutex, holding, held by zk-lock -- sh")),
        "{out}"
    );
    let broken = Instant::now();
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(75), "the holder learns it lost: {stderr}");
    assert!(stderr.contains("lost"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    println!("holder exited {:?} after the break", broken.elapsed());
    assert!(lock_nodes(&c, path).is_empty());
}

#[test]
fn wait_returns_when_the_holder_releases_and_times_out() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-wait");
    let t = timing();
    let path = "/locks/op-wait";

    let (code, out, _) = run_out(Some(&cs), &["wait", path]);
    assert_eq!((code, out.contains("is free")), (0, true), "{out}");

    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let holder = gated_holder(&cs, path, &ready, &go);
    wait_for_file(&ready);

    // Timeouts: exit 1 (or -E), within the deadline plus process start-up.
    let started = Instant::now();
    let (code, _, stderr) = run_out(Some(&cs), &["wait", path, "--timeout", "300ms"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("still held"), "{stderr}");
    assert!(
        started.elapsed() <= Duration::from_millis(300) + t.scale(Duration::from_secs(3)),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run_out(Some(&cs), &["wait", path, "-w", "0", "-E", "7"]).0, 7);

    // A waiter queues nothing; it returns when the holder releases.
    let waiter = spawn(Some(&cs), &["-v", "wait", path, "--json"]);
    assert!(
        wait_until(t.wait(), || waiter.stderr_now().contains("waiting")),
        "{}",
        waiter.stderr_now()
    );
    assert_eq!(lock_nodes(&c, path).len(), 1, "wait created a node");
    std::fs::write(&go, b"").unwrap();
    let (status, out, stderr) = waiter.finish_out(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        out.starts_with(&format!("{{\"path\":\"{path}\",\"free\":true")),
        "{out}"
    );
    assert_eq!(holder.finish(t.wait()).0.code(), Some(0));
}

#[test]
fn status_shows_a_curator_holder_and_our_waiter_in_order() {
    let dir = Scratch::new("status-curator");
    let cp = match compile_curator_contender(&dir.0) {
        Ok(cp) => cp,
        Err(why) => {
            if std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() == Ok("1") {
                panic!("ZK_TEST_REQUIRE_APACHE=1 but Curator cannot run: {why}");
            }
            println!("skipping the Curator status test: {why}");
            return;
        }
    };
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let t = timing();
    let path = "/locks/status-curator";
    let log = dir.path("sections.log");
    let release = dir.path("release");
    let java_err = dir.path("curator.err");
    let java = java_holder(&cp, &cs, path, "curator", &log, &release)
        .stderr(std::fs::File::create(&java_err).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(t.wait() * 2, || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("curator START")),
        "the Curator holder never got the lock"
    );
    let waiter = spawn(Some(&cs), &[path, "--", "true"]);
    assert!(wait_until(t.wait(), || lock_nodes(&c, path).len() == 2));

    let (code, json, stderr) = run_out(Some(&cs), &["status", "--json", path]);
    assert_eq!(code, 0, "{stderr}");
    let ps = json_participants(&json);
    assert_eq!(ps.len(), 2, "{json}");
    // Curator's node: its data is the host address.
    assert!(ps[0].contains("\"holds\":true"), "{}", ps[0]);
    assert!(ps[0].contains("\"holder\":{\"type\":\"address\""), "{}", ps[0]);
    assert!(ps[1].contains("\"holds\":false"), "{}", ps[1]);
    assert!(ps[1].contains(&format!("\"pid\":{}", waiter.pid())), "{}", ps[1]);
    let (_, table, _) = run_out(Some(&cs), &["status", path]);
    println!("{table}");
    assert!(table.contains("(address only)"), "{table}");

    std::fs::write(&release, b"").unwrap();
    java_wait(java, &java_err);
    assert_eq!(waiter.finish(t.wait()).0.code(), Some(0));
    if server.backend() == Backend::Apache {
        println!("status with a Curator holder checked on Apache ZooKeeper");
    }
}

#[test]
fn break_a_one_lease_semaphore_frees_the_next_contender() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-break-sem");
    let t = timing();
    let path = "/locks/op-break-sem";
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(Some(&cs), &["--semaphore", "1", path, "--", "sh", "-c", &script]);
    let pid = wait_for_pid(&pid_file);
    let done = dir.path("done");
    let next = spawn(
        Some(&cs),
        &["--semaphore", "1", path, "--", "touch", done.to_str().unwrap()],
    );
    // The contender waits in the internal mutex's queue behind the holder.
    assert!(wait_until(t.wait(), || lock_nodes(&c, &format!("{path}/locks")).len() == 2));

    let (code, out, stderr) = run_out(Some(&cs), &["status", "--semaphore", "1", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("semaphore lock, held by 1"), "{out}");

    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    let deleted: Vec<&str> = out.lines().filter(|l| l.starts_with("deleted ")).collect();
    assert_eq!(deleted.len(), 2, "the lease and the internal mutex node: {out}");
    assert!(
        deleted[0].contains("/leases/") && deleted[0].contains("(lease, holding"),
        "{out}"
    );
    assert!(
        deleted[1].contains("/locks/") && deleted[1].contains("(lease-queue"),
        "{out}"
    );
    let (status, stderr) = holder.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    let (status, stderr) = next.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(done.exists());
}

#[test]
fn status_of_a_read_write_lock_shows_both_readers_and_the_queued_writer() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("op-status-rw");
    let path = "/locks/op-status-rw";
    let go = dir.path("go");
    let gate = format!(
        "i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        go = go.display()
    );
    let readers: Vec<Run> = (0..2)
        .map(|_| spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &gate]))
        .collect();
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 2));
    let writer = spawn(Some(&cs), &["--write", path, "--", "true"]);
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).len() == 3));

    let (code, table, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(table.contains("read/write lock, held by 2, 1 waiting"), "{table}");
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows[0].contains("holds  read") && rows[1].contains("holds  read"),
        "{table}"
    );
    assert!(rows[2].contains("waits  write"), "{table}");
    // Two holders: break wants to be told which.
    assert_eq!(run_out(Some(&cs), &["break", path, "--yes"]).0, 64);

    std::fs::write(&go, b"").unwrap();
    for r in readers {
        assert_eq!(r.finish(timing().wait()).0.code(), Some(0));
    }
    assert_eq!(writer.finish(timing().wait()).0.code(), Some(0));
}

/// `status` reads a leader latch election (ours, Curator's layout) and shows
/// the leader; `break` deletes the leader's node, the latch reports the loss
/// and rejoins, and the next participant leads.
#[test]
fn status_and_break_understand_a_leader_latch_election() {
    use zk_recipes::{LeaderEvent, LeaderLatch, NotLeaderReason};
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let (c1, c2) = (client(&server), client(&server));
    let t = timing();
    let path = "/elections/status";
    let a = LeaderLatch::builder(&c1, path).id("alpha").build().unwrap();
    let events = a.events();
    a.start().unwrap();
    assert!(a.await_leadership_for(t.wait()).unwrap());
    let b = LeaderLatch::builder(&c2, path).id("beta").build().unwrap();
    b.start().unwrap();
    assert!(wait_until(t.wait(), || lock_nodes(&c1, path).len() == 2));
    let (code, out, stderr) = run_out(Some(&cs), &["status", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.contains("leader latch election, led by unknown (\"alpha\"), 1 queued"),
        "{out}"
    );
    assert!(
        out.contains("leads") && out.contains("queued") && out.contains("latch"),
        "{out}"
    );
    let (code, _, stderr) = run_out(Some(&cs), &["break", "--yes", path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(b.await_leadership_for(t.wait()).unwrap());
    let mut told = Vec::new();
    while let Ok(ev) = events.recv_timeout(t.wait()) {
        told.push(ev);
        if ev
            == (LeaderEvent::NotLeader {
                reason: NotLeaderReason::NodeDeleted,
            })
        {
            break;
        }
    }
    assert!(told.contains(&LeaderEvent::NotLeader {
        reason: NotLeaderReason::NodeDeleted
    }));
    // alpha rejoined behind beta.
    assert!(wait_until(t.wait(), || lock_nodes(&c1, path).len() == 2));
    assert!(a.check().is_err());
    a.close().unwrap();
    b.close().unwrap();
}

/// `status --group` lists a group's members (ours here; Curator's layout is
/// the same), `status --counter` shows a counter's value as a long and as
/// an int; both say when there is nothing.
#[test]
fn status_shows_a_groups_members_and_a_counters_value() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);

    let (code, out, _) = run_out(Some(&cs), &["status", "--group", "/groups/op"]);
    assert_eq!((code, out.trim()), (1, "/groups/op: group of 0 member(s)"));
    let member = zk_recipes::GroupMember::new(&c, "/groups/op", "w1", b"10.0.0.1".to_vec()).unwrap();
    member.start().unwrap();
    assert!(member.wait_for_registration_for(timing().wait()).unwrap());
    let (code, out, stderr) = run_out(Some(&cs), &["status", "--group", "/groups/op"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(
        out.contains("group of 1 member(s)") && out.contains("w1  10.0.0.1"),
        "{out}"
    );
    let (_, json, _) = run_out(Some(&cs), &["status", "--group", "--json", "/groups/op"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["members"][0]["id"], "w1");
    assert_eq!(v["members"][0]["session_id"], c.session_id());
    member.close().unwrap();

    let (code, out, _) = run_out(Some(&cs), &["status", "--counter", "/counters/op"]);
    assert_eq!((code, out.trim()), (1, "/counters/op: no counter node (reads as 0)"));
    let counter = zk_recipes::DistributedAtomicLong::new(
        &c,
        "/counters/op",
        zk_framework::RetryNTimes::new(3, Duration::from_millis(10)),
    )
    .unwrap();
    assert!(counter.add(41).unwrap().succeeded());
    assert!(counter.increment().unwrap().succeeded());
    let (code, out, stderr) = run_out(Some(&cs), &["status", "--counter", "/counters/op"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(out.contains("long 42, int 0, 8 byte(s), version 1"), "{out}");
    let (_, json, _) = run_out(Some(&cs), &["status", "--counter", "--json", "/counters/op"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (v["long"].as_i64(), v["bytes"].as_str()),
        (Some(42), Some("000000000000002a"))
    );
    // The flags exclude each other and the semaphore's.
    let (code, _, stderr) = run_out(Some(&cs), &["status", "--counter", "--group", "/x"]);
    assert_eq!(code, 64, "{stderr}");
}
