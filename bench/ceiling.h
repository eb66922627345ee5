/* ceiling.h: the ceiling kernel's interface: a bank batch as flat arrays, its serial CPU reference, and the GPU kernel with the engine's memory traffic and no conflict handling. */
#ifndef PRSTM_BENCH_CEILING_H
#define PRSTM_BENCH_CEILING_H

#include <stddef.h>
#include <stdint.h>

#include "prstm_tx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operations of a bank row, decoded once from the batch's type names so that
 * the kernel never depends on the order of the bank's type table. */
enum {
  PRSTM_BENCH_OP_DEPOSIT = 0,
  PRSTM_BENCH_OP_WITHDRAW = 1,
  PRSTM_BENCH_OP_TRANSFER = 2,
  PRSTM_BENCH_OP_BALANCE = 3,
  PRSTM_BENCH_OP_MULTI = 4
};

/* The most accounts one bank transaction touches: 127 sources and a target. */
#define PRSTM_BENCH_MAX_ACCOUNTS 128

/* A bank batch copied out of a prstm_batch through the public accessors:
 * one operation byte per row and ncols argument columns of n words each,
 * laid out like the engine's table (column c of row i at args[c * n + i]). */
typedef struct prstm_bench_table {
  uint64_t n;
  unsigned ncols;
  unsigned max_accounts; /* the most accounts any row touches */
  uint8_t *op;
  uint64_t *args;
  /* Money that the rows, applied unconditionally, add to and take from the
   * total: deposits and withdrawals (transfers move money and create none). */
  uint64_t deposits, withdrawals;
} prstm_bench_table;

/* Copies a bank batch; PRSTM_EINVAL with a message when a row's type is not
 * one of the bank's. */
/* GPUs the CUDA runtime sees; 0 in a build without the GPU backend. */
unsigned prstm_bench_gpu_count(void);

int prstm_bench_table_from_batch(const prstm_batch *batch, prstm_bench_table *table, char *err, size_t errlen);
void prstm_bench_table_free(prstm_bench_table *table);

/* The serial CPU reference of the ceiling: applies every row to words in
 * table order, unconditionally (no funds check, wrapping arithmetic), so that
 * its result does not depend on the order of execution. The GPU ceiling
 * applies the same deltas with atomic adds, so the two must agree word for
 * word. Also the "plain serial loop" baseline: no STM and no semantic check. */
void prstm_bench_ceiling_reference(const prstm_bench_table *table, prstm_word *words, uint64_t nwords);

/* One run of the GPU ceiling kernel on the table: uploads initial words and
 * the table, launches `threads` threads (0: as many as the GPU keeps resident
 * for this kernel), each walking rows rank, rank + threads, ... and doing per
 * account touched a lock read, a value read, a pre-lock CAS, a lock CAS, an
 * atomic add of the value's delta and a lock store, with one fence per
 * transaction and a finish flag per row, ignoring every CAS result. Writes
 * back the final words and how many finish flags are set. */
typedef struct prstm_bench_ceiling_result {
  double kernel_s;    /* CUDA events around the kernel */
  double e2e_s;       /* wall clock: allocation, upload, kernel, readback */
  uint32_t threads;   /* threads launched */
  uint64_t finished;  /* rows whose finish flag is set after the kernel */
  uint64_t gpu_bytes; /* device memory the run allocated */
  char device[128];
} prstm_bench_ceiling_result;

/* Returns 0, PRSTM_ENOGPU when this build has no CUDA, or PRSTM_ECUDA /
 * PRSTM_ENOMEM with a message naming the failing call. */
int prstm_bench_ceiling_gpu(const prstm_bench_table *table, const prstm_word *initial, uint64_t nwords,
                            uint32_t lock_coverage, uint32_t threads, int direct_locks, prstm_word *final_words,
                            prstm_bench_ceiling_result *result, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PRSTM_BENCH_CEILING_H */
