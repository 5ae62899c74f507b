//! The fault campaign (`crates/zk-campaign`): a short bounded run on the
//! embedded server must find no violation and no leaked node, with every fault
//! kind injected; and the checker itself, on synthetic histories, must catch
//! what it claims to catch (and excuse only what it claims to excuse).
//!
//! `ZK_CAMPAIGN_SEED` picks the seed of the short run (default 7);
//! `ZK_TEST_TIMING` stretches its duration and session timeout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use zk_framework::proto::CreateMode;
use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_testing::{wait_until, Backend, TestingServer, Timing};

fn campaign_bin() -> &'static str {
    env!("CARGO_BIN_EXE_zk-campaign")
}

/// A fresh, empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zk-campaign-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the binary with `args`, killing it if it outlives `limit`; returns its
/// exit code and its standard output.
fn run(args: &[String], limit: Duration) -> (i32, String) {
    let mut child = Command::new(campaign_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn zk-campaign");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let mut status = None;
    let finished = wait_until(limit, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
        let out = reader.join().unwrap();
        panic!("zk-campaign {args:?} did not finish within {limit:?}; output so far:\n{out}");
    }
    let out = reader.join().unwrap();
    (status.unwrap().code().unwrap_or(-1), out)
}

fn field<'a>(out: &'a str, name: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(name).map(|rest| rest.trim_start_matches(':').trim()))
}

// ---------------------------------------------------------------------------
// The short campaign.

