//! The reconfigurable ensemble's end-of-run check (E1, `--reconfigurable`):
//! the servers are replaced during the run, and the workers' clients follow
//! `/zookeeper/config` (`ensemble_tracker`); at the end, every worker that
//! ended cleanly must be connected to a member of the final configuration,
//! and its server list must name only final members (never a server
//! removed). [`judge`] calls [`connected_to_final_members`].
//!
//! Line formats:
//!
//! * `EM t added ID ADDR`, `EM t removed ID ADDR` — the coordinator: a server
//!   added to or removed from the configuration (a `rolling-replace` step;
//!   also a step that failed halfway);
//! * `EM t final ADDR,ADDR,... [VERSION]` — the members of the final
//!   configuration and its version (hex), read from the servers after every
//!   fault healed, before the workers were told to stop;
//! * `EW pid t waited-ns connected list [version]` — a worker at its end,
//!   after it waited (at most a bound: the tracker's delay, two sessions and
//!   2 s) for its client to be connected to a final member with only final
//!   members listed: the server it is connected to (`-`: none), its server
//!   list (joined by `,`) and the version of the configuration its tracker
//!   applied last (hex, `-`: none), as they were then.
//!
//! A removed server's address is one logged `removed` that is not a final
//! member's (a port freed by a removed server may be picked again for a new
//! one: the client knows servers by address only).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use super::LineHistory as _;
use crate::history::{Fields, History};

/// A worker's client at its end (an `EW` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    /// How long it waited for its client to settle (ns).
    pub(crate) waited: u64,
    /// The server it was connected to (`None`: not connected).
    pub(crate) connected: Option<String>,
    /// Its server list.
    pub(crate) list: Vec<String>,
    /// The configuration its tracker applied last (hex; `None`: none, or
    /// older logs).
    pub(crate) version: Option<String>,
}

/// What the reconfigurable ensemble's lines say.
#[derive(Debug, Default)]
pub(crate) struct EnsembleHistory {
    /// Servers added: (id, address).
    pub(crate) added: Vec<(u64, String)>,
    /// Servers removed: (id, address).
    pub(crate) removed: Vec<(u64, String)>,
    /// The final members' addresses (`None`: not logged).
    pub(crate) finals: Option<Vec<String>>,
    /// The final configuration's version (hex), when logged.
    pub(crate) final_version: Option<String>,
    /// Each worker's end, by pid.
    pub(crate) ends: BTreeMap<u32, End>,
}

impl super::LineHistory for EnsembleHistory {
    fn line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        match f.kind()? {
            "EM" => {
                let _t: u64 = f.num(1)?;
                match f.str(2)? {
                    "added" => self.added.push((f.num(3)?, f.string(4)?)),
                    "removed" => self.removed.push((f.num(3)?, f.string(4)?)),
                    "final" => {
                        self.finals = Some(split_list(f.str(3)?));
                        self.final_version = f.string(4);
                    }
                    _ => return None,
                }
            }
            "EW" => {
                let pid: u32 = f.num(1)?;
                let _t: u64 = f.num(2)?;
                let end = End {
                    waited: f.num(3)?,
                    connected: Some(f.string(4)?).filter(|c| c != "-"),
                    list: split_list(f.str(5).unwrap_or("")),
                    version: f.string(6).filter(|v| v != "-"),
                };
                self.ends.insert(pid, end);
            }
            _ => return None,
        }
        Some(())
    }
}

/// `a,b,c` as a list (an empty field: none).
fn split_list(s: &str) -> Vec<String> {
    s.split(',').filter(|a| !a.is_empty()).map(String::from).collect()
}

/// What E1 found besides its violations.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct EndStats {
    /// Workers judged (those that ended cleanly, and any that said where
    /// they were).
    pub(crate) judged: usize,
    /// Of those, connected to a final member with only final members listed.
    pub(crate) settled: usize,
    /// The longest a worker waited for that (ns).
    pub(crate) longest_wait: u64,
}

