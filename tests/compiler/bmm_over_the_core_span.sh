#!/bin/sh
# gen_bmm with tensors of 384 MiB, over a core's 256 MiB addressable span
# (max_core_span_bytes): the compiled program moves each core's DRAM window
# (dma.window) and runs timing-only to the end; the same program with its
# windows removed is rejected by the simulator, so the windows are what makes
# it legal. Timing-only, under a 400 MB address-space limit: the run holds no
# memory for the 1 GB of tensors it never reads.
# Usage: bmm_over_the_core_span.sh GEN_BMM SPYRE_AS SPYRE_RUN WORKDIR
set -eu
gen_bmm=$1 spyre_as=$2 spyre_run=$3 dir=$4
mkdir -p "$dir"
"$gen_bmm" -g bmm -o "$dir" -e c_header -target=spyre batch=1 m=8192 n=8192 k=12288 dtype=float32
windows=$(grep -c 'dma.window' "$dir/bmm.spyre.txt" || true)
echo "dma.window instructions: $windows"
[ "$windows" -gt 0 ] || { echo "FAIL: no dma.window in a program over the span"; exit 1; }
(ulimit -v 400000; "$spyre_run" --timing-only "$dir/bmm.spyre")
grep -v 'dma.window' "$dir/bmm.spyre.txt" > "$dir/no_windows.s"
"$spyre_as" "$dir/no_windows.s" -o "$dir/no_windows.spyre"
if out=$("$spyre_run" --timing-only "$dir/no_windows.spyre" 2>&1); then
  echo "FAIL: without its windows the program still ran"; exit 1
fi
echo "$out"
echo "$out" | grep -q "outside the core's window" || { echo "FAIL: not the window rule"; exit 1; }
echo "PASS"
