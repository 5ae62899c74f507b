//! A partition: COMMAND stops before the next holder starts, a lock broken
//! during a partition stops COMMAND after the heal, and a grace too long for
//! the session is said at start-up.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zk_testing::{wait_until, TestingServer};

use crate::support::*;

/// Composed faults: the holder is partitioned (its proxy cuts and refuses),
/// an operator breaks its lock with `zk-lock break`, a second zk-lock takes
/// the lock, and the partition heals before the session expires, with the
/// re-registered watches answered late. The reconnect alone never makes the
/// holder say its lock is "held again": its COMMAND is stopped (exit 75,
/// "lost") as soon as the server says the node is gone.
#[test]
fn a_lock_broken_during_a_partition_stops_command_after_the_heal() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let c = client(&server);
    let proxy = zk_testing::proxy::FaultProxy::start(&cs).unwrap();
    let dir = Scratch::new("partition-break");
    let path = "/locks/partition-break";
    let pid_file = dir.path("sleep.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let holder = spawn(
        Some(&proxy.connect_string()),
        &["--session-timeout", "10s", path, "--", "sh", "-c", &script],
    );
    let node = wait_for_single_node(&c, path);
    let pid = wait_for_pid(&pid_file);
    // The holder watches its node (a reconnect re-registers that watch).
    let session = c.check_exists(&node).unwrap().unwrap().ephemeral_owner;
    assert!(wait_until(timing().wait(), || {
        let wchc = server.four_letter_word("wchc").unwrap_or_default();
        wchc.split(&format!("0x{session:x}\n")).nth(1).is_some_and(|rest| {
            rest.lines()
                .take_while(|l| l.starts_with('\t'))
                .any(|l| l.trim() == node)
        })
    }));
    let stderr_has = |what: &str| {
        std::fs::read_to_string(&holder.stderr)
            .unwrap_or_default()
            .contains(what)
    };
    proxy.refuse(true);
    proxy.cut();
    assert!(
        wait_until(timing().wait(), || stderr_has("may be lost")),
        "no Suspended warning"
    );
    let (code, out, stderr) = run_out(Some(&cs), &["break", path, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.starts_with(&format!("deleted {node}")), "{out}");
    // Another zk-lock is granted the broken lock.
    let (code, stderr, _) = run(Some(&cs), &["--timeout", "10s", path, "--", "true"]);
    assert_eq!(code, 0, "the next holder: {stderr}");
    proxy.delay_set_watches(Duration::from_millis(300));
    let healed = Instant::now();
    proxy.refuse(false);
    let (status, stderr) = holder.finish(timing().wait());
    println!(
        "the partitioned holder's zk-lock said ({:?} after the heal):\n{stderr}",
        healed.elapsed()
    );
    assert_eq!(status.code(), Some(75), "the holder learns it lost: {stderr}");
    assert!(stderr.contains("was lost"), "{stderr}");
    assert!(
        !stderr.contains("held again"),
        "a reconnect alone revived the lock: {stderr}"
    );
    assert!(process_gone(&pid), "COMMAND (pid {pid}) still runs");
    // (Whether the watch was re-registered depends on the reply that set it
    // having reached zk-lock before the cut; the proof decides either way.)
    println!("re-registrations held back: {}", proxy.set_watches_delayed());
    assert!(wait_until(timing().wait(), || lock_nodes(&c, path).is_empty()));
}

/// A COMMAND that appends `NAME <unix ns>` to `log` every 5 ms, for `secs`
/// seconds (forever when `None`), flushing each line: the last line of a
/// killed COMMAND is its last moment under the lock. It ignores SIGTERM, the
/// worst case: only the SIGKILL after the grace stops it.
fn stamper(name: &str, log: &Path, secs: Option<f64>) -> Vec<String> {
    let script = "import signal, sys, time\n\
                  signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
                  name, log, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])\n\
                  end = time.monotonic() + secs if secs > 0 else None\n\
                  with open(log, 'a') as f:\n\
                  \x20   while end is None or time.monotonic() < end:\n\
                  \x20       f.write(f'{name} {time.time_ns()}\\n'); f.flush(); time.sleep(0.005)\n";
    vec![
        "python3".into(),
        "-c".into(),
        script.into(),
        name.into(),
        log.display().to_string(),
        secs.unwrap_or(0.0).to_string(),
    ]
}

/// The stamps of `name` in `log`, in ns since the epoch.
fn stamps(log: &Path, name: &str) -> Vec<u128> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(n, _)| *n == name)
        .filter_map(|(_, t)| t.trim().parse().ok())
        .collect()
}

