/* test_deltas.c: the delta path: hot batches of declared steps commit as sums in batch order, on the CPU and the GPU, verified; the proof refuses what it cannot take, and a wrong declaration is caught. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "prstm.h"
#include "test_backend.h"

/* A bank engine on backend with threads, verification on, deltas as given. */
static prstm_engine *open_bank(const prstm_workload *wl, prstm_backend backend, uint32_t threads,
                               prstm_deltas_mode deltas, uint64_t accounts, uint64_t balance) {
  prstm_options opt;
  test_options(&opt, backend, threads, 1);
  opt.deltas = deltas;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, wl, &opt), 0);
  prstm_state_spec s = {.accounts = accounts, .initial_balance = balance};
  cr_assert_eq(prstm_engine_init_state(e, &s), 0, "%s", prstm_engine_error(e));
  return e;
}

/* open_bank with the path on, where backend is usable, and an empty batch. */
static prstm_engine *open_bank_on(prstm_backend backend, uint32_t threads, uint64_t accounts, uint64_t balance,
                                  prstm_batch **b) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, backend);
  prstm_engine *e = open_bank(wl, backend, threads, PRSTM_DELTAS_ON, accounts, balance);
  *b = NULL;
  cr_assert_eq(prstm_batch_create(b, wl), 0);
  return e;
}

/* n transfers (and every tenth a deposit or withdrawal) among `accounts`. */
static prstm_batch *hot_batch(const prstm_workload *wl, uint64_t n, uint64_t accounts, uint64_t seed) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t from = (x >> 33) % accounts, to = (x >> 13) % accounts, amount = 1 + (x >> 50) % 10;
    prstm_word args[3] = {from, to, amount}, one[2] = {to, amount};
    if (i % 10 == 3)
      cr_assert_eq(prstm_batch_append_named(b, "deposit", one, 2), 0);
    else if (i % 10 == 7)
      cr_assert_eq(prstm_batch_append_named(b, "withdraw", one, 2), 0);
    else
      cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  return b;
}

/* Runs and checks the certificate: the serial replay in the commit order
 * gives the same outcomes, read hashes and final state. */
static prstm_results run_verified(prstm_engine *e, prstm_batch *b) {
  prstm_results res;
  cr_assert_eq(prstm_engine_run(e, b, &res), 0, "%s", prstm_engine_error(e));
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(e, b, &rep), 0, "%s", prstm_engine_error(e));
  cr_assert(rep.ok, "verify: %s", rep.message);
  return res;
}

/* Runs b (every row committing) on backend with the path on, verified, and
 * checks that it took the path with no abort; then through the STM, which
 * must end in the same state: with every row committed, the state is the
 * sums whatever the order. Destroys b. */
static void commits_as_sums_like_the_stm(const prstm_workload *wl, prstm_backend backend, prstm_batch *b,
                                         uint64_t accounts) {
  const uint64_t n = prstm_batch_size(b);
  prstm_engine *on = open_bank(wl, backend, 0, PRSTM_DELTAS_ON, accounts, 1000000);
  prstm_results r = run_verified(on, b);
  cr_assert_eq(r.path, PRSTM_PATH_DELTAS, "the batch did not take the delta path");
  cr_assert_eq(r.committed, n);
  cr_assert_eq(r.aborts, 0);
  prstm_engine *off = open_bank(wl, PRSTM_BACKEND_CPU, 4, PRSTM_DELTAS_OFF, accounts, 1000000);
  prstm_results s = run_verified(off, b);
  cr_assert_eq(s.path, PRSTM_PATH_STM);
  cr_assert_eq(s.committed, n);
  const prstm_word *a = prstm_engine_state(on, NULL), *c = prstm_engine_state(off, NULL);
  for (uint64_t i = 0; i < accounts; i++) cr_assert_eq(a[i], c[i], "account %llu differs", (unsigned long long)i);
  prstm_engine_destroy(on);
  prstm_engine_destroy(off);
  prstm_batch_destroy(b);
}

static void hot_batch_commits_as_sums(prstm_backend backend) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, backend);
  commits_as_sums_like_the_stm(wl, backend, hot_batch(wl, 50000, 16, 11), 16);
}

Test(deltas, hot_batch_commits_as_sums_in_batch_order_on_the_cpu) { hot_batch_commits_as_sums(PRSTM_BACKEND_CPU); }
Test(deltas_gpu, hot_batch_commits_as_sums_in_batch_order_on_the_gpu) { hot_batch_commits_as_sums(PRSTM_BACKEND_GPU); }

