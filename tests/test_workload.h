/* test_workload.h: a test-only workload ("probe") whose types provoke write skew, lost updates, capacity overflow, wild addresses, and commutative adds and tickets beside readers and writers. */
#ifndef TEST_WORKLOAD_H
#define TEST_WORKLOAD_H

#include <stddef.h>

#include "prstm_tx.h"

enum {
  PROBE_SKEW = 0,
  PROBE_INCREMENT = 1,
  PROBE_SUM = 2,
  PROBE_TOUCH = 3,
  PROBE_WILD = 4,
  PROBE_MOVE = 5,
  PROBE_LIVELOCK = 6,
  PROBE_ADD = 7,
  PROBE_ADD_THEN_READ = 8,
  PROBE_COPY = 9,
  PROBE_SET = 10,
  PROBE_TICKET = 11,
  PROBE_TICKET_THEN_READ = 12,
  PROBE_SUM_THEN_TICKET = 13
};
#define PROBE_CAPACITY 16

/* Reads one word and writes another: if read is 0, write becomes 1. Two such
 * transactions crossed (x->y, y->x) must not both write: that is write skew. */
PRSTM_INLINE int probe_skew(prstm_tx *tx) {
  uint64_t seen = prstm_read(tx, prstm_arg(tx, 0));
  if (seen == 0) prstm_write(tx, prstm_arg(tx, 1), 1);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int probe_increment(prstm_tx *tx) {
  uint64_t w = prstm_arg(tx, 0);
  prstm_write(tx, w, prstm_read(tx, w) + 1);
  return PRSTM_COMMIT;
}

/* Read-only: the sum of `count` words from `first`. */
PRSTM_INLINE int probe_sum(prstm_tx *tx) {
  uint64_t first = prstm_arg(tx, 0), count = prstm_arg(tx, 1), sum = 0;
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) sum += prstm_read(tx, first + i);
  prstm_set_result(tx, sum);
  return PRSTM_COMMIT;
}

/* Adds one to every listed word; a long list overflows the sets. */
PRSTM_INLINE int probe_touch(prstm_tx *tx) {
  uint64_t count = prstm_arg(tx, 0);
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) {
    uint64_t w = prstm_arg(tx, 1 + (unsigned)i);
    prstm_write(tx, w, prstm_read(tx, w) + 1);
  }
  return PRSTM_COMMIT;
}

/* Reads a word given as a plain integer, which may be out of range. */
PRSTM_INLINE int probe_wild(prstm_tx *tx) {
  prstm_set_result(tx, prstm_read(tx, prstm_arg(tx, 0)));
  return PRSTM_COMMIT;
}

/* Moves amount between two words without any semantic check (wraps). */
PRSTM_INLINE int probe_move(prstm_tx *tx) {
  uint64_t from = prstm_arg(tx, 0), to = prstm_arg(tx, 1), amount = prstm_arg(tx, 2);
  prstm_write(tx, from, prstm_read(tx, from) - amount);
  prstm_write(tx, to, prstm_read(tx, to) + amount);
  return PRSTM_COMMIT;
}

/* Meets a concurrent conflict on every attempt, forever: it stands for a
 * livelock bug, which the watchdog must stop. */
PRSTM_INLINE int probe_livelock(prstm_tx *tx) {
  prstm_read(tx, prstm_arg(tx, 0));
  stm_tx_doom(tx, STM_TX_CONFLICT);
  return PRSTM_COMMIT;
}

/* Adds `delta` to a word without reading it. */
PRSTM_INLINE int probe_add(prstm_tx *tx) {
  prstm_add(tx, prstm_arg(tx, 0), prstm_arg(tx, 1));
  return PRSTM_COMMIT;
}

/* Adds `delta` to a word, then reads it and writes what it read to `to`. */
PRSTM_INLINE int probe_add_then_read(prstm_tx *tx) {
  uint64_t w = prstm_arg(tx, 0);
  prstm_add(tx, w, prstm_arg(tx, 1));
  prstm_write(tx, prstm_arg(tx, 2), prstm_read(tx, w));
  return PRSTM_COMMIT;
}

/* Copies one word into another: a reader of words others add to. */
PRSTM_INLINE int probe_copy(prstm_tx *tx) {
  prstm_write(tx, prstm_arg(tx, 1), prstm_read(tx, prstm_arg(tx, 0)));
  return PRSTM_COMMIT;
}

/* Sets a word without reading it: a writer of words others add to. */
PRSTM_INLINE int probe_set(prstm_tx *tx) {
  prstm_write(tx, prstm_arg(tx, 0), prstm_arg(tx, 1));
  return PRSTM_COMMIT;
}

/* Numbers itself from a counter: `dest` gets the counter's value, and the
 * counter goes up by one, at commit. */
PRSTM_INLINE int probe_ticket(prstm_tx *tx) {
  prstm_ticket(tx, prstm_arg(tx, 0), prstm_arg(tx, 1));
  return PRSTM_COMMIT;
}

/* Takes a ticket, then reads its counter and writes what it read to `to`:
 * the read takes the ticket at that point of the body. */
PRSTM_INLINE int probe_ticket_then_read(prstm_tx *tx) {
  const uint64_t counter = prstm_arg(tx, 0);
  prstm_ticket(tx, counter, prstm_arg(tx, 1));
  prstm_write(tx, prstm_arg(tx, 2), prstm_read(tx, counter));
  return PRSTM_COMMIT;
}

/* Reads `count` words from `first`, then takes a ticket: with locks that
 * cover several words, a long read list leaves no room for the counter's
 * read when the ticket must be taken as one. */
PRSTM_INLINE int probe_sum_then_ticket(prstm_tx *tx) {
  const uint64_t first = prstm_arg(tx, 0), count = prstm_arg(tx, 1);
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) prstm_read(tx, first + i);
  prstm_ticket(tx, prstm_arg(tx, 2), prstm_arg(tx, 3));
  return PRSTM_COMMIT;
}

PRSTM_INLINE int probe_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case PROBE_SUM_THEN_TICKET:
      return probe_sum_then_ticket(tx);
    case PROBE_TICKET:
      return probe_ticket(tx);
    case PROBE_TICKET_THEN_READ:
      return probe_ticket_then_read(tx);
    case PROBE_ADD:
      return probe_add(tx);
    case PROBE_ADD_THEN_READ:
      return probe_add_then_read(tx);
    case PROBE_COPY:
      return probe_copy(tx);
    case PROBE_SET:
      return probe_set(tx);
    case PROBE_LIVELOCK:
      return probe_livelock(tx);
    case PROBE_SKEW:
      return probe_skew(tx);
    case PROBE_INCREMENT:
      return probe_increment(tx);
    case PROBE_SUM:
      return probe_sum(tx);
    case PROBE_TOUCH:
      return probe_touch(tx);
    case PROBE_WILD:
      return probe_wild(tx);
    default:
      return probe_move(tx);
  }
}

extern const prstm_workload test_probe_workload;
/* The same types, with uses_add: adds run side by side. */
extern const prstm_workload test_probe_adds_workload;

/* Host memory as the GPU's runtime sees it (test_workload_gpu.cu; -1
 * without CUDA): whether p is page-locked (1) or ordinary (0), and page-
 * locking a range as a caller of the library might (0 on success). */
#ifdef __cplusplus
extern "C" {
#endif
int test_host_pages_locked(const void *p);
int test_host_pages_lock(void *p, size_t bytes);
int test_host_pages_unlock(void *p);
#ifdef __cplusplus
}
#endif

#endif /* TEST_WORKLOAD_H */
