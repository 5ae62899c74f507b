//! The partitioner kind's rules (P1 to P3), one function each: every
//! worker's `SetPartitioner` members, their events and their claims (`O`
//! lines), judged against each other and the faults. A *member* is one
//! partitioner (`w<pid>-<gen>`: a worker starts a new one after a failure);
//! a *claim* says that `fencing_tokens()`, called from `lo` to `hi`, told
//! the member it holds the item now, with that token (the item's lock
//! node's czxid: it grows with every grant of the item, whichever member).
//! [`judge`] calls them in this order:
//!
//! * [`never_owned_twice`] (P1): on each item, (a) no claim of one member
//!   falls between two claims of another member with the same token when
//!   that member was told nothing in between (an event other than
//!   `Acquired` whose instant lies between the two): from its first claim's
//!   end to its last claim's start the other owned the item without doubt,
//!   so a claim wholly inside is an item owned by two members at once; and
//!   (b) tokens grow in claim order: a claim that began after another one
//!   ended names a token at least as large, and never the token of another
//!   member (the successive owners of an item hold ever newer lock nodes).
//!   One excuse, counted apart as rule 1's is (see [`fenced`]): the older
//!   owner's session was expired at once (`I`), or its lock node of the
//!   item deleted by an operator (`B`), before the newer owner's claim; it
//!   had been told nothing since its `Acquired` when it claimed, and was
//!   told afterwards; and its token is the smaller (a store fencing by
//!   token refuses it). No client can learn of an expiry or a deletion
//!   before its notification arrives: on an ensemble, a member cut off
//!   with a minority node that still answers it hears of neither until
//!   that node gives up;
//! * [`owned_again_after_faults`] (P2): after the last disturbance (the
//!   end of the last fault's window, of the last pause of a worker, a
//!   killed worker's kill plus a session timeout, the start of the last
//!   worker process's first member), every item of the set is claimed
//!   again within [`partition_bound`]: reported per item; an item not
//!   claimed again while the members ran on past the bound is a violation,
//!   and so is a member that could not own and claim its share within the
//!   bound at the end (`final not`);
//! * [`members_end_closed`] (P3, the log's half): every member of a worker
//!   that ended cleanly was closed (`closed`) or failed; the nodes left
//!   (party nodes, lock nodes) are the coordinator's leak checks.
//!
//! Line formats (`O`, in the worker logs):
//!
//! * `O pid t start member settle-ms items` — a member starts (`items`
//!   joined by `,`); `O pid t failed member kind` — it could not be built
//!   or started; `O pid t closed member ok|kind` — it was closed.
//! * `O pid t ev member session at state detail` — an event (`at`: its
//!   instant, wall-clock ns; `session` the client's as it was received,
//!   hex): `state` `allocating` (`detail` `joining`, `settling`,
//!   `releasing`, `acquiring`, `taken`), `acquired` (`detail` the share,
//!   `-` when empty), `release` (`membership`, `lost:ITEM`), `suspended`,
//!   `stuck` (`detail` the item), `failure` (`session-lost`, `closed`, ...).
//! * `O pid t claim member session item token lo hi` — a claim.
//! * `O pid t final ok|not share`, `O pid t settled` — after the writers
//!   were told to stop, whether the member owned its share and claimed each
//!   item of it within the bound; `O pid t stop`.

use super::LineHistory as _;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::history::{Fields, History};

/// The bound within which every item is owned and claimed again after the
/// last fault heals, for a session timeout of `session_ns` and a settle
/// time of `settle_ns`: `settle + session + (session + 2 s)`. Derived:
/// after a heal a member's client sees its dead connection and connects
/// again within a connection timeout (the workers': one session), on its
/// session (its locks proven, `Acquired` again) or a new one (the member
/// failed, a new one joins: a party change); every member then settles for
/// the settle time and takes its share, the old owners having released at
/// once (`auto_release`); the margin of a session and 2 s covers a change
/// seen late (a cache's watch re-registered after its own reconnect) and
/// the round trips.
///
/// # Examples
///
/// ```
/// // 3 s sessions and a settle time of 500 ms: 8.5 s.
/// assert_eq!(zk_campaign::checker::partition_bound(3_000_000_000, 500_000_000), 8_500_000_000);
/// ```
pub fn partition_bound(session_ns: u64, settle_ns: u64) -> u64 {
    settle_ns + 2 * session_ns + 2_000_000_000
}

