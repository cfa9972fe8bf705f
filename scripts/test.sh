#!/usr/bin/env bash
# The README's second command: install what is missing, build, and run the whole test suite.
# SANITIZE=1 builds with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${SANITIZE:-0}" = "1" ]; then
  export BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo
  bash scripts/build.sh -DCNTKIO_SANITIZE=ON -DCNTKIO_BUILD_BENCH=OFF -DCNTKIO_WERROR=ON
else
  export BUILD_DIR=build
  bash scripts/build.sh -DCNTKIO_BUILD_TESTS=ON -DCNTKIO_WERROR=ON
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)")
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
