/* stream.c: streams of batches on either backend: units of new and carried-over rows, their pipelining, outcomes scattered back, and the close that abandons only what nothing can fund. */
#define _GNU_SOURCE
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A unit is one execution: up to unit_rows new rows of one submitted batch,
 * then carried rows, each row remembered by its origin so that its outcome
 * lands in the batch it came from. The backend (backend.h) keeps one, two or
 * eight units in flight (a GPU copies one while it executes others); a unit's
 * pending rows join the carry queue when it is retired, and a later unit
 * takes them from the front of the queue. This file knows no backend: it
 * cuts batches into units, fills their staging and scatters their outcomes
 * back. */

typedef struct stream_item {
  prstm_batch *b;       /* NULL once reported done */
  uint64_t first;       /* prstm_row of its row 0: the rows of every earlier batch */
  uint64_t next_row;    /* rows [0, next_row) were handed to units */
  uint64_t outstanding; /* rows not yet final */
} stream_item;

typedef struct stream_origin {
  uint64_t item, row;
} stream_origin;

typedef struct stream_unit {
  int busy;
  uint64_t item, off, n_new; /* new rows: item's rows [off, off + n_new) */
  stream_origin *carry;      /* carried rows, after the new ones */
  uint64_t n_carry, carry_alloc;
  int results;
} stream_unit;

/* A verified stream's record of every row of its finished batches, so that
 * the certificate can replay them after close whatever the caller did with
 * the batches once they were reported done. */
typedef struct stream_journal {
  prstm_batch *rows; /* type, arguments, status, results, commit order and read hash */
  uint64_t *number, *item, *item_row;
  uint64_t alloc;
} stream_journal;

struct prstm_stream {
  prstm_engine *e;
  prstm_backend backend;
  const backend_ops *ops;
  backend_stream *bs; /* the backend's side, from the first batch on */
  char fallback[256];
  const prstm_worker_variant *v;
  uint32_t ncols;      /* row width, fixed by the first batch; 0 before it */
  uint32_t tag_mask;   /* tags of every batch so far */
  int results;         /* the workload has a read-only type */
  uint64_t unit_rows;  /* the most new rows of one unit */
  uint64_t carry_cap;  /* the most carried rows alongside new ones */
  uint64_t slot_rows;  /* the most rows of one unit */
  uint64_t limit_rows; /* options.chunk_rows or the chunked run's limit; 0: none */
  unsigned nslots, next_slot;
  stream_unit slots[BACKEND_STREAM_SLOTS_MAX];
  /* Helpers kept for the stream's life that share each fill of a unit's
   * staging: wanted where fills overlap running units (a GPU's slots),
   * started by the first fill large enough to use them, so that a stream
   * whose units are copied straight from page-locked batches, or are small,
   * starts none. NULL: copies by copy_rows' threads or the caller. */
  int copy_pool_wanted;
  engine_copy_pool *copy_pool;
  stream_item *items;
  uint64_t nitems, items_alloc, first_open;
  stream_origin *queue; /* carried rows waiting, FIFO from queue_head */
  uint64_t queue_head, queue_len, queue_alloc;
  /* The next unit of a batch being submitted, prepared while the unit
   * before it launches (stream_prefill): its plan, its slot's staging, the
   * fill of its new rows set out to the copy pool, and what says whether
   * its narrow columns held every value. */
  struct {
    int ready;
    unsigned slot;
    stream_unit u;
    backend_unit bu;
    backend_staging st;
    engine_copy *jobs; /* 1 + ncols pieces */
    int narrow, wide, wide_carried;
  } pre;
  prstm_stream_done_fn done_fn;
  void *done_user;
  prstm_stream_results res;
  double opened_at;
  int started; /* the first batch set the row width and the units */
  int closed;
  int in_done; /* inside the done callback, which must not call into the stream */
  int error;   /* sticky: the code that stopped the stream */
  /* Verification (options.verify): each unit's sequence numbers follow the
   * numbers every earlier unit took, so a stream has one commit order. */
  int verify;
  uint64_t seq_base;       /* numbers taken by the units retired so far */
  uint64_t rows_submitted; /* prstm_row of the next batch's row 0 */
  prstm_word *initial;     /* the state at open (a verified stream of its own) */
  stream_journal *journal; /* a verified stream of its own; NULL for a chunked run */
  /* A chunked prstm_engine_run reports progress over its whole batch. */
  prstm_batch *progress_batch;
  engine_progress_clock progress_clock;
};

/* ---- copying rows, on several threads when there are many ---- */

/* The staging of a GPU unit is a copy from the caller's pageable batch into
 * pinned memory; one core copies at a fraction of what the PCIe link takes,
 * so copies are shared out among up to half the cores (the other half keep
 * the units in flight going): by the stream's pool of threads where it has
 * one, else by threads started for a large copy. */
static unsigned copy_parts(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned parts = cores > 1 ? (unsigned)(cores / 2) : 1u;
  return parts > PRSTM_POLICY_STREAM_MAX_COPY_THREADS ? PRSTM_POLICY_STREAM_MAX_COPY_THREADS : parts;
}

static void copy_rows(prstm_stream *s, const engine_copy *pieces, size_t npieces) {
  size_t total = 0;
  for (size_t j = 0; j < npieces; j++) total += pieces[j].len;
  if (s->copy_pool_wanted && total >= PRSTM_POLICY_STREAM_POOL_MIN_BYTES) {
    if (!s->copy_pool) s->copy_pool = engine_copy_pool_open(copy_parts() - 1);
    /* A pool that could not start copies as a stream without one. */
    if (!s->copy_pool) s->copy_pool_wanted = 0;
    if (s->copy_pool) {
      engine_copy_pool_run(s->copy_pool, pieces, npieces);
      return;
    }
  }
  engine_parallel_copy(pieces, npieces, total < PRSTM_POLICY_STREAM_PARALLEL_BYTES ? 1u : copy_parts());
}

/* ---- the carry queue ---- */

