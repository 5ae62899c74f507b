#!/usr/bin/env bash
# Foreign-client interop proof: Curator (Java), kazoo (Python) and this crate's (Rust) lock
# contenders compete on one ZooKeeper server; their critical sections must never overlap
# (for a read/write lock: a writer overlaps nobody, readers may overlap readers).
#
# usage: scripts/foreign-clients.sh [--server embedded|apache] [CONNECT_STRING]
#
#   CONNECT_STRING       use that server (e.g. 127.0.0.1:2181); nothing is started.
#   --server embedded    (default without CONNECT_STRING) build and start this repo's embedded
#                        server: cargo run -q -p zk-testing --bin zk-embedded -- --port PORT
#                        (waits for its "listening on 127.0.0.1:PORT" line).
#   --server apache      start a real Apache ZooKeeper with scripts/zk-standalone.sh on a
#                        free port; waits for srvr "Mode:".
#
# Phases (each one on a fresh lock path, all contenders released together by a start barrier,
# or, for the ordered phases, one side first and the other once the first side is queued):
#   1. mixed mutex: 2 x Curator InterProcessMutex + 2 x kazoo Lock (Curator-compatible names);
#      grants must follow the queue (sequence) order (FIFO)
#   2. Curator InterProcessSemaphoreMutex: 3 Java contenders (FIFO on the lease nodes)
#   3. kazoo Semaphore (max_leases=1): 2 Python contenders
#   4. read/write lock: 2 readers + 1 writer of Curator's InterProcessReadWriteLock and 2
#      readers + 1 writer of ours (examples/interop_contender.rs) on one path; a writer
#      overlaps nobody, and readers must have overlapped at least once. (No downgrade: Debian's
#      Curator is 5.4, which has the downgrade bug CURATOR-621.)
#   5. multi-lock over locks a and b: 2 x Curator InterProcessMultiLock [a,b], 2 x our
#      MultiLock given [b,a] (it sorts), a Curator mutex on a alone and one of ours on b
#      alone; each lock's log is checked for mutual exclusion separately
#   6-9. Curator and ours on one lock, in both directions: 2 Java + 2 Rust contenders of the
#      mutex (InterProcessMutex) and of the semaphore mutex (InterProcessSemaphoreMutex), once
#      with the Java contenders queued first and the Rust ones released behind them, once the
#      other way round. Every grant logs its lock node (the mutex's lock node, the semaphore
#      mutex's lease node); the check: no overlap, grants in strictly increasing sequence
#      order across both languages (FIFO), and the first two grants went to the side queued
#      first (scripts/interop/wait_queue.py watches the queue before the second side starts)
# after a self-test proving that check_overlap.py catches overlaps and queue jumps.
#
# Needs: java + javac (17), Debian's curator/zookeeper jars in /usr/share/java, kazoo for
# /usr/bin/python3, cargo (builds the Rust contender). Every process runs under `timeout`;
# whatever this script started is killed on exit. Exit status 0 only if every phase passed.
#
# env: ITERATIONS (10), HOLD_MS (50), PROC_TIMEOUT (s per contender, 180),
#      SERVER_TIMEOUT (s, lifetime cap of the server, 1200), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
OUT=$INTEROP/out
PY=/usr/bin/python3
J=/usr/share/java
ITERATIONS=${ITERATIONS:-10}
HOLD_MS=${HOLD_MS:-50}
PROC_TIMEOUT=${PROC_TIMEOUT:-180}
SERVER_TIMEOUT=${SERVER_TIMEOUT:-1200}

# Compile class path (manifests of the Debian jars pull in the rest) and run class path.
JAVAC_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_CP="$OUT:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[foreign-clients] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

usage() { sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//' >&2; }

# ---- arguments ---------------------------------------------------------------------------
SERVER=""
CONNECT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) [ $# -ge 2 ] || { usage; exit 2; }; SERVER=$2; shift 2 ;;
    --server=*) SERVER=${1#--server=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) log "unknown option $1"; usage; exit 2 ;;
    *) [ -z "$CONNECT" ] || { usage; exit 2; }; CONNECT=$1; shift ;;
  esac
