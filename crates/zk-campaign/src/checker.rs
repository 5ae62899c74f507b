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
//!    no attempt took longer than its timeout plus 4 session timeouts plus 10 s;
//!    every section ended (same excuse); every worker finished cleanly.
//! 5. **Timed acquires keep their deadline.** A timed acquire (`A` lines with a
//!    deadline; older logs: the `acquire_timeout_ms` parameter) that returned
//!    more than [`CheckOptions::overshoot_margin`] after its deadline is *late*.
//!    The report gives, per fault kind, the attempts that reached their
//!    deadline, how many were late, and the largest and 99th-percentile
//!    overshoot. Only with [`CheckOptions::max_overshoot`] set (the campaign's
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
//! Rules 8 to 10 are in their own module (`checker/claims.rs`), one function
//! each, with the bounds a claim's instant is judged by.
//!
//! The history format is described in [`crate::history`].

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::history::{AttemptEnd, AttemptKey, EndRec, History, SecRec};

mod claims;

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

/// How much later than a `Q` line's stop time a holder's last `Ok` may be and
/// still count as before the stop (older logs took the time before sending
/// SIGSTOP; newer ones once every thread has stopped).
const PAUSE_SLACK_NS: u64 = 100_000_000;

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
    /// Fault kinds the campaign should have injected but did not.
    pub missing: Vec<String>,
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

struct Overshoot {
    text: String,
    by_fault: BTreeMap<String, OvershootStats>,
    by_lock: BTreeMap<String, OvershootStats>,
}

/// Statistics of overshoot samples, by key.
fn stats(samples: BTreeMap<String, Vec<u64>>, margin: u64) -> BTreeMap<String, OvershootStats> {
    samples
        .into_iter()
        .map(|(kind, mut v)| {
            v.sort_unstable();
            let p99 = v[(v.len() * 99).div_ceil(100).saturating_sub(1)];
            let s = OvershootStats {
                at_deadline: v.len() as u64,
                late: v.iter().filter(|o| **o > margin).count() as u64,
                max_ns: v.last().copied().unwrap_or(0),
                p99_ns: p99,
            };
            (kind, s)
        })
        .collect()
}

/// Rule 5: the overshoots of timed acquires, by fault kind and by lock kind.
/// An attempt counts for every fault whose window (from its start to its end
/// plus one session timeout, while its effects last) meets the attempt, or for
/// `no fault`; and for its lock kind.
fn overshoots(h: &History, opts: &CheckOptions, violations: &mut Vec<String>) -> Overshoot {
    let session_ns = h.param_u64("session_ms").unwrap_or(3000) * 1_000_000;
    let default_deadline = h.param_u64("acquire_timeout_ms").map(|ms| ms * 1_000_000);
    let margin = opts.overshoot_margin.as_nanos() as u64;
    let limit = opts.max_overshoot.map(|d| d.as_nanos() as u64);
    let mut samples: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut by_lock_samples: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut timed_by_lock: BTreeMap<String, u64> = BTreeMap::new();
    let mut timed = 0u64;
    let mut paused_skipped = 0u64;
    let mut keys: Vec<_> = h.attempts.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let a = &h.attempts[&k];
        let (Some(AttemptEnd { t, wait, outcome, .. }), Some(deadline)) = (&a.result, a.deadline.or(default_deadline))
        else {
            continue;
        };
        timed += 1;
        *timed_by_lock.entry(a.mode.clone()).or_default() += 1;
        if *wait < deadline {
            continue;
        }
        // A worker stopped by SIGSTOP cannot return while stopped: not an overshoot.
        let (from, to) = (a.start.unwrap_or(t.saturating_sub(*wait)), *t);
        if h.paused
            .iter()
            .any(|&(pid, p0, p1)| pid == k.0 && p0 <= to && from <= p1)
        {
            paused_skipped += 1;
            continue;
        }
        let over = wait - deadline;
        by_lock_samples.entry(a.mode.clone()).or_default().push(over);
        let mut kinds: Vec<&str> = h
            .faults
            .iter()
            .filter(|f| f.start <= to && from <= f.end.saturating_add(session_ns))
            .map(|f| f.kind.as_str())
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        if kinds.is_empty() {
            kinds.push("no fault");
        }
        for kind in &kinds {
            samples.entry(kind.to_string()).or_default().push(over);
        }
        if let Some(limit) = limit.filter(|l| over > *l) {
            violations.push(format!(
                "late acquire: pid {} thread {} attempt {} ({} on {}, {outcome}) returned {:.1} ms after its \
                 {:.0} ms deadline (limit {:.1} ms; faults: {})",
                k.0,
                k.1,
                k.2,
                a.mode,
                a.lock,
                over as f64 / 1e6,
                deadline as f64 / 1e6,
                limit as f64 / 1e6,
                kinds.join(", ")
            ));
        }
    }
    let by_fault = stats(samples, margin);
    let by_lock = stats(by_lock_samples, margin);
    let mut text = String::new();
    let at_deadline: u64 = by_fault
        .values()
        .map(|s: &OvershootStats| s.at_deadline)
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        text,
        "acquire overshoot past the deadline: {timed} timed attempts, margin {:.1} ms, {}{}",
        margin as f64 / 1e6,
        match limit {
            Some(l) => format!("a violation beyond {:.1} ms", l as f64 / 1e6),
            None => "report only".to_string(),
        },
        if at_deadline == 0 {
            "; none reached its deadline"
        } else {
            ""
        }
    );
    if paused_skipped > 0 {
        let _ = writeln!(
            text,
            "  (left out: {paused_skipped} attempts past their deadline in a worker paused by SIGSTOP meanwhile)"
        );
    }
    for (kind, s) in &by_fault {
        let _ = writeln!(
            text,
            "  overshoot {kind}: {} at the deadline, {} late, max {:.1} ms, p99 {:.1} ms",
            s.at_deadline,
            s.late,
            s.max_ns as f64 / 1e6,
            s.p99_ns as f64 / 1e6
        );
    }
    for mode in ["mutex", "read", "write", "semaphore", "multi", "leader"] {
        let n = timed_by_lock.get(mode).copied().unwrap_or(0);
        if n == 0 {
            continue;
        }
        let s = by_lock.get(mode).cloned().unwrap_or_default();
        let _ = writeln!(
            text,
            "  overshoot by lock {mode}: {n} timed, {} at the deadline, {} late, max {:.1} ms, p99 {:.1} ms",
            s.at_deadline,
            s.late,
            s.max_ns as f64 / 1e6,
            s.p99_ns as f64 / 1e6
        );
    }
    Overshoot {
        text,
        by_fault,
        by_lock,
    }
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

