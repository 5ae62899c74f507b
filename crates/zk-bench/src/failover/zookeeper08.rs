//! `--peers zookeeper` in the failover scenario: the `zookeeper` 0.8 crate's
//! own `zookeeper::recipes::leader::LeaderLatch`, each participant on a
//! `zookeeper::ZooKeeper` session of its own.
//!
//! That latch has no event or listener API: only `has_leadership()`,
//! `start()` and `stop()` (which deletes its node; `start` panics unless the
//! latch is new, so a rejoin is a new latch). The next leader is found by
//! polling the other participants' `has_leadership()` from the measuring
//! thread, sleeping [`POLL`] (50 µs asked; about 0.1 ms in practice with
//! Linux's default timer slack) between two rounds: its failover figures
//! include that polling granularity, up to about 0.1 ms.
//!
//! The latch watches its own node and its predecessor with `exists` and,
//! when a watched node is deleted, lists the election path again
//! (`getChildren`) to find out whether it leads: the leader's node is
//! watched by its own session too.
//!
//! A frozen session of this crate does not notice (it has no read timeout:
//! its requests wait for an answer for ever), so the kill failover closes the
//! frozen participant's session in a thread of its own and gives up on it
//! after [`GIVE_UP`] (counted in `abandoned_sessions`), never waiting longer.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_testing::proxy::FaultProxy;
use zookeeper::recipes::leader::LeaderLatch;
use zookeeper::{WatchedEvent, ZooKeeper};

use super::{close_rounds, idle_report, packets, report, Rotation, IDLE_N, KILL_SESSION, SESSION};
use crate::Ctx;

/// The prefix of every key.
const PREFIX: &str = "zookeeper08.";

/// The measuring thread's sleep between two polls of `has_leadership()`.
pub const POLL: Duration = Duration::from_micros(50);

/// How long the kill failover waits for a frozen session's close.
pub const GIVE_UP: Duration = Duration::from_secs(5);

type Result<T> = std::result::Result<T, String>;

/// A connected session with this session timeout (its first request's
/// answer is awaited).
fn session(cs: &str, timeout: Duration) -> Result<Arc<ZooKeeper>> {
    let zk = ZooKeeper::connect(cs, timeout, |_: WatchedEvent| {}).map_err(|e| format!("connect {cs}: {e:?}"))?;
    zk.exists("/", false).map_err(|e| format!("exists /: {e:?}"))?;
    Ok(Arc::new(zk))
}

/// A started latch of participant `i` at `path`.
fn latch(zk: &Arc<ZooKeeper>, path: &str, i: usize) -> Result<LeaderLatch> {
    let l = LeaderLatch::new(zk.clone(), format!("p{i}"), path.to_string());
    l.start().map_err(|e| format!("start: {e:?}"))?;
    Ok(l)
}

