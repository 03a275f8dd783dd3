#!/usr/bin/env bash
# Installs a spyre-halide build into a fresh prefix, then configures, builds
# and runs the example project the package installs
# (<prefix>/share/spyre_halide/examples/user_project, from examples/user_project)
# against it (find_package(SpyreHalide)), as a user who copied it would.
#
#   run_consumer_test.sh <build-dir> <work-dir>
#
# <work-dir> is emptied first and left behind for inspection: prefix/ holds
# the installation, build/ the consumer's build. CMAKE (default: cmake),
# CC and CXX select the tools.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <build-dir> <work-dir>" >&2
  exit 2
fi
build_dir=$1
work_dir=$2
cmake=${CMAKE:-cmake}
prefix=$work_dir/prefix
consumer_build=$work_dir/build

rm -rf "$work_dir"
mkdir -p "$work_dir"

echo "== install $build_dir into $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log"

consumer_dir=$prefix/share/spyre_halide/examples/user_project
if [ ! -f "$consumer_dir/CMakeLists.txt" ]; then
  echo "the installed package has no example project at $consumer_dir" >&2
  exit 1
fi

echo "== configure and build the installed example project"
compilers=()
if [ -n "${CC:-}" ]; then compilers+=("-DCMAKE_C_COMPILER=$CC"); fi
if [ -n "${CXX:-}" ]; then compilers+=("-DCMAKE_CXX_COMPILER=$CXX"); fi
"$cmake" -S "$consumer_dir" -B "$consumer_build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" "${compilers[@]}"
"$cmake" --build "$consumer_build"

echo "== run"
# The kernel must use the installed runtime, not the one in the build tree.
runtime=$(ldd "$consumer_build/bmm_small_check" | awk '/libspyre_runtime/ {print $3}')
case "$runtime" in
  "$prefix"/*) ;;
  *) echo "bmm_small_check loads libspyre_runtime from '$runtime', not from $prefix" >&2; exit 1 ;;
esac
"$consumer_build/bmm_small_check"

# The user's generator as a torch op, when the consumer found torch: with the interpreter
# the consumer's build chose, against torch's own arithmetic (out = in * 3 + 1 in fp32).
python=$(sed -n 's/^SPYRE_PYTHON:FILEPATH=//p' "$consumer_build/CMakeCache.txt")
if [ -n "$python" ]; then
  echo "== the user's generator as a torch op ($python)"
  PYTHONPATH="$consumer_build" "$python" -c '
import torch, consumer_ops
x = torch.randn(64, 256)
y = torch.empty_like(x)
consumer_ops.row_scale_op(x, y)
assert torch.equal(y, x * 3 + 1), (y - (x * 3 + 1)).abs().max()
try:
    consumer_ops.row_scale_op(x.double(), y)
    raise SystemExit("a float64 input was accepted")
except ValueError as e:
    assert "float32" in str(e), e
print("row_scale_op matches torch:", tuple(y.shape))
'
  echo "== the installed spyre_halide package"
  site=$(find "$prefix" -type d -name spyre_halide -path "*dist-packages*" | head -1)
  PYTHONPATH="$(dirname "$site")" SPYRE_KERNEL_CACHE="$work_dir/kernel-cache" PREFIX="$prefix" "$python" -c '
import os, torch, spyre_halide as sh
assert sh.__file__.startswith(os.environ["PREFIX"]), sh.__file__
gen = sh.kernels.generator_executable("softmax")
assert gen.startswith(os.environ["PREFIX"]), gen
y = sh.kernel("softmax", cols=70, rows=5, dtype="float32")(torch.zeros(5, 70)).to_torch()
assert torch.allclose(y.sum(dim=-1), torch.ones(5)), y
print("installed spyre_halide runs", os.path.relpath(gen, os.environ["PREFIX"]), "from the prefix")
'
fi