/* n rows among `accounts`: transfers from lists of 1 to 15 sources (every
 * seventh names its first source twice, every fifth has its target among
 * its sources), with two-account transfers and deposits between them, so
 * rows have from 1 to 16 steps. */
static prstm_batch *list_batch(const prstm_workload *wl, uint64_t n, uint64_t accounts, uint64_t seed) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t to = (x >> 33) % accounts, amount = 1 + (x >> 50) % 10, count = 1 + (x >> 20) % 15;
    prstm_word args[3 + 15] = {to, amount, count};
    for (uint64_t k = 0; k < count; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      args[3 + k] = (x >> 33) % accounts;
    }
    if (i % 7 == 0 && count > 1) args[4] = args[3];
    if (i % 5 == 0) args[3 + count - 1] = to;
    if (i % 9 == 4) {
      prstm_word one[2] = {to, amount};
      cr_assert_eq(prstm_batch_append_named(b, "deposit", one, 2), 0);
    } else if (i % 9 == 8) {
      prstm_word two[3] = {args[3], to, amount};
      cr_assert_eq(prstm_batch_append_named(b, "transfer", two, 3), 0);
    } else {
      cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", args, (unsigned)(3 + count)), 0);
    }
  }
  return b;
}

/* A list step stands for one step per source, and the target's step moves
 * the amount times the sources: the path commits the batch in batch order,
 * the replay of the real bodies agrees (read hashes included), and the
 * state is the STM's. */
static void transfers_from_lists_commit_as_sums(prstm_backend backend) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, backend);
  commits_as_sums_like_the_stm(wl, backend, list_batch(wl, 20000, 16, 31), 16);
}

Test(deltas, transfers_from_lists_commit_as_sums_on_the_cpu) { transfers_from_lists_commit_as_sums(PRSTM_BACKEND_CPU); }
Test(deltas_gpu, transfers_from_lists_commit_as_sums_on_the_gpu) {
  transfers_from_lists_commit_as_sums(PRSTM_BACKEND_GPU);
}

/* A source named twice pays twice: with balances of 20 and an amount of 15,
 * the second step of the list runs the account dry, so the proof refuses
 * and the STM postpones the row, then abandons it (nothing can fund it). */
static void list_source_named_twice_pays_twice(prstm_backend backend) {
  prstm_batch *b;
  prstm_engine *e = open_bank_on(backend, 1, 4, 20, &b);
  prstm_word ok[5] = {3, 15, 2, 0, 1}, dry[5] = {3, 15, 2, 2, 2};
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", ok, 5), 0);
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", dry, 5), 0);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_eq(r.committed, 1);
  cr_assert_eq(r.abandoned, 1);
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[0], 5);
  cr_assert_eq(w[2], 20);
  cr_assert_eq(w[3], 50);
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

Test(deltas, list_source_named_twice_pays_twice_on_the_cpu) { list_source_named_twice_pays_twice(PRSTM_BACKEND_CPU); }
Test(deltas_gpu, list_source_named_twice_pays_twice_on_the_gpu) {
  list_source_named_twice_pays_twice(PRSTM_BACKEND_GPU);
}

/* The proof bounds every step's amount so that no running sum can
 * overflow; the target's step is the amount times the sources, so a
 * per-source amount under the bound can still put the target's over it.
 * Such a row runs through the STM, which commits it. */
Test(deltas, list_total_over_the_bound_runs_through_the_stm) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 1, PRSTM_DELTAS_ON, 16, 1ull << 56);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  /* One row of 16 steps: the bound is 2^62 / 16 = 2^58; 15 * 2^55 is over it. */
  prstm_word args[3 + 15] = {0, 1ull << 55, 15};
  for (unsigned k = 0; k < 15; k++) args[3 + k] = 1 + k;
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", args, 18), 0);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_eq(r.committed, 1);
  cr_assert_eq(prstm_engine_state(e, NULL)[0], (1ull << 56) + 15 * (1ull << 55));
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* A transfer from more sources than the run's sets hold fails for capacity
 * through the STM and in the serial replay; the path cannot decide that, so
 * a batch with such a row runs through the STM (and is verified), where one
 * row of exactly as many steps as the sets hold takes the path. */
