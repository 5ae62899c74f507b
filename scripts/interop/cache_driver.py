#!/usr/bin/env python3
"""The lockstep driver of the cache interop proof (scripts/cache-interop.sh).

  cache_driver.py setup CONNECT ROOT OUT
      creates ROOT's first content (ROOT, ROOT/cfg, ROOT/cfg/a) with kazoo and writes the
      server's view of ROOT to OUT (VIEW lines, as the followers print theirs).
  cache_driver.py run CONNECT ROOT WORK
      drives the steps. WORK holds, per writer W in java, kazoo, rust, the FIFO W-writer.in
      (its stdin) and the file W-writer.out (its ACK lines), and per follower F in java, rust
      the FIFO F-follower.in and the file F-follower.out (its event lines). Waits until both
      followers said INITIALIZED; then each step is sent to one writer (java, kazoo, rust in
      turn), its ACK awaited, and the driver waits (bounded: STEP_TIMEOUT s, default 10)
      until both followers printed as many node events as the step must give, before the
      next step. Then both followers dump their views, the server's subtree is read by a
      client of its own (kazoo), and WORK/steps.json and WORK/server.view are written.
      The followers' and writers' stdin close at the end (they exit 0).

  cache_driver.py cut CONNECT ROOT WORK
      the cut phase (a finding, not a check): both followers (WORK/F-cut.in, WORK/F-cut.out)
      follow ROOT through one fault proxy (WORK/proxy.cut cuts it, see cache_follower's proxy
      mode; its lines in WORK/proxy.out). Once both are initialized the proxy is cut; once
      both noticed (ours: FRESHNESS stale, Curator: STATE SUSPENDED), a client of the driver's
      own deletes ROOT/cfg/a and creates it again with other data (version 0 both times:
      CURATOR-391's shape), changes ROOT/cfg and creates ROOT/new; then the proxy heals. When
      both views equal the server's (bounded wait, by repeated dumps), prints what each cache
      told after the cut, per path. Exit status 1 only when something did not happen in time
      or our view is not the server's.

Waits poll the output files every 5 ms, each under a deadline. Exit status 1 when a writer
failed a step, a follower did not keep up (three step timeouts end the run early) or did not
dump its view; the event comparison itself is scripts/interop/check_cache.py's.
"""
import errno
import json
import os
import sys
import time

from kazoo.client import KazooClient

WRITERS = ["java", "kazoo", "rust"]
FOLLOWERS = ["java", "rust"]
NODE_KINDS = ("CREATED", "CHANGED", "DELETED")

# (The root's placeholder is {R}; hex '-' is empty data.) At least 30 steps, each by one
# writer in turn; every kind of change: creates with parents, data changes (the same data
# again included), deletes, a delete and a create of the same path (the same data again
# included: CURATOR-391's shape, here live), ephemeral and sequential nodes, transactions
# (several changes at one zxid), grandchildren, recursive deletes, and the cache's root itself
# deleted and created again.
STEPS = [
    "create {R}/svc/alpha 31",
    "create {R}/svc/beta 32",
    "create {R}/svc/gamma 33",
    "set {R}/cfg/a 6131",
    "set {R}/cfg/a 6132",
    "set {R}/cfg/a 6133",
    "create {R}/deep/x/y/z 7a",
    "delete {R}/svc/beta",
    "recreate {R}/svc/alpha 3162",
    "recreate {R}/svc/gamma 33",
    "recreate {R}/cfg/a 6133",
    "set {R} 726f6f7432",
    "set {R}/cfg -",
    "create_eph {R}/members/m1 6d31",
    "create_eph {R}/members/m2 6d32",
    "create_eph {R}/members/m3 6d33",
    "create_seq {R}/queue/item- 7131",
    "create_seq {R}/queue/item- 7132",
    "create_seq {R}/queue/item- 7133",
    "txn create {R}/txn - create {R}/txn/a 7461 create {R}/txn/b 7462 set {R}/cfg 7478",
    "txn delete {R}/txn/a set {R}/txn/b 746232",
    "txn create {R}/txn/c 7463 delete {R}/txn/b",
    "set {R}/deep/x/y/z 7a",
    "delete {R}/members/m2",
    "delete {R}/members/m3",
    "delete {R}/members/m1",
    "delete_rec {R}/deep",
    "delete_rec {R}",
    "create {R}/after 78",
    "set {R}/after 79",
    "set {R} 6e6577726f6f74",
    "create {R}/svc/alpha/child 63",
    "set {R}/svc/alpha/child 6332",
    "recreate {R}/svc/alpha/child 6332",
    "create {R}/bin 00ff0a",
    "set {R}/bin -",
    "create {R}/cfg/a 6130",
    "create_seq {R}/queue/item- 71",
    "delete {R}/cfg/a",
    "recreate {R}/cfg 636667",
    "create {R}/deep/again 64",
    "txn set {R}/after 7a create {R}/txn2 - delete {R}/bin",
]