#[test]
fn short_campaign_on_the_embedded_server_is_clean() {
    let t = Timing::from_env();
    let seed: u64 = std::env::var("ZK_CAMPAIGN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let seconds = t.scale(Duration::from_secs(25)).as_secs_f64();
    let session = t.scale(Duration::from_secs(2));
    let dir = scratch("short");
    let args: Vec<String> = [
        "--seconds",
        &format!("{seconds:.1}"),
        "--session-ms",
        &session.as_millis().to_string(),
        "--seed",
        &seed.to_string(),
        "--workers",
        "4",
        "--threads",
        "4",
        "--hold-ms",
        "5",
        "--think-ms",
        "5",
        "--long-hold-permille",
        "5",
        "--partition",
        "--dir",
        &dir.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (code, out) = run(&args, t.scale(Duration::from_secs(25 + 180)));
    println!("{out}");
    assert_eq!(field(&out, "violations"), Some("0"), "violations:\n{out}");
    assert_eq!(field(&out, "leaked nodes"), Some("0"), "leaks:\n{out}");
    assert_eq!(field(&out, "missing fault kinds"), Some("none"), "faults:\n{out}");
    let faults = field(&out, "faults").expect("a faults line");
    for kind in [
        "partition-expire",
        "instant-expire",
        "cut",
        "drop-all",
        "pause-short",
        "pause-long",
        "restart",
        "kill-worker",
        "break-waiter",
    ] {
        let n: usize = faults
            .split(['(', ',', ')'])
            .find_map(|p| p.trim().strip_prefix(kind).map(|n| n.trim().parse().unwrap_or(0)))
            .unwrap_or(0);
        assert!(n >= 1, "fault {kind} never happened: {faults}");
    }
    let acquisitions: u64 = field(&out, "acquisitions")
        .and_then(|a| a.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(acquisitions > 0, "no acquisition at all:\n{out}");
    // The partitioner kind ran beside the locks: its members claimed items,
    // and every item was claimed again after the last fault.
    let claims: u64 = field(&out, "partition")
        .and_then(|p| p.split(" claims (").next())
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(claims > 0, "no partition claim:\n{out}");
    assert_eq!(field(&out, "leaked party nodes"), Some("0"), "party leaks:\n{out}");
    assert_eq!(code, 0, "exit code:\n{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------
// The checker on synthetic histories.

const P: &str = "P seed=1 backend=embedded workers=1 threads=1 session_ms=1000 acquire_timeout_ms=1000 kinds=cut";

/// One section's lines (thread 0): attempt, grant, section, work done, end.
#[allow(clippy::too_many_arguments)]
fn section(
    pid: u32,
    att: u64,
    lock: &str,
    mode: &str,
    token: i64,
    sid: &str,
    start: u64,
    end: u64,
    told: Option<u64>,
) -> Vec<String> {
    let told_s = told.map_or("-".to_string(), |t| t.to_string());
    let ev = if told.is_some() { "Suspended" } else { "-" };
    let attempt_lock = if mode == "multi" { "multi" } else { lock };
    vec![
        format!("A {pid} 0 {att} {attempt_lock} {mode} {}", start - 10),
        format!("R {pid} 0 {att} {attempt_lock} {mode} {start} acquired - 10"),
        format!("S {pid} 0 {att} {lock} {mode} {token} {sid} {start}"),
        format!("D {pid} 0 {att} {end}"),
        format!("E {pid} 0 {att} {lock} {mode} {token} {sid} {start} {end} {told_s} {ev} - Held Held 1 ok"),
    ]
}

fn worker(pid: u32, body: Vec<Vec<String>>) -> Vec<String> {
    let mut v = vec![format!("H {pid} 0 1")];
    v.extend(body.into_iter().flatten());
    v.push(format!("X {pid} 999999"));
    v
}

/// Writes a history (coordinator lines, then one file per worker) and runs
/// `--check` on it.
fn check(name: &str, coordinator: &[&str], workers: &[Vec<String>]) -> (i32, String) {
    let dir = scratch(&format!("check-{name}"));
    let mut c: Vec<String> = vec![P.to_string(), "F cut 1 2 synthetic".to_string()];
    c.extend(coordinator.iter().map(|s| s.to_string()));
    write_lines(&dir.join("coordinator.log"), &c);
    for (i, w) in workers.iter().enumerate() {
        write_lines(&dir.join(format!("worker-{i}-0.log")), w);
    }
    let out = run(
        &["--check".to_string(), dir.display().to_string()],
        Duration::from_secs(60),
    );
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// [`check`] on holders 10 and 11, with one section (its lines) each.
fn check_two(name: &str, coordinator: &[&str], a: Vec<String>, b: Vec<String>) -> (i32, String) {
    check(name, coordinator, &[worker(10, vec![a]), worker(11, vec![b])])
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut s = lines.join("\n");
    s.push('\n');
    std::fs::write(path, s).unwrap();
}

fn violations(out: &str) -> usize {
    field(out, "violations")
        .and_then(|v| v.parse().ok())
        .expect("a violations line")
}

#[test]
fn checker_accepts_a_clean_history() {
    let (code, out) = check(
        "clean",
        &[],
        &[
            worker(
                10,
                vec![
                    section(10, 1, "/l", "mutex", 5, "a", 100, 200, None),
                    section(10, 2, "/rw", "read", 7, "a", 100, 300, None),
                    section(10, 3, "/l", "multi", 9, "a", 250, 260, None),
                ],
            ),
            worker(
                11,
                vec![
                    section(11, 1, "/l", "mutex", 6, "b", 210, 240, None),
                    // Readers share.
                    section(11, 2, "/rw", "read", 8, "b", 150, 350, None),
                    section(11, 3, "/rw", "write", 10, "b", 400, 500, None),
                ],
            ),
        ],
    );
    assert_eq!(violations(&out), 0, "{out}");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("acquisitions: 6 (mutex 2, read 2, write 1, semaphore 0, multi 1, leader 0)"),
        "{out}"
    );
}

#[test]
fn checker_catches_an_overlap() {
    let (code, out) = check_two(
        "overlap",
        &[],
        section(10, 1, "/l", "mutex", 5, "a", 100, 300, None),
        section(11, 1, "/l", "semaphore", 6, "b", 200, 400, None),
    );
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("VIOLATION: overlap on /l"), "{out}");
    assert_eq!(code, 1);
}

#[test]
fn checker_catches_a_reader_overlapping_a_writer() {
    let (_, out) = check_two(
        "read-write",
        &[],
        section(10, 1, "/rw", "read", 5, "a", 100, 300, None),
        section(11, 1, "/rw", "multi", 6, "b", 200, 400, None),
    );
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("overlap on /rw"), "{out}");
}

#[test]
fn checker_excuses_an_overlap_after_the_holder_was_told() {
    // The first holder heard Suspended at 150, before the second began at 200.
    let (code, out) = check_two(
        "told",
        &[],
        section(10, 1, "/l", "mutex", 5, "a", 100, 300, Some(150)),
        section(11, 1, "/l", "mutex", 6, "b", 200, 400, None),
    );
    assert_eq!(violations(&out), 0, "{out}");
    assert_eq!(code, 0, "{out}");
    // Told only after the overlap began: not excused.
    let (code, out) = check_two(
        "told-late",
        &[],
        section(10, 1, "/l", "mutex", 5, "a", 100, 300, Some(250)),
        section(11, 1, "/l", "mutex", 6, "b", 200, 400, None),
    );
    assert_eq!(violations(&out), 1, "{out}");
    assert_eq!(code, 1);
}

#[test]
fn checker_catches_fencing_tokens_out_of_order() {
    let (code, out) = check_two(
        "tokens",
        &[],
        section(10, 1, "/l", "mutex", 9, "a", 100, 200, None),
        section(11, 1, "/l", "mutex", 4, "b", 300, 400, None),
    );
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("fencing tokens out of order on /l"), "{out}");
    assert_eq!(code, 1);
    // Reads are not fenced.
    let (_, out) = check_two(
        "tokens-reads",
        &[],
        section(10, 1, "/rw", "read", 9, "a", 100, 200, None),
        section(11, 1, "/rw", "read", 4, "b", 300, 400, None),
    );
    assert_eq!(violations(&out), 0, "{out}");
}

#[test]
fn checker_catches_an_unreported_loss() {
    let mut w = worker(10, vec![]);
    w.insert(1, "E 10 0 1 /l mutex 5 a 100 200 - - - Held Lost 1 ok".to_string());
    w.insert(1, "S 10 0 1 /l mutex 5 a 100".to_string());
    w.insert(1, "R 10 0 1 /l mutex 100 acquired - 10".to_string());
    w.insert(1, "A 10 0 1 /l mutex 90".to_string());
    let (code, out) = check("unreported", &[], &[w]);
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("unreported loss on /l"), "{out}");
    assert_eq!(code, 1);
    // Uncertain at grant and never signalled: the same.
    let w = vec![
        "H 10 0 1".to_string(),
        "A 10 0 1 /l mutex 90".to_string(),
        "R 10 0 1 /l mutex 100 acquired - 10".to_string(),
        "E 10 0 1 /l mutex 5 a 100 200 - - - Uncertain Held 1 ok".to_string(),
        "X 10 300".to_string(),
    ];
    let (_, out) = check("uncertain-at-grant", &[], &[w]);
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("at grant"), "{out}");
}

