//! A lost lock kills COMMAND (exit 75); a connection blip only warns.

use std::time::{Duration, Instant};

use zk_testing::{wait_until, TestingServer};

use crate::support::*;

#[test]
fn lost_lock_terminates_command_with_75() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("lost");
    let t = timing();

    // A command that dies of SIGTERM.
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let path = "/locks/lost";
    let r = spawn(Some(&cs), &["--kill-grace", "5s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    take_lock_away(&server, &c, &node);
    let started = Instant::now();
    let (status, stderr) = r.finish(t.wait());
    println!("zk-lock's stderr:\n{stderr}");
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        started.elapsed() < t.scale(Duration::from_secs(20)),
        "took {:?}",
        started.elapsed()
    );
    assert!(stderr.contains("lost"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");

    // A command that ignores SIGTERM gets SIGKILL after --kill-grace.
    let pid_file = dir.path("stubborn.pid");
    let script = format!(
        "trap '' TERM; echo $$ > '{}'; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let path = "/locks/lost-stubborn";
    let r = spawn(Some(&cs), &["--kill-grace", "1s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    take_lock_away(&server, &c, &node);
    let started = Instant::now();
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "SIGKILL before the grace: {stderr}"
    );
    assert!(stderr.contains("SIGKILL"), "{stderr}");
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
}

#[test]
fn connection_blip_warns_and_command_keeps_the_lock() {
    let server = TestingServer::start().unwrap();
    let Some(embedded) = server.embedded() else {
        println!("skipping: dropping connections needs the embedded server");
        return;
    };
    let cs = server.connect_string();
    let dir = Scratch::new("blip");
    let (ready, go) = (dir.path("ready"), dir.path("go"));
    let script = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 5",
        ready.display(),
        go.display()
    );
    let r = spawn(Some(&cs), &["/locks/blip", "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    embedded.drop_connections();
    let stderr_has = |what: &str| std::fs::read_to_string(&r.stderr).unwrap_or_default().contains(what);
    assert!(
        wait_until(timing().wait(), || stderr_has("may be lost")),
        "no Suspended warning"
    );
    assert!(
        wait_until(timing().wait(), || stderr_has("held again")),
        "no Reconnected notice"
    );
    std::fs::write(&go, b"").unwrap();
    let (status, stderr) = r.finish(timing().wait());
    println!("zk-lock's stderr:\n{stderr}");
    // COMMAND ran to its end, under the same lock: its own status, not 75.
    assert_eq!(status.code(), Some(5), "{stderr}");
    assert!(lock_nodes(&client(&server), "/locks/blip").is_empty());
}
