#!/usr/bin/env bash
# The Jepsen-style fault campaign (crates/zk-campaign) in its profiles.
#
# usage: scripts/campaign.sh [ci|long|ensemble|partitions-ci|partitions-long|composed|composed-ensemble|composed-ci|
#                             rolling-ci|rolling]
#                            [--seed N] [more options]
#
#   ci        (default) the embedded server, 4 worker processes x 5 threads
#             and the cache kind (--cache: a CuratorCache and a writer per
#             worker), the counter kind (--counter: a DistributedAtomicLong
#             incremented by every worker) and the registration kind
#             (--registration: an ephemeral PersistentNode per worker and an
#             observer's cache) and the partitioner kind (--partition: a
#             SetPartitioner member per worker over 12 items, a claim with
#             the item's fencing token before each use), docs/campaign.md,
#             session 3 s, 50 s of load and faults (longer until every fault kind happened at least
#             once), then the checker and the leak check: about 70 s in all on
#             2 cores.
#   long      the embedded server until 100,000 acquisitions (capped at 25 min),
#             with short holds (0-2 ms) so that the locks turn over fast: about
#             8-12 minutes on 2 cores (~150-250 acquisitions/s, faults included).
#   ensemble  a real 3-node Apache ZooKeeper ensemble (Debian's zookeeper
#             package and java), session 6 s, 240 s of load; the faults add
#             leader and follower stops and kills (kill -9) with restarts, and
#             the partitions inside the ensemble (docs/partitions.md).
#             About 5 minutes.
#   partitions-ci
#             the ensemble with its partition faults only (every kind at least
#             once: the isolated leader, the isolated follower, one-way cuts
#             both ways, flapping links, a client cut off with the minority,
#             the leader paused past its sync limit, a holder paused on the
#             minority side), session 6 s, 45 s of load (longer until every
#             kind happened once). About 75 s.
#   partitions-long
#             the ensemble, every fault kind (partitions three times in five),
#             until 20,000 acquisitions and 100 partition faults (capped at
#             60 min), with more long holds (8 per mille) so that faults catch
#             holders in the middle of their work.
#   composed  the composed faults (docs/campaign.md: a holder cut off while
#             its lock is broken and another is granted it, healed before
#             its session expires with its watches re-registered late;
#             partition + restart; pause + expire + resume; an operator
#             break in a leader hand-off; two or three plain kinds at once)
#             on the embedded server, session 3 s, until every composition
#             happened 20 times (at most 40 min), with long holds (40 per
#             mille, 250 of leaderships): about 7-9 minutes.
#   composed-ensemble
#             the same on the 3-node ensemble, session 6 s, with the
#             ensemble partition + client failover composition too: about
#             21-26 minutes.
#   composed-ci
#             the composed faults on the embedded server until each
#             happened once (at least 15 s, at most 90 s), with the cache,
#             counter, registration and partitioner kinds: about 20-30 s (CI: with
#             ZK_BUILD_PROFILE=dev).
#   rolling-ci
#             a reconfigurable 3-node Apache ensemble (--reconfigurable: the
#             workers connect straight to its members and follow
#             /zookeeper/config, ensemble_tracker with a 300 ms delay): every
#             server replaced one by one on new ports (rolling-replace), alone
#             and composed with one or two other kinds (composed-rolling), at
#             least once each, with the cache, counter, registration and
#             partitioner kinds; at the end every worker must be connected to
#             a member of the final configuration, listing no removed server
#             (docs/campaign.md, "Rolling replacement"). Session 6 s, at least
#             35 s, at most 80 s of faults: about 45-60 s on 2 cores (CI: with
#             ZK_BUILD_PROFILE=dev; needs java and Debian's zookeeper).
#   rolling   the same ensemble with every kind it makes (rolling-replace,
#             instant-expire, pause-short, pause-long, the member stops and
#             kills, kill-worker, break-waiter, and the compositions: pause +
#             expire + resume, the hand-off break, random, rolling) 5 times
#             each at least (at most 30 min), with the worker kinds and more
#             long holds.
#
# Options after the profile override its own (the last one wins), e.g.
# `long --seconds 480` for an 8-minute run with the long profile's fault mix
# and holds. Every acquire is timed (a quarter of them with a short or zero
# timeout, --short-timeout-percent) and the checker reports the overshoot past
# the deadline per fault kind and per lock kind (--overshoot-margin-ms).
#
# Every run prints its seed; pass --seed N to replay the same fault schedule
# (thread timing still varies). The logs stay in the directory printed at the
# end; `target/release/zk-campaign --check DIR` checks them again.
#
# ZK_BUILD_PROFILE=dev runs a debug build instead of the release one (CI does:
# it reuses what the test steps compiled, where a release build costs a minute;
# the same checks hold, with fewer acquisitions per second).
#
# Exit status says who fell short (the run's last line, `verdict:`, says it in
# words):
#   0  clean: every rule held, no node leaked, every fault kind planned
#      happened (at least once, or --min-each times).
#   1  the LIBRARY fell short: a rule was violated or a lock node leaked
#      (the campaign's own shortfalls, if any, are named too).
#   3  the CAMPAIGN fell short, not the library: a fault kind (a composition)
#      could not be made as often as planned within the run's cap, or a
#      read-back or the leak check could not be done; what was done broke no
#      rule. A fault not made is logged (`N`), reported by kind and reason
#      ("not made: composed-random x2: parts not made: kill-follower x2 (no
#      quorum within Ns x2)") and tried again while the run lasts.
#   2  a usage or set-up error (the server or a worker could not start).
# CI (.ci/run) fails on any non-zero status; this script's last line says
# which of them it was.
set -euo pipefail

