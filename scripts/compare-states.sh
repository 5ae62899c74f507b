#!/usr/bin/env bash
# Compares the connection-state sequences of Curator 5.4 and of this repo's managed client
# (zk_framework::framework) under the same server faults.
#
# usage: scripts/compare-states.sh [--server apache|embedded]
#
#   --server apache     (default) a real Apache ZooKeeper, started with
#                       scripts/zk-standalone.sh PORT DIR; a
#                       stop is a SIGTERM of the server, a restart starts it again on the same
#                       port and data directory, so sessions survive a restart.
#   --server embedded   this repo's embedded server (cargo run -p zk-testing --bin zk-embedded).
#                       Its state lives in the process, so a restart comes back empty: every
#                       session is gone and "restart" behaves like an expiry for both clients.
#
# Both probes (scripts/interop/CuratorStates.java and examples/states_probe.rs) run at the same
# time against the same server, and this script drives the faults for both at once:
#   1. restart-within-session   session 20 s: stop, wait for SUSPENDED, restart
#   2. stop-longer-than-session session 4 s: stop, wait for LOST (simulated expiry), restart
#   3. server-side-expiry       session 20 s: each client's session id and password (printed by
#                               the probes) are used to attach a second, raw connection that
#                               closes the session (`states_probe expire`), for both clients alike
# After each scenario both clients are watched for QUIET seconds more ("and nothing else").
# Both sequences are printed with their timings; the exit status is 0 only if every scenario
# gave the same sequence for both clients.
#
# Needs java + javac, Debian's curator/zookeeper jars in /usr/share/java, cargo, python3.
# env: QUIET (s, 3), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
J=/usr/share/java
QUIET=${QUIET:-3}
JAVAC_CP="$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[compare-states] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

SERVER=apache
while [ $# -gt 0 ]; do
  case "$1" in
    --server) [ $# -ge 2 ] || die "--server needs a value"; SERVER=$2; shift 2 ;;
    --server=*) SERVER=${1#--server=}; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
case "$SERVER" in apache|embedded) ;; *) die "--server must be apache or embedded" ;; esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-states.XXXXXX")
OUT=$WORK/classes
JAVA_CP="$OUT:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
STARTED_PIDS=()
SERVER_PID=""

