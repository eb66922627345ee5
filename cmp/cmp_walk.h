/* cmp_walk.h: contention management over the transaction table: retry, semantic postpone, sweeps and termination by global quiescence. */
#ifndef CMP_WALK_H
#define CMP_WALK_H

#include "cmp_priority.h"
#include "stm_core.h"

/* A workload's dispatcher: runs the body of `type` for the row in tx and
 * returns PRSTM_COMMIT, PRSTM_POSTPONE or PRSTM_FAIL. */
typedef int (*cmp_dispatch_fn)(prstm_tx *tx, unsigned type);

/* The word STM_Q_EPOCH_STALLED: epoch tag (the epoch's low 22 bits) |
 * registrations not yet confirmed (21) | threads stalled in the epoch (21).
 * Thread counts fit in 21 bits (PRSTM_MAX_THREADS). A registration adds to
 * both low fields in one fetch-and-add, then confirms (or undoes) itself;
 * quiescence is judged only on a word with nothing unconfirmed. The epoch in
 * full is STM_Q_EPOCH, which a bump advances after the tag: a tag can come
 * round again, the full epoch cannot. See cmp_wait_quiescent. */
#define CMP_Q_COUNT_BITS 21
#define CMP_Q_COUNT_MASK ((1ull << CMP_Q_COUNT_BITS) - 1)
#define CMP_Q_UNCONFIRMED_ONE (1ull << CMP_Q_COUNT_BITS)
#define CMP_Q_UNCONFIRMED_MASK (CMP_Q_COUNT_MASK << CMP_Q_COUNT_BITS)
#define CMP_Q_EPOCH_SHIFT (2 * CMP_Q_COUNT_BITS)
#define CMP_Q_TAG_MASK ((1ull << (64 - CMP_Q_EPOCH_SHIFT)) - 1)
PRSTM_INLINE uint64_t cmp_q_epoch(uint64_t s) { return s >> CMP_Q_EPOCH_SHIFT; }
PRSTM_INLINE uint64_t cmp_q_tag(uint64_t epoch) { return epoch & CMP_Q_TAG_MASK; }
PRSTM_INLINE uint64_t cmp_q_stalled(uint64_t s) { return s & CMP_Q_COUNT_MASK; }
PRSTM_INLINE uint64_t cmp_q_unconfirmed(uint64_t s) { return (s & CMP_Q_UNCONFIRMED_MASK) >> CMP_Q_COUNT_BITS; }

/* prstm_exec_ctx.semantic holds the semantic mode in its low byte and run
 * flags above it. KEEP_POSTPONED: at global quiescence the postponed rows
 * stay pending instead of being abandoned, because the run is one batch of
 * a stream (engine/stream.c) whose later batches may still fund them. */
#define CMP_SEMANTIC_MODE_MASK 0xffu
#define CMP_SEMANTIC_KEEP_POSTPONED 0x100u
/* STM_SEMANTIC_LONE (stm_core.h), 0x200, is the run flag of one thread
 * alone on its state. */

/* The tag of a type whose rows the walk leaves alone (prstm_exec_ctx's
 * type_tag): a snapshot type's rows, which the host runs apart. Above every
 * real tag, so no sweep selects them. */
#define CMP_TAG_NONE 255u
/* In prstm_exec_ctx's tag_mask (whose low 16 bits are the tags present):
 * the table holds such rows, so a thread counts them out of its block. */
#define CMP_TAG_MASK_NONE (1u << 31)
PRSTM_INLINE int cmp_row_left_alone(const prstm_exec_ctx *ctx, uint64_t row) {
  return ctx->type_tag[port_table_load_u8(&ctx->table.type[row])] == CMP_TAG_NONE;
}

/* An attempt that lost to a lock holder (a final lock, or a pre-lock of
 * higher priority) waits for the holder's lock word to change before it
 * tries again. Retrying at once only re-reads, steals and loses pre-locks in
 * a storm of atomics on one line: under a hot spot on a full GPU (k-means'
 * 16 clusters, vacation's room types) that cost hundreds of aborts per
 * commit and slowed the holders themselves. Only lower priorities wait on
 * higher ones or on committers, and the waiter holds no lock, so no cycle of
 * waits can form; the bound covers a word that comes back to the value seen
 * (the same holder pre-locking the same version again), after which the
 * attempt simply retries. Wide write sets (128 accounts a transfer) meet
 * that case often, so the bound (PRSTM_POLICY_CONFLICT_WAIT_ROUNDS) is a few
 * times what a contended commit takes. Other aborts (a version that moved:
 * the new value is there to read) retry after the usual short pause. */
PRSTM_INLINE void cmp_wait_conflict(const prstm_exec_ctx *ctx, const prstm_tx *tx, unsigned attempt) {
  if (!tx->conflict_wait) {
    port_pause(attempt);
    return;
  }
  const uint64_t *lw = &ctx->locks[tx->conflict_lock];
  for (unsigned round = 0; round < PRSTM_POLICY_CONFLICT_WAIT_ROUNDS; round++) {
    if (port_load_acquire(lw) != tx->conflict_word || STM_STOPPED(ctx)) return;
    port_pause(round < 8u ? round : 8u);
  }
}