#[test]
fn checker_catches_a_hung_attempt_but_excuses_a_killed_worker() {
    let hung = vec![
        "H 10 0 1".to_string(),
        "A 10 0 1 /l mutex 90".to_string(),
        "X 10 300".to_string(),
    ];
    let (code, out) = check("hung", &[], &[hung]);
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("hung attempt"), "{out}");
    assert_eq!(code, 1);

    // Killed -9 with an attempt in flight and a section open: excused; the
    // open section lasts until the kill, so a grant after it is fine.
    let killed = vec![
        "H 10 0 1".to_string(),
        "A 10 0 1 /l mutex 90".to_string(),
        "R 10 0 1 /l mutex 100 acquired - 10".to_string(),
        "S 10 0 1 /l mutex 5 a 100".to_string(),
        "A 10 1 1 /l2 mutex 90".to_string(),
    ];
    let other = worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 500, 600, None)]);
    let (code, out) = check("killed", &["K 0 10 400"], &[killed.clone(), other]);
    assert_eq!(violations(&out), 0, "{out}");
    assert!(out.contains("in flight at kill -9 1"), "{out}");
    assert_eq!(code, 0, "{out}");
    // A grant before the kill overlaps the dead holder's open section.
    let early = worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 300, 600, None)]);
    let (_, out) = check("killed-early", &["K 0 10 400"], &[killed, early]);
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("overlap on /l"), "{out}");
}

#[test]
fn checker_separates_fenced_overlaps_after_an_instant_expiry() {
    // The server expired session `a` at 150; its holder heard of it at 320,
    // after `b` was granted at 200 with a larger token.
    let stale = vec![
        "H 10 0 1".to_string(),
        "A 10 0 1 /l mutex 90".to_string(),
        "R 10 0 1 /l mutex 100 acquired - 10".to_string(),
        "S 10 0 1 /l mutex 5 a 100".to_string(),
        "E 10 0 1 /l mutex 5 a 100 300 - - 320 Held Lost 0 ZooKeeper.ConnectionLoss".to_string(),
        "X 10 999".to_string(),
    ];
    let fresh = worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 200, 400, None)]);
    let (code, out) = check("fenced", &["I a 150"], &[stale.clone(), fresh.clone()]);
    assert_eq!(violations(&out), 0, "{out}");
    assert!(out.contains("fenced overlaps after an instant expiry: 1"), "{out}");
    assert_eq!(code, 0, "{out}");
    // Without the expiry it is a plain overlap.
    let (_, out) = check("not-fenced", &[], &[stale, fresh]);
    assert_eq!(violations(&out), 1, "{out}");
}

