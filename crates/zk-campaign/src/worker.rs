//! The worker process: threads that take every lock kind (and leadership of
//! an election) at random and log each attempt and critical section.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_recipes::{
    Error as LockError, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    LockEvent, LockGuard, LockStatus, MultiLock, RawLock,
};
use zk_recipes::{LeaderEvent, LeaderLatch, LeaderStatus, NotLeaderReason, SuspendPolicy};

use crate::cli::Opts;
use crate::paths::{resource_path, ELECTION_PATH, MUTEX_PATH, RW_PATH, SEM_PATH};
use crate::prng::Rng;
use crate::record::{err_kind, hex, now_ns, status_str, LineLog};
use zk_framework::proto::CreateMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mutex,
    Read,
    Write,
    Semaphore,
    Multi,
    /// Leadership of a `LeaderLatch` election: a section from the grant
    /// (certainly leader) to the close or the first sign it may not lead.
    Leader,
}

impl Kind {
    fn mode(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Semaphore => "semaphore",
            Kind::Multi => "multi",
            Kind::Leader => "leader",
        }
    }

    fn lock(self) -> &'static str {
        match self {
            Kind::Mutex => MUTEX_PATH,
            Kind::Read | Kind::Write => RW_PATH,
            Kind::Semaphore => SEM_PATH,
            Kind::Multi => "multi",
            Kind::Leader => ELECTION_PATH,
        }
    }

    fn pick(rng: &mut Rng) -> Kind {
        match rng.below(100) {
            0..=22 => Kind::Mutex,
            23..=40 => Kind::Read,
            41..=54 => Kind::Write,
            55..=72 => Kind::Semaphore,
            73..=89 => Kind::Multi,
            _ => Kind::Leader,
        }
    }
}

struct Worker {
    pid: u32,
    slot: usize,
    log: LineLog,
    client: CuratorFramework,
    stop: AtomicBool,
    acquire_timeout: Duration,
    /// Percent of acquires with a short timeout (0 or 10-2000 ms).
    short_timeout_percent: u64,
    hold_max_ms: u64,
    /// Per mille of sections held for 0.5–1.5 session timeouts, so that faults
    /// catch holders in the middle of their work.
    long_hold_permille: u64,
    /// The same for leaderships (the composed faults pick leaders too).
    long_lead_permille: u64,
    session: Duration,
    think_max_ms: u64,
    /// How long a holder whose lock looks lost waits for the loss signal.
    grace: Duration,
}

/// One lock of a critical section (a `MultiLock` has three).
struct Member {
    lock: &'static str,
    token: i64,
    /// The lock node's name (`-` when it is not known).
    node: String,
}

impl Member {
    fn new(lock: &'static str, token: i64, node: &str) -> Member {
        let name = node.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("-");
        Member {
            lock,
            token,
            node: name.to_string(),
        }
    }
}

/// How often a holder calls `check()` while it works: the resolution of the
/// "last `Ok`" the checker measures the safety margin from.
const CHECK_EVERY: Duration = Duration::from_millis(5);

/// The resource nodes one exclusive section creates (one per lock of a
/// multi-lock), in one transaction guarded by the lock: `RESOURCE/<lock>/t<token>-<pid>-<thread>-<attempt>-`
/// plus ZooKeeper's sequence number, so that the checker reads back in which
/// order the tokens reached the resource.
fn resource_nodes(nodes: &str, tokens: &[i64], kind: Kind, pid: u32, thr: usize, att: u64) -> Vec<String> {
    members(kind, nodes, tokens)
        .iter()
        .map(|m| format!("{}/t{}-{pid}-{thr}-{att}-", resource_path(m.lock), m.token))
        .collect()
}

/// The lock path of a member of the campaign's multi-lock, from its node's path.
fn member_lock(node: &str) -> &'static str {
    [MUTEX_PATH, RW_PATH, SEM_PATH]
        .into_iter()
        .find(|p| node.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')))
        .unwrap_or("?")
}

/// The members of a held lock, from its guard's nodes (joined by `,` for a
/// multi-lock) and tokens (in the same order).
fn members(kind: Kind, nodes: &str, tokens: &[i64]) -> Vec<Member> {
    match kind {
        Kind::Multi => nodes
            .split(',')
            .zip(tokens)
            .map(|(n, t)| Member::new(member_lock(n), *t, n))
            .collect(),
        _ => vec![Member::new(kind.lock(), tokens.first().copied().unwrap_or(0), nodes)],
    }
}

/// What a holder hears about its lock, as the checker reads it: a lock
/// event, and for a leader's `Leader { term }` (read as `Reconnected`) its
/// term.
#[derive(Debug, Clone, Copy)]
struct Heard {
    ev: LockEvent,
    term: Option<i64>,
}

