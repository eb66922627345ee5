/* stm_core.h: the PR-STM core (read, write, validate, commit) written once for the GPU kernel and the CPU threads. */
#ifndef STM_CORE_H
#define STM_CORE_H

#include <stdint.h>
#include "stm_lock.h"
#include "stm_port.h"
#include "txtable_view.h"

#define STM_MAX_TYPES 64

/* Commutative adds (prstm_add) commit side by side only in code compiled
 * with PRSTM_USES_ADD defined before the first include of prstm_tx.h (a body
 * header that calls prstm_add defines it first thing); without it every add
 * is a read and a write. So the kernels of other workloads carry none of
 * the adds' code: inlined at every read and commit site, it made them
 * larger and slower (docs/DESIGN-NOTES.md, "Commutative adds"). */
#ifdef PRSTM_USES_ADD
#define STM_ADDS 1
#else
#define STM_ADDS 0
#endif

/* Tickets (prstm_ticket) are taken at commit only in code compiled with
 * PRSTM_USES_TICKETS defined before the first include of prstm_tx.h, for
 * the same reason: the other kernels carry none of their code. Without it
 * a ticket is a read of its counter and two writes, with the same outcome. */
#ifdef PRSTM_USES_TICKETS
#define STM_TICKETS 1
#else
#define STM_TICKETS 0
#endif

/* Hash indexes of the read, write and lock sets, in code compiled with
 * PRSTM_WIDE_SETS defined before the first include of prstm_tx.h (a body
 * header whose transactions touch tens of words). Every read, write and
 * lock of an attempt looks its key up in its set first, and so does every
 * commit for each lock and each read; a search of a set of n entries costs
 * up to n comparisons, so an attempt that touches n words pays n^2 / 2 of
 * them, and on a GPU the sets of such a body sit in thread-local memory,
 * where each comparison is a trip to the cache. An index finds the entry in
 * a slot or two instead (stm_index). Small sets keep none: the lookups are
 * as short without it, and its clearing would cost every attempt. */
#ifdef PRSTM_WIDE_SETS
#define STM_INDEXED 1
#else
#define STM_INDEXED 0
#endif

/* A row's first attempts take the lock of each word as they read it, in
 * code compiled with PRSTM_FIRST_ATTEMPT_LOCKS defined before the first
 * include of prstm_tx.h (a body header whose transactions write what they
 * read: a bank transfer). Their reads then cost one atomic each instead of a
 * lock load, and their commit nothing but the writes and the releases: no
 * CAS, no fence before them, no validation (stm_tx_read_locked). A body
 * that reads words it does not write would lock them too, shutting out
 * other readers for the length of its body, so the others keep invisible
 * reads. Not with adds or tickets, whose commits take their own paths. */
#if defined(PRSTM_FIRST_ATTEMPT_LOCKS) && !defined(PRSTM_USES_ADD) && !defined(PRSTM_USES_TICKETS)
#define STM_EARLY_LOCKS 1
#else
#define STM_EARLY_LOCKS 0
#endif

/* Counters each executing thread keeps privately and publishes once at the end. */
typedef struct stm_thread_stats {
  uint64_t committed, aborts, postponements, failed, abandoned, sweeps;
  uint64_t published_committed; /* commits already added to STM_Q_COMMITTED */
  uint64_t published_ns;        /* when they were, by port_clock_ns */
  uint64_t published_failed;    /* failures already added to STM_Q_FAILED */
  uint64_t published_abandoned; /* abandonments already added to STM_Q_ABANDONED */
} stm_thread_stats;

/* Global words of the termination protocol (cmp_walk.h). */
enum {
  STM_Q_EPOCH_STALLED = 0, /* epoch | unconfirmed | threads stalled in that epoch (cmp_walk.h) */
  STM_Q_DONE = 1,          /* threads whose block is entirely final */
  STM_Q_SEQUENCE = 2,      /* commit sequence (verification) */
  STM_Q_STOP = 3,          /* set by the host's watchdog: every thread leaves */
  STM_Q_COMMITTED = 4,     /* commits published so far (watchdog, progress observer) */
  STM_Q_FINISHED = 5,      /* threads that have left their walk */
  STM_Q_FAILED = 6,        /* failures published so far (watchdog, progress observer) */
  STM_Q_ABANDONED = 7,     /* abandonments published so far (progress observer) */
  STM_Q_EPOCH = 8,         /* the epoch in full; STM_Q_EPOCH_STALLED holds its low bits */
  /* Every thread's counters, added once when its walk ends (cmp_walk_block),
   * so that a stream reads a unit's with its progress words. */
  STM_Q_ABORTS = 9,
  STM_Q_POSTPONEMENTS = 10,
  STM_Q_SWEEPS = 11,
  STM_Q_WORDS = 12
};

/* Whether the host asked every thread to stop (watchdog). */
#define STM_STOPPED(ctx) (port_load_relaxed(&(ctx)->quiesce[STM_Q_STOP]) != 0)

/* Everything a worker needs, as plain pointers into device or host memory.
 * Passed by value to the kernel, so it holds no host-only types. */
typedef struct prstm_exec_ctx {
  uint64_t *words;
  uint64_t nwords;
  /* The words this context holds, [held_lo, held_lo + held_n): the whole
   * state (0 and nwords), except in a unit of a run whose units partition
   * the state (engine/multi.c), where words points held_lo words before the
   * unit's memory, so that word w is still words[w]. */
  uint64_t held_lo, held_n;
  uint64_t *locks;
  uint64_t nlocks;
  uint64_t lock_coverage;
  /* Commutative adds in flight, one counter per lock (nlocks words), where
   * the workload declares uses_add; NULL elsewhere, and prstm_add is then a
   * read and a write (see prstm_add). */
  uint64_t *add_counts;
  txtable_view table;
  uint8_t type_tag[STM_MAX_TYPES];
  uint32_t tag_mask; /* bit t set when some row has semantic tag t */
  /* Types whose rows read without a read set (bit t for type t): set only
   * where one thread runs alone on a state nobody else changes (the rows
   * of snapshot types, before a run, and in the serial replay), never in
   * a run's threads. */
  uint64_t unchecked_types;
  uint32_t nthreads;
  uint32_t semantic; /* prstm_semantic_mode, and run flags above its low byte */
  uint32_t retry_limit;
  /* A thread's priority is that of rank + rank_base (cmp_priority). Two
   * units of a GPU stream that execute at once take disjoint ranges of
   * ranks, so that no two transactions in flight share a priority, which
   * also names a lock's owner. 0 in every other run. */
  uint32_t rank_base;
  stm_thread_stats *stats; /* one per thread, or NULL where nothing reads them */
  uint64_t *quiesce;       /* STM_Q_WORDS words */
  /* The counter the commit order's numbers are taken from (verification):
   * NULL for the run's own STM_Q_SEQUENCE word. The units of a GPU stream
   * that may execute at once all take theirs from one counter, since their
   * commits interleave. */
  uint64_t *sequence;
  /* The footprint of a unit of a co-executed run (engine/hetero.c): one
   * byte per lock, set to 1 under every lock a decided row read, and under
   * every lock it wrote or added under. NULL in every other run. */
  uint8_t *read_marks, *write_marks;
  /* The footprint span of a unit of a run over several units whose ranges
   * of locks are contiguous (engine/multi.c): STM_SPAN_WORDS words, the
   * first and one past the last lock a decided row read or wrote under, and
   * the same for the locks written alone. Each thread folds its own span in
   * once, at the end of its walk, so a row costs a few compares instead of a
   * mark per lock. NULL in every other run. */
  uint64_t *span;
} prstm_exec_ctx;

/* The words of prstm_exec_ctx.span. An empty span has LO above HI. */
enum { STM_SPAN_LO = 0, STM_SPAN_HI = 1, STM_SPAN_WRITE_LO = 2, STM_SPAN_WRITE_HI = 3, STM_SPAN_WORDS = 4 };
#define STM_SPAN_EMPTY_LO UINT64_MAX

/* Outcomes a transaction body returns. */
enum { PRSTM_COMMIT = 0, PRSTM_POSTPONE = 1, PRSTM_FAIL = 2 };

/* States of an attempt while its body runs. */
enum {
  STM_TX_OK = 0,
  STM_TX_CONFLICT = 1,    /* concurrent conflict: the attempt is retried */
  STM_TX_CAPACITY = 2,    /* a set overflowed: fails the transaction if the snapshot holds */
  STM_TX_BAD_ADDRESS = 3, /* out-of-range word: fails the transaction if the snapshot holds */
  STM_TX_AWAY = 4         /* a word another unit holds: the row leaves this unit if the snapshot holds */
};

typedef struct stm_read_entry {
  uint64_t lock, version;
} stm_read_entry;
/* A write-set entry: a value to store, or, with STM_WRITE_ADD in addr, a
 * delta to add (prstm_add). STM_WRITE_BLIND marks, at commit, an add under a
 * lock the transaction neither reads nor writes under, which takes no lock
 * and runs beside other such adds (stm_tx_settle_adds). STM_WRITE_UNREAD
 * marks an add to a word no transaction reads (prstm_add_unread): it takes
 * no lock and no counter at all. STM_WRITE_TICKET marks a ticket's counter
 * (prstm_ticket), whose value holds the write-set index of the ticket's
 * destination until the commit fills both. Word addresses stay far below
 * the four bits. */
typedef struct stm_write_entry {
  uint64_t addr, value;
} stm_write_entry;
#define STM_WRITE_ADD (1ull << 63)
#define STM_WRITE_BLIND (1ull << 62)
#define STM_WRITE_TICKET (1ull << 61)
#define STM_WRITE_UNREAD (1ull << 60)
#define STM_WRITE_ADDR(a) ((a) & ~(STM_WRITE_ADD | STM_WRITE_BLIND | STM_WRITE_TICKET | STM_WRITE_UNREAD))
typedef struct stm_lock_entry {
  uint64_t lock, version;
  uint32_t held; /* 0 not held, 1 pre-locked, 2 locked */
} stm_lock_entry;

/* A set's hash index (STM_INDEXED): open addressing over byte slots, each
 * 0 (empty) or 1 + the position of the entry whose key hashed there or, when
 * that slot was taken, to a slot before it. The first STM_INDEX_ENTRIES
 * entries of a set are indexed, in at least twice as many slots, so a
 * lookup rarely reads more than two; the entries past them (a capacity
 * above it) are searched one by one. A set whose entries are dropped has
 * its index cleared with them. */
