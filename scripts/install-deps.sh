#!/usr/bin/env bash
# Installs, by Debian package name, whatever spyre-halide needs and is missing.
# Idempotent: when everything is present it only runs dpkg-query and exits.
# `install-deps.sh --list` prints the package names and installs nothing
# (scripts/check-install-deps.py checks the build needs nothing else).
# Only Depends of these packages are installed (--no-install-recommends), as on
# a minimal Debian 12 root: whatever the build reads must be listed here or be a
# dependency of a listed package.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libhalide14-0-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libcli11-dev
  python3 bc
  clang-14 libclang-rt-14-dev   # libFuzzer for scripts/run-fuzz.sh
  # The PyTorch front door (python/): torch for /usr/bin/python3, its C++ headers, pybind11, pytest
  python3-dev python3-torch libtorch-dev python3-pybind11 pybind11-dev python3-pytest
  # Several cards, one per MPI rank (libspyre_collectives)
  openmpi-bin libopenmpi-dev
)

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
