#!/usr/bin/env python3
"""Checks that lock contenders' critical sections never overlapped.

usage: check_overlap.py [--iterations N] [--contenders N] [--tolerance-ns NS]
                        [--rw [--reader-pattern REGEX] [--min-reader-overlaps N]]
                        [--fifo [--first-grants K --first-pattern REGEX]] LOG_FILE...

Reads lines "NAME START <epoch nanos> [LOCK_NODE QUEUE_ID]" / "NAME END <epoch nanos>"
(written by CuratorMutexContender.java, CuratorRwContender.java, CuratorMultiLockContender.java,
kazoo_contender.py and examples/interop_contender.rs) from one or more files, pairs each
START with the next END of the same contender, and fails (exit 1, with a message) if:
  * two critical sections of different contenders overlap in time (one START lies before the
    END of another section that began earlier, by more than the tolerance, default 1000 ns:
    Java's Instant.now() has microsecond resolution, Python's time_ns() nanosecond);
    with --rw (a read/write lock), contenders whose name matches --reader-pattern (a Python
    regex searched in the name, default "read") are readers and may overlap each other; a
    writer may overlap nobody. --min-reader-overlaps N then also requires at least N
    reader/reader overlaps (proof that readers really shared the lock);
  * a contender's lines are malformed (END without START, START twice, unfinished section);
  * with --iterations N: a contender did not complete exactly N sections;
  * with --contenders N: the logs do not name exactly N contenders;
  * with --fifo (a lock that grants in queue order: a mutex, a semaphore mutex's leases):
    a START line does not name its LOCK_NODE (the sequential node the grant was made to,
    ending in its 10-digit sequence number) and QUEUE_ID (the czxid of the node's parent), the
    nodes do not all have the same parent path, or, taken in the order of their START stamps,
    the grants' (QUEUE_ID, sequence number) pairs do not strictly increase (a grant jumped the
    queue, or one node was granted twice). The QUEUE_ID tells incarnations of the parent apart:
    Curator's lock parents are containers, which the server deletes once empty, and a
    re-created parent numbers its children from 0 again (a new, later queue);
  * with --first-grants K --first-pattern REGEX (and --fifo): the first K grants were not
    made to K different contenders whose names match REGEX (the side started first, whose
    nodes were queued before the other side's contenders started).
On success prints "contenders=N sections=M overlaps=0" (with --rw also
"reader_overlaps=K max_readers=R", with --fifo also "fifo=ok queues=Q" and, with
--first-grants, the first grantees and "handoffs=H", how often the lock passed between the
contenders matching --first-pattern and the others) and exits 0.
Standard library only.
"""

import argparse
import re
import sys


def parse(paths):
    """Returns ({name: [(start, end, where)]}, [(start, name, (node, queue_id) or None, where)],
    [errors])."""
    sections = {}
    grants = []
    open_start = {}
    errors = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for lineno, raw in enumerate(f, 1):
                line = raw.strip()
                if not line:
                    continue
                where = "%s:%d" % (path, lineno)
                parts = line.split()
                if len(parts) not in (3, 5) or parts[1] not in ("START", "END") \
                        or (len(parts) == 5 and parts[1] != "START"):
                    errors.append("%s: malformed line %r" % (where, line))
                    continue
                name, what, stamp = parts[:3]
                node = None
                if len(parts) == 5:
                    try:
                        node = (parts[3], int(parts[4]))
                    except ValueError:
                        errors.append("%s: bad queue id in %r" % (where, line))
                        continue
                try:
                    t = int(stamp)
                except ValueError:
                    errors.append("%s: bad timestamp in %r" % (where, line))
                    continue
                sections.setdefault(name, [])
                if what == "START":
                    if name in open_start:
                        errors.append("%s: %s START while its section from %s is still open"
                                      % (where, name, open_start[name][1]))
                    open_start[name] = (t, where)
                    grants.append((t, name, node, where))
                else:
                    if name not in open_start:
                        errors.append("%s: %s END without START" % (where, name))
                        continue
                    start, start_where = open_start.pop(name)
                    if t < start:
                        errors.append("%s: %s END before its START (%s)" % (where, name, start_where))
                    sections[name].append((start, t, start_where))
    for name, (t, where) in sorted(open_start.items()):
        errors.append("%s: %s START never ended" % (where, name))
    return sections, grants, errors


