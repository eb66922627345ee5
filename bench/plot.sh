#!/usr/bin/env bash
# plot.sh: draws one PNG per prstm-bench experiment from its CSV with gnuplot (throughput per runner against the swept knob).
# usage: plot.sh DIR [--check]
#   DIR holds the CSVs of prstm-bench --out DIR; each NAME.csv becomes NAME.png beside it,
#   and targets.csv becomes targets.png (each target's value against its threshold);
#   targets-runs.csv, the runs behind the targets, is not a sweep and gets no plot.
#   --check: fail unless every CSV got a non-empty PNG (the ctest of the plots).
# Needs gnuplot with the pngcairo terminal (Debian: gnuplot-nox; tools/setup.sh installs it).
set -euo pipefail
dir=${1:?usage: plot.sh DIR [--check]}
check=0
[ "${2:-}" = --check ] && check=1
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap '[ -n "${PLOT_KEEP:-}" ] || rm -rf "$tmp"' EXIT
made=0 missing=0

# One panel per series, one line per runner: committed transactions per
# second of execution (kernel time on the GPU), from measured rows only.
plot_sweep() {
  local csv=$1 name
  name=$(basename "$csv" .csv)
  local work=$tmp/$name
  mkdir -p "$work"
  # Column numbers come from the header, so a reordered CSV still plots.
  awk -F, -v out="$work" '
    NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next}
    $col["status"] == "ok" && $col["tx_s"] > 0 {
      s = $col["series"]; r = $col["runner"]
      if (!(s in seen)) {seen[s] = 1; order[++ns] = s}
      file = out "/" s "__" r ".dat"
      print $col["x"], $col["tx_s"] >> file
      xname[s] = $col["x_name"]
      # A series over several workloads (hetero-workloads) names them all.
      w = $col["workload"]
      if (!(s in wl)) wl[s] = w
      else if (index("+" wl[s] "+", "+" w "+") == 0) wl[s] = wl[s] "+" w
      if (!(s in minx) || $col["x"] + 0 < minx[s]) minx[s] = $col["x"] + 0
    }
    END {
      for (i = 1; i <= ns; i++) printf "%s %s %s %g\n", order[i], wl[order[i]], xname[order[i]], minx[order[i]] > (out "/series")
    }' "$csv"
  if [ ! -s "$work/series" ]; then
    echo "plot.sh: $csv has no measured rows; no plot" >&2
    return 0
  fi
  local nseries
  nseries=$(wc -l <"$work/series")
  {
    echo "set terminal pngcairo size $((560 * nseries)),480 font 'sans,10'"
    echo "set output '$dir/$name.png'"
    echo "set datafile separator whitespace"
    echo "set multiplot layout 1,$nseries title '$name: committed tx/s of execution (GPU: kernel time), each point checked'"
    echo "set logscale y 10"
    echo "set format y '%.0e'"
    echo "set grid"
    echo "set key bottom left font 'sans,8'"
    echo "set ylabel 'committed tx/s'"
    # Each panel has its own knob; a log scale where every x is positive
    # (thread counts, accounts), linear otherwise (ratios, skews, and the
    # single points of a workload, drawn at x = 0).
    while read -r series workload xname minx; do
      if [ "$series" = "$workload" ]; then echo "set title '$workload' noenhanced"; else echo "set title '$workload: $series' noenhanced"; fi
      echo "set xlabel '${xname//_/ }'"
      if awk -v m="$minx" -v n="$xname" 'BEGIN {exit !(m > 0 && n != "semantic_ratio" && n != "skew")}'; then
        echo "set logscale x 2"; echo "set autoscale x"
      elif [ "$minx" = 0 ] && [ "$xname" = point ]; then
        echo "unset logscale x"; echo "set xrange [-1:1]"
      else
        echo "unset logscale x"; echo "set autoscale x"
      fi
      local plots=""
      for runner in gpu_postpone gpu_retry gpu_ceiling gpu_stm gpu_deltas cpu_postpone cpu_retry cpu_serial cpu_plain \
        cpu_stm cpu_deltas hetero hetero_rounds multi; do
        local f=$work/${series}__$runner.dat
        [ -s "$f" ] || continue
        sort -g "$f" -o "$f"
        plots="${plots:+$plots, }'$f' using 1:2 with linespoints title '$runner' noenhanced"
      done
      echo "plot $plots"
    done <"$work/series"
    echo "unset multiplot"
  } >"$work/plot.gp"
  gnuplot "$work/plot.gp"
  made=$((made + 1))
}

