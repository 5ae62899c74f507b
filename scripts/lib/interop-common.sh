# Shared by scripts/leader-interop.sh and scripts/cache-interop.sh (sourced, not run):
# stopping what a script started and its exit trap, a free port, a server's mode, and
# starting Apache ZooKeeper (scripts/zk-standalone.sh) or the embedded server on one.
# The sourcing script defines log, die, PY, REPO, WORK, STARTED_PIDS and KEEP_WORK first;
# start_apache and start_embedded set CONNECT.

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
