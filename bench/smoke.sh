#!/usr/bin/env bash
# smoke.sh: the bench smoke test: prstm-bench --quick into a fresh folder, then check-csv.sh on what it wrote.
# usage: smoke.sh PRSTM_BENCH OUT_DIR CHECK_CSV
# On the GPU machine (PRSTM_REQUIRE_GPU=1) the GPU runners must run and pass too.
set -uo pipefail
bench=$1 out=$2 check=$3
rm -rf "$out"
backend=cpu gpu_flag=
if [ "${PRSTM_REQUIRE_GPU:-0}" = 1 ]; then backend=gpu gpu_flag=--require-gpu; fi
"$bench" --quick --backend "$backend" --out "$out" all
rc=$?
if [ $rc -ne 0 ]; then
  echo "smoke: prstm-bench exited $rc" >&2
  exit 1
fi
exec bash "$check" "$out" $gpu_flag
