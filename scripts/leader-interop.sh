#!/usr/bin/env bash
# Leader-election interop proof: Curator 5.4's LeaderLatch / LeaderSelector (Java, Debian's
# jars) and ours (zk_recipes::leader, examples/leader_contender.rs) take part in ONE election
# each, on one ZooKeeper server, while the leader is killed (kill -9) or closed again and again.
#
# usage: scripts/leader-interop.sh [--server embedded|apache] [CONNECT_STRING]
#
#   CONNECT_STRING       use that server (e.g. 127.0.0.1:2181); nothing is started.
#   --server embedded    (default) build and start this repo's embedded server (zk-embedded).
#   --server apache      start Apache ZooKeeper with scripts/zk-standalone.sh on a free port.
#
# Phase 1, latch: Java J1, Rust R1, Java J2, Rust R2 join /leader-interop/<run>/latch in that
#   order (LeaderLatch with id = name), so the queue alternates sides. Then six times: the
#   current leader (read from the log) is killed with SIGKILL (kill, close, kill, kill, close,
#   kill: four kills, two normal closes), a replacement of the same side joins at the back,
#   and the script waits for the next leader, who is of the other side. Finally every
#   participant closes.
# Phase 2, selector: Java J1, Rust R1, Java J2, Rust R2 LeaderSelectors (Curator's Standard
#   policy, auto-requeue; each leadership holds 200..800 ms) on .../selector; after a while the
#   leader is killed in the middle of its work, twice (once on each side, when possible), a
#   replacement joins each time; then everyone closes.
# Phase 3, composed faults: Rust R1 (behind a fault proxy of its own, PARTITIONABLE=1) leads a
#   latch election with Java J1 and J2 queued behind it; R1 is partitioned (its proxy cuts and
#   refuses), an operator deletes its node while it is away, J1 is elected, and the partition
#   heals before R1's session expires, with R1's re-registered watches answered 300 ms late.
#   R1 must never be told it leads again with its old term (a LEADER of R1 while J1 leads is
#   an overlap; a term that goes back is caught too): it rejoins at the back and leads again
#   only after J1 and J2 close, in a larger term. Three rounds.
# Checks (scripts/interop/check_leaders.py, whose self-test runs first and must catch an
# overlap): never two leaders at once (a killed leader's leadership ends at its kill time, as
# recorded by this script just after kill -9 returned), leadership moved Java->Rust and
# Rust->Java, terms (czxid) and node sequences of successive leaders strictly increase, every
# leadership ended, and no participant node is left under either election once every
# participant is closed and every killed session has expired. The checker prints a note when
# a latch was told it leads after its close began (seen with Curator 5.4 when everyone closes
# together; such a leadership counts until close() returned) or closed before it could read
# its node.
#
# Needs: java + javac (17), Debian's curator/zookeeper jars in /usr/share/java, python3,
# cargo. Every process runs under `timeout`; whatever this script started is killed on exit.
#
# env: SESSION_MS (session timeout of every participant, 4000), PROC_TIMEOUT (s, 300),
#      SERVER_TIMEOUT (s, 900), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
INTEROP=$SCRIPT_DIR/interop
PY=/usr/bin/python3
J=/usr/share/java
SESSION_MS=${SESSION_MS:-4000}
PROC_TIMEOUT=${PROC_TIMEOUT:-300}
SERVER_TIMEOUT=${SERVER_TIMEOUT:-900}
export SESSION_MS

JAVAC_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
JAVA_OPTS=(-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

log() { printf '[leader-interop] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//' >&2; }
now_us() { date +%s%6N; }

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
WORK=$(mktemp -d "${TMPDIR:-/tmp}/leader-interop.XXXXXX")
OUT=$WORK/classes
CTL=""          # the current phase's control dir (NAME.close files)
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
  command -v pgrep >/dev/null || die "pgrep (procps) not found"
  local jar
  for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [ -f "$J/$jar.jar" ] || die "$J/$jar.jar missing (apt-get install zookeeper libcurator-recipes-java)"
  done
  [ -x "$PY" ] || die "$PY not found"
  command -v cargo >/dev/null || die "cargo not found (needed for the Rust participant)"
}

