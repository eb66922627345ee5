#!/usr/bin/env bash
# mutate.sh: a mutation spot-check: each named mutant (a small deliberate bug) is applied to a scratch copy of the tree, and the test named to catch it must fail against it.
# usage: tools/mutate.sh [SCRATCH_DIR] [MUTANT_NAME...]
#        tools/mutate.sh --check   (only that every mutant still applies; no build)
# Exit 0 when every mutant was caught, 1 when one survived, 2 when a mutant
# no longer applies (its line changed: update the list below).
# The scratch copy builds the CPU backend alone (-DPRSTM_WITH_CUDA=OFF): the
# mutants are in code both backends share or in the host's own code, and CI
# has no GPU to run a GPU build's kernels on. Each mutant rebuilds only the
# programs its catcher needs (the catcher, and prstm-run where the catcher
# runs it) and runs only the catcher: a mutant in a header every workload
# includes would otherwise rebuild and rerun the whole tree, more than two
# minutes a mutant on two cores.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check_only=0
if [ "${1:-}" = --check ]; then
  check_only=1
  shift
fi
scratch=${1:-$root/build-mutate}
shift || true
wanted=("$@")

# Each mutant: name | the ctest test that must catch it (several: comma
# separated; one failing is enough) | file | sed expression that changes
# exactly one line. The promise each one breaks is in its name. A test
# named here is also a build target of the same name (tests/CMakeLists.txt).
mutants=(
  "verify-mismatch-exits-0|test_cli|tools/prstm-run/main.c|s/^    status = EXIT_VERIFY;\$/    status = EXIT_OK;/"
  "violated-invariant-exits-0|test_cli|tools/prstm-run/main.c|s/^  status = rep.invariant_ok ? EXIT_OK : EXIT_RUNTIME;\$/  status = EXIT_OK;/"
  "close-abandons-without-the-final-run|test_stream|engine/stream.c|s/^      rc = stream_launch(s, 0, 0, s->queue_len, 1, 0);\$/      stream_abandon_queue(s); break;/"
  "lower-tags-first-in-a-sweep|test_cmp|cmp/cmp_walk.h|s/^    for (int tag = 15; tag >= 0; tag--) {\$/    for (int tag = 0; tag <= 15; tag++) {/"
  "results-written-in-place|test_loaders|loaders/write_atomic.c|s/^  return write_atomic_regular(path, text, len, err, errlen);\$/  return write_in_place(path, text, len, err, errlen);/"
  "read-validation-removed|test_bank|engine/stm/stm_core.h|s/^    if (stm_lock_is_locked(w) || stm_lock_version(w) != r->version) return 0;\$/    if (0) return 0;/"
  "rows-renumbered-per-unit|test_stream|txtable/txtable_view.h|s/^  return t->row_id \&\& r >= t->ids_from ? t->row_id\[r - t->ids_from\] : t->row_base + r;\$/  return r;/"
  "pending-row-passes-the-certificate|test_verify|engine/verify.c|s/^    if ((b->status\[i\] \& TXTABLE_STATUS_MASK) == PRSTM_PENDING)\$/    if (0)/"
  "read-hash-not-compared|test_verify|engine/verify.c|s/^    if (b->read_hash \&\& b->read_hash\[row\] != t.read_hash\[j\]) {\$/    if (0) {/"
  "decision-counts-not-compared|test_verify|engine/verify.c|s/^  if (committed != c->committed || failed != c->failed || abandoned != c->abandoned) {\$/  if (0) {/"
  "unit-sequences-not-shifted|test_verify|engine/stream.c|s/^    s->seq_base += sequences;\$/    (void)sequences;/"
  "chunked-run-set-up-not-reported|test_cli,test_stream|engine/stream.c|s/^  res->setup_s = sr.setup_s;\$/  (void)sr.setup_s;/"
  "reader-ignores-adds-under-way|test_adds|engine/stm/stm_core.h|s/^  if (STM_ADDS \&\& tx->ctx->add_counts \&\& port_load_acquire(\&tx->ctx->add_counts\[r->lock\]) != 0) return 0;\$/  if (0) return 0;/"
  "list-total-not-multiplied|test_deltas|cmp/cmp_delta.h|s/^    a \*= count;\$/    a *= 1;/"
  "list-total-unbounded|test_deltas|cmp/cmp_delta.h|s/^    in_bound = count == 0 || a <= p->amount_max \/ count;\$/    in_bound = 1;/"
  "field-past-its-amount-taken|test_ycsb|cmp/cmp_delta.h|s/^    if (field >> p->field_amount_bits\[type\]) return -1;\$/    (void)0;/"
  "path-ignores-the-set-capacity|test_deltas|engine/delta.c|s/^  if (!v || plan->slots > v->set_capacity) return 0;\$/  if (!v) return 0;/"
  "read-step-moves-its-word|test_deltas|cmp/cmp_delta.h|s/^  uint64_t a = reads_only ? 0 : cmp_delta_arg(t, r, p->amount_col\[type\]\[j\]);\$/  uint64_t a = cmp_delta_arg(t, r, p->amount_col[type][j]);/"
  "read-result-not-written|test_deltas|engine/delta.c|s/^    if (plan->result_sum\[type\] \&\& b->result) b->result\[r\] = sum;\$/    (void)sum;/"
  "parallel-walk-keeps-refused-steps|test_deltas|engine/delta.c|s/^      w->e->words\[w->rec\[i\].word\] = w->read\[w->rec\[i\].id\];\$/      (void)0;/"
  "plan-takes-rows-of-blind-writes|test_ycsb|engine/delta.c|s/^  return (arg \& high \& used) == 0;\$/  return (void)arg, (void)high, (void)used, 1;/"
  "ticket-taken-without-the-counter-lock|test_tickets|engine/stm/stm_core.h|s/^    if (port_cas_acquire(lw, w, stm_lock_make(stm_lock_version(w), tx->prio, STM_LOCK_LOCKED))) {\$/    if (1) {/"
  "private-write-lands-before-the-commit|test_stm|engine/stm/stm_core.h|s/^  if (lock) stm_tx_lock_for_write(tx, addr);\$/  if (lock) stm_tx_lock_for_write(tx, addr); else port_store_relaxed(\&tx->ctx->words[addr], value);/"
  "blind-add-keeps-the-version|test_adds|engine/stm/stm_core.h|s/^      port_add_relaxed(\&ctx->locks\[stm_tx_add_lock(tx, \&tx->writes\[i\])\], 1ull << STM_LOCK_VERSION_SHIFT);\$/      (void)0;/"
  "payment-skips-district-total|test_tpcc|workloads/tpcc/tpcc_body.h|s/^  prstm_add_unread(tx, tpcc_district(\&l, w, d) + TPCC_D_YTD, amount);\$/  (void)0;/"
  "order-line-skips-its-quantity|test_tpcc|workloads/tpcc/tpcc_body.h|s/^    prstm_add_unread(tx, at + TPCC_S_Q, TPCC_S_Q_TAKE(qty));\$/    (void)0;/"
  "unread-add-read-back-stays-unread|test_adds|engine/stm/stm_core.h|s/^      tx->writes\[w\].addr \&= ~STM_WRITE_UNREAD;\$/      (void)0;/"
  "co-execution-keeps-conflicting-parts|test_hetero|engine/hetero.c|s/^    \*verdict = fails \& FOOTPRINT_B_FIRST_FAILS ? hetero_policy_verdict(h) : HETERO_KEEP_BOTH_B_FIRST;\$/    (void)0;/"
  "reconcile-ignores-the-first-units-reads|test_hetero|engine/hetero.c|s/^  if (!rc) rc = hetero_log_take(h, a->e->unit_read_marks, a->e->unit_write_marks);\$/  (void)0;/"
  "reconcile-ignores-the-second-units-reads|test_hetero|engine/footprint_log.h|s/^  if (a_wrote \&\& (b_read | b_wrote)) fails |= FOOTPRINT_A_FIRST_FAILS;\$/  if (a_wrote \&\& b_wrote) fails |= FOOTPRINT_A_FIRST_FAILS;/"
  "reconcile-keeps-the-first-units-writes-to-itself|test_hetero|engine/hetero.c|s/^  if (!rc) rc = hetero_move_words(h, a_to_b, h->log, a_written);\$/  (void)0;/"
  "co-execution-never-reorders-parts|test_hetero|engine/hetero.c|s/ : HETERO_KEEP_BOTH_B_FIRST;\$/ : hetero_policy_verdict(h);/"
  "favour-fastest-keeps-the-slower-part|test_hetero|engine/hetero.c|s/^      return part_decided(\&h->unit\[1\]) > part_decided/      return part_decided(\&h->unit[1]) < part_decided/"
  "fixed-period-adapts|test_hetero|engine/hetero.c|s/^    const int adapts = !fixed_period || solo >= 0;\$/    const int adapts = 1;/"
  "rounds-never-stop-the-first-unit|test_hetero|engine/hetero.c|s/^  if (a->n \&\& bu->n \&\& !a->final \&\& h->stop_ratio > 0) return hetero_round_with_deadline(h, h->stop_ratio, NULL, NULL);\$/  (void)0;/"
  "balanced-policy-never-turns|test_hetero|engine/hetero.c|s/^      h->a_loses_next = !h->a_loses_next;\$/      (void)0;/"
  "multi-span-drops-the-last-lock|test_multi|engine/multi.c|s/? span\[STM_SPAN_WRITE_HI\] \* cov : m->e->nwords;\$/? (span[STM_SPAN_WRITE_HI] - 1) * cov : m->e->nwords;/"
  "multi-skips-the-exchange|test_multi|engine/multi.c|s/^    if (m->n > 1) rc = multi_exchange(m, lo, hi);\$/    (void)0;/"
  "lone-commit-drops-adds|test_engine|engine/stm/stm_core.h|s/^      port_store_relaxed(word, port_load_alone(word) + w->value);\$/      port_store_relaxed(word, w->value);/"
  "unread-add-read-back-takes-no-lock|test_adds|engine/stm/stm_core.h|s/^      if (!tx->ctx->add_counts) stm_tx_lock_for_write(tx, addr);\$/      (void)0;/"
  "alone-keeps-a-lock-set|test_adds|engine/stm/stm_core.h|s/^  if (stm_tx_alone(tx)) return;\$/  (void)0;/"
  "grouped-validation-ignores-versions|test_stm|engine/stm/stm_core.h|s/^        ok = !(moved \& bit);\$/        ok = 1;/"
  "new-attempt-keeps-the-last-read-index|test_stm_wide|engine/stm/stm_core.h|s/^  stm_index_clear(\&tx->index\[STM_INDEX_READS\], tx->index_mask);\$/  (void)0;/"
  "delete-leaves-its-node-linked|test_skiplist|workloads/skiplist/skiplist_body.h|s/^    prstm_write(tx, skiplist_addr(\&m, target, 2 + lv), SKIPLIST_UNLINKED);\$/    (void)0;/"
  "walk-validates-every-link|test_skiplist|workloads/skiplist/skiplist_body.h|s/^      w = prstm_read_immutable(tx, skiplist_addr(m, x, 2 + lv));\$/      w = prstm_read(tx, skiplist_addr(m, x, 2 + lv));/"
  "hetero-never-takes-the-delta-path|test_hetero|engine/hetero.c|s/^  if (e->opt.deltas == PRSTM_DELTAS_OFF) return 0;\$/  return 0;/"
  "partitioned-unit-keeps-rows-it-sent-away|test_multi|engine/unit.c|s/^    if (st == UNIT_AWAY) {\$/    if (0 \&\& st == UNIT_AWAY) {/"
  "cpu-walk-ignores-the-stop-between-rows|test_cmp|cmp/cmp_walk.h|s/^        if ((++rows_since_stop_check \& (CMP_STOP_CHECK_ROWS - 1u)) == 0 \&\& STM_STOPPED(ctx)) {\$/        if (0 \&\& STM_STOPPED(ctx)) {/"
  "window-runs-past-its-rows|test_txtable|txtable/txtable.c|s/^  if (b->n == b->cap || nargs > b->ncols || (b->window \&\& b->n == b->limit) || widen) {\$/  if (b->n == b->cap || nargs > b->ncols || widen) {/"
  "wide-value-kept-in-a-narrow-batch|test_txtable|txtable/txtable.h|s/^  for (unsigned c = 0; c < nargs; c++) high |= args\[c\] >> 32;\$/  for (unsigned c = 0; c < nargs; c++) high |= args[c] >> 48;/"
  "thread-alone-reads-narrow-columns-wide|test_bank|include/prstm/prstm_tx.h|s/^    tx.alone_narrow = alone \&\& ctx->table.narrow_args; /    tx.alone_narrow = 0; /"
  "first-attempt-forgets-the-lock-it-read|test_early_locks|engine/stm/stm_core.h|s/^    tx->locks\[k\].held = 2;\$/    tx->locks[k].held = 0;/"
  "shared-commit-counter-ignored|test_cmp|engine/stm/stm_core.h|s/^  return port_fetch_add_acq_rel(ctx->sequence ? ctx->sequence : \&ctx->quiesce\[STM_Q_SEQUENCE\], 1);\$/  return port_fetch_add_acq_rel(\&ctx->quiesce[STM_Q_SEQUENCE], 1);/"
  "unit-rank-base-ignored|test_cmp|cmp/cmp_walk.h|s/ctx->type_tag\[type\], rank + ctx->rank_base);\$/ctx->type_tag[type], rank);/"
  "narrowing-misses-a-wide-value|test_engine|engine/engine_shared.c|s/^    high |= s\[k\] >> 32;\$/    high |= s[k] >> 48;/"
)

