#!/usr/bin/python3
"""One contender for a kazoo lock, the Python twin of CuratorMutexContender.java.

usage: kazoo_contender.py CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE
                          [lock|semaphore|native-lock]

Run it with Debian's /usr/bin/python3 (python3-kazoo). Each iteration acquires the lock,
appends "NAME START <epoch nanos>" to LOG_FILE (with CONTENDER_LOG_NODE=1, for lock and
native-lock, followed by the lock node granted, "LOCK_PATH/<name>-<seq>", and the czxid of
LOCK_PATH, so that check_overlap.py --fifo can check the queue order), holds the lock for HOLD_MS, appends "NAME END <epoch nanos>" and releases. Every line is a single write(2) on an O_APPEND
descriptor, so several processes can share LOG_FILE. The clock is time.time_ns(), the wall
clock that the Java contenders use too.

Recipes:
  lock         kazoo's Lock with Curator-compatible node names ("<uuid>-lock-<seq>") that also
               counts Curator's InterProcessMutex nodes ("_c_<uuid>-lock-<seq>") as contenders,
               so kazoo and Curator contenders exclude each other on the same lock path.
  native-lock  kazoo's Lock as is ("<uuid>__lock__<seq>"). It ignores Curator's nodes and
               Curator mis-sorts its nodes, so it does NOT exclude Curator contenders; kept to
               demonstrate that (the overlap checker catches it).
  semaphore    kazoo's Semaphore with max_leases=1 (kazoo-only protocol: excludes only other
               kazoo Semaphore contenders).

Start barrier (optional): if CONTENDER_READY_DIR and CONTENDER_GO_FILE are set, the contender
creates the file NAME in CONTENDER_READY_DIR once connected, then waits until CONTENDER_GO_FILE
exists before contending.

Exit status: 0 on success, 1 on any error, 2 on bad arguments.
"""

import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock, Semaphore

BARRIER_TIMEOUT_S = 120
ACQUIRE_TIMEOUT_S = 120


class CuratorCompatibleLock(Lock):
    """kazoo's Lock, naming its nodes the way Curator's InterProcessMutex sorts them.

    Curator sorts lock children by what follows the last "lock-" in the name, so kazoo's
    "<uuid>-lock-<seq>" sorts by sequence number next to Curator's "_c_<uuid>-lock-<seq>".
    kazoo's contender regex (_EXCLUDE_NAMES followed by 10 digits) then matches both.
    """

    _NODE_NAME = "-lock-"
    _EXCLUDE_NAMES = ["-lock-"]


def now_ns():
    return time.time_ns()


def append(fd, line):
    data = (line + "\n").encode("utf-8")
    written = os.write(fd, data)
    if written != len(data):
        raise IOError("short write to the log: %d of %d bytes" % (written, len(data)))


def barrier(name):
    ready_dir = os.environ.get("CONTENDER_READY_DIR")
    go_file = os.environ.get("CONTENDER_GO_FILE")
    if not ready_dir or not go_file:
        return
    with open(os.path.join(ready_dir, name), "w"):
        pass
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while not os.path.exists(go_file):
        if time.monotonic() > deadline:
            raise RuntimeError("%s: no go signal within %d s" % (name, BARRIER_TIMEOUT_S))
        time.sleep(0.01)


def main(argv):
    if len(argv) not in (7, 8):
        sys.stderr.write(__doc__)
        return 2
    connect, lock_path, name = argv[1], argv[2], argv[3]
    iterations, hold_ms, log_file = int(argv[4]), int(argv[5]), argv[6]
    kind = argv[7] if len(argv) == 8 else "lock"
    if kind not in ("lock", "native-lock", "semaphore"):
        sys.stderr.write("recipe must be lock, native-lock or semaphore, got %r\n" % kind)
        return 2

    client = KazooClient(hosts=connect, timeout=30.0)
    fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        client.start(timeout=30)
        if kind == "lock":
            lock = CuratorCompatibleLock(client, lock_path, identifier=name)
        elif kind == "native-lock":
            lock = Lock(client, lock_path, identifier=name)
        else:
            lock = Semaphore(client, lock_path, identifier=name, max_leases=1)
        barrier(name)
        for _ in range(iterations):
            if not lock.acquire(timeout=ACQUIRE_TIMEOUT_S):
                raise RuntimeError("%s: lock not acquired within %d s" % (name, ACQUIRE_TIMEOUT_S))
            try:
                if kind == "semaphore" or os.environ.get("CONTENDER_LOG_NODE") != "1":
                    append(fd, "%s START %d" % (name, now_ns()))
                else:
                    queue = client.exists(lock.path).czxid
                    append(fd, "%s START %d %s/%s %d" % (name, now_ns(), lock.path, lock.node, queue))
                time.sleep(hold_ms / 1000.0)
                append(fd, "%s END %d" % (name, now_ns()))
            finally:
                lock.release()
        return 0
    except Exception as e:  # noqa: BLE001 - report anything and fail
        sys.stderr.write("%s: %r\n" % (name, e))
        return 1
    finally:
        os.close(fd)
        try:
            client.stop()
            client.close()
        except Exception:  # noqa: BLE001
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