#define STM_INDEX_SLOTS 256u
#define STM_INDEX_ENTRIES 128u
typedef struct stm_index {
  uint64_t words[STM_INDEX_SLOTS / 8u];
} stm_index;
enum { STM_INDEX_READS = 0, STM_INDEX_WRITES = 1, STM_INDEX_LOCKS = 2 };

/* The slots a set of capacity `cap` uses, less one: a power of two at least
 * twice its indexed entries, at least 16. */
PRSTM_INLINE uint32_t stm_index_mask(uint32_t cap) {
  const uint32_t entries = cap < STM_INDEX_ENTRIES ? cap : STM_INDEX_ENTRIES;
  uint32_t slots = 16u;
  while (slots < 2u * entries) slots <<= 1;
  return slots - 1u;
}
PRSTM_INLINE uint32_t stm_index_home(uint64_t key, uint32_t mask) {
  return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 56) & mask;
}
PRSTM_INLINE uint32_t stm_index_get(const stm_index *x, uint32_t slot) {
  return (uint32_t)(x->words[slot >> 3] >> ((slot & 7u) * 8u)) & 0xffu;
}
PRSTM_INLINE void stm_index_clear(stm_index *x, uint32_t mask) {
  for (uint32_t i = 0; i <= mask >> 3; i++) x->words[i] = 0;
}
/* Records that entry `pos` holds `key` (a key not in the set yet). */
PRSTM_INLINE void stm_index_add(stm_index *x, uint32_t mask, uint64_t key, uint32_t pos) {
  if (pos >= STM_INDEX_ENTRIES) return;
  uint32_t slot = stm_index_home(key, mask);
  while (stm_index_get(x, slot) != 0) slot = (slot + 1u) & mask;
  x->words[slot >> 3] |= (uint64_t)(pos + 1u) << ((slot & 7u) * 8u);
}

/* One transaction attempt: thread-private sets of fixed capacity. */
typedef struct prstm_tx {
  const prstm_exec_ctx *ctx;
  uint64_t row;
  uint64_t prio;
  uint64_t result;
  /* Under verification, a hash of every value prstm_read returned, in order:
   * the replay recomputes it, so that a transaction that read other values
   * than its place in the commit order gives is caught even when its writes
   * come out the same. */
  uint64_t read_hash;
  uint32_t nreads, nwrites, nlocks, cap;
  uint32_t state;
  uint32_t reason;
  /* The lock word that made the last attempt abort, as it was seen, when the
   * abort was caused by another transaction holding that lock (a final lock,
   * or a pre-lock of higher priority). The retry waits until the word changes
   * instead of racing the holder again; see cmp_wait_conflict. */
  uint64_t conflict_lock, conflict_word;
  uint32_t conflict_wait;
  /* This attempt may take its final locks directly (stm_tx_lock_direct),
   * or, compiled with STM_EARLY_LOCKS, holds the lock of every word it read
   * (stm_tx_read_locked): set by the walk on a row's first attempt only
   * (with STM_EARLY_LOCKS, on the first PRSTM_POLICY_EARLY_LOCK_ATTEMPTS
   * attempts of the row's first visit: cmp_attempt), so that every later
   * retry runs the priority rule unchanged. */
  uint32_t direct;
  /* The counters of this attempt's blind adds are raised (stm_tx_count_adds). */
  uint32_t adds_counted;
  /* Reads need no read set (prstm_exec_ctx.unchecked_types): host only. */
  uint32_t unchecked;
  /* Whether the walk is the worker's walk for a thread alone on its state
   * (stm_tx_alone): a constant of each of the worker's two walks, set
   * once, never by an attempt. */
  uint32_t alone;
  /* In the walk of a thread alone, whether every word has a lock of its
   * own (lock_coverage 1), set once by the worker: the lone reads then key
   * their entries by address without loading the coverage at each read.
   * 0 (any other walk) reads the coverage. */
  uint32_t alone_word_locks;
  /* In the walk of a thread alone, whether the table's argument columns are
   * 32-bit (txtable_view's narrow_args), set once by the worker. */
  uint32_t alone_narrow;
  stm_read_entry *reads;
  stm_write_entry *writes;
  stm_lock_entry *locks;
  /* This thread's footprint span so far (prstm_exec_ctx.span), kept where
   * the walk runs with one. */
  uint64_t span[STM_SPAN_WORDS];
#if STM_INDEXED
  /* The indexes of the read, write and lock sets (STM_INDEX_READS, ...),
   * keyed by read lock, written word and lock, and their slots less one. */
  stm_index *index;
  uint32_t index_mask;
#endif
#if STM_TICKETS
  /* Whether a ticket is still to be taken at commit (prstm_ticket), and
   * the write-set index of its counter's entry; whether the commit holds
   * the final lock of that counter, and the lock's version; whether the
   * write-back has written the counter already (stm_tx_fill_ticket). */
  uint32_t ticket, ticket_entry, ticket_held, ticket_filled;
  uint64_t ticket_version;
#endif
} prstm_tx;

/* The position of the entry of `key` in one of the attempt's sets, or -1
 * when the set holds none: stm_tx_find_read (keyed by the lock read under),
 * stm_tx_find_write (by the word, whatever its marks) and stm_tx_find_lock.
 * With an index, its slots and then the entries past the indexed ones;
 * without, every entry. Each key is in its set at most once. */
#if STM_INDEXED
#define STM_DEFINE_FIND(NAME, SET, COUNT, WHICH, KEY_OF)                                              \
  PRSTM_INLINE int NAME(const prstm_tx *tx, uint64_t key) {                                           \
    const stm_index *x = &tx->index[WHICH];                                                           \
    for (uint32_t slot = stm_index_home(key, tx->index_mask);; slot = (slot + 1u) & tx->index_mask) { \
      const uint32_t v = stm_index_get(x, slot);                                                      \
      if (v == 0) break;                                                                              \
      if (KEY_OF(tx->SET[v - 1u]) == key) return (int)(v - 1u);                                       \
    }                                                                                                 \
    if (tx->cap > STM_INDEX_ENTRIES)                                                                  \
      for (uint32_t i = STM_INDEX_ENTRIES; i < tx->COUNT; i++)                                        \
        if (KEY_OF(tx->SET[i]) == key) return (int)i;                                                 \
    return -1;                                                                                        \
  }
#define STM_INDEX_ADD(tx, which, key, pos) stm_index_add(&(tx)->index[which], (tx)->index_mask, (key), (pos))
#else
#define STM_DEFINE_FIND(NAME, SET, COUNT, WHICH, KEY_OF)    \
  PRSTM_INLINE int NAME(const prstm_tx *tx, uint64_t key) { \
    for (uint32_t i = 0; i < tx->COUNT; i++)                \
      if (KEY_OF(tx->SET[i]) == key) return (int)i;         \
    return -1;                                              \
  }
#define STM_INDEX_ADD(tx, which, key, pos) ((void)0)
#endif
#define STM_KEY_OF_LOCK(e) ((e).lock)
/* A write entry's word carries marks only where adds or tickets are compiled. */
#define STM_KEY_OF_WRITE(e) ((STM_ADDS || STM_TICKETS) ? STM_WRITE_ADDR((e).addr) : (e).addr)
STM_DEFINE_FIND(stm_tx_find_read, reads, nreads, STM_INDEX_READS, STM_KEY_OF_LOCK)
STM_DEFINE_FIND(stm_tx_find_write, writes, nwrites, STM_INDEX_WRITES, STM_KEY_OF_WRITE)
STM_DEFINE_FIND(stm_tx_find_lock, locks, nlocks, STM_INDEX_LOCKS, STM_KEY_OF_LOCK)

/* ---- The body API: what a transaction type's code calls. ---- */

/* Argument `col` of the transaction being executed; 0 past the row's
 * columns, so that a body that trusts a count argument (an address list's)
 * beyond what the row holds reads zeros, never another column's memory or
 * past the table. */
PRSTM_INLINE uint64_t prstm_arg(const prstm_tx *tx, unsigned col) {
  if (!tx->alone) return txtable_arg(&tx->ctx->table, tx->row, col);
  return tx->alone_narrow ? txtable_arg_narrow(&tx->ctx->table, tx->row, col)
                          : txtable_arg_wide(&tx->ctx->table, tx->row, col);
}
/* The transaction's row in its batch (after presorting), unique within the
 * run, so a body can use it to claim a slot of its own (a skiplist's new
 * node) without a shared allocator word. It stays the same however the
 * engine splits the batch: a chunked run and the serial replay give every
 * transaction its batch row, and a stream numbers its batches' rows one
 * after another (the first batch's from 0, the next from where it ended). */
PRSTM_INLINE uint64_t prstm_row(const prstm_tx *tx) { return txtable_row_number(&tx->ctx->table, tx->row); }
/* False once the attempt is doomed; a body with loops checks it and returns. */
PRSTM_INLINE int prstm_ok(const prstm_tx *tx) { return tx->state == STM_TX_OK; }
/* Number of shared words. */
PRSTM_INLINE uint64_t prstm_nwords(const prstm_tx *tx) { return tx->ctx->nwords; }
/* The value a read-only type reports for its transaction. */
PRSTM_INLINE void prstm_set_result(prstm_tx *tx, uint64_t v) { tx->result = v; }
/* Fails the transaction permanently with a reason (PRSTM_REASON_USER + k).
 * The engine's own reason for a row sent away from its unit
 * (TXTABLE_REASON_AWAY) is no body's: a body that names it fails with no
 * reason instead, so that the host never takes its failure for a row to
 * run again. */
PRSTM_INLINE int prstm_fail(prstm_tx *tx, unsigned reason) {
  tx->reason = reason == TXTABLE_REASON_AWAY ? TXTABLE_REASON_NONE : reason;
  return PRSTM_FAIL;
}

/* A run flag of prstm_exec_ctx.semantic: the run has one executing thread,
 * and nothing else reads or writes its state while it runs
 * (engine_ctx_set_lone). Its attempts read without the lock words and
 * commit with no lock, fence or validation (stm_tx_commit_lone). Each
 * worker walks in two copies (PRSTM_CPU_WORKER, PRSTM_GPU_WORKER: two
 * kernels), and such a run takes the alone one, whose prstm_tx.alone is
 * the constant 1: in the other copy it is the constant 0, and the code of
 * running alone compiles away. Tested at run time instead, its few
 * branches slowed TPC-C's kernel on a full GPU by a tenth. */
