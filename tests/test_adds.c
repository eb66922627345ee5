/* test_adds.c: commutative adds (prstm_add): an attempt's blind add by hand on each path, and runs in which adds meet each other, readers and writers, verified on the CPU and the GPU. */
/* The attempts by hand below run the STM core compiled for adds. */
#define PRSTM_USES_ADD 1
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"
#include "test_fixture.h"
#include "test_workload.h"

/* ---- One attempt by hand ---- */

/* A blind add takes no lock: the word gains the delta at commit, its lock
 * comes back free with the next version (readers of the old value then fail
 * validation), and the counter of adds in flight is back at zero. */
Test(add, blind_add_takes_no_lock_and_moves_the_version) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.words[3] = 100;
  f.locks[3] = stm_lock_make(7, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 3, 5);
  cr_assert_eq(f.tx.nlocks, 0, "a blind add joins no lock set");
  cr_assert_eq(f.words[3], 100, "an add stays buffered until commit");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[3], 105);
  cr_assert_eq(f.locks[3], stm_lock_make(8, 0, 0));
  cr_assert_eq(f.add_counts[3], 0);
}

/* Another add under way on the same word does not stop this one: adds commute. */
Test(add, an_add_under_way_does_not_stop_another) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.add_counts[3] = 1; /* another attempt's add is under way */
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 3, 5);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[3], 5);
  cr_assert_eq(f.add_counts[3], 1, "only the other add's count is left");
}

/* A reader of a word whose add is under way fails validation: the add may
 * have changed the value before its version moves. */
Test(add, a_read_fails_while_an_add_is_under_way) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  uint64_t v = prstm_read(&f.tx, 3);
  prstm_write(&f.tx, 4, v + 1);
  f.add_counts[3] = 1;
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[4], 0);
  cr_assert_eq(f.locks[4], stm_lock_make(0, 0, 0), "the pre-lock must be given back");
  f.add_counts[3] = 0;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 4, prstm_read(&f.tx, 3) + 1);
  cr_assert(stm_tx_commit(&f.tx, NULL), "with no add under way the same attempt commits");
}

/* A postponement rests on a snapshot: not while an add is under way on a word it read. */
Test(add, a_snapshot_is_not_valid_while_an_add_is_under_way) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_read(&f.tx, 3);
  cr_assert(stm_tx_snapshot_valid(&f.tx));
  f.add_counts[3] = 1;
  cr_assert_not(stm_tx_snapshot_valid(&f.tx));
}

/* A writer of a word whose add is under way aborts and gives its lock back:
 * a write and an add do not commute. */
Test(add, a_write_fails_while_an_add_is_under_way) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.add_counts[2] = 1;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 2, 9);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 0);
  cr_assert_eq(f.locks[2], stm_lock_make(0, 0, 0));
  cr_assert_eq(f.add_counts[2], 1);
}

/* An add meets a writer's pre-lock: a lower one is taken away (the writer's
 * final CAS will fail), a higher one makes the add abort, and an aborted
 * add leaves no count behind. */
Test(add, a_prelock_is_taken_from_a_lower_writer_and_stops_the_add_of_a_lower_one) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  const uint64_t low = cmp_priority(0, 50), high = cmp_priority(1, 0);
  f.locks[3] = stm_lock_make(4, low, STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 1));
  prstm_add(&f.tx, 3, 5);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[3], 5);
  cr_assert_eq(f.locks[3], stm_lock_make(5, 0, 0));

  f.locks[3] = stm_lock_make(5, high, STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 1));
  prstm_add(&f.tx, 3, 5);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[3], 5);
  cr_assert_eq(f.locks[3], stm_lock_make(5, high, STM_LOCK_PRELOCKED), "a higher pre-lock is never taken");
  cr_assert_eq(f.add_counts[3], 0, "the aborted add's count must be taken back");
}

/* A writer whose pre-lock a committed add moved to a new version still
 * gives it back when it aborts. */
Test(add, a_prelock_moved_by_an_add_is_still_given_back) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 3));
  prstm_write(&f.tx, 2, 9);
  f.tx.locks[0].version = 0;
  f.tx.locks[0].held = 1;
  f.locks[2] = stm_lock_make(1, cmp_priority(0, 3), STM_LOCK_PRELOCKED); /* an add moved it from 0 to 1 */
  stm_tx_release_all(&f.tx);
  cr_assert_eq(f.locks[2], stm_lock_make(1, 0, 0));
}

/* An add to a word under a lock the attempt also reads under (coverage 2:
 * words 2 and 3 share lock 1) is applied under the attempt's own lock, not
 * blind, so that the attempt's own count cannot fail its own validation. */
Test(add, an_add_under_a_lock_the_attempt_reads_is_applied_under_its_own_lock) {
  fixture f;
  fixture_init(&f, 8, 2);
  fixture_use_adds(&f);
  f.words[3] = 40;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 2, 5);
  cr_assert_eq(prstm_read(&f.tx, 3), 40);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 5);
  cr_assert_eq(f.locks[1], stm_lock_make(1, 0, 0));
  cr_assert_eq(f.add_counts[1], 0);
}

