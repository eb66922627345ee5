/* test_stm.c: unit tests of the STM core: the lock word, the read/write/lock sets, private writes, an attempt's commit on each of its paths, commits of many locks, the snapshot a postponement rests on, and (built with PRSTM_WIDE_SETS) the sets' hash indexes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_workload.h"
#include "test_fixture.h"
#include "txtable.h"

Test(lock_word, fields_round_trip_without_overlap) {
  uint64_t max_version = (1ull << (64 - STM_LOCK_VERSION_SHIFT)) - 1;
  uint64_t w = stm_lock_make(max_version, STM_LOCK_OWNER_MASK, STM_LOCK_PRELOCKED);
  cr_assert_eq(stm_lock_version(w), max_version);
  cr_assert_eq(stm_lock_owner(w), STM_LOCK_OWNER_MASK);
  cr_assert(stm_lock_is_prelocked(w));
  cr_assert_not(stm_lock_is_locked(w));
  w = stm_lock_make(12345, 7, STM_LOCK_LOCKED);
  cr_assert_eq(stm_lock_version(w), 12345);
  cr_assert_eq(stm_lock_owner(w), 7);
  cr_assert(stm_lock_is_locked(w));
  cr_assert_not(stm_lock_is_prelocked(w));
}

Test(lock_word, version_is_wide_enough_not_to_wrap_in_a_batch) {
  /* The paper's 11-bit version wraps after 2048 commits; ours must outlast any batch. */
  cr_assert_geq(64 - STM_LOCK_VERSION_SHIFT, 36);
  uint64_t v = 1ull << 35;
  cr_assert_eq(stm_lock_version(stm_lock_make(v + 1, 0, 0)), v + 1);
}

Test(read_set, repeated_reads_share_one_entry_per_lock) {
  fixture f;
  fixture_init(&f, 64, 8);
  f.words[3] = 30;
  f.words[5] = 50;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_read(&f.tx, 3), 30);
  cr_assert_eq(prstm_read(&f.tx, 3), 30);
  cr_assert_eq(prstm_read(&f.tx, 5), 50); /* same lock under coverage 8 */
  cr_assert_eq(f.tx.nreads, 1);
  cr_assert_eq(prstm_read(&f.tx, 9), 0); /* next lock */
  cr_assert_eq(f.tx.nreads, 2);
  cr_assert(prstm_ok(&f.tx));
}

Test(write_set, reads_see_own_writes_and_locks_deduplicate) {
  fixture f;
  fixture_init(&f, 64, 8);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 2, 20);
  prstm_write(&f.tx, 4, 40);
  prstm_write(&f.tx, 2, 21);
  cr_assert_eq(f.tx.nwrites, 2);
  cr_assert_eq(f.tx.nlocks, 1);
  cr_assert_eq(prstm_read(&f.tx, 2), 21);
  cr_assert_eq(f.words[2], 0, "a write must stay buffered until commit");
}

Test(sets, overflow_dooms_the_attempt_as_capacity) {
  fixture f;
  fixture_init(&f, 64, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  for (uint64_t a = 0; a < 5; a++) prstm_read(&f.tx, a);
  cr_assert_eq(f.tx.state, STM_TX_CAPACITY);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  for (uint64_t a = 0; a < 5; a++) prstm_write(&f.tx, a, 1);
  cr_assert_eq(f.tx.state, STM_TX_CAPACITY);
}

Test(read, out_of_range_address_dooms_without_touching_memory) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_read(&f.tx, 8), 0);
  cr_assert_eq(f.tx.state, STM_TX_BAD_ADDRESS);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 1000000, 1);
  cr_assert_eq(f.tx.state, STM_TX_BAD_ADDRESS);
}

/* A unit that holds words [16, 24) of 64 (a partitioned state): words of
 * other units send the row away, words beyond the state are still bad
 * addresses, and its own words are read and written as always. */