/// Where a holder hears about its lock: its guard's loss receiver (for a
/// multi-lock, the events of every member on one channel), or a leader's
/// events as translated on its turn's thread.
enum Source {
    Lock(Receiver<LockEvent>),
    Leader(Receiver<Heard>),
}

impl Source {
    /// The next event: one already queued (`wait` `None`), or within
    /// `wait`. `Err(false)`: none came; `Err(true)`: the channel is closed.
    fn receive(&self, wait: Option<Duration>) -> Result<Heard, bool> {
        fn take<T>(rx: &Receiver<T>, wait: Option<Duration>) -> Result<T, bool> {
            match wait {
                None => rx.try_recv().map_err(|e| e.is_disconnected()),
                Some(d) => rx.recv_timeout(d).map_err(|e| e.is_disconnected()),
            }
        }
        match self {
            Source::Lock(rx) => take(rx, wait).map(|ev| Heard { ev, term: None }),
            Source::Leader(rx) => take(rx, wait),
        }
    }
}

/// What the holder hears, and the guard's status.
struct Signal {
    rx: Source,
    closed: bool,
    told: Option<(u64, LockEvent)>,
    told_late: Option<u64>,
    st0: &'static str,
    st_end: &'static str,
    /// The last moment the channel was seen empty (taken before the call
    /// that found it so): an event received later was sent after it.
    seen_empty: u64,
}

impl Signal {
    fn new(rx: Source, st0: LockStatus) -> Signal {
        Signal {
            rx,
            closed: false,
            told: None,
            told_late: None,
            st0: status_str(st0),
            st_end: status_str(st0),
            seen_empty: now_ns(),
        }
    }

    /// The next event if one is queued, with the bounds of when it was sent
    /// (the last moment the channel was seen empty, its receipt).
    fn next(&mut self) -> Option<(Heard, u64, u64)> {
        self.receive(None)
    }

    /// Waits up to `d` for an event, as [`Signal::next`].
    fn wait(&mut self, d: Duration) -> Option<(Heard, u64, u64)> {
        self.receive(Some(d))
    }

    /// [`Signal::next`] (`wait` `None`) or [`Signal::wait`].
    fn receive(&mut self, wait: Option<Duration>) -> Option<(Heard, u64, u64)> {
        let before = now_ns();
        match self.rx.receive(wait) {
            Ok(h) => Some((h, self.seen_empty, now_ns())),
            Err(false) => {
                self.seen_empty = before;
                None
            }
            Err(true) => {
                self.closed = true;
                None
            }
        }
    }
}

fn is_loss(ev: LockEvent) -> bool {
    matches!(ev, LockEvent::Suspended | LockEvent::Lost)
}

/// Before a release: waits until `until` for a `Suspended`/`Lost` and records
/// it as `told_late` (while holding, [`Section::hold`] listens itself).
fn wait_for_loss(sig: &mut Signal, until: Instant) {
    loop {
        let now = Instant::now();
        if now >= until || sig.closed || sig.told.is_some() || sig.told_late.is_some() {
            return;
        }
        match sig.rx.receive(Some(until - now)) {
            Ok(h) if is_loss(h.ev) => {
                sig.told_late = Some(now_ns());
                return;
            }
            Ok(_) => {}
            Err(false) => return,
            Err(true) => sig.closed = true,
        }
    }
}

/// At grant: takes every pending event without waiting, up to the first
/// loss, which it records (at `at`): the holder was told at grant.
fn drain(sig: &mut Signal, at: u64) {
    while sig.told.is_none() {
        match sig.next() {
            Some((h, _, _)) if is_loss(h.ev) => sig.told = Some((at, h.ev)),
            Some(_) => {}
            None => break,
        }
    }
}

/// What the holder's status says, for watching after a cut: told it holds,
/// in doubt, or lost for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stand {
    Held,
    Doubt,
    Lost,
}

fn lock_stand(s: LockStatus) -> Stand {
    match s {
        LockStatus::Held => Stand::Held,
        LockStatus::Uncertain => Stand::Doubt,
        LockStatus::Lost => Stand::Lost,
    }
}

/// A run of claims (told it holds) with no sign of doubt between them,
/// after a section was cut short: one `C` line per lock.
struct Span {
    /// The kinds of claim, in the order first met.
    what: Vec<&'static str>,
    /// The term claimed (a leader's), if any.
    term: Option<i64>,
    first: (u64, u64),
    last: (u64, u64),
    count: u64,
}

struct Attempt<'a> {
    w: &'a Worker,
    thr: usize,
    att: u64,
    kind: Kind,
    started: Instant,
}

