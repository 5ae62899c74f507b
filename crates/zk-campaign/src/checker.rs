//! The checker: the rules a campaign's history must obey.
//!
//! Rules (each breach is a violation):
//!
//! 1. **Exclusion.** On each lock, no two sections overlap unless both are
//!    reads. A section counts from its grant to its end or to the first moment
//!    its holder was told it might not hold the lock, whichever came first:
//!    `min(end, told, first-bad)`, `told` being the first `Suspended`/`Lost`
//!    on its loss receiver and `first-bad` the first `check()` that was not
//!    `Ok`. A holder told before the overlap began is excused; a section told
//!    at grant is empty. A holder stopped by SIGSTOP (`Q`) whose last `Ok`
//!    came before the stop, and whose first act after it was to be told, ends
//!    its section at the stop (a stopped process does nothing, and the
//!    campaign's holders check before each act); an `Ok` after the resume is
//!    not excused. A killed worker's open section ends at its `D` line, or else when
//!    it was killed. One more
//!    excuse, counted apart: when the server expired a holder's session
//!    *instantly* (`I`), no client can learn of it before another one is
//!    granted the lock; such an overlap is "fenced" if that holder was told at
//!    all and its fencing token is smaller than the other's. The same holds,
//!    counted apart, after an operator deleted a holder's node (`B`, a
//!    composed fault's break of a holder that was still working): its
//!    notification is on its way while the next holder is granted.
//! 2. **Fencing.** On each lock, the tokens of exclusive sections (all but
//!    reads; empty sections left out) increase strictly in start order. This
//!    also covers what rule 1 cannot see: a multi-lock's sections start when
//!    the whole set is held, but it may hold its first locks long before
//!    (while it waits for the others); a lock granted to someone else in that
//!    time comes out of token order.
//! 3. **Losses are reported.** A section whose lock was lost (the guard's
//!    status `Lost` or `Uncertain` at the end, or a failed release while
//!    disconnected), or that was `Uncertain`/`Lost` at grant, must have heard
//!    `Suspended`/`Lost` on its loss receiver. Every lock kind logs its guard's
//!    status (a multi-lock: its worst member's, on each member's line, with the
//!    events of all members on one receiver; one violation per attempt); older
//!    logs have `?`, which this rule cannot judge (the report counts them). A
//!    release answering `LockLost` is the library telling the holder, not a
//!    failed release: it does not count as one (the report counts them apart,
//!    and those that were the first word of the loss), and it does not excuse a
//!    status that said `Lost`/`Uncertain` while the receiver stayed silent.
//!    A release failing with `NotOwner` is a violation too.
//! 4. **No hangs.** Every attempt ended, unless its worker was killed -9;
//!    no attempt took longer than its timeout plus 4 session timeouts plus 10 s,
//!    not counting the time its worker was stopped by SIGSTOP meanwhile (`Q`;
//!    that time exactly, [`History::stopped_within`]: an attempt overlong by
//!    its own time is still a violation); every section ended (same excuse);
//!    every worker finished cleanly.
//! 5. **Timed acquires keep their deadline.** A timed acquire (`A` lines with a
//!    deadline; older logs: the `acquire_timeout_ms` parameter) that returned
//!    more than [`CheckOptions::overshoot_margin`] after its deadline is *late*.
//!    The report gives, per fault kind, the attempts that reached their
//!    deadline, how many were late, and the largest and 99th-percentile
//!    overshoot. The time its worker was stopped by SIGSTOP after its
//!    deadline is not counted (the same record as rule 4's, and only that
//!    time). Only with [`CheckOptions::max_overshoot`] set (the campaign's
//!    `--max-overshoot-ms`) is an overshoot beyond it a violation.
//! 6. **A safety margin.** For every section cut short by a loss signal, and
//!    the next section on its lock that excludes it (the lock changed hands),
//!    the margin is the time from the old holder's last `Ok` from `check()`
//!    to the new holder's grant: the room a side effect started after that
//!    `Ok` has. It must be positive (unless the old holder's session was
//!    expired *instantly*, see rule 1's fenced excuse). The report gives its
//!    minimum, 1st percentile and median per fault kind (the fault in effect
//!    when the old holder was told: the latest to begin before, among those
//!    that had not ended a session timeout before), `no fault`, and `all`;
//!    and again, under `expired/`, for the hand-overs whose old holder's
//!    session expired around them (its worker reported a new session after
//!    the old grant and at most two session timeouts after the new one):
//!    there the lock was most likely taken by the expiry, not given back by
//!    the holder's release after the signal. A holder that kept watching
//!    after the signal and was told again that it holds (rule 8's claims)
//!    counts from its last claim; one still told so when it stopped watching
//!    released in certainty, and its hand-over is not a sample.
//! 7. **The guarded resource.** Each exclusive section writes once, right
//!    after its first `Ok`, into its lock's resource through a transaction
//!    guarded by the lock; after the run the coordinator reads the resources
//!    back (`resource.log`). On each, in the order of arrival, tokens never
//!    decrease and no two sections write the same token; each write carries
//!    its section's token; a write its section saw succeed is there.
//! 8. **Claims after a cut are judged one by one.** A holder told it may
//!    have lost its lock keeps watching it, and every claim it is then given
//!    (a `Reconnected` or `Leader { term }` event, an `Ok` from `check()`, a
//!    `Held` status: the `C` lines) must fall outside every other holder's
//!    exclusive section on the same lock (its grant to its effective end, as
//!    in rule 1), unless both are reads. Rule 1's fenced excuse applies after
//!    an instant expiry, and after an operator break that came while the
//!    claims went on (never one that came before them: a holder in doubt
//!    whose node was broken must not be told it holds again).
//! 9. **Tokens and terms grow in claim order.** On each lock, no claim is for
//!    a smaller token (a leader's: term) than one already granted to another
//!    holder it excludes: a `Leader` event whose term is older than another
//!    leader's grant is a violation even after that leader is gone.
//! 10. **A holder's claims never go back** to a token smaller than it was
//!     granted or claimed before.
//!
//! The kinds' own rules are in modules of their own: the cache's (C1-C5,
//! `checker/cache.rs`), the counter's (K1-K3, `checker/counter.rs`), the
//! registrations' (R1-R4, `checker/registration.rs`), the partitioner's
//! (P1-P3, `checker/partition.rs`), and the reconfigurable ensemble's
//! end-of-run connection check (E1, `checker/ensemble.rs`: every worker
//! connected at its end to a member of the final configuration, its server
//! list naming no removed server).
//!
//! Rules 1 to 7 are in their own module (`checker/rules.rs`), one function
//! each (rule 4 in three: attempts, sections and workers). Rules 8 to 10 are
//! in another (`checker/claims.rs`), one function each, with the bounds a
//! claim's instant is judged by. [`check`] calls them in turn and writes the
//! report.
//!
//! Fault windows (the fault kinds the report attributes samples to, and
//! the registration rules' excuses) are [`History::windows`]: every fault
//! made, and every fault not made (an `N` line with an end: its steps may
//! have cut or stopped something before it was given up), as
//! `KIND (not made)`. The report lists the faults not made by kind and
//! reason, a composition's parts by their own kind; [`Report::missing`]
//! names the kinds that did not happen as often as the run asked (the
//! campaign fell short, not the library).
//!
//! The history format is described in [`crate::history`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::history::{History, SecRec};
use rules::{
    attempts_end_in_time, fencing_tokens_increase, overshoots, resource_writes, safety_margins_are_positive,
    section_views, sections_exclude_each_other, workers_finish_cleanly, AttemptStats, ExclusionStats, Overshoot,
    SectionStats,
};

mod cache;
mod counter;
mod ensemble;
mod partition;
mod registration;

/// A kind's history, read from its lines: [`LineHistory::line`] takes one
/// (`None`: it did not parse), [`LineHistory::parse`] all of them in log
/// order.
pub(crate) trait LineHistory: Default {
    /// Takes one line; `None` when it did not parse.
    fn line(&mut self, line: &str) -> Option<()>;

    /// The history of `lines`, and how many did not parse.
    fn parse<S: AsRef<str>>(lines: &[S]) -> (Self, usize) {
        let mut h = Self::default();
        let bad = lines.iter().filter(|l| h.line(l.as_ref()).is_none()).count();
        (h, bad)
    }
}

pub use partition::partition_bound;
pub use registration::registration_bound;
mod claims;
mod rules;

