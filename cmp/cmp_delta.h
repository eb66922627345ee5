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
/* list_step and list_col of a type without an address list. */
#define CMP_DELTA_NO_LIST 0xff

/* The steps of every type, as the executing code reads them: columns of the
 * table rather than argument names. */
typedef struct cmp_delta_plan {
  uint8_t nsteps[STM_MAX_TYPES];
  uint8_t word_col[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  uint8_t amount_col[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  int8_t sign[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  /* Whether a step's amount is multiplied by the length of the address list. */
  uint8_t times_list[STM_MAX_TYPES][CMP_DELTA_MAX_STEPS];
  /* The declared step that stands for one step per entry of the type's
   * address list, and the column holding that list's length (its entries
   * follow it), or CMP_DELTA_NO_LIST. */
  uint8_t list_step[STM_MAX_TYPES];
  uint8_t list_col[STM_MAX_TYPES];
  /* For a list step whose entries take their amounts from fields of the
   * amount argument (PRSTM_DELTA_FIELDS): the fields' width and the low bits
   * of a field that hold its amount; 0 when each entry takes the whole
   * argument. */
  uint8_t field_bits[STM_MAX_TYPES];
  uint8_t field_amount_bits[STM_MAX_TYPES];
  /* Bit j: declared step j only reads (PRSTM_DELTA_READ). */
  uint8_t read_steps[STM_MAX_TYPES];
  /* Whether a row's result is the sum of the values its steps read
   * (PRSTM_DELTA_RESULT_SUM). */
  uint8_t result_sum[STM_MAX_TYPES];
  /* Step slots of a row: the most steps of any row in the batch. */
  uint32_t slots;
  /* The largest amount a step moves: the slots of the whole batch times it
   * stays below 2^62, so no running sum of steps can overflow. */
  uint64_t amount_max;
} cmp_delta_plan;

/* Argument col of row r, 0 past the table's columns, as prstm_arg reads it
 * but through the caches: the path reads each argument several times (its
 * emit, gather and apply kernels), where the STM reads it once a try. */
PRSTM_INLINE uint64_t cmp_delta_arg(const txtable_view *t, uint64_t r, unsigned col) {
  if (col >= t->ncols) return 0;
  const uint64_t at = txtable_arg_index(t, r, col);
  return t->narrow_args ? ((const uint32_t *)t->args)[at] : t->args[at];
}

/* Step k of row r of type `type`: its word and signed amount. A list step
 * expands into one step per entry, so a row's steps are its declared steps
 * with the list step repeated (none for an empty list). Returns 0 when the
 * row has no step k, 1 for a step, -1 for a step the proof cannot take (a
 * word out of range, an amount above the plan's bound, a list longer than
 * the table's columns, an entry whose field is no amount). */
PRSTM_INLINE int cmp_delta_step(const cmp_delta_plan *p, const txtable_view *t, uint64_t nwords, uint64_t r,
                                unsigned type, unsigned k, uint64_t *word, int64_t *delta) {
  unsigned j = k;
  uint64_t count = 0, w;
  const unsigned list_col = p->list_col[type], list_step = p->list_step[type];
  if (list_col != CMP_DELTA_NO_LIST) {
    count = cmp_delta_arg(t, r, list_col);
    if (count >= t->ncols || count > t->ncols - 1 - list_col) return k < p->nsteps[type] ? -1 : 0;
  }
  const int in_list = list_step != CMP_DELTA_NO_LIST && k >= list_step && k - list_step < count;
  if (list_step != CMP_DELTA_NO_LIST && k >= list_step) j = in_list ? list_step : (unsigned)(k - count + 1);
  if (j >= p->nsteps[type]) return 0;
  if (in_list)
    w = cmp_delta_arg(t, r, list_col + 1 + (k - list_step));
  else
    w = cmp_delta_arg(t, r, p->word_col[type][j]);
  const int reads_only = (p->read_steps[type] >> j) & 1u;
  uint64_t a = reads_only ? 0 : cmp_delta_arg(t, r, p->amount_col[type][j]);
  if (in_list && p->field_bits[type]) {
    /* Entry i's own field: one past the argument's bits, or one with a bit
     * above its amount set, is no step of this path. */
    const unsigned bits = p->field_bits[type], i = k - list_step;
    if ((uint64_t)(i + 1) * bits > 64) return -1;
    const uint64_t field = (a >> (i * bits)) & ((1ull << bits) - 1);
    if (field >> p->field_amount_bits[type]) return -1;
    a = field;
  }
  int in_bound = a <= p->amount_max;
  if (p->times_list[type][j]) {
    in_bound = count == 0 || a <= p->amount_max / count;
    a *= count;
  }
  *word = w;
  *delta = p->sign[type][j] < 0 ? -(int64_t)a : (int64_t)a;
  return w < nwords && in_bound ? 1 : -1;
}

/* What row r read, from the value before each of its steps (`read`, by
 * step slot r * slots + k; a row's steps are its first slots): its read
 * hash, and the sum of the values, which is the result of a row of a
 * PRSTM_DELTA_RESULT_SUM type. */
PRSTM_INLINE void cmp_delta_row_reads(const cmp_delta_plan *p, const txtable_view *t, uint64_t nwords, uint64_t r,
                                      unsigned type, const uint64_t *read, uint64_t *hash, uint64_t *sum) {
  uint64_t h = 0, s = 0, word;
  int64_t delta;
  for (unsigned k = 0; k < p->slots && cmp_delta_step(p, t, nwords, r, type, k, &word, &delta) > 0; k++) {
    const uint64_t value = read[r * p->slots + k];
    h = stm_read_hash_step(h, value);
    s += value;
  }
  *hash = h;
  *sum = s;
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
