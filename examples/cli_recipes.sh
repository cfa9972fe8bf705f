#!/usr/bin/env bash
# CLI recipes on the sample data of examples/ (docs/guide.md walks through them). Run from anywhere:
#
#     bash examples/cli_recipes.sh                 # uses ./build/cntkio of the repository
#     CNTKIO=/usr/bin/cntkio bash examples/cli_recipes.sh
#
# Every step is checked; the script stops with a non-zero exit status at the first failure. The test suite
# runs it (python/tests/test_examples.py).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="${CNTKIO:-$repo/build/cntkio}"
if [ ! -x "$cli" ]; then
  echo "cli_recipes.sh: no cntkio binary at $cli (build it, or set CNTKIO=/path/to/cntkio)" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$repo"  # example.cntk names its data file relative to the repository root

fail() {
  echo "cli_recipes.sh: $*" >&2
  exit 1
}
step() { echo; echo "== $*"; }

step "1. inspect: what the reader section Train reads"
"$cli" inspect --config examples/example.cntk --section Train --minibatches 2 --mb-size 16 | tee "$work/inspect.txt"
grep -q "300 sequences, 1344 samples" "$work/inspect.txt" || fail "inspect did not report 300 sequences"

step "2. dump: the first two minibatches of 16 samples, features then labels"
"$cli" dump --config examples/example.cntk --section Train --mb-size 16 --max-minibatches 2 \
  --features features --labels label --separate-layouts >"$work/dump.txt"
head -n 5 "$work/dump.txt"
[ -s "$work/dump.txt" ] || fail "dump wrote nothing"

step "3. dump --keys of a 16-sample epoch in file order (an override switches randomization off)"
"$cli" dump --config examples/example.cntk --section Train --mb-size 8 --epoch-size 16 --keys \
  --separate-layouts --set 'Train=[reader=[randomize=false]]' | tee "$work/keys.txt"
[ "$(head -n 1 "$work/keys.txt")" = "0" ] || fail "unrandomized reading does not start with sequence 0"

step "4. convert CTF -> CBF -> CTF -> CBF: the data survives every step"
"$cli" convert --quiet --config examples/example.cntk --section Train examples/sequences.ctf "$work/seq.bin"
"$cli" inspect "$work/seq.bin"
"$cli" convert --quiet "$work/seq.bin" "$work/back.ctf"
"$cli" convert --quiet "$work/back.ctf" "$work/again.bin" \
  --stream features:features:3:dense --stream label:label:20:sparse
cmp "$work/seq.bin" "$work/again.bin" || fail "CTF -> CBF -> CTF -> CBF changed the binary file"
# The text differs from the original (comments dropped, numbers respelled), the values do not:
all=(--mb-size 64 --max-minibatches 1000 --separate-layouts)
"$cli" dump --config examples/example.cntk --section Train "${all[@]}" \
  --set 'Train=[reader=[randomize=false]]' >"$work/original.txt"
"$cli" dump --config examples/example.cntk --section Train "${all[@]}" \
  --set "Train=[reader=[randomize=false;file=$work/back.ctf]]" >"$work/roundtrip.txt"
cmp "$work/original.txt" "$work/roundtrip.txt" || fail "the round-tripped CTF reads differently"
echo "round trip: all $(wc -l <"$work/original.txt") dumped samples are identical"

step "5. bench --json: one JSON line with the throughput"
"$cli" bench --config examples/example.cntk --section Train --sweeps 2 --mb-size 64 --threads 1 --json \
  | tee "$work/bench.json"
python3 - "$work/bench.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
assert result["sweeps"] == 2 and result["samples"] == 2 * 1344, result
assert result["samples_per_s"] > 0, result
PY

step "6. errors: a missing file gives exit code 5 and one 'error:' line"
set +e
"$cli" inspect --config examples/example.cntk --section Train \
  --set "Train=[reader=[file=$work/missing.ctf]]" 2>"$work/err.txt" >/dev/null
code=$?
set -e
cat "$work/err.txt"
[ "$code" -eq 5 ] || fail "expected exit code 5 for a missing file, got $code"
grep -q "^error: " "$work/err.txt" || fail "no 'error:' line"

