/* hetero.c: one batch co-executed by two units (the CPU, and a GPU or a second set of CPU threads), each on its own replica of the state, reconciled through footprint marks after every round. */
#define _GNU_SOURCE
#include "unit.h"
#include "footprint_log.h"

#include <float.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The model is HeterosTM's (docs/HETERO.md). Each round hands a slice of the
 * batch to the two units: unit A, the CPU backend's threads, and unit B, the
 * GPU (or more CPU threads where no GPU is usable, so that the same logic
 * runs everywhere). Each unit runs its part through the engine's PR-STM on
 * its own replica, postponing as always, and marks the locks its decided
 * rows read and wrote. The round is then serialised as A's rows followed by
 * B's: that order is what both units saw unless B read or wrote under a
 * lock that A wrote under; failing that, as B's rows followed by A's, under
 * the same rule the other way. Where one order holds, each unit's writes
 * are copied into the other's replica and both parts are kept; where
 * neither does, the engine's policy gives up one part (the GPU's under
 * GPU invalidation, the default), the other unit's replica is copied into
 * its replica, and its rows run again in a later round. Rows still postponed at the
 * end of a round are carried into the next one; once every row has been
 * handed out, unit A runs what is left to the end, abandoning only what
 * the final state cannot fund. So each row is decided once, and the run's
 * commit order spans both units: --verify replays it like any other. */

typedef struct hetero_run {
  prstm_engine *e;
  prstm_batch *b;
  const prstm_worker_variant *v;
  unit unit[2]; /* A (the CPU), B */
  uint64_t nlocks;
  /* A round's reconciliation: A's address log (its written locks, then
   * those it only read), the locks B wrote, and the words of listed locks
   * in a compact copy (hetero_move_words). */
  uint64_t *log, *b_log;
  uint64_t log_n, log_cap, b_log_cap;
  prstm_word *compact;
  uint64_t compact_cap;
  unit_rowlist carry; /* rows postponed or discarded, waiting for a round */
  uint64_t next_new;  /* rows [0, next_new) were handed to some round */
  uint64_t seq_base;  /* commit-order numbers of the rounds kept so far */
  int results;
  uint64_t *cand; /* the candidates of a round */
  uint64_t cand_cap;
  uint8_t *reserved; /* one byte a lock: A's rows touch it in B's range this round */
  uint64_t *reserved_list;
  uint64_t nreserved, reserved_cap;
  int a_loses_next;  /* PRSTM_HETERO_BALANCED: unit A gives up its part at the next conflict */
  double stop_ratio; /* A's part is stopped at this many times B's time (hetero_round) */
  double solo_ratio; /* a unit this many times faster than the other takes every later round alone */
  int a_stopped;     /* A's part of the last round was stopped */
} hetero_run;

/* Clears both units' marks for the next round. */
static void hetero_clear_marks(hetero_run *h) {
  for (int k = 0; k < 2; k++) unit_clear_footprint(&h->unit[k], h->nlocks);
}

/* Makes the replicas equal by copying one whole: B's into A's when
 * from_b, else A's into B's; and clears the marks. */
static int hetero_copy_replica(hetero_run *h, int from_b, double *copy_s) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  const size_t bytes = (size_t)h->e->nwords * sizeof *a->e->words;
  const double t0 = engine_now();
  int rc = 0;
  if (from_b && bu->ops->state_read)
    rc = bu->ops->state_read(bu->e, bu->bs, a->e->words, 0, h->e->nwords);
  else if (from_b)
    memcpy(a->e->words, bu->e->words, bytes);
  else if (bu->ops->state_write)
    rc = bu->ops->state_write(bu->e, bu->bs, a->e->words, 0, h->e->nwords);
  else
    memcpy(bu->e->words, a->e->words, bytes);
  if (rc) return engine_fail(h->e, rc, "GPU unit: %s", bu->e->err);
  *copy_s += engine_now() - t0;
  hetero_clear_marks(h);
  return 0;
}

/* What a reconciliation kept of a round, and in which commit order: the
 * order decides whose commit numbers come first, and a part given up
 * waits for a later round. */
typedef enum hetero_verdict {
  HETERO_KEEP_BOTH,         /* Both parts are kept, A's rows first. */
  HETERO_KEEP_BOTH_B_FIRST, /* Both parts are kept, B's rows first. */
  HETERO_KEEP_A,            /* B's part is given up. */
  HETERO_KEEP_B             /* A's part is given up. */
} hetero_verdict;

/* Decided rows of a unit's part: committed, failed or abandoned. */
static uint64_t part_decided(const unit *u) { return u->n - unit_pending(u); }

/* The part to give up where the round's parts conflict in both orders, so
 * that one of them must go: the engine's policy (prstm_hetero_policy)
 * chooses which. */
static hetero_verdict hetero_policy_verdict(hetero_run *h) {
  switch (h->e->opt.hetero_policy) {
    case PRSTM_HETERO_FAVOUR_FASTEST:
      /* The part that decided more rows is kept, HeterosTM's "most commits
       * since the last synchronisation": parts are sized by each unit's
       * rate, so the faster unit's part is the larger. A tie keeps the
       * CPU's. */
      return part_decided(&h->unit[1]) > part_decided(&h->unit[0]) ? HETERO_KEEP_B : HETERO_KEEP_A;
    case PRSTM_HETERO_BALANCED: {
      /* The units lose in turn, the second unit first. */
      const hetero_verdict v = h->a_loses_next ? HETERO_KEEP_B : HETERO_KEEP_A;
      h->a_loses_next = !h->a_loses_next;
      return v;
    }
    case PRSTM_HETERO_GPU_INVALIDATION:
    default:
      return HETERO_KEEP_A;
  }
}

/* Room for n entries in a list of locks that grows as needed. */
static int hetero_grow(hetero_run *h, uint64_t **list, uint64_t *cap, uint64_t n) {
  if (n <= *cap) return 0;
  uint64_t want = *cap ? 2 * *cap : 4096;
  if (want < n) want = n;
  uint64_t *l = realloc(*list, (size_t)want * sizeof *l);
  if (!l) return engine_fail(h->e, PRSTM_ENOMEM, "cannot hold a round's log of %llu locks", (unsigned long long)n);
  *list = l;
  *cap = want;
  return 0;
}

/* Appends to h->log the locks whose marks `want` says to take: the ones
 * written (a_read NULL), or the ones read and not written. Marks are
 * tested eight at a time, since most locks of a large state are untouched. */