impl Attempt<'_> {
    fn result(&self, outcome: &str, err: &str) {
        let wait = self.started.elapsed().as_nanos() as u64;
        self.w.line(&format!(
            "R {} {} {} {} {} {} {outcome} {err} {wait}",
            self.w.pid,
            self.thr,
            self.att,
            self.kind.lock(),
            self.kind.mode(),
            now_ns()
        ));
    }

    /// Records the grant and the section start (the loss receiver is already
    /// subscribed); an event already queued means the holder was told at grant.
    fn begin(&self, members: Vec<Member>, mut sig: Signal) -> Section<'_> {
        self.result("acquired", "-");
        let sid = format!("{:x}", self.w.client.session_id());
        let start = now_ns();
        drain(&mut sig, start);
        for m in &members {
            self.w.line(&format!(
                "S {} {} {} {} {} {} {sid} {start} {}",
                self.w.pid,
                self.thr,
                self.att,
                m.lock,
                self.kind.mode(),
                m.token,
                m.node
            ));
        }
        Section {
            a: self,
            members,
            sig,
            sid,
            start,
            end: start,
            connected: true,
            last_ok: None,
            first_bad: None,
            write: "-".into(),
            watched: None,
            span: None,
        }
    }
}

struct Section<'a> {
    a: &'a Attempt<'a>,
    members: Vec<Member>,
    sig: Signal,
    sid: String,
    start: u64,
    end: u64,
    connected: bool,
    /// When `check()` last said `Ok` (before the first error).
    last_ok: Option<u64>,
    /// When `check()` first said anything but `Ok`.
    first_bad: Option<u64>,
    /// The guarded write's outcome: `ok`, an error kind, `-` (none made).
    write: String,
    /// When the holder stopped watching its lock after a cut (`None`: it
    /// did not watch).
    watched: Option<u64>,
    /// The claim span under way while watching.
    span: Option<Span>,
}

