#!/usr/bin/env python3
"""Checks and tabulates scripts/reconfig-interop.sh: services of ours (examples/reconfig_peer.rs)
and Curator 5.4's (scripts/interop/CuratorReconfigPeer.java) on one lock and one election while
every server of the ensemble is replaced (crates/zk-testing's zk-reconfig-ensemble).

usage: check_reconfig.py --events EVENTS --latch LATCH_LOG --locks LOCK_LOG --conn CONN_LOG
                         --ours R1,R2 --end-us US [--label NAME=TEXT ...]
       check_reconfig.py --self-test

EVENTS: zk-reconfig-ensemble's stdout (READY, REPLACING, ADDED, REMOVING, REPLACED lines, times
in us). CONN_LOG: every service's `NAME CONN <us> server=.. list=.. session=.. state=..
conf=..|cs=..` samples (every 100 ms) and `NAME ERR <us> ...` lines. LATCH_LOG: the election's
lines (check_leaders.py's format). LOCK_LOG: `NAME START|END <ns>`. --end-us: when the services
were told to close (samples after it are ignored).

For each replacement i (members M_i after it, version v_i) and each service, measured from the
moment the reconfig removing the old server was sent (REMOVING) until the next REMOVING (or the
end), from the 100 ms samples:
  seen  the service's tracker holds the new configuration (ours: a config version newer than
        the one that added the new server; Curator: its connection string names exactly M_i);
        never without a tracker
  list  the connection's server list is exactly M_i (ours: server_list(); Curator: the
        ZooKeeper handle's StaticHostProvider)
  on    connected to a member of M_i from then to the window's end (0: since before the
        removal, without a break)
  off   time without a connection in that window
  "never": not within the window. `old` marks a service that was on the removed server.

Checks (exit 1 when one fails): never two leaders at once, over every participant (a
leadership ends at NOTLEADER, CLOSING or KILLED, so a service that is unsure leads no more);
successive leaders' terms (czxid) increase, except that the same participant may lead again in
the same term (our latch after Uncertain: its node and session survived); and for each of ours:
its last sample is connected to a member of the final configuration with exactly the final
members as its list, and it completed a critical section after the last replacement. Curator's
outcomes are tabulated, not required (mutual exclusion is checked by check_overlap.py on the
shared lock, for everyone). Exit 0 when every check holds, 1 otherwise, 2 on bad arguments.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_leaders  # noqa: E402


def kv(fields):
    out = {}
    for f in fields:
        if "=" in f:
            k, v = f.split("=", 1)
            out[k] = v
    return out


def hosts(s):
    """A connect string or list (a,b,c[/chroot]) as a set of host:port."""
    if s in (None, "", "-", "?"):
        return frozenset()
    s = s.split("/", 1)[0]
    return frozenset(h for h in s.split(",") if h)


def parse_events(lines):
    """(ready, [replacement dicts]); each replacement: old, new, leader, t_replacing, t_added,
    t_removing, t_replaced, version, members (set of host:port), ids."""
    ready = None
    reps = []
    cur = None
    for raw in lines:
        f = raw.split()
        if len(f) < 2:
            continue
        ev = f[0]
        try:
            t = int(f[1])
        except ValueError:
            continue
        if ev == "READY":
            d = kv(f[2:])
            ready = {"t": t, "version": int(d.get("version", "0"), 16), "members": hosts(d.get("connect")),
                     "ids": d.get("members", "")}
        elif ev == "REPLACING":
            cur = {"old": f[2], "leader": kv(f[3:]).get("leader", "-"), "t_replacing": t}
        elif ev == "ADDED" and cur is not None:
            cur["t_added"] = t
            cur["new"] = f[2]
            cur["v_added"] = int(kv(f[3:]).get("version", "0"), 16)
        elif ev == "REMOVING" and cur is not None:
            cur["t_removing"] = t
        elif ev == "REPLACED" and cur is not None:
            d = kv(f[4:])
            cur.update(t_replaced=t, new=f[3], version=int(d.get("version", "0"), 16),
                       members=hosts(d.get("connect")), ids=d.get("members", ""))
            reps.append(cur)
            cur = None
    return ready, reps


def parse_conn(lines, end_us):
    """{name: [(t, fields dict)]} of CONN samples up to end_us; {name: error count}."""
    samples, errors = {}, {}
    for raw in lines:
        f = raw.split()
        if len(f) < 3:
            continue
        try:
            t = int(f[2])
        except ValueError:
            continue
        if f[1] == "CONN" and t <= end_us:
            samples.setdefault(f[0], []).append((t, kv(f[3:])))
        elif f[1] == "ERR" and t <= end_us:
            errors[f[0]] = errors.get(f[0], 0) + 1
    for s in samples.values():
        s.sort(key=lambda x: x[0])
    return samples, errors


def parse_locks(lines):
    """{name: [start ns of each critical section]}."""
    out = {}
    for raw in lines:
        f = raw.split()
        if len(f) >= 3 and f[1] == "START":
            try:
                out.setdefault(f[0], []).append(int(f[2]))
            except ValueError:
                pass
    return out


def seen_now(d, rep):
    """Whether the tracker holds the configuration without the removed server: ours, a version
    newer than the one that added the new server (ZooKeeper may publish the same members again
    under a newer version after a leader's removal); Curator, a string of exactly M_i."""
    if "conf" in d:
        v = d.get("conf", "-")
        return v not in ("-", "") and int(v, 16) > rep["v_added"]
    return hosts(d.get("cs")) == rep["members"]


def fmt(x):
    return "never" if x is None else "%.2f" % x


def measure(samples, rep, t_end):
    """The window's figures for one service: dict seen, list, on, off (s), was_old."""
    t0 = rep["t_removing"]
    win = [(t, d) for t, d in samples if t0 <= t < t_end]
    before = [d for t, d in samples if t < t0]
    # on the removed server (or another non-member) just before the removal
    was_old = False
    if before:
        last = before[-1].get("server", "-")
        was_old = last != "-" and last not in rep["members"]

    def first(pred):
        for t, d in win:
            if pred(d):
                return (t - t0) / 1e6
        return None

    def on_member(d):
        return d.get("server", "-") in rep["members"]

    def settled():
        """From when every sample to the window's end is on a member (0 if since before t0)."""
        k = len(win)
        while k > 0 and on_member(win[k - 1][1]):
            k -= 1
        if k == len(win):
            return None
        if k == 0 and before and on_member(before[-1]):
            return 0.0
        return (win[k][0] - t0) / 1e6

    off = 0.0
    for k, (t, d) in enumerate(win):
        nxt = win[k + 1][0] if k + 1 < len(win) else t_end
        if d.get("server", "-") == "-":
            off += (nxt - t) / 1e6
    return {
        "seen": first(lambda d: seen_now(d, rep)),
        "list": first(lambda d: hosts(d.get("list")) == rep["members"]),
        "on": settled(),
        "off": off,
        "was_old": was_old,
    }


def check_leadership(lines):
    """(errors, notes, count by name)."""
    ls = check_leaders.leaderships("latch", lines)
    errors, notes = [], []
    per = {}
    max_end, max_end_name = None, None
    prev = None
    for start, end, name, term, seq, flags, how in ls:
        per[name] = per.get(name, 0) + 1
        if max_end is not None and start < max_end:
            errors.append("OVERLAP: %s became leader at %d, %d us before %s's leadership ended at %s"
                          % (name, start, max_end - start, max_end_name, max_end))
        if term < 0:
            notes.append("%s's leadership at %d has no known term (%s)" % (name, start, how))
        elif prev is not None:
            pname, pterm = prev
            if term < pterm or (term == pterm and name != pname):
                errors.append("term not increasing: %s led in term %d, then %s in term %d"
                              % (pname, pterm, name, term))
        if term >= 0:
            prev = (name, term)
        if "hasLeadership=false" in flags:
            notes.append("%s: isLeader() ran while hasLeadership() was false at %d" % (name, start))
        if end is None:
            notes.append("%s's leadership from %d never ended in the log" % (name, start))
        e = end if end is not None else float("inf")
        if max_end is None or e > max_end:
            max_end, max_end_name = e, name
    return errors, notes, per


def evaluate(events, latch, locks, conn, ours, end_us, labels):
    """(report lines, errors)."""
    out, errors = [], []
    ready, reps = parse_events(events)
    if ready is None or not reps:
        return out, ["the events log has no READY or no REPLACED line"]
    samples, errs = parse_conn(conn, end_us)
    sections = parse_locks(locks)
    names = sorted(set(samples) | set(ours))
    final = reps[-1]
    for n in ours:
        if not samples.get(n):
            errors.append("%s logged no connection sample" % n)

    out.append("replacements (times from the reconfig removing the old server; s):")
    head = "%-4s %-9s %-7s %-22s %-6s %6s %6s %6s %6s  %s" % (
        "#", "old->new", "leader", "client", "", "seen", "list", "on", "off", "")
    out.append(head)
    for i, rep in enumerate(reps):
        t_end = reps[i + 1]["t_removing"] if i + 1 < len(reps) else end_us
        took = (rep["t_replaced"] - rep["t_replacing"]) / 1e6
        for n in names:
            m = measure(samples.get(n, []), rep, t_end)
            seen = fmt(m["seen"])
            out.append("%-4s %-9s %-7s %-22s %-6s %6s %6s %6s %6.2f  %s" % (
                i + 1, "%s->%s" % (rep["old"], rep["new"]), rep["leader"], labels.get(n, n)[:22],
                n, seen, fmt(m["list"]), fmt(m["on"]), m["off"], "old" if m["was_old"] else ""))
        out.append("     (replacement %d took %.1f s: add %.1f s, remove+stop+quorum %.1f s; version %#x)" % (
            i + 1, took, (rep["t_added"] - rep["t_replacing"]) / 1e6,
            (rep["t_replaced"] - rep["t_removing"]) / 1e6, rep["version"]))

    out.append("")
    out.append("at the end (final members %s):" % ",".join(sorted(final["members"])))
    lerrs, lnotes, per = check_leadership(latch)
    out.append("%-22s %-4s %-21s %-6s %-5s %-8s %-9s %-6s %-7s %-6s" % (
        "client", "", "last server", "member", "list", "sessions", "sections", "after", "leader", "errors"))
    last_t = final["t_replaced"] * 1000
    for n in names:
        s = samples.get(n, [])
        last = s[-1][1] if s else {}
        server = last.get("server", "-")
        member = server in final["members"]
        list_ok = hosts(last.get("list")) == final["members"]
        sessions = len({d.get("session") for _, d in s if d.get("session") not in (None, "0x0")})
        secs = sections.get(n, [])
        after = sum(1 for x in secs if x >= last_t)
        out.append("%-22s %-4s %-21s %-6s %-5s %-8d %-9d %-6d %-7d %-6d" % (
            labels.get(n, n)[:22], n, server, "yes" if member else "no", "yes" if list_ok else "no",
            sessions, len(secs), after, per.get(n, 0), errs.get(n, 0)))
        if n in ours:
            if not member:
                errors.append("%s ends on %s, not a member of the final configuration %s"
                              % (n, server, sorted(final["members"])))
            if not list_ok:
                errors.append("%s ends with the server list %s, not the final members %s"
                              % (n, last.get("list"), sorted(final["members"])))
            if after < 1:
                errors.append("%s completed no critical section after the last replacement" % n)
    out.append("")
    out.append("leadership: %d terms (%s), %d overlaps" % (
        sum(per.values()), ", ".join("%s %d" % kv_ for kv_ in sorted(per.items())),
        sum(1 for e in lerrs if e.startswith("OVERLAP"))))
    for note in lnotes:
        out.append("  note: " + note)
    errors.extend(lerrs)
    return out, errors


def self_test():
    events = [
        "READY 1000000 version=0x100000000 members=1,2,3 connect=h:1,h:2,h:3",
        "REPLACING 2000000 1 leader=1",
        "ADDED 5000000 4 version=0x100000005 members=1,2,3,4 connect=h:1,h:2,h:3,h:4",
        "REMOVING 5000000 1",
        "REPLACED 7000000 1 4 version=0x100000007 members=2,3,4 connect=h:2,h:3,h:4",
    ]
    conn = [
        "R1 CONN 4900000 server=h:1 list=h:1,h:2,h:3 session=0x1 state=Connected conf=0x100000005",
        "R1 CONN 5200000 server=- list=h:1,h:2,h:3,h:4 session=0x1 state=Connecting conf=0x100000005",
        "R1 CONN 5500000 server=h:2 list=h:2,h:3,h:4 session=0x1 state=Connected conf=0x100000007",
        "J1 CONN 4900000 server=h:3 list=h:1,h:2,h:3 session=0x2 state=CONNECTED cs=h:1,h:2,h:3",
        "J1 CONN 5300000 server=h:3 list=h:1,h:2,h:3 session=0x2 state=CONNECTED cs=h:2,h:3,h:4",
        "J1 ERR 5400000 lock boom",
    ]
    latch = [
        "R1 JOIN 1 rust latch", "J1 JOIN 2 java latch",
        "R1 LEADER 3000000 100 0", "R1 NOTLEADER 5100000 Uncertain", "R1 LEADER 5600000 100 0",
        "R1 CLOSING 8000000", "J1 LEADER 8100000 105 1", "J1 CLOSING 8200000",
    ]
    locks = ["R1 START 7500000000", "R1 END 7550000000", "J1 START 7600000000", "J1 END 7650000000"]
    out, errs = evaluate(events, latch, locks, conn, ["R1"], 9000000, {})
    assert errs == [], (errs, out)
    text = "\n".join(out)
    row = next(l for l in out if " R1 " in l and l.startswith("1 "))
    # R1: on the removed server h:1; followed the version at 0.5 s; list and on at 0.5 s
    assert row.split()[-5:] == ["0.50", "0.50", "0.50", "0.30", "old"], row
    jrow = next(l for l in out if " J1 " in l and l.startswith("1 "))
    assert jrow.split()[-4:] == ["0.30", "never", "0.00", "0.00"], jrow
    # a service that ends the window disconnected never settled
    gone = conn + ["J1 CONN 8000000 server=- list=h:1,h:2,h:3 session=0x2 state=CONNECTING cs=h:2,h:3,h:4"]
    out, _ = evaluate(events, latch, locks, gone, ["R1"], 9000000, {})
    jrow = next(l for l in out if " J1 " in l and l.startswith("1 "))
    assert jrow.split()[-4:] == ["0.30", "never", "never", "1.00"], jrow
    assert "1 overlaps" not in text and "0 overlaps" in text, text
    # an overlap: J1 leads while R1 still does
    bad = latch[:5] + ["J1 LEADER 5700000 105 1", "R1 CLOSING 8000000", "J1 CLOSING 8200000"]
    _, errs = evaluate(events, bad, locks, conn, ["R1"], 9000000, {})
    assert any(e.startswith("OVERLAP") for e in errs), errs
    # the same term for another participant is an error; a lower term too
    bad = latch[:3] + ["R1 NOTLEADER 5100000 Uncertain", "J1 LEADER 5600000 100 0", "J1 CLOSING 8200000"]
    _, errs = evaluate(events, bad, locks, conn, ["R1"], 9000000, {})
    assert any("term not increasing" in e for e in errs), errs
    # ours ending on the removed server, or with the old list, or without a section after
    stuck = conn[:1] + ["R1 CONN 5500000 server=h:1 list=h:1,h:2,h:3 session=0x1 state=Connected conf=-"]
    _, errs = evaluate(events, latch, locks, stuck + conn[3:], ["R1"], 9000000, {})
    assert any("not a member" in e for e in errs) and any("server list" in e for e in errs), errs
    _, errs = evaluate(events, latch, locks[2:], conn, ["R1"], 9000000, {})
    assert any("no critical section" in e for e in errs), errs
    # a service of ours with no sample at all
    _, errs = evaluate(events, latch, locks, conn[3:], ["R1"], 9000000, {})
    assert any("no connection sample" in e for e in errs), errs
    print("check_reconfig self-test: ok (overlaps, terms, final connection, progress are caught)")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", required=True)
    ap.add_argument("--latch", required=True)
    ap.add_argument("--locks", required=True)
    ap.add_argument("--conn", required=True)
    ap.add_argument("--ours", required=True, help="comma-separated names of our services")
    ap.add_argument("--end-us", type=int, required=True)
    ap.add_argument("--label", action="append", default=[], help="NAME=TEXT for the tables")
    args = ap.parse_args(argv[1:])
    labels = dict(l.split("=", 1) for l in args.label if "=" in l)

    def read(p):
        with open(p) as f:
            return [l.rstrip("\n") for l in f]

    try:
        out, errors = evaluate(read(args.events), read(args.latch), read(args.locks), read(args.conn),
                               [n for n in args.ours.split(",") if n], args.end_us, labels)
    except OSError as e:
        print("check_reconfig: cannot read the logs: %s" % e, file=sys.stderr)
        return 1
    print("\n".join(out))
    for e in errors:
        print("  FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