/// **E1.** Every worker that ended cleanly (`exited`), and every worker
/// that logged its end, was connected at its end to a member of the final
/// configuration, and its server list named final members only: a worker
/// not connected, connected to a removed server (or any that is not a final
/// member), listing a removed server (or any other that is not a final
/// member), or with an empty list, is a violation; so is a worker that
/// ended cleanly without saying where it was. Nothing is judged without the
/// final members (`None`).
pub(crate) fn connected_to_final_members(
    e: &EnsembleHistory,
    exited: &HashSet<u32>,
    violations: &mut Vec<String>,
) -> Option<EndStats> {
    let finals = e.finals.as_ref()?;
    let removed: BTreeSet<&str> = e
        .removed
        .iter()
        .map(|(_, a)| a.as_str())
        .filter(|a| !finals.iter().any(|f| f == a))
        .collect();
    let what = |a: &str| {
        if removed.contains(a) {
            "a removed server"
        } else {
            "not a final member"
        }
    };
    let finals_said = match &e.final_version {
        Some(v) => format!("{} (config 0x{v})", finals.join(",")),
        None => finals.join(","),
    };
    let pids: BTreeSet<u32> = exited.iter().copied().chain(e.ends.keys().copied()).collect();
    let mut stats = EndStats::default();
    for pid in pids {
        stats.judged += 1;
        let Some(end) = e.ends.get(&pid) else {
            violations.push(format!(
                "ensemble: worker {pid} ended without saying where its client was at the end (no EW line; final members {finals_said})"
            ));
            continue;
        };
        stats.longest_wait = stats.longest_wait.max(end.waited);
        let list = format!(
            "{}{}",
            end.list.join(","),
            end.version
                .as_ref()
                .map_or(String::new(), |v| format!(", from config 0x{v}"))
        );
        let mut fine = true;
        match &end.connected {
            None => {
                fine = false;
                violations.push(format!(
                    "ensemble: worker {pid} ended not connected to any server after waiting {:.1} ms (final members {finals_said}; its server list {list})",
                    end.waited as f64 / 1e6
                ));
            }
            Some(c) if !finals.contains(c) => {
                fine = false;
                violations.push(format!(
                    "ensemble: worker {pid} ended connected to {c}, {} (final members {finals_said}; its server list {list})",
                    what(c)
                ));
            }
            Some(_) => {}
        }
        if end.list.is_empty() {
            fine = false;
            violations.push(format!("ensemble: worker {pid} ended with an empty server list"));
        }
        let stale: Vec<&str> = end
            .list
            .iter()
            .map(String::as_str)
            .filter(|a| !finals.iter().any(|f| f == a))
            .collect();
        for kind in ["a removed server", "not a final member"] {
            let named: Vec<&str> = stale.iter().copied().filter(|a| what(a) == kind).collect();
            if !named.is_empty() {
                fine = false;
                violations.push(format!(
                    "ensemble: worker {pid}'s server list at its end names {} ({}; final members {finals_said})",
                    named.join(","),
                    if kind == "a removed server" {
                        "removed servers"
                    } else {
                        "not final members"
                    }
                ));
            }
        }
        stats.settled += usize::from(fine);
    }
    Some(stats)
}

