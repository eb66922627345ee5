/* test_hetero.c: behaviour of co-execution (backend hetero): rows routed to two units on replicas of the state and kept, rounds of a fixed period, a first part stopped when the second has ended, parts kept in either order, a part given up on a conflict (by the policy) and run again, postponed rows funded across units, other workloads verified, streams refusing it, and the GPU as the second unit where there is one. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "stm/stm_policy.h"
#include "test_backend.h"

/* Each unit gets this many CPU threads where both run on the CPU; where a
 * GPU is usable it is the second unit, with its own thread count. */
#define UNIT_THREADS 8

typedef struct hetero_run {
  const prstm_workload *wl;
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
} hetero_run;

/* Opens a co-executed run of `workload`: deltas in `deltas` mode, and with
 * `rounds` the units share every batch (engine.hetero_rounds), else the
 * scheduler may give it to one. The caller sets the state. */
static void open_hetero_policy(hetero_run *r, const char *workload, prstm_deltas_mode deltas, int rounds,
                               uint32_t threads, prstm_hetero_policy policy) {
  memset(r, 0, sizeof *r);
  r->wl = prstm_workload_find(workload);
  cr_assert_not_null(r->wl);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_HETERO, threads, 1);
  opt.deltas = deltas;
  opt.hetero_rounds = rounds;
  opt.hetero_policy = policy;
  /* A round does not stop the first unit's part unless a test asks for
   * it: the tests below count on both units deciding rows, and a part
   * stopped early would leave the batch to the other unit. */
  cr_assert_eq(setenv("PRSTM_HETERO_STOP_RATIO", "1e30", 0), 0);
  test_open(r->wl, &opt, &r->engine, &r->batch);
}

static void open_hetero_on(hetero_run *r, const char *workload, prstm_deltas_mode deltas, int rounds,
                           uint32_t threads) {
  open_hetero_policy(r, workload, deltas, rounds, threads, PRSTM_HETERO_GPU_INVALIDATION);
}

static void open_hetero(hetero_run *r, const char *workload, prstm_deltas_mode deltas, int rounds) {
  open_hetero_on(r, workload, deltas, rounds, UNIT_THREADS);
}

/* A bank of `accounts` holding `balance` each, co-executed with the delta
 * path in `deltas` mode; with `rounds`, the units share every batch
 * (engine.hetero_rounds), else the scheduler may give it to one. */
