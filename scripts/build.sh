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

# The Python package spyre_halide (python/), importable by the interpreter torch
# belongs to: a .pth file in its site directory names build/python (what
# `pip install -e` does), when that directory is writable (root); otherwise say
# how to reach it.
python=$(sed -n 's/^SPYRE_PYTHON:FILEPATH=//p' build/CMakeCache.txt)
if [ -n "$python" ] && [ -d build/python/spyre_halide ] && [ $# -eq 0 ]; then
  site=$("$python" -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; then
    echo "$PWD/build/python" > "$site/spyre_halide_build.pth"
    echo "build: $python imports spyre_halide from $PWD/build/python ($site/spyre_halide_build.pth)"
  else
    echo "build: to import spyre_halide, set PYTHONPATH=$PWD/build/python (and use $python)"
  fi
fi
