//! One leader-election participant of this crate, for the Curator interop proof
//! (`scripts/leader-interop.sh`). It logs its leaderships in the format of
//! `scripts/interop/CuratorLeaderContender.java`, so that
//! `scripts/interop/check_leaders.py` can check Rust and Java participants of one
//! election together.
//!
//! ```text
//! leader_contender CONNECT MODE PATH NAME LOG CONTROL_DIR [HOLD_MIN_MS HOLD_MAX_MS]
//! leader_contender CONNECT count PATH      (prints the number of PATH's children)
//! leader_contender CONNECT break PATH NAME  (an operator's break: deletes the node of
//!                                           participant NAME, prints its path)
//!   MODE         latch (a LeaderLatch with id NAME: leads until killed or closed)
//!                | selector (a LeaderSelector with id NAME, auto-requeue: each
//!                leadership holds a random HOLD_MIN_MS..HOLD_MAX_MS, default 200..800)
//!   CONTROL_DIR  the participant closes normally (and exits 0) when CONTROL_DIR/NAME.close
//!                appears
//! ```
//!
//! JOIN is logged once our node is among the participants. Log lines (appended to LOG, one `write(2)` each on an `O_APPEND` descriptor, times in
//! microseconds since the epoch):
//!
//! ```text
//! NAME JOIN <us> rust latch|selector
//! NAME LEADER <us> <term (czxid)> <node sequence>     (latch: LeaderEvent::Leader)
//! NAME NOTLEADER <us> <reason>                        (latch: any other event)
//! NAME START <us> <term> <node sequence>              (selector: the work begins)
//! NAME END <us>                                       (selector: the work returns)
//! NAME CLOSING <us>                                   (just before close())
//! NAME CLOSED <us>                                    (close() returned)
//! ```
//!
//! `SESSION_MS` (environment, default 4000): the session timeout. `PARTITIONABLE=1`
//! (environment): the participant talks to CONNECT through a fault proxy of its own
//! (`zk_testing::proxy::FaultProxy`); while CONTROL_DIR/NAME.partition exists it is cut off
//! (connections cut, new ones refused), and when the file goes the partition heals, with the
//! participant's re-registered watches held back 300 ms (a slow server). It logs
//! `NAME PARTITIONED <us>` and `NAME HEALED <us>`. Exit status: 0 after a close, 1 on any
//! error, 2 on bad arguments.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{LeaderEvent, LeaderLatch, LeaderSelector, Participant};

type BoxError = Box<dyn std::error::Error>;

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// The log: one unbuffered write per line.
#[derive(Clone)]
struct Log(Arc<Mutex<File>>);

impl Log {
    fn line(&self, line: &str) {
        let bytes = format!("{line}\n");
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write_all(bytes.as_bytes()) {
            eprintln!("log write failed: {e}");
        }
    }
}

/// The sequence number of a sequential node's name (its last 10 digits).
fn sequence(node: &str) -> i64 {
    let digits: String = node.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().unwrap_or(-1)
}

/// Our node among the participants: the one with our id and the given term.
fn our_sequence(participants: &[Participant], id: &str, term: i64) -> i64 {
    participants
        .iter()
        .find(|p| p.id == id && p.fencing_token == term)
        .map_or(-1, |p| sequence(&p.node))
}

/// The sequence of the node under `path` with data `id` and czxid `term`, read directly
/// (a selector's work has no handle on its selector's `participants()`).
fn node_sequence(client: &CuratorFramework, path: &str, id: &str, term: i64) -> i64 {
    let Ok(kids) = client.get_children(path) else {
        return -1;
    };
    for k in kids {
        if let Ok((data, stat)) = client.get_data(&format!("{path}/{k}")) {
            if data == id.as_bytes() && stat.czxid == term {
                return sequence(&k);
            }
        }
    }
    -1
}