Test(read, word_another_unit_holds_sends_the_row_away) {
  fixture f;
  fixture_init(&f, 64, 1);
  f.ctx.held_lo = 16;
  f.ctx.held_n = 8;
  f.words[20] = 7;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_read(&f.tx, 20), 7);
  cr_assert_eq(f.tx.state, STM_TX_OK);
  cr_assert_eq(prstm_read(&f.tx, 24), 0);
  cr_assert_eq(f.tx.state, STM_TX_AWAY);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 15, 1);
  cr_assert_eq(f.tx.state, STM_TX_AWAY);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 64, 1);
  cr_assert_eq(f.tx.state, STM_TX_BAD_ADDRESS);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 17, 30);
  cr_assert_eq(f.tx.state, STM_TX_AWAY);
}

/* A body cannot fail a row with the engine's reason for a row sent away,
 * which the host would run again instead of keeping. */
Test(read, body_cannot_fail_with_the_reason_for_rows_sent_away) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_fail(&f.tx, TXTABLE_REASON_AWAY), PRSTM_FAIL);
  cr_assert_eq(f.tx.reason, TXTABLE_REASON_NONE);
  prstm_fail(&f.tx, PRSTM_REASON_USER + 1);
  cr_assert_eq(f.tx.reason, PRSTM_REASON_USER + 1);
}

/* The run's only thread (STM_SEMANTIC_LONE) neither loads nor stores a lock
 * word: a lock word it would have met (held here, which no real lone run
 * has) stays as it was, and the reads still fill the read set, whose
 * capacity is the same as any attempt's. */
Test(lone, reads_and_commits_without_touching_a_lock_word) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[1] = 10;
  f.words[2] = 5;
  const uint64_t held = stm_lock_make(3, cmp_priority(0, 9), STM_LOCK_LOCKED);
  f.locks[1] = held;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.alone = 1; /* as the worker's alone walk sets it */
  const uint64_t v = prstm_read(&f.tx, 1);
  cr_assert_eq(v, 10);
  prstm_write(&f.tx, 1, v + 1);
  prstm_write(&f.tx, 2, prstm_read(&f.tx, 2) + 3);
  cr_assert(prstm_ok(&f.tx));
  cr_assert_eq(f.tx.nreads, 2);
  cr_assert_eq(f.tx.nlocks, 0, "alone, the lock set stays empty");
  uint64_t seq = 99;
  cr_assert(stm_tx_commit(&f.tx, &seq));
  cr_assert_eq(f.words[1], 11);
  cr_assert_eq(f.words[2], 8);
  cr_assert_eq(seq, 0, "the commit takes its place in the order");
  cr_assert_eq(f.locks[1], held);
  for (unsigned l = 2; l < 8; l++) cr_assert_eq(f.locks[l], 0, "lock %u moved", l);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  for (uint64_t a = 0; a < 5; a++) prstm_read(&f.tx, a);
  cr_assert_eq(f.tx.state, STM_TX_CAPACITY);
}

Test(read, finally_locked_word_is_a_conflict) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[2] = stm_lock_make(0, cmp_priority(0, 9), STM_LOCK_LOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_read(&f.tx, 2);
  cr_assert_eq(f.tx.state, STM_TX_CONFLICT);
}

Test(read, prelocked_word_is_read_invisibly) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 7;
  f.locks[2] = stm_lock_make(3, cmp_priority(0, 9), STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  cr_assert_eq(prstm_read(&f.tx, 2), 7);
  cr_assert(prstm_ok(&f.tx));
}

Test(commit, writes_values_and_releases_with_next_version) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[1] = 5;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 1, prstm_read(&f.tx, 1) + 1);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 6);
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
}

Test(commit, fails_when_a_read_version_moved_and_leaves_locks_free) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(1, 0, 0); /* someone committed word 0 meanwhile */
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 0);
  cr_assert_eq(f.locks[1], stm_lock_make(0, 0, 0), "the pre-lock must be given back unchanged");
}

/* A private write (the row's own output) is buffered like any write but
 * takes no lock: the body reads it back, a later prstm_write of the word
 * keeps it private, and the commit stores both values with every lock word
 * as it was. */