/// `runs` holders, each behind a fault proxy with session timeout `session`,
/// each with a second zk-lock queued on the same path connected directly;
/// every proxy freezes at once (the holders' connections go silent, not
/// closed). Each first COMMAND must have stamped its last before the second
/// COMMAND's first stamp. Returns the gaps.
fn partition_runs(session: &str, runs: usize) -> Vec<Duration> {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new(&format!("partition-{session}"));
    let proxies: Vec<zk_testing::proxy::FaultProxy> = (0..runs)
        .map(|_| zk_testing::proxy::FaultProxy::start(&cs).unwrap())
        .collect();
    let paths: Vec<String> = (0..runs).map(|i| format!("/locks/partition-{session}/{i}")).collect();
    let logs: Vec<PathBuf> = (0..runs).map(|i| dir.path(&format!("stamps-{i}"))).collect();
    let holders: Vec<Run> = (0..runs)
        .map(|i| {
            let pc = proxies[i].connect_string();
            let mut args: Vec<String> = vec![
                "--session-timeout".into(),
                session.into(),
                paths[i].clone(),
                "--".into(),
            ];
            args.extend(stamper("A", &logs[i], None));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            spawn(Some(&pc), &args)
        })
        .collect();
    for log in &logs {
        assert!(
            wait_until(timing().wait(), || !stamps(log, "A").is_empty()),
            "a holder never ran"
        );
    }
    let c = client(&server);
    let nexts: Vec<Run> = (0..runs)
        .map(|i| {
            let mut args: Vec<String> = vec![paths[i].clone(), "--".into()];
            args.extend(stamper("B", &logs[i], Some(0.3)));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            spawn(Some(&cs), &args)
        })
        .collect();
    for p in &paths {
        assert!(
            wait_until(timing().wait(), || lock_nodes(&c, p).len() == 2),
            "the second zk-lock never queued"
        );
    }
    for p in &proxies {
        p.freeze(true);
    }
    let mut gaps = Vec::new();
    for (i, (holder, next)) in holders.into_iter().zip(nexts).enumerate() {
        let (status, stderr) = next.finish(timing().wait() * 2);
        assert_eq!(status.code(), Some(0), "the second zk-lock: {stderr}");
        let (status, holder_err) = holder.finish(timing().wait() * 2);
        assert_eq!(status.code(), Some(75), "the frozen holder: {holder_err}");
        let (a, b) = (stamps(&logs[i], "A"), stamps(&logs[i], "B"));
        let (last_a, first_b) = (*a.iter().max().unwrap(), *b.iter().min().expect("B ran"));
        assert!(
            last_a < first_b,
            "run {i}: the frozen holder's COMMAND stamped {} ms after the next one started\n{holder_err}",
            (last_a - first_b) / 1_000_000
        );
        gaps.push(Duration::from_nanos((first_b - last_a) as u64));
        if i == 0 {
            println!("a frozen holder's zk-lock said:\n{holder_err}");
        }
    }
    for p in &proxies {
        p.freeze(false);
    }
    gaps.sort();
    println!(
        "session {session}, {runs} runs: COMMAND overlap 0; gap from the frozen COMMAND's last stamp to the next \
         COMMAND's first: min {:?}, median {:?}, max {:?}",
        gaps[0],
        gaps[gaps.len() / 2],
        gaps[gaps.len() - 1]
    );
    gaps
}

/// The broken promise of an earlier release: after a freeze (not a close),
/// the holder's COMMAND ran on beside the next holder's for seconds. 20 runs
/// each with the holder's session at 3 s (the default --kill-grace of 5 s is
/// cut to fit, with a warning) and at 10 s.
#[test]
fn a_frozen_holder_stops_command_before_the_next_holder_starts() {
    partition_runs("3s", 20);
    partition_runs("10s", 20);
}

/// A --kill-grace too long for the session is cut at start-up, with a
/// warning that says so.
#[test]
fn a_grace_too_long_for_the_session_is_said_at_start_up() {
    let server = TestingServer::start().unwrap();
    let (code, stderr, _) = run(
        Some(&server.connect_string()),
        &[
            "--session-timeout",
            "3s",
            "--kill-grace",
            "5s",
            "/locks/grace",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("too short for --kill-grace 5s"), "{stderr}");
    let (code, stderr, _) = run(
        Some(&server.connect_string()),
        &[
            "--session-timeout",
            "10s",
            "--kill-grace",
            "2s",
            "/locks/grace",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("too short"), "{stderr}");
}
