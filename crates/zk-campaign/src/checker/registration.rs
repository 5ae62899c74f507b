//! The registration kind's rules (R1 to R4), one function each: every
//! worker's ephemeral `PersistentNode`s and their `registration()` events
//! (`L` lines), judged against the observer's cache of the same nodes (`M`
//! lines, a client of its own straight to the server) and the faults. `W`
//! below is the session timeout, the bound on one notification's flight
//! and on a dead connection being seen as one (the library's `Registered`
//! needs the connection "up and answering"); `B` is
//! [`registration_bound`]. [`judge`] calls them in this order:
//!
//! * [`registered_only_while_there`] (R1): while a worker says
//!   `Registered` (from the event to its next event, its close or its
//!   death), the node it names exists with the worker's session as its
//!   owner: the observer never showed that node deleted more than `W`
//!   (plus the time the worker was stopped by a pause) before the span
//!   ended, never showed the path owned by another session around it, and
//!   a claim that stood `2W` was seen by the observer at all;
//! * [`down_only_around_faults`] (R2): a node not registered (from its
//!   start or a non-registered event to the next `Registered`) is so only
//!   within `B` of its start or of a fault (from the fault's start to `B`
//!   after it healed; a pause of the worker likewise); at the end of the
//!   run, after every fault healed, every worker's last node is
//!   `Registered` within `B` (`final ... registered`);
//! * [`visible_after_faults`] (R3): a node a worker says is `Registered`
//!   and still says so `W` later is shown by the observer then, owned by
//!   the worker's session (judged when no fault and no pause of the worker
//!   came within that `W`; with R2 this makes a node visible within `B +
//!   W` after every fault heals); and at the end, the observer has shown
//!   each worker's last node with the session it was registered in;
//! * [`nothing_after_close`] (R4): no node is shown by the observer for
//!   the first time later than `B` after its worker began closing it, and
//!   none is in the observer's final view (an orphan).
//!
//! Line formats:
//!
//! * `L pid t start path` — a worker's node (a new path each time) starts;
//!   `L pid t reg path session what [why]` — a registration event
//!   (`registered`, `uncertain Why`, `absent Why`) and the client's session
//!   (hex) when it was received; `L pid t final path registered|not
//!   session`; `L pid t closing path`, `L pid t closed path outcome`; `L pid
//!   t stop`.
//! * `M t created|deleted|changed path czxid owner` (owner hex), `M t
//!   initialized`, `M t freshness f`, `M t failed kind`, `M t view path
//!   czxid owner`, `M t end current|stale` — the observer
//!   (`registration-observer.log`).

use super::LineHistory as _;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::history::{Fields, History};

/// The bound within which a worker's node must be registered again after a
/// fault heals, for a session timeout of `session_ns`: `2 x session + 2 s`.
/// Derived: after the heal the client sees its dead connection within its
/// read timeout (2/3 of the session), connects again within a connection
/// timeout (the workers': one session), on the old session or, after an
/// expiry, a new one; the node's thread looks again at once on the new
/// connection, but a request that failed during the fault is repeated
/// after a pause of at most 2 s (`RETRY_PAUSE` in `zk-recipes/src/nodes`);
/// then one round trip.
pub fn registration_bound(session_ns: u64) -> u64 {
    2 * session_ns + 2_000_000_000
}

/// One of a worker's nodes.
#[derive(Debug, Default, Clone)]
pub(crate) struct Gen {
    pub(crate) pid: u32,
    pub(crate) start: u64,
    /// (t, session, registered, line).
    pub(crate) events: Vec<(u64, String, bool, String)>,
    pub(crate) closing: Option<u64>,
    /// (t, registered, session).
    pub(crate) fin: Option<(u64, bool, String)>,
}

/// One node as the observer showed it (a czxid).
#[derive(Debug, Default, Clone)]
pub(crate) struct Shown {
    pub(crate) czxid: i64,
    pub(crate) owner: String,
    pub(crate) created: u64,
    pub(crate) deleted: Option<u64>,
}

/// What the registration kind logged.
#[derive(Debug, Default)]
pub(crate) struct RegHistory {
    pub(crate) gens: BTreeMap<String, Gen>,
    pub(crate) shown: BTreeMap<String, Vec<Shown>>,
    pub(crate) view: Vec<String>,
    pub(crate) observer_current: Option<bool>,
}

