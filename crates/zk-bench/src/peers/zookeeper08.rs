//! The `zookeeper` 0.8 crate as a peer. It has no lock recipe (its recipes
//! are a leader latch, a path cache and a queue), so this is a mutex written
//! here on its primitives, following the seed scheme of the ZooKeeper
//! recipes page: an ephemeral-sequential node under the lock path, the lowest
//! sequence holds, every other waiter lists the children once and watches
//! its predecessor with `exists`. Its keys are `zookeeper08.seed_mutex.*`
//! (and `zookeeper08.seed_mutex_curator_names.*` for the `handoff` and
//! `deep` runs with Curator's node names, `_c_<uuid>-lock-<seq>`):
//! the figures are those of this crate's client (blocking calls, two threads
//! per session) with our code on top, not of a recipe the crate ships.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use zookeeper::{Acl, CreateMode, WatchedEvent, ZkError, ZkResult, ZooKeeper, ZooKeeperExt};

use crate::measure::{
    await_watches, count_requests, deep_waiters, handoffs_holding, latencies, notifications, proc_status, report_cycle,
    report_many, wchs, CostMeter, Deep, Handoff, LoopBody, DEEP_SESSIONS, HOLD, MANY, MANY_THREADS, MANY_WARMUP, THINK,
};
use crate::Ctx;

/// The prefix of every key.
const KEY: &str = "zookeeper08.seed_mutex";

/// A connected session (the first request's answer is awaited).
fn session(cs: &str) -> ZkResult<Arc<ZooKeeper>> {
    let zk = ZooKeeper::connect(cs, Duration::from_secs(30), |_: WatchedEvent| {})?;
    zk.exists("/", false)?;
    Ok(Arc::new(zk))
}

/// The sequence number at the end of a lock node's name.
fn sequence(name: &str) -> Option<u64> {
    let tail = name.get(name.len().checked_sub(10)?..)?;
    tail.parse().ok()
}

/// The seed-scheme mutex on one lock path.
struct SeedMutex {
    zk: Arc<ZooKeeper>,
    path: String,
    /// Name nodes as Curator (and ours) do, `_c_<uuid>-lock-<seq>` (55
    /// bytes), instead of `lock-<seq>` (15): what the longer names cost
    /// every listing, apart from everything else (the deep queue runs both).
    curator_names: bool,
}

/// A held [`SeedMutex`]: its node is deleted on drop.
struct Held {
    zk: Arc<ZooKeeper>,
    node: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.zk.delete(&self.node, None);
    }
}

impl SeedMutex {
    fn new(zk: &Arc<ZooKeeper>, path: &str) -> ZkResult<SeedMutex> {
        zk.ensure_path(path)?;
        Ok(SeedMutex {
            zk: zk.clone(),
            path: path.to_string(),
            curator_names: false,
        })
    }

    /// The same mutex, its nodes named as Curator's.
    fn with_curator_names(mut self, on: bool) -> SeedMutex {
        self.curator_names = on;
        self
    }

    /// Creates this waiter's node, then waits until it is the lowest.
    fn acquire(&self) -> ZkResult<Held> {
        let name = if self.curator_names {
            format!("{}/_c_{}-lock-", self.path, zk_framework::paths::new_protected_id())
        } else {
            format!("{}/lock-", self.path)
        };
        let create = || {
            self.zk.create(
                &name,
                Vec::new(),
                Acl::open_unsafe().clone(),
                CreateMode::EphemeralSequential,
            )
        };
        // The lock path may be a container of ours that the server reaped
        // while it was empty: make it again.
        let node = match create() {
            Err(ZkError::NoNode) => {
                self.zk.ensure_path(&self.path)?;
                create()?
            }
            r => r?,
        };
        let held = Held {
            zk: self.zk.clone(),
            node,
        };
        let mine = sequence(&held.node).ok_or(ZkError::SystemError)?;
        loop {
            let children = self.zk.get_children(&self.path, false)?;
            // The node right ahead of ours: the highest sequence below ours.
            let ahead = children
                .iter()
                .filter_map(|c| Some((sequence(c)?, c)))
                .filter(|&(s, _)| s < mine)
                .max_by_key(|&(s, _)| s);
            let Some((_, ahead)) = ahead else {
                return Ok(held);
            };
            let (tx, rx) = sync_channel(1);
            let watched = self
                .zk
                .exists_w(&format!("{}/{ahead}", self.path), move |_: WatchedEvent| {
                    let _ = tx.try_send(());
                })?;
            if watched.is_some() {
                // Woken by the predecessor's deletion (or the session's end).
                let _ = rx.recv();
            }
        }
    }
}

