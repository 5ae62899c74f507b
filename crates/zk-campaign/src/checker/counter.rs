//! The counter kind's rules (K1 to K3), one function each: every worker's
//! increments of one `DistributedAtomicLong` (`J` lines), judged against
//! each other and the counter's final value. [`judge`] calls them in this
//! order:
//!
//! * [`no_value_applied_twice`] (K1): every increment reported applied went
//!   from `pre` to `pre + 1`; no two increments were told "applied" by an
//!   exact proof (the reply, or the write's own marker) for the same value. Two reports for one value where one at least
//!   is a read-back are the documented bound of `Proof::ReadBack` (the read
//!   cannot tell whose write it saw): counted, not a violation;
//! * [`final_value_counts_the_increments`] (K2): the counter only ever
//!   goes up by one, so each value in `base+1..=final` was written by
//!   exactly one increment: every applied increment's value is in that
//!   range (none lost), and every value in it was either reported applied,
//!   or is the value an increment of unknown outcome carried, or is left to
//!   an increment that never ended (its worker killed): none applied without
//!   being accounted for, none counted twice. This implies
//!   `applied by an exact proof <= final - base <= applied + unknown + unfinished` and
//!   `final - base <= increments attempted`;
//! * [`applied_in_real_time_order`] (K3): an increment applied (either
//!   proof) that returned before another applied one began has the smaller
//!   value (linearizability: a read-back's value was written inside its own
//!   call, so this holds for both proofs).
//!
//! Line formats:
//!
//! * `J pid t begin seq` — increment `seq` of worker `pid` begins.
//! * `J pid t end seq start outcome proof pre post read` — it returned:
//!   `outcome` `applied` (`proof` `reply`, `marker` or `readback`), `notapplied`,
//!   `unknown` (`read`: the value the read-back found, or `-`), or `error`
//!   (`proof` is the error kind; the library documents an error as "nothing
//!   was applied"; `pre`, `post` are `-`). `pre`/`post`: the value read and
//!   the value the (last) write carried.
//! * `J pid t stop` — the worker's incrementer stopped (before the final read).
//! * `J - t base value`, `J - t final value` — `counter-server.log`: the
//!   counter read by the coordinator before the run and after every
//!   incrementer stopped.

use super::LineHistory as _;
use crate::history::Fields;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// One increment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inc {
    pub(crate) start: u64,
    /// When it returned (`None`: never, its worker died first).
    pub(crate) end: Option<u64>,
    pub(crate) outcome: String,
    pub(crate) proof: String,
    pub(crate) pre: Option<i64>,
    pub(crate) post: Option<i64>,
    pub(crate) line: String,
}

/// What the counter kind logged.
#[derive(Debug, Default)]
pub(crate) struct CounterHistory {
    pub(crate) incs: BTreeMap<(u32, u64), Inc>,
    pub(crate) base: Option<i64>,
    pub(crate) fin: Option<i64>,
}

impl super::LineHistory for CounterHistory {
    fn line(&mut self, line: &str) -> Option<()> {
        let f = Fields::new(line);
        if f.kind()? != "J" {
            return None;
        }
        if f.str(1)? == "-" {
            match f.str(3)? {
                "base" => self.base = Some(f.num(4)?),
                "final" => self.fin = Some(f.num(4)?),
                _ => return None,
            }
            return Some(());
        }
        let pid: u32 = f.num(1)?;
        let t: u64 = f.num(2)?;
        match f.str(3)? {
            "begin" => {
                let seq: u64 = f.num(4)?;
                self.incs.insert(
                    (pid, seq),
                    Inc {
                        start: t,
                        outcome: "unfinished".into(),
                        line: line.to_string(),
                        ..Inc::default()
                    },
                );
            }
            "end" => {
                let seq: u64 = f.num(4)?;
                let inc = self.incs.entry((pid, seq)).or_default();
                inc.start = f.num(5)?;
                inc.end = Some(t);
                inc.outcome = f.string(6)?;
                inc.proof = f.string(7)?;
                inc.pre = f.num(8);
                inc.post = f.num(9);
                inc.line = line.to_string();
            }
            "stop" | "failed" => {}
            _ => return None,
        }
        Some(())
    }
}

fn applied(h: &CounterHistory) -> impl Iterator<Item = &Inc> {
    h.incs.values().filter(|i| i.outcome == "applied")
}

