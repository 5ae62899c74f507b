#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder of hostile bytes (the zk-fuzz
# crate's targets, see docs/testing.md "Fuzzing"), with AFL++ through
# cargo-afl, on the stable toolchain.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Builds the targets with AFL instrumentation, runs each for SECONDS_PER_TARGET
# (default 20) from its corpus (fuzz/corpus/TARGET), one afl-fuzz at a time
# (ZK_FUZZ_JOBS at a time: at most one per free core), then prints per target
# the executions, executions per second, corpus size (paths), edges covered,
# stability, crashes and hangs (afl-fuzz's fuzzer_stats), and exits 1 if any
# target saved a crash or a hang (their files are listed with the command
# that reproduces them without AFL). Without TARGET, every target.
#
# What it needs, installed when missing: make and a C compiler (Debian's
# build-essential, with apt-get when run as root), and cargo-afl at a pinned
# version (`cargo install`), which builds its own AFL++ (afl-fuzz and the
# runtime the targets link) from the source in the crate: no LLVM plugin, no
# nightly, no download other than crates.io.
#
# Environment: CARGO_TARGET_DIR (the build; default target/), ZK_FUZZ_OUT
# (afl-fuzz's output, ZK_FUZZ_OUT/TARGET, emptied first; default
# $CARGO_TARGET_DIR/afl), ZK_FUZZ_TIMEOUT_MS (one execution longer than this
# is a hang; default 1000), ZK_FUZZ_JOBS (afl-fuzz processes at once; default
# 1).
set -euo pipefail

CARGO_AFL_VERSION=0.18.2
secs=${1:-20}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
export CARGO_TARGET_DIR=$target_dir
out=${ZK_FUZZ_OUT:-$target_dir/afl}
timeout_ms=${ZK_FUZZ_TIMEOUT_MS:-1000}
jobs=${ZK_FUZZ_JOBS:-1}

if ! [[ $secs =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ] || ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
    exit 2
fi

started=$(date +%s)

# --- tools -----------------------------------------------------------------
if ! command -v make >/dev/null || ! command -v cc >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "fuzz: installing build-essential (make, cc) for AFL++"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >/dev/null
    else
        echo "fuzz: make and a C compiler are needed (Debian: apt-get install build-essential)" >&2
        exit 1
    fi
fi
if [ "$(cargo afl --version 2>/dev/null | awk '{print $2}')" != "$CARGO_AFL_VERSION" ]; then
    echo "fuzz: installing cargo-afl $CARGO_AFL_VERSION (builds AFL++ from the crate's source)"
    cargo install cargo-afl --locked --version "$CARGO_AFL_VERSION"
fi
# `cargo install` builds AFL++ for the current rustc; after a toolchain update
# (or if that step failed) build it again ("already built" otherwise).
if ! config=$(cargo afl config --build 2>&1); then
    case $config in
        *"already built"*) ;;
        *) echo "$config" >&2; exit 1 ;;
    esac
fi

# --- build -----------------------------------------------------------------
build_started=$(date +%s)
cargo afl build --release -p zk-fuzz --features afl --bin zk-fuzz-target
bin=$target_dir/release/zk-fuzz-target
echo "fuzz: built in $(($(date +%s) - build_started)) s"

if [ $# -eq 0 ]; then
    set -- $(sed -n 's/^ *name: "\([a-z0-9_]*\)",$/\1/p' fuzz/src/lib.rs)
fi

# --- run -------------------------------------------------------------------
export AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_NO_UI=1 AFL_FAST_CAL=1
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
for t in "$@"; do
    if [ ! -d "fuzz/corpus/$t" ]; then
        echo "fuzz: no target $t (no fuzz/corpus/$t)" >&2
        exit 2
    fi
done

# One afl-fuzz per target, at most $jobs at a time.
run_one() {
    local t=$1
    rm -rf "${out:?}/$t"
    mkdir -p "$out/$t"
    cargo afl fuzz -V "$secs" -t "$timeout_ms" -i "fuzz/corpus/$t" -o "$out/$t" -- "$bin" "$t" >"$out/$t.log" 2>&1
}
pids=()
names=()
afl_failed=0
for t in "$@"; do
    while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    run_one "$t" &
    pids+=("$!")
    names+=("$t")
done
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "fuzz: afl-fuzz failed on ${names[$i]}:" >&2
        grep -av 'instability detected\|Fuzzing test case' "$out/${names[$i]}.log" | tail -n 30 >&2
        afl_failed=1
    fi
done
[ "$afl_failed" = 0 ] || exit 1

stat() { sed -n "s/^$2 *: *//p" "$1" | head -n1; }
failed=0
printf '%-15s %6s %12s %9s %7s %9s %13s %9s %7s %5s\n' target seconds execs execs/s paths bitmap edges stability crashes hangs
for t in "$@"; do
    s=$out/$t/default/fuzzer_stats
    crashes=$(stat "$s" saved_crashes)
    hangs=$(stat "$s" saved_hangs)
    printf '%-15s %6s %12s %9s %7s %9s %13s %9s %7s %5s\n' "$t" "$(stat "$s" run_time)" "$(stat "$s" execs_done)" \
        "$(stat "$s" execs_per_sec)" "$(stat "$s" corpus_count)" "$(stat "$s" bitmap_cvg)" \
        "$(stat "$s" edges_found)/$(stat "$s" total_edges)" "$(stat "$s" stability)" "$crashes" "$hangs"
    if [ "$crashes" != 0 ] || [ "$hangs" != 0 ]; then
        failed=1
    fi
done

if [ "$failed" != 0 ]; then
    echo
    echo "fuzz: crashes or hangs found:"
    for t in "$@"; do
        for f in "$out/$t"/default/crashes/id:* "$out/$t"/default/hangs/id:*; do
            [ -e "$f" ] && echo "  $f"
        done
    done
    echo "reproduce without AFL: cargo run -p zk-fuzz --bin zk-fuzz-check -- TARGET FILE..."
    echo "(docs/testing.md, \"Fuzzing\": a crash becomes a file of fuzz/regressions/TARGET/ before its fix)"
fi
echo "fuzz: $# targets, ${secs} s each, $jobs at a time, $(($(date +%s) - started)) s in all"
exit "$failed"