/// Runs the scenario `name` (what this peer has of it) on `x`'s server.
pub fn run(x: &Ctx, name: &str) {
    let result = match name {
        "mutex" => mutex(x),
        "handoff" => handoff(x),
        "latency" => latency(x),
        "deep" => deep(x),
        "many" => many(x),
        "herd" => herd(x),
        _ => Ok(()),
    };
    if let Err(e) = result {
        println!("zookeeper08.error={name}: {e:?}");
    }
}

fn mutex(x: &Ctx) -> ZkResult<()> {
    let zk = session(&x.cs)?;
    let m = SeedMutex::new(&zk, "/bench/mutex")?;
    let v = latencies(x.warmup, x.run, || drop(m.acquire().unwrap()));
    report_cycle(KEY, &v);
    if let Some(n) = count_requests(x.server(), || drop(m.acquire().unwrap())) {
        println!("{KEY}.requests_per_cycle={n}");
    }
    zk.close()
}

/// A handoff window with `sessions` sessions on `/bench/handoff`.
fn window(cs: &str, sessions: usize, warmup: Duration, run: Duration, hold: (Duration, Duration)) -> ZkResult<Handoff> {
    window_named(cs, sessions, warmup, run, hold, false)
}

/// A handoff window, the seed's node names or Curator's (`curator_names`).
fn window_named(
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    hold: (Duration, Duration),
    curator_names: bool,
) -> ZkResult<Handoff> {
    let clients = (0..sessions).map(|_| session(cs)).collect::<ZkResult<Vec<_>>>()?;
    let h = handoffs_holding(&clients, warmup, run, hold, |zk| -> LoopBody {
        let m = SeedMutex::new(zk, "/bench/handoff")
            .unwrap()
            .with_curator_names(curator_names);
        Box::new(move |l| l.granted(m.acquire().unwrap()))
    });
    for zk in clients {
        zk.close()?;
    }
    Ok(h)
}

/// The handoff windows, with the seed's names and then with Curator's
/// (`zookeeper08.seed_mutex_curator_names.`): what the names cost the server.
fn handoff(x: &Ctx) -> ZkResult<()> {
    for sessions in [8usize, 32, 128] {
        window(&x.cs, sessions, x.warmup, x.run, (Duration::ZERO, Duration::ZERO))?.report(KEY, sessions);
    }
    for sessions in [8usize, 32, 128] {
        window_named(&x.cs, sessions, x.warmup, x.run, (Duration::ZERO, Duration::ZERO), true)?
            .report("zookeeper08.seed_mutex_curator_names", sessions);
    }
    Ok(())
}

fn latency(x: &Ctx) -> ZkResult<()> {
    for sessions in [2usize, 8] {
        window(&x.cs, sessions, x.warmup, x.run, (Duration::ZERO, Duration::ZERO))?
            .report("zookeeper08.latency.seed_mutex", sessions);
    }
    for (key, think) in [
        ("zookeeper08.latency_hold_2ms.seed_mutex", Duration::ZERO),
        ("zookeeper08.latency_hold_2ms_think_1ms.seed_mutex", THINK),
    ] {
        window(&x.cs, 8, x.warmup, x.run, (HOLD, think))?.report(key, 8);
    }
    Ok(())
}

/// A holder and `threads` waiters (one thread each, over `sessions`
/// sessions) on `/bench/deep`; the drain from the holder's release to the
/// last waiter's release.
fn deep(x: &Ctx) -> ZkResult<()> {
    let deep = deep_waiters();
    let runs = [
        (deep, 1, false),
        (deep, DEEP_SESSIONS.min(deep), false),
        (deep, DEEP_SESSIONS.min(deep), true),
    ];
    for (threads, sessions, curator_names) in runs {
        let path = "/bench/deep";
        let holder_zk = session(&x.cs)?;
        let holder = SeedMutex::new(&holder_zk, path)?.with_curator_names(curator_names);
        let g = holder.acquire()?;
        let clients = (0..sessions).map(|_| session(&x.cs)).collect::<ZkResult<Vec<_>>>()?;
        let epoch = Instant::now();
        let last = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let (zk, last) = (clients[i % sessions].clone(), last.clone());
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        let m = SeedMutex::new(&zk, path).unwrap().with_curator_names(curator_names);
                        drop(m.acquire().unwrap());
                        last.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
                    })
                    .unwrap()
            })
            .collect();
        while holder_zk.get_children(path, false)?.len() < threads + 1 {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Every waiter watches the node ahead of its own.
        await_watches(&x.cs, threads as u64);
        let queued_watches = wchs(&x.cs);
        let n0 = notifications(x.server(), &x.cs);
        let meter = CostMeter::start();
        let t0 = epoch.elapsed();
        drop(g);
        for w in workers {
            w.join().unwrap();
        }
        let drain = Duration::from_nanos(last.load(Ordering::SeqCst)) - t0;
        let cost = meter.finish();
        let n1 = notifications(x.server(), &x.cs);
        for zk in clients {
            zk.close()?;
        }
        holder_zk.close()?;
        Deep {
            drain,
            notifications: n0.zip(n1).map(|(a, b)| b - a),
            queued_watches,
            cost,
        }
        .report(
            if curator_names {
                "zookeeper08.seed_mutex_curator_names."
            } else {
                "zookeeper08.seed_mutex."
            },
            threads,
            sessions,
        );
    }
    Ok(())
}

