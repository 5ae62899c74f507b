//! The cache kind's rules (C1 to C5), one function each: what each worker's
//! `CuratorCache` on the campaign's cache subtree told (`Y` lines), judged
//! against what the writers did (`G` lines) and the server's final subtree
//! (`U`/`T` lines, `cache-server.log`). [`judge`] calls them in this order:
//!
//! * [`replay_gives_the_view`] (C1): a cache's node events, replayed from an
//!   empty view, apply (a `created` only for an absent path, a `changed` or
//!   `deleted` whose old node is what was shown) and give its dumped view;
//! * [`current_view_is_the_servers`] (C2): a cache that ended current shows
//!   exactly the server's final subtree (path, czxid, mzxid, data hash);
//! * [`nothing_invented`] (C3): every node state a cache showed is one a
//!   writer made (a create's czxid, a set's mzxid, with that data);
//! * [`live_events_in_zxid_order`] (C4): between an `initialized` and the next
//!   re-synchronisation, the zxids of the states told (a created or changed
//!   node's mzxid) never go back;
//! * [`no_silent_recreation`] (C5): a node shown with one czxid and later
//!   with another was shown `deleted` between the two.
//!
//! Line formats (see [`crate::history`] for the rest):
//!
//! * `Y pid t start root` — the cache started on `root`.
//! * `Y pid t created path czxid mzxid version hash`, `Y pid t deleted path
//!   czxid mzxid version hash`, `Y pid t changed path czxid mzxid version hash
//!   czxid mzxid version hash` (old, then new) — node events, in the order
//!   received; `hash` is the data's FNV-1a 64 in hex.
//! * `Y pid t initialized`, `Y pid t freshness current|stale|resyncing`,
//!   `Y pid t failed error-kind`.
//! * `Y pid t view path czxid mzxid version hash` — the final view, one line
//!   per node, after the cache was closed and its channel drained; then
//!   `Y pid t end settled nodes freshness`: `settled` is `current` when the
//!   cache was current (after the writers stopped) when it was closed,
//!   `stale` when it could not become current in time (its view is then
//!   checked by C1, C3 to C5, not by C2).
//! * `G pid t create path outcome czxid mzxid version hash`, `G pid t set path
//!   outcome czxid mzxid version hash`, `G pid t delete path outcome zxid`,
//!   `G pid t end` — the writers' calls (one request each, no retry): outcome
//!   `ok` or an error kind (then the stat is `-`: the write may or may not
//!   have happened); `hash` is the data sent; a delete's zxid is the client's
//!   last zxid after the reply (informative). A create or set is announced
//!   first, `G pid t begin path hash`: one announced and never answered (its
//!   worker was killed -9 during the call) may or may not have happened, as
//!   one that failed (older logs have no `begin` lines).
//! * `U t count` then `T path czxid mzxid version hash` — the server's final
//!   subtree, read by the coordinator after every writer stopped.

use super::LineHistory as _;
use crate::history::Fields;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

/// A node as shown or read: its stat fields and data hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) czxid: i64,
    pub(crate) mzxid: i64,
    pub(crate) version: i32,
    pub(crate) hash: String,
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "czxid {:#x} mzxid {:#x} v{} data {}",
            self.czxid, self.mzxid, self.version, self.hash
        )
    }
}

/// One cache event, with its log line for evidence.
#[derive(Debug, Clone)]
pub(crate) enum Ev {
    Created(String, Node),
    Changed(String, Node, Node),
    Deleted(String, Node),
    Initialized,
    Freshness(String),
    Failed,
}

/// What one worker's cache logged.
#[derive(Debug, Default)]
pub(crate) struct CacheLog {
    pub(crate) root: String,
    /// Events in order, each with its line.
    pub(crate) events: Vec<(Ev, String)>,
    /// The dumped view, if the worker got to its end.
    pub(crate) view: Option<BTreeMap<String, Node>>,
    /// Whether it ended current (`end current`).
    pub(crate) settled: bool,
    pub(crate) end_line: String,
}

