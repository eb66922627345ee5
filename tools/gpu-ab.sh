#!/usr/bin/env bash
# gpu-ab.sh: on a machine with a GPU, times two builds of prstm-run on the same configs in alternation and prints each run and the median ratio.
# usage: tools/gpu-ab.sh BUNDLE_A BUNDLE_B CONFIG...   (bundles made by tools/bundle.sh)
# Knobs: RUNS (default 3 per build and config), ARGS (extra prstm-run
# options, such as "--threads 65536"), LOGDIR (default ./gpu-ab-out),
# NCU=1 also profiles the first engine kernel launch of each build on the
# first config with ncu (throughput, memory, warp stalls), SASS=1 dumps each
# bundle's library disassembly (cuobjdump). Runs alternate A, B, A, B... so
# that a drift of the machine hits both builds alike; every run must pass
# its invariant check to count.
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
a=$1 b=$2
shift 2
out=${LOGDIR:-./gpu-ab-out}
mkdir -p "$out"
runs=${RUNS:-3}
read -r -a extra <<<"${ARGS:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
status=0
# Prints "execute_ms committed_per_s" of one run's summary, or nothing when the run failed its checks.
figures() {
  awk '/^  time/ { for (i = 1; i <= NF; i++) if ($i == "execute") ms = $(i + 1) * 1000 }
       /^  throughput/ { rate = $2 * ($3 == "G" ? 1e9 : $3 == "M" ? 1e6 : $3 == "k" ? 1e3 : 1) }
       /^  invariant +ok/ { ok = 1 }
       END { if (ok && ms != "" && rate != "") printf "%.3f %.0f\n", ms, rate }' "$1"
}
for cfg in "$@"; do
  name=$(basename "$cfg" .json)
  : >"$out/$name.a" && : >"$out/$name.b"
  for i in $(seq 1 "$runs"); do
    for side in a b; do
      bundle=$a; [ $side = b ] && bundle=$b
      log="$out/$name-$side-$i.log"
      timeout 300 "$bundle/run" prstm-run "$cfg" "${extra[@]}" --results "$out/$name-$side-$i.json" >"$log" 2>&1
      rc=$?
      f=$(figures "$log")
      if [ $rc -ne 0 ] || [ -z "$f" ]; then
        echo "$name $side run $i: FAILED (exit $rc, see $log)"
        status=1
        continue
      fi
      echo "$f" >>"$out/$name.$side"
      echo "$name $side run $i: $f"
    done
  done
  # Median execute time of each side, and B's throughput over A's.
  med() { sort -n -k1,1 "$1" | awk '{ v[NR] = $1; r[NR] = $2 } END { if (NR) print v[int((NR + 1) / 2)], r[int((NR + 1) / 2)] }'; }
  ma=$(med "$out/$name.a") mb=$(med "$out/$name.b")
  if [ -n "$ma" ] && [ -n "$mb" ]; then
    echo "$name: median execute A ${ma% *} ms, B ${mb% *} ms; B/A throughput $(awk -v x="${ma#* }" -v y="${mb#* }" 'BEGIN { printf "%.3f", y / x }')"
  fi
done
if [ "${NCU:-0}" = 1 ]; then
  for side in a b; do
    bundle=$a; [ $side = b ] && bundle=$b
    timeout 300 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats -k regex:'_kernel$' --launch-count 1 \
      "$bundle/run" prstm-run "$1" "${extra[@]}" --results "$out/ncu-$side.json" >"$out/ncu-$side.txt" 2>&1 || status=1
    echo "ncu $side: $(grep -cE '^ +[A-Z]' "$out/ncu-$side.txt") metric lines in $out/ncu-$side.txt"
  done
fi
if [ "${SASS:-0}" = 1 ]; then
  for side in a b; do
    bundle=$a; [ $side = b ] && bundle=$b
    lib=$(ls "$bundle"/lib/libprstm.so* 2>/dev/null | head -1)
    [ -n "$lib" ] && cuobjdump -sass "$lib" >"$out/sass-$side.txt" 2>&1
    echo "sass $side: $(wc -l <"$out/sass-$side.txt" 2>/dev/null || echo 0) lines"
  done
fi
exit $status