done
if [ -n "$CONNECT" ] && [ -n "$SERVER" ]; then
  log "give either --server or CONNECT_STRING, not both"; exit 2
fi
if [ -z "$CONNECT" ] && [ -z "$SERVER" ]; then SERVER=embedded; fi
case "$SERVER" in ""|embedded|apache) ;; *) log "--server must be embedded or apache"; exit 2 ;; esac

# ---- cleanup -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/foreign-clients.XXXXXX")
STARTED_PIDS=()   # every background process this script started (each is a `timeout`)

stop_pid() { # PID: SIGTERM (timeout forwards it to its process group), then SIGKILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
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

# ---- helpers -----------------------------------------------------------------------------
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

srvr_mode() { # HOST PORT -> the Mode: value, empty if not serving
  local out
  out=$( { exec 3<>"/dev/tcp/$1/$2" && printf 'srvr' >&3 && timeout 3 cat <&3; exec 3<&-; } 2>/dev/null ) || true
  printf '%s' "$out" | sed -n 's/^Mode: //p'
}

check_prereqs() {
  command -v java >/dev/null || die "java not found"
  command -v javac >/dev/null || die "javac not found (install a JDK)"
  command -v timeout >/dev/null || die "timeout (coreutils) not found"
  local jar
  for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing (apt-get install zookeeper libcurator-recipes-java)"
  done
  [ -x "$PY" ] || die "$PY not found"
  "$PY" -c 'import kazoo' 2>/dev/null || die "kazoo not importable by $PY (apt-get install python3-kazoo)"
  command -v cargo >/dev/null || die "cargo not found (needed for the Rust contender)"
}

compile_java() {
  mkdir -p "$OUT"
  log "compiling Java contenders into $OUT"
  timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/CuratorMutexContender.java" \
    "$INTEROP/CuratorRwContender.java" "$INTEROP/CuratorMultiLockContender.java" \
    || die "javac failed"
}

RUST_CONTENDER=""
build_rust() {
  log "building the Rust contender (cargo build --example interop_contender)"
  (cd "$REPO" && timeout 900 cargo build -q --example interop_contender) \
    || die "cargo build of examples/interop_contender.rs failed"
  RUST_CONTENDER=${CARGO_TARGET_DIR:-$REPO/target}/debug/examples/interop_contender
  [ -x "$RUST_CONTENDER" ] || die "$RUST_CONTENDER not found after the build"
}

start_apache() {
  local standalone port dir deadline mode
  standalone="$(dirname "$0")/zk-standalone.sh"
  [ -f "$standalone" ] || die "$standalone not found"
  port=$(free_port)
  dir=$WORK/apache
  mkdir -p "$dir"
  log "starting Apache ZooKeeper ($standalone) on 127.0.0.1:$port"
  timeout --kill-after=10 "$SERVER_TIMEOUT" bash "$standalone" "$port" "$dir" \
    >"$WORK/server.log" 2>&1 </dev/null &
  STARTED_PIDS+=($!)
  local pid=$!
  deadline=$((SECONDS + 60))
  while :; do
    mode=$(srvr_mode 127.0.0.1 "$port")
    [ -n "$mode" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "Apache ZooKeeper exited before serving"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "Apache ZooKeeper did not serve within 60 s"
    fi
    sleep 0.2
  done
  log "Apache ZooKeeper serving (Mode: $mode)"
  CONNECT=127.0.0.1:$port
}

start_embedded() {
  local port deadline line pid
  log "building zk-embedded"
  (cd "$REPO" && timeout 900 cargo build -q -p zk-testing --bin zk-embedded) \
    || die "cargo build of zk-embedded failed"
  port=$(free_port)
  log "starting zk-embedded on 127.0.0.1:$port"
  (cd "$REPO" && exec timeout --kill-after=10 "$SERVER_TIMEOUT" \
    cargo run -q -p zk-testing --bin zk-embedded -- --port "$port") \
    >"$WORK/server.log" 2>&1 </dev/null &
  pid=$!
  STARTED_PIDS+=($pid)
  deadline=$((SECONDS + 120))
  while :; do
    line=$(grep -m1 -o 'listening on [0-9.]*:[0-9]*' "$WORK/server.log" 2>/dev/null || true)
    [ -n "$line" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "zk-embedded exited before listening"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "zk-embedded did not print 'listening on' within 120 s"
    fi
    sleep 0.2
  done
  CONNECT=${line#listening on }
  log "zk-embedded $line"
}

# run_phase NAME LOCK_PATH SPEC... [then SPEC...] where SPEC is CLIENT:RECIPE[@SUB[,SUB...]]:
#   java:mutex, java:semaphore (CuratorMutexContender), java:read, java:write
#   (CuratorRwContender), java:multi (CuratorMultiLockContender), kazoo:lock, kazoo:semaphore,
#   rust:mutex|semaphore|read|write|multi (examples/interop_contender.rs).
# Without @, the contender locks LOCK_PATH and logs to sections.log; with @SUBs it locks
# LOCK_PATH/SUB for each SUB (in the order given) and logs to sections-SUB.log for each, so
# that every lock's log can be checked on its own. CHECK_ARGS (e.g. "--rw") is passed to
# check_overlap.py. Starts all contenders, releases them together, checks every log.
# With "then": the contenders before it (all of one recipe, mutex or semaphore, on LOCK_PATH)
# are released first; those after it only once wait_queue.py saw the first ones queued.
run_phase() {
  local phase=$1 lock_path=$2; shift 2
  local dir=$WORK/$phase n=0 spec client recipe subs sub name pids=() names=() i rc failed=0 t0
  local paths logs log_file group=1 first_n=0 first_recipe="" go_file
  declare -A log_contenders=()
  if printf '%s\n' "$@" | grep -qx then; then
    # Ordered: those queued first must all be mutex or all semaphore contenders on LOCK_PATH.
    for spec in "$@"; do
      [ "$spec" != then ] || break
      recipe=${spec#*:}
      case "$recipe" in mutex|semaphore) ;;
        *) die "phase $phase: $spec: only mutex or semaphore contenders on $lock_path can be queued first" ;;
      esac
      [ -z "$first_recipe" ] || [ "$first_recipe" = "$recipe" ] \
        || die "phase $phase: the contenders queued first must share one recipe"
      first_recipe=$recipe
    done
  fi
  mkdir -p "$dir/ready"
  t0=$SECONDS
  log "phase $phase: $(printf '%s\n' "$@" | grep -cvx then) contenders on $lock_path," \
    "$ITERATIONS iterations, hold $HOLD_MS ms"
  for spec in "$@"; do
    if [ "$spec" = then ]; then
      [ $group -eq 1 ] && [ $n -gt 0 ] || die "phase $phase: misplaced 'then'"
      group=2
      continue
    fi
    n=$((n + 1))
    client=${spec%%:*}; recipe=${spec#*:}; subs=""
    case "$recipe" in *@*) subs=${recipe#*@}; recipe=${recipe%%@*} ;; esac
    name="$client-$recipe-$n"
    if [ -z "$subs" ]; then
      paths=$lock_path; logs=$dir/sections.log
    else
      paths=""; logs=""
      for sub in ${subs//,/ }; do
        paths+="${paths:+,}$lock_path/$sub"; logs+="${logs:+,}$dir/sections-$sub.log"
      done
    fi
    for log_file in ${logs//,/ }; do
      log_contenders[$log_file]=$(( ${log_contenders[$log_file]:-0} + 1 ))
    done
    if [ "$recipe" != multi ] && [ "$paths" != "${paths%%,*}" ]; then
      die "bad contender spec $spec: only multi takes several locks"
    fi
    go_file=$dir/go
    if [ $group -eq 2 ]; then
      go_file=$dir/go-2
    else
      first_n=$((first_n + 1))
    fi
    case "$client:$recipe" in
      java:mutex|java:semaphore)
        CONTENDER_READY_DIR=$dir/ready CONTENDER_GO_FILE=$go_file \
          timeout --kill-after=5 "$PROC_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" \
          CuratorMutexContender "$CONNECT" "$paths" "$name" "$ITERATIONS" "$HOLD_MS" \
          "$logs" "$recipe" >"$dir/$name.out" 2>&1 </dev/null &
        ;;
      java:read|java:write)
        CONTENDER_READY_DIR=$dir/ready CONTENDER_GO_FILE=$go_file \
          timeout --kill-after=5 "$PROC_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" \
          CuratorRwContender "$CONNECT" "$paths" "$name" "$ITERATIONS" "$HOLD_MS" \
          "$logs" "$recipe" >"$dir/$name.out" 2>&1 </dev/null &
        ;;
      java:multi)
        CONTENDER_READY_DIR=$dir/ready CONTENDER_GO_FILE=$go_file \
          timeout --kill-after=5 "$PROC_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" \
          CuratorMultiLockContender "$CONNECT" "$paths" "$name" "$ITERATIONS" "$HOLD_MS" \
          "$logs" >"$dir/$name.out" 2>&1 </dev/null &
        ;;
      kazoo:lock|kazoo:semaphore)
        CONTENDER_READY_DIR=$dir/ready CONTENDER_GO_FILE=$go_file \
          timeout --kill-after=5 "$PROC_TIMEOUT" "$PY" "$INTEROP/kazoo_contender.py" \
          "$CONNECT" "$paths" "$name" "$ITERATIONS" "$HOLD_MS" \
          "$logs" "$recipe" >"$dir/$name.out" 2>&1 </dev/null &
        ;;
      rust:mutex|rust:semaphore|rust:read|rust:write|rust:multi)
        [ -n "$RUST_CONTENDER" ] || die "the Rust contender was not built"
        CONTENDER_READY_DIR=$dir/ready CONTENDER_GO_FILE=$go_file \
          timeout --kill-after=5 "$PROC_TIMEOUT" "$RUST_CONTENDER" \
          "$CONNECT" "$recipe" "$paths" "$name" "$ITERATIONS" "$HOLD_MS" \
          "$logs" >"$dir/$name.out" 2>&1 </dev/null &
        ;;
      *) die "bad contender spec $spec" ;;
    esac
    pids+=($!); names+=("$name"); STARTED_PIDS+=($!)
  done

  # Start barrier: wait until every contender is connected, then let them all go.
  local deadline=$((SECONDS + 120)) ready
  while :; do
    ready=$(find "$dir/ready" -type f | wc -l)
    [ "$ready" -ge $n ] && break
    for i in "${!pids[@]}"; do
      if ! kill -0 "${pids[$i]}" 2>/dev/null; then
        cat "$dir/${names[$i]}.out" >&2 || true
        die "phase $phase: ${names[$i]} exited before the start barrier"
      fi
    done
    [ $SECONDS -lt $deadline ] || die "phase $phase: only $ready of $n contenders connected within 120 s"
    sleep 0.05
  done
  if [ $group -eq 2 ]; then
    release_in_order
  else
    touch "$dir/go"
  fi

  for i in "${!pids[@]}"; do
    rc=0; wait "${pids[$i]}" || rc=$?
    if [ $rc -ne 0 ]; then
      failed=1
      log "phase $phase: ${names[$i]} failed (exit $rc$([ $rc -eq 124 ] && echo ', timed out')):"
      tail -n 20 "$dir/${names[$i]}.out" >&2 || true
    fi
  done
  [ $failed -eq 0 ] || die "phase $phase: a contender failed"

  local summary summaries=""
  for log_file in $(printf '%s\n' "${!log_contenders[@]}" | sort); do
    # shellcheck disable=SC2086 # CHECK_ARGS is a list of options
    if ! summary=$(timeout 60 "$PY" "$INTEROP/check_overlap.py" ${CHECK_ARGS:-} \
        --iterations "$ITERATIONS" --contenders "${log_contenders[$log_file]}" "$log_file"); then
      printf '%s\n' "$summary" >&2
      die "phase $phase: critical sections overlapped or are incomplete (log: $log_file)"
    fi
    summaries+="${summaries:+; }$(basename "$log_file" .log): $summary"
  done
  log "phase $phase: OK $summaries ($((SECONDS - t0)) s)"
}

