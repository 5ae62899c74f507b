#!/usr/bin/env bash
# Takes into the repository's corpus what a fuzzing run found:
#
#   bash scripts/fuzz-corpus.sh TARGET [RUN_DIR]
#
# minimises (afl-cmin -e: the fewest inputs that cover every edge any of them
# covers, hit counts aside, which keeps the corpus small) the target's corpus (fuzz/corpus/TARGET) together with the queue of
# a run of scripts/fuzz.sh (RUN_DIR, default $CARGO_TARGET_DIR/afl/TARGET),
# and writes the result back to fuzz/corpus/TARGET: the seeds (seed-*) stay
# whatever happens, every other input is named afl-<sha1 of its bytes>.
# Then run `cargo test -p zk-fuzz` and commit the corpus. Needs the harness
# built by scripts/fuzz.sh (same CARGO_TARGET_DIR).
set -euo pipefail

CARGO_AFL_VERSION=0.18.2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
t=${1:?usage: bash scripts/fuzz-corpus.sh TARGET [RUN_DIR]}
target_dir=${CARGO_TARGET_DIR:-$root/target}
run=${2:-$target_dir/afl/$t}
bin=$target_dir/release/zk-fuzz-target
[ -d "fuzz/corpus/$t" ] || { echo "no target $t" >&2; exit 2; }
[ -d "$run/default/queue" ] || { echo "no queue in $run/default/queue" >&2; exit 2; }
[ -x "$bin" ] || { echo "no harness $bin: run scripts/fuzz.sh first" >&2; exit 2; }

# cargo-afl's own AFL++ tools first: afl-cmin looks afl-showmap up in PATH,
# where a distribution's older afl++ (Debian's 4.04c) may come first.
release=$(rustc -vV | sed -n 's/^release: //p')
commit=$(rustc -vV | sed -n 's/^commit-hash: //p' | cut -c1-7)
afl_bin=${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs/rustc-$release-$commit/afl.rs-$CARGO_AFL_VERSION/afl/bin
export PATH=$afl_bin:$PATH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/in"
cp "fuzz/corpus/$t"/* "$work/in/"
for f in "$run"/default/queue/id:*; do
    cp "$f" "$work/in/q-$(sha1sum "$f" | cut -c1-16)"
done
# afl-cmin.bash: the python afl-cmin of AFL++ 4.40c finds no edge at all in
# this persistent-mode harness (its batch mode), the shell one does.
AFL_MAP_SIZE=65536 AFL_PATH=$afl_bin AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 "$afl_bin/afl-cmin.bash" -e -i "$work/in" -o "$work/out" -t 1000 -- "$bin" "$t" >"$work/cmin.log" 2>&1 ||
    { tail -n 20 "$work/cmin.log" >&2; exit 1; }

before=$(find "fuzz/corpus/$t" -type f | wc -l)
find "fuzz/corpus/$t" -type f ! -name 'seed-*' -delete
for f in "$work/out"/*; do
    name=$(basename "$f")
    case $name in seed-*) continue ;; esac
    cp "$f" "fuzz/corpus/$t/afl-$(sha1sum "$f" | cut -c1-16)"
done
# A minimised input identical to a seed is the seed.
for s in "fuzz/corpus/$t"/seed-*; do
    dup="fuzz/corpus/$t/afl-$(sha1sum "$s" | cut -c1-16)"
    [ -e "$dup" ] && rm -f "$dup"
done
after=$(find "fuzz/corpus/$t" -type f | wc -l)
echo "$t: $before inputs before, $(ls "$run"/default/queue | grep -c '^id:') in the run's queue, $after after ($(du -sb "fuzz/corpus/$t" | cut -f1) bytes)"