# Each mutant must still change its line: a mutant that no longer applies
# tests nothing. ctest runs this check (mutants_apply), so a change that
# moves a mutant's line fails the suite at once, not only the slow check.
if [ "$check_only" = 1 ]; then
  stale=0
  tmp=$(mktemp)
  for m in "${mutants[@]}"; do
    IFS='|' read -r name _ file expr <<<"$m"
    sed "$expr" "$root/$file" >"$tmp"
    if cmp -s "$root/$file" "$tmp"; then
      echo "mutate: $name: no longer applies to $file"
      stale=1
    fi
  done
  rm -f "$tmp"
  [ "$stale" = 0 ] && echo "mutate: all ${#mutants[@]} mutants apply"
  exit $((stale * 2))
fi

mkdir -p "$scratch"
src=$scratch/src
build=$scratch/build
log=$scratch/log
mkdir -p "$log"
# The scratch copy: the tracked files as they are in the work tree now.
rm -rf "$src"
mkdir -p "$src"
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$src")
# The catchers of the mutants asked for.
catchers=()
for m in "${mutants[@]}"; do
  IFS='|' read -r name tests _ <<<"$m"
  if ((${#wanted[@]})) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then continue; fi
  IFS=',' read -r -a list <<<"$tests"
  catchers+=("${list[@]}")
done
if ((${#catchers[@]} == 0)); then
  echo "mutate: no mutant named ${wanted[*]}"
  exit 2
fi
mapfile -t catchers < <(printf '%s\n' "${catchers[@]}" | sort -u)
# A test target depends on the programs it runs (prstm-run among them where
# it runs it), so building the catchers builds what they need and no more.
build_for() { cmake --build "$build" -j"$(nproc)" --target "$@"; }
# With ccache (Debian's ccache), the build after a mutant is taken back
# finds the unmutated objects in the cache instead of compiling them again.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="$scratch/ccache" CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "mutate: building the unmutated copy in $build${launcher[*]:+ (through ccache)}"
cmake -S "$src" -B "$build" -DPRSTM_WITH_CUDA=OFF -DPRSTM_BUILD_FUZZERS=OFF -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  >"$log/configure.log" 2>&1 ||
  { echo "mutate: configure failed (see $log/configure.log)"; exit 2; }
build_for "${catchers[@]}" >"$log/build.log" 2>&1 || { echo "mutate: build failed (see $log/build.log)"; exit 2; }
# Every catcher must pass unmutated, or no mutant's verdict means anything.
all_catchers=$(IFS='|'; echo "${catchers[*]}")
ctest --test-dir "$build" -j"$(nproc)" -R "^($all_catchers)$" >"$log/baseline.log" 2>&1 ||
  { echo "mutate: a catcher fails unmutated (see $log/baseline.log)"; exit 2; }

survivors=()
stale=()
for m in "${mutants[@]}"; do
  IFS='|' read -r name tests file expr <<<"$m"
  if ((${#wanted[@]})) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then continue; fi
  cp "$src/$file" "$scratch/original"
  sed -i "$expr" "$src/$file"
  if cmp -s "$src/$file" "$scratch/original"; then
    echo "mutate: $name: no longer applies to $file"
    stale+=("$name")
    continue
  fi
  start=$SECONDS
  IFS=',' read -r -a list <<<"$tests"
  if ! build_for "${list[@]}" >"$log/$name.build.log" 2>&1; then
    verdict="caught (does not build)"
  elif ctest --test-dir "$build" -j"$(nproc)" -R "^(${tests//,/|})$" >"$log/$name.log" 2>&1; then
    verdict="SURVIVED $tests"
    survivors+=("$name")
  else
    verdict="caught by $(sed -n '/The following tests FAILED:/,$p' "$log/$name.log" | grep -E '^[[:space:]]+[0-9]+ - ' |
      sed -E 's/^[[:space:]]*[0-9]+ - //; s/ \(.*//' | paste -sd, -)"
  fi
  echo "mutate: $name: $verdict ($((SECONDS - start)) s)"
  cp "$scratch/original" "$src/$file"
done
# Leave the scratch build as the unmutated copy.
build_for "${catchers[@]}" >/dev/null 2>&1
if ((${#stale[@]})); then
  echo "mutate: ${#stale[@]} mutants no longer apply: ${stale[*]}"
  exit 2
fi
if ((${#survivors[@]})); then
  echo "mutate: ${#survivors[@]} mutants survived their catchers: ${survivors[*]}"
  exit 1
fi
echo "mutate: every mutant was caught"