/// The writers' log: every state they made, and the writes whose outcome is
/// unknown.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// (path, czxid, mzxid, hash) of every successful create and set.
    pub(crate) states: HashSet<(String, i64, i64, String)>,
    /// (path, hash) of every write that failed with an error (it may have
    /// happened).
    pub(crate) unknown: HashSet<(String, String)>,
    /// The czxids each path was created with, in log order.
    pub(crate) creations: HashMap<String, Vec<i64>>,
    /// Each writer's create or set announced (`begin`) and not answered
    /// yet: (path, hash), by pid. What is left at the end was in flight when
    /// its worker was killed, and is moved to `unknown`.
    pub(crate) pending: HashMap<u32, (String, String)>,
    pub(crate) counts: BTreeMap<String, usize>,
}

/// Everything the cache rules read.
#[derive(Debug, Default)]
pub(crate) struct CacheHistory {
    pub(crate) caches: BTreeMap<u32, CacheLog>,
    pub(crate) writes: Writes,
    /// The server's final subtree, if the coordinator read it.
    pub(crate) server: Option<BTreeMap<String, Node>>,
}

/// The errors that say a write certainly did not happen.
const DEFINITE: [&str; 3] = ["ZooKeeper.NodeExists", "ZooKeeper.NoNode", "ZooKeeper.BadVersion"];

/// The node in fields `at` to `at + 3` (czxid, mzxid, version, hash).
fn node(f: &Fields<'_>, at: usize) -> Option<Node> {
    Some(Node {
        czxid: f.num(at)?,
        mzxid: f.num(at + 1)?,
        version: f.num(at + 2)?,
        hash: f.string(at + 3)?,
    })
}

impl super::LineHistory for CacheHistory {
    fn line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        match f.kind()? {
            "Y" => self.cache_line(&f, line)?,
            "G" => self.writer_line(&f)?,
            "U" => {
                self.server.get_or_insert_with(BTreeMap::new);
            }
            "T" => {
                self.server
                    .get_or_insert_with(BTreeMap::new)
                    .insert(f.string(1)?, node(&f, 2)?);
            }
            _ => return None,
        }
        Some(())
    }
}

impl CacheHistory {
    /// A `Y` line: a cache's start, event, final view or end.
    fn cache_line(&mut self, f: &Fields<'_>, line: &str) -> Option<()> {
        let pid: u32 = f.num(1)?;
        let c = self.caches.entry(pid).or_default();
        let ev = match f.str(3)? {
            "start" => {
                c.root = f.string(4)?;
                return Some(());
            }
            "created" => Ev::Created(f.string(4)?, node(f, 5)?),
            "deleted" => Ev::Deleted(f.string(4)?, node(f, 5)?),
            "changed" => Ev::Changed(f.string(4)?, node(f, 5)?, node(f, 9)?),
            "initialized" => Ev::Initialized,
            "freshness" => Ev::Freshness(f.string(4)?),
            "failed" => Ev::Failed,
            "view" => {
                c.view
                    .get_or_insert_with(BTreeMap::new)
                    .insert(f.string(4)?, node(f, 5)?);
                return Some(());
            }
            "end" => {
                c.view.get_or_insert_with(BTreeMap::new);
                c.settled = f.str(4)? == "current";
                c.end_line = line.to_string();
                return Some(());
            }
            _ => return None,
        };
        c.events.push((ev, line.to_string()));
        Some(())
    }

    /// A `G` line: a writer's call announced, or answered (counted by kind
    /// and outcome).
    fn writer_line(&mut self, f: &Fields<'_>) -> Option<()> {
        let op = f.str(3)?;
        let pid: u32 = f.num(1)?;
        if op == "begin" {
            self.writes.pending.insert(pid, (f.string(4)?, f.string(5)?));
            return Some(());
        }
        let key = match f.str(5) {
            Some(outcome) => format!("{op} {outcome}"),
            None => op.to_string(),
        };
        *self.writes.counts.entry(key).or_default() += 1;
        match op {
            "create" | "set" => {
                self.writes.pending.remove(&pid);
                let path = f.string(4)?;
                let hash = f.string(9)?;
                let outcome = f.str(5)?;
                if outcome == "ok" {
                    let n = node(f, 6)?;
                    if op == "create" {
                        self.writes.creations.entry(path.clone()).or_default().push(n.czxid);
                    }
                    self.writes.states.insert((path, n.czxid, n.mzxid, hash));
                } else if !DEFINITE.contains(&outcome) {
                    self.writes.unknown.insert((path, hash));
                }
            }
            "delete" | "end" => {}
            _ => return None,
        }
        Some(())
    }
}

