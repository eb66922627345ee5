#!/usr/bin/env bash
# check-subproject.sh: builds a temporary project that adds this prstm checkout with add_subdirectory and a workload of its own through prstm_add_workload, without Criterion, and runs it on the CPU.
#
# Usage: tools/check-subproject.sh [BUILD_DIR]   (default: build, configured by tools/setup.sh)
# BUILD_DIR says whether prstm builds its GPU backend here (PRSTM_WITH_CUDA
# and the CUDA compiler in its cache). Where it does, the project enables
# CUDA as docs/TUTORIAL.md says, gives the workload its CUDA_SOURCES with the
# same compiler and architectures, and the workload's GPU hooks must be set;
# a project that does not enable CUDA must be refused with a message that
# says how. No step needs a GPU. Exits non-zero, naming the step, when any
# step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=${1:-build}
jobs=$(nproc)

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "check-subproject: $build is not a configured build folder (run tools/setup.sh first)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/prstm-check-subproject.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs one step with its output in a log, which is shown only when it fails.
step() {
  local name=$1
  shift
  local log="$work/step.log"
  if ! "$@" >"$log" 2>&1; then
    echo "check-subproject: FAILED: $name" >&2
    echo "check-subproject: command: $*" >&2
    sed 's/^/  | /' "$log" >&2
    exit 1
  fi
  echo "check-subproject: ok: $name"
}

fail() {
  echo "check-subproject: FAILED: $*" >&2
  exit 1
}

# A list on one line, for a message.
oneline() {
  tr '\n' ' ' <<<"$1" | sed 's/ *$//'
}

cache_value() {
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"
}