impl super::LineHistory for RegHistory {
    fn line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        match f.kind()? {
            "L" => self.worker_line(&f, line),
            "M" => self.observer_line(&f),
            _ => None,
        }
    }
}

impl RegHistory {
    /// An `L` line: a worker's node started, a registration event, its
    /// final state, its close.
    fn worker_line(&mut self, f: &Fields<'_>, line: &str) -> Option<()> {
        let pid: u32 = f.num(1)?;
        let t: u64 = f.num(2)?;
        let what = f.str(3)?;
        if what == "stop" || what == "settled" {
            return Some(());
        }
        let g = self.gens.entry(f.string(4)?).or_insert_with(|| Gen {
            pid,
            start: t,
            ..Gen::default()
        });
        match what {
            "start" => g.start = t,
            "reg" => g
                .events
                .push((t, f.string(5)?, f.str(6)? == "registered", line.to_string())),
            "final" => g.fin = Some((t, f.str(5)? == "registered", f.string(6)?)),
            "closing" => g.closing = Some(t),
            "closed" | "failed" => {}
            _ => return None,
        }
        Some(())
    }

    /// An `M` line: what the observer showed.
    fn observer_line(&mut self, f: &Fields<'_>) -> Option<()> {
        let t: u64 = f.num(1)?;
        match f.str(2)? {
            "created" | "changed" => {
                let (p, czxid, owner) = (f.string(3)?, f.num(4)?, f.string(5)?);
                let list = self.shown.entry(p).or_default();
                if !list.iter().any(|s| s.czxid == czxid) {
                    list.push(Shown {
                        czxid,
                        owner,
                        created: t,
                        deleted: None,
                    });
                }
            }
            "deleted" => {
                let (p, czxid): (String, i64) = (f.string(3)?, f.num(4)?);
                if let Some(s) = self.shown.entry(p).or_default().iter_mut().find(|s| s.czxid == czxid) {
                    s.deleted.get_or_insert(t);
                }
            }
            "view" => self.view.push(f.string(3)?),
            "end" => self.observer_current = Some(f.str(3)? == "current"),
            "start" | "initialized" | "freshness" | "failed" | "other" => {}
            _ => return None,
        }
        Some(())
    }
}

/// When a span of `g` starting with event `i` ended: its next event, its
/// closing, or its worker's death (`None`: the log ends first).
fn span_end(g: &Gen, i: usize, killed: Option<u64>) -> Option<u64> {
    earliest(g.events.get(i + 1).map(|e| e.0).or(g.closing), killed)
}

/// The earlier of two instants that may not have come.
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `spans`, sorted and merged where they meet.
fn merged(mut spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    spans.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (a, e) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(e),
            _ => out.push((a, e)),
        }
    }
    out
}

/// R1 (see the module).
pub(crate) fn registered_only_while_there(h: &History, r: &RegHistory, w: u64, violations: &mut Vec<String>) {
    for (p, g) in &r.gens {
        let killed = h.killed.get(&g.pid).copied();
        let shown = r.shown.get(p).map(Vec::as_slice).unwrap_or(&[]);
        for (i, (t, s, registered, line)) in g.events.iter().enumerate() {
            if !registered {
                continue;
            }
            let end = span_end(g, i, killed);
            let mine: Vec<&Shown> = shown.iter().filter(|x| &x.owner == s).collect();
            // Gone: the latest of our session's nodes the observer showed
            // deleted, if none of them was still shown at the span's start.
            let live = mine.iter().any(|x| x.deleted.map_or(true, |d| d + w >= *t));
            if !mine.is_empty() {
                let last_gone = mine.iter().filter_map(|x| x.deleted).max();
                if let (Some(d), Some(e)) = (last_gone, end) {
                    let slack = w + h.stopped_within(g.pid, d, e);
                    let all_gone = mine.iter().all(|x| x.deleted.is_some());
                    if all_gone && e > d + slack {
                        violations.push(format!(
                            "registration: {p} told Registered (session {s}) until {:.1} ms after the observer saw it deleted (allowed {:.1} ms): {line}",
                            (e - d) as f64 / 1e6,
                            slack as f64 / 1e6
                        ));
                        continue;
                    }
                }
                if !live {
                    violations.push(format!(
                        "registration: {p} told Registered (session {s}) more than {:.0} ms after the observer saw it deleted: {line}",
                        w as f64 / 1e6
                    ));
                    continue;
                }
            } else if end.is_some_and(|e| e >= t + 2 * w) && r.observer_current == Some(true) {
                violations.push(format!(
                    "registration: {p} told Registered (session {s}) for {:.0} ms, but the observer never showed it owned by that session: {line}",
                    (end.unwrap_or(*t) - t) as f64 / 1e6
                ));
            }
            for x in shown.iter().filter(|x| &x.owner != s) {
                if x.created + w <= *t && x.deleted.map_or(true, |d| d >= t + w) {
                    violations.push(format!(
                        "registration: {p} told Registered (session {s}) while the observer showed it owned by session {}: {line}",
                        x.owner
                    ));
                }
            }
        }
    }
}