static int queue_push(prstm_stream *s, uint64_t item, uint64_t row) {
  if (s->queue_head + s->queue_len == s->queue_alloc) {
    if (s->queue_head > 0) {
      memmove(s->queue, s->queue + s->queue_head, (size_t)s->queue_len * sizeof *s->queue);
      s->queue_head = 0;
    }
    if (s->queue_len == s->queue_alloc) {
      uint64_t cap = s->queue_alloc ? 2 * s->queue_alloc : 1024;
      stream_origin *q = realloc(s->queue, (size_t)cap * sizeof *q);
      if (!q) return engine_fail(s->e, PRSTM_ENOMEM, "cannot keep %llu carried transactions", (unsigned long long)cap);
      s->queue = q;
      s->queue_alloc = cap;
    }
  }
  s->queue[s->queue_head + s->queue_len++] = (stream_origin){item, row};
  return 0;
}

/* ---- retiring a unit: outcomes back to their batches ---- */

/* Copies a finished batch into a verified stream's journal. */
static int journal_add(prstm_stream *s, uint64_t index, const prstm_batch *b) {
  stream_journal *j = s->journal;
  prstm_batch *rows = j->rows;
  uint64_t need = rows->n + b->n;
  if (need > j->alloc) {
    uint64_t cap = j->alloc ? j->alloc : 1024;
    while (cap < need) cap *= 2;
    int rc = prstm_batch_reserve(rows, cap, s->ncols);
    uint64_t *seq = realloc(rows->seq, (size_t)cap * sizeof *seq);
    if (seq) rows->seq = seq;
    uint64_t *hash = realloc(rows->read_hash, (size_t)cap * sizeof *hash);
    if (hash) rows->read_hash = hash;
    uint64_t *result = s->results ? realloc(rows->result, (size_t)cap * sizeof *result) : NULL;
    if (result) rows->result = result;
    uint64_t *number = realloc(j->number, (size_t)cap * sizeof *number);
    if (number) j->number = number;
    uint64_t *item = realloc(j->item, (size_t)cap * sizeof *item);
    if (item) j->item = item;
    uint64_t *item_row = realloc(j->item_row, (size_t)cap * sizeof *item_row);
    if (item_row) j->item_row = item_row;
    if (rc || !seq || !hash || (s->results && !result) || !number || !item || !item_row)
      return engine_fail(s->e, PRSTM_ENOMEM, "cannot keep %llu rows for the stream's verification",
                         (unsigned long long)cap);
    j->alloc = cap;
  }
  prstm_word args[PRSTM_MAX_COLUMNS];
  for (uint64_t r = 0; r < b->n; r++) {
    for (uint32_t c = 0; c < b->ncols; c++) args[c] = txtable_get(b, c, r);
    uint64_t at = rows->n;
    int rc = prstm_batch_append(rows, b->type[r], args, b->ncols);
    if (rc) return engine_fail(s->e, rc, "cannot keep a row for the stream's verification");
    rows->status[at] = b->status[r];
    rows->seq[at] = b->seq ? b->seq[r] : UINT64_MAX;
    rows->read_hash[at] = b->read_hash ? b->read_hash[r] : 0;
    if (rows->result) rows->result[at] = b->result ? b->result[r] : 0;
    j->number[at] = s->items[index].first + r;
    j->item[at] = index;
    j->item_row[at] = r;
  }
  return 0;
}

static int stream_notify_done(prstm_stream *s) {
  for (uint64_t i = s->first_open; i < s->nitems; i++) {
    stream_item *it = &s->items[i];
    if (!it->b) {
      if (i == s->first_open) s->first_open++;
      continue;
    }
    if (it->outstanding || it->next_row < it->b->n) continue;
    prstm_batch *b = it->b;
    if (s->journal) {
      int rc = journal_add(s, i, b);
      if (rc) return rc;
    }
    it->b = NULL;
    if (i == s->first_open) s->first_open++;
    if (s->done_fn) {
      s->in_done = 1;
      s->done_fn(i, b, s->done_user);
      s->in_done = 0;
    }
  }
  return 0;
}

static void stream_report_progress(prstm_stream *s, int finished) {
  if (!s->progress_batch) return;
  uint64_t q[STM_Q_WORDS] = {0};
  q[STM_Q_COMMITTED] = s->res.committed;
  q[STM_Q_FAILED] = s->res.failed;
  q[STM_Q_ABANDONED] = s->res.abandoned;
  engine_progress_report(s->e, s->progress_batch, q, &s->progress_clock, finished);
}

/* A final row's outcome, written into row `row` of its batch from row k of
 * the unit: status, result, and under verification its place in the
 * stream's commit order and its read hash. */
typedef struct unit_outcomes {
  const uint8_t *status; /* every row of the unit's */
  const uint64_t *result, *seq, *read_hash;
  uint64_t seq_base;
} unit_outcomes;

static void outcome_store(prstm_batch *b, uint64_t row, const unit_outcomes *o, uint64_t k) {
  if (b->result && o->result) b->result[row] = o->result[k];
  if (b->seq && o->seq) b->seq[row] = o->seq[k] == UINT64_MAX ? UINT64_MAX : o->seq_base + o->seq[k];
  if (b->read_hash && o->read_hash) b->read_hash[row] = o->read_hash[k];
}

static int stream_take_outcomes(prstm_stream *s, const stream_unit *u, const backend_outcomes *g);

/* Waits for the slot's unit, writes each final row's outcome into its batch,
 * and queues the rows still pending. Units are retired in the order they
 * were launched: where they take numbers per unit (seq_shared 0), each one's
 * come after those of every earlier one; where they share a counter, the
 * numbers are the stream's already. */
static int stream_retire(prstm_stream *s, unsigned slot) {
  stream_unit *u = &s->slots[slot];
  if (!u->busy) return 0;
  u->busy = 0;
  /* The unit's counts are the progress words its threads published last. */
  backend_outcomes g;
  ENGINE_RANGE_PUSH("unit wait");
  int rc = s->ops->unit_wait(s->e, s->bs, slot, &g, &s->res.copy_s, &s->res.execute_s);
  ENGINE_RANGE_POP();
  if (rc) return rc;
  ENGINE_RANGE_PUSH("unit outcomes");
  rc = stream_take_outcomes(s, u, &g);
  ENGINE_RANGE_POP();
  if (rc) return rc;
  stream_report_progress(s, 0);
  return stream_notify_done(s);
}

