/* test_tickets.c: tickets (prstm_ticket): an attempt's ticket by hand on each commit path, and runs in which tickets of one counter meet each other, readers and writers, verified on the CPU and the GPU. */
/* The attempts by hand below run the STM core compiled for tickets and adds. */
#define PRSTM_USES_ADD 1
#define PRSTM_USES_TICKETS 1
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"
#include "test_fixture.h"
#include "test_workload.h"

/* ---- One attempt by hand ---- */

/* A ticket reads nothing in the body and locks only its destination there:
 * the counter is read, raised and its lock taken and moved at commit. */
static void ticket_is_taken_at_commit(int adds) {
  fixture f;
  fixture_init(&f, 8, 1);
  if (adds) fixture_use_adds(&f);
  f.words[2] = 7;
  f.locks[2] = stm_lock_make(3, 0, 0);
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 2, 5);
  cr_assert_eq(f.tx.nreads, 0, "the body reads nothing");
  cr_assert_eq(f.tx.nlocks, 1, "only the destination's lock joins the lock set");
  cr_assert_eq(f.words[2], 7, "the counter moves only at commit");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 7, "the destination gets the counter's value");
  cr_assert_eq(f.words[2], 8, "the counter goes up by one");
  cr_assert_eq(f.locks[2], stm_lock_make(4, 0, 0), "the counter's lock is given back with the next version");
  cr_assert_eq(f.locks[5], stm_lock_make(1, 0, 0));
}
Test(ticket, is_taken_at_commit) { ticket_is_taken_at_commit(0); }
Test(ticket, is_taken_at_commit_with_counters_of_adds) { ticket_is_taken_at_commit(1); }

/* A ticket whose destination the body wrote privately first (the row's
 * own slot, as TPC-C's NewOrder does) takes no lock in the body at all:
 * the commit takes only the counter's, and fills the destination. */
Test(ticket, into_a_private_destination_locks_only_the_counter) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 30;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write_private(&f.tx, 5, 0);
  prstm_ticket(&f.tx, 2, 5);
  cr_assert_eq(f.tx.nlocks, 0, "the destination stays private");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 30);
  cr_assert_eq(f.words[2], 31);
  cr_assert_eq(f.locks[2], stm_lock_make(1, 0, 0));
  cr_assert_eq(f.locks[5], stm_lock_make(0, 0, 0));
}

/* A body that reads its ticket's counter takes the ticket at that point: it
 * sees the counter already raised, and the read joins the read set. */
Test(ticket, reading_the_counter_takes_the_ticket_there) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 7;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 2, 5);
  cr_assert_eq(prstm_read(&f.tx, 2), 8);
  cr_assert_eq(prstm_read(&f.tx, 5), 7, "the destination reads as the value taken");
  cr_assert_eq(f.tx.nreads, 1);
  cr_assert_eq(f.tx.ticket, 0, "nothing is left for the commit to take");
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 7);
  cr_assert_eq(f.words[2], 8);
}

/* A second ticket takes the first at once; both number their destinations
 * in the order the body took them. */
Test(ticket, a_second_ticket_takes_the_first_at_once) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 40;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 2, 5);
  prstm_ticket(&f.tx, 2, 6);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 40);
  cr_assert_eq(f.words[6], 41);
  cr_assert_eq(f.words[2], 42);
}

/* Where one lock covers the counter and the destination, the commit would
 * wait for a lock it holds: the ticket is taken as a read and two writes
 * at the start of the commit instead. */
Test(ticket, under_its_destinations_lock_is_taken_as_a_read) {
  fixture f;
  fixture_init(&f, 8, 4);
  f.words[1] = 9;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 1, 2);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.tx.nreads, 1, "the counter was read at the start of the commit");
  cr_assert_eq(f.words[2], 9);
  cr_assert_eq(f.words[1], 10);
  cr_assert_eq(f.locks[0], stm_lock_make(1, 0, 0));
}

/* The counter's lock pre-locked by a higher priority: the commit gives
 * every lock back, its destination's at the version it had, and nothing
 * is written. Pre-locked by a lower one: the pre-lock is taken away. */