/// `MANY_THREADS` threads of one session take `locks` distinct mutexes
/// under `root`, hold them all at once, then release them.
fn many_round(zk: &Arc<ZooKeeper>, locks: usize, root: &str, report: bool) {
    let threads = MANY_THREADS;
    let held = Arc::new(Barrier::new(threads + 1));
    let release = Arc::new(Barrier::new(threads + 1));
    let released = Arc::new(Barrier::new(threads + 1));
    let rss0 = proc_status("VmRSS");
    let t0 = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (zk, held, release, released) = (zk.clone(), held.clone(), release.clone(), released.clone());
            let root = root.to_string();
            std::thread::spawn(move || {
                let mutexes: Vec<_> = (t..locks)
                    .step_by(threads)
                    .map(|i| SeedMutex::new(&zk, &format!("{root}/l{i}")).unwrap())
                    .collect();
                let guards: Vec<_> = mutexes.iter().map(|m| m.acquire().unwrap()).collect();
                held.wait();
                release.wait();
                drop(guards);
                released.wait();
            })
        })
        .collect();
    held.wait();
    let acquired = t0.elapsed();
    let rss1 = proc_status("VmRSS");
    let t1 = Instant::now();
    release.wait();
    released.wait();
    let releasing = t1.elapsed();
    for w in workers {
        w.join().unwrap();
    }
    if report {
        report_many(
            "zookeeper08.seed_mutex.",
            locks,
            acquired,
            releasing,
            rss1.saturating_sub(rss0),
        );
    }
}

fn many(x: &Ctx) -> ZkResult<()> {
    let zk = session(&x.cs)?;
    many_round(&zk, MANY_WARMUP, "/bench/many-zookeeper08-warmup", false);
    many_round(&zk, MANY, "/bench/many-zookeeper08", true);
    zk.close()
}

/// Notifications per release: 20 waiters (one session each) behind a
/// holder, each releasing as soon as it holds.
fn herd(x: &Ctx) -> ZkResult<()> {
    if notifications(x.server(), &x.cs).is_none() {
        return Ok(());
    }
    let n = 20;
    let path = "/zookeeper08-bench/chain";
    let holder_zk = session(&x.cs)?;
    let g = SeedMutex::new(&holder_zk, path)?.acquire()?;
    let clients = (0..n).map(|_| session(&x.cs)).collect::<ZkResult<Vec<_>>>()?;
    let threads: Vec<_> = clients
        .iter()
        .map(|zk| {
            let zk = zk.clone();
            std::thread::spawn(move || drop(SeedMutex::new(&zk, path).unwrap().acquire().unwrap()))
        })
        .collect();
    await_watches(&x.cs, n as u64);
    std::thread::sleep(Duration::from_millis(200));
    let before = notifications(x.server(), &x.cs).unwrap_or(0);
    drop(g);
    for t in threads {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let after = notifications(x.server(), &x.cs).unwrap_or(0);
    for zk in clients {
        zk.close()?;
    }
    holder_zk.close()?;
    println!(
        "{KEY}.notifications_per_release={:.2}",
        (after - before) as f64 / (n + 1) as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::sequence;

    #[test]
    fn the_sequence_is_the_last_ten_digits_of_any_scheme() {
        assert_eq!(sequence("lock-0000000042"), Some(42));
        assert_eq!(sequence("_c_9f1e2d3c-lock-0000000007"), Some(7));
        assert_eq!(sequence("3b1a__lock__0000000100"), Some(100));
        assert_eq!(sequence("leases"), None);
        assert_eq!(sequence("lock-"), None);
    }
}