/* Writes each final row of a retired unit into its batch, and queues the
 * rows still pending. */
static int stream_take_outcomes(prstm_stream *s, const stream_unit *u, const backend_outcomes *gp) {
  const backend_outcomes g = *gp;
  int rc = 0;
  unit_outcomes o = {g.status, g.result, g.seq, g.read_hash, g.seq_shared ? 0 : s->seq_base};
  const uint64_t sequences = g.q[STM_Q_SEQUENCE];
  s->res.committed += g.q[STM_Q_COMMITTED];
  s->res.failed += g.q[STM_Q_FAILED];
  s->res.abandoned += g.q[STM_Q_ABANDONED];
  /* Shared numbers are the stream's already, and the counter only grows:
   * seq_base becomes the count of every number taken. */
  if (!g.seq_shared)
    s->seq_base += sequences;
  else if (sequences > s->seq_base)
    s->seq_base = sequences;
  const uint8_t *carry_status = o.status + u->n_new;
  if (u->n_new) {
    stream_item *it = &s->items[u->item];
    prstm_batch *b = it->b;
    uint8_t *mine = b->status + u->off;
    memcpy(mine, o.status, (size_t)u->n_new);
    uint64_t pending = 0;
    if (b->result && o.result) memcpy(b->result + u->off, o.result, (size_t)u->n_new * sizeof *o.result);
    if (s->verify) {
      for (uint64_t k = 0; k < u->n_new; k++)
        if (mine[k]) outcome_store(b, u->off + k, &o, k);
    }
    const uint8_t *p = mine, *end = mine + u->n_new;
    /* Pending is status 0 with reason 0: a zero byte. */
    while ((p = memchr(p, 0, (size_t)(end - p))) != NULL) {
      rc = queue_push(s, u->item, u->off + (uint64_t)(p - mine));
      if (rc) return rc;
      pending++;
      p++;
    }
    it->outstanding -= u->n_new - pending;
    s->res.carried += pending;
  }
  for (uint64_t k = 0; k < u->n_carry; k++) {
    uint8_t st = carry_status[k];
    stream_origin og = u->carry[k];
    if (st == 0) {
      rc = queue_push(s, og.item, og.row);
      if (rc) return rc;
      continue;
    }
    prstm_batch *b = s->items[og.item].b;
    b->status[og.row] = st;
    outcome_store(b, og.row, &o, u->n_new + k);
    s->items[og.item].outstanding--;
  }
  return 0;
}

/* Retires every unit in flight, oldest first. */
static int stream_drain(prstm_stream *s) {
  for (unsigned k = 0; k < s->nslots; k++) {
    int rc = stream_retire(s, (s->next_slot + k) % s->nslots);
    if (rc) return rc;
  }
  return 0;
}

/* ---- launching a unit ---- */

/* The copies of a unit's new rows into its staging (none for a unit of
 * carried rows alone): the type column, then every argument column at the
 * staging's stride, as 32-bit values where `narrow`, the columns a narrower
 * batch lacks zeroed. A narrow batch's columns go as they are into narrow
 * staging and are widened into wide staging; a wide batch's are narrowed
 * into narrow staging, where a value that does not fit sets *wide. jobs
 * holds 1 + s->ncols pieces; returns how many it set. */
static size_t stream_fill_new_jobs(prstm_stream *s, const stream_unit *u, const backend_staging *st, int narrow,
                                   int *wide, engine_copy *jobs) {
  if (!u->n_new) return 0;
  const prstm_batch *b = s->items[u->item].b;
  uint32_t *args32 = (uint32_t *)st->args;
  const size_t n = (size_t)u->n_new;
  size_t nj = 0;
  jobs[nj++] = (engine_copy){st->type, b->type + u->off, n, NULL, 0};
  for (uint32_t c = 0; c < s->ncols; c++) {
    void *dst = narrow ? (void *)(args32 + (uint64_t)c * st->stride) : (void *)(st->args + (uint64_t)c * st->stride);
    if (c >= b->ncols)
      jobs[nj++] = (engine_copy){dst, NULL, n * (narrow ? 4u : 8u), NULL, 0};
    else if (narrow == !b->wide)
      jobs[nj++] = (engine_copy){dst, txtable_arg_at(b, c, u->off), n * txtable_width(b), NULL, 0};
    else
      jobs[nj++] = (engine_copy){dst, txtable_arg_at(b, c, u->off), n * 8u, narrow ? wide : NULL, !narrow};
  }
  return nj;
}

/* Fills a unit's carried rows into its staging after `at0` staged rows,
 * with their prstm_row numbers; returns 1 when narrow and a value needed
 * 64 bits. */
static int stream_fill_carried(prstm_stream *s, const stream_unit *u, const backend_staging *st, uint64_t at0,
                               int narrow) {
  uint64_t high = 0;
  uint32_t *args32 = (uint32_t *)st->args;
  for (uint64_t k = 0; k < u->n_carry; k++) {
    const prstm_batch *b = s->items[u->carry[k].item].b;
    uint64_t row = u->carry[k].row, at = at0 + k;
    st->row_id[k] = s->items[u->carry[k].item].first + row;
    st->type[at] = b->type[row];
    for (uint32_t c = 0; c < s->ncols; c++) {
      const uint64_t v = c < b->ncols ? txtable_get(b, c, row) : 0;
      if (narrow) {
        args32[(uint64_t)c * st->stride + at] = (uint32_t)v;
        high |= v >> 32;
      } else {
        st->args[(uint64_t)c * st->stride + at] = v;
      }
    }
  }
  return high != 0;
}

/* Whether every carried row of the unit comes from a narrow batch: the
 * unit's staging can then be narrow whatever their values. */
static int stream_carried_narrow(const prstm_stream *s, const stream_unit *u) {
  for (uint64_t k = 0; k < u->n_carry; k++)
    if (s->items[u->carry[k].item].b->wide) return 0;
  return 1;
}

