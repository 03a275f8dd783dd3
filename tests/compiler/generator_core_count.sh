#!/bin/sh
# Checks that a generator plans for the machine description's core count: it
# compiles the kernel under SPYRE_MACHINE_SET=MACHINE_SET (for example
# cores=64), runs it timing-only with spyre-run on the same machine, and
# requires the report's active_cores to be EXPECTED_CORES. max_cores=0, every
# generator's default, means the machine's core count (docs/scheduling.md).
#
#   generator_core_count.sh EXPECTED_CORES MACHINE_SET GENERATOR_BINARY SPYRE_RUN OUT_DIR [PARAMS...]
set -u
expected=$1
machine_set=$2
gen=$3
run=$4
out=$5
shift 5
name=$(basename "$gen")
name=${name#gen_}
mkdir -p "$out" || exit 1
export SPYRE_MACHINE_SET="$machine_set"
echo "SPYRE_MACHINE_SET=$machine_set $gen -g $name -f $name -o $out -e c_header -target=spyre $*"
"$gen" -g "$name" -f "$name" -o "$out" -e c_header -target=spyre "$@" || { echo "FAIL: the generator failed"; exit 1; }
"$run" "$out/$name.spyre" --timing-only --report "$out/report.json" >/dev/null || { echo "FAIL: spyre-run failed"; exit 1; }
active=$(sed -n 's/.*"active_cores": *\([0-9]*\).*/\1/p' "$out/report.json")
echo "active cores: $active (expected $expected)"
[ "$active" = "$expected" ] || { echo "FAIL"; exit 1; }
echo "PASS"
