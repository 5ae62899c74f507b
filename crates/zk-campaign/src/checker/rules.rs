//! Rules 1 to 7, one function each (rule 4 in three: attempts, sections and
//! workers), with the counts each gives the report. [`super::check`] calls
//! them in this order:
//!
//! * [`attempts_end_in_time`] (rule 4): every attempt ended, unless its
//!   worker was killed -9, and none took too long;
//! * [`section_views`]: each section's effective end (rule 1), judging on the
//!   way [`losses_are_reported`] (rule 3) for an ended section and
//!   [`unended_section_was_killed`] (rule 4) for one that never ended;
//! * on each lock, [`sections_exclude_each_other`] (rule 1),
//!   [`safety_margins_are_positive`] (rule 6) and [`fencing_tokens_increase`]
//!   (rule 2);
//! * then rules 8 to 10 (`claims.rs`), [`overshoots`] (rule 5),
//!   [`resource_writes`] (rule 7) and [`workers_finish_cleanly`] (rule 4).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use super::{at_permille, claims, stats_by_key, tally, CheckOptions, OvershootStats, View};
use crate::history::{AttemptEnd, AttemptKey, EndRec, FaultRec, History, SecRec};

/// How much later than a `Q` line's stop time a holder's last `Ok` may be and
/// still count as before the stop (older logs took the time before sending
/// SIGSTOP; newer ones once every thread has stopped).
const PAUSE_SLACK_NS: u64 = 100_000_000;

/// Rule 5's lines for the report, and its statistics.
pub(super) struct Overshoot {
    /// The report's lines.
    pub(super) text: String,
    /// See [`Report::overshoots`](super::Report::overshoots).
    pub(super) by_fault: BTreeMap<String, OvershootStats>,
    /// See [`Report::overshoots_by_lock`](super::Report::overshoots_by_lock).
    pub(super) by_lock: BTreeMap<String, OvershootStats>,
}

/// Statistics of overshoot samples, by key.
fn stats(samples: BTreeMap<String, Vec<u64>>, margin: u64) -> BTreeMap<String, OvershootStats> {
    stats_by_key(samples, |v| OvershootStats {
        at_deadline: v.len() as u64,
        late: v.iter().filter(|o| **o > margin).count() as u64,
        max_ns: v.last().copied().unwrap_or(0),
        p99_ns: at_permille(v, 990),
    })
}

/// Rule 5's samples: the overshoot of every timed attempt that reached its
/// deadline, by the fault kinds it met and by its lock kind, and the counts
/// the report gives.
#[derive(Default)]
struct OvershootSamples {
    by_fault: BTreeMap<String, Vec<u64>>,
    by_lock: BTreeMap<String, Vec<u64>>,
    /// Timed attempts by lock kind, and in all.
    timed_by_lock: BTreeMap<String, u64>,
    timed: u64,
    /// Attempts whose worker was stopped after their deadline, and the
    /// time in all (ns).
    stopped_excused: u64,
    stopped_ns: u64,
}

/// Rule 5: the overshoots of timed acquires, by fault kind and by lock kind.
/// An attempt counts for every fault whose window (from its start to its end
/// plus one session timeout, while its effects last) meets the attempt, or for
/// `no fault`; and for its lock kind.
pub(super) fn overshoots(h: &History, opts: &CheckOptions, violations: &mut Vec<String>) -> Overshoot {
    let margin = opts.overshoot_margin.as_nanos() as u64;
    let limit = opts.max_overshoot.map(|d| d.as_nanos() as u64);
    let mut samples = OvershootSamples::default();
    let windows = h.windows();
    let mut keys: Vec<_> = h.attempts.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let Some(late) = overshoot_of(h, k, &windows, &mut samples) else {
            continue;
        };
        if let Some(limit) = limit.filter(|l| late.over > *l) {
            let a = &h.attempts[&k];
            violations.push(format!(
                "late acquire: pid {} thread {} attempt {} ({} on {}, {}) returned {:.1} ms after its \
                 {:.0} ms deadline (limit {:.1} ms; faults: {})",
                k.0,
                k.1,
                k.2,
                a.mode,
                a.lock,
                late.outcome,
                late.over as f64 / 1e6,
                late.deadline as f64 / 1e6,
                limit as f64 / 1e6,
                late.kinds.join(", ")
            ));
        }
    }
    let by_fault = stats(std::mem::take(&mut samples.by_fault), margin);
    let by_lock = stats(std::mem::take(&mut samples.by_lock), margin);
    Overshoot {
        text: overshoot_lines(&samples, &by_fault, &by_lock, margin, limit),
        by_fault,
        by_lock,
    }
}

/// An attempt that returned at or after its deadline.
struct Overshot<'a> {
    /// How long after its deadline (ns; the time its worker was stopped
    /// after the deadline not counted).
    over: u64,
    deadline: u64,
    outcome: &'a str,
    /// The fault kinds it met (`no fault`).
    kinds: Vec<&'a str>,
}

