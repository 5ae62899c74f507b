//! One service of this crate for the reconfiguration interop program
//! (`scripts/reconfig-interop.sh`): a mutex contender and a leader-latch
//! participant on one client that follows the ensemble
//! (`ensemble_tracker(true)`), logging where it is connected every 100 ms,
//! while the ensemble's servers are replaced under it. Its Curator twin is
//! `scripts/interop/CuratorReconfigPeer.java` (same arguments, same lines).
//!
//! ```text
//! reconfig_peer CONNECT LOCK_PATH LATCH_PATH NAME LOCK_LOG LATCH_LOG CONN_LOG CONTROL_DIR
//! ```
//!
//! Until CONTROL_DIR/NAME.close appears, three things run on one client:
//!
//! * the lock: an `InterProcessMutex` on LOCK_PATH, acquired (at most 2 s a
//!   try), held HOLD_MS, released, again and again; LOCK_LOG gets
//!   `NAME START <epoch ns>` and `NAME END <epoch ns>` around each critical
//!   section (the format of `scripts/interop/check_overlap.py`). An error is
//!   logged to CONN_LOG (`NAME ERR <us> lock <error>`) and the loop goes on
//!   after 200 ms.
//! * the election: a `LeaderLatch` with id NAME on LATCH_PATH; LATCH_LOG gets
//!   `NAME JOIN <us> rust latch` once first queued, `NAME LEADER <us> <term>
//!   <seq>` (the term is the node's czxid) and `NAME NOTLEADER <us> <event>`
//!   for every other event (`Uncertain` included), `NAME CLOSING <us>` and
//!   `NAME CLOSED <us>` (the format of `scripts/interop/check_leaders.py`).
//!   A leadership lasts LEAD_MS: then the participant logs `NAME NOTLEADER
//!   <us> rotate`, closes its latch and joins again with a new one, at the
//!   back of the queue (a leadership told while that latch closed ends with
//!   `NAME NOTLEADER <us> retired` once the close returned).
//! * the monitor, every 100 ms, to CONN_LOG:
//!   `NAME CONN <us> server=<host:port|-> list=<server list, comma-separated>
//!   session=<hex> state=<client state> conf=<config version applied, hex|->`
//!   (`connected_to()`, `server_list()`, `ensemble_config()`).
//!
//! Each line is one `write(2)` on an `O_APPEND` descriptor (processes share
//! the logs). Environment: `SESSION_MS` (session timeout, default 6000),
//! `HOLD_MS` (default 50), `LEAD_MS` (default 1000), `TRACKER` (`1`, the default, follows the
//! ensemble; `0` does not), `TRACKER_DELAY_MS` (the tracker's largest random
//! delay, default 1000). Exit status: 0 after the close, 1 on an error
//! outside the loops (no connection within 30 s, a failed close), 2 on bad
//! arguments.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, LeaderEvent, LeaderLatch};

type BoxError = Box<dyn std::error::Error>;

const TRY_ACQUIRE: Duration = Duration::from_secs(2);
const MONITOR_EVERY: Duration = Duration::from_millis(100);

fn since_epoch() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

fn now_us() -> u128 {
    since_epoch().as_micros()
}

fn now_ns() -> u128 {
    since_epoch().as_nanos()
}

/// A log file: one unbuffered write per line.
#[derive(Clone)]
struct Log(Arc<Mutex<File>>);

impl Log {
    fn open(path: &str) -> std::io::Result<Log> {
        Ok(Log(Arc::new(Mutex::new(
            OpenOptions::new().create(true).append(true).open(path)?,
        ))))
    }

    fn line(&self, line: &str) {
        let bytes = format!("{line}\n");
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write_all(bytes.as_bytes()) {
            eprintln!("log write failed: {e}");
        }
    }
}

/// The sequence number of a sequential node's name (its trailing digits).
fn sequence(node: &str) -> i64 {
    let digits: String = node.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().unwrap_or(-1)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Logs where the client is, every 100 ms, until `stop`.
fn monitor(client: &CuratorFramework, name: &str, log: &Log, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let t = now_us();
        let server = client.connected_to().unwrap_or_else(|| "-".into());
        let list = client.server_list().join(",");
        let zk = client.zookeeper_client();
        let conf = client
            .ensemble_config()
            .map_or_else(|| "-".to_string(), |c| format!("{:#x}", c.version()));
        log.line(&format!(
            "{name} CONN {t} server={server} list={list} session={:#x} state={:?} conf={conf}",
            zk.session_id(),
            zk.state()
        ));
        thread::sleep(MONITOR_EVERY);
    }
}