/// Rule 1's effective end of an ended section: the first of its end, its
/// first `Suspended`/`Lost` and its first `check()` that was not `Ok`; and
/// whether a SIGSTOP of its holder ended it earlier. A holder stopped by
/// SIGSTOP does nothing until it resumes: if its last `Ok` came before the
/// stop, its first act after it was to hear that it might not hold the lock,
/// and its section ended when it was stopped (an `Ok` after the resume is not
/// excused). Older logs took the stop's time just before sending it: an `Ok`
/// up to `PAUSE_SLACK_NS` later came before the stop took effect.
fn effective_end(h: &History, s: &SecRec, e: &crate::history::EndRec) -> (u64, bool) {
    let eff = e
        .end
        .min(e.told.unwrap_or(u64::MAX))
        .min(e.first_bad.unwrap_or(u64::MAX));
    let last = e.last_ok.unwrap_or(s.start);
    match h
        .paused
        .iter()
        .find(|&&(pid, from, to)| pid == s.pid && last <= from + PAUSE_SLACK_NS && last < to && from < eff)
    {
        Some(&(_, from, _)) => (eff.min(from.max(last).max(s.start)), true),
        None => (eff, false),
    }
}

/// The effective end of a section that never ended because its worker was
/// killed -9: its work done (`D`, the release under way), or else the kill.
/// `None` when its worker was not killed.
fn killed_end(h: &History, s: &SecRec) -> Option<u64> {
    let t = *h.killed.get(&s.pid)?;
    Some(h.done.get(&(s.pid, s.thr, s.att)).copied().unwrap_or(t).min(t))
}

/// Why an overlap of holder `p` with one whose token is `q_token`, from `at`
/// on, is excused as fenced (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    /// The server expired `p`'s session at once.
    Instant,
    /// An operator deleted `p`'s node.
    Broken,
}

/// Rule 1's fenced excuse: before `at`, the server expired `p`'s session at
/// once (`I`), or an operator deleted `p`'s node (`B`); `p` was told at all;
/// its token is smaller than the other's. No client can learn of either
/// before another one is granted the lock: its notification is on its way.
fn fenced_by(h: &History, p: &View<'_>, q_token: i64, at: u64) -> Option<Fence> {
    if !p.told_any || p.s.token >= q_token {
        return None;
    }
    if h.instant.iter().any(|(sid, x)| *sid == p.s.sid && *x <= at) {
        Some(Fence::Instant)
    } else if broken_before(h, p.s, at) {
        Some(Fence::Broken)
    } else {
        None
    }
}

/// Whether an operator deleted section `s`'s node (`B`, same session and
/// node name) at or before `at`.
fn broken_before(h: &History, s: &SecRec, at: u64) -> bool {
    h.broken.iter().any(|(sid, x, path)| {
        *sid == s.sid && *x <= at && s.node != "-" && path.rsplit('/').next() == Some(s.node.as_str())
    })
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
    let session_ns = h.param_u64("session_ms").unwrap_or(3000) * 1_000_000;
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
        margins: margin_stats(margin_samples),
        overshoot,
    };
    Report {
        text: summary(h, &facts, &violations),
        violations,
        missing: facts.missing,
        overshoots: facts.overshoot.by_fault,
        overshoots_by_lock: facts.overshoot.by_lock,
        margins: facts.margins,
    }
}

/// The attempts' outcomes, for the report.
#[derive(Default)]
struct AttemptStats {
    /// Attempts that acquired, by lock kind.
    acquired: BTreeMap<String, u64>,
    /// Attempts that timed out.
    timeouts: u64,
    /// Attempts that failed.
    errors: u64,
    /// Failed attempts by error kind.
    error_kinds: BTreeMap<String, u64>,
    /// Attempts in flight when their worker was killed -9.
    inflight_killed: u64,
    /// The longest wait (ns), and what it was for.
    longest: Option<(u64, String)>,
}

