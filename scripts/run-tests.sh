#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest.
# Extra arguments go to ctest (e.g. -R Simulator, -L compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