/// The checker's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// How far past its deadline a timed acquire may return before it counts
    /// as late in the report.
    pub overshoot_margin: Duration,
    /// When set, an acquire that returned more than this past its deadline is
    /// a violation; unset, overshoots are only reported.
    pub max_overshoot: Option<Duration>,
}

/// The default overshoot margin before scaling: 50 ms.
pub const DEFAULT_OVERSHOOT_MARGIN: Duration = Duration::from_millis(50);

impl Default for CheckOptions {
    /// A margin of 50 ms times `ZK_TEST_TIMING` (1 when unset or invalid); no
    /// violation for overshoots.
    fn default() -> CheckOptions {
        let factor = std::env::var("ZK_TEST_TIMING")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0);
        CheckOptions {
            overshoot_margin: DEFAULT_OVERSHOOT_MARGIN.mul_f64(factor),
            max_overshoot: None,
        }
    }
}

/// Overshoots of the attempts that reached their deadline, for one fault kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OvershootStats {
    /// Attempts that returned at or after their deadline.
    pub at_deadline: u64,
    /// Of those, how many returned later than the margin allows.
    pub late: u64,
    /// The largest overshoot (ns).
    pub max_ns: u64,
    /// The 99th-percentile overshoot (ns).
    pub p99_ns: u64,
}

/// The safety margins of one fault kind: for each lock that changed hands
/// after its holder was told it might not hold it, the time from the old
/// holder's last `Ok` from `check()` to the new holder's grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarginStats {
    /// Hand-overs measured.
    pub count: u64,
    /// The smallest margin (ns; negative would be a violation).
    pub min_ns: i64,
    /// The 1st percentile (ns).
    pub p1_ns: i64,
    /// The median (ns).
    pub median_ns: i64,
}

/// The result of [`check`].
#[derive(Debug, Clone)]
pub struct Report {
    /// The human-readable summary (one fact per line, `name: value`).
    pub text: String,
    /// Every violation found, described.
    pub violations: Vec<String>,
    /// Fault kinds the campaign should have injected but did not (or fewer
    /// times than asked: `kind (n of N)`): the campaign fell short, not the
    /// library.
    pub missing: Vec<String>,
    /// Faults tried and not made (`N` lines), by kind (parts of compositions
    /// left out); each kind was tried again while the run lasted.
    pub not_made: BTreeMap<String, usize>,
    /// Overshoots by fault kind (`no fault` for attempts that met none).
    pub overshoots: BTreeMap<String, OvershootStats>,
    /// Overshoots by lock kind (`mutex`, `read`, `write`, `semaphore`, `multi`).
    pub overshoots_by_lock: BTreeMap<String, OvershootStats>,
    /// Safety margins by fault kind (`no fault` for hand-overs that met none,
    /// `all` for every one; `expired/KIND` for those whose old holder's
    /// session expired).
    pub margins: BTreeMap<String, MarginStats>,
}

/// Reads the logs in `dir` and checks them.
///
/// # Errors
///
/// The logs cannot be read.
///
/// # Examples
///
/// ```no_run
/// use zk_campaign::checker::{check_dir, CheckOptions};
/// let report = check_dir(std::path::Path::new("/tmp/run"), &CheckOptions::default())?;
/// print!("{}", report.text);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn check_dir(dir: &Path, opts: &CheckOptions) -> io::Result<Report> {
    Ok(check(&History::read_dir(dir)?, opts))
}

/// The nodes among `paths` that are lock or lease nodes: their name carries
/// Curator's protection prefix `_c_`. After a campaign, with every worker
/// gone, each one is a leak.
///
/// # Examples
///
/// ```
/// let leaks = zk_campaign::checker::leaked_nodes(["/campaign/mutex", "/campaign/mutex/_c_1-lock-0000000003"]);
/// assert_eq!(leaks, vec!["/campaign/mutex/_c_1-lock-0000000003".to_string()]);
/// ```
pub fn leaked_nodes<I, S>(paths: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    paths
        .into_iter()
        .filter(|p| p.as_ref().rsplit('/').next().is_some_and(|name| name.contains("_c_")))
        .map(|p| p.as_ref().to_string())
        .collect()
}

/// The `leaked nodes: N` line and up to 20 `LEAK:` lines.
///
/// # Examples
///
/// ```
/// let text = zk_campaign::checker::leak_report(&[]);
/// assert_eq!(text, "leaked nodes: 0\n");
/// ```
pub fn leak_report(leaks: &[String]) -> String {
    let mut t = format!("leaked nodes: {}\n", leaks.len());
    for l in leaks.iter().take(20) {
        let _ = writeln!(t, "  LEAK: {l}");
    }
    t
}

/// A section as the exclusion rules see it.
pub(crate) struct View<'a> {
    /// The section.
    pub(crate) s: &'a SecRec,
    /// Its effective end: the first moment its holder was told it might not
    /// hold the lock, or its end (see rule 1).
    pub(crate) eff: u64,
    /// Whether its holder heard of a loss at all (an event, or its release).
    pub(crate) told_any: bool,
    /// Cut short by a sign that the lock might not be held (a loss event
    /// or a `check()` that was not `Ok`): the lock may change hands.
    cut: bool,
    /// The holder's last `Ok` from `check()` (or its grant, in older logs),
    /// or its last claim after the cut, whichever came later.
    last_ok: u64,
}

/// Checks a history against the rules above.
///
/// Each rule is a function of its own, called in a fixed order (so the
/// violations come in the same order run after run): the attempts (rule 4),
/// each section in key order (rules 3 and 4), each lock in name order
/// (rules 1, 6 and 2), the claims (rules 8 to 10), the timed acquires
/// (rule 5), the guarded resource (rule 7), and the workers (rule 4).
///
/// # Examples
///
/// ```
/// use zk_campaign::checker::{check, CheckOptions};
/// use zk_campaign::history::History;
/// let h = History::from_lines(["H 10 0 1", "X 10 2"]);
/// assert!(check(&h, &CheckOptions::default()).violations.is_empty());
/// ```
pub fn check(h: &History, opts: &CheckOptions) -> Report {
    let session_ns = h.session_ns();
    let mut violations: Vec<String> = Vec::new();

    let attempts = attempts_end_in_time(h, &mut violations);
    let (views, sections) = section_views(h, &mut violations);
    let mut exclusion = ExclusionStats::default();
    let mut margin_samples: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (lock, list) in &views_by_lock(&views) {
        sections_exclude_each_other(h, lock, list, &mut exclusion, &mut violations);
        safety_margins_are_positive(h, lock, list, session_ns, &mut margin_samples, &mut violations);
        fencing_tokens_increase(lock, list, &mut violations);
    }
    let claimed = claims::judge(h, &views, &mut violations);
    let overshoot = overshoots(h, opts, &mut violations);
    let resource = resource_writes(h, &mut violations);
    workers_finish_cleanly(h, &mut violations);
    let mut cached = cache::judge(&h.cache_lines, &mut violations);
    cached.push_str(&counter::judge(&h.counter_lines, &mut violations));
    cached.push_str(&registration::judge(h, &mut violations));
    cached.push_str(&partition::judge(h, &mut violations));
    cached.push_str(&ensemble::judge(h, &mut violations));

    let faults = h.fault_counts();
    let kinds: Vec<String> = h
        .params
        .get("kinds")
        .map(|k| k.split(',').filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let missing = missing_kinds(h, &kinds, &faults);
    let facts = Facts {
        attempts,
        sections,
        exclusion,
        kinds,
        faults,
        missing,
        resource,
        claimed,
        cached,
        margins: margin_stats(margin_samples),
        overshoot,
    };
    Report {
        text: summary(h, &facts, &violations),
        violations,
        missing: facts.missing,
        not_made: h
            .not_made
            .iter()
            .filter(|m| !m.is_part())
            .fold(BTreeMap::new(), |mut m, n| {
                *m.entry(n.kind.clone()).or_default() += 1;
                m
            }),
        overshoots: facts.overshoot.by_fault,
        overshoots_by_lock: facts.overshoot.by_lock,
        margins: facts.margins,
    }
}

/// What the rules found besides their violations: the report's facts.
struct Facts {
    attempts: AttemptStats,
    sections: SectionStats,
    exclusion: ExclusionStats,
    /// The fault kinds the run asked for (the `kinds` parameter).
    kinds: Vec<String>,
    /// How many faults of each kind happened.
    faults: BTreeMap<String, usize>,
    /// See [`Report::missing`].
    missing: Vec<String>,
    /// Rule 7's lines.
    resource: String,
    /// Rules 8 to 10's lines.
    claimed: String,
    /// The cache, counter, registration and partitioner rules' lines
    /// (`cache.rs`, `counter.rs`, `registration.rs`, `partition.rs`) and the
    /// reconfigurable ensemble's (`ensemble.rs`); empty without those kinds.
    cached: String,
    /// See [`Report::margins`].
    margins: BTreeMap<String, MarginStats>,
    /// Rule 5's lines and statistics.
    overshoot: Overshoot,
}

/// The report's text ([`Report::text`]): the facts, then the first 30
/// violations.
fn summary(h: &History, f: &Facts, violations: &[String]) -> String {
    let mut t = String::new();
    attempt_lines(&mut t, h, &f.attempts);
    fault_lines(&mut t, h, f);
    section_lines(&mut t, h, f);
    t.push_str(&f.resource);
    t.push_str(&f.claimed);
    margin_lines(&mut t, &f.margins);
    t.push_str(&f.overshoot.text);
    t.push_str(&f.cached);
    let _ = writeln!(t, "violations: {}", violations.len());
    for v in violations.iter().take(30) {
        let _ = writeln!(t, "  VIOLATION: {v}");
    }
    if violations.len() > 30 {
        let _ = writeln!(t, "  ... and {} more", violations.len() - 30);
    }
    t
}

/// The views by lock, each lock's sorted by grant (then pid, thread and
/// attempt).
pub(crate) fn views_by_lock<'v, 'a: 'v>(
    views: impl IntoIterator<Item = &'v View<'a>>,
) -> BTreeMap<&'a str, Vec<&'v View<'a>>> {
    let mut by_lock: BTreeMap<&'a str, Vec<&'v View<'a>>> = BTreeMap::new();
    for v in views {
        by_lock.entry(v.s.lock.as_str()).or_default().push(v);
    }
    for list in by_lock.values_mut() {
        list.sort_by_key(|v| (v.s.start, v.s.pid, v.s.thr, v.s.att));
    }
    by_lock
}

