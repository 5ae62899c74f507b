#!/usr/bin/env python3
"""Checks the leaderships logged by the participants of one election (scripts/leader-interop.sh:
scripts/interop/CuratorLeaderContender.java and examples/leader_contender.rs, names starting with
J for Java and R for Rust), with the kills the script recorded.

usage: check_leaders.py latch|selector LOG [--min-moves N] [--min-leaders N]
       check_leaders.py --current latch|selector LOG   (prints who leads now, per the log)
       check_leaders.py --self-test

Lines: NAME EVENT <epoch us> [...]. A leadership begins at LEADER (latch) or START (selector),
with its term (the node's czxid) and node sequence, and ends at the first of NOTLEADER, CLOSING,
KILLED (latch; CLOSED for a leadership that began after its CLOSING: Curator 5.4's latch can be
told isLeader() while its close() runs, which the summary notes) or END, KILLED (selector; its
work runs until END even while closing; CLOSED is a fallback for a work that never logged its
end). KILLED lines are the script's: the time just
after `kill -9` returned. Lines are taken in time order (a participant stamps an event, then
reads its node, then writes the line: lines can be appended out of order).

Checks: (1) never two leaders at once: sorted by start, each leadership starts at or after the
end of every earlier one; (2) successive leaders' terms and node sequences strictly increase;
(3) leadership moved from Java to Rust and from Rust to Java at least N times each (default 1);
(4) every leadership had a known term and node (-1: the participant could not read its node;
allowed, and noted, only for a leadership ended by its participant's close, whose delete can
come first) and, for Curator's latch, hasLeadership() was true when isLeader() ran; (5) no leadership is
still open at the end of the log (everything was killed or closed). Exit status 0 when every
check holds, 1 otherwise, 2 on bad arguments.
"""
import sys


def side(name):
    return {"J": "java", "R": "rust"}.get(name[:1], "?")


def leaderships(kind, lines, late=None):
    """[(start, end, name, term, seq, flags)] in start order; end None when never ended.
    Leaderships that began after their participant's CLOSING are added to `late`."""
    if late is None:
        late = []
    begin = "LEADER" if kind == "latch" else "START"
    # (CLOSED ends a latch's leadership that began after its CLOSING: Curator 5.4's latch can
    # call isLeader() while close() runs; it leads until close() returns.)
    enders = ("NOTLEADER", "CLOSING", "KILLED", "CLOSED") if kind == "latch" else ("END", "KILLED", "CLOSED")
    closing = set()
    open_ = {}
    out = []
    # By time: a participant stamps an event before it reads its node and writes the line,
    # so lines of several processes (and its own) can be appended out of time order.
    def stamp(raw):
        f = raw.split()
        try:
            return int(f[2])
        except (IndexError, ValueError):
            return 0
    for raw in sorted(lines, key=stamp):
        f = raw.split()
        if len(f) < 3:
            continue
        name, ev = f[0], f[1]
        try:
            t = int(f[2])
        except ValueError:
            continue
        if ev == "CLOSING":
            closing.add(name)
        if ev == begin:
            if name in closing:
                late.append(f"{name} {ev} at {t}, after its CLOSING")
            if name in open_:
                # a second start without an end: the first one ends here at the latest
                l = open_.pop(name)
                l[1] = t
                l.append(ev)
                out.append(l)
            term = int(f[3]) if len(f) > 3 else -1
            seq = int(f[4]) if len(f) > 4 else -1
            flags = " ".join(f[5:])
            open_[name] = [t, None, name, term, seq, flags]
        elif ev in enders and name in open_:
            l = open_.pop(name)
            l[1] = t
            l.append(ev)
            out.append(l)
    for l in open_.values():
        l.append(None)
        out.append(l)
    out = [tuple(l) for l in out]
    out.sort(key=lambda l: l[0])
    return out


def check(kind, lines, min_moves=1, min_leaders=2):
    """Returns (errors, summary)."""
    errors = []
    late = []
    ls = leaderships(kind, lines, late)
    if len(ls) < min_leaders:
        errors.append(f"only {len(ls)} leaderships (at least {min_leaders} expected)")
    max_end, max_end_name = None, None
    moves = {"java->rust": 0, "rust->java": 0}
    per_side = {"java": 0, "rust": 0, "?": 0}
    prev = None
    known = None  # the last leadership with a known term and node
    unknown_closing = []
    for l in ls:
        start, end, name, term, seq, flags, how = l
        per_side[side(name)] += 1
        if end is None:
            errors.append(f"{name}'s leadership from {start} never ended (not killed nor closed)")
        if term < 0 or seq < 0:
            if how in ("CLOSING", "CLOSED"):
                # it closed at once: its node was deleted before it could be read
                unknown_closing.append(f"{name} at {start} ({term} {seq}), closed at {end}")
            else:
                errors.append(f"{name}'s leadership at {start} has an unknown term/node ({term} {seq})")
        if "hasLeadership=false" in flags:
            errors.append(f"{name}: isLeader() ran while hasLeadership() was false at {start}")
        if max_end is not None and start < max_end:
            errors.append(
                f"OVERLAP: {name} became leader at {start}, {max_end - start} us before "
                f"{max_end_name}'s leadership ended at {max_end}"
            )
        if known is not None and term >= 0 and term <= known[3]:
            errors.append(f"term not increasing: {known[2]} had {known[3]}, then {name} had {term}")
        if known is not None and seq >= 0 and seq <= known[4]:
            errors.append(f"node sequence not increasing: {known[2]} had {known[4]}, then {name} had {seq}")
        if term >= 0 and seq >= 0:
            known = l
        if prev is not None:
            a, b = side(prev[2]), side(name)
            if a != b:
                moves[f"{a}->{b}"] = moves.get(f"{a}->{b}", 0) + 1
        e = end if end is not None else float("inf")
        if max_end is None or e > max_end:
            max_end, max_end_name = e, name
        prev = l
    for k in ("java->rust", "rust->java"):
        if moves[k] < min_moves:
            errors.append(f"leadership moved {k} {moves[k]} times (at least {min_moves} expected)")
    kills = sum(1 for raw in lines if len(raw.split()) > 1 and raw.split()[1] == "KILLED")
    summary = (
        f"{kind}: {len(ls)} leaderships (java {per_side['java']}, rust {per_side['rust']}), "
        f"moves java->rust {moves['java->rust']}, rust->java {moves['rust->java']}, "
        f"kills {kills}, overlaps {sum(1 for e in errors if e.startswith('OVERLAP'))}"
    )
    for l in late:
        summary += f"\n  note: a leadership began while closing: {l}"
    for l in unknown_closing:
        summary += f"\n  note: a leadership closed before its node could be read: {l}"
    return errors, summary


