/* delta.c: the delta path on the host: whether a batch may take it, how hot its words are, and the CPU's proof and apply in one walk. */
#include "delta.h"

#include "parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The flags a step may carry: PRSTM_DELTA_TIMES_LIST, PRSTM_DELTA_FIELDS
 * with its two widths, PRSTM_DELTA_READ and PRSTM_DELTA_RESULT_SUM. */
#define DELTA_KNOWN_FLAGS \
  (PRSTM_DELTA_TIMES_LIST | PRSTM_DELTA_FIELDS(0xffu, 0xffu) | PRSTM_DELTA_READ | PRSTM_DELTA_RESULT_SUM)

/* Takes step k's PRSTM_DELTA_FIELDS into the plan: only a list step of its
 * own amount may carry it, with 1 <= amount_bits <= bits <= 32. Returns 0 for
 * a declaration the path cannot take. */
static int delta_plan_fields(cmp_delta_plan *plan, unsigned t, unsigned k, const prstm_delta_desc *s,
                             const prstm_type_desc *d) {
  const unsigned bits = (s->flags >> 8) & 0xffu, amount_bits = (s->flags >> 16) & 0xffu;
  if (!(s->flags & PRSTM_DELTA_FIELDS(0, 0))) return bits == 0 && amount_bits == 0;
  if (d->args[s->word_arg].kind != PRSTM_ARG_ADDRESS_LIST || (s->flags & PRSTM_DELTA_TIMES_LIST)) return 0;
  if (amount_bits < 1 || amount_bits > bits || bits > 32 || plan->list_step[t] != k) return 0;
  plan->field_bits[t] = (uint8_t)bits;
  plan->field_amount_bits[t] = (uint8_t)amount_bits;
  return 1;
}

/* The bits above each field's amount, over all of a type's fields that fit
 * the argument's 64 bits. */
static uint64_t delta_fields_high(const cmp_delta_plan *plan, unsigned t) {
  const unsigned bits = plan->field_bits[t];
  const uint64_t one = ((1ull << bits) - 1) & ~((1ull << plan->field_amount_bits[t]) - 1);
  uint64_t high = 0;
  for (unsigned i = 0; (i + 1) * bits <= 64; i++) high |= one << (i * bits);
  return high;
}

/* Takes step k's kind into the plan: a read (PRSTM_DELTA_READ, an amount of
 * 0, no amount argument, the only kind a read-only type may declare, and the
 * only one that may give the row's result, PRSTM_DELTA_RESULT_SUM) or a move
 * of its amount argument. Returns 0 for a declaration the path cannot take. */
static int delta_plan_read(cmp_delta_plan *plan, unsigned t, unsigned k, const prstm_delta_desc *s,
                           const prstm_type_desc *d) {
  if (s->word_arg >= d->nargs || (s->sign != 1 && s->sign != -1) || (s->flags & ~DELTA_KNOWN_FLAGS) != 0) return 0;
  if (s->flags & PRSTM_DELTA_READ) {
    if (s->flags & (PRSTM_DELTA_TIMES_LIST | PRSTM_DELTA_FIELDS(0, 0))) return 0;
    plan->read_steps[t] |= (uint8_t)(1u << k);
  } else if (d->read_only || s->amount_arg >= d->nargs || d->args[s->amount_arg].kind != PRSTM_ARG_UINT) {
    return 0;
  }
  if (s->flags & PRSTM_DELTA_RESULT_SUM) {
    /* Results have a column only where the batch has read-only rows. */
    if (!d->read_only) return 0;
    plan->result_sum[t] = 1;
  }
  return 1;
}

/* Whether every one of a row's `count` list entries has a field that is an
 * amount: all within the argument's 64 bits, none with a bit above its
 * amount set (`high`, delta_fields_high). */
static int delta_row_fields_ok(unsigned bits, uint64_t high, uint64_t count, uint64_t arg) {
  if (count * bits > 64) return 0;
  const uint64_t used = count * bits == 64 ? ~0ull : (1ull << (count * bits)) - 1;
  return (arg & high & used) == 0;
}

/* The plan's pass over the rows of types with an address list, one range
 * of rows a part: each part's widest row and whether it found a row the
 * path cannot take. */
#define DELTA_ROWS_PER_PART 65536u
typedef struct delta_rows_pass {
  const cmp_delta_plan *plan;
  const prstm_batch *b;
  txtable_view v;
  uint64_t high[PRSTM_MAX_TYPES];
  uint32_t slots[ENGINE_MAX_PARTS];
  uint8_t refused[ENGINE_MAX_PARTS];
} delta_rows_pass;