/// `k1 n1, k2 n2, ...` of `pairs` (a count by kind), or `none` when
/// there are none: how the report lists every count by kind.
pub(crate) fn tally<K: std::fmt::Display, V: std::fmt::Display>(
    pairs: impl IntoIterator<Item = (K, V)>,
    none: &str,
) -> String {
    let listed: Vec<String> = pairs.into_iter().map(|(k, n)| format!("{k} {n}")).collect();
    if listed.is_empty() {
        none.to_string()
    } else {
        listed.join(", ")
    }
}

/// The value at `permille` of `sorted` (not empty): the smallest one with
/// at least that share of the values at or below it.
pub(crate) fn at_permille<T: Copy>(sorted: &[T], permille: usize) -> T {
    sorted[(sorted.len() * permille).div_ceil(1000).saturating_sub(1)]
}

/// The report's lines on the attempts: acquisitions by lock kind, outcomes,
/// the attempts whose worker was stopped, the errors by kind.
fn attempt_lines(t: &mut String, h: &History, a: &AttemptStats) {
    let total: u64 = a.acquired.values().sum();
    let by_mode = tally(
        ["mutex", "read", "write", "semaphore", "multi", "leader"]
            .iter()
            .map(|m| (m, a.acquired.get(*m).copied().unwrap_or(0))),
        "",
    );
    let _ = writeln!(t, "acquisitions: {total} ({by_mode})");
    let _ = writeln!(
        t,
        "attempts: {} (acquired {total}, timed out {}, errors {}, in flight at kill -9 {})",
        h.attempts.len(),
        a.timeouts,
        a.errors,
        a.inflight_killed
    );
    if a.stopped > 0 {
        let _ = writeln!(
            t,
            "attempts whose worker was stopped by SIGSTOP meanwhile: {} (the time stopped not counted against them)",
            a.stopped
        );
    }
    if !a.error_kinds.is_empty() {
        let _ = writeln!(t, "errors by kind: {}", tally(&a.error_kinds, ""));
    }
}

/// The report's lines on the faults: made by kind (those asked for first),
/// not made by kind and reason, and the kinds missing.
fn fault_lines(t: &mut String, h: &History, f: &Facts) {
    let mut fault_names: Vec<String> = f.kinds.clone();
    for k in f.faults.keys() {
        if !fault_names.contains(k) {
            fault_names.push(k.clone());
        }
    }
    let _ = writeln!(
        t,
        "faults: {} ({}){}",
        f.faults.values().sum::<usize>(),
        tally(
            fault_names.iter().map(|k| (k, f.faults.get(k).copied().unwrap_or(0))),
            ""
        ),
        if h.failed_faults > 0 {
            format!("; {} not made", h.failed_faults)
        } else {
            String::new()
        }
    );
    t.push_str(&not_made_lines(h));
    let _ = writeln!(
        t,
        "missing fault kinds: {}",
        if f.missing.is_empty() {
            "none".to_string()
        } else {
            f.missing.join(", ")
        }
    );
}

/// The report's lines on the sections (rules 1 to 4): how they ended, the
/// releases, the fenced overlaps, the longest wait and release.
fn section_lines(t: &mut String, h: &History, f: &Facts) {
    let (a, s, x) = (&f.attempts, &f.sections, &f.exclusion);
    let _ = writeln!(
        t,
        "sections: {} (cut short by a loss signal {}, told at grant {}, open at kill -9 {}); {} overlaps checked",
        h.sections.len(),
        s.cut_short,
        s.told_at_grant,
        s.killed_in_section,
        x.overlaps_checked
    );
    if s.status_unknown > 0 {
        let _ = writeln!(
            t,
            "sections with no status (older logs; the status part of rule 3 cannot apply): {}",
            s.status_unknown
        );
    }
    let _ = writeln!(
        t,
        "releases that reported the loss (LockLost): {} ({} first learned at the release)",
        s.release_lost, s.release_lost_first
    );
    let _ = writeln!(
        t,
        "release failures: {} ({} began while still connected)",
        s.release_failed, s.release_failed_connected
    );
    let _ = writeln!(
        t,
        "fenced overlaps after an instant expiry: {} (longest {:.3} ms); after an operator break: \
         {} (longest {:.3} ms)",
        x.fenced,
        x.fenced_max_ns as f64 / 1e6,
        x.fenced_broken,
        x.fenced_broken_max_ns as f64 / 1e6
    );
    match &a.longest {
        Some((w, what)) => {
            let _ = writeln!(t, "longest wait: {:.1} ms ({what})", *w as f64 / 1e6);
        }
        None => {
            let _ = writeln!(t, "longest wait: none");
        }
    }
    if let Some((w, what)) = &s.longest_release {
        let _ = writeln!(t, "longest release: {:.1} ms ({what})", *w as f64 / 1e6);
    }
    if h.unparsed > 0 {
        let _ = writeln!(t, "unparsed lines: {}", h.unparsed);
    }
    let _ = writeln!(
        t,
        "sections ended by check() before any loss event: {}; ended at a SIGSTOP of their holder (no Ok after it): {}",
        s.check_first, s.ended_by_pause
    );
}

/// The report's lines on the safety margins (rule 6), by fault kind.
fn margin_lines(t: &mut String, margins: &BTreeMap<String, MarginStats>) {
    let _ = writeln!(
        t,
        "safety margin (a section cut short by a loss signal: its last Ok check() to the next grant that excludes it): {}",
        if margins.is_empty() { "no lock changed hands after a loss signal" } else { "by fault kind" }
    );
    for (kind, m) in margins {
        let _ = writeln!(
            t,
            "  margin {kind}: {} hand-overs, min {:.1} ms, p1 {:.1} ms, median {:.1} ms",
            m.count,
            m.min_ns as f64 / 1e6,
            m.p1_ns as f64 / 1e6,
            m.median_ns as f64 / 1e6
        );
    }
}

