//! The history of a campaign: the lines the workers and the coordinator log,
//! and their parsed form.
//!
//! Every line is one `write` (`O_APPEND`), fields separated by one space;
//! times are wall-clock nanoseconds since the epoch.
//!
//! Worker lines (`worker-*.log`):
//!
//! * `H pid slot t` — the worker started; `X pid t` — it finished cleanly.
//! * `Z pid slot t session-hex password-hex` — its session changed.
//! * `A pid thread attempt lock mode t [deadline-ns]` — an acquire attempt
//!   began; `deadline-ns`, when present, is the timeout the attempt asked for
//!   (`try_acquire_for(deadline)`); older logs lack it.
//! * `R pid thread attempt lock mode t outcome error-kind wait-ns` — it ended:
//!   `acquired`, `timeout` or `error` (with the error kind), after `wait-ns`.
//! * `S pid thread attempt lock mode token session start node` — a critical
//!   section began (one line per lock of a multi-lock, mode `multi`); `node` is
//!   the lock node's name, or `-` where the recipe does not expose it.
//! * `E pid thread attempt lock mode token session start end told told-event
//!   told-late status-at-grant status-at-end connected-before-release release
//!   [release-ns [last-ok first-bad write [watched]]]` — it ended. `end` is
//!   when the holder stopped working (at its first sign of doubt, or when its
//!   hold was over). `told` is when the
//!   first `Suspended`/`Lost` was received on the guard's loss receiver while
//!   holding, or while watching the lock after a cut (`-`: never; equal to
//!   `start` when it was already queued at grant); `watched`, when the holder
//!   stopped watching its lock after its work was cut short (`-`: it did not
//!   watch; see the `C` lines); `told-late` when one came while the holder waited before
//!   releasing a lock that looked lost; the statuses are the guard's (`?` in
//!   older logs); `release-ns`, how long the release call took; `last-ok`,
//!   when the holder's `check()` (called at grant and every 5 ms while it
//!   works) last said `Ok`; `first-bad`, when it first said anything else (the
//!   holder stops working then); `write`, the outcome of the section's write
//!   to the guarded resource (`ok`, an error kind, `-`: none). Older logs lack
//!   the optional fields.
//! * `D pid thread attempt end` — the work of a section is done; written before
//!   the release, so a worker killed during its release is not blamed.
//! * `C pid thread attempt lock mode token session what first-lo first-hi
//!   last-lo last-hi count ended` — after its section was cut short (a
//!   `Suspended`/`Lost` heard, or a `check()` that was not `Ok`), the holder
//!   kept watching its lock until it was lost or its watch ended, and was
//!   told it holds it again: a *claim span*, `count` claims in a row with no
//!   sign of doubt between them (one line per lock of a multi-lock). `what`
//!   lists the kinds of claim in the span, joined by `+`: `reconnected` (a
//!   `Reconnected` event), `leader` (a `Leader { term }` event), `ok` (`check()`
//!   said `Ok`), `held` (the status said `Held`). `token` is the token the
//!   claim is for (a leader's: the term of its event, or of the latch when it
//!   was asked). Each claim happened at some instant the worker can only
//!   bound: `first-lo`..`first-hi` for the first claim, `last-lo`..`last-hi`
//!   for the last (a call: from before it to after it returned; an event:
//!   from the last moment its channel was seen empty to its receipt).
//!   `ended`: `doubt` (a sign of doubt came next), `lost`, or `end` (the
//!   holder was still told it holds when it stopped watching). Older logs have
//!   no `C` lines: before them, a holder stopped at the first sign of doubt.
//!
//! Coordinator lines (`coordinator.log`): `P key=value…` (parameters),
//! `F kind start end detail` (a fault), `N kind start end reason` (a fault
//! not made: tried, and a step did not happen; its start and end bound what
//! it may have done meanwhile; `kind` is `composition:part` for a part of
//! a composition, whose own `N` line follows; older logs have no `end`),
//! `K slot pid t` (a worker was killed -9), `I session-hex t` (a
//! session was expired by the server at once), `B session-hex t path` (an
//! operator deleted a node of that session: a composed fault's break; the
//! time is taken just before the delete is sent), `W pid exit=N|straggler`,
//! `Q pid from to` (a worker was paused with SIGSTOP from `from` to `to`).
//!
//! The cache kind (`--cache`): `Y` lines (a worker's cache events and final
//! view), `G` lines (its writer's calls) and `cache-server.log` (`U`, `T`: the
//! server's final subtree), described in the checker's cache module
//! (`checker/cache.rs`) and kept in [`History::cache_lines`].
//!
//! The counter kind (`--counter`): `J` lines (the workers' increments, and
//! `counter-server.log`'s base and final values), described in
//! `checker/counter.rs` and kept in [`History::counter_lines`]. The
//! registration kind (`--registration`): `L` lines (the workers' nodes and
//! registration events) and `M` lines (`registration-observer.log`: the
//! coordinator's cache of them), described in `checker/registration.rs` and
//! kept in [`History::reg_lines`]. The partitioner kind (`--partition`):
//! `O` lines (the workers' `SetPartitioner` members, their events and
//! their claims), described in `checker/partition.rs` and kept in
//! [`History::part_lines`].
//!
//! The reconfigurable ensemble (`--reconfigurable`): `EM` lines (the
//! coordinator's: members added and removed by `rolling-replace`, the final
//! members) and `EW` lines (each worker's client at its end: where it is
//! connected and its server list), described in `checker/ensemble.rs` and
//! kept in [`History::ensemble_lines`].
//!
//! The guarded resource (`resource.log`, read back from the server after the
//! run): `V lock seq token pid thread attempt`, one per write that reached
//! the resource of `lock`, `seq` being ZooKeeper's sequence number (the order
//! of arrival); a lone `V` says the resources were read and were empty.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

