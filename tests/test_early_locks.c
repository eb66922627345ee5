/* test_early_locks.c: unit tests of first attempts that lock each word as they read it (PRSTM_FIRST_ATTEMPT_LOCKS): the lock taken, conflicts, stolen pre-locks, commits, postponements and failures. */
#define PRSTM_FIRST_ATTEMPT_LOCKS 1
#include <criterion/criterion.h>

#include "prstm.h"
#include "test_fixture.h"

Test(early_locks, are_compiled_in_this_file) { cr_assert_eq(STM_EARLY_LOCKS, 1); }

Test(early_locks, a_first_attempt_holds_the_lock_of_each_word_it_read) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 20;
  f.locks[2] = stm_lock_make(5, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  cr_assert_eq(prstm_read(&f.tx, 2), 20);
  cr_assert_eq(f.locks[2], stm_lock_make(5, 0, STM_LOCK_LOCKED), "the read must take the lock final at its version");
  cr_assert_eq(f.tx.reads[0].version, 5);
  cr_assert_eq(prstm_read(&f.tx, 2), 20, "a second read of a held word reads it again");
  cr_assert_eq(f.tx.nreads, 1);
  cr_assert_eq(f.tx.nlocks, 1);
}

/* Two words under one lock: the second read finds the lock its own, and
 * a write to a third word of it needs no other. */
Test(early_locks, words_that_share_a_lock_take_it_once) {
  fixture f;
  fixture_init(&f, 8, 4);
  f.words[0] = 10;
  f.words[1] = 11;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  cr_assert_eq(prstm_read(&f.tx, 0), 10);
  cr_assert_eq(prstm_read(&f.tx, 1), 11);
  prstm_write(&f.tx, 2, 12);
  cr_assert_eq(f.tx.state, STM_TX_OK, "a lock the attempt holds is no conflict");
  cr_assert_eq(f.tx.nlocks, 1);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 12);
  cr_assert_eq(f.locks[0], stm_lock_make(1, 0, 0));
}

Test(early_locks, an_attempt_not_marked_to_lock_reads_without_taking_the_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 20;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_read(&f.tx, 2), 20);
  cr_assert_eq(f.locks[2], stm_lock_make(0, 0, 0),
               "an attempt the walk did not mark to lock as it reads reads invisibly");
}

Test(early_locks, a_word_held_final_ends_the_first_attempt_as_a_conflict) {
  fixture f;
  fixture_init(&f, 8, 1);
  const uint64_t held = stm_lock_make(3, cmp_priority(0, 7), STM_LOCK_LOCKED);
  f.locks[1] = held;
  fixture_first_transfer(&f, cmp_priority(0, 0), 0, 1, 2);
  cr_assert_eq(f.tx.state, STM_TX_CONFLICT);
  cr_assert_eq(f.locks[1], held, "another committer's lock must stay as it was");
  cr_assert_eq(f.tx.conflict_lock, 1, "the retry waits for that holder");
  cr_assert(stm_tx_release_early(&f.tx));
  cr_assert_eq(f.locks[0], stm_lock_make(0, 0, 0), "the lock read before must be free at its old version");
  cr_assert_eq(f.tx.direct, 0, "the attempt is an ordinary one after giving its locks back");
}

/* Taken away, whatever its priority: the owner's final-lock CAS from its
 * pre-lock fails, so it never writes under the first attempt's lock. */
Test(early_locks, a_pre_lock_of_any_priority_is_taken_away) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  const uint64_t high = stm_lock_make(2, cmp_priority(3, 1), STM_LOCK_PRELOCKED);
  f.locks[0] = high;
  fixture_first_transfer(&f, cmp_priority(0, 5), 0, 1, 2);
  cr_assert_eq(f.tx.state, STM_TX_OK);
  cr_assert_not(port_cas(&f.locks[0], high, stm_lock_make(2, cmp_priority(3, 1), STM_LOCK_LOCKED)),
                "the owner's final-lock CAS must fail");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
  cr_assert_eq(f.locks[0], stm_lock_make(3, 0, 0), "released at the next version, the owner's bits gone");
}

