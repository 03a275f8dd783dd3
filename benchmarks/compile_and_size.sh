#!/usr/bin/env bash
# Compile-time and program-size figures of gen_bmm (issue: compiler).
#  1. median wall time of `gen_bmm -target=spyre` and `-target=host` for the
#     same parameters over N runs, and their ratio (target: spyre <= 1.5x host);
#  2. the .spyre program size for 256^3 and 4096^3 (it must not grow with the
#     problem size: hardware loops, not unrolled iterations).
# Usage: benchmarks/compile_and_size.sh [runs]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
GEN=build/bin/gen_bmm
[ -x "$GEN" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
PARAMS="batch=8 m=512 n=512 k=512 dtype=float16"

median_seconds() {  # target
  local times=()
  for i in $(seq "$RUNS"); do
    local s e
    s=$(date +%s.%N)
    "$GEN" -g bmm -o "$OUT" -e static_library,c_header -f "bmm_$1" -target="$1" $PARAMS >/dev/null 2>&1
    e=$(date +%s.%N)
    times+=("$(echo "$e - $s" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

echo "gen_bmm $PARAMS, median of $RUNS runs each (one run of this script):"
SPYRE=$(median_seconds spyre)
HOST=$(median_seconds host)
printf '  -target=spyre  %.3f s\n  -target=host   %.3f s\n  ratio spyre/host = %.2f (target <= 1.5)\n' \
  "$SPYRE" "$HOST" "$(echo "$SPYRE / $HOST" | bc -l)"

echo "program size (.spyre) by problem size:"
for s in 256 4096; do
  "$GEN" -g bmm -o "$OUT" -e static_library -f "bmm_$s" -target=spyre batch=1 m=$s n=$s k=$s dtype=float16 >/dev/null 2>&1
  printf '  %5d^3 fp16: %7d bytes, %s instructions\n' "$s" "$(stat -c %s "$OUT/bmm_$s.spyre")" \
    "$(grep -cvE '^(\.|;|$)' "$OUT/bmm_$s.spyre.txt")"
done