/// K1: every applied increment went from `pre` to `pre + 1`, and no value
/// was reported applied by an exact proof (reply or marker) twice. Returns the values reported applied
/// more than once with a read-back among the reports (the documented bound).
pub(crate) fn no_value_applied_twice(h: &CounterHistory, violations: &mut Vec<String>) -> usize {
    let mut by_value: BTreeMap<i64, Vec<&Inc>> = BTreeMap::new();
    for i in applied(h) {
        match (i.pre, i.post) {
            (Some(pre), Some(post)) if pre.checked_add(1) == Some(post) => by_value.entry(post).or_default().push(i),
            _ => violations.push(format!(
                "counter: an increment applied, not from n to n + 1: {}",
                i.line
            )),
        }
    }
    let mut shared = 0;
    for (v, list) in &by_value {
        if list.len() < 2 {
            continue;
        }
        // A reply and a marker are exact: they prove the increment was this
        // worker's own.
        let replies: Vec<&&Inc> = list
            .iter()
            .filter(|i| i.proof == "reply" || i.proof == "marker")
            .collect();
        if replies.len() > 1 {
            violations.push(format!(
                "counter: value {v} reported applied by an exact proof {} times (one increment applied twice, or the counter went back): {}",
                replies.len(),
                replies.iter().map(|i| i.line.as_str()).collect::<Vec<_>>().join(" | ")
            ));
        } else {
            shared += 1;
        }
    }
    shared
}

/// K2: the final value accounts for every increment (see the module).
/// Returns (values covered by an unknown increment, by an unfinished one).
pub(crate) fn final_value_counts_the_increments(h: &CounterHistory, violations: &mut Vec<String>) -> (usize, usize) {
    let (Some(fin), base) = (h.fin, h.base.unwrap_or(0)) else {
        return (0, 0);
    };
    let mut reported: HashMap<i64, usize> = HashMap::new();
    for i in applied(h) {
        let Some(p) = i.post else { continue };
        if p <= base || p > fin {
            violations.push(format!(
                "counter: an increment reported applied with value {p}, outside {}..={fin} (base {base}, final {fin}): lost or invented: {}",
                base + 1,
                i.line
            ));
        }
        *reported.entry(p).or_default() += 1;
    }
    let mut unknown: HashMap<i64, usize> = HashMap::new();
    for i in h.incs.values().filter(|i| i.outcome == "unknown") {
        if let Some(p) = i.post {
            *unknown.entry(p).or_default() += 1;
        }
    }
    let unfinished = h.incs.values().filter(|i| i.end.is_none()).count();
    let (mut by_unknown, mut left) = (0usize, Vec::new());
    for v in base + 1..=fin {
        if reported.contains_key(&v) {
            continue;
        }
        if unknown.contains_key(&v) {
            by_unknown += 1;
        } else {
            left.push(v);
        }
    }
    if left.len() > unfinished {
        let errors = h.incs.values().filter(|i| i.outcome == "error").count();
        let notapplied = h.incs.values().filter(|i| i.outcome == "notapplied").count();
        violations.push(format!(
            "counter: final value {fin} (base {base}): {} values written by no increment reported applied or unknown, and only {unfinished} increments never ended (errors {errors}, not applied {notapplied}, which the library says wrote nothing); the first: {:?}",
            left.len(),
            &left[..left.len().min(10)]
        ));
    }
    let attempted = h.incs.len() as i64;
    if fin - base > attempted {
        violations.push(format!(
            "counter: final value {fin} is {} increments past the base {base}, more than the {attempted} attempted",
            fin - base
        ));
    }
    (by_unknown, left.len())
}

/// K3: applied increments in real-time order have increasing values.
pub(crate) fn applied_in_real_time_order(h: &CounterHistory, violations: &mut Vec<String>) {
    let mut done: Vec<(u64, i64, &str)> = applied(h)
        .filter_map(|i| Some((i.end?, i.post?, i.line.as_str())))
        .collect();
    done.sort();
    let mut begun: Vec<(u64, i64, &str)> = applied(h)
        .filter_map(|i| Some((i.start, i.post?, i.line.as_str())))
        .collect();
    begun.sort();
    let mut k = 0;
    let mut max: Option<(i64, &str)> = None;
    for (start, post, line) in begun {
        while k < done.len() && done[k].0 < start {
            if max.is_none() || max.is_some_and(|(m, _)| done[k].1 > m) {
                max = Some((done[k].1, done[k].2));
            }
            k += 1;
        }
        if let Some((m, before)) = max {
            if post <= m {
                violations.push(format!(
                    "counter: increment to {post} began after an increment to {m} had returned applied: {line} after {before}"
                ));
            }
        }
    }
}

