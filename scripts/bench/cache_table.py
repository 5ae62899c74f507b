#!/usr/bin/env python3
"""Prints BENCHMARKS.md's "Watching: CuratorCache" table from zk-bench's output.

usage: scripts/bench/cache_table.py RUN.txt [RUN.txt ...]

Each RUN.txt is the stdout of a `zk-bench --only cache --peers curator,kazoo`
run (key=value lines), one run per file. One column per cache; each cell gives
every run's figure ("first / second"), and each peer's cell, in brackets, how
many times ours is better in each run (above 1: ours ahead; below 1: the peer
ahead, in bold).
"""
import sys

PEERS = [("Curator 5.4 CuratorCache", "curator"), ("kazoo 2.8 TreeCache", "kazoo")]

# (label, key without the prefix, lower is better? (None: no ratio), unit)
ROWS = [
    ("write-to-event p50, 1 leaf", "cache.write_to_event.p50_us.leaves_1", True, "µs"),
    ("write-to-event p99, 1 leaf", "cache.write_to_event.p99_us.leaves_1", True, "µs"),
    ("write-to-event p50, 100 leaves", "cache.write_to_event.p50_us.leaves_100", True, "µs"),
    ("write-to-event p99, 100 leaves", "cache.write_to_event.p99_us.leaves_100", True, "µs"),
    ("write-to-event p50, 1,000 leaves", "cache.write_to_event.p50_us.leaves_1000", True, "µs"),
    ("write-to-event p99, 1,000 leaves", "cache.write_to_event.p99_us.leaves_1000", True, "µs"),
    ("floor: setData then one getData, p50", "cache.floor.set_then_get.p50_us", None, "µs"),
    ("requests per change (1,000 leaves)", "cache.requests_per_change.leaves_1000", True, ""),
    ("start to initialized, 10,000 leaves (10,102 nodes)", "cache.start_to_initialized_ms.leaves_10000", True, "ms"),
    ("start: requests", "cache.start_requests.leaves_10000", True, ""),
    ("start's floor: the same reads, no cache, one at a time", "cache.floor.sequential_reads_ms.leaves_10000", None, "ms"),
    ("start's floor: the same reads, no cache, 8 threads", "cache.floor.reads_8_threads_ms.leaves_10000", None, "ms"),
    ("memory: RSS growth per cached node", "cache.rss_bytes_per_node.leaves_10000", True, "B"),
    ("memory: Java heap in use per cached node", "cache.java_heap_bytes_per_node.leaves_10000", None, "B"),
]


def load(path):
    d = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                try:
                    d[k] = float(v)
                except ValueError:
                    pass
    return d


def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}" if v < 10 else f"{v:.1f}"


def cell(vals, unit):
    if all(v is None for v in vals):
        return "–"
    shown = [fmt(v) if v is not None else "–" for v in vals]
    return (" / ".join(shown) + (" " + unit if unit else "")).strip()


def main(paths):
    data = [load(p) for p in paths]
    head = ["figure", "ours"] + [name for name, _ in PEERS]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for label, key, lower, unit in ROWS:
        ours = [d.get(key) for d in data]
        cells = [label, cell(ours, unit)]
        for _, p in PEERS:
            vals = [d.get(f"{p}.{key}") for d in data]
            ratios = []
            for o, v in zip(ours, vals):
                if lower is None or not o or not v:
                    continue
                r = v / o if lower else o / v
                t = f"{r:.2f}×" if r < 10 else f"{r:.0f}×"
                ratios.append(f"**{t}**" if r < 0.995 else t)
            cells.append(cell(vals, unit) + (f" ({' / '.join(ratios)})" if ratios else ""))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
