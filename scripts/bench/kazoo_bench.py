#!/usr/bin/python3
"""kazoo 2.8 lock benchmarks, run by zk-bench beside our own figures on the same
server (`zk-bench --peers kazoo`). Prints key=value lines prefixed with "kazoo.".

It speaks the protocol of CuratorBench.java (same modes, arguments and
ready/done lines), for the modes kazoo has a lock for: kazoo's `Lock` (its
mutex: an ephemeral-sequential node under the lock path, the waiter watching
its predecessor). Every timed window is preceded by WARMUP seconds of the same
work. One KazooClient is one ZooKeeper session; each holder is a thread with a
Lock object of its own.

usage: python3 kazoo_bench.py CONNECT MODE ARGS...
  latency mutex SECONDS WARMUP PATH   uncontended acquire+release latency
  handoff mutex SESSIONS SECONDS WARMUP PATH [KEY [HOLD_US [THINK_US]]]
                                      contended acquisitions per second, per-client
                                      fairness (min/max, Jain's index) and the
                                      release -> next grant latency (p50/p99)
  deep THREADS SESSIONS PATH          a holder and THREADS waiters over SESSIONS
                                      sessions on one mutex; prints "ready" once all
                                      queued, waits for a stdin line, releases; each
                                      waiter acquires and releases at once; prints the
                                      drain time, then "done", waits for a line
  many LOCKS THREADS PATH WARMUP_LOCKS one client, THREADS threads acquire LOCKS distinct
                                      mutexes (held all at once), then release them
  cycles mutex N                      N uncontended cycles (zk-bench counts requests)
  chain mutex N                       N waiters queued behind a holder, released in turn
  cache latency ROOT LEAVES WARM WRITES SEQ
  cache start ROOT LEAVES NODES WARM_ROOT
                                      kazoo's TreeCache (one-shot watches: a getData and a
                                      getChildren with a watch per node, each watch set again
                                      when it fires) in CuratorBench.java's protocol: the
                                      write-to-event latency, the start and its memory (RSS
                                      after gc.collect()); keys "kazoo.cache."
  counter SESSIONS SECONDS WARMUP PATH kazoo_default
                                      SESSIONS clients (a thread each) increment one
                                      kazoo Counter at PATH (decimal text; reset to 0 first)
                                      through the client's default command retry (unlimited
                                      tries, 0.1 s doubling, 40 % jitter); CuratorBench.java's
                                      protocol and figures ("kazoo.counter.")
  barrier MEMBERS WARM ROUNDS PATH    MEMBERS clients (a thread each) pass one
                                      DoubleBarrier(PATH, MEMBERS) together: CuratorBench.java's
                                      protocol and figures ("kazoo.barrier.")
  partition MEMBERS ITEMS SETTLE PATH WARM ROUNDS
                                      MEMBERS clients (one KazooClient, one session each)
                                      with a SetPartitioner each (identifiers m000, m001,
                                      ...; items i00, i01, ...; time_boundary=SETTLE;
                                      release_set() called as soon as RELEASE is seen) at
                                      PATH; once settled, WARM then ROUNDS rounds ("ready"
                                      between them) of: an expiry of the oldest member
                                      (prints "session ID PASSWORD" in hex; zk-bench expires
                                      it, this prints "settled AGO_NS": the split was
                                      settled AGO_NS before the line), a join ("sample join
                                      NS": from just before the new member's constructor,
                                      which joins the party, to settled), a close of the
                                      oldest member's client ("sample close NS"), a join;
                                      then "done". Settled: every live member ACQUIRED with
                                      exactly its share by kazoo's default partition
                                      function for the live members, as its user sees it
  failover close N REPS WARMUP SESSION_MS PATH
  failover kill N REPS SESSION_MS PATH CS1,...,CSN
  failover idle N SESSION_MS PATH
                                      leader election with kazoo's Election (its Lock
                                      underneath): the protocol of CuratorLeaderBench.java
                                      (see failover() below), keys "kazoo.failover."
"""
import gc
import logging
import os
import queue
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.recipe.barrier import DoubleBarrier
from kazoo.recipe.cache import TreeCache, TreeEvent
from kazoo.recipe.counter import Counter
from kazoo.recipe.partitioner import PartitionState, SetPartitioner