/// Critical sections until `stop`.
fn contend(lock: &InterProcessMutex, name: &str, locks: &Log, conn: &Log, hold: Duration, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match lock.try_acquire_for(TRY_ACQUIRE) {
            Ok(Some(guard)) => {
                locks.line(&format!("{name} START {}", now_ns()));
                thread::sleep(hold);
                locks.line(&format!("{name} END {}", now_ns()));
                drop(guard);
            }
            Ok(None) => {}
            Err(e) => {
                conn.line(&format!(
                    "{name} ERR {} lock {}",
                    now_us(),
                    e.to_string().replace('\n', " ")
                ));
                thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// One latch of the election (a new one after each rotation): its events are logged by a
/// thread of its own until it closes; `leading_since` is when it last became leader.
struct Turn {
    latch: Arc<LeaderLatch>,
    leading_since: Arc<Mutex<Option<Instant>>>,
    events: thread::JoinHandle<()>,
}

fn join_election(client: &CuratorFramework, path: &str, name: &str, log: &Log) -> Result<Turn, BoxError> {
    let latch = Arc::new(LeaderLatch::builder(client, path).id(name).build()?);
    let events = latch.events();
    let leading_since = Arc::new(Mutex::new(None));
    let (l2, log2, n2, since2) = (latch.clone(), log.clone(), name.to_string(), leading_since.clone());
    let events = thread::spawn(move || {
        for ev in events {
            let t = now_us();
            match ev {
                LeaderEvent::Leader { term } => {
                    let seq = l2.node().map_or(-1, |n| sequence(&n));
                    *since2.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                    log2.line(&format!("{n2} LEADER {t} {term} {seq}"));
                }
                other => {
                    *since2.lock().unwrap_or_else(|p| p.into_inner()) = None;
                    let what = format!("{other:?}").replace(' ', "");
                    log2.line(&format!("{n2} NOTLEADER {t} {what}"));
                }
            }
        }
    });
    latch.start()?;
    Ok(Turn {
        latch,
        leading_since,
        events,
    })
}

/// Ends a turn: `NOTLEADER rotate` (when it led) before the close, so that the leadership
/// ends in the log before the node goes; a leadership told after that (while the latch
/// closed) ends with `NOTLEADER retired` once the close returned.
fn retire(turn: Turn, name: &str, log: &Log, conn: &Log) {
    if turn
        .leading_since
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .is_some()
    {
        log.line(&format!("{name} NOTLEADER {} rotate", now_us()));
    }
    if let Err(e) = turn.latch.close() {
        conn.line(&format!("{name} ERR {} latch close {e}", now_us()));
    }
    let _ = turn.events.join();
    if turn.leading_since.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
        log.line(&format!("{name} NOTLEADER {} retired", now_us()));
    }
}

fn run(a: &[String]) -> Result<(), BoxError> {
    let (connect, lock_path, latch_path, name) = (&a[0], &a[1], &a[2], a[3].clone());
    let locks = Log::open(&a[4])?;
    let latch_log = Log::open(&a[5])?;
    let conn = Log::open(&a[6])?;
    let close_file: PathBuf = Path::new(&a[7]).join(format!("{name}.close"));
    let session = Duration::from_millis(env_u64("SESSION_MS", 6000));
    let hold = Duration::from_millis(env_u64("HOLD_MS", 50));
    let lead = Duration::from_millis(env_u64("LEAD_MS", 1000));
    let track = env_u64("TRACKER", 1) != 0;
    let delay = Duration::from_millis(env_u64("TRACKER_DELAY_MS", 1000));

    let client = CuratorFramework::builder()
        .connect_string(connect.as_str())
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
        .ensemble_tracker(track)
        .ensemble_tracker_delay(delay)
        .build()?;
    client.block_until_connected(Duration::from_secs(30))?;
    let stop = AtomicBool::new(false);
    let lock = InterProcessMutex::new(&client, lock_path)?;

    let result = thread::scope(|s| -> Result<(), BoxError> {
        s.spawn(|| monitor(&client, &name, &conn, &stop));
        s.spawn(|| contend(&lock, &name, &locks, &conn, hold, &stop));
        let mut turn = join_election(&client, latch_path, &name, &latch_log)?;
        // JOIN once our node is queued (at most 30 s: it may be mid-reconnection).
        let joined_by = Instant::now() + Duration::from_secs(30);
        while Instant::now() < joined_by && !close_file.exists() {
            if turn
                .latch
                .participants()
                .is_ok_and(|ps| ps.iter().any(|p| p.id == name))
            {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        latch_log.line(&format!("{name} JOIN {} rust latch", now_us()));
        while !close_file.exists() {
            let since = *turn.leading_since.lock().unwrap_or_else(|p| p.into_inner());
            if since.is_some_and(|t| t.elapsed() >= lead) {
                retire(turn, &name, &latch_log, &conn);
                turn = loop {
                    match join_election(&client, latch_path, &name, &latch_log) {
                        Ok(t) => break t,
                        Err(e) => {
                            conn.line(&format!("{name} ERR {} latch {e}", now_us()));
                            thread::sleep(Duration::from_millis(200));
                        }
                    }
                };
            }
            thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::SeqCst);
        latch_log.line(&format!("{name} CLOSING {}", now_us()));
        let closed = turn.latch.close();
        latch_log.line(&format!("{name} CLOSED {}", now_us()));
        let _ = turn.events.join();
        closed?;
        Ok(())
    });
    client.close();
    result
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 8 {
        eprintln!("usage: reconfig_peer CONNECT LOCK_PATH LATCH_PATH NAME LOCK_LOG LATCH_LOG CONN_LOG CONTROL_DIR");
        std::process::exit(2);
    }
    if let Err(e) = run(&a) {
        eprintln!("{}: {e}", a[3]);
        std::process::exit(1);
    }
}
