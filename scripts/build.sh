#!/usr/bin/env bash
# Configures (once) and builds spyre-halide into build/ with Ninja.
# Usage: scripts/build.sh [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${SPYRE_BUILD_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "$JOBS" ${@:+--target "$@"}