#[test]
fn checker_reports_missing_fault_kinds() {
    let dir = scratch("check-missing");
    write_lines(
        &dir.join("coordinator.log"),
        &[
            "P seed=1 session_ms=1000 acquire_timeout_ms=1000 kinds=cut,restart".to_string(),
            "F cut 1 2 synthetic".to_string(),
        ],
    );
    let (code, out) = run(&["--check".into(), dir.display().to_string()], Duration::from_secs(60));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(field(&out, "missing fault kinds"), Some("restart"), "{out}");
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("verdict: the campaign fell short: fault kinds missing: restart (the library broke no rule"),
        "{out}"
    );
}

/// The exit status says who fell short: 0 clean, 1 the library (a
/// violation), 3 the campaign (a fault kind not made as often as planned),
/// 1 with both (the verdict names both).
#[test]
fn the_exit_status_says_whether_the_library_or_the_campaign_fell_short() {
    let p = "P seed=1 session_ms=1000 acquire_timeout_ms=1000 min_each=1 kinds=cut,composed-random";
    let made = ["F cut 1 2 synthetic", "F composed-random 3 9 cut+restart: [...]"];
    let not_made = [
        "F cut 1 2 synthetic",
        "N composed-random:restart 3 8 the server did not restart",
        "N composed-random 3 9 1 of 2 parts not made (restart): [...]",
    ];
    let clean = worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, None)]);
    let mut hung = clean.clone();
    hung.insert(1, "A 10 0 9 /l mutex 90".to_string());
    for (name, coordinator, w, want, verdict) in [
        ("clean", &made[..], &clean, 0, "verdict: clean"),
        ("library", &made[..], &hung, 1, "verdict: the library fell short: 1 violations, 0 leaked nodes (exit 1)"),
        (
            "campaign",
            &not_made[..],
            &clean,
            3,
            "verdict: the campaign fell short: fault kinds missing: composed-random (the library broke no rule",
        ),
        (
            "both",
            &not_made[..],
            &hung,
            1,
            "verdict: the library fell short: 1 violations, 0 leaked nodes; and the campaign fell short: fault kinds missing: composed-random (exit 1)",
        ),
    ] {
        let dir = scratch(&format!("check-verdict-{name}"));
        let mut c = vec![p.to_string()];
        c.extend(coordinator.iter().map(|l| l.to_string()));
        write_lines(&dir.join("coordinator.log"), &c);
        write_lines(&dir.join("worker-0-0.log"), w);
        let (code, out) = run(&["--check".into(), dir.display().to_string()], Duration::from_secs(60));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(code, want, "{name}: {out}");
        assert!(out.contains(verdict), "{name}: {out}");
        if coordinator.len() == 3 {
            assert!(
                out.contains("  not made: composed-random x1: parts not made: restart x1 (the server did not restart x1)"),
                "{name}: {out}"
            );
        }
    }
}

/// A worker stopped (SIGSTOP) across an attempt: the stopped time is not
/// the attempt's, and only that time; through `--check`, the exit status.
#[test]
fn checker_excuses_exactly_the_time_a_worker_was_stopped_in_a_long_attempt() {
    const MS: u64 = 1_000_000;
    // Timeout 1 s + 4 sessions of 1 s + 10 s: overlong beyond 15 s.
    let attempt = |wait_ms: u64| {
        worker(
            10,
            vec![vec![
                format!("A 10 0 1 /l mutex 100 {}", 1000 * MS),
                format!(
                    "R 10 0 1 /l mutex {} error ZooKeeper.ConnectionLoss {}",
                    100 + wait_ms * MS,
                    wait_ms * MS
                ),
            ]],
        )
    };
    // 72 s, stopped 60 s of them: 12 s of its own.
    let stop = format!("Q 10 {} {}", 100 + 5_000 * MS, 100 + 65_000 * MS);
    let (code, out) = check("stopped-long", &[&stop], &[attempt(72_000)]);
    assert_eq!(violations(&out), 0, "{out}");
    assert_eq!(code, 0, "{out}");
    // 80 s with the same stop: 20 s of its own, overlong.
    let (code, out) = check("stopped-too-long", &[&stop], &[attempt(80_000)]);
    assert_eq!(violations(&out), 1, "{out}");
    assert!(out.contains("overlong attempt"), "{out}");
    assert_eq!(code, 1, "{out}");
}