/// Rule 4 for attempts: every attempt ended unless its worker was killed -9,
/// and none took longer than its timeout plus 4 session timeouts plus 10 s.
fn attempts_end_in_time(h: &History, violations: &mut Vec<String>) -> AttemptStats {
    let session_ms: u64 = h.param_u64("session_ms").unwrap_or(3000);
    let timeout_ms: u64 = h.param_u64("acquire_timeout_ms").unwrap_or(30_000);
    // Beyond its own timeout (older logs: the parameter) plus 4 sessions plus 10 s.
    let overlong_after =
        |deadline: Option<u64>| deadline.unwrap_or(timeout_ms * 1_000_000) + (4 * session_ms + 10_000) * 1_000_000;
    let mut st = AttemptStats::default();
    let mut keys: Vec<_> = h.attempts.keys().copied().collect();
    keys.sort();
    for k in keys {
        let a = &h.attempts[&k];
        match &a.result {
            None if h.killed.contains_key(&k.0) => st.inflight_killed += 1,
            None => violations.push(format!(
                "hung attempt: pid {} thread {} attempt {} ({} on {}) never ended",
                k.0, k.1, k.2, a.mode, a.lock
            )),
            Some(AttemptEnd {
                outcome,
                error: kind,
                wait,
                ..
            }) => {
                match outcome.as_str() {
                    "acquired" => *st.acquired.entry(a.mode.clone()).or_default() += 1,
                    "timeout" => st.timeouts += 1,
                    _ => {
                        st.errors += 1;
                        *st.error_kinds.entry(kind.clone()).or_default() += 1;
                    }
                }
                if st.longest.as_ref().map_or(true, |(w, _)| wait > w) {
                    st.longest = Some((*wait, format!("{} on {}, {outcome}", a.mode, a.lock)));
                }
                if *wait > overlong_after(a.deadline) {
                    violations.push(format!(
                        "overlong attempt: pid {} thread {} attempt {} ({} on {}) took {} ms",
                        k.0,
                        k.1,
                        k.2,
                        a.mode,
                        a.lock,
                        wait / 1_000_000
                    ));
                }
            }
        }
    }
    st
}

/// The sections' counts, for the report.
#[derive(Default)]
struct SectionStats {
    /// Sections whose holder was told of a loss while it held the lock.
    cut_short: u64,
    /// Sections whose holder was told of a loss at grant.
    told_at_grant: u64,
    /// Sections open when their worker was killed -9.
    killed_in_section: u64,
    /// Releases that failed (one answering `LockLost` did not).
    release_failed: u64,
    /// Of those, the ones that began while still connected.
    release_failed_connected: u64,
    /// Releases that answered `LockLost`.
    release_lost: u64,
    /// Of those, the ones that were the first word of the loss.
    release_lost_first: u64,
    /// Sections with no status (`?`, older logs).
    status_unknown: u64,
    /// Sections whose first sign of a loss was a `check()` that was not `Ok`.
    check_first: u64,
    /// Sections whose holder was stopped (SIGSTOP) and heard of a loss
    /// first thing after.
    ended_by_pause: u64,
    /// The longest release (ns), and what it was for.
    longest_release: Option<(u64, String)>,
}

/// Every section as the exclusion rules see it, in key order, and their
/// counts. On the way it judges each section by rule 3 (ended ones) or
/// rule 4 (the others), so their violations come section by section.
fn section_views<'a>(h: &'a History, violations: &mut Vec<String>) -> (Vec<View<'a>>, SectionStats) {
    let regained = claims::regained(h);
    let mut st = SectionStats::default();
    let mut views: Vec<View<'_>> = Vec::new();
    let mut unreported_attempts: HashSet<(u32, u32, u64)> = HashSet::new();
    let mut sec_keys: Vec<_> = h.sections.keys().cloned().collect();
    sec_keys.sort();
    for k in &sec_keys {
        let s = &h.sections[k];
        views.push(match &s.end {
            Some(e) => {
                losses_are_reported(s, e, &mut unreported_attempts, &mut st, violations);
                ended_view(h, s, e, regained.get(k).copied(), &mut st)
            }
            None => unended_section_was_killed(h, s, &mut st, violations),
        });
    }
    (views, st)
}

/// Whether a section's holder heard `Suspended`/`Lost` on its loss receiver
/// (while holding, or while waiting before the release).
fn heard_of_loss(e: &EndRec) -> bool {
    e.told.is_some() || e.told_late.is_some()
}

/// Whether a section's release answered `LockLost`, which tells the holder
/// too (a multi-lock's says so for the set, or within `Multiple`).
fn release_said_lost(e: &EndRec) -> bool {
    e.release == "LockLost" || (e.release.starts_with("Multiple[") && e.release.contains("LockLost"))
}

