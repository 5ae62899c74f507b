//! The checker: the rules a campaign's history must obey.
//!
//! Rules (each breach is a violation):
//!
//! 1. **Exclusion.** On each lock, no two sections overlap unless both are
//!    reads. A section counts as ending at `min(end, told)`: a holder told of a
//!    loss before the overlap began is excused; a section told at grant is
//!    empty. A killed worker's open section ends at its `D` line, or else when
//!    it was killed. One more
//!    excuse, counted apart: when the server expired a holder's session
//!    *instantly* (`I`), no client can learn of it before another one is
//!    granted the lock; such an overlap is "fenced" if that holder was told at
//!    all and its fencing token is smaller than the other's.
//! 2. **Fencing.** On each lock, the tokens of exclusive sections (all but
//!    reads; empty sections left out) increase strictly in start order. This
//!    also covers what rule 1 cannot see: a multi-lock's sections start when
//!    the whole set is held, but it may hold its first locks long before
//!    (while it waits for the others); a lock granted to someone else in that
//!    time comes out of token order.
//! 3. **Losses are reported.** A section whose lock was lost (status `Lost` or
//!    `Uncertain` at the end, or a failed release while disconnected), or that
//!    was `Uncertain`/`Lost` at grant, must have heard `Suspended`/`Lost`.
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
//!
//! The history format is described in [`crate::history`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::history::{AttemptEnd, History, SecRec};

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
}

/// Rule 5: the overshoots of timed acquires, by fault kind. An attempt counts
/// for every fault whose window (from its start to its end plus one session
/// timeout, while its effects last) meets the attempt, or for `no fault`.
fn overshoots(h: &History, opts: &CheckOptions, violations: &mut Vec<String>) -> Overshoot {
    let session_ns = h.param_u64("session_ms").unwrap_or(3000) * 1_000_000;
    let default_deadline = h.param_u64("acquire_timeout_ms").map(|ms| ms * 1_000_000);
    let margin = opts.overshoot_margin.as_nanos() as u64;
    let limit = opts.max_overshoot.map(|d| d.as_nanos() as u64);
    let mut samples: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut late: BTreeMap<String, u64> = BTreeMap::new();
    let mut timed = 0u64;
    let mut keys: Vec<_> = h.attempts.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let a = &h.attempts[&k];
        let (Some(AttemptEnd { t, wait, outcome, .. }), Some(deadline)) = (&a.result, a.deadline.or(default_deadline))
        else {
            continue;
        };
        timed += 1;
        if *wait < deadline {
            continue;
        }
        let over = wait - deadline;
        let (from, to) = (a.start.unwrap_or(t.saturating_sub(*wait)), *t);
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
            if over > margin {
                *late.entry(kind.to_string()).or_default() += 1;
            }
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
    let mut by_fault = BTreeMap::new();
    for (kind, mut v) in samples {
        v.sort_unstable();
        let p99 = v[(v.len() * 99).div_ceil(100).saturating_sub(1)];
        by_fault.insert(
            kind.clone(),
            OvershootStats {
                at_deadline: v.len() as u64,
                late: late.get(&kind).copied().unwrap_or(0),
                max_ns: v.last().copied().unwrap_or(0),
                p99_ns: p99,
            },
        );
    }
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
    Overshoot { text, by_fault }
}