/// A claim.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) member: String,
    /// The client's session (hex) when it claimed.
    pub(crate) session: String,
    pub(crate) item: String,
    pub(crate) token: i64,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) line: String,
}

/// An event of a member.
#[derive(Debug, Clone)]
pub(crate) struct Ev {
    pub(crate) at: u64,
    pub(crate) state: String,
    /// The state's detail (`membership`, `lost:ITEM`, a share, `-`).
    pub(crate) detail: String,
}

/// One member.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemberRec {
    pub(crate) pid: u32,
    pub(crate) start: u64,
    pub(crate) settle_ns: u64,
    pub(crate) events: Vec<Ev>,
    pub(crate) closed: bool,
}

/// What the partitioner kind logged.
#[derive(Debug, Default)]
pub(crate) struct PartHistory {
    pub(crate) members: BTreeMap<String, MemberRec>,
    pub(crate) claims: Vec<Claim>,
    pub(crate) items: BTreeSet<String>,
    /// `final` lines: (pid, t, ok, share).
    pub(crate) finals: Vec<(u32, u64, bool, String)>,
    /// The latest time an `O` line says.
    pub(crate) last_t: u64,
}

impl super::LineHistory for PartHistory {
    fn line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        if f.kind()? != "O" {
            return None;
        }
        let pid: u32 = f.num(1)?;
        let t: u64 = f.num(2)?;
        self.last_t = self.last_t.max(t);
        match f.str(3)? {
            "start" => {
                let settle_ms: u64 = f.num(5)?;
                self.items.extend(f.str(6)?.split(',').map(String::from));
                let m = self.members.entry(f.string(4)?).or_default();
                m.pid = pid;
                m.start = t;
                m.settle_ns = settle_ms * 1_000_000;
            }
            "ev" => {
                let at = f.num(6)?;
                let state = f.string(7)?;
                let detail = f.string(8)?;
                let m = self.members.entry(f.string(4)?).or_default();
                m.pid = pid;
                m.events.push(Ev { at, state, detail });
            }
            "claim" => self.claims.push(Claim {
                member: f.string(4)?,
                session: f.string(5)?,
                item: f.string(6)?,
                token: f.num(7)?,
                lo: f.num(8)?,
                hi: f.num(9)?,
                line: line.to_string(),
            }),
            "closed" => self.members.entry(f.string(4)?).or_default().closed = true,
            "final" => self.finals.push((pid, t, f.str(4)? == "ok", f.string(5)?)),
            "failed" | "settled" | "stop" => {}
            _ => return None,
        }
        Some(())
    }
}

impl PartHistory {
    /// Whether `member` was told anything but `Acquired` at an instant in
    /// `(from, to)`.
    fn told_between(&self, member: &str, from: u64, to: u64) -> bool {
        self.members.get(member).is_some_and(|m| {
            m.events
                .iter()
                .any(|e| e.state != "acquired" && e.at > from && e.at < to)
        })
    }

    /// The claims by item, each item's sorted by start.
    fn by_item(&self) -> BTreeMap<&str, Vec<&Claim>> {
        let mut m: BTreeMap<&str, Vec<&Claim>> = BTreeMap::new();
        for c in &self.claims {
            m.entry(c.item.as_str()).or_default().push(c);
        }
        for list in m.values_mut() {
            list.sort_by_key(|c| (c.lo, c.hi));
        }
        m
    }
}

/// At most this many violations of one rule are listed per item (the rest
/// are counted).
const PER_ITEM: usize = 5;

