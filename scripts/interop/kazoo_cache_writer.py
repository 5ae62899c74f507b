#!/usr/bin/env python3
"""The Python (kazoo) writer of the cache interop proof (scripts/cache-interop.sh).

usage: kazoo_cache_writer.py CONNECT

One command per stdin line, ``ID OP ARGS``, answered on stdout by ``ACK ID ok RESULT`` or
``ACK ID err MESSAGE`` (flushed); the same protocol as CuratorCacheFollower.java's write mode
and examples/cache_follower.rs' write mode:

  create PATH HEX       (parents created, empty; HEX '-' is empty data)
  create_eph PATH HEX   (ephemeral)
  create_seq PATH HEX   (persistent sequential; RESULT is the path created)
  set PATH HEX
  delete PATH
  delete_rec PATH       (children first)
  recreate PATH HEX     (a delete, then a create)
  txn OP ARGS...        (one transaction of create PATH HEX / set PATH HEX / delete PATH)

Exits 0 at the end of stdin. SESSION_MS (env, default 10000): the session timeout.
"""
import os
import sys

from kazoo.client import KazooClient


def unhex(s):
    return b"" if s == "-" else bytes.fromhex(s)


def apply(zk, a):
    op = a[1]
    if op == "create":
        return zk.create(a[2], unhex(a[3]), makepath=True)
    if op == "create_eph":
        return zk.create(a[2], unhex(a[3]), ephemeral=True, makepath=True)
    if op == "create_seq":
        return zk.create(a[2], unhex(a[3]), sequence=True, makepath=True)
    if op == "set":
        zk.set(a[2], unhex(a[3]))
        return a[2]
    if op == "delete":
        zk.delete(a[2])
        return a[2]
    if op == "delete_rec":
        zk.delete(a[2], recursive=True)
        return a[2]
    if op == "recreate":
        zk.delete(a[2])
        return zk.create(a[2], unhex(a[3]))
    if op == "txn":
        t = zk.transaction()
        i = 2
        while i < len(a):
            if a[i] == "create":
                t.create(a[i + 1], unhex(a[i + 2]))
                i += 3
            elif a[i] == "set":
                t.set_data(a[i + 1], unhex(a[i + 2]))
                i += 3
            elif a[i] == "delete":
                t.delete(a[i + 1])
                i += 2
            else:
                raise ValueError("txn: unknown op " + a[i])
        results = t.commit()
        bad = [r for r in results if isinstance(r, Exception)]
        if bad:
            raise RuntimeError("txn failed: %r" % (results,))
        return "-"
    raise ValueError("unknown op " + op)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    session_s = int(os.environ.get("SESSION_MS", "10000")) / 1000.0
    zk = KazooClient(hosts=sys.argv[1], timeout=session_s)
    zk.start(timeout=30)
    try:
        for line in sys.stdin:
            a = line.split()
            if len(a) < 2:
                continue
            try:
                res = apply(zk, a)
                out = "ACK %s ok %s" % (a[0], res)
            except Exception as e:  # reported to the driver, which fails the step
                out = "ACK %s err %s" % (a[0], repr(e).replace("\n", " "))
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    finally:
        zk.stop()
        zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
