//! The cache kind (`--cache`): in each worker, a `CuratorCache` on
//! [`CACHE_ROOT`] whose every event is logged (`Y` lines), and a writer
//! thread that creates, sets, deletes and re-creates nodes there at random
//! (`G` lines); after the run the coordinator reads the server's final
//! subtree (`cache-server.log`). The lines and the rules that judge them are
//! described in `zk_campaign::checker`'s cache module (`checker/cache.rs`).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::resource::client;
use crossbeam_channel::RecvTimeoutError;
use zk_framework::proto::CreateMode;
use zk_framework::{Acl, CuratorFramework, Stat};
use zk_recipes::Error as LockError;
use zk_recipes::{CacheEvent, ChildData, CuratorCache, Freshness};

use crate::paths::CACHE_ROOT;
use crate::prng::Rng;
use crate::record::{err_kind, now_ns, LineLog};

/// How many nodes the writers share under [`CACHE_ROOT`] (`n0`..): few, so
/// that they meet (a set right after another's delete, a re-creation while
/// a cache re-reads).
const KEYS: u64 = 8;

/// The pause between a writer's writes, in milliseconds (from, to).
const THINK_MS: (u64, u64) = (20, 60);

/// The file (next to the stop file) that tells the writers to stop: the
/// coordinator creates it first, waits for every writer's `G pid t end`,
/// reads the server's final subtree, and only then creates the stop file.
pub(crate) const STOP_WRITES: &str = "stop-writes";

/// FNV-1a 64 of `data`, in hex (`-`: no data).
pub(crate) fn hash(data: Option<&[u8]>) -> String {
    let Some(data) = data else { return "-".into() };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn stat_fields(s: &Stat) -> String {
    format!("{} {} {}", s.czxid, s.mzxid, s.version)
}

fn node(d: &ChildData) -> String {
    format!("{} {} {}", d.path(), stat_fields(d.stat()), hash(d.data()))
}

fn zk_err(e: zk_framework::Error) -> String {
    err_kind(&LockError::ZooKeeper(e))
}

/// A freshness as the logs name it (the cache and the registration kinds').
pub(crate) fn freshness_word(f: &Freshness) -> &'static str {
    match f {
        Freshness::Current => "current",
        Freshness::Updating => "updating",
        Freshness::Stale { .. } => "stale",
        Freshness::Resyncing => "resyncing",
        _ => "other",
    }
}

fn log_event(log: &LineLog, pid: u32, ev: &CacheEvent) {
    let t = now_ns();
    let rest = match ev {
        CacheEvent::Created(d) => format!("created {}", node(d)),
        CacheEvent::Changed { old, new } => format!(
            "changed {} {} {} {} {}",
            new.path(),
            stat_fields(old.stat()),
            hash(old.data()),
            stat_fields(new.stat()),
            hash(new.data())
        ),
        CacheEvent::Deleted(d) => format!("deleted {}", node(d)),
        CacheEvent::Initialized => "initialized".into(),
        CacheEvent::Freshness(f) => format!("freshness {}", freshness_word(f)),
        CacheEvent::Failed(e) => format!("failed {}", err_kind(e)),
        _ => "other".into(),
    };
    log.line(&format!("Y {pid} {t} {rest}"));
}