/// Attempt `k`'s overshoot past its deadline, counted in `samples`; `None`
/// when it was not timed (no deadline, or it never ended) or returned
/// before its deadline. A worker stopped by SIGSTOP cannot return while
/// stopped: the time it was stopped after its deadline is not an overshoot
/// (and only that time).
fn overshoot_of<'a>(
    h: &'a History,
    k: AttemptKey,
    windows: &'a [FaultRec],
    samples: &mut OvershootSamples,
) -> Option<Overshot<'a>> {
    let a = &h.attempts[&k];
    let default_deadline = h.param_u64("acquire_timeout_ms").map(|ms| ms * 1_000_000);
    let (Some(AttemptEnd { t, wait, outcome, .. }), Some(deadline)) = (&a.result, a.deadline.or(default_deadline))
    else {
        return None;
    };
    samples.timed += 1;
    *samples.timed_by_lock.entry(a.mode.clone()).or_default() += 1;
    if *wait < deadline {
        return None;
    }
    let (from, to) = (a.start.unwrap_or(t.saturating_sub(*wait)), *t);
    let stopped = h.stopped_within(k.0, from.saturating_add(deadline), to);
    if stopped > 0 {
        samples.stopped_excused += 1;
        samples.stopped_ns += stopped;
    }
    let over = (wait - deadline).saturating_sub(stopped);
    samples.by_lock.entry(a.mode.clone()).or_default().push(over);
    let session_ns = h.session_ns();
    let mut kinds: Vec<&str> = windows
        .iter()
        .filter(|f| f.meets(from, to, session_ns))
        .map(|f| f.kind.as_str())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.is_empty() {
        kinds.push("no fault");
    }
    for kind in &kinds {
        samples.by_fault.entry(kind.to_string()).or_default().push(over);
    }
    Some(Overshot {
        over,
        deadline,
        outcome,
        kinds,
    })
}

/// `N at the deadline, N late, max X ms, p99 X ms`.
fn said(s: &OvershootStats) -> String {
    format!(
        "{} at the deadline, {} late, max {:.1} ms, p99 {:.1} ms",
        s.at_deadline,
        s.late,
        s.max_ns as f64 / 1e6,
        s.p99_ns as f64 / 1e6
    )
}

/// Rule 5's lines for the report: the timed attempts, the time not counted,
/// the overshoots by fault kind and by lock kind.
fn overshoot_lines(
    samples: &OvershootSamples,
    by_fault: &BTreeMap<String, OvershootStats>,
    by_lock: &BTreeMap<String, OvershootStats>,
    margin: u64,
    limit: Option<u64>,
) -> String {
    let mut text = String::new();
    let at_deadline: u64 = by_fault.values().map(|s| s.at_deadline).max().unwrap_or(0);
    let _ = writeln!(
        text,
        "acquire overshoot past the deadline: {} timed attempts, margin {:.1} ms, {}{}",
        samples.timed,
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
    if samples.stopped_excused > 0 {
        let _ = writeln!(
            text,
            "  (not counted: the time {} attempts' workers were stopped by SIGSTOP after their deadline, \
             {:.1} ms in all)",
            samples.stopped_excused,
            samples.stopped_ns as f64 / 1e6
        );
    }
    for (kind, s) in by_fault {
        let _ = writeln!(text, "  overshoot {kind}: {}", said(s));
    }
    for mode in ["mutex", "read", "write", "semaphore", "multi", "leader"] {
        let n = samples.timed_by_lock.get(mode).copied().unwrap_or(0);
        if n == 0 {
            continue;
        }
        let s = by_lock.get(mode).cloned().unwrap_or_default();
        let _ = writeln!(text, "  overshoot by lock {mode}: {n} timed, {}", said(&s));
    }
    text
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

/// Rule 1's fenced excuse: before `at`, the server let `p`'s lock go
/// ([`let_go_before`]); `p` was told at all; its token is smaller than the
/// other's. No client can learn of it before another one is granted the
/// lock: its notification is on its way.
fn fenced_by(h: &History, p: &View<'_>, q_token: i64, at: u64) -> Option<Fence> {
    if !p.told_any || p.s.token >= q_token {
        return None;
    }
    let_go_before(h, p.s, at)
}

/// How the server let section `s`'s lock go behind its holder's back at or
/// before `at`, if it did: it expired the session at once (`I`), or an
/// operator deleted its node (`B`, same session and node name).
fn let_go_before(h: &History, s: &SecRec, at: u64) -> Option<Fence> {
    if h.expiries_of(&s.sid).any(|x| x <= at) {
        Some(Fence::Instant)
    } else if s.node != "-" && h.breaks_of(&s.sid, &s.node).any(|x| x <= at) {
        Some(Fence::Broken)
    } else {
        None
    }
}

/// The attempts' outcomes, for the report.
#[derive(Default)]
pub(super) struct AttemptStats {
    /// Attempts that acquired, by lock kind.
    pub(super) acquired: BTreeMap<String, u64>,
    /// Attempts that timed out.
    pub(super) timeouts: u64,
    /// Attempts that failed.
    pub(super) errors: u64,
    /// Failed attempts by error kind.
    pub(super) error_kinds: BTreeMap<String, u64>,
    /// Attempts in flight when their worker was killed -9.
    pub(super) inflight_killed: u64,
    /// The longest wait (ns), and what it was for.
    pub(super) longest: Option<(u64, String)>,
    /// Attempts whose worker was stopped (SIGSTOP) while they went on.
    pub(super) stopped: u64,
}

/// Rule 4 for attempts: every attempt ended unless its worker was killed -9,
/// and none took longer than its timeout plus 4 session timeouts plus 10 s,
/// not counting the time its worker was stopped by SIGSTOP meanwhile
/// ([`History::stopped_within`], as rule 5 does after the deadline).
pub(super) fn attempts_end_in_time(h: &History, violations: &mut Vec<String>) -> AttemptStats {
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
                t,
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
                // A stopped worker's attempt cannot go on: that time is not its own.
                let stopped = h.stopped_within(k.0, a.start.unwrap_or(t.saturating_sub(*wait)), *t);
                if stopped > 0 {
                    st.stopped += 1;
                }
                if wait.saturating_sub(stopped) > overlong_after(a.deadline) {
                    violations.push(format!(
                        "overlong attempt: pid {} thread {} attempt {} ({} on {}) took {} ms{}",
                        k.0,
                        k.1,
                        k.2,
                        a.mode,
                        a.lock,
                        wait / 1_000_000,
                        if stopped > 0 {
                            format!(
                                ", {} ms of them with its worker stopped by SIGSTOP (not counted)",
                                stopped / 1_000_000
                            )
                        } else {
                            String::new()
                        }
                    ));
                }
            }
        }
    }
    st
}

