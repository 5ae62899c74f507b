//! Inter-process exclusion: several OS processes (this test binary, re-executed
//! as contenders) take one lock in turns; every critical section is logged
//! with wall-clock nanoseconds and checked for overlap, and fencing tokens must
//! increase in grant order.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_recipes::{InterProcessMutex, InterProcessSemaphoreMutex};
use zk_testing::{TestingServer, Timing};

const CHILD_ENV: &str = "ZK_PROCESSES_CHILD";

fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// One contender: `kind connect path iterations hold_ms log`.
fn contend(spec: &str) {
    let parts: Vec<&str> = spec.split('|').collect();
    let [kind, connect, path, iterations, hold_ms, log] = parts[..] else {
        panic!("bad child spec {spec}")
    };
    let iterations: usize = iterations.parse().unwrap();
    let hold = Duration::from_millis(hold_ms.parse().unwrap());
    let t = Timing::from_env();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    client.block_until_connected(t.wait()).unwrap();
    let mut out = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();
    let pid = std::process::id();
    let mut record = |start: u128, end: u128, token: i64| {
        // One write per line, so lines from processes never interleave.
        let line = format!("{pid} {start} {end} {token}\n");
        out.write_all(line.as_bytes()).unwrap();
    };
    match kind {
        "mutex" => {
            let m = InterProcessMutex::new(&client, path).unwrap();
            for _ in 0..iterations {
                let g = m.try_acquire_for(t.wait() * 4).unwrap().expect("acquired");
                let start = now_nanos();
                std::thread::sleep(hold);
                let end = now_nanos();
                record(start, end, g.fencing_token());
                drop(g);
            }
        }
        "semaphore" => {
            let m = InterProcessSemaphoreMutex::new(&client, path).unwrap();
            for _ in 0..iterations {
                let g = m.try_acquire_for(t.wait() * 4).unwrap().expect("acquired");
                let start = now_nanos();
                std::thread::sleep(hold);
                let end = now_nanos();
                record(start, end, g.fencing_token());
                drop(g);
            }
        }
        other => panic!("unknown kind {other}"),
    }
    client.close();
}

/// When run as a child (the env var set by `run_processes`), this test is the
/// contender. Run directly, it checks the contender itself in-process: one
/// contender, two iterations, two well-formed log lines.
#[test]
fn contender_child() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        contend(&spec);
        return;
    }
    let s = TestingServer::start().unwrap();
    let log = std::env::temp_dir().join(format!("zk-processes-self-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    contend(&format!("mutex|{}|/self|2|1|{}", s.connect_string(), log.display()));
    let lines = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert_eq!(lines.lines().count(), 2, "{lines}");
}

struct Section {
    pid: u32,
    start: u128,
    end: u128,
    token: i64,
}

fn run_processes(kind: &str, processes: usize, iterations: usize) {
    let s = TestingServer::start().unwrap();
    let log = std::env::temp_dir().join(format!("zk-processes-{kind}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let exe = std::env::current_exe().unwrap();
    let spec = format!(
        "{kind}|{}|/proc-locks/{kind}|{iterations}|10|{}",
        s.connect_string(),
        log.display()
    );
    let mut children: Vec<_> = (0..processes)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "processes::contender_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, &spec)
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn contender")
        })
        .collect();
    let deadline = Instant::now() + Timing::from_env().wait() * 4;
    for c in &mut children {
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                assert!(status.success(), "a contender failed: {status}");
                break;
            }
            if Instant::now() > deadline {
                for c in &mut children {
                    let _ = c.kill();
                }
                panic!("contenders did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let mut sections: Vec<Section> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Section {
                pid: f[0].parse().unwrap(),
                start: f[1].parse().unwrap(),
                end: f[2].parse().unwrap(),
                token: f[3].parse().unwrap(),
            }
        })
        .collect();
    assert_eq!(
        sections.len(),
        processes * iterations,
        "every critical section was logged"
    );
    let pids: std::collections::HashSet<u32> = sections.iter().map(|s| s.pid).collect();
    assert_eq!(pids.len(), processes, "every process took part");
    sections.sort_by_key(|s| s.start);
    for w in sections.windows(2) {
        assert!(
            w[0].end <= w[1].start,
            "critical sections overlap: pid {} [{}, {}] and pid {} [{}, {}]",
            w[0].pid,
            w[0].start,
            w[0].end,
            w[1].pid,
            w[1].start,
            w[1].end
        );
        assert!(w[0].token < w[1].token, "fencing tokens increase in grant order");
    }
    // Nothing is left behind under the lock path.
    let c = zk_test_support::client(&s);
    assert!(
        zk_testing::wait_until(Timing::from_env().wait(), || zk_test_support::tree(&c, "/proc-locks")
            .iter()
            .all(|p| !p.contains("_c_"))),
        "no lock node is left"
    );
}

