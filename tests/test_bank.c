/* test_bank.c: the bank workload through the whole engine on the CPU backend (many more threads than cores) and, where a GPU is, on the GPU backend. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bank_body.h"
#include "prstm.h"
#include "test_backend.h"
#include "../workloads/workload_util.h"
#include "test_bank_run.h"
#include "test_workload.h"
#include "txtable.h"
#include "engine_internal.h"

/* Random transfers, deposits and withdrawals on a tiny bank: money is
 * conserved, no balance wraps below zero, every transaction ends final. */
static void money_is_conserved(prstm_backend backend, uint32_t coverage, uint64_t accounts) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, accounts, 100);
  prstm_generate_spec g;
  memset(&g, 0, sizeof g);
  g.transactions = 20000;
  g.seed = 7 + coverage + accounts;
  g.accounts_per_tx = 2;
  g.amount_min = 1;
  g.amount_max = 60;
  g.read_only = 0.05;
  g.semantic_ratio = 0.2;
  prstm_state_spec s = {.accounts = accounts, .initial_balance = 100};
  char err[256];
  cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), 0, "%s", err);
  run_exec(&r);
  check_bank_invariant(&r);
  uint64_t n = 0, total = 0;
  const prstm_word *w = prstm_engine_state(r.engine, &n);
  for (uint64_t i = 0; i < n; i++) total += w[i];
  for (uint64_t i = 0; i < n; i++) cr_assert_leq(w[i], total, "account %llu wrapped below zero", (unsigned long long)i);
  cr_assert_gt(r.res.committed, 0);
  run_close(&r);
}

/* Only deposits (tag 1) and increments of few words: a lost update shows as a
 * short final sum. */
static void no_update_is_lost(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 4, 0);
  uint64_t expect[4] = {0};
  for (uint64_t i = 0; i < 30000; i++) {
    add(&r, "deposit", i % 4, 1 + i % 3, 0);
    expect[i % 4] += 1 + i % 3;
  }
  run_exec(&r);
  cr_assert_eq(r.res.committed, 30000);
  const prstm_word *w = prstm_engine_state(r.engine, NULL);
  for (int a = 0; a < 4; a++) cr_assert_eq(w[a], expect[a], "account %d lost updates", a);
  run_close(&r);
}

/* Withdrawals placed before the deposits that fund them all commit. */
static void withdrawal_before_its_deposit_commits(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 16, 0);
  for (uint64_t i = 0; i < 2000; i++) add(&r, "withdraw", i % 16, 5, 0);
  for (uint64_t i = 0; i < 2000; i++) add(&r, "deposit", i % 16, 5, 0);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 4000);
  cr_assert_eq(r.res.abandoned, 0);
  const prstm_word *w = prstm_engine_state(r.engine, NULL);
  for (int a = 0; a < 16; a++) cr_assert_eq(w[a], 0);
  run_close(&r);
}

/* A withdrawal nothing funds is abandoned at quiescence and the run ends;
 * the transactions around it still commit. */
static void unfunded_withdrawal_is_abandoned(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 8, 0);
  add(&r, "withdraw", 0, 100, 0);
  for (uint64_t i = 0; i < 500; i++) add(&r, "deposit", 1 + i % 7, 1, 0);
  add(&r, "transfer", 2, 0, 10); /* funds 10 of the 100 */
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(r.res.abandoned, 1);
  cr_assert_eq(r.res.committed, 501);
  cr_assert_eq(prstm_engine_state(r.engine, NULL)[0], 10);
  check_bank_invariant(&r);
  run_close(&r);
}

/* A transfer to an account past the state: with its source short it
 * postpones, as it would before ever reading its target, and is abandoned;
 * with its source funded it fails for the bad address. */
static void transfer_past_the_state_postpones_while_short(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 8, 0);
  add(&r, "transfer", 0, 1000, 5);
  add(&r, "deposit", 1, 10, 0);
  add(&r, "transfer", 1, 1000, 5);
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(status_of(&r, 2, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, PRSTM_REASON_BAD_ADDRESS);
  cr_assert_eq(prstm_engine_state(r.engine, NULL)[1], 10);
  run_close(&r);
}

/* Crossed read-x-write-y / read-y-write-x pairs: a serial order lets exactly
 * one of each pair write, so x + y must be 1; both would be write skew. */
static void write_skew_never_commits(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, &test_probe_workload, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  enum { PAIRS = 2048 };
  prstm_word *zeros = calloc(2 * PAIRS, sizeof *zeros);
  run_words(&r, zeros, 2 * PAIRS);
  free(zeros);
  for (uint64_t p = 0; p < PAIRS; p++) {
    prstm_word xy[2] = {2 * p, 2 * p + 1}, yx[2] = {2 * p + 1, 2 * p};
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_SKEW, xy, 2), 0);
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_SKEW, yx, 2), 0);
  }
  run_exec(&r);
  cr_assert_eq(r.res.committed, 2 * PAIRS);
  const prstm_word *w = prstm_engine_state(r.engine, NULL);
  for (uint64_t p = 0; p < PAIRS; p++)
    cr_assert_eq(w[2 * p] + w[2 * p + 1], 1, "pair %llu: x=%llu y=%llu", (unsigned long long)p,
                 (unsigned long long)w[2 * p], (unsigned long long)w[2 * p + 1]);
  run_close(&r);
}

/* Retry mode (the papers' comparator) retries an unfunded withdrawal in place
 * retry_limit times, then abandons it. */