static void delta_rows_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  delta_rows_pass *pass = arg;
  const cmp_delta_plan *plan = pass->plan;
  const txtable_view *v = &pass->v;
  uint32_t slots = 0;
  for (uint64_t r = from; r < to; r++) {
    const unsigned t = pass->b->type[r];
    if (plan->list_col[t] == CMP_DELTA_NO_LIST) continue;
    const uint64_t count = cmp_delta_arg(v, r, plan->list_col[t]);
    /* A list longer than the table's columns (never loaded, only built by
     * hand), or a row whose fields name anything but amounts (a blind write
     * among read-modify-writes), leaves the batch to the STM before it
     * runs, so that --backend auto knows it too. */
    if (count >= v->ncols || count > v->ncols - 1 - plan->list_col[t] ||
        (plan->field_bits[t] && !delta_row_fields_ok(plan->field_bits[t], pass->high[t], count,
                                                     cmp_delta_arg(v, r, plan->amount_col[t][plan->list_step[t]])))) {
      pass->refused[part] = 1;
      return;
    }
    const uint64_t steps = plan->list_step[t] == CMP_DELTA_NO_LIST ? plan->nsteps[t] : plan->nsteps[t] - 1 + count;
    if (steps > slots) slots = (uint32_t)steps;
  }
  pass->slots[part] = slots;
}

int engine_delta_plan(const prstm_engine *e, const prstm_batch *b, cmp_delta_plan *plan) {
  const prstm_workload *wl = e->wl;
  memset(plan, 0, sizeof *plan);
  memset(plan->list_step, CMP_DELTA_NO_LIST, sizeof plan->list_step);
  memset(plan->list_col, CMP_DELTA_NO_LIST, sizeof plan->list_col);
  if (b->n == 0 || e->nwords >= UINT32_MAX) return 0;
  /* Only the types that occur count: a batch of transfers may take the path
   * even when its workload has opaque types too. */
  uint8_t present[PRSTM_MAX_TYPES] = {0};
  if (wl->ntypes <= 64) {
    /* The batch keeps the set of its types below 64 as it grows: no pass
     * over its rows. */
    for (unsigned t = 0; t < wl->ntypes; t++) present[t] = (uint8_t)((b->type_mask >> t) & 1u);
  } else {
    for (uint64_t r = 0; r < b->n; r++) present[b->type[r]] = 1;
  }
  if (!wl->steps) return 0;
  int lists = 0;
  for (unsigned t = 0; t < wl->ntypes; t++) {
    if (!present[t]) continue;
    const prstm_type_desc *d = &wl->types[t];
    const prstm_type_steps *steps = &wl->steps[t];
    /* A snapshot type's rows run on the host before the rest (snapshot.c). */
    if (steps->n == 0 || steps->n > CMP_DELTA_MAX_STEPS || ((wl->snapshot_types >> t) & 1u)) return 0;
    /* An address list is only ever the last argument, so its length sits in
     * the column of its own index and its entries in the columns after. */
    const int has_list = d->nargs > 0 && d->args[d->nargs - 1].kind == PRSTM_ARG_ADDRESS_LIST;
    for (unsigned k = 0; k < steps->n; k++) {
      const prstm_delta_desc *s = &steps->step[k];
      if (!delta_plan_read(plan, t, k, s, d)) return 0;
      if (d->args[s->word_arg].kind == PRSTM_ARG_ADDRESS_LIST) {
        if (plan->list_step[t] != CMP_DELTA_NO_LIST) return 0; /* one list step a type */
        plan->list_step[t] = (uint8_t)k;
      } else if (d->args[s->word_arg].kind != PRSTM_ARG_ADDRESS) {
        return 0;
      }
      if ((s->flags & PRSTM_DELTA_TIMES_LIST) && !has_list) return 0;
      if (!delta_plan_fields(plan, t, k, s, d)) return 0;
      plan->word_col[t][k] = (uint8_t)s->word_arg;
      plan->amount_col[t][k] = (uint8_t)s->amount_arg;
      plan->sign[t][k] = (int8_t)s->sign;
      plan->times_list[t][k] = (s->flags & PRSTM_DELTA_TIMES_LIST) != 0;
    }
    if (has_list) {
      plan->list_col[t] = (uint8_t)(d->nargs - 1);
      lists = 1;
    }
    plan->nsteps[t] = (uint8_t)steps->n;
    if (steps->n > plan->slots) plan->slots = steps->n;
  }
  /* A list step takes a slot per entry: the slots are the widest row's. */
  if (lists) {
    delta_rows_pass pass;
    memset(&pass, 0, sizeof pass);
    pass.plan = plan;
    pass.b = b;
    txtable_view_of((prstm_batch *)b, &pass.v);
    for (unsigned t = 0; t < wl->ntypes; t++)
      if (plan->field_bits[t]) pass.high[t] = delta_fields_high(plan, t);
    /* Every core takes a range of rows: a pass over a 2M-row batch on one
     * core took 13 ms, more than its kernels. */
    const unsigned parts = engine_parallel_parts(b->n, DELTA_ROWS_PER_PART);
    engine_parallel_for(b->n, parts, delta_rows_part, &pass);
    for (unsigned p = 0; p < parts; p++) {
      if (pass.refused[p]) return 0;
      if (pass.slots[p] > plan->slots) plan->slots = pass.slots[p];
    }
    if (plan->slots == 0) return 0;
  }
  /* A row of more steps than the run's sets hold may overflow them, and
   * then its body fails for capacity, which the path cannot decide: such a
   * batch goes to the STM. A row of at most that many steps touches at most
   * that many words, so it never overflows. */
  const prstm_worker_variant *v = engine_pick_variant(wl, b->ncols);
  if (!v || plan->slots > v->set_capacity) return 0;
  /* Keys and step ids of the GPU's sort are 32 bits. */
  if ((uint64_t)b->n * plan->slots >= UINT32_MAX) return 0;
  plan->amount_max = (1ull << 62) / ((uint64_t)b->n * plan->slots);
  return 1;
}

