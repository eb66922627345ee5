/* test_stm.c: unit tests of the lock word, the priority rule, the read/write/lock sets, commit, and the transaction table. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_workload.h"
#include "txtable.h"

/* A host context of `nwords` words, all zero, for driving one attempt by hand. */
typedef struct fixture {
  uint64_t words[64];
  uint64_t locks[64];
  uint64_t quiesce[STM_Q_WORDS];
  prstm_exec_ctx ctx;
  stm_read_entry reads[4];
  stm_write_entry writes[4];
  stm_lock_entry lockset[4];
  prstm_tx tx;
} fixture;

static void fixture_init(fixture *f, uint64_t nwords, uint64_t coverage) {
  memset(f, 0, sizeof *f);
  f->ctx.words = f->words;
  f->ctx.nwords = nwords;
  f->ctx.locks = f->locks;
  f->ctx.lock_coverage = coverage;
  f->ctx.nlocks = (nwords + coverage - 1) / coverage;
  f->ctx.quiesce = f->quiesce;
  f->tx.ctx = &f->ctx;
  f->tx.cap = 4;
  f->tx.reads = f->reads;
  f->tx.writes = f->writes;
  f->tx.locks = f->lockset;
}

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

Test(priority, higher_tag_wins_then_lower_rank) {
  cr_assert_gt(cmp_priority(1, 1000), cmp_priority(0, 0));
  cr_assert_gt(cmp_priority(0, 3), cmp_priority(0, 4));
  cr_assert(stm_may_steal(cmp_priority(0, 3), cmp_priority(0, 4)));
  cr_assert_not(stm_may_steal(cmp_priority(0, 4), cmp_priority(0, 3)));
  cr_assert_gt(cmp_priority(0, PRSTM_MAX_THREADS - 1), 0);
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

/* A transfer-shaped first attempt (its locks are exactly its reads) takes
 * its final locks directly, and still writes, releases with the next
 * version and takes its place in the commit order. */
static void transfer_attempt(fixture *f, uint64_t prio, uint64_t from, uint64_t to, uint64_t amount) {
  stm_tx_begin(&f->tx, 0, prio);
  f->tx.direct = 1;
  uint64_t a = prstm_read(&f->tx, from);
  prstm_write(&f->tx, from, a - amount);
  uint64_t b = prstm_read(&f->tx, to);
  prstm_write(&f->tx, to, b + amount);
}

Test(direct, first_attempt_commits_with_next_versions_and_a_sequence) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[0] = 7;
  f.locks[0] = stm_lock_make(3, 0, 0);
  f.quiesce[STM_Q_SEQUENCE] = 41;
  uint64_t seq = 0;
  transfer_attempt(&f, cmp_priority(0, 0), 0, 1, 2);
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
  transfer_attempt(&f, cmp_priority(0, 5), 0, 1, 2);
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
  transfer_attempt(&f, cmp_priority(0, 5), 0, 1, 2);
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
  transfer_attempt(&f, cmp_priority(0, 0), 0, 1, 2);
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
  transfer_attempt(&f, cmp_priority(0, 5), 0, 1, 2);
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

/* ---- The termination protocol's epoch word (cmp_walk.h), driven by hand. ---- */

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

Test(table, blocks_are_interleaved_and_cover_every_row_once) {
  uint64_t n = 1003;
  uint32_t threads = 64;
  uint64_t total = 0;
  for (uint32_t r = 0; r < threads; r++) total += txtable_block_size(n, r, threads);
  cr_assert_eq(total, n);
  cr_assert_eq(txtable_block_size(n, 0, threads), 16); /* rows 0, 64, ..., 960 */
  cr_assert_eq(txtable_block_size(n, 63, threads), 15);
  cr_assert_eq(txtable_block_size(5, 10, threads), 0);
}

Test(table, status_packs_reason_beside_the_finish_flag) {
  uint8_t s = txtable_pack_status(PRSTM_ABANDONED, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(s & TXTABLE_STATUS_MASK, PRSTM_ABANDONED);
  cr_assert_eq(s >> TXTABLE_REASON_SHIFT, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(txtable_pack_status(PRSTM_PENDING, 0), 0, "a zero byte is the unset finish flag");
}

Test(table, append_grows_columns_and_keeps_earlier_rows) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  for (uint64_t i = 0; i < 5000; i++) {
    prstm_word args[1] = {i % 64};
    cr_assert_eq(prstm_batch_append(b, PROBE_INCREMENT, args, 1), 0);
  }
  prstm_word list[6] = {5, 1, 2, 3, 4, 5};
  cr_assert_eq(prstm_batch_append(b, PROBE_TOUCH, list, 6), 0);
  cr_assert_eq(prstm_batch_size(b), 5001);
  cr_assert_eq(b->ncols, 6);
  for (uint64_t i = 0; i < 5000; i++) {
    cr_assert_eq(prstm_batch_arg(b, i, 0), i % 64);
    cr_assert_eq(prstm_batch_arg(b, i, 5), 0);
  }
  cr_assert_eq(prstm_batch_arg(b, 5000, 5), 5);
  cr_assert_eq(prstm_batch_append(b, 99, list, 1), PRSTM_EINVAL);
  prstm_batch_destroy(b);
}

Test(table, presort_puts_higher_tags_first_and_is_stable) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  int deposit = prstm_type_find(bank, "deposit"), withdraw = prstm_type_find(bank, "withdraw");
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word args[2] = {i, i};
    cr_assert_eq(prstm_batch_append(b, (unsigned)(i % 3 == 0 ? deposit : withdraw), args, 2), 0);
  }
  cr_assert_eq(prstm_batch_presort(b), 0);
  uint64_t deposits = 34, last = 0;
  for (uint64_t i = 0; i < 100; i++) {
    cr_assert_eq((int)prstm_batch_type(b, i), i < deposits ? deposit : withdraw);
    uint64_t account = prstm_batch_arg(b, i, 0);
    if (i != deposits) cr_assert(i == 0 || account > last, "order within a tag must be kept");
    last = account;
  }
  prstm_batch_destroy(b);
}