#define STM_SEMANTIC_LONE 0x200u
PRSTM_INLINE int stm_tx_alone(const prstm_tx *tx) { return (int)tx->alone; }
/* A run flag of prstm_exec_ctx.semantic: the workload declares uses_add,
 * so prstm_add_unread takes no lock (engine_ctx_fill_common). The serial
 * replay leaves it off. */
#define STM_SEMANTIC_ADDS 0x400u

PRSTM_INLINE void stm_tx_doom(prstm_tx *tx, uint32_t state) {
  if (tx->state == STM_TX_OK) tx->state = state;
}

/* Whether the context holds word addr; where it does not, dooms the
 * attempt: a word beyond the state is a bad address, and a word of the
 * state that another unit holds sends the row away from this one. One
 * compare on the path of every access, as the bound check alone was. */
PRSTM_INLINE int stm_tx_holds(prstm_tx *tx, uint64_t addr) {
  if (addr - tx->ctx->held_lo < tx->ctx->held_n) return 1;
  stm_tx_doom(tx, addr < tx->ctx->nwords ? STM_TX_AWAY : STM_TX_BAD_ADDRESS);
  return 0;
}

/* Ends the attempt as a concurrent conflict does: the engine runs the
 * transaction again from its start. For a body that walks a structure by
 * hints (prstm_read_immutable of written words) and finds, on reading a
 * word through prstm_read, that another transaction changed it since the
 * hint: the attempt's path is stale, and its validated reads so far may not
 * be the ones a fresh walk would make. Call it only on such evidence of
 * another commit, or the attempt restarts for ever. */
PRSTM_INLINE void prstm_restart(prstm_tx *tx) { stm_tx_doom(tx, STM_TX_CONFLICT); }

/* Records that another transaction holds lock `l` (its word read as `w`), so
 * that the retry waits for that holder to move on. */
PRSTM_INLINE void stm_tx_note_holder(prstm_tx *tx, uint64_t l, uint64_t w) {
  if (!stm_lock_is_locked(w) && !stm_lock_is_prelocked(w)) return; /* nobody holds it now */
  tx->conflict_lock = l;
  tx->conflict_word = w;
  tx->conflict_wait = 1;
}

/* One step of the read hash (prstm_tx.read_hash): order-dependent, and
 * cheap enough to leave the reads it follows as they are. */
