#!/usr/bin/env bash
# The README's first command: install what is missing, build, and read the sample data in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DCNTKIO_BUILD_TESTS=OFF -DCNTKIO_BUILD_BENCH=OFF
# The Python package, into /usr/bin/python3's dist-packages: afterwards `/usr/bin/python3 -c "import cntkio"` works.
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; else SUDO=""; fi
$SUDO cmake --install build --component python >/dev/null
echo "== cntkio inspect: the sample reader, its index, streams and first minibatches"
./build/cntkio inspect --config examples/example.cntk --section Train --minibatches 3 --mb-size 32
echo
echo "== cntkio dump: the values of the first minibatch (features, then labels; one sample per line)"
./build/cntkio dump --config examples/example.cntk --section Train --mb-size 8 --max-minibatches 1 \
  --features features --labels label --separate-layouts
echo
echo "== Python: import cntkio as io (cntk.io's API), the first minibatch as NumPy/SciPy arrays"
/usr/bin/python3 -c 'import cntkio as io
s = io.MinibatchSource(io.CTFDeserializer("examples/sequences.ctf", io.StreamDefs(
    features=io.StreamDef(field="features", shape=3), label=io.StreamDef(field="label", shape=20, is_sparse=True))),
    randomize=False)
mb = s.next_minibatch(16)
print(mb[s.streams.features]); print(mb[s.streams.features].asarray()[0]); print(repr(mb[s.streams.label].asarray()))'
