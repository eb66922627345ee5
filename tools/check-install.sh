#!/usr/bin/env bash
# check-install.sh: installs a built prstm into a temporary prefix and builds and runs programs against the installed package only (CMake package, pkg-config, prstm-run).
#
# Usage: tools/check-install.sh [BUILD_DIR]   (default: build, configured by tools/setup.sh)
# Exits non-zero, naming the step, when any step fails. Every run is on the
# CPU backend, so it needs no GPU; with PRSTM_REQUIRE_GPU=1 (a machine with a GPU)
# the embed example also runs on the GPU, and must.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=${1:-build}
jobs=$(nproc)

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "check-install: $build is not a configured build folder (run tools/setup.sh first)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/prstm-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

# Runs one step with its output in a log, which is shown only when it fails.
step() {
  local name=$1
  shift
  local log="$work/step.log"
  if ! "$@" >"$log" 2>&1; then
    echo "check-install: FAILED: $name" >&2
    echo "check-install: command: $*" >&2
    sed 's/^/  | /' "$log" >&2
    exit 1
  fi
  echo "check-install: ok: $name"
}

fail() {
  echo "check-install: FAILED: $*" >&2
  exit 1
}

# The CUDA toolkit's usual home is not always on PATH; the package config
# looks for it when the library was built with its GPU backend.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config is not installed (tools/setup.sh installs it)"

step "build $build" cmake --build "$build" -j"$jobs"
step "cmake --install $build --prefix $prefix" cmake --install "$build" --prefix "$prefix"

# The installed CLI runs on its own, from the prefix.
version=$("$prefix/bin/prstm-run" --version 2>&1) || fail "$prefix/bin/prstm-run --version exited non-zero: $version"
expected_version=$(sed -n 's/^#define PRSTM_VERSION_STRING "\(.*\)"$/\1/p' include/prstm/prstm.h)
# The version, then what the build holds: "(GPU backend built for ...)" or
# "(no GPU backend in this build: CPU only)".
[[ "$version" == "prstm-run $expected_version ("*")" ]] ||
  fail "$prefix/bin/prstm-run --version printed '$version', expected 'prstm-run $expected_version (...)'"
echo "check-install: ok: $prefix/bin/prstm-run --version: $version"
step "installed prstm-run runs a verified bank batch" \
  env -C "$work" "$prefix/bin/prstm-run" "$src/tests/data/stress/tiny-bank-64-threads.json" --backend cpu --quiet

# Everything below must come from the prefix, never from the build tree.
assert_linked_to_prefix() {
  local program=$1 libraries
  # Captured first: grep -q stopping early would fail ldd on SIGPIPE under pipefail.
  libraries=$(ldd "$program") || fail "ldd $program"
  grep -q "=> $prefix/.*libprstm\.so" <<<"$libraries" ||
    fail "$program does not load libprstm from $prefix: $(grep prstm <<<"$libraries" || true)"
}

# Route 1: CMake, find_package(prstm) and prstm::prstm.
step "configure examples/embed with CMAKE_PREFIX_PATH=$prefix" \
  cmake -S examples/embed -B "$work/embed-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
grep -q "^prstm_DIR:PATH=$prefix/" "$work/embed-cmake/CMakeCache.txt" ||
  fail "examples/embed found prstm somewhere other than $prefix: $(grep '^prstm_DIR' "$work/embed-cmake/CMakeCache.txt")"
step "build examples/embed (find_package)" cmake --build "$work/embed-cmake" -j"$jobs"
assert_linked_to_prefix "$work/embed-cmake/embed"
step "run examples/embed (find_package)" "$work/embed-cmake/embed" --cpu
if [ "${PRSTM_REQUIRE_GPU:-}" = 1 ]; then
  step "run examples/embed on the GPU (PRSTM_REQUIRE_GPU=1)" "$work/embed-cmake/embed" --gpu
fi

# Route 2: pkg-config.
pcfile=$(find "$prefix" -name prstm.pc -print -quit)
if [ -z "$pcfile" ]; then fail "no prstm.pc under $prefix"; fi
pcdir=$(dirname "$pcfile")
export PKG_CONFIG_PATH="$pcdir"
pc_version=$(pkg-config --modversion prstm) || fail "pkg-config --modversion prstm"
[ "$pc_version" = "$expected_version" ] || fail "prstm.pc says version $pc_version, expected $expected_version"
libdir=$(pkg-config --variable=libdir prstm)
# shellcheck disable=SC2046
step "compile examples/embed/embed.c with pkg-config --cflags --libs prstm" \
  "${CC:-cc}" -std=c11 -Wall -Wextra -o "$work/embed-pkgconfig" examples/embed/embed.c \
  $(pkg-config --cflags --libs prstm) -Wl,-rpath,"$libdir"
assert_linked_to_prefix "$work/embed-pkgconfig"
step "run examples/embed (pkg-config)" "$work/embed-pkgconfig" --cpu

# Route 3: a workload of one's own, through the installed prstm_add_workload:
# examples/seats configured as a project of its own, as docs/TUTORIAL.md
# builds it, into its own program and as a plugin that the installed
# prstm-run loads. Its GPU kernel is compiled where nvcc is, for the
# architectures the library was built for.
cuda_archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")
step "configure examples/seats against the installed package" \
  cmake -S examples/seats -B "$work/seats-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  ${cuda_archs:+-DCMAKE_CUDA_ARCHITECTURES="$cuda_archs"}
grep -q "^prstm_DIR:PATH=$prefix/" "$work/seats-build/CMakeCache.txt" ||
  fail "examples/seats found prstm somewhere other than $prefix: $(grep '^prstm_DIR' "$work/seats-build/CMakeCache.txt")"
step "build examples/seats (prstm_add_workload)" cmake --build "$work/seats-build" -j"$jobs"
assert_linked_to_prefix "$work/seats-build/seats"
step "run the seats program" "$work/seats-build/seats" --cpu
if [ "${PRSTM_REQUIRE_GPU:-}" = 1 ]; then
  step "run the seats program on the GPU (PRSTM_REQUIRE_GPU=1)" "$work/seats-build/seats" --gpu
fi
step "installed prstm-run loads the seats plugin" \
  env -C "$work" "$prefix/bin/prstm-run" "$work/seats-build/seats.json" --backend cpu --quiet

echo "check-install: all checks passed"