# release_in_order: (run_phase's locals) releases the first group, waits until all of its
# contenders are queued on the lock, then releases the second group.
release_in_order() {
  local wq wq_rc=0 wq_deadline=$((SECONDS + 60))
  WAIT_QUEUE_READY_FILE=$dir/queue-watcher-ready timeout --kill-after=5 150 "$PY" \
    "$INTEROP/wait_queue.py" "$CONNECT" "$lock_path" "$first_recipe" "$first_n" 120 \
    >"$dir/wait_queue.out" 2>&1 </dev/null &
  wq=$!
  STARTED_PIDS+=($wq)
  while [ ! -e "$dir/queue-watcher-ready" ]; do
    if ! kill -0 "$wq" 2>/dev/null; then
      cat "$dir/wait_queue.out" >&2 || true
      die "phase $phase: wait_queue.py exited before it was connected"
    fi
    [ $SECONDS -lt $wq_deadline ] || die "phase $phase: wait_queue.py not connected within 60 s"
    sleep 0.02
  done
  touch "$dir/go"
  wait "$wq" || wq_rc=$?
  if [ $wq_rc -ne 0 ]; then
    cat "$dir/wait_queue.out" >&2 || true
    die "phase $phase: the $first_n contenders released first did not queue (exit $wq_rc)"
  fi
  log "phase $phase: $(cat "$dir/wait_queue.out"); releasing the others"
  touch "$dir/go-2"
}

