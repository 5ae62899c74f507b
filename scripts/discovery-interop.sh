#!/usr/bin/env bash
# Discovery interop proof (issue 42, item 5): Curator 5.4's ServiceDiscovery (Java, Debian's
# curator-x-discovery-5.4.0.jar with jackson 2.14; scripts/interop/DiscoveryPeer.java, its
# JsonInstanceSerializer in the default compatible mode, a POJO payload `InteropDetails`) and
# ours (zk_recipes::ServiceDiscovery; examples/discovery_peer.rs) register in one registry
# (/discovery-interop/<run>) on one ZooKeeper server, and each finds the other's instances with
# every field, payload included.
#
# usage: scripts/discovery-interop.sh [--server apache|embedded] [CONNECT_STRING]
#
#   CONNECT_STRING       use that server (e.g. 127.0.0.1:2181); nothing is started.
#   --server apache      (default) start Apache ZooKeeper with scripts/zk-standalone.sh on a free port.
#   --server embedded    build and start this repo's embedded server (zk-embedded).
#
# The script drives both peers line by line (stdin commands, stdout answers, each awaited
# with a deadline; no fixed sleeps) and checks every answer:
# 1. Java registers java-1 (sslPort 8443), Rust registers rust-1 (sslPort -1, as Druid writes
#    "no TLS"); both with address, port, uriSpec {scheme}://{address}:{port} and an
#    InteropDetails payload. Each side finds BOTH instances, and prints every field
#    (name|id|address|port|sslPort|registrationTimeUTC|serviceType|uri|payloadClass|description|weight|enabled):
#    the two sides' lines must be equal, and equal to what was registered (the payload read
#    as Java's POJO on the Java side, by its class tag on ours; the uri https for both, Curator's
#    rule for any sslPort). Each side's own writer must give the other's node bytes again,
#    byte for byte (SAME).
# 2. queryForNames and queryForInstances agree on both sides.
# 3. Updates: Java moves java-1 to port 8081, Rust sees it; Rust moves rust-1 to port 9091,
#    Java sees it (SAME again).
# 4. An operator (Java's client) deletes rust-1's node: ours creates it again (a new czxid)
#    with its latest data, and Java finds it, every field as before.
# 5. Rust unregisters rust-1, Java sees it gone.
# 6. The Java peer is killed (kill -9): Rust sees java-1 gone once its session expires, and
#    no instance is left.
#
# Needs: java + javac (17), Debian's curator/zookeeper/jackson jars in /usr/share/java, python3
# (a free port for Apache), cargo. Every process runs under `timeout`; whatever this script
# started is killed on exit. Prints the elapsed time.
#
# env: SESSION_MS (10000), STEP_TIMEOUT (s, per answer, 60), PROC_TIMEOUT (s, 300),
#      SERVER_TIMEOUT (s, 600), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
PY=/usr/bin/python3
J=/usr/share/java
SESSION_MS=${SESSION_MS:-10000}
STEP_TIMEOUT=${STEP_TIMEOUT:-60}
PROC_TIMEOUT=${PROC_TIMEOUT:-300}
SERVER_TIMEOUT=${SERVER_TIMEOUT:-600}
export SESSION_MS

JAVAC_CP="$J/curator-x-discovery.jar:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/jackson-databind.jar:$J/jackson-core.jar:$J/jackson-annotations.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[discovery-interop] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//' >&2; }

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
if [ -z "$CONNECT" ] && [ -z "$SERVER" ]; then SERVER=apache; fi
case "$SERVER" in ""|embedded|apache) ;; *) log "--server must be embedded or apache"; exit 2 ;; esac

# ---- cleanup -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/discovery-interop.XXXXXX")
OUT=$WORK/classes
mkdir -p "$OUT"
JAVA_CP="$OUT:$JAVAC_CP:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
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