static void list_longer_than_the_sets_runs_through_the_stm(prstm_backend backend) {
  const prstm_workload *wl = prstm_workload_find("bank");
  const unsigned cap = wl->variants[wl->nvariants - 1].set_capacity;
  for (int over = 0; over < 2; over++) {
    prstm_batch *b;
    prstm_engine *e = open_bank_on(backend, 1, 1000, 1000, &b);
    /* cap - 1 sources and the target are cap steps; one source more overflows. */
    const unsigned sources = cap - 1 + (unsigned)over;
    prstm_word args[3 + 200] = {999, 1, sources};
    cr_assert_leq(sources, 200);
    for (unsigned k = 0; k < sources; k++) args[3 + k] = k;
    cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", args, 3 + sources), 0);
    prstm_word transfer[3] = {0, 1, 5};
    cr_assert_eq(prstm_batch_append_named(b, "transfer", transfer, 3), 0);
    prstm_results r = run_verified(e, b);
    cr_assert_eq(r.path, over ? PRSTM_PATH_STM : PRSTM_PATH_DELTAS, "%u sources: path %d", sources, (int)r.path);
    prstm_status st;
    unsigned reason = 0;
    cr_assert_eq(prstm_batch_outcome(b, 0, &st, &reason, NULL), 0);
    cr_assert_eq(st, over ? PRSTM_FAILED : PRSTM_COMMITTED, "%u sources", sources);
    if (over) cr_assert_eq(reason, PRSTM_REASON_CAPACITY);
    cr_assert_eq(r.committed, over ? 1 : 2);
    prstm_engine_destroy(e);
    prstm_batch_destroy(b);
  }
}
Test(deltas, list_longer_than_the_sets_runs_through_the_stm_on_the_cpu) {
  list_longer_than_the_sets_runs_through_the_stm(PRSTM_BACKEND_CPU);
}
Test(deltas_gpu, list_longer_than_the_sets_runs_through_the_stm_on_the_gpu) {
  list_longer_than_the_sets_runs_through_the_stm(PRSTM_BACKEND_GPU);
}

/* 600,000 rows, every fourth a balance read and the rest transfers, on
 * 100,000 accounts with half the rows on a hot tenth of them: 1.2M step
 * slots over a state past the cache, so the CPU walks the words of its
 * buckets on every thread. */
static prstm_batch *parallel_batch(const prstm_workload *wl, uint64_t seed) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  uint64_t x = seed;
  for (int i = 0; i < 600000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t span = (x >> 60) < 8 ? 10000 : 100000; /* half the rows on the first 10,000 */
    prstm_word args[3] = {(x >> 33) % span, (x >> 13) % span, 1 + (x >> 50) % 10}, a = (x >> 23) % span;
    if (i % 4 == 0)
      cr_assert_eq(prstm_batch_append_named(b, "balance", &a, 1), 0);
    else
      cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  return b;
}

/* The walk on four threads gives what the walk on one gives: the same
 * state, and row for row the same read hashes and balances read, each
 * verified against the serial replay. */
Test(deltas, parallel_walk_matches_the_one_thread_walk) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e[2];
  prstm_batch *b[2];
  prstm_results r[2];
  for (int k = 0; k < 2; k++) {
    e[k] = open_bank(wl, PRSTM_BACKEND_CPU, k ? 4 : 1, PRSTM_DELTAS_ON, 100000, 1000000);
    b[k] = parallel_batch(wl, 41);
    r[k] = run_verified(e[k], b[k]);
    cr_assert_eq(r[k].path, PRSTM_PATH_DELTAS);
    cr_assert_eq(r[k].committed, 600000);
  }
  cr_assert_eq(r[0].threads, 1);
  cr_assert_eq(r[1].threads, 4, "the walk ran on %u threads", r[1].threads);
  cr_assert_eq(memcmp(prstm_engine_state(e[0], NULL), prstm_engine_state(e[1], NULL), 100000 * sizeof(prstm_word)), 0);
  for (uint64_t i = 0; i < 600000; i++) {
    cr_assert_eq(b[0]->read_hash[i], b[1]->read_hash[i], "row %llu's read hash", (unsigned long long)i);
    cr_assert_eq(b[0]->result[i], b[1]->result[i], "row %llu's result", (unsigned long long)i);
  }
  for (int k = 0; k < 2; k++) {
    prstm_engine_destroy(e[k]);
    prstm_batch_destroy(b[k]);
  }
}

/* Balances of 30 run dry in batch order: some buckets have applied steps
 * when another refuses, and every one is given back, so the STM runs the
 * batch on the state as it was; the replay from that state agrees. */
Test(deltas, parallel_walk_refused_gives_every_step_back) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 4, PRSTM_DELTAS_ON, 100000, 30);
  prstm_batch *b = parallel_batch(wl, 43);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_gt(r.committed, 0);
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* Balances of 20 cannot fund the batch in batch order (and its last row can
 * never be funded): the proof refuses,
 * and the STM runs the batch on the untouched state, exactly as with the
 * path off (one thread each, so both runs are the same serial walk). */
