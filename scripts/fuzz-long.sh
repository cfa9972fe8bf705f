#!/usr/bin/env bash
# The long fuzz run of issue #5: runs each libFuzzer target (ASan + UBSan, the build of scripts/fuzz-smoke.sh)
# for FUZZ_RUNS executions (default 10 million) from its committed seed corpus, one target after another,
# at low CPU priority (so the per-input time limit, FUZZ_TIMEOUT, defaults to 60 s of wall time: a loaded
# machine starves the run and a 10 s limit reports false timeouts).
# Usage: scripts/fuzz-long.sh [target...]   (default: every target of fuzz/)
# Each target's libFuzzer log and final statistics go to $FUZZ_BUILD_DIR/long-<target>.log; a crash stops
# that target with its input saved as $FUZZ_BUILD_DIR/artifacts/<target>-crash-..., and the script exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${FUZZ_RUNS:-10000000}
build=${FUZZ_BUILD_DIR:-build-fuzz}
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja >/dev/null
cmake --build "$build" -j "$(nproc)"
mkdir -p "$build/artifacts"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz/fuzz_*.cpp; do
    target=$(basename "$source" .cpp)
    targets+=("${target#fuzz_}")
  done
fi
status=0
for target in "${targets[@]}"; do
  binary="$build/fuzz_$target"
  [ -x "$binary" ] || continue
  # The config language needs no long inputs to reach every rule, and long ones slow the run tenfold.
  max_len=4096
  [ "$target" = config ] && max_len=1024
  scratch=$(mktemp -d)
  start=$(date +%s)
  if nice -n 19 "$binary" -runs="$runs" -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$target-" "$scratch" "fuzz/corpus/$target" >"$build/long-$target.log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  executed=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$build/long-$target.log" | grep -oE "[0-9]+$" || echo "?")
  echo "fuzz-long: $target $result: $executed executions in $(($(date +%s) - start)) s, corpus grew to $(ls "$scratch" | wc -l) new inputs"
  rm -rf "$scratch"
done
exit $status
