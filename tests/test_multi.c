/* test_multi.c: behaviour of backend multi: rows routed to the unit that owns their words, rows that span units run on the first, postponed rows funded across units, a workload whose bodies stray out of their range run on one unit, a partitioned state (each unit its range alone, the host the rest), refusals, and the GPUs as the units where there are some. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"

/* Each CPU unit gets this many threads where no GPU is usable. */
#define UNIT_THREADS 4

typedef struct multi_case {
  const prstm_workload *wl;
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
} multi_case;

/* A bank engine on backend multi; partitioned: options.partition_state. */
static void open_bank_state(multi_case *r, uint32_t units, uint64_t accounts, uint64_t balance, int partitioned) {
  memset(r, 0, sizeof *r);
  r->wl = prstm_workload_find("bank");
  cr_assert_not_null(r->wl);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_MULTI, UNIT_THREADS * (units ? units : 2), 1);
  opt.units = units;
  opt.partition_state = partitioned;
  test_open(r->wl, &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  s.accounts = accounts;
  s.initial_balance = balance;
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

static void open_bank(multi_case *r, uint32_t units, uint64_t accounts, uint64_t balance) {
  open_bank_state(r, units, accounts, balance, 0);
}

/* Transfers; with partitions > 0 each row's accounts lie in one of that
 * many equal ranges of the accounts, but for a share `cross` of rows whose
 * other account is anywhere. */
static void generate_crossing_transfers(multi_case *r, uint64_t n, uint64_t seed, unsigned partitions, double cross) {
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.transactions = n;
  g.seed = seed;
  g.nmix = 1;
  g.mix_names[0] = "transfer";
  g.mix_weights[0] = 1;
  test_set_knob(r->wl, g.params, "partitions", partitions);
  test_set_knob(r->wl, g.params, "cross_share", cross);
  char err[256] = "";
  cr_assert_eq(r->wl->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
}

static void generate_transfers(multi_case *r, uint64_t n, uint64_t seed, unsigned partitions) {
  generate_crossing_transfers(r, n, seed, partitions, 0);
}

/* Transfers kept within four ranges of the accounts run wholly on the unit
 * that owns their range, on two units as on four: no row is left for the
 * first unit, and the merged replicas are the serial replay's state. */
Test(multi, partitioned_transfers_run_on_their_own_units) {
  const uint32_t units[] = {2, 4};
  for (unsigned i = 0; i < 2; i++) {
    multi_case r;
    open_bank(&r, units[i], 100000, 1000000);
    generate_transfers(&r, 300000, 7, 4);
    test_run_verified(r.engine, r.batch, &r.res, "multi run");
    cr_assert_eq(r.res.backend, PRSTM_BACKEND_MULTI);
    cr_assert_eq(r.res.units, units[i]);
    cr_assert_eq(r.res.committed, 300000);
    cr_assert_eq(r.res.cross_rows, 0, "%u units: rows within one range must all be routed: %llu were not", units[i],
                 (unsigned long long)r.res.cross_rows);
    cr_assert_geq(r.res.rounds, 2, "the first round is a probe, a part of the batch");
    test_expect_invariant(r.wl, r.engine, r.batch);
    test_close(r.engine, r.batch);
  }
}

/* Transfers between any two accounts often span both units' ranges: those
 * run after the routed parts, on the merged state: on the first unit where
 * every unit holds a replica, on the host where the state is partitioned
 * (no unit holds both words). Either run is the serial replay's. */
Test(multi, transfers_across_ranges_run_on_the_first_unit_or_the_host) {
  for (int partitioned = 0; partitioned < 2; partitioned++) {
    multi_case r;
    open_bank_state(&r, 2, 100000, 1000000, partitioned);
    generate_transfers(&r, 300000, 9, 0);
    test_run_verified(r.engine, r.batch, &r.res, partitioned ? "partitioned multi run" : "multi run");
    cr_assert_eq(r.res.committed, 300000);
    cr_assert_eq(r.res.state_partitioned, (uint32_t)partitioned);
    /* Half the pairs of two random accounts span the two halves. */
    cr_assert_gt(r.res.cross_rows, 300000 / 3, "%llu cross rows", (unsigned long long)r.res.cross_rows);
    cr_assert_lt(r.res.cross_rows, 300000 * 2 / 3, "%llu cross rows", (unsigned long long)r.res.cross_rows);
    test_expect_invariant(r.wl, r.engine, r.batch);
    test_close(r.engine, r.batch);
  }
}

/* The bank's cross_share lets a share of the partitioned transfers take
 * their other account from anywhere: a fifth of them here, of which half
 * land in the other unit's half of the accounts, so about a tenth of the
 * rows span the two units' ranges and run on the first unit. */
Test(multi, a_share_of_crossing_transfers_spans_the_ranges) {
  multi_case r;
  open_bank(&r, 2, 100000, 1000000);
  generate_crossing_transfers(&r, 300000, 7, 2, 0.2);
  test_run_verified(r.engine, r.batch, &r.res, "multi run");
  cr_assert_eq(r.res.committed, 300000);
  cr_assert_gt(r.res.cross_rows, 300000 / 20, "%llu cross rows", (unsigned long long)r.res.cross_rows);
  cr_assert_lt(r.res.cross_rows, 300000 * 3 / 20, "%llu cross rows", (unsigned long long)r.res.cross_rows);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* Withdrawals come before the deposits that fund them, on accounts of
 * every unit: a postponed withdrawal is carried into a later round and
 * commits; nothing is abandoned. */
Test(multi, postponed_withdrawals_are_funded_across_rounds) {
  multi_case r;
  open_bank(&r, 3, 1000, 0);
  const uint64_t n = 200000;
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "withdraw", (i * 7919) % 1000, 3, 2);
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "deposit", (i * 104729) % 1000, 3, 2);
  test_run_verified(r.engine, r.batch, &r.res, "multi run");
  cr_assert_gt(r.res.postponements, 0, "withdrawals before their deposits must postpone");
  cr_assert_eq(r.res.abandoned, 0, "every withdrawal is funded by the deposits of its account: %llu abandoned",
               (unsigned long long)r.res.abandoned);
  cr_assert_eq(r.res.committed, n);
  cr_assert_eq(r.res.cross_rows, 0, "one-account rows always lie in one range");
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* 100,000 kv rows over three sets of 8 ways on two units, verified: the
 * middle set straddles the units' ranges. */
static void run_kv_straddling(multi_case *r, int partitioned) {
  memset(r, 0, sizeof *r);
  r->wl = prstm_workload_find("kv");
  cr_assert_not_null(r->wl);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_MULTI, UNIT_THREADS * 2, 1);
  opt.units = 2;
  opt.partition_state = partitioned;
  test_open(r->wl, &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  test_set_knob(r->wl, s.params, "sets", 3);
  test_set_knob(r->wl, s.params, "ways", 8);
  test_set_knob(r->wl, s.params, "preload", 8);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.transactions = 100000;
  g.seed = 3;
  char err[256] = "";
  cr_assert_eq(r->wl->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
  test_run_verified(r->engine, r->batch, &r->res, partitioned ? "partitioned multi kv run" : "multi kv run");
}

/* The kv workload names one word of a row (its set's first), and its body
 * reads the whole set: with three sets on two units, the middle set
 * straddles the units' ranges, so the probe round finds a unit's rows out
 * of its range, discards the round, and every row runs on the first unit,
 * which the run says; the outcome is the serial replay's. */
Test(multi, rows_that_stray_from_their_range_run_on_the_first_unit) {
  multi_case r;
  run_kv_straddling(&r, 0);
  cr_assert(strstr(r.res.fallback, "outside the range") != NULL, "the run must say why: '%s'", r.res.fallback);
  cr_assert_eq(r.res.cross_rows, r.res.committed + r.res.failed + r.res.abandoned,
               "every row must run on the first unit: %llu of %llu", (unsigned long long)r.res.cross_rows,
               (unsigned long long)r.res.transactions);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* A partitioned state: each unit holds its range of the words alone (the
 * CPU units run on it in place), transfers kept within the ranges all run
 * on their units, and the run is the serial replay's. */
Test(multi, partitioned_state_runs_each_range_on_its_unit) {
  const uint32_t units[] = {2, 4};
  for (unsigned i = 0; i < 2; i++) {
    multi_case r;
    open_bank_state(&r, units[i], 100000, 1000000, 1);
    generate_transfers(&r, 300000, 7, 4);
    test_run_verified(r.engine, r.batch, &r.res, "partitioned multi run");
    cr_assert_eq(r.res.units, units[i]);
    cr_assert_eq(r.res.state_partitioned, 1);
    cr_assert_eq(r.res.committed, 300000);
    cr_assert_eq(r.res.cross_rows, 0, "%u units: %llu rows ran on the host", units[i],
                 (unsigned long long)r.res.cross_rows);
    cr_assert_eq(r.res.away_rows, 0);
    test_expect_invariant(r.wl, r.engine, r.batch);
    test_close(r.engine, r.batch);
  }
}

/* A partitioned state's withdrawals before the deposits that fund them
 * postpone on their units and commit in later rounds: nothing is
 * abandoned. */
Test(multi, partitioned_state_funds_postponed_withdrawals_across_rounds) {
  multi_case r;
  open_bank_state(&r, 3, 1000, 0, 1);
  const uint64_t n = 200000;
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "withdraw", (i * 7919) % 1000, 3, 2);
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "deposit", (i * 104729) % 1000, 3, 2);
  test_run_verified(r.engine, r.batch, &r.res, "partitioned multi run");
  cr_assert_gt(r.res.postponements, 0, "withdrawals before their deposits must postpone");
  cr_assert_eq(r.res.abandoned, 0, "%llu abandoned", (unsigned long long)r.res.abandoned);
  cr_assert_eq(r.res.committed, n);
  cr_assert_eq(r.res.cross_rows, 0, "one-account rows always lie in one range");
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* kv names a row's set by its first word, and its body reads the whole
 * set and the state's header (words 0 and 1): with three sets on two units
 * the middle set straddles their ranges. A partitioned unit holds no word
 * past its range, so the rows that read past it (on the straddling set,
 * and every row of the second unit, for the header) are sent to the host
 * instead of reading past its memory, while the first set's rows stay on
 * their unit: the run gives nothing up and is the serial replay's. */
Test(multi, partitioned_unit_sends_rows_that_leave_its_range_to_the_host) {
  multi_case r;
  run_kv_straddling(&r, 1);
  cr_assert(strstr(r.res.fallback, "outside the range") == NULL, "no unit strays: '%s'", r.res.fallback);
  cr_assert_gt(r.res.away_rows, 0, "rows on the straddling set must be sent away");
  cr_assert_geq(r.res.cross_rows, r.res.away_rows);
  cr_assert_lt(r.res.cross_rows, r.res.transactions, "rows on the other sets stay on their units: %llu of %llu",
               (unsigned long long)r.res.cross_rows, (unsigned long long)r.res.transactions);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* A state with fewer locks than units cannot give every unit a range: the
 * run says so, every unit holds a replica, and the run is verified. */
Test(multi, partitioned_state_smaller_than_the_units_runs_on_replicas) {
  multi_case r;
  open_bank_state(&r, 4, 3, 1000000, 1);
  for (uint64_t i = 0; i < 1000; i++) test_append2(r.batch, "deposit", i % 3, 1, 2);
  test_run_verified(r.engine, r.batch, &r.res, "partitioned multi run of 3 accounts");
  cr_assert_eq(r.res.state_partitioned, 0);
  cr_assert(strstr(r.res.fallback, "fewer than the 4 units") != NULL, "fallback: '%s'", r.res.fallback);
  cr_assert_eq(r.res.committed, 1000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* A stream cuts its own units: backend multi is refused with a message
 * naming it; so is a run asking for more units than the engine takes. */
Test(multi, streams_and_too_many_units_are_refused) {
  multi_case r;
  open_bank(&r, 2, 100, 10);
  prstm_stream *s = NULL;
  cr_assert_eq(prstm_stream_open(r.engine, &s), PRSTM_EINVAL);
  cr_assert_null(s);
  cr_assert(strstr(prstm_engine_error(r.engine), "multi") != NULL, "%s", prstm_engine_error(r.engine));
  test_close(r.engine, r.batch);

  open_bank(&r, 65, 100, 10);
  test_append2(r.batch, "deposit", 1, 1, 2);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), PRSTM_EINVAL);
  cr_assert(strstr(prstm_engine_error(r.engine), "64") != NULL, "%s", prstm_engine_error(r.engine));
  test_close(r.engine, r.batch);
}

/* Where GPUs are usable they are the units, every one by default: no
 * fallback, the run's device names them, partitioned transfers are all
 * routed and the merged replicas (exchanged through NCCL) are the serial
 * replay's state. */
Test(multi_gpu, every_gpu_is_a_unit) {
  multi_case r;
  open_bank(&r, 0, 1000000, 1000000);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate_transfers(&r, 4000000, 11, 8);
  test_run_verified(r.engine, r.batch, &r.res, "multi run");
  cr_assert_eq(r.res.fallback[0], 0, "usable GPUs must be the units: %s", r.res.fallback);
  cr_assert_geq(r.res.units, 1);
  cr_assert(strstr(r.res.device, "SMs") != NULL, "the device names the GPUs: %s", r.res.device);
  cr_assert_eq(r.res.cross_rows, 0, "%llu rows not routed", (unsigned long long)r.res.cross_rows);
  cr_assert_eq(r.res.committed, 4000000);
  cr_assert_gt(r.res.gpu_bytes, 0);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}

/* A partitioned state on every GPU: each GPU's memory holds its range of
 * the words alone, so the run takes less GPU memory than replicas do by
 * the words the other units hold; transfers within ranges stay on their
 * GPUs, those across ranges run on the host, and both runs are the serial
 * replay's. */
Test(multi_gpu, partitioned_state_holds_each_range_on_its_gpu) {
  uint64_t bytes[2] = {0, 0};
  uint32_t units = 0;
  for (int partitioned = 0; partitioned < 2; partitioned++) {
    multi_case r;
    open_bank_state(&r, 0, 4000000, 1000000, partitioned);
    test_need_backend(r.wl, PRSTM_BACKEND_GPU);
    generate_transfers(&r, 2000000, 17, 8);
    const prstm_word across[3] = {1, 3999999, 5};
    cr_assert_eq(prstm_batch_append_named(r.batch, "transfer", across, 3), 0, "%s", prstm_batch_error(r.batch));
    test_run_verified(r.engine, r.batch, &r.res, partitioned ? "partitioned multi run" : "multi run");
    cr_assert_eq(r.res.fallback[0], 0, "usable GPUs must be the units: %s", r.res.fallback);
    cr_assert_eq(r.res.committed, 2000001);
    bytes[partitioned] = r.res.gpu_bytes;
    units = r.res.units;
    if (units > 1) cr_assert_eq(r.res.cross_rows, 1, "the one transfer across ranges runs apart");
    test_expect_invariant(r.wl, r.engine, r.batch);
    test_close(r.engine, r.batch);
  }
  /* The replicas hold every word on every GPU; the partitioned units hold
   * them once in all (4M words: 32 MB a replica). */
  if (units > 1)
    cr_assert_lt(bytes[1] + (uint64_t)(units - 1) * 8 * 4000000 * 9 / 10, bytes[0] + 1,
                 "%u GPUs: partitioned %llu bytes, replicated %llu", units, (unsigned long long)bytes[1],
                 (unsigned long long)bytes[0]);
}

/* More units than the host has GPUs: the units are CPU threads, the run says
 * why in fallback, and it is verified like any other (a run sized for a
 * larger host still runs on a smaller one). */
Test(multi_gpu, more_units_than_gpus_run_on_cpu_threads) {
  multi_case r;
  open_bank(&r, 16, 100000, 1000000);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate_transfers(&r, 200000, 13, 16);
  test_run_verified(r.engine, r.batch, &r.res, "multi run");
  cr_assert(strstr(r.res.fallback, "16 units were asked for") != NULL, "fallback: '%s'", r.res.fallback);
  cr_assert(strstr(r.res.fallback, "CPU threads") != NULL, "fallback: '%s'", r.res.fallback);
  cr_assert_eq(r.res.units, 16);
  cr_assert_eq(r.res.cross_rows, 0, "%llu rows not routed", (unsigned long long)r.res.cross_rows);
  cr_assert_eq(r.res.committed, 200000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  test_close(r.engine, r.batch);
}