static void refused_proof_leaves_the_batch_to_the_stm(prstm_backend backend, uint64_t n, uint64_t accounts) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, backend);
  prstm_batch *b = hot_batch(wl, n, accounts, 12);
  /* A last withdrawal no balance can fund: the proof fails at the very end,
   * after every other step was taken. */
  prstm_word last[2] = {accounts / 2, 1000000};
  cr_assert_eq(prstm_batch_append_named(b, "withdraw", last, 2), 0);
  prstm_engine *on = open_bank(wl, backend, 1, PRSTM_DELTAS_ON, accounts, 20);
  prstm_results r = run_verified(on, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_gt(r.abandoned, 0, "the batch was meant to leave withdrawals unfunded");
  prstm_engine *off = open_bank(wl, backend, 1, PRSTM_DELTAS_OFF, accounts, 20);
  prstm_results s = run_verified(off, b);
  cr_assert_eq(r.committed, s.committed);
  cr_assert_eq(r.abandoned, s.abandoned);
  const prstm_word *a = prstm_engine_state(on, NULL), *c = prstm_engine_state(off, NULL);
  for (uint64_t i = 0; i < accounts; i++) cr_assert_eq(a[i], c[i], "account %llu differs", (unsigned long long)i);
  prstm_engine_destroy(on);
  prstm_engine_destroy(off);
  prstm_batch_destroy(b);
}

/* 16 accounts: the CPU walks a copy of the state; 50,000 accounts and 2,000
 * rows: it walks in place and plays its undo log back. */
Test(deltas, refused_proof_leaves_the_batch_to_the_stm_on_the_cpu) {
  refused_proof_leaves_the_batch_to_the_stm(PRSTM_BACKEND_CPU, 20000, 16);
}
Test(deltas, refused_proof_in_place_is_undone_on_the_cpu) {
  refused_proof_leaves_the_batch_to_the_stm(PRSTM_BACKEND_CPU, 2000, 50000);
}
Test(deltas_gpu, refused_proof_leaves_the_batch_to_the_stm_on_the_gpu) {
  refused_proof_leaves_the_batch_to_the_stm(PRSTM_BACKEND_GPU, 20000, 16);
}

/* A withdrawal before the deposit that funds it: batch order fails its
 * guard, though another order commits both. The proof is about batch order,
 * so it refuses, and the STM postpones the withdrawal until the deposit. */