/// Rule 3 on an ended section: a lost lock (status `Lost`/`Uncertain` at
/// the end or at grant, or a release failed while disconnected) was reported
/// on the loss receiver (one violation per attempt, recorded in
/// `unreported_attempts`), and no release was refused with `NotOwner`.
/// Counts the releases and the sections with no status.
fn losses_are_reported(
    s: &SecRec,
    e: &EndRec,
    unreported_attempts: &mut HashSet<(u32, u32, u64)>,
    st: &mut SectionStats,
    violations: &mut Vec<String>,
) {
    let heard = heard_of_loss(e);
    let release_lost = release_said_lost(e);
    if e.st0 == "?" || e.st_end == "?" {
        st.status_unknown += 1;
    }
    let lost_at_end = matches!(e.st_end.as_str(), "Lost" | "Uncertain");
    // A release that says the lock was lost is a report, not a failure.
    let failed = e.release != "ok" && e.release != "LockLost";
    if release_lost {
        st.release_lost += 1;
        if !heard && !lost_at_end {
            st.release_lost_first += 1;
        }
    }
    if failed {
        st.release_failed += 1;
        if e.connected {
            st.release_failed_connected += 1;
        }
    }
    if e.release.contains("NotOwner") {
        violations.push(format!("release refused (NotOwner) on {}: {}", s.lock, s.describe()));
    }
    let unreported = if lost_at_end && !heard {
        Some(format!(
            "status {} at the end, release {}, no Suspended/Lost received",
            e.st_end, e.release
        ))
    } else if failed && !e.connected && !heard {
        Some(format!(
            "release {} while disconnected, status {} at the end, no Suspended/Lost received",
            e.release, e.st_end
        ))
    } else if matches!(e.st0.as_str(), "Lost" | "Uncertain") && !heard {
        Some(format!(
            "status {} at grant, but the loss receiver never said so",
            e.st0
        ))
    } else {
        None
    };
    // One report per attempt: a multi-lock's members share their
    // guard's status and receiver.
    if let Some(what) = unreported {
        if unreported_attempts.insert((s.pid, s.thr, s.att)) {
            violations.push(format!("unreported loss on {}: {} {what}", s.lock, s.describe()));
        }
    }
}

/// An ended section as the exclusion rules see it: its effective end (rule
/// 1), whether its holder was told at all, whether it was cut short (not
/// when it was `regained`: its last claim, and whether it released in
/// certainty), and its last `Ok` or claim. Counts the sections told at grant
/// or cut short, ended at a pause or by `check()` first, and the longest
/// release.
fn ended_view<'a>(
    h: &History,
    s: &'a SecRec,
    e: &EndRec,
    regained: Option<(u64, bool)>,
    st: &mut SectionStats,
) -> View<'a> {
    let told_any = heard_of_loss(e) || release_said_lost(e);
    if let Some(t) = e.told {
        if t <= s.start {
            st.told_at_grant += 1;
        } else if t <= e.end {
            st.cut_short += 1;
        }
    }
    if let Some(w) = e.release_wait {
        if st.longest_release.as_ref().map_or(true, |(l, _)| w > *l) {
            st.longest_release = Some((w, format!("{} on {}, release {}", s.mode, s.lock, e.release)));
        }
    }
    let (eff, by_pause) = effective_end(h, s, e);
    st.ended_by_pause += u64::from(by_pause);
    if e.first_bad.is_some_and(|b| b < e.told.unwrap_or(u64::MAX)) {
        st.check_first += 1;
    }
    // A holder told it holds again after the cut (claims) and
    // still told so when it stopped watching released in
    // certainty: not a lock that changed hands after a signal.
    let (last_claim, certain) = regained.unwrap_or((0, false));
    let cut = (e.told.is_some() || e.first_bad.is_some()) && !certain;
    View {
        s,
        eff,
        told_any,
        cut,
        last_ok: e.last_ok.unwrap_or(s.start).max(last_claim),
    }
}

/// Rule 4 for a section that never ended: its worker was killed -9 (it then
/// ends at its `D` line, or else at the kill; counted), or it is a violation
/// (and empty). Returns its view.
fn unended_section_was_killed<'a>(
    h: &History,
    s: &'a SecRec,
    st: &mut SectionStats,
    violations: &mut Vec<String>,
) -> View<'a> {
    let eff = match killed_end(h, s) {
        Some(eff) => {
            st.killed_in_section += 1;
            eff
        }
        None => {
            violations.push(format!("section never ended on {}: {}", s.lock, s.describe()));
            s.start
        }
    };
    View {
        s,
        eff,
        told_any: false,
        cut: false,
        last_ok: s.start,
    }
}

/// The views by lock, each lock's sorted by grant (then pid, thread and
/// attempt).
fn views_by_lock<'v, 'a>(views: &'v [View<'a>]) -> BTreeMap<&'a str, Vec<&'v View<'a>>> {
    let mut by_lock: BTreeMap<&'a str, Vec<&'v View<'a>>> = BTreeMap::new();
    for v in views {
        by_lock.entry(v.s.lock.as_str()).or_default().push(v);
    }
    for list in by_lock.values_mut() {
        list.sort_by_key(|v| (v.s.start, v.s.pid, v.s.thr, v.s.att));
    }
    by_lock
}

/// Rule 1's counts, for the report.
#[derive(Default)]
struct ExclusionStats {
    /// Pairs of overlapping sections that exclude each other.
    overlaps_checked: u64,
    /// Overlaps excused after an instant expiry, and the longest (ns).
    fenced: u64,
    fenced_max_ns: u64,
    /// Overlaps excused after an operator break, and the longest (ns).
    fenced_broken: u64,
    fenced_broken_max_ns: u64,
}

