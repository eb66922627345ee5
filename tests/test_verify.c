/* test_verify.c: the verification certificate catches each way a run can differ from its serial replay, on plain and chunked runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bank_body.h"
#include "engine_internal.h"
#include "prstm.h"
#include "test_backend.h"
#include "txtable.h"

/* A verified CPU run of the bank on a few accounts; each test breaks what
 * the run left on purpose (test-only access to the table and the engine)
 * and checks that the certificate names what it broke. */
typedef struct verified_run {
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
} verified_run;

static void open_run(verified_run *r, uint64_t accounts, prstm_word balance, uint64_t chunk_rows) {
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_CPU, 4, 1);
  opt.chunk_rows = chunk_rows;
  test_open(prstm_workload_find("bank"), &opt, &r->engine, &r->batch);
  prstm_state_spec spec = {.accounts = accounts, .initial_balance = balance};
  cr_assert_eq(prstm_engine_init_state(r->engine, &spec), 0);
}

static void add(verified_run *r, unsigned type, prstm_word a0, prstm_word a1, prstm_word a2) {
  prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(r->batch, type, args, prstm_workload_find("bank")->types[type].nargs), 0);
}

/* Runs the batch and checks that the untouched run is certified, so that a
 * failure after the tampering is the tampering's. */
static void run_certified(verified_run *r) { test_run_verified(r->engine, r->batch, &r->res, "run"); }

static prstm_verify_report verify_now(verified_run *r) {
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(r->engine, r->batch, &rep), 0, "%s", prstm_engine_error(r->engine));
  return rep;
}

static void assert_caught(const prstm_verify_report *rep, const char *needle) {
  cr_assert_not(rep->ok, "the certificate passed a broken run: %s", rep->message);
  cr_assert(strstr(rep->message, needle) != NULL, "expected '%s' in: %s", needle, rep->message);
}

static void close_run(verified_run *r) { test_close(r->engine, r->batch); }

/* 200 transfers among 8 accounts, rich enough that all commit. */
static void transfers(verified_run *r) {
  for (uint64_t i = 0; i < 200; i++) add(r, BANK_TRANSFER, i % 8, (i + 3) % 8, 1);
}

/* The row whose commit sequence comes k-th in the commit order. Numbers
 * are not dense: an attempt takes its number before it validates, and one
 * that then fails validation leaves its number unused, so the k-th row
 * need not hold number k. */
static uint64_t row_in_order(const verified_run *r, uint64_t k) {
  for (uint64_t i = 0; i < r->batch->n; i++) {
    uint64_t before = 0;
    for (uint64_t j = 0; j < r->batch->n; j++) before += r->batch->seq[j] < r->batch->seq[i];
    if (before == k) return i;
  }
  cr_assert_fail("no row comes %llu-th in the commit order", (unsigned long long)k);
  return 0;
}

Test(verify, tampered_final_state_is_caught_at_its_word) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  run_certified(&r);
  ((prstm_word *)prstm_engine_state(r.engine, NULL))[5] += 1;
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "word 5");
  cr_assert_eq(rep.first_word, 5, "%s", rep.message);
  close_run(&r);
}

Test(verify, tampered_outcome_is_caught_at_its_transaction) {
  verified_run r;
  open_run(&r, 4, 0, 0);
  add(&r, BANK_DEPOSIT, 0, 5, 0);
  add(&r, BANK_WITHDRAW, 1, 5, 0); /* unfunded: abandoned */
  add(&r, BANK_WITHDRAW, 0, 5, 0);
  run_certified(&r);
  r.batch->status[2] = txtable_pack_status(PRSTM_FAILED, BANK_REASON_OVERFLOW);
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "the run says failed");
  cr_assert_eq(rep.first_transaction, 2, "%s", rep.message);
  cr_assert_eq(rep.first_batch, -1, "a plain run has no batch number");
  close_run(&r);
}

Test(verify, fundable_abandoned_transaction_is_caught) {
  verified_run r;
  open_run(&r, 4, 0, 0);
  add(&r, BANK_DEPOSIT, 0, 5, 0);
  add(&r, BANK_WITHDRAW, 0, 5, 0);
  run_certified(&r);
  /* Pretend the withdrawal was abandoned and its money never left. */
  r.batch->status[1] = txtable_pack_status(PRSTM_ABANDONED, PRSTM_REASON_QUIESCENT);
  ((prstm_word *)prstm_engine_state(r.engine, NULL))[0] = 5;
  r.batch->seq[1] = UINT64_MAX;
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "was abandoned, but on the final state it commits");
  cr_assert_eq(rep.first_transaction, 1, "%s", rep.message);
  close_run(&r);
}