// ---------------------------------------------------------------------------
// The leak check.

#[test]
fn leak_check_finds_a_leftover_lock_node_and_waits_for_expiring_ones() {
    let t = Timing::from_env();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let client = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    client.block_until_connected(t.wait()).unwrap();
    let leak = "/leaktest/lock/_c_0f0f0f0f-0000-0000-0000-000000000000-lock-0000000001";
    client.create().creating_parents_if_needed().for_path(leak).unwrap();
    let leaks = |wait_ms: u64, limit: Duration| {
        run(
            &[
                "--leaks".into(),
                server.connect_string(),
                "--root".into(),
                "/leaktest".into(),
                "--leak-wait-ms".into(),
                wait_ms.to_string(),
            ],
            limit,
        )
    };
    let (code, out) = leaks(300, t.wait());
    assert_eq!(field(&out, "leaked nodes"), Some("1"), "{out}");
    assert!(out.contains(leak), "{out}");
    assert_eq!(code, 1);

    // An ephemeral lock node of a session that ends while the check waits is
    // not a leak.
    client.delete().for_path(leak).unwrap();
    let holder = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .build()
        .unwrap();
    holder.block_until_connected(t.wait()).unwrap();
    holder
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/leaktest/lock/_c_1-lock-0000000002")
        .unwrap();
    let embedded = server.embedded().unwrap();
    let before = embedded.sessions().len();
    let (code, out) = std::thread::scope(|s| {
        let check = s.spawn(|| leaks(t.wait().as_millis() as u64, t.wait() * 3));
        // Once the checker's own session exists, end the holder's.
        assert!(wait_until(t.wait(), || embedded.sessions().len() > before));
        holder.close();
        check.join().unwrap()
    });
    assert_eq!(field(&out, "leaked nodes"), Some("0"), "{out}");
    assert_eq!(code, 0, "{out}");
    client.close();
}

// ---------------------------------------------------------------------------
// A bug the campaign found (fencing tokens out of order on /campaign/mutex in
// the long profile), reduced to a reproduction.

/// The plain-mutex "handoff without re-listing" shortcut of
/// `LockInternals::wait_loop` (crates/zk-recipes/src/locks/internals.rs) granted the
/// lock on *any* `NodeDeleted` that reaches the wait channel while the current
/// predecessor is the head. The channel lives across loop iterations and every
/// re-listing (after a connection-state wake-up) adds one more watcher on the
/// same predecessor; when that predecessor goes, its extra `NodeDeleted`
/// events stay queued, the waiter re-lists, finds the head as its new
/// predecessor, and the stale event then "grants" the lock while the head
/// still holds it.
///
/// Queue: X (head, holds), Y (waits), B (our InterProcessMutex, watching Y).
/// Connection drops make B watch Y several times; Y goes; B must keep waiting
/// for X. It failed while one channel served every watch; it passes since each
/// watch has a channel of its own.
#[test]
fn a_stale_deletion_event_must_not_grant_a_mutex_while_the_head_holds_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use zk_recipes::InterProcessMutex;

    let t = Timing::from_env();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let cs = server.connect_string();
    let client = || {
        let c = CuratorFramework::builder()
            .connect_string(&cs)
            .session_timeout(t.scale(Duration::from_secs(10)))
            .connection_timeout(t.connection())
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(50), 10))
            .build()
            .unwrap();
        c.block_until_connected(t.wait()).unwrap();
        c
    };
    let other = client();
    let rounds = 20;
    let mut early = Vec::new();
    for round in 0..rounds {
        let path = format!("/stale/m{round}");
        let node = |tag: &str| {
            other
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(CreateMode::EphemeralSequential)
                .for_path(&format!("{path}/_c_00000000-0000-0000-0000-00000000000{tag}-lock-"))
                .unwrap()
        };
        let x = node("x");
        let y = node("y");
        let b = client();
        let zk = b.zookeeper_client();
        let acquired = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (acquired, b, path) = (acquired.clone(), b.clone(), path.clone());
            std::thread::spawn(move || {
                let m = InterProcessMutex::new(&b, &path).unwrap();
                let g = m.try_acquire_for(Duration::from_secs(60)).unwrap();
                acquired.store(g.is_some(), Ordering::SeqCst);
            })
        };
        assert!(wait_until(t.wait(), || zk.registered_watches().data.contains(&y)));
        for _ in 0..3 {
            let before = zk.registered_watches().callbacks;
            server.drop_connections().unwrap();
            // The wait loop woke up, listed again and watches Y once more.
            assert!(wait_until(t.wait(), || b.is_connected()
                && zk.registered_watches().callbacks > before));
        }
        other.delete().for_path(&y).unwrap();
        // B must now watch X (the head); it must not hold the lock.
        let settled = wait_until(t.wait(), || {
            acquired.load(Ordering::SeqCst) || zk.registered_watches().data.contains(&x)
        });
        assert!(settled, "round {round}: B neither acquired nor watched the head");
        if wait_until(t.scale(Duration::from_millis(300)), || acquired.load(Ordering::SeqCst)) {
            early.push(round);
        }
        other.delete().for_path(&x).unwrap();
        waiter.join().unwrap();
        assert!(acquired.load(Ordering::SeqCst));
        b.close();
    }
    other.close();
    assert!(
        early.is_empty(),
        "in rounds {early:?} of {rounds}, the mutex was granted while the head node still held it"
    );
}

