/* test_cmp.c: the semantic contention manager's walk over the table: the order of a sweep, postponement, and what a thread does at quiescence. */
#include <criterion/criterion.h>
#include <string.h>

#include "bank_body.h"
#include "prstm.h"
#include "test_backend.h"

/* A verified bank run on one CPU thread, so that the sweep's order alone
 * decides what meets a semantic conflict. */
static void one_thread_run(const prstm_word *words, uint64_t nwords, const prstm_word (*rows)[3],
                           const unsigned *types, unsigned n, prstm_results *res, prstm_batch **batch,
                           prstm_engine **engine) {
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_CPU, 1, 1);
  test_open(prstm_workload_find("bank"), &opt, engine, batch);
  cr_assert_eq(prstm_engine_set_state(*engine, words, nwords), 0);
  for (unsigned i = 0; i < n; i++)
    cr_assert_eq(prstm_batch_append(*batch, types[i], rows[i], prstm_workload_find("bank")->types[types[i]].nargs), 0);
  test_run_verified(*engine, *batch, res, "one-thread run");
}

/* Within a sweep a thread attempts higher tags first: a deposit (tag 1)
 * placed after the withdrawal (tag 0) that it funds still runs before it,
 * so the withdrawal never meets its semantic conflict. */
Test(cmp, higher_tag_runs_first_within_a_sweep) {
  prstm_word words[1] = {0};
  const prstm_word rows[2][3] = {{0, 5, 0}, {0, 5, 0}};
  const unsigned types[2] = {BANK_WITHDRAW, BANK_DEPOSIT};
  prstm_results res;
  prstm_batch *b = NULL;
  prstm_engine *e = NULL;
  one_thread_run(words, 1, rows, types, 2, &res, &b, &e);
  cr_assert_eq(res.committed, 2);
  cr_assert_eq(res.postponements, 0, "the withdrawal ran before its deposit");
  cr_assert_eq(res.sweeps, 1, "one sweep finishes both");
  test_close(e, b);
}

/* Two withdrawals of one tag are attempted in table order: the first one
 * takes the only funds, and the second, blocked for good, is abandoned at
 * quiescence with its reason. It postpones twice: in the first sweep, and
 * in the second, which the first one's commit called for and which finds
 * nothing to do. */
Test(cmp, equal_tags_run_in_table_order_and_the_blocked_one_is_abandoned) {
  prstm_word words[2] = {5, 0};
  const prstm_word rows[2][3] = {{0, 5, 0}, {0, 5, 0}};
  const unsigned types[2] = {BANK_WITHDRAW, BANK_WITHDRAW};
  prstm_results res;
  prstm_batch *b = NULL;
  prstm_engine *e = NULL;
  one_thread_run(words, 2, rows, types, 2, &res, &b, &e);
  prstm_status st0, st1;
  unsigned reason = 0;
  cr_assert_eq(prstm_batch_outcome(b, 0, &st0, NULL, NULL), 0);
  cr_assert_eq(prstm_batch_outcome(b, 1, &st1, &reason, NULL), 0);
  cr_assert_eq(st0, PRSTM_COMMITTED);
  cr_assert_eq(st1, PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(res.postponements, 2);
  cr_assert_eq(res.sweeps, 2);
  test_close(e, b);
}
