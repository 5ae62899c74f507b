//! Our locks' scenarios (zk-recipes on zk-framework), one function per
//! scenario, each printing its own `key=value` lines.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use zk_framework::{Acl, ClientConfig, CreateMode, CuratorFramework, ExponentialBackoffRetry, TlsConfig};
use zk_recipes::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, MultiLock};
use zk_testing::TestingServer;

use crate::measure::{
    await_watches, count_requests, deep_waiters, handoffs_holding as hold_window, latencies, notifications, percentile,
    proc_status, queue_watches, report_latency, report_many, task_count, us, wchs, CostMeter, Deep, Handoff, LoopBody,
    DEEP_SESSIONS, HOLD, MANY, MANY_THREADS, MANY_WARMUP, THINK,
};
use crate::Ctx;

/// The clients' TLS settings with `--tls`.
pub static TLS: OnceLock<Option<TlsConfig>> = OnceLock::new();

/// A connected client of ours (over TLS with `--tls`).
pub fn client(cs: &str) -> CuratorFramework {
    let mut b = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(10))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(tls) = TLS.get().cloned().flatten() {
        b = b.tls(tls);
    }
    let c = b.build().expect("client");
    c.block_until_connected(Duration::from_secs(30)).expect("connected");
    c
}

/// `connect`: a new session: TCP connect, TLS handshake (with --tls),
/// ConnectRequest, and the close.
pub fn connect(x: &Ctx) {
    let tls = TLS.get().cloned().flatten();
    let mut v = Vec::new();
    let end = Instant::now() + x.run;
    while Instant::now() < end || v.len() < 20 {
        let config = ClientConfig::default().with_session_timeout(Duration::from_secs(30));
        let config = match &tls {
            Some(t) => config.with_tls(t.clone()),
            None => config,
        };
        let t = Instant::now();
        let zk = zk_framework::Client::connect(&x.cs, config).expect("connect");
        zk.wait_connected_timeout(Duration::from_secs(10)).expect("connected");
        v.push(t.elapsed());
        zk.close();
    }
    v.sort();
    report_latency("connect.new_session", &v);
}

/// `floor`: the server's own round trips, create+delete and
/// create+getChildren+delete.
pub fn floor(x: &Ctx, c: &CuratorFramework) {
    let zk = c.zookeeper_client();
    let acl = Acl::open_unsafe();
    let v = latencies(x.warmup, x.run, || {
        let p = zk
            .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
            .unwrap();
        zk.delete(&p, None).unwrap();
    });
    report_latency("floor.create_delete", &v);
    let v = latencies(x.warmup, x.run, || {
        let p = zk
            .create("/bench/floor/n-", &[], &acl, CreateMode::EphemeralSequential)
            .unwrap();
        zk.get_children("/bench/floor").unwrap();
        zk.delete(&p, None).unwrap();
    });
    report_latency("floor.create_getchildren_delete", &v);
    // A cross-session handoff's floor: another session's delete, the
    // notification to a blocked thread, and that thread's listing of a
    // queue of 8 (`latency` compares the handoffs with it).
    let f = floor_latencies(&x.cs, x.warmup, x.run, false, Duration::ZERO, true);
    report_notified("floor.delete_notification_listing", &f);
}

/// Prints a floor's p50 and p99 (from the write to the woken thread) under
/// `key`; returns the p50.
fn report_notified(key: &str, f: &Floor) -> Duration {
    let p50 = percentile(&f.notified, 0.5);
    println!("{key}.p50_us={}", us(p50));
    println!("{key}.p99_us={}", us(percentile(&f.notified, 0.99)));
    p50
}

/// `mutex`: the uncontended acquire/release cycle.
pub fn mutex(x: &Ctx, c: &CuratorFramework) {
    let m = InterProcessMutex::new(c, "/bench/mutex").unwrap();
    let v = latencies(x.warmup, x.run, || drop(m.acquire().unwrap()));
    report_latency("mutex.uncontended_acquire_release", &v);
    if let Some(n) = count_requests(x.server(), || drop(m.acquire().unwrap())) {
        println!("mutex.requests_per_cycle={n}");
    }
}