static void open_bank_with(hetero_run *r, uint64_t accounts, uint64_t balance, prstm_deltas_mode deltas, int rounds) {
  open_hetero(r, "bank", deltas, rounds);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  s.accounts = accounts;
  s.initial_balance = balance;
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

/* The rounds' own behaviour: the units share every batch. */
static void open_bank_deltas(hetero_run *r, uint64_t accounts, uint64_t balance, prstm_deltas_mode deltas) {
  open_bank_with(r, accounts, balance, deltas, 1);
}

/* The same with the delta path off, as test_options has it: the rounds
 * run every batch. */
static void open_bank(hetero_run *r, uint64_t accounts, uint64_t balance) {
  open_bank_deltas(r, accounts, balance, PRSTM_DELTAS_OFF);
}

static void generate(hetero_run *r, uint64_t n, const char *type, uint64_t seed) {
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.transactions = n;
  g.seed = seed;
  if (type) {
    g.nmix = 1;
    g.mix_names[0] = type;
    g.mix_weights[0] = 1;
  }
  char err[256] = "";
  cr_assert_eq(r->wl->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
}

static void run_close(hetero_run *r) { test_close(r->engine, r->batch); }

/* Transfers between many accounts name their words in their arguments, so
 * every round is routed: the second unit takes rows of its own range of
 * accounts, nothing it ran is discarded, and the run over both replicas is
 * the serial replay's. */
Test(hetero, routed_transfers_keep_both_units_parts) {
  hetero_run r;
  open_bank(&r, 100000, 1000000);
  generate(&r, 300000, "transfer", 7);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.backend, PRSTM_BACKEND_HETERO);
  cr_assert_eq(r.res.committed, 300000);
  cr_assert_geq(r.res.rounds, 2, "a batch longer than the first round takes several");
  cr_assert_gt(r.res.second_unit_rows, 0, "the second unit must keep rows of its own");
  cr_assert_lt(r.res.second_unit_rows, 300000, "the CPU unit must keep rows too");
  cr_assert_eq(r.res.discarded_rows, 0, "routed parts share no lock");
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* A fixed synchronisation period (options.hetero_period) sets every
 * round's rows: the same routed batch takes at least as many rounds as the
 * period divides it into, where the adaptive period, doubling from
 * 65,536 rows, takes three for its new rows. Both units run on CPU threads (no GPU is made visible), so that
 * neither is 20 times the other's speed and the scheduler never settles on
 * one, which would lengthen the rounds. */
Test(hetero, fixed_period_sets_every_rounds_rows) {
  cr_assert_eq(setenv("CUDA_VISIBLE_DEVICES", "", 1), 0);
  const uint64_t n = 300000, period = 25000;
  uint64_t rounds[2];
  for (int fixed = 0; fixed < 2; fixed++) {
    hetero_run r;
    memset(&r, 0, sizeof r);
    r.wl = prstm_workload_find("bank");
    cr_assert_not_null(r.wl);
    prstm_options opt;
    test_options(&opt, PRSTM_BACKEND_HETERO, UNIT_THREADS, 1);
    opt.hetero_rounds = 1;
    opt.hetero_period = fixed ? period : 0;
    cr_assert_eq(setenv("PRSTM_HETERO_STOP_RATIO", "1e30", 0), 0);
    /* Two CPU units' speeds move with the host's load (other tests run
     * beside this one): no unit takes the later rounds alone for its speed,
     * which would lengthen them whatever the period. */
    cr_assert_eq(setenv("PRSTM_HETERO_SOLO_RATIO", "1e30", 1), 0);
    test_open(r.wl, &opt, &r.engine, &r.batch);
    prstm_state_spec s;
    prstm_state_spec_init(r.wl, &s);
    s.accounts = 100000;
    s.initial_balance = 1000000;
    cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0, "%s", prstm_engine_error(r.engine));
    generate(&r, n, "transfer", 7);
    test_run_verified(r.engine, r.batch, &r.res, "hetero run");
    cr_assert_eq(r.res.committed, n);
    cr_assert_eq(r.res.discarded_rows, 0, "routed parts share no lock");
    rounds[fixed] = r.res.rounds;
    test_expect_invariant(r.wl, r.engine, r.batch);
    run_close(&r);
    unsetenv("PRSTM_HETERO_SOLO_RATIO");
  }
  cr_assert_geq(rounds[1], n / period, "rounds of %llu rows: %llu rounds", (unsigned long long)period,
                (unsigned long long)rounds[1]);
  cr_assert_lt(rounds[0], n / period, "the adaptive period lengthens its rounds: %llu rounds",
               (unsigned long long)rounds[0]);
}

/* A routed batch of transfers on two CPU units (no GPU is made visible),
 * in rounds, verified. */
static void run_routed_transfers_on_cpu_units(hetero_run *r, uint64_t n, uint64_t seed) {
  cr_assert_eq(setenv("CUDA_VISIBLE_DEVICES", "", 1), 0);
  open_bank(r, 100000, 1000000);
  generate(r, n, "transfer", seed);
  test_run_verified(r->engine, r->batch, &r->res, "hetero run");
  cr_assert_eq(r->res.committed, n);
  cr_assert_eq(r->res.discarded_rows, 0, "routed parts share no lock");
  test_expect_invariant(r->wl, r->engine, r->batch);
}

/* Once the second unit's part of a round has ended, the first unit's is
 * stopped at PRSTM_HETERO_STOP_RATIO times the second's time; the rows it
 * had not decided run in a later round, once, and the run is the serial
 * replay's. A tiny ratio stops the first unit wherever it is still running
 * when the second ends, which two units of the same speed leave to chance
 * in each round: over five batches it must happen. */
Test(hetero, a_stopped_first_part_leaves_its_rows_for_a_later_round) {
  cr_assert_eq(setenv("PRSTM_HETERO_STOP_RATIO", "1e-6", 1), 0);
  uint64_t stopped = 0;
  for (uint64_t seed = 1; seed <= 5 && !stopped; seed++) {
    hetero_run r;
    run_routed_transfers_on_cpu_units(&r, 300000, seed);
    stopped += r.res.stopped_rounds;
    run_close(&r);
  }
  unsetenv("PRSTM_HETERO_STOP_RATIO");
  cr_assert_gt(stopped, 0, "the first unit must be stopped in some round");
}

/* Each of four bad values of the environment variable `name` fails the
 * run with PRSTM_EINVAL and a message that names the variable. */
static void bad_ratio_is_refused_by_name(const char *name, const char *const bad[4]) {
  cr_assert_eq(setenv("CUDA_VISIBLE_DEVICES", "", 1), 0);
  for (unsigned i = 0; i < 4; i++) {
    hetero_run r;
    open_bank(&r, 1000, 1000000);
    generate(&r, 1000, "transfer", 3);
    cr_assert_eq(setenv(name, bad[i], 1), 0);
    const int rc = prstm_engine_run(r.engine, r.batch, &r.res);
    unsetenv(name);
    cr_assert_eq(rc, PRSTM_EINVAL, "%s=%s: %d", name, bad[i], rc);
    cr_assert(strstr(prstm_engine_error(r.engine), name) != NULL, "%s", prstm_engine_error(r.engine));
    run_close(&r);
  }
}

/* A stop ratio that is not a positive number fails the run by name. */
Test(hetero, a_bad_stop_ratio_is_refused_by_name) {
  const char *const bad[4] = {"0", "-1", "soon", "2x"};
  bad_ratio_is_refused_by_name("PRSTM_HETERO_STOP_RATIO", bad);
}

/* A solo ratio that is not a number of at least 1 fails the run by name. */
Test(hetero, a_bad_solo_ratio_is_refused_by_name) {
  const char *const bad[4] = {"0.5", "-1", "fast", "20x"};
  bad_ratio_is_refused_by_name("PRSTM_HETERO_SOLO_RATIO", bad);
}

/* Runs n rows over the two accounts, verified: a deposit every eleventh
 * row, totals in between. */
static void run_deposits_beside_totals(hetero_run *r, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    if (i % 11 == 0)
      test_append2(r->batch, "deposit", i % 2, 1 + i % 5, 2);
    else
      test_append2(r->batch, "total", 0, 0, 0);
  }
  test_run_verified(r->engine, r->batch, &r->res, "hetero run");
}

