#!/usr/bin/python3
"""The "Registration and shared state" tables of BENCHMARKS.md from zk-bench
runs of `--only counter,registration,barrier --peers curator,kazoo`.

usage: scripts/bench/shared_table.py RUN1.txt RUN2.txt ...

Every cell is the lowest-highest over the runs given (one value when they
agree or when there is one run); "-" when no run has the figure.
"""
import sys

PEERS = [("ours", ""), ("Curator 5.4", "curator."), ("kazoo 2.8", "kazoo.")]


def load(path):
    d = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                d[k] = v
    return d


def cell(runs, key, scale=1.0, fmt="{:.0f}"):
    vals = []
    for r in runs:
        if key in r:
            try:
                vals.append(float(r[key]) * scale)
            except ValueError:
                return r[key]
    if not vals:
        return "-"
    lo, hi = fmt.format(min(vals)), fmt.format(max(vals))
    return lo if lo == hi else "%s-%s" % (lo, hi)


def text(runs, key):
    vals = sorted({r[key] for r in runs if key in r})
    return "/".join(vals) if vals else "-"


def counter(runs):
    print("| sessions | retry | implementation | increments/s | tries per increment | requests per increment "
          "| getData / setData per increment | not applied | read-back / Unknown | final = applied |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
    for sessions in (8, 32):
        for retry in ("exp_100ms_3", "n_1000_0ms", "kazoo_default"):
            for name, p in PEERS:
                k = "%scounter.sessions_%d.retry_%s." % (p, sessions, retry)
                if not any(k + "applied" in r for r in runs):
                    continue
                gs = "%s / %s" % (cell(runs, k + "get_data_per_increment", fmt="{:.2f}"),
                                  cell(runs, k + "set_data_per_increment", fmt="{:.2f}"))
                rb = "%s / %s" % (cell(runs, k + "read_back"), cell(runs, k + "unknown")) if not p else "(none)"
                print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    sessions, retry, name, cell(runs, k + "increments_per_s"),
                    cell(runs, k + "tries_per_increment", fmt="{:.2f}"),
                    cell(runs, k + "requests_per_increment", fmt="{:.2f}"), gs,
                    cell(runs, k + "not_applied"), rb, text(runs, k + "final_equals_applied")))


def registration(runs):
    print("| implementation | what | p50 ms | p99 ms | max ms | expiries per run |")
    print("|---|---|---:|---:|---:|---:|")
    rows = [("ours", "registration.expiry_to_node_back", "expiry call to node back (observer)"),
            ("Curator 5.4", "curator.registration.expiry_to_node_back", "expiry call to node back (observer)"),
            ("ours", "registration.deleted_to_node_back", "deletion seen to node back (observer)"),
            ("Curator 5.4", "curator.registration.deleted_to_node_back", "deletion seen to node back (observer)"),
            ("ours", "registration.expiry_to_registered_event", "expiry call to its own `Registered` event")]
    for name, k, what in rows:
        if not any(k + ".n" in r for r in runs):
            continue
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, what, cell(runs, k + ".p50_us", 1e-3, "{:.1f}"), cell(runs, k + ".p99_us", 1e-3, "{:.1f}"),
            cell(runs, k + ".max_us", 1e-3, "{:.1f}"), cell(runs, k + ".n")))
    for r in runs:
        if "kazoo.registration.skipped" in r:
            print("\nkazoo: skipped (%s)." % r["kazoo.registration.skipped"])
            break


def barrier(runs):
    print("| implementation | members | round p50 ms | round p99 ms | requests per round | failed member-rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, p in PEERS:
        for m in range(1, 65):
            k = "%sbarrier.members_%d." % (p, m)
            if not any(k + "round.n" in r for r in runs):
                continue
            print("| %s | %d | %s | %s | %s | %s |" % (
                name, m, cell(runs, k + "round.p50_us", 1e-3, "{:.2f}"), cell(runs, k + "round.p99_us", 1e-3, "{:.2f}"),
                cell(runs, k + "requests_per_round", fmt="{:.1f}"), cell(runs, k + "failed_member_rounds")))
            for r in runs:
                if k + "hung_round" in r:
                    print("\n%s: a round hung (round %s: %s)." % (name, r[k + "hung_round"], r.get(k + "hung_state")))


def main(paths):
    runs = [load(p) for p in paths]
    print("#### Counter\n")
    counter(runs)
    print("\n#### Registration after an expiry\n")
    registration(runs)
    print("\n#### Double barrier round\n")
    barrier(runs)


if __name__ == "__main__":
    main(sys.argv[1:])