static int hetero_log_take(hetero_run *h, const uint8_t *a_read, const uint8_t *a_write) {
  const uint8_t *m = a_read ? a_read : a_write;
  for (uint64_t l = 0; l < h->nlocks;) {
    if (l + 8 <= h->nlocks) {
      uint64_t eight;
      memcpy(&eight, m + l, 8);
      if (!eight) {
        l += 8;
        continue;
      }
    }
    for (const uint64_t end = l + 8 < h->nlocks ? l + 8 : h->nlocks; l < end; l++) {
      if (!m[l] || (a_read && a_write[l])) continue;
      int rc = hetero_grow(h, &h->log, &h->log_cap, h->log_n + 1);
      if (rc) return rc;
      h->log[h->log_n++] = l;
    }
  }
  return 0;
}

/* The words of listed locks, between a replica in host memory and a
 * compact copy (lock k's words at compact + k * lock_coverage). */
static void hetero_words_get(const hetero_run *h, const prstm_word *words, const uint64_t *lock, uint64_t n,
                             prstm_word *compact) {
  const uint64_t cov = h->e->opt.lock_coverage;
  for (uint64_t k = 0; k < n; k++)
    memcpy(compact + k * cov, words + lock[k] * cov,
           (size_t)footprint_lock_words(lock[k], cov, h->e->nwords) * sizeof *words);
}

static void hetero_words_put(const hetero_run *h, prstm_word *words, const uint64_t *lock, uint64_t n,
                             const prstm_word *compact) {
  const uint64_t cov = h->e->opt.lock_coverage;
  for (uint64_t k = 0; k < n; k++)
    memcpy(words + lock[k] * cov, compact + k * cov,
           (size_t)footprint_lock_words(lock[k], cov, h->e->nwords) * sizeof *words);
}

/* Room in the compact copy for the words of n locks. */
static int hetero_compact_room(hetero_run *h, uint64_t n) {
  const uint64_t words = n * h->e->opt.lock_coverage;
  return hetero_grow(h, &h->compact, &h->compact_cap, words ? words : 1);
}

/* Copies the words of listed locks from A's replica into B's (a_to_b),
 * or from B's into A's, through the compact copy: on a GPU only those
 * words cross the link. */
static int hetero_move_words(hetero_run *h, int a_to_b, const uint64_t *lock, uint64_t n) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  if (!n) return 0;
  int rc = hetero_compact_room(h, n);
  if (rc) return rc;
  if (a_to_b) {
    hetero_words_get(h, a->e->words, lock, n, h->compact);
    if (bu->ops->locks_write)
      rc = bu->ops->locks_write(bu->e, bu->bs, lock, n, h->compact);
    else
      hetero_words_put(h, bu->e->words, lock, n, h->compact);
  } else {
    if (bu->ops->locks_read)
      rc = bu->ops->locks_read(bu->e, bu->bs, lock, n, h->compact);
    else
      hetero_words_get(h, bu->e->words, lock, n, h->compact);
    if (!rc) hetero_words_put(h, a->e->words, lock, n, h->compact);
  }
  return rc ? engine_fail(h->e, rc, "GPU unit: %s", bu->e->err) : 0;
}

/* Compares A's log (h->log: its first `nwritten` locks written) with B's
 * marks where they are, and lists the locks B wrote under. Where B's marks
 * are on its GPU, the comparison runs there (log_compare); elsewhere here,
 * the same check over the same log. B's marks are cleared. */
static int hetero_compare(hetero_run *h, uint64_t nwritten, unsigned *fails, const uint64_t **b_written,
                          uint64_t *nb_written) {
  unit *bu = &h->unit[1];
  if (bu->ops->log_compare) {
    int rc = bu->ops->log_compare(bu->e, bu->bs, h->log, nwritten, h->log_n, fails, b_written, nb_written);
    return rc ? engine_fail(h->e, rc, "GPU unit: %s", bu->e->err) : 0;
  }
  const uint8_t *rb = bu->e->unit_read_marks, *wb = bu->e->unit_write_marks;
  *fails = 0;
  for (uint64_t k = 0; k < h->log_n; k++) *fails |= footprint_log_check(k < nwritten, rb[h->log[k]], wb[h->log[k]]);
  const uint64_t log_n = h->log_n;
  int rc = hetero_log_take(h, NULL, wb);
  if (rc) return rc;
  *b_written = h->log + log_n;
  *nb_written = h->log_n - log_n;
  unit_clear_footprint(bu, h->nlocks);
  return 0;
}

/* Reconciles the replicas after a round and says what was kept (*verdict).
 * Both parts ran from the same state, so the round is serialisable as A's
 * rows then B's unless B read or wrote under a lock that A wrote under,
 * and as B's then A's unless A read or wrote under a lock that B wrote
 * under. A's address log (the locks it wrote under, then those it only
 * read under) is compared with B's marks where they lie, on B's GPU where
 * it has one (footprint_log.h). Where neither order holds, the policy gives
 * up one part. Either way both replicas end equal, and only the words of
 * written locks move between them. */
static int hetero_reconcile(hetero_run *h, hetero_verdict *verdict, double *copy_s) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  int rc = 0;
  *verdict = HETERO_KEEP_BOTH;
  if (!a->n || !bu->n) {
    /* One unit ran alone: nothing to compare, its replica is copied whole. */
    if (bu->ops->footprint_take && (rc = bu->ops->footprint_take(bu->e, bu->bs)) != 0)
      return engine_fail(h->e, rc, "GPU unit: %s", bu->e->err);
    return hetero_copy_replica(h, bu->n != 0, copy_s);
  }
  const double t0 = engine_now();
  h->log_n = 0;
  rc = hetero_log_take(h, NULL, a->e->unit_write_marks);
  const uint64_t a_written = h->log_n;
  if (!rc) rc = hetero_log_take(h, a->e->unit_read_marks, a->e->unit_write_marks);
  unsigned fails = 0;
  const uint64_t *b_written = NULL;
  uint64_t nb_written = 0;
  if (!rc) rc = hetero_compare(h, a_written, &fails, &b_written, &nb_written);
  if (rc) return rc;
  if (fails & FOOTPRINT_A_FIRST_FAILS)
    *verdict = fails & FOOTPRINT_B_FIRST_FAILS ? hetero_policy_verdict(h) : HETERO_KEEP_BOTH_B_FIRST;
  /* Where both parts are kept, no lock was written by both: each unit's
   * written locks go to the other replica. Where one part is given up, the
   * kept part's replica holds every lock either wrote. B's list is copied
   * first, since a GPU's next call reuses the memory that holds it. */
  rc = hetero_grow(h, &h->b_log, &h->b_log_cap, nb_written ? nb_written : 1);
  if (rc) return rc;
  if (nb_written) memcpy(h->b_log, b_written, (size_t)nb_written * sizeof *h->b_log);
  const int b_to_a = *verdict != HETERO_KEEP_A, a_to_b = *verdict != HETERO_KEEP_B;
  rc = hetero_move_words(h, !b_to_a, h->b_log, nb_written);
  if (!rc) rc = hetero_move_words(h, a_to_b, h->log, a_written);
  if (rc) return rc;
  *copy_s += engine_now() - t0;
  unit_clear_footprint(a, h->nlocks);
  return 0;
}

