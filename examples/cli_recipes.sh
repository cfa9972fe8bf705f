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

step "3. dump --keys in file order (an override switches randomization off)"
"$cli" dump --config examples/example.cntk --section Train --mb-size 8 --max-minibatches 2 --keys \
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

echo
echo "cli_recipes.sh: all recipes ran"