/* A decided row's footprint, in a unit of a co-executed run: the locks it
 * read under and those it wrote or added under. Every store is of 1, so
 * threads marking the same lock need no read-modify-write. The sets are
 * intact after the commit, which gives back locks but keeps its entries. */
PRSTM_INLINE void cmp_mark_footprint(const prstm_exec_ctx *ctx, const prstm_tx *tx) {
  for (uint32_t i = 0; i < tx->nreads; i++) port_mark_u8(&ctx->read_marks[tx->reads[i].lock]);
  for (uint32_t i = 0; i < tx->nwrites; i++)
    port_mark_u8(&ctx->write_marks[stm_lock_index(STM_WRITE_ADDR(tx->writes[i].addr), ctx->lock_coverage)]);
}

/* A decided row's footprint, in a unit of a run whose units own
 * contiguous ranges of locks: only the thread's span grows, in registers
 * or its own frame; cmp_fold_span publishes it once. */
PRSTM_INLINE void cmp_span_footprint(const prstm_exec_ctx *ctx, prstm_tx *tx) {
  uint64_t lo = tx->span[STM_SPAN_LO], hi = tx->span[STM_SPAN_HI];
  for (uint32_t i = 0; i < tx->nreads; i++) {
    const uint64_t l = tx->reads[i].lock;
    lo = l < lo ? l : lo;
    hi = l + 1 > hi ? l + 1 : hi;
  }
  uint64_t wlo = tx->span[STM_SPAN_WRITE_LO], whi = tx->span[STM_SPAN_WRITE_HI];
  for (uint32_t i = 0; i < tx->nwrites; i++) {
    const uint64_t l = stm_lock_index(STM_WRITE_ADDR(tx->writes[i].addr), ctx->lock_coverage);
    wlo = l < wlo ? l : wlo;
    whi = l + 1 > whi ? l + 1 : whi;
  }
  tx->span[STM_SPAN_LO] = lo < wlo ? lo : wlo;
  tx->span[STM_SPAN_HI] = hi > whi ? hi : whi;
  tx->span[STM_SPAN_WRITE_LO] = wlo;
  tx->span[STM_SPAN_WRITE_HI] = whi;
}

/* Lowers (or raises) a word of the unit's span to v where v extends it.
 * The words only ever move outwards, so a thread whose value is inside
 * what it reads needs no atomic at all; most threads end that way. */
PRSTM_INLINE void cmp_span_extend(uint64_t *word, uint64_t v, int lower) {
  uint64_t cur = port_load_relaxed(word);
  while ((lower ? v < cur : v > cur) && !port_cas(word, cur, v)) cur = port_load_relaxed(word);
}

/* Folds the thread's span into the unit's, at the end of its walk. */
PRSTM_INLINE void cmp_fold_span(const prstm_exec_ctx *ctx, const prstm_tx *tx) {
  if (tx->span[STM_SPAN_LO] >= tx->span[STM_SPAN_HI]) return; /* decided nothing */
  cmp_span_extend(&ctx->span[STM_SPAN_LO], tx->span[STM_SPAN_LO], 1);
  cmp_span_extend(&ctx->span[STM_SPAN_HI], tx->span[STM_SPAN_HI], 0);
  if (tx->span[STM_SPAN_WRITE_LO] >= tx->span[STM_SPAN_WRITE_HI]) return; /* wrote nothing */
  cmp_span_extend(&ctx->span[STM_SPAN_WRITE_LO], tx->span[STM_SPAN_WRITE_LO], 1);
  cmp_span_extend(&ctx->span[STM_SPAN_WRITE_HI], tx->span[STM_SPAN_WRITE_HI], 0);
}

/* Whether a run keeps any of the records below, so that a walk tests once. */
PRSTM_INLINE int cmp_records_order(const prstm_exec_ctx *ctx) {
  return ctx->table.seq || ctx->table.read_hash || ctx->read_marks || ctx->span;
}
/* Under verification, a decided row's place in the commit order and the
 * hash of what it read, for the serial replay to compare; in a unit of a
 * run spread over several units, its footprint. */
PRSTM_INLINE void cmp_record_order(const prstm_exec_ctx *ctx, prstm_tx *tx, uint64_t row, const uint64_t *seq) {
  if (seq) ctx->table.seq[row] = *seq;
  if (ctx->table.read_hash) ctx->table.read_hash[row] = tx->read_hash;
  if (ctx->read_marks) cmp_mark_footprint(ctx, tx);
  if (ctx->span) cmp_span_footprint(ctx, tx);
}

