/* delta.h: the delta path (cmp/cmp_delta.h) as the engine's backends call it: eligibility, the hot-word estimate, the CPU walk and the GPU kernels. */
#ifndef DELTA_H
#define DELTA_H

#include "cmp_delta.h"
#include "engine_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills plan and returns 1 when every type occurring in the batch declares
 * its steps (and the batch fits the path's 32-bit keys), else 0. */
int engine_delta_plan(const prstm_engine *e, const prstm_batch *b, cmp_delta_plan *plan);
/* Whether a run on backend with `inflight` STM threads should try the delta
 * path, by options.deltas, the batch's contention (engine_contention_sample)
 * and, on the CPU, the state's size; fills plan when it should. */
int engine_delta_want(const prstm_engine *e, const prstm_batch *b, prstm_backend backend, uint32_t inflight,
                      const engine_contention *hot, cmp_delta_plan *plan);
/* The CPU's proof and apply: one walk in batch order, or, for many steps
 * over a state larger than the cache, a walk of each word's steps in batch
 * order on up to *threads threads (*threads: how many it used). Returns 1
 * when the batch committed on the delta path (state, statuses, results,
 * and with verification the commit order and read hashes written), 0 when
 * the proof was refused and nothing changed. */
int engine_delta_run_cpu(prstm_engine *e, prstm_batch *b, const cmp_delta_plan *plan, unsigned *threads);
/* Counts and the final progress report of a batch that committed on the
 * delta path. */
void engine_delta_results(prstm_engine *e, const prstm_batch *b, prstm_results *res);

#ifdef PRSTM_HAVE_CUDA
/* The device's side of one run, in device memory: the state, the table's
 * columns (args with stride n), the results where the batch has read-only
 * rows and, with verification, seq and read_hash. */
typedef struct delta_gpu_table {
  uint64_t *words;
  uint64_t nwords;
  const uint8_t *type;
  const uint64_t *args;
  uint32_t ncols;
  uint32_t narrow_args; /* the columns hold 32-bit values (txtable_view) */
  uint64_t n;
  uint8_t *status;
  uint64_t *seq, *read_hash;
  uint64_t *result;
} delta_gpu_table;
/* The GPU's proof (a stable sort of the steps by word and a scan of each
 * word's steps) and apply. *applied is 1 when the batch committed on the
 * delta path, 0 when the proof was refused (or its buffers do not fit the
 * free memory) and nothing changed; *ms is the time of its kernels. */
int delta_gpu_run(const delta_gpu_table *t, const cmp_delta_plan *plan, int *applied, float *ms, char *err,
                  size_t errlen);
#endif

#ifdef __cplusplus
}
#endif

#endif /* DELTA_H */
