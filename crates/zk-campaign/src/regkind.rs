//! The registration kind (`--registration`): in each worker, a thread that
//! keeps an ephemeral `PersistentNode` under [`REG_ROOT`] for a few seconds,
//! closes it and starts the next one (a new path each time: `w<pid>-<gen>`),
//! logging every `registration()` event with the session it was received in
//! (`L` lines); in the coordinator, an observer: a `CuratorCache` on
//! [`REG_ROOT`] on a client of its own, straight to the server (no fault
//! proxy), logging what it shows (`M` lines, `registration-observer.log`).
//! The lines and the rules that judge them are described in
//! `checker/registration.rs`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::cell::Cell;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::proto::CreateMode;
use zk_framework::CuratorFramework;
use zk_recipes::{CacheEvent, ChildData, CuratorCache};
use zk_recipes::{PersistentNode, Registration};

use crate::cachekind::freshness_word;
use crate::paths::REG_ROOT;
use crate::prng::Rng;
use crate::record::{err_kind, now_ns, LineLog};

/// How long a worker keeps one node before it closes it, in milliseconds
/// (from, to).
const LIFE_MS: (u64, u64) = (2000, 6000);

/// One word (or two) for a registration.
fn reg_words(r: &Registration) -> String {
    match r {
        Registration::Registered { .. } => "registered".into(),
        Registration::Uncertain { why } => format!("uncertain {why:?}"),
        Registration::Absent { why } => format!(
            "absent {}",
            format!("{why:?}").split(['(', ' ', '{']).next().unwrap_or("?")
        ),
        _ => "other".into(),
    }
}

/// The worker's registrations, one node after another until `stop()`;
/// [`bound`] (from `session_timeout`) bounds the wait for the last one to be registered before its
/// close (the final check after the faults healed); then `L pid t
/// settled`, and the node is kept until `end()` (the worker's end) and at
/// least `session_timeout` after it was registered (the observer's
/// notification's bound), unless it stops being registered.
///
/// Lines: `L pid t start path`; `L pid t reg path session what [why]` (an
/// event, `session` the client's session when it was received, hex);
/// `L pid t final path registered|not session` (the last node, after the
/// writers were told to stop: whether it was registered within `settle`);
/// `L pid t closing path`; `L pid t closed path ok|error-kind`; `L pid t
/// stop`.
pub(crate) fn run_registrations(
    client: &CuratorFramework,
    log: &LineLog,
    pid: u32,
    seed: u64,
    session_timeout: Duration,
    stop: impl Fn() -> bool,
    end: impl Fn() -> bool,
) {
    let settle = bound(session_timeout);
    let mut rng = Rng::new(seed ^ 0x00BE_6157);
    let mut gen = 0u64;
    // Until the writers are told to stop; the node under way then (or a
    // new one, when the last one's life ended just then) is the final one.
    loop {
        gen += 1;
        let path = format!("{REG_ROOT}/w{pid}-{gen}");
        let node = match PersistentNode::builder(client, &path, CreateMode::Ephemeral)
            .data(format!("{pid}-{gen}").into_bytes())
            .build()
        {
            Ok(n) => n,
            Err(e) => {
                log.line(&format!("L {pid} {} failed {path} {}", now_ns(), err_kind(&e)));
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
        };
        let r = Registering {
            client,
            log,
            pid,
            events: node.events(),
            path,
            since: Cell::new(None),
        };
        log.line(&format!("L {pid} {} start {}", now_ns(), r.path));
        if let Err(e) = node.start() {
            log.line(&format!("L {pid} {} failed {} {}", now_ns(), r.path, err_kind(&e)));
        }
        let mut last = None;
        let until = Instant::now() + Duration::from_millis(LIFE_MS.0 + rng.below(LIFE_MS.1 - LIFE_MS.0));
        r.pump(until, false, &mut last, &stop);
        let stopping = stop();
        if stopping {
            r.final_check(&node, settle, &mut last, &stop);
            r.keep_until_end(session_timeout, &end);
        }
        r.close(node);
        if stopping {
            break;
        }
        std::thread::sleep(Duration::from_millis(100 + rng.below(300)));
    }
    log.line(&format!("L {pid} {} stop", now_ns()));
}

/// One of a worker's nodes while it lives: its events and the lines it logs.
struct Registering<'a> {
    client: &'a CuratorFramework,
    log: &'a LineLog,
    pid: u32,
    events: Receiver<Registration>,
    path: String,
    /// Since when it has been registered (`None`: it is not).
    since: Cell<Option<Instant>>,
}