/// The worker's cache: logs every event until `stop()` says so, then waits
/// (at most `settle`) for the cache to be current, closes it, logs what was
/// still queued, its final view and how it ended.
pub(crate) fn run_cache(client: &CuratorFramework, log: &LineLog, pid: u32, settle: Duration, stop: impl Fn() -> bool) {
    let cache = match CuratorCache::builder(client, CACHE_ROOT)
        .do_not_clear_on_close()
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            log.line(&format!("Y {pid} {} failed {}", now_ns(), err_kind(&e)));
            return;
        }
    };
    let events = cache.events();
    log.line(&format!("Y {pid} {} start {CACHE_ROOT}", now_ns()));
    if let Err(e) = cache.start() {
        log.line(&format!("Y {pid} {} failed {}", now_ns(), err_kind(&e)));
        return;
    }
    let pump = |until: Option<Instant>| loop {
        if until.is_some_and(|u| Instant::now() >= u) || (until.is_none() && stop()) {
            return;
        }
        match events.recv_timeout(Duration::from_millis(50)) {
            Ok(ev) => log_event(log, pid, &ev),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    };
    pump(None);
    // The writers have stopped (the stop file comes after every writer's
    // end): a sync makes every change's notification reach the cache's
    // channel before its reply (the framework's order), then the cache has
    // `settle` to become current, and a moment to apply what it was told.
    let deadline = Instant::now() + settle;
    let _ = client
        .zookeeper_client()
        .sync(CACHE_ROOT)
        .map_err(|e| log::debug!("cache sync: {e}"));
    let mut current = false;
    while Instant::now() < deadline && !current {
        pump(Some((Instant::now() + Duration::from_millis(100)).min(deadline)));
        current = cache.freshness().is_current() && cache.wait_current_for(Duration::ZERO);
    }
    if current {
        pump(Some(Instant::now() + Duration::from_millis(300)));
    }
    let freshness = cache.freshness();
    let settled = current && freshness.is_current();
    cache.close();
    for ev in events.iter() {
        log_event(log, pid, &ev);
    }
    let view = cache.snapshot();
    let t = now_ns();
    for d in &view {
        log.line(&format!("Y {pid} {t} view {}", node(d)));
    }
    log.line(&format!(
        "Y {pid} {} end {} {} {}",
        now_ns(),
        if settled { "current" } else { "stale" },
        view.len(),
        freshness_word(&freshness)
    ));
}

/// The writer: random creates, sets, deletes and delete-then-creates on
/// [`KEYS`] nodes under [`CACHE_ROOT`], one request each on the session's
/// plain client (no retry: an error leaves the write's outcome unknown, and
/// the line says so), until `stop()`. Every write's data is unique
/// (`pid-seq`), so its hash names it.
pub(crate) fn run_writer(client: &CuratorFramework, log: &LineLog, pid: u32, seed: u64, stop: impl Fn() -> bool) {
    let mut rng = Rng::new(seed ^ 0x00CA_C4E0);
    let mut seq = 0u64;
    let acl = Acl::open_unsafe();
    while !stop() {
        let path = format!("{CACHE_ROOT}/n{}", rng.below(KEYS));
        let zk = client.zookeeper_client();
        let mut data = || {
            seq += 1;
            format!("{pid}-{seq}").into_bytes()
        };
        // A create or set is announced before it is sent: one never answered
        // (the worker killed -9 during the call) may have happened.
        let begin = |h: &str| log.line(&format!("G {pid} {} begin {path} {h}", now_ns()));
        let create = |data: Vec<u8>| {
            let h = hash(Some(&data));
            begin(&h);
            let r = zk.create2(&path, &data, &acl, CreateMode::Persistent);
            let (out, failed) = match r {
                Ok((_, s)) => (format!("ok {}", stat_fields(&s)), false),
                Err(e) => (format!("{} - - -", zk_err(e)), true),
            };
            log.line(&format!("G {pid} {} create {path} {out} {h}", now_ns()));
            failed
        };
        let delete = || {
            let r = zk.delete(&path, None);
            let (out, failed) = match r {
                Ok(()) => (format!("ok {}", zk.last_zxid()), false),
                Err(e) => (format!("{} -", zk_err(e)), true),
            };
            log.line(&format!("G {pid} {} delete {path} {out}", now_ns()));
            failed
        };
        let failed = match rng.below(100) {
            0..=34 => create(data()),
            35..=69 => {
                let d = data();
                let h = hash(Some(&d));
                begin(&h);
                let (out, failed) = match zk.set_data(&path, &d, None) {
                    Ok(s) => (format!("ok {}", stat_fields(&s)), false),
                    Err(e) => (format!("{} - - -", zk_err(e)), true),
                };
                log.line(&format!("G {pid} {} set {path} {out} {h}", now_ns()));
                failed
            }
            70..=84 => delete(),
            _ => delete() | create(data()),
        };
        // Paced (the caches' reads and logs share the machine with the
        // locks), and slower after an error: a writer cut off does not spin.
        let think = THINK_MS.0 + rng.below(THINK_MS.1 - THINK_MS.0) + if failed { 100 } else { 0 };
        std::thread::sleep(Duration::from_millis(think));
    }
    log.line(&format!("G {pid} {} end", now_ns()));
}