Test(private_write, commits_its_value_and_takes_no_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[3] = stm_lock_make(4, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write_private(&f.tx, 2, 11);
  prstm_write_private(&f.tx, 3, 12);
  prstm_write(&f.tx, 3, 13);
  cr_assert_eq(f.tx.nlocks, 0, "a private word joins no lock set");
  cr_assert_eq(f.words[2], 0, "the value waits for the commit");
  cr_assert_eq(prstm_read(&f.tx, 2), 11, "the attempt reads its own private write");
  cr_assert_eq(f.tx.nreads, 0);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 11);
  cr_assert_eq(f.words[3], 13);
  cr_assert_eq(f.locks[2], stm_lock_make(0, 0, 0), "no version moves");
  cr_assert_eq(f.locks[3], stm_lock_make(4, 0, 0));
}

/* Beside shared words, a private write leaves the commit's locks to them,
 * and an attempt that aborts drops it with the rest: nothing reaches
 * memory. */
Test(private_write, is_dropped_with_an_aborted_attempt) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  const uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  prstm_write_private(&f.tx, 5, 7);
  cr_assert_eq(f.tx.nlocks, 1, "only the shared word's lock");
  f.locks[0] = stm_lock_make(1, 0, 0); /* someone committed word 0 meanwhile */
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 0, "an aborted attempt's private write never lands");
  cr_assert_eq(f.words[1], 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 1, prstm_read(&f.tx, 0) + 1);
  prstm_write_private(&f.tx, 5, 7);
  cr_assert(stm_tx_commit(&f.tx, NULL), "the retry commits");
  cr_assert_eq(f.words[5], 7);
  cr_assert_eq(f.words[1], 1);
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
  cr_assert_eq(f.locks[5], stm_lock_make(0, 0, 0));
}

/* The fast path (every lock read is also written): a commit on a word it
 * read, between the read and the pre-lock, must still abort the attempt;
 * the first CAS, expecting the version read, fails, and the slower pre-lock
 * then takes the new version, which validation refuses. */
Test(commit, read_and_written_word_that_moved_before_the_prelock_aborts) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 10;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  uint64_t v = prstm_read(&f.tx, 2);
  prstm_write(&f.tx, 2, v + 1);
  f.words[2] = 20;
  f.locks[2] = stm_lock_make(1, 0, 0); /* someone committed word 2 meanwhile */
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 20, "the stale value must not be written");
  cr_assert_eq(f.locks[2], stm_lock_make(1, 0, 0), "the pre-lock must be given back unchanged");
}

/* A transfer-shaped commit (two words read and written) under verification
 * takes a place in the commit order too, on the fast path. */
Test(commit, fast_path_takes_a_sequence_when_asked) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  f.quiesce[STM_Q_SEQUENCE] = 41;
  uint64_t seq = 0;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  uint64_t a = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 0, a - 2);
  uint64_t b = prstm_read(&f.tx, 1);
  prstm_write(&f.tx, 1, b + 2);
  cr_assert(stm_tx_commit(&f.tx, &seq));
  cr_assert_eq(seq, 41);
  cr_assert_eq(f.quiesce[STM_Q_SEQUENCE], 42);
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
  cr_assert_eq(f.locks[0], stm_lock_make(1, 0, 0));
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
}

Test(commit, higher_priority_steals_a_lower_prelock) {
  fixture f;
  fixture_init(&f, 8, 1);
  uint64_t low = cmp_priority(0, 50);
  f.locks[1] = stm_lock_make(4, low, STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(1, 60));
  prstm_write(&f.tx, 1, 9);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 9);
  cr_assert_eq(f.locks[1], stm_lock_make(5, 0, 0));
}

Test(commit, lower_priority_never_steals_a_prelock) {
  fixture f;
  fixture_init(&f, 8, 1);
  uint64_t high = cmp_priority(0, 1);
  uint64_t pre = stm_lock_make(4, high, STM_LOCK_PRELOCKED);
  f.locks[1] = pre;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 2));
  prstm_write(&f.tx, 1, 9);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.locks[1], pre);
  cr_assert_eq(f.words[1], 0);
}