impl Section<'_> {
    /// "Works" for `hold`: calls `check` at grant and then every [`CHECK_EVERY`]
    /// (recording the last `Ok` and the first error), makes its guarded write
    /// to the resource right after its first `Ok` (`write`), and stops early at
    /// the first sign that the lock may not be held (a check that is not `Ok`,
    /// or a `Suspended`/`Lost` on the loss receiver). Then, unless the lock is
    /// lost for good, it watches the lock ([`Section::watch`]). Then records
    /// the guard's status.
    fn hold(
        &mut self,
        hold: Duration,
        status: impl Fn() -> LockStatus,
        stand: impl Fn() -> Stand,
        check: impl Fn() -> Result<(), LockError>,
        term: impl Fn() -> Option<i64>,
        mut write: impl FnMut() -> String,
    ) {
        let until = Instant::now() + hold;
        let mut wrote = false;
        loop {
            let ok = check().is_ok();
            let t = now_ns();
            if !ok {
                self.first_bad = Some(t);
                break;
            }
            self.last_ok = Some(t);
            if self.sig.told.is_some() || self.sig.closed {
                break;
            }
            if !wrote {
                wrote = true;
                self.write = write();
            }
            let now = Instant::now();
            if now >= until {
                break;
            }
            match self.sig.wait(CHECK_EVERY.min(until - now)) {
                Some((h, _, _)) if is_loss(h.ev) => {
                    self.sig.told = Some((now_ns(), h.ev));
                    break;
                }
                _ => {}
            }
        }
        self.end = now_ns();
        // Before the release: a worker killed from here on has finished its
        // work, and the lock may be free before its `E` lines are written.
        let a = self.a;
        a.w.line(&format!("D {} {} {} {}", a.w.pid, a.thr, a.att, self.end));
        let cut = self.first_bad.is_some() || self.sig.told.is_some();
        let lost = matches!(self.sig.told, Some((_, LockEvent::Lost)));
        if cut && !lost && !self.sig.closed {
            self.watch(until, &stand, &check, &term);
        }
        self.sig.st_end = status_str(status());
    }

    /// After a cut: watches the lock as an application waiting for
    /// `Reconnected` would, polling the status and `check()` every
    /// [`CHECK_EVERY`] and reading every event, until the lock is lost for
    /// good, or it is held again and the hold time is over, or a session
    /// timeout after the cut (and the hold time) has passed. Every claim (an
    /// event saying it holds, a `Held` status, an `Ok`) goes into a claim
    /// span, logged at the next sign of doubt or at the end (`C` lines).
    fn watch(
        &mut self,
        until: Instant,
        stand: &impl Fn() -> Stand,
        check: &impl Fn() -> Result<(), LockError>,
        term: &impl Fn() -> Option<i64>,
    ) {
        let stop_at = until.max(Instant::now() + self.a.w.session);
        let mut lost = false;
        'watch: loop {
            while let Some((h, lo, hi)) = self.sig.next() {
                if self.heard(h, lo, hi) {
                    lost = true;
                    break 'watch;
                }
            }
            if self.sig.closed {
                break;
            }
            let t0 = now_ns();
            let st = stand();
            let t1 = now_ns();
            match st {
                Stand::Held => self.claim("held", term(), t0, t1),
                Stand::Doubt => self.doubt("doubt"),
                Stand::Lost => {
                    lost = true;
                    break;
                }
            }
            let t0 = now_ns();
            let ok = check().is_ok();
            let t1 = now_ns();
            if ok {
                self.claim("ok", term(), t0, t1);
            } else {
                self.doubt("doubt");
            }
            let now = Instant::now();
            if now >= stop_at || (self.span.is_some() && now >= until) {
                break;
            }
            if let Some((h, lo, hi)) = self.sig.wait(CHECK_EVERY.min(stop_at - now)) {
                if self.heard(h, lo, hi) {
                    lost = true;
                    break;
                }
            }
        }
        self.doubt(if lost { "lost" } else { "end" });
        self.watched = Some(now_ns());
    }

    /// An event heard while watching, sent at some instant in `lo..=hi`;
    /// `true` when it says the lock is lost for good.
    fn heard(&mut self, h: Heard, lo: u64, hi: u64) -> bool {
        match h.ev {
            LockEvent::Reconnected => {
                let what = if h.term.is_some() { "leader" } else { "reconnected" };
                self.claim(what, h.term, lo, hi);
                false
            }
            LockEvent::Suspended => {
                if self.sig.told.is_none() {
                    self.sig.told = Some((hi, h.ev));
                }
                self.doubt("doubt");
                false
            }
            LockEvent::Lost => {
                if self.sig.told.is_none() {
                    self.sig.told = Some((hi, h.ev));
                }
                true
            }
            _ => false,
        }
    }

    /// A claim made at some instant in `lo..=hi`, for `term` (a leader's) or
    /// the section's tokens: extends the span under way, or begins one (a
    /// claim for another term ends the span before it).
    fn claim(&mut self, what: &'static str, term: Option<i64>, lo: u64, hi: u64) {
        if self.span.as_ref().is_some_and(|s| s.term != term) {
            self.doubt("term");
        }
        let span = self.span.get_or_insert(Span {
            what: Vec::new(),
            term,
            first: (lo, hi),
            last: (lo, hi),
            count: 0,
        });
        if !span.what.contains(&what) {
            span.what.push(what);
        }
        span.last = (lo.max(span.last.0), hi.max(span.last.1));
        span.count += 1;
    }

    /// Ends the claim span under way, if any (`ended`: what came next), and
    /// logs it: one `C` line per lock.
    fn doubt(&mut self, ended: &str) {
        let Some(span) = self.span.take() else { return };
        let a = self.a;
        let what = span.what.join("+");
        for m in &self.members {
            a.w.line(&format!(
                "C {} {} {} {} {} {} {} {what} {} {} {} {} {} {ended}",
                a.w.pid,
                a.thr,
                a.att,
                m.lock,
                a.kind.mode(),
                span.term.unwrap_or(m.token),
                self.sid,
                span.first.0,
                span.first.1,
                span.last.0,
                span.last.1,
                span.count,
            ));
        }
    }

    /// Before releasing: a holder whose lock looks lost (status not `Held`, or
    /// the client disconnected) and that heard nothing yet waits a bounded time
    /// for the signal, so a late signal is told apart from none at all.
    fn before_release(&mut self) {
        self.connected = self.a.w.client.is_connected();
        if self.sig.told.is_none() && (!self.connected || matches!(self.sig.st_end, "Uncertain" | "Lost")) {
            wait_for_loss(&mut self.sig, Instant::now() + self.a.w.grace);
        }
    }

    fn finish(self, release: &Result<(), LockError>, took: Duration) {
        let rel = match release {
            Ok(()) => "ok".to_string(),
            Err(e) => err_kind(e),
        };
        let a = self.a;
        let sig = &self.sig;
        let (told, ev) = match sig.told {
            Some((t, ev)) => (t.to_string(), format!("{ev:?}")),
            None => ("-".into(), "-".into()),
        };
        let late = sig.told_late.map_or("-".to_string(), |t| t.to_string());
        let last_ok = self.last_ok.map_or("-".to_string(), |t| t.to_string());
        let first_bad = self.first_bad.map_or("-".to_string(), |t| t.to_string());
        let watched = self.watched.map_or("-".to_string(), |t| t.to_string());
        for m in &self.members {
            a.w.line(&format!(
                "E {} {} {} {} {} {} {} {} {} {told} {ev} {late} {} {} {} {rel} {} {last_ok} {first_bad} {} {watched}",
                a.w.pid,
                a.thr,
                a.att,
                m.lock,
                a.kind.mode(),
                m.token,
                self.sid,
                self.start,
                self.end,
                sig.st0,
                sig.st_end,
                u8::from(self.connected),
                took.as_nanos(),
                self.write,
            ));
        }
    }
}