Test(deltas, withdrawal_before_its_deposit_is_left_to_the_stm) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_ON, 2, 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  prstm_word w[2] = {0, 5}, d[2] = {0, 5};
  cr_assert_eq(prstm_batch_append_named(b, "withdraw", w, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_eq(r.committed, 2);
  cr_assert_eq(prstm_engine_state(e, NULL)[0], 0);
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* The bank's total (a snapshot query) declares no steps: a batch holding
 * one runs through the STM even with the path on. */
Test(deltas, batch_with_an_opaque_type_runs_through_the_stm) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_ON, 16, 1000);
  prstm_batch *b = hot_batch(wl, 1000, 16, 13);
  cr_assert_eq(prstm_batch_append_named(b, "total", NULL, 0), 0);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_eq(r.committed, 1001);
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* A balance read declares one read and its result (PRSTM_DELTA_READ,
 * PRSTM_DELTA_RESULT_SUM): among hot transfers it takes the path and
 * returns the balance as the batch order left it: the first read the
 * initial balance, the last the final one, every one as the replay. */
static void balance_reads_return_the_balance_in_batch_order(prstm_backend backend) {
  prstm_batch *b;
  prstm_engine *e = open_bank_on(backend, 0, 16, 1000000, &b);
  prstm_word three = 3;
  cr_assert_eq(prstm_batch_append_named(b, "balance", &three, 1), 0);
  uint64_t x = 31;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    prstm_word args[3] = {(x >> 33) % 16, (x >> 13) % 16, 1 + (x >> 50) % 10}, a = (x >> 40) % 16;
    if (i % 4 == 0)
      cr_assert_eq(prstm_batch_append_named(b, "balance", &a, 1), 0);
    else
      cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  cr_assert_eq(prstm_batch_append_named(b, "balance", &three, 1), 0);
  prstm_results r = run_verified(e, b);
  cr_assert_eq(r.path, PRSTM_PATH_DELTAS);
  cr_assert_eq(r.committed, 20002);
  prstm_word first = 0, last = 0;
  cr_assert_eq(prstm_batch_outcome(b, 0, NULL, NULL, &first), 0);
  cr_assert_eq(prstm_batch_outcome(b, 20001, NULL, NULL, &last), 0);
  cr_assert_eq(first, 1000000);
  cr_assert_eq(last, prstm_engine_state(e, NULL)[3]);
  cr_assert_neq(last, 1000000, "account 3 moved");
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}
Test(deltas, balance_reads_return_the_balance_in_batch_order_on_the_cpu) {
  balance_reads_return_the_balance_in_batch_order(PRSTM_BACKEND_CPU);
}
Test(deltas_gpu, balance_reads_return_the_balance_in_batch_order_on_the_gpu) {
  balance_reads_return_the_balance_in_batch_order(PRSTM_BACKEND_GPU);
}

/* AUTO on the CPU takes the path for hot words, and for any state small
 * enough for its walk to run in cache; it leaves a batch spread over a
 * larger state to the STM's threads. */
Test(deltas, auto_takes_the_path_for_hot_words_or_a_cached_state) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *hot = open_bank(wl, PRSTM_BACKEND_CPU, 16, PRSTM_DELTAS_AUTO, 16, 1000000);
  prstm_batch *b = hot_batch(wl, 20000, 16, 14);
  prstm_results r = run_verified(hot, b);
  cr_assert_eq(r.path, PRSTM_PATH_DELTAS, "estimate %g", r.hot_estimate);
  cr_assert_geq(r.hot_estimate, 1.0);
  prstm_engine *cached = open_bank(wl, PRSTM_BACKEND_CPU, 16, PRSTM_DELTAS_AUTO, 1000, 1000000);
  prstm_batch *mild = hot_batch(wl, 20000, 1000, 17);
  prstm_results m = run_verified(cached, mild);
  cr_assert_eq(m.path, PRSTM_PATH_DELTAS, "estimate %g", m.hot_estimate);
  cr_assert_lt(m.hot_estimate, 1.0);
  prstm_engine_destroy(cached);
  prstm_batch_destroy(mild);
  const uint64_t large = 4000000;
  prstm_batch *spread = hot_batch(wl, 20000, large, 15);
  prstm_engine *cold = open_bank(wl, PRSTM_BACKEND_CPU, 16, PRSTM_DELTAS_AUTO, large, 1000000);
  prstm_results s = run_verified(cold, spread);
  cr_assert_eq(s.path, PRSTM_PATH_STM, "estimate %g", s.hot_estimate);
  cr_assert_lt(s.hot_estimate, 1.0);
  prstm_engine_destroy(hot);
  prstm_engine_destroy(cold);
  prstm_batch_destroy(b);
  prstm_batch_destroy(spread);
}

/* A workload whose deposit declares the wrong sign: the delta path applies
 * the declaration, and the certificate, which replays the real bodies, must
 * refuse the run. */
Test(deltas, wrong_declaration_is_caught_by_verify) {
  static prstm_type_steps wrong[PRSTM_MAX_TYPES];
  prstm_workload wl = *prstm_workload_find("bank");
  memcpy(wrong, wl.steps, wl.ntypes * sizeof *wrong);
  int deposit = prstm_type_find(&wl, "deposit");
  cr_assert_geq(deposit, 0);
  wrong[deposit].step[0].sign = -1;
  wl.steps = wrong;
  prstm_engine *e = open_bank(&wl, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_ON, 16, 1000000);
  prstm_batch *b = hot_batch(&wl, 1000, 16, 16);
  prstm_results res;
  cr_assert_eq(prstm_engine_run(e, b, &res), 0, "%s", prstm_engine_error(e));
  cr_assert_eq(res.path, PRSTM_PATH_DELTAS);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(e, b, &rep), 0, "%s", prstm_engine_error(e));
  cr_assert(!rep.ok, "a wrong declaration passed verification");
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* Through the STM on a GPU, the default thread count keeps only as many
 * transactions in flight as the batch's words allow: a few warps on 16
 * accounts, the full default on millions. */