/// The reconfigurable ensemble's rule and its report lines (nothing without
/// its lines).
pub(crate) fn judge(h: &History, violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if h.ensemble_lines.is_empty() {
        return t;
    }
    let (e, bad) = EnsembleHistory::parse(&h.ensemble_lines);
    let _ = writeln!(
        t,
        "ensemble: {} servers added, {} removed{}",
        e.added.len(),
        e.removed.len(),
        if bad > 0 {
            format!("; unparsed ensemble lines: {bad}")
        } else {
            String::new()
        }
    );
    match (connected_to_final_members(&e, &h.exited, violations), &e.finals) {
        (Some(s), Some(finals)) => {
            let _ = writeln!(
                t,
                "end-of-run connection check: final members {}{}; {} of {} workers connected to a final member with only final members listed (longest wait {:.1} ms), {} not",
                finals.join(","),
                e.final_version.as_ref().map_or(String::new(), |v| format!(" (config 0x{v})")),
                s.settled,
                s.judged,
                s.longest_wait as f64 / 1e6,
                s.judged - s.settled
            );
        }
        _ => {
            let _ = writeln!(
                t,
                "end-of-run connection check: not done (the final members were not logged)"
            );
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "127.0.0.1:1001";
    const B: &str = "127.0.0.1:1002";
    const C: &str = "127.0.0.1:1003";
    const D: &str = "127.0.0.1:2001";
    const E: &str = "127.0.0.1:2002";
    const F: &str = "127.0.0.1:2003";

    /// Servers 1-3 (A, B, C) replaced by 4-6 (D, E, F).
    fn history(ends: &[String]) -> EnsembleHistory {
        let mut lines: Vec<String> = vec![
            format!("EM 10 added 4 {D}"),
            format!("EM 11 removed 1 {A}"),
            format!("EM 20 added 5 {E}"),
            format!("EM 21 removed 2 {B}"),
            format!("EM 30 added 6 {F}"),
            format!("EM 31 removed 3 {C}"),
            format!("EM 40 final {D},{E},{F} 300000009"),
        ];
        lines.extend(ends.iter().cloned());
        let (h, bad) = EnsembleHistory::parse(&lines);
        assert_eq!(bad, 0);
        h
    }

    fn judge_ends(ends: &[String], exited: &[u32]) -> (Vec<String>, Option<EndStats>) {
        let h = history(ends);
        let mut v = Vec::new();
        let exited: HashSet<u32> = exited.iter().copied().collect();
        let s = connected_to_final_members(&h, &exited, &mut v);
        (v, s)
    }

    #[test]
    fn every_worker_on_a_final_member_passes() {
        let (v, s) = judge_ends(
            &[
                format!("EW 7 50 1000000 {D} {E},{D},{F}"),
                format!("EW 8 50 0 {F} {F},{E},{D}"),
            ],
            &[7, 8],
        );
        assert_eq!(v, Vec::<String>::new());
        assert_eq!(
            s,
            Some(EndStats {
                judged: 2,
                settled: 2,
                longest_wait: 1_000_000
            })
        );
    }

    /// Each way a worker's end can fall short, one row each: its `EW` line
    /// (or none), and what the violation says.
    #[test]
    fn a_worker_not_on_the_final_members_is_flagged() {
        let table: &[(Option<String>, &str)] = &[
            (None, "worker 7 ended without saying where its client was"),
            (
                Some(format!("EW 7 50 9000000000 - {D},{E},{F}")),
                "worker 7 ended not connected to any server after waiting 9000.0 ms",
            ),
            (
                Some(format!("EW 7 50 9000000000 {A} {A},{B},{C}")),
                "worker 7 ended connected to 127.0.0.1:1001, a removed server",
            ),
            // The versions say where the tracker stopped.
            (
                Some(format!("EW 7 50 9000000000 {A} {A},{B},{C} 100000003")),
                "a removed server (final members 127.0.0.1:2001,127.0.0.1:2002,127.0.0.1:2003 (config 0x300000009); its server list 127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003, from config 0x100000003)",
            ),
            (
                Some(format!("EW 7 50 9000000000 {A} {A},{B},{C}")),
                "server list at its end names 127.0.0.1:1001,127.0.0.1:1002,127.0.0.1:1003 (removed servers",
            ),
            // Connected to a new one, but the list kept an old one.
            (
                Some(format!("EW 7 50 9000000000 {D} {D},{E},{C}")),
                "server list at its end names 127.0.0.1:1003 (removed servers",
            ),
            (
                Some(format!("EW 7 50 9000000000 127.0.0.1:9 {D},{E},{F}")),
                "ended connected to 127.0.0.1:9, not a final member",
            ),
            (
                Some(format!("EW 7 50 9000000000 {D} {D},127.0.0.1:9")),
                "names 127.0.0.1:9 (not final members",
            ),
            (
                Some(format!("EW 7 50 9000000000 {D} ")),
                "worker 7 ended with an empty server list",
            ),
        ];
        for (line, what) in table {
            let ends: Vec<String> = line.iter().cloned().collect();
            let (v, s) = judge_ends(&ends, &[7]);
            assert!(v.iter().any(|x| x.contains(what)), "{line:?}: {v:#?}");
            let s = s.expect("judged");
            assert_eq!((s.judged, s.settled), (1, 0), "{line:?}");
        }
    }

    #[test]
    fn a_port_reused_by_a_final_member_is_a_member_and_unjudged_without_finals() {
        // A removed server's port picked again for a new member.
        let (h, _) = EnsembleHistory::parse(&[
            format!("EM 11 removed 1 {A}"),
            format!("EM 30 added 6 {A}"),
            format!("EM 40 final {A},{E}"),
            format!("EW 7 50 0 {A} {A},{E}"),
        ]);
        let mut v = Vec::new();
        let s = connected_to_final_members(&h, &HashSet::from([7]), &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.map(|s| s.settled), Some(1));
        // No final members logged: nothing judged, nothing flagged.
        let (h, _) = EnsembleHistory::parse(&[format!("EW 7 50 0 {A} {A}")]);
        let mut v = Vec::new();
        assert_eq!(connected_to_final_members(&h, &HashSet::from([7]), &mut v), None);
        assert!(v.is_empty());
    }

    #[test]
    fn the_report_says_the_check_and_its_figures() {
        let mut lines = vec!["H 7 0 1".to_string(), "X 7 99".to_string()];
        lines.extend([
            format!("EM 11 removed 1 {A}"),
            format!("EM 10 added 4 {D}"),
            format!("EM 40 final {D}"),
            format!("EW 7 50 2500000 {D} {D}"),
        ]);
        let h = History::from_lines(&lines);
        assert_eq!(h.unparsed, 0);
        let mut v = Vec::new();
        let text = judge(&h, &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert!(text.contains("ensemble: 1 servers added, 1 removed"), "{text}");
        assert!(
            text.contains("1 of 1 workers connected to a final member with only final members listed (longest wait 2.5 ms), 0 not"),
            "{text}"
        );
        // Without the final members: said, not judged.
        let h = History::from_lines(["H 7 0 1", "X 7 99", "EM 11 removed 1 127.0.0.1:1"]);
        let text = judge(&h, &mut v);
        assert!(text.contains("not done"), "{text}");
        assert!(v.is_empty());
        // No ensemble lines at all: no report lines.
        assert_eq!(judge(&History::from_lines(["H 7 0 1"]), &mut v), "");
    }
}
