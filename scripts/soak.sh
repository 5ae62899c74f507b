#!/usr/bin/env bash
# Soak: the fault campaign's load with no faults, for a long time, watching
# resident memory and thread counts of every process and the server's watch,
# node and session counts for growth.
#
# usage: scripts/soak.sh [SECONDS [SAMPLE_EVERY_S]]     (default 1800 s, a sample every 60 s)
#
# It starts the embedded server as its own process (zk-embedded), four
# `zk-campaign --worker` processes (5 threads each, one session each, the
# campaign's mix of mutex / read-write / semaphore / multi-lock acquires, holds
# of up to 5 ms), samples VmRSS and Threads from /proc/PID/status of each
# process plus the server's `wchs` and `mntr` answers, then stops the workers,
# runs the campaign's checker on their logs (exclusion, fencing, leaks) and
# compares the last sample with the first one taken after warm-up (a fifth of
# the run, at least one sample). Exit status 0 when the checker is clean and
# nothing grew past its bound: worker RSS by more than 25 % + 4 MiB, a worker's
# standing threads at all, server watches or live sessions at all (both are
# compared at a quiet instant: after the load, before the workers exit).
# Threads are counted by name (/proc/PID/task/*/comm). A worker's standing
# threads are all but those that live for a while by design: an election
# turn's (`leader-*`, at most 2 per worker thread: the latch's and the
# campaign's event translator), a client's timer (`zk-lock-watches`, at most 1,
# it ends a second after its last item) and the framework's closer of an old
# handle after an expiry (`zk-framework-close`). Those may come and go; their
# count is bounded at every sample (2 per worker thread + 2), and the standing
# count may not grow at all.
# Output: one `sample` line per sample, then `soak.*` key=value lines.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds=${1:-1800}
every=${2:-60}
workers=4
threads_per_worker=5

# ZK_BUILD_PROFILE=dev: a debug build (CI's short soak), as in scripts/campaign.sh.
case "${ZK_BUILD_PROFILE:-release}" in
  release) cargo build --release --quiet -p zk-campaign --bin zk-campaign -p zk-testing --bin zk-embedded; out=release ;;
  dev) cargo build --quiet -p zk-campaign --bin zk-campaign -p zk-testing --bin zk-embedded; out=debug ;;
  *) echo "ZK_BUILD_PROFILE must be release or dev" >&2; exit 2 ;;
esac
bin=${CARGO_TARGET_DIR:-target}/$out
dir=$(mktemp -d "${TMPDIR:-/tmp}/zk-soak.XXXXXX")
echo "soak.dir=$dir"

"$bin/zk-embedded" >"$dir/server.out" 2>"$dir/server.err" &
server=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$server" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  grep -q "listening on" "$dir/server.out" 2>/dev/null && break
  sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$dir/server.out")