int engine_delta_want(const prstm_engine *e, const prstm_batch *b, prstm_backend backend, uint32_t inflight,
                      const engine_contention *hot, cmp_delta_plan *plan) {
  if (e->opt.deltas == PRSTM_DELTAS_OFF) return 0;
  /* AUTO asks first whether the path would pay, so that a cold batch skips
   * the plan's pass over its rows. The CPU's walk outruns the STM's threads
   * even without conflicts where the state fits in cache, each step a load
   * and a store there (docs/DESIGN-NOTES.md, "Hot spots"). Elsewhere the
   * batch must be hot: conflicts on average, or one word so hot that its
   * transactions would queue on it however few the conflicts elsewhere (a
   * Zipfian batch's first account). */
  if (e->opt.deltas == PRSTM_DELTAS_AUTO &&
      !(backend == PRSTM_BACKEND_CPU && e->nwords <= PRSTM_POLICY_DELTA_CPU_CACHED_WORDS) &&
      engine_contention_conflicts(hot, inflight) < PRSTM_POLICY_DELTA_HOT_CONFLICTS &&
      !(hot->hottest_count >= PRSTM_POLICY_HOT_WORD_COUNT && engine_contention_hottest_inflight(hot, inflight) >= 1.0))
    return 0;
  return engine_delta_plan(e, b, plan);
}

void engine_delta_results(prstm_engine *e, const prstm_batch *b, prstm_results *res) {
  res->path = PRSTM_PATH_DELTAS;
  res->committed = b->n;
  e->last_run_sequences = b->n;
  uint64_t q[STM_Q_WORDS] = {0};
  q[STM_Q_COMMITTED] = b->n;
  engine_progress_clock clock = {engine_now(), engine_now()};
  engine_progress_report(e, b, q, &clock, 1);
}

/* The parallel walk (engine_delta_run_cpu): the batch's steps bucketed by
 * word, each bucket's steps in batch order, so that every thread walks the
 * words of its own buckets. */
#define DELTA_BUCKET_BITS 10u
#define DELTA_BUCKETS (1u << DELTA_BUCKET_BITS)

/* One step as a bucket holds it. The plan keeps words and step ids below
 * 2^32 (the GPU's sort keys). */
typedef struct delta_step_rec {
  uint32_t word, id;
  int64_t delta;
} delta_step_rec;

typedef struct delta_walk {
  prstm_engine *e;
  prstm_batch *b;
  const cmp_delta_plan *plan;
  txtable_view v;
  uint64_t (*at)[DELTA_BUCKETS]; /* per part: counts, then where it writes */
  uint64_t bucket_start[DELTA_BUCKETS + 1];
  uint64_t applied[DELTA_BUCKETS]; /* steps of each bucket applied so far */
  delta_step_rec *rec;
  uint64_t *read; /* the value each step read, by step id */
  uint8_t refused[ENGINE_MAX_PARTS];
} delta_walk;