/// Runs K1-K3 on the counter lines and returns the report's lines (empty
/// without a counter).
pub(crate) fn judge<S: AsRef<str>>(lines: &[S], violations: &mut Vec<String>) -> String {
    let mut t = String::new();
    if lines.is_empty() {
        return t;
    }
    let (h, bad) = CounterHistory::parse(lines);
    let shared = no_value_applied_twice(&h, violations);
    let (by_unknown, by_unfinished) = final_value_counts_the_increments(&h, violations);
    applied_in_real_time_order(&h, violations);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for i in h.incs.values() {
        let k = match i.outcome.as_str() {
            "applied" => format!("applied by {}", i.proof),
            "error" => format!("error {}", i.proof),
            o => o.to_string(),
        };
        *counts.entry(k).or_default() += 1;
    }
    let _ = writeln!(
        t,
        "counter: {} increments ({}); base {}, final {}{}",
        h.incs.len(),
        super::tally(&counts, ""),
        h.base.map_or("-".into(), |v| v.to_string()),
        h.fin.map_or("not read".into(), |v| v.to_string()),
        if bad > 0 {
            format!("; unparsed counter lines: {bad}")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        t,
        "counter values accounted for by an unknown increment: {by_unknown}, left to increments that never ended: {by_unfinished}; values reported applied twice with a read-back among them (Proof::ReadBack's bound): {shared}"
    );
    t
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_any;
    use super::*;

    fn run(lines: &[&str]) -> Vec<String> {
        let (h, bad) = CounterHistory::parse(lines);
        assert_eq!(bad, 0);
        let mut v = Vec::new();
        no_value_applied_twice(&h, &mut v);
        final_value_counts_the_increments(&h, &mut v);
        applied_in_real_time_order(&h, &mut v);
        v
    }

    /// Three increments in turn, then a lost reply proven by read-back, an
    /// unknown one that was applied and one of a killed worker that was too.
    const GOOD: [&str; 14] = [
        "J - 1 base 0",
        "J 7 10 begin 1",
        "J 7 20 end 1 10 applied reply 0 1 -",
        "J 8 15 begin 1",
        "J 8 30 end 1 15 applied reply 1 2 -",
        "J 7 40 begin 2",
        "J 7 50 end 2 40 applied readback 2 3 -",
        "J 8 60 begin 2",
        "J 8 70 end 2 60 unknown - 3 4 5",
        "J 7 61 begin 3",
        "J 7 69 end 3 61 error ZooKeeper.ConnectionLoss - - -",
        "J 9 62 begin 1",
        "J 7 80 end 4 75 notapplied - 4 4 -",
        "J - 99 final 5",
    ];

    #[test]
    fn a_good_history_passes() {
        assert_eq!(run(&GOOD), Vec::<String>::new());
    }

    #[test]
    fn two_replies_for_one_value_are_flagged() {
        let mut l = GOOD.to_vec();
        l[4] = "J 8 30 end 1 15 applied reply 0 1 -";
        let v = run(&l);
        assert_any(&v, "reported applied by an exact proof 2 times");
    }

    #[test]
    fn a_read_back_sharing_a_value_is_the_documented_bound() {
        let mut l = GOOD.to_vec();
        l[6] = "J 7 50 end 2 40 applied readback 1 2 -";
        l[13] = "J - 99 final 4";
        let (h, _) = CounterHistory::parse(&l);
        let mut v = Vec::new();
        assert_eq!(no_value_applied_twice(&h, &mut v), 1);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn an_increment_by_two_is_flagged() {
        let mut l = GOOD.to_vec();
        l[2] = "J 7 20 end 1 10 applied reply 0 2 -";
        assert!(run(&l).iter().any(|v| v.contains("not from n to n + 1")));
    }

    #[test]
    fn an_applied_increment_beyond_the_final_value_is_lost() {
        let mut l = GOOD.to_vec();
        l[13] = "J - 99 final 2";
        let v = run(&l);
        assert_any(&v, "outside 1..=2");
    }

    #[test]
    fn a_value_no_increment_accounts_for_is_flagged() {
        // No worker killed: the fifth value was written by an increment
        // reported not applied or failed (or twice by one).
        let mut l = GOOD.to_vec();
        l.remove(11);
        let v = run(&l);
        assert_any(&v, "1 values written by no increment");
        // Or the unknown one did not carry that value.
        let mut l = GOOD.to_vec();
        l[8] = "J 8 70 end 2 60 unknown - 2 3 5";
        let v = run(&l);
        assert_any(&v, "2 values written by no increment");
    }

    #[test]
    fn more_applications_than_attempts_are_flagged() {
        let v = run(&[
            "J - 1 base 0",
            "J 7 10 begin 1",
            "J 7 20 end 1 10 applied reply 0 1 -",
            "J - 99 final 3",
        ]);
        assert_any(&v, "more than the 1 attempted");
    }

    #[test]
    fn an_increment_out_of_real_time_order_is_flagged() {
        let v = run(&[
            "J - 1 base 0",
            "J 7 10 begin 1",
            "J 7 20 end 1 10 applied reply 1 2 -",
            "J 8 30 begin 1",
            "J 8 40 end 1 30 applied readback 0 1 -",
            "J - 99 final 2",
        ]);
        assert_any(&v, "began after an increment to 2");
    }
}