/* Fills a unit's staging: the new rows, then the carried ones, every column
 * at the staging's stride, the columns a narrower batch lacks zeroed, and
 * the carried rows' prstm_row numbers (the new rows' follow from their
 * first). With with_new 0 (the backend copies the new rows straight from a
 * pinned batch) only the carried rows are filled, packed from row 0.
 *
 * With *narrow set (the staging allowed it), the argument columns are
 * filled as 32-bit values; where a value needs 64 bits the unit is filled
 * again whole and *narrow is cleared. Narrow columns halve the bytes the
 * fill writes and the upload sends, and every unit's upload queues on the
 * GPU's one copy stream, where a small unit's columns took about as long
 * as its kernel. */
static int stream_fill(prstm_stream *s, const stream_unit *u, const backend_staging *st, int with_new, int *narrow) {
  int wide = 0;
  engine_copy *jobs = malloc((1 + (size_t)s->ncols) * sizeof *jobs);
  if (!jobs) return engine_fail(s->e, PRSTM_ENOMEM, "cannot plan the copy of a unit");
  if (with_new) {
    size_t nj = stream_fill_new_jobs(s, u, st, *narrow, &wide, jobs);
    if (nj) copy_rows(s, jobs, nj);
  }
  free(jobs);
  const int high = stream_fill_carried(s, u, st, with_new ? u->n_new : 0, *narrow);
  if (*narrow && (high || __atomic_load_n(&wide, __ATOMIC_RELAXED))) {
    *narrow = 0;
    return stream_fill(s, u, st, with_new, narrow);
  }
  return 0;
}

/* How many carried rows a unit of n_new new rows takes from the front of
 * the queue: at most max_carry, and what the slot leaves beside them. */
static uint64_t stream_carry_count(const prstm_stream *s, uint64_t n_new, uint64_t max_carry) {
  uint64_t n_carry = s->queue_len < max_carry ? s->queue_len : max_carry;
  if (n_new + n_carry > s->slot_rows) n_carry = s->slot_rows - n_new;
  return n_carry;
}

/* Whether a unit of n_new rows of `item` and the carried rows carry[0,
 * n_carry) has a read-only row: the results column travels only then,
 * since on the GPU it would otherwise cost a readback of 8 bytes a row. */
static int stream_unit_results(const prstm_stream *s, uint64_t item, uint64_t n_new, const stream_origin *carry,
                               uint64_t n_carry) {
  if (n_new && s->items[item].b->has_read_only) return 1;
  for (uint64_t k = 0; s->results && k < n_carry; k++)
    if (s->e->wl->types[s->items[carry[k].item].b->type[carry[k].row]].read_only) return 1;
  return 0;
}

/* Describes in u a unit of n_new rows of `item` from its next row and
 * n_carry rows taken from the front of the carry queue. */
static int stream_plan(prstm_stream *s, stream_unit *u, uint64_t item, uint64_t n_new, uint64_t n_carry) {
  if (n_carry > u->carry_alloc) {
    stream_origin *c = realloc(u->carry, (size_t)n_carry * sizeof *c);
    if (!c)
      return engine_fail(s->e, PRSTM_ENOMEM, "cannot keep %llu carried transactions", (unsigned long long)n_carry);
    u->carry = c;
    u->carry_alloc = n_carry;
  }
  if (n_carry) memcpy(u->carry, s->queue + s->queue_head, (size_t)n_carry * sizeof *u->carry);
  s->queue_head += n_carry;
  s->queue_len -= n_carry;
  if (s->queue_len == 0) s->queue_head = 0;
  u->item = item;
  u->n_new = n_new;
  u->off = n_new ? s->items[item].next_row : 0;
  u->n_carry = n_carry;
  if (n_new) s->items[item].next_row += n_new;
  u->results = stream_unit_results(s, item, n_new, u->carry, n_carry);
  s->res.runs++;
  s->res.carry_runs += n_carry;
  return 0;
}

/* Whether a unit's new rows from `item` may go to the device straight from
 * a pinned batch with every column the unit needs: no staging copy on the
 * host, and only the carried rows are staged. */
static int stream_batch_direct(const prstm_stream *s, uint64_t item) {
  const prstm_batch *b = s->items[item].b;
  return s->ops->takes_direct_rows && (prstm_batch_pinned(b) || b->registered) && b->ncols == s->ncols;
}

/* Whether planned unit u takes its new rows direct: a narrow batch's rows
 * make the unit narrow, so its carried rows must come from narrow batches
 * too. */
static int stream_takes_direct(const prstm_stream *s, const stream_unit *u) {
  return stream_batch_direct(s, u->item) && (s->items[u->item].b->wide || stream_carried_narrow(s, u));
}

/* The backend's view of a planned unit of n rows, the first `direct` of
 * them straight from their batch. */
static backend_unit stream_backend_unit(const prstm_stream *s, const stream_unit *u, int final,
                                        const backend_direct_rows *direct) {
  backend_unit bu;
  const uint64_t n = u->n_new + u->n_carry;
  bu.n = n;
  bu.staged = direct ? u->n_carry : n;
  bu.carried = u->n_carry;
  bu.row_base = u->n_new ? s->items[u->item].first + u->off : 0;
  bu.tag_mask = s->tag_mask;
  bu.results = u->results;
  bu.flags = ENGINE_RUN_QUIET | (final ? 0u : ENGINE_RUN_KEEP_POSTPONED);
  bu.direct = direct;
  bu.narrow_args = 0;
  return bu;
}

/* Prepares the next unit while the one before it launches: n_new new rows
 * of `item` (the rest of the batch being submitted) and the carried rows
 * queued now, in the next slot. Its staging is reserved and its new rows'
 * fill set out to the stream's copying threads, which work while this
 * thread launches the unit before it and retires the slot's last one;
 * stream_launch then only waits for the fill. The pending rows of the
 * slot's last unit therefore join a unit later than they would otherwise,
 * as any carried row may. Nothing is prepared where there is nothing worth
 * sharing out (a small unit, direct rows from a pinned batch, a backend
 * whose units run on their staging), or where the slot's buffers must grow
 * first: that waits for every unit in flight. */