static void retry_mode_gives_up_after_limit(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_RETRY, 7);
  run_state(&r, 4, 0);
  add(&r, "withdraw", 3, 1, 0);
  add(&r, "deposit", 1, 5, 0);
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_RETRY_LIMIT);
  cr_assert_eq(status_of(&r, 1, NULL), PRSTM_COMMITTED);
  cr_assert_eq(r.res.postponements, 8, "one attempt and 7 retries");
  run_close(&r);
}

/* A transfer chain placed in reverse: withdraw from C funded by a transfer
 * B->C funded by a transfer A->B funded by a deposit into A. */
static void reverse_chain_commits_fully(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 12, 0);
  for (uint64_t c = 0; c < 3; c++) {
    uint64_t a = 4 * c, b = a + 1, d = a + 2;
    add(&r, "withdraw", d, 30, 0);
    add(&r, "transfer", b, d, 30);
    add(&r, "transfer", a, b, 30);
    add(&r, "deposit", a, 30, 0);
  }
  add(&r, "withdraw", 3, 1, 0); /* nothing funds account 3 */
  run_exec(&r);
  cr_assert_eq(r.res.committed, 12);
  cr_assert_eq(r.res.abandoned, 1);
  cr_assert_eq(status_of(&r, 12, NULL), PRSTM_ABANDONED);
  run_close(&r);
}

/* A transaction touching more words than the set capacity fails with the
 * capacity reason; one reading a word out of range fails as such; neither
 * corrupts the words around them. */
static void overflow_and_wild_reads_fail_cleanly(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, &test_probe_workload, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  prstm_word words[64] = {0};
  run_words(&r, words, 64);
  prstm_word list[1 + 40];
  list[0] = 40;
  for (int i = 0; i < 40; i++) list[1 + i] = (prstm_word)i;
  cr_assert_eq(prstm_batch_append(r.batch, PROBE_TOUCH, list, 41), 0);
  prstm_word wild[1] = {1u << 30};
  cr_assert_eq(prstm_batch_append(r.batch, PROBE_WILD, wild, 1), 0);
  for (int i = 0; i < 100; i++) {
    prstm_word one[1] = {(prstm_word)(i % 64)};
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_INCREMENT, one, 1), 0);
  }
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, PRSTM_REASON_CAPACITY);
  cr_assert_eq(status_of(&r, 1, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, PRSTM_REASON_BAD_ADDRESS);
  const prstm_word *w = prstm_engine_state(r.engine, NULL);
  uint64_t sum = 0;
  for (int i = 0; i < 64; i++) sum += w[i];
  cr_assert_eq(sum, 100, "only the 100 increments may have changed the words");
  run_close(&r);
}

/* Multi-account transfers, with repeated sources, conserve money. */
static void multi_transfers_conserve_money(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 16, 1000);
  int t = prstm_type_find(r.wl, "transfer_multi");
  for (uint64_t i = 0; i < 3000; i++) {
    prstm_word args[3 + 6] = {i % 16, 1 + i % 5, 6};
    for (int k = 0; k < 6; k++) args[3 + k] = (i * 7 + (uint64_t)k * 3) % 16;
    args[3 + 5] = args[3]; /* a source named twice pays twice */
    cr_assert_eq(prstm_batch_append(r.batch, (unsigned)t, args, 9), 0);
  }
  run_exec(&r);
  check_bank_invariant(&r);
  cr_assert_gt(r.res.committed, 0);
  run_close(&r);
}

/* Balances read by read-only transactions on a state nothing changes. */
static void read_only_balances_report_results(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  prstm_word words[10];
  for (int i = 0; i < 10; i++) words[i] = 100 + (prstm_word)i;
  run_words(&r, words, 10);
  for (uint64_t i = 0; i < 1000; i++) add(&r, "balance", i % 10, 0, 0);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 1000);
  for (uint64_t i = 0; i < 1000; i++) {
    prstm_word v = 0;
    prstm_status st;
    cr_assert_eq(prstm_batch_outcome(r.batch, i, &st, NULL, &v), 0);
    cr_assert_eq(v, 100 + i % 10);
  }
  run_close(&r);
}

/* Read-only sums over a few words while moves shuffle value among them: a
 * committed sum must always see the constant total. */
static void consistent_reads_see_constant_total(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, &test_probe_workload, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  prstm_word words[8];
  for (int i = 0; i < 8; i++) words[i] = 1000;
  run_words(&r, words, 8);
  for (uint64_t i = 0; i < 20000; i++) {
    if (i % 4 == 0) {
      prstm_word sum[2] = {0, 8};
      cr_assert_eq(prstm_batch_append(r.batch, PROBE_SUM, sum, 2), 0);
    } else {
      prstm_word mv[3] = {i % 8, (i * 5 + 1) % 8, 1 + i % 7};
      cr_assert_eq(prstm_batch_append(r.batch, PROBE_MOVE, mv, 3), 0);
    }
  }
  run_exec(&r);
  for (uint64_t i = 0; i < 20000; i += 4) {
    prstm_word v = 0;
    prstm_status st;
    cr_assert_eq(prstm_batch_outcome(r.batch, i, &st, NULL, &v), 0);
    cr_assert_eq(st, PRSTM_COMMITTED);
    cr_assert_eq(v, 8000, "sum %llu saw %llu, not the constant 8000", (unsigned long long)i, (unsigned long long)v);
  }
  run_close(&r);
}

/* Many increments of one word, and transactions that touch a word (or a
 * lock) several times, lose nothing; lock_coverage may exceed the state. */