SEQUENCE_RE = re.compile(r"^(.*)/[^/]*?([0-9]{10,})$")


def check_fifo(grants, first_grants, first_pattern):
    """Queue-order rule: returns (errors, summary)."""
    errors = []
    ordered = sorted(grants)
    keys = []
    parents = set()
    for _t, name, node, where in ordered:
        if node is None:
            errors.append("%s: %s START names no lock node and queue id (needed by --fifo)" % (where, name))
            continue
        path, queue = node
        m = SEQUENCE_RE.match(path)
        if not m:
            errors.append("%s: %s's lock node %r does not end in a sequence number" % (where, name, path))
            continue
        parents.add(m.group(1))
        keys.append(((queue, int(m.group(2))), name, path, where))
    if len(parents) > 1:
        errors.append("lock nodes under different parents: %s" % ", ".join(sorted(parents)))
    for (key1, name1, node1, where1), (key2, name2, node2, where2) in zip(keys, keys[1:]):
        if key2 <= key1:
            errors.append("FIFO: %s (%s) was granted %s (queue %d, sequence %d) after %s (%s) was "
                          "granted %s (queue %d, sequence %d)"
                          % (name2, where2, node2, key2[0], key2[1], name1, where1, node1, key1[0], key1[1]))
    if first_grants:
        first = [name for _t, name, _n, _w in ordered[:first_grants]]
        pattern = re.compile(first_pattern)
        if len(first) < first_grants or len(set(first)) != first_grants \
                or not all(pattern.search(n) for n in first):
            errors.append("the first %d grants went to %s, not to %d different contenders matching %r"
                          % (first_grants, ", ".join(first) or "nobody", first_grants, first_pattern))
    summary = " fifo=%s" % ("ok" if not errors else "FAILED")
    if keys:
        summary += " queues=%d" % len(set(k[0][0] for k in keys))
    if first_grants:
        summary += " first=%s" % ",".join(name for _t, name, _n, _w in ordered[:first_grants])
        # How often the lock passed from one side to the other (both ways).
        sides = [bool(pattern.search(name)) for _t, name, _n, _w in ordered]
        summary += " handoffs=%d" % sum(1 for a, b in zip(sides, sides[1:]) if a != b)
    return errors, summary


def find_overlaps(sections, tolerance_ns):
    intervals = sorted(
        (start, end, name, where)
        for name, secs in sections.items()
        for (start, end, where) in secs
    )
    overlaps = []
    latest = None  # (end, name, where) of the section that ends last so far
    for start, end, name, where in intervals:
        if latest is not None and start < latest[0] - tolerance_ns and latest[1] != name:
            overlaps.append(
                "%s (%s) started %d ns before %s (%s) ended"
                % (name, where, latest[0] - start, latest[1], latest[2])
            )
        if latest is None or end > latest[0]:
            latest = (end, name, where)
    return overlaps