checker_self_test() {
  local f=$WORK/selftest.log
  printf 'a START 100\nb START 150000\na END 200000\nb END 300000\n' >"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --iterations 1 --contenders 2 "$f" >/dev/null 2>&1; then
    die "check_overlap.py accepted overlapping sections"
  fi
  printf 'a START 100\na END 200000\nb START 250000\nb END 300000\n' >"$f"
  timeout 30 "$PY" "$INTEROP/check_overlap.py" --iterations 1 --contenders 2 "$f" >/dev/null \
    || die "check_overlap.py rejected disjoint sections"
  printf 'a START 100\na END 200000\nb START 250000\n' >"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --contenders 2 "$f" >/dev/null 2>&1; then
    die "check_overlap.py accepted an unfinished section"
  fi
  # Read/write mode: readers may overlap each other, a writer overlaps nobody.
  printf 'j-read-1 START 100\nr-read-2 START 150000\nj-read-1 END 200000\nr-read-2 END 300000\n' >"$f"
  printf 'w-write-3 START 300001\nw-write-3 END 400000\n' >>"$f"
  timeout 30 "$PY" "$INTEROP/check_overlap.py" --rw --reader-pattern=-read- --min-reader-overlaps 1 \
    --iterations 1 --contenders 3 "$f" >/dev/null || die "check_overlap.py --rw rejected overlapping readers"
  printf 'j-read-1 START 100\nw-write-2 START 150000\nj-read-1 END 200000\nw-write-2 END 300000\n' >"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --rw --reader-pattern=-read- "$f" >/dev/null 2>&1; then
    die "check_overlap.py --rw accepted a writer overlapping a reader"
  fi
  printf 'j-read-1 START 100\nj-read-1 END 200000\nr-read-2 START 250000\nr-read-2 END 300000\n' >"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --rw --reader-pattern=-read- --min-reader-overlaps 1 \
      "$f" >/dev/null 2>&1; then
    die "check_overlap.py --rw accepted readers that never overlapped"
  fi
  # FIFO mode: grants must follow the lock nodes' sequence order.
  printf 'j-1 START 100 /l/_c_x-lock-0000000001 7\nj-1 END 200\nr-2 START 300 /l/_c_y-lock-0000000002 7\n' >"$f"
  printf 'r-2 END 400\nj-1 START 500 /l/_c_z-lock-0000000003 7\nj-1 END 600\n' >>"$f"
  # ... and a re-created parent (a later queue id) starts again at 0.
  printf 'r-2 START 700 /l/_c_w-lock-0000000000 9\nr-2 END 800\n' >>"$f"
  timeout 30 "$PY" "$INTEROP/check_overlap.py" --fifo --first-grants 1 --first-pattern '^j-' "$f" >/dev/null \
    || die "check_overlap.py --fifo rejected grants in queue order"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --fifo --first-grants 2 --first-pattern '^j-' \
      "$f" >/dev/null 2>&1; then
    die "check_overlap.py --fifo accepted a first grant to the side queued second"
  fi
  printf 'j-1 START 100 /l/_c_x-lock-0000000002 7\nj-1 END 200\nr-2 START 300 /l/_c_y-lock-0000000001 7\n' >"$f"
  printf 'r-2 END 400\n' >>"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --fifo "$f" >/dev/null 2>&1; then
    die "check_overlap.py --fifo accepted a grant that jumped the queue"
  fi
  printf 'j-1 START 100 /l/_c_x-lock-0000000001 7\nj-1 END 200\nr-2 START 300\nr-2 END 400\n' >"$f"
  if timeout 30 "$PY" "$INTEROP/check_overlap.py" --fifo "$f" >/dev/null 2>&1; then
    die "check_overlap.py --fifo accepted a grant without its lock node"
  fi
  log "check_overlap.py self-test OK"
}

