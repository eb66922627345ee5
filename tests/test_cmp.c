/* test_cmp.c: the semantic contention manager: the priority rule, the order of a sweep, postponement, and the termination protocol (epochs, stalls, global quiescence). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>
#include <string.h>

#include "bank_body.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_fixture.h"

/* A verified bank run on one CPU thread, so that the sweep's order alone
 * decides what meets a semantic conflict. */
static void one_thread_run(const prstm_word *words, uint64_t nwords, const prstm_word (*rows)[3], const unsigned *types,
                           unsigned n, prstm_results *res, prstm_batch **batch, prstm_engine **engine) {
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

Test(priority, higher_tag_wins_then_lower_rank) {
  cr_assert_gt(cmp_priority(1, 1000), cmp_priority(0, 0));
  cr_assert_gt(cmp_priority(0, 3), cmp_priority(0, 4));
  cr_assert(stm_may_steal(cmp_priority(0, 3), cmp_priority(0, 4)));
  cr_assert_not(stm_may_steal(cmp_priority(0, 4), cmp_priority(0, 3)));
  cr_assert_gt(cmp_priority(0, PRSTM_MAX_THREADS - 1), 0);
}

/* The priority an attempt runs at, seen from its body. */
static uint64_t prio_seen;
static int records_its_priority(prstm_tx *tx, unsigned type) {
  (void)type;
  prio_seen = tx->prio;
  return PRSTM_COMMIT;
}

/* Two units of a GPU stream that execute at once give their threads
 * disjoint ranks (prstm_exec_ctx.rank_base): thread 5 of a unit based at
 * 4096 runs at rank 4101's priority, never at thread 5's of the other. */
Test(priority, a_units_rank_base_moves_its_threads_priorities) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_thread_stats st;
  memset(&st, 0, sizeof st);
  unsigned reason = 0;
  cr_assert_eq(cmp_attempt(&f.tx, &f.ctx, 0, 0, 5, records_its_priority, &st, &reason, 0, 0), TXTABLE_COMMITTED);
  cr_assert_eq(prio_seen, cmp_priority(0, 5));
  f.ctx.rank_base = 4096;
  cr_assert_eq(cmp_attempt(&f.tx, &f.ctx, 1, 0, 5, records_its_priority, &st, &reason, 0, 0), TXTABLE_COMMITTED);
  cr_assert_eq(prio_seen, cmp_priority(0, 4101));
}

/* Commit numbers come from the run's own progress word, or from the
 * counter a stream's units share (prstm_exec_ctx.sequence), which then
 * alone moves. */
Test(commit_order, numbers_come_from_the_shared_counter_where_one_is_set) {
  fixture f;
  fixture_init(&f, 8, 1);
  cr_assert_eq(stm_tx_take_sequence(&f.ctx), 0);
  cr_assert_eq(stm_tx_take_sequence(&f.ctx), 1);
  uint64_t shared = 40;
  f.ctx.sequence = &shared;
  cr_assert_eq(stm_tx_take_sequence(&f.ctx), 40);
  cr_assert_eq(shared, 41);
  cr_assert_eq(f.quiesce[STM_Q_SEQUENCE], 2, "the run's own word must not move while a shared counter is set");
}

static uint64_t q_word(uint64_t epoch, uint64_t unconfirmed, uint64_t stalled) {
  return (cmp_q_tag(epoch) << CMP_Q_EPOCH_SHIFT) | (unconfirmed << CMP_Q_COUNT_BITS) | stalled;
}

static void quiesce_init(fixture *f, uint32_t threads, uint64_t done, uint64_t epoch) {
  fixture_init(f, 8, 1);
  f->ctx.nthreads = threads;
  f->quiesce[STM_Q_DONE] = done;
  f->quiesce[STM_Q_EPOCH] = epoch;
  f->quiesce[STM_Q_EPOCH_STALLED] = q_word(epoch, 0, 0);
}

Test(quiescence, last_thread_to_stall_sees_quiescence_and_counts_itself_once) {
  fixture f;
  quiesce_init(&f, 3, 1, 5);
  f.quiesce[STM_Q_EPOCH_STALLED] = q_word(5, 0, 1); /* one other thread stalled in epoch 5 */
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 5), 1);
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(5, 0, 2), "one stall added, no mark left");
}

Test(quiescence, a_sweep_from_an_old_epoch_does_not_register) {
  fixture f;
  quiesce_init(&f, 1, 0, 7);
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 6), 0, "the epoch moved: sweep again");
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(7, 0, 0), "the word is untouched");
}

/* The tag moved but the full epoch has not yet followed (a bump between its
 * CAS and its add): the registration lands in the new epoch and is taken
 * back, stall and mark. */
