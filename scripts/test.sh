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
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)"
