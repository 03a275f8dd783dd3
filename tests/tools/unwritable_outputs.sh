#!/bin/sh
# Every tool, generator and app with each of its outputs unwritable: a missing
# directory, an existing directory, a path under a regular file, /dev/full (every
# write fails), and the standard output on /dev/full (for those that print results). Each run must exit with a
# status in 1..127 (an error, never a signal, never 0) and say which output failed
# on stderr; a run that exits 0 has claimed a success it did not have.
#
# usage: unwritable_outputs.sh BIN_DIR SCRATCH_DIR
set -u
bin=$1
work=$2/unwritable_outputs
rm -rf "$work" && mkdir -p "$work/adir" && : > "$work/afile" || exit 2
failures=0 runs=0

# expect_refused WHAT NEEDLE CMD... : CMD's status is 1..127 and its stderr holds NEEDLE.
expect_refused() {
    what=$1 needle=$2
    shift 2
    runs=$((runs + 1))
    "$@" > "$work/stdout" 2> "$work/stderr"
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
        echo "FAIL: $what: exit $rc (expected an error status 1..127): $*"
        sed 's/^/    /' "$work/stderr" | head -5
        failures=$((failures + 1))
    elif ! grep -qF -- "$needle" "$work/stderr"; then
        echo "FAIL: $what: stderr does not name '$needle': $*"
        sed 's/^/    /' "$work/stderr" | head -5
        failures=$((failures + 1))
    fi
}
# expect_refused_stdout WHAT CMD... : the same with the standard output on /dev/full.
expect_refused_stdout() {
    what=$1
    shift
    runs=$((runs + 1))
    "$@" > /dev/full 2> "$work/stderr"
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -qF "standard output" "$work/stderr"; then
        echo "FAIL: $what with the standard output on /dev/full: exit $rc: $*"
        sed 's/^/    /' "$work/stderr" | head -5
        failures=$((failures + 1))
    fi
}

# Inputs: a program and its header from a generator, and an assembly file.
"$bin/gen_elementwise" -g elementwise -f ew -o "$work" -e c_header -target=spyre d0=64 d1=8 d2=1 op=add \
    || { echo "cannot build the test kernel"; exit 2; }
"$bin/spyre-objdump" "$work/ew.spyre" > "$work/ew.s" || exit 2

for bad in "$work/missing/out" "$work/adir" "$work/afile/out" /dev/full; do
    # what the message names: the path, except /dev/full's write error, which names it too
    expect_refused "spyre-as -o" "$bad" "$bin/spyre-as" "$work/ew.s" -o "$bad"
    for flag in --report --trace --svg; do
        expect_refused "spyre-run $flag" "$bad" "$bin/spyre-run" --timing-only "$work/ew.spyre" $flag "$bad"
    done
    expect_refused "spyre-run --output" "$bad" "$bin/spyre-run" "$work/ew.spyre" --output "out=$bad"
    expect_refused "spyre-host-reference --output" "$bad" \
        "$bin/spyre-host-reference" "$work/ew.spyre" "$work/ew.h" -g elementwise d0=64 d1=8 d2=1 op=add --output "out=$bad"
    for flag in --trace --json --logits-out; do
        extra=--timing-only
        [ "$flag" = --logits-out ] && extra=  # the logits exist in functional runs only
        expect_refused "llm-tiny $flag" "$bad" "$bin/llm-tiny" $extra --layers 1 --tokens 1 $flag "$bad"
    done
done
# A generator's -o is a directory: a missing one, a file, a path under a file.
for g in elementwise matmul bmm softmax; do
    for bad in "$work/missing" "$work/afile" "$work/afile/out" /dev/full; do
        expect_refused "gen_$g -o" "$bad" "$bin/gen_$g" -g $g -f x -o "$bad" -e c_header -target=spyre
    done
done

expect_refused_stdout spyre-info "$bin/spyre-info"
expect_refused_stdout "spyre-info --json" "$bin/spyre-info" --json
expect_refused_stdout spyre-objdump "$bin/spyre-objdump" "$work/ew.spyre"
expect_refused_stdout spyre-run "$bin/spyre-run" --timing-only "$work/ew.spyre"
expect_refused_stdout bmm "$bin/bmm"
expect_refused_stdout transformer_block "$bin/transformer_block"
expect_refused_stdout llm-tiny "$bin/llm-tiny" --timing-only --layers 1 --tokens 1

echo "$((runs - failures)) of $runs runs refused as expected"
[ $failures -eq 0 ]
