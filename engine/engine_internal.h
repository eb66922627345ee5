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

#ifdef PRSTM_HAVE_CUDA
/* GPU backend (backend_gpu.cu). */
int prstm_gpu_probe(char *why, size_t whylen);
int prstm_gpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res);
#endif

#ifdef __cplusplus
}
#endif

#endif /* ENGINE_INTERNAL_H */
