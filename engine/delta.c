/* delta.c: the delta path on the host: whether a batch may take it, how hot its words are, and the CPU's proof and apply in one walk. */
#include "delta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int engine_delta_plan(const prstm_engine *e, const prstm_batch *b, cmp_delta_plan *plan) {
  const prstm_workload *wl = e->wl;
  memset(plan, 0, sizeof *plan);
  if (b->n == 0 || e->nwords >= UINT32_MAX) return 0;
  /* Only the types that occur count: a batch of transfers may take the path
   * even when its workload has opaque types too. */
  uint8_t present[PRSTM_MAX_TYPES] = {0};
  for (uint64_t r = 0; r < b->n; r++) present[b->type[r]] = 1;
  if (!wl->steps) return 0;
  for (unsigned t = 0; t < wl->ntypes; t++) {
    if (!present[t]) continue;
    const prstm_type_desc *d = &wl->types[t];
    const prstm_type_steps *steps = &wl->steps[t];
    if (d->read_only || steps->n == 0 || steps->n > CMP_DELTA_MAX_STEPS) return 0;
    for (unsigned k = 0; k < steps->n; k++) {
      const prstm_delta_desc *s = &steps->step[k];
      if (s->word_arg >= d->nargs || s->amount_arg >= d->nargs || (s->sign != 1 && s->sign != -1)) return 0;
      if (d->args[s->word_arg].kind != PRSTM_ARG_ADDRESS || d->args[s->amount_arg].kind != PRSTM_ARG_UINT) return 0;
      plan->word_col[t][k] = (uint8_t)s->word_arg;
      plan->amount_col[t][k] = (uint8_t)s->amount_arg;
      plan->sign[t][k] = (int8_t)s->sign;
    }
    plan->nsteps[t] = (uint8_t)steps->n;
    if (steps->n > plan->slots) plan->slots = steps->n;
  }
  /* Keys and step ids of the GPU's sort are 32 bits. */
  if ((uint64_t)b->n * plan->slots >= UINT32_MAX) return 0;
  plan->amount_max = (1ull << 62) / ((uint64_t)b->n * plan->slots);
  return 1;
}

static int delta_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Two steps of transactions in flight together conflict when they name one
 * word; with q the chance that two steps drawn from the batch do, and s
 * steps a row, a transaction meets about s * s * (inflight - 1) * q others
 * on its words. q comes from a sample of rows spread over the whole batch:
 * the pairs of equal words among its steps over all its pairs of steps. */
double engine_delta_hot_estimate(const prstm_engine *e, const prstm_batch *b, const cmp_delta_plan *plan,
                                 uint32_t inflight) {
  const uint64_t want = PRSTM_POLICY_DELTA_SAMPLE_ROWS;
  const uint64_t rows = b->n < want ? b->n : want;
  uint64_t *words = malloc((size_t)rows * plan->slots * sizeof *words);
  if (!words) return 0.0;
  txtable_view t;
  txtable_view_of((prstm_batch *)b, &t);
  uint64_t m = 0;
  for (uint64_t i = 0; i < rows; i++) {
    uint64_t r = rows == b->n ? i : (uint64_t)((double)i * (double)b->n / (double)rows);
    unsigned type = b->type[r];
    for (unsigned k = 0; k < plan->nsteps[type]; k++) {
      uint64_t w;
      int64_t d;
      if (cmp_delta_step(plan, &t, e->nwords, r, type, k, &w, &d) != 0) words[m++] = w;
    }
  }
  double equal_pairs = 0;
  qsort(words, (size_t)m, sizeof *words, delta_cmp_u64);
  for (uint64_t i = 0; i < m;) {
    uint64_t j = i;
    while (j < m && words[j] == words[i]) j++;
    equal_pairs += (double)(j - i) * (double)(j - i - 1);
    i = j;
  }
  free(words);
  if (m < 2 || inflight < 2) return 0.0;
  double q = equal_pairs / ((double)m * (double)(m - 1));
  double steps = (double)m / (double)rows;
  return steps * steps * (double)(inflight - 1) * q;
}

int engine_delta_want(const prstm_engine *e, const prstm_batch *b, uint32_t inflight, cmp_delta_plan *plan,
                      prstm_results *res) {
  if (e->opt.deltas == PRSTM_DELTAS_OFF) return 0;
  if (!engine_delta_plan(e, b, plan)) return 0;
  res->hot_estimate = engine_delta_hot_estimate(e, b, plan, inflight);
  if (e->opt.deltas == PRSTM_DELTAS_ON) return 1;
  return res->hot_estimate >= PRSTM_POLICY_DELTA_HOT_CONFLICTS;
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

/* The proof and the apply in one walk in batch order, on a copy of the
 * state that replaces the engine's words only when every step passed. */
int engine_delta_run_cpu(prstm_engine *e, prstm_batch *b, const cmp_delta_plan *plan) {
  prstm_word *w = malloc((size_t)e->nwords * sizeof *w);
  if (!w) return 0; /* no room for the copy: the STM runs it in place */
  memcpy(w, e->words, (size_t)e->nwords * sizeof *w);
  txtable_view t;
  txtable_view_of(b, &t);
  const uint64_t n = b->n;
  for (uint64_t r = 0; r < n; r++) {
    const unsigned type = b->type[r];
    uint64_t hash = 0;
    for (unsigned k = 0;; k++) {
      uint64_t word, after;
      int64_t delta;
      int s = cmp_delta_step(plan, &t, e->nwords, r, type, k, &word, &delta);
      if (s == 0) break;
      if (s < 0 || !cmp_delta_value(w[word], delta, &after)) {
        /* Refused: the table's commit order and hashes go back to unset. */
        if (b->seq) memset(b->seq, 0xff, (size_t)r * sizeof *b->seq);
        if (b->read_hash) memset(b->read_hash, 0, (size_t)r * sizeof *b->read_hash);
        free(w);
        return 0;
      }
      hash = stm_read_hash_step(hash, w[word]);
      w[word] = after;
    }
    if (b->seq) b->seq[r] = r;
    if (b->read_hash) b->read_hash[r] = hash;
  }
  memset(b->status, TXTABLE_COMMITTED, (size_t)n);
  free(e->words);
  e->words = w;
  return 1;
}