/// The fault windows `[start, end + b]`, merged, with the workers' pauses.
fn fault_windows(h: &History, b: u64) -> Vec<(u64, u64)> {
    merged(h.windows().iter().map(|f| (f.start, f.end.max(f.start) + b)).collect())
}

/// The first instant of `[a, e)` in none of `cover` (sorted, merged).
fn first_uncovered(mut a: u64, e: u64, cover: &[(u64, u64)]) -> Option<u64> {
    for &(ca, ce) in cover {
        if a >= e {
            return None;
        }
        if ca > a {
            return Some(a);
        }
        if ce > a {
            a = ce;
        }
    }
    (a < e).then_some(a)
}

/// R2 (see the module). Returns the longest time a node was not registered
/// (outside its first spell), in ns.
pub(crate) fn down_only_around_faults(h: &History, r: &RegHistory, b: u64, violations: &mut Vec<String>) -> u64 {
    let faults = fault_windows(h, b);
    let mut longest = 0;
    for (p, g) in &r.gens {
        let killed = h.killed.get(&g.pid).copied();
        let mut cover = faults.clone();
        cover.push((g.start, g.start + b));
        for &(pid, from, to) in &h.paused {
            if pid == g.pid {
                cover.push((from, to + b));
            }
        }
        let cover = merged(cover);
        // Spells: from the start, and from each non-registered event, to
        // the next registered one (or the close, or the death).
        let mut spells: Vec<(u64, Option<u64>, &str)> = Vec::new();
        let mut down_since = Some((g.start, "start"));
        for (t, _, registered, line) in &g.events {
            match (registered, down_since) {
                (true, Some((a, l))) => {
                    spells.push((a, Some(*t), l));
                    down_since = None;
                }
                (false, None) => down_since = Some((*t, line.as_str())),
                _ => {}
            }
        }
        if let Some((a, l)) = down_since {
            spells.push((a, earliest(g.closing, killed), l));
        }
        for (a, e, line) in spells {
            let Some(e) = e else { continue };
            if a != g.start {
                longest = longest.max(e.saturating_sub(a));
            }
            if let Some(x) = first_uncovered(a, e, &cover) {
                violations.push(format!(
                    "registration: {p} not registered at {x}, {:.1} ms after it started or a fault healed (bound {:.0} ms; the spell {a}..{e}): {line}",
                    cover
                        .iter()
                        .filter(|m| m.1 <= x)
                        .map(|m| x - m.1 + b)
                        .min()
                        .map_or(0.0, |d| d as f64 / 1e6),
                    b as f64 / 1e6
                ));
            }
        }
        if let Some((t, false, s)) = &g.fin {
            violations.push(format!(
                "registration: {p} not registered at the end of the run ({t}, session {s}), {:.0} ms after every fault healed",
                b as f64 / 1e6
            ));
        }
    }
    longest
}

/// Whether the observer showed `p` owned by `s` at `x`.
fn shown_at(r: &RegHistory, p: &str, s: &str, x: u64) -> bool {
    r.shown.get(p).is_some_and(|l| {
        l.iter()
            .any(|n| n.owner == s && n.created <= x && n.deleted.map_or(true, |d| d > x))
    })
}

