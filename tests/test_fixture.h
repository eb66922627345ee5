/* test_fixture.h: one transaction attempt driven by hand on a small host context, for the unit tests of the STM core and the contention manager. */
#ifndef TEST_FIXTURE_H
#define TEST_FIXTURE_H

#include <string.h>

#include "prstm_tx.h"

/* Entries of each set after fixture_widen: a commit of many locks. */
#define FIXTURE_WIDE_SETS 16

/* A host context of `nwords` words, all zero, for driving one attempt by
 * hand; its sets hold 4 entries each until fixture_widen. */
typedef struct fixture {
  uint64_t words[64];
  uint64_t locks[64];
  uint64_t add_counts[64];
  uint64_t quiesce[STM_Q_WORDS];
  prstm_exec_ctx ctx;
  stm_read_entry reads[FIXTURE_WIDE_SETS];
  stm_write_entry writes[FIXTURE_WIDE_SETS];
  stm_lock_entry lockset[FIXTURE_WIDE_SETS];
#if STM_INDEXED
  stm_index index[3];
#endif
  prstm_tx tx;
} fixture;

static inline void fixture_init(fixture *f, uint64_t nwords, uint64_t coverage) {
  memset(f, 0, sizeof *f);
  f->ctx.words = f->words;
  f->ctx.nwords = nwords;
  f->ctx.held_n = nwords;
  f->ctx.locks = f->locks;
  f->ctx.lock_coverage = coverage;
  f->ctx.nlocks = (nwords + coverage - 1) / coverage;
  f->ctx.quiesce = f->quiesce;
  f->tx.ctx = &f->ctx;
  f->tx.cap = 4;
  f->tx.reads = f->reads;
  f->tx.writes = f->writes;
  f->tx.locks = f->lockset;
#if STM_INDEXED
  f->tx.index = f->index;
#endif
}

/* Lets the attempt's sets hold FIXTURE_WIDE_SETS entries each. */
static inline void fixture_widen(fixture *f) { f->tx.cap = FIXTURE_WIDE_SETS; }

/* Gives the context counters of adds in flight, as a workload with uses_add has. */
static inline void fixture_use_adds(fixture *f) { f->ctx.add_counts = f->add_counts; }

/* A row's first attempt of a transfer from `from` to `to` that reads,
 * writes, reads and writes, left for the test to commit: its locks are
 * exactly its reads. */
static inline void fixture_first_transfer(fixture *f, uint64_t prio, uint64_t from, uint64_t to, uint64_t amount) {
  stm_tx_begin(&f->tx, 0, prio);
  f->tx.direct = 1;
  uint64_t a = prstm_read(&f->tx, from);
  prstm_write(&f->tx, from, a - amount);
  uint64_t b = prstm_read(&f->tx, to);
  prstm_write(&f->tx, to, b + amount);
}

#endif /* TEST_FIXTURE_H */
