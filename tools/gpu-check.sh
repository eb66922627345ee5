#!/usr/bin/env bash
# gpu-check.sh: on a machine with a GPU, runs every test program against the GPU (a GPU test fails there instead of skipping), the example configs, a batch too large for the GPU's memory, backend multi's ranks under mpirun, a slice of the verification campaign, and compute-sanitizer on the stress configs.
# usage: tools/gpu-check.sh BUNDLE [LOGDIR]   (BUNDLE made by tools/bundle.sh; logs in LOGDIR, default ./gpu-check-out)
# Knobs: WORKLOADS="vacation kmeans" also runs configs/NAME.json on the GPU,
# verified, and on the CPU; SWEEP_CASES (default 1000) and SWEEP_SEED size the
# GPU slice of prstm-verify-sweep; SANITIZE=0 skips compute-sanitizer;
# SANITIZERS="memcheck racecheck"; SAN_WATCHDOG=seconds.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: tools/gpu-check.sh BUNDLE [LOGDIR]}" && pwd)
out=${2:-$PWD/gpu-check-out}
mkdir -p "$out"
export PRSTM_REQUIRE_GPU=1 PRSTM_TEST_DATA_DIR="$root/tests/data" PRSTM_RUN="$bundle/bin/prstm-run"
export PRSTM_TEST_BIN_DIR="$bundle/bin" PRSTM_SOURCE_DIR="$root"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
status=0
for t in $(ls "$bundle/bin" | grep '^test_'); do
  timeout 300 "$bundle/run" "$t" --jobs 1 >"$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$t: exit $rc: $(tail -1 "$out/$t.log")"
done
cd "$out" || exit 1
run() { timeout 200 "$bundle/run" prstm-run "$@"; }
run "$root/configs/bank.json" >bank-gpu.log 2>&1 || status=1
run "$root/configs/bank.json" --backend cpu >bank-cpu.log 2>&1 || status=1
# Every other workload's config, on the GPU and verified on the GPU, then on the CPU.
for c in ${WORKLOADS:-}; do
  [ -f "$root/configs/$c.json" ] || continue
  run "$root/configs/$c.json" >"$c-gpu.log" 2>&1; rc=$?; [ $rc -eq 0 ] || status=1
  echo "$c gpu: exit $rc"; grep -E "transactions|rounds|committed|abandoned|failed|throughput|invariant|execute" "$c-gpu.log"
  run "$root/configs/$c.json" --verify --quiet --results "$c-verify.json"; rc=$?; [ $rc -eq 0 ] || status=1
  echo "$c gpu --verify: exit $rc: $(grep -o '"verify_ok":[^,]*' "$c-verify.json")"
  run "$root/configs/$c.json" --backend cpu >"$c-cpu.log" 2>&1; rc=$?; [ $rc -eq 0 ] || status=1
  echo "$c cpu: exit $rc"; grep -E "committed|throughput|invariant" "$c-cpu.log"
done
for c in bank-transfers bank-transfers-semantic; do
  for i in 1 2 3; do run "$root/configs/$c.json" --quiet --results "$c-$i.json" || status=1; done
done
# The cost of --verify: the same batch with the commit order recorded and replayed.
run "$root/configs/bank-transfers.json" --verify --quiet --results bank-transfers-verify.json || status=1
run "$root/configs/bank.json" --verify --quiet --results bank-verify.json || status=1
# A batch larger than the GPU memory allowed: run in chunks (exit 0, invariant
# ok), and with --verify verified across the chunks.
PRSTM_GPU_MEMORY_LIMIT=100000000 run "$root/configs/bank.json" --backend gpu >chunked.log 2>&1
rc=$?; [ $rc -eq 0 ] || status=1
echo "chunked: exit $rc: $(grep -E 'invariant' chunked.log)"
PRSTM_GPU_MEMORY_LIMIT=100000000 run "$root/configs/bank.json" --backend gpu --verify >chunked-verify.log 2>&1
rc=$?; [ $rc -eq 0 ] || status=1
echo "chunked with --verify: exit $rc: $(grep -E 'backend|verify' chunked-verify.log)"
# Backend multi with its units as ranks that mpirun starts, where the host
# has an MPI launcher: on a GPU each where the host has two or more, on CPU
# threads (and saying why) where it has one.
if command -v mpirun >/dev/null; then
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" RANKS_GPUS=$gpus timeout 300 \
    "$root/tests/multi_ranks.sh" mpirun "$bundle/bin/prstm-run" "$root/tests/data" >ranks.log 2>&1
  rc=$?; [ $rc -eq 0 ] || status=1
  echo "ranks under mpirun ($gpus GPUs): exit $rc: $(tail -1 ranks.log)"
else
  echo "ranks under mpirun: not run, this host has no mpirun"
fi
# The verification campaign on the GPU: random batches of every workload,
# run whole, chunked, streamed, and on several units (multi and hetero),
# each checked by its certificate.
timeout 600 "$bundle/run" prstm-verify-sweep --backend gpu --cases "${SWEEP_CASES:-1000}" --seed "${SWEEP_SEED:-1}" \
  >sweep-gpu.log 2>&1
rc=$?; [ $rc -eq 0 ] || status=1
echo "verification campaign on the GPU: exit $rc: $(tail -1 sweep-gpu.log)"
# compute-sanitizer on the GPU kernels, through the verified stress configs.
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in ${SANITIZERS:-memcheck racecheck}; do
    for cfg in "$root"/tests/data/stress/*.json; do
      n=$(basename "$cfg" .json)
      timeout 300 compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 9 "$bundle/run" prstm-run "$cfg" \
        --backend gpu --threads 4096 --quiet --watchdog "${SAN_WATCHDOG:-60}" >"san-$tool-$n.log" 2>&1
      rc=$?
      [ $rc -eq 0 ] || status=1
      echo "compute-sanitizer $tool $n: exit $rc in $SECONDS s so far: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "san-$tool-$n.log" | tail -1)"
    done
  done
fi
exit $status