/// R3 (see the module). Returns (registrations judged, skipped because a
/// fault or a pause of the worker came within `w` of them).
pub(crate) fn visible_after_faults(
    h: &History,
    r: &RegHistory,
    w: u64,
    violations: &mut Vec<String>,
) -> (usize, usize) {
    let (mut judged, mut skipped) = (0, 0);
    let windows = h.windows();
    for (p, g) in &r.gens {
        let killed = h.killed.get(&g.pid).copied();
        for (i, (t, s, registered, line)) in g.events.iter().enumerate() {
            let x = t + w;
            if !registered || span_end(g, i, killed).map_or(true, |e| e <= x) {
                continue;
            }
            if windows.iter().any(|f| f.meets(*t, x, 0)) || h.stopped_within(g.pid, *t, x) > 0 {
                skipped += 1;
                continue;
            }
            judged += 1;
            if !shown_at(r, p, s, x) {
                violations.push(format!(
                    "registration: {p} registered (session {s}) and still so {:.0} ms later, but not shown by the observer then: {line}",
                    w as f64 / 1e6
                ));
            }
        }
    }
    for (p, g) in &r.gens {
        if let Some((t, true, s)) = &g.fin {
            if !r.shown.get(p).is_some_and(|l| l.iter().any(|n| &n.owner == s)) {
                violations.push(format!(
                    "registration: {p} registered at the end of the run ({t}, session {s}) but never shown by the observer with that session"
                ));
            }
        }
    }
    (judged, skipped)
}

/// R4 (see the module). Returns the number of closed nodes.
pub(crate) fn nothing_after_close(r: &RegHistory, b: u64, violations: &mut Vec<String>) -> usize {
    let mut closed = 0;
    for (p, g) in &r.gens {
        let Some(c) = g.closing else { continue };
        closed += 1;
        for n in r.shown.get(p).map(Vec::as_slice).unwrap_or(&[]) {
            if n.created > c + b {
                violations.push(format!(
                    "registration: {p} shown by the observer (czxid {:#x}, session {}) {:.0} ms after its worker began closing it",
                    n.czxid,
                    n.owner,
                    (n.created - c) as f64 / 1e6
                ));
            }
        }
    }
    for p in &r.view {
        violations.push(format!("registration: {p} is in the observer's final view (an orphan)"));
    }
    closed
}