/* Executes row until it commits, fails, or is postponed by a semantic
 * conflict; concurrent conflicts are retried here, and the priority rule
 * guarantees that some committer always makes progress. `first_visit`:
 * the walk meets the row for the first time (a thread's first sweep, or
 * the first try of a retry-mode row), the only visit whose first
 * PRSTM_POLICY_EARLY_LOCK_ATTEMPTS attempts may lock as they read
 * (STM_EARLY_LOCKS), so that a row does so a bounded number of times
 * however often it is postponed. Returns the final status, or
 * CMP_POSTPONED. */
#define CMP_POSTPONED TXTABLE_PENDING /* the row stays pending and comes back in a later sweep */
#define CMP_STOPPED 4u /* no status has this value: the watchdog stopped the run, the row stays pending */
PRSTM_INLINE unsigned cmp_attempt(prstm_tx *tx, const prstm_exec_ctx *ctx, uint64_t row, unsigned type, uint32_t rank,
                                  cmp_dispatch_fn dispatch, stm_thread_stats *st, unsigned *reason, int records,
                                  int first_visit) {
  /* A priority only ever meets another in a lock word: a thread alone
   * takes none, and skips the load of its type's tag. */
  uint64_t prio = cmp_priority(stm_tx_alone(tx) ? 0u : ctx->type_tag[type], rank + ctx->rank_base);
  /* With verification on, every final decision takes its place in the commit
   * order, failures included: they too were decided on some snapshot. */
  uint64_t seq = 0;
  uint64_t *seqp = ctx->table.seq ? &seq : 0;
  for (unsigned attempt = 0;; attempt++) {
    stm_tx_begin(tx, row, prio);
    tx->direct = STM_EARLY_LOCKS ? first_visit && attempt < PRSTM_POLICY_EARLY_LOCK_ATTEMPTS : attempt == 0;
#if !defined(__CUDA_ARCH__)
    tx->unchecked = (unsigned)(ctx->unchecked_types >> type) & 1u;
#endif
    int outcome = dispatch(tx, type);
#if STM_TICKETS
    /* A ticket the commit would take as a read (stm_tx_settle_ticket) is
     * taken here, as the body's last read: a read set it overflows then
     * fails the transaction as the body's own reads would, instead of
     * failing every commit. */
    if (tx->state == STM_TX_OK && outcome == PRSTM_COMMIT) stm_tx_settle_ticket(tx);
#endif
    if (tx->state >= STM_TX_CAPACITY) {
      /* Only a consistent snapshot may fail a transaction: a doomed attempt
       * that computed a wild address is retried instead. A row sent away
       * (STM_TX_AWAY) is failed here with a reason of its own, which the
       * host never keeps: it runs the row again where every word is held. */
      unsigned why = tx->state == STM_TX_CAPACITY      ? TXTABLE_REASON_CAPACITY
                     : tx->state == STM_TX_BAD_ADDRESS ? TXTABLE_REASON_BAD_ADDRESS
                                                       : TXTABLE_REASON_AWAY;
      tx->state = STM_TX_OK;
      stm_tx_drop_writes(tx);
      if (stm_tx_commit(tx, seqp)) {
        if (records) cmp_record_order(ctx, tx, row, seqp);
        *reason = why;
        return TXTABLE_FAILED;
      }
    } else if (tx->state == STM_TX_OK) {
      if (outcome == PRSTM_POSTPONE) {
        /* Declare a semantic conflict only on a consistent snapshot. */
        if (stm_tx_release_early(tx) || stm_tx_snapshot_valid(tx)) return CMP_POSTPONED;
      } else if (outcome == PRSTM_FAIL) {
        stm_tx_drop_writes(tx);
        if (stm_tx_commit(tx, seqp)) {
          if (records) cmp_record_order(ctx, tx, row, seqp);
          *reason = tx->reason;
          return TXTABLE_FAILED;
        }
      } else if (stm_tx_commit(tx, seqp)) {
        if (records) cmp_record_order(ctx, tx, row, seqp);
        if (ctx->table.result) ctx->table.result[row] = tx->result;
        *reason = TXTABLE_REASON_NONE;
        return TXTABLE_COMMITTED;
      }
    }
    stm_tx_release_early(tx); /* a doomed attempt that locked as it read holds its reads' locks */
    st->aborts++;
    if (STM_STOPPED(ctx)) return CMP_STOPPED;
    cmp_wait_conflict(ctx, tx, attempt);
  }
}

/* Marks the end of a sweep that committed something: a new epoch, in which
 * every stalled thread must look at its postponed transactions again. What is
 * needed is an epoch change after this sweep's commits, not one by this
 * thread: if the CAS fails because the epoch already moved after the load
 * below, that change serves. So a crowd of threads ending their sweeps
 * together costs one CAS each, not a retry loop on one word (which made the
 * end of a full-GPU sweep quadratic in the thread count). The new epoch
 * starts with no stalled thread, but keeps the unconfirmed registrations:
 * each of those is taken back by its own thread (cmp_wait_quiescent). */
