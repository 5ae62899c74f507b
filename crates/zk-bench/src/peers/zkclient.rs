//! kezhuw's `zookeeper-client` 0.11 as a peer: its Curator-compatible lock
//! (`Client::lock` with `LockPrefix::new_curator(path, "lock-")`, the names
//! Curator's `InterProcessMutex` uses, so it queues on the same lock paths).
//! The crate is async and runtime-agnostic; it runs here on a multi-threaded
//! tokio runtime of the default size (one worker per core), every holder a
//! task, as an async application would run it. Its release is the guard's
//! drop, which deletes the lock node in a background task: the next
//! acquisition does not wait for it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zookeeper_client::{Acls, Client, CreateMode, Error, LockClient, LockOptions, LockPrefix};

use crate::measure::{
    await_watches, deep_waiters, latencies, notifications, proc_status, report_cycle, report_many, requests, wchs,
    CostMeter, Deep, Handoff, Window, DEEP_SESSIONS, HOLD, MANY, MANY_THREADS, MANY_WARMUP, THINK,
};
use crate::Ctx;

/// The prefix of every key.
const KEY: &str = "zkclient.mutex";

/// The runtime: tokio's multi-threaded scheduler with its default number of
/// workers (one per core), and its timer for the holders' sleeps.
fn runtime() -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_time().build()
}

/// A connected session.
async fn session(cs: &str) -> Result<Client, Error> {
    Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .with_connection_timeout(Duration::from_secs(10))
        .connect(cs)
        .await
}

/// Takes the Curator-compatible mutex on `path` (its parents created as
/// needed).
async fn lock<'a>(client: &'a Client, path: &str) -> Result<LockClient<'a>, Error> {
    let prefix = LockPrefix::new_curator(path, "lock-")?;
    let options = LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
    client.lock(prefix, b"", options).await
}

/// Releases and waits for the node's deletion (the guard's drop alone
/// deletes it in the background).
async fn release(g: LockClient<'_>) -> Result<(), Error> {
    let r = g.client().delete(g.lock_path(), None).await;
    drop(g);
    r
}

/// Waits (10 s at most) until no lock node is left under `path`: the last
/// releases' deletes run in background tasks, and the next peer queues on
/// the same path.
fn settle(rt: &Runtime, cs: &str, path: &str) -> Result<(), Error> {
    let client = rt.block_on(session(cs))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match rt.block_on(client.list_children(path)) {
            Ok(children) if !children.is_empty() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(_) | Err(Error::NoNode) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Runs the scenario `name` (what this peer has of it) on `x`'s server.
pub fn run(x: &Ctx, name: &str) {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            println!("zkclient.error=tokio runtime: {e}");
            return;
        }
    };
    // The guards' drops spawn their deletes: from this thread too.
    let _enter = rt.enter();
    let result = match name {
        "mutex" => mutex(&rt, x),
        "handoff" => handoff(&rt, x),
        "latency" => latency(&rt, x),
        "deep" => deep(&rt, x),
        "many" => many(&rt, x),
        "herd" => herd(&rt, x),
        _ => Ok(()),
    };
    if let Err(e) = result {
        println!("zkclient.error={name}: {e}");
    }
    rt.shutdown_timeout(Duration::from_secs(5));
}

fn mutex(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    let client = rt.block_on(session(&x.cs))?;
    let cycle = || drop(rt.block_on(lock(&client, "/bench/mutex")).unwrap());
    let v = latencies(x.warmup, x.run, cycle);
    report_cycle(KEY, &v);
    if let Some(r0) = requests(x.server()) {
        let n = 50;
        for _ in 0..n {
            cycle();
        }
        // The last release's delete, in the background.
        std::thread::sleep(Duration::from_millis(100));
        let r1 = requests(x.server()).unwrap_or(r0);
        println!("{KEY}.requests_per_cycle={:.1}", (r1 - r0) as f64 / n as f64);
    }
    settle(rt, &x.cs, "/bench/mutex")
}

/// A handoff window: `sessions` sessions, a task each, on `/bench/handoff`.
fn window(
    rt: &Runtime,
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    (hold, think): (Duration, Duration),
) -> Result<Handoff, Error> {
    let clients = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..sessions {
            v.push(session(cs).await?);
        }
        Ok::<_, Error>(v)
    })?;
    let window = Window::new(sessions, (hold, think));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            let window = window.clone();
            rt.spawn(async move {
                let mut lat = Vec::new();
                while !window.stopped() {
                    let g = lock(&client, "/bench/handoff").await.unwrap();
                    if let Some(d) = window.latch.grant() {
                        lat.push(d);
                    }
                    if !hold.is_zero() {
                        tokio::time::sleep(hold).await;
                    }
                    window.latch.releasing();
                    drop(g);
                    window.count(i);
                    if !think.is_zero() {
                        tokio::time::sleep(think).await;
                    }
                }
                lat
            })
        })
        .collect();
    let mut h = window.measure(warmup, run);
    rt.block_on(async {
        for t in tasks {
            h.latencies.extend(t.await.unwrap());
        }
    });
    h.latencies.sort();
    settle(rt, cs, "/bench/handoff")?;
    Ok(h)
}

fn handoff(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    for sessions in [8usize, 32, 128] {
        window(rt, &x.cs, sessions, x.warmup, x.run, (Duration::ZERO, Duration::ZERO))?.report(KEY, sessions);
    }
    Ok(())
}