static int stream_prefill(prstm_stream *s, uint64_t item, uint64_t n_new, uint64_t max_carry, int final) {
  if (!s->copy_pool_wanted || !s->ops->unit_staging_wait || stream_batch_direct(s, item)) return 0;
  if (n_new * (1 + 8 * (uint64_t)s->ncols) < PRSTM_POLICY_STREAM_POOL_MIN_BYTES) return 0;
  if (!s->copy_pool) s->copy_pool = engine_copy_pool_open(copy_parts() - 1);
  if (!s->copy_pool) {
    s->copy_pool_wanted = 0;
    return 0;
  }
  /* Without room for the plan, the unit is filled when it launches. */
  if (!s->pre.jobs && (s->pre.jobs = malloc((1 + (size_t)s->ncols) * sizeof *s->pre.jobs)) == NULL) return 0;
  const unsigned slot = s->next_slot;
  stream_unit *u = &s->pre.u;
  /* Planned as a look first, so that a slot that must grow takes no rows
   * from the queue. */
  stream_unit look = {0};
  look.item = item;
  look.n_new = n_new;
  look.off = s->items[item].next_row;
  look.n_carry = stream_carry_count(s, n_new, max_carry);
  look.results = stream_unit_results(s, item, n_new, look.n_carry ? s->queue + s->queue_head : NULL, look.n_carry);
  backend_unit bu = stream_backend_unit(s, &look, final, NULL);
  if (s->ops->unit_would_grow(s->bs, slot, &bu)) return 0;
  ENGINE_RANGE_PUSH("unit prefill");
  int rc = s->ops->unit_staging_wait(s->e, s->bs, slot);
  if (!rc) rc = stream_plan(s, u, item, n_new, look.n_carry);
  if (!rc) {
    bu = stream_backend_unit(s, u, final, NULL);
    rc = s->ops->unit_reserve(s->e, s->bs, slot, &bu, &s->pre.st);
  }
  if (!rc) {
    s->pre.narrow = s->pre.st.narrow_ok;
    s->pre.wide = 0;
    size_t nj = stream_fill_new_jobs(s, u, &s->pre.st, s->pre.narrow, &s->pre.wide, s->pre.jobs);
    engine_copy_pool_start(s->copy_pool, s->pre.jobs, nj);
    s->pre.wide_carried = stream_fill_carried(s, u, &s->pre.st, u->n_new, s->pre.narrow);
    s->pre.bu = bu;
    s->pre.slot = slot;
    s->pre.ready = 1;
  }
  ENGINE_RANGE_POP();
  return rc;
}

/* Starts one unit on the backend: n_new rows of `item` from its next row,
 * and up to max_carry rows from the front of the carry queue; next_new > 0
 * says that a unit of that many rows of the same item follows at once,
 * which may then be prepared while this one starts (stream_prefill). */
static int stream_launch(prstm_stream *s, uint64_t item, uint64_t n_new, uint64_t max_carry, int final,
                         uint64_t next_new) {
  unsigned slot = s->next_slot;
  stream_unit *u = &s->slots[slot];
  backend_unit bu;
  backend_direct_rows direct = {NULL, NULL, 0, 0, 0};
  int narrow = 0;
  int rc;
  if (s->pre.ready) {
    /* Prepared while the unit before it launched: the slot's last unit is
     * retired now, and the fill the copying threads were given is waited
     * for (and made whole where a value needed 64 bits). */
    if (s->pre.slot != slot || s->pre.u.item != item || s->pre.u.n_new != n_new)
      return engine_fail(s->e, PRSTM_EINVAL, "a stream's next unit is not the one it prepared");
    rc = stream_retire(s, slot);
    if (rc) return rc;
    const stream_unit planned = s->pre.u;
    s->pre.u = *u; /* keeps the slot's carry buffer for the next plan */
    s->pre.u.busy = 0;
    *u = planned;
    s->pre.ready = 0;
    bu = s->pre.bu;
    ENGINE_RANGE_PUSH("unit fill");
    engine_copy_pool_finish(s->copy_pool);
    narrow = s->pre.narrow;
    if (narrow && (s->pre.wide_carried || __atomic_load_n(&s->pre.wide, __ATOMIC_RELAXED))) {
      narrow = 0;
      rc = stream_fill(s, u, &s->pre.st, 1, &narrow);
    }
    ENGINE_RANGE_POP();
    if (rc) return rc;
  } else {
    rc = stream_retire(s, slot);
    if (rc) return rc;
    const uint64_t n_carry = stream_carry_count(s, n_new, max_carry);
    if (n_new + n_carry == 0) return 0;
    rc = stream_plan(s, u, item, n_new, n_carry);
    if (rc) return rc;
    if (u->n_new && stream_takes_direct(s, u)) {
      prstm_batch *b = s->items[item].b;
      direct = (backend_direct_rows){b->type + u->off, b->args ? txtable_arg_at(b, 0, u->off) : NULL, b->cap, u->n_new,
                                     !b->wide};
    }
    bu = stream_backend_unit(s, u, final, direct.n ? &direct : NULL);
    /* Device memory is taken again only with no unit in flight: freeing
     * pinned memory waits for the whole GPU, and waiting there for the other
     * slot's kernel would put a stalled kernel out of the watchdog's reach
     * (its retire waits for it under the watchdog instead). */
    if (s->ops->unit_would_grow(s->bs, slot, &bu)) {
      for (unsigned k = 1; k < s->nslots; k++) {
        rc = stream_retire(s, (slot + k) % s->nslots);
        if (rc) return rc;
      }
    }
    backend_staging staging;
    rc = s->ops->unit_reserve(s->e, s->bs, slot, &bu, &staging);
    if (rc) return rc;
    double t0 = engine_now();
    ENGINE_RANGE_PUSH("unit fill");
    narrow = staging.narrow_ok;
    rc = stream_fill(s, u, &staging, direct.n == 0, &narrow);
    ENGINE_RANGE_POP();
    if (rc) return rc;
    if (s->ops->staging_is_copy) s->res.copy_s += engine_now() - t0;
  }
  bu.narrow_args = narrow;
  s->next_slot = (slot + 1) % s->nslots;
  /* The next unit's fill is set out before this one launches, so that the
   * copying threads work through the launch. */
  if (next_new) {
    rc = stream_prefill(s, item, next_new, max_carry, final);
    if (rc) return rc;
  }
  ENGINE_RANGE_PUSH("unit launch");
  rc = s->ops->unit_launch(s->e, s->bs, slot, &bu);
  ENGINE_RANGE_POP();
  if (rc) return rc;
  u->busy = 1;
  return 0;
}

