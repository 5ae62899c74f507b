#!/usr/bin/python3
"""Waits until N contenders are queued on a Curator lock (scripts/foreign-clients.sh uses it to
order a lock's queue: one side's contenders first, the other side's behind them).

usage: wait_queue.py CONNECT LOCK_PATH mutex|semaphore N TIMEOUT_S

  mutex      Curator's InterProcessMutex layout: one sequential node per contender (holder or
             waiter) directly under LOCK_PATH; waits until there are at least N.
  semaphore  Curator's InterProcessSemaphoreMutex layout: nodes under LOCK_PATH/locks (the
             internal mutex's queue) and LOCK_PATH/leases. Each contender has at most one node
             in each (Curator's holder: a lease; its next waiter: a lock node and a lease;
             the others: a lock node), so at least max(#locks, #leases,
             ceil((#locks + #leases) / 2)) contenders are queued; waits until that is >= N.
             Sound for any N and any sequence of events (it never counts a contender twice),
             and reached for N <= 2 whichever side holds the internal mutex while it holds
             the lease (Curator releases it at once, other implementations may keep it).

Run it with Debian's /usr/bin/python3 (python3-kazoo). With WAIT_QUEUE_READY_FILE set, it
creates that file once connected (so that the caller can start the contenders only when the
watcher is ready, and not miss a short-lived queue). Prints the nodes seen and exits 0 once the
condition holds; exits 1 if it does not within TIMEOUT_S seconds, 2 on bad arguments.
"""

import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def children(client, path):
    try:
        return client.get_children(path)
    except NoNodeError:
        return []


def main(argv):
    if len(argv) != 6 or argv[3] not in ("mutex", "semaphore"):
        sys.stderr.write(__doc__)
        return 2
    connect, lock_path, recipe = argv[1], argv[2].rstrip("/"), argv[3]
    n, timeout_s = int(argv[4]), float(argv[5])
    deadline = time.monotonic() + timeout_s
    client = KazooClient(hosts=connect, timeout=30.0)
    client.start(timeout=min(30.0, timeout_s))
    try:
        ready_file = os.environ.get("WAIT_QUEUE_READY_FILE")
        if ready_file:
            with open(ready_file, "w"):
                pass
        while True:
            if recipe == "mutex":
                seen = {"nodes": children(client, lock_path)}
                ok = len(seen["nodes"]) >= n
            else:
                seen = {"leases": children(client, lock_path + "/leases"),
                        "locks": children(client, lock_path + "/locks")}
                locks, leases = len(seen["locks"]), len(seen["leases"])
                ok = max(locks, leases, (locks + leases + 1) // 2) >= n
            if ok:
                print("queued on %s: %s" % (lock_path, seen))
                return 0
            if time.monotonic() > deadline:
                sys.stderr.write("fewer than %d contenders queued on %s within %s s: %s\n"
                                 % (n, lock_path, timeout_s, seen))
                return 1
            time.sleep(0.005)
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