/// `semaphore`: the uncontended cycle of the semaphore mutex.
pub fn semaphore(x: &Ctx, c: &CuratorFramework) {
    let m = InterProcessSemaphoreMutex::new(c, "/bench/sem").unwrap();
    let v = latencies(x.warmup, x.run, || drop(m.acquire().unwrap()));
    report_latency("semaphore_mutex.uncontended_acquire_release", &v);
    if let Some(n) = count_requests(x.server(), || drop(m.acquire().unwrap())) {
        println!("semaphore_mutex.requests_per_cycle={n}");
    }
    if let Some(e) = x.server().and_then(|s| s.embedded()) {
        let n0 = e.stats().watch_notifications;
        for _ in 0..50 {
            drop(m.acquire().unwrap());
        }
        println!(
            "semaphore_mutex.notifications_per_cycle={:.1}",
            (e.stats().watch_notifications - n0) as f64 / 50.0
        );
    }
    println!(
        "semaphore_mutex.uncontended_cycles_per_s={:.0}",
        1.0 / percentile(&v, 0.5).as_secs_f64()
    );
}

/// `reentrant`: re-acquiring a mutex already held.
pub fn reentrant(x: &Ctx, c: &CuratorFramework) {
    let m = InterProcessMutex::new(c, "/bench/reentrant").unwrap();
    let outer = m.acquire().unwrap();
    let n = 1_000_000u32;
    let t = Instant::now();
    for _ in 0..n {
        drop(m.acquire().unwrap());
    }
    println!("reentrant.reacquire_ns={:.0}", t.elapsed().as_nanos() as f64 / n as f64);
    if let Some(n) = count_requests(x.server(), || drop(m.acquire().unwrap())) {
        println!("reentrant.requests_per_reacquire={n}");
    }
    drop(outer);
}

/// `handoff`: contended acquisitions with 8, 32 and 128 sessions.
pub fn handoff(x: &Ctx) {
    for sessions in [8usize, 32, 128] {
        let h = handoffs(&x.cs, sessions, x.warmup, x.run, |c| {
            let m = InterProcessMutex::new(c, "/bench/handoff").unwrap();
            Box::new(move |l| l.granted(m.acquire().unwrap()))
        });
        h.report("mutex", sessions);
    }
    let h = handoffs(&x.cs, 8, x.warmup, x.run, |c| {
        let m = InterProcessSemaphoreMutex::new(c, "/bench/sem-handoff").unwrap();
        Box::new(move |l| l.granted(m.acquire().unwrap()))
    });
    h.report("semaphore_mutex", 8);
}

/// `herd`: notifications per release, counted by the server.
pub fn herd(x: &Ctx) {
    let sent = || notifications(x.server(), &x.cs);
    if sent().is_none() {
        return;
    }
    let per = notifications_per_release(&x.cs, &sent, 20);
    println!("mutex.notifications_per_release={per:.2}");
    let per = chain_notifications(&x.cs, &sent, 20, true);
    println!("semaphore_mutex.notifications_per_release={per:.2}");
}

/// `rwlock`: read/write throughput, write handoffs and the notifications of
/// a writer's release.
pub fn rwlock(x: &Ctx) {
    for readers in [1usize, 4, 16] {
        let (r, w) = rw_throughput(&x.cs, readers, x.run);
        println!("rwlock.read_acquires_per_s.readers_{readers}_writers_1={r:.0}");
        println!("rwlock.write_acquires_per_s.readers_{readers}_writers_1={w:.0}");
    }
    let h = handoffs(&x.cs, 8, x.warmup, x.run, |c| {
        let rw = InterProcessReadWriteLock::new(c, "/bench/rw-handoff").unwrap();
        Box::new(move |l| l.granted(rw.write_lock().acquire().unwrap()))
    });
    println!("rwlock.write_handoffs_per_s.sessions_8={:.0}", h.rate);
    let sent = || notifications(x.server(), &x.cs);
    if sent().is_some() {
        let n = rw_release_notifications(&x.cs, &sent, 100);
        println!("rwlock.notifications_per_writer_release.queued_readers_100={n}");
    }
}

