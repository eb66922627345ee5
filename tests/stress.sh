#!/usr/bin/env bash
# stress.sh: runs one stress config through prstm-run several times; each run must exit 0 with its invariant and its verification ok, and the runs together must have met concurrent conflicts.
# usage: stress.sh PRSTM_RUN CONFIG [RUNS] [required|optional]
# The exit status alone would hide a prstm-run that exits 0 on a failed
# verification or a violated invariant, and a run that never met a conflict
# proves nothing about conflict handling. On a busy machine with two cores
# the 64 threads of a short run may all run one after another, so after
# RUNS runs without a conflict more are made, up to 10 times as many.
# `optional` (a workload whose transactions do not conflict by design)
# runs RUNS times and checks the summaries alone.
set -uo pipefail
run=$1
config=$2
runs=${3:-3}
conflicts=${4:-required}
aborts=0
i=0
while [ "$i" -lt "$runs" ] || { [ "$conflicts" = required ] && [ "$aborts" -eq 0 ] && [ "$i" -lt $((10 * runs)) ]; }; do
  i=$((i + 1))
  out=$("$run" "$config" 2>&1)
  status=$?
  if [ "$status" -ne 0 ]; then
    printf 'stress: run %d of %s exited %d:\n%s\n' "$i" "$config" "$status" "$out" >&2
    exit 1
  fi
  for line in "invariant          ok:" "verify             ok:"; do
    if ! grep -qF "  $line" <<<"$out"; then
      printf 'stress: run %d of %s exited 0 without "%s":\n%s\n' "$i" "$config" "$line" "$out" >&2
      exit 1
    fi
  done
  n=$(sed -n 's/^  concurrent aborts *\([0-9][0-9]*\)$/\1/p' <<<"$out")
  aborts=$((aborts + ${n:-0}))
done
if [ "$conflicts" = required ] && [ "$aborts" -eq 0 ]; then
  printf 'stress: %d runs of %s met no concurrent conflict\n' "$i" "$config" >&2
  exit 1
fi
printf 'stress: %d runs of %s verified, invariant ok, %d concurrent aborts\n' "$i" "$config" "$aborts"