Test(deltas_gpu, hot_stm_run_on_the_gpu_keeps_fewer_transactions_in_flight) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, PRSTM_BACKEND_GPU);
  prstm_engine *hot = open_bank(wl, PRSTM_BACKEND_GPU, 0, PRSTM_DELTAS_OFF, 16, 1000000);
  prstm_batch *b = hot_batch(wl, 20000, 16, 18);
  prstm_results r = run_verified(hot, b);
  cr_assert_eq(r.path, PRSTM_PATH_STM);
  cr_assert_leq(r.threads, 64, "%u threads in flight on 16 accounts", r.threads);
  const uint64_t large = 4000000;
  prstm_engine *cold = open_bank(wl, PRSTM_BACKEND_GPU, 0, PRSTM_DELTAS_OFF, large, 1000000);
  prstm_batch *spread = hot_batch(wl, 20000, large, 19);
  prstm_results s = run_verified(cold, spread);
  cr_assert_geq(s.threads, 10000, "%u threads in flight on %llu accounts", s.threads, (unsigned long long)large);
  prstm_engine_destroy(hot);
  prstm_engine_destroy(cold);
  prstm_batch_destroy(b);
  prstm_batch_destroy(spread);
}

/* The sample of b's words, which must tell how hot they are. */
static engine_contention known_sample(const prstm_engine *e, const prstm_batch *b) {
  engine_contention c;
  engine_contention_sample(e, b, &c);
  cr_assert(c.known);
  return c;
}

/* The sample reads an address list's every address: transfers from the
 * same three accounts to a fourth name four words a row, all hot. */
Test(contention, address_lists_count_every_address) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_OFF, 1000, 1000000);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  for (int i = 0; i < 100; i++) {
    prstm_word args[6] = {7, 1, 3, 100, 200, 300};
    cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", args, 6), 0);
  }
  const engine_contention c = known_sample(e, b);
  cr_assert_eq(c.rows, 100);
  cr_assert_eq(c.words, 400);
  cr_assert_eq(c.hottest_count, 100);
  /* Four words, each a quarter of the sample: two draws agree a quarter of
   * the time, less the draw itself. */
  cr_assert_float_eq(c.q, 4.0 * 100 * 99 / (400.0 * 399), 1e-12);
  cr_assert_eq(engine_contention_inflight(&c, 65536), 32, "in flight: %u", engine_contention_inflight(&c, 65536));
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* The sample groups equal words whatever bytes tell them apart: ten hot
 * accounts that differ only in their third byte, each the source of a
 * tenth of the rows, and destinations that are all distinct. */
Test(contention, equal_words_are_counted_together_whatever_bytes_differ) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_engine *e = open_bank(wl, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_OFF, 1u << 20, 1000000);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  for (uint64_t i = 0; i < 1000; i++) {
    prstm_word args[3] = {7 + (i % 10) * 65536, 300000 + 3 * i, 1};
    cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  const engine_contention c = known_sample(e, b);
  cr_assert_eq(c.words, 2000);
  cr_assert_eq(c.hottest_count, 100);
  cr_assert_float_eq(c.q, 10.0 * 100 * 99 / (2000.0 * 1999), 1e-12);
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* The sample's rows of a large batch are distinct, in order, and spread to
 * its last stretch; a batch no larger than the sample is taken whole. */
Test(contention, sample_rows_are_distinct_and_span_the_batch) {
  const uint64_t sizes[] = {100, 16384, 16385, 100000, 10000019};
  for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const uint64_t n = sizes[s],
                   rows = n < PRSTM_POLICY_CONTENTION_SAMPLE_ROWS ? n : PRSTM_POLICY_CONTENTION_SAMPLE_ROWS;
    uint64_t last = 0;
    for (uint64_t i = 0; i < rows; i++) {
      const uint64_t r = engine_contention_sample_row(n, rows, i);
      cr_assert_lt(r, n, "n %llu: sample row %llu is row %llu", (unsigned long long)n, (unsigned long long)i,
                   (unsigned long long)r);
      if (i)
        cr_assert_gt(r, last, "n %llu: sample rows %llu and %llu out of order", (unsigned long long)n,
                     (unsigned long long)i - 1, (unsigned long long)i);
      last = r;
    }
    cr_assert_eq(engine_contention_sample_row(n, rows, 0), 0);
    cr_assert_geq(last + n / 64 + PRSTM_POLICY_CONTENTION_SAMPLE_RUN, n, "n %llu: the sample ends at row %llu",
                  (unsigned long long)n, (unsigned long long)last);
  }
}

/* A row_words address marked PRSTM_ROW_WORD_AT_COMMIT counts for the
 * sample's pairs and hottest word (backend auto), but not for the threads
 * in flight; the same address unmarked lowers them. */