/* Keeps a part's outcomes, its commit order after every earlier part's. */
static int hetero_keep(hetero_run *h, unit *u, prstm_results *res, uint64_t *decided) {
  int rc = unit_keep(h->e, h->b, u, h->seq_base, res, decided, &h->carry, NULL);
  if (!rc) h->seq_base += u->out.q[STM_Q_SEQUENCE];
  return rc;
}

/* Gives up a part lost to a conflict: its rows, decided or not, wait for a
 * later round. */
static int hetero_give_up(hetero_run *h, unit *u, prstm_results *res) {
  for (uint64_t k = 0; k < u->n; k++) {
    int rc = unit_rowlist_push(h->e, &h->carry, u->rows[k]);
    if (rc) return rc;
  }
  res->discarded_rows += u->n;
  if (u == &h->unit[0]) res->first_unit_discarded_rows += u->n;
  return 0;
}

/* Locks unit A's rows of this round touch in B's range (routed rounds),
 * and which of them are set, to clear them for the next round. */
static int reserve_lock(hetero_run *h, uint64_t l) {
  if (h->reserved[l]) return 0;
  if (h->nreserved == h->reserved_cap) {
    uint64_t cap = h->reserved_cap ? 2 * h->reserved_cap : 4096;
    uint64_t *list = realloc(h->reserved_list, (size_t)cap * sizeof *list);
    if (!list) return engine_fail(h->e, PRSTM_ENOMEM, "cannot plan a round's reserved words");
    h->reserved_list = list;
    h->reserved_cap = cap;
  }
  h->reserved[l] = 1;
  h->reserved_list[h->nreserved++] = l;
  return 0;
}

static int cmp_u64(const void *x, const void *y) {
  const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* The first lock of B's range in a routed round. A row goes to B when
 * every word it names lies in B's range, that is when its lowest word
 * does; so the split is the (1 - share_b) quantile of the lowest locks of a
 * sample of the candidates, which gives B about share_b of the rows.
 * Returns 0 (no routing) when fewer than one sampled row in
 * HETERO_ROUTED_PARTS names a word the host can see: rows it cannot see go
 * to A, so routing would leave B next to nothing. */
static int hetero_split(hetero_run *h, const uint64_t *cand, uint64_t m, double share_b, uint64_t *split_lock) {
  enum { SAMPLE_ROWS = 4096, PER_ROW = 64 };
  uint64_t *lowest = malloc((size_t)SAMPLE_ROWS * sizeof *lowest);
  if (!lowest) return 0;
  const uint64_t rows = m < SAMPLE_ROWS ? m : SAMPLE_ROWS;
  const uint64_t cov = h->e->opt.lock_coverage;
  uint64_t named = 0, words[PER_ROW];
  for (uint64_t i = 0; i < rows; i++) {
    const uint64_t r = cand[rows == m ? i : (uint64_t)((double)i * (double)m / (double)rows)];
    const unsigned k = engine_row_words(h->e, h->b, r, words, PER_ROW);
    if (!k) continue;
    uint64_t low = words[0];
    for (unsigned j = 1; j < k; j++)
      if (words[j] < low) low = words[j];
    lowest[named++] = stm_lock_index(low, cov);
  }
  int routed = named > 0 && named * PRSTM_POLICY_HETERO_ROUTED_PARTS >= rows;
  if (routed) {
    qsort(lowest, (size_t)named, sizeof *lowest, cmp_u64);
    uint64_t at = (uint64_t)((1.0 - share_b) * (double)named);
    if (at >= named) at = named - 1;
    *split_lock = lowest[at];
  }
  free(lowest);
  return routed;
}

/* Numbers new rows: at[k] = first + k, on every core for many. */
typedef struct number_job {
  uint64_t *at;
  uint64_t first;
} number_job;

static void number_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  const number_job *j = arg;
  for (uint64_t k = from; k < to; k++) j->at[k] = j->first + k;
}

/* Fills the round's parts. The candidates are carried rows first (at most
 * half the round, so that new rows, which may fund them, keep coming), then
 * new rows. Where the host can see the words of enough rows (address
 * arguments, or the workload's row_words), the round is routed: the locks
 * are split into A's range and B's at a point that gives B about share_b
 * of the words named; a row entirely in B's range goes to B, any other row
 * to A, and a row of B's range that touches a lock one of A's rows touches
 * in B's range waits for a later round. Then the two parts share no lock
 * unless a row touches words the host cannot see, which the marks catch.
 * Elsewhere B takes the first share_b of the candidates and A the rest. */