PRSTM_INLINE uint64_t stm_read_hash_step(uint64_t h, uint64_t value) {
  return h ^ (value + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

/* Returns value, folded into the read hash when the run records it. */
PRSTM_INLINE uint64_t stm_tx_saw(prstm_tx *tx, uint64_t value) {
  if (tx->ctx->table.read_hash) tx->read_hash = stm_read_hash_step(tx->read_hash, value);
  return value;
}

/* Invisible read: the lock word with acquire order, then the value. The
 * published pseudocode reads the value first, which lets a value newer than
 * its recorded version pass validation; here the version is read before the
 * value, so a value written after it always shows as a moved version (or a
 * held lock) at validation, which comes after a fence. */
/* The read set's side of a read of lock l at `version`, whose value (plus
 * the attempt's own delta) is `value`. */
PRSTM_INLINE uint64_t stm_tx_read_record(prstm_tx *tx, uint64_t l, uint64_t version, uint64_t value, int hash) {
  /* With lock_coverage > 1 several addresses share a lock: one entry per lock,
   * and every read under it must have seen the same version. */
  const int r = stm_tx_find_read(tx, l);
  if (r >= 0) {
    if (tx->reads[r].version != version) stm_tx_doom(tx, STM_TX_CONFLICT);
    return hash ? stm_tx_saw(tx, value) : value;
  }
  if (tx->nreads == tx->cap) {
    stm_tx_doom(tx, STM_TX_CAPACITY);
    return 0;
  }
  STM_INDEX_ADD(tx, STM_INDEX_READS, l, tx->nreads);
  tx->reads[tx->nreads].lock = l;
  tx->reads[tx->nreads].version = version;
  tx->nreads++;
  return hash ? stm_tx_saw(tx, value) : value;
}

#if STM_EARLY_LOCKS
/* The read of an attempt that locks as it reads (STM_EARLY_LOCKS): the word's
 * lock is taken final as it is read, by setting its locked bit with one
 * atomic, and the value is loaded under it. What the atomic returns is the
 * word before, whose version the entry keeps.
 * - Locked before: another committer holds it, and the attempt ends as a
 *   concurrent conflict; the retry, once the holder moved on, locks as it
 *   reads again while the row has such attempts left
 *   (PRSTM_POLICY_EARLY_LOCK_ATTEMPTS), and takes the ordinary path after.
 * - Pre-locked before: the pre-lock is taken away, as a validator revokes
 *   a lower one, whatever its priority; its owner's final-lock CAS then
 *   fails. Only the first PRSTM_POLICY_EARLY_LOCK_ATTEMPTS attempts of a
 *   row's first visit do this, a bounded number of times a row however
 *   often it is postponed, so the owner meets finitely many of them and
 *   the priority rule still decides every later retry.
 * - Free before: the lock is this attempt's, at that version.
 * Holding the lock of every word it read, the attempt sees a snapshot no
 * one can change until it writes: its commit has nothing to validate, and
 * so has its postponement or failure. It never waits while it holds a
 * lock, so it waits for nobody and nobody waits on it for long. */
PRSTM_INLINE uint64_t stm_tx_read_locked(prstm_tx *tx, uint64_t addr, uint64_t delta, int hash) {
  const prstm_exec_ctx *ctx = tx->ctx;
  const uint64_t l = stm_lock_index(addr, ctx->lock_coverage);
  if (stm_tx_find_read(tx, l) < 0) {
    int k = stm_tx_find_lock(tx, l);
    if (tx->nreads == tx->cap) {
      stm_tx_doom(tx, STM_TX_CAPACITY);
      return 0;
    }
    if (k < 0 && tx->nlocks == tx->cap) {
      /* The lock set, which here also holds the locks written without a
       * read, is full where the ordinary path's read set is not: the first
       * retry past the attempts that lock as they read decides by that
       * path. */
      stm_tx_doom(tx, STM_TX_CONFLICT);
      return 0;
    }
    const uint64_t before = port_fetch_or_acquire(&ctx->locks[l], STM_LOCK_LOCKED);
    if (stm_lock_is_locked(before)) {
      stm_tx_note_holder(tx, l, before);
      stm_tx_doom(tx, STM_TX_CONFLICT);
      return 0;
    }
    if (k < 0) {
      k = (int)tx->nlocks++;
      STM_INDEX_ADD(tx, STM_INDEX_LOCKS, l, (uint32_t)k);
      tx->locks[k].lock = l;
    }
    tx->locks[k].version = stm_lock_version(before);
    tx->locks[k].held = 2;
    STM_INDEX_ADD(tx, STM_INDEX_READS, l, tx->nreads);
    tx->reads[tx->nreads].lock = l;
    tx->reads[tx->nreads].version = stm_lock_version(before);
    tx->nreads++;
  }
  const uint64_t value = port_load_relaxed(&ctx->words[addr]) + delta;
  return hash ? stm_tx_saw(tx, value) : value;
}
#endif

/* The read itself, of an address in range that the attempt has not written:
 * the lock word, the value, the read-set entry. Returns the value plus
 * `delta` (an add of this attempt to the word, prstm_read), folded into the
 * read hash when `hash` (what the body sees; an add's own read is not). */
PRSTM_INLINE uint64_t stm_tx_read_word(prstm_tx *tx, uint64_t addr, uint64_t delta, int hash) {
  const prstm_exec_ctx *ctx = tx->ctx;
  /* Alone, no lock is ever held and no version moves: the value comes
   * through L1, and the entry keeps version 0 for the set's capacity and
   * footprint. A branch of its own, so that the loads of every other run's
   * reads stay as they were. */
  if (stm_tx_alone(tx)) {
    const uint64_t lone = tx->alone_word_locks ? addr : stm_lock_index(addr, ctx->lock_coverage);
    return stm_tx_read_record(tx, lone, 0, port_load_alone(&ctx->words[addr]) + delta, hash);
  }
#if STM_EARLY_LOCKS
  if (tx->direct) return stm_tx_read_locked(tx, addr, delta, hash);
#endif
  uint64_t l = stm_lock_index(addr, ctx->lock_coverage);
  uint64_t before = port_load_acquire(&ctx->locks[l]);
  if (stm_lock_is_locked(before)) {
    stm_tx_note_holder(tx, l, before);
    stm_tx_doom(tx, STM_TX_CONFLICT);
    return 0;
  }
  uint64_t value = port_load_relaxed(&ctx->words[addr]) + delta;
  return stm_tx_read_record(tx, l, stm_lock_version(before), value, hash);
}

PRSTM_INLINE void stm_tx_lock_for_write(prstm_tx *tx, uint64_t addr);
/* A read of an address in range, folded into the read hash when `hash`
 * (a read the body sees). */
PRSTM_INLINE uint64_t stm_tx_read(prstm_tx *tx, uint64_t addr, int hash) {
  /* A word this attempt added to is read as the shared value plus the
   * delta: the read joins the read set, and the add, now under a lock the
   * attempt reads under, is applied under its own lock at commit
   * (stm_tx_settle_adds), so the value read stays the value written on. */
  uint64_t delta = 0;
  const int w = stm_tx_find_write(tx, addr);
  if (w >= 0) {
    if (tx->writes[w].addr == addr) return hash ? stm_tx_saw(tx, tx->writes[w].value) : tx->writes[w].value;
    if (STM_ADDS && (tx->writes[w].addr & ~STM_WRITE_UNREAD) == (addr | STM_WRITE_ADD)) {
      /* The attempt reads a word it added to: its own add no longer goes
       * unread, and commits under the word's lock as any add that the
       * attempt reads, so writers and ordinary adds of the word still
       * conflict with it. Other attempts' unread adds do not (they move no
       * version): a read of a word added to unread breaks that promise,
       * the adder's own read included. */
      tx->writes[w].addr &= ~STM_WRITE_UNREAD;
      delta = tx->writes[w].value;
      /* Without counters (PRSTM_ADDS_UNREAD_ONLY) the commit settles no
       * add (stm_tx_settle_adds): the word's lock joins the lock set here. */
      if (!tx->ctx->add_counts) stm_tx_lock_for_write(tx, addr);
    }
  }
#if !defined(__CUDA_ARCH__)
  /* One thread alone on a state nobody changes: nothing to validate. */
  if (tx->unchecked) {
    const uint64_t value = port_load_relaxed(&tx->ctx->words[addr]) + delta;
    return hash ? stm_tx_saw(tx, value) : value;
  }
#endif
  return stm_tx_read_word(tx, addr, delta, hash);
}

#if STM_TICKETS
PRSTM_INLINE void stm_tx_resolve_ticket(prstm_tx *tx);
/* Whether `addr` is the counter or the destination of the attempt's ticket. */
PRSTM_INLINE int stm_tx_ticket_touches(const prstm_tx *tx, uint64_t addr) {
  const stm_write_entry *t = &tx->writes[tx->ticket_entry];
  return addr == STM_WRITE_ADDR(t->addr) || addr == tx->writes[t->value].addr;
}
/* A body that reads or writes the counter or the destination of its ticket
 * takes the ticket first, at that point of the body. */
#define STM_TICKET_TOUCHED(tx, addr) \
  if ((tx)->ticket && stm_tx_ticket_touches((tx), (addr))) stm_tx_resolve_ticket(tx)
#else
#define STM_TICKET_TOUCHED(tx, addr) ((void)0)
#endif

PRSTM_INLINE uint64_t prstm_read(prstm_tx *tx, uint64_t addr) {
  if (tx->state != STM_TX_OK) return 0;
  if (!stm_tx_holds(tx, addr)) return 0;
  STM_TICKET_TOUCHED(tx, addr);
  return stm_tx_read(tx, addr, 1);
}

/* Read of a word that no transaction of the batch ever writes (a graph's
 * edges, a table of constants): no lock check and no read-set entry, so
 * large static inputs cost no set capacity and no validation. Reading a word
 * that some transaction does write through this call breaks isolation; the
 * verification replay (--verify) catches such a misuse as a mismatch.
 * One use of a written word is sound: a hint whose only effect is to
 * postpone. A postponement commits nothing, and the value read is never
 * older than the state at the start of the thread's sweep, so on the final
 * quiescent state (where abandonment is decided) the hint is exact; k-means
 * checks with it whether the previous iteration is complete before paying
 * for validated reads. A second sound use: hints that only choose which
 * words to read through prstm_read, where the validated values alone decide
 * what the transaction writes or returns and prove the choice right (a
 * skiplist walk takes its steps by hints and validates the one link it stops
 * at on each level; skiplist_body.h says why that suffices). A body that
 * finds a validated value different from its hint calls prstm_restart.
 * Anything the transaction writes or returns must come from prstm_read or
 * from words no transaction writes. */
PRSTM_INLINE uint64_t prstm_read_immutable(prstm_tx *tx, uint64_t addr) {
  if (tx->state != STM_TX_OK) return 0;
  if (!stm_tx_holds(tx, addr)) return 0;
  return port_load_relaxed(&tx->ctx->words[addr]);
}

/* The lock of `addr` joins the lock set, once. The lock set can never
 * outgrow the write set, whose capacity is the same: every lock in it covers
 * at least one entry of the write set. */
PRSTM_INLINE void stm_tx_lock_for_write(prstm_tx *tx, uint64_t addr) {
  /* Alone, nothing is ever locked (stm_tx_commit_lone): the set stays empty. */
  if (stm_tx_alone(tx)) return;
  uint64_t l = stm_lock_index(addr, tx->ctx->lock_coverage);
  if (stm_tx_find_lock(tx, l) >= 0) return;
#if STM_EARLY_LOCKS
  /* The lock set of an attempt that locks as it reads also holds the locks
   * it only read, and can fill before its write set does: it ends as a
   * conflict, and the first retry past such attempts
   * (PRSTM_POLICY_EARLY_LOCK_ATTEMPTS), whose lock set follows its writes
   * alone, decides as before. */
  if (tx->nlocks == tx->cap) {
    stm_tx_doom(tx, STM_TX_CONFLICT);
    return;
  }
#endif
  STM_INDEX_ADD(tx, STM_INDEX_LOCKS, l, tx->nlocks);
  tx->locks[tx->nlocks].lock = l;
  tx->locks[tx->nlocks].version = 0;
  tx->locks[tx->nlocks].held = 0;
  tx->nlocks++;
}

/* A buffered write, with the word's lock joining the lock set where lock
 * is set (prstm_write) and not where the word is private to the row
 * (prstm_write_private). */
PRSTM_INLINE void stm_tx_write(prstm_tx *tx, uint64_t addr, uint64_t value, int lock) {
  if (tx->state != STM_TX_OK) return;
  if (!stm_tx_holds(tx, addr)) return;
  STM_TICKET_TOUCHED(tx, addr);
  const int i = stm_tx_find_write(tx, addr);
  if (i >= 0) {
    /* A value written over an add replaces it: the add's word is now written. */
    if (STM_ADDS && lock && tx->writes[i].addr != addr) stm_tx_lock_for_write(tx, addr);
    tx->writes[i].addr = addr;
    tx->writes[i].value = value;
    return;
  }
  if (tx->nwrites == tx->cap) {
    stm_tx_doom(tx, STM_TX_CAPACITY);
    return;
  }
  STM_INDEX_ADD(tx, STM_INDEX_WRITES, addr, tx->nwrites);
  tx->writes[tx->nwrites].addr = addr;
  tx->writes[tx->nwrites].value = value;
  tx->nwrites++;
  if (lock) stm_tx_lock_for_write(tx, addr);
}

/* Buffered write: the value reaches shared memory only at commit. */
PRSTM_INLINE void prstm_write(prstm_tx *tx, uint64_t addr, uint64_t value) { stm_tx_write(tx, addr, value, 1); }

/* Buffered write of a word that no other transaction of the run reads or
 * writes while it runs: the row's own output, such as the order rows a
 * TPC-C NewOrder inserts into its row's slot. The value reaches shared
 * memory at commit, and only then, like any write; but the word takes no
 * lock, since no other attempt can meet it there, so the commit pre-locks,
 * finalises and gives back one lock fewer. The caller promises the
 * privacy: another transaction that reads or writes the word while the run
 * is under way is not serialised against this one, and --verify's replay
 * reports it wherever a transaction saw a value out of the commit order.
 * The attempt itself may read the word back, and a prstm_write of the word
 * in the same attempt keeps it private. */
PRSTM_INLINE void prstm_write_private(prstm_tx *tx, uint64_t addr, uint64_t value) { stm_tx_write(tx, addr, value, 0); }

/* Commutative add: `delta` (modulo 2^64; a negative delta as its two's
 * complement) is added to the word at commit, without the body ever seeing
 * the word's value. Two transactions that only add to a word commute, so
 * their adds do not conflict: where the workload declares uses_add, an add
 * under a lock the transaction neither reads nor writes under takes no lock
 * at all, and any number of such adds commit side by side; a reader or
 * writer of the word still conflicts with them as with a write. A body that
 * reads the word after adding to it sees the value plus its delta, and the
 * add is then applied under the transaction's own lock. Without counters
 * (uses_add other than PRSTM_ADDS_COUNTED, and in the serial replay of
 * --verify) an add is a read and a write, with the same outcome. */
PRSTM_INLINE void stm_tx_add(prstm_tx *tx, uint64_t addr, uint64_t delta, uint64_t unread) {
  if (tx->state != STM_TX_OK) return;
  if (!stm_tx_holds(tx, addr)) return;
  STM_TICKET_TOUCHED(tx, addr);
  const int i = stm_tx_find_write(tx, addr);
  if (i >= 0) {
    /* An add over an add of the attempt keeps the stricter kind. */
    if (!unread) tx->writes[i].addr &= ~STM_WRITE_UNREAD;
    tx->writes[i].value += delta;
    return;
  }
  /* An add needs the counters, or, unread, only the workload's word that its
   * adds go unread (STM_SEMANTIC_ADDS). */
  if (!STM_ADDS || !(tx->ctx->add_counts || (unread && (tx->ctx->semantic & STM_SEMANTIC_ADDS)))) {
    /* A read the body never sees (so not in the read hash), and a write. */
    const uint64_t base = stm_tx_read_word(tx, addr, 0, 0);
    if (tx->state == STM_TX_OK) prstm_write(tx, addr, base + delta);
    return;
  }
  if (tx->nwrites == tx->cap) {
    stm_tx_doom(tx, STM_TX_CAPACITY);
    return;
  }
  STM_INDEX_ADD(tx, STM_INDEX_WRITES, addr, tx->nwrites);
  tx->writes[tx->nwrites].addr = addr | STM_WRITE_ADD | unread;
  tx->writes[tx->nwrites].value = delta;
  tx->nwrites++;
}

PRSTM_INLINE void prstm_add(prstm_tx *tx, uint64_t addr, uint64_t delta) { stm_tx_add(tx, addr, delta, 0); }

/* Commutative add to a word that no transaction of the run reads or writes
 * otherwise: a total kept for after the run (a warehouse's year-to-date, a
 * stock row's counts). As prstm_add, but the promise lets the add take no
 * lock and no counter: at commit it is one atomic add, and readers need no
 * protection from it because there are none. The caller promises it, as
 * for prstm_write_private: a transaction that reads such a word while the
 * run is under way, the adder itself included, is not serialised against
 * the unread adds, and --verify's replay reports it wherever a
 * transaction saw a value out of the commit order. Adds of either kind may
 * meet on one word where the workload keeps counters (PRSTM_ADDS_COUNTED);
 * under PRSTM_ADDS_UNREAD_ONLY a prstm_add is a read, which the promise
 * excludes. Without uses_add (and in the serial replay) it is a read and a
 * write, as prstm_add is. */
PRSTM_INLINE void prstm_add_unread(prstm_tx *tx, uint64_t addr, uint64_t delta) {
  stm_tx_add(tx, addr, delta, STM_WRITE_UNREAD);
}

#if STM_TICKETS
/* Takes the attempt's ticket now: a read of its counter (which the body
 * never sees, so not in the read hash) and two writes, the counter's lock
 * joining the lock set. */
PRSTM_INLINE void stm_tx_resolve_ticket(prstm_tx *tx) {
  stm_write_entry *t = &tx->writes[tx->ticket_entry];
  const uint64_t counter = STM_WRITE_ADDR(t->addr), dest = t->value;
  tx->ticket = 0;
  const uint64_t v = stm_tx_read(tx, counter, 0);
  t->addr = counter;
  t->value = v + 1;
  tx->writes[dest].value = v;
  stm_tx_lock_for_write(tx, counter);
}
#endif

/* Ticket: `dest` is written with the value of the word `counter`, and the
 * counter goes up by one, as a read of the counter and two writes would
 * do; but the counter is read and raised only at commit, under its lock,
 * for the few instructions between the commit's other locks and its
 * writes. So transactions that number themselves from one counter (the
 * orders of a district) conflict over it only while they commit, not from
 * the read to the commit, and none of them aborts another for it. The body
 * never sees the value. A body that reads or writes the counter or `dest`
 * after taking the ticket takes it at that point instead, as a read and two
 * writes; so does a second ticket in one attempt, and a ticket whose
 * counter shares its lock with another word of the attempt. Without
 * PRSTM_USES_TICKETS every ticket is a read and two writes, with the same
 * outcome. */
PRSTM_INLINE void prstm_ticket(prstm_tx *tx, uint64_t counter, uint64_t dest) {
  if (tx->state != STM_TX_OK) return;
  if (!stm_tx_holds(tx, counter) || !stm_tx_holds(tx, dest)) return;
#if STM_TICKETS
  if (tx->ticket) stm_tx_resolve_ticket(tx);
  int deferred = counter != dest && tx->state == STM_TX_OK;
#if !defined(__CUDA_ARCH__)
  if (tx->unchecked) deferred = 0; /* nothing to wait for: the read is as cheap */
#endif
  if (deferred && stm_tx_find_write(tx, counter) >= 0) deferred = 0;
  if (deferred) {
    prstm_write(tx, dest, 0); /* the value comes at commit */
    if (tx->state != STM_TX_OK) return;
    if (tx->nwrites == tx->cap) {
      stm_tx_doom(tx, STM_TX_CAPACITY);
      return;
    }
    const uint32_t d = (uint32_t)stm_tx_find_write(tx, dest);
    STM_INDEX_ADD(tx, STM_INDEX_WRITES, counter, tx->nwrites);
    tx->writes[tx->nwrites].addr = counter | STM_WRITE_TICKET;
    tx->writes[tx->nwrites].value = d;
    tx->ticket_entry = tx->nwrites++;
    tx->ticket = 1;
    return;
  }
#endif
  if (tx->state != STM_TX_OK) return;
  const uint64_t v = stm_tx_read(tx, counter, 0);
  prstm_write(tx, counter, v + 1);
  prstm_write(tx, dest, v);
}

/* ---- Engine side: begin, validate, commit, abort. ---- */

PRSTM_INLINE int stm_tx_release_early(prstm_tx *tx);
/* Forgets the attempt's writes, adds and ticket, so that it commits as a
 * decision that writes nothing (a failure). An attempt that holds the
 * locks of its reads gives them back first (stm_tx_release_early) and
 * commits its failure by the ordinary path, which validates the reads: a
 * failure is rare, and that path is proven. */
PRSTM_INLINE void stm_tx_drop_writes(prstm_tx *tx) {
  stm_tx_release_early(tx);
  tx->nwrites = 0;
  tx->nlocks = 0;
#if STM_INDEXED
  stm_index_clear(&tx->index[STM_INDEX_WRITES], tx->index_mask);
  stm_index_clear(&tx->index[STM_INDEX_LOCKS], tx->index_mask);
#endif
#if STM_TICKETS
  tx->ticket = 0;
#endif
}

PRSTM_INLINE void stm_tx_begin(prstm_tx *tx, uint64_t row, uint64_t prio) {
  tx->row = row;
  tx->prio = prio;
  tx->result = 0;
  tx->read_hash = 0;
  tx->nreads = tx->nwrites = tx->nlocks = 0;
  tx->state = STM_TX_OK;
  tx->reason = 0;
  tx->conflict_wait = 0;
  tx->direct = 0;
  tx->adds_counted = 0;
  tx->unchecked = 0;
  tx->conflict_lock = tx->conflict_word = 0;
#if STM_TICKETS
  tx->ticket = tx->ticket_held = tx->ticket_entry = tx->ticket_filled = 0;
#endif
#if STM_INDEXED
  tx->index_mask = stm_index_mask(tx->cap);
  stm_index_clear(&tx->index[STM_INDEX_READS], tx->index_mask);
  stm_index_clear(&tx->index[STM_INDEX_WRITES], tx->index_mask);
  stm_index_clear(&tx->index[STM_INDEX_LOCKS], tx->index_mask);
#endif
}

/* The lock of a blind add's entry. */
PRSTM_INLINE uint64_t stm_tx_add_lock(const prstm_tx *tx, const stm_write_entry *w) {
  return stm_lock_index(STM_WRITE_ADDR(w->addr), tx->ctx->lock_coverage);
}

/* Lowers the counters that stm_tx_count_adds raised, after an abort: the
 * adds never happened, so no version moves. */
PRSTM_INLINE void stm_tx_uncount_adds(prstm_tx *tx) {
  for (uint32_t i = 0; i < tx->nwrites; i++)
    if (tx->writes[i].addr & STM_WRITE_BLIND)
      port_add_relaxed(&tx->ctx->add_counts[stm_tx_add_lock(tx, &tx->writes[i])], (uint64_t)0 - 1);
  tx->adds_counted = 0;
}

/* A pre-lock of this attempt whose give-back CAS failed, with counters of
 * adds: a blind add that committed meanwhile may have moved its version
 * (stm_tx_write_back), and it is then cleared at that version. One that was
 * stolen is not this attempt's to clear. */
PRSTM_INLINE void stm_tx_unprelock_moved(prstm_tx *tx, uint64_t *lw) {
  for (;;) {
    uint64_t w = port_load_relaxed(lw);
    if (!stm_lock_is_prelocked(w) || stm_lock_is_locked(w) || stm_lock_owner(w) != (tx->prio & STM_LOCK_OWNER_MASK))
      return;
    if (port_cas(lw, w, stm_lock_make(stm_lock_version(w), 0, 0))) return;
  }
}

#if STM_TICKETS
/* The lock of the attempt's ticket's counter. */
PRSTM_INLINE uint64_t stm_tx_ticket_lock(const prstm_tx *tx) {
  return stm_lock_index(STM_WRITE_ADDR(tx->writes[tx->ticket_entry].addr), tx->ctx->lock_coverage);
}
#endif

/* Gives back every lock this attempt holds, without changing versions: no
 * data was written, so readers of the old values stay valid. */
PRSTM_INLINE void stm_tx_release_all(prstm_tx *tx) {
  uint64_t *locks = tx->ctx->locks;
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    if (e->held == 2) {
      port_store_release(&locks[e->lock], stm_lock_make(e->version, 0, 0));
    } else if (e->held == 1) {
      /* A pre-lock may have been stolen meanwhile; then it is not ours to clear. */
      if (!port_cas(&locks[e->lock], stm_lock_make(e->version, tx->prio, STM_LOCK_PRELOCKED),
                    stm_lock_make(e->version, 0, 0)) &&
          STM_ADDS && tx->ctx->add_counts)
        stm_tx_unprelock_moved(tx, &locks[e->lock]);
    }
    e->held = 0;
  }
#if STM_TICKETS
  if (tx->ticket_held) {
    port_store_release(&locks[stm_tx_ticket_lock(tx)], stm_lock_make(tx->ticket_version, 0, 0));
    tx->ticket_held = 0;
  }
#endif
  if (STM_ADDS && tx->adds_counted) stm_tx_uncount_adds(tx);
}

/* Where the attempt holds the lock of every word it read (an attempt that
 * locks as it reads, STM_EARLY_LOCKS), gives them back with their versions
 * unchanged, since nothing was written, and returns 1: the snapshot it
 * decided on was consistent, and the attempt is an ordinary one from here
 * on. Returns 0 for any other attempt, which holds no lock between its body
 * and its commit. */
PRSTM_INLINE int stm_tx_release_early(prstm_tx *tx) {
#if STM_EARLY_LOCKS
  if (tx->direct) {
    stm_tx_release_all(tx);
    tx->direct = 0;
    return 1;
  }
#endif
  (void)tx;
  return 0;
}

/* Light validation for a decision that writes nothing and needs no place in
 * the commit order (a postponement): every read lock still has the version
 * read and is not finally locked, so the snapshot the body saw was consistent. */
PRSTM_INLINE int stm_tx_snapshot_valid(const prstm_tx *tx) {
  if (stm_tx_alone(tx)) return 1; /* nothing else can have moved */
  const uint64_t *locks = tx->ctx->locks;
  const uint64_t *adds = STM_ADDS ? tx->ctx->add_counts : 0;
  port_fence_acq_rel(); /* the value reads before the version checks */
  for (uint32_t i = 0; i < tx->nreads; i++) {
    /* An add under way may have landed in the value before its version moves. */
    if (adds && port_load_acquire(&adds[tx->reads[i].lock]) != 0) return 0;
    uint64_t w = port_load_acquire(&locks[tx->reads[i].lock]);
    if (stm_lock_is_locked(w) || stm_lock_version(w) != tx->reads[i].version) return 0;
  }
  return 1;
}

/* A final lock is held only by a committer that has validated and never
 * waits on anything: it releases the lock within a few stores, with a new
 * version (it committed) or the same one (a later pre-lock of its was stolen).
 * Waiting for that release, instead of aborting on it, keeps the priority
 * rule's guarantee: the highest-priority committer aborts only when somebody
 * else committed. Aborting here would let a low-priority committer that then
 * fails take the highest one down with it. No wait cycle exists, because the
 * waited-on never wait, and on the GPU a waiting lane sleeps so that a
 * warp-mate holding the lock runs (independent thread scheduling, sm_70+). */
PRSTM_INLINE uint64_t stm_wait_unlocked(const prstm_exec_ctx *ctx, const uint64_t *lw, uint64_t w) {
  for (unsigned round = 0; stm_lock_is_locked(w); round++) {
    /* A stopped run returns the lock as still held: the caller aborts. */
    if (STM_STOPPED(ctx)) return w;
    port_pause(round);
    w = port_load_acquire(lw);
  }
  return w;
}

/* Pre-lock one lock of the write set, stealing a lower-priority pre-lock.
 * When the attempt read under this lock, the word is expected to be free at
 * the version read, and one CAS from that value usually takes it: a load
 * first would add a round trip to L2 per lock on every uncontended commit.
 * Returns 2 when that first CAS took the lock, 1 when the slower path did
 * (the version may then differ from the one read, which validation checks),
 * 0 on a conflict. */
PRSTM_INLINE int stm_tx_prelock(prstm_tx *tx, stm_lock_entry *e, int read_index) {
  uint64_t *lw = &tx->ctx->locks[e->lock];
  if (read_index >= 0) {
    uint64_t v = tx->reads[read_index].version;
    if (port_cas(lw, stm_lock_make(v, 0, 0), stm_lock_make(v, tx->prio, STM_LOCK_PRELOCKED))) {
      e->version = v;
      e->held = 1;
      return 2;
    }
  }
  for (;;) {
    uint64_t w = stm_wait_unlocked(tx->ctx, lw, port_load_acquire(lw));
    if (stm_lock_is_locked(w)) return 0;
    if (stm_lock_is_prelocked(w) && !stm_may_steal(tx->prio, stm_lock_owner(w))) {
      stm_tx_note_holder(tx, e->lock, w);
      return 0;
    }
    uint64_t v = stm_lock_version(w);
    if (port_cas(lw, w, stm_lock_make(v, tx->prio, STM_LOCK_PRELOCKED))) {
      e->version = v;
      e->held = 1;
      return 1;
    }
  }
}

/* Validate one read lock this attempt does not write. With wait, it waits
 * out a final lock (see stm_wait_unlocked); without (an attempt that holds
 * final locks itself, stm_tx_ticket_tail), a final lock fails it at once.
 * It then fails when the version moved or when a higher priority holds the
 * pre-lock; a lower-priority pre-lock is revoked, so that of two crossed
 * transactions (read x write y / read y write x) at most one can reach its
 * final locks: write skew cannot commit. Read-only sharing takes no lock at
 * all. */
PRSTM_INLINE int stm_tx_validate_read(prstm_tx *tx, const stm_read_entry *r, int wait) {
  uint64_t *lw = &tx->ctx->locks[r->lock];
  /* A blind add under way on this lock (stm_tx_count_adds) may have changed
   * the value already and moves the version only when it ends: the read
   * fails now. The counter is loaded before the lock word, so a count seen
   * back at zero comes with the version it moved. */
  if (STM_ADDS && tx->ctx->add_counts && port_load_acquire(&tx->ctx->add_counts[r->lock]) != 0) return 0;
  for (;;) {
    uint64_t w = port_load_acquire(lw);
    if (wait) w = stm_wait_unlocked(tx->ctx, lw, w);
    if (stm_lock_is_locked(w) || stm_lock_version(w) != r->version) return 0;
    if (!stm_lock_is_prelocked(w)) return 1;
    if (!stm_may_steal(tx->prio, stm_lock_owner(w))) {
      stm_tx_note_holder(tx, r->lock, w);
      return 0;
    }
    if (port_cas(lw, w, stm_lock_make(r->version, 0, 0))) return 1;
  }
}

/* The direct path of a commit whose locks are exactly the locks it read (a
 * bank transfer: read two accounts, write both): each lock goes from free at
 * the version read straight to final, with no pre-lock in between. Holding
 * every lock it read, final and at the version read, the attempt saw a
 * consistent snapshot that nobody can change before its writes, so there is
 * nothing to validate. A transfer's commit then costs two CASes instead of
 * four, each a round trip on its dependent chain.
 * The priority rule stays whole: a lock is taken only when nobody holds it
 * (a pre-lock of any priority makes the CAS fail), and a holder never waits:
 * on the first CAS that fails it gives back the locks it took, with their
 * versions unchanged (nothing was written), and the commit goes on by the
 * pre-lock path. Readers meet the final lock for a few instructions longer
 * than on that path, and like any final lock it is gone within a CAS and a
 * few stores. Returns 1 with every lock final, 0 with none held. */
PRSTM_INLINE int stm_tx_lock_direct(prstm_tx *tx) {
  if (tx->nlocks == 0 || tx->nlocks != tx->nreads) return 0;
  uint64_t *locks = tx->ctx->locks;
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    const int r = stm_tx_find_read(tx, e->lock);
    const uint64_t v = r >= 0 ? tx->reads[r].version : 0;
    if (r < 0 ||
        !port_cas_acquire(&locks[e->lock], stm_lock_make(v, 0, 0), stm_lock_make(v, tx->prio, STM_LOCK_LOCKED))) {
      stm_tx_release_all(tx);
      return 0;
    }
    e->version = v;
    e->held = 2;
  }
  return 1;
}