cd "$(dirname "$0")/.."
profile=${1:-ci}
if [[ $# -gt 0 ]]; then shift; fi

case "${ZK_BUILD_PROFILE:-release}" in
  release) cargo build --release --quiet -p zk-campaign --bin zk-campaign; out=release ;;
  dev) cargo build --quiet -p zk-campaign --bin zk-campaign; out=debug ;;
  *) echo "ZK_BUILD_PROFILE must be release or dev" >&2; exit 2 ;;
esac
bin=${CARGO_TARGET_DIR:-target}/$out/zk-campaign

case "$profile" in
  ci)
    args=(--seconds 50 --workers 4 --threads 5 --session-ms 3000
          --hold-ms 5 --think-ms 5 --long-hold-permille 3 --cache --counter --registration --partition)
    ;;
  long)
    args=(--acquisitions 100000 --seconds 1500 --workers 4 --threads 5 --session-ms 3000
          --hold-ms 2 --think-ms 2 --long-hold-permille 1)
    ;;
  ensemble)
    args=(--ensemble --seconds 240 --workers 4 --threads 5 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 3 --partition)
    ;;
  partitions-ci)
    args=(--ensemble --faults partitions --seconds 45 --workers 4 --threads 5 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 8)
    ;;
  partitions-long)
    args=(--ensemble --acquisitions 20000 --min-partition-faults 100 --seconds 3600
          --workers 4 --threads 5 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 8)
    ;;
  composed)
    args=(--faults composed --min-each 20 --seconds 60 --max-seconds 2400
          --workers 4 --threads 5 --session-ms 3000
          --hold-ms 5 --think-ms 5 --long-hold-permille 40 --long-lead-permille 250 --partition)
    ;;
  composed-ensemble)
    args=(--ensemble --faults composed --min-each 20 --seconds 60 --max-seconds 3600
          --workers 4 --threads 5 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 40 --long-lead-permille 250 --partition)
    ;;
  composed-ci)
    args=(--faults composed --min-each 1 --seconds 15 --max-seconds 90
          --workers 4 --threads 5 --session-ms 3000
          --hold-ms 5 --think-ms 5 --long-hold-permille 40 --long-lead-permille 250 --cache --counter --registration
          --partition)
    ;;
  rolling-ci)
    args=(--reconfigurable --faults rolling-replace,composed-rolling --min-each 1 --seconds 35 --max-seconds 80
          --workers 4 --threads 4 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 8 --cache --counter --registration --partition)
    ;;
  rolling)
    args=(--reconfigurable --faults all,composed --min-each 5 --seconds 120 --max-seconds 1800
          --workers 4 --threads 5 --session-ms 6000
          --hold-ms 5 --think-ms 5 --long-hold-permille 40 --long-lead-permille 250 --cache --counter
          --registration --partition)
    ;;
  -h|--help)
    sed -n '2,103p' "$0"
    exit 0
    ;;
  *)
    echo "unknown profile $profile (ci, long, ensemble, partitions-ci, partitions-long, composed, composed-ensemble, composed-ci, rolling-ci or rolling)" >&2
    exit 2
    ;;
esac

start=$(date +%s)
set +e
"$bin" "${args[@]}" "$@"
status=$?
set -e
case $status in
  0) meaning="clean" ;;
  1) meaning="the library fell short (a violation or a leaked node)" ;;
  2) meaning="a usage or set-up error" ;;
  3) meaning="the campaign fell short (it could not make what it planned; no rule was broken)" ;;
  *) meaning="the campaign itself failed (killed or crashed)" ;;
esac
echo "campaign.sh $profile: exit $status after $(( $(date +%s) - start )) s: $meaning"
exit $status