logging.basicConfig(level=logging.CRITICAL)


def client(cs):
    c = KazooClient(hosts=cs, timeout=30.0)
    c.start(timeout=30)
    return c


def close(c):
    c.stop()
    c.close()


def pct(sorted_ns, p):
    return sorted_ns[int(round((len(sorted_ns) - 1) * p))]


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_line():
    sys.stdin.readline()


def say(line):
    print(line, flush=True)


def latency(cs, kind, seconds, warmup, path):
    c = client(cs)
    lock = c.Lock(path)
    end = time.monotonic() + warmup
    n = 0
    while n < 20 or time.monotonic() < end:
        lock.acquire()
        lock.release()
        n += 1
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter_ns()
        lock.acquire()
        lock.release()
        lat.append(time.perf_counter_ns() - t)
    lat.sort()
    med = lat[len(lat) // 2]
    say("kazoo.mutex.uncontended_acquire_release.median_us=%.1f" % (med / 1e3))
    say("kazoo.mutex.uncontended_acquire_release.p99_us=%.1f" % (pct(lat, 0.99) / 1e3))
    say("kazoo.mutex.uncontended_cycles_per_s=%.0f" % (1e9 / med))
    close(c)


def handoff(cs, kind, sessions, seconds, warmup, path, key="mutex", hold_us=0, think_us=0):
    clients = [client(cs) for _ in range(sessions)]
    stop = threading.Event()
    state = {"timing": False, "last_release": 0}
    counts = [0] * sessions
    lats = [[] for _ in range(sessions)]
    go = threading.Event()

    def holder(me):
        lock = clients[me].Lock(path)
        mine = lats[me]
        go.wait()
        while not stop.is_set():
            lock.acquire()
            granted = time.perf_counter_ns()
            prev = state["last_release"]
            if state["timing"] and prev != 0:
                mine.append(granted - prev)
            counts[me] += 1
            if hold_us:
                time.sleep(hold_us / 1e6)
            state["last_release"] = time.perf_counter_ns()
            lock.release()
            if think_us:
                time.sleep(think_us / 1e6)

    ts = [threading.Thread(target=holder, args=(i,)) for i in range(sessions)]
    for t in ts:
        t.start()
    go.set()
    time.sleep(warmup)
    before = list(counts)
    t0 = time.perf_counter_ns()
    state["timing"] = True
    time.sleep(seconds)
    state["timing"] = False
    after = list(counts)
    secs = (time.perf_counter_ns() - t0) / 1e9
    stop.set()
    for t in ts:
        t.join()
    d = [a - b for a, b in zip(after, before)]
    n = sum(d)
    sq = sum(x * x for x in d)
    k = "kazoo.%s.handoffs" % key
    say("kazoo.%s.handoffs_per_s.sessions_%d=%.0f" % (key, sessions, n / secs))
    say("%s.min_per_client.sessions_%d=%d" % (k, sessions, min(d)))
    say("%s.max_per_client.sessions_%d=%d" % (k, sessions, max(d)))
    say("%s.jain.sessions_%d=%.3f" % (k, sessions, 0 if sq == 0 else n * n / (sessions * sq)))
    every = sorted(x for m in lats for x in m)
    if every:
        say("kazoo.%s.handoff_latency.p50_us.sessions_%d=%.1f" % (key, sessions, every[len(every) // 2] / 1e3))
        say("kazoo.%s.handoff_latency.p99_us.sessions_%d=%.1f" % (key, sessions, pct(every, 0.99) / 1e3))
    for c in clients:
        close(c)


def deep(cs, threads, sessions, path):
    hc = client(cs)
    holder = hc.Lock(path)
    holder.acquire()
    clients = [client(cs) for _ in range(sessions)]
    last = [0]
    mu = threading.Lock()

    def waiter(c):
        lock = c.Lock(path)
        lock.acquire()
        lock.release()
        t = time.perf_counter_ns()
        with mu:
            last[0] = max(last[0], t)

    threading.stack_size(256 * 1024)
    ts = [threading.Thread(target=waiter, args=(clients[i % sessions],)) for i in range(threads)]
    for t in ts:
        t.start()
    while len(hc.get_children(path)) < threads + 1:
        time.sleep(0.005)
    say("ready")
    wait_line()
    t0 = time.perf_counter_ns()
    holder.release()
    for t in ts:
        t.join()
    say("drain_ms=%.1f" % ((last[0] - t0) / 1e6))
    say("done")
    wait_line()
    for c in clients:
        close(c)
    close(hc)


def many_round(c, locks, threads, root, report):
    held = threading.Barrier(threads + 1)
    release = threading.Barrier(threads + 1)
    released = threading.Barrier(threads + 1)
    rss0 = rss_kib()

    def worker(me):
        mine = []
        for i in range(me, locks, threads):
            lock = c.Lock("%s/l%d" % (root, i))
            lock.acquire()
            mine.append(lock)
        held.wait()
        release.wait()
        for lock in mine:
            lock.release()
        released.wait()

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter_ns()
    for t in ts:
        t.start()
    held.wait()
    t1 = time.perf_counter_ns()
    rss1 = rss_kib()
    release.wait()
    t2 = time.perf_counter_ns()
    released.wait()
    t3 = time.perf_counter_ns()
    for t in ts:
        t.join()
    if report:
        say("kazoo.many.acquires_per_s.locks_%d=%.0f" % (locks, locks / ((t1 - t0) / 1e9)))
        say("kazoo.many.releases_per_s.locks_%d=%.0f" % (locks, locks / ((t3 - t2) / 1e9)))
        say("kazoo.many.rss_bytes_per_held_lock=%.0f" % ((rss1 - rss0) * 1024.0 / locks))


def many(cs, locks, threads, path, warm_locks):
    c = client(cs)
    many_round(c, warm_locks, threads, path + "-warmup", False)
    many_round(c, locks, threads, path, True)
    close(c)


def cycles(cs, kind, n):
    c = client(cs)
    lock = c.Lock("/kazoo-bench/cycles-" + kind)
    lock.acquire()  # ensures the lock path once (per Lock object) before the counted cycles
    lock.release()
    say("ready")
    wait_line()
    for _ in range(n):
        lock.acquire()
        lock.release()
    say("done")
    wait_line()
    close(c)


def chain(cs, kind, n):
    path = "/kazoo-bench/chain-" + kind
    hc = client(cs)
    holder = hc.Lock(path)
    holder.acquire()
    clients = [client(cs) for _ in range(n)]

    def waiter(c):
        lock = c.Lock(path)
        lock.acquire()
        lock.release()

    ts = [threading.Thread(target=waiter, args=(c,)) for c in clients]
    for t in ts:
        t.start()
    time.sleep(1.0)  # every waiter queued and watching
    say("ready")
    wait_line()
    holder.release()
    for t in ts:
        t.join()
    time.sleep(0.2)
    say("done")
    wait_line()
    for c in clients:
        close(c)
    close(hc)


def started_cache(c, root, heard):
    """A started TreeCache of root whose NODE_UPDATED events go to the queue
    heard (path, data, time.perf_counter_ns() of the call), if any."""
    cache = TreeCache(c, root)
    initialized = threading.Event()

    def listener(ev):
        if ev.event_type == TreeEvent.NODE_UPDATED and heard is not None:
            at = time.perf_counter_ns()
            heard.put((ev.event_data.path, ev.event_data.data, at))
        elif ev.event_type == TreeEvent.INITIALIZED:
            initialized.set()

    cache.listen(listener)
    cache.start()
    if not initialized.wait(600):
        raise RuntimeError("the cache of %s did not initialize" % root)
    return cache


def leaf(root, i):
    return "%s/g%d/n%d" % (root, i // 100, i % 100)


def write_and_wait(w, root, leaves, seq, heard):
    path = leaf(root, seq % leaves)
    d = b"%032d" % seq
    t0 = time.perf_counter_ns()
    w.set(path, d)
    while True:
        p, got, at = heard.get(timeout=30)
        if p == path and got == d:
            return at - t0


def cache_bench(cs, a):
    kind, root, leaves = a[0], a[1], int(a[2])
    c = client(cs)
    if kind == "latency":
        warm, writes, seq = int(a[3]), int(a[4]), int(a[5])
        w = client(cs)
        heard = queue.Queue()
        cache = started_cache(c, root, heard)
        for _ in range(warm):
            seq += 1
            write_and_wait(w, root, leaves, seq, heard)
        say("ready")
        wait_line()
        lat = []
        for _ in range(writes):
            seq += 1
            lat.append(write_and_wait(w, root, leaves, seq, heard))
        say("done")
        wait_line()
        lat.sort()
        say("kazoo.cache.write_to_event.p50_us.leaves_%d=%.1f" % (leaves, pct(lat, 0.5) / 1e3))
        say("kazoo.cache.write_to_event.p99_us.leaves_%d=%.1f" % (leaves, pct(lat, 0.99) / 1e3))
        say("kazoo.cache.write_to_event.writes.leaves_%d=%d" % (leaves, len(lat)))
        cache.close()
        close(w)
    else:
        nodes, warm_root = int(a[3]), a[4]
        started_cache(c, warm_root, None).close()
        gc.collect()
        rss0 = rss_kib()
        say("ready")
        wait_line()
        t0 = time.perf_counter_ns()
        cache = started_cache(c, root, None)
        took = time.perf_counter_ns() - t0
        say("done")
        wait_line()
        gc.collect()
        rss1 = rss_kib()
        say("kazoo.cache.start_to_initialized_ms.leaves_%d=%.1f" % (leaves, took / 1e6))
        say("kazoo.cache.nodes.leaves_%d=%d" % (leaves, nodes))
        say("kazoo.cache.rss_bytes_per_node.leaves_%d=%.0f" % (leaves, (rss1 - rss0) * 1024.0 / nodes))
        cache.close()
    close(c)
    sys.stdout.flush()
    os._exit(0)


# (participant, time.perf_counter_ns()) of every leader function's start.
ELECTED = queue.Queue()


class Participant(object):
    """One contender: a thread calling election.run(self.lead) again and again
    on its client (session) until told to quit. lead() is the leader function:
    it says when it started, then holds the leadership until step_down is set;
    when it returns, kazoo deletes the lock node and run() is called again (the
    rejoin: a new node, at the end of the queue)."""

    def __init__(self, c, path, i):
        self.c = c
        self.i = i
        self.election = c.Election(path, "p%d" % i)
        self.step_down = threading.Event()
        self.quit = False
        self.leading = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def lead(self):
        ELECTED.put((self, time.perf_counter_ns()))
        self.leading = True
        self.step_down.wait()
        self.step_down.clear()
        self.leading = False

    def loop(self):
        while not self.quit:
            try:
                self.election.run(self.lead)
            except Exception:
                if self.quit:
                    return
                time.sleep(0.01)

    def retire(self):
        """Stops contending (whether leading or waiting) and closes the client
        in the background: a frozen or expired session may take a while."""
        self.quit = True
        self.election.cancel()
        self.step_down.set()

        def stop():
            try:
                self.c.stop()
                self.c.close()
            except Exception:
                pass

        t = threading.Thread(target=stop, daemon=True)
        t.start()
        return t


def session(cs, session_ms):
    c = KazooClient(hosts=cs, timeout=session_ms / 1000.0)
    c.start(timeout=30)
    return c


def leader_of(ps):
    end = time.monotonic() + 60
    while time.monotonic() < end:
        for i, p in enumerate(ps):
            if p.leading:
                return i
        time.sleep(0.001)
    raise RuntimeError("no leader within 60 s")


def contenders(c, path):
    try:
        return len(c.get_children(path))
    except NoNodeError:  # (not created yet by the first participant)
        return 0


def await_nodes(c, path, n):
    end = time.monotonic() + 60
    while contenders(c, path) != n:
        if time.monotonic() > end:
            raise RuntimeError("the election did not get back to %d participants" % n)
        time.sleep(0.001)


def next_leader(old, t0):
    """The time from t0 to the next leader function's start (not old's)."""
    while True:
        p, t = ELECTED.get(timeout=120)
        if p is not old and t >= t0:
            return t - t0


def drain():
    while True:
        try:
            ELECTED.get_nowait()
        except queue.Empty:
            return


def report(key, ns):
    ns.sort()
    say("kazoo.failover.%s.p50_us=%.1f" % (key, pct(ns, 0.5) / 1e3))
    say("kazoo.failover.%s.p99_us=%.1f" % (key, pct(ns, 0.99) / 1e3))
    say("kazoo.failover.%s.max_us=%.1f" % (key, ns[-1] / 1e3))
    say("kazoo.failover.%s.failovers=%d" % (key, len(ns)))


def participants(css, path, session_ms):
    clients, ps = [], []
    for i, cs in enumerate(css):
        clients.append(session(cs, session_ms))
        ps.append(Participant(clients[i], path, i))
        await_nodes(clients[0], path, i + 1)
    return clients, ps


def failover_close(cs, n, reps, warm, session_ms, path):
    """Close failover: the leader's function returns (it steps down) and the
    participant calls run() again at once; one sample is the time from the
    step-down signal to the next leader function's start. WARMUP failovers,
    "ready" (wait), then REPS failovers each between "before" and "after"
    (wait after each), the next one once every participant's node is back;
    "done" (wait), the figures."""
    clients, ps = participants([cs] * n, path, session_ms)
    ns = []
    for r in range(warm + reps):
        if r == warm:
            say("ready")
            wait_line()
            ns = []
        i = leader_of(ps)
        drain()
        if r >= warm:
            say("before")
            wait_line()
        t0 = time.perf_counter_ns()
        ps[i].step_down.set()
        ns.append(next_leader(ps[i], t0))
        if r >= warm:
            say("after")
            wait_line()
        await_nodes(clients[i], path, n)
    say("done")
    wait_line()
    report("close_n%d" % n, ns)
    for p in ps:
        p.retire().join(10)


def failover_kill(cs, n, reps, session_ms, path, proxies):
    """Kill failover: participant i connects to proxies[i]; "freeze I" for the
    leader I (wait: its proxy is frozen), the time from then to the next
    leader function's start; "thaw I" (wait), I retires and rejoins on a new
    client; the figures, then "done"."""
    clients, ps = participants(proxies[:n], path, session_ms)
    ns = []
    for _ in range(reps):
        i = leader_of(ps)
        drain()
        say("freeze %d" % i)
        wait_line()
        t0 = time.perf_counter_ns()
        ns.append(next_leader(ps[i], t0))
        say("thaw %d" % i)
        wait_line()
        ps[i].retire()
        clients[i] = session(proxies[i], session_ms)
        ps[i] = Participant(clients[i], path, i)
        await_nodes(clients[i], path, n)
    report("kill_n%d_session_%dms" % (n, session_ms), ns)
    for p in ps:
        p.retire().join(10)
    say("done")


def failover_idle(cs, n, session_ms, path):
    """N participants on N clients; "ready" once every node is there (and 2 s
    more), wait (zk-bench counts the server's frames), close all, "done"."""
    clients = [session(cs, session_ms) for _ in range(n)]
    ps = [Participant(c, path, i) for i, c in enumerate(clients)]
    await_nodes(clients[0], path, n)
    time.sleep(2)
    say("ready")
    wait_line()
    for t in [p.retire() for p in ps]:
        t.join(10)
    say("done")


def failover(cs, a):
    if a[0] == "close":
        failover_close(cs, int(a[1]), int(a[2]), int(a[3]), int(a[4]), a[5])
    elif a[0] == "kill":
        failover_kill(cs, int(a[1]), int(a[2]), int(a[3]), a[4], a[5].split(","))
    elif a[0] == "idle":
        failover_idle(cs, int(a[1]), int(a[2]), a[3])
    else:
        print("kazoo_bench: unknown failover mode %s" % a[0], file=sys.stderr)
        return 2
    # (Exits at once: a retired client may still be closing in a daemon thread.)
    sys.stdout.flush()
    os._exit(0)


def counter_bench(cs, sessions, seconds, warmup, path, retry):
    key = "kazoo.counter.sessions_%d.retry_%s" % (sessions, retry)
    clients = [client(cs) for _ in range(sessions)]
    clients[0].ensure_path(path)
    clients[0].set(path, b"0")
    phase = [0]
    lock = threading.Lock()
    t = dict(applied=0, errors=0, all_applied=0)

    def run(c):
        n = Counter(c, path)
        while phase[0] < 2:
            try:
                n += 1
                measured = phase[0] == 1
                with lock:
                    t["all_applied"] += 1
                    if measured:
                        t["applied"] += 1
            except Exception:
                if phase[0] == 1:
                    with lock:
                        t["errors"] += 1

    ts = [threading.Thread(target=run, args=(c,), daemon=True) for c in clients]
    for th in ts:
        th.start()
    time.sleep(warmup)
    say("ready")
    wait_line()
    phase[0] = 1
    t0 = time.monotonic()
    time.sleep(seconds)
    phase[0] = 2
    t1 = time.monotonic()
    say("done")
    for th in ts:
        th.join()
    fin = Counter(clients[0], path).value
    wait_line()
    ok = t["applied"]
    say("%s.increments_per_s=%.0f" % (key, ok / (t1 - t0)))
    say("%s.applied=%d" % (key, ok))
    say("%s.not_applied=0" % key)
    say("%s.errors=%d" % (key, t["errors"]))
    say("%s.final_equals_applied=%s" % (key, "true" if fin == t["all_applied"] else "false"))
    for c in clients:
        close(c)


def barrier_bench(cs, members, warm, rounds, path):
    key = "kazoo.barrier.members_%d" % members
    clients = [client(cs) for _ in range(members)]
    start = threading.Barrier(members + 1)
    end = threading.Barrier(members + 1)
    failed = [0]

    def run(i, c):
        b = DoubleBarrier(c, path, members, identifier="m%d" % i)
        for _ in range(warm + rounds):
            start.wait()
            # enter() and leave() swallow a KazooException (best-effort
            # cleanup) and return nothing: a failed round shows as a hang
            # or in the times.
            try:
                b.enter()
                b.leave()
            except Exception:
                failed[0] += 1
            end.wait()

    ts = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(clients)]
    for th in ts:
        th.start()
    lat = []
    hung = None
    for r in range(warm + rounds):
        if r == warm:
            say("ready")
            wait_line()
        start.wait()
        t0 = time.monotonic_ns()
        try:
            # kazoo's enter() has no timeout: a round that does not end
            # within 30 s is reported, and the scenario ends there.
            end.wait(timeout=30)
        except threading.BrokenBarrierError:
            hung = r
            break
        if r >= warm:
            lat.append(time.monotonic_ns() - t0)
    if hung is not None:
        if hung < warm:
            say("ready")
            wait_line()
        kids = sorted(clients[0].get_children(path))
        say("%s.hung_round=%d" % (key, hung))
        say("%s.hung_state=%d member nodes, ready %s" % (
            key, len([k for k in kids if k != "ready"]), "present" if "ready" in kids else "absent"))
    say("done")
    wait_line()
    if not lat:
        lat = [0]
    lat.sort()
    say("%s.round.p50_us=%.1f" % (key, pct(lat, 0.5) / 1e3))
    say("%s.round.p99_us=%.1f" % (key, pct(lat, 0.99) / 1e3))
    say("%s.round.max_us=%.1f" % (key, lat[-1] / 1e3))
    say("%s.round.n=%d" % (key, len(lat)))
    say("%s.failed_member_rounds=%d" % (key, failed[0]))
    if hung is not None:
        # Members are stuck in enter(): exit without joining them.
        sys.stdout.flush()
        os._exit(0)
    for th in ts:
        th.join()
    for c in clients:
        close(c)


class PartitionMember(object):
    """A kazoo SetPartitioner on a client of its own, driven by a thread as
    its docs say: release_set() on RELEASE; each state it sees is put on
    the queue SEEN as (id, state, sorted share, time.monotonic_ns())."""

    def __init__(self, cs, mid, path, items, settle, seen):
        self.id = mid
        self.c = client(cs)
        self.ev = threading.Event()
        self.stop = False
        self.t0 = time.monotonic_ns()
        self.p = SetPartitioner(self.c, path, items, identifier=mid, time_boundary=settle,
                                state_change_event=self.ev)
        self.seen = seen
        self.thread = threading.Thread(target=self.drive, daemon=True)
        self.thread.start()

    def drive(self):
        while not self.stop:
            self.ev.clear()
            st = self.p.state
            share = sorted(self.p) if st == PartitionState.ACQUIRED else None
            self.seen.put((self.id, st, share, time.monotonic_ns()))
            if st == PartitionState.FAILURE:
                return
            if st == PartitionState.RELEASE:
                self.p.release_set()
                continue
            self.ev.wait()

    def quit(self):
        """Stops its thread and closes its client in the background (an
        expired or closed session may take a while)."""
        self.stop = True
        self.ev.set()

        def stop():
            try:
                self.c.stop()
                self.c.close()
            except Exception:
                pass

        threading.Thread(target=stop, daemon=True).start()


def partition_bench(cs, k, n_items, settle, path, warm, rounds):
    items = ["i%02d" % i for i in range(n_items)]
    seen = queue.Queue()
    live = {}
    last = {}
    nxt = [0]

    def join():
        mid = "m%03d" % nxt[0]
        nxt[0] += 1
        m = PartitionMember(cs, mid, path, items, settle, seen)
        live[mid] = m
        return m

    def remove(mid):
        last.pop(mid, None)
        return live.pop(mid)

    def settled():
        ids = sorted(live)
        want = {m: sorted(items)[i::len(ids)] for i, m in enumerate(ids)}
        end = time.monotonic() + 120
        while True:
            if all(m in last and last[m][0] == PartitionState.ACQUIRED and last[m][1] == want[m] for m in ids):
                return max(last[m][2] for m in ids)
            left = end - time.monotonic()
            if left <= 0:
                raise RuntimeError("the party of %d did not settle within 120 s: %s" % (len(ids), last))
            try:
                mid, st, share, t = seen.get(timeout=left)
            except queue.Empty:
                continue
            if mid in live:
                if st == PartitionState.FAILURE:
                    raise RuntimeError("live member %s failed" % mid)
                last[mid] = (st, share, t)

    for _ in range(k):
        join()
    settled()
    for r in range(warm + rounds):
        if r == warm:
            say("ready")
        # An expiry of the oldest member.
        m = remove(sorted(live)[0])
        sid, pw = m.c.client_id
        say("session %x %s" % (sid, pw.hex()))
        t = settled()
        say("settled %d" % (time.monotonic_ns() - t))
        m.quit()
        m = join()
        say("sample join %d" % (settled() - m.t0))
        # A close of the oldest member's client.
        m = remove(sorted(live)[0])
        m.stop = True
        t0 = time.monotonic_ns()
        m.c.stop()
        say("sample close %d" % (settled() - t0))
        m.quit()
        m = join()
        say("sample join %d" % (settled() - m.t0))
    say("done")
    for m in list(live.values()):
        m.quit()
    sys.stdout.flush()
    os._exit(0)


def main(argv):
    cs, mode, a = argv[1], argv[2], argv[3:]
    if mode in ("latency", "handoff", "cycles", "chain") and a[0] != "mutex":
        print("kazoo_bench: only the mutex (kazoo's Lock), not %s" % a[0], file=sys.stderr)
        return 2
    if mode == "latency":
        latency(cs, a[0], float(a[1]), float(a[2]), a[3])
    elif mode == "handoff":
        key = a[5] if len(a) > 5 else "mutex"
        hold = int(a[6]) if len(a) > 6 else 0
        think = int(a[7]) if len(a) > 7 else 0
        handoff(cs, a[0], int(a[1]), float(a[2]), float(a[3]), a[4], key, hold, think)
    elif mode == "deep":
        deep(cs, int(a[0]), int(a[1]), a[2])
    elif mode == "many":
        many(cs, int(a[0]), int(a[1]), a[2], int(a[3]))
    elif mode == "cycles":
        cycles(cs, a[0], int(a[1]))
    elif mode == "chain":
        chain(cs, a[0], int(a[1]))
    elif mode == "failover":
        return failover(cs, a)
    elif mode == "cache":
        return cache_bench(cs, a)
    elif mode == "counter":
        if a[4] != "kazoo_default":
            print("kazoo_bench: the counter has only the client's retry", file=sys.stderr)
            return 2
        counter_bench(cs, int(a[0]), float(a[1]), float(a[2]), a[3], a[4])
    elif mode == "partition":
        partition_bench(cs, int(a[0]), int(a[1]), float(a[2]), a[3], int(a[4]), int(a[5]))
    elif mode == "barrier":
        barrier_bench(cs, int(a[0]), int(a[1]), int(a[2]), a[3])
    else:
        print("kazoo_bench: unknown mode %s" % mode, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