/* A thread standing in for a committer that holds a final lock: after a
 * pause it checks nobody touched the lock, then releases it. */
typedef struct holder {
  uint64_t *lock;
  uint64_t held, release;
  int untouched;
  uint64_t *watch;  /* another lock word, read just before the release (optional) */
  uint64_t watched; /* what it held then */
} holder;

static void *holder_main(void *p) {
  holder *h = p;
  struct timespec ts = {0, 30 * 1000 * 1000};
  nanosleep(&ts, NULL);
  h->untouched = __atomic_load_n(h->lock, __ATOMIC_ACQUIRE) == h->held;
  if (h->watch) h->watched = __atomic_load_n(h->watch, __ATOMIC_ACQUIRE);
  __atomic_store_n(h->lock, h->release, __ATOMIC_RELEASE);
  return NULL;
}

static int commit_against_holder(fixture *f, uint64_t lock, uint64_t release_version, holder *h) {
  h->lock = &f->locks[lock];
  h->held = f->locks[lock];
  h->watch = NULL;
  h->release = stm_lock_make(release_version, 0, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, holder_main, h), 0);
  int ok = stm_tx_commit(&f->tx, NULL);
  pthread_join(t, NULL);
  return ok;
}

Test(commit, final_lock_is_waited_out_and_never_stolen) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.locks[1] = stm_lock_make(4, cmp_priority(0, 3), STM_LOCK_LOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(15, 0));
  prstm_write(&f.tx, 1, 9);
  holder h;
  cr_assert(commit_against_holder(&f, 1, 5, &h), "a blind write commits after the holder's commit");
  cr_assert(h.untouched, "final locks are never stolen, whatever the priority");
  cr_assert_eq(f.words[1], 9);
  cr_assert_eq(f.locks[1], stm_lock_make(6, 0, 0));
}

Test(commit, read_under_a_final_lock_fails_once_the_holder_commits) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(1, 0));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(0, cmp_priority(0, 3), STM_LOCK_LOCKED);
  holder h;
  cr_assert_not(commit_against_holder(&f, 0, 1, &h));
  cr_assert(h.untouched);
  cr_assert_eq(f.words[1], 0);
  cr_assert_eq(f.locks[1], stm_lock_make(0, 0, 0), "the pre-lock must be given back");
}

Test(commit, read_under_a_final_lock_commits_when_the_holder_gives_up) {
  /* The holder lost a later pre-lock and released this one unchanged. */
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(1, 0));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(0, cmp_priority(0, 3), STM_LOCK_LOCKED);
  holder h;
  cr_assert(commit_against_holder(&f, 0, 0, &h));
  cr_assert_eq(f.words[1], 1);
}

Test(commit, read_prelocked_by_higher_priority_fails_validation) {
  /* Write skew guard: this attempt read word 0, which a higher priority is committing. */
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(0, cmp_priority(0, 1), STM_LOCK_PRELOCKED);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 0);
}

Test(commit, read_prelocked_by_lower_priority_is_revoked) {
  fixture f;
  fixture_init(&f, 8, 1);
  uint64_t low = cmp_priority(0, 9);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(0, low, STM_LOCK_PRELOCKED);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.locks[0], stm_lock_make(0, 0, 0), "the lower pre-lock is revoked, so its owner cannot lock");
  cr_assert_eq(f.words[1], 1);
}

Test(commit, shared_lock_between_read_and_write_does_not_abort_itself) {
  fixture f;
  fixture_init(&f, 8, 8); /* everything under one lock */
  f.words[0] = 3;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 7, x);
  prstm_write(&f.tx, 0, x + 1);
  cr_assert_eq(f.tx.nlocks, 1);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[0], 4);
  cr_assert_eq(f.words[7], 3);
  cr_assert_eq(f.locks[0], stm_lock_make(1, 0, 0));
}

Test(commit, sequence_is_taken_when_asked) {
  fixture f;
  fixture_init(&f, 8, 1);
  uint64_t seq = 99;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 0, 1);
  cr_assert(stm_tx_commit(&f.tx, &seq));
  cr_assert_eq(seq, 0);
  cr_assert_eq(f.quiesce[STM_Q_SEQUENCE], 1);
}