/* The codes, names and messages users see, written out here rather than
 * generated from the error table, so that a changed code, a swapped name or
 * message, or a lost entry fails. */
Test(errors, every_code_has_its_documented_name_message_and_class) {
  static const struct {
    int code, value;
    const char *name, *message;
    int input;
  } want[] = {
      {PRSTM_EINVAL, -1, "PRSTM_EINVAL", "invalid argument", 1},
      {PRSTM_ENOMEM, -2, "PRSTM_ENOMEM", "out of memory", 0},
      {PRSTM_EIO, -3, "PRSTM_EIO", "file could not be read or written", 0},
      {PRSTM_EPARSE, -4, "PRSTM_EPARSE", "malformed JSON", 1},
      {PRSTM_ECONFIG, -5, "PRSTM_ECONFIG", "invalid configuration or batch", 1},
      {PRSTM_ENOGPU, -6, "PRSTM_ENOGPU", "no usable GPU", 0},
      {PRSTM_ECUDA, -7, "PRSTM_ECUDA", "CUDA runtime error", 0},
      {PRSTM_ETHREAD, -8, "PRSTM_ETHREAD", "thread could not be created", 0},
      {PRSTM_ETOOBIG, -9, "PRSTM_ETOOBIG", "batch or state does not fit in memory", 0},
      {PRSTM_EUNKNOWN, -10, "PRSTM_EUNKNOWN", "unknown workload or transaction type", 1},
      {PRSTM_ESTALLED, -11, "PRSTM_ESTALLED", "the run made no progress within the watchdog limit", 0},
      {PRSTM_EPLUGIN, -12, "PRSTM_EPLUGIN", "workload plugin could not be loaded", 1},
  };
  unsigned listed = 0;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    cr_assert_eq(want[i].code, want[i].value, "%s is %d, documented as %d", want[i].name, want[i].code, want[i].value);
    cr_assert_str_eq(prstm_err_name(want[i].code), want[i].name);
    cr_assert_str_eq(prstm_strerror(want[i].code), want[i].message);
    cr_assert_eq(prstm_is_input_error(want[i].code), want[i].input, "%s", want[i].name);
  }
  /* Every code of the table is listed above. */
#define COUNT_ERR(name, code, msg) listed++;
  PRSTM_ERRNO_MAP(COUNT_ERR)
#undef COUNT_ERR
  cr_assert_eq(listed, sizeof want / sizeof want[0], "the error table has codes this test does not list");
  cr_assert_str_eq(prstm_strerror(0), "success");
  cr_assert_str_eq(prstm_strerror(-999), "unknown error");
  cr_assert_str_eq(prstm_err_name(-999), "PRSTM_UNKNOWN_ERROR");
  cr_assert_eq(prstm_is_input_error(0), 0);
}