PRSTM_INLINE void cmp_bump_epoch(const prstm_exec_ctx *ctx) {
  uint64_t *q = &ctx->quiesce[STM_Q_EPOCH_STALLED];
  port_fence_sc(); /* commits of the sweep happen before the loads below */
  uint64_t s = port_load_acquire(q);
  for (unsigned round = 0;; round++) {
    uint64_t next = (cmp_q_tag(cmp_q_epoch(s) + 1) << CMP_Q_EPOCH_SHIFT) | (s & CMP_Q_UNCONFIRMED_MASK);
    if (port_cas(q, s, next)) {
      /* The full epoch follows the tag; a sweep that reads it has seen the
       * commits behind every bump it counts. */
      port_add_release(&ctx->quiesce[STM_Q_EPOCH], 1);
      return;
    }
    uint64_t now = port_load_acquire(q);
    if (cmp_q_epoch(now) != cmp_q_epoch(s)) return;
    s = now; /* only a stalled thread registered: the epoch must still move */
    port_pause(round);
  }
}

/* A stalled thread saw the epoch move. The bump it saw may come from a thread
 * other than the committer it depends on (cmp_bump_epoch), so a full fence
 * makes every commit ordered before that bump visible to the next sweep. */
PRSTM_INLINE int cmp_woken(unsigned round) {
  (void)round;
  port_fence_sc();
  return 0;
}

/* A registration whose add landed in a later epoch than the one its sweep
 * saw: it must not count there. If that epoch is still current, its stall is
 * taken back with it; if the epoch moved again, the bump already dropped the
 * stall, and only the unconfirmed mark is left to take back. Rare: the
 * caller checked the full epoch just before its add, so a bump had to land
 * within those few instructions. A CAS loop serves. */
PRSTM_INLINE void cmp_unregister_stale(uint64_t *q, uint64_t landed_epoch) {
  for (unsigned round = 0;; round++) {
    uint64_t s = port_load_acquire(q);
    if (cmp_q_epoch(s) != landed_epoch) {
      port_fetch_add(q, (uint64_t)0 - CMP_Q_UNCONFIRMED_ONE);
      return;
    }
    if (port_cas(q, s, s - CMP_Q_UNCONFIRMED_ONE - 1)) return;
    port_pause(round);
  }
}

/* Called after a full sweep in `epoch` that committed nothing. Returns 0 when
 * the epoch moved (something committed: sweep again) and 1 at global
 * quiescence: every other thread is finished or stalled in this same epoch, so
 * no commit can happen anywhere and the state can never change again.
 * Returns -1 when the host stopped the run.
 *
 * Registering used to be a CAS of the epoch word from (epoch, k) to (epoch,
 * k + 1), retried while other threads registered: with thousands of threads
 * stalled at once (the unfundable rows at the end of a run) each epoch cost a
 * queue of CAS round trips, one success per round trip. Now a registration
 * is one fetch-and-add, which never retries: it adds a stall and an
 * unconfirmed mark together, then looks at the epoch the add landed in. The
 * same epoch: the stall is real, and a second add removes the mark. A later
 * one (a bump came between the sweep and the add): the stall is false, and
 * cmp_unregister_stale removes it with the mark. A false stall is therefore
 * only ever counted together with a mark, and quiescence is judged on a word
 * without marks, where every stall counted is a real one of this epoch.
 *
 * `epoch` is the full epoch (STM_Q_EPOCH) read at the start of the sweep.
 * A tag equal to its low bits could come from an epoch 2^22 bumps later; the
 * full epoch read again after the add rules that out (it lags the tag by at
 * most the bumps in flight, fewer than 2^21), and any other change of it
 * since the sweep began also sends this thread back to sweep, which is
 * always safe. */
PRSTM_INLINE int cmp_wait_quiescent(const prstm_exec_ctx *ctx, uint64_t epoch) {
  uint64_t *q = ctx->quiesce;
  /* Most sweeps that end in a stale epoch are seen here, with a load, and
   * never touch the shared word (a thread that stalls in the tail of a run
   * often does, while others still commit). */
  if (port_load_acquire(&q[STM_Q_EPOCH]) != epoch) return cmp_woken(0);
  uint64_t before = port_fetch_add(&q[STM_Q_EPOCH_STALLED], CMP_Q_UNCONFIRMED_ONE + 1);
  if (cmp_q_epoch(before) != cmp_q_tag(epoch) || port_load_acquire(&q[STM_Q_EPOCH]) != epoch) {
    cmp_unregister_stale(&q[STM_Q_EPOCH_STALLED], cmp_q_epoch(before));
    return cmp_woken(0);
  }
  port_fetch_add(&q[STM_Q_EPOCH_STALLED], (uint64_t)0 - CMP_Q_UNCONFIRMED_ONE);
  for (unsigned round = 0;; round++) {
    if (STM_STOPPED(ctx)) return -1;
    uint64_t s1 = port_load_acquire(&q[STM_Q_EPOCH_STALLED]);
    /* The full epoch too: a tag can come round again after 2^22 bumps. */
    if (cmp_q_epoch(s1) != cmp_q_tag(epoch) || port_load_acquire(&q[STM_Q_EPOCH]) != epoch) return cmp_woken(round);
    uint64_t done = port_load_acquire(&q[STM_Q_DONE]);
    /* The epoch word read again unchanged proves no commit-and-finish slipped
     * in between the two reads. */
    uint64_t s2 = port_load_acquire(&q[STM_Q_EPOCH_STALLED]);
    if (s1 == s2 && cmp_q_unconfirmed(s1) == 0 && cmp_q_stalled(s1) + done >= ctx->nthreads) return 1;
    port_pause(round + 3);
  }
}

