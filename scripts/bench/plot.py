#!/usr/bin/env python3
"""Draws BENCHMARKS.md's plots (SVG, no dependencies) from zk-bench's own output.

usage: scripts/bench/plot.py OUT_DIR RUN.txt [RUN.txt ...]

Each RUN.txt is the stdout of one `zk-bench --apache --curator ...` run (key=value
lines). With several runs, a plot shows the median and a bar from the lowest to
the highest value. Writes handoffs.svg (acquisitions/s against sessions),
latency-p50.svg and latency-p99.svg (release -> next grant against sessions),
latency-rhythms.svg (release -> next grant with and without a critical section,
beside the floor measured in the same rhythm) and
deep.svg (the deep queue's drain time); with other peers in the runs (zk-bench
--peers), peers-*.svg draws every peer the same way (handoffs, latency p50/p99,
the uncontended cycle, the deep queue, many locks); with failover figures
(zk-bench --only failover), failover.svg (close failover p50/p99 per number of
participants, ours and Curator's LeaderLatch); and prints a Markdown table of every
figure the runs share (median, min-max, and Curator's / ours where both exist).
"""
import math
import os
import statistics
import sys


def load(path):
    d = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                try:
                    d[k] = float(v)
                except ValueError:
                    pass
    return d


def stats(runs, key):
    vals = [r[key] for r in runs if key in r]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


COLORS = {"ours": "#1f77b4", "Curator 5.4": "#d62728", "zookeeper-client 0.11": "#2ca02c",
          "kazoo 2.8": "#9467bd", "zookeeper 0.8 seed mutex": "#ff7f0e"}

# Every peer's key for one of our figures (zk-bench --peers).
PEERS = [("ours", ""), ("Curator 5.4", "curator."), ("zookeeper-client 0.11", "zkclient."),
         ("kazoo 2.8", "kazoo."), ("zookeeper 0.8 seed mutex", "zookeeper08.")]


def peer_key(prefix, base):
    """zookeeper 0.8's figures are its seed mutex's: `zookeeper08.seed_mutex.*`."""
    if prefix != "zookeeper08.":
        return prefix + base
    return "zookeeper08.seed_" + base if base.startswith("mutex.") else "zookeeper08.seed_mutex." + base


def failover_plot(out, runs):
    """Leader failover (zk-bench --only failover): close() to the next leader's event."""
    ns = sorted({int(k.split("close_n")[1].split(".")[0]) for r in runs for k in r
                 if k.startswith("failover.close_n") and k.endswith(".p50_us")})
    labels = [f"{n} participants, {q}" for n in ns for q in ("p50", "p99")]
    bar_plot(
        os.path.join(out, "failover.svg"),
        "Leader failover: close() to the next leader's event (µs, lower is better)",
        "microseconds",
        labels,
        [(name, COLORS[name], [stats(runs, f"{p}failover.close_n{n}.{q}_us") for n in ns for q in ("p50", "p99")])
         for name, p in (("ours", ""), ("Curator 5.4", "curator."))],
    )


def peer_plots(out, runs):
    """The plots with every peer (written when the runs have a peer beside Curator)."""
    sessions = [8, 32, 128]
    labels = [f"{s} sessions" for s in sessions]
    series_plot(
        os.path.join(out, "peers-handoffs.svg"),
        "Mutex handoffs/s against sessions, every peer",
        "acquisitions per second",
        labels,
        [(n, COLORS[n], None, [stats(runs, peer_key(p, f"mutex.handoffs_per_s.sessions_{s}")) for s in sessions])
         for n, p in PEERS],
    )
    for q in ("p50", "p99"):
        series_plot(
            os.path.join(out, f"peers-latency-{q}.svg"),
            f"Mutex release to next grant, {q}, every peer (µs, lower is better)",
            "microseconds",
            labels,
            [(n, COLORS[n], None,
              [stats(runs, peer_key(p, f"mutex.handoff_latency.{q}_us.sessions_{s}")) for s in sessions])
             for n, p in PEERS],
        )
    bar_plot(
        os.path.join(out, "peers-uncontended.svg"),
        "Uncontended acquire+release, every peer (µs, lower is better)",
        "microseconds",
        ["median", "p99"],
        [(n, COLORS[n], [stats(runs, peer_key(p, f"mutex.uncontended_acquire_release.{q}_us")) for q in ("median", "p99")])
         for n, p in PEERS],
    )
    bar_plot(
        os.path.join(out, "peers-deep.svg"),
        "Deep queue: 1,000 waiters, drain time, every peer (ms, lower is better)",
        "milliseconds",
        ["1 session (threads)", "100 sessions"],
        [(n, COLORS[n], [stats(runs, peer_key(p, f"deep.threads_1000.sessions_{s}.drain_ms")) for s in (1, 100)])
         for n, p in PEERS],
    )
    bar_plot(
        os.path.join(out, "peers-many.svg"),
        "Many locks: 10,000 locks taken and given back, every peer (per second)",
        "locks per second",
        ["acquires/s", "releases/s"],
        [(n, COLORS[n], [stats(runs, peer_key(p, f"many.{k}_per_s.locks_10000")) for k in ("acquires", "releases")])
         for n, p in PEERS],
    )