static int hetero_plan(hetero_run *h, uint64_t round_rows, double share_b) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  uint64_t from_carry = h->carry.n < round_rows / 2 ? h->carry.n : round_rows / 2;
  uint64_t from_new = h->b->n - h->next_new;
  if (from_new > round_rows - from_carry) from_new = round_rows - from_carry;
  if (from_new == 0) from_carry = h->carry.n < round_rows ? h->carry.n : round_rows;
  const uint64_t m = from_carry + from_new;
  int rc = unit_reserve_rows(h->e, bu, m);
  if (!rc) rc = unit_reserve_rows(h->e, a, m);
  if (!rc && m > h->cand_cap) {
    uint64_t *c = realloc(h->cand, (size_t)m * sizeof *c);
    if (!c)
      rc = engine_fail(h->e, PRSTM_ENOMEM, "cannot plan a round of %llu rows", (unsigned long long)m);
    else {
      h->cand = c;
      h->cand_cap = m;
    }
  }
  if (rc) return rc;
  /* The carry is NULL until a row is first carried: no copy from it then
   * (a null pointer is not a valid argument even for zero bytes). */
  if (from_carry) memcpy(h->cand, h->carry.row, (size_t)from_carry * sizeof *h->cand);
  number_job numbers = {h->cand + from_carry, h->next_new};
  engine_parallel_for(from_new, engine_parallel_parts(from_new, PRSTM_POLICY_HETERO_ROWS_PER_PART), number_part,
                      &numbers);
  if (from_carry && h->carry.n > from_carry)
    memmove(h->carry.row, h->carry.row + from_carry, (size_t)(h->carry.n - from_carry) * sizeof *h->carry.row);
  h->carry.n -= from_carry;
  h->next_new += from_new;
  a->n = bu->n = 0;
  uint64_t split = 0;
  if (share_b <= 0 || share_b >= 1 || !hetero_split(h, h->cand, m, share_b, &split)) {
    uint64_t nb = (uint64_t)(share_b * (double)m + 0.5);
    if (nb > m) nb = m;
    if (nb > bu->info.slot_rows) nb = bu->info.slot_rows;
    memcpy(bu->rows, h->cand, (size_t)nb * sizeof *bu->rows);
    memcpy(a->rows, h->cand + nb, (size_t)(m - nb) * sizeof *a->rows);
    bu->n = nb;
    a->n = m - nb;
    return 0;
  }
  const uint64_t cov = h->e->opt.lock_coverage;
  uint64_t words[64];
  for (uint64_t k = 0; k < m; k++) {
    const uint64_t r = h->cand[k];
    const unsigned n = engine_row_words(h->e, h->b, r, words, 64);
    unsigned high = 0;
    for (unsigned i = 0; i < n; i++) high += words[i] < h->e->nwords && stm_lock_index(words[i], cov) >= split;
    if (n && high == n) {
      bu->rows[bu->n++] = r; /* B's, unless A's rows touch its locks (below) */
      continue;
    }
    a->rows[a->n++] = r;
    for (unsigned i = 0; i < n && high; i++) {
      const uint64_t l = stm_lock_index(words[i], cov);
      if (words[i] < h->e->nwords && l >= split && (rc = reserve_lock(h, l)) != 0) return rc;
    }
  }
  uint64_t kept = 0;
  for (uint64_t k = 0; k < bu->n; k++) {
    const uint64_t r = bu->rows[k];
    const unsigned n = engine_row_words(h->e, h->b, r, words, 64);
    int touches = kept >= bu->info.slot_rows;
    for (unsigned i = 0; i < n && !touches; i++) touches = h->reserved[stm_lock_index(words[i], cov)];
    if (touches) {
      rc = unit_rowlist_push(h->e, &h->carry, r);
      if (rc) return rc;
    } else {
      bu->rows[kept++] = r;
    }
  }
  bu->n = kept;
  for (uint64_t i = 0; i < h->nreserved; i++) h->reserved[h->reserved_list[i]] = 0;
  h->nreserved = 0;
  return 0;
}

/* A round in which both units have rows and A's part is not the last (and
 * the probe's round): B's part started (a GPU's asynchronously, a CPU's on
 * a thread of its own), A's on a thread of its own, and B's waited for
 * first. A then has until `ratio` times B's time, and is stopped there (its
 * threads look for the stop between rows): the round no longer waits for
 * the slower unit, and the rows A had not decided are pending, carried
 * into a later round like postponed ones. *b_s and *a_s, where given, get
 * the time from the round's start to B's end and to A's. */
static int hetero_round_with_deadline(hetero_run *h, double ratio, double *b_s, double *a_s) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  bu->busy_s = a->busy_s = 0;
  a->e->unit_stopped = 0;
  a->e->unit_stop_at_ns = 0;
  a->e->unit_deadline_armed = 1;
  const double t0 = engine_now();
  pthread_t tid_b = 0;
  int threaded_b = 0, rc_b = 0;
  if (bu->is_gpu) {
    rc_b = unit_launch(bu);
    if (rc_b) {
      a->e->unit_deadline_armed = 0;
      return engine_fail(h->e, rc_b, "GPU unit: %s", bu->e->err);
    }
  } else {
    bu->rc = 0;
    threaded_b = pthread_create(&tid_b, NULL, unit_launch_thread, bu) == 0;
    if (!threaded_b) bu->rc = unit_launch(bu);
  }
  pthread_t tid_a;
  a->rc = 0;
  const int threaded_a = pthread_create(&tid_a, NULL, unit_launch_thread, a) == 0;
  if (!threaded_a) {
    /* Inline, A runs before B is waited for: no deadline. */
    a->e->unit_deadline_armed = 0;
    a->rc = unit_launch(a);
  }
  if (threaded_b) pthread_join(tid_b, NULL);
  if (!bu->is_gpu && bu->rc) rc_b = engine_fail(h->e, bu->rc, "second CPU unit: %s", bu->e->err);
  if (!rc_b) rc_b = unit_wait(h->e, bu);
  const double b_end = engine_now();
  if (b_s) *b_s = b_end - t0;
  if (threaded_a) {
    /* A failed B leaves nothing to wait for: A stops at once. A ratio that
     * no unit can beat (the tests' 1e30) sets no deadline. */
    const double stop_ns = (rc_b ? b_end : t0 + ratio * (b_end - t0)) * 1e9;
    if (stop_ns < 1e19) __atomic_store_n(&a->e->unit_stop_at_ns, (uint64_t)stop_ns + 1u, __ATOMIC_RELEASE);
    pthread_join(tid_a, NULL);
  }
  a->e->unit_deadline_armed = 0;
  if (a_s) *a_s = engine_now() - t0;
  h->a_stopped = a->e->unit_stopped;
  if (rc_b) return rc_b;
  if (a->rc) return engine_fail(h->e, a->rc, "CPU unit: %s", a->e->err);
  return unit_wait(h->e, a);
}

/* One round: B's part started (a GPU's asynchronously, a CPU's on a thread
 * of its own), A's run here, both waited for; or, where both units have
 * rows and A's part is not the last, with a deadline for A
 * (hetero_round_with_deadline). */
static int hetero_round(hetero_run *h) {
  unit *a = &h->unit[0], *bu = &h->unit[1];
  int rc = 0;
  pthread_t tid;
  int threaded = 0;
  h->a_stopped = 0;
  if (a->n && bu->n && !a->final && h->stop_ratio > 0) return hetero_round_with_deadline(h, h->stop_ratio, NULL, NULL);
  bu->busy_s = a->busy_s = 0;
  if (bu->n) {
    if (bu->is_gpu) {
      rc = unit_launch(bu);
      if (rc) return engine_fail(h->e, rc, "GPU unit: %s", bu->e->err);
    } else {
      bu->rc = 0;
      if (pthread_create(&tid, NULL, unit_launch_thread, bu) == 0)
        threaded = 1;
      else
        bu->rc = unit_launch(bu);
    }
  }
  int rc_a = a->n ? unit_launch(a) : 0;
  if (threaded) pthread_join(tid, NULL);
  if (rc_a) return engine_fail(h->e, rc_a, "CPU unit: %s", a->e->err);
  if (bu->n && !bu->is_gpu && bu->rc) return engine_fail(h->e, bu->rc, "second CPU unit: %s", bu->e->err);
  if (a->n && (rc = unit_wait(h->e, a)) != 0) return rc;
  if (bu->n && (rc = unit_wait(h->e, bu)) != 0) return rc;
  return 0;
}

static uint32_t host_cores(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (uint32_t)cores : 1;
}