/// An attempt's key: worker pid, thread, attempt number.
pub type AttemptKey = (u32, u32, u64);

/// A section's key: an attempt's key and the lock.
pub type SectionKey = (u32, u32, u64, String);

/// How an acquire attempt ended (an `R` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptEnd {
    /// `acquired`, `timeout` or `error`.
    pub outcome: String,
    /// The error kind (`-` unless `error`).
    pub error: String,
    /// When it returned.
    pub t: u64,
    /// How long the acquire call took.
    pub wait: u64,
}

/// An acquire attempt (`A`, then `R`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRec {
    /// The lock path (`multi` for a multi-lock).
    pub lock: String,
    /// `mutex`, `read`, `write`, `semaphore` or `multi`.
    pub mode: String,
    /// When the attempt began (`None` when only its `R` line survived).
    pub start: Option<u64>,
    /// The timeout asked for, when the log records it.
    pub deadline: Option<u64>,
    /// How it ended (`None`: never, so far).
    pub result: Option<AttemptEnd>,
}

/// The end of a critical section (an `E` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndRec {
    /// When the holder stopped working.
    pub end: u64,
    /// When it first heard `Suspended`/`Lost` while holding.
    pub told: Option<u64>,
    /// When it heard one while waiting before the release.
    pub told_late: Option<u64>,
    /// The lock's status at grant (`Held`, `Uncertain`, `Lost`, `?`).
    pub st0: String,
    /// The lock's status at the end.
    pub st_end: String,
    /// Whether the client was connected just before the release.
    pub connected: bool,
    /// `ok` or the release's error kind.
    pub release: String,
    /// How long the release call took (`None` in older logs).
    pub release_wait: Option<u64>,
    /// The event first heard while holding (`Suspended`, `Lost`; `-`: none).
    pub told_event: String,
    /// When `check()` last said `Ok` while holding (`None`: never, or older logs).
    pub last_ok: Option<u64>,
    /// When `check()` first said anything but `Ok` (`None`: never, or older logs).
    pub first_bad: Option<u64>,
    /// The guarded write to the resource: `ok`, an error kind, `-` (none, or older logs).
    pub write: String,
    /// When the holder stopped watching its lock after a cut (`None`: it did
    /// not watch, or older logs).
    pub watched: Option<u64>,
}

/// A critical section on one lock (`S`, then `E`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecRec {
    /// The worker's pid.
    pub pid: u32,
    /// The worker thread.
    pub thr: u32,
    /// The attempt number.
    pub att: u64,
    /// The lock path.
    pub lock: String,
    /// The mode of the attempt.
    pub mode: String,
    /// The fencing token.
    pub token: i64,
    /// The session id (hex).
    pub sid: String,
    /// When the section began.
    pub start: u64,
    /// The lock node's name (`-` when not known).
    pub node: String,
    /// Its end, if it ended.
    pub end: Option<EndRec>,
}

impl SecRec {
    /// `[pid P thread T attempt A mode token N session S]`.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["S 10 0 1 /l mutex 5 a 100"]);
    /// let s = &h.sections[&(10, 0, 1, "/l".to_string())];
    /// assert_eq!(s.describe(), "[pid 10 thread 0 attempt 1 mutex token 5 session a]");
    /// ```
    pub fn describe(&self) -> String {
        describe_holder((self.pid, self.thr, self.att), &self.mode, self.token, &self.sid)
    }
}