# ---- prerequisites, server, builds -------------------------------------------------------
check_prereqs() {
  command -v java >/dev/null || die "java not found"
  command -v javac >/dev/null || die "javac not found (install a JDK)"
  command -v timeout >/dev/null || die "timeout (coreutils) not found"
  local jar
  for jar in curator-x-discovery curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple jackson-databind jackson-core jackson-annotations; do
    [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing (apt-get install zookeeper libcurator-discovery-java)"
  done
  command -v cargo >/dev/null || die "cargo not found (needed for the Rust peer)"
  if [ "$SERVER" = apache ]; then [ -x "$PY" ] || die "$PY not found (needed for a free port)"; fi
}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

srvr_mode() { # HOST PORT -> the Mode: value, empty if not serving
  local out
  out=$( { exec 3<>"/dev/tcp/$1/$2" && printf 'srvr' >&3 && timeout 3 cat <&3; exec 3<&-; } 2>/dev/null ) || true
  printf '%s' "$out" | sed -n 's/^Mode: //p'
}

SERVER_PID=""
# Apache starts first (its JVM warms up while javac and cargo run); await_server waits for it.
launch_apache() {
  local standalone=$SCRIPT_DIR/zk-standalone.sh port
  [ -f "$standalone" ] || die "$standalone not found"
  port=$(free_port)
  mkdir -p "$WORK/apache"
  log "starting Apache ZooKeeper ($standalone) on 127.0.0.1:$port"
  timeout --kill-after=10 "$SERVER_TIMEOUT" bash "$standalone" "$port" "$WORK/apache" \
    >"$WORK/server.log" 2>&1 </dev/null &
  SERVER_PID=$!
  STARTED_PIDS+=($SERVER_PID)
  CONNECT=127.0.0.1:$port
}

launch_embedded() { # after build_rust (which builds zk-embedded too)
  log "starting zk-embedded on a free port"
  timeout --kill-after=10 "$SERVER_TIMEOUT" "$TARGET/debug/zk-embedded" --port 0 \
    >"$WORK/server.log" 2>&1 </dev/null &
  SERVER_PID=$!
  STARTED_PIDS+=($SERVER_PID)
}

await_server() {
  local deadline=$((SECONDS + 60)) line mode
  while :; do
    if [ "$SERVER" = apache ]; then
      mode=$(srvr_mode "${CONNECT%:*}" "${CONNECT##*:}")
      [ -n "$mode" ] && { log "Apache ZooKeeper serving on $CONNECT (Mode: $mode)"; return; }
    else
      line=$(grep -m1 -o 'listening on [0-9.]*:[0-9]*' "$WORK/server.log" 2>/dev/null || true)
      [ -n "$line" ] && { CONNECT=${line#listening on }; log "zk-embedded $line"; return; }
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "the $SERVER server exited before serving"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 30 "$WORK/server.log" >&2 || true
      die "the $SERVER server did not serve within 60 s"
    fi
    sleep 0.1
  done
}

compile_java() {
  log "compiling DiscoveryPeer.java"
  timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/DiscoveryPeer.java" \
    >"$WORK/javac.log" 2>&1
}

RUST_PEER=""
build_rust() {
  log "building the Rust peer (cargo build --example discovery_peer)"
  (cd "$REPO" && timeout 900 cargo build -q --example discovery_peer) \
    || die "cargo build --example discovery_peer failed"
  if [ "$SERVER" = embedded ]; then
    log "building zk-embedded (cargo build -p zk-testing --bin zk-embedded)"
    (cd "$REPO" && timeout 900 cargo build -q -p zk-testing --bin zk-embedded) \
      || die "cargo build of zk-embedded failed"
  fi
  RUST_PEER=$TARGET/debug/examples/discovery_peer
  [ -x "$RUST_PEER" ] || die "$RUST_PEER not found after the build"
}

# ---- the peers ---------------------------------------------------------------------------
declare -A PID_OF=() FD_OF=()
SEQ=0

# start_peer ROLE CMD...: CMD under `timeout`, stdin from the FIFO WORK/ROLE.in (this script
# holds its write end: FD_OF[ROLE]), stdout to WORK/ROLE.out, stderr to WORK/ROLE.err.
start_peer() {
  local role=$1 fd
  shift
  mkfifo "$WORK/$role.in"
  timeout --kill-after=5 "$PROC_TIMEOUT" "$@" <"$WORK/$role.in" >"$WORK/$role.out" 2>"$WORK/$role.err" &
  PID_OF[$role]=$!
  STARTED_PIDS+=($!)
  exec {fd}>"$WORK/$role.in"
  FD_OF[$role]=$fd
}

# await_line ROLE REGEX [TIMEOUT]: the first line of ROLE's stdout matching REGEX (grep -E),
# within TIMEOUT s (STEP_TIMEOUT); dies if either peer exits or the time runs out.
await_line() {
  local role=$1 re=$2 limit=${3:-$STEP_TIMEOUT} deadline line r
  deadline=$((SECONDS + limit))
  while :; do
    if line=$(grep -m1 -E -- "$re" "$WORK/$role.out" 2>/dev/null); then
      printf '%s' "$line"
      return 0
    fi
    for r in "${!PID_OF[@]}"; do # either peer's exit ends the run: the other may wait for it
      if ! kill -0 "${PID_OF[$r]}" 2>/dev/null; then
        tail -n 20 "$WORK/$r.err" >&2 || true
        die "$r exited (while $role's /$re/ was awaited; its last lines: $(tail -n 2 "$WORK/$r.out" | tr '\n' '|'))"
      fi
    done
    if [ $SECONDS -ge $deadline ]; then
      tail -n 20 "$WORK/$role.err" >&2 || true
      die "$role: no line /$re/ within $limit s"
    fi
    sleep 0.01
  done
}

# tell ROLE CMD...: sends "SEQ CMD..." to ROLE; the SEQ is in LAST_SEQ.
LAST_SEQ=0
tell() {
  local role=$1
  shift
  SEQ=$((SEQ + 1))
  LAST_SEQ=$SEQ
  printf '%s %s\n' "$SEQ" "$*" >&"${FD_OF[$role]}"
}

# answer ROLE SEQ: the payload of ROLE's final answer to SEQ ("OK <payload>"); dies on ERR.
answer() {
  local role=$1 seq=$2 line
  line=$(await_line "$role" "^$seq (OK|ERR)( |\$)") || exit 1
  case "$line" in
    "$seq OK "*) printf '%s' "${line#"$seq OK "}" ;;
    *) die "$role answered: ${line#"$seq "}" ;;
  esac
}

# ask ROLE CMD...: tell, then the answer's payload in REPLY (also logged).
REPLY=""
ask() {
  local role=$1
  tell "$@"
  REPLY=$(answer "$role" "$LAST_SEQ") || exit 1
  log "  $* -> $REPLY"
}

expect() { # WHAT GOT WANT
  [ "$2" = "$3" ] || die "$1: got '$2', expected '$3'"
}

# expect_empty WHAT CHILDREN: none ("-"), or the node itself is gone ("no-node": an empty
# container node, which the recipes create as parents, may be deleted by the server's container
# check at any time: the embedded server's runs often).
expect_empty() {
  case "$2" in -|no-node) ;; *) die "$1: got '$2', expected none" ;; esac
}