/// Waits (30 s at most) until our node is among the participants, so that JOIN means queued.
fn await_joined(participants: impl Fn() -> zk_recipes::Result<Vec<Participant>>, id: &str) -> Result<(), BoxError> {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < end {
        if participants()?.iter().any(|p| p.id == id) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(format!("{id}: not among the participants within 30 s").into())
}

/// An operator's break: deletes the node of participant `name` (its data) under `path`.
fn break_node(connect: &str, path: &str, name: &str) -> Result<String, BoxError> {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.block_until_connected(Duration::from_secs(30))?;
    for k in client.get_children(path)? {
        let node = format!("{path}/{k}");
        if client.get_data(&node).is_ok_and(|(data, _)| data == name.as_bytes()) {
            client.delete().for_path(&node)?;
            client.close();
            return Ok(node);
        }
    }
    client.close();
    Err(format!("no node of {name} under {path}").into())
}

/// With `PARTITIONABLE=1`: a fault proxy to `connect` that CONTROL_DIR/NAME.partition cuts
/// off while it exists (see the module doc); the connect string to use.
fn partitionable(connect: &str, control: PathBuf, name: &str, log: &Log) -> Result<String, BoxError> {
    if std::env::var("PARTITIONABLE").as_deref() != Ok("1") {
        return Ok(connect.to_string());
    }
    let proxy = zk_testing::proxy::FaultProxy::start(connect)?;
    let through = proxy.connect_string();
    let (log, name) = (log.clone(), name.to_string());
    std::thread::spawn(move || {
        let mut cut = false;
        loop {
            let want = control.exists();
            if want && !cut {
                proxy.refuse(true);
                proxy.cut();
                log.line(&format!("{name} PARTITIONED {}", now_us()));
            } else if !want && cut {
                proxy.delay_set_watches(Duration::from_millis(300));
                proxy.refuse(false);
                log.line(&format!("{name} HEALED {}", now_us()));
            }
            cut = want;
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    Ok(through)
}

/// The number of children of `path` (0 when it does not exist).
fn count(connect: &str, path: &str) -> Result<usize, BoxError> {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.block_until_connected(Duration::from_secs(30))?;
    let n = match client.get_children(path) {
        Ok(k) => k.len(),
        Err(zk_framework::Error::NoNode { .. }) => 0,
        Err(e) => return Err(e.into()),
    };
    client.close();
    Ok(n)
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() == 3 && a[1] == "count" {
        match count(&a[0], &a[2]) {
            Ok(n) => println!("{n}"),
            Err(e) => {
                eprintln!("count: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if a.len() == 4 && a[1] == "break" {
        match break_node(&a[0], &a[2], &a[3]) {
            Ok(node) => println!("{node}"),
            Err(e) => {
                eprintln!("break: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if a.len() != 6 && a.len() != 8 {
        eprintln!("usage: leader_contender CONNECT latch|selector PATH NAME LOG CONTROL_DIR [HOLD_MIN_MS HOLD_MAX_MS]");
        std::process::exit(2);
    }
    if let Err(e) = run(&a) {
        eprintln!("{}: {e}", a[3]);
        std::process::exit(1);
    }
}

fn run(a: &[String]) -> Result<(), BoxError> {
    let (connect, mode, path, name) = (&a[0], a[1].as_str(), &a[2], &a[3]);
    let log = Log(Arc::new(Mutex::new(
        OpenOptions::new().create(true).append(true).open(&a[4])?,
    )));
    let close_file = PathBuf::from(&a[5]).join(format!("{name}.close"));
    let hold: (u64, u64) = if a.len() == 8 {
        (a[6].parse()?, a[7].parse()?)
    } else {
        (200, 800)
    };
    let session_ms: u64 = std::env::var("SESSION_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let connect = partitionable(
        connect,
        PathBuf::from(&a[5]).join(format!("{name}.partition")),
        name,
        &log,
    )?;
    let client = CuratorFramework::builder()
        .connect_string(connect.as_str())
        .session_timeout(Duration::from_millis(session_ms))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.block_until_connected(Duration::from_secs(30))?;
    let wait_close = || {
        while !close_file.exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    match mode {
        "latch" => {
            let latch = LeaderLatch::builder(&client, path).id(name.as_str()).build()?;
            let events = latch.events();
            latch.start()?;
            await_joined(|| latch.participants(), name)?;
            log.line(&format!("{name} JOIN {} rust latch", now_us()));
            let latch = Arc::new(latch);
            let (l2, log2, name2) = (latch.clone(), log.clone(), name.clone());
            let watcher = std::thread::spawn(move || {
                for ev in events {
                    let t = now_us();
                    match ev {
                        LeaderEvent::Leader { term } => {
                            // (The stamp is taken first; the node is the latch's own, else
                            // read from the server.)
                            let seq = match l2.node() {
                                Some(node) => sequence(&node),
                                None => l2.participants().map_or(-1, |p| our_sequence(&p, &name2, term)),
                            };
                            log2.line(&format!("{name2} LEADER {t} {term} {seq}"));
                        }
                        other => {
                            let reason = format!("{other:?}").replace(' ', "");
                            log2.line(&format!("{name2} NOTLEADER {t} {reason}"));
                        }
                    }
                }
            });
            wait_close();
            log.line(&format!("{name} CLOSING {}", now_us()));
            latch.close()?;
            log.line(&format!("{name} CLOSED {}", now_us()));
            let _ = watcher.join();
        }
        "selector" => {
            let (log2, name2) = (log.clone(), name.clone());
            let client2 = client.clone();
            let path2 = path.clone();
            let mut rng = (now_us() as u64) ^ (std::process::id() as u64) << 17;
            let selector = LeaderSelector::builder(&client, path, move |leadership| {
                let t = now_us();
                let term = leadership.term().unwrap_or(-1);
                let seq = node_sequence(&client2, &path2, &name2, term);
                log2.line(&format!("{name2} START {t} {term} {seq}"));
                // xorshift: a random hold
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let ms = hold.0 + rng % (hold.1.saturating_sub(hold.0) + 1);
                let _cancelled = leadership.sleep(Duration::from_millis(ms));
                log2.line(&format!("{name2} END {}", now_us()));
            })
            .id(name.as_str())
            .auto_requeue(true)
            .build()?;
            selector.start()?;
            await_joined(|| selector.participants(), name)?;
            log.line(&format!("{name} JOIN {} rust selector", now_us()));
            wait_close();
            log.line(&format!("{name} CLOSING {}", now_us()));
            selector.close()?;
            log.line(&format!("{name} CLOSED {}", now_us()));
        }
        other => return Err(format!("MODE must be latch or selector, got {other}").into()),
    }
    client.close();
    Ok(())
}
