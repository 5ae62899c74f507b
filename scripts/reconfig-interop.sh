#!/usr/bin/env bash
# Reconfiguration interop program: services of ours and Curator 5.4's share one lock and one
# election on a real 3-node ZooKeeper 3.8 ensemble whose every server is replaced (new ports),
# one by one, while they run. Ours follow the ensemble (ensemble_tracker(true)); Curator runs
# with its EnsembleTracker on (its default) and off (ensembleTracker(false)).
#
# usage: scripts/reconfig-interop.sh
#
#   1. starts crates/zk-testing's zk-reconfig-ensemble: a reconfigEnabled 3-node Apache ensemble
#      on 127.0.0.1, driven by commands on a FIFO;
#   2. starts five services on /reconfig-interop/run-<pid>-<time>/{lock,latch}, each an
#      InterProcessMutex contender (hold HOLD_MS, again and again) and a LeaderLatch participant
#      (a leader closes its latch after LEAD_MS and joins again at the back, so leadership goes
#      round), logging every 100 ms the server it is connected to and its server list:
#        R1, R2  ours (examples/reconfig_peer.rs), ensemble_tracker(true)
#        J1, J2  Curator 5.4 (scripts/interop/CuratorReconfigPeer.java), EnsembleTracker on
#        J3      Curator 5.4, ensembleTracker(false)
#      and waits until each has joined the election and held the lock once;
#   3. replaces servers 1, 2 and 3 in turn (a new server on new ports joins, then the old one
#      is removed and stopped; the ensemble has a quorum again, and the services run GAP_S
#      seconds, before the next), then lets the services run POST_S seconds more;
#   4. closes them and checks (scripts/interop/check_reconfig.py, whose self-test runs first):
#      no two critical sections overlap, over all five (check_overlap.py); never two leaders
#      at once and terms that only grow; each of ours ends connected to a member of the final
#      configuration, with exactly the final members as its server list, and completed a
#      critical section after the last replacement. It prints, for every replacement and every
#      service, the seconds from the reconfig that removed the old server until the service's
#      tracker held the new configuration (seen), its connection's server list was the new
#      members (list), and it was connected to a member for good (on), and how long it was
#      without a connection (off); then each service's end state.
#
# Exit status 0 when every check of ours holds and mutual exclusion held for everyone; Curator's
# movements are recorded, not required. 1 otherwise, 2 on bad arguments.
#
# Needs: java + javac (17), Debian's zookeeper and curator jars in /usr/share/java, python3,
# cargo. Every process runs under `timeout`; whatever this script started is stopped on exit.
#
# env: SESSION_MS (session timeout of every service, 6000), HOLD_MS (lock hold, 50), LEAD_MS
#      (a leadership's length, 1000), GAP_S (run between two replacements, 5: the window in
#      which each service's move is measured; 0 replaces back to back), POST_S (run after the
#      last replacement, 10), PROC_TIMEOUT (s, 900), KEEP_WORK=1 keeps the temp dir (kept
#      anyway on failure).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
PY=/usr/bin/python3
J=/usr/share/java
SESSION_MS=${SESSION_MS:-6000}
HOLD_MS=${HOLD_MS:-50}
POST_S=${POST_S:-10}
GAP_S=${GAP_S:-5}
PROC_TIMEOUT=${PROC_TIMEOUT:-900}
LEAD_MS=${LEAD_MS:-1000}
export SESSION_MS HOLD_MS LEAD_MS

JAVAC_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[reconfig-interop] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
now_us() { date +%s%6N; }

case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) log "no arguments expected (got $1)"; exit 2 ;;
esac

# ---- cleanup -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reconfig-interop.XXXXXX")
OUT=$WORK/classes
CTL=$WORK/control
mkdir -p "$OUT" "$CTL"
JAVA_CP="$OUT:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
STARTED_PIDS=()   # every background process this script started (each is a `timeout`)
ENSEMBLE_PID=""
FIFO=$WORK/commands
EVENTS=$WORK/events.log