# ---- main --------------------------------------------------------------------------------
T_START=$SECONDS
check_prereqs
checker_self_test
compile_java
build_rust
case "$SERVER" in
  apache) start_apache ;;
  embedded) start_embedded ;;
  "") log "using the server at $CONNECT" ;;
esac

RUN=/foreign-clients/run-$$-$RANDOM
# Every mutex and semaphore contender logs the lock node of each grant (for --fifo).
export CONTENDER_LOG_NODE=1
CHECK_ARGS="--fifo" run_phase mixed-mutex "$RUN/mutex" java:mutex java:mutex kazoo:lock kazoo:lock
CHECK_ARGS="--fifo" \
  run_phase curator-semaphore-mutex "$RUN/semaphore-mutex" java:semaphore java:semaphore java:semaphore
run_phase kazoo-semaphore "$RUN/kazoo-semaphore" kazoo:semaphore kazoo:semaphore
CHECK_ARGS="--rw --reader-pattern=-read- --min-reader-overlaps 1" \
  run_phase rw-lock "$RUN/rw" java:read java:read java:write rust:read rust:read rust:write
# Curator takes a multi-lock's locks in list order, ours in sorted order: Curator's are given
# sorted ([a,b]) so that the two agree; ours are given [b,a] to show that they are sorted.
run_phase multi-lock "$RUN/multi" java:multi@a,b java:multi@a,b rust:multi@b,a rust:multi@b,a \
  java:mutex@a rust:mutex@b
# Curator and ours on one lock, both directions: the side before "then" is queued first.
for recipe in mutex semaphore; do
  CHECK_ARGS="--fifo --first-grants 2 --first-pattern ^java-" run_phase "$recipe-java-first" \
    "$RUN/$recipe-java-first" "java:$recipe" "java:$recipe" then "rust:$recipe" "rust:$recipe"
  CHECK_ARGS="--fifo --first-grants 2 --first-pattern ^rust-" run_phase "$recipe-rust-first" \
    "$RUN/$recipe-rust-first" "rust:$recipe" "rust:$recipe" then "java:$recipe" "java:$recipe"
done

log "all phases passed against ${SERVER:-external server} ($CONNECT) in $((SECONDS - T_START)) s"
