#!/usr/bin/env python3
"""The checker of the cache interop proof (scripts/cache-interop.sh).

  check_cache.py WORK       checks WORK/{initial.view, steps.json, server.view,
                            java-follower.out, rust-follower.out} (cache_driver.py's files)
  check_cache.py --self-test

Checks, for Curator's CuratorCache (java) and ours (rust):
  * the first load: the events before the first step are exactly one CREATED per node of the
    first content (path, czxid, mzxid, data; in any order) and one INITIALIZED;
  * each step: both followers printed the same node events, in the same order, with the same
    path, czxid, mzxid and data (a DELETED carries the data the cache held), and those are
    the events the step must give (kind, path, and the data written; in the step's order
    unless it is a recursive delete, whose order is the server's); every CREATED of a step
    has czxid == mzxid;
  * no node event after the last step;
  * both final views (VIEW lines) equal the server's subtree read by a separate client.
Notes (not failures): our FRESHNESS lines other than `current` after the first load, and an
INITIALIZED after the first (a re-synchronisation).
Exit status 0 when everything held, 1 otherwise (every difference is printed).
"""
import json
import os
import sys
from collections import Counter

FOLLOWERS = ["java", "rust"]
NODE_KINDS = ("CREATED", "CHANGED", "DELETED")


def node_events(lines):
    out = []
    for l in lines:
        p = l.split()
        if p and p[0] in NODE_KINDS:
            out.append(tuple(p[:5]) if len(p) >= 5 else tuple(p))
    return out


def view_of(lines):
    """The first VIEW block in lines: [VIEW lines], or None without a VIEW-END."""
    view = []
    for l in lines:
        if l.startswith("VIEW-END"):
            return view
        if l.startswith("VIEW "):
            view.append(l)
    return None


def check(files, notes=None):
    """files: name -> text. Returns the problems found (an empty list when all held)."""
    notes = notes if notes is not None else []
    problems = []
    meta = json.loads(files["steps.json"])
    steps = meta["steps"]
    initial = [l for l in files["initial.view"].splitlines() if l.startswith("VIEW ")]
    server = [l for l in files["server.view"].splitlines() if l.startswith("VIEW ")]
    lines = {f: files["%s-follower.out" % f].splitlines() for f in FOLLOWERS}
    done = [s for s in steps if "lines" in s]
    for s in steps:
        if "error" in s:
            problems.append("step %d (%s writer): %s failed: %s" % (s["n"], s["writer"], s["cmd"], s["error"]))
        elif s.get("timeout"):
            problems.append("step %d: a follower did not print the step's events within the step timeout" % s["n"])
    if not done:
        problems.append("no step ran")
        return problems

    # The first load.
    want = Counter(("CREATED",) + tuple(l.split()[1:5]) for l in initial)
    for f in FOLLOWERS:
        first = lines[f][: done[0]["lines"][f][0]]
        got = Counter(node_events(first))
        if got != want:
            problems.append("%s: the first load gave %s, the first content is %s" % (
                f, sorted(got.elements()), sorted(want.elements())))
        if first.count("INITIALIZED") != 1:
            problems.append("%s: %d INITIALIZED before the first step (1 expected)" % (f, first.count("INITIALIZED")))

    # Each step.
    compared = 0
    for s in done:
        ev = {f: node_events(lines[f][s["lines"][f][0]:s["lines"][f][1]]) for f in FOLLOWERS}
        tag = "step %d (%s writer, %s)" % (s["n"], s["writer"], s["cmd"])
        one_zxid = s.get("one_zxid", False)
        if ev["java"] != ev["rust"] and not (one_zxid and Counter(ev["java"]) == Counter(ev["rust"])):
            problems.append("%s: Curator's cache and ours differ:\n    java: %s\n    rust: %s" % (
                tag, ev["java"], ev["rust"]))
        elif ev["java"] != ev["rust"]:
            notes.append("%s: one transaction, one zxid: the same events in another order:\n"
                         "    Curator's: %s\n    ours:      %s\n"
                         "    (the server notifies in the transaction's op order, which ours keeps; "
                         "Curator tells a deletion at once and a creation or change after its getData)"
                         % (tag, [e[:2] for e in ev["java"]], [e[:2] for e in ev["rust"]]))
        for f in FOLLOWERS:
            got = [(e[0], e[1]) for e in ev[f]]
            exp = [(k, p) for k, p, _ in s["expected"]]
            # (Ours must keep a transaction's op order; Curator's order inside one zxid is a note.)
            ordered = s["ordered"] and not (one_zxid and f == "java")
            if (got != exp) if ordered else (Counter(got) != Counter(exp)):
                problems.append("%s: %s printed %s, the step must give %s%s" % (
                    tag, f, got, exp, "" if ordered else " (in any order)"))
                continue
            for e, (k, p, d) in zip(ev[f], s["expected"]) if ordered else []:
                if d is not None and len(e) >= 5 and e[4] != d:
                    problems.append("%s: %s: %s %s has data %s, %s was written" % (tag, f, k, p, e[4], d))
            for e in ev[f]:
                if e[0] == "CREATED" and len(e) >= 5 and e[2] != e[3]:
                    problems.append("%s: %s: CREATED %s with czxid %s != mzxid %s" % (tag, f, e[1], e[2], e[3]))
            if f == "rust":
                for l in lines[f][s["lines"][f][0]:s["lines"][f][1]]:
                    if l.startswith("FRESHNESS") and l != "FRESHNESS current":
                        notes.append("%s: ours said %s" % (tag, l))
                    if l == "INITIALIZED":
                        notes.append("%s: %s re-synchronised (INITIALIZED again)" % (tag, f))
        compared += len(ev["java"])

    # Nothing after the last step; the final views.
    for f in FOLLOWERS:
        rest = lines[f][meta["ends"][f]:]
        cut = next((i for i, l in enumerate(rest) if l.startswith("VIEW")), len(rest))
        extra = node_events(rest[:cut])
        if extra:
            problems.append("%s: node events after the last step: %s" % (f, extra))
        view = view_of(rest)
        if view is None:
            problems.append("%s: no final view (VIEW-END) printed" % f)
        elif view != server:
            only_f = sorted(set(view) - set(server))
            only_s = sorted(set(server) - set(view))
            problems.append("%s: the final view is not the server's:\n    only in %s's: %s\n    only on the server: %s"
                            % (f, f, only_f, only_s))
    if not problems:
        notes.insert(0, "%d steps, %d node events each, the same in both caches; both final views "
                        "equal the server's %d nodes" % (len(done), compared, len(server)))
    return problems