hex_of() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# ---- main --------------------------------------------------------------------------------
T0=$SECONDS
check_prereqs
[ "$SERVER" = apache ] && launch_apache
compile_java &
JAVAC_PID=$!
STARTED_PIDS+=($JAVAC_PID)
build_rust
wait "$JAVAC_PID" || { cat "$WORK/javac.log" >&2; die "javac failed"; }
[ "$SERVER" = embedded ] && launch_embedded
[ -n "$SERVER" ] && await_server
BASE=/discovery-interop/run-$$-$(date +%s)
log "server $CONNECT; session timeout $SESSION_MS ms; base path $BASE"
T1=$SECONDS

start_peer java java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" DiscoveryPeer "$CONNECT" "$BASE"
start_peer rust "$RUST_PEER" "$CONNECT" "$BASE"
await_line java '^READY$' >/dev/null
await_line rust '^READY$' >/dev/null
log "both peers connected and started ($((SECONDS - T1)) s)"

# fields_of "FOUND FIELDS SAME" -> FIELDS, after checking SAME
found_fields() { # WHO REPLY
  local rest=${2#FOUND }
  case "$rest" in
    *" SAME") printf '%s' "${rest% SAME}" ;;
    *) die "$1: its writer does not give the node's bytes again: $rest" ;;
  esac
}
# drop_time FIELDS -> FIELDS with registrationTimeUTC (the 6th) replaced by T
drop_time() { printf '%s' "$1" | awk -F'|' -v OFS='|' '{ $6 = "T"; print }'; }

# -- 1. register, find each other ---------------------------------------------------------
log "1. java registers java-1, rust registers rust-1 (sslPort -1)"
ask java register interop java-1 10.0.0.1 8080 8443 java_details 3
ask rust register interop rust-1 10.0.0.2 9090 -1 rust_details 5
WANT_J='interop|java-1|10.0.0.1|8080|8443|T|DYNAMIC|https://10.0.0.1:8080|InteropDetails|java_details|3|true'
WANT_R='interop|rust-1|10.0.0.2|9090|-1|T|DYNAMIC|https://10.0.0.2:9090|InteropDetails|rust_details|5|true'
for id in java-1 rust-1; do
  ask java find interop "$id"; FJ=$(found_fields java "$REPLY") || exit 1
  ask rust find interop "$id"; FR=$(found_fields rust "$REPLY") || exit 1
  expect "$id: java's and rust's view of every field" "$FR" "$FJ"
  want=$WANT_J; [ "$id" = rust-1 ] && want=$WANT_R
  expect "$id: the fields as registered" "$(drop_time "$FJ")" "$want"
  log "  $id seen alike by both, every field, payload included: $FJ"
