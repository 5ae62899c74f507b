#!/usr/bin/env bash
# Cache interop proof: Curator 5.4's CuratorCache (Java, Debian's jars;
# scripts/interop/CuratorCacheFollower.java) and ours (zk_recipes::cache::CuratorCache,
# examples/cache_follower.rs) follow the same subtree, /cache-interop/<run>, on one ZooKeeper
# server, while a Java (Curator framework), a Python (kazoo) and a Rust (zk_framework) writer
# change it in turn.
#
# usage: scripts/cache-interop.sh [--server embedded|apache] [--cut] [CONNECT_STRING]
#
#   CONNECT_STRING       use that server (e.g. 127.0.0.1:2181); nothing is started.
#   --server embedded    (default) build and start this repo's embedded server (zk-embedded).
#   --server apache      start Apache ZooKeeper with scripts/zk-standalone.sh on a free port.
#   --cut                then the cut phase (a finding, not a check; not in CI): both caches
#                        follow /cache-interop/<run>-cut through one fault proxy
#                        (examples/cache_follower.rs' proxy mode); while it is cut, a node
#                        is deleted and created again (version 0 both times), another changed
#                        and one created; after the heal, once both views equal the server's,
#                        the script prints what each cache told (CURATOR-391: Curator's
#                        tells nothing for the re-created node, ours DELETED + CREATED).
#
# 1. The driver (scripts/interop/cache_driver.py) creates the subtree's first content with
#    kazoo; both followers start on it (one CREATED per node, then INITIALIZED).
# 2. Lockstep: 42 steps, each done by one writer in turn (Java, Python, Rust): creates with
#    parents, data changes (the same data again included), deletes, a delete and a create of
#    the same path (the same data included: CURATOR-391's shape, live), ephemeral and
#    sequential nodes, transactions (several changes at one zxid), a grandchild, recursive
#    deletes, and the cache's root itself deleted and created again. After each step the
#    driver waits (bounded, STEP_TIMEOUT s, default 10) until both followers printed the
#    step's events, then does the next: the two event sequences are comparable step by step.
# 3. Both followers dump their views; a separate kazoo client reads the server's subtree.
# Check (scripts/interop/check_cache.py, whose self-test runs first and must catch a wrong
# sequence): both followers printed, step by step, the same events (kind, path, czxid, mzxid,
# data, in the same order; inside one transaction, one zxid, Curator tells deletions first:
# a note), the ones the step must give; nothing after the last step; both
# final views equal the server's subtree.
#
# Needs: java + javac (17), Debian's curator/zookeeper jars in /usr/share/java, python3 with
# kazoo, cargo. Every process runs under `timeout`; whatever this script started is killed
# on exit. Prints the elapsed time (under a minute with a warm build).
#
# env: SESSION_MS (session timeout of every client, 10000), STEP_TIMEOUT (s, 10),
#      PROC_TIMEOUT (s, 300), SERVER_TIMEOUT (s, 900), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
PY=/usr/bin/python3
J=/usr/share/java
SESSION_MS=${SESSION_MS:-10000}
PROC_TIMEOUT=${PROC_TIMEOUT:-300}
SERVER_TIMEOUT=${SERVER_TIMEOUT:-900}
export SESSION_MS

JAVAC_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[cache-interop] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
usage() { sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//' >&2; }

# ---- arguments ---------------------------------------------------------------------------
SERVER=""
CONNECT=""
CUT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --server) [ $# -ge 2 ] || { usage; exit 2; }; SERVER=$2; shift 2 ;;
    --server=*) SERVER=${1#--server=}; shift ;;
    --cut) CUT=1; shift ;;
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
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cache-interop.XXXXXX")
OUT=$WORK/classes
mkdir -p "$OUT"
JAVA_CP="$OUT:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
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
  command -v cargo >/dev/null || die "cargo not found (needed for the Rust participant)"
}

compile_java() {
  log "compiling CuratorCacheFollower.java"
  timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/CuratorCacheFollower.java" \
    || die "javac failed"
}