def self_test():
    good = [
        "J1 JOIN 1 java latch",
        "R1 JOIN 2 rust latch",
        "J1 LEADER 10 100 0",
        "J1 KILLED 20",
        "R1 LEADER 30 101 1",
        "R1 CLOSING 40",
        "J2 LEADER 41 105 3",
        "J2 NOTLEADER 50 listener",
    ]
    errs, _ = check("latch", good)
    assert errs == [], errs
    # an overlap: R1 leads before J1's kill
    bad = list(good)
    bad[4] = "R1 LEADER 19 101 1"
    errs, _ = check("latch", bad)
    assert any(e.startswith("OVERLAP") for e in errs), errs
    # a term going back
    bad = list(good)
    bad[6] = "J2 LEADER 41 99 3"
    errs, _ = check("latch", bad)
    assert any("term not increasing" in e for e in errs), errs
    # no move back to Java
    errs, _ = check("latch", good[:6])
    assert any("rust->java" in e for e in errs), errs
    # a leadership never ended
    errs, _ = check("latch", good[:5])
    assert any("never ended" in e for e in errs), errs
    # a latch told it leads while it closes (Curator 5.4): it leads until CLOSED
    errs, summ = check("latch", good + ["R2 CLOSING 60", "J3 CLOSING 61", "J3 LEADER 62 110 4", "J3 CLOSED 63"])
    assert errs == [] and "while closing" in summ, (errs, summ)
    errs, _ = check("latch", good + ["J3 CLOSING 61", "J3 LEADER 62 110 4", "R2 LEADER 62 111 5", "J3 CLOSED 63"])
    assert any(e.startswith("OVERLAP") for e in errs), errs
    # lines out of time order (a LEADER line written after the participant's CLOSED), with an
    # unknown node (deleted by the close before it was read): ends at CLOSING, noted
    errs, summ = check("latch", good + ["R2 CLOSING 60", "R2 CLOSED 62", "R2 LEADER 59 -1 -1"])
    assert errs == [] and "before its node could be read" in summ, (errs, summ)
    # an unknown node of a leadership that did not end with a close is an error
    errs, _ = check("latch", good + ["R2 LEADER 59 -1 -1", "R2 KILLED 62"])
    assert any("unknown term" in e for e in errs), errs
    # selector: END ends it, not CLOSING; an overlap through a long END
    sel = [
        "R1 START 10 100 0",
        "R1 CLOSING 12",
        "J1 START 15 101 1",
        "R1 END 16",
        "J1 END 20",
        "R2 START 21 102 2",
        "R2 KILLED 30",
    ]
    errs, _ = check("selector", sel)
    assert any(e.startswith("OVERLAP") for e in errs), errs
    sel[2], sel[3] = "R1 END 14", "J1 START 15 101 1"
    errs, _ = check("selector", sel)
    assert errs == [], errs
    print("check_leaders self-test: ok (overlaps, terms, moves and open leaderships are caught)")


def main(argv):
    if len(argv) == 4 and argv[1] == "--current":
        # the participant whose leadership is open at the end of the log (empty if none)
        with open(argv[3]) as f:
            ls = leaderships(argv[2], [l.rstrip("\n") for l in f])
        print(next((l[2] for l in reversed(ls) if l[1] is None), ""))
        return 0
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) < 3 or argv[1] not in ("latch", "selector"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, path = argv[1], argv[2]
    min_moves, min_leaders = 1, 2
    rest = argv[3:]
    while rest:
        if rest[0] == "--min-moves" and len(rest) > 1:
            min_moves = int(rest[1])
        elif rest[0] == "--min-leaders" and len(rest) > 1:
            min_leaders = int(rest[1])
        else:
            print(__doc__, file=sys.stderr)
            return 2
        rest = rest[2:]
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f]
    errors, summary = check(kind, lines, min_moves, min_leaders)
    print(summary)
    for e in errors:
        print("  FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
