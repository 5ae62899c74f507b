#!/usr/bin/env bash
# Recipes interop proof (issue 33, item 8): Curator 5.4 (Java, Debian's jars;
# scripts/interop/RecipesPeer.java) and ours (zk_recipes; examples/recipes_peer.rs) share one
# DistributedAtomicLong, one GroupMember group and one DistributedDoubleBarrier, on one
# ZooKeeper server, under /recipes-interop/<run>. See docs/recipes-interop.md.
#
# usage: scripts/recipes-interop.sh [--server embedded|apache] [CONNECT_STRING]
#
#   CONNECT_STRING       use that server (e.g. 127.0.0.1:2181); nothing is started.
#   --server embedded    (default) build and start this repo's embedded server (zk-embedded).
#   --server apache      start Apache ZooKeeper with scripts/zk-standalone.sh on a free port.
#
# The script drives both peers line by line (stdin commands, stdout answers, each awaited
# with a deadline; no fixed sleeps) and checks every answer:
# 1. Counter: both increment <run>/counter N times (N=200 each, at once, PAUSE_MS=1 ms between
#    two increments of one side so that neither runs through alone: the increments interleave). Every increment is counted as its side reports it (Curator's succeeded(); our
#    Outcome::Applied / NotApplied / Unknown). Then both read it (the recipe's get() and the
#    node's raw bytes). Checks: no Unknown outcome and no error; Java's value = Rust's value =
#    the sum of applied increments; the bytes are that value as 8 bytes big-endian on both
#    sides; the applied increments' pre-values are exactly 0..sum-1, each post = pre + 1 (no
#    increment counted twice or lost); the interleaving (how often the counter passed from one
#    side's increment to the other's) is printed.
# 2. Group (<run>/group): Java "java" and Rust "rust" join with payloads; each waits until its
#    view holds the other with the right payload, and both views are equal. Rust leaves, Java
#    sees it gone; Rust joins again with another payload, Java sees the new payload, Rust sees
#    Java; Java leaves, Rust sees it gone; Rust leaves; no member node is left.
# 3. Double barrier (<run>/barrier, memberQty 2), two rounds on the same path: Java enters
#    first (round 1; Rust first in round 2); once its member node is on the server, the other
#    enters. Neither may pass before the other began entering (wall-clock times of this one
#    machine); then the first leaves, the other leaves after the first said LEAVING, and
#    neither leave may return before the other began. After each round the barrier's path is
#    empty (no member node, no stale `ready`), so round 2 really waits again.
#
# Needs: java + javac (17), Debian's curator/zookeeper jars in /usr/share/java, python3 (a
# free port for Apache), cargo. Every process runs under `timeout`; whatever this script
# started is killed on exit. Prints the elapsed time (about 10-20 s with a warm build).
#
# env: N (increments per side, 200), PAUSE_MS (1), SESSION_MS (10000), STEP_TIMEOUT (s, per answer, 60),
#      PROC_TIMEOUT (s, 300), SERVER_TIMEOUT (s, 600), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
PY=/usr/bin/python3
J=/usr/share/java
N=${N:-200}
PAUSE_MS=${PAUSE_MS:-1}
SESSION_MS=${SESSION_MS:-10000}
STEP_TIMEOUT=${STEP_TIMEOUT:-60}
PROC_TIMEOUT=${PROC_TIMEOUT:-300}
SERVER_TIMEOUT=${SERVER_TIMEOUT:-600}
export SESSION_MS

JAVAC_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[recipes-interop] %s\n' "$*" >&2; }
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
if [ -z "$CONNECT" ] && [ -z "$SERVER" ]; then SERVER=embedded; fi
case "$SERVER" in ""|embedded|apache) ;; *) log "--server must be embedded or apache"; exit 2 ;; esac
case "$N" in ''|*[!0-9]*) log "N must be a number"; exit 2 ;; esac

# ---- cleanup -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/recipes-interop.XXXXXX")
OUT=$WORK/classes
mkdir -p "$OUT"
JAVA_CP="$OUT:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
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
  for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing (apt-get install zookeeper libcurator-recipes-java)"
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
  log "compiling RecipesPeer.java"
  timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/RecipesPeer.java" \
    >"$WORK/javac.log" 2>&1
}