[ -n "$addr" ] || { echo "the embedded server did not start" >&2; exit 2; }
host=${addr%:*}
port=${addr##*:}
echo "soak.server=$addr"

# four-letter word WORD: the server's answer on stdout.
flw() {
  exec 3<>"/dev/tcp/$host/$port"
  printf '%s' "$1" >&3
  cat <&3
  exec 3<&-
}

for slot in $(seq 0 $((workers - 1))); do
  "$bin/zk-campaign" --worker --slot "$slot" --connect "$addr" --log "$dir/worker-$slot-0.log" \
    --stop "$dir/stop" --threads "$threads_per_worker" --session-ms 3000 --acquire-timeout-ms 30000 \
    --short-timeout-percent 25 --hold-ms 5 --long-hold-permille 0 --think-ms 5 \
    --seed "$slot" 2>"$dir/worker-$slot.err" &
  pids+=($!)
done

# status PID FIELD: the field's first number from /proc/PID/status.
status() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# threads PID: "STANDING TRANSIENT", the process's threads counted by name
# (transient: the ones that come and go by design, see the header).
threads() {
  cat /proc/"$1"/task/*/comm 2>/dev/null |
    awk '/^(leader-|zk-lock-watches|zk-framework-clo)/ { t++; next } { s++ } END { print s + 0, t + 0 }'
}

sample() {
  local t=$1 rss=0 thr=0 maxrss=0 maxthr=0 maxtrans=0 p r n tr watches sessions nodes
  for p in "${pids[@]}"; do
    r=$(status "$p" VmRSS); read -r n tr < <(threads "$p")
    rss=$((rss + r)); thr=$((thr + n))
    [ "$r" -gt "$maxrss" ] && maxrss=$r
    [ "$n" -gt "$maxthr" ] && maxthr=$n
    [ "$tr" -gt "$maxtrans" ] && maxtrans=$tr
  done
  watches=$(flw wchs | sed -n 's/^Total watches://p')
  # Connections, not counting the one asking.
  sessions=$(flw mntr | awk '$1 == "zk_num_alive_connections" { print $2 - 1 }')
  nodes=$(flw mntr | awk '$1 == "zk_znode_count" { print $2 }')
  acq=$(cat "$dir"/worker-*-0.log 2>/dev/null | grep -c '^S ' || true)
  printf 'sample t_s=%d workers_rss_kib=%d max_worker_rss_kib=%d workers_threads=%d max_worker_threads=%d max_worker_transient_threads=%d server_rss_kib=%d server_threads=%d server_watches=%s server_connections=%s server_znodes=%s sections=%d\n' \
    "$t" "$rss" "$maxrss" "$thr" "$maxthr" "$maxtrans" "$(status "$server" VmRSS)" "$(status "$server" Threads)" \
    "${watches:-?}" "${sessions:-?}" "${nodes:-?}" "$acq"
}

start=$(date +%s)
sleep 5
samples=()
while :; do
  now=$(( $(date +%s) - start ))
  line=$(sample "$now")
  echo "$line"
  samples+=("$line")
  [ "$now" -ge "$seconds" ] && break
  sleep $(( every < seconds - now ? every : seconds - now ))
done

# Stop the load; the workers release, close and exit on the stop file.
touch "$dir/stop"
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
after_watches=$(flw wchs | sed -n 's/^Total watches://p')
after_conns=$(flw mntr | awk '$1 == "zk_num_alive_connections" { print $2 - 1 }')
echo "soak.after_stop.server_watches=$after_watches"
echo "soak.after_stop.server_connections=$after_conns"

field() { sed -n "s/.* $2=\([0-9?]*\).*/\1/p" <<<"$1"; }
n=${#samples[@]}
warm=$(( n / 5 )); [ "$warm" -lt 1 ] && warm=1; [ "$warm" -ge "$n" ] && warm=$((n - 1))
first=${samples[$warm]}
last=${samples[$((n - 1))]}
ok=1
r0=$(field "$first" max_worker_rss_kib); r1=$(field "$last" max_worker_rss_kib)
t0=$(field "$first" max_worker_threads); t1=$(field "$last" max_worker_threads)
echo "soak.seconds=$seconds"
echo "soak.sections=$(field "$last" sections)"
echo "soak.worker_rss_kib.after_warmup=$r0"
echo "soak.worker_rss_kib.end=$r1"
echo "soak.worker_standing_threads.after_warmup=$t0"
echo "soak.worker_standing_threads.end=$t1"
echo "soak.server_rss_kib.after_warmup=$(field "$first" server_rss_kib)"
echo "soak.server_rss_kib.end=$(field "$last" server_rss_kib)"
if [ "$r1" -gt $(( r0 + r0 / 4 + 4096 )) ]; then echo "soak.FAIL=worker RSS grew from $r0 to $r1 KiB"; ok=0; fi
if [ "$t1" -gt "$t0" ]; then echo "soak.FAIL=a worker's standing threads grew from $t0 to $t1"; ok=0; fi
max_trans=0
for line in "${samples[@]}"; do
  tr=$(field "$line" max_worker_transient_threads)
  [ "$tr" -gt "$max_trans" ] && max_trans=$tr
done
echo "soak.worker_transient_threads.max=$max_trans"
if [ "$max_trans" -gt $(( 2 * threads_per_worker + 2 )) ]; then
  echo "soak.FAIL=a worker had $max_trans transient threads at once (bound $(( 2 * threads_per_worker + 2 )))"; ok=0
fi
if [ "${after_watches:-1}" != 0 ]; then echo "soak.FAIL=$after_watches watches left on the server after the workers closed"; ok=0; fi
if [ "${after_conns:-1}" != 0 ]; then echo "soak.FAIL=$after_conns connections left after the workers closed"; ok=0; fi

# The campaign's checker: mutual exclusion, fencing order, no leaked node.
if "$bin/zk-campaign" --check "$dir" --connect "$addr" >"$dir/check.out" 2>&1; then
  echo "soak.checker=clean"
else
  echo "soak.checker=FAILED (see $dir/check.out)"; tail -n 20 "$dir/check.out"; ok=0
fi
if [ "$ok" = 1 ]; then echo "soak.result=ok"; else echo "soak.result=FAILED"; exit 1; fi
