#!/usr/bin/env bash
# Installs what is missing, builds the libFuzzer targets of fuzz/ into
# build-fuzz/ (clang-14, ASan+UBSan, SPYRE_FUZZ=ON, runtime and tools only),
# and runs each target for SECONDS (default 60) on a scratch copy of its seeds
# (fuzz/corpus/<target>/, the regression inputs tests/data/fuzz_regressions/<target>/,
# and for the assembler the example programs examples/*.s).
# Exits non-zero if any target finds a crash, sanitizer report, timeout,
# out-of-memory or invariant violation, printing the reproducer paths
# (replay one with: build-fuzz/bin/<target> <reproducer>).
# Usage: scripts/run-fuzz.sh [SECONDS-PER-TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
JOBS="${SPYRE_BUILD_JOBS:-$(nproc)}"
TARGETS=(fuzz_program fuzz_npy fuzz_machine fuzz_assembler)

scripts/install-deps.sh
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DSPYRE_FUZZ=ON -DSPYRE_RUNTIME_ONLY=ON -DSPYRE_BUILD_TESTS=OFF -DSPYRE_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz -j "$JOBS" --target "${TARGETS[@]}"

# libFuzzer's leak check uses LeakSanitizer, which needs ptrace: where a
# sandbox forbids it, fuzz without leak checks (and say so).
leaks=1
probe_input=$(find fuzz/corpus/"${TARGETS[0]}" -type f | head -n 1)  # a file, so nothing is written to the corpus
if ! ASAN_OPTIONS=detect_leaks=1 "$PWD/build-fuzz/bin/${TARGETS[0]}" -detect_leaks=1 "$probe_input" >/dev/null 2>&1; then
  echo "run-fuzz: LeakSanitizer does not work here (ptrace is not allowed); fuzzing without leak checks"
  leaks=0
fi

BIN="$PWD/build-fuzz/bin"
RUN_DIR="$PWD/build-fuzz/fuzz-run"
failed=()
for t in "${TARGETS[@]}"; do
  dir="$RUN_DIR/$t"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp fuzz/corpus/"$t"/* "$dir/corpus/"
  if [ -d "tests/data/fuzz_regressions/$t" ]; then cp tests/data/fuzz_regressions/"$t"/* "$dir/corpus/"; fi
  if [ "$t" = fuzz_assembler ]; then cp examples/*.s "$dir/corpus/"; fi
  dict=()
  if [ -f "fuzz/dict/$t.dict" ]; then dict=("-dict=$PWD/fuzz/dict/$t.dict"); fi
  echo "== $t: ${SECONDS_PER_TARGET}s (log: $dir/log)"
  rc=0
  (cd "$dir" && "$BIN/$t" corpus "${dict[@]}" -max_len=8192 -max_total_time="$SECONDS_PER_TARGET" \
     -timeout=10 -rss_limit_mb=2048 -detect_leaks=$leaks -artifact_prefix="$dir/artifacts/" -print_final_stats=1) >"$dir/log" 2>&1 || rc=$?
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$dir/log" | sed "s/^/   /" || true
  artifacts=$(find "$dir/artifacts" -type f)
  if [ "$rc" -ne 0 ] || [ -n "$artifacts" ]; then
    echo "   FAILED (exit $rc); the report (full log: $dir/log):"
    awk '/ERROR|invariant violated|runtime error|uncaught|out-of-memory|timeout/ { p = 1 } p && n < 30 { print; n++ }' "$dir/log" |
      sed "s/^/   | /"
    grep -E "^SUMMARY" "$dir/log" | sed "s/^/   | /" || true
    for a in $artifacts; do echo "   reproducer: $a   (replay: build-fuzz/bin/$t $a)"; done
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "run-fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-fuzz: all ${#TARGETS[@]} targets ran ${SECONDS_PER_TARGET}s without a finding"