# Each target's value divided by its threshold (the threshold divided by the
# value where smaller is better): 1 is the line a target must reach.
plot_targets() {
  local csv=$1
  awk -F, 'NR > 1 && $3 != "" && match($4, /[0-9.]+(e[0-9]+)?/) {
      t = substr($4, RSTART, RLENGTH) + 0; v = $3 + 0
      if ($4 ~ /^>/ && t > 0) printf "%s %g %s\n", $1, v / t, $5
      else if ($4 ~ /^</ && v > 0) printf "%s %g %s\n", $1, t / v, $5
    }' "$csv" >"$tmp/targets.dat"
  if [ ! -s "$tmp/targets.dat" ]; then
    echo "plot.sh: $csv has no measured target with a threshold; no plot" >&2
    return 0
  fi
  cat >"$tmp/targets.gp" <<GP
set terminal pngcairo size 900,480 font 'sans,10'
set output '$dir/targets.png'
set title 'targets: measured value relative to its threshold (>= 1 meets it)'
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set grid y
set xtics rotate by -30 noenhanced
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2
plot '$tmp/targets.dat' using 0:2:xtic(1) with boxes notitle, '' using 0:2:3 with labels offset 0,1 notitle noenhanced
GP
  gnuplot "$tmp/targets.gp"
  made=$((made + 1))
}

# The ingest experiment: each input path's rate in MB/s (rows/s for the
# generator, which reads nothing), beside the plain reads of the same files.
plot_ingest() {
  local csv=$1
  awk -F, 'NR > 1 && $9 == "ok" {v = $7 > 0 ? $7 : $6 / 1e6; printf "%s %g\n", $2, v}' "$csv" >"$tmp/ingest.dat"
  if [ ! -s "$tmp/ingest.dat" ]; then
    echo "plot.sh: $csv has no measured rows; no plot" >&2
    return 0
  fi
  cat >"$tmp/ingest.gp" <<GP
set terminal pngcairo size 1000,560 font 'sans,10'
set output '$dir/ingest.png'
set title 'ingest: MB/s of file read or written (generate*: M rows/s), each load checked row for row'
set style fill solid 0.6
set boxwidth 0.6
set logscale y 10
set grid y
set bmargin 11
set xtics noenhanced rotate by 50 right
plot '$tmp/ingest.dat' using 0:2:xtic(1) with boxes notitle, '' using 0:2:(sprintf('%.0f', \$2)) with labels offset 0,1 notitle
GP
  gnuplot "$tmp/ingest.gp"
  made=$((made + 1))
}

for csv in "$dir"/*.csv; do
  [ -e "$csv" ] || continue
  case $(basename "$csv") in
    targets.csv) plot_targets "$csv" ;;
    ingest.csv) plot_ingest "$csv" ;;
    targets-runs.csv) ;; # the runs behind targets.csv, not a sweep
    *) plot_sweep "$csv" ;;
  esac
done
echo "plot.sh: $made plots in $dir"
if [ $check = 1 ]; then
  for csv in "$dir"/*.csv; do
    png=${csv%.csv}.png
    [ "$(basename "$csv")" = targets-runs.csv ] && continue
    [ "$(basename "$csv")" = targets.csv ] && [ ! -s "$tmp/targets.dat" ] && continue
    if [ ! -s "$png" ]; then
      echo "plot.sh: no plot for $csv" >&2
      missing=$((missing + 1))
    fi
  done
  [ $missing -eq 0 ] || exit 1
fi