/* What the first round found: nothing (the rounds went on), or the unit
 * that runs the whole batch alone, and how long the probe took. */
typedef struct hetero_probe {
  int allowed;         /* a probe may give the batch to one unit */
  prstm_backend alone; /* PRSTM_BACKEND_AUTO: the units share the batch */
  uint64_t rows;       /* the probe's rows */
  double rate_a, rate_b, wall_s;
  /* The CPU was stopped before it finished the probe's rows
   * (hetero_probe_round): how many it had decided, and when. */
  int cpu_stopped;
  uint64_t cpu_decided;
  double cpu_s, gpu_s;
} hetero_probe;

/* Rows a unit decided in its part, per second of its own time. */
static double hetero_part_rate(const unit *u) {
  if (!u->n || u->busy_s <= 0) return 0;
  return (double)(u->n - unit_pending(u)) / u->busy_s;
}

/* A ratio from the environment variable `name`, or `fallback` where it is
 * unset or empty; a value that is not a number of at least `min` fails the
 * run with the engine's message, which names the variable and `expected`.
 * Returns 0, or a negative code. */
static int hetero_env_ratio(prstm_engine *e, const char *name, double fallback, double min, const char *expected,
                            double *ratio) {
  *ratio = fallback;
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end = NULL;
  const double r = strtod(s, &end);
  if (end == s || *end != '\0' || !(r >= min))
    return engine_fail(e, PRSTM_EINVAL, "%s is '%s': expected %s", name, s, expected);
  *ratio = r;
  return 0;
}

/* The ratio by which a unit must beat the other in the probe to run the
 * batch alone: PRSTM_POLICY_HETERO_ALONE_RATIO, or the environment's
 * PRSTM_HETERO_ALONE_RATIO, a number of at least 1 (1: the faster unit
 * always runs alone; a huge one: the units always share the batch). The
 * probe's rates move with the host's load, so the tests of either outcome
 * set it. */
static int hetero_alone_ratio(prstm_engine *e, double *ratio) {
  return hetero_env_ratio(e, "PRSTM_HETERO_ALONE_RATIO", PRSTM_POLICY_HETERO_ALONE_RATIO, 1.0, "a number of at least 1",
                          ratio);
}

/* The times B's time that A's part of a round may take before it is
 * stopped: PRSTM_POLICY_HETERO_ROUND_STOP_RATIO, or the environment's
 * PRSTM_HETERO_STOP_RATIO, a positive number (a huge one, or inf, never
 * stops A; the tests set a tiny one to stop A every round). */
static int hetero_stop_ratio(prstm_engine *e, double *ratio) {
  return hetero_env_ratio(e, "PRSTM_HETERO_STOP_RATIO", PRSTM_POLICY_HETERO_ROUND_STOP_RATIO, DBL_MIN,
                          "a positive number", ratio);
}

/* How many times faster a unit must decide rows than the other, over the
 * rounds so far, to take every later round alone:
 * PRSTM_POLICY_HETERO_SOLO_RATIO, or the environment's
 * PRSTM_HETERO_SOLO_RATIO, a number of at least 1 (a huge one, or inf:
 * never for speed alone). Two CPU units' speeds move with the host's load,
 * so the tests that count rounds set a huge one. */
static int hetero_solo_ratio(prstm_engine *e, double *ratio) {
  return hetero_env_ratio(e, "PRSTM_HETERO_SOLO_RATIO", PRSTM_POLICY_HETERO_SOLO_RATIO, 1.0, "a number of at least 1",
                          ratio);
}

/* The probe's round: the GPU (unit B) and the CPU (unit A, on a thread of
 * its own) start on the same rows. When the GPU has finished them first,
 * the CPU has until `ratio` times the GPU's time, and is stopped there: it
 * could then no longer come within the ratio of the GPU, and its remaining
 * rows would only lengthen a probe that is thrown away. A CPU unit starting
 * cold took 11 to 30 ms over vacation's 8,192 probe rows, which the GPU
 * decided in about 2.3 ms. Where the CPU finishes first, both run to their
 * end, as in any round. */
static int hetero_probe_round(hetero_run *h, double ratio, hetero_probe *probe) {
  unit *a = &h->unit[0];
  int rc = hetero_round_with_deadline(h, ratio, &probe->gpu_s, &probe->cpu_s);
  probe->cpu_stopped = h->a_stopped;
  if (!rc) probe->cpu_decided = a->n - unit_pending(a);
  return rc;
}

/* The probe, with a GPU as unit B: both units run the batch's first rows,
 * the same ones, each on its replica from the engine's state, so that their
 * rates compare like for like whatever those rows wait for among
 * themselves. Nothing of it is kept: both replicas go back to the engine's
 * state and the marks are cleared. Where one unit decided the rows
 * PRSTM_POLICY_HETERO_ALONE_RATIO times as fast as the other, or the CPU
 * was stopped at that many times the GPU's time (hetero_probe_round), it
 * is the one to run the batch alone (probe->alone). */
static int hetero_probe_units(hetero_run *h, hetero_probe *probe) {
  prstm_engine *e = h->e;
  unit *a = &h->unit[0], *bu = &h->unit[1];
  uint64_t m = h->b->n < PRSTM_POLICY_HETERO_PROBE_ROWS ? h->b->n : PRSTM_POLICY_HETERO_PROBE_ROWS;
  if (m > bu->info.slot_rows) m = bu->info.slot_rows;
  if (m == 0) return 0;
  double ratio = 0;
  int rc = hetero_alone_ratio(e, &ratio);
  if (!rc) rc = unit_reserve_rows(e, a, m);
  if (!rc) rc = unit_reserve_rows(e, bu, m);
  if (rc) return rc;
  for (uint64_t k = 0; k < m; k++) a->rows[k] = bu->rows[k] = k;
  a->n = bu->n = m;
  probe->rows = m;
  const double t0 = engine_now();
  rc = hetero_probe_round(h, ratio, probe);
  if (rc) return rc;
  probe->rate_a = hetero_part_rate(a);
  probe->rate_b = hetero_part_rate(bu);
  probe->wall_s = engine_now() - t0;
  a->n = bu->n = 0;
  if (probe->cpu_stopped) {
    probe->alone = PRSTM_BACKEND_GPU;
    return 0;
  }
  const double faster = probe->rate_a > probe->rate_b ? probe->rate_a : probe->rate_b;
  if (faster > 0 && (probe->rate_b >= ratio * probe->rate_a || probe->rate_a >= ratio * probe->rate_b)) {
    /* The replicas are dropped with the units. */
    probe->alone = probe->rate_b > probe->rate_a ? PRSTM_BACKEND_GPU : PRSTM_BACKEND_CPU;
    return 0;
  }
  memcpy(a->e->words, e->words, (size_t)e->nwords * sizeof *e->words);
  if (bu->ops->state_write)
    rc = bu->ops->state_write(bu->e, bu->bs, e->words, 0, e->nwords);
  else
    memcpy(bu->e->words, e->words, (size_t)e->nwords * sizeof *e->words);
  if (!rc && bu->ops->footprint_take) rc = bu->ops->footprint_take(bu->e, bu->bs);
  if (rc) return engine_fail(e, rc, "GPU unit: %s", bu->e->err);
  hetero_clear_marks(h);
  return 0;
}