/// Runs R1-R4 and returns the report's lines (empty without the kind).
pub(crate) fn judge(h: &History, violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if h.reg_lines.is_empty() {
        return t;
    }
    let (r, bad) = RegHistory::parse(&h.reg_lines);
    let w = h.session_ns();
    let b = registration_bound(w);
    registered_only_while_there(h, &r, w, violations);
    let longest = down_only_around_faults(h, &r, b, violations);
    let (judged, skipped) = visible_after_faults(h, &r, w, violations);
    let closed = nothing_after_close(&r, b, violations);
    let events: usize = r.gens.values().map(|g| g.events.len()).sum();
    let registered: usize = r.gens.values().map(|g| g.events.iter().filter(|e| e.2).count()).sum();
    let finals = r.gens.values().filter(|g| g.fin.as_ref().is_some_and(|f| f.1)).count();
    let shown: usize = r.shown.values().map(Vec::len).sum();
    let _ = writeln!(
        t,
        "registrations: {} nodes ({closed} closed), {events} events ({registered} Registered), {finals} registered at the end; observer: {shown} nodes shown, ended {}{}",
        r.gens.len(),
        match r.observer_current {
            Some(true) => "current",
            Some(false) => "stale",
            None => "without a final view",
        },
        if bad > 0 { format!("; unparsed registration lines: {bad}") } else { String::new() }
    );
    let _ = writeln!(
        t,
        "registration bound {:.0} ms: longest unregistered spell {:.1} ms; registrations judged against the observer a session later {judged}, skipped (a fault or a pause within that session) {skipped}",
        b as f64 / 1e6,
        longest as f64 / 1e6
    );
    t
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_any;
    use super::*;

    const S: u64 = 1_000_000_000; // one second
    const W: u64 = 3 * S;

    /// A node registered at 1 s, a fault 10-11 s (its session expired, the
    /// node re-created on session b at 12 s), closed at 30 s; the observer
    /// saw all of it a moment later.
    fn good() -> Vec<String> {
        [
            "P session_ms=3000".to_string(),
            format!("F cut {} {} -", 10 * S, 11 * S),
            format!("L 7 {} start /r/w7-1", S / 2),
            format!("L 7 {} reg /r/w7-1 a uncertain Unproven", S / 2),
            format!("L 7 {} reg /r/w7-1 a registered", S),
            format!("M {} created /r/w7-1 5 a", S + 1000),
            format!("L 7 {} reg /r/w7-1 a uncertain Disconnected", 10 * S + 1),
            format!("M {} deleted /r/w7-1 5 a", 10 * S + 2),
            format!("L 7 {} reg /r/w7-1 b absent SessionExpired", 11 * S + 5),
            format!("L 7 {} reg /r/w7-1 b registered", 12 * S),
            format!("M {} created /r/w7-1 9 b", 12 * S + 1000),
            format!("L 7 {} final /r/w7-1 registered b", 29 * S),
            format!("L 7 {} closing /r/w7-1", 30 * S),
            format!("M {} deleted /r/w7-1 9 b", 30 * S + 1000),
            format!("L 7 {} closed /r/w7-1 ok", 30 * S + 2000),
            format!("L 7 {} stop", 30 * S + 3000),
            format!("M {} end current", 40 * S),
        ]
        .to_vec()
    }

    fn run(lines: &[String]) -> Vec<String> {
        let h = History::from_lines(lines);
        assert_eq!(h.unparsed, 0);
        let (r, bad) = RegHistory::parse(&h.reg_lines);
        assert_eq!(bad, 0);
        let mut v = Vec::new();
        let b = registration_bound(W);
        registered_only_while_there(&h, &r, W, &mut v);
        down_only_around_faults(&h, &r, b, &mut v);
        visible_after_faults(&h, &r, W, &mut v);
        nothing_after_close(&r, b, &mut v);
        v
    }

    fn with(mut l: Vec<String>, at: usize, line: String) -> Vec<String> {
        l[at] = line;
        l
    }

    #[test]
    fn a_good_history_passes() {
        assert_eq!(run(&good()), Vec::<String>::new());
        let h = History::from_lines(good());
        let (r, _) = RegHistory::parse(&h.reg_lines);
        let mut v = Vec::new();
        // Both registrations are judged a session later (no fault then).
        assert_eq!(visible_after_faults(&h, &r, W, &mut v), (2, 0));
    }

    #[test]
    fn registered_long_after_the_node_went_is_flagged() {
        // The worker was never told of the expiry: still Registered on
        // session a at 11 s, 9 s after the observer saw the node go.
        let l = with(
            good(),
            6,
            format!("L 7 {} reg /r/w7-1 a uncertain Disconnected", 11 * S),
        );
        let l = with(l, 7, format!("M {} deleted /r/w7-1 5 a", 2 * S));
        let v = run(&l);
        assert_any(&v, "told Registered (session a) until");
    }

    #[test]
    fn a_registration_on_a_session_that_does_not_own_the_node_is_flagged() {
        let mut l = good();
        l.insert(11, format!("L 7 {} reg /r/w7-1 c registered", 20 * S));
        let v = run(&l);
        assert_any(&v, "never showed it owned by that session");
        assert_any(&v, "while the observer showed it owned by session b");
    }

    #[test]
    fn not_registered_again_within_the_bound_is_flagged() {
        // Re-registered 10 s after the heal (B is 8 s).
        let l = with(good(), 9, format!("L 7 {} reg /r/w7-1 b registered", 21 * S));
        let l = with(l, 10, format!("M {} created /r/w7-1 9 b", 21 * S + 1000));
        let v = run(&l);
        assert_any(&v, "not registered at 19000000000");
        // A spell of doubt with no fault at all.
        let mut l = good();
        l.insert(11, format!("L 7 {} reg /r/w7-1 b uncertain Silent", 25 * S));
        l.insert(12, format!("L 7 {} reg /r/w7-1 b registered", 26 * S));
        let v = run(&l);
        assert_any(&v, "not registered at 25000000000");
        // Not registered at the end.
        let l = with(good(), 11, format!("L 7 {} final /r/w7-1 not b", 29 * S));
        let v = run(&l);
        assert_any(&v, "not registered at the end");
    }

    #[test]
    fn a_registration_the_observer_does_not_show_after_a_fault_is_flagged() {
        // The observer saw the new node only at 25 s.
        let l = with(good(), 10, format!("M {} created /r/w7-1 9 b", 25 * S));
        let v = run(&l);
        assert_any(&v, "but not shown by the observer then");
    }

    #[test]
    fn a_node_shown_after_close_or_left_is_flagged() {
        let mut l = good();
        l.insert(15, format!("M {} created /r/w7-1 12 b", 39 * S));
        l.insert(16, format!("M {} view /r/w7-1 12 b", 40 * S));
        let v = run(&l);
        assert_any(&v, "after its worker began closing it");
        assert_any(&v, "an orphan");
    }
}
