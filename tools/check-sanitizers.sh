#!/usr/bin/env bash
# check-sanitizers.sh: builds the CPU backend under ASan+UBSan and under TSan and runs the tests each can host.
# ASan+UBSan runs the whole suite. TSan runs the stress configs through prstm-run: Criterion's
# process arena cannot start under TSan (Criterion issue 274), and the engine is exercised by
# prstm-run the same way with 64 to 128 threads per run, each run verified.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

cmake -S . -B build-asan -DPRSTM_WITH_CUDA=OFF -DPRSTM_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
echo "== ASan+UBSan: whole suite"
ctest --test-dir build-asan --output-on-failure

cmake -S . -B build-tsan -DPRSTM_WITH_CUDA=OFF -DPRSTM_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The stress runs need these two programs alone; the rest of the tree would
# double the time this step spends compiling.
cmake --build build-tsan -j"$jobs" --target prstm-run prstm-verify-sweep >/dev/null
echo "== TSan: stress runs through prstm-run"
# The random campaign gets a shorter budget than ctest gives it (TSan runs a
# case about ten times slower): the cases it reaches still race 64 to 128
# threads under TSan. Whether the verifier catches tampering does not depend
# on threads; the ASan suite above checks it.
ctest --test-dir build-tsan -L stress -E '^verify_sweep' --output-on-failure
echo "== TSan: the random verification campaign, 150 s"
build-tsan/prstm-verify-sweep --backend cpu --cases 400 --seconds 150 --seed 1