/* A transfer-shaped first attempt (fixture_first_transfer: its locks are
 * exactly its reads) takes its final locks directly, and still writes,
 * releases with the next version and takes its place in the commit order. */
Test(direct, first_attempt_commits_with_next_versions_and_a_sequence) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  f.locks[0] = stm_lock_make(3, 0, 0);
  f.quiesce[STM_Q_SEQUENCE] = 41;
  uint64_t seq = 0;
  fixture_first_transfer(&f, cmp_priority(0, 0), 0, 1, 2);
  cr_assert(stm_tx_commit(&f.tx, &seq));
  cr_assert_eq(seq, 41);
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
  cr_assert_eq(f.locks[0], stm_lock_make(4, 0, 0));
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
}

/* The second lock is pre-locked by a higher priority: the direct path must
 * give the first lock back unchanged, and the pre-lock path then loses. */
Test(direct, conflict_on_a_later_lock_gives_the_earlier_ones_back) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  fixture_first_transfer(&f, cmp_priority(0, 5), 0, 1, 2);
  const uint64_t high = stm_lock_make(0, cmp_priority(0, 1), STM_LOCK_PRELOCKED);
  f.locks[1] = high;
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.locks[0], stm_lock_make(0, 0, 0), "the first lock must be free at its old version");
  cr_assert_eq(f.locks[1], high, "a higher pre-lock is never taken");
  cr_assert_eq(f.words[0], 7);
  cr_assert_eq(f.words[1], 0);
}

/* A lower-priority pre-lock makes the direct CAS fail; the commit goes on by
 * the pre-lock path, which steals it. */
Test(direct, a_lower_prelock_is_stolen_by_the_prelock_path) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  fixture_first_transfer(&f, cmp_priority(0, 5), 0, 1, 2);
  f.locks[1] = stm_lock_make(0, cmp_priority(0, 9), STM_LOCK_PRELOCKED);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
}

/* A word read and written that moved since the read: the direct CAS at the
 * version read fails, and so does the commit. */
Test(direct, a_version_moved_since_the_read_aborts) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  fixture_first_transfer(&f, cmp_priority(0, 0), 0, 1, 2);
  f.words[0] = 20;
  f.locks[0] = stm_lock_make(1, 0, 0); /* someone committed word 0 meanwhile */
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[0], 20, "the stale value must not be written");
  cr_assert_eq(f.locks[0], stm_lock_make(1, 0, 0));
  cr_assert_eq(f.locks[1], stm_lock_make(0, 0, 0));
}

/* As many locks as reads, but not the same ones (read x, write y): the read
 * must still be validated, so a moved x fails the commit. */
Test(direct, reads_that_are_not_written_are_still_validated) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.direct = 1;
  uint64_t x = prstm_read(&f.tx, 0);
  prstm_write(&f.tx, 1, x + 1);
  f.locks[0] = stm_lock_make(1, 0, 0);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 0);
  cr_assert_eq(f.locks[1], stm_lock_make(0, 0, 0));
}

/* A holder of final locks never waits: when the second lock is finally
 * locked by a committer, the first must not stay finally locked while this
 * attempt waits for that committer (two such holders would wait on each
 * other forever). The committer looks at the first lock before it releases. */
Test(direct, a_final_lock_holder_never_waits_on_another) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  fixture_first_transfer(&f, cmp_priority(0, 5), 0, 1, 2);
  f.locks[1] = stm_lock_make(0, cmp_priority(0, 3), STM_LOCK_LOCKED);
  holder h;
  h.lock = &f.locks[1];
  h.held = f.locks[1];
  h.release = stm_lock_make(0, 0, 0); /* it gives up: nothing written */
  h.watch = &f.locks[0];
  h.watched = 0;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, holder_main, &h), 0);
  int ok = stm_tx_commit(&f.tx, NULL);
  pthread_join(t, NULL);
  cr_assert(ok, "the commit goes through once the holder gives up");
  cr_assert(h.untouched);
  cr_assert_not(stm_lock_is_locked(h.watched), "the first lock was finally locked while its holder waited");
  cr_assert_eq(f.words[0], 5);
  cr_assert_eq(f.words[1], 2);
}