/// What P1 found besides its violations.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct OwnerStats {
    /// Owner runs judged (a member's claims of one item with one token and
    /// nothing told between them).
    pub(crate) runs: usize,
    /// Conflicts excused as fenced (see [`fenced`]), and the longest time
    /// the old owner went on claiming after the newer one's first claim.
    pub(crate) fenced: usize,
    pub(crate) fenced_max_ns: u64,
}

/// Whether a conflict between `old` (the smaller token) and `new` is
/// *fenced*, as rule 1's overlaps are: the server expired `old`'s session
/// at once (`I`), or an operator deleted its lock node of the item (`B`),
/// before `new`'s claim ended (no client can learn of either before its
/// notification arrives, and the next owner may be granted meanwhile); the
/// old member was told afterwards (an event other than `Acquired`), and
/// nothing between its last `Acquired` and its claim (a member that was
/// told it may not own, and claims all the same, is never excused); and
/// its token is the smaller, so that a store fencing by token refuses it.
fn fenced(h: &History, p: &PartHistory, old: &Claim, new: &Claim) -> bool {
    if old.token >= new.token {
        return false;
    }
    let undoubted = p.members.get(&old.member).is_some_and(|m| {
        m.events
            .iter()
            .filter(|e| e.at < old.lo)
            .max_by_key(|e| e.at)
            .is_some_and(|e| e.state == "acquired")
    });
    if !undoubted {
        return false;
    }
    let lock_dir = format!("/locks/{}/", old.item);
    let expired = h
        .expiries_of(&old.session)
        .chain(
            h.broken
                .iter()
                .filter(|(s, _, path)| *s == old.session && path.contains(&lock_dir))
                .map(|(_, x, _)| *x),
        )
        .filter(|x| *x < new.hi)
        .min();
    expired.is_some_and(|x| {
        p.members
            .get(&old.member)
            .is_some_and(|m| m.events.iter().any(|e| e.state != "acquired" && e.at > x))
    })
}

/// P1 (see the module).
pub(crate) fn never_owned_twice(h: &History, p: &PartHistory, violations: &mut Vec<String>) -> OwnerStats {
    let mut st = OwnerStats::default();
    let excuse = |old: &Claim, new: &Claim, st: &mut OwnerStats| {
        if fenced(h, p, old, new) {
            st.fenced += 1;
            st.fenced_max_ns = st.fenced_max_ns.max(old.hi.saturating_sub(new.lo));
            true
        } else {
            false
        }
    };
    for (item, list) in p.by_item() {
        let mut found = 0usize;
        // (a) A run of one member's claims with one token and nothing told
        // between: its interior excludes every other member's claim.
        let mut by_member: BTreeMap<&str, Vec<&Claim>> = BTreeMap::new();
        for c in &list {
            by_member.entry(c.member.as_str()).or_default().push(c);
        }
        for (member, mine) in &by_member {
            let mut runs: Vec<(&Claim, &Claim)> = Vec::new();
            for c in mine {
                match runs.last_mut() {
                    Some((_, last)) if last.token == c.token && !p.told_between(member, last.lo, c.hi) => *last = c,
                    _ => runs.push((c, c)),
                }
            }
            for (first, last) in runs {
                if first.hi >= last.lo {
                    continue;
                }
                st.runs += 1;
                let from = list.partition_point(|c| c.lo <= first.hi);
                for c in list[from..].iter().take_while(|c| c.lo < last.lo) {
                    if c.member == *member || c.hi >= last.lo {
                        continue;
                    }
                    let (old, new) = if first.token < c.token { (last, *c) } else { (*c, first) };
                    if excuse(old, new, &mut st) {
                        continue;
                    }
                    found += 1;
                    if found <= PER_ITEM {
                        violations.push(format!(
                            "partition: item {item} owned twice: {} claimed it while {member} owned it with token {} without being told anything between its claims ({} .. {}): {}",
                            c.member, first.token, first.line, last.line, c.line
                        ));
                    }
                }
            }
        }
        // (b) Tokens grow in claim order.
        let mut ended: Vec<&Claim> = list.clone();
        ended.sort_by_key(|c| c.hi);
        let mut k = 0;
        let mut max: Option<&Claim> = None;
        for c in &list {
            while k < ended.len() && ended[k].hi < c.lo {
                if max.map_or(true, |m| ended[k].token > m.token) {
                    max = Some(ended[k]);
                }
                k += 1;
            }
            if let Some(m) = max {
                let back = c.token < m.token && !excuse(c, m, &mut st);
                if back || (c.token == m.token && c.member != m.member) {
                    found += 1;
                    if found <= PER_ITEM {
                        violations.push(format!(
                            "partition: item {item} claimed with token {} after a claim with token {} had ended: {} after {}",
                            c.token, m.token, c.line, m.line
                        ));
                    }
                }
            }
        }
        if found > PER_ITEM {
            violations.push(format!(
                "partition: item {item}: {} more violations of P1 not listed",
                found - PER_ITEM
            ));
        }
    }
    st
}

