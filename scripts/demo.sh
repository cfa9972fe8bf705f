#!/usr/bin/env bash
# The README's first command: install what is missing, build, and read the sample data in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DCNTKIO_BUILD_TESTS=OFF -DCNTKIO_BUILD_BENCH=OFF
echo "== cntkio inspect: the sample reader, its index, streams and first minibatches"
./build/cntkio inspect --config examples/example.cntk --section Train --minibatches 3 --mb-size 32
echo
echo "== cntkio dump: the values of the first minibatch (features, then labels; one sample per line)"
./build/cntkio dump --config examples/example.cntk --section Train --mb-size 8 --max-minibatches 1 \
  --features features --labels label --separate-layouts
