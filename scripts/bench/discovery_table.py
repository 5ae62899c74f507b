#!/usr/bin/python3
"""The "Service discovery and set partitioner" tables of BENCHMARKS.md from
zk-bench runs of `--only discovery,partition --peers curator,kazoo`.

usage: scripts/bench/discovery_table.py RUN1.txt RUN2.txt ...

Every cell is the lowest-highest over the runs given (one value when they
agree or when there is one run); "-" when no run has the figure.
"""
import sys

from shared_table import cell, load

PEERS = [("ours", ""), ("Curator 5.4", "curator."), ("kazoo 2.8", "kazoo.")]


def skipped(runs, key):
    for r in runs:
        if key in r:
            return r[key]
    return None


def lookups(runs):
    print("| what | threads | implementation | per second | requests per operation | misses |")
    print("|---|---:|---|---:|---:|---:|")
    for kind, units, unit, what in (("lookups", "lookups", "lookup", "provider lookup (round robin, 10 instances)"),
                                    ("query", "queries", "query", "query for instances (direct read, 10 instances)")):
        for threads in (1, 2, 4, 8, 16):
            for name, p in PEERS:
                k = "%sdiscovery.%s.threads_%d." % (p, kind, threads)
                if not any(k + units + "_per_s" in r for r in runs):
                    continue
                print("| %s | %d | %s | %s | %s | %s |" % (
                    what, threads, name, cell(runs, k + units + "_per_s"),
                    cell(runs, k + "requests_per_" + unit, fmt="{:.2f}"), cell(runs, k + "misses")))
    why = skipped(runs, "kazoo.discovery.skipped")
    if why:
        print("\nkazoo: skipped (%s)." % why)


def registration(runs):
    print("| implementation | what | p50 ms | p99 ms | max ms | expiries per run |")
    print("|---|---|---:|---:|---:|---:|")
    rows = [("ours", "discovery.registration.expiry_to_node_back", "expiry call to node back (observer)"),
            ("Curator 5.4", "curator.discovery.registration.expiry_to_node_back", "expiry call to node back (observer)"),
            ("ours", "discovery.registration.deleted_to_node_back", "deletion seen to node back (observer)"),
            ("Curator 5.4", "curator.discovery.registration.deleted_to_node_back",
             "deletion seen to node back (observer)"),
            ("ours", "discovery.registration.expiry_to_registered_event",
             "expiry call to its own `Registered` event")]
    for name, k, what in rows:
        if not any(k + ".n" in r for r in runs):
            continue
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, what, cell(runs, k + ".p50_us", 1e-3, "{:.1f}"), cell(runs, k + ".p99_us", 1e-3, "{:.1f}"),
            cell(runs, k + ".max_us", 1e-3, "{:.1f}"), cell(runs, k + ".n")))


def partition(runs):
    print("| implementation | members, items | rebalance after | p50 ms | p99 ms | max ms | rebalances per run |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, p in PEERS:
        for m in range(2, 65):
            base = "%spartition.members_%d.items_32." % (p, m)
            for what, k in (("a join", "join_to_settled"), ("a session expiry", "expiry_to_settled"),
                            ("a client close", "close_to_settled")):
                k = base + k
                if not any(k + ".n" in r for r in runs):
                    continue
                print("| %s | %d, 32 | %s | %s | %s | %s | %s |" % (
                    name, m, what, cell(runs, k + ".p50_us", 1e-3, "{:.1f}"),
                    cell(runs, k + ".p99_us", 1e-3, "{:.1f}"), cell(runs, k + ".max_us", 1e-3, "{:.1f}"),
                    cell(runs, k + ".n")))
    why = skipped(runs, "curator.partition.skipped")
    if why:
        print("\nCurator: skipped (%s)." % why)


def main(paths):
    runs = [load(p) for p in paths]
    print("#### Discovery lookups\n")
    lookups(runs)
    print("\n#### A registration's return after an expiry\n")
    registration(runs)
    print("\n#### Set partitioner: rebalance time\n")
    partition(runs)


if __name__ == "__main__":
    main(sys.argv[1:])