static void increments_and_repeated_words_lose_nothing(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  bank_run r;
  run_open(&r, &test_probe_workload, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100);
  prstm_word words[16] = {0};
  run_words(&r, words, 16);
  for (uint64_t i = 0; i < 10000; i++) {
    prstm_word one[1] = {0};
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_INCREMENT, one, 1), 0);
    prstm_word touch[5] = {4, 3, 3, 9, 3}; /* word 3 three times, word 9 once */
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_TOUCH, touch, 5), 0);
  }
  run_exec(&r);
  cr_assert_eq(r.res.committed, 20000);
  const prstm_word *w = prstm_engine_state(r.engine, NULL);
  cr_assert_eq(w[0], 10000, "lost increments: %llu", (unsigned long long)w[0]);
  cr_assert_eq(w[3], 30000);
  cr_assert_eq(w[9], 10000);
  run_close(&r);
}

/* A run that cannot progress (a type that conflicts forever) is stopped by
 * the watchdog with a clear error instead of hanging; the rows that could
 * finish did. */
static void watchdog_stops_a_run_without_progress(prstm_backend backend) {
  need_backend(backend);
  bank_run r;
  run_open(&r, &test_probe_workload, backend, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  prstm_options *opt = &r.engine->opt; /* the test reaches into the engine to shorten the limit */
  opt->watchdog_s = 1;
  prstm_word words[8] = {0};
  run_words(&r, words, 8);
  for (int i = 0; i < 100; i++) {
    prstm_word one[1] = {(prstm_word)(i % 8)};
    cr_assert_eq(prstm_batch_append(r.batch, PROBE_INCREMENT, one, 1), 0);
  }
  prstm_word w[1] = {3};
  cr_assert_eq(prstm_batch_append(r.batch, PROBE_LIVELOCK, w, 1), 0);
  double t0 = engine_now();
  int rc = prstm_engine_run(r.engine, r.batch, &r.res);
  double took = engine_now() - t0;
  cr_assert_eq(rc, PRSTM_ESTALLED, "got %d: %s", rc, prstm_engine_error(r.engine));
  cr_assert(strstr(prstm_engine_error(r.engine), "watchdog") != NULL, "%s", prstm_engine_error(r.engine));
  cr_assert_lt(took, 30.0, "the watchdog took %.1f s", took);
  cr_assert_eq(status_of(&r, 100, NULL), PRSTM_PENDING);
  cr_assert_eq(r.res.committed, 100, "the increments must all have committed");
  run_close(&r);
}

/* Every integration test, for lock_coverage 1 and 8, on each backend. */
#define BOTH_BACKENDS(name, body)                   \
  Test(bank_cpu, name) { body(PRSTM_BACKEND_CPU); } \
  Test(bank_gpu, name) { body(PRSTM_BACKEND_GPU); }

static void t_conserved(prstm_backend b) {
  money_is_conserved(b, 1, 16);
  money_is_conserved(b, 8, 16);
  money_is_conserved(b, 1, 4);
}
static void t_lost(prstm_backend b) {
  no_update_is_lost(b, 1);
  no_update_is_lost(b, 8);
}
static void t_before(prstm_backend b) {
  withdrawal_before_its_deposit_commits(b, 1);
  withdrawal_before_its_deposit_commits(b, 8);
}
static void t_unfunded(prstm_backend b) {
  unfunded_withdrawal_is_abandoned(b, 1);
  unfunded_withdrawal_is_abandoned(b, 8);
}
static void t_past(prstm_backend b) {
  transfer_past_the_state_postpones_while_short(b, 1);
  transfer_past_the_state_postpones_while_short(b, 8);
}
static void t_skew(prstm_backend b) {
  write_skew_never_commits(b, 1);
  write_skew_never_commits(b, 8);
}
static void t_retry(prstm_backend b) {
  retry_mode_gives_up_after_limit(b, 1);
  retry_mode_gives_up_after_limit(b, 8);
}
static void t_chain(prstm_backend b) {
  reverse_chain_commits_fully(b, 1);
  reverse_chain_commits_fully(b, 8);
}
static void t_overflow(prstm_backend b) {
  overflow_and_wild_reads_fail_cleanly(b, 1);
  overflow_and_wild_reads_fail_cleanly(b, 8);
}
static void t_multi(prstm_backend b) {
  multi_transfers_conserve_money(b, 1);
  multi_transfers_conserve_money(b, 8);
}
static void t_readonly(prstm_backend b) {
  read_only_balances_report_results(b, 1);
  read_only_balances_report_results(b, 8);
}

static void t_consistent(prstm_backend b) {
  consistent_reads_see_constant_total(b, 1);
  consistent_reads_see_constant_total(b, 4);
}
static void t_increments(prstm_backend b) {
  increments_and_repeated_words_lose_nothing(b, 1);
  increments_and_repeated_words_lose_nothing(b, 8);
  increments_and_repeated_words_lose_nothing(b, 1024); /* everything under one lock */
}

BOTH_BACKENDS(watchdog_stops_a_run_without_progress, watchdog_stops_a_run_without_progress)
BOTH_BACKENDS(read_only_sums_see_a_constant_total, t_consistent)
BOTH_BACKENDS(increments_and_repeated_words_lose_nothing, t_increments)
BOTH_BACKENDS(money_is_conserved_and_never_negative, t_conserved)
BOTH_BACKENDS(no_update_is_lost, t_lost)
BOTH_BACKENDS(postponed_withdraw_commits_after_deposit, t_before)
BOTH_BACKENDS(unfunded_withdrawal_is_abandoned_and_run_ends, t_unfunded)
BOTH_BACKENDS(crossed_read_write_pairs_never_both_commit, t_skew)
BOTH_BACKENDS(a_short_transfer_past_the_state_postpones_first, t_past)
BOTH_BACKENDS(retry_mode_gives_up_after_retry_limit, t_retry)
BOTH_BACKENDS(reverse_semantic_chain_commits_fully, t_chain)
BOTH_BACKENDS(set_overflow_and_wild_address_fail_with_reason, t_overflow)
BOTH_BACKENDS(multi_account_transfers_conserve_money, t_multi)
BOTH_BACKENDS(read_only_balances_report_results, t_readonly)

/* Many small random runs: thread count, state size, lock coverage, mix,
 * semantic ratio and order all vary with the seed, and each run must end
 * with every transaction final and the bank invariant holding. */
static void randomised_runs_keep_the_invariant(prstm_backend backend, int runs) {
  need_backend(backend);
  static const uint32_t covs[] = {1, 2, 3, 8, 64};
  static const uint64_t sizes[] = {4, 8, 16, 5};
  for (int k = 0; k < runs; k++) {
    uint64_t seed = 1000 + (uint64_t)k;
    bank_run r;
    uint32_t threads = backend == PRSTM_BACKEND_GPU ? 256u << (k % 5) : 16u << (k % 4);
    run_open_threads(&r, prstm_workload_find("bank"), backend, covs[k % 5], PRSTM_SEMANTIC_POSTPONE, 100, threads);
    uint64_t accounts = sizes[(k / 5) % 4];
    run_state(&r, accounts, 20);
    prstm_generate_spec g;
    memset(&g, 0, sizeof g);
    g.transactions = 500 + 97 * (uint64_t)(k % 13);
    g.seed = seed;
    g.accounts_per_tx = 1 + (unsigned)(k % 4);
    g.amount_min = 1;
    g.amount_max = 1 + (uint64_t)(k % 30);
    g.read_only = (k % 3) == 0 ? 0.2 : -1;
    g.semantic_ratio = (double)(k % 5) / 5.0;
    g.presorted = (k % 2) == 1;
    prstm_state_spec s = {.accounts = accounts, .initial_balance = 20};
    char err[256];
    cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), 0, "%s", err);
    run_exec(&r);
    check_bank_invariant(&r);
    run_close(&r);
  }
}
static void t_random(prstm_backend b) { randomised_runs_keep_the_invariant(b, 200); }
BOTH_BACKENDS(randomised_small_batches_keep_the_invariant, t_random)