stop_pid() { # PID: SIGTERM (timeout forwards it to its process group), then SIGKILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$? pid
  set +e
  # The ensemble first asked to quit (it removes its files), then everything stopped.
  if [ -n "$ENSEMBLE_PID" ] && kill -0 "$ENSEMBLE_PID" 2>/dev/null; then
    { printf 'quit\n' >&7; } 2>/dev/null
    exec 7>&-
    for _ in $(seq 1 300); do kill -0 "$ENSEMBLE_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  for pid in "${STARTED_PIDS[@]}"; do stop_pid "$pid"; done
  if [ "${KEEP_WORK:-0}" = 1 ] || [ $rc -ne 0 ]; then
    log "work files kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- prerequisites and builds ------------------------------------------------------------
command -v java >/dev/null || die "java not found"
command -v javac >/dev/null || die "javac not found (install a JDK)"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
command -v cargo >/dev/null || die "cargo not found"
[ -x "$PY" ] || die "$PY not found"
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
  [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing (apt-get install zookeeper libcurator-recipes-java)"
done

"$PY" "$INTEROP/check_reconfig.py" --self-test >&2 || die "check_reconfig.py's self-test failed"

log "compiling CuratorReconfigPeer.java"
timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/CuratorReconfigPeer.java" || die "javac failed"

TARGET=${CARGO_TARGET_DIR:-$REPO/target}
log "building zk-reconfig-ensemble and examples/reconfig_peer.rs"
(cd "$REPO" && timeout 1200 cargo build -q -p zk-testing --bin zk-reconfig-ensemble) \
  || die "cargo build of zk-reconfig-ensemble failed"
(cd "$REPO" && timeout 1200 cargo build -q --example reconfig_peer) \
  || die "cargo build of examples/reconfig_peer.rs failed"
ENSEMBLE_BIN=$TARGET/debug/zk-reconfig-ensemble
RUST_PEER=$TARGET/debug/examples/reconfig_peer
[ -x "$ENSEMBLE_BIN" ] || die "$ENSEMBLE_BIN not found after the build"
[ -x "$RUST_PEER" ] || die "$RUST_PEER not found after the build"

# ---- the ensemble ------------------------------------------------------------------------
# await_event REGEX SECONDS WHAT: the first events line matching REGEX (ERROR lines fail)
await_event() {
  local re=$1 limit=$2 what=$3 deadline=$((SECONDS + $2)) line
  while :; do
    line=$(grep -E -m1 "$re" "$EVENTS" 2>/dev/null || true)
    [ -n "$line" ] && { printf '%s' "$line"; return 0; }
    if grep -q '^ERROR ' "$EVENTS" 2>/dev/null; then
      grep '^ERROR ' "$EVENTS" >&2
      die "the ensemble reported an error while waiting for $what"
    fi
    kill -0 "$ENSEMBLE_PID" 2>/dev/null || { tail -n 30 "$WORK/ensemble.err" >&2; die "zk-reconfig-ensemble exited while waiting for $what"; }
    [ $SECONDS -lt $deadline ] || { tail -n 30 "$WORK/ensemble.err" >&2; die "no $what within $limit s"; }
    sleep 0.1
  done
}

mkfifo "$FIFO"
exec 7<>"$FIFO"   # read-write: never blocks; closing it is the ensemble's end of input
: >"$EVENTS"
log "starting a 3-node reconfigurable ZooKeeper ensemble"
timeout --kill-after=20 "$PROC_TIMEOUT" "$ENSEMBLE_BIN" --servers 3 <"$FIFO" >>"$EVENTS" 2>"$WORK/ensemble.err" &
ENSEMBLE_PID=$!
STARTED_PIDS+=("$ENSEMBLE_PID")
READY=$(await_event '^READY ' 180 "READY")
CONNECT=$(printf '%s\n' "$READY" | sed -n 's/.* connect=\([^ ]*\).*/\1/p')
MEMBERS=$(printf '%s\n' "$READY" | sed -n 's/.* members=\([^ ]*\).*/\1/p')
[ -n "$CONNECT" ] && [ -n "$MEMBERS" ] || die "cannot read the READY line: $READY"
log "ensemble ready: members $MEMBERS at $CONNECT"

# ---- the services ------------------------------------------------------------------------
RUN=/reconfig-interop/run-$$-$(date +%s)
LOCK_PATH=$RUN/lock
LATCH_PATH=$RUN/latch
LOCKS=$WORK/locks.log
LATCH=$WORK/latch.log
CONN=$WORK/conn.log
: >"$LOCKS"; : >"$LATCH"; : >"$CONN"
declare -A PEER_PID=()
NAMES=(R1 R2 J1 J2 J3)
declare -A LABEL=([R1]="ours, tracker" [R2]="ours, tracker" [J1]="curator, tracker on"
  [J2]="curator, tracker on" [J3]="curator, tracker off")

start_peer() { # NAME rust|java TRACKER(1|0)
  local name=$1 side=$2 track=$3
  if [ "$side" = rust ]; then
    TRACKER=$track timeout --kill-after=10 "$PROC_TIMEOUT" "$RUST_PEER" \
      "$CONNECT" "$LOCK_PATH" "$LATCH_PATH" "$name" "$LOCKS" "$LATCH" "$CONN" "$CTL" \
      >"$WORK/$name.out" 2>&1 </dev/null &
  else
    TRACKER=$track timeout --kill-after=10 "$PROC_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" \
      CuratorReconfigPeer "$CONNECT" "$LOCK_PATH" "$LATCH_PATH" "$name" "$LOCKS" "$LATCH" "$CONN" "$CTL" \
      >"$WORK/$name.out" 2>&1 </dev/null &
  fi
  PEER_PID[$name]=$!
  STARTED_PIDS+=($!)
}

await_line() { # FILE REGEX SECONDS WHAT
  local f=$1 re=$2 limit=$3 what=$4 deadline=$((SECONDS + $3))
  until grep -Eq "$re" "$f" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "no $what within $limit s (see $WORK)"
    sleep 0.1
  done
}

log "starting R1, R2 (ours, tracker), J1, J2 (Curator 5.4, tracker on), J3 (Curator 5.4, tracker off)"
start_peer R1 rust 1
start_peer R2 rust 1
start_peer J1 java 1
start_peer J2 java 1
start_peer J3 java 0
for n in "${NAMES[@]}"; do
  await_line "$LATCH" "^$n JOIN " 120 "JOIN from $n"
  await_line "$LOCKS" "^$n END " 120 "critical section of $n"
done
log "every service joined the election and held the lock"

# ---- the replacements --------------------------------------------------------------------
T_START=$SECONDS
IFS=, read -r -a OLD_IDS <<<"$MEMBERS"
i=0
for old in "${OLD_IDS[@]}"; do
  if [ $i -gt 0 ] && [ "$GAP_S" != 0 ]; then
    sleep "$GAP_S"   # the services run between replacements (the measuring window), not a wait for an event
  fi
  i=$((i + 1))
  log "replacing server $old"
  printf 'replace %s\n' "$old" >&7
  line=$(await_event "^REPLACED [0-9]+ $old " 240 "replacement of server $old")
  log "  $line"
done
log "every server replaced in $((SECONDS - T_START)) s; running $POST_S s more"
sleep "$POST_S"   # the run's length after the last replacement, not a wait for an event

# ---- close -------------------------------------------------------------------------------
END_US=$(now_us)
for n in "${NAMES[@]}"; do touch "$CTL/$n.close"; done
declare -A STATUS=()
for n in "${NAMES[@]}"; do
  pid=${PEER_PID[$n]}
  deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    stop_pid "$pid"
    printf '%s KILLED %s\n' "$n" "$(now_us)" >>"$LATCH"
    STATUS[$n]="killed after 30 s"
  else
    rc=0; wait "$pid" || rc=$?
    STATUS[$n]="exit $rc"
  fi
done
printf 'quit\n' >&7
exec 7>&-
deadline=$((SECONDS + 60))
while kill -0 "$ENSEMBLE_PID" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
kill -0 "$ENSEMBLE_PID" 2>/dev/null && log "zk-reconfig-ensemble did not quit within 60 s; stopping it"
stop_pid "$ENSEMBLE_PID"
ENSEMBLE_PID=""

# ---- checks ------------------------------------------------------------------------------
FAILED=0
for n in "${NAMES[@]}"; do
  log "$n (${LABEL[$n]}): ${STATUS[$n]}"
  case $n in
    R*) [ "${STATUS[$n]}" = "exit 0" ] || { log "  $n did not close cleanly:"; tail -n 20 "$WORK/$n.out" >&2; FAILED=1; } ;;
  esac
done
log "mutual exclusion over all five (check_overlap.py):"
"$PY" "$INTEROP/check_overlap.py" "$LOCKS" --contenders 5 >&2 || FAILED=1
args=()
for n in "${NAMES[@]}"; do args+=(--label "$n=${LABEL[$n]}"); done
"$PY" "$INTEROP/check_reconfig.py" --events "$EVENTS" --latch "$LATCH" --locks "$LOCKS" --conn "$CONN" \
  --ours R1,R2 --end-us "$END_US" "${args[@]}" | tee "$WORK/table.txt" || FAILED=1
if [ $FAILED -ne 0 ]; then
  die "a check failed (logs in $WORK)"
fi
log "PASS: 0 overlaps, one leader at a time, ours on the final members"
