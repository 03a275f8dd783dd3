#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. ctest in build/ (unit, compiler, randomized-schedule, autoscheduler and package tests);
#   2. the reliability stages of docs/reliability.md: the runtime, tools and unit
#      tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), the
#      same tests under ThreadSanitizer (build-tsan/: streams, events and the
#      simulator's parallel functional replay), and a short libFuzzer run of every
#      fuzz target (build-fuzz/, SPYRE_FUZZ_SECONDS per target, default 30).
# Extra arguments go to ctest (e.g. -R Simulator, -L compiler) and skip stage 2,
# as does SPYRE_RELIABILITY=quick.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@")

if [ $# -eq 0 ] && [ "${SPYRE_RELIABILITY:-full}" != quick ]; then
  scripts/run-sanitizers.sh asan
  scripts/run-sanitizers.sh tsan
  scripts/run-fuzz.sh "${SPYRE_FUZZ_SECONDS:-30}"
fi
echo "run-tests: all passed"