/* Rows whose words the host cannot see (totals read every account; two
 * accounts, as many as the narrow rows' sets hold), ten rows in eleven, are
 * split blindly (fewer than one row in eight names its words); each unit's
 * totals then read accounts the other unit's deposits wrote, so neither
 * order holds and, under the default policy, the second unit's parts are
 * discarded and run again, and the
 * outcome is still the serial replay's: every total the sum at its place
 * in the commit order. After a few lost parts the scheduler settles on one
 * unit, so the losses stop. */
Test(hetero, conflicting_second_part_is_discarded_and_run_again) {
  hetero_run r;
  open_bank(&r, 2, 1000);
  run_deposits_beside_totals(&r, 120000);
  cr_assert_eq(r.res.committed, 120000, "committed %llu failed %llu abandoned %llu",
               (unsigned long long)r.res.committed, (unsigned long long)r.res.failed,
               (unsigned long long)r.res.abandoned);
  cr_assert_gt(r.res.discarded_rows, 0, "totals beside deposits on other replicas must conflict");
  cr_assert_leq(r.res.discarded_rows, PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS,
                "after %u lost rounds one unit runs alone, so no more parts are lost: %llu discarded",
                PRSTM_POLICY_HETERO_SOLO_LOST_ROUNDS, (unsigned long long)r.res.discarded_rows);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* A bank of two accounts under `policy`, the units sharing every batch in
 * rounds, the delta path off. */
static void open_bank_policy(hetero_run *r, prstm_hetero_policy policy) {
  open_hetero_policy(r, "bank", PRSTM_DELTAS_OFF, 1, UNIT_THREADS, policy);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  s.accounts = 2;
  s.initial_balance = 1000;
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

/* The first round's rows: its first half, the second unit's part, and its
 * second half, the first unit's. The batches below name their words (the
 * deposits' and withdrawals' accounts) in fewer than one row in eight, so
 * the rounds are split blindly, in that way. */
#define FIRST_ROUND_HALF (PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS / 2)

/* The second unit's part only reads (totals) while the first unit's
 * deposits write the accounts those totals read: the order CPU then GPU
 * does not hold, but GPU then CPU does, so both parts are kept in that
 * order, nothing is given up, and the replay agrees with every total. */
Test(hetero, parts_kept_in_the_other_order_when_only_that_one_holds) {
  hetero_run r;
  open_bank_policy(&r, PRSTM_HETERO_GPU_INVALIDATION);
  const uint64_t n = 4 * FIRST_ROUND_HALF;
  for (uint64_t i = 0; i < n; i++) {
    if (i >= FIRST_ROUND_HALF && i < 2 * FIRST_ROUND_HALF && i % 11 == 0)
      test_append2(r.batch, "deposit", i % 2, 1 + i % 5, 2);
    else
      test_append2(r.batch, "total", 0, 0, 0);
  }
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.committed, n);
  cr_assert_geq(r.res.reordered_rounds, 1, "the first round's totals read what its deposits wrote");
  cr_assert_eq(r.res.discarded_rows, 0, "one order held in every round: %llu rows given up",
               (unsigned long long)r.res.discarded_rows);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Both parts of the first round deposit into the accounts that the other
 * part's totals read, so neither order holds; the first unit's part also
 * holds withdrawals nothing funds, which stay pending, so it decides fewer
 * rows than the second unit's. Rows after the first round only read. */
static void conflicting_parts_with_a_slow_first(hetero_run *r, prstm_hetero_policy policy) {
  open_bank_policy(r, policy);
  const uint64_t n = 4 * FIRST_ROUND_HALF;
  for (uint64_t i = 0; i < n; i++) {
    if (i < 2 * FIRST_ROUND_HALF && i % 13 == 0)
      test_append2(r->batch, "deposit", i % 2, 1 + i % 5, 2);
    else if (i >= FIRST_ROUND_HALF && i < 2 * FIRST_ROUND_HALF && i % 26 == 5)
      test_append2(r->batch, "withdraw", i % 2, 1000000000, 2);
    else
      test_append2(r->batch, "total", 0, 0, 0);
  }
  test_run_verified(r->engine, r->batch, &r->res, "hetero run");
  cr_assert_gt(r->res.discarded_rows, 0, "the first round's parts conflict in both orders");
  cr_assert_eq(r->res.committed + r->res.abandoned, n, "committed %llu abandoned %llu failed %llu",
               (unsigned long long)r->res.committed, (unsigned long long)r->res.abandoned,
               (unsigned long long)r->res.failed);
  test_expect_invariant(r->wl, r->engine, r->batch);
}

/* GPU invalidation gives up the second unit's part, whatever each
 * decided; favour-fastest gives up the part that decided fewer rows, in
 * the first round the first unit's, and keeps the second unit's. */
Test(hetero, policy_chooses_the_part_given_up) {
  hetero_run r;
  conflicting_parts_with_a_slow_first(&r, PRSTM_HETERO_GPU_INVALIDATION);
  cr_assert_eq(r.res.first_unit_discarded_rows, 0, "GPU invalidation keeps the CPU's part");
  run_close(&r);
  conflicting_parts_with_a_slow_first(&r, PRSTM_HETERO_FAVOUR_FASTEST);
  cr_assert_geq(r.res.first_unit_discarded_rows, FIRST_ROUND_HALF,
                "favour-fastest gives up the part that decided fewer rows: %llu of the first unit's rows",
                (unsigned long long)r.res.first_unit_discarded_rows);
  cr_assert_lt(r.res.discarded_rows - r.res.first_unit_discarded_rows, FIRST_ROUND_HALF,
               "the second unit's first part decided more rows and is kept: %llu of its rows given up",
               (unsigned long long)(r.res.discarded_rows - r.res.first_unit_discarded_rows));
  run_close(&r);
}

/* Each unit's part of the first round deposits into its own account
 * only (the second unit's into account 1, the first unit's into account
 * 0), and totals in both read both accounts: no lock is written by both,
 * but each part read what the other wrote, so neither order holds. The
 * first unit's part also holds withdrawals nothing funds, so it decides
 * fewer rows and favour-fastest gives it up: its deposits must leave no
 * trace in either replica, since its rows run again, and the replay and
 * the invariant (the money in the accounts) agree. */
Test(hetero, given_up_first_part_leaves_no_write_behind) {
  hetero_run r;
  open_bank_policy(&r, PRSTM_HETERO_FAVOUR_FASTEST);
  const uint64_t n = 4 * FIRST_ROUND_HALF;
  for (uint64_t i = 0; i < n; i++) {
    const int first_half = i < FIRST_ROUND_HALF, second_half = i >= FIRST_ROUND_HALF && i < 2 * FIRST_ROUND_HALF;
    if ((first_half || second_half) && i % 13 == 0)
      test_append2(r.batch, "deposit", first_half ? 1 : 0, 1 + i % 5, 2);
    else if (second_half && i % 26 == 5)
      test_append2(r.batch, "withdraw", 0, 1000000000, 2);
    else
      test_append2(r.batch, "total", 0, 0, 0);
  }
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_geq(r.res.first_unit_discarded_rows, FIRST_ROUND_HALF, "the first unit's part is given up: %llu rows",
                (unsigned long long)r.res.first_unit_discarded_rows);
  cr_assert_eq(r.res.reordered_rounds, 0, "each part read what the other wrote: no order holds");
  cr_assert_eq(r.res.committed + r.res.abandoned, n);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Under the balanced policy the units give up their parts in turn, the
 * second unit first: its half of the first round, then the first unit's
 * part of the second round; after those two lost rounds the scheduler
 * settles on one unit. Both units run on CPU threads here (no GPU is made
 * visible), so that neither is 20 times the other's speed after the first
 * round, which would settle on one unit before the second. */
Test(hetero, balanced_policy_gives_up_each_units_part_in_turn) {
  cr_assert_eq(setenv("CUDA_VISIBLE_DEVICES", "", 1), 0);
  hetero_run r;
  open_bank_policy(&r, PRSTM_HETERO_BALANCED);
  run_deposits_beside_totals(&r, 120000);
  cr_assert_eq(r.res.committed, 120000);
  cr_assert_gt(r.res.first_unit_discarded_rows, 0, "the first unit must give up a part in its turn");
  cr_assert_eq(r.res.discarded_rows - r.res.first_unit_discarded_rows, FIRST_ROUND_HALF,
               "the second unit gives up its half of the first round, and no more: %llu rows",
               (unsigned long long)(r.res.discarded_rows - r.res.first_unit_discarded_rows));
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* An unknown policy is refused when the engine is created. */
Test(hetero, unknown_policy_is_refused) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_HETERO;
  opt.hetero_policy = (prstm_hetero_policy)7;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, wl, &opt), PRSTM_EINVAL);
  cr_assert(strstr(prstm_engine_error(e), "hetero_policy") != NULL, "%s", prstm_engine_error(e));
  prstm_engine_destroy(e);
}

/* Withdrawals come before the deposits that fund them, in rows that land
 * in either unit: a withdrawal postponed in one unit is carried into a
 * later round and commits once its deposit's unit has reconciled; only
 * what the final state cannot fund is abandoned. A deposit of 1 to every
 * account comes first, so the delta path's proof has applied sums when
 * the first withdrawal (of 3) refuses the batch: the rounds must start
 * from the state as it was. */
Test(hetero, postponed_withdrawals_are_funded_across_units) {
  hetero_run r;
  open_bank_deltas(&r, 1000, 0, PRSTM_DELTAS_AUTO);
  const uint64_t n = 200000;
  for (uint64_t i = 0; i < 1000; i++) test_append2(r.batch, "deposit", i, 1, 2);
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "withdraw", (i * 7919) % 1000, 3, 2);
  for (uint64_t i = 0; i < n / 2; i++) test_append2(r.batch, "deposit", (i * 104729) % 1000, 3, 2);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.path, PRSTM_PATH_STM, "the proof refuses the batch: the rounds run it");
  cr_assert_gt(r.res.postponements, 0, "withdrawals before their deposits must postpone");
  cr_assert_eq(r.res.abandoned, 0, "every withdrawal is funded by the deposits of its account: %llu abandoned",
               (unsigned long long)r.res.abandoned);
  cr_assert_eq(r.res.committed, n + 1000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Transfers among 16 accounts: every row a chain of updates of a few hot
 * words, which the delta path applies as sums in batch order. The
 * scheduler's first choice runs the whole batch that way on one unit (the
 * GPU where there is one), in one round with nothing discarded, and the
 * replay agrees. With the path off the same batch runs in rounds through
 * both units' STM. */