/* The end of a commit's blind adds, after their values: each moves its
 * lock's version (a reader of the old value then fails validation) and then
 * lowers its counter, in that order: the counter's release puts the new
 * version before it. */
PRSTM_INLINE void stm_tx_end_blind_adds(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  for (uint32_t i = 0; i < tx->nwrites; i++)
    if (tx->writes[i].addr & STM_WRITE_BLIND)
      port_add_relaxed(&ctx->locks[stm_tx_add_lock(tx, &tx->writes[i])], 1ull << STM_LOCK_VERSION_SHIFT);
  for (uint32_t i = 0; i < tx->nwrites; i++)
    if (tx->writes[i].addr & STM_WRITE_BLIND)
      port_add_release(&ctx->add_counts[stm_tx_add_lock(tx, &tx->writes[i])], (uint64_t)0 - 1);
  tx->adds_counted = 0;
}

#if STM_TICKETS
/* After the body (cmp_attempt) and at the start of a commit, where a lock
 * covers several words: a ticket whose counter's lock the attempt also
 * reads or writes under (another word of the lock, or the ticket's
 * destination) is taken now, as a read and two writes, so that the commit
 * never waits for a lock it holds. Returns 0 when that read conflicts or
 * finds the read set full. */
PRSTM_INLINE int stm_tx_settle_ticket(prstm_tx *tx) {
  if (!tx->ticket || tx->ctx->lock_coverage == 1) return 1;
  const uint64_t l = stm_tx_ticket_lock(tx);
  int shared = stm_tx_find_read(tx, l) >= 0;
  for (uint32_t i = 0; !shared && i < tx->nwrites; i++)
    if (i != tx->ticket_entry && !(tx->writes[i].addr & STM_WRITE_UNREAD) &&
        stm_lock_index(STM_WRITE_ADDR(tx->writes[i].addr), tx->ctx->lock_coverage) == l)
      shared = 1;
  if (shared) stm_tx_resolve_ticket(tx);
  return tx->state == STM_TX_OK;
}