/// The cache's name in a violation.
fn who(pid: u32) -> String {
    format!("cache of pid {pid}")
}

/// C1: the node events, replayed from an empty view, apply and give the
/// dumped view (when there is one). Every event that does not apply is a
/// violation (and is applied anyway, so that one mistake is reported once).
pub(crate) fn replay_gives_the_view(pid: u32, c: &CacheLog, violations: &mut Vec<String>) {
    let mut view: BTreeMap<String, Node> = BTreeMap::new();
    for (ev, line) in &c.events {
        match ev {
            Ev::Created(p, n) => {
                if let Some(was) = view.get(p) {
                    violations.push(format!(
                        "cache replay: {} created {p} while it showed it ({was}): {line}",
                        who(pid)
                    ));
                }
                view.insert(p.clone(), n.clone());
            }
            Ev::Changed(p, old, new) => {
                match view.get(p) {
                    Some(was) if was == old => {}
                    Some(was) => violations.push(format!(
                        "cache replay: {} changed {p} from {old} while it showed {was}: {line}",
                        who(pid)
                    )),
                    None => violations.push(format!(
                        "cache replay: {} changed {p}, which it did not show: {line}",
                        who(pid)
                    )),
                }
                view.insert(p.clone(), new.clone());
            }
            Ev::Deleted(p, old) => {
                match view.get(p) {
                    Some(was) if was == old => {}
                    Some(was) => violations.push(format!(
                        "cache replay: {} deleted {p} as {old} while it showed {was}: {line}",
                        who(pid)
                    )),
                    None => violations.push(format!(
                        "cache replay: {} deleted {p}, which it did not show: {line}",
                        who(pid)
                    )),
                }
                view.remove(p);
            }
            _ => {}
        }
    }
    let Some(dump) = &c.view else { return };
    for (p, d) in differences(dump, &view, |n, r| r == n) {
        violations.push(match d {
            Diff::Other(n, r) => format!(
                "cache replay: {}'s final view has {p} as {n}, its events give {r}",
                who(pid)
            ),
            Diff::Missing(n) => format!(
                "cache replay: {}'s final view has {p} ({n}), its events do not",
                who(pid)
            ),
            Diff::Extra(r) => format!(
                "cache replay: {}'s events give {p} ({r}), its final view does not have it",
                who(pid)
            ),
        });
    }
}

/// How view `b` differs from view `a` at one path.
enum Diff<'v> {
    /// `a`'s node and `b`'s, not the same.
    Other(&'v Node, &'v Node),
    /// `a`'s node; `b` has none there.
    Missing(&'v Node),
    /// `b`'s node; `a` has none there.
    Extra(&'v Node),
}

/// Where view `b` differs from view `a`: `a`'s paths first (in order) whose
/// node `b` shows otherwise (not `same`) or not at all, then the paths only
/// `b` has.
fn differences<'v>(
    a: &'v BTreeMap<String, Node>,
    b: &'v BTreeMap<String, Node>,
    same: impl Fn(&Node, &Node) -> bool,
) -> Vec<(&'v str, Diff<'v>)> {
    let mut out = Vec::new();
    for (p, n) in a {
        match b.get(p) {
            Some(r) if same(n, r) => {}
            Some(r) => out.push((p.as_str(), Diff::Other(n, r))),
            None => out.push((p.as_str(), Diff::Missing(n))),
        }
    }
    for (p, r) in b {
        if !a.contains_key(p) {
            out.push((p.as_str(), Diff::Extra(r)));
        }
    }
    out
}