static unsigned all_on_word_five(const prstm_engine *engine, const prstm_batch *batch, uint64_t row, uint64_t *out,
                                 unsigned cap) {
  (void)engine;
  (void)batch;
  (void)cap;
  out[0] = row % 2 ? 5 | PRSTM_ROW_WORD_AT_COMMIT : 5;
  return 1;
}
static unsigned all_on_word_five_at_commit(const prstm_engine *engine, const prstm_batch *batch, uint64_t row,
                                           uint64_t *out, unsigned cap) {
  (void)engine;
  (void)batch;
  (void)row;
  (void)cap;
  out[0] = 5 | PRSTM_ROW_WORD_AT_COMMIT;
  return 1;
}
Test(contention, words_met_at_commit_keep_no_thread_from_running) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_workload wl = *bank;
  wl.row_words = all_on_word_five;
  prstm_engine *e = open_bank(bank, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_OFF, 1000, 1000000);
  const prstm_workload *saved = e->wl;
  e->wl = &wl;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  for (int i = 0; i < 100; i++) {
    prstm_word args[3] = {1, 2, 10};
    cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  engine_contention c;
  engine_contention_sample(e, b, &c);
  cr_assert(c.known);
  cr_assert_eq(c.words, 100);
  cr_assert_eq(c.hottest_count, 50, "the marked and the unmarked word are two words");
  cr_assert_eq(c.abort_words, 50);
  cr_assert_float_eq(c.abort_q, 1.0, 1e-12);
  /* Half the rows on one word before commit: 4 / (0.5 * 0.5 * 1) + 1
   * transactions, rounded up to a warp. */
  cr_assert_eq(engine_contention_inflight(&c, 65536), 32, "in flight: %u", engine_contention_inflight(&c, 65536));
  uint64_t w[1];
  cr_assert_eq(engine_row_words(e, b, 1, w, 1), 1);
  cr_assert_eq(w[0], 5, "the routers get the address without its mark");
  /* Every row marked: nothing aborts, every thread runs. */
  wl.row_words = all_on_word_five_at_commit;
  engine_contention_sample(e, b, &c);
  cr_assert_eq(c.hottest_count, 100);
  cr_assert_eq(c.abort_words, 0);
  cr_assert_eq(engine_contention_inflight(&c, 65536), 65536);
  e->wl = saved;
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* Every row's first argument, marked met at commit in every third row, and
 * its second argument: a sample of hot and cold words, marked and not. */
static unsigned first_marked_every_third(const prstm_engine *engine, const prstm_batch *batch, uint64_t row,
                                         uint64_t *out, unsigned cap) {
  (void)engine;
  if (cap < 2) return 0;
  out[0] = prstm_batch_arg(batch, row, 0) | (row % 3 == 0 ? PRSTM_ROW_WORD_AT_COMMIT : 0);
  out[1] = prstm_batch_arg(batch, row, 1);
  return 2;
}

static int word_order(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sample's words are grouped and counted on every core (by buckets of
 * equal words): its figures must be those of one plain sort and count of
 * the same words, for a sample of many parts with hot words, marked and
 * unmarked. A word dropped, counted twice or split between two groups
 * changes them. */
Test(contention, a_sample_counted_on_every_core_matches_a_plain_count) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_workload wl = *bank;
  wl.row_words = first_marked_every_third;
  prstm_engine *e = open_bank(bank, PRSTM_BACKEND_CPU, 2, PRSTM_DELTAS_OFF, 1u << 20, 1000000);
  const prstm_workload *saved = e->wl;
  e->wl = &wl;
  /* Transfers between random accounts, every fourth from one of eight hot ones. */
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  uint64_t x = 29;
  for (uint64_t i = 0; i < 200000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    prstm_word args[3] = {i % 4 == 0 ? 1000 + (i / 4) % 8 : (x >> 33) % (1u << 20), (x >> 13) % (1u << 20), 1};
    cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
  }
  engine_contention c;
  engine_contention_sample(e, b, &c);
  cr_assert(c.known);
  const uint64_t n = prstm_batch_size(b), rows = c.rows;
  cr_assert_eq(rows, PRSTM_POLICY_CONTENTION_SAMPLE_ROWS);
  uint64_t *words = malloc((size_t)rows * 2 * sizeof *words), m = 0;
  cr_assert_not_null(words);
  for (uint64_t i = 0; i < rows; i++)
    m += first_marked_every_third(e, b, engine_contention_sample_row(n, rows, i), words + m, 2);
  qsort(words, (size_t)m, sizeof *words, word_order);
  uint64_t pairs = 0, abort_pairs = 0, abort_words = 0, hottest = 0, hottest_abort = 0;
  for (uint64_t i = 0; i < m;) {
    uint64_t j = i;
    while (j < m && words[j] == words[i]) j++;
    pairs += (j - i) * (j - i - 1);
    if (!(words[i] & PRSTM_ROW_WORD_AT_COMMIT)) {
      abort_pairs += (j - i) * (j - i - 1);
      abort_words += j - i;
      if (j - i > hottest_abort) hottest_abort = j - i;
    }
    if (j - i > hottest) hottest = j - i;
    i = j;
  }
  cr_assert_eq(c.words, m);
  cr_assert_gt(hottest, 100, "the sample has hot words: %llu", (unsigned long long)hottest);
  cr_assert_eq(c.hottest_count, hottest);
  cr_assert_eq(c.hottest_abort_count, hottest_abort);
  cr_assert_eq(c.abort_words, abort_words);
  cr_assert_float_eq(c.q, (double)pairs / ((double)m * (double)(m - 1)), 1e-15);
  cr_assert_float_eq(c.abort_q, (double)abort_pairs / ((double)abort_words * (double)(abort_words - 1)), 1e-15);
  free(words);
  e->wl = saved;
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
}