/* ---- the public calls ---- */

static int stream_open_on(prstm_engine *e, prstm_backend backend, const char *fallback, uint64_t limit_rows,
                          prstm_stream **out) {
  prstm_stream *s = calloc(1, sizeof *s);
  if (!s) return engine_fail(e, PRSTM_ENOMEM, "cannot allocate a stream");
  s->e = e;
  s->backend = backend;
  snprintf(s->fallback, sizeof s->fallback, "%s", fallback ? fallback : "");
  s->limit_rows = limit_rows;
  s->ops = backend_of(backend);
  if (!s->ops) {
    free(s);
    return engine_fail(e, PRSTM_ENOGPU, "this build of prstm has no CUDA support");
  }
  s->nslots = s->ops->stream_slots;
  /* Where a unit's staging is filled while another unit runs (a GPU's two
   * slots), helpers kept for the stream's life share each fill; a backend
   * that runs on the host's cores between fills (the CPU's one slot) would
   * have them spin against its own threads. */
  s->copy_pool_wanted = s->nslots >= 2 && copy_parts() > 1;
  s->opened_at = engine_now();
  for (unsigned t = 0; t < e->wl->ntypes; t++) {
    if (e->wl->types[t].read_only) s->results = 1;
  }
  s->verify = e->opt.verify;
  e->stream = s;
  *out = s;
  return 0;
}

int prstm_stream_open(prstm_engine *e, prstm_stream **out) {
  if (!e || !out) return PRSTM_EINVAL;
  *out = NULL;
  e->err[0] = 0;
  if (e->stream) return engine_fail(e, PRSTM_EINVAL, "a stream is already open on this engine");
  if (!e->words) return engine_fail(e, PRSTM_EINVAL, "the engine has no state: set or init it first");
  prstm_backend backend;
  char fallback[256];
  int rc = backend_choose(e, &backend, fallback, sizeof fallback);
  if (rc) return rc;
  /* No earlier run's certificate may be checked against a state the stream
   * changed. A verified stream keeps the state it starts from and a
   * journal of its batches, for prstm_stream_verify after the close. */
  e->verify_batch = NULL;
  free(e->initial);
  e->initial = NULL;
  prstm_word *initial = NULL;
  stream_journal *journal = NULL;
  if (e->opt.verify) {
    initial = malloc((size_t)e->nwords * sizeof *initial);
    journal = calloc(1, sizeof *journal);
    if (initial && journal) rc = prstm_batch_create(&journal->rows, e->wl);
    if (!initial || !journal || rc) {
      free(initial);
      free(journal);
      return engine_fail(e, PRSTM_ENOMEM, "cannot keep the initial state for the stream's verification");
    }
    memcpy(initial, e->words, (size_t)e->nwords * sizeof *initial);
  }
  rc = stream_open_on(e, backend, fallback, e->opt.chunk_rows, out);
  if (rc) {
    if (journal) prstm_batch_destroy(journal->rows);
    free(journal);
    free(initial);
    return rc;
  }
  (*out)->initial = initial;
  (*out)->journal = journal;
  return 0;
}

/* A call from inside the done callback would change the stream under the
 * submit or close that is calling the callback (a unit half built, a batch
 * half reported), so it is refused; the stream itself goes on. */
static int stream_refuse_in_done(prstm_stream *s, const char *call) {
  return engine_fail(s->e, PRSTM_EINVAL,
                     "%s was called from the stream's done callback, which must not call into the stream: "
                     "note the batch there and act on it after the submit or close returns",
                     call);
}

int prstm_stream_set_done(prstm_stream *s, prstm_stream_done_fn fn, void *user) {
  if (!s) return PRSTM_EINVAL;
  if (s->in_done) return stream_refuse_in_done(s, "prstm_stream_set_done");
  s->done_fn = fn;
  s->done_user = fn ? user : NULL;
  return 0;
}

const char *prstm_stream_error(const prstm_stream *s) { return s ? s->e->err : "no stream"; }

/* The widest row a stream must take: its first batch's, and at least that of
 * every type with fixed arguments, so that any ordinary later batch fits. */
static uint32_t stream_width(const prstm_workload *wl, const prstm_batch *first) {
  uint32_t w = first->ncols;
  for (unsigned t = 0; t < wl->ntypes; t++) {
    const prstm_type_desc *d = &wl->types[t];
    int list = d->nargs && d->args[d->nargs - 1].kind == PRSTM_ARG_ADDRESS_LIST;
    if (!list && d->nargs > w) w = d->nargs;
  }
  return w;
}

/* Sets the row width and the unit sizes at the first batch; on the GPU this
 * is where the device takes the state. */
static int stream_start(prstm_stream *s, const prstm_batch *b) {
  prstm_engine *e = s->e;
  s->ncols = stream_width(e->wl, b);
  s->v = engine_pick_variant(e->wl, s->ncols);
  if (!s->v)
    return engine_fail(e, PRSTM_ECONFIG, "batch rows have %u argument words; workload %s takes at most %u", s->ncols,
                       e->wl->name, e->wl->variants[e->wl->nvariants - 1].max_columns);
  s->res.backend = s->backend;
  snprintf(s->res.fallback, sizeof s->res.fallback, "%s", s->fallback);
  backend_stream_shape shape = {s->ncols, s->results, s->verify, s->limit_rows, b->n, 0};
  backend_stream_info info;
  memset(&info, 0, sizeof info);
  double t0 = engine_now();
  ENGINE_RANGE_PUSH("stream open");
  int rc = s->ops->stream_open(e, s->v, &shape, &s->bs, &info);
  ENGINE_RANGE_POP();
  s->res.setup_s += engine_now() - t0;
  if (rc) return rc;
  s->unit_rows = info.unit_rows;
  s->carry_cap = info.unit_rows;
  s->slot_rows = info.slot_rows;
  if (info.slots) s->nslots = info.slots < BACKEND_STREAM_SLOTS_MAX ? info.slots : BACKEND_STREAM_SLOTS_MAX;
  s->res.unit_rows = info.unit_rows;
  s->res.threads = info.threads;
  s->res.gpu_bytes = info.gpu_bytes;
  snprintf(s->res.device, sizeof s->res.device, "%s", info.device);
  return 0;
}

