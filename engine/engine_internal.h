/* engine_internal.h: what the engine's translation units share and users never see. */
#ifndef ENGINE_INTERNAL_H
#define ENGINE_INTERNAL_H

#include "prstm.h"
#include "txtable.h"

/* NVTX ranges around the phases of a run (transfer, execute, readback), for
 * Nsight Systems; without NVTX in the build they compile to nothing, and
 * with it they cost nothing unless a profiler is attached. */
#ifdef PRSTM_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define PRSTM_RANGE_PUSH(name) nvtxRangePushA(name)
#define PRSTM_RANGE_POP() nvtxRangePop()
#else
#define PRSTM_RANGE_PUSH(name) ((void)0)
#define PRSTM_RANGE_POP() ((void)0)
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct prstm_engine {
  const prstm_workload *wl;
  prstm_options opt;
  prstm_word *words;
  uint64_t nwords;
  prstm_state_spec spec;
  int has_spec;
  /* Verification: the words before the last run, and the batch it ran. */
  prstm_word *initial;
  const prstm_batch *verify_batch;
  /* The progress observer (prstm_engine_set_progress), or NULL. */
  prstm_progress_fn progress_fn;
  void *progress_user;
  /* The open stream (engine/stream.c), which owns the state until closed. */
  struct prstm_stream *stream;
  char err[512];
};

/* When a run last reported progress, so that both backends report at the
 * same pace from their own wait loops. */
typedef struct prstm_progress_clock {
  double start; /* when execution started, by prstm_now */
  double last;  /* when the observer was last called */
} prstm_progress_clock;

/* Calls the engine's observer with the counts of the published progress
 * words q (PRSTM_Q_WORDS, read by the caller from host or device memory),
 * when PRSTM_PROGRESS_INTERVAL_MS passed since the last report or when
 * finished is set. Does nothing without an observer. */
void prstm_progress_report(prstm_engine *e, const prstm_batch *b, const uint64_t *q, prstm_progress_clock *clock,
                           int finished);


/* The first worker variant whose max_columns covers ncols, or NULL. */
const prstm_worker_variant *prstm_pick_variant(const prstm_workload *wl, uint32_t ncols);
/* Runs rows on one host thread in retry mode with no retries: each row ends
 * committed, failed, or abandoned when its body postponed. The serial
 * executor of verification, built from the workload's own CPU worker. */
int prstm_run_serial(const prstm_workload *wl, const prstm_worker_variant *v, prstm_word *words, uint64_t nwords,
                     uint64_t lock_coverage, prstm_table_view *table, char *err, size_t errlen);

double prstm_now(void);
/* Records a formatted message in the engine and returns code. */
int prstm_engine_fail(prstm_engine *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void prstm_ctx_fill_common(const prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx);
void prstm_results_add_stats(prstm_results *res, const prstm_thread_stats *st);
/* Records the watchdog's message (how many rows were final) and returns PRSTM_ESTALLED. */
int prstm_watchdog_error(prstm_engine *e, const prstm_batch *b);

/* Flags of one run on either backend. KEEP_POSTPONED: rows still postponed
 * at quiescence stay pending (a stream carries them over). QUIET: no
 * progress reports, because the stream around the run makes its own. */
#define PRSTM_RUN_KEEP_POSTPONED 1u
#define PRSTM_RUN_QUIET 2u
/* Runs a batch on the CPU backend; the counters are added to res. */
int prstm_cpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res, unsigned flags);
/* The backend a run or stream of this engine uses: the GPU when one is
 * usable and not refused by the options; fallback says why auto chose the
 * CPU. Returns PRSTM_ENOGPU (message in the engine) when gpu was asked for
 * and none is usable. */
int prstm_choose_backend(prstm_engine *e, prstm_backend *backend, char *fallback, size_t fallback_len);
/* Runs one batch as a stream of chunks of at most unit_rows rows (0: as
 * many as the backend's memory allows), with carry-over between chunks and
 * abandonment only at the end (engine/stream.c). */
int prstm_run_chunked(prstm_engine *e, prstm_batch *b, prstm_backend backend, const char *fallback, uint64_t unit_rows,
                      prstm_results *res);