/* Adds this thread's unpublished commits, failures and abandonments to the
 * global progress words, so the host can see the run move (watchdog) and
 * report live counts (progress observer). Each count has a word of its own,
 * so a typical publish (commits only) costs one atomic, and every word the
 * host reads only ever grows. The adds are relaxed, as the warp's at the
 * end of a sweep (cmp_warp_publish): a fenced add emptied the SM's L1 on
 * the GPU, and a thread alone then read each of its words from L2 again
 * after every publish. */
PRSTM_INLINE void cmp_publish(const prstm_exec_ctx *ctx, stm_thread_stats *st) {
  if (st->committed == st->published_committed && st->failed == st->published_failed &&
      st->abandoned == st->published_abandoned)
    return;
  if (st->committed != st->published_committed)
    port_add_relaxed(&ctx->quiesce[STM_Q_COMMITTED], st->committed - st->published_committed);
  if (st->failed != st->published_failed)
    port_add_relaxed(&ctx->quiesce[STM_Q_FAILED], st->failed - st->published_failed);
  if (st->abandoned != st->published_abandoned)
    port_add_relaxed(&ctx->quiesce[STM_Q_ABANDONED], st->abandoned - st->published_abandoned);
  st->published_committed = st->committed;
  st->published_failed = st->failed;
  st->published_abandoned = st->abandoned;
  st->published_ns = port_clock_ns();
}

/* A lane's decisions not yet on the progress words, packed for a sum over
 * its warp: commits in the low CMP_PACK_BITS bits, failures in the next,
 * abandonments above them. A lane never holds PRSTM_POLICY_PROGRESS_BATCH of
 * them unpublished (cmp_finish_row publishes at that count), so the sums of
 * 32 lanes fit their fields (engine.c asserts it). */
#define CMP_PACK_BITS 21
#define CMP_PACK_MASK ((1ull << CMP_PACK_BITS) - 1)
PRSTM_INLINE uint64_t cmp_unpublished_packed(const stm_thread_stats *st) {
  return (st->committed - st->published_committed) | (st->failed - st->published_failed) << CMP_PACK_BITS |
         (st->abandoned - st->published_abandoned) << (2 * CMP_PACK_BITS);
}

/* Publishes a whole warp's decisions at once (cmp_publish for one lane): the
 * lanes' counts are summed, and lane 0 adds each sum to its progress word.
 * Every lane of `lanes` must call it. A small batch ends with every thread
 * publishing at the same moment, and one fenced atomic a lane on the same
 * few words queued them all behind each other; a warp's one atomic a count
 * does the same work. The adds are relaxed and return nothing: the counts
 * order nothing in the kernel, the watchdog only needs them to grow, and the
 * host reads them at the end behind FINISHED's release add
 * (cmp_walk_block). Returns the summed counts, packed, on lane 0. */
PRSTM_INLINE uint64_t cmp_warp_publish(const prstm_exec_ctx *ctx, stm_thread_stats *st, unsigned lanes, uint32_t lane,
                                       int active) {
  const uint64_t mine = active ? cmp_unpublished_packed(st) : 0;
  const uint64_t sum = port_warp_sum(lanes, lane, mine);
  if (lane == 0 && sum) {
    if (sum & CMP_PACK_MASK) port_add_relaxed(&ctx->quiesce[STM_Q_COMMITTED], sum & CMP_PACK_MASK);
    if ((sum >> CMP_PACK_BITS) & CMP_PACK_MASK)
      port_add_relaxed(&ctx->quiesce[STM_Q_FAILED], (sum >> CMP_PACK_BITS) & CMP_PACK_MASK);
    if (sum >> (2 * CMP_PACK_BITS)) port_add_relaxed(&ctx->quiesce[STM_Q_ABANDONED], sum >> (2 * CMP_PACK_BITS));
  }
  if (mine) {
    st->published_committed = st->committed;
    st->published_failed = st->failed;
    st->published_abandoned = st->abandoned;
    st->published_ns = port_clock_ns();
  }
  return sum;
}

/* Records a row's decision. `unpublished` is the walk's count of its
 * decisions not yet on the progress words, kept in a register: summing the
 * differences of the three counts and their published values took a dozen
 * 64-bit instructions a row. */