class Svg:
    def __init__(self, w=640, h=400, title=""):
        self.w, self.h = w, h
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
            f'<rect width="{w}" height="{h}" fill="white"/>',
            f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="15">{title}</text>',
        ]

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, anchor="middle", size=12, rotate=None):
        t = f' transform="rotate({rotate} {x} {y})"' if rotate else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{t}>{s}</text>')

    def line(self, x1, y1, x2, y2, color="black", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="{width}"{d}/>')

    def save(self, path):
        self.add("</svg>")
        with open(path, "w") as f:
            f.write("\n".join(self.parts) + "\n")


def nice_max(v):
    """The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= v."""
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def frame(svg, xlabels, ymax, ylabel, left=70, right=20, top=40, bottom=50):
    """Axes with categorical x positions; returns (x_of(i), y_of(v))."""
    pw, ph = svg.w - left - right, svg.h - top - bottom
    n = len(xlabels)

    def x_of(i):
        return left + pw * (i + 0.5) / n

    def y_of(v):
        return top + ph * (1 - v / ymax)

    svg.line(left, top, left, top + ph)
    svg.line(left, top + ph, left + pw, top + ph)
    for k in range(6):
        v = ymax * k / 5
        y = y_of(v)
        svg.line(left, y, left + pw, y, color="#dddddd")
        svg.text(left - 6, y + 4, f"{v:,.0f}" if ymax >= 50 else f"{v:,.1f}", anchor="end")
    for i, lab in enumerate(xlabels):
        svg.text(x_of(i), top + ph + 18, lab)
    svg.text(16, top + ph / 2, ylabel, rotate=-90)
    return x_of, y_of


def legend(svg, items, x=90, y=50):
    for i, (name, color, dash) in enumerate(items):
        yy = y + 16 * i
        svg.line(x, yy, x + 24, yy, color=color, width=2, dash=dash)
        svg.text(x + 30, yy + 4, name, anchor="start")


def series_plot(path, title, ylabel, xlabels, series, floor=None):
    """series: list of (name, color, dash, [(median, lo, hi) or None per x]);
    floor: a (median, lo, hi) drawn as a grey horizontal line."""
    top = max((s[2] for _, _, _, pts in series for s in pts if s), default=1)
    svg = Svg(title=title)
    x_of, y_of = frame(svg, xlabels, nice_max(top * 1.1), ylabel)
    if floor:
        y = y_of(floor[0])
        svg.line(70, y, svg.w - 20, y, color="#888888", width=1.5, dash="2,3")
        svg.text(74, y - 4, f"floor: one write + one notification, p50 {floor[0]:,.0f}", anchor="start", size=10)
    for name, color, dash, pts in series:
        prev = None
        for i, p in enumerate(pts):
            if not p:
                prev = None
                continue
            m, lo, hi = p
            x = x_of(i)
            svg.line(x, y_of(lo), x, y_of(hi), color=color)
            svg.add(f'<circle cx="{x:.1f}" cy="{y_of(m):.1f}" r="3.5" fill="{color}"/>')
            svg.text(x + 6, y_of(m) - 6, f"{m:,.0f}", anchor="start", size=10)
            if prev:
                svg.line(prev[0], prev[1], x, y_of(m), color=color, width=2, dash=dash)
            prev = (x, y_of(m))
    legend(svg, [(n, c, d) for n, c, d, _ in series], x=svg.w - 230)
    svg.save(path)


def bar_plot(path, title, ylabel, xlabels, groups):
    """groups: list of (name, color, [(median, lo, hi) or None per x])."""
    top = max((s[2] for _, _, pts in groups for s in pts if s), default=1)
    svg = Svg(title=title)
    ymax = nice_max(top * 1.1)
    x_of, y_of = frame(svg, xlabels, ymax, ylabel)
    n = len(groups)
    # Every group's bar side by side within its slot (narrower with many peers).
    width = max(12, min(50, int((svg.w - 90) / max(1, len(xlabels)) / (n + 1)) - 6))
    for g, (name, color, pts) in enumerate(groups):
        for i, p in enumerate(pts):
            if not p:
                continue
            m, lo, hi = p
            x = x_of(i) + (g - (n - 1) / 2) * (width + 6)
            svg.add(f'<rect x="{x - width / 2:.1f}" y="{y_of(m):.1f}" width="{width}" '
                    f'height="{y_of(0) - y_of(m):.1f}" fill="{color}"/>')
            svg.line(x, y_of(lo), x, y_of(hi), color="black")
            svg.text(x, y_of(hi) - 5, f"{m:,.0f}", size=10)
    legend(svg, [(n, c, None) for n, c, _ in groups], x=svg.w - 230)
    svg.save(path)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    out = sys.argv[1]
    runs = [load(p) for p in sys.argv[2:]]
    os.makedirs(out, exist_ok=True)
    sessions = [8, 32, 128]
    labels = [f"{s} sessions" for s in sessions]
    both = [("ours", ""), ("Curator 5.4", "curator.")]
    series_plot(
        os.path.join(out, "handoffs.svg"),
        "Mutex handoffs/s against sessions (Apache ZooKeeper 3.8)",
        "acquisitions per second",
        labels,
        [(name, COLORS[name], None, [stats(runs, f"{p}mutex.handoffs_per_s.sessions_{s}") for s in sessions])
         for name, p in both],
    )
    floor = stats(runs, "floor.write_plus_notification.p50_us")
    for q, fl in (("p50", floor), ("p99", None)):
        series_plot(
            os.path.join(out, f"latency-{q}.svg"),
            f"Mutex release to next grant, {q} (µs, lower is better)",
            "microseconds",
            labels,
            [(name, COLORS[name], None,
              [stats(runs, f"{p}mutex.handoff_latency.{q}_us.sessions_{s}") for s in sessions])
             for name, p in both],
            floor=fl,
        )
    # Release to next grant at 8 sessions in three rhythms, beside the floor
    # measured in the same rhythm (BENCHMARKS.md "Handoff latency and its floor").
    regimes = [("latency", "floor.write_plus_notification.busy_server"),
               ("latency_hold_2ms", "floor.write_plus_notification.after_2ms_pause"),
               ("latency_hold_2ms_think_1ms", "floor.write_plus_notification.after_2ms_pause")]
    bar_plot(
        os.path.join(out, "latency-rhythms.svg"),
        "Release to next grant, p50 at 8 sessions (µs, lower is better)",
        "microseconds",
        ["no hold, queue again at once", "2 ms hold", "2 ms hold, 1 ms outside"],
        [(name, COLORS[name], [stats(runs, f"{p}{r}.mutex.handoff_latency.p50_us.sessions_8") for r, _ in regimes])
         for name, p in both]
        + [("floor, same rhythm", "#888888", [stats(runs, f"{f}.p50_us") for _, f in regimes])],
    )
    deep = [(1000, 1), (1000, 100)]
    bar_plot(
        os.path.join(out, "deep.svg"),
        "Deep queue: 1,000 waiters on one mutex, drain time (ms, lower is better)",
        "milliseconds",
        ["1 session (threads)", "100 sessions"],
        [(name, COLORS[name], [stats(runs, f"{p}deep.threads_{t}.sessions_{s}.drain_ms") for t, s in deep])
         for name, p in both],
    )
    if any(k.startswith(("zkclient.", "kazoo.", "zookeeper08.")) for r in runs for k in r):
        peer_plots(out, runs)
    if any(k.startswith("failover.close_n") for r in runs for k in r):
        failover_plot(out, runs)
    # Every figure the runs have, ours beside Curator's.
    keys = sorted({k for r in runs for k in r if not k.startswith("curator.")})
    print(f"{len(runs)} run(s): median (lowest-highest). \"ours better\": Curator's time / ours, "
          "or our rate / Curator's (above 1: ours is better).")
    print()
    print("| figure | ours | Curator 5.4 | ours better |")
    print("|---|---:|---:|---:|")
    for k in keys:
        o = stats(runs, k)
        c = stats(runs, "curator." + k)
        fo = f"{o[0]:,.1f} ({o[1]:,.1f}-{o[2]:,.1f})" if o[1] != o[2] else f"{o[0]:,.1f}"
        fc = (f"{c[0]:,.1f} ({c[1]:,.1f}-{c[2]:,.1f})" if c[1] != c[2] else f"{c[0]:,.1f}") if c else "-"
        ratio = "-"
        if c and o[0] and c[0]:
            if "per_s" in k:
                ratio = f"{o[0] / c[0]:.2f}x"
            elif k.endswith(("_us", "_ms", "_ms.median", "_ms.max", "drain_ms")) or "_us." in k:
                ratio = f"{c[0] / o[0]:.2f}x"
        print(f"| {k} | {fo} | {fc} | {ratio} |")


if __name__ == "__main__":
    main()
