#!/usr/bin/env bash
# The Spyre autoscheduler plugin end to end (docs/autoscheduling.md): gen_bmm
# loads it with -p, it searches the bmm template within a 10 s budget, writes
# the pasteable schedule (-e schedule) and the program, and its choice is no
# slower than the generator's own knobs. A pipeline without a template (a host
# build) is refused with a message that says why. The candidates compile in
# the generator's process; SPYRE_AUTOSCHEDULE_ISOLATION=process (child
# processes) is run too.
# Usage: plugin_test.sh <gen_bmm> <libautoschedule_spyre.so> <scratch dir>
set -euo pipefail
gen="$1" plugin="$2" out="$3"
rm -rf "$out" && mkdir -p "$out"

SPYRE_AUTOSCHEDULE_BUDGET_S=10 SPYRE_AUTOSCHEDULE_QUIET=1 \
  "$gen" -g bmm -o "$out" -e static_library,h,schedule -target=spyre auto_schedule=true \
  -p "$plugin" -s Spyre batch=2 m=96 n=160 k=200 dtype=float32 2>"$out/log" || { cat "$out/log"; exit 1; }
cat "$out/log"
summary=$(grep "spyre autoscheduler: bmm: .* candidates" "$out/log")
grep -q "spyre::schedule_bmm_spyre" "$out/bmm.schedule.h"
grep -q "^    // best: " "$out/bmm.schedule.h"
test -s "$out/bmm.spyre"
best=$(echo "$summary" | sed -E 's/.*; best ([0-9.]+) us.*/\1/')
start=$(echo "$summary" | sed -E "s/.*own knobs ([0-9.]+) us.*/\1/")
echo "best $best us, start $start us"
python3 -c "import sys; sys.exit(0 if float('$best') <= float('$start') else 1)"

# The same search with each candidate compiled in a child process (SPYRE_AUTOSCHEDULE_ISOLATION=process).
mkdir -p "$out/process"
SPYRE_AUTOSCHEDULE_BUDGET_S=3 SPYRE_AUTOSCHEDULE_QUIET=1 SPYRE_AUTOSCHEDULE_ISOLATION=process \
  "$gen" -g bmm -o "$out/process" -e static_library -target=spyre auto_schedule=true \
  -p "$plugin" -s Spyre batch=2 m=96 n=160 k=200 dtype=float32 2>"$out/process/log" || { cat "$out/process/log"; exit 1; }
grep "spyre autoscheduler: bmm: .* candidates" "$out/process/log"
test -s "$out/process/bmm.spyre"
if SPYRE_AUTOSCHEDULE_ISOLATION=fork "$gen" -g bmm -o "$out/process" -e static_library -target=spyre auto_schedule=true \
  -p "$plugin" -s Spyre batch=2 m=96 n=160 k=200 dtype=float32 2>"$out/process/err"; then
  echo "an unknown SPYRE_AUTOSCHEDULE_ISOLATION should fail"; exit 1
fi
grep -q "SPYRE_AUTOSCHEDULE_ISOLATION='fork' is neither thread" "$out/process/err"

# A search killed with SIGTERM, and one killed with SIGKILL, leave no scratch directory behind
# (the reaper removes it when the generator's process ends, however it ends).
for signal in TERM KILL; do
  scratch="$out/tmp-$signal" && mkdir -p "$scratch"
  TMPDIR="$scratch" SPYRE_AUTOSCHEDULE_BUDGET_S=60 SPYRE_AUTOSCHEDULE_QUIET=1 \
    "$gen" -g bmm -o "$out/process" -e static_library -target=spyre auto_schedule=true \
    -p "$plugin" -s Spyre batch=2 m=96 n=160 k=200 dtype=float32 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do ls "$scratch" | grep -q spyre-autoschedule && break; sleep 0.1; done
  ls "$scratch" | grep -q spyre-autoschedule || { echo "the search made no scratch directory in $scratch"; exit 1; }
  sleep 1
  kill -$signal $pid; wait $pid || true
  for _ in $(seq 50); do [ -z "$(ls "$scratch")" ] && break; sleep 0.1; done
  [ -z "$(ls "$scratch")" ] || { echo "SIG$signal left $(ls "$scratch") behind"; exit 1; }
  echo "SIG$signal during the search: no scratch directory left"
done

if "$gen" -g bmm -o "$out" -e h -target=host auto_schedule=true -p "$plugin" -s Spyre 2>"$out/err"; then
  echo "a host build with the Spyre autoscheduler should fail"; exit 1
fi
cat "$out/err"
grep -q "has no schedule template" "$out/err"
echo "plugin test passed"