# The GPU backend is built where PRSTM_WITH_CUDA is on and a CUDA compiler
# was found, as prstm's CMakeLists.txt decides.
with_cuda=$(cache_value PRSTM_WITH_CUDA)
nvcc=$(cache_value CMAKE_CUDA_COMPILER)
archs=$(cache_value CMAKE_CUDA_ARCHITECTURES)
gpu=0
if ! [[ ${with_cuda^^} =~ ^(OFF|0|NO|N|FALSE|IGNORE)$ ]] && [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
  gpu=1
fi
cuda_args=(-DPRSTM_WITH_CUDA=OFF)
if [ "$gpu" = 1 ]; then
  cuda_args=(-DPRSTM_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc")
  if [ -n "$archs" ]; then cuda_args+=(-DCMAKE_CUDA_ARCHITECTURES="$archs"); fi
fi

# The parent project: the seats example's workload, built into a program of
# its own (mybooking), into a program that reports its GPU hooks
# (mybooking_hooks), and as a plugin for prstm's own prstm-run. Arguments:
# the folder; 1 to enable CUDA as docs/TUTORIAL.md, section 9, shows; 1 to
# give the workload its CUDA sources.
write_parent() {
  local dir=$1 enable_cuda=$2 cuda_sources=$3
  mkdir -p "$dir"
  {
    echo "cmake_minimum_required(VERSION 3.22)"
    echo "project(mybooking C)"
    if [ "$enable_cuda" = 1 ]; then
      cat <<'EOF'
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
endif()
EOF
    fi
    cat <<EOF
add_subdirectory("$src" prstm EXCLUDE_FROM_ALL)
set(seats "$src/examples/seats")
add_executable(mybooking "\${seats}/seats_main.c")
add_executable(mybooking_hooks hooks.c)
EOF
    local gpu_part=""
    if [ "$cuda_sources" = 1 ]; then gpu_part=" CUDA_SOURCES \"\${seats}/seats_gpu.cu\""; fi
    cat <<EOF
prstm_add_workload(NAME mybooking TARGET mybooking SOURCES "\${seats}/seats.c"$gpu_part)
prstm_add_workload(NAME mybooking_hooks TARGET mybooking_hooks SOURCES "\${seats}/seats.c"$gpu_part)
prstm_add_workload(NAME mybooking_plugin PLUGIN SOURCES "\${seats}/seats.c"$gpu_part)
file(GENERATE OUTPUT \${CMAKE_CURRENT_BINARY_DIR}/mybooking.json CONTENT "{
  \\"plugin\\": \\"\$<TARGET_FILE_NAME:mybooking_plugin>\\",
  \\"engine\\": {\\"verify\\": true},
  \\"state\\": {\\"shows\\": 2, \\"seats\\": 3, \\"customers\\": 8, \\"booked\\": 2},
  \\"batch\\": {\\"file\\": \\"\${seats}/seats.jsonl\\"},
  \\"output\\": {\\"results\\": \\"mybooking-results.json\\"}
}
")
EOF
  } >"$dir/CMakeLists.txt"
  cat >"$dir/hooks.c" <<'EOF'
/* hooks.c: whether the seats workload, built by this project's prstm_add_workload, has its GPU hooks, and why prstm runs it on the CPU. */
#include <stdio.h>

#include "prstm.h"

extern const prstm_workload seats_workload;

int main(void) {
  char why[256] = "";
  int usable = prstm_gpu_available(&seats_workload, why, sizeof why);
  printf("gpu_launch %s\n", seats_workload.variants[0].gpu_launch ? "set" : "NULL");
  printf("gpu_max_threads %s\n", seats_workload.variants[0].gpu_max_threads ? "set" : "NULL");
  printf("gpu %s\n", usable ? "usable" : why);
  return 0;
}
EOF
}

parent=$work/parent
pbuild=$work/parent-build
write_parent "$parent" "$gpu" "$gpu"
# The file API lists the targets that the configure generated.
mkdir -p "$pbuild/.cmake/api/v1/query"
touch "$pbuild/.cmake/api/v1/query/codemodel-v2"
what="CPU only"
if [ "$gpu" = 1 ]; then what="CUDA enabled, CUDA_SOURCES given"; fi
step "configure a project that adds prstm with add_subdirectory ($what)" \
  cmake -S "$parent" -B "$pbuild" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}"

# A subproject builds the library, its tools and prstm_add_workload: no
# tests, benchmarks or examples, so nothing looked for Criterion.
targets=$(find "$pbuild/.cmake/api/v1/reply" -name 'target-*.json' -printf '%f\n' |
  sed 's/^target-\(.*\)-Release-[0-9a-f]*\.json$/\1/' | sort)
for t in prstm prstm-run mybooking mybooking_hooks mybooking_plugin; do
  grep -qx -- "$t" <<<"$targets" || fail "the subproject has no target $t; its targets: $(oneline "$targets")"
done
unwanted=$(grep -E '^(test_.*|prstm_test_.*|prstm-bench|prstm-stream-bench|setup-probe|seats|seats_plugin|fuzz_.*)$' \
  <<<"$targets" || true)
[ -z "$unwanted" ] || fail "the subproject generated prstm's tests, benchmarks or examples: $(oneline "$unwanted")"
! grep -qi '^CRITERION' "$pbuild/CMakeCache.txt" || fail "the subproject's configure looked for Criterion"
[ ! -e "$pbuild/prstm/CTestTestfile.cmake" ] || fail "the subproject registered prstm's tests with ctest"
echo "check-subproject: ok: no tests, benchmarks or examples of prstm generated, no Criterion looked for"

step "build the workload's programs and plugin, and prstm-run" \
  cmake --build "$pbuild" -j"$jobs" --target mybooking mybooking_hooks mybooking_plugin prstm-run
step "run the workload's program on the CPU" "$pbuild/mybooking" --cpu
grep -q "^verify ok" "$work/step.log" || fail "mybooking --cpu did not verify its run: $(cat "$work/step.log")"
step "the subproject's prstm-run loads the workload's plugin" \
  env -C "$work" "$pbuild/prstm/prstm-run" "$pbuild/mybooking.json" --backend cpu --quiet

hooks=$("$pbuild/mybooking_hooks") || fail "mybooking_hooks exited non-zero: $hooks"
if [ "$gpu" = 1 ]; then
  # The hooks are what a GPU run needs; whether a GPU is here does not matter.
  if ! grep -qx "gpu_launch set" <<<"$hooks" || ! grep -qx "gpu_max_threads set" <<<"$hooks"; then
    fail "the workload's GPU hooks are NULL: its CUDA_SOURCES were not compiled: $(oneline "$hooks")"
  fi
  ! grep -q "no GPU code" <<<"$hooks" || fail "prstm says the workload has no GPU code: $(oneline "$hooks")"
  echo "check-subproject: ok: the workload's GPU hooks are set ($(tail -n1 <<<"$hooks"))"

  # CUDA not enabled in the parent: prstm_add_workload must refuse, and say how.
  write_parent "$work/parent-nocuda" 0 1
  if cmake -S "$work/parent-nocuda" -B "$work/parent-nocuda-build" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" \
    >"$work/nocuda.log" 2>&1; then
    fail "a project without CUDA enabled configured with CUDA_SOURCES, which cannot be compiled there"
  fi
  if ! grep -q "CUDA is not enabled in" "$work/nocuda.log" || ! grep -q "enable_language(CUDA)" "$work/nocuda.log"; then
    fail "a project without CUDA enabled failed to configure without saying why: $(cat "$work/nocuda.log")"
  fi
  echo "check-subproject: ok: a project that does not enable CUDA is told to"
else
  grep -qx "gpu_launch NULL" <<<"$hooks" || fail "a build without CUDA gave the workload GPU hooks: $(oneline "$hooks")"
  echo "check-subproject: ok: without CUDA, the workload runs on the CPU alone ($(tail -n1 <<<"$hooks"))"
fi

echo "check-subproject: all checks passed"