/// `Monitor::subscribe` (crates/zk-recipes/src/internals.rs) sends a queued
/// `Lost` to a new subscriber whose lock is already lost, but nothing to one
/// whose lock is already `Uncertain`: a holder that subscribes while the
/// connection is suspended (for example when `acquire` returns just as the
/// connection drops, the campaign's "status at grant") hears nothing until
/// `Reconnected` or `Lost`, and believes it holds the lock meanwhile. Ignored
/// until `subscribe` also sends `Suspended` for `LockStatus::Uncertain`.
#[test]
fn a_loss_receiver_subscribed_while_suspended_hears_suspended() {
    use zk_recipes::{InterProcessMutex, LockEvent, LockStatus};
    let t = Timing::from_env();
    let server = TestingServer::start_backend(Backend::Embedded).unwrap();
    let client = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    client.block_until_connected(t.wait()).unwrap();
    let m = InterProcessMutex::new(&client, "/suspended/a").unwrap();
    let g = m.acquire().unwrap();
    let early = g.events();
    server.stop().unwrap();
    assert!(wait_until(t.wait(), || g.status() == LockStatus::Uncertain));
    assert_eq!(
        early.try_recv(),
        Ok(LockEvent::Suspended),
        "the early subscriber hears it"
    );
    let late = g.events();
    let heard = late.try_recv();
    server.restart().unwrap();
    assert!(wait_until(t.wait(), || g.status() == LockStatus::Held));
    drop(g);
    client.close();
    assert_eq!(
        heard,
        Ok(LockEvent::Suspended),
        "a subscriber of an Uncertain lock must hear Suspended"
    );
}

// ---------------------------------------------------------------------------
// A partition inside a real ensemble (zk_testing's partitionable ensemble):
// what a holder on the minority side is told, against the majority's grant.

fn apache_or_skip(test: &str) -> bool {
    zk_testing::apache::available_or_skip(test)
}

static APACHE: Mutex<()> = Mutex::new(());

/// One Apache ensemble at a time in this file (3 to 4 JVMs each).
fn one_ensemble_at_a_time() -> MutexGuard<'static, ()> {
    APACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A holder whose only server is a follower cut off from the other two: the
/// follower keeps answering it until it leaves its leader (the sync limit),
/// while the majority's leader expires the holder's session on its own clock.
/// The holder checks every 5 ms and must have stopped getting `Ok` before the
/// majority grants the lock to a contender (a positive safety margin). A
/// second holder on the same follower is "paused" (does not look) past the
/// session timeout: when it looks again, still cut off, `check()` must not be
/// `Ok`; and once healed, both locks are lost (their sessions expired).
#[test]
fn a_holder_on_an_isolated_follower_stops_getting_ok_before_the_majority_grants_its_lock() {
    // Sessions longer than the sync limit (5 s): what docs/partitions.md asks for.
    isolated_follower_holder(
        "a_holder_on_an_isolated_follower_stops_getting_ok_before_the_majority_grants_its_lock",
        Duration::from_secs(6),
    );
}