/* Takes the final lock of the ticket's counter, with every other lock of
 * the attempt already final. A final lock there is waited out: its holder
 * is a committer past its own locks. The wait is bounded
 * (PRSTM_POLICY_TICKET_WAIT_ROUNDS), since that holder may itself wait for
 * its ticket's counter under a lock this attempt holds. A lower pre-lock
 * is taken away, as the pre-lock path does; a higher one makes the attempt
 * abort. Returns 0 on a conflict, holding what it held before. */
PRSTM_INLINE int stm_tx_take_ticket_lock(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  const uint64_t l = stm_tx_ticket_lock(tx);
  uint64_t *lw = &ctx->locks[l];
  for (unsigned round = 0; round < PRSTM_POLICY_TICKET_WAIT_ROUNDS; round++) {
    const uint64_t w = port_load_acquire(lw);
    if (stm_lock_is_locked(w)) {
      if (STM_STOPPED(ctx)) return 0;
      port_pause(round);
      continue;
    }
    if (stm_lock_is_prelocked(w)) {
      if (!stm_may_steal(tx->prio, stm_lock_owner(w))) {
        stm_tx_note_holder(tx, l, w);
        return 0;
      }
      port_cas(lw, w, stm_lock_make(stm_lock_version(w), 0, 0));
      continue;
    }
    if (port_cas_acquire(lw, w, stm_lock_make(stm_lock_version(w), tx->prio, STM_LOCK_LOCKED))) {
      tx->ticket_version = stm_lock_version(w);
      tx->ticket_held = 1;
      return 1;
    }
  }
  return 0;
}

/* At write-back, with the counter's final lock held: the destination gets
 * the counter's value, and the counter one more, written now; then the
 * counter's lock is given back with version + 1, before the attempt's
 * other writes. The counter is the only word of the attempt under that
 * lock (stm_tx_settle_ticket), and every other word it writes stays under
 * its own final lock, or its counter of adds, or is private or unread, until
 * written: so the next ticket of the counter need not wait for them, which
 * is all the time a queue of tickets on one counter spends per ticket. The
 * ticket's entry is then skipped by the write-back (ticket_filled). */
PRSTM_INLINE void stm_tx_fill_ticket(prstm_tx *tx) {
  stm_write_entry *t = &tx->writes[tx->ticket_entry];
  uint64_t *counter = &tx->ctx->words[STM_WRITE_ADDR(t->addr)];
  const uint64_t v = port_load_relaxed(counter);
  tx->writes[t->value].value = v;
  t->value = v + 1;
  port_store_relaxed(counter, v + 1);
  port_store_release(&tx->ctx->locks[stm_tx_ticket_lock(tx)], stm_lock_make(tx->ticket_version + 1, 0, 0));
  tx->ticket_held = 0;
  tx->ticket_filled = 1;
}
#define STM_TICKET_FILL(tx) \
  if ((tx)->ticket_held) stm_tx_fill_ticket(tx)
/* Whether write-back skips entry i: a ticket's counter, written already. */
#define STM_TICKET_WRITTEN(tx, i) ((tx)->ticket_filled && (i) == (tx)->ticket_entry)
#define STM_TICKET_SETTLE(tx) stm_tx_settle_ticket(tx)
#define STM_TICKET_PENDING(tx) ((tx)->ticket != 0)
#define STM_TICKET_TAIL(tx, sequence) stm_tx_ticket_tail((tx), (sequence))
#else
#define STM_TICKET_FILL(tx) ((void)0)
#define STM_TICKET_WRITTEN(tx, i) 0
#define STM_TICKET_SETTLE(tx) 1
#define STM_TICKET_PENDING(tx) 0
#define STM_TICKET_TAIL(tx, sequence) 1
#endif

/* The end of every commit, with all final locks held: the new values, then
 * the locks given back with version + 1. */
PRSTM_INLINE void stm_tx_write_back(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  /* An acquire CAS orders later accesses after its read, not after its
   * write; the fence puts the final locks before every new value, so a reader
   * that sees a new value then sees the lock or the new version. */
  if (tx->nwrites) port_fence_acq_rel();
  STM_TICKET_FILL(tx);
  for (uint32_t i = 0; i < tx->nwrites; i++)
    if (!STM_TICKET_WRITTEN(tx, i))
      port_store_relaxed(&ctx->words[STM_TICKETS ? STM_WRITE_ADDR(tx->writes[i].addr) : tx->writes[i].addr],
                         tx->writes[i].value);
  /* One release fence orders all data writes before all new versions. */
  if (tx->nlocks) port_fence_acq_rel();
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    port_store_relaxed(&ctx->locks[e->lock], stm_lock_make(e->version + 1, 0, 0));
    e->held = 0;
  }
}

