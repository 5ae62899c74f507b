//! Exclusion between runs, zero and timed timeouts, the exit status of COMMAND,
//! and read/write sharing.

use std::time::Duration;

use zk_recipes::{InterProcessMutex, InterProcessSemaphoreV2};
use zk_testing::{wait_until, TestingServer};

use crate::support::*;

#[test]
fn runs_on_one_path_never_overlap() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("exclusion");
    let log = dir.path("sections.log");
    let names = ["a", "b", "c"];
    let runs: Vec<Run> = names
        .iter()
        .map(|n| {
            spawn(
                Some(&cs),
                &["/locks/exclusion", "--", "sh", "-c", &section_script(n, &log, "0.2")],
            )
        })
        .collect();
    for r in runs {
        let (status, stderr) = r.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    let all = sections(&log);
    assert_eq!(all.len(), names.len(), "{all:?}");
    assert_exclusive(&all);
    // Every run released its node and closed its session.
    let c = client(&server);
    assert!(lock_nodes(&c, "/locks/exclusion").is_empty());
}

#[test]
fn timeout_zero_and_timeout_give_exit_1_while_held() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("timeouts");
    let marker = dir.path("ran");
    let marker_s = marker.to_str().unwrap();
    let c = client(&server);
    let path = "/locks/timeouts";
    let m = InterProcessMutex::new(&c, path).unwrap();
    let guard = m.acquire().unwrap();

    let (code, stderr, elapsed) = run(Some(&cs), &["--timeout", "0", path, "--", "touch", marker_s]);
    assert_eq!(code, 1, "{stderr}");
    // Exit 1 means held by another (a server that does not answer is 69).
    assert!(
        stderr.contains("was not acquired") && stderr.contains("it is held"),
        "{stderr}"
    );
    assert!(
        elapsed < timing().scale(Duration::from_secs(5)),
        "--timeout 0 took {elapsed:?}"
    );
    assert!(!marker.exists(), "COMMAND ran without the lock");

    let (code, stderr, elapsed) = run(Some(&cs), &["--timeout", "300ms", path, "--", "touch", marker_s]);
    assert_eq!(code, 1, "{stderr}");
    assert!(elapsed >= Duration::from_millis(300), "gave up after {elapsed:?}");
    assert!(!marker.exists(), "COMMAND ran without the lock");
    // -E tells "not acquired" apart from COMMAND's own status.
    let (code, stderr, _) = run(
        Some(&cs),
        &["--timeout", "500ms", "-E", "100", path, "--", "touch", marker_s],
    );
    assert_eq!(code, 100, "{stderr}");
    // The queued nodes of the failed tries are gone; only the holder remains
    // (a node whose create reply came after the deadline is deleted in the
    // background: wait for it, with a deadline).
    assert!(
        wait_until(timing().wait(), || lock_nodes(&c, path).len() == 1),
        "{:?}",
        lock_nodes(&c, path)
    );

    drop(guard);
    run_zero_timeout_until_acquired(&cs, &["-n", path, "--", "touch", marker_s], || marker.exists());
    assert!(marker.exists());

    // A semaphore with 2 leases: both taken → exit 1; one returned → runs.
    let sem_path = "/locks/sem";
    let sem = InterProcessSemaphoreV2::new(&c, sem_path, 2).unwrap();
    let l1 = sem.acquire().unwrap();
    let l2 = sem.acquire().unwrap();
    let (code, stderr, _) = run(
        Some(&cs),
        &["--semaphore", "2", "--timeout", "0", sem_path, "--", "true"],
    );
    assert_eq!(code, 1, "{stderr}");
    drop(l2);
    run_zero_timeout_until_acquired(
        &cs,
        &["--semaphore", "2", "--timeout", "0", sem_path, "--", "true"],
        || false,
    );
    drop(l1);
}