static unsigned delta_bucket(uint64_t word) {
  return (uint32_t)((uint32_t)word * 2654435761u) >> (32 - DELTA_BUCKET_BITS);
}

/* Counts (fill 0) or writes (fill 1) the steps of the part's rows into
 * their buckets, in batch order. */
static void delta_walk_bucket_rows(delta_walk *w, unsigned part, uint64_t from, uint64_t to, int fill) {
  uint64_t *at = w->at[part];
  for (uint64_t r = from; r < to; r++) {
    const unsigned type = w->b->type[r];
    for (unsigned k = 0;; k++) {
      uint64_t word;
      int64_t delta;
      const int s = cmp_delta_step(w->plan, &w->v, w->e->nwords, r, type, k, &word, &delta);
      if (s == 0) break;
      if (s < 0) {
        w->refused[part] = 1;
        return;
      }
      const unsigned bucket = delta_bucket(word);
      if (fill) w->rec[at[bucket]] = (delta_step_rec){(uint32_t)word, (uint32_t)(r * w->plan->slots + k), delta};
      at[bucket]++;
    }
  }
}
static void delta_walk_count(void *arg, unsigned part, uint64_t from, uint64_t to) {
  delta_walk_bucket_rows(arg, part, from, to, 0);
}
static void delta_walk_fill(void *arg, unsigned part, uint64_t from, uint64_t to) {
  delta_walk_bucket_rows(arg, part, from, to, 1);
}

/* Walks buckets [from, to): each step's value checked and applied, the value
 * before it kept; a step out of range stops the bucket (the caller undoes
 * every bucket). */
static void delta_walk_apply(void *arg, unsigned part, uint64_t from, uint64_t to) {
  delta_walk *w = arg;
  prstm_word *words = w->e->words;
  for (uint64_t bucket = from; bucket < to; bucket++) {
    for (uint64_t i = w->bucket_start[bucket]; i < w->bucket_start[bucket + 1]; i++) {
      const delta_step_rec *s = &w->rec[i];
      uint64_t after;
      if (!cmp_delta_value(words[s->word], s->delta, &after)) {
        w->refused[part] = 1;
        break;
      }
      w->read[s->id] = words[s->word];
      words[s->word] = after;
      w->applied[bucket]++;
    }
  }
}

/* Gives each bucket's applied steps back, last first. */
static void delta_walk_undo(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  delta_walk *w = arg;
  for (uint64_t bucket = from; bucket < to; bucket++)
    for (uint64_t i = w->bucket_start[bucket] + w->applied[bucket]; i-- > w->bucket_start[bucket];)
      w->e->words[w->rec[i].word] = w->read[w->rec[i].id];
}

/* Each row's outcome, commit order, read hash and result from the values
 * its steps read. */
static void delta_walk_rows(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  delta_walk *w = arg;
  prstm_batch *b = w->b;
  for (uint64_t r = from; r < to; r++) {
    const unsigned type = b->type[r];
    uint64_t hash, sum;
    cmp_delta_row_reads(w->plan, &w->v, w->e->nwords, r, type, w->read, &hash, &sum);
    if (w->plan->result_sum[type] && b->result) b->result[r] = sum;
    if (b->seq) b->seq[r] = r;
    if (b->read_hash) b->read_hash[r] = hash;
    b->status[r] = TXTABLE_COMMITTED;
  }
}

static int delta_walk_refused(const delta_walk *w, unsigned parts) {
  for (unsigned p = 0; p < parts; p++)
    if (w->refused[p]) return 1;
  return 0;
}

/* The walk on `parts` threads: the same outcome as the one-thread walk
 * (each word's steps in batch order), or a refusal with nothing changed.
 * Returns -1 where its buffers do not fit (the caller walks on one thread). */