/* stm_tx_write_back for a commit with counters of adds: adds are applied
 * with atomic adds, and the blind ones end after the locks are given back.
 * Without counters there are no adds in the write set (prstm_add makes them
 * writes), so the commit above keeps the plain loop. */
PRSTM_INLINE void stm_tx_write_back_adds(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  if (tx->nwrites) port_fence_acq_rel();
  STM_TICKET_FILL(tx);
  for (uint32_t i = 0; i < tx->nwrites; i++) {
    const stm_write_entry *w = &tx->writes[i];
    if (STM_TICKET_WRITTEN(tx, i)) continue;
    if (w->addr & STM_WRITE_ADD)
      port_add_relaxed(&ctx->words[STM_WRITE_ADDR(w->addr)], w->value);
    else
      port_store_relaxed(&ctx->words[STM_TICKETS ? STM_WRITE_ADDR(w->addr) : w->addr], w->value);
  }
  if (tx->nlocks || tx->adds_counted) port_fence_acq_rel();
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    port_store_relaxed(&ctx->locks[e->lock], stm_lock_make(e->version + 1, 0, 0));
    e->held = 0;
  }
  if (tx->adds_counted) stm_tx_end_blind_adds(tx);
}

/* The plain commit's write-back: unread adds (PRSTM_ADDS_UNREAD_ONLY) are
 * applied as adds, where the adds' code is compiled. */
PRSTM_INLINE void stm_tx_write_back_plain(prstm_tx *tx) {
  if (STM_ADDS)
    stm_tx_write_back_adds(tx);
  else
    stm_tx_write_back(tx);
}

/* With counters of adds (the workload's uses_add), at the start of a
 * commit: an add under a lock that the attempt also reads or writes under is
 * applied under its own lock (the lock joins the lock set); every other add
 * is blind. Returns the number of blind adds. */
PRSTM_INLINE uint32_t stm_tx_settle_adds(prstm_tx *tx) {
  uint32_t blind = 0;
  for (uint32_t i = 0; i < tx->nwrites; i++) {
    stm_write_entry *w = &tx->writes[i];
    /* An add no transaction reads needs neither lock nor counter. */
    if ((w->addr & (STM_WRITE_ADD | STM_WRITE_UNREAD)) != STM_WRITE_ADD) continue;
    const uint64_t l = stm_tx_add_lock(tx, w);
    if (stm_tx_find_lock(tx, l) >= 0 || stm_tx_find_read(tx, l) >= 0) {
      stm_tx_lock_for_write(tx, STM_WRITE_ADDR(w->addr));
    } else {
      w->addr |= STM_WRITE_BLIND;
      blind++;
    }
  }
  return blind;
}

/* Raises the counter of every blind add's lock, before the commit's SC
 * fence: a writer that pre-locks such a lock then sees the count after its
 * own fence, or this attempt sees its pre-lock (stm_tx_adds_clear). */
PRSTM_INLINE void stm_tx_count_adds(prstm_tx *tx) {
  for (uint32_t i = 0; i < tx->nwrites; i++)
    if (tx->writes[i].addr & STM_WRITE_BLIND)
      port_add_relaxed(&tx->ctx->add_counts[stm_tx_add_lock(tx, &tx->writes[i])], 1);
  tx->adds_counted = 1;
}

/* After the commit's SC fence, with counters of adds: no blind add of
 * another attempt is under way on a lock this attempt pre-locked, and no
 * other attempt holds the lock of one of this attempt's blind adds. A final
 * lock there is waited out (its holder never waits); a lower pre-lock is
 * taken away, as the pre-lock path does (its owner's final CAS then fails);
 * a higher one makes this attempt abort. Returns 0 on a conflict. */
PRSTM_INLINE int stm_tx_adds_clear(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  for (uint32_t i = 0; i < tx->nlocks; i++)
    if (port_load_acquire(&ctx->add_counts[tx->locks[i].lock]) != 0) return 0;
  if (!tx->adds_counted) return 1;
  for (uint32_t i = 0; i < tx->nwrites; i++) {
    if (!(tx->writes[i].addr & STM_WRITE_BLIND)) continue;
    const uint64_t l = stm_tx_add_lock(tx, &tx->writes[i]);
    uint64_t *lw = &ctx->locks[l];
    for (;;) {
      uint64_t w = stm_wait_unlocked(ctx, lw, port_load_acquire(lw));
      if (stm_lock_is_locked(w)) return 0; /* the run was stopped */
      if (!stm_lock_is_prelocked(w)) break;
      if (!stm_may_steal(tx->prio, stm_lock_owner(w))) {
        stm_tx_note_holder(tx, l, w);
        return 0;
      }
      if (port_cas(lw, w, stm_lock_make(stm_lock_version(w), 0, 0))) break;
    }
  }
  return 1;
}

/* The decision's place in the commit order (verification). The add needs
 * both orders, and no more: release, so that a committer that took its
 * final locks directly (no fence between those CASes and this add) has
 * them seen by any transaction whose later number validates after it;
 * acquire, so that this transaction's validation loads come after every
 * earlier number's locks. With those two, a conflicting pair's numbers
 * follow the order of their effects, which is what the serial replay
 * relies on. The fences the pre-lock path has around it besides are the
 * unverified run's own, so a verified run synchronises as the runs it
 * certifies do. */
PRSTM_INLINE uint64_t stm_tx_take_sequence(const prstm_exec_ctx *ctx) {
  return port_fetch_add_acq_rel(ctx->sequence ? ctx->sequence : &ctx->quiesce[STM_Q_SEQUENCE], 1);
}

#if STM_TICKETS
/* The end of a commit that takes a ticket, after its other locks are
 * final: the counter's lock, then the commit's place in the order, then
 * the read set once more. The place is taken under the counter's lock, so
 * the tickets of one counter follow the commit order; the reads are checked
 * again after it, without waiting for anyone (every lock of the attempt is
 * final), so that no writer of a word read can take a place before this
 * one's and still commit a value it did not see. Returns 0 on a conflict,
 * with every lock given back. */
PRSTM_INLINE int stm_tx_ticket_tail(prstm_tx *tx, uint64_t *sequence) {
  const prstm_exec_ctx *ctx = tx->ctx;
  const uint64_t *adds = STM_ADDS ? ctx->add_counts : 0;
  if (!stm_tx_take_ticket_lock(tx)) {
    stm_tx_release_all(tx);
    return 0;
  }
  if (adds) {
    /* A blind add under way on the counter's lock: as stm_tx_adds_clear. */
    port_fence_sc();
    if (port_load_acquire(&adds[stm_tx_ticket_lock(tx)]) != 0) {
      stm_tx_release_all(tx);
      return 0;
    }
  }
  if (sequence) *sequence = stm_tx_take_sequence(ctx);
  for (uint32_t i = 0; i < tx->nreads; i++) {
    const stm_read_entry *r = &tx->reads[i];
    if (stm_tx_find_lock(tx, r->lock) >= 0) continue; /* final and at the version read */
    if (!stm_tx_validate_read(tx, r, 0)) {
      stm_tx_release_all(tx);
      return 0;
    }
  }
  return 1;
}

#endif

/* The steps of a commit's pre-lock path, shared by both commits below. */

/* Pre-locks the lock set. Counts the read locks that are also pre-locked
 * here (own_reads) and how many of those the first CAS took at exactly the
 * version read (own_at_read_version). Returns 0 on a conflict, with every
 * lock given back. */
PRSTM_INLINE int stm_tx_prelock_all(prstm_tx *tx, uint32_t *own_reads, uint32_t *own_at_read_version) {
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    int r = stm_tx_find_read(tx, tx->locks[i].lock);
    int got = stm_tx_prelock(tx, &tx->locks[i], r);
    if (!got) {
      stm_tx_release_all(tx);
      return 0;
    }
    if (r >= 0) {
      (*own_reads)++;
      if (got == 2) (*own_at_read_version)++;
    }
  }
  return 1;
}

/* Validates the read set after the SC fence: a read lock this attempt also
 * pre-locked must hold the version read; any other goes through
 * stm_tx_validate_read, unless its lock word, loaded with the others of its
 * group, is free at the version read. Returns 0 on a conflict, with every
 * lock given back.
 * The words of a group of STM_VALIDATE_GROUP reads are loaded relaxed, one
 * after another without waiting, and one acquire fence after them orders
 * what follows as an acquire load of each would. One acquire load after
 * another waited out a round trip to L2 each: a YCSB transaction's nine
 * foreign reads were nine trips on its commit's dependent chain. A free
 * word at another version fails the read at once, as the full check would;
 * a held word gets the full check, which loads it again and waits, steals
 * or fails as before. A workload with adds checks each read's counter of
 * adds before its word (stm_tx_validate_read) and keeps the one-by-one
 * loop, compiled as it was: the group's code alone, unused, cost tpcc's
 * commit 3 to 5% on the GPU. */
#define STM_VALIDATE_GROUP 8u
/* A kernel file whose transactions mostly commit on the direct path, which
 * does not validate, or validate only a read or two, may define
 * STM_VALIDATE_GROUPED 0 before its first include to keep the one-by-one
 * loop: the bank's transfers ran 2.5% slower on the GPU with the group's
 * code in their kernels. */
