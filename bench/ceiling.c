/* ceiling.c: the ceiling's host side: a bank batch copied into flat arrays, and the serial CPU reference the GPU ceiling is checked against. */
#include "ceiling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Accounts a row touches and the argument columns it uses, by operation. */
static unsigned row_accounts(unsigned op, uint64_t count) {
  switch (op) {
    case PRSTM_BENCH_OP_TRANSFER:
      return 2;
    case PRSTM_BENCH_OP_MULTI:
      return (unsigned)count + 1;
    default:
      return 1;
  }
}

static unsigned row_columns(unsigned op, uint64_t count) {
  switch (op) {
    case PRSTM_BENCH_OP_DEPOSIT:
    case PRSTM_BENCH_OP_WITHDRAW:
      return 2;
    case PRSTM_BENCH_OP_TRANSFER:
      return 3;
    case PRSTM_BENCH_OP_BALANCE:
      return 1;
    default:
      return 3 + (unsigned)count;
  }
}

int prstm_bench_table_from_batch(const prstm_batch *batch, prstm_bench_table *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  const prstm_workload *wl = prstm_batch_workload(batch);
  static const char *const names[] = {"deposit", "withdraw", "transfer", "balance", "transfer_multi"};
  int op_of_type[PRSTM_MAX_TYPES];
  for (unsigned i = 0; i < PRSTM_MAX_TYPES; i++) op_of_type[i] = -1;
  for (int op = 0; op < 5; op++) {
    int type = prstm_type_find(wl, names[op]);
    if (type < 0) {
      snprintf(err, errlen, "the ceiling needs a bank batch, but workload %s has no type '%s'", wl->name, names[op]);
      return PRSTM_EINVAL;
    }
    op_of_type[type] = op;
  }
  uint64_t n = prstm_batch_size(batch);
  t->n = n;
  t->op = malloc((size_t)(n ? n : 1));
  if (!t->op) {
    snprintf(err, errlen, "cannot allocate the ceiling's copy of %llu rows", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  /* First pass: operations, and how wide the table must be. */
  for (uint64_t i = 0; i < n; i++) {
    unsigned type = prstm_batch_type(batch, i);
    int op = type < PRSTM_MAX_TYPES ? op_of_type[type] : -1;
    if (op < 0) {
      snprintf(err, errlen, "row %llu has type %u, which the ceiling does not know", (unsigned long long)i, type);
      prstm_bench_table_free(t);
      return PRSTM_EINVAL;
    }
    t->op[i] = (uint8_t)op;
    uint64_t count = op == PRSTM_BENCH_OP_MULTI ? prstm_batch_arg(batch, i, 2) : 0;
    if (count + 1 > PRSTM_BENCH_MAX_ACCOUNTS) {
      snprintf(err, errlen, "row %llu moves money from %llu accounts; the ceiling takes at most %u",
               (unsigned long long)i, (unsigned long long)count, PRSTM_BENCH_MAX_ACCOUNTS - 1);
      prstm_bench_table_free(t);
      return PRSTM_EINVAL;
    }
    unsigned cols = row_columns((unsigned)op, count), accounts = row_accounts((unsigned)op, count);
    if (cols > t->ncols) t->ncols = cols;
    if (accounts > t->max_accounts) t->max_accounts = accounts;
  }
  t->args = malloc((size_t)(n ? n : 1) * t->ncols * sizeof *t->args);
  if (!t->args) {
    snprintf(err, errlen, "cannot allocate the ceiling's %u argument columns of %llu rows", t->ncols,
             (unsigned long long)n);
    prstm_bench_table_free(t);
    return PRSTM_ENOMEM;
  }
  /* Second pass: the arguments, and the money deposits add and withdrawals
   * take when every row is applied. */
  for (uint64_t i = 0; i < n; i++) {
    unsigned op = t->op[i];
    uint64_t count = op == PRSTM_BENCH_OP_MULTI ? prstm_batch_arg(batch, i, 2) : 0;
    unsigned cols = row_columns(op, count);
    for (unsigned c = 0; c < t->ncols; c++) t->args[(uint64_t)c * n + i] = c < cols ? prstm_batch_arg(batch, i, c) : 0;
    if (op == PRSTM_BENCH_OP_DEPOSIT) t->deposits += t->args[n + i];
    if (op == PRSTM_BENCH_OP_WITHDRAW) t->withdrawals += t->args[n + i];
  }
  return 0;
}

void prstm_bench_table_free(prstm_bench_table *t) {
  if (!t) return;
  free(t->op);
  free(t->args);
  t->op = NULL;
  t->args = NULL;
}

void prstm_bench_ceiling_reference(const prstm_bench_table *t, prstm_word *words, uint64_t nwords) {
  const uint64_t n = t->n;
  const uint64_t *a = t->args;
  (void)nwords; /* the generator only emits addresses below nwords */
  for (uint64_t i = 0; i < n; i++) {
    switch (t->op[i]) {
      case PRSTM_BENCH_OP_DEPOSIT:
        words[a[i]] += a[n + i];
        break;
      case PRSTM_BENCH_OP_WITHDRAW:
        words[a[i]] -= a[n + i];
        break;
      case PRSTM_BENCH_OP_TRANSFER:
        words[a[i]] -= a[2 * n + i];
        words[a[n + i]] += a[2 * n + i];
        break;
      case PRSTM_BENCH_OP_MULTI: {
        uint64_t amount = a[n + i], count = a[2 * n + i];
        for (uint64_t k = 0; k < count; k++) words[a[(3 + k) * n + i]] -= amount;
        words[a[i]] += amount * count;
        break;
      }
      default:
        break; /* a balance query changes nothing */
    }
  }
}

#ifndef PRSTM_HAVE_CUDA
/* Without CUDA there is no ceiling to run: the caller records the GPU
 * columns as unavailable, never as a number. */
int prstm_bench_ceiling_gpu(const prstm_bench_table *table, const prstm_word *initial, uint64_t nwords,
                            uint32_t lock_coverage, uint32_t threads, int direct_locks, prstm_word *final_words,
                            prstm_bench_ceiling_result *result, char *err, size_t errlen) {
  (void)table;
  (void)initial;
  (void)nwords;
  (void)lock_coverage;
  (void)threads;
  (void)direct_locks;
  (void)final_words;
  memset(result, 0, sizeof *result);
  snprintf(err, errlen, "this build of prstm-bench has no CUDA support");
  return PRSTM_ENOGPU;
}

unsigned prstm_bench_gpu_count(void) { return 0; }
#endif
