#!/usr/bin/env python3
"""Maps every test of BEFORE to one of AFTER (lists written by list-tests.py).

A test maps to the same name in the same binary if it is still there, else to
the same full name in another binary (a suite moved whole), else to the one
test of AFTER, not yet taken, whose name ends with its name (a test moved into
a module: `zk_lock` -> `it`'s `exclusion::...`), else to the one test not yet
taken with the same last name segment (`framework_namespace::x` ->
`namespace::x`). Prints `OLD_BINARY<TAB>OLD_NAME<TAB>NEW_BINARY<TAB>NEW_NAME`,
then the tests of AFTER that nothing maps to (new ones), and exits non-zero if
a test of BEFORE has no match.

Usage: python3 docs/test-moves/map-tests.py before.tsv after.tsv > mapping.tsv
"""
import sys
from collections import defaultdict

def load(p):
    return [tuple(l.rstrip("\n").split("\t")) for l in open(p) if l.strip()]

before, after = load(sys.argv[1]), load(sys.argv[2])
free = set(after)
by_name = defaultdict(list)
by_last = defaultdict(list)
for b, t in after:
    by_name[t].append((b, t))
    by_last[t.rsplit("::", 1)[-1]].append((b, t))
rows, lost = [], []
# The doc tests' names carry line numbers; map them by binary and name without the line.
def doc_key(t):
    return t.rsplit(" (line", 1)[0]
for b, t in before:
    m = None
    if (b, t) in free:
        m = (b, t)
    if m is None and b.endswith(":doc"):
        cands = [x for x in after if x[0] == b and doc_key(x[1]) == doc_key(t) and x in free]
        m = cands[0] if cands else None
    if m is None:
        cands = [x for x in by_name[t] if x in free and x[0].split(":")[1] == b.split(":")[1]]
        m = cands[0] if len(cands) == 1 else None
    if m is None:
        suffix = t.rsplit("::", 1)[-1]
        same_kind = b.endswith("+embedded") or b.endswith("+metrics")
        cands = [x for x in by_last[suffix] if x in free and x[1].endswith(t)
                 and (x[0].endswith("+embedded") or x[0].endswith("+metrics")) == same_kind]
        m = cands[0] if len(cands) == 1 else None
    if m is None:
        cands = [x for x in by_last[t.rsplit("::", 1)[-1]] if x in free and ":doc" not in x[0]]
        m = cands[0] if len(cands) == 1 else None
    if m is None:
        lost.append((b, t))
        continue
    free.discard(m)
    rows.append((b, t) + m)
for r in rows:
    print("\t".join(r))
for b, t in sorted(free):
    print(f"-\t-\t{b}\t{t}\t(new)")
for b, t in lost:
    print(f"{b}\t{t}\t-\t-\t(LOST)")
print(f"# {len(before)} before, {len(after)} after, {len(rows)} mapped, {len(free)} new, {len(lost)} lost",
      file=sys.stderr)
sys.exit(1 if lost else 0)
