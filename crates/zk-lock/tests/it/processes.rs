//! The processes: COMMAND dies with zk-lock killed by SIGKILL, the processes
//! COMMAND starts do not outlive the lock, and signals are forwarded to
//! COMMAND.

use std::time::{Duration, Instant};

use zk_recipes::InterProcessMutex;
use zk_testing::{wait_until, TestingServer};

use crate::support::*;

#[test]
fn command_dies_with_zk_lock_killed_by_sigkill() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("pdeathsig");
    let t = timing();

    // COMMAND (a shell: writes its pid, then sleeps long) under a lock; then
    // zk-lock is killed with SIGKILL and cannot clean up.
    let pid_file = dir.path("command.pid");
    let script = format!("echo $$ > '{}'; sleep 600; exit 0", pid_file.display());
    let path = "/locks/pdeathsig";
    let mut r = spawn(
        Some(&cs),
        &["--session-timeout", "60s", path, "--", "sh", "-c", &script],
    );
    wait_for_single_node(&c, path);
    let pid = read_pid(&pid_file);
    assert!(!process_dead(&pid), "COMMAND (pid {pid}) is not running");
    send_signal(r.pid(), "KILL");
    let status = r.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    let killed = Instant::now();
    // COMMAND goes at once, long before the session (60 s) expires and the
    // lock passes to someone else.
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND (pid {pid}) still runs {:?} after zk-lock was killed",
        killed.elapsed()
    );
    assert!(
        killed.elapsed() < t.scale(Duration::from_secs(5)),
        "{:?}",
        killed.elapsed()
    );
}

#[test]
fn processes_commands_start_do_not_outlive_the_lock() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("group");
    let t = timing();

    // COMMAND exits at once, leaving a background job behind: the job is killed
    // before the lock is released.
    let job = dir.path("job.pid");
    let script = format!("sleep 600 & echo $! > '{}'; exit 4", job.display());
    let path = "/locks/group";
    let (code, stderr, _) = run(Some(&cs), &[path, "--", "sh", "-c", &script]);
    assert_eq!(code, 4, "{stderr}");
    let pid = read_pid(&job);
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND's background job (pid {pid}) outlived zk-lock"
    );
    assert!(lock_nodes(&c, path).is_empty());

    // The lock is lost: SIGTERM goes to the whole group, the background job included.
    let job = dir.path("job-lost.pid");
    let ready = dir.path("ready-lost");
    let script = format!(
        "sleep 600 & echo $! > '{}'; touch '{}'; wait",
        job.display(),
        ready.display()
    );
    let r = spawn(Some(&cs), &["--kill-grace", "5s", path, "--", "sh", "-c", &script]);
    let node = wait_for_single_node(&c, path);
    wait_for_file(&ready);
    let pid = read_pid(&job);
    take_lock_away(&server, &c, &node);
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(75), "{stderr}");
    assert!(
        wait_until(t.wait(), || process_dead(&pid)),
        "COMMAND's background job (pid {pid}) outlived the lost lock"
    );
}

#[test]
fn signals_are_forwarded_to_command() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let dir = Scratch::new("signals");
    let t = timing();

    // SIGTERM: the command dies of it; zk-lock exits 143 and releases the lock.
    let path = "/locks/signals";
    let ready = dir.path("ready-term");
    let script = format!("touch '{}'; exec sleep 60", ready.display());
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    assert_eq!(lock_nodes(&c, path).len(), 1);
    send_signal(r.pid(), "TERM");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(lock_nodes(&c, path).is_empty(), "the lock node was left behind");

    // SIGINT sent with kill(1) is forwarded too (a terminal's Ctrl-C reaches the command itself).
    let ready = dir.path("ready-int");
    let script = format!("touch '{}'; exec sleep 60", ready.display());
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    send_signal(r.pid(), "INT");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(130), "{stderr}");

    // SIGUSR1 reaches a command that handles it; zk-lock waits for its own exit status.
    let ready = dir.path("ready-usr1");
    let script = format!(
        "trap 'exit 42' USR1; touch '{}'; while :; do sleep 0.05; done",
        ready.display()
    );
    let r = spawn(Some(&cs), &[path, "--", "sh", "-c", &script]);
    wait_for_file(&ready);
    send_signal(r.pid(), "USR1");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(42), "{stderr}");
    assert!(lock_nodes(&c, path).is_empty());

    // A signal while still waiting for the lock: zk-lock gives up at once (128+N),
    // its queued node goes, and COMMAND never runs.
    let m = InterProcessMutex::new(&c, path).unwrap();
    let guard = m.acquire().unwrap();
    let marker = dir.path("never");
    let mut r = spawn(Some(&cs), &[path, "--", "touch", marker.to_str().unwrap()]);
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 2),
        "zk-lock did not queue"
    );
    assert!(r.is_running());
    send_signal(r.pid(), "TERM");
    let (status, stderr) = r.finish(t.wait());
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(
        wait_until(t.wait(), || lock_nodes(&c, path).len() == 1),
        "the queued node was left behind"
    );
    drop(guard);
    assert!(!marker.exists(), "COMMAND ran");
}
