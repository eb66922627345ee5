#!/usr/bin/env bash
# gpu-check.sh: on the GPU machine, runs every test program against the GPU and the example configs; logs go to $OUT (or ./gpu-check-out).
# Expects a bundle made by ../shared/tools/device-pack in .device (see docs/PERFORMANCE.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
export PRSTM_REQUIRE_GPU=1 PRSTM_TEST_DATA_DIR="$root/tests/data" PRSTM_RUN="$root/.device/bin/prstm-run"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
status=0
for t in test_stm test_bank test_loaders test_cli; do
  timeout 300 "$root/.device/run" "$t" --jobs 1 >"$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$t: exit $rc: $(tail -1 "$out/$t.log")"
done
cd "$out" || exit 1
run() { timeout 200 "$root/.device/run" prstm-run "$@"; }
run "$root/configs/bank.json" >bank-gpu.log 2>&1 || status=1
run "$root/configs/bank.json" --backend cpu >bank-cpu.log 2>&1 || status=1
for c in bank-transfers bank-transfers-semantic; do
  for i in 1 2 3; do run "$root/configs/$c.json" --quiet --results "$c-$i.json" || status=1; done
done
exit $status