/* A body that reads a word after adding to it sees the value plus its delta,
 * and a later write replaces the add; adds to one word fold into one entry. */
Test(add, reads_see_own_adds_and_writes_replace_them) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.words[1] = 10;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 1, 5);
  prstm_add(&f.tx, 1, 2);
  cr_assert_eq(f.tx.nwrites, 1);
  cr_assert_eq(prstm_read(&f.tx, 1), 17);
  prstm_add(&f.tx, 1, 1);
  cr_assert_eq(prstm_read(&f.tx, 1), 18);
  prstm_add(&f.tx, 4, 3);
  prstm_write(&f.tx, 4, 7);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[1], 18);
  cr_assert_eq(f.words[4], 7, "the write replaced the add");
}

/* An add to a word no transaction reads takes no lock and no counter:
 * it lands at commit while a writer holds the word's lock and while other
 * adds are under way, and leaves the lock's version and the counter as
 * they were. */
Test(add, an_unread_add_takes_no_lock_and_no_counter) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.words[3] = 100;
  f.locks[3] = stm_lock_make(7, 9, STM_LOCK_PRELOCKED); /* another attempt's pre-lock */
  f.add_counts[3] = 1;                                  /* and another's add under way */
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add_unread(&f.tx, 3, 5);
  prstm_add_unread(&f.tx, 3, 2);
  cr_assert_eq(f.tx.nwrites, 1, "adds to one word fold into one entry");
  cr_assert_eq(f.tx.nlocks, 0);
  cr_assert(stm_tx_commit(&f.tx, NULL), "nothing the add touches can stop it");
  cr_assert_eq(f.words[3], 107);
  cr_assert_eq(f.locks[3], stm_lock_make(7, 9, STM_LOCK_PRELOCKED), "the lock is not the add's");
  cr_assert_eq(f.add_counts[3], 1, "the add raised no counter");
}

/* An attempt that reads a word it added to unread (which breaks the
 * promise for other attempts' unread adds) sees its delta, and the add
 * then commits as a prstm_add under a lock the attempt reads: under its
 * own lock, which moves the version, so writers of the word still conflict
 * with it. */
Test(add, reading_an_unread_add_back_makes_it_an_ordinary_add) {
  fixture f;
  fixture_init(&f, 8, 1);
  fixture_use_adds(&f);
  f.words[2] = 40;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add_unread(&f.tx, 2, 5);
  cr_assert_eq(prstm_read(&f.tx, 2), 45);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 45);
  cr_assert_eq(f.locks[2], stm_lock_make(1, 0, 0), "the add was applied under the word's lock");
}

/* Without counters (a workload without uses_add) an add is a read and a
 * write: it takes the word's lock. */
Test(add, without_counters_an_add_is_a_read_and_a_write) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[3] = 100;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add(&f.tx, 3, 5);
  cr_assert_eq(f.tx.nlocks, 1);
  cr_assert_eq(f.tx.nreads, 1);
  cr_assert_eq(f.tx.read_hash, 0, "the body never saw the value");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[3], 105);
}

/* A workload whose adds all go unread (PRSTM_ADDS_UNREAD_ONLY) keeps no
 * counters: its unread adds still take no lock, land at commit while
 * another holds the word's lock, and leave that lock as it was; a
 * prstm_add there is a read and a write. */
Test(add, without_counters_unread_adds_still_take_no_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.ctx.semantic |= STM_SEMANTIC_ADDS;
  f.words[3] = 100;
  f.words[5] = 10;
  f.locks[3] = stm_lock_make(7, 9, STM_LOCK_PRELOCKED); /* another attempt's pre-lock */
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add_unread(&f.tx, 3, 5);
  prstm_add_unread(&f.tx, 3, 2);
  cr_assert_eq(f.tx.nwrites, 1, "adds to one word fold into one entry");
  cr_assert_eq(f.tx.nlocks, 0);
  cr_assert_eq(f.tx.nreads, 0);
  prstm_add(&f.tx, 5, 1);
  cr_assert_eq(f.tx.nlocks, 1, "a counted add without counters takes its word's lock");
  cr_assert_eq(f.tx.nreads, 1);
  cr_assert(stm_tx_commit(&f.tx, NULL), "nothing the unread add touches can stop it");
  cr_assert_eq(f.words[3], 107);
  cr_assert_eq(f.words[5], 11);
  cr_assert_eq(f.locks[3], stm_lock_make(7, 9, STM_LOCK_PRELOCKED), "the lock is not the add's");
}

/* Without counters, an unread add that its attempt reads back is applied
 * under the word's lock, which joins the lock set at the read: the commit
 * has no settling of adds to put it there. */
Test(add, without_counters_reading_an_unread_add_back_takes_its_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.ctx.semantic |= STM_SEMANTIC_ADDS;
  f.words[2] = 40;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_add_unread(&f.tx, 2, 5);
  cr_assert_eq(f.tx.nlocks, 0);
  cr_assert_eq(prstm_read(&f.tx, 2), 45);
  cr_assert_eq(f.tx.nlocks, 1, "the word's lock joins at the read");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 45);
  cr_assert_eq(f.locks[2], stm_lock_make(1, 0, 0), "the add was applied under the word's lock");
}

