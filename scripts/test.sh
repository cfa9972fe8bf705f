#!/usr/bin/env bash
# The README's second command: install what is missing, build, and run the whole test suite.
# SANITIZE=1 builds with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan instead.
# With CI set (as .ci/run runs it) or CHECKS=all, it then also runs:
#   - the whole C++ suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan; not the RSS test),
#   - the threaded tests (loader threads, prefetch, randomizers, composite) under ThreadSanitizer (build-tsan),
#   - every libFuzzer target for FUZZ_SECONDS (default 20) from its seed corpus (scripts/fuzz-smoke.sh),
#   - the exhaustive comparison of the CTF number parser (CNTKIO_LONG_TESTS=1, plain builds),
#   - the C++ suite of a build without the image format (build-noimg, CNTKIO_WITH_IMAGES=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The S3 server of the remote tests (s3rver, pinned by tests/remote/package-lock.json) into the ignored
# tests/remote/node_modules; nginx comes from setup.sh.
if [ ! -f tests/remote/node_modules/s3rver/bin/s3rver.js ]; then
  (cd tests/remote && npm ci --no-audit --no-fund --silent)
fi
# The dependency rule of HACKING.md (nothing in src/pipeline includes a format, ...): fails before building.
python3 scripts/check_dependencies.py
if [ "${SANITIZE:-0}" = "1" ]; then
  export BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo
  bash scripts/build.sh -DCNTKIO_SANITIZE=ON -DCNTKIO_BUILD_BENCH=OFF -DCNTKIO_WERROR=ON
else
  export BUILD_DIR=build
  bash scripts/build.sh -DCNTKIO_BUILD_TESTS=ON -DCNTKIO_WERROR=ON
fi
if [ "${SANITIZE:-0}" = "1" ]; then
  # As in CI below: the memory test's limits hold for the plain allocator, not ASan's, and OpenMPI leaks by
  # design at exit, so the MPI test runs without leak detection.
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -E "streaming_memory_bounded_by_window|mpi_" &&
    ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -R "mpi_")
else
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)")
fi
# The Python package's tests, against the module in the build tree (Debian's /usr/bin/python3).
if [ ! -f "$BUILD_DIR/python/cntkio/__init__.py" ]; then
  echo "test.sh: the Python module was not built (see the CMake warning about python/)" >&2
  exit 1
fi
if [ "${SANITIZE:-0}" = "1" ]; then  # the module is instrumented: load the sanitizer runtimes first
  export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
  export ASAN_OPTIONS=detect_leaks=0
fi
PYTHONPATH="$PWD/$BUILD_DIR/python" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  python/tests

if [ -n "${CI:-}" ] || [ "${CHECKS:-}" = "all" ]; then
  unset LD_PRELOAD
  if [ "${SANITIZE:-0}" != "1" ]; then
    # Issue #9's exhaustive proof of the CTF number parser: every 6-9 digit mantissa with short exponents
    # (4.4e9 spellings, about 2.5 minutes on 2 cores).
    echo "== CTF number parser: the exhaustive comparison"
    CNTKIO_LONG_TESTS=1 "$BUILD_DIR/tests/cntkio_unit_tests" \
      --gtest_filter='CtfNumber.FastPathAgreesOnEveryMantissaUpToNineDigits'
  fi
  # Sanitizer builds use -O1 without -g: quick to compile, fast enough to run, stacks still symbolized.
  # The Python module is tested above; the sanitizer builds leave it (and the benchmarks) out.
  sanitizer_flags=(-DCMAKE_BUILD_TYPE=Sanitize "-DCMAKE_CXX_FLAGS=-O1" -DCNTKIO_BUILD_BENCH=OFF
                   -DCNTKIO_BUILD_PYTHON=OFF -DCNTKIO_WERROR=ON)
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite"
  BUILD_DIR=build-asan bash scripts/build.sh "${sanitizer_flags[@]}" -DCNTKIO_SANITIZE=ON
  (cd build-asan && export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 &&
    ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$(nproc)" -E "streaming_memory_bounded_by_window|mpi_" &&
    # OpenMPI, hwloc and their plug-ins leak by design at exit: the MPI test runs without leak detection.
    ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -R "mpi_")

  echo "== ThreadSanitizer: the threaded tests"
  # The build lists the tests by running the binary, so the suppressions apply to the build too.
  export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp"
  cmake -S . -B build-tsan -G Ninja "${sanitizer_flags[@]}" -DCNTKIO_TSAN=ON >/dev/null
  cmake --build build-tsan -j "$(nproc)" --target cntkio_unit_tests
  TSAN_OPTIONS="$TSAN_OPTIONS:halt_on_error=1:second_deadlock_stack=1" build-tsan/tests/cntkio_unit_tests \
    --gtest_filter='SourceThreads.*:GroupRead.*:SourceCheckpoint.*:SourceElasticResume.*:SourceReadAhead.*:*Randomizer*:Composite*.*:CtfParallelParse.*:CtfParallelIndex.*:ThreadPool*:ChunkLoader.*'

  echo "== libFuzzer smoke run"
  bash scripts/fuzz-smoke.sh

  # The image format is optional (HACKING.md): without it everything else still builds, warns of nothing and
  # passes; CNTK's image conformance cases are reported as not run.
  echo "== Built without the image format (CNTKIO_WITH_IMAGES=OFF)"
  BUILD_DIR=build-noimg bash scripts/build.sh "${sanitizer_flags[@]}" -DCNTKIO_WITH_IMAGES=OFF
  (cd build-noimg && ctest --output-on-failure -j "$(nproc)" -E "streaming_memory_bounded_by_window")
fi