/// `multilock`: three mutexes as one, uncontended and contended.
pub fn multilock(x: &Ctx, c: &CuratorFramework) {
    let m = MultiLock::from_paths(c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
    let v = latencies(x.warmup, x.run, || drop(m.acquire().unwrap()));
    report_latency("multilock3.uncontended_acquire_release", &v);
    let h = handoffs(&x.cs, 8, x.warmup, x.run, |c| {
        let m = MultiLock::from_paths(c, &["/bench/m/a", "/bench/m/b", "/bench/m/c"]).unwrap();
        Box::new(move |l| l.granted(m.acquire().unwrap()))
    });
    println!("multilock3.handoffs_per_s.sessions_8={:.0}", h.rate);
}

/// `latency`: release to next grant in three rhythms, beside the floor (one
/// write plus one notification to a blocked thread) measured in the same
/// rhythm (see BENCHMARKS.md "Handoff latency and its floor").
pub fn latency(x: &Ctx) {
    let (cs, warmup, run) = (&x.cs, x.warmup, x.run);
    let floor = |key: &str, busy: bool, pause: Duration, listing: bool| {
        let f = floor_latencies(cs, warmup, run, busy, pause, listing);
        let p50 = report_notified(key, &f);
        println!("{key}.write_round_trip_p50_us={}", us(percentile(&f.round_trip, 0.5)));
        p50
    };
    // Back to back, nothing else on the server.
    let hot = floor("floor.write_plus_notification", false, Duration::ZERO, false);
    // With a third session as busy as a handoff run's re-queueing holders.
    let busy = floor("floor.write_plus_notification.busy_server", true, Duration::ZERO, false);
    // After the same pause as a holder's critical section below.
    let paused = floor("floor.write_plus_notification.after_2ms_pause", false, HOLD, false);
    // The same three with the woken waiter listing a queue of 8 before it
    // counts as woken: a cross-session handoff's floor (a delete, the
    // notification, one listing).
    let hot_l = floor("floor.delete_notification_listing", false, Duration::ZERO, true);
    let busy_l = floor(
        "floor.delete_notification_listing.busy_server",
        true,
        Duration::ZERO,
        true,
    );
    let paused_l = floor("floor.delete_notification_listing.after_2ms_pause", false, HOLD, true);
    let ratio = |key: &str, h: &Handoff, name: &str, floor: Duration| {
        println!(
            "{key}.handoff_latency.p50_over_{name}.sessions_8={:.2}",
            percentile(&h.latencies, 0.5).as_secs_f64() / floor.as_secs_f64()
        );
    };
    let mutex = |c: &CuratorFramework| -> LoopBody {
        let m = InterProcessMutex::new(c, "/bench/handoff").unwrap();
        Box::new(move |l| l.granted(m.acquire().unwrap()))
    };
    // Zero hold time: each holder releases at once and queues again, so
    // the server re-queues one holder while it hands over to the next.
    for sessions in [2usize, 8] {
        let h = handoffs(cs, sessions, warmup, run, mutex);
        h.report("latency.mutex", sessions);
        if sessions == 8 {
            ratio("latency.mutex", &h, "floor", hot);
            ratio("latency.mutex", &h, "busy_floor", busy);
            ratio("latency.mutex", &h, "listing_floor", hot_l);
            ratio("latency.mutex", &h, "busy_listing_floor", busy_l);
        }
    }
    // A 2 ms critical section: the holder released before has queued
    // again by the time of the next release, so the server has only the
    // delete to do, as in the floor after the same pause. The released
    // holder queues again at once (while the next one is being woken), or
    // after 1 ms of work outside the lock.
    for (key, think) in [
        ("latency_hold_2ms", Duration::ZERO),
        ("latency_hold_2ms_think_1ms", THINK),
    ] {
        let h = handoffs_holding(cs, 8, warmup, run, (HOLD, think), mutex);
        let key = format!("{key}.mutex");
        h.report(&key, 8);
        ratio(&key, &h, "paused_floor", paused);
        ratio(&key, &h, "floor", hot);
        ratio(&key, &h, "paused_listing_floor", paused_l);
    }
}

/// `deep`: 1,000 waiters on one mutex, over one session and over 100.
pub fn deep(x: &Ctx) {
    let deep = deep_waiters();
    for (threads, sessions) in [(deep, 1), (deep, DEEP_SESSIONS.min(deep))] {
        let d = deep_queue(&x.cs, x.server(), threads, sessions);
        d.report("", threads, sessions);
    }
}

/// `many`: 10,000 locks held at once.
pub fn many(c: &CuratorFramework) {
    many_locks(c, MANY_WARMUP, MANY_THREADS, "/bench/many-ours-warmup", false);
    many_locks(c, MANY, MANY_THREADS, "/bench/many-ours", true);
}

/// `clients`: what 16 clients cost.
pub fn clients(x: &Ctx) {
    client_cost(&x.cs, 16);
}

/// Contended acquisitions: `sessions` clients of ours, each in its own
/// thread, loop `acquire+release` on one lock; `warmup` of that, then a
/// timed window of `run`.
fn handoffs(
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    make: impl Fn(&CuratorFramework) -> LoopBody,
) -> Handoff {
    handoffs_holding(cs, sessions, warmup, run, (Duration::ZERO, Duration::ZERO), make)
}

/// [`handoffs`] with each holder holding the lock for `hold.0` before it
/// releases and queueing again `hold.1` after its release.
fn handoffs_holding(
    cs: &str,
    sessions: usize,
    warmup: Duration,
    run: Duration,
    hold: (Duration, Duration),
    make: impl Fn(&CuratorFramework) -> LoopBody,
) -> Handoff {
    let clients: Vec<_> = (0..sessions).map(|_| client(cs)).collect();
    let h = hold_window(&clients, warmup, run, hold, make);
    for c in clients {
        c.close();
    }
    h
}

/// Waits until `m`'s queue has `n` nodes; returns them in lock order, each
/// with its session.
fn queued(m: &InterProcessMutex, n: usize) -> Vec<(String, i64)> {
    loop {
        let nodes = m.participant_nodes().unwrap();
        if nodes.len() >= n {
            return nodes.into_iter().map(|p| (p.node, p.session_id)).collect();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Average watch notifications the server sends per mutex release with `n`
/// waiters queued.
fn notifications_per_release(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize) -> f64 {
    let clients: Vec<_> = (0..4).map(|_| client(cs)).collect();
    let total = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Barrier::new(n + 1));
    let holder = InterProcessMutex::new(&clients[0], "/bench/herd").unwrap();
    let g = holder.acquire().unwrap();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let c = clients[i % clients.len()].clone();
            let (total, gate) = (total.clone(), gate.clone());
            std::thread::spawn(move || {
                let m = InterProcessMutex::new(&c, "/bench/herd").unwrap();
                gate.wait();
                drop(m.acquire().unwrap());
                total.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    gate.wait();
    let queue = queued(&holder, n + 1);
    // Every waiter has set its watches: on the node ahead and on its own.
    await_watches(cs, queue_watches(&queue));
    let before = sent().unwrap_or(0);
    drop(g);
    for t in threads {
        t.join().unwrap();
    }
    let after = sent().unwrap_or(0);
    for c in clients {
        c.close();
    }
    (after - before) as f64 / n as f64
}

/// Notifications per release when `n` waiters (one session each) queue behind a
/// holder and each releases right after acquiring.
fn chain_notifications(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize, semaphore: bool) -> f64 {
    let holder_client = client(cs);
    let hold = |c: &CuratorFramework| -> Box<dyn FnOnce() + Send> {
        if semaphore {
            let m = Arc::new(InterProcessSemaphoreMutex::new(c, "/bench/chain").unwrap());
            m.acquire_raw().unwrap();
            Box::new(move || m.release().unwrap())
        } else {
            let m = InterProcessMutex::new(c, "/bench/chain").unwrap();
            m.acquire_raw().unwrap();
            Box::new(move || m.release().unwrap())
        }
    };
    let release_holder = hold(&holder_client);
    let clients: Vec<_> = (0..n).map(|_| client(cs)).collect();
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = clients
        .iter()
        .map(|c| {
            let (c, done) = (c.clone(), done.clone());
            std::thread::spawn(move || {
                if semaphore {
                    let m = InterProcessSemaphoreMutex::new(&c, "/bench/chain").unwrap();
                    drop(m.acquire().unwrap());
                } else {
                    let m = InterProcessMutex::new(&c, "/bench/chain").unwrap();
                    drop(m.acquire().unwrap());
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1000)); // every waiter queued and watching
    let before = sent().unwrap_or(0);
    release_holder();
    for t in threads {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let after = sent().unwrap_or(0);
    for c in clients {
        c.close();
    }
    holder_client.close();
    (after - before) as f64 / (n + 1) as f64
}

/// Read and write acquisitions per second with `readers` reader sessions and one
/// writer session.
fn rw_throughput(cs: &str, readers: usize, run: Duration) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let clients: Vec<_> = (0..=readers).map(|_| client(cs)).collect();
    for (i, c) in clients.iter().enumerate() {
        let c = c.clone();
        let (stop, reads, writes) = (stop.clone(), reads.clone(), writes.clone());
        threads.push(std::thread::spawn(move || {
            let rw = InterProcessReadWriteLock::new(&c, "/bench/rw").unwrap();
            while !stop.load(Ordering::Relaxed) {
                if i == 0 {
                    drop(rw.write_lock().acquire().unwrap());
                    writes.fetch_add(1, Ordering::Relaxed);
                } else {
                    drop(rw.read_lock().acquire().unwrap());
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let t = Instant::now();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let (r, w) = (reads.load(Ordering::Relaxed), writes.load(Ordering::Relaxed));
    let secs = t.elapsed().as_secs_f64();
    for t in threads {
        t.join().unwrap();
    }
    for c in clients {
        c.close();
    }
    (r as f64 / secs, w as f64 / secs)
}

/// Notifications sent when writer W1 releases with `n/2` readers, a writer W2 and
/// `n/2` more readers queued behind it (one session each): only the first half
/// can proceed.
fn rw_release_notifications(cs: &str, sent: &dyn Fn() -> Option<u64>, n: usize) -> u64 {
    let half = n / 2;
    let writer = client(cs);
    let rw = InterProcessReadWriteLock::new(&writer, "/bench/rw-herd").unwrap();
    let w = rw.write_lock().acquire().unwrap();
    let finish = Arc::new(AtomicBool::new(false));
    let first_half = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let mut clients = Vec::new();
    for stage in 0..3 {
        let count = if stage == 1 { 1 } else { half };
        for _ in 0..count {
            let c = client(cs);
            clients.push(c.clone());
            let (finish, first_half) = (finish.clone(), first_half.clone());
            threads.push(std::thread::spawn(move || {
                let rw = InterProcessReadWriteLock::new(&c, "/bench/rw-herd").unwrap();
                let lock: &dyn zk_recipes::InterProcessLock = if stage == 1 { rw.write_lock() } else { rw.read_lock() };
                let g = lock.acquire_holding(None).unwrap().unwrap();
                if stage == 0 {
                    first_half.fetch_add(1, Ordering::SeqCst);
                }
                while !finish.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                lock.release_holding(g).unwrap();
            }));
        }
        let want = match stage {
            0 => half,
            1 => half,
            _ => 2 * half,
        };
        if stage == 1 {
            while rw.write_lock().participant_paths().unwrap().len() < 2 {
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            while rw.read_lock().participant_paths().unwrap().len() < want {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300)); // every waiter sets its watch
    let before = sent().unwrap_or(0);
    drop(w);
    while first_half.load(Ordering::SeqCst) < half as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300)); // late notifications would show here
    let after = sent().unwrap_or(0);
    finish.store(true, Ordering::SeqCst);
    // Every holder releases before its client closes (a release after the
    // close is, rightly, LockLost); the queued writer and the readers behind
    // it take the lock in turn and release it, since `finish` is set.
    for t in threads {
        let _ = t.join();
    }
    for c in &clients {
        c.close();
    }
    writer.close();
    after - before
}

/// What a client costs: threads (idle, then after using a lock), resident
/// memory, connect-to-ready and `close()` time, over `n` clients.
fn client_cost(cs: &str, n: usize) {
    // One client first, so that process-wide one-offs (allocator arenas) are
    // not charged to the clients measured.
    let warm = client(cs);
    drop(
        InterProcessMutex::new(&warm, "/bench/clients/warm")
            .unwrap()
            .acquire()
            .unwrap(),
    );
    let (t0, rss0) = (task_count(), proc_status("VmRSS"));
    let mut ready = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        clients.push(client(cs));
        ready.push(t.elapsed());
    }
    let (t1, rss1) = (task_count(), proc_status("VmRSS"));
    if std::env::var_os("ZK_BENCH_THREAD_NAMES").is_some() {
        let mut names = std::collections::BTreeMap::<String, usize>::new();
        for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let n = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            *names.entry(n.trim().to_string()).or_default() += 1;
        }
        eprintln!("threads: {names:?}");
    }
    for (i, c) in clients.iter().enumerate() {
        let m = InterProcessMutex::new(c, &format!("/bench/clients/l{i}")).unwrap();
        let g = m.acquire().unwrap();
        std::thread::sleep(Duration::from_millis(20)); // the own-node watch goes out
        drop(g);
    }
    // Right after the grants each client's own-node watch timer still runs
    // (it ends a second after its last work): count both moments.
    let t2_busy = task_count();
    std::thread::sleep(Duration::from_millis(1500));
    let t2 = task_count();
    // Idle clients, connected and doing nothing: how often their threads
    // wake (pings, the session monitor's look at the session).
    let idle = Duration::from_secs(2);
    let w0 = crate::measure::Cost::now();
    std::thread::sleep(idle);
    if let Some(w) = crate::measure::Cost::now().zip(w0).map(|(b, a)| b.since(&a).wakeups) {
        println!(
            "clients.wakeups_per_idle_client_per_s={:.1}",
            w as f64 / n as f64 / idle.as_secs_f64()
        );
    }
    let mut closes = Vec::new();
    for c in clients {
        let t = Instant::now();
        c.close();
        closes.push(t.elapsed());
    }
    let t3 = task_count();
    ready.sort();
    closes.sort();
    println!("clients.threads_per_client.idle={:.2}", (t1 - t0) as f64 / n as f64);
    println!(
        "clients.threads_per_client.just_after_lock={:.2}",
        (t2_busy - t0) as f64 / n as f64
    );
    println!(
        "clients.threads_per_client.after_lock={:.2}",
        (t2 - t0) as f64 / n as f64
    );
    println!("clients.threads_left_after_close={}", t3.saturating_sub(t0));
    println!(
        "clients.rss_kib_per_client={:.0}",
        rss1.saturating_sub(rss0) as f64 / n as f64
    );
    println!(
        "clients.connect_to_ready_ms.median={:.2}",
        percentile(&ready, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "clients.close_ms.median={:.2}",
        percentile(&closes, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "clients.close_ms.max={:.2}",
        percentile(&closes, 1.0).as_secs_f64() * 1e3
    );
    warm.close();
}

/// The floor's samples.
struct Floor {
    /// From the delete call to the moment a thread blocked on the watch (as a
    /// lock waiter is) runs again.
    notified: Vec<Duration>,
    /// The delete's own round trip, in the same cycles.
    round_trip: Vec<Duration>,
}

/// One write round trip plus one notification: a client watches a node, a
/// second one deletes it; the time from the delete call to the moment a
/// thread of the first client's, blocked until the watch fires (as a lock
/// waiter is), runs again. With `busy`, a third session keeps the server
/// about as busy as a handoff run's re-queueing holders do (create, list,
/// read, delete, in a loop).
fn floor_latencies(cs: &str, warmup: Duration, run: Duration, busy: bool, pause: Duration, listing: bool) -> Floor {
    let (a, b) = (client(cs), client(cs));
    let (za, zb) = (a.zookeeper_client(), b.zookeeper_client());
    let acl = Acl::open_unsafe();
    // With `listing`, the deleted node is one of 8 in a queue the woken
    // waiter lists (as a lock waiter whose predecessor went lists its queue).
    let queue = "/bench/floor-queue";
    let path = if listing {
        "/bench/floor-queue/n"
    } else {
        "/bench/floor-notify"
    };
    if listing {
        let _ = zb.create(queue, &[], &acl, CreateMode::Persistent);
        for i in 0..7 {
            let _ = zb.create(&format!("{queue}/q{i}"), &[], &acl, CreateMode::Ephemeral);
        }
    }
    let lister = a.clone();
    // The waiting thread: blocks until the watcher signals, then reports when
    // it ran again.
    let (event_tx, event_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let (woke_tx, woke_rx) = std::sync::mpsc::sync_channel::<Instant>(1);
    let waiter = std::thread::spawn(move || {
        while event_rx.recv().is_ok() {
            if listing {
                lister.zookeeper_client().get_children(queue).unwrap();
            }
            if woke_tx.send(Instant::now()).is_err() {
                break;
            }
        }
    });
    let once = || {
        zb.create(path, &[], &acl, CreateMode::Ephemeral).unwrap();
        let tx = event_tx.clone();
        za.exists_w(path, move |_| {
            let _ = tx.try_send(());
        })
        .unwrap();
        // Two round trips since the waiter last ran: it is blocked again.
        // As long as a holder holds before its release in the handoff run
        // with a critical section: the machine idles as it does there.
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let t0 = Instant::now();
        zb.delete(path, None).unwrap();
        let round_trip = t0.elapsed();
        let woke = woke_rx.recv_timeout(Duration::from_secs(10)).expect("the watch fires");
        (woke.saturating_duration_since(t0), round_trip)
    };
    let stop_load = Arc::new(AtomicBool::new(false));
    let load = busy.then(|| {
        let (c, stop) = (client(cs), stop_load.clone());
        std::thread::spawn(move || {
            let z = c.zookeeper_client();
            let acl = Acl::open_unsafe();
            while !stop.load(Ordering::Relaxed) {
                let p = z
                    .create("/bench/floor/busy-", &[], &acl, CreateMode::EphemeralSequential)
                    .unwrap();
                z.get_children("/bench/floor").unwrap();
                z.get_data(&p).unwrap();
                z.delete(&p, None).unwrap();
            }
            c.close();
        })
    });
    let end = Instant::now() + warmup;
    while Instant::now() < end {
        once();
    }
    let (mut notified, mut round_trip) = (Vec::new(), Vec::new());
    let end = Instant::now() + run;
    while Instant::now() < end {
        let (n, r) = once();
        notified.push(n);
        round_trip.push(r);
    }
    stop_load.store(true, Ordering::Relaxed);
    if let Some(t) = load {
        t.join().unwrap();
    }
    drop(event_tx);
    waiter.join().unwrap();
    notified.sort();
    round_trip.sort();
    a.close();
    b.close();
    Floor { notified, round_trip }
}

/// A holder and `threads` waiters (spread over `sessions` clients) on one
/// mutex; once all are queued the holder releases and each waiter releases as
/// soon as it holds. The drain is from the holder's release to the last one.
fn deep_queue(cs: &str, server: Option<&TestingServer>, threads: usize, sessions: usize) -> Deep {
    let path = "/bench/deep";
    let holder_client = client(cs);
    let holder = InterProcessMutex::new(&holder_client, path).unwrap();
    let g = holder.acquire().unwrap();
    let clients: Vec<_> = (0..sessions).map(|_| client(cs)).collect();
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let (c, last) = (clients[i % sessions].clone(), last.clone());
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let m = InterProcessMutex::new(&c, path).unwrap();
                    drop(m.acquire().unwrap());
                    last.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    let queue = queued(&holder, threads + 1);
    // Every waiter has set its watches, on the node ahead and on its own (and
    // the holder its own-node watch).
    await_watches(cs, queue_watches(&queue));
    let queued_watches = wchs(cs);
    let n0 = notifications(server, cs);
    let meter = CostMeter::start();
    let t0 = epoch.elapsed();
    drop(g);
    for w in workers {
        w.join().unwrap();
    }
    let drain = Duration::from_nanos(last.load(Ordering::SeqCst)) - t0;
    let cost = meter.finish();
    let n1 = notifications(server, cs);
    for c in clients {
        c.close();
    }
    holder_client.close();
    Deep {
        drain,
        notifications: n0.zip(n1).map(|(a, b)| b - a),
        queued_watches,
        cost,
    }
}

/// `threads` threads of one client take `locks` distinct mutexes under
/// `root` and hold them all at once, then release them; prints acquires/s,
/// releases/s and resident memory per held lock (`report`).
fn many_locks(c: &CuratorFramework, locks: usize, threads: usize, root: &str, report: bool) {
    let held = Arc::new(Barrier::new(threads + 1));
    let release = Arc::new(Barrier::new(threads + 1));
    let released = Arc::new(Barrier::new(threads + 1));
    let rss0 = proc_status("VmRSS");
    let t0 = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (c, held, release, released) = (c.clone(), held.clone(), release.clone(), released.clone());
            let root = root.to_string();
            std::thread::spawn(move || {
                let mutexes: Vec<_> = (t..locks)
                    .step_by(threads)
                    .map(|i| InterProcessMutex::new(&c, &format!("{root}/l{i}")).unwrap())
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
    // The own-node watches go out OWN_WATCH_DELAY after each grant: count them in.
    std::thread::sleep(Duration::from_millis(50));
    let rss1 = proc_status("VmRSS");
    let t1 = Instant::now();
    release.wait();
    released.wait();
    let releasing = t1.elapsed();
    for w in workers {
        w.join().unwrap();
    }
    if report {
        report_many("", locks, acquired, releasing, rss1.saturating_sub(rss0));
    }
}
