//! The held-out style probe of "a reconnect never revives a lost lock": a holder
//! (a mutex, a two-path `MultiLock`, or a `LeaderLatch` with a rival latch queued) behind a
//! *freezing* fault proxy on a real server; it is frozen until it is told it may not hold
//! (the read timeout), an operator deletes its nodes, a rival is granted, and the proxy
//! thaws before the session expires. From the thaw on, `check()` and `status()` are polled
//! every 100 us and the event channel is read; a round counts as bad if the holder was told
//! it holds after the break (an `Ok`, `Held`/`Leader`, a `Reconnected`/`Leader` event).
//!
//! ```text
//! cargo run --release --example reconnect_probe -- mutex|multi|latch [ROUNDS=20] [SESSION_S=10] [apache|embedded]
//! ```
//!
//! Apache ZooKeeper 3.8 (Debian's package) by default. Not run in CI (20 rounds of a 10 s
//! session take about 3.5 minutes per kind); its figures are in
//! `docs/bench/reconnect-proof/`.

use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::{InterProcessMutex, LockEvent, LockStatus, MultiLock};
use zk_recipes::{LeaderEvent, LeaderLatch, LeaderStatus};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, Backend, TestingServer};

fn client(cs: &str, session: Duration) -> CuratorFramework {
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 10))
        .build()
        .unwrap();
    c.block_until_connected(Duration::from_secs(30)).unwrap();
    c
}

fn tree(c: &CuratorFramework, p: &str) -> Vec<String> {
    let mut out = Vec::new();
    for k in c.get_children(p).unwrap_or_default() {
        let q = format!("{p}/{k}");
        out.push(q.clone());
        out.extend(tree(c, &q));
    }
    out
}

fn break_lock(admin: &CuratorFramework, base: &str, session: i64) -> usize {
    let mut n = 0;
    for p in tree(admin, base) {
        if admin
            .check_exists(&p)
            .ok()
            .flatten()
            .is_some_and(|s| s.ephemeral_owner == session)
        {
            admin.delete().for_path(&p).unwrap();
            n += 1;
        }
    }
    n
}