/// C2: a cache that ended current shows exactly the server's final subtree.
/// Returns whether it was judged (it ended current and the server was read).
pub(crate) fn current_view_is_the_servers(
    pid: u32,
    c: &CacheLog,
    server: Option<&BTreeMap<String, Node>>,
    violations: &mut Vec<String>,
) -> bool {
    let (Some(dump), Some(server), true) = (&c.view, server, c.settled) else {
        return false;
    };
    let same = |s: &Node, n: &Node| n.czxid == s.czxid && n.mzxid == s.mzxid && n.hash == s.hash;
    for (p, d) in differences(server, dump, same) {
        violations.push(match d {
            Diff::Other(s, n) => format!(
                "cache final view: {} ended current with {p} as {n}, the server has {s} ({})",
                who(pid),
                c.end_line
            ),
            Diff::Missing(s) => format!(
                "cache final view: {} ended current without {p}, the server has {s} ({})",
                who(pid),
                c.end_line
            ),
            Diff::Extra(n) => format!(
                "cache final view: {} ended current with {p} ({n}), the server does not have it ({})",
                who(pid),
                c.end_line
            ),
        });
    }
    true
}

/// C3: every node state a cache showed (created, changed to, or in its final
/// view) below its root is one a writer made: a successful create's
/// (czxid, mzxid = czxid, data) or a successful set's (czxid, mzxid, data).
/// A state with the data of a write whose outcome is unknown (an error
/// reply: it may have happened, its stat is not known) is excused, and
/// counted. Returns the number excused.
pub(crate) fn nothing_invented(pid: u32, c: &CacheLog, w: &Writes, violations: &mut Vec<String>) -> usize {
    let mut excused = 0;
    let mut judge = |p: &str, n: &Node, line: &str| {
        if p == c.root {
            return;
        }
        if w.states.contains(&(p.to_string(), n.czxid, n.mzxid, n.hash.clone())) {
            return;
        }
        if w.unknown.contains(&(p.to_string(), n.hash.clone())) {
            excused += 1;
            return;
        }
        violations.push(format!(
            "cache invented: {} showed {p} as {n}, which no writer made: {line}",
            who(pid)
        ));
    };
    for (ev, line) in &c.events {
        match ev {
            Ev::Created(p, n) | Ev::Changed(p, _, n) => judge(p, n, line),
            _ => {}
        }
    }
    if let Some(dump) = &c.view {
        for (p, n) in dump {
            judge(p, n, "final view");
        }
    }
    excused
}

/// C4: between an `initialized` and the next re-synchronisation (a
/// `freshness resyncing`, an `initialized` or a `failed`), the zxids of the
/// live events never go back. An event is judged at the zxid of the state it
/// shows: a created node's `mzxid` (its `czxid`, unless the cache read it
/// only after it had been set again: a creation and the sets after it that
/// no read saw apart are one `created`, told in the place of the last of
/// them), a changed node's new `mzxid` (deletions carry no zxid of their
/// own). The events before the first `initialized`, and those a re-read
/// tells just before its `initialized`, are differences, not live events:
/// not judged. Returns the `created` events whose `czxid` is below the zxid
/// of an event told before them (coalesced creations: in order by their
/// state's zxid, not by their creation's), and the first such line.
pub(crate) fn live_events_in_zxid_order(
    pid: u32,
    c: &CacheLog,
    violations: &mut Vec<String>,
) -> (usize, Option<String>) {
    let mut live = false;
    let mut last: Option<(i64, &str)> = None;
    let mut coalesced = (0, None);
    for (ev, line) in &c.events {
        let (z, created_at) = match ev {
            Ev::Initialized => {
                live = true;
                last = None;
                continue;
            }
            Ev::Freshness(f) if f == "resyncing" => {
                live = false;
                continue;
            }
            Ev::Failed => {
                live = false;
                continue;
            }
            Ev::Created(_, n) => (n.mzxid, Some(n.czxid)),
            Ev::Changed(_, _, n) => (n.mzxid, None),
            _ => continue,
        };
        if !live {
            continue;
        }
        if let Some((prev, prev_line)) = last {
            if z < prev {
                violations.push(format!(
                    "cache zxid order: {} told zxid {z:#x} after {prev:#x}: {line} after {prev_line}",
                    who(pid)
                ));
            } else if created_at.is_some_and(|cz| cz < prev) {
                coalesced.0 += 1;
                if coalesced.1.is_none() {
                    coalesced.1 = Some(format!("{line} after {prev_line}"));
                }
            }
        }
        last = Some((z, line));
    }
    coalesced
}

