//! Rules 8 to 10: the claims a holder was given after its section was cut
//! short (the `C` lines, see [`crate::history`]).
//!
//! A section stands for the claims its holder was given while it worked: the
//! grant, and a `check()` that said `Ok` every 5 ms until the first sign of
//! doubt; rule 1 judges that interval. A holder told that it may have lost
//! its lock does not stop listening at that first doubt: it watches its lock
//! (events, `status()`, `check()`) until it is lost or its watch ends, as an
//! application waiting for `Reconnected` would, and logs each run of claims
//! it is given meanwhile (a `Reconnected` or `Leader { term }` event, a
//! `check()` that says `Ok`, a `Held` status). Each such claim is judged on
//! its own, against every other holder:
//!
//! * [`claims_inside_other_sections`] (rule 8): no claim falls inside another
//!   holder's exclusive section on the same lock (from its grant to its
//!   effective end), unless both are reads;
//! * [`claims_out_of_token_order`] (rule 9): tokens and terms only grow in
//!   claim order on a lock: no claim is for a token smaller than one already
//!   granted to another holder that excludes it (a `Leader` event with an
//!   older term than another leader's is the latch's case);
//! * [`claimed_tokens_never_go_back`] (rule 10): a holder's own claims never
//!   name a smaller token than it was granted or claimed before.
//!
//! A claim happened at some instant the worker can only bound (before and
//! after a call; between the last moment its event channel was seen empty and
//! the event's receipt). The rules are lenient about that: a single claim is
//! judged inside a section only if its whole bound is, and out of order only
//! if the other grant came before its bound began. The claims between the
//! first and the last of a span (polled every 5 ms with no doubt between
//! them) are judged as one interval, as a section is.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::{tally, views_by_lock, View};
use crate::history::{describe_holder, ClaimRec, History, SectionKey};

/// For each section with claim spans: when its last claim began, and
/// whether its holder was still told it holds when it stopped watching (its
/// last span ended with `end`: it released in certainty).
pub(super) fn regained(h: &History) -> HashMap<SectionKey, (u64, bool)> {
    let mut m: HashMap<SectionKey, (u64, bool)> = HashMap::new();
    for c in &h.claims {
        let e = m.entry(c.key()).or_insert((0, false));
        if c.last.0 >= e.0 {
            *e = (c.last.0, c.ended == "end");
        }
    }
    m
}

/// Whether holders in these two modes exclude each other (all but two reads).
fn excludes(a: &str, b: &str) -> bool {
    !(a == "read" && b == "read")
}

/// Whether a claim and a section belong to the same attempt (a holder is
/// never judged against itself; a multi-lock's members are one attempt).
fn same_attempt(c: &ClaimRec, s: &crate::history::SecRec) -> bool {
    (c.pid, c.thr, c.att) == (s.pid, s.thr, s.att)
}

/// Rule 1's fenced excuse, for a claim span: the claimant heard of a loss
/// at all, its token is smaller than the other holder's, and before the
/// span's last claim the server expired its session at once (`I`), or an
/// operator deleted its node (`B`) *while the span went on* (after its first
/// claim began: the holder was certain again, working, when its node was
/// broken, and its notification was on its way). A node broken before the
/// span began excuses nothing: the holder was in doubt then, and a claim
/// after it is the library saying it holds a lock that was gone (the bug
/// these rules are for).
fn fenced(h: &History, c: &ClaimRec, claimant: Option<&View<'_>>, other_token: i64) -> bool {
    let Some(v) = claimant.filter(|v| v.told_any && c.token < other_token) else {
        return false;
    };
    h.expiries_of(&c.sid).any(|x| x <= c.last.1)
        || h.breaks_of(&c.sid, &v.s.node).any(|x| c.first.0 <= x && x <= c.last.1)
}

/// When the server let section `s`'s lock go behind its holder's back, if
/// it did: the first operator break of its node (`B`) or instant expiry of
/// its session (`I`) after its grant.
fn let_go(h: &History, s: &crate::history::SecRec) -> Option<u64> {
    h.breaks_of(&s.sid, &s.node)
        .chain(h.expiries_of(&s.sid))
        .filter(|x| *x >= s.start)
        .min()
}