static int stream_failed(prstm_stream *s, int rc) {
  if (rc && !s->error) s->error = rc;
  /* A fill set out ahead reads the caller's batch: it ends before the
   * error reaches the caller, who may then free the batch. */
  if (rc) engine_copy_pool_finish(s->copy_pool);
  return rc;
}

int prstm_stream_submit(prstm_stream *s, prstm_batch *b) {
  if (!s) return PRSTM_EINVAL;
  prstm_engine *e = s->e;
  if (s->in_done) return stream_refuse_in_done(s, "prstm_stream_submit");
  if (s->error) return s->error;
  if (s->closed) return engine_fail(e, PRSTM_EINVAL, "the stream is closed: submit batches before closing it");
  if (!b) return engine_fail(e, PRSTM_EINVAL, "no batch given");
  if (b->wl != e->wl)
    return engine_fail(e, PRSTM_EINVAL, "batch of workload %s given to a stream of workload %s", b->wl->name,
                       e->wl->name);
  for (uint64_t i = s->first_open; i < s->nitems; i++)
    if (s->items[i].b == b)
      return engine_fail(e, PRSTM_EINVAL,
                         "batch %llu of this stream is still running: a batch can be "
                         "submitted again only once it is done",
                         (unsigned long long)i);
  if (!s->started) {
    int rc = stream_start(s, b);
    if (rc) return stream_failed(s, rc);
    s->started = 1;
  } else if (b->ncols > s->ncols) {
    return engine_fail(e, PRSTM_EINVAL,
                       "batch rows have %u argument words; this stream's rows have %u, set by "
                       "its first batch",
                       b->ncols, s->ncols);
  }
  int rc = b->n ? txtable_prepare_run(b, s->verify) : 0;
  if (rc) return engine_fail(e, rc, "cannot allocate the results column of a batch");
  if (s->nitems == s->items_alloc) {
    uint64_t cap = s->items_alloc ? 2 * s->items_alloc : 64;
    stream_item *items = realloc(s->items, (size_t)cap * sizeof *items);
    if (!items) return engine_fail(e, PRSTM_ENOMEM, "cannot keep %llu batches", (unsigned long long)cap);
    s->items = items;
    s->items_alloc = cap;
  }
  uint64_t idx = s->nitems++;
  s->items[idx] = (stream_item){b, s->rows_submitted, 0, b->n};
  s->rows_submitted += b->n;
  s->tag_mask |= b->tag_mask;
  s->res.batches++;
  s->res.transactions += b->n;
  /* The cursor, not the item's next row: a unit prepared while the one
   * before it launches has taken its rows already. */
  for (uint64_t at = 0; at < b->n;) {
    const uint64_t left = b->n - at;
    const uint64_t now = left < s->unit_rows ? left : s->unit_rows, after = left - now;
    rc = stream_launch(s, idx, now, s->carry_cap, 0, after < s->unit_rows ? after : s->unit_rows);
    if (rc) return stream_failed(s, rc);
    at += now;
  }
  rc = stream_notify_done(s);
  if (rc) return stream_failed(s, rc);
  return 0;
}

/* Abandons every queued row: the caller established that none can commit. */
static void stream_abandon_queue(prstm_stream *s) {
  for (uint64_t k = 0; k < s->queue_len; k++) {
    stream_origin o = s->queue[s->queue_head + k];
    s->items[o.item].b->status[o.row] = txtable_pack_status(PRSTM_ABANDONED, PRSTM_REASON_QUIESCENT);
    s->items[o.item].outstanding--;
    s->res.abandoned++;
  }
  s->queue_head = s->queue_len = 0;
}

/* The close: the carried rows run until they are all final. When they fit
 * in one unit, that unit runs to global quiescence as any batch does. When
 * they do not, they run in rounds of units; a round in which nothing
 * commits left the state unchanged from the start of the round, and each row
 * still pending postponed on that very state, so they are abandoned. */
static int stream_finish_rows(prstm_stream *s) {
  int rc = stream_drain(s);
  if (rc) return rc;
  while (s->queue_len) {
    if (s->queue_len <= s->slot_rows) {
      rc = stream_launch(s, 0, 0, s->queue_len, 1, 0);
      if (rc) return rc;
      rc = stream_drain(s);
      if (rc) return rc;
      if (s->queue_len) stream_abandon_queue(s); /* the final unit leaves none; kept for safety */
      break;
    }
    uint64_t before = s->res.committed, left = s->queue_len;
    while (left) {
      uint64_t k = left < s->slot_rows ? left : s->slot_rows;
      rc = stream_launch(s, 0, 0, k, 0, 0);
      if (rc) return rc;
      left -= k;
    }
    rc = stream_drain(s);
    if (rc) return rc;
    if (s->res.committed == before) stream_abandon_queue(s);
  }
  return stream_notify_done(s);
}