#ifndef STM_VALIDATE_GROUPED
#define STM_VALIDATE_GROUPED (!STM_ADDS)
#endif
PRSTM_INLINE int stm_tx_validate_all(prstm_tx *tx, uint32_t own_reads) {
#if !STM_VALIDATE_GROUPED
  for (uint32_t i = 0; i < tx->nreads; i++) {
    const stm_read_entry *r = &tx->reads[i];
    const int own = own_reads ? stm_tx_find_lock(tx, r->lock) : -1;
    const int ok = own >= 0 ? tx->locks[own].version == r->version : stm_tx_validate_read(tx, r, 1);
    if (!ok) {
      stm_tx_release_all(tx);
      return 0;
    }
  }
#else
  const uint64_t *locks = tx->ctx->locks;
  for (uint32_t base = 0; base < tx->nreads; base += STM_VALIDATE_GROUP) {
    /* The group's words are compared where they were loaded and only two
     * bit masks leave: the words held (the full check) and the free words
     * at another version (a failed read: a version never goes back). The
     * checks that follow are one loop, not one copy per word of the group,
     * which kept the commit's registers where they were. */
    uint32_t held = 0, moved = 0;
    {
      uint64_t seen[STM_VALIDATE_GROUP];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (uint32_t k = 0; k < STM_VALIDATE_GROUP; k++)
        seen[k] = base + k < tx->nreads ? port_load_relaxed(&locks[tx->reads[base + k].lock]) : 0;
      port_fence_acq_rel();
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (uint32_t k = 0; k < STM_VALIDATE_GROUP; k++) {
        if (base + k >= tx->nreads) break;
        if (seen[k] & (STM_LOCK_LOCKED | STM_LOCK_PRELOCKED))
          held |= 1u << k;
        else if (stm_lock_version(seen[k]) != tx->reads[base + k].version)
          moved |= 1u << k;
      }
    }
    const uint32_t end = tx->nreads - base < STM_VALIDATE_GROUP ? tx->nreads : base + STM_VALIDATE_GROUP;
    for (uint32_t i = base; i < end; i++) {
      const stm_read_entry *r = &tx->reads[i];
      const int own = own_reads ? stm_tx_find_lock(tx, r->lock) : -1;
      const uint32_t bit = 1u << (i - base);
      int ok;
      if (own >= 0)
        ok = tx->locks[own].version == r->version;
      else if (!(held & bit))
        ok = !(moved & bit);
      else
        ok = stm_tx_validate_read(tx, r, 1);
      if (!ok) {
        stm_tx_release_all(tx);
        return 0;
      }
    }
  }
#endif
  return 1;
}

/* Turns every pre-lock into a final lock. Returns 0 when a higher priority
 * stole or revoked one, with every lock given back. */
PRSTM_INLINE int stm_tx_finalize_locks(prstm_tx *tx) {
  const prstm_exec_ctx *ctx = tx->ctx;
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    if (!port_cas_acquire(&ctx->locks[e->lock], stm_lock_make(e->version, tx->prio, STM_LOCK_PRELOCKED),
                          stm_lock_make(e->version, tx->prio, STM_LOCK_LOCKED))) {
      stm_tx_note_holder(tx, e->lock, port_load_acquire(&ctx->locks[e->lock]));
      stm_tx_release_all(tx);
      return 0;
    }
    e->held = 2;
  }
  return 1;
}

/* The commit of a workload with counters of adds (uses_add): the pre-lock
 * path always, with the SC fence between the raised counters and pre-locks
 * on one side and their checks on the other (stm_tx_adds_clear), and its
 * place in the commit order taken after those checks, as a writer takes it
 * after its pre-locks. Compiled only where PRSTM_USES_ADD is defined. */
PRSTM_INLINE int stm_tx_commit_counted(prstm_tx *tx, uint64_t *sequence) {
  uint32_t own_reads = 0, own_at_read_version = 0;
  if (!STM_TICKET_SETTLE(tx)) return 0;
  const uint32_t blind = stm_tx_settle_adds(tx);
  if (!stm_tx_prelock_all(tx, &own_reads, &own_at_read_version)) return 0;
  if (blind) stm_tx_count_adds(tx);
  port_fence_sc();
  if (!stm_tx_adds_clear(tx)) {
    stm_tx_release_all(tx);
    return 0;
  }
  const int ticket = STM_TICKET_PENDING(tx);
  if (sequence && !ticket) *sequence = stm_tx_take_sequence(tx->ctx);
  if (!stm_tx_validate_all(tx, own_reads) || !stm_tx_finalize_locks(tx)) return 0;
  if (ticket && !STM_TICKET_TAIL(tx, sequence)) return 0;
  stm_tx_write_back_adds(tx);
  return 1;
}

/* The commit of the run's only thread (STM_SEMANTIC_LONE): no other thread
 * can read a value it writes or move a word it read, so its place in the
 * order is its turn and its writes go straight to the words, with no lock,
 * fence or validation. Adds are applied as the word plus the delta; a
 * ticket still pending takes the counter's value now, as the locked commit
 * does. A single GPU thread paid about 3.6 us a transfer for the locks,
 * fences and atomics that guard against threads that are not there. */
PRSTM_INLINE int stm_tx_commit_lone(prstm_tx *tx, uint64_t *sequence) {
  const prstm_exec_ctx *ctx = tx->ctx;
  if (sequence) *sequence = stm_tx_take_sequence(ctx);
#if STM_TICKETS
  if (tx->ticket) {
    /* The counter's entry holds the index of the destination's until the
     * ticket is filled; its address keeps the ticket mark, which the loop
     * below strips. */
    stm_write_entry *t = &tx->writes[tx->ticket_entry];
    const uint64_t v = port_load_alone(&ctx->words[STM_WRITE_ADDR(t->addr)]);
    tx->writes[t->value].value = v;
    t->value = v + 1;
    tx->ticket = 0;
  }
#endif
  /* A plain loop: unrolled, its set-up outweighed a transfer's two writes. */
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (uint32_t i = 0; i < tx->nwrites; i++) {
    const stm_write_entry *w = &tx->writes[i];
    uint64_t *word = &ctx->words[STM_ADDS || STM_TICKETS ? STM_WRITE_ADDR(w->addr) : w->addr];
    if (STM_ADDS && (w->addr & STM_WRITE_ADD))
      port_store_relaxed(word, port_load_alone(word) + w->value);
    else
      port_store_relaxed(word, w->value);
  }
  return 1;
}

#if STM_EARLY_LOCKS
/* The commit of an attempt that holds the lock of every word it read
 * (stm_tx_read_locked): the locks of words it wrote without reading them
 * are taken the same way, and with every lock held final there is nothing
 * to validate: its place in the commit order is taken, the values written
 * and every lock released at a new version. A write-only lock found held
 * gives everything back (versions unchanged), and the attempt is retried
 * (cmp_attempt says which way). Returns 1 on commit, 0 on that conflict. */
PRSTM_INLINE int stm_tx_commit_early(prstm_tx *tx, uint64_t *sequence) {
  uint64_t *locks = tx->ctx->locks;
  for (uint32_t i = 0; i < tx->nlocks; i++) {
    stm_lock_entry *e = &tx->locks[i];
    if (e->held == 2) continue;
    const uint64_t before = port_fetch_or_acquire(&locks[e->lock], STM_LOCK_LOCKED);
    if (stm_lock_is_locked(before)) {
      stm_tx_note_holder(tx, e->lock, before);
      stm_tx_release_early(tx);
      return 0;
    }
    e->version = stm_lock_version(before);
    e->held = 2;
  }
  if (sequence) *sequence = stm_tx_take_sequence(tx->ctx);
  if (tx->nwrites == 0) {
    stm_tx_release_early(tx); /* a read-only commit moves no version */
    return 1;
  }
  stm_tx_write_back_plain(tx);
  tx->direct = 0;
  return 1;
}
#endif

/* Commit (PR-STM Algorithm 2 with the published gaps closed): pre-lock the
 * write set, fence, take the commit sequence, validate the read set, turn the
 * pre-locks into final locks, write, fence, release with version + 1.
 * Returns 1 on commit, 0 on a concurrent conflict (all locks given back).
 * A transaction with an empty write set (read-only, or failing) goes through
 * the same steps so that its decision is ordered the same way. A first
 * attempt whose locks are exactly its reads tries stm_tx_lock_direct first.
 * A workload with counters of adds commits by stm_tx_commit_counted, a
 * thread alone by stm_tx_commit_lone; unread adds without counters
 * (PRSTM_ADDS_UNREAD_ONLY) take this path and land at write-back. */
PRSTM_INLINE int stm_tx_commit(prstm_tx *tx, uint64_t *sequence) {
  const prstm_exec_ctx *ctx = tx->ctx;
  if (stm_tx_alone(tx)) return stm_tx_commit_lone(tx, sequence);
  if (STM_ADDS && ctx->add_counts) return stm_tx_commit_counted(tx, sequence);
#if STM_EARLY_LOCKS
  if (tx->direct) return stm_tx_commit_early(tx, sequence);
#endif
  if (!STM_TICKET_SETTLE(tx)) return 0;
  const int ticket = STM_TICKET_PENDING(tx);
  if (tx->direct && !ticket && stm_tx_lock_direct(tx)) {
    /* Its place in the commit order is taken with every final lock held, as
     * on the pre-lock path's all-owned case below. */
    if (sequence) *sequence = stm_tx_take_sequence(ctx);
    stm_tx_write_back_plain(tx);
    return 1;
  }
  uint32_t own_reads = 0, own_at_read_version = 0;
  if (!stm_tx_prelock_all(tx, &own_reads, &own_at_read_version)) return 0;
  const int all_reads_owned = tx->nlocks && own_at_read_version == tx->nreads;
  if (all_reads_owned) {
    /* Every lock read is pre-locked by this attempt at the version read (a
     * bank transfer: read two accounts, write both). Nothing is left to
     * validate: the pre-locks themselves prove that no commit came between
     * the reads and now, and the final-lock CAS below proves that none comes
     * before the writes. No other transaction's lock is loaded, so the
     * store-load fence that keeps two crossed committers from missing each
     * other (below) has nothing to order: the same words' CASes are ordered
     * by coherence alone. Its place in the commit order is taken below,
     * once it holds every final lock. */
  } else {
    /* Pre-lock stores must be visible before the validation loads below: two
     * crossed committers then cannot both miss each other's pre-lock. An
     * attempt with nothing to lock (read-only, or failing) stores nothing,
     * yet needs the SC fence too: two such readers that read two
     * independent writes in opposite orders (IRIW) could otherwise both
     * validate under the PTX model, which allows that outcome with
     * acquire loads and acq_rel fences; only SC fences in the readers
     * forbid it. */
    port_fence_sc();
    if (sequence && !ticket) *sequence = stm_tx_take_sequence(ctx);
    if (!stm_tx_validate_all(tx, own_reads)) return 0;
  }
  if (!stm_tx_finalize_locks(tx)) return 0;
  if (ticket) {
    /* Its place is taken under the counter's lock (stm_tx_ticket_tail). */
    if (!STM_TICKET_TAIL(tx, sequence)) return 0;
  } else if (all_reads_owned && sequence) {
    /* With every final lock held, no conflicting transaction can take a
     * place between this one's and its writes: a writer of these words
     * waits for the release, and a reader that validated them did so before
     * the lock, with its place taken before its validation. So a verified
     * run checks this path against the serial replay too. */
    *sequence = stm_tx_take_sequence(ctx);
  }
  stm_tx_write_back_plain(tx);
  return 1;
}

#endif /* STM_CORE_H */