def check_dir(work):
    files = {}
    for name in ["steps.json", "initial.view", "server.view", "java-follower.out", "rust-follower.out"]:
        with open(os.path.join(work, name), encoding="utf-8", errors="replace") as fh:
            files[name] = fh.read()
    notes = []
    problems = check(files, notes)
    root = json.loads(files["steps.json"])["root"]
    print("(R is %s)" % root)
    for n in notes:
        print("note: %s" % n.replace(root, "R"))
    for p in problems:
        print("FAIL: %s" % p.replace(root, "R"))
    return 0 if not problems else 1


def self_test():
    """A good run passes; each wrong one must be caught."""
    R = "/t"
    initial = "VIEW /t 1 1 72\nVIEW /t/a 2 2 61\nVIEW-END 2\n"
    steps = {"root": R, "ends": {"java": 9, "rust": 11}, "steps": [
        {"n": 1, "writer": "java", "cmd": "create /t/b/c 63", "result": "/t/b/c",
         "expected": [["CREATED", "/t/b", "-"], ["CREATED", "/t/b/c", "63"]], "ordered": True,
         "timeout": False, "lines": {"java": [3, 5], "rust": [5, 7]}},
        {"n": 2, "writer": "kazoo", "cmd": "recreate /t/a 6132", "result": "/t/a",
         "expected": [["DELETED", "/t/a", None], ["CREATED", "/t/a", "6132"]], "ordered": True,
         "timeout": False, "lines": {"java": [5, 7], "rust": [7, 9]}},
        {"n": 3, "writer": "rust", "cmd": "set /t/b/c 64", "result": "/t/b/c",
         "expected": [["CHANGED", "/t/b/c", "64"]], "ordered": True,
         "timeout": False, "lines": {"java": [7, 8], "rust": [9, 10]}},
        {"n": 4, "writer": "java", "cmd": "delete_rec /t/b", "result": "/t/b",
         "expected": [["DELETED", "/t/b/c", None], ["DELETED", "/t/b", None]], "ordered": False,
         "timeout": False, "lines": {"java": [8, 9], "rust": [10, 11]}},
    ]}
    # (Step 4's two events sit one line early in each log: fixed below.)
    java = ["CREATED /t/a 2 2 61", "CREATED /t 1 1 72", "INITIALIZED",
            "CREATED /t/b 5 5 -", "CREATED /t/b/c 6 6 63",
            "DELETED /t/a 2 2 61", "CREATED /t/a 8 8 6132",
            "CHANGED /t/b/c 6 9 64",
            "DELETED /t/b/c 6 9 64", "DELETED /t/b 5 5 -",
            "VIEW /t 1 1 72", "VIEW /t/a 8 8 6132", "VIEW-END 2"]
    rust = ["FRESHNESS resyncing", "CREATED /t 1 1 72", "CREATED /t/a 2 2 61", "INITIALIZED",
            "FRESHNESS current",
            "CREATED /t/b 5 5 -", "CREATED /t/b/c 6 6 63",
            "DELETED /t/a 2 2 61", "CREATED /t/a 8 8 6132",
            "CHANGED /t/b/c 6 9 64",
            "DELETED /t/b/c 6 9 64", "DELETED /t/b 5 5 -",
            "VIEW /t 1 1 72", "VIEW /t/a 8 8 6132", "VIEW-END 2"]
    steps["steps"][3]["lines"] = {"java": [8, 10], "rust": [10, 12]}
    # Step 5, one transaction: Curator tells the deletion first, ours keeps the op order.
    steps["steps"].append(
        {"n": 5, "writer": "kazoo", "cmd": "txn create /t/d - delete /t/a", "result": "-",
         "expected": [["CREATED", "/t/d", "-"], ["DELETED", "/t/a", None]], "ordered": True,
         "one_zxid": True, "timeout": False, "lines": {"java": [10, 12], "rust": [12, 14]}})
    java[10:10] = ["DELETED /t/a 8 8 6132", "CREATED /t/d 10 10 -"]
    rust[12:12] = ["CREATED /t/d 10 10 -", "DELETED /t/a 8 8 6132"]
    java[-3:] = ["VIEW /t 1 1 72", "VIEW /t/d 10 10 -", "VIEW-END 2"]
    rust[-3:] = ["VIEW /t 1 1 72", "VIEW /t/d 10 10 -", "VIEW-END 2"]
    steps["ends"] = {"java": 12, "rust": 14}
    server = "VIEW /t 1 1 72\nVIEW /t/d 10 10 -\nVIEW-END 2\n"

    def files(java=java, rust=rust, steps=steps, server=server):
        return {"steps.json": json.dumps(steps), "initial.view": initial, "server.view": server,
                "java-follower.out": "\n".join(java) + "\n", "rust-follower.out": "\n".join(rust) + "\n"}

    ok = True
    notes = []
    good = check(files(), notes)
    if not any("one transaction" in n for n in notes):
        good.append("no note of the transaction told in another order")
    if good:
        print("self-test: a good run was rejected: %s" % good)
        ok = False

    def swap(lines, i, j):
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines

    def replace(lines, i, new):
        lines = list(lines)
        lines[i] = new
        return lines

    bad = {
        "a step's events in the wrong order (rust)": files(rust=swap(rust, 7, 8)),
        "a delete and re-create told as one change (CURATOR-391's shape, java)":
            files(java=java[:5] + ["CHANGED /t/a 8 8 6132", "(nothing)"] + java[7:]),
        "an event missing (java)": files(java=java[:7] + ["INITIALIZED"] + java[8:]),
        "wrong data in a change (both)": files(java=replace(java, 7, "CHANGED /t/b/c 6 9 65"),
                                               rust=replace(rust, 9, "CHANGED /t/b/c 6 9 65")),
        "a different mzxid (rust)": files(rust=replace(rust, 9, "CHANGED /t/b/c 6 10 64")),
        "a final view that is not the server's (rust)": files(rust=replace(rust, 15, "VIEW /t/d 2 2 -")),
        "an event after the last step (java)": files(java=java[:12] + ["CREATED /t/x 11 11 -"] + java[12:]),
        "a transaction out of its op order (rust)": files(rust=swap(rust, 12, 13)),
        "a transaction's event missing (java)": files(java=replace(java, 10, "(nothing)")),
        "a first load missing a node (rust)": files(rust=rust[:2] + rust[3:]),
    }
    for name, fs in bad.items():
        if not check(fs):
            print("self-test: not caught: %s" % name)
            ok = False
    print("self-test: %s (a good run passes, %d wrong ones caught)" % (
        "ok" if ok else "FAILED", len(bad) if ok else 0))
    return 0 if ok else 1


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) == 2:
        return check_dir(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