/* Thread counts that leave the last warp partly empty, and blocks of unequal
 * length: on the GPU the lanes of a warp walk their rows together and wait
 * for one another at every row, so a lane whose block is shorter, or final
 * sooner, must keep coming along until its whole warp is done. Withdrawals
 * come before the deposits that fund them, so blocks end in different
 * sweeps, and a few withdrawals are never funded, so that the run ends at
 * global quiescence. Postpone mode commits every funded row and abandons the
 * rest; retry mode ends every row with the invariant kept. */
static void partial_warps_end_every_row(prstm_backend backend) {
  need_backend(backend);
  static const uint32_t threads[] = {1, 5, 33, 100, 1000};
  const uint64_t accounts = 8, n = 3001, unfunded = 37; /* n + unfunded: a multiple of none of the counts */
  for (unsigned k = 0; k < sizeof threads / sizeof threads[0]; k++) {
    for (int retry = 0; retry < 2; retry++) {
      bank_run r;
      run_open_threads(&r, prstm_workload_find("bank"), backend, 1,
                       retry ? PRSTM_SEMANTIC_RETRY : PRSTM_SEMANTIC_POSTPONE, 100, threads[k]);
      run_state(&r, accounts, 0);
      for (uint64_t i = 0; i < n / 2; i++) add(&r, "withdraw", i % accounts, 1, 0);
      for (uint64_t i = 0; i < n / 2; i++) add(&r, "deposit", i % accounts, 1, 0);
      add(&r, "deposit", 0, 1, 0);
      /* Never funded: abandoned at global quiescence (postpone mode), which
       * every lane of a warp must reach together. */
      for (uint64_t i = 0; i < unfunded; i++) add(&r, "withdraw", i % accounts, 1000000, 0);
      run_exec(&r);
      cr_assert_eq(r.res.threads, threads[k], "ran %u threads", r.res.threads);
      cr_assert_eq(r.res.committed + r.res.abandoned + r.res.failed, n + unfunded,
                   "%u threads%s: %llu of %llu rows final", threads[k], retry ? ", retry" : "",
                   (unsigned long long)(r.res.committed + r.res.abandoned + r.res.failed),
                   (unsigned long long)(n + unfunded));
      if (!retry) {
        cr_assert_eq(r.res.committed, n, "%u threads: every funded withdrawal commits, %llu committed", threads[k],
                     (unsigned long long)r.res.committed);
        cr_assert_eq(r.res.abandoned, unfunded, "%u threads: %llu abandoned", threads[k],
                     (unsigned long long)r.res.abandoned);
      }
      check_bank_invariant(&r);
      run_close(&r);
    }
  }
}
BOTH_BACKENDS(partial_warps_end_every_row, partial_warps_end_every_row)

/* The sum of every balance (total, a snapshot type) among transfers,
 * deposits and withdrawals that change the accounts all the time: each total
 * commits, reads the state the run started from (6,400 on 64 accounts of
 * 100) however the run interleaves, and the run is verified with the totals
 * first in its commit order. Its 64 reads would overflow the pair variant's
 * sets through the STM, so a commit proves they ran as a snapshot. Also with
 * a retry-mode engine, and with the GPU's threads, which must leave the
 * totals alone. */