int prstm_stream_close(prstm_stream *s, prstm_stream_results *out) {
  if (!s) return PRSTM_EINVAL;
  prstm_engine *e = s->e;
  if (s->in_done) return stream_refuse_in_done(s, "prstm_stream_close");
  if (s->error) return s->error;
  if (s->closed) return engine_fail(e, PRSTM_EINVAL, "the stream is already closed");
  s->closed = 1;
  int rc = stream_finish_rows(s);
  if (rc) return stream_failed(s, rc);
  if (s->bs) {
    /* The state comes back to the engine (a GPU gives it back here). */
    double t0 = engine_now();
    ENGINE_RANGE_PUSH("stream finish");
    rc = s->ops->stream_finish(e, s->bs, &s->res.aborts, &s->res.postponements, &s->res.sweeps);
    ENGINE_RANGE_POP();
    if (rc) return stream_failed(s, rc);
    ENGINE_RANGE_PUSH("stream free");
    s->ops->stream_free(s->bs);
    ENGINE_RANGE_POP();
    s->bs = NULL;
    s->res.setup_s += engine_now() - t0;
  }
  s->res.wall_s = engine_now() - s->opened_at;
  if (s->backend == PRSTM_BACKEND_CPU && !s->res.device[0]) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(s->res.device, sizeof s->res.device, "CPU, %ld cores", cores);
  }
  stream_report_progress(s, 1);
  e->stream = NULL;
  if (out) *out = s->res;
  return 0;
}

void prstm_stream_destroy(prstm_stream *s) {
  if (!s) return;
  /* A fill set out to the copying threads ends before its staging goes. */
  engine_copy_pool_finish(s->copy_pool);
  if (s->bs) {
    /* A stream given up: what already ran is kept, when the backend can
     * say (a GPU's state is read back). */
    if (!s->error && stream_drain(s) == 0) {
      uint64_t a, p, w;
      s->ops->stream_finish(s->e, s->bs, &a, &p, &w);
    }
    s->ops->stream_free(s->bs);
  }
  for (unsigned k = 0; k < BACKEND_STREAM_SLOTS_MAX; k++) free(s->slots[k].carry);
  free(s->pre.u.carry);
  free(s->pre.jobs);
  engine_copy_pool_close(s->copy_pool);
  if (s->journal) {
    prstm_batch_destroy(s->journal->rows);
    free(s->journal->number);
    free(s->journal->item);
    free(s->journal->item_row);
    free(s->journal);
  }
  if (s->e->stream == s) s->e->stream = NULL;
  free(s->initial);
  free(s->items);
  free(s->queue);
  free(s);
}

int prstm_stream_verify(prstm_stream *s, prstm_verify_report *rep) {
  if (!s || !rep) return PRSTM_EINVAL;
  engine_verify_report_init(rep);
  if (!s->journal)
    return engine_fail(s->e, PRSTM_EINVAL,
                       "the stream was opened on an engine without verify: nothing was recorded to check");
  if (!s->closed || s->error || s->e->stream == s)
    return engine_fail(s->e, PRSTM_EINVAL, "a stream is verified once it has closed without an error");
  engine_verify_counts counts = {s->seq_base, s->res.committed, s->res.failed, s->res.abandoned};
  engine_verify_source src;
  memset(&src, 0, sizeof src);
  src.table = s->journal->rows;
  src.row_number = s->journal->number;
  src.item = s->journal->item;
  src.item_row = s->journal->item_row;
  src.initial = s->initial;
  src.counts = &counts;
  src.variant = s->v;
  return engine_verify_rows(s->e, &src, rep);
}

int engine_run_chunked(prstm_engine *e, prstm_batch *b, prstm_backend backend, const char *fallback, uint64_t unit_rows,
                       prstm_results *res) {
  prstm_stream *s = NULL;
  int rc = stream_open_on(e, backend, fallback, unit_rows, &s);
  if (rc) return rc;
  /* The batch outlives the run, so its columns can be page-locked where
   * they lie for the run's length: each unit then copies its rows straight
   * from them. A stream with a pool of copying threads instead fills the
   * staging of a unit of middling size while the unit before it runs,
   * which saves the locking and unlocking of the whole batch (milliseconds
   * for every hundred MiB); the policy's bounds say where that paid. A
   * unit_rows of 0 (what fits the GPU) is large. */
  const backend_ops *ops = s->ops;
  void *locked = NULL;
  /* Counted at 8 bytes a value whatever the batch's width, as the bounds
   * were measured. */
  const uint64_t unit_bytes = unit_rows ? unit_rows * (2 + 8 * (uint64_t)b->ncols) : UINT64_MAX;
  const int staged = s->copy_pool_wanted && unit_bytes >= PRSTM_POLICY_STREAM_STAGED_UNIT_MIN_BYTES &&
                     unit_bytes < PRSTM_POLICY_STREAM_STAGED_UNIT_MAX_BYTES;
  if (ops->batch_lock_pages && !staged) {
    ENGINE_RANGE_PUSH("lock pages");
    locked = ops->batch_lock_pages(b);
    ENGINE_RANGE_POP();
  }
  s->progress_batch = b;
  double t0 = engine_now();
  s->progress_clock = (engine_progress_clock){t0, t0};
  prstm_stream_results sr;
  memset(&sr, 0, sizeof sr);
  rc = prstm_stream_submit(s, b);
  if (!rc) rc = prstm_stream_close(s, &sr);
  /* One commit order spans the units, so a verified chunked run is
   * checked like any other (prstm_engine_verify). */
  e->last_run_sequences = s->seq_base;
  e->last_run_variant = s->v;
  prstm_stream_destroy(s);
  if (ops->batch_unlock_pages) {
    ENGINE_RANGE_PUSH("unlock pages");
    ops->batch_unlock_pages(b, locked);
    ENGINE_RANGE_POP();
  }
  if (rc) return rc;
  res->transactions = b->n;
  res->committed = sr.committed;
  res->abandoned = sr.abandoned;
  res->failed = sr.failed;
  res->aborts = sr.aborts;
  res->postponements = sr.postponements;
  res->sweeps = sr.sweeps;
  res->transfer_s = sr.copy_s;
  res->execute_s = sr.execute_s;
  res->setup_s = sr.setup_s;
  res->backend = sr.backend;
  res->threads = sr.threads;
  res->lock_coverage = e->opt.lock_coverage;
  res->gpu_bytes = sr.gpu_bytes;
  snprintf(res->device, sizeof res->device, "%.90s, chunked: %llu runs", sr.device, (unsigned long long)sr.runs);
  snprintf(res->fallback, sizeof res->fallback, "%s", sr.fallback);
  return 0;
}