Test(ticket, a_higher_prelock_on_the_counter_aborts_and_a_lower_one_is_taken) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 7;
  const uint64_t mine = cmp_priority(0, 5);
  f.locks[2] = stm_lock_make(3, mine + 1, STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, mine);
  prstm_ticket(&f.tx, 2, 5);
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 0);
  cr_assert_eq(f.words[2], 7);
  cr_assert_eq(f.locks[5], stm_lock_make(0, 0, 0), "the destination's lock is given back unchanged");
  cr_assert_eq(f.locks[2], stm_lock_make(3, mine + 1, STM_LOCK_PRELOCKED), "the higher pre-lock stays");
  f.locks[2] = stm_lock_make(3, mine - 1, STM_LOCK_PRELOCKED);
  stm_tx_begin(&f.tx, 0, mine);
  prstm_ticket(&f.tx, 2, 5);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[5], 7);
  cr_assert_eq(f.locks[2], stm_lock_make(4, 0, 0));
}

/* A word the attempt read that a writer changed after the read: the
 * ticket's commit validates and aborts, giving the counter back as it was. */
Test(ticket, a_read_changed_before_the_commit_aborts_it) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 7;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_write(&f.tx, 6, prstm_read(&f.tx, 3) + 1);
  prstm_ticket(&f.tx, 2, 5);
  f.locks[3] = stm_lock_make(1, 0, 0); /* another transaction committed word 3 */
  cr_assert_not(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 7);
  cr_assert_eq(f.locks[2], stm_lock_make(0, 0, 0));
  cr_assert_eq(f.locks[6], stm_lock_make(0, 0, 0));
}

/* Without PRSTM_USES_TICKETS the same body would read the counter; here, a
 * ticket in a failed decision is dropped with the writes: nothing moves. */
Test(ticket, a_failed_decision_drops_the_ticket) {
  fixture f;
  fixture_init(&f, 8, 1);
  f.words[2] = 7;
  stm_tx_begin(&f.tx, 0, cmp_priority(0, 0));
  prstm_ticket(&f.tx, 2, 5);
  stm_tx_drop_writes(&f.tx);
  cr_assert(stm_tx_commit(&f.tx, NULL));
  cr_assert_eq(f.words[2], 7);
  cr_assert_eq(f.words[5], 0);
  cr_assert_eq(f.locks[2], stm_lock_make(0, 0, 0));
}

/* ---- Runs ---- */

static void append(prstm_batch *b, unsigned type, prstm_word a0, prstm_word a1, prstm_word a2) {
  const prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(b, type, args, test_probe_workload.types[type].nargs), 0);
}

/* Thousands of rows number themselves from one counter: the counter ends
 * at the number of rows, and every number from 0 is given exactly once, on
 * both commit paths (with and without counters of adds). */
static void tickets_of_one_counter_give_every_number_once(prstm_backend backend) {
  enum { ROWS = 20000 };
  const prstm_workload *wls[2] = {&test_probe_workload, &test_probe_adds_workload};
  for (int k = 0; k < 2; k++) {
    prstm_engine *e = NULL;
    prstm_batch *b = NULL;
    test_open_zeroed(wls[k], backend, 4096, 1, 1 + ROWS, &e, &b);
    for (uint64_t i = 0; i < ROWS; i++) append(b, PROBE_TICKET, 0, 1 + i, 0);
    prstm_results res;
    test_run_verified(e, b, &res, "tickets");
    cr_assert_eq(res.committed, ROWS);
    const prstm_word *w = prstm_engine_state(e, NULL);
    cr_assert_eq(w[0], ROWS);
    unsigned char *seen = calloc(ROWS, 1);
    for (uint64_t i = 0; i < ROWS; i++) {
      cr_assert_lt(w[1 + i], ROWS, "row %llu took %llu", (unsigned long long)i, (unsigned long long)w[1 + i]);
      cr_assert_eq(seen[w[1 + i]], 0, "number %llu given twice", (unsigned long long)w[1 + i]);
      seen[w[1 + i]] = 1;
    }
    free(seen);
    test_close(e, b);
  }
}