static void totals_read_the_state_the_run_starts_from(prstm_backend backend) {
  for (int retry = 0; retry < 2; retry++) {
    need_backend(backend);
    bank_run r;
    run_open(&r, prstm_workload_find("bank"), backend, 1, retry ? PRSTM_SEMANTIC_RETRY : PRSTM_SEMANTIC_POSTPONE, 4);
    run_state(&r, 64, 100);
    enum { ROWS = 3000, TOTALS = 25 };
    uint64_t s = 12345;
    for (unsigned i = 0; i < ROWS; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const unsigned x = (unsigned)(s >> 33);
      if (i % (ROWS / TOTALS) == 7) add(&r, "total", 0, 0, 0);
      if (x % 5 == 0)
        add(&r, "deposit", x % 64, 1 + x % 9, 0);
      else if (x % 5 == 1)
        add(&r, "withdraw", x % 64, 1 + x % 9, 0);
      else
        add(&r, "transfer", x % 64, (x >> 8) % 64, 1 + x % 30);
    }
    run_exec(&r);
    unsigned totals = 0;
    for (uint64_t i = 0; i < prstm_batch_size(r.batch); i++) {
      if (prstm_batch_type(r.batch, i) != BANK_TOTAL) continue;
      prstm_status st;
      unsigned reason = 0;
      prstm_word result = 0;
      cr_assert_eq(prstm_batch_outcome(r.batch, i, &st, &reason, &result), 0);
      cr_assert_eq(st, PRSTM_COMMITTED, "total at row %llu: status %d, reason %u", (unsigned long long)i, (int)st,
                   reason);
      cr_assert_eq(result, 6400, "total at row %llu read %llu", (unsigned long long)i, (unsigned long long)result);
      totals++;
    }
    cr_assert_eq(totals, TOTALS);
    cr_assert_eq(r.res.snapshot_rows, TOTALS, "%llu rows ran on the snapshot", (unsigned long long)r.res.snapshot_rows);
    check_bank_invariant(&r);
    run_close(&r);
  }
}
BOTH_BACKENDS(totals_read_the_state_the_run_starts_from, totals_read_the_state_the_run_starts_from)

/* In a chunked run the totals run through the STM with the others, and
 * 64 accounts overflow the pair variant's sets: they fail for capacity, as
 * the replay says too. */
Test(bank_cpu, totals_in_a_chunked_run_go_through_the_stm) {
  bank_run r;
  memset(&r, 0, sizeof r);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_CPU, TEST_CPU_THREADS, 1);
  opt.chunk_rows = 97;
  r.wl = prstm_workload_find("bank");
  test_open(r.wl, &opt, &r.engine, &r.batch);
  run_state(&r, 64, 100);
  for (unsigned i = 0; i < 300; i++) add(&r, i % 100 == 5 ? "total" : "deposit", i % 64, 1, 0);
  run_exec(&r);
  cr_assert_eq(r.res.failed, 3, "%llu failed", (unsigned long long)r.res.failed);
  cr_assert_eq(r.res.snapshot_rows, 0);
  for (uint64_t i = 5; i < 300; i += 100) {
    prstm_status st;
    unsigned reason = 0;
    cr_assert_eq(prstm_batch_outcome(r.batch, i, &st, &reason, NULL), 0);
    cr_assert_eq(st, PRSTM_FAILED);
    cr_assert_eq(reason, PRSTM_REASON_CAPACITY);
  }
  run_close(&r);
}

/* A GPU run whose copies add up to more than PRSTM_POLICY_STAGED_COPY_MIN_BYTES
 * stages them through pinned chunks both ways: the state (two full chunks
 * and a partial one), each argument column and, back, the state and the
 * commit order. The run is verified against its serial replay, so a chunk
 * copied to the wrong place, twice or not at all fails it. */
Test(bank_gpu, a_run_too_large_for_direct_copies_is_staged_exactly) {
  need_backend(PRSTM_BACKEND_GPU);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_GPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  const uint64_t accounts = 2 * (PRSTM_POLICY_STAGED_COPY_CHUNK / 8) + 12345;
  run_state(&r, accounts, 1000000);
  prstm_generate_spec g;
  memset(&g, 0, sizeof g);
  g.transactions = PRSTM_POLICY_STAGED_COPY_MIN_BYTES / 24 + 1000;
  g.seed = 11;
  g.accounts_per_tx = 2;
  g.amount_min = 1;
  g.amount_max = 10;
  prstm_state_spec s = {.accounts = accounts, .initial_balance = 1000000};
  char err[256];
  cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), 0, "%s", err);
  run_exec(&r);
  cr_assert_eq(r.res.committed + r.res.failed, g.transactions);
  check_bank_invariant(&r);
  run_close(&r);
}

/* An engine keeps its staging chunks once its runs have copied
 * PRSTM_POLICY_STAGED_COPY_MIN_BYTES in all: five runs of about 140 MB each
 * on one engine (none large enough to stage on its own), the fourth and the
 * fifth through the chunks, the state two full chunks and a partial one.
 * Every run is verified against its serial replay, so a chunk copied to
 * the wrong place, twice or not at all in a later run fails it. */
