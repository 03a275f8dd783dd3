#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: gen_bmm compiled for
# Spyre (batch=8, m=n=k=512, float16), linked into apps/bmm, run on the
# simulated device and checked against the host build of the same generator.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
echo
echo "== gen_bmm -target=spyre (default shape), running on the simulated Spyre device =="
build/bin/bmm
echo
echo "== a hand-written 32-core program (examples/vadd32.s) through spyre-as and spyre-run =="
build/bin/spyre-as examples/vadd32.s -o build/vadd32.spyre
build/bin/spyre-run build/vadd32.spyre --report build/vadd32.report.json