/// The sections' counts, for the report.
#[derive(Default)]
pub(super) struct SectionStats {
    /// Sections whose holder was told of a loss while it held the lock.
    pub(super) cut_short: u64,
    /// Sections whose holder was told of a loss at grant.
    pub(super) told_at_grant: u64,
    /// Sections open when their worker was killed -9.
    pub(super) killed_in_section: u64,
    /// Releases that failed (one answering `LockLost` did not).
    pub(super) release_failed: u64,
    /// Of those, the ones that began while still connected.
    pub(super) release_failed_connected: u64,
    /// Releases that answered `LockLost`.
    pub(super) release_lost: u64,
    /// Of those, the ones that were the first word of the loss.
    pub(super) release_lost_first: u64,
    /// Sections with no status (`?`, older logs).
    pub(super) status_unknown: u64,
    /// Sections whose first sign of a loss was a `check()` that was not `Ok`.
    pub(super) check_first: u64,
    /// Sections whose holder was stopped (SIGSTOP) and heard of a loss
    /// first thing after.
    pub(super) ended_by_pause: u64,
    /// The longest release (ns), and what it was for.
    pub(super) longest_release: Option<(u64, String)>,
}

/// Every section as the exclusion rules see it, in key order, and their
/// counts. On the way it judges each section by rule 3 (ended ones) or
/// rule 4 (the others), so their violations come section by section.
pub(super) fn section_views<'a>(h: &'a History, violations: &mut Vec<String>) -> (Vec<View<'a>>, SectionStats) {
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

/// Rule 1's counts, for the report.
#[derive(Default)]
pub(super) struct ExclusionStats {
    /// Pairs of overlapping sections that exclude each other.
    pub(super) overlaps_checked: u64,
    /// Overlaps excused after an instant expiry, and the longest (ns).
    pub(super) fenced: u64,
    pub(super) fenced_max_ns: u64,
    /// Overlaps excused after an operator break, and the longest (ns).
    pub(super) fenced_broken: u64,
    pub(super) fenced_broken_max_ns: u64,
}

/// Rule 1 on one lock's sections (sorted by grant): no two non-empty
/// sections overlap (to their effective ends) unless both are reads or the
/// overlap is fenced (counted apart).
pub(super) fn sections_exclude_each_other(
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
pub(super) fn safety_margins_are_positive(
    h: &History,
    lock: &str,
    list: &[&View<'_>],
    session_ns: u64,
    samples: &mut BTreeMap<String, Vec<i64>>,
    violations: &mut Vec<String>,
) {
    let windows = h.windows();
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
        let fenced_pair = let_go_before(h, a.s, b.s.start).is_some();
        // The fault in effect when the holder was told: the latest one
        // that began before and had not ended a session timeout before.
        let kind = windows
            .iter()
            .filter(|f| f.meets(a.eff, a.eff, session_ns))
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
pub(super) fn fencing_tokens_increase(lock: &str, list: &[&View<'_>], violations: &mut Vec<String>) {
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
pub(super) fn workers_finish_cleanly(h: &History, violations: &mut Vec<String>) {
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

/// Rule 7: the writes read back from the guarded resources. On each lock's
/// resource, in the order they arrived (ZooKeeper's sequence numbers), the
/// tokens never decrease, and two sections never write with the same token;
/// each write carries its section's own token; a write its section saw
/// succeed is there. Returns the report's lines.
pub(super) fn resource_writes(h: &History, violations: &mut Vec<String>) -> String {
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
        tally(&refused, "0")
    );
    t
}