Test(quiescence, a_registration_landing_in_a_later_epoch_is_taken_back) {
  fixture f;
  quiesce_init(&f, 2, 0, 7);
  f.quiesce[STM_Q_EPOCH_STALLED] = q_word(8, 0, 1);
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 7), 0);
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(8, 0, 1), "the later epoch's count is as it was");
}

/* A tag equal to the sweep's epoch modulo 2^22 but from a later epoch: the
 * full epoch tells them apart. */
Test(quiescence, a_tag_that_came_round_again_is_not_mistaken_for_the_epoch) {
  fixture f;
  uint64_t later = 3 + (1ull << (64 - CMP_Q_EPOCH_SHIFT));
  quiesce_init(&f, 1, 0, later);
  cr_assert_eq(cmp_q_tag(later), cmp_q_tag(3));
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 3), 0, "a stale sweep must not see quiescence");
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(later, 0, 0));
}

Test(quiescence, a_bump_drops_the_stalls_and_keeps_the_marks) {
  fixture f;
  quiesce_init(&f, 8, 0, 11);
  f.quiesce[STM_Q_EPOCH_STALLED] = q_word(11, 2, 5);
  cmp_bump_epoch(&f.ctx);
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(12, 2, 0));
  cr_assert_eq(f.quiesce[STM_Q_EPOCH], 12);
}

/* Another thread's unconfirmed registration holds quiescence back until it
 * is confirmed, even though the counts already add up. */
typedef struct confirm_later {
  uint64_t *word;
} confirm_later;

static void *confirm_main(void *p) {
  confirm_later *c = p;
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  __atomic_fetch_sub(c->word, CMP_Q_UNCONFIRMED_ONE, __ATOMIC_SEQ_CST);
  return NULL;
}

Test(quiescence, an_unconfirmed_registration_holds_quiescence_back) {
  fixture f;
  quiesce_init(&f, 2, 0, 4);
  f.quiesce[STM_Q_EPOCH_STALLED] = q_word(4, 1, 1); /* registered, not yet confirmed */
  confirm_later c = {&f.quiesce[STM_Q_EPOCH_STALLED]};
  pthread_t t;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(pthread_create(&t, NULL, confirm_main, &c), 0);
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 4), 1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_join(t, NULL);
  double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  cr_assert_geq(waited, 0.04, "quiescence was seen after %.3f s, before the mark was confirmed", waited);
  cr_assert_eq(f.quiesce[STM_Q_EPOCH_STALLED], q_word(4, 0, 2));
}

Test(quiescence, a_stopped_run_leaves_the_wait) {
  fixture f;
  quiesce_init(&f, 4, 0, 2);
  f.quiesce[STM_Q_STOP] = 1;
  cr_assert_eq(cmp_wait_quiescent(&f.ctx, 2), -1);
}

/* A CPU thread looks for the host's stop every CMP_STOP_CHECK_ROWS rows,
 * not only when it aborts or waits: with the stop set before it starts, a
 * thread alone on 64 deposits (which never abort or wait) decides fewer
 * than CMP_STOP_CHECK_ROWS of them and leaves the rest pending. It decided
 * all 64 before the check (a probe stopped by the host ran to the end of
 * its sweep). */
#define STOP_ROWS 64
Test(cmp, a_cpu_thread_sees_the_stop_within_a_few_rows) {
  static uint8_t type[STOP_ROWS], status[STOP_ROWS];
  static uint64_t args[2 * STOP_ROWS];
  fixture f;
  fixture_init(&f, 8, 1);
  for (unsigned r = 0; r < STOP_ROWS; r++) {
    type[r] = BANK_DEPOSIT;
    status[r] = 0;
    args[r] = r % 8;         /* the account */
    args[STOP_ROWS + r] = 1; /* the amount */
  }
  f.ctx.table.n = STOP_ROWS;
  f.ctx.table.stride = STOP_ROWS;
  f.ctx.table.ncols = 2;
  f.ctx.table.type = type;
  f.ctx.table.status = status;
  f.ctx.table.args = args;
  f.ctx.type_tag[BANK_DEPOSIT] = 0;
  f.ctx.tag_mask = 1u;
  f.ctx.nthreads = 1;
  f.ctx.semantic = PRSTM_SEMANTIC_POSTPONE;
  f.ctx.retry_limit = 100;
  stm_thread_stats stats;
  memset(&stats, 0, sizeof stats);
  f.ctx.stats = &stats;
  f.quiesce[STM_Q_STOP] = 1;
  cmp_walk_block(&f.tx, &f.ctx, 0, bank_dispatch);
  unsigned decided = 0;
  for (unsigned r = 0; r < STOP_ROWS; r++) decided += (status[r] & TXTABLE_STATUS_MASK) != 0;
  cr_assert_lt(decided, CMP_STOP_CHECK_ROWS, "%u of %u rows decided after the stop", decided, STOP_ROWS);
  cr_assert_eq(stats.committed, decided);
}