static int hetero_run_rounds(hetero_run *h, prstm_results *res, hetero_probe *probe) {
  prstm_engine *e = h->e;
  prstm_batch *b = h->b;
  unit *a = &h->unit[0], *bu = &h->unit[1];
  uint64_t max_round = b->n < PRSTM_POLICY_HETERO_MAX_ROUND_ROWS ? b->n : PRSTM_POLICY_HETERO_MAX_ROUND_ROWS;
  char why[256] = "";
  const int gpu = backend_gpu_usable(e->wl, why, sizeof why);
  uint32_t cpu_threads = e->opt.threads ? e->opt.threads : host_cores();
  if (!gpu) {
    cpu_threads = cpu_threads > 1 ? cpu_threads / 2 : 1;
    snprintf(res->fallback, sizeof res->fallback, "%s: the second unit runs on CPU threads too", why);
  }
  const unit_shape shape = {b, h->v, h->results, h->nlocks, max_round, 0, 0};
  int rc = unit_open(e, a, &shape, PRSTM_BACKEND_CPU, cpu_threads, 0, 0, 0);
  if (!rc) rc = unit_open(e, bu, &shape, gpu ? PRSTM_BACKEND_GPU : PRSTM_BACKEND_CPU, gpu ? 0 : cpu_threads, 0, 0, 0);
  if (rc) return rc;
  if (bu->info.slot_rows < max_round) max_round = bu->info.slot_rows;
  if (gpu && probe->allowed) {
    rc = hetero_probe_units(h, probe);
    if (rc || probe->alone != PRSTM_BACKEND_AUTO) return rc;
  }
  rc = hetero_stop_ratio(e, &h->stop_ratio);
  if (!rc) rc = hetero_solo_ratio(e, &h->solo_ratio);
  if (rc) return rc;
  /* The rounds' execution counts a probe that gave no unit the batch. */
  const double probe_s = probe->wall_s;
  /* The first round measures both units; it is short, whatever the
   * batch, since a round of a part in sixteen set the cost of whole runs
   * (docs/HETERO.md, "Measured"), and later rounds double while nothing
   * is given up. */
  uint64_t round_rows = PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS;
  /* A fixed period (options.hetero_period) sets every round's rows. */
  const uint64_t fixed_period = e->opt.hetero_period;
  if (fixed_period) round_rows = fixed_period;
  if (round_rows > max_round) round_rows = max_round;
  if (round_rows < 1) round_rows = 1;
  const double min_share = 1.0 / PRSTM_POLICY_HETERO_MIN_SHARE_PARTS;
  /* Reconciling scans every lock's marks, so a round is never so short
   * that the scan outweighs its rows. */
  uint64_t min_round = h->nlocks / PRSTM_POLICY_HETERO_LOCKS_PER_ROUND_ROW;
  if (min_round < PRSTM_POLICY_HETERO_MIN_ROUND_ROWS) min_round = PRSTM_POLICY_HETERO_MIN_ROUND_ROWS;
  if (min_round > max_round) min_round = max_round;
  double share_b = 0.5;
  int solo = -1; /* the unit that runs alone (0 A, 1 B), once one is found far faster */
  a->fill_parts = bu->fill_parts = bu->is_gpu;
  double t0 = engine_now();
  /* Rounds run while new rows remain, and a few more on the carried rows
   * alone while they still decide some. */
  unsigned rounds_after_new = 0;
  double work_a = 0, ran_work_a = 0, time_a = 0, work_b = 0, ran_work_b = 0, time_b = 0;
  unsigned lost_rounds = 0;
  uint64_t decided_last = 1;
  while (h->next_new < b->n ||
         (h->carry.n && decided_last && rounds_after_new++ < PRSTM_POLICY_HETERO_ROUNDS_AFTER_NEW)) {
    rc = hetero_plan(h, round_rows, share_b);
    if (!rc) rc = hetero_round(h);
    if (!rc) res->stopped_rounds += h->a_stopped;
    /* A solo unit's replica alone moves on; the other takes it at the end. */
    hetero_verdict verdict = HETERO_KEEP_BOTH;
    if (!rc && solo < 0) rc = hetero_reconcile(h, &verdict, &res->transfer_s);
    const int keep_a = verdict != HETERO_KEEP_B, keep_b = verdict != HETERO_KEEP_A;
    uint64_t decided_a = 0, decided_b = 0;
    /* The parts are kept in the round's commit order. */
    if (!rc && bu->n && verdict == HETERO_KEEP_BOTH_B_FIRST) rc = hetero_keep(h, bu, res, &decided_b);
    if (!rc && a->n) rc = keep_a ? hetero_keep(h, a, res, &decided_a) : hetero_give_up(h, a, res);
    if (!rc && bu->n && verdict != HETERO_KEEP_BOTH_B_FIRST)
      rc = keep_b ? hetero_keep(h, bu, res, &decided_b) : hetero_give_up(h, bu, res);
    if (rc) return rc;
    res->second_unit_rows += decided_b;
    res->reordered_rounds += verdict == HETERO_KEEP_BOTH_B_FIRST;
    const int lost = (!keep_a && a->n) || (!keep_b && bu->n);
    const uint64_t ran_a = keep_a ? decided_a : part_decided(a), ran_b = keep_b ? decided_b : part_decided(bu);
    res->rounds++;
    decided_last = decided_a + decided_b;
    if (bu->is_gpu) res->transfer_s += bu->copy_s;
    /* Each unit's share follows the rows it decided and kept per second of
     * its own time, over the rounds so far with the older ones weighing
     * less (a part's fixed costs make one small part look slow); a part
     * given up to a conflict counts as nothing decided. Its speed alone
     * counts the rows it decided, kept or not. */
    work_a = work_a / 2 + (double)decided_a;
    ran_work_a = ran_work_a / 2 + (double)ran_a;
    time_a = time_a / 2 + (a->n ? a->busy_s : 0);
    work_b = work_b / 2 + (double)decided_b;
    ran_work_b = ran_work_b / 2 + (double)ran_b;
    time_b = time_b / 2 + (bu->n ? bu->busy_s : 0);
    lost_rounds += lost;
    const double rate_a = time_a > 0 ? work_a / time_a : 0;
    const double rate_b = time_b > 0 ? work_b / time_b : 0;
    const double speed_a = time_a > 0 ? ran_work_a / time_a : 0;
    const double speed_b = time_b > 0 ? ran_work_b / time_b : 0;
    if (solo < 0 && time_a > 0 && time_b > 0 && rate_a + rate_b > 0) {
      share_b = rate_b / (rate_a + rate_b);
      if (share_b < min_share) share_b = min_share;
      if (share_b > 1 - min_share) share_b = 1 - min_share;
    }
    /* The scheduler settles on one unit when the other would add little:
     * one decides rows SOLO_RATIO times faster than the other (each speed
     * counting its lost parts too: a conflict says nothing of it), or parts
     * were lost to conflicts in SOLO_LOST_ROUNDS rounds (the faster
     * unit alone then beats both together). Both units ran the first
     * round, half of it each, so each has been measured. */
    if (solo < 0 && time_a > 0 && time_b > 0) {
      if (lost_rounds >= PRSTM_POLICY_HETERO_SOLO_LOST_ROUNDS)
        solo = speed_b > speed_a ? 1 : 0;
      else if (speed_b >= h->solo_ratio * speed_a)
        solo = 1;
      else if (speed_a >= h->solo_ratio * speed_b)
        solo = 0;
      if (solo >= 0) {
        share_b = solo;
        round_rows = max_round;
      }
    }
    /* The period adapts to the conflicts: a longer round costs less
     * reconciliation per row, a shorter one loses less to a conflict. A
     * solo unit reconciles nothing, so its rounds are the longest; a
     * fixed period holds until then. */
    const int adapts = !fixed_period || solo >= 0;
    if (adapts && lost) {
      round_rows /= 2;
      if (round_rows < min_round) round_rows = min_round;
    } else if (adapts && round_rows < max_round) {
      round_rows = 2 * round_rows < max_round ? 2 * round_rows : max_round;
    }
    if (round_rows > max_round) round_rows = max_round;
  }
  /* Every row was handed out: what is still pending runs on unit A (or
   * the solo unit, where its slots hold them) to the end, where a row that
   * nothing funds is abandoned; the other replica then takes its words. */
  int b_latest = solo == 1; /* B's replica holds the state, A's is behind */
  if (h->carry.n) {
    unit *u = solo == 1 && h->carry.n <= bu->info.slot_rows ? bu : a;
    if (u == a && b_latest) {
      rc = hetero_copy_replica(h, 1, &res->transfer_s);
      if (rc) return rc;
      b_latest = 0;
    }
    rc = unit_reserve_rows(e, u, h->carry.n);
    if (rc) return rc;
    memcpy(u->rows, h->carry.row, (size_t)h->carry.n * sizeof *u->rows);
    u->n = h->carry.n;
    h->carry.n = 0;
    u->final = 1;
    rc = unit_launch(u);
    if (rc) return engine_fail(e, rc, "%s unit: %s", u->is_gpu ? "GPU" : "CPU", u->e->err);
    rc = unit_wait(h->e, u);
    if (u == bu) b_latest = 1;
    uint64_t decided = 0;
    if (!rc) rc = hetero_keep(h, u, res, &decided);
    if (rc) return rc;
    if (u == bu) res->second_unit_rows += decided;
    if (h->carry.n)
      return engine_fail(e, PRSTM_EINVAL, "%llu rows are still pending after the final round",
                         (unsigned long long)h->carry.n);
    res->rounds++;
  }
  if (b_latest && (rc = hetero_copy_replica(h, 1, &res->transfer_s)) != 0) return rc;
  res->execute_s = engine_now() - t0 + probe_s - res->transfer_s;
  if (res->execute_s < 0) res->execute_s = 0;
  for (int k = 0; k < 2; k++) {
    unit *u = &h->unit[k];
    rc = u->ops->stream_finish(u->e, u->bs, &res->aborts, &res->postponements, &res->sweeps);
    if (rc) return engine_fail(e, rc, "%s unit: %s", u->is_gpu ? "GPU" : "CPU", u->e->err);
  }
  memcpy(e->words, a->e->words, (size_t)e->nwords * sizeof *e->words);
  e->last_run_sequences = h->seq_base;
  res->backend = PRSTM_BACKEND_HETERO;
  res->threads = a->info.threads + bu->info.threads;
  res->gpu_bytes = bu->info.gpu_bytes;
  snprintf(res->device, sizeof res->device, "%.56s + %.60s", a->info.device, bu->info.device);
  return 0;
}