/// `[pid P thread T attempt A mode token N session S]`: a holder as the
/// violations name it (a section's, a claim span's).
pub(crate) fn describe_holder((pid, thr, att): AttemptKey, mode: &str, token: i64, sid: &str) -> String {
    format!("[pid {pid} thread {thr} attempt {att} {mode} token {token} session {sid}]")
}

/// A write that reached the guarded resource (a `V` line of `resource.log`,
/// read back from the server after the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceWrite {
    /// The lock whose resource it is (`/campaign/mutex`, ...).
    pub lock: String,
    /// ZooKeeper's sequence number of the write: the order it reached the resource.
    pub seq: u64,
    /// The fencing token the writer held.
    pub token: i64,
    /// The writer's attempt.
    pub attempt: AttemptKey,
}

/// A claim span (a `C` line): after its section was cut short, a holder was
/// told again, `count` times in a row, that it holds its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRec {
    /// The worker's pid.
    pub pid: u32,
    /// The worker thread.
    pub thr: u32,
    /// The attempt number (its section's).
    pub att: u64,
    /// The lock path.
    pub lock: String,
    /// The mode of the attempt.
    pub mode: String,
    /// The token the claim is for (a leader's: its term).
    pub token: i64,
    /// The session id (hex).
    pub sid: String,
    /// The kinds of claim in the span, joined by `+` (`reconnected`,
    /// `leader`, `ok`, `held`).
    pub what: String,
    /// When the first claim happened: at some instant in `first.0..=first.1`.
    pub first: (u64, u64),
    /// When the last claim happened: at some instant in `last.0..=last.1`.
    pub last: (u64, u64),
    /// How many claims the span holds.
    pub count: u64,
    /// What came after it: `doubt`, `lost` or `end`.
    pub ended: String,
}

impl ClaimRec {
    /// Its section's key.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["C 10 0 1 /l mutex 5 a ok 100 101 150 151 10 end"]);
    /// assert_eq!(h.claims[0].key(), (10, 0, 1, "/l".to_string()));
    /// ```
    pub fn key(&self) -> SectionKey {
        (self.pid, self.thr, self.att, self.lock.clone())
    }
}

/// An injected fault (an `F` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRec {
    /// The fault kind, e.g. `partition-expire`.
    pub kind: String,
    /// When it began.
    pub start: u64,
    /// When it ended (healed).
    pub end: u64,
}

impl FaultRec {
    /// Whether its window, from its start to `slack` after its end (while
    /// its effects last), meets `[from, to]`.
    pub(crate) fn meets(&self, from: u64, to: u64, slack: u64) -> bool {
        self.start <= to && from <= self.end.saturating_add(slack)
    }
}

/// A fault not made (an `N` line): tried, and one of its steps did not
/// happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotMade {
    /// Its kind; `composition:part` for a part of a composition (the
    /// composition's own line follows it).
    pub kind: String,
    /// When it was tried.
    pub start: u64,
    /// When it was given up (`None` in older logs).
    pub end: Option<u64>,
    /// Why, as the coordinator said.
    pub reason: String,
}