#[test]
fn mutex_excludes_across_processes() {
    run_processes("mutex", 4, 10);
}

#[test]
fn semaphore_mutex_excludes_across_processes() {
    run_processes("semaphore", 4, 8);
}

const PAUSED_CHILD_ENV: &str = "ZK_PAUSED_HOLDER_CHILD";

/// The child's side: hold a mutex, then check it every few milliseconds; after
/// a jump in time (the process was stopped), report the very first check.
fn paused_holder(connect: &str) {
    let t = Timing::from_env();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()
        .unwrap();
    client.block_until_connected(t.wait()).unwrap();
    let m = InterProcessMutex::new(&client, "/paused/lock").unwrap();
    let g = m.acquire().unwrap();
    g.check().unwrap();
    let events = g.events();
    // Start the clock before announcing HOLDING: the parent stops this
    // process as soon as it reads the line, and a stop that landed before
    // the first reading of the clock would show no jump at all.
    let mut last = Instant::now();
    println!("HOLDING");
    std::io::stdout().flush().unwrap();
    loop {
        let _ = events.recv_timeout(Duration::from_millis(2));
        let now = Instant::now();
        if now - last > Duration::from_secs(1) {
            let r = g.check();
            println!("AFTER_RESUME ok={} {r:?}", r.is_ok());
            std::io::stdout().flush().unwrap();
            break;
        }
        last = now;
    }
    drop(g);
    client.close();
}

/// A holder whose process is stopped (SIGSTOP, as a long GC-like stall or a
/// debugger would) past its session timeout must not hear `Ok` from `check()`
/// in the moment it resumes, before its connection thread has noticed
/// anything: meanwhile its session expired and another session took the lock.
#[test]
fn a_holder_resumed_after_a_long_pause_is_not_told_it_holds() {
    if let Ok(connect) = std::env::var(PAUSED_CHILD_ENV) {
        return paused_holder(&connect);
    }
    let t = Timing::from_env();
    let s = TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    let child = zk_test_support::ChildTest::spawn(
        "processes::a_holder_resumed_after_a_long_pause_is_not_told_it_holds",
        (PAUSED_CHILD_ENV, &s.connect_string()),
    );
    let pid = child.pid();
    let wait_for = |prefix: &str| child.wait_for(prefix, t.wait() * 2);
    wait_for("HOLDING");
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let stopped = Instant::now();
    // Past the session timeout: the server expires the stopped holder's
    // session, and another session gets the lock.
    let other = CuratorFramework::builder()
        .connect_string(s.connect_string())
        .session_timeout(t.session())
        .build()
        .unwrap();
    other.block_until_connected(t.wait()).unwrap();
    let m = InterProcessMutex::new(&other, "/paused/lock").unwrap();
    let taken = m
        .try_acquire_for(t.session() * 3)
        .unwrap()
        .expect("the lock is free once the session expired");
    let past = Duration::from_millis(1500);
    assert!(zk_testing::wait_until(past * 2, || stopped.elapsed() > t.session() + past));
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    let line = wait_for("AFTER_RESUME");
    assert!(
        line.starts_with("AFTER_RESUME ok=false"),
        "the resumed holder was told: {line}"
    );
    taken.release().unwrap();
    assert!(child.succeeded());
}
