#!/usr/bin/env bash
# smoke.sh: the bench smoke test: prstm-bench --quick into a fresh folder, then check-csv.sh on what it wrote.
# usage: smoke.sh PRSTM_BENCH OUT_DIR CHECK_CSV
# On a machine with a GPU (PRSTM_REQUIRE_GPU=1) the GPU runners must run and pass too.
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
msg=$("$bench" --series sideways --out "$out" targets 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- "--series" <<<"$msg"; then
  echo "smoke: --series sideways: exit $rc, '$msg' (expected exit 2 naming the option)" >&2
  exit 1
fi
# --series ro20 runs and writes the read-only series alone.
"$bench" --quick --backend cpu --runners cpu_serial --series ro20 --out "$out-series" bank-accounts 2>/dev/null
rc=$?
rows=$(tail -n +2 "$out-series/bank-accounts.csv" 2>/dev/null | wc -l)
other=$(tail -n +2 "$out-series/bank-accounts.csv" 2>/dev/null | awk -F, '$3 != "ro20"' | wc -l)
if [ $rc -ne 0 ] || [ "$rows" -eq 0 ] || [ "$other" -ne 0 ]; then
  echo "smoke: --series ro20: exit $rc, $rows rows, $other of another series (expected ro20 rows only)" >&2
  exit 1
fi
rm -rf "$out-series"
backend=cpu gpu_flag=
if [ "${PRSTM_REQUIRE_GPU:-0}" = 1 ]; then backend=gpu gpu_flag=--require-gpu; fi
"$bench" --quick --backend "$backend" --out "$out" all
rc=$?
if [ $rc -ne 0 ]; then
  echo "smoke: prstm-bench exited $rc" >&2
  exit 1
fi
exec bash "$check" "$out" $gpu_flag