static void hot_transfers_on(hetero_run *r, prstm_deltas_mode deltas) {
  open_bank_deltas(r, 16, 1000000, deltas);
  generate(r, 100000, "transfer", 5);
  test_run_verified(r->engine, r->batch, &r->res, "hetero run");
  cr_assert_eq(r->res.backend, PRSTM_BACKEND_HETERO);
  cr_assert_eq(r->res.committed, 100000);
  test_expect_invariant(r->wl, r->engine, r->batch);
}
Test(hetero, hot_transfers_run_as_sums_on_one_unit) {
  hetero_run r;
  hot_transfers_on(&r, PRSTM_DELTAS_AUTO);
  cr_assert_eq(r.res.path, PRSTM_PATH_DELTAS, "a hot batch of declared steps takes the delta path");
  cr_assert_eq(r.res.rounds, 1);
  cr_assert_eq(r.res.discarded_rows, 0);
  cr_assert_eq(r.res.aborts, 0);
  run_close(&r);
  hot_transfers_on(&r, PRSTM_DELTAS_OFF);
  cr_assert_eq(r.res.path, PRSTM_PATH_STM, "deltas off: the rounds run");
  cr_assert_geq(r.res.rounds, 1);
  run_close(&r);
}

/* A hot batch whose table does not fit the GPU's memory at once (capped
 * here by PRSTM_GPU_MEMORY_LIMIT) cannot take the delta path, which needs
 * the whole table there; the rounds, whose parts fit, run it instead, and
 * the run is verified like any other. */