fn isolated_follower_holder(test: &str, session: Duration) {
    use std::time::Instant;
    use zk_recipes::InterProcessMutex;
    use zk_testing::apache::{ApacheCluster, ApacheConfig};

    if !apache_or_skip(test) {
        return;
    }
    let _one = one_ensemble_at_a_time();
    let cluster = ApacheCluster::start_partitionable(3, ApacheConfig::default()).expect("a partitionable ensemble");
    let leader = cluster.leader().expect("a leader");
    let f = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    let at = |nodes: &[usize]| {
        nodes
            .iter()
            .map(|&i| format!("127.0.0.1:{}", cluster.client_port(i)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let client = |cs: String| {
        let c = CuratorFramework::builder()
            .connect_string(cs)
            .session_timeout(session)
            .connection_timeout(Duration::from_secs(5))
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
            .build()
            .unwrap();
        c.block_until_connected(Duration::from_secs(30)).unwrap();
        c
    };
    let minority = client(at(&[f]));
    let majority = client(at(&[leader, other]));
    let held = InterProcessMutex::new(&minority, "/partition/checked").unwrap();
    let paused = InterProcessMutex::new(&minority, "/partition/paused").unwrap();
    let g = held.acquire().unwrap();
    let p = paused.acquire().unwrap();
    assert!(g.check().is_ok() && p.check().is_ok());

    // The contenders wait on the majority side.
    let contend = |path: &'static str| {
        let m = InterProcessMutex::new(&majority, path).unwrap();
        std::thread::spawn(move || {
            let got = m.try_acquire_for(Duration::from_secs(60)).unwrap();
            let at = Instant::now();
            (got.map(|g| g.fencing_token()), at)
        })
    };
    let c1 = contend("/partition/checked");
    let c2 = contend("/partition/paused");
    let cut = Instant::now();
    cluster.isolate(f).unwrap();
    // The holder keeps checking until the contender is granted.
    let (mut last_ok, mut first_bad) = (None, None);
    while !c1.is_finished() && cut.elapsed() < Duration::from_secs(60) {
        let ok = g.check().is_ok();
        let now = Instant::now();
        if ok && first_bad.is_none() {
            last_ok = Some(now);
        } else if !ok && first_bad.is_none() {
            first_bad = Some(now);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (token, granted) = c1.join().unwrap();
    assert!(token.is_some(), "the majority never granted the lock");
    let last_ok = last_ok.expect("Ok at least once after the cut");
    let first_bad = first_bad.expect("the holder was never told");
    let margin = granted.saturating_duration_since(last_ok);
    println!(
        "isolated follower {f}: holder told after {:?}, lock granted on the majority after {:?}: margin {margin:?}",
        first_bad - cut,
        granted - cut
    );
    assert!(last_ok < granted, "check() said Ok after the majority granted the lock");
    assert!(
        first_bad < granted,
        "the holder was told only after the lock changed hands"
    );

    // The paused holder looks again, past its session timeout, still cut off.
    let (token2, granted2) = c2.join().unwrap();
    assert!(token2.is_some(), "the majority never granted the second lock");
    assert!(granted2.duration_since(cut) < Duration::from_secs(30));
    assert!(cut.elapsed() > session);
    assert!(
        p.check().is_err(),
        "a holder paused past its session timeout got Ok on the minority side"
    );
    cluster.heal_links();
    cluster.wait_for_quorum(Duration::from_secs(60)).unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || matches!(
            (g.check(), p.check()),
            (
                Err(zk_recipes::Error::LockLost { .. }),
                Err(zk_recipes::Error::LockLost { .. })
            )
        )),
        "after the heal the holders still do not know their locks are lost: {:?} {:?}",
        g.check(),
        p.check()
    );
    drop(g);
    drop(p);
    minority.close();
    majority.close();
}

// ---------------------------------------------------------------------------
// The reconfigurable ensemble: rolling replacement and the end-of-run
// connection check (docs/campaign.md, "Rolling replacement").

/// The end check on synthetic logs: servers 1-3 replaced by 4-6; a worker
/// that ended on a new member with only new members listed passes, one left
/// with the old servers is the library's failure (exit 1), named with the
/// removed servers; one that ended cleanly without saying where it was is a
/// failure too.
#[test]
fn checker_flags_a_worker_left_on_removed_servers_at_the_end() {
    let coordinator = [
        "EM 10 added 4 127.0.0.1:2001",
        "EM 10 removed 1 127.0.0.1:1001",
        "EM 20 added 5 127.0.0.1:2002",
        "EM 20 removed 2 127.0.0.1:1002",
        "EM 30 added 6 127.0.0.1:2003",
        "EM 30 removed 3 127.0.0.1:1003",
        "EM 40 final 127.0.0.1:2001,127.0.0.1:2002,127.0.0.1:2003",
    ];
    let on_new = |pid: u32| {
        let mut w = worker(pid, vec![]);
        w.insert(
            1,
            format!("EW {pid} 50 1200000 127.0.0.1:2002 127.0.0.1:2003,127.0.0.1:2001,127.0.0.1:2002"),
        );
        w
    };
    let (code, out) = check("rolling-clean", &coordinator, &[on_new(10), on_new(11)]);
    assert_eq!(violations(&out), 0, "{out}");
    assert!(
        out.contains("end-of-run connection check: final members 127.0.0.1:2001,127.0.0.1:2002,127.0.0.1:2003; 2 of 2 workers connected"),
        "{out}"
    );
    assert_eq!(code, 0, "{out}");

    let mut left = worker(11, vec![]);
    left.insert(
        1,
        "EW 11 50 14300000000 - 127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003".into(),
    );
    let (code, out) = check("rolling-left", &coordinator, &[on_new(10), left, worker(12, vec![])]);
    assert!(
        out.contains("VIOLATION: ensemble: worker 11 ended not connected to any server after waiting 14300.0 ms"),
        "{out}"
    );
    assert!(
        out.contains("VIOLATION: ensemble: worker 11's server list at its end names 127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003 (removed servers"),
        "{out}"
    );
    assert!(
        out.contains("VIOLATION: ensemble: worker 12 ended without saying where its client was"),
        "{out}"
    );
    assert!(out.contains("1 of 3 workers connected"), "{out}");
    assert_eq!(violations(&out), 3, "{out}");
    assert_eq!(code, 1, "{out}");
}

/// Runs a short campaign on a reconfigurable 3-node ensemble with `extra`
/// arguments: `rolling-replace` and `composed-rolling` at least once
/// each; returns its exit code and output.
fn rolling_campaign(name: &str, extra: &[&str]) -> (i32, String) {
    let dir = scratch(name);
    let mut args: Vec<String> = [
        "--reconfigurable",
        "--faults",
        "rolling-replace,composed-rolling",
        "--min-each",
        "1",
        "--seconds",
        "5",
        "--max-seconds",
        "90",
        "--session-ms",
        "4000",
        "--acquire-timeout-ms",
        "4000",
        "--workers",
        "2",
        "--threads",
        "3",
        "--seed",
        "4401",
        "--dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(dir.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let (code, out) = run(&args, Duration::from_secs(400));
    println!("{out}");
    let _ = std::fs::remove_dir_all(&dir);
    (code, out)
}

/// Every server of a reconfigurable ensemble replaced on new ports, twice
/// at least (alone, and composed with another kind), while the workers' locks, leaderships and
/// registrations run: no violation, no leak, and every worker ends
/// connected to a member of the final configuration with only final
/// members in its server list. Without the tracker, the same end check
/// fails: the workers are left with the removed servers (exit 1).
#[test]
fn a_rolling_replacement_is_followed_and_the_end_check_catches_a_client_that_does_not() {
    if !apache_or_skip("a_rolling_replacement_is_followed_and_the_end_check_catches_a_client_that_does_not") {
        return;
    }
    let _one = one_ensemble_at_a_time();
    let (code, out) = rolling_campaign("rolling-followed", &["--registration"]);
    assert_eq!(field(&out, "violations"), Some("0"), "violations:\n{out}");
    assert_eq!(field(&out, "leaked nodes"), Some("0"), "leaks:\n{out}");
    assert_eq!(field(&out, "missing fault kinds"), Some("none"), "faults:\n{out}");
    let ensemble = field(&out, "ensemble").expect("an ensemble line");
    let added: usize = ensemble
        .split(" servers added")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        added >= 6,
        "two rolling replacements add 6 servers at least: {ensemble}"
    );
    assert!(
        out.contains("end-of-run connection check: final members ") && out.contains("2 of 2 workers connected"),
        "{out}"
    );
    assert_eq!(code, 0, "exit code:\n{out}");

    let (code, out) = rolling_campaign("rolling-not-followed", &["--no-ensemble-tracker"]);
    assert!(out.contains("WITHOUT following /zookeeper/config"), "{out}");
    assert!(
        out.contains("VIOLATION: ensemble: worker ") && out.contains("(removed servers"),
        "a worker left on the removed servers must be flagged:\n{out}"
    );
    assert!(out.contains("0 of 2 workers connected"), "{out}");
    assert_eq!(code, 1, "exit code:\n{out}");
}