/// The participant that leads (polled every millisecond, 60 s at most).
fn leader_of(ls: &[LeaderLatch]) -> Result<usize> {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if let Some(i) = ls.iter().position(LeaderLatch::has_leadership) {
            return Ok(i);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err("no leader within 60 s".into())
}

/// The time from `t0` until a participant other than `old` leads, polled
/// every [`POLL`].
fn next_leader(ls: &[LeaderLatch], old: usize, t0: Instant) -> Result<Duration> {
    let end = t0 + Duration::from_secs(120);
    loop {
        if ls.iter().enumerate().any(|(j, l)| j != old && l.has_leadership()) {
            return Ok(t0.elapsed());
        }
        if Instant::now() > end {
            return Err("no new leader within 120 s".into());
        }
        std::thread::sleep(POLL);
    }
}

/// Waits until the election at `path` has `n` nodes again (listed by `zk`).
fn await_nodes(zk: &ZooKeeper, path: &str, n: usize) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let have = zk
            .get_children(path, false)
            .map_err(|e| format!("getChildren {path}: {e:?}"))?
            .len();
        if have == n {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(format!(
                "the election did not get back to {n} participants (has {have})"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Stops every latch and closes every session.
fn close_all(ls: &[LeaderLatch], zks: &[Arc<ZooKeeper>]) {
    for l in ls {
        let _ = l.stop();
    }
    for zk in zks {
        let _ = zk.close();
    }
}

/// Closes a session (and drops its latch) in a thread of its own: whether
/// it finished within [`GIVE_UP`].
fn close_guarded(l: LeaderLatch, zk: Arc<ZooKeeper>) -> bool {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("zk08-close".into()).spawn(move || {
        let _ = zk.close();
        drop(l);
        drop(zk);
        let _ = tx.send(());
    });
    spawned.is_ok() && rx.recv_timeout(GIVE_UP).is_ok()
}

/// The close and kill failovers and the idle cost of this crate's latch.
pub fn run(x: &Ctx) -> Result<()> {
    close(x)?;
    if x.o.failover_kills > 0 {
        kill(x)?;
    }
    if x.o.idle_seconds > 0.0 {
        idle(x)?;
    }
    Ok(())
}

/// This crate's latches in rotation, one session each.
struct Latches<'a> {
    ls: Vec<LeaderLatch>,
    zks: &'a [Arc<ZooKeeper>],
    path: &'a str,
}

impl Rotation for Latches<'_> {
    fn leader(&self) -> Result<usize> {
        leader_of(&self.ls)
    }

    fn leave(&mut self, i: usize) -> Result<()> {
        self.ls[i].stop().map_err(|e| format!("stop: {e:?}"))
    }

    fn next_leader(&self, old: usize, t0: Instant) -> Result<Duration> {
        next_leader(&self.ls, old, t0)
    }

    fn rejoin(&mut self, i: usize) -> Result<()> {
        self.ls[i] = latch(&self.zks[i], self.path, i)?;
        await_nodes(&self.zks[i], self.path, self.ls.len())
    }
}

fn close(x: &Ctx) -> Result<()> {
    let n = usize::from(x.o.failover_n);
    let path = "/bench/failover/zookeeper08-close";
    let zks = (0..n).map(|_| session(&x.cs, SESSION)).collect::<Result<Vec<_>>>()?;
    let mut ls = Vec::new();
    for (i, zk) in zks.iter().enumerate() {
        ls.push(latch(zk, path, i)?);
        await_nodes(&zks[0], path, i + 1)?;
    }
    let mut r = Latches { ls, zks: &zks, path };
    let done = close_rounds(x, PREFIX, path, "stop_call", &mut r);
    close_all(&r.ls, &zks);
    done
}

fn kill(x: &Ctx) -> Result<()> {
    let n = usize::from(x.o.failover_n);
    let path = "/bench/failover/zookeeper08-kill";
    let target = x.cs.split(',').next().unwrap_or(&x.cs);
    let proxies = (0..n)
        .map(|_| FaultProxy::start(target).map_err(|e| format!("proxy: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let mut zks = proxies
        .iter()
        .map(|p| session(&p.connect_string(), KILL_SESSION))
        .collect::<Result<Vec<_>>>()?;
    let mut ls = Vec::new();
    for (i, zk) in zks.iter().enumerate() {
        ls.push(latch(zk, path, i)?);
        await_nodes(&zks[0], path, i + 1)?;
    }
    let (mut v, mut abandoned) = (Vec::new(), 0);
    for _ in 0..x.o.failover_kills {
        let i = leader_of(&ls)?;
        proxies[i].freeze(true);
        let t0 = Instant::now();
        let next = next_leader(&ls, i, t0);
        proxies[i].freeze(false);
        v.push(next?);
        // The frozen one's session expired on the server; its client may
        // never notice: a new session and a new latch in its place.
        let zk = session(&proxies[i].connect_string(), KILL_SESSION)?;
        let l = latch(&zk, path, i)?;
        let old_l = std::mem::replace(&mut ls[i], l);
        let old_zk = std::mem::replace(&mut zks[i], zk);
        if !close_guarded(old_l, old_zk) {
            abandoned += 1;
        }
        await_nodes(&zks[i], path, n)?;
    }
    let key = format!("kill_n{n}_session_{}ms", KILL_SESSION.as_millis());
    report(PREFIX, &key, v);
    println!("{PREFIX}failover.{key}.abandoned_sessions={abandoned}");
    close_all(&ls, &zks);
    Ok(())
}

fn idle(x: &Ctx) -> Result<()> {
    let path = "/bench/failover/zookeeper08-idle";
    let zks = (0..IDLE_N)
        .map(|_| session(&x.cs, SESSION))
        .collect::<Result<Vec<_>>>()?;
    let ls = zks
        .iter()
        .enumerate()
        .map(|(i, zk)| latch(zk, path, i))
        .collect::<Result<Vec<_>>>()?;
    await_nodes(&zks[0], path, IDLE_N)?;
    std::thread::sleep(Duration::from_secs(2));
    let secs = x.o.idle_seconds;
    let p0 = packets(x);
    std::thread::sleep(Duration::from_secs_f64(secs));
    let p1 = packets(x);
    idle_report(PREFIX, x, p0, p1, secs);
    close_all(&ls, &zks);
    Ok(())
}