/// When the last disturbance ended (see the module): the instant from
/// which P2 counts.
pub(crate) fn last_disturbance(h: &History, p: &PartHistory) -> u64 {
    let session = h.session_ns();
    let faults = h.windows().iter().map(|f| f.end.max(f.start)).max().unwrap_or(0);
    let pauses = h.paused.iter().map(|&(_, _, to)| to).max().unwrap_or(0);
    let kills = h.killed.values().map(|k| k + session).max().unwrap_or(0);
    let mut first_member: BTreeMap<u32, u64> = BTreeMap::new();
    for m in p.members.values() {
        let e = first_member.entry(m.pid).or_insert(m.start);
        *e = (*e).min(m.start);
    }
    let joins = first_member.values().copied().max().unwrap_or(0);
    faults.max(pauses).max(kills).max(joins)
}

/// P2 (see the module). Returns, per item, how long after the last
/// disturbance it was claimed again (`None`: not claimed again, and the
/// logs end before the bound: not judged).
pub(crate) fn owned_again_after_faults(
    h: &History,
    p: &PartHistory,
    bound: u64,
    violations: &mut Vec<String>,
) -> BTreeMap<String, Option<u64>> {
    let last = last_disturbance(h, p);
    let by_item = p.by_item();
    let mut out = BTreeMap::new();
    for item in &p.items {
        let first = by_item
            .get(item.as_str())
            .and_then(|l| l.iter().filter(|c| c.lo >= last).map(|c| c.lo).min());
        match first {
            Some(x) if x - last > bound => violations.push(format!(
                "partition: item {item} claimed again {:.0} ms after the last disturbance ended at {last} (bound {:.0} ms)",
                (x - last) as f64 / 1e6,
                bound as f64 / 1e6
            )),
            None if p.last_t > last + bound => violations.push(format!(
                "partition: item {item} never claimed again after the last disturbance ended at {last}, though the members ran {:.0} ms more (bound {:.0} ms)",
                (p.last_t - last) as f64 / 1e6,
                bound as f64 / 1e6
            )),
            _ => {}
        }
        out.insert(item.clone(), first.map(|x| x - last));
    }
    for (pid, t, ok, share) in &p.finals {
        if !ok {
            violations.push(format!(
                "partition: worker {pid} did not own and claim its share ({share}) within {:.0} ms after the writers were told to stop ({t})",
                bound as f64 / 1e6
            ));
        }
    }
    out
}

/// P3, the log's half (see the module): every member of a worker that
/// ended cleanly was closed or failed. Returns the members not closed
/// (their worker killed).
pub(crate) fn members_end_closed(h: &History, p: &PartHistory, violations: &mut Vec<String>) -> usize {
    let mut killed = 0;
    for (name, m) in &p.members {
        let failed = m.events.iter().any(|e| e.state == "failure");
        if m.closed || failed {
            continue;
        }
        if h.exited.contains(&m.pid) {
            violations.push(format!(
                "partition: member {name} of worker {} was never closed, though its worker ended cleanly",
                m.pid
            ));
        } else {
            killed += 1;
        }
    }
    killed
}