/// The faults not made (`N` lines), by kind: how many, and why (the
/// reasons told apart by their first words, numbers left out); a
/// composition's parts not made by their own kind. Empty when every fault
/// tried was made.
fn not_made_lines(h: &History) -> String {
    // kind -> (count, reason class -> count), and the parts' by composition.
    type Reasons = BTreeMap<String, usize>;
    let mut own: BTreeMap<&str, (usize, Reasons)> = BTreeMap::new();
    let mut parts: BTreeMap<&str, BTreeMap<&str, (usize, Reasons)>> = BTreeMap::new();
    for m in &h.not_made {
        let entry = match m.kind.split_once(':') {
            Some((comp, part)) => parts.entry(comp).or_default().entry(part).or_default(),
            None => own.entry(m.kind.as_str()).or_default(),
        };
        entry.0 += 1;
        *entry.1.entry(reason_class(&m.reason)).or_default() += 1;
    }
    if own.is_empty() && parts.is_empty() {
        return String::new();
    }
    let reasons = |r: &Reasons| {
        r.iter()
            .map(|(c, n)| format!("{c} x{n}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut t = format!(
        "faults not made: {} (tried again while the run lasted; a kind short of its count is missing below)\n",
        h.failed_faults
    );
    let mut kinds: Vec<&str> = own.keys().copied().collect();
    kinds.extend(parts.keys().copied().filter(|k| !own.contains_key(k)));
    kinds.sort_unstable();
    for k in kinds {
        let (n, r) = own.get(k).cloned().unwrap_or_default();
        let mut line = format!("  not made: {k} x{n}");
        match parts.get(k) {
            Some(p) => {
                let listed: Vec<String> = p
                    .iter()
                    .map(|(part, (pn, pr))| format!("{part} x{pn} ({})", reasons(pr)))
                    .collect();
                let _ = write!(line, ": parts not made: {}", listed.join(", "));
                let rest: Reasons = r.into_iter().filter(|(c, _)| !c.contains("parts not made")).collect();
                if !rest.is_empty() {
                    let _ = write!(line, "; {}", reasons(&rest));
                }
            }
            None => {
                let _ = write!(line, ": {}", reasons(&r));
            }
        }
        let _ = writeln!(t, "{line}");
    }
    t
}

/// A reason's class, to count alike reasons together: its words up to the
/// first parenthesis, colon, semicolon or ` / `, each run of digits
/// (hexadecimal after `0x` too) written `N`, at most 100 characters.
fn reason_class(reason: &str) -> String {
    let head = reason
        .split(['(', ':', ';'])
        .next()
        .unwrap_or("")
        .split(" / ")
        .next()
        .unwrap_or("")
        .trim();
    let mut out = String::new();
    let mut chars = head.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            if c == '0' && chars.peek() == Some(&'x') {
                chars.next();
                while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                    chars.next();
                }
            }
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    if out.chars().count() > 100 {
        out = out.chars().take(100).collect::<String>() + "...";
    }
    if out.is_empty() {
        "(no reason given)".into()
    } else {
        out
    }
}

/// The fault kinds that happened fewer times than the run asked for: once,
/// or `min_each` times (`P`); `kind (N of M)` when it happened N < M times.
fn missing_kinds(h: &History, kinds: &[String], faults: &BTreeMap<String, usize>) -> Vec<String> {
    let need = h.param_u64("min_each").unwrap_or(0).max(1) as usize;
    kinds
        .iter()
        .filter_map(|k| match faults.get(k).copied().unwrap_or(0) {
            0 => Some(k.clone()),
            n if n < need => Some(format!("{k} ({n} of {need})")),
            _ => None,
        })
        .collect()
}

/// Statistics of margin samples (ns, may be negative), by key.
fn margin_stats(samples: BTreeMap<String, Vec<i64>>) -> BTreeMap<String, MarginStats> {
    stats_by_key(samples, |v| MarginStats {
        count: v.len() as u64,
        min_ns: v[0],
        p1_ns: at_permille(v, 10),
        median_ns: at_permille(v, 500),
    })
}

/// `stats` of each key's samples (not empty), sorted.
pub(crate) fn stats_by_key<T: Ord, S>(
    samples: BTreeMap<String, Vec<T>>,
    stats: impl Fn(&[T]) -> S,
) -> BTreeMap<String, S> {
    samples
        .into_iter()
        .map(|(kind, mut v)| {
            v.sort_unstable();
            (kind, stats(&v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const P: &str =
        "P seed=1 backend=embedded workers=2 threads=1 session_ms=1000 acquire_timeout_ms=1000 kinds=cut";
    pub(super) const MS: u64 = 1_000_000;

    pub(super) fn opts() -> CheckOptions {
        CheckOptions {
            overshoot_margin: Duration::from_millis(50),
            max_overshoot: None,
        }
    }

    /// One section's lines: attempt (deadline 1 s), grant, section, work done, end.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn section(
        pid: u32,
        att: u64,
        lock: &str,
        mode: &str,
        token: i64,
        sid: &str,
        start: u64,
        end: u64,
        told: Option<u64>,
    ) -> Vec<String> {
        let told_s = told.map_or("-".to_string(), |t| t.to_string());
        let ev = if told.is_some() { "Suspended" } else { "-" };
        let attempt_lock = if mode == "multi" { "multi" } else { lock };
        vec![
            format!("A {pid} 0 {att} {attempt_lock} {mode} {} {}", start - 10, 1000 * MS),
            format!("R {pid} 0 {att} {attempt_lock} {mode} {start} acquired - 10"),
            format!("S {pid} 0 {att} {lock} {mode} {token} {sid} {start} -"),
            format!("D {pid} 0 {att} {end}"),
            format!("E {pid} 0 {att} {lock} {mode} {token} {sid} {start} {end} {told_s} {ev} - Held Held 1 ok"),
        ]
    }

    pub(super) fn worker(pid: u32, body: Vec<Vec<String>>) -> Vec<String> {
        let mut v = vec![format!("H {pid} 0 1")];
        v.extend(body.into_iter().flatten());
        v.push(format!("X {pid} 999999999999"));
        v
    }

    pub(super) fn history(extra: &[&str], workers: Vec<Vec<String>>) -> History {
        let mut lines: Vec<String> = vec![P.to_string(), "F cut 1 2 synthetic".to_string()];
        lines.extend(extra.iter().map(|s| s.to_string()));
        lines.extend(workers.into_iter().flatten());
        History::from_lines(lines)
    }

    pub(super) fn violations(h: &History) -> Vec<String> {
        check(h, &opts()).violations
    }

    /// Exactly one violation, starting with `what`.
    pub(super) fn assert_caught(h: &History, what: &str) {
        let v = violations(h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].starts_with(what), "{v:#?}");
    }

    /// Worker 10's section 1 on `lock` (token 5, session `a`, 100 to 200)
    /// with the `E` line `e`.
    fn ending(lock: &str, mode: &str, e: impl Into<String>) -> Vec<String> {
        let mut w = section(10, 1, lock, mode, 5, "a", 100, 200, None);
        w[4] = e.into();
        w
    }

    /// Worker 10 alone, with one section (its lines).
    pub(super) fn one(lines: Vec<String>) -> History {
        history(&[], vec![worker(10, vec![lines])])
    }

    /// Holders 10 and 11, with one section (its lines) each, and `extra`
    /// coordinator lines.
    pub(super) fn two(extra: &[&str], a: Vec<String>, b: Vec<String>) -> History {
        history(extra, vec![worker(10, vec![a]), worker(11, vec![b])])
    }

    /// The report on `h`, which breaks no rule.
    pub(super) fn assert_clean(h: &History) -> Report {
        let r = check(h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        r
    }

    /// The report says `what`.
    pub(super) fn assert_says(r: &Report, what: &str) {
        assert!(r.text.contains(what), "{}", r.text);
    }

    /// Some violation in `v` says `what`.
    pub(super) fn assert_any(v: &[String], what: &str) {
        assert!(v.iter().any(|v| v.contains(what)), "{v:?}");
    }

    /// A violation of `h` starts with `what`.
    pub(super) fn assert_flags(h: &History, what: &str) {
        let v = violations(h);
        assert!(v.iter().any(|v| v.starts_with(what)), "{v:#?}");
    }

    fn clean() -> History {
        history(
            &[],
            vec![
                worker(
                    10,
                    vec![
                        section(10, 1, "/l", "mutex", 5, "a", 100, 200, None),
                        section(10, 2, "/rw", "read", 7, "a", 100, 300, None),
                        section(10, 3, "/l", "multi", 9, "a", 250, 260, None),
                    ],
                ),
                worker(
                    11,
                    vec![
                        section(11, 1, "/l", "mutex", 6, "b", 210, 240, None),
                        // Readers share.
                        section(11, 2, "/rw", "read", 8, "b", 150, 350, None),
                        section(11, 3, "/rw", "write", 10, "b", 400, 500, None),
                    ],
                ),
            ],
        )
    }

    #[test]
    fn a_clean_history_passes() {
        let r = check(&clean(), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(r.missing.is_empty());
        assert_says(
            &r,
            "acquisitions: 6 (mutex 2, read 2, write 1, semaphore 0, multi 1, leader 0)",
        );
        assert_says(&r, "violations: 0");
    }

    #[test]
    fn catches_an_overlap_of_two_holders() {
        let h = two(
            &[],
            section(10, 1, "/l", "mutex", 5, "a", 100, 200, None),
            section(11, 1, "/l", "mutex", 6, "b", 150, 250, None),
        );
        assert_caught(&h, "overlap on /l");
        // A reader and a writer may not overlap either.
        let h = two(
            &[],
            section(10, 1, "/rw", "read", 5, "a", 100, 200, None),
            section(11, 1, "/rw", "write", 6, "b", 150, 250, None),
        );
        assert_caught(&h, "overlap on /rw");
    }

    #[test]
    fn an_overlap_after_the_earlier_holder_was_told_passes() {
        // Holder a heard Suspended at 140, before b's grant at 150.
        let h = two(
            &[],
            section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(140)),
            section(11, 1, "/l", "mutex", 6, "b", 150, 250, None),
        );
        assert_clean(&h);
        // Told only after the other's grant: still an overlap.
        let h = two(
            &[],
            section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(160)),
            section(11, 1, "/l", "mutex", 6, "b", 150, 250, None),
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn catches_two_certain_leaders_and_terms_out_of_order() {
        // Two leaders of one election at once, neither told of a loss.
        let h = two(
            &[],
            section(10, 1, "/e", "leader", 5, "a", 100, 200, None),
            section(11, 1, "/e", "leader", 6, "b", 150, 250, None),
        );
        assert_caught(&h, "overlap on /e");
        // One after the other, but the later leader has the older term.
        let h = two(
            &[],
            section(10, 1, "/e", "leader", 9, "a", 100, 200, None),
            section(11, 1, "/e", "leader", 6, "b", 300, 400, None),
        );
        assert_caught(&h, "fencing tokens out of order on /e");
        // The first leader was told it may not lead before the second began.
        let h = two(
            &[],
            section(10, 1, "/e", "leader", 5, "a", 100, 200, Some(140)),
            section(11, 1, "/e", "leader", 6, "b", 150, 250, None),
        );
        assert!(check(&h, &opts()).violations.is_empty());
    }

    #[test]
    fn catches_fencing_tokens_out_of_grant_order() {
        let h = two(
            &[],
            section(10, 1, "/l", "mutex", 9, "a", 100, 200, None),
            section(11, 1, "/l", "mutex", 6, "b", 300, 400, None),
        );
        assert_caught(&h, "fencing tokens out of order on /l");
    }

    #[test]
    fn catches_an_unreported_loss() {
        let w = ending("/l", "mutex", "E 10 0 1 /l mutex 5 a 100 200 - - - Held Lost 1 ok");
        assert_caught(&one(w), "unreported loss on /l");
        // Reported (told late, before the release): fine.
        let w = ending("/l", "mutex", "E 10 0 1 /l mutex 5 a 100 200 - - 210 Held Lost 1 ok");
        assert!(violations(&one(w)).is_empty());
        // A failed release while disconnected, with no signal: lost unreported.
        let w = ending(
            "/l",
            "mutex",
            "E 10 0 1 /l mutex 5 a 100 200 - - - Held Held 0 ZooKeeper.ConnectionLoss",
        );
        assert_caught(&one(w), "unreported loss on /l");
        // Uncertain at grant, never said so.
        let w = ending("/l", "mutex", "E 10 0 1 /l mutex 5 a 100 200 - - - Uncertain Held 1 ok");
        assert_caught(&one(w), "unreported loss on /l");
    }

    /// Worker 10's attempt 1's `E` line with the given signal fields:
    /// `told`, `told-late`, status at grant and at the end, connected,
    /// release.
    #[allow(clippy::too_many_arguments)]
    fn end_line(
        lock: &str,
        mode: &str,
        token: i64,
        told: Option<u64>,
        late: Option<u64>,
        st0: &str,
        st_end: &str,
        connected: bool,
        release: &str,
    ) -> String {
        let t = |o: Option<u64>| o.map_or("-".to_string(), |t| t.to_string());
        let ev = if told.is_some() { "Lost" } else { "-" };
        format!(
            "E 10 0 1 {lock} {mode} {token} a 100 200 {} {ev} {} {st0} {st_end} {} {release}",
            t(told),
            t(late),
            u8::from(connected)
        )
    }

    /// A multi-lock section over three locks whose `E` lines carry `end`'s
    /// signal fields (as the worker writes them: the guard's, on every line).
    fn multi_section(end: impl Fn(&str, i64) -> String) -> Vec<String> {
        let mut v = vec![
            format!("A 10 0 1 multi multi 90 {}", 1000 * MS),
            "R 10 0 1 multi multi 100 acquired - 10".to_string(),
        ];
        let locks = [("/m", 5), ("/rw", 6), ("/s", 7)];
        for (lock, token) in locks {
            v.push(format!("S 10 0 1 {lock} multi {token} a 100 node"));
        }
        v.push("D 10 0 1 200".to_string());
        for (lock, token) in locks {
            v.push(end(lock, token));
        }
        v
    }

    #[test]
    fn the_status_rule_applies_to_semaphore_and_multi_lock_sections() {
        // A semaphore section lost at the end, nothing heard: caught (before the
        // guard had a status, such sections logged `?` and passed).
        let w = ending(
            "/s",
            "semaphore",
            end_line("/s", "semaphore", 5, None, None, "Held", "Lost", true, "LockLost"),
        );
        assert_caught(&one(w), "unreported loss on /s");
        let w = ending(
            "/s",
            "semaphore",
            end_line("/s", "semaphore", 5, None, None, "Uncertain", "Held", true, "ok"),
        );
        assert_caught(&one(w), "unreported loss on /s");
        // Heard before the release: fine.
        let w = ending(
            "/s",
            "semaphore",
            end_line("/s", "semaphore", 5, None, Some(210), "Held", "Lost", true, "LockLost"),
        );
        assert!(violations(&one(w)).is_empty());

        // A multi-lock whose guard (its worst member) was lost, nothing heard:
        // one violation for the attempt, whichever member was lost.
        let lost = multi_section(|l, t| end_line(l, "multi", t, None, None, "Held", "Lost", true, "LockLost"));
        assert_caught(&one(lost), "unreported loss on /m");
        // The same with the loss heard on the guard's receiver: fine.
        let told = multi_section(|l, t| end_line(l, "multi", t, Some(150), None, "Held", "Lost", true, "LockLost"));
        let r = assert_clean(&one(told));
        assert_says(
            &r,
            "acquisitions: 1 (mutex 0, read 0, write 0, semaphore 0, multi 1, leader 0)",
        );

        // Older logs (`?`): the status part cannot fire; the report says so.
        let old = multi_section(|l, t| end_line(l, "multi", t, None, None, "?", "?", true, "ok"));
        let r = assert_clean(&one(old));
        assert_says(&r, "sections with no status");
        assert!(!check(&clean(), &opts()).text.contains("sections with no status"));
    }

    #[test]
    fn a_release_answering_lock_lost_is_a_report_not_a_failure() {
        // Held at the end, then the release said LockLost while disconnected,
        // nothing heard on the receiver: the release told the holder. Before,
        // this was counted as a failed release and an unreported loss.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        // (The release took 2.5 ms: the last, optional field.)
        w[4] = end_line("/l", "mutex", 5, None, None, "Held", "Held", false, "LockLost") + " 2500000";
        let r = assert_clean(&one(w));
        assert_says(&r, "longest release: 2.5 ms (mutex on /l, release LockLost)");
        assert_says(
            &r,
            "releases that reported the loss (LockLost): 1 (1 first learned at the release)",
        );
        assert_says(&r, "release failures: 0 (0 began");
        // A real release failure while disconnected and silent is still caught.
        let w = ending(
            "/l",
            "mutex",
            end_line(
                "/l",
                "mutex",
                5,
                None,
                None,
                "Held",
                "Held",
                false,
                "ZooKeeper.ConnectionLoss",
            ),
        );
        assert_caught(&one(w), "unreported loss on /l");
        // LockLost does not excuse a status that said Lost while the receiver
        // stayed silent.
        let w = ending(
            "/l",
            "mutex",
            end_line("/l", "mutex", 5, None, None, "Held", "Lost", true, "LockLost"),
        );
        assert_caught(&one(w), "unreported loss on /l");
        // A multi-lock's mixed release errors are a failure (and a report).
        let mixed = multi_section(|l, t| {
            end_line(
                l,
                "multi",
                t,
                Some(150),
                None,
                "Held",
                "Lost",
                false,
                "Multiple[LockLost+ZooKeeper.ConnectionLoss]",
            )
        });
        let r = assert_clean(&one(mixed));
        assert_says(&r, "releases that reported the loss (LockLost): 3 (0 first");
        assert_says(&r, "release failures: 3 (0 began");
        // A lost holder told only by its release still excuses a fenced
        // overlap after an instant expiry (it was told).
        let a = ending(
            "/l",
            "mutex",
            end_line("/l", "mutex", 5, None, None, "Held", "Held", true, "LockLost"),
        );
        let h = two(&["I a 120"], a, section(11, 1, "/l", "mutex", 6, "b", 150, 250, None));
        let r = assert_clean(&h);
        assert_says(&r, "fenced overlaps after an instant expiry: 1");
    }

    #[test]
    fn reports_overshoots_per_lock_kind_with_each_attempts_own_deadline() {
        let far = 100_000 * MS;
        let attempt = |att: u64, mode: &str, deadline_ms: u64, wait_ms: u64| {
            let lock = if mode == "multi" { "multi" } else { "/l" };
            let start = far + att * 100_000 * MS;
            vec![
                format!("A 10 0 {att} {lock} {mode} {start} {}", deadline_ms * MS),
                format!(
                    "R 10 0 {att} {lock} {mode} {} timeout - {}",
                    start + wait_ms * MS,
                    wait_ms * MS
                ),
            ]
        };
        let h = history(
            &[],
            vec![worker(
                10,
                vec![
                    attempt(1, "mutex", 0, 1),         // a zero timeout: 1 ms over
                    attempt(2, "read", 200, 230),      // 30 ms over
                    attempt(3, "write", 2000, 2100),   // 100 ms over: late
                    attempt(4, "semaphore", 500, 400), // before its deadline (an error, say)
                    attempt(5, "multi", 1500, 1520),   // 20 ms over
                ],
            )],
        );
        let r = check(&h, &opts());
        let b = &r.overshoots_by_lock;
        assert_eq!((b["mutex"].at_deadline, b["mutex"].max_ns), (1, MS));
        assert_eq!((b["read"].max_ns, b["read"].late), (30 * MS, 0));
        assert_eq!((b["write"].max_ns, b["write"].late), (100 * MS, 1));
        assert!(!b.contains_key("semaphore"));
        assert_eq!(b["multi"].max_ns, 20 * MS);
        assert_says(&r, "overshoot by lock semaphore: 1 timed, 0 at the deadline");
        assert_says(
            &r,
            "overshoot by lock write: 1 timed, 1 at the deadline, 1 late, max 100.0 ms",
        );
        assert_eq!(r.overshoots["no fault"].at_deadline, 4);
        // The overlong rule counts from each attempt's own timeout: a zero
        // timeout that took 4 sessions (of 1 s) + 10 s + 1 ms is overlong.
        let h = history(&[], vec![worker(10, vec![attempt(1, "mutex", 0, 14_001)])]);
        assert_caught(&h, "overlong attempt");
    }

    /// A section's lines with the newer fields: the last `Ok` and the first
    /// error of `check()`, and the guarded write's outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn checked(
        pid: u32,
        token: i64,
        sid: &str,
        start: u64,
        end: u64,
        told: Option<u64>,
        last_ok: u64,
        first_bad: Option<u64>,
        write: &str,
    ) -> Vec<String> {
        let mut v = section(pid, 1, "/l", "mutex", token, sid, start, end, told);
        let bad = first_bad.map_or("-".to_string(), |t| t.to_string());
        v[4] = format!("{} 1000 {last_ok} {bad} {write}", v[4]);
        v
    }

    #[test]
    fn a_section_ends_at_its_first_check_that_is_not_ok() {
        // A works until 300 but its check() failed at 150 (last Ok at 140); B
        // is granted at 200: no overlap, a margin of 60 ns, under `cut`.
        let h = two(
            &[],
            checked(10, 5, "a", 100, 300, None, 140, Some(150), "ok"),
            checked(11, 6, "b", 200, 250, None, 240, None, "ok"),
        );
        let r = assert_clean(&h);
        assert_eq!(r.margins["cut"].min_ns, 60);
        assert_eq!(r.margins["all"].count, 1);
        assert!(
            r.text.contains("sections ended by check() before any loss event: 1;"),
            "{}",
            r.text
        );
        assert_says(&r, "margin cut: 1 hand-overs, min 0.0 ms");
        // Without the failed check, the same history is an overlap.
        let h = two(
            &[],
            checked(10, 5, "a", 100, 300, None, 290, None, "ok"),
            checked(11, 6, "b", 200, 250, None, 240, None, "ok"),
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn a_check_ok_after_the_next_grant_is_a_violation() {
        // A heard Suspended at 150 but its check() still said Ok at 210, after
        // B's grant at 200 (a paused holder resuming, say): no margin.
        let h = two(
            &[],
            checked(10, 5, "a", 100, 300, Some(150), 210, Some(220), "ok"),
            checked(11, 6, "b", 200, 250, None, 240, None, "ok"),
        );
        assert_caught(&h, "no safety margin on /l");
        // Excused like an overlap when A's session was expired instantly.
        let h = two(
            &["I a 120"],
            checked(10, 5, "a", 100, 300, Some(150), 210, Some(220), "ok"),
            checked(11, 6, "b", 200, 250, None, 240, None, "ok"),
        );
        assert_clean(&h);
    }

    #[test]
    fn a_holder_stopped_by_sigstop_ends_at_the_stop_unless_it_gets_ok_after() {
        // A's last Ok at 140, stopped 150..400, told at 401; B granted at 200.
        let b = || worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]);
        let h = history(
            &["Q 10 150 400"],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 401, None, 140, Some(401), "ok")]),
                b(),
            ],
        );
        let r = assert_clean(&h);
        assert_says(&r, "ended at a SIGSTOP of their holder (no Ok after it): 1");
        assert_eq!(r.margins["cut"].min_ns, 60);
        // An Ok after the resume (at 402) is not excused: no margin, and an overlap.
        let h = history(
            &["Q 10 150 400"],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 410, None, 402, Some(405), "ok")]),
                b(),
            ],
        );
        let v = violations(&h);
        assert!(v.iter().any(|v| v.starts_with("overlap on /l")), "{v:#?}");
        assert!(v.iter().any(|v| v.starts_with("no safety margin on /l")), "{v:#?}");
    }

    #[test]
    fn the_guarded_resource_must_see_tokens_in_order() {
        let w = || {
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 150, None, 140, None, "ok")]),
                worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]),
            ]
        };
        let h = history(&["V /l 1 5 10 0 1", "V /l 2 6 11 0 1"], w());
        let r = assert_clean(&h);
        assert_says(
            &r,
            "guarded writes: 2 read back on 1 resources, 2 acknowledged, refused 0",
        );
        assert_caught(
            &history(&["V /l 1 6 11 0 1", "V /l 2 5 10 0 1"], w()),
            "resource /l: token 5",
        );
        assert_caught(&history(&["V /l 2 6 11 0 1"], w()), "resource /l: the write of");
        assert_caught(
            &history(&["V /l 1 4 10 0 1", "V /l 2 6 11 0 1"], w()),
            "resource /l: a write with token 4",
        );
        // Not read back at all: nothing to judge.
        assert!(check(&history(&[], w()), &opts())
            .text
            .contains("guarded writes: not read back"));
    }

    #[test]
    fn catches_a_release_refused_with_not_owner() {
        let w = ending(
            "/l",
            "mutex",
            "E 10 0 1 /l mutex 5 a 100 200 - - - Held Held 1 NotOwner",
        );
        assert_caught(&one(w), "release refused (NotOwner)");
    }

    #[test]
    fn catches_a_hung_acquire_but_excuses_a_killed_worker() {
        let hung = vec![vec!["A 10 0 1 /l mutex 100 1000000000".to_string()]];
        assert_caught(&history(&[], vec![worker(10, hung.clone())]), "hung attempt");
        // The same in a worker killed -9: in flight, no violation.
        let mut lines = vec!["H 10 0 1".to_string()];
        lines.extend(hung.into_iter().flatten());
        let h = history(&["K 0 10 500"], vec![lines]);
        assert_clean(&h);
        assert!(check(&h, &opts()).text.contains("in flight at kill -9 1"));
    }

    #[test]
    fn catches_an_overlong_attempt() {
        // Timeout 1 s + 4 sessions of 1 s + 10 s = 15 s; this one took 16 s.
        let h = history(
            &[],
            vec![worker(
                10,
                vec![vec![
                    "A 10 0 1 /l mutex 100".to_string(),
                    format!(
                        "R 10 0 1 /l mutex {} error ZooKeeper.ConnectionLoss {}",
                        100 + 16_000 * MS,
                        16_000 * MS
                    ),
                ]],
            )],
        );
        assert_caught(&h, "overlong attempt");
    }

    /// Worker 10's attempt 1 from 100 taking `wait_ms` (deadline 1 s: it is
    /// overlong past 1 s + 4 sessions of 1 s + 10 s = 15 s), with `extra`
    /// coordinator lines (its stops).
    fn long_attempt(wait_ms: u64, extra: &[&str]) -> History {
        history(
            extra,
            vec![worker(
                10,
                vec![vec![
                    format!("A 10 0 1 /l mutex 100 {}", 1000 * MS),
                    format!(
                        "R 10 0 1 /l mutex {} error ZooKeeper.ConnectionLoss {}",
                        100 + wait_ms * MS,
                        wait_ms * MS
                    ),
                ]],
            )],
        )
    }

    #[test]
    fn an_attempt_is_not_overlong_for_the_time_its_worker_was_stopped() {
        // 72 s, of which 60 s stopped (the composed fault of issue 40): 12 s
        // of its own, within the 15 s.
        let q = format!("Q 10 {} {}", 100 + 5_000 * MS, 100 + 65_000 * MS);
        let r = check(&long_attempt(72_000, &[&q]), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert_says(&r, "attempts whose worker was stopped by SIGSTOP meanwhile: 1");
        // Two stops that overlap count once: 5..65 s and 30..40 s are 60 s.
        let q2 = format!("Q 10 {} {}", 100 + 30_000 * MS, 100 + 40_000 * MS);
        assert!(violations(&long_attempt(72_000, &[&q, &q2])).is_empty());
        assert_caught(&long_attempt(80_000, &[&q, &q2]), "overlong attempt");
    }

    #[test]
    fn a_stop_excuses_exactly_its_span_and_an_attempt_overlong_beyond_it_is_caught() {
        // 72 s with 56.5 s stopped: 15.5 s of its own, overlong.
        let q = format!("Q 10 {} {}", 100 + 5_000 * MS, 100 + 61_500 * MS);
        let h = long_attempt(72_000, &[&q]);
        assert_caught(&h, "overlong attempt");
        assert!(
            violations(&h)[0].contains("took 72000 ms, 56500 ms of them with its worker stopped by SIGSTOP"),
            "{:#?}",
            violations(&h)
        );
        // Only the part of a stop within the attempt counts: stopped from
        // before it began to 10 s into it is 10 s (16 s of its own).
        let q = format!("Q 10 0 {}", 100 + 10_000 * MS);
        assert_caught(&long_attempt(26_000, &[&q]), "overlong attempt");
        // A stop after it ended, or another worker's, excuses nothing.
        let after = format!("Q 10 {} {}", 100 + 17_000 * MS, 100 + 80_000 * MS);
        assert_caught(&long_attempt(16_000, &[&after]), "overlong attempt");
        let other = format!("Q 11 {} {}", 100, 100 + 80_000 * MS);
        assert_caught(&long_attempt(16_000, &[&other]), "overlong attempt");
        // Without the stop, the 12 s attempt of the test above is fine, and
        // the 72 s one overlong by itself.
        assert!(violations(&long_attempt(12_000, &[])).is_empty());
        assert_caught(&long_attempt(72_000, &[]), "overlong attempt");
    }

    #[test]
    fn an_overshoot_does_not_count_the_time_the_worker_was_stopped_after_its_deadline() {
        let strict = CheckOptions {
            max_overshoot: Some(Duration::from_millis(100)),
            ..opts()
        };
        // Deadline 1 s; returned at 6 s; stopped from 0.5 s to 5.98 s: 4.98 s
        // of the 5 s overshoot came after the deadline while stopped, 20 ms
        // are its own.
        let q = format!("Q 10 {} {}", 100 + 500 * MS, 100 + 5_980 * MS);
        let h = history(&[&q], vec![worker(10, vec![timed(10, 1, 100, 6_000, "timeout")])]);
        let r = check(&h, &strict);
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert_eq!(r.overshoots["cut"].max_ns, 20 * MS);
        assert_says(
            &r,
            "the time 1 attempts' workers were stopped by SIGSTOP after their deadline",
        );
        // Stopped before its deadline only (0.2..0.9 s): nothing excused, its
        // 300 ms overshoot is its own, and late.
        let q = format!("Q 10 {} {}", 100 + 200 * MS, 100 + 900 * MS);
        let h = history(&[&q], vec![worker(10, vec![timed(10, 1, 100, 1_300, "timeout")])]);
        let r = check(&h, &strict);
        assert_eq!(r.overshoots["cut"].max_ns, 300 * MS);
        assert_eq!(r.violations.len(), 1, "{:#?}", r.violations);
        assert!(r.violations[0].starts_with("late acquire"), "{:#?}", r.violations);
    }

    #[test]
    fn faults_not_made_are_reported_by_kind_and_reason() {
        let h = History::from_lines([
            "P seed=1 session_ms=1000 min_each=1 kinds=composed-random,composed-pause-expire-resume,cut",
            "F cut 1 2 synthetic",
            "N composed-random:kill-follower 10 70 no quorum within 60s (modes: 0:leader, 1:down)",
            "N composed-random:pause-leader-sync 10 30 no leader (no quorum?)",
            "N composed-random 10 80 2 of 3 parts not made (kill-follower, pause-leader-sync): [...]",
            "N composed-random:kill-follower 100 170 no quorum within 60s (modes: 0:down, 1:leader)",
            "N composed-random 100 180 1 of 2 parts not made (kill-follower): [...]",
            "F composed-random 200 300 kill-follower+cut: [...]",
            "N composed-pause-expire-resume 400 500 no rival was granted the leader lock /campaign/election within 18000 ms after the expiry (seen at +6203 ms)",
        ]);
        let r = assert_clean(&h);
        assert_eq!(r.missing, vec!["composed-pause-expire-resume".to_string()]);
        assert_eq!(
            r.not_made.iter().map(|(k, n)| (k.as_str(), *n)).collect::<Vec<_>>(),
            [("composed-pause-expire-resume", 1), ("composed-random", 2)]
        );
        assert!(r.text.contains("; 3 not made"), "{}", r.text);
        assert_says(
            &r,
            "  not made: composed-random x2: parts not made: kill-follower x2 (no quorum within Ns x2), \
                 pause-leader-sync x1 (no leader x1)\n",
        );
        assert_says(
            &r,
            "  not made: composed-pause-expire-resume x1: no rival was granted the leader lock \
                 /campaign/election within N ms after the expiry x1\n",
        );
        // Every fault made: no such lines.
        let clean = check(&history(&[], vec![]), &opts());
        assert!(!clean.text.contains("not made"), "{}", clean.text);
        assert!(clean.not_made.is_empty());
    }

    #[test]
    fn a_reason_class_leaves_numbers_and_details_out() {
        assert_eq!(
            reason_class("no quorum within 60s (modes: 0:leader)"),
            "no quorum within Ns"
        );
        assert_eq!(
            reason_class("the holder let go of /campaign/mutex/_c_x-lock-0000000012 before the break"),
            "the holder let go of /campaign/mutex/_c_x-lock-N before the break"
        );
        assert_eq!(reason_class("session 0x1a2b3c expired / log tail"), "session N expired");
        assert_eq!(reason_class(""), "(no reason given)");
    }

    #[test]
    fn a_fault_not_made_is_a_window_for_the_rules() {
        // An attempt 200 ms late inside a composition that was not made (its
        // steps ran 1..2 s): counted for it, not as "no fault".
        let far = 100_000 * MS;
        let n = format!("N composed-random {} {} 1 of 2 parts not made", far, far + 2_000 * MS);
        let h = history(
            &[&n],
            vec![worker(10, vec![timed(10, 1, far + 100 * MS, 1_200, "timeout")])],
        );
        let r = check(&h, &opts());
        assert_eq!(r.overshoots["composed-random (not made)"].at_deadline, 1);
        assert!(!r.overshoots.contains_key("no fault"), "{:?}", r.overshoots);
    }

    #[test]
    fn catches_a_section_that_never_ended_and_a_worker_that_never_finished() {
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w.truncate(3); // A, R, S: no D, no E.
        assert_caught(&one(w), "section never ended");
        let h = history(&[], vec![vec!["H 10 0 1".to_string()]]);
        assert_caught(&h, "worker 10 never finished");
        let h = history(&["W 10 exit=101"], vec![worker(10, vec![])]);
        assert_caught(&h, "worker 10 ended badly");
    }

    #[test]
    fn a_killed_holder_lasts_until_its_kill() {
        // Worker 10 killed at 300 while holding since 100 (no D, no E); 11 was
        // granted at 250: an overlap.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 400, None);
        w.truncate(3);
        let mut lines = vec!["H 10 0 1".to_string()];
        lines.extend(w);
        let h = history(
            &["K 0 10 300"],
            vec![
                lines,
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 250, 350, None)]),
            ],
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn separates_fenced_overlaps_after_an_instant_expiry() {
        // Session a was expired at once at 120; holder a heard of it (at 180)
        // after b's grant at 150: excused as fenced, since a's token is smaller.
        let h = two(
            &["I a 120"],
            section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(180)),
            section(11, 1, "/l", "mutex", 6, "b", 150, 250, None),
        );
        let r = assert_clean(&h);
        assert_says(&r, "fenced overlaps after an instant expiry: 1");
        // Never told at all: not excused.
        let h = two(
            &["I a 120"],
            section(10, 1, "/l", "mutex", 5, "a", 100, 200, None),
            section(11, 1, "/l", "mutex", 6, "b", 150, 250, None),
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn an_overlap_after_an_operator_broke_a_working_holder_is_fenced() {
        // An operator deleted leader a's node (token 5) at 140 while it led;
        // b (token 6) was granted at 150 on that deletion; a heard Lost at
        // 152, its notification on its way meanwhile.
        let a = || {
            let mut v = section(10, 1, "/e", "leader", 5, "a", 100, 152, Some(152));
            v[2] = "S 10 0 1 /e leader 5 a 100 latch-5".into();
            v
        };
        let b = || worker(11, vec![section(11, 1, "/e", "leader", 6, "b", 150, 250, None)]);
        let h = history(&["B a 140 /e/latch-5"], vec![worker(10, vec![a()]), b()]);
        let r = assert_clean(&h);
        assert_says(&r, "after an operator break: 1 (longest 0.000 ms)");
        // Another node of its session broken, or none: an overlap.
        assert_caught(
            &history(&["B a 140 /e/latch-4"], vec![worker(10, vec![a()]), b()]),
            "overlap on /e",
        );
        assert_caught(&history(&[], vec![worker(10, vec![a()]), b()]), "overlap on /e");
        // Broken after b's grant: not the cause of the overlap.
        assert_caught(
            &history(&["B a 151 /e/latch-5"], vec![worker(10, vec![a()]), b()]),
            "overlap on /e",
        );
    }

    #[test]
    fn reports_missing_fault_kinds() {
        let mut h = clean();
        h.add_line("P kinds=cut,restart");
        assert_eq!(check(&h, &opts()).missing, vec!["restart".to_string()]);
        // With min_each, a kind that happened fewer times is missing too.
        h.add_line("P min_each=2");
        h.add_line("F restart 5 6 server down");
        h.add_line("F restart 7 8 server down");
        assert_eq!(check(&h, &opts()).missing, vec!["cut (1 of 2)".to_string()]);
    }

    #[test]
    fn catches_a_leaked_node() {
        let nodes = [
            "/campaign",
            "/campaign/mutex",
            "/campaign/mutex/_c_0f1e-lock-0000000042",
            "/campaign/rw/_c_77-__READ__0000000007",
            "/campaign/sem/leases",
        ];
        let leaks = leaked_nodes(nodes);
        assert_eq!(
            leaks,
            vec![
                "/campaign/mutex/_c_0f1e-lock-0000000042".to_string(),
                "/campaign/rw/_c_77-__READ__0000000007".to_string()
            ]
        );
        assert!(leak_report(&leaks).starts_with("leaked nodes: 2\n  LEAK: /campaign/mutex/_c_0f1e"));
        // A parent whose name merely contains `_c_` is not a lock node's parent.
        assert!(leaked_nodes(["/my_c_app/x"]).is_empty());
        assert!(leaked_nodes(["/campaign", "/campaign/mutex"]).is_empty());
    }

    /// A timed acquire (deadline 1 s) that took `wait_ms`, beginning at `start`.
    fn timed(pid: u32, att: u64, start: u64, wait_ms: u64, outcome: &str) -> Vec<String> {
        vec![
            format!("A {pid} 0 {att} /l mutex {start} {}", 1000 * MS),
            format!(
                "R {pid} 0 {att} /l mutex {} {outcome} - {}",
                start + wait_ms * MS,
                wait_ms * MS
            ),
        ]
    }

    #[test]
    fn reports_overshoots_per_fault_kind_and_flags_them_only_with_a_limit() {
        // Attempt 1 meets the `cut` fault (1..2 ns, plus a session): 1.2 s, 200 ms
        // late. Attempt 2 meets no fault: 1.03 s, within the 50 ms margin.
        // Attempt 3 acquired before its deadline: not counted.
        let far = 100_000 * MS;
        let h = history(
            &[],
            vec![worker(
                10,
                vec![
                    timed(10, 1, 100, 1200, "timeout"),
                    timed(10, 2, far, 1030, "timeout"),
                    timed(10, 3, 2 * far, 10, "acquired"),
                ],
            )],
        );
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "report only: {:#?}", r.violations);
        assert_eq!(
            r.overshoots.get("cut"),
            Some(&OvershootStats {
                at_deadline: 1,
                late: 1,
                max_ns: 200 * MS,
                p99_ns: 200 * MS
            })
        );
        assert_eq!(
            r.overshoots.get("no fault"),
            Some(&OvershootStats {
                at_deadline: 1,
                late: 0,
                max_ns: 30 * MS,
                p99_ns: 30 * MS
            })
        );
        assert_says(&r, "overshoot cut: 1 at the deadline, 1 late, max 200.0 ms");
        // With a limit of 100 ms, the 200 ms overshoot is a violation, the 30 ms one not.
        let strict = CheckOptions {
            max_overshoot: Some(Duration::from_millis(100)),
            ..opts()
        };
        let v = check(&h, &strict).violations;
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].starts_with("late acquire: pid 10 thread 0 attempt 1"), "{v:#?}");
        assert!(v[0].contains("faults: cut"), "{v:#?}");
        // Older logs without a deadline on `A` use the acquire_timeout_ms parameter.
        let h = history(
            &[],
            vec![worker(
                10,
                vec![vec![
                    "A 10 0 1 /l mutex 100".to_string(),
                    format!("R 10 0 1 /l mutex {} timeout - {}", 100 + 1500 * MS, 1500 * MS),
                ]],
            )],
        );
        assert_eq!(check(&h, &strict).violations.len(), 1);
    }

    #[test]
    fn p99_of_many_overshoots() {
        let far = 100_000 * MS;
        // 100 attempts at the deadline, outside any fault: overshoots 1..=100 ms.
        let body: Vec<Vec<String>> = (1..=100u64)
            .map(|i| timed(10, i, far + i * 10_000 * MS, 1000 + i, "timeout"))
            .collect();
        let r = check(&history(&[], vec![worker(10, body)]), &opts());
        let s = &r.overshoots["no fault"];
        assert_eq!(
            (s.at_deadline, s.late, s.max_ns, s.p99_ns),
            (100, 50, 100 * MS, 99 * MS)
        );
    }

    #[test]
    fn the_default_margin_scales_with_zk_test_timing() {
        // Read once: the variable is not set by these tests.
        let factor = std::env::var("ZK_TEST_TIMING")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(1.0);
        let d = CheckOptions::default();
        assert_eq!(d.overshoot_margin, DEFAULT_OVERSHOOT_MARGIN.mul_f64(factor));
        assert_eq!(d.max_overshoot, None);
    }
}