Test(early_locks, a_commit_writes_and_releases_at_next_versions_with_a_sequence) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  f.locks[0] = stm_lock_make(3, 0, 0);
  f.quiesce[STM_Q_SEQUENCE] = 41;
  uint64_t seq = 0;
  fixture_first_transfer(&f, cmp_priority(0, 0), 0, 1, 2);
  /* A value changed behind the held lock cannot happen; the commit reads
   * no lock word again to find out. */
  cr_assert(stm_tx_commit(&f.tx, &seq));
  cr_assert_eq(seq, 41);
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
  cr_assert_eq(f.locks[0], stm_lock_make(4, 0, 0));
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
}

Test(early_locks, a_read_only_commit_moves_no_version) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[3] = stm_lock_make(9, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  prstm_read(&f.tx, 3);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.locks[3], stm_lock_make(9, 0, 0));
}

/* A word written without a read takes its lock at commit; held by another
 * committer, the commit gives every lock back unchanged. */
Test(early_locks, a_blind_write_under_a_held_lock_gives_every_lock_back) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  uint64_t a = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 0, a + 1);
  prstm_write(&f.tx, 4, 1);
  const uint64_t held = stm_lock_make(6, cmp_priority(0, 2), STM_LOCK_LOCKED);
  f.locks[4] = held;
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.locks[0], stm_lock_make(0, 0, 0));
  cr_assert_eq(f.locks[4], held);
  cr_assert_eq(f.words[0], 7);
  cr_assert_eq(f.words[4], 0);
  f.locks[4] = stm_lock_make(6, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  a = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 0, a + 1);
  prstm_write(&f.tx, 4, 1);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[4], 1);
  cr_assert_eq(f.locks[4], stm_lock_make(7, 0, 0));
}

/* Its lock set also holds the locks it only read: full before the write
 * set, it ends as a conflict (the first retry past the attempts that lock
 * as they read decides), never as a capacity
 * failure that the ordinary path would not have. */
Test(early_locks, a_full_lock_set_is_a_conflict_not_a_capacity_failure) {
  fixture f;
  fixture_init(&f, 16, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  for (uint64_t a = 0; a < 4; a++) prstm_read(&f.tx, a);
  cr_assert_eq(f.tx.state, STM_TX_OK);
  prstm_write(&f.tx, 8, 1);
  cr_assert_eq(f.tx.state, STM_TX_CONFLICT);
  stm_tx_release_early(&f.tx);
  for (uint64_t a = 0; a < 4; a++) cr_assert_eq(f.locks[a], stm_lock_make(0, 0, 0));
}

/* A failure drops the writes and gives the locks back before it commits by
 * the ordinary path, which validates the reads. */
Test(early_locks, a_failure_gives_its_locks_back_and_commits_nothing) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  f.locks[0] = stm_lock_make(2, 0, 0);
  fixture_first_transfer(&f, cmp_priority(0, 0), 0, 1, 2);
  stm_tx_drop_writes(&f.tx);
  cr_assert_eq(f.locks[0], stm_lock_make(2, 0, 0));
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[0], 7);
  cr_assert_eq(f.locks[0], stm_lock_make(2, 0, 0));
  cr_assert_eq(f.locks[1], stm_lock_make(0, 0, 0));
}

/* Runs row 0 of the fixture through cmp_attempt with `body`, as the row's
 * first visit or a later one, with fresh counters in st. */
static unsigned fixture_attempt(fixture *f, cmp_dispatch_fn body, int first_visit, stm_thread_stats *st) {
  memset(st, 0, sizeof *st);
  unsigned reason = 0;
  return cmp_attempt(&f->tx, &f->ctx, 0, 0, 0, body, st, &reason, 0, first_visit);
}

/* A transfer that finds its source short postpones: cmp_attempt gives the
 * locks back, versions unchanged, and the row stays pending. */
static int short_transfer(prstm_tx *tx, unsigned type) {
  (void)type;
  uint64_t source = prstm_read(tx, 0);
  if (source < 10) return PRSTM_POSTPONE;
  prstm_write(tx, 0, source - 10);
  return PRSTM_COMMIT;
}