impl Registering<'_> {
    /// Logs a registration event (`L pid t reg path session what [why]`,
    /// the session the client has as it is received).
    fn log_ev(&self, r: &Registration) {
        self.log.line(&format!(
            "L {} {} reg {} {:x} {}",
            self.pid,
            now_ns(),
            self.path,
            self.client.session_id(),
            reg_words(r)
        ));
        self.since.set(r.is_registered().then(Instant::now));
    }

    /// Logs the events until `deadline`, or until `stop()` (not
    /// `want_registered`), or until the node is registered
    /// (`want_registered`); `last` is whether the last event said registered.
    fn pump(&self, deadline: Instant, want_registered: bool, last: &mut Option<bool>, stop: &impl Fn() -> bool) {
        loop {
            if Instant::now() >= deadline || (!want_registered && stop()) || (want_registered && *last == Some(true)) {
                return;
            }
            let wait = Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now()));
            match self.events.recv_timeout(wait) {
                Ok(r) => {
                    self.log_ev(&r);
                    *last = Some(r.is_registered());
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// The end of the run: every fault has healed. The last node must be
    /// registered within `settle` (`L pid t final path registered|not
    /// session`).
    fn final_check(&self, node: &PersistentNode, settle: Duration, last: &mut Option<bool>, stop: &impl Fn() -> bool) {
        self.pump(Instant::now() + settle, true, last, stop);
        let ok = node.registration().is_registered();
        self.log.line(&format!(
            "L {} {} final {} {} {:x}",
            self.pid,
            now_ns(),
            self.path,
            if ok { "registered" } else { "not" },
            self.client.session_id()
        ));
    }

    /// Settled (`L pid t settled`): the coordinator may go on (its final
    /// reads) while the node stays until the worker's `end()`, and at least
    /// `session_timeout` after it was registered, so that the observer can
    /// show it (the checker's R3 asks it to); unless it stops being
    /// registered.
    fn keep_until_end(&self, session_timeout: Duration, end: &impl Fn() -> bool) {
        self.log.line(&format!("L {} {} settled", self.pid, now_ns()));
        let registered_at = self.since.get();
        loop {
            let held = registered_at.map_or(true, |at| at.elapsed() >= session_timeout);
            if (held && end()) || self.since.get().is_none() {
                break;
            }
            match self.events.recv_timeout(Duration::from_millis(20)) {
                Ok(r) => self.log_ev(&r),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Closes the node (`L pid t closing path`, the events left, `L pid t
    /// closed path ok|error-kind`).
    fn close(self, node: PersistentNode) {
        self.log
            .line(&format!("L {} {} closing {}", self.pid, now_ns(), self.path));
        let r = node.close();
        let t = now_ns();
        for ev in self.events.try_iter() {
            self.log_ev(&ev);
        }
        self.log.line(&format!(
            "L {} {t} closed {} {}",
            self.pid,
            self.path,
            r.map_or_else(|e| err_kind(&e), |()| "ok".into())
        ));
    }
}

/// Creates [`REG_ROOT`] (an existing one is kept).
pub(crate) fn prepare(cs: &str) -> Result<(), String> {
    crate::resource::ensure_root(cs, REG_ROOT)
}

fn node(d: &ChildData) -> String {
    format!("{} {} {:x}", d.path(), d.stat().czxid, d.stat().ephemeral_owner)
}

/// The observer: a cache on [`REG_ROOT`] on its own client, every event
/// logged to `dir/registration-observer.log` until `stop`, then its final
/// view. Lines: `M t start`, `M t created path czxid owner`, `M t deleted
/// path czxid owner`, `M t initialized`, `M t freshness f`, `M t view path
/// czxid owner`, `M t end current|stale`. `follow`: its client follows
/// the ensemble's configuration (the reconfigurable ensemble's members
/// change during the run).
pub(crate) fn run_observer(cs: &str, dir: &Path, session: Duration, follow: bool, stop: &AtomicBool) {
    let log = match LineLog::open(&dir.join("registration-observer.log")) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("zk-campaign: registration observer: {e}");
            return;
        }
    };
    let c = match CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(session * 4)
        .connection_timeout(session)
        .ensemble_tracker(follow)
        .ensemble_tracker_delay(Duration::from_millis(100))
        .retry_policy(zk_framework::ExponentialBackoffRetry::new(
            Duration::from_millis(100),
            5,
        ))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            log.line(&format!("M {} failed {e}", now_ns()));
            return;
        }
    };
    let cache = match CuratorCache::builder(&c, REG_ROOT).do_not_clear_on_close().build() {
        Ok(x) => x,
        Err(e) => {
            log.line(&format!("M {} failed {}", now_ns(), err_kind(&e)));
            c.close();
            return;
        }
    };
    let events = cache.events();
    log.line(&format!("M {} start", now_ns()));
    if let Err(e) = cache.start() {
        log.line(&format!("M {} failed {}", now_ns(), err_kind(&e)));
    }
    let log_ev = |ev: &CacheEvent| {
        let t = now_ns();
        let rest = match ev {
            CacheEvent::Created(d) => format!("created {}", node(d)),
            CacheEvent::Deleted(d) => format!("deleted {}", node(d)),
            CacheEvent::Changed { new, .. } => format!("changed {}", node(new)),
            CacheEvent::Initialized => "initialized".into(),
            CacheEvent::Freshness(f) => format!("freshness {}", freshness_word(f)),
            CacheEvent::Failed(e) => format!("failed {}", err_kind(e)),
            _ => "other".into(),
        };
        log.line(&format!("M {t} {rest}"));
    };
    while !stop.load(Ordering::SeqCst) {
        match events.recv_timeout(Duration::from_millis(50)) {
            Ok(ev) => log_ev(&ev),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = c.zookeeper_client().sync(REG_ROOT);
    let current = cache.wait_current_for(session * 2);
    for ev in events.try_iter() {
        log_ev(&ev);
    }
    cache.close();
    for ev in events.try_iter() {
        log_ev(&ev);
    }
    let t = now_ns();
    for d in cache.snapshot() {
        if d.path() != REG_ROOT {
            log.line(&format!("M {t} view {}", node(&d)));
        }
    }
    log.line(&format!(
        "M {} end {}",
        now_ns(),
        if current { "current" } else { "stale" }
    ));
    c.close();
}

/// The registration nodes left under [`REG_ROOT`] (every one is a leak once
/// the workers closed theirs and the killed ones' sessions expired): polls
/// until none is left or `wait` passes.
pub(crate) fn leaked(cs: &str, wait: Duration) -> Result<Vec<String>, String> {
    crate::leaks::children_left(cs, REG_ROOT, wait)
}

/// The bound within which a registration must be back after a fault heals
/// (the checker's [`zk_campaign::checker::registration_bound`]).
pub(crate) fn bound(session: Duration) -> Duration {
    Duration::from_nanos(zk_campaign::checker::registration_bound(session.as_nanos() as u64))
}