/// A leader's event as the lock checker reads a holder's: any sign that it
/// may not lead (uncertain, or not leader: given up at a suspension, or lost)
/// ends the section; certainly leader again is a reconnection, a claim for
/// its term.
fn leader_heard(ev: LeaderEvent) -> Heard {
    let (ev, term) = match ev {
        LeaderEvent::Leader { term } => (LockEvent::Reconnected, Some(term)),
        LeaderEvent::Uncertain
        | LeaderEvent::NotLeader {
            reason: NotLeaderReason::Suspended,
        } => (LockEvent::Suspended, None),
        _ => (LockEvent::Lost, None),
    };
    Heard { ev, term }
}

fn lock_status(s: LeaderStatus) -> LockStatus {
    match s {
        LeaderStatus::Leader => LockStatus::Held,
        LeaderStatus::Uncertain => LockStatus::Uncertain,
        LeaderStatus::NotLeader => LockStatus::Lost,
    }
}

impl Worker {
    fn line(&self, s: &str) {
        self.log.line(s);
    }

    /// One turn in the election: join (a new latch, either suspension
    /// policy), wait up to `timeout` to lead, lead for `hold` (stopping at the
    /// first sign of loss), close. The section's token is the term. `false`
    /// when the attempt failed with an error.
    fn lead(&self, a: &Attempt<'_>, rng: &mut Rng, timeout: Duration, hold: Duration) -> bool {
        let policy = if rng.below(2) == 0 {
            SuspendPolicy::Standard
        } else {
            SuspendPolicy::Session
        };
        let latch = match LeaderLatch::builder(&self.client, ELECTION_PATH)
            .id(format!("{}-{}-{}", self.pid, a.thr, a.att))
            .policy(policy)
            .build()
        {
            Ok(l) => l,
            Err(e) => {
                a.result("error", &err_kind(&e));
                return false;
            }
        };
        let events = latch.events();
        if let Err(e) = latch.start() {
            a.result("error", &err_kind(&e));
            return false;
        }
        let ok = match latch.await_leadership_for(timeout) {
            Ok(true) => return self.leadership(a, &latch, events, hold),
            Ok(false) => {
                a.result("timeout", "-");
                true
            }
            Err(e) => {
                a.result("error", &err_kind(&e));
                false
            }
        };
        let _ = latch.close();
        ok
    }

    /// A leadership granted: its section from "certainly leader" for `hold`,
    /// read through the latch's events as a lock holder's, its guarded write
    /// made with its term; then the latch closed. `false` when the events
    /// could not be translated (no thread).
    fn leadership(&self, a: &Attempt<'_>, latch: &LeaderLatch, events: Receiver<LeaderEvent>, hold: Duration) -> bool {
        let (rx, granted_term, translator) = match translate(events) {
            Ok(t) => t,
            Err(e) => {
                log::warn!("the leader-events thread did not start: {e}");
                a.result("error", "Spawn");
                let _ = latch.close();
                return false;
            }
        };
        let status = || lock_status(latch.status());
        let sig = Signal::new(Source::Leader(rx), status());
        let term = latch.term().or(granted_term).unwrap_or(0);
        let node = latch.node().unwrap_or_default();
        let mut s = a.begin(vec![Member::new(ELECTION_PATH, term, &node)], sig);
        // The leader's guarded write, as a lock holder's: one node in
        // the election's resource, its term in the name.
        let write = || {
            let path = format!(
                "{}/t{term}-{}-{}-{}-",
                resource_path(ELECTION_PATH),
                self.pid,
                a.thr,
                a.att
            );
            match latch
                .transaction()
                .and_then(|tx| tx.create(&path, Vec::new(), CreateMode::PersistentSequential).commit())
            {
                Ok(_) => "ok".to_string(),
                Err(e) => err_kind(&e),
            }
        };
        // A latch that gave its leadership up at a suspension
        // (NotLeader) may lead again in the same term: only an event
        // says it is lost for good.
        let stand = || match latch.status() {
            LeaderStatus::Leader => Stand::Held,
            _ => Stand::Doubt,
        };
        s.hold(hold, status, stand, || latch.check(), || latch.term(), write);
        s.before_release();
        let released = Instant::now();
        let r = leader_release(latch.status());
        let _ = latch.close();
        s.finish(&r, released.elapsed());
        let _ = translator.join();
        true
    }

    /// This attempt's timeout: mostly the full one, sometimes short or zero.
    fn pick_timeout(&self, rng: &mut Rng) -> Duration {
        if rng.below(100) >= self.short_timeout_percent {
            self.acquire_timeout
        } else if rng.below(5) == 0 {
            Duration::ZERO
        } else {
            rng.ms(10, 2000).min(self.acquire_timeout)
        }
    }