/// Rule 1 on one lock's sections (sorted by grant): no two non-empty
/// sections overlap (to their effective ends) unless both are reads or the
/// overlap is fenced (counted apart).
fn sections_exclude_each_other(
    h: &History,
    lock: &str,
    list: &[&View<'_>],
    st: &mut ExclusionStats,
    violations: &mut Vec<String>,
) {
    let mut active: Vec<&View<'_>> = Vec::new();
    for v in list {
        if v.eff <= v.s.start {
            continue;
        }
        active.retain(|a| a.eff > v.s.start);
        for a in &active {
            if a.s.mode == "read" && v.s.mode == "read" {
                continue;
            }
            st.overlaps_checked += 1;
            let o_start = v.s.start;
            let o_len = a.eff.min(v.eff) - o_start;
            let excused = [(*a, *v), (*v, *a)]
                .iter()
                .find_map(|(p, q)| fenced_by(h, p, q.s.token, o_start));
            if excused == Some(Fence::Instant) {
                st.fenced += 1;
                st.fenced_max_ns = st.fenced_max_ns.max(o_len);
            } else if excused == Some(Fence::Broken) {
                st.fenced_broken += 1;
                st.fenced_broken_max_ns = st.fenced_broken_max_ns.max(o_len);
            } else {
                violations.push(format!(
                    "overlap on {lock}: {} [{}..{}] and {} [{}..{}] for {} us",
                    a.s.describe(),
                    a.s.start,
                    a.eff,
                    v.s.describe(),
                    v.s.start,
                    v.eff,
                    o_len / 1000
                ));
            }
        }
        active.push(v);
    }
}

/// Rule 6 on one lock's sections (sorted by grant): from a section cut short
/// by a loss signal to the next section that excludes it, the margin (its
/// last `Ok` or claim to the next grant) is positive unless fenced. Adds
/// each margin to `samples` by fault kind, `all`, and `expired/…`.
fn safety_margins_are_positive(
    h: &History,
    lock: &str,
    list: &[&View<'_>],
    session_ns: u64,
    samples: &mut BTreeMap<String, Vec<i64>>,
    violations: &mut Vec<String>,
) {
    for (i, a) in list.iter().enumerate() {
        if !a.cut || a.eff <= a.s.start {
            continue;
        }
        let Some(b) = list[i + 1..]
            .iter()
            .find(|b| b.eff > b.s.start && !(a.s.mode == "read" && b.s.mode == "read"))
        else {
            continue;
        };
        let margin = b.s.start as i64 - a.last_ok as i64;
        let fenced_pair =
            h.instant.iter().any(|(sid, x)| *sid == a.s.sid && *x <= b.s.start) || broken_before(h, a.s, b.s.start);
        // The fault in effect when the holder was told: the latest one
        // that began before and had not ended a session timeout before.
        let kind = h
            .faults
            .iter()
            .filter(|f| f.start <= a.eff && a.eff <= f.end.saturating_add(session_ns))
            .max_by_key(|f| f.start)
            .map_or("no fault", |f| f.kind.as_str());
        let kinds = [kind];
        samples.entry(kind.to_string()).or_default().push(margin);
        samples.entry("all".to_string()).or_default().push(margin);
        // The old holder's session expired around the hand-over: its
        // worker reported a new session after its grant and no later than
        // two session timeouts after the new grant.
        let expired = h.sessions.iter().any(|(pid, t, sid)| {
            *pid == a.s.pid && *t > a.s.start && *t <= b.s.start + 2 * session_ns && *sid != a.s.sid
        });
        if expired {
            // The holder's session expired: the lock was most likely taken
            // by the expiry rather than given back.
            samples.entry(format!("expired/{kind}")).or_default().push(margin);
            samples.entry("expired/all".to_string()).or_default().push(margin);
        }
        if margin <= 0 && !fenced_pair {
            violations.push(format!(
                "no safety margin on {lock}: {} had check() Ok at {}, {} was granted at {} ({:.3} ms; faults: {})",
                a.s.describe(),
                a.last_ok,
                b.s.describe(),
                b.s.start,
                margin as f64 / 1e6,
                kinds.join(", ")
            ));
        }
    }
}

/// Rule 2 on one lock's sections (sorted by grant): the tokens of exclusive
/// sections (all but reads; empty ones left out) increase strictly.
fn fencing_tokens_increase(lock: &str, list: &[&View<'_>], violations: &mut Vec<String>) {
    let mut prev: Option<&View<'_>> = None;
    for v in list.iter().filter(|v| v.s.mode != "read" && v.eff > v.s.start) {
        if let Some(p) = prev {
            if v.s.token <= p.s.token {
                violations.push(format!(
                    "fencing tokens out of order on {lock}: {} started at {} after {} at {}",
                    v.s.describe(),
                    v.s.start,
                    p.s.describe(),
                    p.s.start
                ));
            }
        }
        prev = Some(v);
    }
}

/// Rule 4 for workers: every worker finished (an `X` line) with exit status
/// 0, unless it was killed -9.
fn workers_finish_cleanly(h: &History, violations: &mut Vec<String>) {
    let mut pids: Vec<_> = h.started.iter().copied().collect();
    pids.sort_unstable();
    for pid in pids {
        if !h.exited.contains(&pid) && !h.killed.contains_key(&pid) {
            violations.push(format!("worker {pid} never finished (no X line) and was not killed"));
        }
    }
    for (pid, st) in &h.worker_status {
        if st != "exit=0" && !h.killed.contains_key(pid) {
            violations.push(format!("worker {pid} ended badly: {st}"));
        }
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
    /// See [`Report::margins`].
    margins: BTreeMap<String, MarginStats>,
    /// Rule 5's lines and statistics.
    overshoot: Overshoot,
}

/// The report's text ([`Report::text`]): the facts, then the first 30
/// violations.
fn summary(h: &History, f: &Facts, violations: &[String]) -> String {
    let (a, s, x) = (&f.attempts, &f.sections, &f.exclusion);
    let mut t = String::new();
    let total: u64 = a.acquired.values().sum();
    let by_mode = ["mutex", "read", "write", "semaphore", "multi", "leader"]
        .iter()
        .map(|m| format!("{m} {}", a.acquired.get(*m).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(t, "acquisitions: {total} ({by_mode})");
    let _ = writeln!(
        t,
        "attempts: {} (acquired {total}, timed out {}, errors {}, in flight at kill -9 {})",
        h.attempts.len(),
        a.timeouts,
        a.errors,
        a.inflight_killed
    );
    if !a.error_kinds.is_empty() {
        let _ = writeln!(
            t,
            "errors by kind: {}",
            a.error_kinds
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
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
        fault_names
            .iter()
            .map(|k| format!("{k} {}", f.faults.get(k).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", "),
        if h.failed_faults > 0 {
            format!("; {} could not be injected", h.failed_faults)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        t,
        "missing fault kinds: {}",
        if f.missing.is_empty() {
            "none".to_string()
        } else {
            f.missing.join(", ")
        }
    );
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
    t.push_str(&f.resource);
    t.push_str(&f.claimed);
    let _ = writeln!(
        t,
        "safety margin (a section cut short by a loss signal: its last Ok check() to the next grant that excludes it): {}",
        if f.margins.is_empty() { "no lock changed hands after a loss signal" } else { "by fault kind" }
    );
    for (kind, m) in &f.margins {
        let _ = writeln!(
            t,
            "  margin {kind}: {} hand-overs, min {:.1} ms, p1 {:.1} ms, median {:.1} ms",
            m.count,
            m.min_ns as f64 / 1e6,
            m.p1_ns as f64 / 1e6,
            m.median_ns as f64 / 1e6
        );
    }
    t.push_str(&f.overshoot.text);
    let _ = writeln!(t, "violations: {}", violations.len());
    for v in violations.iter().take(30) {
        let _ = writeln!(t, "  VIOLATION: {v}");
    }
    if violations.len() > 30 {
        let _ = writeln!(t, "  ... and {} more", violations.len() - 30);
    }
    t
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
    samples
        .into_iter()
        .map(|(kind, mut v)| {
            v.sort_unstable();
            let at = |permille: usize| v[(v.len() * permille).div_ceil(1000).saturating_sub(1)];
            let m = MarginStats {
                count: v.len() as u64,
                min_ns: v[0],
                p1_ns: at(10),
                median_ns: at(500),
            };
            (kind, m)
        })
        .collect()
}

/// Rule 7: the writes read back from the guarded resources. On each lock's
/// resource, in the order they arrived (ZooKeeper's sequence numbers), the
/// tokens never decrease, and two sections never write with the same token;
/// each write carries its section's own token; a write its section saw
/// succeed is there. Returns the report's lines.
fn resource_writes(h: &History, violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if !h.resource_read {
        let _ = writeln!(t, "guarded writes: not read back");
        return t;
    }
    let mut by_lock: BTreeMap<&str, Vec<&crate::history::ResourceWrite>> = BTreeMap::new();
    for w in &h.writes {
        by_lock.entry(w.lock.as_str()).or_default().push(w);
    }
    let mut seen: HashSet<(AttemptKey, &str)> = HashSet::new();
    for (lock, list) in by_lock.iter_mut() {
        list.sort_by_key(|w| w.seq);
        for pair in list.windows(2) {
            let (p, w) = (pair[0], pair[1]);
            if w.token < p.token || (w.token == p.token && w.attempt != p.attempt) {
                violations.push(format!(
                    "resource {lock}: token {} (pid {} thread {} attempt {}) arrived after token {} (pid {} thread {} attempt {})",
                    w.token, w.attempt.0, w.attempt.1, w.attempt.2, p.token, p.attempt.0, p.attempt.1, p.attempt.2
                ));
            }
        }
        for w in list.iter() {
            seen.insert((w.attempt, lock));
            let key = (w.attempt.0, w.attempt.1, w.attempt.2, lock.to_string());
            if let Some(sec) = h.sections.get(&key) {
                if sec.token != w.token {
                    violations.push(format!(
                        "resource {lock}: a write with token {} from {} whose token is {}",
                        w.token,
                        sec.describe(),
                        sec.token
                    ));
                }
            }
        }
    }
    let (mut acked, mut refused) = (0u64, BTreeMap::<String, u64>::new());
    for s in h.sections.values() {
        let Some(e) = &s.end else { continue };
        match e.write.as_str() {
            "-" => {}
            "ok" => {
                acked += 1;
                if !seen.contains(&((s.pid, s.thr, s.att), s.lock.as_str())) {
                    violations.push(format!(
                        "resource {}: the write of {} succeeded but is not there",
                        s.lock,
                        s.describe()
                    ));
                }
            }
            other => *refused.entry(other.to_string()).or_default() += 1,
        }
    }
    let _ = writeln!(
        t,
        "guarded writes: {} read back on {} resources, {acked} acknowledged, refused {}",
        h.writes.len(),
        by_lock.len(),
        if refused.is_empty() {
            "0".to_string()
        } else {
            refused
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    t
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
        assert!(
            r.text
                .contains("acquisitions: 6 (mutex 2, read 2, write 1, semaphore 0, multi 1, leader 0)"),
            "{}",
            r.text
        );
        assert!(r.text.contains("violations: 0"), "{}", r.text);
    }

    #[test]
    fn catches_an_overlap_of_two_holders() {
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
        );
        assert_caught(&h, "overlap on /l");
        // A reader and a writer may not overlap either.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/rw", "read", 5, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/rw", "write", 6, "b", 150, 250, None)]),
            ],
        );
        assert_caught(&h, "overlap on /rw");
    }

    #[test]
    fn an_overlap_after_the_earlier_holder_was_told_passes() {
        // Holder a heard Suspended at 140, before b's grant at 150.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(140))]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
        );
        assert!(violations(&h).is_empty(), "{:#?}", violations(&h));
        // Told only after the other's grant: still an overlap.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(160))]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn catches_two_certain_leaders_and_terms_out_of_order() {
        // Two leaders of one election at once, neither told of a loss.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/e", "leader", 5, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/e", "leader", 6, "b", 150, 250, None)]),
            ],
        );
        assert_caught(&h, "overlap on /e");
        // One after the other, but the later leader has the older term.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/e", "leader", 9, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/e", "leader", 6, "b", 300, 400, None)]),
            ],
        );
        assert_caught(&h, "fencing tokens out of order on /e");
        // The first leader was told it may not lead before the second began.
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/e", "leader", 5, "a", 100, 200, Some(140))]),
                worker(11, vec![section(11, 1, "/e", "leader", 6, "b", 150, 250, None)]),
            ],
        );
        assert!(check(&h, &opts()).violations.is_empty());
    }

    #[test]
    fn catches_fencing_tokens_out_of_grant_order() {
        let h = history(
            &[],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 9, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 300, 400, None)]),
            ],
        );
        assert_caught(&h, "fencing tokens out of order on /l");
    }

    #[test]
    fn catches_an_unreported_loss() {
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = "E 10 0 1 /l mutex 5 a 100 200 - - - Held Lost 1 ok".into();
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /l");
        // Reported (told late, before the release): fine.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = "E 10 0 1 /l mutex 5 a 100 200 - - 210 Held Lost 1 ok".into();
        assert!(violations(&history(&[], vec![worker(10, vec![w])])).is_empty());
        // A failed release while disconnected, with no signal: lost unreported.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = "E 10 0 1 /l mutex 5 a 100 200 - - - Held Held 0 ZooKeeper.ConnectionLoss".into();
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /l");
        // Uncertain at grant, never said so.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = "E 10 0 1 /l mutex 5 a 100 200 - - - Uncertain Held 1 ok".into();
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /l");
    }

    /// A section's `E` line with the given signal fields: `told`, `told-late`,
    /// status at grant and at the end, connected, release.
    #[allow(clippy::too_many_arguments)]
    fn end_line(
        pid: u32,
        att: u64,
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
            "E {pid} 0 {att} {lock} {mode} {token} a 100 200 {} {ev} {} {st0} {st_end} {} {release}",
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
        let mut w = section(10, 1, "/s", "semaphore", 5, "a", 100, 200, None);
        w[4] = end_line(
            10,
            1,
            "/s",
            "semaphore",
            5,
            None,
            None,
            "Held",
            "Lost",
            true,
            "LockLost",
        );
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /s");
        let mut w = section(10, 1, "/s", "semaphore", 5, "a", 100, 200, None);
        w[4] = end_line(10, 1, "/s", "semaphore", 5, None, None, "Uncertain", "Held", true, "ok");
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /s");
        // Heard before the release: fine.
        let mut w = section(10, 1, "/s", "semaphore", 5, "a", 100, 200, None);
        w[4] = end_line(
            10,
            1,
            "/s",
            "semaphore",
            5,
            None,
            Some(210),
            "Held",
            "Lost",
            true,
            "LockLost",
        );
        assert!(violations(&history(&[], vec![worker(10, vec![w])])).is_empty());

        // A multi-lock whose guard (its worst member) was lost, nothing heard:
        // one violation for the attempt, whichever member was lost.
        let lost = multi_section(|l, t| end_line(10, 1, l, "multi", t, None, None, "Held", "Lost", true, "LockLost"));
        assert_caught(&history(&[], vec![worker(10, vec![lost])]), "unreported loss on /m");
        // The same with the loss heard on the guard's receiver: fine.
        let told =
            multi_section(|l, t| end_line(10, 1, l, "multi", t, Some(150), None, "Held", "Lost", true, "LockLost"));
        let r = check(&history(&[], vec![worker(10, vec![told])]), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text
                .contains("acquisitions: 1 (mutex 0, read 0, write 0, semaphore 0, multi 1, leader 0)"),
            "{}",
            r.text
        );

        // Older logs (`?`): the status part cannot fire; the report says so.
        let old = multi_section(|l, t| end_line(10, 1, l, "multi", t, None, None, "?", "?", true, "ok"));
        let r = check(&history(&[], vec![worker(10, vec![old])]), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(r.text.contains("sections with no status"), "{}", r.text);
        assert!(!check(&clean(), &opts()).text.contains("sections with no status"));
    }

    #[test]
    fn a_release_answering_lock_lost_is_a_report_not_a_failure() {
        // Held at the end, then the release said LockLost while disconnected,
        // nothing heard on the receiver: the release told the holder. Before,
        // this was counted as a failed release and an unreported loss.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        // (The release took 2.5 ms: the last, optional field.)
        w[4] = end_line(10, 1, "/l", "mutex", 5, None, None, "Held", "Held", false, "LockLost") + " 2500000";
        let r = check(&history(&[], vec![worker(10, vec![w])]), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text
                .contains("longest release: 2.5 ms (mutex on /l, release LockLost)"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("releases that reported the loss (LockLost): 1 (1 first learned at the release)"),
            "{}",
            r.text
        );
        assert!(r.text.contains("release failures: 0 (0 began"), "{}", r.text);
        // A real release failure while disconnected and silent is still caught.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = end_line(
            10,
            1,
            "/l",
            "mutex",
            5,
            None,
            None,
            "Held",
            "Held",
            false,
            "ZooKeeper.ConnectionLoss",
        );
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /l");
        // LockLost does not excuse a status that said Lost while the receiver
        // stayed silent.
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = end_line(10, 1, "/l", "mutex", 5, None, None, "Held", "Lost", true, "LockLost");
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "unreported loss on /l");
        // A multi-lock's mixed release errors are a failure (and a report).
        let mixed = multi_section(|l, t| {
            end_line(
                10,
                1,
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
        let r = check(&history(&[], vec![worker(10, vec![mixed])]), &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text
                .contains("releases that reported the loss (LockLost): 3 (0 first"),
            "{}",
            r.text
        );
        assert!(r.text.contains("release failures: 3 (0 began"), "{}", r.text);
        // A lost holder told only by its release still excuses a fenced
        // overlap after an instant expiry (it was told).
        let mut a = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        a[4] = end_line(10, 1, "/l", "mutex", 5, None, None, "Held", "Held", true, "LockLost");
        let h = history(
            &["I a 120"],
            vec![
                worker(10, vec![a]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
        );
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text.contains("fenced overlaps after an instant expiry: 1"),
            "{}",
            r.text
        );
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
        assert!(
            r.text
                .contains("overshoot by lock semaphore: 1 timed, 0 at the deadline"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("overshoot by lock write: 1 timed, 1 at the deadline, 1 late, max 100.0 ms"),
            "{}",
            r.text
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
        let h = history(
            &[],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 300, None, 140, Some(150), "ok")]),
                worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]),
            ],
        );
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert_eq!(r.margins["cut"].min_ns, 60);
        assert_eq!(r.margins["all"].count, 1);
        assert!(
            r.text.contains("sections ended by check() before any loss event: 1;"),
            "{}",
            r.text
        );
        assert!(r.text.contains("margin cut: 1 hand-overs, min 0.0 ms"), "{}", r.text);
        // Without the failed check, the same history is an overlap.
        let h = history(
            &[],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 300, None, 290, None, "ok")]),
                worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]),
            ],
        );
        assert_caught(&h, "overlap on /l");
    }

    #[test]
    fn a_check_ok_after_the_next_grant_is_a_violation() {
        // A heard Suspended at 150 but its check() still said Ok at 210, after
        // B's grant at 200 (a paused holder resuming, say): no margin.
        let h = history(
            &[],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 300, Some(150), 210, Some(220), "ok")]),
                worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]),
            ],
        );
        assert_caught(&h, "no safety margin on /l");
        // Excused like an overlap when A's session was expired instantly.
        let h = history(
            &["I a 120"],
            vec![
                worker(10, vec![checked(10, 5, "a", 100, 300, Some(150), 210, Some(220), "ok")]),
                worker(11, vec![checked(11, 6, "b", 200, 250, None, 240, None, "ok")]),
            ],
        );
        assert!(violations(&h).is_empty(), "{:#?}", violations(&h));
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
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text
                .contains("ended at a SIGSTOP of their holder (no Ok after it): 1"),
            "{}",
            r.text
        );
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
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text
                .contains("guarded writes: 2 read back on 1 resources, 2 acknowledged, refused 0"),
            "{}",
            r.text
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
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w[4] = "E 10 0 1 /l mutex 5 a 100 200 - - - Held Held 1 NotOwner".into();
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "release refused (NotOwner)");
    }

    #[test]
    fn catches_a_hung_acquire_but_excuses_a_killed_worker() {
        let hung = vec![vec!["A 10 0 1 /l mutex 100 1000000000".to_string()]];
        assert_caught(&history(&[], vec![worker(10, hung.clone())]), "hung attempt");
        // The same in a worker killed -9: in flight, no violation.
        let mut lines = vec!["H 10 0 1".to_string()];
        lines.extend(hung.into_iter().flatten());
        let h = history(&["K 0 10 500"], vec![lines]);
        assert!(violations(&h).is_empty(), "{:#?}", violations(&h));
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

    #[test]
    fn catches_a_section_that_never_ended_and_a_worker_that_never_finished() {
        let mut w = section(10, 1, "/l", "mutex", 5, "a", 100, 200, None);
        w.truncate(3); // A, R, S: no D, no E.
        assert_caught(&history(&[], vec![worker(10, vec![w])]), "section never ended");
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
        let h = history(
            &["I a 120"],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, Some(180))]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
        );
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text.contains("fenced overlaps after an instant expiry: 1"),
            "{}",
            r.text
        );
        // Never told at all: not excused.
        let h = history(
            &["I a 120"],
            vec![
                worker(10, vec![section(10, 1, "/l", "mutex", 5, "a", 100, 200, None)]),
                worker(11, vec![section(11, 1, "/l", "mutex", 6, "b", 150, 250, None)]),
            ],
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
        let r = check(&h, &opts());
        assert!(r.violations.is_empty(), "{:#?}", r.violations);
        assert!(
            r.text.contains("after an operator break: 1 (longest 0.000 ms)"),
            "{}",
            r.text
        );
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
        assert!(
            r.text
                .contains("overshoot cut: 1 at the deadline, 1 late, max 200.0 ms"),
            "{}",
            r.text
        );
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