/* Tickets of two counters beside readers (copies of a counter), writers
 * (sets and increments of a counter) and tickets that read their counter,
 * with destinations that share a lock with a counter at coverage 2: the
 * serial replay of the commit order must give the same state and the same
 * values read, on several seeds, on both commit paths. */
static void tickets_beside_readers_and_writers_stay_serializable(prstm_backend backend) {
  const prstm_workload *wls[2] = {&test_probe_workload, &test_probe_adds_workload};
  for (int k = 0; k < 2; k++) {
    for (uint32_t coverage = 1; coverage <= 2; coverage++) {
      for (uint64_t seed = 1; seed <= 2; seed++) {
        enum { ROWS = 6000, WORDS = 4 + ROWS };
        prstm_engine *e = NULL;
        prstm_batch *b = NULL;
        test_open_zeroed(wls[k], backend, 2048, coverage, WORDS, &e, &b);
        uint64_t rng = seed * 0x9e3779b97f4a7c15ull;
        for (uint64_t i = 0; i < ROWS; i++) {
          rng = rng * 6364136223846793005ull + 1442695040888963407ull;
          const uint64_t r = rng >> 33, counter = r & 1, dest = 1 + (r >> 4) % (WORDS - 1);
          switch ((r >> 24) % 10) {
            case 0:
              append(b, PROBE_COPY, counter, 2 + (r >> 8) % (WORDS - 2), 0);
              break;
            case 1:
              append(b, PROBE_SET, counter, r % 1000, 0);
              break;
            case 2:
              append(b, PROBE_INCREMENT, counter, 0, 0);
              break;
            case 3:
              append(b, PROBE_TICKET_THEN_READ, counter, dest, 2 + (r >> 12) % (WORDS - 2));
              break;
            default:
              append(b, PROBE_TICKET, counter, dest, 0);
              break;
          }
        }
        prstm_results res;
        test_run_verified(e, b, &res, "mixed tickets");
        cr_assert_eq(res.committed, ROWS);
        test_close(e, b);
      }
    }
  }
}

/* A row that reads as many locks as its sets hold, then takes a ticket
 * whose counter shares its lock with the destination (coverage 2): the
 * ticket must be taken as a read, which the read set has no room for. The
 * row fails for capacity, as one whose body overflowed its sets does, and
 * the run ends; the next row's ticket still numbers its destination. */
static void a_ticket_that_overflows_the_read_set_fails_its_row(prstm_backend backend) {
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  test_open_zeroed(&test_probe_workload, backend, 64, 2, 64, &e, &b);
  const prstm_word full[4] = {0, PROBE_CAPACITY * 2, 40, 41}, room[4] = {0, 4, 40, 41};
  cr_assert_eq(prstm_batch_append(b, PROBE_SUM_THEN_TICKET, full, 4), 0);
  cr_assert_eq(prstm_batch_append(b, PROBE_SUM_THEN_TICKET, room, 4), 0);
  prstm_results res;
  test_run_verified(e, b, &res, "a ticket beyond the sets");
  cr_assert_eq(res.failed, 1);
  cr_assert_eq(res.committed, 1);
  prstm_status status;
  unsigned reason = 0;
  cr_assert_eq(prstm_batch_outcome(b, 0, &status, &reason, NULL), 0);
  cr_assert_eq(status, PRSTM_FAILED);
  cr_assert_eq(reason, PRSTM_REASON_CAPACITY);
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[40], 1);
  cr_assert_eq(w[41], 0);
  test_close(e, b);
}

#define BOTH_BACKENDS(fn)                         \
  Test(ticket_cpu, fn) { fn(PRSTM_BACKEND_CPU); } \
  Test(ticket_gpu, fn, .timeout = 120) { fn(PRSTM_BACKEND_GPU); }

BOTH_BACKENDS(tickets_of_one_counter_give_every_number_once)
BOTH_BACKENDS(tickets_beside_readers_and_writers_stay_serializable)
BOTH_BACKENDS(a_ticket_that_overflows_the_read_set_fails_its_row)