/* The whole batch on one unit, run as its backend runs any batch on the
 * engine's state: on the GPU at its own default thread count (engine.threads
 * is the CPU unit's in a co-executed run), on the CPU on engine.threads. Sets
 * *ran when it ran the batch, and then makes *res one round of a
 * co-executed run. Nothing ran, and 0 is returned, where the backend
 * declined a deltas-only run (e->deltas_only) or the table does not fit the
 * GPU's memory at once: the rounds, which stream it in parts, run it. */
static int hetero_whole(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_backend on,
                        prstm_results *res, int *ran) {
  *ran = 0;
  const backend_ops *ops = backend_of(on);
  if (!ops) return 0;
  prstm_results r = *res;
  const uint32_t threads = e->opt.threads;
  if (on == PRSTM_BACKEND_GPU) e->opt.threads = 0;
  e->deltas_declined = 0;
  int rc = ops->run(e, b, v, &r);
  e->opt.threads = threads;
  if (rc == PRSTM_ETOOBIG) {
    e->err[0] = 0;
    return 0;
  }
  if (rc || e->deltas_declined) return rc;
  *res = r;
  res->backend = PRSTM_BACKEND_HETERO;
  res->rounds = 1;
  res->second_unit_rows = on == PRSTM_BACKEND_GPU ? b->n : 0; /* unit B is the GPU */
  *ran = 1;
  return 0;
}

/* The scheduler's first choice: a hot batch of declared steps whose batch
 * order commits every row runs as sums (the delta path, engine/delta.h) on
 * one unit, the GPU where there is one. No split of such a batch comes near
 * that: its rows are chains of updates of a few hot words, which the path
 * applies in batch order without a lock, and a second unit would only add
 * a reconciliation of those same words every round. The GPU judges the
 * batch's heat at its own default thread count, as its unit runs in the
 * rounds. Where the backend does not want the path for the batch, or its
 * proof refuses it, no row was decided and the state is as it was, and the
 * rounds run. Sets *done when the path ran the batch. */