/// C5: a node the cache showed with one czxid and later with another (it
/// was deleted and created again) was shown `deleted` between the two:
/// never a `changed` across czxids, never a `created` over a node still
/// shown. Returns the number of re-creations the cache showed (with a
/// `deleted` between) whose both czxids the writers' log has.
pub(crate) fn no_silent_recreation(pid: u32, c: &CacheLog, w: &Writes, violations: &mut Vec<String>) -> usize {
    let mut shown: HashMap<&str, (i64, &str)> = HashMap::new();
    let mut gone: HashMap<&str, i64> = HashMap::new();
    let mut seen = 0;
    let logged = |p: &str, a: i64, b: i64| w.creations.get(p).is_some_and(|v| v.contains(&a) && v.contains(&b));
    for (ev, line) in &c.events {
        match ev {
            Ev::Created(p, n) => {
                if let Some((old, old_line)) = shown.get(p.as_str()) {
                    if *old != n.czxid {
                        violations.push(format!(
                            "cache silent re-creation: {} showed {p} created with czxid {:#x} while it showed czxid {old:#x}, no deleted between: {line} after {old_line}",
                            who(pid),
                            n.czxid
                        ));
                    }
                } else if let Some(old) = gone.remove(p.as_str()) {
                    if old != n.czxid && logged(p, old, n.czxid) {
                        seen += 1;
                    }
                }
                shown.insert(p, (n.czxid, line));
            }
            Ev::Changed(p, old, new) => {
                if old.czxid != new.czxid {
                    violations.push(format!(
                        "cache silent re-creation: {} changed {p} from czxid {:#x} to {:#x}, no deleted between: {line}",
                        who(pid),
                        old.czxid,
                        new.czxid
                    ));
                }
                shown.insert(p, (new.czxid, line));
            }
            Ev::Deleted(p, n) => {
                shown.remove(p.as_str());
                gone.insert(p, n.czxid);
            }
            _ => {}
        }
    }
    seen
}

