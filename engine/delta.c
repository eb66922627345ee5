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
  if (!engine_delta_plan(e, b, plan)) return 0;
  if (e->opt.deltas == PRSTM_DELTAS_ON) return 1;
  /* The CPU's walk is one thread, but each step a load and a store in
   * cache where the state fits there: it outruns the STM's threads even
   * without conflicts (docs/DESIGN-NOTES.md, "Hot spots"). */
  if (backend == PRSTM_BACKEND_CPU && e->nwords <= PRSTM_POLICY_DELTA_CPU_CACHED_WORDS) return 1;
  /* Hot: conflicts on average, or one word so hot that its transactions
   * would queue on it however few the conflicts elsewhere (a Zipfian
   * batch's first account). */
  return engine_contention_conflicts(hot, inflight) >= PRSTM_POLICY_DELTA_HOT_CONFLICTS ||
         (hot->hottest_count >= PRSTM_POLICY_HOT_WORD_COUNT &&
          engine_contention_hottest_inflight(hot, inflight) >= 1.0);
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

/* The proof and the apply in one walk in batch order. A refusal must leave
 * the state as it was: a state smaller than the batch's steps is walked on
 * a copy that replaces it on success; a larger one in place, each step's
 * word and old value kept in an undo log that a refusal plays back (a log
 * the size of the steps, written once, instead of a copy of every word). */
int engine_delta_run_cpu(prstm_engine *e, prstm_batch *b, const cmp_delta_plan *plan) {
  typedef struct undo {
    uint64_t word, value;
  } undo;
  const uint64_t n = b->n, steps = n * plan->slots;
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