def find_overlaps_rw(sections, tolerance_ns, is_reader):
    """Read/write rule: returns (overlaps involving a writer, reader/reader overlaps,
    max concurrent readers)."""
    intervals = sorted(
        (start, end, name, where)
        for name, secs in sections.items()
        for (start, end, where) in secs
    )
    overlaps = []
    reader_overlaps = 0
    for i, (start, end, name, where) in enumerate(intervals):
        for start2, _end2, name2, where2 in intervals[i + 1:]:
            if start2 >= end - tolerance_ns:
                break  # sorted by start: no later section overlaps this one
            if name2 == name:
                continue  # reported by parse() as START while open
            if is_reader(name) and is_reader(name2):
                reader_overlaps += 1
                continue
            overlaps.append(
                "%s %s (%s) started %d ns before %s %s (%s) ended"
                % ("reader" if is_reader(name2) else "writer", name2, where2, end - start2,
                   "reader" if is_reader(name) else "writer", name, where)
            )
    events = sorted(
        [(start, 1) for name, secs in sections.items() if is_reader(name) for (start, _e, _w) in secs]
        + [(end, -1) for name, secs in sections.items() if is_reader(name) for (_s, end, _w) in secs]
    )
    current = max_readers = 0
    for _t, delta in events:  # at equal stamps -1 sorts first: touching is not overlapping
        current += delta
        max_readers = max(max_readers, current)
    return overlaps, reader_overlaps, max_readers


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="log files (one shared file or one per contender)")
    ap.add_argument("--iterations", type=int, help="sections each contender must complete")
    ap.add_argument("--contenders", type=int, help="number of contenders expected in the logs")
    ap.add_argument("--tolerance-ns", type=int, default=1000,
                    help="clock-resolution slack before calling two sections overlapping")
    ap.add_argument("--rw", action="store_true",
                    help="read/write lock: readers may overlap readers, a writer overlaps nobody")
    ap.add_argument("--reader-pattern", default="read",
                    help="with --rw: a regex searched in contender names to pick the readers")
    ap.add_argument("--min-reader-overlaps", type=int, default=0,
                    help="with --rw: fail unless readers overlapped at least this often")
    ap.add_argument("--fifo", action="store_true",
                    help="every START names its lock node; grants must follow sequence order")
    ap.add_argument("--first-grants", type=int, default=0,
                    help="with --fifo: the first K grants must go to K contenders matching "
                         "--first-pattern")
    ap.add_argument("--first-pattern", default=None,
                    help="with --first-grants: a regex searched in contender names")
    args = ap.parse_args(argv[1:])
    if args.first_grants and (not args.fifo or args.first_pattern is None):
        ap.error("--first-grants needs --fifo and --first-pattern")

    try:
        sections, grants, errors = parse(args.logs)
    except OSError as e:
        print("check_overlap: cannot read the logs: %s" % e, file=sys.stderr)
        return 1
    extra = ""
    if args.rw:
        reader_re = re.compile(args.reader_pattern)
        overlaps, reader_overlaps, max_readers = find_overlaps_rw(
            sections, args.tolerance_ns, lambda name: reader_re.search(name) is not None)
        extra = " reader_overlaps=%d max_readers=%d" % (reader_overlaps, max_readers)
        if reader_overlaps < args.min_reader_overlaps:
            errors.append("readers overlapped %d times, fewer than the %d required"
                          % (reader_overlaps, args.min_reader_overlaps))
    else:
        overlaps = find_overlaps(sections, args.tolerance_ns)
    if args.fifo:
        fifo_errors, fifo_summary = check_fifo(grants, args.first_grants, args.first_pattern)
        errors.extend(fifo_errors)
        extra += fifo_summary
    if args.contenders is not None and len(sections) != args.contenders:
        errors.append("expected %d contenders, found %d: %s"
                      % (args.contenders, len(sections), ", ".join(sorted(sections)) or "none"))
    if args.iterations is not None:
        for name, secs in sorted(sections.items()):
            if len(secs) != args.iterations:
                errors.append("%s completed %d of %d iterations" % (name, len(secs), args.iterations))

    total = sum(len(s) for s in sections.values())
    summary = "contenders=%d sections=%d overlaps=%d%s" % (len(sections), total, len(overlaps), extra)
    for msg in overlaps:
        print("OVERLAP: " + msg, file=sys.stderr)
    for msg in errors:
        print("ERROR: " + msg, file=sys.stderr)
    print(summary)
    if overlaps or errors:
        print("check_overlap: FAILED", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
