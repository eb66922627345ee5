#!/usr/bin/env bash
# setup.sh: installs what prstm needs on Debian 12 when it is missing, then configures and builds prstm in build/.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the build and the tests need (g++ and libsimdjson-dev:
# the JSON Lines fast path; gnuplot-nox: the benchmark
# plots, bench/plot.sh; pkg-config: tools/check-install.sh; python3-numpy:
# tests/npy_interop.sh; libopenmpi-dev and openmpi-bin: backend multi's
# ranks, tests/multi_ranks.sh); only missing ones are installed.
missing=()
for pkg in cmake make gcc g++ libcjson-dev libsimdjson-dev libcriterion-dev gnuplot-nox pkg-config python3-numpy libopenmpi-dev openmpi-bin; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The CUDA toolkit's usual home is not always on PATH; with nvcc the GPU
# backend is built too, without it the CPU backend alone.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# PRSTM_CMAKE_ARGS passes extra options, e.g. -DCMAKE_CUDA_ARCHITECTURES=80.
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${PRSTM_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
# Whether the GPU backend was built, and for which GPUs, as the program says.
echo "setup: built $(build/prstm-run --version)"
