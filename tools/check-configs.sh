#!/usr/bin/env bash
# check-configs.sh: runs every ready config in configs/ as shipped, on the CPU backend, and checks that it exits 0 with its invariant ok and that README's list names it with the transaction count the run reports.
# usage: tools/check-configs.sh [BUILD_DIR]   (default build; takes about a minute on 2 cores)
# README's "Ready configs" list gives each config as a bullet that starts
# with `configs/NAME.json` and states its size as "N transactions" (N may
# be 20,000 or 40M or 2.34M); the check compares N with the results file's
# transactions, to the digits README shows ("about N": within one step).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
run="$build/prstm-run"
[ -x "$run" ] || { echo "check-configs: no prstm-run in $build: build first (tools/setup.sh)" >&2; exit 2; }
work=$(mktemp -d /tmp/prstm-check-configs.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "check-configs: FAILED: $*" >&2
  exit 1
}

# The bullet of README's list that names configs/NAME.json, on one line.
bullet() {
  awk -v want="- \`configs/$1\`" '
    index($0, want) == 1 { on = 1; text = $0; next }
    on && (/^- / || /^$/) { exit }
    on { text = text " " $0 }
    END { print text }' "$root/README.md"
}

# N of "N transactions" as a number of transactions, and the step README's
# digits can tell apart (40M: 1e6; 2.34M: 1e4; 20,000: 1).
count_of() {
  local n=$1 digits scale=1
  if [[ $n == *M ]]; then
    n=${n%M}
    digits=0
    if [[ $n == *.* ]]; then
      local fraction=${n#*.}
      digits=${#fraction}
    fi
    scale=$((10 ** (6 - digits)))
    n=${n/./}
    echo "$((10#$n * scale)) $scale"
  else
    echo "${n//,/} 1"
  fi
}

for cfg in "$root"/configs/*.json; do
  name=$(basename "$cfg")
  text=$(bullet "$name")
  [ -n "$text" ] || fail "README's list of ready configs does not name configs/$name"
  said=$(grep -o '[0-9][0-9,.]*M\? transactions' <<<"$text" | head -1 | cut -d' ' -f1)
  [ -n "$said" ] || fail "README's bullet for configs/$name gives no 'N transactions': $text"
  read -r want step < <(count_of "$said")
  start=$SECONDS
  (cd "$work" && "$run" "$cfg" --backend cpu --quiet --results "$work/$name") ||
    fail "prstm-run $cfg --backend cpu exited $?"
  got=$(grep -o '"transactions":[[:space:]]*[0-9]*' "$work/$name" | grep -o '[0-9]*$')
  grep -q '"invariant_ok":[[:space:]]*true' "$work/$name" || fail "configs/$name: invariant not ok"
  rounded=$(((got + step / 2) / step * step))
  if grep -q "about $said transactions" <<<"$text"; then
    # A count README gives as "about N" varies from run to run (graph's
    # rounds depend on the order its transactions commit in): it must lie
    # within one step of N, as "about" promises, not round to it.
    diff=$((got > want ? got - want : want - got))
    [ "$diff" -le "$step" ] ||
      fail "configs/$name ran $got transactions; README says about $said"
  else
    [ "$rounded" = "$want" ] ||
      fail "configs/$name ran $got transactions; README says $said"
  fi
  # README's first screen sends newcomers to this one to see postponements
  # and abandonments: it must show both.
  if [ "$name" = bank-postpone.json ]; then
    for key in postponements abandoned; do
      n=$(grep -o "\"$key\":[[:space:]]*[0-9]*" "$work/$name" | grep -o '[0-9]*$')
      [ "${n:-0}" -gt 0 ] || fail "configs/$name shows no $key"
    done
  fi
  echo "check-configs: ok: configs/$name: $got transactions (README: $said), invariant ok ($((SECONDS - start)) s)"
done
echo "check-configs: every config in configs/ runs, and README names each with its size"