/// Creates [`CACHE_ROOT`] (an existing one is kept).
pub(crate) fn prepare(cs: &str) -> Result<(), String> {
    crate::resource::ensure_root(cs, CACHE_ROOT)
}

/// Waits until every pid in `pids` has logged every one of `ends` (`G
/// end`: the cache's writer; `J stop`: the incrementer; `L settled`: the
/// registrations' final check) in `dir`'s worker logs, or until `deadline`; returns the
/// pids that did not.
pub(crate) fn wait_writers(dir: &Path, pids: &[u32], ends: &[&str], deadline: Instant) -> Vec<u32> {
    let left = || -> Vec<u32> {
        let ended = writers_ended(dir, ends);
        pids.iter().copied().filter(|p| !ended.contains(p)).collect()
    };
    zk_testing::wait_until(deadline.saturating_duration_since(Instant::now()), || left().is_empty());
    left()
}

/// The pids that logged every one of `ends` (`G pid t end`, `J pid t stop`,
/// `L pid t settled`) in `dir`'s worker logs.
fn writers_ended(dir: &Path, ends: &[&str]) -> std::collections::HashSet<u32> {
    let mut seen: std::collections::HashMap<u32, std::collections::HashSet<String>> = Default::default();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Default::default();
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !(name.starts_with("worker-") && name.ends_with(".log")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines().rev().take(400) {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() == 4 {
                let end = format!("{} {}", f[0], f[3]);
                if ends.contains(&end.as_str()) {
                    if let Ok(p) = f[1].parse::<u32>() {
                        seen.entry(p).or_default().insert(end);
                    }
                }
            }
        }
    }
    seen.into_iter()
        .filter(|(_, s)| ends.iter().all(|e| s.contains(*e)))
        .map(|(p, _)| p)
        .collect()
}

/// Reads the server's subtree under [`CACHE_ROOT`] (stats and data hashes)
/// into `dir/cache-server.log`: `U t count`, then one `T path czxid mzxid
/// version hash` per node. Returns the number of nodes.
pub(crate) fn read_final(cs: &str, dir: &Path) -> Result<usize, String> {
    let c = client(cs)?;
    let zk = c.zookeeper_client();
    let mut out = Vec::new();
    let mut queue = vec![CACHE_ROOT.to_string()];
    let r = (|| {
        while let Some(p) = queue.pop() {
            let (data, stat) = match zk.get_data(&p) {
                Ok(x) => x,
                Err(zk_framework::Error::NoNode { .. }) => continue,
                Err(e) => return Err(format!("{p}: {e}")),
            };
            out.push(format!("T {p} {} {}", stat_fields(&stat), hash(Some(&data))));
            for ch in zk.get_children(&p).map_err(|e| format!("{p}: {e}"))? {
                queue.push(format!("{p}/{ch}"));
            }
        }
        Ok(())
    })();
    c.close();
    r?;
    let mut text = String::new();
    let _ = writeln!(text, "U {} {}", now_ns(), out.len());
    for l in &out {
        let _ = writeln!(text, "{l}");
    }
    std::fs::write(dir.join("cache-server.log"), text).map_err(|e| e.to_string())?;
    Ok(out.len())
}