Test(snapshot, postpone_decision_needs_unchanged_versions) {
  fixture f;
  fixture_init(&f, 8, 1);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_read(&f.tx, 3);
  cr_assert(stm_tx_snapshot_valid(&f.tx));
  f.locks[3] = stm_lock_make(1, 0, 0);
  cr_assert_not(stm_tx_snapshot_valid(&f.tx));
}

/* ---- Commits of many locks and reads ----
 *
 * The sets above hold a few entries; TPC-C's NewOrder takes 20 locks and
 * reads a dozen words besides. Whatever place the conflict takes among
 * them, the commit must give back every lock it took and check every read. */

/* An attempt that reads and writes words [0, n) and reads word `extra`
 * without writing it, so that its commit takes the pre-lock path. */
static void wide_attempt(fixture *f, uint64_t prio, uint64_t n, uint64_t extra) {
  fixture_widen(f);
  stm_tx_begin(&f->tx, 0, prio);
  for (uint64_t a = 0; a < n; a++) prstm_write(&f->tx, a, prstm_read(&f->tx, a) + 1);
  (void)prstm_read(&f->tx, extra);
}

/* Word `busy` is pre-locked by a higher priority: every other lock the
 * attempt took is given back free at its old version. */
static void check_conflict_gives_every_lock_back(uint64_t busy) {
  fixture f;
  fixture_init(&f, 16, 1);
  const uint64_t n = 10;
  wide_attempt(&f, cmp_priority(0, 5), n, 12);
  const uint64_t high = stm_lock_make(0, cmp_priority(0, 1), STM_LOCK_PRELOCKED);
  f.locks[busy] = high;
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  for (uint64_t a = 0; a < n; a++) {
    if (a == busy) continue;
    cr_assert_eq(f.locks[a], stm_lock_make(0, 0, 0), "lock %llu (busy: %llu) must be free at its old version",
                 (unsigned long long)a, (unsigned long long)busy);
    cr_assert_eq(f.words[a], 0);
  }
  cr_assert_eq(f.locks[busy], high, "a higher pre-lock is never taken");
}

Test(many_locks, a_conflict_at_any_place_gives_every_lock_taken_back) {
  for (uint64_t busy = 0; busy < 10; busy++) check_conflict_gives_every_lock_back(busy);
}

/* The same from the direct path (locks exactly the reads): a busy lock
 * anywhere, and the commit then loses on the pre-lock path too. */
Test(many_locks, a_direct_commit_gives_them_all_back) {
  for (uint64_t busy = 0; busy < 10; busy++) {
    fixture f;
    fixture_init(&f, 16, 1);
    fixture_widen(&f);
    stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
    f.tx.direct = 1;
    for (uint64_t a = 0; a < 10; a++) prstm_write(&f.tx, a, prstm_read(&f.tx, a) + 1);
    const uint64_t high = stm_lock_make(0, cmp_priority(0, 1), STM_LOCK_PRELOCKED);
    f.locks[busy] = high;
    cr_assert_not(stm_tx_commit(&f.tx, NULL));
    for (uint64_t a = 0; a < 10; a++)
      if (a != busy)
        cr_assert_eq(f.locks[a], stm_lock_make(0, 0, 0), "lock %llu (busy: %llu) must be free", (unsigned long long)a,
                     (unsigned long long)busy);
    cr_assert_eq(f.locks[busy], high);
  }
}

/* Every lock taken: the values land and each lock moves to the next
 * version, on both paths. */
