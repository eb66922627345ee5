#!/usr/bin/env bash
# check-csv.sh: checks the CSVs prstm-bench wrote: every experiment present with data rows, no failed run, every measured row's invariant and outcomes ok.
# usage: check-csv.sh DIR [--require-gpu]
# Exit 0 when all holds; otherwise 1, with one line per problem on stderr.
set -uo pipefail
dir=${1:?usage: check-csv.sh DIR [--require-gpu]}
require_gpu=0
[ "${2:-}" = --require-gpu ] && require_gpu=1
problems=0
fail() { echo "check-csv: $*" >&2; problems=$((problems + 1)); }

header="experiment,workload,series,x_name,x,runner,status,backend,device,threads,lock_coverage,transactions,rounds,committed,abandoned,failed,aborts,postponements,repeats,kernel_s,e2e_s,tx_s,e2e_tx_s,vs_ceiling,vs_serial,vs_cpu,gpu_bytes,gpu_bytes_per_tx,table_bytes_per_tx,invariant,outcomes,verify,note"

# Runners that must have measured (status ok) rows in a file.
need_runners() {
  local file=$1; shift
  for runner in "$@"; do
    awk -F, -v r="$runner" 'NR > 1 && $6 == r && $7 == "ok" {found = 1} END {exit !found}' "$file" ||
      fail "$file: no measured row of runner $runner"
  done
}

for name in bank-accounts bank-coverage bank-threads bank-size semantic-bank semantic-vacation workloads-threads workloads-coverage targets-runs contention oltp hetero multigpu; do
  f=$dir/$name.csv
  if [ ! -s "$f" ]; then fail "$f: missing or empty"; continue; fi
  [ "$(head -1 "$f")" = "$header" ] || fail "$f: header is not prstm-bench's"
  rows=$(($(wc -l <"$f") - 1))
  [ "$rows" -ge 1 ] || fail "$f: no data rows"
  # Every row has all 33 fields; its status is ok or unavailable, or, for a
  # retry-mode runner, incomplete with its verified re-run ok (the retry
  # limit abandoned transactions the workload's invariant needs); a measured
  # row has its invariant and outcomes ok and a positive throughput.
  awk -F, -v f="$f" '
    NR == 1 {next}
    NF != 33 {printf "check-csv: %s:%d: %d fields, expected 33\n", f, NR, NF; bad++; next}
    $7 == "incomplete" && $6 ~ /_retry$/ && $32 == "ok" {next}
    $7 != "ok" && $7 != "unavailable" {printf "check-csv: %s:%d: %s %s is %s: %s\n", f, NR, $6, $5, $7, $33; bad++; next}
    $7 == "ok" && ($30 != "ok" || $31 != "ok") {printf "check-csv: %s:%d: %s invariant \"%s\" outcomes \"%s\"\n", f, NR, $6, $30, $31; bad++; next}
    $7 == "ok" && !($22 > 0) {printf "check-csv: %s:%d: %s measured no throughput\n", f, NR, $6; bad++; next}
    $7 == "ok" && $32 != "" && $32 != "ok" {printf "check-csv: %s:%d: %s verify \"%s\"\n", f, NR, $6, $32; bad++}
    END {exit bad > 0}' "$f" >&2 || problems=$((problems + 1))
  case $name in
    targets-runs) need_runners "$f" cpu_postpone ;;
    bank-size) # the engine and the ceiling with a GPU, the CPU backend without one
      awk -F, 'NR > 1 && ($6 == "gpu_postpone" || $6 == "cpu_postpone") && $7 == "ok" {found = 1} END {exit !found}' "$f" ||
        fail "$f: no measured row of gpu_postpone or cpu_postpone" ;;
    bank-*|semantic-bank) need_runners "$f" cpu_postpone cpu_retry cpu_serial cpu_plain ;;
    oltp) need_runners "$f" cpu_postpone cpu_serial ;;
    hetero) need_runners "$f" cpu_postpone cpu_serial hetero hetero_rounds ;;
    multigpu) need_runners "$f" cpu_postpone cpu_serial multi ;;
    *) need_runners "$f" cpu_postpone cpu_retry cpu_serial ;;
  esac
  if [ $require_gpu = 1 ]; then
    need_runners "$f" gpu_postpone
    case $name in
      bank-size) need_runners "$f" gpu_ceiling ;;
      bank-*|semantic-bank) need_runners "$f" gpu_retry gpu_ceiling ;;
    esac
  fi
done

# ingest.csv has a header of its own: every input measured, checked (status
# ok) and with a positive rate.
i=$dir/ingest.csv
if [ ! -s "$i" ]; then
  fail "$i: missing or empty"
else
  [ "$(head -1 "$i")" = "experiment,input,rows,bytes,seconds,rows_per_s,mb_per_s,vs_read,status,note" ] ||
    fail "$i: header is not prstm-bench's ingest header"
  for input in generate save_binary read_jsonl load_jsonl load_jsonl_strict read_binary load_binary \
    $(for w in bank vacation skiplist kmeans graph tpcc ycsb kv; do echo generate_${w}_one_thread generate_$w; done); do
    awk -F, -v in_="$input" 'NR > 1 && $2 == in_ && $9 == "ok" && $6 > 0 {found = 1} END {exit !found}' "$i" ||
      fail "$i: no checked row of $input with a positive rate"
  done
fi

t=$dir/targets.csv
if [ ! -s "$t" ]; then
  fail "$t: missing or empty"
else
  [ "$(head -1 "$t")" = "target,condition,value,threshold,verdict,backend,detail" ] || fail "$t: header is not prstm-bench's"
  for target in kernel_over_100ms engine_vs_ceiling engine_e2e_vs_serial table_bytes_per_tx ceiling_vs_design \
    semantic_unsorted_vs_presorted high_contention; do
    grep -q "^$target," "$t" || fail "$t: no row for target $target"
  done
  # A target can miss on a real GPU run, and the table says so; what must
  # never happen is a verdict other than these four.
  awk -F, 'NR > 1 && $5 != "pass" && $5 != "fail" && $5 != "info" && $5 != "unavailable" {bad++} END {exit bad > 0}' "$t" ||
    fail "$t: a verdict is not pass, fail, info or unavailable"
  if [ $require_gpu = 1 ]; then
    awk -F, 'NR > 1 && $5 == "unavailable" {bad++} END {exit bad > 0}' "$t" || fail "$t: a target is unavailable on the GPU"
  fi
fi
[ -s "$dir/meta.txt" ] || fail "$dir/meta.txt: missing"

if [ $problems -gt 0 ]; then
  echo "check-csv: $problems problems in $dir" >&2
  exit 1
fi
echo "check-csv: $dir: every CSV present, every run checked and ok"
