#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) and runs each one for FUZZ_SECONDS seconds
# (default 20) from its committed seed corpus fuzz/corpus/<target>/. Any crash, sanitizer report, leak,
# timeout (10 s for one input) or memory blow-up (2 GiB) fails the script; the input that did it is saved
# as $FUZZ_BUILD_DIR/artifacts/<target>-crash-... and can be replayed with `<binary> <file>`.
# New inputs go to a scratch corpus, so the committed seeds stay as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
build=${FUZZ_BUILD_DIR:-build-fuzz}
if ! command -v clang++ >/dev/null; then
  echo "fuzz-smoke: clang++ is missing (scripts/setup.sh installs clang and libclang-rt-dev)" >&2
  exit 1
fi
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja >/dev/null
cmake --build "$build" -j "$(nproc)"
mkdir -p "$build/artifacts"
status=0
for source in fuzz/fuzz_*.cpp; do
  target=$(basename "$source" .cpp)
  target=${target#fuzz_}
  binary="$build/fuzz_$target"
  [ -x "$binary" ] || continue  # a target whose code under test is not there yet (see fuzz/CMakeLists.txt)
  scratch=$(mktemp -d)
  echo "fuzz-smoke: $target for ${seconds}s"
  if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$target-" "$scratch" "fuzz/corpus/$target" >"$build/$target.log" 2>&1; then
    echo "fuzz-smoke: $target FAILED; last lines of $build/$target.log:" >&2
    tail -n 40 "$build/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$target.log" | sed "s/^/  $target /"
  fi
  rm -rf "$scratch"
done
exit $status
