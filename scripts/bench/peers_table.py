#!/usr/bin/env python3
"""Prints BENCHMARKS.md's "Every peer, side by side" table from zk-bench's output.

usage: scripts/bench/peers_table.py RUN.txt [RUN.txt ...] [-- RUN.txt [RUN.txt ...] ...]

Each RUN.txt is the stdout of a `zk-bench --peers curator,zookeeper-client,kazoo,zookeeper`
run (key=value lines). The files of one run are merged (e.g. the run of
mutex,handoff,latency,deep,herd and the separate run of many); "--" separates
runs. One column per lock implementation; each cell gives every run's figure
("first / second"), and each peer's cell, in brackets, how many times ours is
better in each run (above 1: ours ahead; below 1: the peer ahead, in bold).
A dagger marks resident memory measured in zk-bench's own process after ours
ran there (zookeeper-client, zookeeper 0.8): not comparable, no ratio.
"""
import sys

PEERS = [
    ("Curator 5.4", "curator"),
    ("zookeeper-client 0.11", "zkclient"),
    ("kazoo 2.8", "kazoo"),
    ("zookeeper 0.8 (seed mutex written here)", "zookeeper08"),
]

# The peers that run inside zk-bench's own process (after ours).
IN_PROCESS = {"zkclient", "zookeeper08"}

# (label, our key, the peers' key with {p} for the prefix and {m} for the
# lock's name, "mutex" or for zookeeper08 "seed_mutex", {d} for zookeeper08's
# "seed_mutex."; lower is better? (None: no ratio), unit)
ROWS = [
    ("uncontended acquire+release, median", "mutex.uncontended_acquire_release.median_us",
     "{p}.{m}.uncontended_acquire_release.median_us", True, "µs"),
    ("uncontended acquire+release, p99", "mutex.uncontended_acquire_release.p99_us",
     "{p}.{m}.uncontended_acquire_release.p99_us", True, "µs"),
    ("handoffs/s, 8 sessions", "mutex.handoffs_per_s.sessions_8", "{p}.{m}.handoffs_per_s.sessions_8", False, ""),
    ("handoffs/s, 32 sessions", "mutex.handoffs_per_s.sessions_32", "{p}.{m}.handoffs_per_s.sessions_32", False, ""),
    ("handoffs/s, 128 sessions", "mutex.handoffs_per_s.sessions_128", "{p}.{m}.handoffs_per_s.sessions_128", False, ""),
    ("handoff latency p50, 8 sessions, no hold", "latency.mutex.handoff_latency.p50_us.sessions_8",
     "{p}.latency.{m}.handoff_latency.p50_us.sessions_8", True, "µs"),
    ("handoff latency p99, 8 sessions, no hold", "latency.mutex.handoff_latency.p99_us.sessions_8",
     "{p}.latency.{m}.handoff_latency.p99_us.sessions_8", True, "µs"),
    ("handoff latency p50, 8 sessions, 2 ms hold", "latency_hold_2ms.mutex.handoff_latency.p50_us.sessions_8",
     "{p}.latency_hold_2ms.{m}.handoff_latency.p50_us.sessions_8", True, "µs"),
    ("handoff latency p99, 8 sessions, 2 ms hold", "latency_hold_2ms.mutex.handoff_latency.p99_us.sessions_8",
     "{p}.latency_hold_2ms.{m}.handoff_latency.p99_us.sessions_8", True, "µs"),
    ("handoff latency p50, 128 sessions", "mutex.handoff_latency.p50_us.sessions_128",
     "{p}.{m}.handoff_latency.p50_us.sessions_128", True, "µs"),
    ("handoff latency p99, 128 sessions", "mutex.handoff_latency.p99_us.sessions_128",
     "{p}.{m}.handoff_latency.p99_us.sessions_128", True, "µs"),
    ("deep queue, 1,000 waiters of one session, drain", "deep.threads_1000.sessions_1.drain_ms",
     "{p}.{d}deep.threads_1000.sessions_1.drain_ms", True, "ms"),
    ("deep queue, 1,000 waiters over 100 sessions, drain", "deep.threads_1000.sessions_100.drain_ms",
     "{p}.{d}deep.threads_1000.sessions_100.drain_ms", True, "ms"),
    ("deep queue, notifications per release (100 sessions)",
     "deep.threads_1000.sessions_100.notifications_per_release",
     "{p}.{d}deep.threads_1000.sessions_100.notifications_per_release", None, ""),
    ("many locks: 10,000 held at once, acquires/s", "many.acquires_per_s.locks_10000",
     "{p}.{d}many.acquires_per_s.locks_10000", False, ""),
    ("many locks: releases/s", "many.releases_per_s.locks_10000", "{p}.{d}many.releases_per_s.locks_10000", False, ""),
    ("many locks: resident memory per held lock", "many.rss_bytes_per_held_lock",
     "{p}.{d}many.rss_bytes_per_held_lock", True, "B"),
]


def load(paths):
    d = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    try:
                        d[k] = float(v)
                    except ValueError:
                        pass
    return d


def fmt(v, unit):
    s = f"{v:,.0f}" if v >= 100 else f"{v:.3g}" if v < 10 else f"{v:.1f}"
    return f"{s} {unit}".strip()


def cell(vals, unit):
    """Figures of the runs, "a / b unit" (a dash for a run without it)."""
    shown = [fmt(v, "") if v is not None else "–" for v in vals]
    return (" / ".join(shown) + (" " + unit if unit else "")).strip()


def main(args):
    # Runs are separated by "--"; the files of one run are merged.
    runs, cur = [], []
    for a in args:
        if a == "--":
            runs.append(cur)
            cur = []
        else:
            cur.append(a)
    runs.append(cur)
    data = [load(r) for r in runs if r]
    head = ["scenario", "ours"] + [name for name, _ in PEERS]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for label, ours_key, peer_key, lower, unit in ROWS:
        ours = [d.get(ours_key) for d in data]
        cells = [label, cell(ours, unit) if any(v is not None for v in ours) else "–"]
        for _, p in PEERS:
            m = "seed_mutex" if p == "zookeeper08" else "mutex"
            dp = "seed_mutex." if p == "zookeeper08" else ""
            vals = [d.get(peer_key.format(p=p, m=m, d=dp)) for d in data]
            if all(v is None for v in vals):
                cells.append("–")
                continue
            if "rss" in peer_key and p in IN_PROCESS:
                # Measured in the process where ours ran first: memory freed by
                # ours is reused, so the growth of the resident set understates it.
                cells.append(cell(vals, unit) + " †")
                continue
            ratios = []
            for o, v in zip(ours, vals):
                if lower is None or not o or not v:
                    continue
                r = v / o if lower else o / v
                t = f"{r:.2f}×" if r < 10 else f"{r:.0f}×"
                ratios.append(f"**{t}**" if r < 1 else t)
            cells.append(cell(vals, unit) + (f" ({' / '.join(ratios)})" if ratios else ""))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