/* Alone, that read-back takes no lock either: a lone commit takes none,
 * and adds straight to the word. */
Test(add, alone_reading_an_unread_add_back_takes_no_lock) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.ctx.semantic |= STM_SEMANTIC_ADDS;
  f.words[2] = 40;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  f.tx.alone = 1; /* as the worker's alone walk sets it */
  prstm_add_unread(&f.tx, 2, 5);
  cr_assert_eq(prstm_read(&f.tx, 2), 45);
  cr_assert_eq(f.tx.nlocks, 0, "alone, the lock set stays empty");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 45);
  cr_assert_eq(f.locks[2], 0, "the lone commit leaves the lock word as it was");
}

/* ---- Runs ---- */

static void append(prstm_batch *b, unsigned type, prstm_word a0, prstm_word a1, prstm_word a2) {
  const prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(b, type, args, test_probe_workload.types[type].nargs), 0);
}

/* Thousands of adds to two words: every one commits, none aborts another
 * (they never read what they add to), and the sums are exact. */
static void adds_to_one_word_never_abort_each_other(prstm_backend backend) {
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  test_open_zeroed(&test_probe_adds_workload, backend, 4096, 1, 2, &e, &b);
  enum { ROWS = 20000 };
  uint64_t sum = 0;
  for (uint64_t i = 0; i < ROWS; i++) {
    append(b, PROBE_ADD, i & 1, i + 1, 0);
    if (!(i & 1)) sum += i + 1;
  }
  prstm_results res;
  test_run_verified(e, b, &res, "adds");
  cr_assert_eq(res.committed, ROWS);
  cr_assert_eq(res.aborts, 0, "adds aborted each other %llu times", (unsigned long long)res.aborts);
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[0], sum);
  cr_assert_eq(w[1], (uint64_t)ROWS * (ROWS + 1) / 2 - sum);
  test_close(e, b);
}

/* Adds beside readers (copies of added words), writers (sets), and adds
 * that read what they added, on a few hot words: the serial replay of the
 * commit order must give the same final state and the same values read, on
 * several seeds and at lock coverage 1 and 2; a word only ever added to
 * ends with the exact sum. */
static void adds_beside_readers_and_writers_stay_serializable(prstm_backend backend) {
  for (uint32_t coverage = 1; coverage <= 2; coverage++) {
    for (uint64_t seed = 1; seed <= 3; seed++) {
      prstm_engine *e = NULL;
      prstm_batch *b = NULL;
      test_open_zeroed(&test_probe_adds_workload, backend, 2048, coverage, 16, &e, &b);
      uint64_t rng = seed * 0x9e3779b97f4a7c15ull, added_only = 0;
      enum { ROWS = 6000 };
      for (uint64_t i = 0; i < ROWS; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const uint64_t r = rng >> 33, hot = r % 4, other = 4 + (r >> 8) % 8;
        switch ((r >> 16) % 8) {
          case 0:
            append(b, PROBE_COPY, hot, other, 0);
            break;
          case 1:
            append(b, PROBE_SET, hot, r % 1000, 0);
            break;
          case 2:
            append(b, PROBE_ADD_THEN_READ, hot, 3, other);
            break;
          default:
            append(b, PROBE_ADD, hot, 1 + r % 5, 0);
            break;
        }
        /* Word 15 is only ever added to. */
        append(b, PROBE_ADD, 15, 2, 0);
        added_only += 2;
      }
      prstm_results res;
      test_run_verified(e, b, &res, "mixed adds");
      cr_assert_eq(res.committed, 2 * ROWS);
      cr_assert_eq(prstm_engine_state(e, NULL)[15], added_only);
      test_close(e, b);
    }
  }
}

#define BOTH_BACKENDS(fn)                      \
  Test(add_cpu, fn) { fn(PRSTM_BACKEND_CPU); } \
  Test(add_gpu, fn, .timeout = 120) { fn(PRSTM_BACKEND_GPU); }

BOTH_BACKENDS(adds_to_one_word_never_abort_each_other)
BOTH_BACKENDS(adds_beside_readers_and_writers_stay_serializable)

/* A read whose lock has a blind add under way fails, wherever it sits
 * among many reads. */
Test(add, a_read_under_an_add_under_way_fails_among_many_reads) {
  for (uint64_t busy = 1; busy < 11; busy++) {
    fixture f;
    fixture_init(&f, 16, 1);
    fixture_use_adds(&f);
    fixture_widen(&f);
    stm_tx_begin(&f.tx, 0, cmp_priority(0, 5));
    uint64_t sum = 0;
    for (uint64_t a = 1; a < 11; a++) sum += prstm_read(&f.tx, a);
    prstm_write(&f.tx, 0, sum);
    f.add_counts[busy] = 1;
    cr_assert_not(stm_tx_commit(&f.tx, NULL), "read %llu", (unsigned long long)busy);
    cr_assert_eq(f.locks[0], stm_lock_make(0, 0, 0));
    cr_assert_eq(f.words[0], 0);
  }
}