/* Backend auto with a GPU: a hot batch the delta path takes stays on the
 * GPU (16-account transfers on 10,000 accounts among them), as does a batch
 * spread thin; a hot batch of opaque rows (transfers among 16 accounts with
 * totals), or of declared rows with the path off, goes to the CPU,
 * with the reason. No GPU is needed to ask. */
Test(contention, auto_sends_hot_batches_the_path_cannot_take_to_the_cpu) {
  const prstm_workload *wl = prstm_workload_find("bank");
  char why[256] = "";
  prstm_engine *hot = open_bank(wl, PRSTM_BACKEND_AUTO, 0, PRSTM_DELTAS_AUTO, 16, 1000000);
  prstm_batch *b = hot_batch(wl, 20000, 16, 20);
  cr_assert_not(engine_auto_prefers_cpu(hot, b, why, sizeof why), "the delta path's batch went to the CPU: %s", why);
  prstm_engine *off = open_bank(wl, PRSTM_BACKEND_AUTO, 0, PRSTM_DELTAS_OFF, 16, 1000000);
  cr_assert(engine_auto_prefers_cpu(off, b, why, sizeof why));
  cr_assert(strstr(why, "hot") != NULL, "reason: %s", why);
  const uint64_t large = 4000000;
  prstm_engine *cold = open_bank(wl, PRSTM_BACKEND_AUTO, 0, PRSTM_DELTAS_OFF, large, 1000000);
  prstm_batch *spread = hot_batch(wl, 20000, large, 21);
  cr_assert_not(engine_auto_prefers_cpu(cold, spread, why, sizeof why), "a cold batch went to the CPU: %s", why);
  prstm_engine *wide_e = open_bank(wl, PRSTM_BACKEND_AUTO, 0, PRSTM_DELTAS_AUTO, 10000, 1000000);
  prstm_batch *wide = NULL;
  cr_assert_eq(prstm_batch_create(&wide, wl), 0);
  uint64_t x = 22;
  for (int i = 0; i < 5000; i++) {
    prstm_word args[3 + 15];
    args[0] = ((x = x * 6364136223846793005ull + 1) >> 33) % 10000;
    args[1] = 1;
    args[2] = 15;
    for (int k = 0; k < 15; k++) args[3 + k] = ((x = x * 6364136223846793005ull + 1) >> 33) % 10000;
    cr_assert_eq(prstm_batch_append_named(wide, "transfer_multi", args, 18), 0);
  }
  cr_assert_not(engine_auto_prefers_cpu(wide_e, wide, why, sizeof why), "wide transfers went to the CPU: %s", why);
  prstm_engine *wide_off = open_bank(wl, PRSTM_BACKEND_AUTO, 0, PRSTM_DELTAS_OFF, 10000, 1000000);
  cr_assert(engine_auto_prefers_cpu(wide_off, wide, why, sizeof why), "wide transfers off the path stayed on the GPU");
  prstm_batch *opaque = hot_batch(wl, 20000, 16, 23);
  for (int k = 0; k < 2000; k++) cr_assert_eq(prstm_batch_append_named(opaque, "total", NULL, 0), 0);
  cr_assert(engine_auto_prefers_cpu(hot, opaque, why, sizeof why), "hot opaque rows stayed on the GPU");
  prstm_engine_destroy(wide_off);
  prstm_batch_destroy(opaque);
  prstm_engine_destroy(hot);
  prstm_engine_destroy(off);
  prstm_engine_destroy(cold);
  prstm_engine_destroy(wide_e);
  prstm_batch_destroy(b);
  prstm_batch_destroy(spread);
  prstm_batch_destroy(wide);
}
