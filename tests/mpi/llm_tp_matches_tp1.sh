#!/usr/bin/env bash
# The tiny model, functional, at --tp 1 and under mpirun at --tp N: the same greedy tokens and
# logits within the runner's tolerance (compare_llm_runs.py). The shard's kernels are compiled
# into a kernel cache of the test's own (the first run of a clean build compiles them).
# Usage: llm_tp_matches_tp1.sh <mpirun> <llm-tiny> <N> <scratch dir>
set -euo pipefail
mpirun="$1" llm="$2" n="$3" dir="$4"
mkdir -p "$dir"
export SPYRE_KERNEL_CACHE="$dir/kernel-cache"
args=(--layers 2 --tokens 3 --seed 7)
"$llm" "${args[@]}" --logits-out "$dir/tp1.json" > "$dir/tp1.log"
"$mpirun" --oversubscribe -np "$n" "$llm" --tp "$n" "${args[@]}" --logits-out "$dir/tp$n.json" > "$dir/tp$n.log"
grep "tensor parallel" "$dir/tp$n.log"
grep "collectives:" "$dir/tp$n.log"
/usr/bin/python3 "$(dirname "$0")/compare_llm_runs.py" "$dir/tp1.json" "$dir/tp$n.json"