/// Checks a history against the rules above.
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
    let session_ms: u64 = h.param_u64("session_ms").unwrap_or(3000);
    let timeout_ms: u64 = h.param_u64("acquire_timeout_ms").unwrap_or(30_000);
    let overlong = (timeout_ms + 4 * session_ms + 10_000) * 1_000_000;
    let mut violations: Vec<String> = Vec::new();

    // Attempts.
    let mut acquired: BTreeMap<String, u64> = BTreeMap::new();
    let (mut timeouts, mut errors, mut inflight_killed) = (0u64, 0u64, 0u64);
    let mut error_kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut longest: Option<(u64, String)> = None;
    let mut keys: Vec<_> = h.attempts.keys().copied().collect();
    keys.sort();
    for k in keys {
        let a = &h.attempts[&k];
        match &a.result {
            None if h.killed.contains_key(&k.0) => inflight_killed += 1,
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
                    "acquired" => *acquired.entry(a.mode.clone()).or_default() += 1,
                    "timeout" => timeouts += 1,
                    _ => {
                        errors += 1;
                        *error_kinds.entry(kind.clone()).or_default() += 1;
                    }
                }
                if longest.as_ref().map_or(true, |(w, _)| wait > w) {
                    longest = Some((*wait, format!("{} on {}, {outcome}", a.mode, a.lock)));
                }
                if *wait > overlong {
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

    // Sections: effective ends, loss reports.
    struct View<'a> {
        s: &'a SecRec,
        eff: u64,
        told_any: bool,
    }
    let mut views: Vec<View<'_>> = Vec::new();
    let (mut cut_short, mut told_at_grant, mut killed_in_section) = (0u64, 0u64, 0u64);
    let (mut release_failed, mut release_failed_connected) = (0u64, 0u64);
    let mut sec_keys: Vec<_> = h.sections.keys().cloned().collect();
    sec_keys.sort();
    for k in &sec_keys {
        let s = &h.sections[k];
        let (eff, told_any) = match &s.end {
            Some(e) => {
                let told_any = e.told.is_some() || e.told_late.is_some();
                if let Some(t) = e.told {
                    if t <= s.start {
                        told_at_grant += 1;
                    } else if t <= e.end {
                        cut_short += 1;
                    }
                }
                let lost_at_end = matches!(e.st_end.as_str(), "Lost" | "Uncertain");
                let failed = e.release != "ok";
                if failed {
                    release_failed += 1;
                    if e.connected {
                        release_failed_connected += 1;
                    }
                }
                if e.release.contains("NotOwner") {
                    violations.push(format!("release refused (NotOwner) on {}: {}", s.lock, s.describe()));
                }
                if (lost_at_end || (failed && !e.connected)) && !told_any {
                    violations.push(format!(
                        "unreported loss on {}: {} status {} at the end, release {}, no Suspended/Lost received",
                        s.lock,
                        s.describe(),
                        e.st_end,
                        e.release
                    ));
                }
                if matches!(e.st0.as_str(), "Lost" | "Uncertain") && !told_any {
                    violations.push(format!(
                        "unreported loss on {}: {} status {} at grant, but the loss receiver never said so",
                        s.lock,
                        s.describe(),
                        e.st0
                    ));
                }
                (e.end.min(e.told.unwrap_or(u64::MAX)), told_any)
            }
            None => match h.killed.get(&s.pid) {
                Some(&t) => {
                    killed_in_section += 1;
                    // Work done (`D`) and the release under way, or killed while
                    // working: then the section lasts until the kill.
                    (h.done.get(&(s.pid, s.thr, s.att)).copied().unwrap_or(t).min(t), false)
                }
                None => {
                    violations.push(format!("section never ended on {}: {}", s.lock, s.describe()));
                    (s.start, false)
                }
            },
        };
        views.push(View { s, eff, told_any });
    }

    // Exclusion and fencing, per lock.
    let mut by_lock: BTreeMap<&str, Vec<&View<'_>>> = BTreeMap::new();
    for v in &views {
        by_lock.entry(v.s.lock.as_str()).or_default().push(v);
    }
    let (mut fenced, mut fenced_max_ns) = (0u64, 0u64);
    let mut overlaps_checked = 0u64;
    for (lock, list) in by_lock.iter_mut() {
        list.sort_by_key(|v| (v.s.start, v.s.pid, v.s.thr, v.s.att));
        let mut active: Vec<&View<'_>> = Vec::new();
        for v in list.iter() {
            if v.eff <= v.s.start {
                continue;
            }
            active.retain(|a| a.eff > v.s.start);
            for a in &active {
                if a.s.mode == "read" && v.s.mode == "read" {
                    continue;
                }
                overlaps_checked += 1;
                let o_start = v.s.start;
                let o_len = a.eff.min(v.eff) - o_start;
                let expired_before = |p: &View<'_>| h.instant.iter().any(|(sid, x)| *sid == p.s.sid && *x <= o_start);
                let excused = [(*a, *v), (*v, *a)]
                    .iter()
                    .any(|(p, q)| expired_before(p) && p.told_any && p.s.token < q.s.token);
                if excused {
                    fenced += 1;
                    fenced_max_ns = fenced_max_ns.max(o_len);
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

    // Timed acquires that returned late.
    let overshoot = overshoots(h, opts, &mut violations);

    // Workers.
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

    // Faults.
    let faults = h.fault_counts();
    let kinds: Vec<String> = h
        .params
        .get("kinds")
        .map(|k| k.split(',').filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let missing: Vec<String> = kinds.iter().filter(|k| !faults.contains_key(*k)).cloned().collect();

    // The report.
    let mut t = String::new();
    let total: u64 = acquired.values().sum();
    let by_mode = ["mutex", "read", "write", "semaphore", "multi"]
        .iter()
        .map(|m| format!("{m} {}", acquired.get(*m).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(t, "acquisitions: {total} ({by_mode})");
    let _ = writeln!(
        t,
        "attempts: {} (acquired {total}, timed out {timeouts}, errors {errors}, in flight at kill -9 {inflight_killed})",
        h.attempts.len()
    );
    if !error_kinds.is_empty() {
        let _ = writeln!(
            t,
            "errors by kind: {}",
            error_kinds
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut fault_names: Vec<String> = kinds.clone();
    for k in faults.keys() {
        if !fault_names.contains(k) {
            fault_names.push(k.clone());
        }
    }
    let _ = writeln!(
        t,
        "faults: {} ({}){}",
        faults.values().sum::<usize>(),
        fault_names
            .iter()
            .map(|k| format!("{k} {}", faults.get(k).copied().unwrap_or(0)))
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
        if missing.is_empty() {
            "none".to_string()
        } else {
            missing.join(", ")
        }
    );
    let _ = writeln!(
        t,
        "sections: {} (cut short by a loss signal {cut_short}, told at grant {told_at_grant}, open at kill -9 {killed_in_section}); {overlaps_checked} overlaps checked",
        h.sections.len()
    );
    let _ = writeln!(
        t,
        "release failures: {release_failed} ({release_failed_connected} began while still connected)"
    );
    let _ = writeln!(
        t,
        "fenced overlaps after an instant expiry: {fenced} (longest {:.3} ms)",
        fenced_max_ns as f64 / 1e6
    );
    match &longest {
        Some((w, what)) => {
            let _ = writeln!(t, "longest wait: {:.1} ms ({what})", *w as f64 / 1e6);
        }
        None => {
            let _ = writeln!(t, "longest wait: none");
        }
    }
    if h.unparsed > 0 {
        let _ = writeln!(t, "unparsed lines: {}", h.unparsed);
    }
    t.push_str(&overshoot.text);
    let _ = writeln!(t, "violations: {}", violations.len());
    for v in violations.iter().take(30) {
        let _ = writeln!(t, "  VIOLATION: {v}");
    }
    if violations.len() > 30 {
        let _ = writeln!(t, "  ... and {} more", violations.len() - 30);
    }
    Report {
        text: t,
        violations,
        missing,
        overshoots: overshoot.by_fault,
    }
}