impl NotMade {
    /// Whether it is a part of a composition (its kind is
    /// `composition:part`).
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines([
    ///     "N composed-random:kill-follower 1 5 no quorum",
    ///     "N composed-random 1 6 1 of 2 parts not made",
    /// ]);
    /// assert!(h.not_made[0].is_part() && !h.not_made[1].is_part());
    /// ```
    pub fn is_part(&self) -> bool {
        self.kind.contains(':')
    }
}

/// Everything the logs of one campaign say.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// `P` parameters.
    pub params: HashMap<String, String>,
    /// Acquire attempts.
    pub attempts: HashMap<AttemptKey, AttemptRec>,
    /// Critical sections.
    pub sections: HashMap<SectionKey, SecRec>,
    /// Claim spans (`C`), in log order.
    pub claims: Vec<ClaimRec>,
    /// Workers killed -9: pid → when.
    pub killed: HashMap<u32, u64>,
    /// Sessions reported by workers (`Z`): (pid, when, session hex).
    pub sessions: Vec<(u32, u64, String)>,
    /// Workers paused (SIGSTOP) by a fault: (pid, from, to).
    pub paused: Vec<(u32, u64, u64)>,
    /// `D` lines: attempt → when the work was done.
    pub done: HashMap<AttemptKey, u64>,
    /// Sessions expired at once by the server: (session hex, when).
    pub instant: Vec<(String, u64)>,
    /// Nodes an operator deleted (a composed fault's break): (owner's
    /// session hex, when, the node's path).
    pub broken: Vec<(String, u64, String)>,
    /// Workers that started (`H`).
    pub started: HashSet<u32>,
    /// Workers that finished cleanly (`X`).
    pub exited: HashSet<u32>,
    /// How workers ended, as the coordinator saw it (`W`).
    pub worker_status: Vec<(u32, String)>,
    /// The faults, in log order.
    pub faults: Vec<FaultRec>,
    /// Faults that could not be injected (`N`, parts of compositions left
    /// out).
    pub failed_faults: usize,
    /// Every `N` line, in log order.
    pub not_made: Vec<NotMade>,
    /// Writes read back from the guarded resources (`resource.log`), if any.
    pub writes: Vec<ResourceWrite>,
    /// Whether the resources were read back at all (a `resource.log` exists).
    pub resource_read: bool,
    /// The cache kind's lines (`Y`, `G`, `U`, `T`), in read order: judged by
    /// the checker's cache rules (`checker/cache.rs`, which describes them).
    pub cache_lines: Vec<String>,
    /// The counter kind's lines (`J`), judged by `checker/counter.rs`.
    pub counter_lines: Vec<String>,
    /// The registration kind's lines (`L`: the workers', `M`: the
    /// observer's), judged by `checker/registration.rs`.
    pub reg_lines: Vec<String>,
    /// The partitioner kind's lines (`O`: the workers' members, their
    /// events and claims), judged by `checker/partition.rs`.
    pub part_lines: Vec<String>,
    /// The reconfigurable ensemble's lines (`EM`: the coordinator's members
    /// added, removed and final; `EW`: each worker's connection at its
    /// end), judged by `checker/ensemble.rs`.
    pub ensemble_lines: Vec<String>,
    /// Lines that could not be parsed.
    pub unparsed: usize,
}

/// A log line's fields (one space apart), read by position. Each getter
/// answers `None` for a field that is missing or does not parse, so that a
/// parser says `?` once per field; every parser of the history's lines (and
/// the kinds' in the checker) reads them so.
#[derive(Debug)]
pub(crate) struct Fields<'a>(Vec<&'a str>);

impl<'a> Fields<'a> {
    pub(crate) fn new(line: &'a str) -> Fields<'a> {
        Fields(line.split(' ').collect())
    }

    /// The line's kind: its first field.
    pub(crate) fn kind(&self) -> Option<&'a str> {
        self.str(0)
    }

    /// Field `i` as it is.
    pub(crate) fn str(&self, i: usize) -> Option<&'a str> {
        self.0.get(i).copied()
    }

    /// Field `i`, owned.
    pub(crate) fn string(&self, i: usize) -> Option<String> {
        self.str(i).map(str::to_string)
    }

    /// Field `i` as a number.
    pub(crate) fn num<T: std::str::FromStr>(&self, i: usize) -> Option<T> {
        self.str(i)?.parse().ok()
    }

    /// Field `i` as a time that may be `-` (never): `None` when the field
    /// is missing; `Some(None)` for `-`, or a time that does not parse.
    pub(crate) fn time(&self, i: usize) -> Option<Option<u64>> {
        self.str(i).map(|t| if t == "-" { None } else { t.parse().ok() })
    }

    /// The fields from `i` on.
    pub(crate) fn rest(&self, i: usize) -> &[&'a str] {
        self.0.get(i..).unwrap_or_default()
    }

    /// An attempt's key, in fields 1 to 3 (`pid thread attempt`).
    pub(crate) fn attempt(&self) -> Option<AttemptKey> {
        Some((self.num(1)?, self.num(2)?, self.num(3)?))
    }
}