PRSTM_INLINE void cmp_finish_row(const prstm_exec_ctx *ctx, uint64_t row, unsigned status, unsigned reason,
                                 stm_thread_stats *st, uint32_t *unpublished) {
  port_table_store_u8(&ctx->table.status[row], txtable_pack_status(status, reason));
  if (status == TXTABLE_COMMITTED)
    st->committed++;
  else if (status == TXTABLE_ABANDONED)
    st->abandoned++;
  else
    st->failed++;
  const uint32_t u = ++*unpublished;
  /* The clock is read once every 16 decisions, not per transaction: on the
   * GPU the global timer read cost a few percent of an uncontended kernel,
   * and even slow decisions come 16 at a time well within the watchdog. */
  if (u >= PRSTM_POLICY_PROGRESS_BATCH ||
      ((u & 15u) == 0 && port_clock_ns() - st->published_ns > PRSTM_POLICY_PROGRESS_NS)) {
    cmp_publish(ctx, st);
    *unpublished = 0;
  }
}

/* The papers' comparator: a semantic conflict is retried in place, and the
 * transaction is abandoned after retry_limit retries. */
PRSTM_INLINE void cmp_walk_retry(prstm_tx *tx, const prstm_exec_ctx *ctx, uint32_t rank, cmp_dispatch_fn dispatch,
                                 stm_thread_stats *st) {
  const uint64_t n = ctx->table.n, step = ctx->nthreads;
  /* The lanes of a warp walk their rows together, as in cmp_walk_postpone:
   * the comparator gets the same coalesced table reads as the engine. A lane
   * retrying a semantic conflict holds its warp at most retry_limit pauses,
   * as the lockstep warps of the papers' GPUs did. */
  const unsigned lanes = port_warp_lanes(rank, ctx->nthreads);
  const uint64_t lane = port_warp_lane(rank);
  const int records = cmp_records_order(ctx);
  uint32_t unpublished = 0; /* decisions not on the progress words (cmp_finish_row) */
  int stopped = 0;
  st->sweeps++;
  for (uint64_t row = rank; row - lane < n; row += step) {
    if (!stm_tx_alone(tx)) port_warp_sync(lanes);
    if (stopped || row >= n) continue;
    const unsigned type = port_table_load_u8(&ctx->table.type[row]);
    if (ctx->type_tag[type] == CMP_TAG_NONE) continue;
    for (uint32_t retries = 0;; retries++) {
      unsigned reason = 0;
      unsigned s = cmp_attempt(tx, ctx, row, type, rank, dispatch, st, &reason, records, retries == 0);
      if (s == CMP_STOPPED) {
        stopped = 1;
        break;
      }
      if (s != CMP_POSTPONED) {
        cmp_finish_row(ctx, row, s, reason, st, &unpublished);
        break;
      }
      st->postponements++;
      if (STM_STOPPED(ctx)) {
        stopped = 1;
        break;
      }
      if (retries >= ctx->retry_limit) {
        cmp_finish_row(ctx, row, TXTABLE_ABANDONED, TXTABLE_REASON_RETRY_LIMIT, st, &unpublished);
        break;
      }
      port_pause(retries);
    }
  }
}

/* Rows a CPU thread walks between two looks at the host's stop word. */
#define CMP_STOP_CHECK_ROWS 8u

/* The semantic CMP (the papers' Algorithm 3 plus termination): sweep the
 * block, higher tags first; commit or fail what can be, postpone the rest,
 * and come back while any commit anywhere may have changed the state.
 *
 * On the GPU the lanes of a warp walk their rows together: every lane meets
 * the warp at the start of each row (port_warp_sync), and a lane that has
 * finished, been stopped or has no row there still comes along, doing
 * nothing, until the whole warp is done. Left alone, the lanes drifted
 * apart after their first aborts (a retry of one lane let the others run
 * ahead), and each lane then read its row of every table column on its own,
 * a sector at a time, with streaming loads that L2 evicts first: several
 * times the sectors a transfer that the ceiling kernel reads. Walking
 * together, a warp reads 32 consecutive rows of each column at once
 * (docs/PERFORMANCE.md, "Memory traffic"). On the CPU a warp is one lane and
 * the walk is the plain loop. */