static int delta_run_cpu_parallel(prstm_engine *e, prstm_batch *b, const cmp_delta_plan *plan, unsigned parts) {
  const uint64_t n = b->n, total = n * plan->slots;
  delta_walk *w = calloc(1, sizeof *w);
  if (!w) return -1;
  w->e = e;
  w->b = b;
  w->plan = plan;
  txtable_view_of(b, &w->v);
  w->at = calloc(parts, sizeof *w->at);
  w->read = engine_alloc_first_touch((size_t)total * sizeof *w->read);
  int rc = -1;
  if (!w->at || !w->read) goto out;
  engine_parallel_for(n, parts, delta_walk_count, w);
  rc = 0;
  if (delta_walk_refused(w, parts)) goto out;
  /* Each bucket's steps part after part: batch order within a word. */
  uint64_t next = 0;
  for (unsigned bucket = 0; bucket < DELTA_BUCKETS; bucket++) {
    w->bucket_start[bucket] = next;
    for (unsigned p = 0; p < parts; p++) {
      const uint64_t count = w->at[p][bucket];
      w->at[p][bucket] = next;
      next += count;
    }
  }
  w->bucket_start[DELTA_BUCKETS] = next;
  w->rec = engine_alloc_first_touch((size_t)(next ? next : 1) * sizeof *w->rec);
  rc = -1;
  if (!w->rec) goto out;
  engine_parallel_for(n, parts, delta_walk_fill, w);
  engine_parallel_for(DELTA_BUCKETS, parts, delta_walk_apply, w);
  rc = 0;
  if (delta_walk_refused(w, parts)) {
    engine_parallel_for(DELTA_BUCKETS, parts, delta_walk_undo, w);
    goto out;
  }
  engine_parallel_for(n, parts, delta_walk_rows, w);
  rc = 1;
out:
  free(w->rec);
  free(w->read);
  free(w->at);
  free(w);
  return rc;
}

/* The proof and the apply in one walk in batch order. A refusal must leave
 * the state as it was: a state smaller than the batch's steps is walked on
 * a copy that replaces it on success; a larger one in place, each step's
 * word and old value kept in an undo log that a refusal plays back (a log
 * the size of the steps, written once, instead of a copy of every word). */
int engine_delta_run_cpu(prstm_engine *e, prstm_batch *b, const cmp_delta_plan *plan, unsigned *threads) {
  typedef struct undo {
    uint64_t word, value;
  } undo;
  const uint64_t n = b->n, steps = n * plan->slots;
  /* Many steps over a state larger than the cache: the threads walk the
   * words of their own buckets (delta_run_cpu_parallel). */
  if (*threads > 1 && steps >= PRSTM_POLICY_DELTA_CPU_PARALLEL_STEPS &&
      e->nwords > PRSTM_POLICY_DELTA_CPU_CACHED_WORDS) {
    const unsigned parts = *threads < ENGINE_MAX_PARTS ? *threads : ENGINE_MAX_PARTS;
    const int rc = delta_run_cpu_parallel(e, b, plan, parts);
    if (rc >= 0) {
      *threads = parts;
      return rc;
    }
  }
  *threads = 1;
  const int on_copy = e->nwords <= steps;
  undo *log = NULL;
  prstm_word *w = e->words;
  if (on_copy) {
    w = malloc((size_t)e->nwords * sizeof *w);
    if (!w) return 0; /* no room: the STM runs the batch */
    memcpy(w, e->words, (size_t)e->nwords * sizeof *w);
  } else if ((log = malloc((size_t)steps * sizeof *log)) == NULL) {
    return 0;
  }
  txtable_view t;
  txtable_view_of(b, &t);
  uint64_t logged = 0;
  for (uint64_t r = 0; r < n; r++) {
    const unsigned type = b->type[r];
    uint64_t hash = 0, sum = 0;
    for (unsigned k = 0;; k++) {
      uint64_t word, after;
      int64_t delta;
      int s = cmp_delta_step(plan, &t, e->nwords, r, type, k, &word, &delta);
      if (s == 0) break;
      if (s < 0 || !cmp_delta_value(w[word], delta, &after)) {
        /* Refused: the state as it was, the table's commit order and
         * hashes back to unset. */
        if (on_copy) free(w);
        while (logged > 0) {
          logged--;
          w[log[logged].word] = log[logged].value;
        }
        free(log);
        if (b->seq) memset(b->seq, 0xff, (size_t)r * sizeof *b->seq);
        if (b->read_hash) memset(b->read_hash, 0, (size_t)r * sizeof *b->read_hash);
        if (b->result) memset(b->result, 0, (size_t)r * sizeof *b->result);
        return 0;
      }
      if (log) log[logged++] = (undo){word, w[word]};
      hash = stm_read_hash_step(hash, w[word]);
      sum += w[word];
      w[word] = after;
    }
    if (plan->result_sum[type] && b->result) b->result[r] = sum;
    if (b->seq) b->seq[r] = r;
    if (b->read_hash) b->read_hash[r] = hash;
  }
  memset(b->status, TXTABLE_COMMITTED, (size_t)n);
  free(log);
  if (on_copy) {
    free(e->words);
    e->words = w;
  }
  return 1;
}
