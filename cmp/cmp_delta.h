/* cmp_delta.h: the delta path's rules, shared by the CPU walk and the GPU kernels: a row's steps, a step's bounds, a row's read hash. */
#ifndef CMP_DELTA_H
#define CMP_DELTA_H

#include "stm_core.h"

/* A batch whose every row is of a type that declares its steps (word, signed
 * amount: prstm_delta_desc) need not go through the STM when the batch order
 * itself is a serial order in which every row commits: then every body's
 * guard passes, each word ends at its initial value plus the sum of its
 * steps, and each step read the word's value before it in batch order. The
 * CPU proves it with one walk in batch order; the GPU sorts the steps by
 * word (a stable sort keeps batch order within a word) and scans each word's
 * steps. Either way, a single step that would leave [0, 2^64) refuses the
 * proof and the batch runs through the STM on an untouched state. */

#define CMP_DELTA_MAX_STEPS 4

/* The steps of every type, as the executing code reads them: columns of the
 * table rather than argument names. */
typedef struct cmp_delta_plan {
  uint8_t nsteps[STM_MAX_TYPES];
  uint8_t word_col[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  uint8_t amount_col[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  int8_t sign[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  /* Step slots of a row: the most steps of any type in the batch. */
  uint32_t slots;
  /* The largest amount the proof takes: the slots of the whole batch times
   * it stays below 2^62, so no running sum of steps can overflow. */
  uint64_t amount_max;
} cmp_delta_plan;

/* Argument col of row r, 0 past the table's columns, as prstm_arg reads it. */
PRSTM_INLINE uint64_t cmp_delta_arg(const txtable_view *t, uint64_t r, unsigned col) {
  return col < t->ncols ? t->args[(uint64_t)col * t->stride + r] : 0;
}

/* Step k of row r of type `type`: its word and signed amount. Returns 0 when
 * the row has no step k, 1 for a step, -1 for a step the proof cannot take
 * (a word out of range, an amount above the plan's bound). */
PRSTM_INLINE int cmp_delta_step(const cmp_delta_plan *p, const txtable_view *t, uint64_t nwords, uint64_t r,
                                unsigned type, unsigned k, uint64_t *word, int64_t *delta) {
  if (k >= p->nsteps[type]) return 0;
  uint64_t w = cmp_delta_arg(t, r, p->word_col[type][k]);
  uint64_t a = cmp_delta_arg(t, r, p->amount_col[type][k]);
  *word = w;
  *delta = p->sign[type][k] < 0 ? -(int64_t)a : (int64_t)a;
  return w < nwords && a <= p->amount_max ? 1 : -1;
}

/* The value of a word that started at `initial` after steps summing to
 * `sum`; 0 when it would leave [0, 2^64), where the body would postpone or
 * fail instead. Checking every step's value this way checks each guard. */
PRSTM_INLINE int cmp_delta_value(uint64_t initial, int64_t sum, uint64_t *value) {
  if (sum >= 0) {
    if (initial > UINT64_MAX - (uint64_t)sum) return 0;
    *value = initial + (uint64_t)sum;
  } else {
    uint64_t take = (uint64_t)0 - (uint64_t)sum;
    if (initial < take) return 0;
    *value = initial - take;
  }
  return 1;
}

#endif /* CMP_DELTA_H */
