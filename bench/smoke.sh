#!/usr/bin/env bash
# smoke.sh: the bench smoke test: prstm-bench --quick into a fresh folder, then check-csv.sh on what it wrote.
# usage: smoke.sh PRSTM_BENCH OUT_DIR CHECK_CSV
# On the GPU machine (PRSTM_REQUIRE_GPU=1) the GPU runners must run and pass too.
set -uo pipefail
bench=$1 out=$2 check=$3
rm -rf "$out"
# A bad option value is a usage error (exit 2) that names the option.
msg=$("$bench" --ceiling-locks sideways --out "$out" targets 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- "--ceiling-locks" <<<"$msg"; then
  echo "smoke: --ceiling-locks sideways: exit $rc, '$msg' (expected exit 2 naming the option)" >&2
  exit 1
fi
backend=cpu gpu_flag=
if [ "${PRSTM_REQUIRE_GPU:-0}" = 1 ]; then backend=gpu gpu_flag=--require-gpu; fi
"$bench" --quick --backend "$backend" --out "$out" all
rc=$?
if [ $rc -ne 0 ]; then
  echo "smoke: prstm-bench exited $rc" >&2
  exit 1
fi
exec bash "$check" "$out" $gpu_flag