fn latency(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    for sessions in [2usize, 8] {
        window(rt, &x.cs, sessions, x.warmup, x.run, (Duration::ZERO, Duration::ZERO))?
            .report("zkclient.latency.mutex", sessions);
    }
    for (key, think) in [
        ("zkclient.latency_hold_2ms.mutex", Duration::ZERO),
        ("zkclient.latency_hold_2ms_think_1ms.mutex", THINK),
    ] {
        window(rt, &x.cs, 8, x.warmup, x.run, (HOLD, think))?.report(key, 8);
    }
    Ok(())
}

/// A holder and `threads` waiting tasks (over `sessions` sessions) on
/// `/bench/deep`; the drain from the holder's release to the last waiter's
/// release.
fn deep(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    let deep = deep_waiters();
    let path = "/bench/deep";
    for (threads, sessions) in [(deep, 1), (deep, DEEP_SESSIONS.min(deep))] {
        let holder_client = rt.block_on(session(&x.cs))?;
        let g = rt.block_on(lock(&holder_client, path))?;
        let mut clients = Vec::new();
        for _ in 0..sessions {
            clients.push(Arc::new(rt.block_on(session(&x.cs))?));
        }
        let epoch = Instant::now();
        let last = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..threads)
            .map(|i| {
                let (client, last) = (clients[i % sessions].clone(), last.clone());
                rt.spawn(async move {
                    // Released as ours and Curator's are here: the delete answered.
                    release(lock(&client, path).await.unwrap()).await.unwrap();
                    last.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
                })
            })
            .collect();
        while rt.block_on(holder_client.list_children(path))?.len() < threads + 1 {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Every waiter watches the node ahead of its own.
        await_watches(&x.cs, threads as u64);
        let queued_watches = wchs(&x.cs);
        let n0 = notifications(x.server(), &x.cs);
        let meter = CostMeter::start();
        let t0 = epoch.elapsed();
        drop(g);
        rt.block_on(async {
            for t in tasks {
                t.await.unwrap();
            }
        });
        let drain = Duration::from_nanos(last.load(Ordering::SeqCst)) - t0;
        let cost = meter.finish();
        let n1 = notifications(x.server(), &x.cs);
        Deep {
            drain,
            notifications: n0.zip(n1).map(|(a, b)| b - a),
            queued_watches,
            cost,
        }
        .report("zkclient.", threads, sessions);
    }
    Ok(())
}

/// `MANY_THREADS` tasks on one session take `locks` distinct mutexes under
/// `root`, hold them all at once, then release them (each release waiting
/// for its delete).
fn many_round(rt: &Runtime, client: &Arc<Client>, locks: usize, root: &str, report: bool) {
    let tasks_n = MANY_THREADS;
    let held = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(AtomicBool::new(false));
    let rss0 = proc_status("VmRSS");
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..tasks_n)
        .map(|t| {
            let (client, held, go) = (client.clone(), held.clone(), go.clone());
            let root = root.to_string();
            rt.spawn(async move {
                let mut guards = Vec::new();
                for i in (t..locks).step_by(tasks_n) {
                    guards.push(lock(&client, &format!("{root}/l{i}")).await.unwrap());
                }
                held.fetch_add(1, Ordering::SeqCst);
                while !go.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                for g in guards {
                    release(g).await.unwrap();
                }
            })
        })
        .collect();
    while held.load(Ordering::SeqCst) < tasks_n {
        std::thread::sleep(Duration::from_micros(200));
    }
    let acquired = t0.elapsed();
    let rss1 = proc_status("VmRSS");
    let t1 = Instant::now();
    go.store(true, Ordering::SeqCst);
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    let releasing = t1.elapsed();
    if report {
        report_many("zkclient.", locks, acquired, releasing, rss1.saturating_sub(rss0));
    }
}

fn many(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    let client = Arc::new(rt.block_on(session(&x.cs))?);
    many_round(rt, &client, MANY_WARMUP, "/bench/many-zkclient-warmup", false);
    many_round(rt, &client, MANY, "/bench/many-zkclient", true);
    Ok(())
}

/// Notifications per release: 20 waiters (one session each) behind a
/// holder, each releasing as soon as it holds.
fn herd(rt: &Runtime, x: &Ctx) -> Result<(), Error> {
    if notifications(x.server(), &x.cs).is_none() {
        return Ok(());
    }
    let n = 20;
    let path = "/zkclient-bench/chain";
    let holder_client = rt.block_on(session(&x.cs))?;
    let g = rt.block_on(lock(&holder_client, path))?;
    let mut tasks = Vec::new();
    for _ in 0..n {
        let client = rt.block_on(session(&x.cs))?;
        tasks.push(rt.spawn(async move {
            drop(lock(&client, path).await.unwrap());
            // The background delete goes out before the session closes.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }));
    }
    await_watches(&x.cs, n as u64);
    std::thread::sleep(Duration::from_millis(200));
    let before = notifications(x.server(), &x.cs).unwrap_or(0);
    drop(g);
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    let after = notifications(x.server(), &x.cs).unwrap_or(0);
    settle(rt, &x.cs, path)?;
    println!(
        "{KEY}.notifications_per_release={:.2}",
        (after - before) as f64 / (n + 1) as f64
    );
    Ok(())
}