fn watched(s: &TestingServer, session: i64, node: &str) -> bool {
    let out = s.four_letter_word("wchc").unwrap_or_default();
    let mut ours = false;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix('\t') {
            if ours && p == node {
                return true;
            }
        } else if !line.is_empty() {
            ours = line.trim() == format!("0x{session:x}");
        }
    }
    false
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).cloned().unwrap_or("mutex".into());
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20);
    let session = Duration::from_secs(args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10));
    let backend = if args.get(4).map(String::as_str) == Some("embedded") {
        Backend::Embedded
    } else {
        Backend::Apache
    };
    let s = TestingServer::start_backend(backend).unwrap();
    let cs = s.connect_string();
    let admin = client(&cs, Duration::from_secs(30));
    let rival_c = client(&cs, Duration::from_secs(30));
    let mut bad_rounds = 0;
    for round in 0..rounds {
        let proxy = FaultProxy::start(&cs).unwrap();
        let hc = client(&proxy.connect_string(), session);
        let base = format!("/probe/{kind}/{round}");
        let sid = hc.session_id();
        let started = Instant::now();
        let (mut told_after_break, mut polls, end): (u64, u64, String);
        match kind.as_str() {
            "mutex" | "multi" => {
                let paths = [format!("{base}/a"), format!("{base}/b")];
                let m = InterProcessMutex::new(&hc, &paths[0]).unwrap();
                let ml = MultiLock::from_paths(&hc, &[&paths[0], &paths[1]]).unwrap();
                let (gm, gml) = if kind == "mutex" {
                    (Some(m.acquire().unwrap()), None)
                } else {
                    (None, Some(ml.acquire().unwrap()))
                };
                let h: &zk_recipes::Holding = match (&gm, &gml) {
                    (Some(g), _) => g.holding(),
                    (_, Some(g)) => g.holding(),
                    _ => unreachable!(),
                };
                let nodes: Vec<String> = h.lock_path().split(',').map(String::from).collect();
                let rx = h.events();
                let g_status = || h.status();
                let g_check = || h.check().is_ok();
                assert!(wait_until(Duration::from_secs(10), || nodes
                    .iter()
                    .all(|n| watched(&s, sid, n))));
                proxy.freeze(true);
                // Told Suspended (the read timeout).
                while g_status() == LockStatus::Held {
                    std::thread::sleep(Duration::from_micros(100));
                }
                let suspended_at = started.elapsed();
                let broke = break_lock(&admin, &base, sid);
                let rm = InterProcessMutex::new(&rival_c, &paths[0]).unwrap();
                let rml = MultiLock::from_paths(&rival_c, &[&paths[0], &paths[1]]).unwrap();
                let rg1;
                let rg2;
                if kind == "mutex" {
                    rg1 = Some(
                        rm.try_acquire_for(Duration::from_secs(5))
                            .unwrap()
                            .expect("rival granted"),
                    );
                    rg2 = None;
                } else {
                    rg2 = Some(
                        rml.try_acquire_for(Duration::from_secs(5))
                            .unwrap()
                            .expect("rival granted"),
                    );
                    rg1 = None;
                }
                proxy.freeze(false);
                let healed = Instant::now();
                told_after_break = 0;
                polls = 0;
                let mut events = Vec::new();
                loop {
                    let st = g_status();
                    let ok = g_check();
                    polls += 1;
                    if st == LockStatus::Held || ok {
                        told_after_break += 1;
                    }
                    events.extend(rx.try_iter());
                    if st == LockStatus::Lost || healed.elapsed() > Duration::from_secs(20) {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                let deadline = Instant::now() + Duration::from_secs(5);
                while !events.contains(&LockEvent::Lost) && Instant::now() < deadline {
                    if let Ok(e) = rx.recv_timeout(Duration::from_millis(50)) {
                        events.push(e);
                    }
                }
                if events.contains(&LockEvent::Reconnected) {
                    told_after_break += 1;
                }
                end = format!("suspended at {suspended_at:?}, broke {broke}, lost {:?} after the heal, events {events:?}, session kept {}", healed.elapsed(), hc.session_id() == sid);
                drop(rg1);
                drop(rg2);
            }
            "latch" => {
                let a = LeaderLatch::builder(&hc, &base).id("a").build().unwrap();
                let ev = a.events();
                a.start().unwrap();
                assert!(a.await_leadership_for(Duration::from_secs(10)).unwrap());
                let old = a.term().unwrap();
                let b = LeaderLatch::builder(&rival_c, &base).id("b").build().unwrap();
                b.start().unwrap();
                let node = a.node().unwrap();
                assert!(wait_until(Duration::from_secs(10), || watched(&s, sid, &node)
                    && rival_c.get_children(&base).unwrap_or_default().len() == 2));
                let _ = ev.try_iter().count();
                proxy.freeze(true);
                while a.status() == LeaderStatus::Leader {
                    std::thread::sleep(Duration::from_micros(100));
                }
                let suspended_at = started.elapsed();
                let broke = break_lock(&admin, &base, sid);
                assert!(b.await_leadership_for(Duration::from_secs(10)).unwrap());
                let bt = b.term().unwrap();
                proxy.freeze(false);
                let healed = Instant::now();
                told_after_break = 0;
                polls = 0;
                let mut events = Vec::new();
                loop {
                    let st = a.status();
                    let ok = a.check().is_ok();
                    polls += 1;
                    if st == LeaderStatus::Leader || ok {
                        told_after_break += 1;
                    }
                    events.extend(ev.try_iter());
                    if events.iter().any(|e| {
                        matches!(
                            e,
                            LeaderEvent::NotLeader {
                                reason: zk_recipes::NotLeaderReason::NodeDeleted
                            }
                        )
                    }) || healed.elapsed() > Duration::from_secs(20)
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                if events.iter().any(|e| matches!(e, LeaderEvent::Leader { .. })) {
                    told_after_break += 1;
                }
                b.close().unwrap();
                assert!(a.await_leadership_for(Duration::from_secs(20)).unwrap());
                let nt = a.term().unwrap();
                end = format!("suspended at {suspended_at:?}, broke {broke}, told after {:?}, events {events:?}, terms {old} {bt} {nt} grow {}", healed.elapsed(), old < bt && bt < nt);
                a.close().unwrap();
            }
            _ => panic!("kind"),
        }
        if told_after_break > 0 {
            bad_rounds += 1;
        }
        println!("{kind} round {round}: told it holds after the break {told_after_break} of {polls} polls; {end}");
        hc.close();
    }
    println!("{kind}: {bad_rounds} of {rounds} rounds told it holds after the break");
}