RUST_FOLLOWER=""
build_rust() {
  log "building the Rust follower and writer (cargo build --example cache_follower)"
  (cd "$REPO" && timeout 900 cargo build -q --example cache_follower) \
    || die "cargo build of examples/cache_follower.rs failed"
  RUST_FOLLOWER=${CARGO_TARGET_DIR:-$REPO/target}/debug/examples/cache_follower
  [ -x "$RUST_FOLLOWER" ] || die "$RUST_FOLLOWER not found after the build"
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

# ---- the followers and the writers -------------------------------------------------------
declare -A PID_OF=()   # role -> pid of its `timeout`

# start ROLE CMD...: CMD under `timeout`, stdin from the FIFO WORK/ROLE.in (the driver writes
# it; NOIN=1: /dev/null), stdout to WORK/ROLE.out, stderr to WORK/ROLE.err
start() {
  local role=$1 in
  shift
  in=/dev/null
  if [ "${NOIN:-0}" != 1 ]; then in=$WORK/$role.in; mkfifo "$in"; fi
  timeout --kill-after=5 "$PROC_TIMEOUT" "$@" <"$in" >"$WORK/$role.out" 2>"$WORK/$role.err" &
  STARTED_PIDS+=($!)
  PID_OF[$role]=$!
}

# await_exit ROLE: its exit (within 30 s), status 0
await_exit() {
  local role=$1 pid=${PID_OF[$1]} rc=0 deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$WORK/$role.err" >&2 || true; die "$role did not exit within 30 s of its stdin's end"; }
    sleep 0.05
  done
  wait "$pid" || rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$WORK/$role.err" >&2 || true
    die "$role exited with $rc"
  fi
}

# cut_phase: see --cut above (cache_driver.py cut)
cut_phase() {
  local root=$ROOT-cut line through deadline=$((SECONDS + 60)) t0=$SECONDS
  log "cut phase: both caches follow $root through one fault proxy"
  timeout 60 "$PY" "$INTEROP/cache_driver.py" setup "$CONNECT" "$root" "$WORK/initial-cut.view" \
    || die "cannot create the cut phase's first content"
  NOIN=1 start proxy "$RUST_FOLLOWER" "$CONNECT" proxy "$WORK/proxy"
  until line=$(grep -m1 '^PROXY ' "$WORK/proxy.out" 2>/dev/null); do
    [ $SECONDS -lt $deadline ] || die "the fault proxy did not start within 60 s"
    sleep 0.05
  done
  through=${line#PROXY }
  start java-cut java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" CuratorCacheFollower "$through" follow "$root"
  start rust-cut "$RUST_FOLLOWER" "$through" follow "$root"
  timeout --kill-after=5 "$PROC_TIMEOUT" "$PY" "$INTEROP/cache_driver.py" cut "$CONNECT" "$root" "$WORK" \
    || die "the cut phase failed (files: $WORK)"
  touch "$WORK/proxy.stop"
  for role in java-cut rust-cut proxy; do await_exit "$role"; done
  log "cut phase: $((SECONDS - t0)) s"
}

# ---- main --------------------------------------------------------------------------------
T0=$SECONDS
check_prereqs
"$PY" "$INTEROP/check_cache.py" --self-test || die "the checker's self-test failed"
compile_java
build_rust
case "$SERVER" in
  apache) start_apache ;;
  embedded) start_embedded ;;
esac
ROOT=/cache-interop/run-$$-$(date +%s)
log "server $CONNECT; session timeout $SESSION_MS ms; subtree $ROOT"
T1=$SECONDS
timeout 60 "$PY" "$INTEROP/cache_driver.py" setup "$CONNECT" "$ROOT" "$WORK/initial.view" \
  || die "cannot create the subtree's first content"
start java-follower java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" CuratorCacheFollower "$CONNECT" follow "$ROOT"
start rust-follower "$RUST_FOLLOWER" "$CONNECT" follow "$ROOT"
start java-writer java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" CuratorCacheFollower "$CONNECT" write
start kazoo-writer "$PY" "$INTEROP/kazoo_cache_writer.py" "$CONNECT"
start rust-writer "$RUST_FOLLOWER" "$CONNECT" write
DRIVER_RC=0
timeout --kill-after=5 "$PROC_TIMEOUT" "$PY" "$INTEROP/cache_driver.py" run "$CONNECT" "$ROOT" "$WORK" \
  || DRIVER_RC=$?
if [ $DRIVER_RC -ne 0 ]; then
  "$PY" "$INTEROP/check_cache.py" "$WORK" || true
  die "the driver failed (exit $DRIVER_RC; files: $WORK)"
fi
for role in java-follower rust-follower java-writer kazoo-writer rust-writer; do await_exit "$role"; done
T2=$SECONDS
"$PY" "$INTEROP/check_cache.py" "$WORK" || die "the check failed (files: $WORK)"
if [ "$CUT" = 1 ]; then cut_phase; fi
log "PASS: cache interop in $((SECONDS - T0)) s (lockstep phase $((T2 - T1)) s): Curator's CuratorCache and ours told the same events and hold the server's subtree"