PRSTM_INLINE void cmp_walk_postpone(prstm_tx *tx, const prstm_exec_ctx *ctx, uint32_t rank, cmp_dispatch_fn dispatch,
                                    stm_thread_stats *st) {
  const uint64_t n = ctx->table.n, step = ctx->nthreads;
  const unsigned lanes = port_warp_lanes(rank, ctx->nthreads);
  /* The warp's first row of a round is row - lane: the same for every lane,
   * and it has the most rows, so its bound ends every lane's loop together. */
  const uint64_t lane = port_warp_lane(rank);
  /* Whether a decided row leaves a record (cmp_record_order): one test a
   * row instead of one per kind of record. */
  const int records = cmp_records_order(ctx);
  /* Where every type has the same tag and none is left alone, each row
   * belongs to the one sweep there is, and a thread alone takes it without
   * looking its tag up (taken from the sweep on many threads too, the tag
   * made the bank's mixed batch about 2% slower). */
  const int one_tag = (ctx->tag_mask & (ctx->tag_mask - 1u)) == 0u;
  uint32_t unpublished = 0; /* decisions not on the progress words (cmp_finish_row) */
  uint64_t pending = txtable_block_size(n, rank, ctx->nthreads);
  /* Rows the walk leaves alone are not this thread's to finish. */
  if (ctx->tag_mask & CMP_TAG_MASK_NONE)
    for (uint64_t row = rank; row < n; row += step) pending -= (uint64_t)cmp_row_left_alone(ctx, row);
  /* A thread with an empty block is finished from the start, and must be
   * counted as such or the others would wait for it forever. */
  if (pending == 0) port_fetch_add(&ctx->quiesce[STM_Q_DONE], 1);
  /* Sweeps in a row that committed nothing although the epoch moved: the
   * commits elsewhere did not fund this block yet. Each such sweep re-reads
   * what its postponed transactions depend on, often the hottest words of
   * the batch, so the next one waits longer, in proportion to what the last
   * one cost (bounded, see port_backoff). */
  unsigned futile = 0;
  /* The first sweep meets every row of the block; later ones only the
   * postponed (cmp_attempt's first_visit). */
  int first_sweep = 1;
#if !defined(__CUDA_ARCH__)
  unsigned rows_since_stop_check = 0;
#endif
  /* This lane still sweeps its block; it stops for good when the block is
   * final, at quiescence, or when the host stops the run. */
  int walking = pending > 0;
  while (port_warp_any(lanes, walking)) {
    /* Every lane of the warp sweeps in the same epoch, lane 0's. A lane that
     * waits for quiescence in epoch e counts on every other thread being
     * stalled in e or finished; a warp-mate that had read an older epoch
     * would see it moved, go back to sweep, and wait at the next row for the
     * waiting lane, which would wait for it: neither would move again. */
    const uint64_t epoch = port_warp_broadcast(lanes, port_load_acquire(&ctx->quiesce[STM_Q_EPOCH]));
    port_warp_sync(lanes); /* orders lane 0's acquire before the other lanes' sweeps */
    uint64_t commits = 0, sweep_start = 0;
    if (walking) {
      /* The epoch may have been moved by a thread other than the committers
       * it stands for (cmp_bump_epoch); a full fence per sweep makes their
       * commits visible to this sweep under the PTX and C11 models, not only
       * in practice. */
      port_fence_sc();
      sweep_start = port_clock_ns();
      st->sweeps++;
    }
    for (int tag = 15; tag >= 0; tag--) {
      if (!((ctx->tag_mask >> tag) & 1u)) continue;
      for (uint64_t row = rank; row - lane < n; row += step) {
        /* A thread alone has no warp-mates to meet (the sync held about
         * 5% of one GPU thread's stall samples). */
        if (!stm_tx_alone(tx)) port_warp_sync(lanes);
        if (!walking || row >= n) continue;
#if !defined(__CUDA_ARCH__)
        /* A CPU thread looks for the host's stop every CMP_STOP_CHECK_ROWS
         * rows, not only when it aborts or waits: a probe that the host
         * cuts short (engine/hetero.c) would otherwise run to the end of
         * its sweep. The GPU's threads leave it to their aborts and waits,
         * where the load costs nothing on the commit path. */
        if ((++rows_since_stop_check & (CMP_STOP_CHECK_ROWS - 1u)) == 0 && STM_STOPPED(ctx)) {
          walking = 0;
          continue;
        }
#endif
        /* The type is read once a row and sweep, here, and handed on. A
         * thread alone walks consecutive rows: it loads the row's type with
         * its status instead of after it, and asks for its argument lines
         * two lines ahead, so that its loads of them hit L1. */
        unsigned type = 0;
        if (stm_tx_alone(tx)) {
          type = port_table_load_u8(&ctx->table.type[row]);
          if ((row & 15u) == 0 && row + 32 < n)
            for (uint32_t c = 0; c < ctx->table.ncols; c++) {
              port_prefetch_l1(txtable_arg_address(&ctx->table, row + 32, c));
            }
        }
        if ((port_table_load_u8(&ctx->table.status[row]) & TXTABLE_STATUS_MASK) != 0u) continue;
        if (!stm_tx_alone(tx)) type = port_table_load_u8(&ctx->table.type[row]);
        if (!(stm_tx_alone(tx) && one_tag) && ctx->type_tag[type] != (unsigned)tag) continue;
        unsigned reason = 0;
        unsigned s = cmp_attempt(tx, ctx, row, type, rank, dispatch, st, &reason, records, first_sweep);
        if (s == CMP_STOPPED) {
          walking = 0;
          continue;
        }
        if (s == CMP_POSTPONED) {
          st->postponements++;
          continue;
        }
        cmp_finish_row(ctx, row, s, reason, st, &unpublished);
        pending--;
        if (s == TXTABLE_COMMITTED) commits++;
      }
    }
    first_sweep = 0;
    /* What the sweep itself took, before the warp's shared end below, whose
     * atomics would add their latency to every lane's back-off. */
    const uint64_t sweep_ns = walking ? port_clock_ns() - sweep_start : 0;
    /* The sweep's end, for the whole warp at once: its decisions are
     * published, the epoch moves if any lane committed, and the lanes whose
     * block is final count themselves done, in that order (a lane counted
     * done before the epoch moved could let a waiter judge quiescence
     * without the commits that fund it). Lane 0 does each once for the warp,
     * after a sync that orders every lane's commits before its fences. The
     * done count is a release add that returns nothing: a waiter that reads
     * it with acquire also sees the bump before it, and nothing here waits
     * for its value. */
    port_warp_sync(lanes);
    cmp_warp_publish(ctx, st, lanes, lane, walking);
    if (walking) unpublished = 0;
    const unsigned committers = port_warp_ballot(lanes, walking && commits);
    const unsigned finishers = port_warp_ballot(lanes, walking && pending == 0);
    if (lane == 0) {
      if (committers) cmp_bump_epoch(ctx);
      if (finishers) port_add_release(&ctx->quiesce[STM_Q_DONE], port_popcount(finishers));
    }
    port_warp_sync(lanes);
    if (!walking) continue;
    if (pending == 0) {
      walking = 0;
      continue;
    }
    if (commits) {
      futile = 0;
      continue;
    }
    int quiet = cmp_wait_quiescent(ctx, epoch);
    if (quiet < 0) { /* stopped */
      walking = 0;
      continue;
    }
    if (!quiet) {
      port_backoff(futile++, sweep_ns);
      continue;
    }
    walking = 0;
    /* Quiescent: each postponed transaction, re-run on this final state,
     * would still meet its semantic conflict. In a stream a later batch may
     * still fund it, so there it stays pending for the host to carry over. */
    if (ctx->semantic & CMP_SEMANTIC_KEEP_POSTPONED) continue;
    for (uint64_t row = rank; row < n; row += step)
      if ((ctx->table.status[row] & TXTABLE_STATUS_MASK) == 0u &&
          !((ctx->tag_mask & CMP_TAG_MASK_NONE) && cmp_row_left_alone(ctx, row)))
        cmp_finish_row(ctx, row, TXTABLE_ABANDONED, TXTABLE_REASON_QUIESCENT, st, &unpublished);
  }
}