Test(early_locks, a_postponed_first_attempt_gives_its_locks_back_unchanged) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 3;
  f.locks[0] = stm_lock_make(4, 0, 0);
  stm_thread_stats st;
  cr_assert_eq(fixture_attempt(&f, short_transfer, 1, &st), CMP_POSTPONED);
  cr_assert_eq(f.locks[0], stm_lock_make(4, 0, 0));
  cr_assert_eq(st.aborts, 0, "a postponement under held locks needs no retry");
}

/* A row postponed in an earlier sweep comes back as an ordinary attempt:
 * only a row's first visit locks as it reads. */
static int checks_its_lock(prstm_tx *tx, unsigned type) {
  (void)type;
  prstm_read(tx, 0);
  cr_assert_eq(tx->ctx->locks[0], stm_lock_make(4, 0, 0), "a later visit must not take the lock at its read");
  return PRSTM_POSTPONE;
}

Test(early_locks, a_later_visit_of_a_row_reads_without_taking_the_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[0] = stm_lock_make(4, 0, 0);
  stm_thread_stats st;
  cr_assert_eq(fixture_attempt(&f, checks_its_lock, 0, &st), CMP_POSTPONED);
}

/* A first visit's attempt that meets a held lock is retried the same way,
 * locking as it reads, up to PRSTM_POLICY_EARLY_LOCK_ATTEMPTS attempts;
 * the next one reads invisibly, and the priority rule decides from there. */
static unsigned attempts_seen;
static int free_before_read[PRSTM_POLICY_EARLY_LOCK_ATTEMPTS + 1];
static int locked_at_read[PRSTM_POLICY_EARLY_LOCK_ATTEMPTS + 1];

static int restarts_until_past_the_early_attempts(prstm_tx *tx, unsigned type) {
  (void)type;
  /* A broken walk could retry for ever: one attempt too many fails the row,
   * which the test then sees as the wrong status. */
  if (attempts_seen > PRSTM_POLICY_EARLY_LOCK_ATTEMPTS) return prstm_fail(tx, PRSTM_REASON_USER);
  free_before_read[attempts_seen] = !stm_lock_is_locked(tx->ctx->locks[0]);
  const uint64_t value = prstm_read(tx, 0);
  locked_at_read[attempts_seen] = stm_lock_is_locked(tx->ctx->locks[0]);
  if (attempts_seen++ < PRSTM_POLICY_EARLY_LOCK_ATTEMPTS) {
    prstm_restart(tx); /* as if another committer had held a word */
    return PRSTM_COMMIT;
  }
  prstm_write(tx, 0, value + 1);
  return PRSTM_COMMIT;
}

Test(early_locks, a_retry_of_a_first_visit_locks_as_it_reads_a_bounded_number_of_times) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[0] = stm_lock_make(4, 0, 0);
  stm_thread_stats st;
  attempts_seen = 0;
  cr_assert_eq(fixture_attempt(&f, restarts_until_past_the_early_attempts, 1, &st), TXTABLE_COMMITTED);
  cr_assert_eq(attempts_seen, PRSTM_POLICY_EARLY_LOCK_ATTEMPTS + 1);
  for (unsigned i = 0; i <= PRSTM_POLICY_EARLY_LOCK_ATTEMPTS; i++)
    cr_assert(free_before_read[i], "attempt %u must find the lock given back by the one before", i);
  for (unsigned i = 0; i < PRSTM_POLICY_EARLY_LOCK_ATTEMPTS; i++)
    cr_assert(locked_at_read[i], "attempt %u of a first visit must lock as it reads", i);
  cr_assert_not(locked_at_read[PRSTM_POLICY_EARLY_LOCK_ATTEMPTS], "the attempt past them must read invisibly");
  cr_assert_eq(st.aborts, PRSTM_POLICY_EARLY_LOCK_ATTEMPTS);
  cr_assert_eq(f.words[0], 1);
  cr_assert_eq(f.locks[0], stm_lock_make(5, 0, 0), "the restarts give the lock back unchanged");
}
