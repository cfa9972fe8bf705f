#!/usr/bin/env bash
# The long fuzz run of issue #5: runs each libFuzzer target (ASan + UBSan, the build of scripts/fuzz-smoke.sh)
# for FUZZ_RUNS executions (default 10 million) from its committed seed corpus, one target after another,
# at low CPU priority (so the per-input time limit, FUZZ_TIMEOUT, defaults to 60 s of wall time: a loaded
# machine starves the run and a 10 s limit reports false timeouts).
# Usage: scripts/fuzz-long.sh [target...]   (default: every target of fuzz/)
# FUZZ_SANITIZERS (default address,undefined) picks the sanitizers; another choice builds in its own folder.
# FUZZ_CORPUS_DIR keeps each target's grown corpus in $FUZZ_CORPUS_DIR/<target>, so a later run resumes from it.
# Each target's libFuzzer log and final statistics go to $FUZZ_BUILD_DIR/long-<target>-<pid>.log; a crash stops
# that target with its input saved as $FUZZ_BUILD_DIR/artifacts/<target>-crash-..., and the script exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${FUZZ_RUNS:-10000000}
sanitizers=${FUZZ_SANITIZERS:-address,undefined}
default_build=build-fuzz
[ "$sanitizers" = address,undefined ] || default_build="build-fuzz-${sanitizers//,/-}"
build=${FUZZ_BUILD_DIR:-$default_build}
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja -DCNTKIO_FUZZ_SANITIZERS="$sanitizers" >/dev/null
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
  if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then
    scratch="$FUZZ_CORPUS_DIR/$target"
    mkdir -p "$scratch"
  else
    scratch=$(mktemp -d)
  fi
  start=$(date +%s)
  log="$build/long-$target-$$.log"
  if nice -n 19 "$binary" -runs="$runs" -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$target-" "$scratch" "fuzz/corpus/$target" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  executed=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  echo "fuzz-long: $target ($sanitizers) $result: $executed executions in $(($(date +%s) - start)) s," \
    "$(ls "$scratch" | wc -l) inputs in $scratch"
  [ -n "${FUZZ_CORPUS_DIR:-}" ] || rm -rf "$scratch"
done
exit $status