def log(msg):
    sys.stderr.write("[cache-driver] %s\n" % msg)
    sys.stderr.flush()


def under(root, path):
    return path == root or path.startswith(root + "/")


def ancestors(path):
    """/a/b/c -> [/a, /a/b]"""
    parts = path.split("/")[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class Model:
    """The nodes of the subtree that should exist: path -> hex data."""

    def __init__(self, root, nodes):
        self.root = root
        self.nodes = dict(nodes)

    def _create(self, path, data, parents, out):
        if parents:
            for a in ancestors(path):
                if under(self.root, a) and a not in self.nodes:
                    self.nodes[a] = "-"
                    out.append(["CREATED", a, "-"])
        self.nodes[path] = data
        out.append(["CREATED", path, data])

    def _delete(self, path, out):
        self.nodes.pop(path, None)
        out.append(["DELETED", path, None])

    def apply(self, a, result):
        """The node events command a (ID removed; result: the writer's RESULT) must give,
        and whether their order is known (a recursive delete's order is the server's)."""
        out = []
        op = a[0]
        if op in ("create", "create_eph", "create_seq"):
            self._create(result if op == "create_seq" else a[1], a[2], True, out)
        elif op == "set":
            self.nodes[a[1]] = a[2]
            out.append(["CHANGED", a[1], a[2]])
        elif op == "delete":
            self._delete(a[1], out)
        elif op == "delete_rec":
            doomed = sorted((p for p in self.nodes if under(a[1], p)), key=lambda p: -p.count("/"))
            for p in doomed:
                self._delete(p, out)
            return out, False
        elif op == "recreate":
            self._delete(a[1], out)
            self._create(a[1], a[2], False, out)
        elif op == "txn":
            i = 1
            while i < len(a):
                if a[i] == "create":
                    self._create(a[i + 1], a[i + 2], False, out)
                    i += 3
                elif a[i] == "set":
                    self.nodes[a[i + 1]] = a[i + 2]
                    out.append(["CHANGED", a[i + 1], a[i + 2]])
                    i += 3
                else:
                    self._delete(a[i + 1], out)
                    i += 2
        else:
            raise ValueError("unknown op %s" % op)
        return out, True


class Tail:
    """The complete lines of a growing file."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.buf = b""
        self.lines = []

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return
        self.pos += len(chunk)
        self.buf += chunk
        *done, self.buf = self.buf.split(b"\n")
        self.lines.extend(l.decode("utf-8", "replace") for l in done)

    def node_events(self):
        return sum(1 for l in self.lines if l.split(" ", 1)[0] in NODE_KINDS)


def open_fifo(path, deadline):
    """Opens a FIFO for writing once its reader has opened it."""
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return fd
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                raise RuntimeError("no reader on %s: %s" % (path, e))
            time.sleep(0.01)


def wait_for(what, pred, limit, polls, quiet=False):
    deadline = time.monotonic() + limit
    while True:
        for t in polls:
            t.poll()
        if pred():
            return True
        if time.monotonic() > deadline:
            if not quiet:
                log("no %s within %.0f s" % (what, limit))
            return False
        time.sleep(0.005)


def read_tree(zk, root):
    """The server's subtree: VIEW lines sorted by path, then VIEW-END count."""
    nodes = {}
    todo = [root]
    while todo:
        p = todo.pop()
        try:
            data, st = zk.get(p)
            kids = zk.get_children(p)
        except Exception as e:  # NoNode: gone meanwhile (nothing should change now)
            log("reading %s: %r" % (p, e))
            continue
        nodes[p] = "VIEW %s %d %d %s" % (p, st.czxid, st.mzxid, data.hex() or "-")
        todo.extend(p + "/" + k for k in kids)
    return [nodes[p] for p in sorted(nodes)] + ["VIEW-END %d" % len(nodes)]


def kazoo(cs):
    zk = KazooClient(hosts=cs, timeout=10)
    zk.start(timeout=30)
    return zk


def setup(cs, root, out):
    zk = kazoo(cs)
    try:
        zk.create(root, b"root", makepath=True)
        zk.create(root + "/cfg", b"v0")
        zk.create(root + "/cfg/a", b"a0")
        lines = read_tree(zk, root)
    finally:
        zk.stop()
        zk.close()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def run(cs, root, work):
    step_timeout = float(os.environ.get("STEP_TIMEOUT", "10"))
    t0 = time.monotonic()
    deadline = t0 + 60
    wout = {w: Tail(os.path.join(work, "%s-writer.out" % w)) for w in WRITERS}
    fout = {f: Tail(os.path.join(work, "%s-follower.out" % f)) for f in FOLLOWERS}
    win = {w: open_fifo(os.path.join(work, "%s-writer.in" % w), deadline) for w in WRITERS}
    fin = {f: open_fifo(os.path.join(work, "%s-follower.in" % f), deadline) for f in FOLLOWERS}
    initial = {}
    with open(os.path.join(work, "initial.view")) as f:
        for l in f:
            parts = l.split()
            if parts[0] == "VIEW":
                initial[parts[1]] = parts[4]
    model = Model(root, initial)
    steps = []
    failures = 0
    timeouts = 0

    for f in FOLLOWERS:
        if not wait_for("INITIALIZED from the %s follower" % f,
                        lambda f=f: "INITIALIZED" in fout[f].lines, 60, [fout[f]]):
            return 1
    log("both followers initialized (%.1f s)" % (time.monotonic() - t0))
    marks = {f: len(fout[f].lines) for f in FOLLOWERS}
    for i, tmpl in enumerate(STEPS):
        n = i + 1
        writer = WRITERS[i % len(WRITERS)]
        cmd = tmpl.replace("{R}", root)
        ts = time.monotonic()
        os.write(win[writer], ("%d %s\n" % (n, cmd)).encode())
        acked = lambda: any(l.startswith("ACK %d " % n) for l in wout[writer].lines)
        if not wait_for("ACK %d from the %s writer" % (n, writer), acked, 30, [wout[writer]]):
            return 1
        ack = next(l for l in wout[writer].lines if l.startswith("ACK %d " % n)).split(" ", 3)
        if ack[2] != "ok":
            log("step %d (%s writer): %s failed: %s" % (n, writer, cmd, ack[3] if len(ack) > 3 else ""))
            failures += 1
            steps.append({"n": n, "writer": writer, "cmd": cmd, "error": ack[3] if len(ack) > 3 else ""})
            continue
        expected, ordered = model.apply(cmd.split(), ack[3])
        start = {f: marks[f] for f in FOLLOWERS}

        def caught_up():
            return all(sum(1 for l in fout[f].lines[start[f]:] if l.split(" ", 1)[0] in NODE_KINDS)
                       >= len(expected) for f in FOLLOWERS)

        ok = wait_for("events of step %d from both followers" % n, caught_up, step_timeout,
                      list(fout.values()))
        for f in FOLLOWERS:
            fout[f].poll()
            marks[f] = len(fout[f].lines)
        steps.append({
            "n": n, "writer": writer, "cmd": cmd, "result": ack[3], "expected": expected,
            "ordered": ordered, "one_zxid": cmd.split()[0] == "txn", "timeout": not ok,
            "lines": {f: [start[f], marks[f]] for f in FOLLOWERS},
            "ms": round((time.monotonic() - ts) * 1000, 1),
        })
        log("step %2d %-5s %-70s %d event(s), %5.1f ms%s" % (
            n, writer, cmd.replace(root, "R"), len(expected), steps[-1]["ms"],
            "" if ok else "  TIMEOUT"))
        if not ok:
            timeouts += 1
            if timeouts >= 3:
                log("three steps timed out: the run ends here")
                break

    # The views: both followers dump, the server is read by a client of its own.
    for f in FOLLOWERS:
        os.write(fin[f], b"dump\n")
    dumped = True
    for f in FOLLOWERS:
        dumped &= wait_for("VIEW-END from the %s follower" % f,
                           lambda f=f: any(l.startswith("VIEW-END") for l in fout[f].lines[marks[f]:]),
                           15, [fout[f]])
    zk = kazoo(cs)
    try:
        server = read_tree(zk, root)
    finally:
        zk.stop()
        zk.close()
    with open(os.path.join(work, "server.view"), "w") as fh:
        fh.write("\n".join(server) + "\n")
    with open(os.path.join(work, "steps.json"), "w") as fh:
        json.dump({"root": root, "steps": steps, "ends": marks}, fh, indent=1)
    for fd in list(win.values()) + list(fin.values()):
        os.close(fd)
    log("%d steps in %.1f s (%d writer failures, %d step timeouts)" % (
        len(steps), time.monotonic() - t0, failures, timeouts))
    return 0 if failures == 0 and timeouts == 0 and dumped else 1


def cut(cs, root, work):
    t0 = time.monotonic()
    fout = {f: Tail(os.path.join(work, "%s-cut.out" % f)) for f in FOLLOWERS}
    fin = {f: open_fifo(os.path.join(work, "%s-cut.in" % f), t0 + 60) for f in FOLLOWERS}
    pout = Tail(os.path.join(work, "proxy.out"))
    ctl = os.path.join(work, "proxy.cut")
    for f in FOLLOWERS:
        if not wait_for("INITIALIZED from the %s follower (through the proxy)" % f,
                        lambda f=f: "INITIALIZED" in fout[f].lines, 60, [fout[f]]):
            return 1
    mark = {f: len(fout[f].lines) for f in FOLLOWERS}
    open(ctl, "w").close()
    noticed = {"rust": lambda l: l.startswith("FRESHNESS stale"), "java": lambda l: l == "STATE SUSPENDED"}
    for f in FOLLOWERS:
        if not wait_for("the %s follower noticing the cut" % f,
                        lambda f=f: any(noticed[f](l) for l in fout[f].lines[mark[f]:]), 30, [fout[f], pout]):
            return 1
    log("cut: both followers are cut off (%.1f s); deleting and re-creating %s/cfg/a" % (
        time.monotonic() - t0, root))
    zk = kazoo(cs)
    try:
        before = zk.exists(root + "/cfg/a")
        zk.delete(root + "/cfg/a")
        zk.create(root + "/cfg/a", b"b0")
        after = zk.exists(root + "/cfg/a")
        zk.set(root + "/cfg", b"v1")
        zk.create(root + "/new", b"n")
        log("cut: %s/cfg/a was czxid %d version %d data 6130, is czxid %d version %d data 6230" % (
            root, before.czxid, before.version, after.czxid, after.version))
        os.unlink(ctl)
        server = read_tree(zk, root)
    finally:
        zk.stop()
        zk.close()
    with open(os.path.join(work, "server-cut.view"), "w") as fh:
        fh.write("\n".join(server) + "\n")

    def views_current():
        ok = True
        for f in FOLLOWERS:
            lines = fout[f].lines
            ends = [i for i, l in enumerate(lines) if l.startswith("VIEW-END")]
            if not ends:
                ok = False
                continue
            start = max((i for i in range(ends[-1]) if not lines[i].startswith("VIEW ")), default=-1) + 1
            ok &= lines[start:ends[-1]] == server[:-1]
        return ok

    deadline = time.monotonic() + 30
    while True:
        for f in FOLLOWERS:
            os.write(fin[f], b"dump\n")
        if wait_for("both views equal to the server's", views_current, 0.2, list(fout.values()), quiet=True):
            break
        if time.monotonic() > deadline:
            for f in FOLLOWERS:
                log("%s's last lines: %s" % (f, fout[f].lines[-8:]))
            log("cut: the views did not come to equal the server's within 30 s")
            for fd in fin.values():
                os.close(fd)
            return 1
    for fd in fin.values():
        os.close(fd)
    log("cut: healed; both views equal the server's (%.1f s)" % (time.monotonic() - t0))
    short = lambda p: p.replace(root, "R")
    told = {}
    for f in FOLLOWERS:
        told[f] = [l for l in fout[f].lines[mark[f]:]
                   if l.split(" ", 1)[0] in NODE_KINDS + ("INITIALIZED", "FRESHNESS", "STATE")]
        log("cut: %s told after the cut: %s" % (
            "Curator's cache" if f == "java" else "ours", "; ".join(
                " ".join([l.split()[0], short(l.split()[1])] if l.split()[0] in NODE_KINDS else l.split())
                for l in told[f])))
    a = root + "/cfg/a"
    about = {f: [l.split()[0] for l in told[f] if l.split()[0] in NODE_KINDS and l.split()[1] == a] for f in FOLLOWERS}
    log("FINDING (CURATOR-391): R/cfg/a deleted and re-created while the followers were cut off: "
        "Curator's CuratorCache told %s, ours told %s; both views now hold the new node (%s)" % (
            " + ".join(about["java"]) or "nothing", " + ".join(about["rust"]) or "nothing",
            next((short(l[5:]) for l in server if l.startswith("VIEW %s " % a)), "?")))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "setup":
        return setup(argv[2], argv[3], argv[4])
    if len(argv) == 5 and argv[1] == "run":
        return run(argv[2], argv[3], argv[4])
    if len(argv) == 5 and argv[1] == "cut":
        return cut(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