Test(bank_gpu, later_runs_of_an_engine_stage_their_copies_exactly) {
  need_backend(PRSTM_BACKEND_GPU);
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_GPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  const uint64_t accounts = 2 * (PRSTM_POLICY_STAGED_COPY_CHUNK / 8) + 12345;
  run_state(&r, accounts, 1000000);
  prstm_state_spec s = {.accounts = accounts, .initial_balance = 1000000};
  for (uint64_t k = 0; k < 5; k++) {
    prstm_generate_spec g;
    memset(&g, 0, sizeof g);
    g.transactions = 3000000;
    g.seed = 40 + k;
    g.accounts_per_tx = 2;
    g.amount_min = 1;
    g.amount_max = 10;
    char err[256];
    cr_assert_eq(prstm_batch_clear(r.batch), 0);
    cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), 0, "%s", err);
    run_exec(&r);
    cr_assert_eq(r.res.committed + r.res.failed, g.transactions, "run %llu", (unsigned long long)k);
  }
  run_close(&r);
}

/* A run whose argument columns take PRSTM_POLICY_NARROW_ARGS_MIN_BYTES or
 * more uploads them as 32-bit values when they fit, and whole when one
 * does not: here a deposit of 2^33 that only the narrowing itself meets
 * (its row is past the rows looked at first) or that the first look meets
 * (row 0). Each run goes through the STM kernel and through the delta
 * path, both of which read the arguments, and is verified against its
 * serial replay: an argument read at the wrong width, or a deposit cut to
 * 32 bits, fails it. */
static void narrow_args_run(uint32_t threads, prstm_deltas_mode deltas, int wide_at_start, int wide_at_end) {
  bank_run r;
  memset(&r, 0, sizeof r);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_GPU, threads, 1);
  opt.deltas = deltas;
  r.wl = prstm_workload_find("bank");
  test_open(r.wl, &opt, &r.engine, &r.batch);
  const uint64_t accounts = 100000;
  run_state(&r, accounts, 1000000);
  if (wide_at_start) add(&r, "deposit", 7, 1ull << 33, 0);
  prstm_generate_spec g;
  memset(&g, 0, sizeof g);
  g.transactions = PRSTM_POLICY_NARROW_ARGS_MIN_BYTES / 24 + 1000;
  g.seed = 23;
  g.accounts_per_tx = 2;
  g.amount_min = 1;
  g.amount_max = 10;
  prstm_state_spec st = {.accounts = accounts, .initial_balance = 1000000};
  char err[256];
  cr_assert_eq(r.wl->generate(&g, &st, r.batch, err, sizeof err), 0, "%s", err);
  if (wide_at_end) add(&r, "deposit", 11, 1ull << 33, 0);
  const uint64_t rows = g.transactions + (uint64_t)wide_at_start + (uint64_t)wide_at_end;
  cr_assert_eq(prstm_batch_size(r.batch), rows);
  run_exec(&r);
  cr_assert_eq(r.res.committed, rows, "%llu of %llu committed", (unsigned long long)r.res.committed,
               (unsigned long long)rows);
  cr_assert_eq(r.res.path, deltas == PRSTM_DELTAS_ON ? PRSTM_PATH_DELTAS : PRSTM_PATH_STM);
  if (wide_at_start || wide_at_end) {
    uint64_t nwords = 0;
    const prstm_word *words = prstm_engine_state(r.engine, &nwords);
    const uint64_t account = wide_at_end ? 11 : 7;
    cr_assert(words && nwords > account);
    cr_assert_geq(words[account], 1ull << 33, "the deposit of 2^33 was cut: account %llu holds %llu",
                  (unsigned long long)account, (unsigned long long)words[account]);
  }
  check_bank_invariant(&r);
  run_close(&r);
}

Test(bank_gpu, narrow_arguments_run_exactly_on_the_stm_and_the_delta_path, .timeout = 120) {
  need_backend(PRSTM_BACKEND_GPU);
  narrow_args_run(0, PRSTM_DELTAS_OFF, 0, 0);
  narrow_args_run(0, PRSTM_DELTAS_ON, 0, 0);
}

Test(bank_gpu, a_wide_argument_anywhere_uploads_the_columns_whole, .timeout = 120) {
  need_backend(PRSTM_BACKEND_GPU);
  narrow_args_run(0, PRSTM_DELTAS_OFF, 0, 1);
  narrow_args_run(0, PRSTM_DELTAS_ON, 0, 1);
  narrow_args_run(0, PRSTM_DELTAS_OFF, 1, 0);
}

/* The walk of a run's only thread reads the arguments at the width it took
 * once (prstm_tx.alone_narrow), not the table's at every read: read at the
 * wrong width, the transfers move the wrong amounts between the wrong
 * accounts, and the replay fails the run. */
Test(bank_gpu, a_run_of_one_thread_reads_its_arguments_at_their_width, .timeout = 120) {
  need_backend(PRSTM_BACKEND_GPU);
  narrow_args_run(1, PRSTM_DELTAS_OFF, 0, 0);
}

/* The invariant reads the rows on every core, in parts of at least 65,536
 * rows: the deposits and withdrawals of every part are counted. */
Test(bank_cpu, invariant_reads_every_part_of_a_large_batch) {
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 1000, 1000000);
  const uint64_t rows = 300001;
  uint64_t deposits = 0, withdrawals = 0;
  for (uint64_t i = 0; i < rows; i++) {
    const prstm_word amount = 1 + i % 7;
    add(&r, i % 2 ? "withdraw" : "deposit", i % 1000, amount, 0);
    *(i % 2 ? &withdrawals : &deposits) += amount;
  }
  run_exec(&r);
  cr_assert_eq(r.res.committed, rows);
  char msg[512], want[256];
  int ok = 0;
  cr_assert_eq(prstm_engine_check_invariant(r.engine, r.batch, &ok, msg, sizeof msg), 0);
  cr_assert(ok, "%s", msg);
  snprintf(want, sizeof want, "initial 1000000000 + deposits %llu - withdrawals %llu;", (unsigned long long)deposits,
           (unsigned long long)withdrawals);
  cr_assert(strstr(msg, want) != NULL, "want '%s' in: %s", want, msg);
  run_close(&r);
}