RUST_PEER=""
build_rust() {
  log "building the Rust peer (cargo build --example recipes_peer)"
  (cd "$REPO" && timeout 900 cargo build -q --example recipes_peer) \
    || die "cargo build --example recipes_peer failed"
  if [ "$SERVER" = embedded ]; then
    log "building zk-embedded (cargo build -p zk-testing --bin zk-embedded)"
    (cd "$REPO" && timeout 900 cargo build -q -p zk-testing --bin zk-embedded) \
      || die "cargo build of zk-embedded failed"
  fi
  RUST_PEER=$TARGET/debug/examples/recipes_peer
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
ROOT=/recipes-interop/run-$$-$(date +%s)
log "server $CONNECT; session timeout $SESSION_MS ms; root $ROOT; $N increments per side"
T1=$SECONDS

start_peer java java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" RecipesPeer "$CONNECT" "$ROOT" java
start_peer rust "$RUST_PEER" "$CONNECT" "$ROOT" rust
await_line java '^READY$' >/dev/null
await_line rust '^READY$' >/dev/null
log "both peers connected ($((SECONDS - T1)) s)"

# -- 1. DistributedAtomicLong --------------------------------------------------------------
log "1. counter: $N increments each, at once ($PAUSE_MS ms between two), on $ROOT/counter"
tell java atomic "$N" "$PAUSE_MS"; SJ=$LAST_SEQ
tell rust atomic "$N" "$PAUSE_MS"; SR=$LAST_SEQ
AJ=$(answer java "$SJ") || exit 1
AR=$(answer rust "$SR") || exit 1
log "  java: ATOMIC applied/not-applied/unknown/errors = ${AJ#ATOMIC }"
log "  rust: ATOMIC applied/not-applied/unknown/errors = ${AR#ATOMIC }"
read -r _ J_APPLIED J_NOT J_UNKNOWN J_ERR <<<"$AJ"
read -r _ R_APPLIED R_NOT R_UNKNOWN R_ERR <<<"$AR"
[ "$J_ERR" = 0 ] || die "java: $J_ERR increments threw (see $WORK/java.out)"
[ "$R_ERR" = 0 ] || die "rust: $R_ERR increments failed with an error (see $WORK/rust.out)"
[ "$R_UNKNOWN" = 0 ] || die "rust: $R_UNKNOWN increments ended Outcome::Unknown with no fault injected"
expect "java: applied + not applied" $((J_APPLIED + J_NOT)) "$N"
expect "rust: applied + not applied + unknown" $((R_APPLIED + R_NOT + R_UNKNOWN)) "$N"
SUM=$((J_APPLIED + R_APPLIED))
ask java read; read -r _ J_VALUE J_BYTES <<<"$REPLY"
ask rust read; read -r _ R_VALUE R_BYTES <<<"$REPLY"
WANT_BYTES=$(printf '%016x' "$SUM")
expect "java's DistributedAtomicLong.get() (= java's + rust's applied increments)" "$J_VALUE" "$SUM"
expect "rust's DistributedAtomicLong::get() (= java's + rust's applied increments)" "$R_VALUE" "$SUM"
expect "the counter's bytes as java read them (8 bytes big-endian)" "$J_BYTES" "$WANT_BYTES"
expect "the counter's bytes as rust read them" "$R_BYTES" "$WANT_BYTES"
# Every applied increment moved the counter from a distinct value: their pre-values, both
# sides together, are exactly 0..SUM-1, and each post is its pre + 1.
{
  sed -n "s/^$SJ INC true \([0-9-]*\) \([0-9-]*\) .*/\1 \2 java/p" "$WORK/java.out"
  sed -n "s/^$SR INC true \([0-9-]*\) \([0-9-]*\) .*/\1 \2 rust/p" "$WORK/rust.out"
} | sort -n -k1,1 >"$WORK/applied.txt"
CHECK=$(awk -v sum="$SUM" '
  { if ($1 != NR - 1) { print "pre-value " $1 " (" $3 ") where " NR - 1 " was due"; bad = 1; exit }
    if ($2 != $1 + 1) { print "post " $2 " after pre " $1 " (" $3 ")"; bad = 1; exit }
    if (NR > 1 && $3 != last) switches++
    last = $3 }
  END { if (!bad) { if (NR != sum) print "applied lines " NR " != " sum; else print "ok " switches + 0 } }
' "$WORK/applied.txt")
case "$CHECK" in
  "ok "*) SWITCHES=${CHECK#ok } ;;
  *) die "counter: $CHECK (files: $WORK/applied.txt)" ;;
esac
J_RETRIED=$(awk -v s="$SJ" '$1 == s && $2 == "INC" && $6 > 1' "$WORK/java.out" | wc -l)
R_RETRIED=$(awk -v s="$SR" '$1 == s && $2 == "INC" && $6 > 1' "$WORK/rust.out" | wc -l)
log "1. PASS: counter = $SUM = java $J_APPLIED + rust $R_APPLIED applied (not applied: java $J_NOT, rust $R_NOT); bytes $WANT_BYTES on both; pre-values 0..$((SUM - 1)) once each; the counter passed between the sides $SWITCHES times; increments that lost a race and tried again: java $J_RETRIED, rust $R_RETRIED"
[ "$SWITCHES" -gt 0 ] || log "  note: the two sides did not interleave this time"

# -- 2. GroupMember ------------------------------------------------------------------------
G=$ROOT/group
PJ=$(hex_of "java member é")
PR=$(hex_of "rust member ü")
PR2=$(hex_of "rust member, again")
log "2. group $G: java and rust join"
ask java join "$PJ"
ask rust join "$PR"
ask java await-member rust "$PR"; VJ=${REPLY#SEES }
ask rust await-member java "$PJ"; VR=${REPLY#SEES }
expect "java's member view" "$VJ" "java=$PJ,rust=$PR"
expect "rust's member view" "$VR" "java=$PJ,rust=$PR"
log "  rust leaves; java must see it gone"
ask rust leave
ask java await-gone rust; expect "java's view after rust left" "${REPLY#GONE }" "java=$PJ"
log "  rust joins again with another payload"
ask rust join "$PR2"
ask java await-member rust "$PR2"; VJ=${REPLY#SEES }
ask rust await-member java "$PJ"; VR=${REPLY#SEES }
expect "java's member view after rust re-joined" "$VJ" "java=$PJ,rust=$PR2"
expect "rust's member view after it re-joined" "$VR" "java=$PJ,rust=$PR2"
log "  java leaves; rust must see it gone"
ask java leave
ask rust await-gone java; expect "rust's view after java left" "${REPLY#GONE }" "rust=$PR2"
ask rust leave
ask java children "$G"; expect_empty "$G's children after both left" "${REPLY#CHILDREN }"
log "2. PASS: group: both saw each other with the right payloads, the same views, each other's leave, rust's re-join"

# -- 3. DistributedDoubleBarrier -----------------------------------------------------------
B=$ROOT/barrier
ts_of() { # ROLE SEQ TAG -> the time on ROLE's line "SEQ TAG T" (or "SEQ OK TAG T")
  local line
  line=$(await_line "$1" "^$2 (OK )?$3 [0-9]+\$") || exit 1
  printf '%s' "${line##* }"
}
barrier_round() { # ROUND FIRST SECOND
  local round=$1 first=$2 second=$3 sf ss lf ls ef es xf xs t0f t0s t1f t1s
  log "3.$round double barrier $B (memberQty 2): $first enters first"
  tell "$first" enter "$B"; sf=$LAST_SEQ
  ask "$second" await-in "$B" 1   # $first's member node is on the server: it is waiting
  if grep -qE "^$sf (OK|ERR)" "$WORK/$first.out"; then
    die "$first's enter returned before $second entered: $(grep -E "^$sf (OK|ERR)" "$WORK/$first.out")"
  fi
  tell "$second" enter "$B"; ss=$LAST_SEQ
  answer "$first" "$sf" >/dev/null || exit 1
  answer "$second" "$ss" >/dev/null || exit 1
  t0f=$(ts_of "$first" "$sf" ENTERING); t1f=$(ts_of "$first" "$sf" ENTERED)
  t0s=$(ts_of "$second" "$ss" ENTERING); t1s=$(ts_of "$second" "$ss" ENTERED)
  [ "$t1f" -ge "$t0s" ] || die "$first passed enter $((t0s - t1f)) us before $second began entering"
  [ "$t1s" -ge "$t0f" ] || die "$second passed enter before $first began entering"
  log "  both entered: $first waited $(((t1f - t0f) / 1000)) ms (passed $(((t1f - t0s) / 1000)) ms after $second began), $second $(((t1s - t0s) / 1000)) ms"
  tell "$first" barrier-leave; lf=$LAST_SEQ
  xf=$(ts_of "$first" "$lf" LEAVING)
  tell "$second" barrier-leave; ls=$LAST_SEQ
  answer "$first" "$lf" >/dev/null || exit 1
  answer "$second" "$ls" >/dev/null || exit 1
  ef=$(ts_of "$first" "$lf" LEFT-BARRIER); xs=$(ts_of "$second" "$ls" LEAVING)
  es=$(ts_of "$second" "$ls" LEFT-BARRIER)
  [ "$ef" -ge "$xs" ] || die "$first's leave returned $((xs - ef)) us before $second began leaving"
  [ "$es" -ge "$xf" ] || die "$second's leave returned before $first began leaving"
  log "  both left: $first's leave took $(((ef - xf) / 1000)) ms (returned $(((ef - xs) / 1000)) ms after $second began leaving), $second's $(((es - xs) / 1000)) ms"
  ask "$first" children "$B"
  expect_empty "$B's children after round $round (no member node, no stale ready)" "${REPLY#CHILDREN }"
  log "3.$round PASS"
}
barrier_round 1 java rust
barrier_round 2 rust java

# -- end -----------------------------------------------------------------------------------
exec {FD_OF[java]}>&- {FD_OF[rust]}>&-
for role in java rust; do
  pid=${PID_OF[$role]}
  deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "$role did not exit within 30 s of its stdin's end"
    sleep 0.05
  done
  rc=0; wait "$pid" || rc=$?
  [ $rc -eq 0 ] || { tail -n 20 "$WORK/$role.err" >&2; die "$role exited with $rc"; }
done
log "PASS: recipes interop in $((SECONDS - T0)) s (peers $((SECONDS - T1)) s): Curator 5.4 and ours counted, grouped and passed the barrier alike"