    /// A lock thread: attempts at random until the worker stops, each on a
    /// kind of lock or the election, with a hold and a timeout of its own,
    /// and a pause after it. `Err`: its locks could not be made.
    fn run_thread(&self, thr: usize, seed: u64) -> Result<(), String> {
        let locks = Locks::new(&self.client).map_err(|e| e.to_string())?;
        let mut rng = Rng::new(seed);
        let mut att = 0u64;
        while !self.stop.load(Ordering::SeqCst) {
            att += 1;
            let (kind, hold, timeout) = self.plan_attempt(&mut rng);
            // Every acquire is timed: its deadline goes into the history.
            self.line(&format!(
                "A {} {thr} {att} {} {} {} {}",
                self.pid,
                kind.lock(),
                kind.mode(),
                now_ns(),
                timeout.as_nanos()
            ));
            let a = Attempt {
                w: self,
                thr,
                att,
                kind,
                started: Instant::now(),
            };
            let failed = match kind {
                Kind::Mutex => self.acquired(&a, locks.mutex.try_acquire_for(timeout), hold),
                Kind::Read => self.acquired(&a, locks.rw.read_lock().try_acquire_for(timeout), hold),
                Kind::Write => self.acquired(&a, locks.rw.write_lock().try_acquire_for(timeout), hold),
                Kind::Semaphore => self.acquired(&a, locks.sem.try_acquire_for(timeout), hold),
                Kind::Multi => self.acquired(&a, locks.multi.try_acquire_for(timeout), hold),
                Kind::Leader => !self.lead(&a, &mut rng, timeout, hold),
            };
            // Think; a little longer after an error, so a dead server is not
            // hammered in a tight loop.
            let think = rng.below(self.think_max_ms + 1) + if failed { 20 + rng.below(80) } else { 0 };
            std::thread::sleep(Duration::from_millis(think));
        }
        Ok(())
    }

    /// The next attempt's kind, hold (now and then a long one) and timeout.
    fn plan_attempt(&self, rng: &mut Rng) -> (Kind, Duration, Duration) {
        let kind = Kind::pick(rng);
        let long = if kind == Kind::Leader {
            self.long_lead_permille
        } else {
            self.long_hold_permille
        };
        let hold = if rng.below(1000) < long {
            rng.scale(self.session, 0.5, 1.5)
        } else {
            Duration::from_millis(rng.below(self.hold_max_ms + 1))
        };
        (kind, hold, self.pick_timeout(rng))
    }

    /// An acquire's result: a section held for `hold` (or the timeout, or
    /// the error, logged). Every kind hands out the same guard type (over
    /// its own lock): status, loss receiver, nodes and tokens come from the
    /// guard (a multi-lock's: its worst member's status, every member's
    /// events, node and token). Returns whether the acquire failed.
    fn acquired<L: RawLock + ?Sized>(
        &self,
        a: &Attempt<'_>,
        r: Result<Option<LockGuard<'_, L>>, LockError>,
        hold: Duration,
    ) -> bool {
        match r {
            Ok(Some(g)) => {
                self.held(a, g, hold);
                false
            }
            Ok(None) => {
                a.result("timeout", "-");
                false
            }
            Err(e) => {
                a.result("error", &err_kind(&e));
                true
            }
        }
    }

    /// A granted lock's section: held for `hold` (see [`Section::hold`]),
    /// its guarded write (all but a read) one transaction creating a
    /// resource node per lock, then released.
    fn held<L: RawLock + ?Sized>(&self, a: &Attempt<'_>, g: LockGuard<'_, L>, hold: Duration) {
        let kind = a.kind;
        let sig = Signal::new(Source::Lock(g.events()), g.status());
        let mut s = a.begin(members(kind, &g.lock_path(), &g.fencing_tokens()), sig);
        let write = || {
            if kind == Kind::Read {
                return "-".to_string();
            }
            let tx = resource_nodes(&g.lock_path(), &g.fencing_tokens(), kind, self.pid, a.thr, a.att)
                .into_iter()
                .fold(g.transaction(), |tx, p| {
                    tx.create(&p, Vec::new(), CreateMode::PersistentSequential)
                });
            match tx.commit() {
                Ok(_) => "ok".to_string(),
                Err(e) => err_kind(&e),
            }
        };
        s.hold(
            hold,
            || g.status(),
            || lock_stand(g.status()),
            || g.check(),
            || None,
            write,
        );
        s.before_release();
        let released = Instant::now();
        let r = g.release();
        s.finish(&r, released.elapsed());
    }
}

/// A lock thread's locks: one of each kind, and the multi-lock's own
/// instances on the same paths (a mutex, a semaphore mutex, the write half).
struct Locks {
    mutex: InterProcessMutex,
    rw: InterProcessReadWriteLock,
    sem: InterProcessSemaphoreMutex,
    multi: MultiLock,
}