/* The invariant sums a large state on every core too: money lost in the
 * last part of 3 million accounts is caught, with the exact total. */
Test(bank_cpu, invariant_sums_every_part_of_a_large_state) {
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  const uint64_t accounts = 3000000;
  run_state(&r, accounts, 7);
  add(&r, "deposit", 5, 10, 0);
  add(&r, "deposit", accounts - 1, 20, 0);
  run_exec(&r);
  char msg[512];
  int ok = 0;
  cr_assert_eq(prstm_engine_check_invariant(r.engine, r.batch, &ok, msg, sizeof msg), 0);
  cr_assert(ok, "%s", msg);
  cr_assert(strstr(msg, "total money 21000030 = initial 21000000 + deposits 30") != NULL, "%s", msg);
  prstm_word *words = (prstm_word *)prstm_engine_state(r.engine, NULL);
  words[accounts - 2] -= 3;
  cr_assert_eq(prstm_engine_check_invariant(r.engine, r.batch, &ok, msg, sizeof msg), 0);
  cr_assert_not(ok, "%s", msg);
  cr_assert(strstr(msg, "total money 21000027 != initial 21000000") != NULL, "%s", msg);
  run_close(&r);
}

/* The generator's pairs come from a permutation computed row by row: for
 * every size, each pair has exactly one earlier and one later member, the
 * earlier at the lower row, and every other row is random; a different
 * seed places them elsewhere. */
Test(bank_generator, pairs_placed_row_by_row_have_two_members_each) {
  const uint64_t sizes[][2] = {{1, 0}, {2, 1}, {7, 3}, {1000, 1}, {1000, 500}, {300007, 15000}, {300007, 150003}};
  for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const uint64_t n = sizes[k][0], npairs = sizes[k][1];
    wl_perm perm;
    wl_perm_init(&perm, 2026 + k, n);
    uint64_t *first = malloc((npairs ? npairs : 1) * sizeof *first);
    uint64_t *second = malloc((npairs ? npairs : 1) * sizeof *second);
    cr_assert(first && second);
    for (uint64_t p = 0; p < npairs; p++) first[p] = second[p] = UINT64_MAX;
    uint64_t random_rows = 0;
    for (uint64_t r = 0; r < n; r++) {
      uint64_t partner = 0;
      const uint64_t slot = wl_pair_slot_partner(&perm, npairs, r, &partner);
      if (slot == WL_RANDOM_ROW) {
        random_rows++;
        continue;
      }
      const uint64_t p = slot >> 1;
      cr_assert_lt(p, npairs, "n %llu: row %llu names pair %llu", (unsigned long long)n, (unsigned long long)r,
                   (unsigned long long)p);
      uint64_t *member = slot & 1 ? &second[p] : &first[p];
      cr_assert_eq(*member, UINT64_MAX, "n %llu: pair %llu has two %s members", (unsigned long long)n,
                   (unsigned long long)p, slot & 1 ? "later" : "earlier");
      *member = r;
    }
    cr_assert_eq(random_rows, n - 2 * npairs, "n %llu: %llu random rows", (unsigned long long)n,
                 (unsigned long long)random_rows);
    uint64_t moved = 0;
    wl_perm other;
    wl_perm_init(&other, 9999 + k, n);
    for (uint64_t p = 0; p < npairs; p++) {
      cr_assert_lt(first[p], second[p], "n %llu: pair %llu: earlier row %llu after later row %llu",
                   (unsigned long long)n, (unsigned long long)p, (unsigned long long)first[p],
                   (unsigned long long)second[p]);
      uint64_t partner = 0;
      moved += wl_pair_slot_partner(&other, npairs, first[p], &partner) != (p << 1);
    }
    if (npairs >= 1000)
      cr_assert_gt(moved, npairs / 2, "another seed moved only %llu pairs", (unsigned long long)moved);
    free(first);
    free(second);
  }
}

/* Pairs found from their places (wl_pair_rows) give every row the part the
 * row-by-row permutation gives it, over ranges that start and end anywhere,
 * across blocks, on one thread or several; and where members are more than
 * a quarter of the rows, the row-by-row path answers alike. */