Test(hetero_gpu, hot_batch_too_large_for_the_gpu_runs_in_rounds) {
  hetero_run r;
  open_bank_deltas(&r, 16, 1000000, PRSTM_DELTAS_AUTO);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate(&r, 1000000, "transfer", 13);
  cr_assert_eq(setenv("PRSTM_GPU_MEMORY_LIMIT", "24000000", 1), 0);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  unsetenv("PRSTM_GPU_MEMORY_LIMIT");
  cr_assert_eq(r.res.path, PRSTM_PATH_STM, "a 1M-row table does not fit in 24 MB");
  cr_assert_eq(r.res.committed, 1000000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* A workload whose words the bodies compute (a hash table's sets), with
 * gets, sets and deletes on Zipfian keys: verified, invariant kept. */
/* A small kv table of 4,096 sets of 4 ways, 8,000 keys preloaded, and
 * 200,000 rows of `type` (NULL: the default mix), co-executed and verified. */
static void kv_run(hetero_run *r, const char *type) {
  open_hetero(r, "kv", PRSTM_DELTAS_OFF, 0);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  test_set_knob(r->wl, s.params, "sets", 4096);
  test_set_knob(r->wl, s.params, "ways", 4);
  test_set_knob(r->wl, s.params, "preload", 8000);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
  generate(r, 200000, type, 3);
  test_run_verified(r->engine, r->batch, &r->res, "hetero kv run");
  test_expect_invariant(r->wl, r->engine, r->batch);
}

Test(hetero, kv_mix_is_verified) {
  hetero_run r;
  kv_run(&r, NULL);
  run_close(&r);
}

/* A stream's units are cut by the stream itself: backend hetero is refused
 * with a message that names the backends a stream takes. */
Test(hetero, streams_refuse_backend_hetero) {
  hetero_run r;
  open_bank(&r, 100, 10);
  prstm_stream *s = NULL;
  cr_assert_eq(prstm_stream_open(r.engine, &s), PRSTM_EINVAL);
  cr_assert_null(s);
  cr_assert(strstr(prstm_engine_error(r.engine), "stream") != NULL, "%s", prstm_engine_error(r.engine));
  run_close(&r);
}

/* Where a GPU is usable it is the second unit: no fallback, a device named
 * for both units, and, far faster than the CPU at transfers, most rows
 * kept on it. */
Test(hetero_gpu, the_gpu_is_the_second_unit) {
  hetero_run r;
  open_bank(&r, 1000000, 1000000);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate(&r, 2000000, "transfer", 11);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.fallback[0], 0, "a usable GPU must be the second unit: %s", r.res.fallback);
  cr_assert(strstr(r.res.device, "SMs") != NULL, "the device names the GPU: %s", r.res.device);
  cr_assert_gt(r.res.second_unit_rows, r.res.transactions / 2,
               "a GPU far faster than the CPU at transfers must take most rows: %llu of %llu",
               (unsigned long long)r.res.second_unit_rows, (unsigned long long)r.res.transactions);
  cr_assert_eq(r.res.discarded_rows, 0);
  cr_assert_gt(r.res.gpu_bytes, 0);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* ---- the scheduler's choice of one unit ---- */

/* `n` transfers among `accounts` accounts, with the scheduler free to give
 * the batch to one unit: it must give it to `alone`, for a reason that
 * names `why`, and the run is verified. */
static void transfers_alone(uint64_t accounts, prstm_deltas_mode deltas, uint64_t n, prstm_backend alone,
                            const char *why) {
  hetero_run r;
  open_bank_with(&r, accounts, 1000000, deltas, 0);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate(&r, n, "transfer", 11);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.alone, alone, "%llu accounts: %s", (unsigned long long)accounts, r.res.alone_why);
  cr_assert(strstr(r.res.alone_why, why) != NULL, "%s", r.res.alone_why);
  cr_assert_eq(r.res.path, PRSTM_PATH_STM);
  cr_assert_eq(r.res.rounds, 1);
  cr_assert_eq(r.res.second_unit_rows, alone == PRSTM_BACKEND_GPU ? n : 0);
  cr_assert_eq(r.res.committed, n);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Transfers among a million accounts: the contention sample shows words
 * a full GPU's threads barely share, so the scheduler gives the batch
 * whole to the GPU before any round. */
Test(hetero_gpu, cold_transfers_run_on_the_gpu_alone) {
  transfers_alone(1000000, PRSTM_DELTAS_AUTO, 2000000, PRSTM_BACKEND_GPU, "cold");
}

/* Cold transfers whose table does not fit the GPU's memory at once (capped
 * here by PRSTM_GPU_MEMORY_LIMIT): the GPU cannot run the batch alone, so
 * the rounds, whose parts fit, run it after all, verified. */
Test(hetero_gpu, cold_batch_too_large_for_the_gpu_runs_in_rounds) {
  hetero_run r;
  open_bank_with(&r, 1000000, 1000000, PRSTM_DELTAS_AUTO, 0);
  test_need_backend(r.wl, PRSTM_BACKEND_GPU);
  generate(&r, 2000000, "transfer", 11);
  cr_assert_eq(setenv("PRSTM_GPU_MEMORY_LIMIT", "48000000", 1), 0);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  unsetenv("PRSTM_GPU_MEMORY_LIMIT");
  cr_assert_eq(r.res.alone, PRSTM_BACKEND_AUTO, "a 2M-row table does not fit in 48 MB: %s", r.res.alone_why);
  cr_assert_geq(r.res.rounds, 2);
  cr_assert_eq(r.res.committed, 2000000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Transfers among 16 accounts with the delta path off: every row meets
 * the others on a few hot words, where the CPU backend is the better one
 * (--backend auto's rule), so the CPU runs the batch alone. */
Test(hetero_gpu, hot_batch_off_the_delta_path_runs_on_the_cpu_alone) {
  transfers_alone(16, PRSTM_DELTAS_OFF, 200000, PRSTM_BACKEND_CPU, "hot");
}

/* Vacation's bodies compute their words, so the host cannot sample them:
 * both units run the batch's first rows as a probe, and the one at least
 * PRSTM_POLICY_HETERO_ALONE_RATIO times as fast runs the whole batch alone,
 * the probe's rows decided again, once. With engine.hetero_rounds the same
 * batch is shared in rounds. Both are verified. The probe's two rates move
 * with the host's load and came within the policy's 1.5 of each other in
 * about one run in four, so each test of an outcome sets the ratio
 * (PRSTM_HETERO_ALONE_RATIO) that makes it certain. vacation_open_types
 * opens the state, over `room_types` room types (0: the workload's
 * default), and a generated batch of `rows` on an engine of `threads` CPU
 * threads beside the GPU; vacation_open with the default types. */
static void vacation_open_types(hetero_run *r, int rounds, uint64_t rows, uint32_t threads, double room_types) {
  open_hetero_on(r, "vacation", PRSTM_DELTAS_OFF, rounds, threads);
  prstm_state_spec s;
  prstm_state_spec_init(r->wl, &s);
  if (room_types > 0) {
    /* About as many initial bookings as the default's 1,000 types hold,
     * spread over more types. */
    s.params[prstm_param_find(r->wl, "room_types")] = room_types;
    s.params[prstm_param_find(r->wl, "booked")] *= 1000.0 / room_types;
    s.params[prstm_param_find(r->wl, "sold_out")] *= 1000.0 / room_types;
  }
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
  generate(r, rows, NULL, 17);
}
static void vacation_open(hetero_run *r, int rounds, uint64_t rows, uint32_t threads) {
  vacation_open_types(r, rounds, rows, threads, 0);
}
static void vacation_on(hetero_run *r, int rounds) {
  vacation_open(r, rounds, 300000, UNIT_THREADS);
  test_run_verified(r->engine, r->batch, &r->res, "hetero vacation run");
  cr_assert_eq(r->res.committed + r->res.failed + r->res.abandoned, 300000);
  test_expect_invariant(r->wl, r->engine, r->batch);
}
Test(hetero_gpu, probe_gives_the_batch_to_the_faster_unit) {
  test_need_backend(prstm_workload_find("vacation"), PRSTM_BACKEND_GPU);
  hetero_run r;
  cr_assert_eq(setenv("PRSTM_HETERO_ALONE_RATIO", "1", 1), 0);
  vacation_on(&r, 0);
  unsetenv("PRSTM_HETERO_ALONE_RATIO");
  cr_assert_neq(r.res.alone, PRSTM_BACKEND_AUTO, "at a ratio of 1 the faster unit runs alone: %llu rounds",
                (unsigned long long)r.res.rounds);
  cr_assert(strstr(r.res.alone_why, "first") != NULL, "%s", r.res.alone_why);
  cr_assert_eq(r.res.rounds, 1);
  run_close(&r);
  vacation_on(&r, 1);
  cr_assert_eq(r.res.alone, PRSTM_BACKEND_AUTO, "engine.hetero_rounds shares the batch");
  cr_assert_geq(r.res.rounds, 2);
  run_close(&r);
}

/* Units within the ratio of each other share the batch in rounds after
 * the probe, verified; a ratio no unit can beat makes that certain. */
Test(hetero_gpu, probe_within_the_ratio_shares_the_batch_in_rounds) {
  test_need_backend(prstm_workload_find("vacation"), PRSTM_BACKEND_GPU);
  hetero_run r;
  cr_assert_eq(setenv("PRSTM_HETERO_ALONE_RATIO", "1e30", 1), 0);
  vacation_on(&r, 0);
  unsetenv("PRSTM_HETERO_ALONE_RATIO");
  cr_assert_eq(r.res.alone, PRSTM_BACKEND_AUTO, "%s", r.res.alone_why);
  cr_assert_geq(r.res.rounds, 2);
  run_close(&r);
}

/* One CPU thread takes several times the GPU's time over vacation's probe
 * rows: at a ratio of 1 it is stopped once the GPU has finished them
 * instead of being waited for, and the GPU runs the batch alone, verified.
 * Seen failing with the deadline never set (the reason then gives the two
 * rates), and once on a GPU just started, whose first kernels were loaded
 * and clocked up during the probe (the CPU then 1.14 times as fast): a
 * co-executed run of the same kind first leaves the GPU as a batch job
 * finds it after its first run. The race needs the GPU and a core to
 * itself, as ctest runs the program (--jobs 1): among other tests running
 * at once the CPU was up to 2.3 times as fast. Over vacation's default
 * 1,000 room types the GPU's threads contend, and the CPU's one thread
 * ended within about 1.3 times the GPU's time on an H200; over 20,000
 * types the GPU took 0.37 to 1.0 ms and the CPU 2.5 to 3.4 ms. */
enum { PROBE_ROOM_TYPES = 20000 };
Test(hetero_gpu, probe_stops_a_cpu_slower_than_the_ratio) {
  test_need_backend(prstm_workload_find("vacation"), PRSTM_BACKEND_GPU);
  hetero_run r;
  vacation_open_types(&r, 0, 20000, 1, PROBE_ROOM_TYPES);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), 0, "%s", prstm_engine_error(r.engine));
  run_close(&r);
  vacation_open_types(&r, 0, 100000, 1, PROBE_ROOM_TYPES);
  cr_assert_eq(setenv("PRSTM_HETERO_ALONE_RATIO", "1", 1), 0);
  test_run_verified(r.engine, r.batch, &r.res, "hetero vacation run");
  unsetenv("PRSTM_HETERO_ALONE_RATIO");
  cr_assert_eq(r.res.alone, PRSTM_BACKEND_GPU, "%s", r.res.alone_why);
  cr_assert(strstr(r.res.alone_why, "when it was stopped") != NULL, "%s", r.res.alone_why);
  cr_assert_eq(r.res.committed + r.res.failed + r.res.abandoned, 100000);
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* A ratio below 1, or not a number, fails the run with its name. */
Test(hetero_gpu, a_bad_probe_ratio_is_refused_by_name) {
  test_need_backend(prstm_workload_find("vacation"), PRSTM_BACKEND_GPU);
  hetero_run r;
  vacation_open(&r, 0, 20000, UNIT_THREADS);
  const char *bad[] = {"0.5", "fast", "2x"};
  for (unsigned i = 0; i < 3; i++) {
    cr_assert_eq(setenv("PRSTM_HETERO_ALONE_RATIO", bad[i], 1), 0);
    const int rc = prstm_engine_run(r.engine, r.batch, &r.res);
    unsetenv("PRSTM_HETERO_ALONE_RATIO");
    cr_assert_eq(rc, PRSTM_EINVAL, "%s: %d", bad[i], rc);
    cr_assert(strstr(prstm_engine_error(r.engine), "PRSTM_HETERO_ALONE_RATIO") != NULL, "%s",
              prstm_engine_error(r.engine));
  }
  run_close(&r);
}

/* In rounds of transfers among 10^6 accounts the GPU decides its part
 * many times faster than the CPU decides its own: the CPU's part is
 * stopped once the GPU's has ended instead of holding the round, and its
 * rows left run later, verified. The ratio is a thousandth, not the
 * default 1.25, so that a cold GPU's first part cannot outlast the CPU's. */
Test(hetero_gpu, the_cpu_part_is_stopped_when_the_gpu_part_ends) {
  test_need_backend(prstm_workload_find("bank"), PRSTM_BACKEND_GPU);
  cr_assert_eq(setenv("PRSTM_HETERO_STOP_RATIO", "1e-3", 1), 0);
  hetero_run r;
  open_bank(&r, 1000000, 1000000);
  generate(&r, 1000000, "transfer", 5);
  test_run_verified(r.engine, r.batch, &r.res, "hetero run");
  cr_assert_eq(r.res.committed, 1000000);
  cr_assert_geq(r.res.stopped_rounds, 1, "the CPU's cold part must be stopped when the GPU's ends");
  test_expect_invariant(r.wl, r.engine, r.batch);
  run_close(&r);
}

/* Gets alone (kv's read-only type) never conflict: the GPU reads them all
 * alone, and the results match the serial replay's. */
Test(hetero_gpu, reads_alone_run_on_the_gpu_alone) {
  test_need_backend(prstm_workload_find("kv"), PRSTM_BACKEND_GPU);
  hetero_run r;
  kv_run(&r, "get");
  cr_assert_eq(r.res.alone, PRSTM_BACKEND_GPU, "%s", r.res.alone_why);
  cr_assert(strstr(r.res.alone_why, "read-only") != NULL, "%s", r.res.alone_why);
  cr_assert_eq(r.res.committed, 200000);
  run_close(&r);
}
