#!/usr/bin/env bash
# The runs behind BENCHMARKS.md: zk-bench with Curator 5.4 side by side on a
# standalone Apache ZooKeeper 3.8, RUNS times (each run starts its own server;
# within a run every scenario runs ours, then Curator's, on the same server,
# paths, window and warm-up), then once on a 3-node ensemble; then the plots
# and the table (scripts/bench/plot.py).
#
# usage: scripts/bench/report.sh [OUT_DIR [RUNS]]   (default target/bench-report, 3 runs)
# Environment: SECONDS_PER_WINDOW (default 3), WARMUP (default 5), PEERS (default curator;
# PEERS=curator,zookeeper-client,kazoo,zookeeper adds every peer to the standalone runs,
# see BENCHMARKS.md "Every peer, side by side"), CARGO_TARGET_DIR (default target).
set -euo pipefail

cd "$(dirname "$0")/../.."
out=${1:-target/bench-report}
runs=${2:-3}
window=${SECONDS_PER_WINDOW:-3}
warmup=${WARMUP:-5}
scenarios=mutex,semaphore,handoff,latency,deep,clients
peers=${PEERS:-curator}
bench=${CARGO_TARGET_DIR:-target}/release/zk-bench
mkdir -p "$out"

cargo build --release --quiet -p zk-bench
{
  echo "date=$(date -u +%FT%TZ)"
  echo "nproc=$(nproc)"
  echo "cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
  echo "mem_total=$(sed -n 's/^MemTotal:\s*//p' /proc/meminfo)"
  echo "loadavg_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit=$(git rev-parse --short HEAD)"
} >"$out/machine.txt"

for i in $(seq 1 "$runs"); do
  echo "== run $i of $runs (standalone Apache ZooKeeper)" >&2
  "$bench" --apache --peers "$peers" --seconds "$window" --warmup "$warmup" \
    --only "$scenarios" | tee "$out/run-$i.txt"
  # Memory per held lock is read from /proc (RSS): in a process of its own, so
  # that memory freed by earlier scenarios does not hide it.
  "$bench" --apache --peers "$peers" --seconds "$window" --warmup "$warmup" \
    --only many | grep -v '^server=' | tee -a "$out/run-$i.txt"
  echo "loadavg_after_run_$i=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
done
echo "== 3-node ensemble" >&2
"$bench" --ensemble --curator --seconds "$window" --warmup "$warmup" \
  --only handoff,latency,deep | tee "$out/ensemble.txt"

python3 scripts/bench/plot.py "$out" "$out"/run-*.txt >"$out/table.md"
python3 scripts/bench/plot.py "$out/ensemble" "$out/ensemble.txt" >"$out/ensemble-table.md"
echo "== wrote $out/{handoffs,latency,deep}.svg, $out/table.md, $out/ensemble-table.md" >&2