#ifdef PRSTM_HAVE_CUDA
/* GPU backend (backend_gpu.cu). */
int prstm_gpu_probe(char *why, size_t whylen);
int prstm_gpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res);

/* The GPU side of a stream: the state and locks resident on the device, two
 * device tables (slots) each with pinned host staging, a copy stream and the
 * execution stream, so that a slot is filled while the other executes.
 * Errors are recorded in the engine. */
typedef struct prstm_gpu_stream prstm_gpu_stream;
/* Uploads the state and allocates two slots of 2 * unit_rows rows of ncols
 * argument words each (new rows plus carried rows), unit_rows being
 * want_rows or less where the GPU's memory is short. */
int prstm_gpu_stream_open(prstm_engine *e, const prstm_worker_variant *v, uint32_t ncols, int results,
                          uint64_t want_rows, prstm_gpu_stream **out, uint64_t *unit_rows, uint32_t *threads,
                          uint64_t *gpu_bytes, char *device, size_t device_len);
/* Whether a unit of n rows, `staged` of them through the slot's staging and
 * readback (all n, or the carried rows after a pinned batch's direct ones),
 * with or without results, needs pinned memory that the slot or the shared
 * zeros do not hold yet. Taking it frees the old buffers, and cudaFreeHost
 * waits for the whole GPU, so the caller first retires the other slot's
 * unit under the watchdog. */
int prstm_gpu_stream_would_grow(const prstm_gpu_stream *g, unsigned slot, uint64_t n, uint64_t staged, int results);
/* Makes sure the slot's pinned staging and readback, and the shared zeros,
 * hold what a unit of n rows with `staged` rows through the slot needs
 * (growing them, which prstm_gpu_stream_would_grow predicts), and gives the
 * staging: type[staged] and args with column stride `staged`. The slot must
 * be free (waited for). */
int prstm_gpu_stream_reserve(prstm_engine *e, prstm_gpu_stream *g, unsigned slot, uint64_t n, uint64_t staged,
                             int results, uint8_t **type, uint64_t **args);
/* Rows of a unit that are copied to the device straight from a pinned
 * batch instead of through the staging: the first n rows of the unit, from
 * type[0..n) and args[c * stride + 0..n) for each column c. Their statuses
 * are cleared from status[0..n), all zero (pending) at launch, and read
 * back into it. */
typedef struct prstm_gpu_direct_rows {
  const uint8_t *type;
  const uint64_t *args;
  uint64_t stride, n;
  uint8_t *status;
} prstm_gpu_direct_rows;
/* Queues the copy of the unit (its first direct->n rows from the pinned
 * batch when direct is not NULL, and the rest from the staging, packed
 * there at column stride n - direct->n; without direct, all n rows from the
 * staging at column stride n) and, behind the previous unit on the execution stream, its
 * kernel, then the readback of its outcomes. */
int prstm_gpu_stream_launch(prstm_engine *e, prstm_gpu_stream *g, unsigned slot, uint64_t n, uint32_t tag_mask,
                            int results, unsigned flags, const prstm_gpu_direct_rows *direct);
/* Waits for a slot's unit under the watchdog; then status holds the
 * outcomes of the unit's rows that were not direct (all n rows without
 * direct rows, else the n - direct->n after them; the direct rows' are in
 * the batch), result[n] those of every row when the unit has results, q its
 * published counts, and the copy and execution times are added. */
int prstm_gpu_stream_wait(prstm_engine *e, prstm_gpu_stream *g, unsigned slot, const uint8_t **status,
                          const uint64_t **result, uint64_t *q, double *copy_s, double *execute_s);
/* With no unit in flight: brings the final state back to the engine and
 * gives the summed aborts, postponements and sweeps of every unit. */
int prstm_gpu_stream_finish(prstm_engine *e, prstm_gpu_stream *g, uint64_t *aborts, uint64_t *postponements,
                            uint64_t *sweeps);
/* Stops and waits for whatever is in flight, then frees everything. */
void prstm_gpu_stream_free(prstm_gpu_stream *g);
#endif

#ifdef __cplusplus
}
#endif

#endif /* ENGINE_INTERNAL_H */