/* One executing thread's whole life: its block of the table, then its counters. */
PRSTM_INLINE void cmp_walk_block(prstm_tx *tx, const prstm_exec_ctx *ctx, uint32_t rank, cmp_dispatch_fn dispatch) {
  if (rank >= ctx->nthreads) return;
  stm_thread_stats st = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  st.published_ns = port_clock_ns();
  tx->span[STM_SPAN_LO] = tx->span[STM_SPAN_WRITE_LO] = STM_SPAN_EMPTY_LO;
  tx->span[STM_SPAN_HI] = tx->span[STM_SPAN_WRITE_HI] = 0;
  if ((ctx->semantic & CMP_SEMANTIC_MODE_MASK) == 1u)
    cmp_walk_retry(tx, ctx, rank, dispatch, &st);
  else
    cmp_walk_postpone(tx, ctx, rank, dispatch, &st);
  /* The walks end together on every lane of the warp, so the warp publishes
   * and counts itself finished at once, as at the end of a sweep. The release
   * add orders the counts and every lane's stats (behind the sync) before
   * it, for the CPU backend's host, which waits for FINISHED with acquire. */
  if (ctx->span) cmp_fold_span(ctx, tx);
  const unsigned lanes = port_warp_lanes(rank, ctx->nthreads);
  const uint32_t lane = port_warp_lane(rank);
  port_warp_sync(lanes);
  cmp_warp_publish(ctx, &st, lanes, lane, 1);
  if (ctx->stats) ctx->stats[rank] = st;
  /* The warp's aborts, postponements and sweeps join the run's totals on
   * the progress words: a stream reads a unit's there, where summing every
   * thread's record took a kernel of its own after each unit. */
  const uint64_t aborts = port_warp_sum(lanes, lane, st.aborts);
  const uint64_t postponements = port_warp_sum(lanes, lane, st.postponements);
  const uint64_t sweeps = port_warp_sum(lanes, lane, st.sweeps);
  if (lane == 0) {
    if (aborts) port_add_relaxed(&ctx->quiesce[STM_Q_ABORTS], aborts);
    if (postponements) port_add_relaxed(&ctx->quiesce[STM_Q_POSTPONEMENTS], postponements);
    if (sweeps) port_add_relaxed(&ctx->quiesce[STM_Q_SWEEPS], sweeps);
  }
  port_warp_sync(lanes);
  if (lane == 0) port_add_release(&ctx->quiesce[STM_Q_FINISHED], port_popcount(lanes));
}

#endif /* CMP_WALK_H */
