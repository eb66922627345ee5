#!/usr/bin/env bash
# multi_ranks.sh: backend multi with its units as processes that mpirun starts: partitioned transfers routed wholly to their ranks, deposits and withdrawals carried across rounds, a kv state whose sets straddle the ranks' ranges falling back to the first rank, and refusals of a rank count the options contradict, of a partitioned state, and of ranks that load different batches; every run verified.
# usage: [RANKS_GPUS=N] multi_ranks.sh MPIEXEC PRSTM_RUN DATA_DIR
# RANKS_GPUS gives the GPUs of the host that the ranks run on: unset or 0,
# every rank is a set of CPU threads; 1, too, and the run says the host has
# one GPU for two ranks; 2 or more, every rank runs on a GPU of its own and
# the ranks exchange their words through NCCL.
set -uo pipefail
mpiexec=$1 run=$2 data=$3
gpus=${RANKS_GPUS:-0}
case $gpus in
  0) placed="one rank each" ;;
  1) placed="mpirun started 2 ranks on a host with 1 GPU: the units run on CPU threads, one rank each" ;;
  *) placed="2 ranks x .*SMs" ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mpirun refuses root unless told; CI runs as root. Two ranks on any
# number of cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer, Open MPI leaves allocations of its own at exit,
# some in plugins it has unloaded, which LeakSanitizer cannot name to
# suppress them: leak checking is off for these runs alone. The engine's
# multi-unit code is leak-checked in one process by test_multi.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fails=0
fail() {
  echo "multi_ranks: $*" >&2
  fails=$((fails + 1))
}

# ranks CONFIG EXPECT...: runs CONFIG on two ranks, verified, and requires
# exit 0 and every EXPECT (an extended regular expression) in the output.
ranks() {
  local cfg=$1
  shift
  local out
  out=$("$mpiexec" -np 2 "$run" "$data/multi/$cfg" --verify --results "$work/$cfg.results" 2>&1)
  local rc=$?
  [ $rc -eq 0 ] || fail "$cfg: exit $rc: $out"
  grep -Eq "verify +ok" <<<"$out" || fail "$cfg: not verified: $out"
  grep -Eq "units +2," <<<"$out" || fail "$cfg: not two units: $out"
  grep -Eq "$placed" <<<"$out" || fail "$cfg: no '$placed' in: $out"
  if [ "$gpus" -ge 2 ] && grep -q "on CPU threads" <<<"$out"; then fail "$cfg: ranks on CPU threads: $out"; fi
  for want in "$@"; do grep -Eq "$want" <<<"$out" || fail "$cfg: no '$want' in: $out"; done
  # Rank 0 alone speaks: one summary.
  [ "$(grep -c "^prstm-run 0" <<<"$out")" -eq 1 ] || fail "$cfg: more than one rank printed a summary: $out"
  [ -s "$work/$cfg.results" ] || fail "$cfg: no results file"
}

ranks transfers.json "committed +400000" " 0 rows ran on the first unit"
ranks postpone.json "abandoned +0$|abandoned +[0-9]+" "postponements +[1-9]"
ranks kv-straddle.json "outside the range" "100000 rows ran on the first unit"

# Three ranks where the options ask for two units: refused, with a message.
out=$("$mpiexec" -np 3 "$run" "$data/multi/transfers.json" --units 2 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "3 ranks and --units 2: exit 0"
grep -q "mpirun started 3 ranks, and the options ask for 2 units" <<<"$out" || fail "3 ranks and --units 2: $out"

# A partitioned state runs in one process; ranks each hold a replica, so
# the option is refused on every rank, with a message.
out=$("$mpiexec" -np 2 "$run" "$data/multi/transfers.json" --partition-state 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "ranks and --partition-state: exit 0"
grep -q "a partitioned state runs in one process" <<<"$out" || fail "ranks and --partition-state: $out"

# Ranks that load different batches (here another seed) would plan
# differently: refused on every rank, with a message.
sed 's/"seed": 7/"seed": 8/' "$data/multi/transfers.json" >"$work/other-seed.json"
out=$("$mpiexec" -np 1 "$run" "$data/multi/transfers.json" : -np 1 "$run" "$work/other-seed.json" 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "ranks with different batches: exit 0"
grep -q "the ranks hold different batches" <<<"$out" || fail "ranks with different batches: $out"

[ $fails -eq 0 ] && echo "multi_ranks: ok: 6 cases on ranks started by $mpiexec ($placed)"
exit $((fails > 0))