Test(many_locks, a_commit_writes_them_all) {
  for (int direct = 0; direct < 2; direct++) {
    fixture f;
    fixture_init(&f, 16, 1);
    for (uint64_t a = 0; a < 16; a++) f.locks[a] = stm_lock_make(3, 0, 0);
    if (direct) {
      fixture_widen(&f);
      stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
      f.tx.direct = 1;
      for (uint64_t a = 0; a < 10; a++) prstm_write(&f.tx, a, prstm_read(&f.tx, a) + 1);
    } else {
      wide_attempt(&f, cmp_priority(0, 5), 10, 12);
    }
    cr_assert(stm_tx_commit(&f.tx, NULL));
    for (uint64_t a = 0; a < 10; a++) {
      cr_assert_eq(f.words[a], 1);
      cr_assert_eq(f.locks[a], stm_lock_make(4, 0, 0));
    }
    cr_assert_eq(f.locks[12], stm_lock_make(3, 0, 0), "a lock only read keeps its version");
  }
}

/* Many reads not written: a moved version anywhere among them fails the
 * commit, and a lower pre-lock anywhere among them is revoked. */
Test(many_locks, every_read_is_validated) {
  for (uint64_t moved = 1; moved < 11; moved++) {
    for (int revoke = 0; revoke < 2; revoke++) {
      fixture f;
      fixture_init(&f, 16, 1);
      fixture_widen(&f);
      stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
      uint64_t sum = 0;
      for (uint64_t a = 1; a < 11; a++) sum += prstm_read(&f.tx, a);
      prstm_write(&f.tx, 0, sum);
      if (revoke)
        f.locks[moved] = stm_lock_make(0, cmp_priority(0, 9), STM_LOCK_PRELOCKED);
      else
        f.locks[moved] = stm_lock_make(1, 0, 0); /* somebody committed it */
      const int ok = stm_tx_commit(&f.tx, NULL);
      cr_assert_eq(ok, revoke, "read %llu %s", (unsigned long long)moved,
                   revoke ? "under a lower pre-lock must be revoked" : "that moved must fail the commit");
      cr_assert_eq(f.locks[0], stm_lock_make(ok ? 1 : 0, 0, 0));
      if (revoke) cr_assert_eq(f.locks[moved], stm_lock_make(0, 0, 0), "the lower pre-lock is revoked");
    }
  }
}

#if STM_INDEXED
/* The sets' hash indexes, in the build of this file with PRSTM_WIDE_SETS
 * (test_stm_wide), where every test above also runs on them. Sets here
 * outgrow the indexed entries (STM_INDEX_ENTRIES), so the entries past
 * them are searched as well. */
#define BIG_WORDS 512
#define BIG_SETS 200
typedef struct big_fixture {
  uint64_t words[BIG_WORDS];
  uint64_t locks[BIG_WORDS];
  uint64_t quiesce[STM_Q_WORDS];
  prstm_exec_ctx ctx;
  stm_read_entry reads[BIG_SETS];
  stm_write_entry writes[BIG_SETS];
  stm_lock_entry lockset[BIG_SETS];
  stm_index index[3];
  prstm_tx tx;
} big_fixture;

static big_fixture *big_fixture_new(void) {
  big_fixture *f = calloc(1, sizeof *f);
  cr_assert_not_null(f);
  f->ctx.words = f->words;
  f->ctx.nwords = BIG_WORDS;
  f->ctx.held_n = BIG_WORDS;
  f->ctx.locks = f->locks;
  f->ctx.lock_coverage = 1;
  f->ctx.nlocks = BIG_WORDS;
  f->ctx.quiesce = f->quiesce;
  f->tx.ctx = &f->ctx;
  f->tx.cap = BIG_SETS;
  f->tx.reads = f->reads;
  f->tx.writes = f->writes;
  f->tx.locks = f->lockset;
  f->tx.index = f->index;
  stm_tx_begin(&f->tx, 0, cmp_priority(0, 0));
  return f;
}

/* Word i of the tests below: spread over the state so that keys collide in
 * the slots as well as land apart. */
static uint64_t big_word(uint64_t i) { return (i * 37u) % BIG_WORDS; }