/// Each item's longest time between two claims (the end of one, the start
/// of the next): (item, gap, when it began), the longest first. Not a
/// rule: how long the churn left an item unused.
pub(crate) fn longest_gaps(p: &PartHistory) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = p
        .by_item()
        .into_iter()
        .filter_map(|(item, list)| {
            list.windows(2)
                .map(|w| (w[1].lo.saturating_sub(w[0].hi), w[0].hi))
                .max()
                .map(|(gap, at)| (item.to_string(), gap, at))
        })
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Runs P1-P3 and returns the report's lines (empty without the kind).
pub(crate) fn judge(h: &History, violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if h.part_lines.is_empty() {
        return t;
    }
    let (p, bad) = PartHistory::parse(&h.part_lines);
    let settle = p.members.values().map(|m| m.settle_ns).max().unwrap_or(0);
    let bound = partition_bound(h.session_ns(), settle);
    let owners = never_owned_twice(h, &p, violations);
    let again = owned_again_after_faults(h, &p, bound, violations);
    let unclosed = members_end_closed(h, &p, violations);
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for m in p.members.values() {
        for e in &m.events {
            *states.entry(e.state.as_str()).or_default() += 1;
        }
    }
    let tokens: BTreeSet<(&str, i64)> = p.claims.iter().map(|c| (c.item.as_str(), c.token)).collect();
    let mut releases: BTreeMap<&str, usize> = BTreeMap::new();
    for m in p.members.values() {
        for e in m.events.iter().filter(|e| e.state == "release") {
            *releases.entry(e.detail.split(':').next().unwrap_or("?")).or_default() += 1;
        }
    }
    let _ = writeln!(
        t,
        "partition: {} members ({unclosed} left to their killed worker), {} items, {} claims ({} owner runs judged, {} grants claimed), events: {}{}",
        p.members.len(),
        p.items.len(),
        p.claims.len(),
        owners.runs,
        tokens.len(),
        super::tally(&states, "none"),
        if bad > 0 { format!("; unparsed partition lines: {bad}") } else { String::new() }
    );
    let _ = writeln!(
        t,
        "partition claims fenced after an instant expiry or a break of the older owner (its token the smaller, told nothing before its claims and something after): {} (the older owner claimed up to {:.1} ms after the newer one's first claim)",
        owners.fenced,
        owners.fenced_max_ns as f64 / 1e6
    );
    let _ = writeln!(
        t,
        "partition rebalances (Release events): {}; the longest an item went unclaimed: {}",
        super::tally(&releases, "none"),
        longest_gaps(&p)
            .iter()
            .take(3)
            .map(|(item, gap, at)| format!("{item} {:.0} ms from {at}", *gap as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let judged: Vec<u64> = again.values().flatten().copied().collect();
    let _ = writeln!(
        t,
        "partition bound {:.0} ms after the last disturbance ({}): items claimed again {} of {}, the latest after {}{}",
        bound as f64 / 1e6,
        last_disturbance(h, &p),
        judged.len(),
        again.len(),
        judged
            .iter()
            .max()
            .map_or("-".into(), |x| format!("{:.0} ms", *x as f64 / 1e6)),
        if judged.len() < again.len() {
            format!(
                "; not claimed again before the logs end (not judged): {}",
                again
                    .iter()
                    .filter(|(_, v)| v.is_none())
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        t,
        "partition items claimed again (ms after the last disturbance): {}",
        super::tally(
            again
                .iter()
                .map(|(k, v)| (k, v.map_or("-".into(), |x| format!("{:.0}", x as f64 / 1e6)))),
            "none"
        )
    );
    t
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_any;
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1000 * MS;

    fn claim(member: &str, item: &str, token: i64, lo: u64) -> String {
        let pid = &member[1..member.find('-').unwrap_or(member.len())];
        format!("O {pid} {} claim {member} 1a {item} {token} {lo} {}", lo + MS, lo + MS)
    }

    fn ev(member: &str, at: u64, state: &str, detail: &str) -> String {
        let pid = &member[1..member.find('-').unwrap_or(member.len())];
        format!("O {pid} {} ev {member} 1a {at} {state} {detail}", at + MS)
    }

    /// Two members of a two-item set: w7-1 owns a (token 10) and b (11)
    /// alone; w8-1 joins at 5 s, w7-1 is told to release, and w8-1 takes b
    /// (token 20); then a cut 20-21 s, w7-1 suspended and acquired again
    /// with the same tokens; both close at 30 s.
    fn good() -> Vec<String> {
        vec![
            "P session_ms=3000".to_string(),
            format!("F cut {} {} -", 20 * S, 21 * S),
            format!("O 7 {} start w7-1 500 a,b", S),
            ev("w7-1", 2 * S, "acquired", "a,b"),
            claim("w7-1", "a", 10, 2 * S + 10 * MS),
            claim("w7-1", "b", 11, 2 * S + 20 * MS),
            claim("w7-1", "a", 10, 4 * S),
            claim("w7-1", "b", 11, 4 * S + 10 * MS),
            format!("O 8 {} start w8-1 500 a,b", 5 * S),
            ev("w7-1", 5 * S + 5 * MS, "release", "membership"),
            ev("w7-1", 5 * S + 6 * MS, "allocating", "releasing"),
            ev("w7-1", 5 * S + 600 * MS, "allocating", "acquiring"),
            ev("w7-1", 5 * S + 610 * MS, "acquired", "a"),
            ev("w8-1", 5 * S + 620 * MS, "acquired", "b"),
            claim("w7-1", "a", 12, 5 * S + 700 * MS),
            claim("w8-1", "b", 20, 5 * S + 700 * MS),
            claim("w7-1", "a", 12, 19 * S),
            claim("w8-1", "b", 20, 19 * S),
            ev("w7-1", 20 * S + 5 * MS, "suspended", "-"),
            ev("w7-1", 21 * S + 500 * MS, "acquired", "a"),
            claim("w7-1", "a", 12, 21 * S + 600 * MS),
            claim("w8-1", "b", 20, 21 * S + 700 * MS),
            claim("w7-1", "a", 12, 29 * S),
            claim("w8-1", "b", 20, 29 * S),
            format!("O 7 {} final ok a", 29 * S),
            format!("O 8 {} final ok b", 29 * S),
            ev("w7-1", 30 * S, "failure", "closed"),
            format!("O 7 {} closed w7-1 ok", 30 * S),
            format!("O 8 {} closed w8-1 ok", 30 * S),
            "X 7 31000000000".to_string(),
            "X 8 31000000000".to_string(),
        ]
    }

    fn run(lines: &[String]) -> Vec<String> {
        let h = History::from_lines(lines);
        assert_eq!(h.unparsed, 0);
        let (p, bad) = PartHistory::parse(&h.part_lines);
        assert_eq!(bad, 0);
        let mut v = Vec::new();
        never_owned_twice(&h, &p, &mut v);
        owned_again_after_faults(&h, &p, partition_bound(3 * S, 500 * MS), &mut v);
        members_end_closed(&h, &p, &mut v);
        v
    }

    #[test]
    fn a_good_history_passes() {
        assert_eq!(run(&good()), Vec::<String>::new());
        let h = History::from_lines(good());
        let (p, _) = PartHistory::parse(&h.part_lines);
        // Runs: w7-1 a 10, b 11, a 12 (split by the suspension), w8-1 b 20.
        assert_eq!(never_owned_twice(&h, &p, &mut Vec::new()).runs, 5);
        let mut v = Vec::new();
        let again = owned_again_after_faults(&h, &p, partition_bound(3 * S, 500 * MS), &mut v);
        assert_eq!(again["a"], Some(600 * MS));
        assert_eq!(again["b"], Some(700 * MS));
        let text = judge(&h, &mut v);
        assert!(text.contains("items claimed again 2 of 2"), "{text}");
        assert!(text.contains("(Release events): membership 1;"), "{text}");
        // b's longest gap: between w8-1's claims at 5.7 s and 19 s (the
        // hand-over from w7-1, 4.011 s to 5.7 s, is shorter).
        assert_eq!(
            longest_gaps(&p).iter().find(|g| g.0 == "b").map(|g| g.1),
            Some(19 * S - (5 * S + 701 * MS))
        );
    }

    #[test]
    fn a_claim_inside_another_members_ownership_is_flagged() {
        // w8-1 claims a at 10 s while w7-1 owns it (token 12) from 5.7 s
        // to 19 s without being told anything: owned twice; and its token
        // (21, a later grant) is followed by w7-1's 12: out of order.
        let mut l = good();
        l.insert(16, claim("w8-1", "a", 21, 10 * S));
        let v = run(&l);
        assert_any(
            &v,
            "item a owned twice: w8-1 claimed it while w7-1 owned it with token 12",
        );
        assert_any(&v, "item a claimed with token 12 after a claim with token 21");
    }

    #[test]
    fn a_claim_between_two_told_runs_is_not_owned_twice_but_its_token_is_judged() {
        // w8-1's claim of a comes while w7-1 was suspended (told): no
        // double ownership by (a); but w8-1's token 21 then w7-1's 12
        // again is out of order by (b).
        let mut l = good();
        l.insert(20, claim("w8-1", "a", 21, 21 * S));
        let v = run(&l);
        assert!(!v.iter().any(|x| x.contains("owned twice")), "{v:?}");
        assert_any(&v, "item a claimed with token 12 after a claim with token 21");
    }

    #[test]
    fn a_token_going_back_or_shared_by_two_members_is_flagged() {
        // w8-1 claims b with an older token than w7-1's last.
        let mut l = good();
        l[15] = claim("w8-1", "b", 5, 5 * S + 700 * MS);
        l[17] = claim("w8-1", "b", 5, 19 * S);
        l[21] = claim("w8-1", "b", 5, 21 * S + 700 * MS);
        l[23] = claim("w8-1", "b", 5, 29 * S);
        let v = run(&l);
        assert_any(&v, "item b claimed with token 5 after a claim with token 11");
        // w8-1 claims w7-1's very token.
        let mut l = good();
        l[15] = claim("w8-1", "b", 11, 5 * S + 700 * MS);
        let v = run(&l);
        assert_any(&v, "item b claimed with token 11 after a claim with token 11");
    }

    fn claim_in(member: &str, session: &str, item: &str, token: i64, lo: u64) -> String {
        claim(member, item, token, lo).replace(" 1a ", &format!(" {session} "))
    }

    /// The shape of `composed-ensemble --seed 4306`: w7-1 (session 7a)
    /// owns a with token 12; its session is expired at once at 10 s while
    /// it is cut off with a minority node, which still answers it; w8-1 is
    /// granted a (token 21) and claims it from 10.7 s; w7-1 goes on
    /// claiming until 11.5 s and is told at 12 s.
    fn expired_at_once() -> Vec<String> {
        vec![
            "P session_ms=3000".to_string(),
            format!("O 7 {} start w7-1 500 a", S),
            format!("O 8 {} start w8-1 500 a", S),
            ev("w7-1", 2 * S, "acquired", "a"),
            claim_in("w7-1", "7a", "a", 12, 2 * S),
            claim_in("w7-1", "7a", "a", 12, 10 * S + 500 * MS),
            claim_in("w7-1", "7a", "a", 12, 11 * S + 500 * MS),
            format!("I 7a {}", 10 * S),
            ev("w8-1", 10 * S + 600 * MS, "acquired", "a"),
            claim_in("w8-1", "8b", "a", 21, 10 * S + 700 * MS),
            claim_in("w8-1", "8b", "a", 21, 11 * S),
            claim_in("w8-1", "8b", "a", 21, 20 * S),
            ev("w7-1", 12 * S, "suspended", "-"),
            ev("w7-1", 12 * S + 100 * MS, "failure", "session-lost"),
        ]
    }

    #[test]
    fn an_older_owner_expired_at_once_and_told_later_is_fenced_not_owned_twice() {
        let l = expired_at_once();
        assert_eq!(run(&l), Vec::<String>::new());
        let h = History::from_lines(&l);
        let (p, _) = PartHistory::parse(&h.part_lines);
        let st = never_owned_twice(&h, &p, &mut Vec::new());
        assert!(st.fenced >= 2, "{st:?}");
        // w7-1's last claim began 800 ms after w8-1's first claim began.
        assert_eq!(st.fenced_max_ns, 11 * S + 501 * MS - (10 * S + 700 * MS));
        // Without the expiry: owned twice.
        let mut l = expired_at_once();
        l.retain(|x| !x.starts_with("I "));
        assert_any(&run(&l), "item a owned twice");
        // The older owner never told: owned twice.
        let mut l = expired_at_once();
        l.truncate(l.len() - 2);
        assert_any(&run(&l), "item a owned twice");
        // Told it may not own before the expiry, and claiming all the
        // same: never excused.
        let mut l = expired_at_once();
        l.push(ev("w7-1", 9 * S, "suspended", "-"));
        assert_any(&run(&l), "item a owned twice");
        // The expired owner's token the larger: not fenced.
        let l: Vec<String> = expired_at_once()
            .into_iter()
            .map(|x| x.replace(" a 12 ", " a 30 "))
            .collect();
        assert_any(&run(&l), "item a owned twice");
        // An operator's break of its lock node of a excuses as the expiry
        // does; a break of another item's node does not.
        let mut l = expired_at_once();
        l.retain(|x| !x.starts_with("I "));
        l.push(format!(
            "B 7a {} /campaign/partition/locks/b/_c_x-lock-0000000001",
            10 * S
        ));
        assert_any(&run(&l), "item a owned twice");
        let mut l = expired_at_once();
        l.retain(|x| !x.starts_with("I "));
        l.push(format!(
            "B 7a {} /campaign/partition/locks/a/_c_x-lock-0000000001",
            10 * S
        ));
        assert_eq!(run(&l), Vec::<String>::new());
    }

    #[test]
    fn an_item_not_claimed_again_within_the_bound_is_flagged() {
        // b claimed again only 9 s after the cut healed (bound 8.5 s).
        let mut l = good();
        l[21] = claim("w8-1", "b", 20, 30 * S);
        l.remove(23);
        let v = run(&l);
        assert_any(&v, "item b claimed again 9000 ms after the last disturbance");
        // b never claimed again, the members running on 8 s past the bound.
        let mut l = good();
        l.remove(23);
        l.remove(21);
        let v = run(&l);
        assert_any(&v, "item b never claimed again after the last disturbance");
        // A worker that could not own its share at the end.
        let mut l = good();
        l[25] = format!("O 8 {} final not b", 29 * S);
        let v = run(&l);
        assert_any(&v, "worker 8 did not own and claim its share (b)");
    }

    #[test]
    fn the_last_disturbance_counts_kills_pauses_and_late_workers() {
        let mut l = good();
        l.push(format!("K 1 9 {}", 22 * S));
        l.push(format!("Q 7 {} {}", 20 * S, 23 * S));
        let h = History::from_lines(&l);
        let (p, _) = PartHistory::parse(&h.part_lines);
        // The kill at 22 s plus a session.
        assert_eq!(last_disturbance(&h, &p), 25 * S);
        let mut l = good();
        l.push(format!("O 9 {} start w9-1 500 a,b", 26 * S));
        let h = History::from_lines(&l);
        let (p, _) = PartHistory::parse(&h.part_lines);
        assert_eq!(last_disturbance(&h, &p), 26 * S);
    }

    #[test]
    fn a_member_of_a_clean_worker_never_closed_is_flagged() {
        let mut l = good();
        l.retain(|x| !x.contains("closed w8-1"));
        let v = run(&l);
        assert_any(&v, "member w8-1 of worker 8 was never closed");
        // Its worker killed: left to the leak check.
        let mut l = good();
        l.retain(|x| !x.contains("closed w8-1") && !x.starts_with("X 8"));
        assert!(run(&l).is_empty());
    }
}
