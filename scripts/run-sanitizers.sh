#!/usr/bin/env bash
# Installs what is missing, then builds the runtime, the command-line tools and
# the unit tests (SPYRE_RUNTIME_ONLY=ON) with sanitizers and runs them with ctest:
#   asan: build-asan/, SPYRE_SANITIZE=address,undefined (leaks included), every test;
#   tsan: build-tsan/, SPYRE_SANITIZE=thread, every test (streams, the simulator's
#         parallel functional replay, the device residency layer all run here);
#   generators (opt-in, not part of `all` nor of scripts/run-tests.sh): build-ubsan/,
#         SPYRE_SANITIZE=undefined, the compiler and every generator built with UBSan
#         (libHalide itself is not), then the generator driver's tests, among them every
#         integer parameter at 0, -1, INT_MAX and INT_MAX + 1: signed overflow and the
#         other undefined behaviour in the planners' arithmetic fail the run (~30 min).
# A sanitizer report fails the test that produced it (halt/abort on the first
# error). Extra arguments after the mode go to ctest (e.g. -R Stream).
# Usage: scripts/run-sanitizers.sh [asan|tsan|all|generators]   (default asan)
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-asan}"
shift || true
JOBS="${SPYRE_BUILD_JOBS:-$(nproc)}"

case "$MODE" in asan | tsan | all | generators) ;; *) echo "usage: scripts/run-sanitizers.sh [asan|tsan|all|generators]" >&2; exit 2 ;; esac

scripts/install-deps.sh

# configure_and_test BUILD_DIR SANITIZERS [ctest args...]
configure_and_test() {
  local dir="$1" sanitize="$2"
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPYRE_RUNTIME_ONLY=ON -DSPYRE_SANITIZE="$sanitize" -DSPYRE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS"
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@")
}

# LeakSanitizer stops the world with ptrace, which some sandboxes forbid: probe
# it once and run without leak checks (saying so) where it cannot work.
leaks=1
probe_dir=$(mktemp -d)
echo 'int main() { return 0; }' > "$probe_dir/p.c"
if cc -fsanitize=address "$probe_dir/p.c" -o "$probe_dir/p" 2>/dev/null && \
   ! ASAN_OPTIONS=detect_leaks=1 "$probe_dir/p" >/dev/null 2>&1; then
  echo "run-sanitizers: LeakSanitizer does not work here (ptrace is not allowed); running without leak checks"
  leaks=0
fi
rm -rf "$probe_dir"

if [ "$MODE" = asan ] || [ "$MODE" = all ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
  ASAN_OPTIONS=detect_leaks=$leaks:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    configure_and_test build-asan "address,undefined" "$@"
fi

if [ "$MODE" = tsan ] || [ "$MODE" = all ]; then
  echo "== ThreadSanitizer (build-tsan/)"
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    configure_and_test build-tsan "thread" "$@"
fi

if [ "$MODE" = generators ]; then
  echo "== UndefinedBehaviorSanitizer on the compiler and the generators (build-ubsan/)"
  cmake -S . -B build-ubsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPYRE_SANITIZE=undefined \
    -DSPYRE_BUILD_PYTHON=OFF -DSPYRE_BUILD_BENCHMARKS=OFF >/dev/null
  generators=$(cd generators && ls *_generator.cpp | sed 's/_generator.cpp$//; s/^/gen_/')
  # shellcheck disable=SC2086
  cmake --build build-ubsan -j "$JOBS" --target $generators spyre-run spyre-objdump
  (cd build-ubsan && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j "$(nproc)" --timeout 900 -R '^generator_driver\.' "$@")
fi