/// The sections of each lock that exclude someone for a while (non-empty:
/// their effective end after their grant), sorted by grant.
fn exclusive_sections<'v, 'a>(views: &'v [View<'a>]) -> BTreeMap<&'a str, Vec<&'v View<'a>>> {
    views_by_lock(views.iter().filter(|v| v.eff > v.s.start))
}

/// The views by their section's key.
fn views_by_key<'v, 'a>(views: &'v [View<'a>]) -> HashMap<SectionKey, &'v View<'a>> {
    views
        .iter()
        .map(|v| ((v.s.pid, v.s.thr, v.s.att, v.s.lock.clone()), v))
        .collect()
}

/// `[pid P thread T attempt A mode token N session S]` of a claim.
fn describe(c: &ClaimRec) -> String {
    describe_holder((c.pid, c.thr, c.att), &c.mode, c.token, &c.sid)
}

/// Rule 8: no claim falls inside another holder's exclusive section on the
/// same lock (reads excepted), from its grant to its effective end (or to
/// the break of its node, or the instant expiry of its session, when one
/// came first: the server had let its lock go then). A claim
/// is inside when its whole bound is (first or last claim of a span), or
/// when the span's interior (from the first claim's end to the last claim's
/// start) meets the section. Returns the spans judged and those excused as
/// fenced; one violation per span at most (its first offended section).
pub(super) fn claims_inside_other_sections(
    h: &History,
    views: &[View<'_>],
    violations: &mut Vec<String>,
) -> (u64, u64) {
    let by_lock = exclusive_sections(views);
    let by_key = views_by_key(views);
    let (mut judged, mut excused) = (0u64, 0u64);
    for c in &h.claims {
        judged += 1;
        let Some(list) = by_lock.get(c.lock.as_str()) else {
            continue;
        };
        // A section excludes others until its effective end, or until its
        // node was broken or its session expired at once, whichever came
        // first: from then on the server had let its lock go, and its
        // overlap with the next holder is rule 1's (fenced) business.
        let end = |v: &View<'_>| v.eff.min(let_go(h, v.s).unwrap_or(u64::MAX));
        let within = |v: &View<'_>, (lo, hi): (u64, u64)| v.s.start <= lo && hi < end(v);
        let offended = list.iter().find(|v| {
            !same_attempt(c, v.s)
                && excludes(&c.mode, &v.s.mode)
                && (within(v, c.first)
                    || within(v, c.last)
                    || (c.count >= 2 && c.first.1.max(v.s.start) < c.last.0.min(end(v))))
        });
        let Some(v) = offended else { continue };
        if fenced(h, c, by_key.get(&c.key()).copied(), v.s.token) {
            excused += 1;
            continue;
        }
        violations.push(format!(
            "claim inside another's section on {}: {} was told it holds ({}, {} claims from {}..{} to {}..{}, then {}) \
             while {} held it [{}..{}]",
            c.lock,
            describe(c),
            c.what,
            c.count,
            c.first.0,
            c.first.1,
            c.last.0,
            c.last.1,
            c.ended,
            v.s.describe(),
            v.s.start,
            v.eff
        ));
    }
    (judged, excused)
}

/// Rule 9: tokens (a leader's terms) only grow in claim order on each lock.
/// A claim for token `t` is out of order when another holder that excludes
/// the claimant had been granted a larger token before the claim's bound
/// began: by a non-empty section's grant, or by a claim span of its own (a
/// latch that led again in a new term), certain by the end of its first
/// claim's bound. One violation per span at most (the earliest such grant).
pub(super) fn claims_out_of_token_order(h: &History, views: &[View<'_>], violations: &mut Vec<String>) {
    // Per lock: (certainly granted by, token, who, mode, attempt).
    type Grant = (u64, i64, String, String, (u32, u32, u64));
    let mut grants: BTreeMap<&str, Vec<Grant>> = BTreeMap::new();
    for v in views.iter().filter(|v| v.eff > v.s.start) {
        grants.entry(v.s.lock.as_str()).or_default().push((
            v.s.start,
            v.s.token,
            v.s.describe(),
            v.s.mode.clone(),
            (v.s.pid, v.s.thr, v.s.att),
        ));
    }
    for c in &h.claims {
        grants.entry(c.lock.as_str()).or_default().push((
            c.first.1,
            c.token,
            describe(c),
            c.mode.clone(),
            (c.pid, c.thr, c.att),
        ));
    }
    for list in grants.values_mut() {
        list.sort();
    }
    let by_key = views_by_key(views);
    for c in &h.claims {
        let Some(list) = grants.get(c.lock.as_str()) else {
            continue;
        };
        let earlier = list
            .iter()
            .take_while(|g| g.0 <= c.last.0)
            .find(|g| g.4 != (c.pid, c.thr, c.att) && g.1 > c.token && excludes(&c.mode, &g.3));
        let Some((at, token, who, _, _)) = earlier else {
            continue;
        };
        if fenced(h, c, by_key.get(&c.key()).copied(), *token) {
            continue;
        }
        violations.push(format!(
            "claim out of token order on {}: {} was told it holds with token {} ({}, last claim {}..{}) after {} \
             was granted token {token} at {at}",
            c.lock,
            describe(c),
            c.token,
            c.what,
            c.last.0,
            c.last.1,
            who
        ));
    }
}

/// Rule 10: a holder's own claims never go back: each claim span of a
/// section is for a token at least its grant's and at least its earlier
/// spans' (a latch that re-announced an older term than it led in).
pub(super) fn claimed_tokens_never_go_back(h: &History, violations: &mut Vec<String>) {
    let mut by_section: BTreeMap<SectionKey, Vec<&ClaimRec>> = BTreeMap::new();
    for c in &h.claims {
        by_section.entry(c.key()).or_default().push(c);
    }
    for (key, mut spans) in by_section {
        spans.sort_by_key(|c| c.first);
        let mut top = h.sections.get(&key).map(|s| s.token);
        for c in spans {
            if let Some(t) = top.filter(|t| c.token < *t) {
                violations.push(format!(
                    "claimed token went back on {}: {} was told it holds ({}, {}..{}) after it held token {t}",
                    c.lock,
                    describe(c),
                    c.what,
                    c.first.0,
                    c.first.1
                ));
            }
            top = Some(top.map_or(c.token, |t| t.max(c.token)));
        }
    }
}

/// Rules 8 to 10 on `views` (every section, with its effective end);
/// returns the report's lines.
pub(super) fn judge(h: &History, views: &[View<'_>], violations: &mut Vec<String>) -> String {
    let (judged, excused) = claims_inside_other_sections(h, views, violations);
    claims_out_of_token_order(h, views, violations);
    claimed_tokens_never_go_back(h, violations);
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    let mut ended: BTreeMap<&str, u64> = BTreeMap::new();
    let mut total = 0u64;
    for c in &h.claims {
        for k in c.what.split('+') {
            *kinds.entry(k).or_default() += 1;
        }
        *ended.entry(c.ended.as_str()).or_default() += 1;
        total += c.count;
    }
    let sections: std::collections::HashSet<(u32, u32, u64)> = h.claims.iter().map(|c| (c.pid, c.thr, c.att)).collect();
    let watched: std::collections::HashSet<(u32, u32, u64)> = h
        .sections
        .values()
        .filter(|s| s.end.as_ref().is_some_and(|e| e.watched.is_some()))
        .map(|s| (s.pid, s.thr, s.att))
        .collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "claims after a cut: {judged} spans of {total} claims in {} of {} watched attempts (spans with: {}; \
         ended by: {}); fenced after an instant expiry or a break: {excused}",
        sections.len(),
        watched.len(),
        tally(&kinds, "none"),
        tally(&ended, "none")
    );
    t
}

#[cfg(test)]
mod tests {
    use crate::history::History;

    use super::super::tests::{
        assert_clean, assert_flags, assert_says, checked, history, section, two, violations, worker,
    };

    /// A claim span's line.
    #[allow(clippy::too_many_arguments)]
    fn claim(
        pid: u32,
        lock: &str,
        mode: &str,
        token: i64,
        sid: &str,
        what: &str,
        first: (u64, u64),
        last: (u64, u64),
        count: u64,
        ended: &str,
    ) -> Vec<String> {
        vec![format!(
            "C {pid} 0 1 {lock} {mode} {token} {sid} {what} {} {} {} {} {count} {ended}",
            first.0, first.1, last.0, last.1
        )]
    }

    /// A claim span of holder A (worker 10, `/l`, mutex, token 5, session `a`).
    fn a_claims(what: &str, first: (u64, u64), last: (u64, u64), count: u64, ended: &str) -> Vec<String> {
        claim(10, "/l", "mutex", 5, "a", what, first, last, count, ended)
    }

    /// A claim span of leader A (worker 10, `/e`, session `a`) for `term`.
    fn a_leads(term: i64, what: &str, first: (u64, u64), last: (u64, u64), count: u64, ended: &str) -> Vec<String> {
        claim(10, "/e", "leader", term, "a", what, first, last, count, ended)
    }

    /// A's section from 100, told Suspended at 150 (its last Ok at 140).
    fn a_cut() -> Vec<String> {
        checked(10, 5, "a", 100, 150, Some(150), 140, None, "ok")
    }

    /// Holder 10's section (`a`) and its claims after the cut, and holder
    /// 11's section (`b`), with `extra` coordinator lines.
    fn after_cut(extra: &[&str], a: Vec<String>, claims: Vec<String>, b: Vec<String>) -> History {
        history(extra, vec![worker(10, vec![a, claims]), worker(11, vec![b])])
    }

    /// Each violation's rule: its text up to the first `:`, sorted.
    fn prefixes(v: &[String]) -> Vec<&str> {
        let mut p: Vec<&str> = v.iter().map(|v| v.split(':').next().unwrap_or("")).collect();
        p.sort_unstable();
        p
    }

    #[test]
    fn catches_a_reconnected_holder_of_a_broken_lock() {
        // The bug fixed in f83af70: A (token 5) is partitioned and told
        // Suspended at 150 (its section ends there); an operator deletes its
        // node; B (token 6) is granted at 200. The partition heals before A's
        // session expires, and before the server has answered anything A is
        // told Reconnected (event received at 310, channel last seen empty at
        // 305), check() says Ok and the status Held, 60 times until 600;
        // then Lost.
        let b = || checked(11, 6, "b", 200, 700, None, 690, None, "ok");
        let revived = a_claims("reconnected+ok+held", (305, 310), (600, 601), 60, "lost");
        let h = after_cut(&[], a_cut(), revived, b());
        let v = violations(&h);
        // Rules 8 and 9, and rule 6: A's last claim came after B's grant.
        assert_eq!(
            prefixes(&v),
            [
                "claim inside another's section on /l",
                "claim out of token order on /l",
                "no safety margin on /l"
            ],
            "{v:#?}"
        );
        assert!(
            v.iter().any(|v| v.contains("(reconnected+ok+held, 60 claims")),
            "{v:#?}"
        );
        // Without the claims (what the old campaign logged) nothing is seen:
        // A's section ended at its first doubt.
        let h = two(&[], a_cut(), b());
        assert_clean(&h);
        // One lone Ok (no Reconnected before it) inside B's section is enough.
        let ok = a_claims("ok", (320, 321), (320, 321), 1, "lost");
        let h = after_cut(&[], a_cut(), ok, b());
        assert_flags(&h, "claim inside another's section on /l");
    }

    #[test]
    fn catches_a_leader_that_re_announces_an_older_term() {
        // Leader A (term 5) suspended at 150; its node broken; B leads with
        // term 9 from 200 to 250, then C with term 12 from 260. At 300 A is
        // told Leader { term: 5 } again: inside C's section, and out of term
        // order (after 9 and 12).
        let a = section(10, 1, "/e", "leader", 5, "a", 100, 150, Some(150));
        let b = || section(11, 1, "/e", "leader", 9, "b", 200, 250, None);
        let h = history(
            &[],
            vec![
                worker(
                    10,
                    vec![a.clone(), a_leads(5, "leader+ok", (295, 300), (330, 331), 7, "lost")],
                ),
                worker(11, vec![b()]),
                worker(12, vec![section(12, 1, "/e", "leader", 12, "c", 260, 400, None)]),
            ],
        );
        let v = violations(&h);
        assert_eq!(
            prefixes(&v),
            [
                "claim inside another's section on /e",
                "claim out of token order on /e",
                "no safety margin on /e"
            ],
            "{v:#?}"
        );
        assert!(v.iter().any(|v| v.contains("granted token 9 at 200")), "{v:#?}");
        // After every other leadership ended, the older term is still out of
        // order (terms went backwards), though it overlaps nobody.
        let h = after_cut(
            &[],
            a.clone(),
            a_leads(5, "leader", (295, 300), (295, 300), 1, "doubt"),
            b(),
        );
        let v = violations(&h);
        assert_eq!(
            prefixes(&v),
            ["claim out of token order on /e", "no safety margin on /e"],
            "{v:#?}"
        );
        // A new term of its own, larger than the others', is in order.
        let h = after_cut(&[], a, a_leads(15, "leader+ok", (295, 300), (330, 331), 7, "end"), b());
        assert_clean(&h);
    }

    #[test]
    fn a_holder_that_reconnects_while_nobody_else_holds_passes() {
        // A told Suspended at 150, Reconnected at 160 (its node was there),
        // Ok until 195, then released; B granted at 210.
        let b = || checked(11, 6, "b", 210, 250, None, 240, None, "ok");
        let claims = a_claims("reconnected+ok+held", (155, 160), (194, 195), 8, "end");
        let h = after_cut(&[], a_cut(), claims, b());
        let r = assert_clean(&h);
        // It released in certainty: not a hand-over after a signal.
        assert!(!r.margins.contains_key("all"), "{:#?}", r.margins);
        assert!(
            r.text.contains(
                "claims after a cut: 1 spans of 8 claims in 1 of 0 watched attempts (spans with: held 1, ok 1, reconnected 1; ended by: end 1)"
            ),
            "{}",
            r.text
        );
        // Told again, then in doubt again before B's grant: the margin counts
        // from its last claim (195 -> 210).
        let h = after_cut(&[], a_cut(), a_claims("ok", (155, 160), (195, 196), 8, "doubt"), b());
        let r = assert_clean(&h);
        assert_eq!(r.margins["all"].min_ns, 15);
    }

    #[test]
    fn a_claim_is_judged_by_its_bounds() {
        let b = checked(11, 6, "b", 200, 700, None, 690, None, "ok");
        // An event that may have been sent before B's grant (its channel was
        // last seen empty at 190) and was received after it: not judged
        // inside B's section, nor out of order.
        let h = after_cut(
            &[],
            a_cut(),
            a_claims("reconnected", (190, 205), (190, 205), 1, "lost"),
            b,
        );
        assert_clean(&h);
        // A span whose first and last claims straddle B's whole section
        // (B from 200 to 300): its interior meets it.
        let b = checked(11, 6, "b", 200, 300, Some(300), 290, None, "ok");
        let h = after_cut(&[], a_cut(), a_claims("ok", (160, 161), (390, 391), 40, "doubt"), b);
        assert_flags(&h, "claim inside another's section on /l");
    }

    #[test]
    fn readers_claims_do_not_conflict_but_a_writers_do() {
        let reader = |pid: u32, token: i64, sid: &str, start: u64, end: u64| {
            section(pid, 1, "/rw", "read", token, sid, start, end, None)
        };
        let a = section(10, 1, "/rw", "read", 5, "a", 100, 150, Some(150));
        let claims = claim(10, "/rw", "read", 5, "a", "ok", (210, 211), (250, 251), 8, "end");
        let h = after_cut(&[], a.clone(), claims.clone(), reader(11, 6, "b", 200, 300));
        assert_clean(&h);
        let h = after_cut(&[], a, claims, section(11, 1, "/rw", "write", 6, "b", 200, 300, None));
        assert_eq!(violations(&h).len(), 2, "{:#?}", violations(&h));
    }

    #[test]
    fn catches_a_holder_whose_own_claims_go_back() {
        // A latch that led in term 9, then was told Leader { term: 7 }.
        let a = section(10, 1, "/e", "leader", 9, "a", 100, 150, Some(150));
        let h = history(
            &[],
            vec![worker(
                10,
                vec![a, a_leads(7, "leader", (200, 201), (200, 201), 1, "doubt")],
            )],
        );
        let v = violations(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].starts_with("claimed token went back on /e"), "{v:#?}");
    }

    #[test]
    fn a_claim_after_an_instant_expiry_is_fenced_like_an_overlap() {
        // A's session was expired at once at 120; it heard Suspended at 150,
        // and a last Ok at 210 (inside B's section from 200) came before it
        // heard the expiry.
        let b = checked(11, 6, "b", 200, 300, None, 290, None, "ok");
        let h = after_cut(
            &["I a 120"],
            a_cut(),
            a_claims("ok", (205, 206), (210, 211), 2, "lost"),
            b,
        );
        let r = assert_clean(&h);
        assert_says(&r, "fenced after an instant expiry or a break: 1");
    }

    #[test]
    fn a_break_excuses_only_the_claims_it_interrupted() {
        // A reconnected at 155 and was told it holds until 210; an operator
        // deleted its node at 190, B was granted at 200, A heard Lost at
        // 212: the break came while A was certain, its notification on its
        // way (fenced, like rule 1's overlap).
        let a = || {
            let mut v = a_cut();
            v[2] = "S 10 0 1 /l mutex 5 a 100 lock-5".into();
            v[4] = v[4].replacen(" 150 150 Suspended - ", " 150 150 Suspended 212 ", 1);
            v
        };
        let b = || checked(11, 6, "b", 200, 700, None, 690, None, "ok");
        let span = || a_claims("reconnected+ok", (152, 155), (209, 210), 11, "lost");
        let h = after_cut(&["B a 190 /l/lock-5"], a(), span(), b());
        let r = assert_clean(&h);
        assert_says(&r, "fenced after an instant expiry or a break: 1");
        // The fixed bug: the node broken at 140, while A was cut off, before
        // its claims began: not excused.
        let h = after_cut(&["B a 140 /l/lock-5"], a(), span(), b());
        assert_flags(&h, "claim inside another's section on /l");
    }

    #[test]
    fn a_claim_after_the_other_holders_node_was_broken_is_not_inside_its_section() {
        // An operator deleted A's node (token 5) at 140, while A worked (it
        // heard Lost at 170); B (token 6) was granted at 150 and its Leader
        // event came at 155..160, then it was in doubt: B's claim is not
        // inside A's section, which the server had let go at 140. (A's own
        // overlap with B is rule 1's, fenced: A was told, token smaller.)
        let mut a = section(10, 1, "/e", "leader", 5, "a", 100, 170, Some(170));
        a[2] = "S 10 0 1 /e leader 5 a 100 latch-5".into();
        let mut b = section(11, 1, "/e", "leader", 6, "b", 150, 152, Some(152));
        b.push(claim(11, "/e", "leader", 6, "b", "leader", (155, 160), (155, 160), 1, "doubt").remove(0));
        let h = two(&["B a 140 /e/latch-5"], a.clone(), b.clone());
        assert_clean(&h);
        // Without the break, the claim is inside A's section (and so is B's grant).
        let h = two(&[], a, b);
        assert_flags(&h, "claim inside another's section on /e");
    }

    #[test]
    fn older_logs_without_claims_are_still_checked() {
        let h = two(
            &[],
            checked(10, 5, "a", 100, 150, Some(150), 140, None, "ok"),
            checked(11, 6, "b", 200, 300, None, 290, None, "ok"),
        );
        let r = assert_clean(&h);
        assert_says(&r, "claims after a cut: 0 spans of 0 claims in 0 of 0 watched attempts");
    }
}