stop_pid() { # PID: SIGTERM (timeout forwards it), then SIGKILL
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

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

srvr_mode() { # PORT -> the Mode: value, empty if not serving
  local out
  out=$( { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'srvr' >&3 && timeout 3 cat <&3; exec 3<&-; } 2>/dev/null ) || true
  printf '%s' "$out" | sed -n 's/^Mode: //p'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---- build -------------------------------------------------------------------------------
command -v java >/dev/null || die "java not found"
command -v javac >/dev/null || die "javac not found"
for jar in curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
  [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing"
done
mkdir -p "$OUT"
log "compiling CuratorStates.java"
timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/CuratorStates.java" || die "javac failed"
log "building examples/states_probe.rs"
(cd "$REPO" && timeout 900 cargo build -q --example states_probe) || die "cargo build of states_probe failed"
RUST_PROBE=$REPO/target/debug/examples/states_probe
if [ "$SERVER" = embedded ]; then
  log "building zk-embedded"
  (cd "$REPO" && timeout 900 cargo build -q -p zk-testing --bin zk-embedded) || die "cargo build of zk-embedded failed"
  EMBEDDED=$REPO/target/debug/zk-embedded
else
  STANDALONE="$SCRIPT_DIR/zk-standalone.sh"
  [ -f "$STANDALONE" ] || die "$STANDALONE not found"
fi

# ---- server ------------------------------------------------------------------------------
start_server() { # PORT DIR
  local port=$1 dir=$2 deadline
  mkdir -p "$dir"
  if [ "$SERVER" = apache ]; then
    timeout --kill-after=10 900 bash "$STANDALONE" "$port" "$dir" >>"$dir/server.log" 2>&1 </dev/null &
  else
    timeout --kill-after=10 900 "$EMBEDDED" --port "$port" >>"$dir/server.log" 2>&1 </dev/null &
  fi
  SERVER_PID=$!
  STARTED_PIDS+=("$SERVER_PID")
  deadline=$((SECONDS + 90))
  until [ -n "$(srvr_mode "$port")" ]; do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 20 "$dir/server.log" >&2; die "server exited"; }
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$dir/server.log" >&2; die "server did not serve in 90 s"; }
    sleep 0.1
  done
}

stop_server() { # PORT
  local deadline
  stop_pid "$SERVER_PID"
  deadline=$((SECONDS + 30))
  while port_open "$1"; do
    [ $SECONDS -lt $deadline ] || die "port $1 still open after the stop"
    sleep 0.1
  done
}

# ---- probes ------------------------------------------------------------------------------
now_ms() { date +%s%3N; }

start_probes() { # CONNECT SESSION_MS PREFIX
  timeout --kill-after=5 600 java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" CuratorStates probe "$1" "$2" 500 \
    >"$3.curator" 2>"$3.curator.err" </dev/null &
  STARTED_PIDS+=($!)
  CURATOR_PID=$!
  timeout --kill-after=5 600 "$RUST_PROBE" "$1" "$2" 500 >"$3.rust" 2>"$3.rust.err" </dev/null &
  STARTED_PIDS+=($!)
  RUST_PID=$!
}

count_state() { # FILE STATE
  awk -v s="$2" '$2 == "STATE" && $3 == s { n++ } END { print n + 0 }' "$1" 2>/dev/null || echo 0
}

wait_state() { # PREFIX STATE COUNT TIMEOUT_S: both probes reach COUNT occurrences of STATE
  local deadline=$((SECONDS + $4)) who
  for who in curator rust; do
    while [ "$(count_state "$1.$who" "$2")" -lt "$3" ]; do
      if [ $SECONDS -ge $deadline ]; then
        log "$who never reported $2 (x$3); its output:"
        cat "$1.$who" >&2 || true
        tail -n 20 "$1.$who.err" >&2 || true
        die "timed out waiting for $2"
      fi
      sleep 0.05
    done
  done
}

last_session() { # FILE -> "0xID PASSWORD"
  awk '$2 == "SESSION" { s = $3 " " $4 } END { print s }' "$1"
}

expire_from_outside() { # CONNECT FILE
  local s deadline
  # A probe prints its SESSION line just after its CONNECTED state: wait for
  # it, with a deadline (a CI run once read the file between the two lines).
  deadline=$((SECONDS + 30))
  s=$(last_session "$2")
  while [ -z "$s" ] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.05
    s=$(last_session "$2")
  done
  [ -n "$s" ] || die "no SESSION line in $2"
  log "closing session ${s%% *} from a second connection ($(basename "$2"))"
  # shellcheck disable=SC2086
  timeout 60 "$RUST_PROBE" expire "$1" $s >&2 || die "states_probe expire failed"
}

sequence() { awk '$2 == "STATE" { printf "%s%s", sep, $3; sep = " " } END { print "" }' "$1"; }

timeline() { # FILE -> states with their times (ms since that probe started)
  awk '$2 == "STATE" { printf "  %7d ms  %s\n", $1, $3 }' "$1"
}

FAILED=0
RESULTS=()

run_scenario() { # NAME SESSION_MS
  local name=$1 session_ms=$2 port dir prefix cur rs
  port=$(free_port)
  dir=$WORK/$name
  prefix=$WORK/$name/probe
  log "=== $name (session ${session_ms} ms, server $SERVER on 127.0.0.1:$port)"
  start_server "$port" "$dir"
  start_probes "127.0.0.1:$port" "$session_ms" "$prefix"
  wait_state "$prefix" CONNECTED 1 90
  case "$name" in
    restart-within-session)
      log "stopping the server"
      stop_server "$port"
      wait_state "$prefix" SUSPENDED 1 60
      log "restarting the server"
      start_server "$port" "$dir"
      wait_state "$prefix" RECONNECTED 1 120
      ;;
    stop-longer-than-session)
      log "stopping the server"
      stop_server "$port"
      wait_state "$prefix" SUSPENDED 1 60
      wait_state "$prefix" LOST 1 $((session_ms / 1000 + 60))
      log "restarting the server"
      start_server "$port" "$dir"
      wait_state "$prefix" RECONNECTED 1 120
      ;;
    server-side-expiry)
      expire_from_outside "127.0.0.1:$port" "$prefix.curator"
      expire_from_outside "127.0.0.1:$port" "$prefix.rust"
      wait_state "$prefix" RECONNECTED 1 120
      ;;
  esac
  log "watching for $QUIET s more"
  sleep "$QUIET"
  stop_pid "$CURATOR_PID"
  stop_pid "$RUST_PID"
  stop_server "$port"
  cur=$(sequence "$prefix.curator")
  rs=$(sequence "$prefix.rust")
  echo "## $name (session ${session_ms} ms, $SERVER server)"
  echo "curator 5.4:  $cur"
  timeline "$prefix.curator"
  echo "zk-framework: $rs"
  timeline "$prefix.rust"
  if [ "$cur" = "$rs" ]; then
    echo "=> same"
    RESULTS+=("SAME     $name: $cur")
  else
    echo "=> DIFFERENT"
    RESULTS+=("DIFFERENT $name: curator [$cur] vs zk-framework [$rs]")
    FAILED=1
  fi
  echo
}

run_scenario restart-within-session 20000
run_scenario stop-longer-than-session 4000
run_scenario server-side-expiry 20000

echo "## summary ($SERVER server)"
printf '%s\n' "${RESULTS[@]}"
exit $FAILED