compile_java() {
  log "compiling CuratorLeaderContender.java"
  timeout 180 javac -nowarn -d "$OUT" -cp "$JAVAC_CP" "$INTEROP/CuratorLeaderContender.java" \
    || die "javac failed"
}

RUST_CONTENDER=""
build_rust() {
  log "building the Rust participant (cargo build --example leader_contender)"
  (cd "$REPO" && timeout 900 cargo build -q --example leader_contender) \
    || die "cargo build of examples/leader_contender.rs failed"
  RUST_CONTENDER=${CARGO_TARGET_DIR:-$REPO/target}/debug/examples/leader_contender
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

# ---- participants ------------------------------------------------------------------------
declare -A WRAPPER=()  # NAME -> pid of its `timeout`
declare -A SIDE_OF=()

# start_participant SIDE(java|rust) NAME MODE(latch|selector) PATH LOG
start_participant() {
  local side=$1 name=$2 mode=$3 path=$4 logf=$5
  if [ "$side" = java ]; then
    timeout --kill-after=5 "$PROC_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$JAVA_CP" CuratorLeaderContender \
      "$CONNECT" "$mode" "$path" "$name" "$logf" "$CTL" >"$WORK/$mode-$name.out" 2>&1 </dev/null &
  else
    timeout --kill-after=5 "$PROC_TIMEOUT" "$RUST_CONTENDER" \
      "$CONNECT" "$mode" "$path" "$name" "$logf" "$CTL" >"$WORK/$mode-$name.out" 2>&1 </dev/null &
  fi
  STARTED_PIDS+=($!)
  WRAPPER[$name]=$!
  SIDE_OF[$name]=$side
}

# await_line LOG REGEX SECONDS WHAT: waits for a line matching REGEX
await_line() {
  local logf=$1 re=$2 limit=$3 what=$4 deadline=$((SECONDS + $3))
  until grep -Eq "$re" "$logf" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "no $what within $limit s (log: $logf)"
    sleep 0.05
  done
}

# join NAME SIDE MODE PATH LOG: starts a participant and waits until it has joined (its
# JOIN line: its node is among the participants), so the queue has the order of the joins
join() {
  local name=$1
  start_participant "$2" "$name" "$3" "$4" "$5"
  await_line "$5" "^$name JOIN " 60 "JOIN from $name"
}

# current MODE LOG: who leads now, per the log
current() { "$PY" "$INTEROP/check_leaders.py" --current "$1" "$2"; }

# await_new_leader MODE LOG OLD SECONDS: waits for a leader other than OLD; prints it
await_new_leader() {
  local mode=$1 logf=$2 old=$3 limit=$4 deadline=$((SECONDS + $4)) who
  while :; do
    who=$(current "$mode" "$logf")
    if [ -n "$who" ] && [ "$who" != "$old" ]; then printf '%s' "$who"; return 0; fi
    [ $SECONDS -lt $deadline ] || die "$mode: no new leader after $old within $limit s"
    sleep 0.05
  done
}

# kill_participant NAME LOG: SIGKILL to the participant itself (the child of its timeout);
# records NAME KILLED <us> just after kill returned
kill_participant() {
  local name=$1 logf=$2 wrapper=${WRAPPER[$1]} child
  child=$(pgrep -P "$wrapper" | head -n1 || true)
  [ -n "$child" ] || die "no process for $name (its timeout is $wrapper)"
  kill -KILL "$child"
  printf '%s KILLED %s\n' "$name" "$(now_us)" >>"$logf"
  wait "$wrapper" 2>/dev/null || true
}

# close_participant NAME: asks it to close and waits for its exit (status 0)
close_participant() {
  local name=$1 rc=0
  touch "$CTL/$name.close"
  wait "${WRAPPER[$name]}" || rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$WORK"/*-"$name".out >&2 || true
    die "$name exited with $rc after its close"
  fi
}

# await_empty PATH: no participant node left (killed sessions expire within a few session timeouts)
await_empty() {
  local path=$1 n deadline=$((SECONDS + 3 * SESSION_MS / 1000 + 10))
  while :; do
    n=$(timeout 60 "$RUST_CONTENDER" "$CONNECT" count "$path") || die "cannot count the nodes of $path"
    [ "$n" = 0 ] && { log "$path: no participant node left"; return 0; }
    [ $SECONDS -lt $deadline ] || die "$path: $n participant node(s) left after every participant closed"
    sleep 0.5
  done
}

# ---- phases ------------------------------------------------------------------------------
RUN=/leader-interop/run-$$-$(date +%s)
NEXT_J=1
NEXT_R=1
new_name() { # SIDE -> the next name of that side (J1, J2, ... / R1, ...)
  if [ "$1" = java ]; then printf 'J%d' "$NEXT_J"; else printf 'R%d' "$NEXT_R"; fi
}
bump() { if [ "$1" = java ]; then NEXT_J=$((NEXT_J + 1)); else NEXT_R=$((NEXT_R + 1)); fi; }

ALIVE=()

phase_start() { # MODE PATH LOG: J, R, J, R
  local mode=$1 path=$2 logf=$3 side name
  NEXT_J=1; NEXT_R=1; ALIVE=()
  # Each phase has its own names (J1, R1, ...), hence its own control files.
  CTL=$WORK/control-$mode
  mkdir -p "$CTL"
  for side in java rust java rust; do
    name=$(new_name $side); bump $side
    join "$name" $side "$mode" "$path" "$logf"
    ALIVE+=("$name")
  done
}

replace() { # OLD MODE PATH LOG: a participant of OLD's side joins instead of OLD
  local old=$1 mode=$2 path=$3 logf=$4 side name a keep=()
  side=${SIDE_OF[$old]}
  for a in "${ALIVE[@]}"; do [ "$a" = "$old" ] || keep+=("$a"); done
  ALIVE=("${keep[@]}")
  name=$(new_name "$side"); bump "$side"
  join "$name" "$side" "$mode" "$path" "$logf"
  ALIVE+=("$name")
}

close_all() {
  local a
  for a in "${ALIVE[@]}"; do touch "$CTL/$a.close"; done
  for a in "${ALIVE[@]}"; do close_participant "$a"; done
  ALIVE=()
}

latch_phase() {
  local path=$RUN/latch logf=$WORK/latch.log leader next action t0=$SECONDS
  : >"$logf"
  log "latch: J1, R1, J2, R2 join $path"
  phase_start latch "$path" "$logf"
  leader=$(await_new_leader latch "$logf" "" 30)
  log "latch: $leader leads"
  for action in kill close kill kill close kill; do
    leader=$(current latch "$logf")
    [ -n "$leader" ] || die "latch: nobody leads before the $action"
    if [ "$action" = kill ]; then
      kill_participant "$leader" "$logf"
    else
      close_participant "$leader"
    fi
    replace "$leader" latch "$path" "$logf"
    next=$(await_new_leader latch "$logf" "$leader" $((3 * SESSION_MS / 1000 + 20)))
    log "latch: $action of ${SIDE_OF[$leader]} leader $leader -> ${SIDE_OF[$next]} $next leads"
  done
  close_all
  await_empty "$path"
  "$PY" "$INTEROP/check_leaders.py" latch "$logf" --min-moves 2 --min-leaders 7 \
    || die "latch: the check failed (log: $logf)"
  log "latch phase: $((SECONDS - t0)) s"
}

selector_phase() {
  local path=$RUN/selector logf=$WORK/selector.log leader kills=0 tries=0 want t0=$SECONDS last=""
  : >"$logf"
  log "selector: J1, R1, J2, R2 join $path"
  phase_start selector "$path" "$logf"
  sleep 3
  # Two kills of a leader in the middle of its work, one per side when the rotation allows.
  want=java
  while [ $kills -lt 2 ] && [ $tries -lt 200 ]; do
    tries=$((tries + 1))
    leader=$(current selector "$logf")
    # (After 100 tries on one side, any leader will do.)
    if [ -z "$leader" ] || { [ "${SIDE_OF[$leader]}" != "$want" ] && [ $tries -lt 100 ]; }; then
      sleep 0.05
      continue
    fi
    kill_participant "$leader" "$logf"
    # Did the kill land inside its work (no END before KILLED)?
    if [ "$(tail -n 2 "$logf" | grep -c "^$leader END ")" = 0 ] && [ "$(current selector "$logf")" = "" ]; then
      kills=$((kills + 1))
      log "selector: killed ${SIDE_OF[$leader]} leader $leader in the middle of its work"
    else
      log "selector: $leader's work ended before the kill; it counts as a participant kill"
    fi
    replace "$leader" selector "$path" "$logf"
    await_new_leader selector "$logf" "$leader" $((3 * SESSION_MS / 1000 + 20)) >/dev/null
    want=rust
    tries=0
    sleep 1
  done
  [ $kills -ge 1 ] || die "selector: no kill landed in a leader's work"
  sleep 2
  close_all
  await_empty "$path"
  "$PY" "$INTEROP/check_leaders.py" selector "$logf" --min-moves 2 --min-leaders 8 \
    || die "selector: the check failed (log: $logf)"
  log "selector phase: $((SECONDS - t0)) s"
}

composed_phase() {
  local path=$RUN/composed logf=$WORK/composed.log t0=$SECONDS round next broken
  : >"$logf"
  CTL=$WORK/control-composed
  mkdir -p "$CTL"
  NEXT_J=1; NEXT_R=1; ALIVE=()
  for round in 1 2 3; do
    log "composed round $round: R$round (behind its own fault proxy), then J$((2 * round - 1)) and J$((2 * round)) join $path"
    PARTITIONABLE=1 join "R$round" rust latch "$path" "$logf"
    join "J$((2 * round - 1))" java latch "$path" "$logf"
    join "J$((2 * round))" java latch "$path" "$logf"
    ALIVE=("R$round" "J$((2 * round - 1))" "J$((2 * round))")
    [ "$(await_new_leader latch "$logf" "" 30)" = "R$round" ] || die "composed: R$round does not lead"
    touch "$CTL/R$round.partition"
    await_line "$logf" "^R$round NOTLEADER .*Suspended" 30 "R$round told it was cut off"
    broken=$(timeout 60 "$RUST_CONTENDER" "$CONNECT" break "$path" "R$round") || die "composed: cannot break R$round's node"
    printf 'R%s BROKEN %s %s\n' "$round" "$(now_us)" "$broken" >>"$logf"
    next=$(await_new_leader latch "$logf" "R$round" 30)
    log "composed: R$round partitioned, its node $broken deleted, $next leads; healing"
    rm -f "$CTL/R$round.partition"
    await_line "$logf" "^R$round NOTLEADER .*NodeDeleted" 30 "R$round told its node was deleted"
    # J's close in turn: R leads again, in a larger term (the checker compares terms).
    close_participant "J$((2 * round - 1))"
    close_participant "J$((2 * round))"
    [ "$(await_new_leader latch "$logf" "" 30)" = "R$round" ] || die "composed: R$round does not lead after the Java participants closed"
    close_participant "R$round"
    ALIVE=()
  done
  await_empty "$path"
  "$PY" "$INTEROP/check_leaders.py" latch "$logf" --min-moves 3 --min-leaders 9 \
    || die "composed: the check failed (log: $logf)"
  log "composed phase: $((SECONDS - t0)) s"
}

# ---- main --------------------------------------------------------------------------------
T0=$SECONDS
check_prereqs
"$PY" "$INTEROP/check_leaders.py" --self-test || die "the checker's self-test failed"
compile_java
build_rust
case "$SERVER" in
  apache) start_apache ;;
  embedded) start_embedded ;;
esac
log "server $CONNECT; session timeout $SESSION_MS ms; elections under $RUN"
latch_phase
selector_phase
composed_phase
# CURATOR-696 (spec §5 point 12): Curator 5.4's latch grants leadership without checking that
# its node belongs to its current session; a SIGKILLed Java participant's session just expires,
# so it cannot show here. Any isLeader() while hasLeadership() was false would fail the check.
log "PASS: leader election interop ($((SECONDS - T0)) s): Curator's LeaderLatch/LeaderSelector and ours"