impl History {
    /// Reads `worker-*.log` and `coordinator.log` in `dir`.
    ///
    /// # Errors
    ///
    /// The directory or a log cannot be read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let h = zk_campaign::history::History::read_dir(std::path::Path::new("/tmp/run"))?;
    /// println!("{} attempts", h.attempts.len());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read_dir(dir: &Path) -> io::Result<History> {
        let mut files: Vec<PathBuf> = fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                (n.starts_with("worker-") && n.ends_with(".log"))
                    || n == "coordinator.log"
                    || n == "resource.log"
                    || n == "cache-server.log"
                    || n == "counter-server.log"
                    || n == "registration-observer.log"
            })
            .collect();
        files.sort();
        let mut h = History::default();
        for path in &files {
            for line in BufReader::new(File::open(path)?).lines() {
                match line {
                    Ok(line) => h.add_line(&line),
                    Err(_) => h.unparsed += 1,
                }
            }
        }
        Ok(h)
    }

    /// A history from lines (in any order of files; within a worker, in log order).
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["H 10 0 1", "X 10 2"]);
    /// assert!(h.exited.contains(&10));
    /// ```
    pub fn from_lines<I, S>(lines: I) -> History
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut h = History::default();
        for l in lines {
            h.add_line(l.as_ref());
        }
        h
    }

    /// Adds one log line (blank lines are skipped; others that do not parse
    /// are counted in [`History::unparsed`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = zk_campaign::history::History::default();
    /// h.add_line("A 10 0 1 /l mutex 100 1000000000");
    /// assert_eq!(h.attempts[&(10, 0, 1)].deadline, Some(1_000_000_000));
    /// ```
    pub fn add_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        if self.parse_line(line).is_none() {
            self.unparsed += 1;
        }
    }

    /// Reads one line into the history (`None`: it does not parse, and
    /// nothing was taken from it); each kind of line by a reader of its own.
    fn parse_line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        match f.kind()? {
            "Y" | "G" | "U" | "T" => self.cache_lines.push(line.to_string()),
            "J" => self.counter_lines.push(line.to_string()),
            "L" | "M" => self.reg_lines.push(line.to_string()),
            "O" => self.part_lines.push(line.to_string()),
            "EM" | "EW" => self.ensemble_lines.push(line.to_string()),
            "P" => self.params(&f)?,
            "F" => self.faults.push(fault(&f)?),
            "N" => self.not_made(&f)?,
            "K" => {
                self.killed.insert(f.num(2)?, f.num(3)?);
            }
            "I" => self.instant.push((f.string(1)?, f.num(2)?)),
            "B" => self.broken.push((f.string(1)?, f.num(2)?, f.string(3)?)),
            "Q" => self.paused.push((f.num(1)?, f.num(2)?, f.num(3)?)),
            "D" => {
                self.done.insert(f.attempt()?, f.num(4)?);
            }
            "W" => self.worker_status.push((f.num(1)?, f.string(2)?)),
            "H" => {
                self.started.insert(f.num(1)?);
            }
            "X" => {
                self.exited.insert(f.num(1)?);
            }
            "Z" => self.sessions.push((f.num(1)?, f.num(3)?, f.string(4)?)),
            "V" => self.resource_write(&f)?,
            "C" => self.claims.push(claim(&f)?),
            "A" => self.attempt_began(&f)?,
            "R" => self.attempt_ended(&f)?,
            "S" | "E" => self.section_line(&f)?,
            _ => return None,
        }
        Some(())
    }

    /// `P key=value…`: the parameters (those before a field that is not
    /// `key=value` are kept).
    fn params(&mut self, f: &Fields<'_>) -> Option<()> {
        for kv in f.rest(1) {
            let (k, v) = kv.split_once('=')?;
            self.params.insert(k.to_string(), v.to_string());
        }
        Some(())
    }

    /// `N kind start end reason…` (older logs: no end).
    fn not_made(&mut self, f: &Fields<'_>) -> Option<()> {
        let start = f.num(2);
        let end = start.and(f.num(3));
        let rest = 2 + usize::from(start.is_some()) + usize::from(end.is_some());
        let m = NotMade {
            kind: f.string(1)?,
            start: start.unwrap_or(0),
            end,
            reason: f.rest(rest).join(" "),
        };
        if !m.is_part() {
            self.failed_faults += 1;
        }
        self.not_made.push(m);
        Some(())
    }

    /// `V lock seq token pid thread attempt`, or a lone `V` (the resources
    /// were read and were empty).
    fn resource_write(&mut self, f: &Fields<'_>) -> Option<()> {
        self.resource_read = true;
        if f.rest(2).is_empty() {
            return Some(());
        }
        self.writes.push(ResourceWrite {
            lock: f.string(1)?,
            seq: f.num(2)?,
            token: f.num(3)?,
            attempt: (f.num(4)?, f.num(5)?, f.num(6)?),
        });
        Some(())
    }

    /// The attempt of an `A` or `R` line, made on its first line (its lock
    /// and mode in fields 4 and 5).
    fn attempt_rec(&mut self, f: &Fields<'_>) -> Option<&mut AttemptRec> {
        let (k, lock, mode) = (f.attempt()?, f.string(4)?, f.string(5)?);
        Some(self.attempts.entry(k).or_insert_with(|| AttemptRec {
            lock,
            mode,
            start: None,
            deadline: None,
            result: None,
        }))
    }

    /// `A pid thread attempt lock mode t [deadline-ns]`.
    fn attempt_began(&mut self, f: &Fields<'_>) -> Option<()> {
        let start = f.num(6)?;
        let deadline = f.time(7).flatten();
        let a = self.attempt_rec(f)?;
        a.start = Some(start);
        a.deadline = deadline;
        Some(())
    }

    /// `R pid thread attempt lock mode t outcome error-kind wait-ns`.
    fn attempt_ended(&mut self, f: &Fields<'_>) -> Option<()> {
        let r = AttemptEnd {
            outcome: f.string(7)?,
            error: f.string(8)?,
            t: f.num(6)?,
            wait: f.num(9)?,
        };
        self.attempt_rec(f)?.result = Some(r);
        Some(())
    }

    /// `S …` (a section began) or `E …` (it ended): the section, made on its
    /// first line; an `E` line gives its end, an `S` line its node.
    fn section_line(&mut self, f: &Fields<'_>) -> Option<()> {
        let (pid, thr, att) = f.attempt()?;
        let key = (pid, thr, att, f.string(4)?);
        let began = f.kind() == Some("S");
        let rec = SecRec {
            pid,
            thr,
            att,
            lock: key.3.clone(),
            mode: f.string(5)?,
            token: f.num(6)?,
            sid: f.string(7)?,
            start: f.num(8)?,
            node: if began {
                f.string(9).unwrap_or_else(|| "-".into())
            } else {
                "-".into()
            },
            end: None,
        };
        let end = if began { None } else { Some(end_rec(f)?) };
        let node = rec.node.clone();
        let e = self.sections.entry(key).or_insert(rec);
        if end.is_some() {
            e.end = end;
        } else {
            e.node = node;
        }
        Some(())
    }

    /// Faults by kind: how many of each.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["F cut 1 2 slot 0", "F cut 3 4 slot 1"]);
    /// assert_eq!(h.fault_counts()["cut"], 2);
    /// ```
    pub fn fault_counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for f in &self.faults {
            *m.entry(f.kind.clone()).or_default() += 1;
        }
        m
    }

    /// How long worker `pid` was stopped (SIGSTOP, the `Q` lines) within
    /// `[a, b]`, in ns; overlapping stops count once. Every rule that
    /// excuses a stopped worker excuses this much, and no more: a stopped
    /// process does nothing, its clock runs on.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["Q 10 100 200", "Q 10 150 300", "Q 11 0 1000"]);
    /// assert_eq!(h.stopped_within(10, 0, 1000), 200);
    /// assert_eq!(h.stopped_within(10, 250, 1000), 50);
    /// assert_eq!(h.stopped_within(10, 300, 1000), 0);
    /// ```
    pub fn stopped_within(&self, pid: u32, a: u64, b: u64) -> u64 {
        let mut spans: Vec<(u64, u64)> = self
            .paused
            .iter()
            .filter(|(p, _, _)| *p == pid)
            .map(|&(_, from, to)| (from.max(a), to.min(b)))
            .filter(|(from, to)| from < to)
            .collect();
        spans.sort_unstable();
        let (mut total, mut reach) = (0, 0);
        for (from, to) in spans {
            let from = from.max(reach);
            if to > from {
                total += to - from;
            }
            reach = reach.max(to);
        }
        total
    }

    /// The windows of everything done to the system: every fault (`F`), and
    /// every fault not made that has an end (its steps may have cut or
    /// stopped something before it was given up), as `KIND (not made)`;
    /// parts of compositions left out (their composition's window covers
    /// them).
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines([
    ///     "F cut 1 2 slot 0",
    ///     "N composed-random:restart 3 4 no",
    ///     "N composed-random 3 5 1 of 2 parts not made",
    ///     "N cut 6 no end in older logs",
    /// ]);
    /// let w: Vec<(String, u64, u64)> = h.windows().into_iter().map(|f| (f.kind, f.start, f.end)).collect();
    /// assert_eq!(w, [("cut".to_string(), 1, 2), ("composed-random (not made)".to_string(), 3, 5)]);
    /// ```
    pub fn windows(&self) -> Vec<FaultRec> {
        let mut v = self.faults.clone();
        v.extend(self.not_made.iter().filter(|m| !m.is_part()).filter_map(|m| {
            Some(FaultRec {
                kind: format!("{} (not made)", m.kind),
                start: m.start,
                end: m.end?,
            })
        }));
        v
    }

    /// A numeric parameter from the `P` line.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = zk_campaign::history::History::from_lines(["P session_ms=3000 backend=embedded"]);
    /// assert_eq!(h.param_u64("session_ms"), Some(3000));
    /// assert_eq!(h.param_u64("backend"), None);
    /// ```
    pub fn param_u64(&self, key: &str) -> Option<u64> {
        self.params.get(key).and_then(|v| v.parse().ok())
    }

    /// When the server expired session `sid` at once (its `I` lines).
    pub(crate) fn expiries_of<'a>(&'a self, sid: &'a str) -> impl Iterator<Item = u64> + 'a {
        self.instant.iter().filter(move |(s, _)| s == sid).map(|(_, x)| *x)
    }

    /// When an operator deleted session `sid`'s node named `node` (its `B`
    /// lines: a composed fault's break).
    pub(crate) fn breaks_of<'a>(&'a self, sid: &'a str, node: &'a str) -> impl Iterator<Item = u64> + 'a {
        self.broken
            .iter()
            .filter(move |(s, _, path)| s == sid && path.rsplit('/').next() == Some(node))
            .map(|(_, x, _)| *x)
    }

    /// The session timeout (ns): the `session_ms` parameter, 3 s when the
    /// logs lack it.
    pub(crate) fn session_ns(&self) -> u64 {
        self.param_u64("session_ms").unwrap_or(3000) * 1_000_000
    }
}