#[test]
fn exit_status_of_command_is_propagated() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("status");
    let p = "/locks/status";
    assert_eq!(run(Some(&cs), &[p, "--", "true"]).0, 0);
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", "exit 7"]).0, 7);
    // Killed by signal N → 128 + N, like a shell.
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", "kill -KILL $$"]).0, 137);
    let (code, stderr, _) = run(Some(&cs), &[p, "--", "zk-lock-test-no-such-command"]);
    assert_eq!(code, 127, "{stderr}");
    assert!(stderr.contains("not found"), "{stderr}");
    let not_exec = dir.path("not-executable.sh");
    std::fs::write(&not_exec, "#!/bin/sh\nexit 0\n").unwrap();
    let (code, stderr, _) = run(Some(&cs), &[p, "--", not_exec.to_str().unwrap()]);
    assert_eq!(code, 126, "{stderr}");
    // COMMAND sees the lock in its environment.
    let env_out = dir.path("env");
    let script = format!(
        "echo \"$ZK_LOCK_PATH $ZK_LOCK_NODE $ZK_LOCK_FENCING_TOKEN\" > '{}'",
        env_out.display()
    );
    assert_eq!(run(Some(&cs), &[p, "--", "sh", "-c", &script]).0, 0);
    let env = std::fs::read_to_string(&env_out).unwrap();
    let fields: Vec<&str> = env.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{env}");
    assert_eq!(fields[0], p);
    assert!(
        fields[1].starts_with("/locks/status/_c_") && fields[1].contains("-lock-"),
        "{env}"
    );
    assert!(fields[2].parse::<i64>().unwrap() > 0, "{env}");
    // Nothing is left behind.
    assert!(lock_nodes(&client(&server), p).is_empty());
    // --embedded needs no server at all (built with the `embedded` feature, off
    // by default: CI runs these tests both ways); without it, --embedded is a
    // usage error that says how to get it.
    #[cfg(feature = "embedded")]
    assert_eq!(run(None, &["--embedded", "/try", "--", "sh", "-c", "exit 3"]).0, 3);
    #[cfg(not(feature = "embedded"))]
    assert_eq!(run(None, &["--embedded", "/try", "--", "sh", "-c", "exit 3"]).0, 64);
    #[cfg(not(feature = "embedded"))]
    assert!(
        run(None, &["--embedded", "/try", "--", "true"])
            .1
            .contains("rebuild with `--features embedded`"),
        "the usage error does not say how to get --embedded"
    );
}

#[test]
fn readers_share_and_a_writer_excludes_them() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("rw");
    let log = dir.path("sections.log");
    let gate = dir.path("gate");
    std::fs::create_dir_all(&gate).unwrap();
    let path = "/locks/rw";
    // A reader logs its start, waits (bounded) until the other reader has
    // started too, which is only possible if they share the lock, holds a
    // little longer and logs its end.
    let reader = |name: &str| {
        format!(
            "echo \"{name} START $(date +%s%N)\" >> '{log}'; touch '{gate}/{name}'; i=0; \
             while [ $(ls '{gate}' | wc -l) -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
             sleep 0.3; echo \"{name} END $(date +%s%N)\" >> '{log}'",
            log = log.display(),
            gate = gate.display()
        )
    };
    let r1 = spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &reader("reader-1")]);
    let r2 = spawn(Some(&cs), &["--read", path, "--", "sh", "-c", &reader("reader-2")]);
    wait_for_file(&gate.join("reader-1"));
    wait_for_file(&gate.join("reader-2"));
    // The writer queues while both readers hold.
    let w = spawn(
        Some(&cs),
        &[
            "--write",
            path,
            "--",
            "sh",
            "-c",
            &section_script("writer", &log, "0.3"),
        ],
    );
    assert!(
        wait_until(timing().wait(), || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("writer START")),
        "the writer never ran"
    );
    // A reader arriving while the writer holds waits for it.
    let r3 = spawn(
        Some(&cs),
        &[
            "--read",
            path,
            "--",
            "sh",
            "-c",
            &section_script("reader-3", &log, "0.05"),
        ],
    );
    for r in [r1, r2, w, r3] {
        let (status, stderr) = r.finish(timing().wait());
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    let all = sections(&log);
    assert_eq!(all.len(), 4, "{all:?}");
    let by = |n: &str| all.iter().find(|s| s.name == n).unwrap().clone();
    let (a, b, w, c) = (by("reader-1"), by("reader-2"), by("writer"), by("reader-3"));
    assert!(overlap(&a, &b), "the readers did not run together: {a:?} {b:?}");
    for r in [&a, &b, &c] {
        assert!(!overlap(r, &w), "a reader overlapped the writer: {r:?} {w:?}");
    }
    assert!(c.start >= w.end, "reader-3 ran before the writer finished");
}