Test(verify, refused_without_a_verified_run) {
  verified_run r;
  open_run(&r, 4, 0, 0);
  add(&r, BANK_DEPOSIT, 0, 5, 0);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(r.engine, r.batch, &rep), PRSTM_EINVAL);
  close_run(&r);
}

/* A completed run leaves no row pending: one that does was lost by the
 * engine, whatever the replay of the others says. */
Test(verify, row_left_pending_is_caught) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  run_certified(&r);
  r.batch->status[17] = txtable_pack_status(PRSTM_PENDING, 0);
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "is still pending");
  cr_assert_eq(rep.first_transaction, 17, "%s", rep.message);
  close_run(&r);
}

/* Two rows with one place in the commit order: two decisions recorded one
 * number, which a correct fetch-and-add never hands out twice. */
Test(verify, shared_sequence_number_is_caught) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  run_certified(&r);
  uint64_t a = row_in_order(&r, 10), b = row_in_order(&r, 11);
  r.batch->seq[b] = r.batch->seq[a];
  prstm_verify_report rep = verify_now(&r);
  char shared[64];
  snprintf(shared, sizeof shared, "share commit sequence %llu", (unsigned long long)r.batch->seq[a]);
  assert_caught(&rep, shared);
  close_run(&r);
}

/* A number recorded that the run never took (the counter ended below it):
 * the path that records a number it did not take cannot pass. */
Test(verify, sequence_number_never_taken_is_caught) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  run_certified(&r);
  uint64_t taken = r.engine->verify_counts.sequences;
  cr_assert_geq(taken, 200, "every commit took a number");
  uint64_t last = row_in_order(&r, 0);
  r.batch->seq[last] = taken;
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "but the run took only");
  cr_assert_eq(rep.first_transaction, (int64_t)last, "%s", rep.message);
  close_run(&r);
}

/* A row decided twice shows only in the counts: the threads counted one
 * more commit than the table holds. */
Test(verify, row_decided_twice_is_caught_by_the_counts) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  run_certified(&r);
  r.engine->verify_counts.committed += 1;
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "decided twice");
  close_run(&r);
}

/* A transaction that read other values than its place in the commit order
 * gives is caught even when every write and outcome is the same: here a
 * balance check, whose result is not written anywhere, after its read
 * hash was changed as a stale read would change it. */
Test(verify, read_of_other_values_is_caught_by_the_read_hash) {
  verified_run r;
  open_run(&r, 8, 10, 0);
  transfers(&r);
  add(&r, BANK_BALANCE, 3, 0, 0);
  run_certified(&r);
  uint64_t row = r.batch->n - 1;
  cr_assert_neq(r.batch->read_hash[row], 0, "the balance check read something");
  r.batch->read_hash[row] ^= 1;
  prstm_verify_report rep = verify_now(&r);
  assert_caught(&rep, "read other values");
  cr_assert_eq(rep.first_transaction, (int64_t)row, "%s", rep.message);
  close_run(&r);
}

/* A chunked run is certified across its chunks, and the certificate still
 * catches an order that breaks it: two conflicting transfers of different
 * chunks swapped in the commit order. */
Test(verify, chunked_run_is_certified_and_a_swapped_order_is_caught) {
  verified_run r;
  open_run(&r, 2, 0, 3);
  add(&r, BANK_DEPOSIT, 0, 10, 0);
  add(&r, BANK_TRANSFER, 0, 1, 10);
  add(&r, BANK_WITHDRAW, 0, 1, 0); /* account 0 is empty from here on */
  add(&r, BANK_TRANSFER, 1, 0, 4);
  add(&r, BANK_WITHDRAW, 0, 3, 0);
  run_certified(&r);
  cr_assert(strstr(r.res.device, "chunked") != NULL, "%s", r.res.device);
  /* The last withdrawal's number goes before the deposit's. */
  uint64_t first = row_in_order(&r, 0);
  uint64_t tmp = r.batch->seq[first];
  r.batch->seq[first] = r.batch->seq[4];
  r.batch->seq[4] = tmp;
  prstm_verify_report rep = verify_now(&r);
  cr_assert_not(rep.ok, "a swapped order passed: %s", rep.message);
  close_run(&r);
}