/// `F kind start end detail`.
fn fault(f: &Fields<'_>) -> Option<FaultRec> {
    f.str(3)?;
    Some(FaultRec {
        kind: f.string(1)?,
        start: f.num(2).unwrap_or(0),
        end: f.num(3).unwrap_or(0),
    })
}

/// `C pid thread attempt lock mode token session what first-lo first-hi
/// last-lo last-hi count ended`.
fn claim(f: &Fields<'_>) -> Option<ClaimRec> {
    f.str(14)?;
    Some(ClaimRec {
        pid: f.num(1)?,
        thr: f.num(2)?,
        att: f.num(3)?,
        lock: f.string(4)?,
        mode: f.string(5)?,
        token: f.num(6)?,
        sid: f.string(7)?,
        what: f.string(8)?,
        first: (f.num(9)?, f.num(10)?),
        last: (f.num(11)?, f.num(12)?),
        count: f.num(13)?,
        ended: f.string(14)?,
    })
}

/// The end of an `E` line (fields 9 on; the optional ones last).
fn end_rec(f: &Fields<'_>) -> Option<EndRec> {
    Some(EndRec {
        end: f.num(9)?,
        told: f.time(10)?,
        told_late: f.time(12)?,
        st0: f.string(13)?,
        st_end: f.string(14)?,
        connected: f.str(15)? == "1",
        release: f.string(16)?,
        release_wait: f.time(17).flatten(),
        told_event: f.string(11)?,
        last_ok: f.time(18).flatten(),
        first_bad: f.time(19).flatten(),
        write: f.string(20).unwrap_or_else(|| "-".into()),
        watched: f.time(21).flatten(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_not_made_keeps_its_kind_window_and_reason() {
        let h = History::from_lines([
            "N composed-random:kill-follower 10 70 no quorum within 60s (modes: 0:leader)",
            "N composed-random 10 80 1 of 3 parts not made (kill-follower): [...]",
        ]);
        assert_eq!(h.failed_faults, 1);
        assert_eq!(h.not_made.len(), 2);
        assert_eq!(
            (h.not_made[0].kind.as_str(), h.not_made[0].start, h.not_made[0].end),
            ("composed-random:kill-follower", 10, Some(70))
        );
        assert_eq!(h.not_made[0].reason, "no quorum within 60s (modes: 0:leader)");
        assert!(h.not_made[0].is_part() && !h.not_made[1].is_part());
        assert_eq!(h.windows().len(), 1);
        assert_eq!(h.windows()[0].end, 80);
    }

    #[test]
    fn a_stop_counts_once_and_only_within_the_span_asked() {
        let h = History::from_lines(["Q 10 100 200", "Q 10 150 300", "Q 10 500 600", "Q 11 0 10000"]);
        // Overlapping stops count once: 100..300 and 500..600.
        assert_eq!(h.stopped_within(10, 0, 1000), 300);
        // Only within the span.
        assert_eq!(h.stopped_within(10, 180, 550), 120 + 50);
        assert_eq!(h.stopped_within(10, 300, 500), 0);
        // Another worker's stop is not this one's.
        assert_eq!(h.stopped_within(12, 0, 10000), 0);
        // A span that ends before it begins is empty.
        assert_eq!(h.stopped_within(10, 600, 100), 0);
    }

    /// A line of every kind, a truncated `C` line and garbage.
    const EVERY_KIND: [&str; 23] = [
        "P seed=1 session_ms=1000 kinds=cut,restart",
        "F cut 5 9 slot 0",
        "N restart failed",
        "K 0 11 50",
        "I 1a 40",
        "B 1a 45 /l/node",
        "W 12 exit=0",
        "H 10 0 1",
        "Z 10 0 2 1a 00ff",
        "A 10 0 1 /l mutex 100 2000",
        "R 10 0 1 /l mutex 150 acquired - 50",
        "S 10 0 1 /l mutex 7 1a 150 node",
        "D 10 0 1 190",
        "E 10 0 1 /l mutex 7 1a 150 200 180 Suspended - Held Lost 0 ok 1500",
        "E 10 0 3 /l mutex 8 1a 250 300 - - - Held Held 1 ok 1500 290 295 ok 420",
        "Q 10 5 9",
        "C 10 0 3 /l mutex 8 1a reconnected+ok 310 312 400 401 20 lost",
        "C 10 0 3 /l mutex 8 1a ok 310",
        "V /l 3 7 10 0 1",
        "A 10 0 2 /l mutex 300",
        "X 10 400",
        "garbage",
        "",
    ];

    #[test]
    fn parses_every_kind_of_line() {
        let h = History::from_lines(EVERY_KIND);
        assert_eq!(h.param_u64("session_ms"), Some(1000));
        assert_eq!(h.fault_counts().get("cut"), Some(&1));
        assert_eq!(
            h.faults[0],
            FaultRec {
                kind: "cut".into(),
                start: 5,
                end: 9
            }
        );
        assert_eq!(h.failed_faults, 1);
        assert_eq!(
            h.not_made,
            vec![NotMade {
                kind: "restart".into(),
                start: 0,
                end: None,
                reason: "failed".into()
            }]
        );
        assert_eq!(h.killed.get(&11), Some(&50));
        assert_eq!(h.instant, vec![("1a".to_string(), 40)]);
        assert_eq!(h.broken, vec![("1a".to_string(), 45, "/l/node".to_string())]);
        assert_eq!(h.worker_status, vec![(12, "exit=0".to_string())]);
        assert!(h.started.contains(&10) && h.exited.contains(&10));
        let a = &h.attempts[&(10, 0, 1)];
        assert_eq!((a.start, a.deadline), (Some(100), Some(2000)));
        let r = a.result.as_ref().unwrap();
        assert_eq!((r.outcome.as_str(), r.t, r.wait), ("acquired", 150, 50));
        let old = &h.attempts[&(10, 0, 2)];
        assert_eq!((old.deadline, old.result.is_none()), (None, true));
        assert_eq!(h.done.get(&(10, 0, 1)), Some(&190));
        let s = &h.sections[&(10, 0, 1, "/l".to_string())];
        assert_eq!(s.node, "node");
        let e = s.end.as_ref().unwrap();
        assert_eq!((s.token, e.end, e.told, e.told_late), (7, 200, Some(180), None));
        assert_eq!((e.st_end.as_str(), e.connected), ("Lost", false));
        assert_eq!(e.release_wait, Some(1500));
        assert_eq!(
            (e.told_event.as_str(), e.last_ok, e.first_bad, e.write.as_str()),
            ("Suspended", None, None, "-")
        );
        let e3 = h.sections[&(10, 0, 3, "/l".to_string())].end.clone().unwrap();
        assert_eq!(
            (e3.last_ok, e3.first_bad, e3.write.as_str(), e3.watched),
            (Some(290), Some(295), "ok", Some(420))
        );
        assert_eq!(e.watched, None);
        assert_eq!(h.paused, vec![(10, 5, 9)]);
        assert_eq!(
            h.claims,
            vec![ClaimRec {
                pid: 10,
                thr: 0,
                att: 3,
                lock: "/l".into(),
                mode: "mutex".into(),
                token: 8,
                sid: "1a".into(),
                what: "reconnected+ok".into(),
                first: (310, 312),
                last: (400, 401),
                count: 20,
                ended: "lost".into(),
            }]
        );
        assert_eq!(h.sessions, vec![(10, 2, "1a".to_string())]);
        assert!(h.resource_read);
        assert_eq!(
            h.writes,
            vec![ResourceWrite {
                lock: "/l".into(),
                seq: 3,
                token: 7,
                attempt: (10, 0, 1)
            }]
        );
        // `garbage` and the truncated `C` line.
        assert_eq!(h.unparsed, 2);
    }
}