Test(index, every_entry_is_found_again_past_the_indexed_ones) {
  big_fixture *f = big_fixture_new();
  for (uint64_t i = 0; i < BIG_SETS; i++) f->words[big_word(i)] = 1000 + i;
  for (uint64_t i = 0; i < BIG_SETS; i++) cr_assert_eq(prstm_read(&f->tx, big_word(i)), 1000 + i);
  for (uint64_t i = 0; i < BIG_SETS; i++) cr_assert_eq(prstm_read(&f->tx, big_word(i)), 1000 + i);
  cr_assert_eq(f->tx.nreads, BIG_SETS, "a read of a word read before takes no new entry");
  for (uint64_t i = 0; i < BIG_SETS; i++) prstm_write(&f->tx, big_word(i), 2000 + i);
  for (uint64_t i = 0; i < BIG_SETS; i++) prstm_write(&f->tx, big_word(i), 3000 + i);
  cr_assert_eq(f->tx.nwrites, BIG_SETS, "a write of a word written before takes no new entry");
  cr_assert_eq(f->tx.nlocks, BIG_SETS);
  for (uint64_t i = 0; i < BIG_SETS; i++) cr_assert_eq(prstm_read(&f->tx, big_word(i)), 3000 + i);
  cr_assert(prstm_ok(&f->tx));
  for (uint64_t i = 0; i < BIG_SETS; i++) {
    cr_assert_eq(stm_tx_find_read(&f->tx, big_word(i)), (int)i);
    cr_assert_eq(stm_tx_find_write(&f->tx, big_word(i)), (int)i);
    cr_assert_eq(stm_tx_find_lock(&f->tx, big_word(i)), (int)i);
  }
  cr_assert_eq(stm_tx_find_read(&f->tx, big_word(BIG_SETS)), -1, "a word never read is in no set");
  cr_assert(stm_tx_commit(&f->tx, NULL));
  for (uint64_t i = 0; i < BIG_SETS; i++) {
    cr_assert_eq(f->words[big_word(i)], 3000 + i);
    cr_assert_eq(f->locks[big_word(i)], stm_lock_make(1, 0, 0), "every lock given back one version on");
  }
  free(f);
}

/* Dropped writes (a failure's decision) leave no entry behind in the index:
 * the words are read from memory again, and written anew. */
Test(index, dropped_writes_leave_no_entry_behind) {
  big_fixture *f = big_fixture_new();
  for (uint64_t i = 0; i < 150; i++) prstm_write(&f->tx, big_word(i), 7);
  stm_tx_drop_writes(&f->tx);
  for (uint64_t i = 0; i < 150; i++) {
    cr_assert_eq(stm_tx_find_write(&f->tx, big_word(i)), -1);
    cr_assert_eq(stm_tx_find_lock(&f->tx, big_word(i)), -1);
  }
  f->words[big_word(3)] = 33;
  cr_assert_eq(prstm_read(&f->tx, big_word(3)), 33, "a dropped write is no longer read back");
  for (uint64_t i = 0; i < 150; i++) prstm_write(&f->tx, big_word(i), 8);
  cr_assert_eq(f->tx.nwrites, 150);
  cr_assert_eq(f->tx.nlocks, 150);
  cr_assert_eq(prstm_read(&f->tx, big_word(140)), 8);
  free(f);
}

/* A new attempt begins with empty indexes: nothing of the last one is
 * found, whatever it held. */
Test(index, a_new_attempt_finds_nothing_of_the_last) {
  big_fixture *f = big_fixture_new();
  for (uint64_t i = 0; i < 100; i++) prstm_write(&f->tx, big_word(i), prstm_read(&f->tx, big_word(i)) + 1);
  stm_tx_begin(&f->tx, 0, cmp_priority(0, 0));
  for (uint64_t i = 0; i < 100; i++) {
    cr_assert_eq(stm_tx_find_read(&f->tx, big_word(i)), -1);
    cr_assert_eq(stm_tx_find_write(&f->tx, big_word(i)), -1);
    cr_assert_eq(stm_tx_find_lock(&f->tx, big_word(i)), -1);
  }
  cr_assert_eq(prstm_read(&f->tx, big_word(5)), 0, "the last attempt's write was never committed");
  free(f);
}
#endif