impl Locks {
    fn new(c: &CuratorFramework) -> Result<Locks, LockError> {
        let mutex = InterProcessMutex::new(c, MUTEX_PATH)?;
        let rw = InterProcessReadWriteLock::new(c, RW_PATH)?;
        let sem = InterProcessSemaphoreMutex::new(c, SEM_PATH)?;
        let m_rw = InterProcessReadWriteLock::new(c, RW_PATH)?;
        let multi = MultiLock::new(vec![
            Arc::new(InterProcessMutex::new(c, MUTEX_PATH)?) as Arc<dyn InterProcessLock>,
            Arc::new(InterProcessSemaphoreMutex::new(c, SEM_PATH)?) as Arc<dyn InterProcessLock>,
            Arc::new(m_rw.write_lock().clone()) as Arc<dyn InterProcessLock>,
        ])?;
        Ok(Locks { mutex, rw, sem, multi })
    }
}

/// The latch's events translated into what the lock checker reads, on a
/// thread that ends with the latch's channel (named: the soak counts a
/// turn's threads, `leader-*`, apart from the worker's standing ones). The
/// events so far are read here for the grant's term (a leadership lost
/// between the grant and `term()`, its node broken at once, has none any
/// more) and handed on first.
fn translate(
    events: Receiver<LeaderEvent>,
) -> std::io::Result<(Receiver<Heard>, Option<i64>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let early: Vec<LeaderEvent> = events.try_iter().collect();
    let granted_term = early.iter().find_map(|ev| match ev {
        LeaderEvent::Leader { term } => Some(*term),
        _ => None,
    });
    let translator = std::thread::Builder::new()
        .name("leader-events".into())
        .spawn(move || {
            for ev in early.into_iter().chain(events) {
                if tx.send(leader_heard(ev)).is_err() {
                    return;
                }
            }
        })?;
    Ok((rx, granted_term, translator))
}

/// What a lock's release would say of a leadership: held when it began,
/// lost, or uncertain.
fn leader_release(status: LeaderStatus) -> Result<(), LockError> {
    match status {
        LeaderStatus::Leader => Ok(()),
        LeaderStatus::Uncertain => Err(LockError::LockUncertain {
            path: ELECTION_PATH.into(),
        }),
        LeaderStatus::NotLeader => Err(LockError::LockLost {
            path: ELECTION_PATH.into(),
        }),
    }
}

/// A worker process: its session, its threads (the watcher, the kinds', the
/// lock threads) until the stop file or its parent's death, then `X`.
/// Exits 1 when a lock thread failed, 2 on a set-up error.
pub(crate) fn worker_main(o: &Opts) -> ExitCode {
    let (Some(connect), Some(log), Some(stop)) = (o.connect.clone(), o.log.clone(), o.stop.clone()) else {
        eprintln!("zk-campaign --worker needs --connect, --log and --stop");
        return ExitCode::from(2);
    };
    let parent = std::os::unix::process::parent_id();
    let w = match Worker::open(o, connect, &log) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("zk-campaign worker: {e}");
            return ExitCode::from(2);
        }
    };
    w.line(&format!("H {} {} {}", w.pid, w.slot, now_ns()));
    let seed = o.seed.unwrap_or(0);
    let mut failed = false;
    let writes_stop = stop.with_file_name(crate::cachekind::STOP_WRITES);
    std::thread::scope(|s| {
        let (w, stop) = (&w, &stop);
        s.spawn(move || w.watch(stop, parent));
        w.spawn_kinds(s, o, seed, &writes_stop);
        failed = w.run_lock_threads(s, o, seed);
        w.stop.store(true, Ordering::SeqCst);
    });
    // The reconfigurable ensemble's end check (its file is there only then),
    // with or without the tracker.
    w.end_connection(&stop.with_file_name(crate::reconf::FINAL_MEMBERS), o.tracker_delay);
    w.client.close();
    w.line(&format!("X {} {}", w.pid, now_ns()));
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

impl Worker {
    /// The worker's log and session (`Err`: what to say). A worker may start
    /// in the middle of a fault: it goes on even if not connected yet (its
    /// first attempts then fail with typed errors).
    fn open(o: &Opts, connect: String, log: &std::path::Path) -> Result<Worker, String> {
        let session = o.session();
        let log = LineLog::open(log).map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let client = CuratorFramework::builder()
            .connect_string(connect)
            .session_timeout(session)
            .connection_timeout(session)
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
            .ensemble_tracker(o.track_ensemble)
            .ensemble_tracker_delay(o.tracker_delay)
            .build()
            .map_err(|e| format!("client: {e}"))?;
        let _ = client.block_until_connected(session * 5);
        Ok(Worker {
            pid: std::process::id(),
            slot: o.slot,
            log,
            client,
            stop: AtomicBool::new(false),
            acquire_timeout: Duration::from_millis(o.acquire_timeout_ms),
            short_timeout_percent: o.short_timeout_percent,
            hold_max_ms: o.hold_ms,
            long_hold_permille: o.long_hold_permille,
            long_lead_permille: o.long_lead_permille,
            session,
            think_max_ms: o.think_ms,
            grace: session,
        })
    }