step "7. packing: sequence mode, frame mode and truncated BPTT (docs/guide.md)"
cat >"$work/tagged.ctf" <<'CTF'
0 |w 1 0 |t 0:1
0 |w 2 0 |t 1:1
0 |w 3 0 |t 0:1
1 |w 4 0 |t 1:1
1 |w 5 0 |t 1:1
2 |w 6 0 |t 0:1
2 |w 7 0 |t 0:1
2 |w 8 0 |t 1:1
2 |w 9 0 |t 1:1
2 |w 10 0 |t 0:1
CTF
cat >"$work/modes.cntk" <<'CNTK'
Read = [
    reader = [
        randomize = false
        deserializers = ([
            type = "CNTKTextFormatDeserializer"
            file = "tagged.ctf"
            input = [
                word = [ alias = "w" ; dim = 2 ; format = "dense" ]
                tag = [ alias = "t" ; dim = 2 ; format = "sparse" ]
            ]
        ])
    ]
]
CNTK
sed 's/file = "tagged.ctf"/file = "tagged.ctf" ; skipSequenceIds = true/' "$work/modes.cntk" >"$work/frames.cntk"
(
  cd "$work"
  "$cli" inspect --config modes.cntk --section Read --minibatches 3 --mb-size 4 >sequence.txt
  "$cli" inspect --config frames.cntk --section Read --minibatches 1 --mb-size 4 \
    --set 'Read=[reader=[frameMode=true]]' >frame.txt
  "$cli" inspect --config modes.cntk --section Read --minibatches 3 --mb-size 4 \
    --set 'Read=[reader=[truncated=true;truncationLength=2]]' >bptt.txt
)
sed -n '/^minibatch/,$p' "$work/bptt.txt"
grep -q "word: 5 samples in 1 parallel rows x 5 steps" "$work/sequence.txt" || fail "sequence mode"
grep -q "keys: 0 1 2 3" "$work/frame.txt" || fail "frame mode"
grep -q "word: 3 samples in 2 parallel rows x 2 steps" "$work/bptt.txt" || fail "truncated BPTT"

step "8. bad input: maxErrors 0 stops at the typo, maxErrors 5 skips it and reports what was skipped"
printf '0 |x 1 2 3 |y 1:1\n0 |x 4 5 6\n1 |x 7 8 9 |y 0:1\n1 |x 9 9 9 |z 5\n2 |x 1 2 3 |y 2:1\n2 |x 4 b 6\n3 |x 1 2 3 |y 3:1\n' \
  >"$work/bad.ctf"
cat >"$work/bad.cntk" <<'CNTK'
dataDir = "."
Train = [
    reader = [
        readerType = "CNTKTextFormatReader"
        file = "$dataDir$/bad.ctf"
        randomize = false
        input = [
            x = [ dim = 3 ; format = "dense" ]
            y = [ dim = 4 ; format = "sparse" ]
        ]
    ]
]
CNTK
(
  cd "$work"
  set +e
  "$cli" dump --config bad.cntk --section Train --mb-size 10 --separate-layouts >/dev/null 2>strict.txt
  echo $? >strict.code
  set -e
  "$cli" dump --config bad.cntk --section Train --mb-size 10 --separate-layouts --keys \
    --set 'Train=[reader=[maxErrors=5;traceLevel=0]]' >kept.txt 2>tolerant.txt
)
cat "$work/strict.txt" "$work/tolerant.txt"
[ "$(cat "$work/strict.code")" -eq 4 ] || fail "bad data should give exit code 4"
grep -q "line 6, column 8 (byte offset 88), stream 'x', sequence 2" "$work/strict.txt" || fail "error location"
[ "$(tr '\n' ' ' <"$work/kept.txt")" = "0 1 2 3 " ] || fail "maxErrors=5 should keep sequences 0-3"
grep -q "^warning: skipped 1 row, 1 sample and 0 sequences (3 input errors tolerated under maxErrors)" \
  "$work/tolerant.txt" || fail "no skip report"

echo
echo "cli_recipes.sh: all recipes ran"