static int hetero_try_deltas(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                             int *done) {
  *done = 0;
  if (e->opt.deltas == PRSTM_DELTAS_OFF) return 0;
  char why[256] = "";
  const int gpu = backend_gpu_usable(e->wl, why, sizeof why);
  e->deltas_only = 1;
  int rc = hetero_whole(e, b, v, gpu ? PRSTM_BACKEND_GPU : PRSTM_BACKEND_CPU, res, done);
  e->deltas_only = 0;
  if (!rc && *done && !gpu)
    snprintf(res->fallback, sizeof res->fallback, "%s: the batch ran on the CPU's delta path", why);
  return rc;
}

/* The whole batch on the unit `alone`, far the better one for it, for the
 * reason `why`; `spent_s` is what a discarded probe took, counted into the
 * execution. Sets *done when it ran. */
static int hetero_run_alone(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_backend alone,
                            const char *why, double spent_s, prstm_results *res, int *done) {
  int rc = hetero_whole(e, b, v, alone, res, done);
  if (rc || !*done) return rc;
  res->execute_s += spent_s;
  res->alone = alone;
  snprintf(res->alone_why, sizeof res->alone_why, "%s", why);
  return 0;
}

/* The scheduler's second choice, before any round: a batch whose words the
 * host sees (address arguments, or the workload's row_words), where its
 * contention sample settles which unit is far the better one
 * (PRSTM_POLICY_HETERO_ALONE_GPU_*, and --backend auto's own rule for the
 * CPU), runs whole on that one. */
static int hetero_try_alone(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                            int *done) {
  *done = 0;
  char why[256] = "";
  if (!backend_gpu_usable(e->wl, why, sizeof why)) return 0;
  /* Reads alone never conflict, and the GPU reads far faster. */
  int writes = 0;
  for (unsigned t = 0; t < e->wl->ntypes && t < 64; t++)
    if (((b->type_mask >> t) & 1u) && !e->wl->types[t].read_only) writes = 1;
  if (!writes && b->n) {
    snprintf(why, sizeof why, "every row is of a read-only type: no row conflicts with another");
    return hetero_run_alone(e, b, v, PRSTM_BACKEND_GPU, why, 0, res, done);
  }
  engine_contention hot;
  engine_contention_sample(e, b, &hot);
  if (!hot.known) return 0;
  const uint32_t threads = e->opt.threads;
  e->opt.threads = 0; /* judged for a full GPU's default, as auto judges it */
  const int cpu = engine_auto_prefers_cpu_sampled(e, b, &hot, why, sizeof why);
  e->opt.threads = threads;
  if (cpu) return hetero_run_alone(e, b, v, PRSTM_BACKEND_CPU, why, 0, res, done);
  const double conflicts = engine_contention_abort_conflicts(&hot, PRSTM_POLICY_AUTO_GPU_INFLIGHT),
               queue = engine_contention_hottest_abort_inflight(&hot, PRSTM_POLICY_AUTO_GPU_INFLIGHT);
  if (conflicts >= PRSTM_POLICY_HETERO_ALONE_GPU_CONFLICTS || queue >= PRSTM_POLICY_HETERO_ALONE_GPU_HOT_WORD_QUEUE)
    return 0;
  snprintf(why, sizeof why,
           "the batch's words are cold for a GPU's threads (%.3g conflicts a transaction, %.3g at once on its "
           "hottest word): the GPU decides such rows far faster",
           conflicts, queue);
  return hetero_run_alone(e, b, v, PRSTM_BACKEND_GPU, why, 0, res, done);
}

/* The rounds, from the batch's first row; where probe->allowed, the first
 * round may give the batch to one unit instead (probe->alone). */
static int hetero_rounds(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                         hetero_probe *probe) {
  hetero_run h;
  memset(&h, 0, sizeof h);
  h.e = e;
  h.b = b;
  h.v = v;
  h.nlocks = (e->nwords + e->opt.lock_coverage - 1) / e->opt.lock_coverage;
  for (unsigned t = 0; t < e->wl->ntypes; t++)
    if (e->wl->types[t].read_only) h.results = 1;
  for (int k = 0; k < 2; k++) h.unit[k].b = b;
  h.reserved = calloc((size_t)h.nlocks, 1);
  if (!h.reserved)
    return engine_fail(e, PRSTM_ENOMEM, "cannot plan rounds over %llu locks", (unsigned long long)h.nlocks);
  int rc = hetero_run_rounds(&h, res, probe);
  free(h.reserved);
  free(h.reserved_list);
  free(h.cand);
  for (int k = 0; k < 2; k++) unit_close(&h.unit[k]);
  free(h.log);
  free(h.b_log);
  free(h.compact);
  free(h.carry.row);
  return rc;
}

int engine_run_hetero(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  int done = 0;
  int rc0 = hetero_try_deltas(e, b, v, res, &done);
  if (rc0 || done) return rc0;
  if (!e->opt.hetero_rounds) {
    rc0 = hetero_try_alone(e, b, v, res, &done);
    if (rc0 || done) return rc0;
  }
  hetero_probe probe;
  memset(&probe, 0, sizeof probe);
  probe.allowed = !e->opt.hetero_rounds;
  int rc = hetero_rounds(e, b, v, res, &probe);
  if (rc || probe.alone == PRSTM_BACKEND_AUTO) return rc;
  const int on_gpu = probe.alone == PRSTM_BACKEND_GPU;
  const double fast = on_gpu ? probe.rate_b : probe.rate_a, slow = on_gpu ? probe.rate_a : probe.rate_b;
  char why[256];
  if (probe.cpu_stopped)
    snprintf(why, sizeof why,
             "on the batch's first %llu rows, run by both, the GPU decided them in %.3g ms; the CPU had decided %llu "
             "of them when it was stopped, at %.3g ms",
             (unsigned long long)probe.rows, probe.gpu_s * 1e3, (unsigned long long)probe.cpu_decided,
             probe.cpu_s * 1e3);
  else if (slow > 0)
    snprintf(why, sizeof why, "on the batch's first %llu rows, run by both, the %s was %.3g times as fast as the %s",
             (unsigned long long)probe.rows, on_gpu ? "GPU" : "CPU", fast / slow, on_gpu ? "CPU" : "GPU");
  else
    snprintf(why, sizeof why, "on the batch's first %llu rows, run by both, the %s decided rows and the %s none",
             (unsigned long long)probe.rows, on_gpu ? "GPU" : "CPU", on_gpu ? "CPU" : "GPU");
  rc = hetero_run_alone(e, b, v, probe.alone, why, probe.wall_s, res, &done);
  if (rc || done) return rc;
  /* The GPU cannot hold the whole table at once: the rounds, which stream
   * it in parts, without a probe, from the start. */
  probe.allowed = 0;
  probe.alone = PRSTM_BACKEND_AUTO;
  return hetero_rounds(e, b, v, res, &probe);
}