    /// The end-of-run connection check (the reconfigurable ensemble): with
    /// the final members' addresses the coordinator wrote to `finals`, waits
    /// (up to [`crate::reconf::end_bound`]) until the client is connected to
    /// one of them and its server list names only them, then logs where it
    /// is, as it is: `EW pid t waited-ns connected|- list version` (`list`
    /// joined by `,`; `version`: the configuration its tracker applied last,
    /// hex, `-` for none; the checker judges it). Nothing when the file is missing (the
    /// worker stopped because its parent died).
    fn end_connection(&self, finals: &std::path::Path, tracker_delay: Duration) {
        let Ok(text) = std::fs::read_to_string(finals) else {
            return;
        };
        let finals: Vec<&str> = text.trim().split(',').filter(|a| !a.is_empty()).collect();
        let t0 = Instant::now();
        let settled = || {
            self.client.connected_to().is_some_and(|c| finals.contains(&c.as_str()))
                && self.client.server_list().iter().all(|a| finals.contains(&a.as_str()))
        };
        zk_testing::wait_until(crate::reconf::end_bound(self.session, tracker_delay), settled);
        let waited = t0.elapsed().as_nanos();
        let connected = self.client.connected_to().unwrap_or_else(|| "-".into());
        let list = self.client.server_list().join(",");
        let version = self
            .client
            .ensemble_config()
            .map_or("-".to_string(), |c| format!("{:x}", c.version()));
        self.line(&format!(
            "EW {} {} {waited} {connected} {list} {version}",
            self.pid,
            now_ns()
        ));
    }

    /// The watcher: the stop file, the parent's death (either stops the
    /// worker), session changes (`Z` lines).
    fn watch(&self, stop: &std::path::Path, parent: u32) {
        let mut last = 0i64;
        while !self.stop.load(Ordering::SeqCst) {
            if stop.exists() || std::os::unix::process::parent_id() != parent {
                self.stop.store(true, Ordering::SeqCst);
                break;
            }
            let sid = self.client.session_id();
            if sid != 0 && sid != last {
                last = sid;
                let pwd = self.client.zookeeper_client().session_password();
                self.line(&format!(
                    "Z {} {} {} {sid:x} {}",
                    self.pid,
                    self.slot,
                    now_ns(),
                    hex(&pwd)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The cache, counter, registration and partitioner kinds, each on
    /// threads of its own; their writers stop at `writes_stop` (or the worker's stop).
    fn spawn_kinds<'s>(
        &'s self,
        s: &'s std::thread::Scope<'s, '_>,
        o: &Opts,
        seed: u64,
        writes_stop: &'s std::path::Path,
    ) {
        let session = self.session;
        let kind_seed = seed ^ ((self.pid as u64) << 8);
        let stopped = move || self.stop.load(Ordering::SeqCst);
        let writers_stop = move || stopped() || writes_stop.exists();
        if o.cache {
            s.spawn(move || crate::cachekind::run_writer(&self.client, &self.log, self.pid, kind_seed, writers_stop));
            s.spawn(move || crate::cachekind::run_cache(&self.client, &self.log, self.pid, session * 2, stopped));
        }
        if o.counter {
            s.spawn(move || {
                crate::counterkind::run_counter(&self.client, &self.log, self.pid, kind_seed, writers_stop)
            });
        }
        if o.registration {
            s.spawn(move || {
                crate::regkind::run_registrations(
                    &self.client,
                    &self.log,
                    self.pid,
                    kind_seed,
                    session,
                    writers_stop,
                    stopped,
                )
            });
        }
        if o.partition {
            s.spawn(move || {
                crate::partkind::run_partition(
                    &self.client,
                    &self.log,
                    self.pid,
                    kind_seed,
                    crate::partkind::bound(session),
                    writers_stop,
                    stopped,
                )
            });
        }
    }

    /// The lock threads, to their end; whether one failed (said on stderr).
    fn run_lock_threads<'s>(&'s self, s: &'s std::thread::Scope<'s, '_>, o: &Opts, seed: u64) -> bool {
        let handles: Vec<_> = (0..o.threads)
            .map(|thr| {
                let tseed = seed ^ ((o.slot as u64) << 40) ^ ((self.pid as u64) << 8) ^ thr as u64;
                s.spawn(move || self.run_thread(thr, tseed))
            })
            .collect();
        let mut failed = false;
        for (thr, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    eprintln!("zk-campaign worker {}: thread {thr}: {e}", self.pid);
                    failed = true;
                }
                Err(_) => {
                    eprintln!("zk-campaign worker {}: thread {thr} panicked", self.pid);
                    failed = true;
                }
            }
        }
        failed
    }
}