done
log "1. PASS: each side found the other's instance with every field (payload as InteropDetails), and re-wrote the other's JSON byte for byte"

# -- 2. names and ids ---------------------------------------------------------------------
ask java names; expect "java's names" "$REPLY" "NAMES interop"
ask rust names; expect "rust's names" "$REPLY" "NAMES interop"
ask java ids interop; expect "java's ids" "$REPLY" "IDS java-1,rust-1"
ask rust ids interop; expect "rust's ids" "$REPLY" "IDS java-1,rust-1"
log "2. PASS: queryForNames and queryForInstances agree"

# -- 3. updates ---------------------------------------------------------------------------
ask java update interop java-1 8081
ask rust find interop java-1 8081; FR=$(found_fields rust "$REPLY") || exit 1
ask java find interop java-1 8081; FJ=$(found_fields java "$REPLY") || exit 1
expect "java-1 after java's update" "$FR" "$FJ"
ask rust update interop rust-1 9091
ask java find interop rust-1 9091; FJ=$(found_fields java "$REPLY") || exit 1
ask rust find interop rust-1 9091; FR=$(found_fields rust "$REPLY") || exit 1
expect "rust-1 after rust's update" "$FJ" "$FR"
log "3. PASS: each side saw the other's update (rust-1 now: $FJ)"

# -- 4. an operator deletes our node ------------------------------------------------------
log "4. an operator deletes rust-1's node (Java's client): ours puts it back, Java finds it again"
ask java czxid interop rust-1; C0=${REPLY#CZXID }
ask java delete interop rust-1
ask java find interop rust-1 9091; FJ=$(found_fields java "$REPLY") || exit 1
ask java czxid interop rust-1; C1=${REPLY#CZXID }
[ "$C1" != "$C0" ] && [ "$C1" != none ] || die "rust-1 was not created again (czxid $C0 -> $C1)"
expect "rust-1 as Java finds it after its re-creation" "$FJ" "$FR"
log "4. PASS: rust-1 re-created (czxid $C0 -> $C1) with its latest data"

# -- 5. unregister ------------------------------------------------------------------------
ask rust unregister rust-1
ask java gone interop rust-1
ask java ids interop; expect "java's ids after rust's unregister" "$REPLY" "IDS java-1"
log "5. PASS: java saw rust's unregister"

# -- 6. kill -9 of the Java service ------------------------------------------------------
log "6. kill -9 of the Java peer: its ephemeral instance goes with its session ($SESSION_MS ms)"
# PID_OF[java] is its `timeout` wrapper: the JVM is that process's child.
JPID=$(ps -o pid= --ppid "${PID_OF[java]}" | tr -d ' ')
[ -n "$JPID" ] || die "the Java peer's JVM not found under ${PID_OF[java]}"
kill -KILL "$JPID"
wait "${PID_OF[java]}" 2>/dev/null || true
unset 'PID_OF[java]'
exec {FD_OF[java]}>&-
T_KILL=$SECONDS
ask rust gone interop java-1 $((SESSION_MS / 1000 + 20))
ask rust ids interop; expect "rust's ids at the end" "$REPLY" "IDS -"
log "6. PASS: rust saw the killed Java instance gone after $((SECONDS - T_KILL)) s"

# -- end -----------------------------------------------------------------------------------
exec {FD_OF[rust]}>&-
pid=${PID_OF[rust]}
deadline=$((SECONDS + 30))
while kill -0 "$pid" 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || die "rust did not exit within 30 s of its stdin's end"
  sleep 0.05
done
rc=0; wait "$pid" || rc=$?
[ $rc -eq 0 ] || { tail -n 20 "$WORK/rust.err" >&2; die "rust exited with $rc"; }
log "PASS: discovery interop in $((SECONDS - T0)) s (peers $((SECONDS - T1)) s): Curator 5.4 and ours registered in one registry and found each other's instances, every field alike"