Test(bank_generator, pair_rows_give_every_row_its_row_by_row_part) {
  const uint64_t sizes[][2] = {{1000, 10}, {300007, 15000}, {300007, 37500}, {200000, 40000}, {131072, 1}};
  const uint64_t ranges[][2] = {{0, 300007}, {65530, 20}, {1, 65536}, {131000, 200}, {299990, 17}};
  for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const uint64_t n = sizes[k][0], npairs = sizes[k][1];
    wl_perm perm;
    wl_perm_init(&perm, 77 + k, n);
    uint64_t *slot = malloc(n * sizeof *slot), *partner = malloc(n * sizeof *partner);
    cr_assert(slot && partner);
    for (unsigned threads = 1; threads <= 3; threads += 2) {
      wl_pair_rows pr;
      wl_pair_rows_init(&pr, &perm, npairs, n, threads);
      cr_assert_eq(pr.row_of != NULL, 2 * npairs <= n / 4, "n %llu, %llu pairs: grouped %d", (unsigned long long)n,
                   (unsigned long long)npairs, pr.row_of != NULL);
      for (unsigned j = 0; j < sizeof ranges / sizeof ranges[0]; j++) {
        const uint64_t first = ranges[j][0] < n ? ranges[j][0] : 0;
        const uint64_t rows = ranges[j][1] < n - first ? ranges[j][1] : n - first;
        wl_pair_rows_slots(&pr, first, rows, slot, partner);
        for (uint64_t i = 0; i < rows; i++) {
          uint64_t want_partner = UINT64_MAX;
          const uint64_t want = wl_pair_slot_partner(&perm, npairs, first + i, &want_partner);
          cr_assert_eq(slot[i], want, "n %llu, %u threads: row %llu: part %llx, row by row %llx", (unsigned long long)n,
                       threads, (unsigned long long)(first + i), (unsigned long long)slot[i], (unsigned long long)want);
          if (want != WL_RANDOM_ROW)
            cr_assert_eq(partner[i], want_partner, "n %llu: row %llu: partner %llu, row by row %llu",
                         (unsigned long long)n, (unsigned long long)(first + i), (unsigned long long)partner[i],
                         (unsigned long long)want_partner);
        }
      }
      wl_pair_rows_free(&pr);
    }
    free(slot);
    free(partner);
  }
}

/* The generator makes its rows in blocks, each block from its own stream,
 * on as many threads as asked: one thread and several give the same batch,
 * row for row, with semantic pairs split across blocks, a Zipfian skew and
 * wide transfers. */
static prstm_batch *generated(const prstm_workload *wl, unsigned threads, double semantic, double skew, unsigned apt) {
  prstm_generate_spec g;
  memset(&g, 0, sizeof g);
  g.transactions = 300007; /* five blocks, the last one short */
  g.seed = 2026;
  g.accounts_per_tx = apt;
  g.amount_min = 1;
  g.amount_max = 50;
  g.read_only = 0.1;
  g.semantic_ratio = semantic;
  g.threads = threads;
  g.params[prstm_param_find(wl, "skew")] = skew;
  prstm_state_spec s = {.accounts = 100000, .initial_balance = 20};
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  char err[256];
  cr_assert_eq(wl->generate(&g, &s, b, err, sizeof err), 0, "%s", err);
  return b;
}

Test(bank_generator, same_rows_whatever_the_thread_count) {
  const prstm_workload *wl = prstm_workload_find("bank");
  static const struct {
    double semantic, skew;
    unsigned apt;
  } shapes[] = {{0.0, 0.0, 2}, {0.3, 0.0, 2}, {0.2, 0.99, 2}, {0.0, 0.0, 5}};
  for (unsigned k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    prstm_batch *one = generated(wl, 1, shapes[k].semantic, shapes[k].skew, shapes[k].apt);
    cr_assert_eq(prstm_batch_size(one), 300007);
    for (unsigned threads = 2; threads <= 7; threads += 5) {
      prstm_batch *many = generated(wl, threads, shapes[k].semantic, shapes[k].skew, shapes[k].apt);
      char what[64];
      snprintf(what, sizeof what, "shape %u, %u threads", k, threads);
      test_expect_same_rows(one, many, what);
      prstm_batch_destroy(many);
    }
    /* The blocks' streams differ: block 1 does not repeat block 0. */
    unsigned same = 0;
    for (uint64_t i = 0; i < 1000; i++) same += prstm_batch_arg(one, i, 0) == prstm_batch_arg(one, 65536 + i, 0);
    cr_assert_lt(same, 100, "shape %u: block 1 repeats block 0 (%u of 1000 rows)", k, same);
    prstm_batch_destroy(one);
  }
}

/* A Zipfian draw searches the head's ranks from its bucket's guide: it
 * finds the rank a search of the whole head finds, draw for draw, at skews
 * where the head holds nearly every draw (2.5) or few (0.3), for key spaces
 * within the head, of exactly its size and past it (where tail draws keep
 * their stream in step). */
static uint64_t zipf_whole_head_search(const wl_zipf *z, uint64_t *rng) {
  const double u = wl_unit(rng) * z->total;
  if (!(u < z->head_sum)) return UINT64_MAX; /* a tail draw */
  uint64_t lo = 0, hi = z->head - 1;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (z->cumulative[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

Test(bank_generator, zipf_guide_finds_the_rank_a_whole_search_finds) {
  static const double thetas[] = {0.3, 0.99, 1.0, 1.2, 2.5};
  static const uint64_t sizes[] = {1, 7, 1000, WL_ZIPF_HEAD, 3000000};
  for (unsigned t = 0; t < sizeof thetas / sizeof thetas[0]; t++)
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      wl_zipf z;
      cr_assert_eq(wl_zipf_init(&z, sizes[s], thetas[t], 1 + s % 3), 0);
      uint64_t a = 99 + s, b = 99 + s, head = 0;
      for (int i = 0; i < 200000; i++) {
        const uint64_t want = zipf_whole_head_search(&z, &a), got = wl_zipf_draw(&z, &b);
        if (want == UINT64_MAX) {
          cr_assert_geq(got, z.head, "theta %g, %llu keys: a tail draw gave a head rank", thetas[t],
                        (unsigned long long)sizes[s]);
          continue;
        }
        head++;
        cr_assert_eq(got, want, "theta %g, %llu keys, draw %d: rank %llu, the whole search finds %llu", thetas[t],
                     (unsigned long long)sizes[s], i, (unsigned long long)got, (unsigned long long)want);
      }
      cr_assert_gt(head, 1000, "theta %g: too few head draws to compare", thetas[t]);
      wl_zipf_free(&z);
    }
}