/// Runs C1 to C5 on every cache; returns the report's lines.
pub(crate) fn judge<S: AsRef<str>>(lines: &[S], violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if lines.is_empty() {
        return t;
    }
    let (mut h, bad) = CacheHistory::parse(lines);
    // A write announced and never answered: its worker was killed during
    // the call; it may have happened.
    let unfinished: Vec<(String, String)> = h.writes.pending.drain().map(|(_, w)| w).collect();
    if !unfinished.is_empty() {
        h.writes.counts.insert("unanswered (killed)".into(), unfinished.len());
    }
    h.writes.unknown.extend(unfinished);
    let events: usize = h
        .caches
        .values()
        .map(|c| c.events.iter().filter(|(e, _)| !matches!(e, Ev::Freshness(_))).count())
        .sum();
    let inits: usize = h
        .caches
        .values()
        .map(|c| c.events.iter().filter(|(e, _)| matches!(e, Ev::Initialized)).count())
        .sum();
    let (mut current, mut stale, mut no_dump, mut excused, mut recreations) = (0, 0, 0, 0, 0);
    let (mut coalesced, mut first_coalesced) = (0, None);
    for (pid, c) in &h.caches {
        replay_gives_the_view(*pid, c, violations);
        if current_view_is_the_servers(*pid, c, h.server.as_ref(), violations) {
            current += 1;
        } else if c.view.is_some() {
            stale += 1;
        } else {
            no_dump += 1;
        }
        excused += nothing_invented(*pid, c, &h.writes, violations);
        let (n, first) = live_events_in_zxid_order(*pid, c, violations);
        coalesced += n;
        if first_coalesced.is_none() {
            first_coalesced = first;
        }
        recreations += no_silent_recreation(*pid, c, &h.writes, violations);
    }
    let _ = writeln!(
        t,
        "caches: {} ({events} node events, {inits} initialized; ended current and judged against the server {current}, ended not current {stale}, no final view (killed) {no_dump}); server's final subtree: {}",
        h.caches.len(),
        h.server.as_ref().map_or("not read".to_string(), |s| format!("{} nodes", s.len()))
    );
    let _ = writeln!(
        t,
        "cache writes: {}; re-creations shown with a deleted between: {recreations}; states excused (data of a write with an unknown outcome): {excused}{}",
        super::tally(&h.writes.counts, "none"),
        if bad > 0 { format!("; unparsed cache lines: {bad}") } else { String::new() }
    );
    if let Some(first) = first_coalesced {
        let _ = writeln!(
            t,
            "cache creations told after a later zxid than their czxid (a create and later sets read as one created, in order by the state's mzxid): {coalesced}, the first: {first}"
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_any;
    use super::*;

    const W: [&str; 6] = [
        "G 9 1 create /c/a ok 10 10 0 h1",
        "G 9 2 set /c/a ok 10 12 1 h2",
        "G 9 3 delete /c/a ok 13",
        "G 9 4 create /c/a ok 14 14 0 h3",
        "G 9 5 create /c/b ok 11 11 0 hb",
        "G 9 6 set /c/b ConnectionLoss - - - hx",
    ];

    fn hist(lines: &[&str]) -> CacheHistory {
        let all: Vec<&str> = W.iter().copied().chain(lines.iter().copied()).collect();
        let (h, bad) = CacheHistory::parse(&all);
        assert_eq!(bad, 0);
        h
    }

    fn run(lines: &[&str], f: impl Fn(u32, &CacheLog, &CacheHistory, &mut Vec<String>)) -> Vec<String> {
        let h = hist(lines);
        let mut v = Vec::new();
        for (pid, c) in &h.caches {
            f(*pid, c, &h, &mut v);
        }
        v
    }

    /// A cache that saw every write, in order, and ended current with the
    /// server's view: no rule has anything to say.
    const GOOD: [&str; 12] = [
        "Y 7 1 start /c",
        "Y 7 2 created /c 2 2 0 h0",
        "Y 7 3 initialized",
        "Y 7 4 freshness current",
        "Y 7 5 created /c/a 10 10 0 h1",
        "Y 7 6 created /c/b 11 11 0 hb",
        "Y 7 7 changed /c/a 10 10 0 h1 10 12 1 h2",
        "Y 7 8 deleted /c/a 10 12 1 h2",
        "Y 7 9 created /c/a 14 14 0 h3",
        "Y 7 10 view /c 2 2 0 h0",
        "Y 7 10 view /c/a 14 14 0 h3",
        "Y 7 10 view /c/b 11 11 0 hb",
    ];

    fn good_with(extra: &[&'static str]) -> Vec<&'static str> {
        GOOD.iter().copied().chain(extra.iter().copied()).collect()
    }

    const SERVER: [&str; 4] = ["U 20 3", "T /c 2 2 0 h0", "T /c/a 14 14 0 h3", "T /c/b 11 11 0 hb"];

    #[test]
    fn a_faithful_cache_breaks_no_rule() {
        let mut lines = good_with(&["Y 7 11 end current 3 current"]);
        lines.extend(SERVER);
        let mut v = Vec::new();
        let text = judge(&lines.iter().chain(W.iter()).collect::<Vec<_>>(), &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert!(text.contains("ended current and judged against the server 1"), "{text}");
        assert!(text.contains("re-creations shown with a deleted between: 1"), "{text}");
    }

    #[test]
    fn c1_replay_catches_a_created_over_a_shown_node_and_a_wrong_old() {
        // Created for a path already shown.
        let v = run(
            &["Y 7 1 created /c/b 11 11 0 hb", "Y 7 2 created /c/b 11 11 0 hb"],
            |p, c, _, v| replay_gives_the_view(p, c, v),
        );
        assert_any(&v, "created /c/b while it showed it");
        // Changed whose old is not what was shown.
        let v = run(
            &[
                "Y 7 1 created /c/a 10 10 0 h1",
                "Y 7 2 changed /c/a 10 11 0 hz 10 12 1 h2",
            ],
            |p, c, _, v| replay_gives_the_view(p, c, v),
        );
        assert_any(&v, "changed /c/a from");
        // Deleted of a node not shown.
        let v = run(&["Y 7 1 deleted /c/a 10 10 0 h1"], |p, c, _, v| {
            replay_gives_the_view(p, c, v)
        });
        assert_any(&v, "which it did not show");
    }

    #[test]
    fn c1_replay_catches_a_final_view_its_events_do_not_give() {
        // The dump lacks /c/b and shows /c/a at an older state.
        let v = run(
            &[
                "Y 7 1 created /c/a 10 10 0 h1",
                "Y 7 2 created /c/b 11 11 0 hb",
                "Y 7 3 changed /c/a 10 10 0 h1 10 12 1 h2",
                "Y 7 4 view /c/a 10 10 0 h1",
                "Y 7 4 end current 1 current",
            ],
            |p, c, _, v| replay_gives_the_view(p, c, v),
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("final view has /c/a as czxid 0xa mzxid 0xa"), "{v:?}");
        assert!(v[1].contains("give /c/b"), "{v:?}");
    }

    #[test]
    fn c2_catches_a_current_cache_that_differs_from_the_server() {
        let mut lines = good_with(&["Y 7 11 end current 3 current"]);
        // The server has /c/a changed once more and /c/b gone.
        lines.extend(["U 20 2", "T /c 2 2 0 h0", "T /c/a 14 15 1 h4"]);
        let v = run(&lines, |p, c, h, v| {
            assert!(current_view_is_the_servers(p, c, h.server.as_ref(), v));
        });
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("with /c/a as czxid 0xe mzxid 0xe"), "{v:?}");
        assert!(v[1].contains("with /c/b (czxid 0xb"), "{v:?}");
        // The same view, ended stale: not judged.
        let mut lines = good_with(&["Y 7 11 end stale 3 stale"]);
        lines.extend(["U 20 2", "T /c 2 2 0 h0", "T /c/a 14 15 1 h4"]);
        let v = run(&lines, |p, c, h, v| {
            assert!(!current_view_is_the_servers(p, c, h.server.as_ref(), v));
        });
        assert!(v.is_empty());
        // Without a server read: not judged.
        let v = run(&good_with(&["Y 7 11 end current 3 current"]), |p, c, h, v| {
            assert!(!current_view_is_the_servers(p, c, h.server.as_ref(), v));
        });
        assert!(v.is_empty());
    }

    #[test]
    fn c3_catches_a_state_no_writer_made() {
        let v = run(
            &[
                "Y 7 1 start /c",
                "Y 7 1 created /c 2 2 0 h0",
                // The right czxid with a made-up mzxid.
                "Y 7 2 created /c/a 10 11 0 h1",
                // The data of another state.
                "Y 7 3 created /c/b 11 11 0 h1",
                // The data of a set whose outcome is unknown: excused.
                "Y 7 4 changed /c/b 11 11 0 h1 11 16 1 hx",
                "Y 7 5 view /c/a 99 99 0 h9",
            ],
            |p, c, h, v| {
                assert_eq!(nothing_invented(p, c, &h.writes, v), 1);
            },
        );
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v[0].contains("/c/a as czxid 0xa mzxid 0xb"), "{v:?}");
        assert!(v[1].contains("/c/b as czxid 0xb mzxid 0xb v0 data h1"), "{v:?}");
        assert!(v[2].contains("final view"), "{v:?}");
    }

    #[test]
    fn c3_excuses_a_write_announced_and_never_answered_but_not_one_answered() {
        // Writer 9 announced a create of /c/d with data hd and was killed -9
        // before its answer: the state may exist. The answered begin/create
        // pair before it leaves nothing pending.
        let shown = [
            "Y 7 1 start /c",
            "Y 7 2 created /c 2 2 0 h0",
            "Y 7 3 created /c/e 20 20 0 he",
            "Y 7 4 created /c/d 21 21 0 hd",
        ];
        let writes = [
            "G 9 7 begin /c/e he",
            "G 9 8 create /c/e ok 20 20 0 he",
            "G 9 9 begin /c/d hd",
        ];
        let all: Vec<&str> = writes.iter().chain(shown.iter()).copied().collect();
        let mut v = Vec::new();
        let text = judge(&all, &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert!(text.contains("unanswered (killed) 1"), "{text}");
        assert!(
            text.contains("states excused (data of a write with an unknown outcome): 1"),
            "{text}"
        );
        // Without the begin line (older logs, or a writer that never sent
        // it), the same state is invented.
        let all: Vec<&str> = writes[..2].iter().chain(shown.iter()).copied().collect();
        let mut v = Vec::new();
        judge(&all, &mut v);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("cache invented") && v[0].contains("/c/d"), "{v:?}");
    }

    #[test]
    fn c4_catches_live_events_out_of_zxid_order() {
        let v = run(
            &[
                // Before the first initialized: a read, any order.
                "Y 7 1 created /c/b 11 11 0 hb",
                "Y 7 2 created /c/a 10 10 0 h1",
                "Y 7 3 initialized",
                "Y 7 4 changed /c/a 10 10 0 h1 10 12 1 h2",
                "Y 7 5 deleted /c/b 11 11 0 hb",
                "Y 7 6 created /c/b 11 11 0 hb",
            ],
            |p, c, _, v| {
                live_events_in_zxid_order(p, c, v);
            },
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("told zxid 0xb after 0xc"), "{v:?}");
        // A creation read after a later set (one created at mzxid 0xc,
        // czxid 0xa) told after a change at 0xb: in order by its state,
        // counted; the same told after 0xd is a violation.
        let v = run(
            &[
                "Y 7 1 initialized",
                "Y 7 2 changed /c/b 11 11 0 hb 11 11 1 hb",
                "Y 7 3 created /c/a 10 12 1 h2",
                "Y 7 4 changed /c/b 11 11 1 hb 11 13 2 hb",
                "Y 7 5 created /c/x 10 12 1 h2",
            ],
            |p, c, _, v| {
                let (n, first) = live_events_in_zxid_order(p, c, v);
                assert_eq!(n, 1);
                assert!(first.unwrap().contains("created /c/a"));
            },
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("told zxid 0xc after 0xd"), "{v:?}");
        // A re-read's differences (after resyncing) are not live events.
        let v = run(
            &[
                "Y 7 1 initialized",
                "Y 7 2 changed /c/a 10 10 0 h1 10 12 1 h2",
                "Y 7 3 freshness resyncing",
                "Y 7 4 created /c/b 11 11 0 hb",
                "Y 7 5 initialized",
                "Y 7 6 created /c/x 5 5 0 hx",
            ],
            |p, c, _, v| {
                live_events_in_zxid_order(p, c, v);
            },
        );
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn c5_catches_a_re_creation_told_as_a_change() {
        let v = run(
            &[
                "Y 7 1 created /c/a 10 12 1 h2",
                "Y 7 2 changed /c/a 10 12 1 h2 14 14 0 h3",
            ],
            |p, c, h, v| {
                no_silent_recreation(p, c, &h.writes, v);
            },
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("from czxid 0xa to 0xe"), "{v:?}");
        // A created over the old node, never deleted.
        let v = run(
            &["Y 7 1 created /c/a 10 12 1 h2", "Y 7 2 created /c/a 14 14 0 h3"],
            |p, c, h, v| {
                no_silent_recreation(p, c, &h.writes, v);
            },
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("while it showed czxid 0xa"), "{v:?}");
        // With the deleted between: a re-creation seen, no violation.
        let v = run(
            &[
                "Y 7 1 created /c/a 10 12 1 h2",
                "Y 7 2 deleted /c/a 10 12 1 h2",
                "Y 7 3 created /c/a 14 14 0 h3",
            ],
            |p, c, h, v| {
                assert_eq!(no_silent_recreation(p, c, &h.writes, v), 1);
            },
        );
        assert!(v.is_empty(), "{v:?}");
    }
}
