#!/usr/bin/env bash
# Two generator runs writing the same outputs (-o DIR -f NAME) at once, with different shapes, as a
# misconfigured parallel build does: each round must leave one run's complete set, so the program
# embedded in NAME.a is byte for byte NAME.spyre, and NAME.spyre.txt is its disassembly. A failed
# run leaves the outputs as they were.
# Usage: concurrent_outputs_test.sh <gen_elementwise> <spyre-objdump> <scratch dir>
set -euo pipefail
gen="$1" objdump="$2" dir="$3"
rm -rf "$dir" && mkdir -p "$dir/x"
for round in 1 2 3 4; do
  "$gen" -g elementwise -f ew -o "$dir" -e static_library -target=spyre d0=256 d1=64 d2=1 dtype=float32 &
  a=$!
  "$gen" -g elementwise -f ew -o "$dir" -e static_library -target=spyre d0=512 d1=96 d2=1 dtype=float32 &
  b=$!
  wait "$a"
  wait "$b"
  (cd "$dir/x" && rm -f ./* && ar x ../ew.a)
  python3 - "$dir" <<'PY'
import glob, sys
d = sys.argv[1]
program = open(d + "/ew.spyre", "rb").read()
if not any(program in open(o, "rb").read() for o in glob.glob(d + "/x/*")):
    sys.exit("ew.a does not embed the program of ew.spyre: the files come from two runs")
PY
  "$objdump" "$dir/ew.spyre" | sed 's/  ; offset [0-9]*$//' > "$dir/objdump.txt"  # the file has no offsets
  cmp -s "$dir/objdump.txt" "$dir/ew.spyre.txt" || { echo "round $round: ew.spyre.txt is not the disassembly of ew.spyre"; exit 1; }
  ls -A "$dir" | grep -q "\.tmp-\|\.staging-" && { echo "round $round: a temporary file was left behind"; ls -A "$dir"; exit 1; }
  echo "round $round: one run's complete outputs"
done
# A run that fails (a bad parameter) leaves the published outputs as they were and no staging directory.
before=$(cat "$dir"/ew.a "$dir"/ew.spyre "$dir"/ew.spyre.txt | sha256sum)
if "$gen" -g elementwise -f ew -o "$dir" -e static_library -target=spyre d0=0 2>/dev/null; then
  echo "a run with d0=0 succeeded"; exit 1
fi
after=$(cat "$dir"/ew.a "$dir"/ew.spyre "$dir"/ew.spyre.txt | sha256sum)
[ "$before" = "$after" ] || { echo "a failed run changed the published outputs"; exit 1; }
ls -A "$dir" | grep -q "\.staging-" && { echo "a failed run left its staging directory"; ls -A "$dir"; exit 1; }
echo "a failed run leaves the outputs as they were"
echo "concurrent outputs test passed"
