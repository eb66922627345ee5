/* backend.h: the one internal interface between the engine (runs, chunked runs, streams) and the backends that execute: CPU threads and a GPU. */
#ifndef BACKEND_H
#define BACKEND_H

#include "engine_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The engine calls down into a backend through these operations and never
 * the other way: engine.c runs a batch (ops->run), stream.c cuts batches
 * into units and retires them (the stream operations), and each backend
 * lives in a file of its own (backend_cpu.c, backend_gpu.cu). */

typedef struct backend_stream backend_stream; /* a backend's own state of one stream */

/* What a stream's units look like, fixed when it opens. */
typedef struct backend_stream_shape {
  uint32_t ncols;      /* argument words of every row */
  int results;         /* the workload has a read-only type: a unit may carry results */
  int verify;          /* units record their commit order and read hashes */
  uint64_t limit_rows; /* the most new rows a unit takes (options.chunk_rows, a chunked run's); 0: no limit */
  uint64_t first_rows; /* the first batch's rows: the size to expect */
  /* The most new rows of a GPU unit; 0: PRSTM_POLICY_STREAM_MAX_UNIT_ROWS.
   * A multi-unit run sizes its units to its parts. */
  uint64_t max_unit_rows;
} backend_stream_shape;

/* What the backend made of it. */
typedef struct backend_stream_info {
  uint64_t unit_rows; /* new rows one unit takes (UINT64_MAX: no limit) */
  uint64_t slot_rows; /* rows one unit can hold, carried rows included */
  uint32_t threads;
  uint64_t gpu_bytes;
  unsigned slots; /* units in flight at once, at most BACKEND_STREAM_SLOTS_MAX; 0: the backend's stream_slots */
  char device[128];
} backend_stream_info;
#define BACKEND_STREAM_SLOTS_MAX 8

/* Rows of a unit that the backend copies straight from a pinned batch
 * instead of through the staging (a GPU's only): the first n rows of the
 * unit, from type[0..n) and, for each column c, the n values from value
 * c * stride of args, 32-bit ones where narrow (a narrow batch: the unit's
 * staged rows are then narrow too). Their statuses come back with the
 * others' (backend_outcomes). */
typedef struct backend_direct_rows {
  const uint8_t *type;
  const void *args;
  uint64_t stride, n;
  int narrow;
} backend_direct_rows;

/* One unit: n rows, the first direct->n of them straight from a pinned
 * batch when direct is set, the other `staged` through the slot's staging.
 * The last `carried` rows were carried over from earlier units: prstm_row
 * numbers them from the row ids staged with them; the rows before them are
 * numbered from row_base on. */
typedef struct backend_unit {
  uint64_t n, staged, carried, row_base;
  uint32_t tag_mask;
  int results;
  unsigned flags; /* PRSTM_RUN_* */
  const backend_direct_rows *direct;
  /* The staged argument columns hold 32-bit values (txtable_view's
   * narrow_args), their stride counted in them; only where the staging
   * allowed it (backend_staging.narrow_ok). */
  int narrow_args;
} backend_unit;

/* Where the caller writes a unit's staged rows: type[staged], args with
 * column stride `stride`, and the carried rows' ids, row_id[carried]. */
typedef struct backend_staging {
  uint8_t *type;
  uint64_t *args;
  uint64_t stride;
  uint64_t *row_id;
  /* Whether the unit may stage its argument columns as 32-bit values, where
   * every one fits (backend_unit.narrow_args): half the bytes to fill and
   * to copy to the GPU. A unit with narrow direct rows must. */
  int narrow_ok;
} backend_staging;

/* What a retired unit gives back: the status of every row, direct or
 * staged (one readback with the progress words, where a status straight
 * into its batch would cost a CUDA call of its own), every row's result when the
 * unit has results, and with verify every row's place in the unit's commit
 * order and read hash; q holds the unit's published counts and the
 * sequence numbers it took. */
typedef struct backend_outcomes {
  const uint8_t *status;
  const uint64_t *result, *seq, *read_hash;
  uint64_t q[STM_Q_WORDS];
  /* The unit's numbers in the commit order (seq) come from a counter every
   * unit of the stream shares: they are the stream's numbers already, and
   * q[STM_Q_SEQUENCE] is how many the stream has taken so far (at least). */
  int seq_shared;
} backend_outcomes;

typedef struct backend_ops {
  prstm_backend id;
  /* Runs a whole batch in one execution; PRSTM_ETOOBIG when its table does
   * not fit (the engine then runs it in chunks). */
  int (*run)(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res);
  /* Units in flight at once: the GPU copies one while it executes another
   * (its stream_open may take more, backend_stream_info.slots). */
  unsigned stream_slots;
  /* Whether units may take direct rows from a pinned batch. */
  int takes_direct_rows;
  /* Whether filling the staging is the unit's whole copy (the CPU runs on
   * it): the stream counts the fill as copy time. */
  int staging_is_copy;
  int (*stream_open)(prstm_engine *e, const prstm_worker_variant *v, const backend_stream_shape *shape,
                     backend_stream **out, backend_stream_info *info);
  /* Whether the unit needs memory the slot does not hold yet. Taking it may
   * wait for the whole device (cudaFreeHost), so the caller first retires
   * the units of every other slot under the watchdog. */
  int (*unit_would_grow)(const backend_stream *s, unsigned slot, const backend_unit *u);
  /* Makes the slot (free: waited for) ready for the unit and gives its
   * staging. */
  int (*unit_reserve)(prstm_engine *e, backend_stream *s, unsigned slot, const backend_unit *u,
                      backend_staging *staging);
  /* Starts the unit (the CPU runs it to its end here). */
  int (*unit_launch)(prstm_engine *e, backend_stream *s, unsigned slot, const backend_unit *u);
  /* Waits for the slot's unit under the watchdog and gives its outcomes,
   * valid until the slot's next reserve; adds its copy and execution times. */
  int (*unit_wait)(prstm_engine *e, backend_stream *s, unsigned slot, backend_outcomes *out, double *copy_s,
                   double *execute_s);
  /* With no unit in flight: the final state back in the engine, and the
   * summed aborts, postponements and sweeps of every unit. */
  int (*stream_finish)(prstm_engine *e, backend_stream *s, uint64_t *aborts, uint64_t *postponements, uint64_t *sweeps);
  /* Stops and waits for whatever is in flight, then frees everything. */
  void (*stream_free)(backend_stream *s);
  /* A unit of a co-executed run (hetero.c), with no unit in flight: its
   * replica of the shared words copied out to host memory or in from it,
   * and the footprint of its units since the last take (the marks or the
   * span it keeps) copied into the engine's (unit_read_marks and
   * unit_write_marks, or unit_span) and cleared. NULL where the replica
   * and the footprint are the engine's own (the CPU). The copies take
   * words [from, to) of the replica to or from the same words of `words`. */
  int (*state_read)(prstm_engine *e, backend_stream *s, prstm_word *words, uint64_t from, uint64_t to);
  int (*state_write)(prstm_engine *e, backend_stream *s, const prstm_word *words, uint64_t from, uint64_t to);
  int (*footprint_take)(prstm_engine *e, backend_stream *s);
  /* The replica's words in the GPU's memory, for exchanges between GPUs
   * (engine/multi.c); NULL on the CPU. */
  uint64_t *(*state_device)(backend_stream *s);
  /* Page-locks a large ordinary batch's columns where they lie for a
   * chunked run, so that its units copy their rows straight from them
   * (b->registered), and gives them back. Returns what batch_unlock_pages
   * takes, NULL when nothing is locked. NULL where units copy nothing (the
   * CPU). */
  void *(*batch_lock_pages)(prstm_batch *b);
  void (*batch_unlock_pages)(prstm_batch *b, void *locked);
  /* Waits until the slot's unit in flight no longer reads its staging, so
   * that the next unit's rows may be filled into it while that unit still
   * executes (stream.c's prefill); NULL where a unit runs on its staging to
   * its end (the CPU). */
  int (*unit_staging_wait)(prstm_engine *e, backend_stream *s, unsigned slot);
  /* A unit of a co-executed run whose marks stay on its device (a GPU),
   * with no unit in flight: the round's logs compared there
   * (footprint_log.h). lock[0, nwritten) are the locks the other unit wrote
   * under and lock[nwritten, n) those it only read under (its address log).
   * *fails gets the FOOTPRINT_* bits; *written the locks this unit wrote
   * under (*nwritten_here of them, in no particular order), valid until the
   * unit's next call; the unit's marks are cleared. NULL on the CPU, whose
   * marks are the engine's own. */
  int (*log_compare)(prstm_engine *e, backend_stream *s, const uint64_t *lock, uint64_t nwritten, uint64_t n,
                     unsigned *fails, const uint64_t **written, uint64_t *nwritten_here);
  /* The words under locks lock[0, n) of the replica, copied out into or in
   * from a compact copy: lock k's words at compact + k * lock_coverage
   * (footprint_lock_words). NULL on the CPU. */
  int (*locks_read)(prstm_engine *e, backend_stream *s, const uint64_t *lock, uint64_t n, prstm_word *compact);
  int (*locks_write)(prstm_engine *e, backend_stream *s, const uint64_t *lock, uint64_t n, const prstm_word *compact);
} backend_ops;

/* What the GPU backend keeps on an engine from one whole run or stream to
 * the next (prstm_engine.gpu_keep): freed with the engine; nothing without
 * CUDA. */
struct backend_gpu_keep;
void backend_gpu_keep_free(struct backend_gpu_keep *keep);
/* Takes the engine's pinned staging chunks on the current GPU now, where it
 * has none (prstm_engine_warm_up): its whole runs' copies, and its streams'
 * states, then go through them from the first run on. Returns 0, or PRSTM_ECUDA with err set. */
int backend_gpu_keep_staging(prstm_engine *e, char *err, size_t errlen);

/* The backends of this build; backend_gpu_ops is NULL without CUDA. */
extern const backend_ops backend_cpu_ops;
const backend_ops *backend_gpu_ops(void);
/* The backend that runs `backend` (CPU or GPU). */
/* The backend a run or stream of this engine uses: the GPU when one is
 * usable and not refused by the options; fallback says why auto chose the
 * CPU. Returns PRSTM_ENOGPU (message in the engine) when gpu was asked for
 * and none is usable. */
int backend_choose(prstm_engine *e, prstm_backend *backend, char *fallback, size_t fallback_len);
const backend_ops *backend_of(prstm_backend backend);

/* Whether a GPU is usable for wl in this build; writes why not otherwise. */
int backend_gpu_usable(const prstm_workload *wl, char *why, size_t whylen);
#ifdef PRSTM_HAVE_CUDA
/* Whether the CUDA runtime sees a GPU that can run the persistent kernel. */
int backend_gpu_probe(char *why, size_t whylen);
/* GPUs the CUDA runtime sees (0 when it sees none). */
int backend_gpu_count(void);
/* The calling thread's current GPU, and making one current again (a run
 * over several GPUs leaves its caller's as it found it). */
int backend_gpu_current(void);
void backend_gpu_make_current(int device);
/* Makes `device` current on the calling thread and starts its context;
 * PRSTM_ECUDA with the message in err where it fails. */
int backend_gpu_start(int device, char *err, size_t errlen);
/* What a GPU's first run would otherwise pay once, taken on the current
 * device: each worker variant's kernel loaded (CUDA loads a kernel at its
 * first use; a variant's one-thread kernel still loads at its first launch)
 * and the driver's first pinned allocation of the process made. Best
 * effort: a failure is left to the run, which reports it. */
void backend_gpu_warm(const prstm_workload *wl);
#endif
/* Pinned host memory for batches: the GPU backend's, or NULL. */
const txtable_allocator *backend_pinned_allocator(void);

/* The CPU backend's run of a batch with run flags (PRSTM_RUN_*), the
 * serial replay of verification and a stream's unit use it too. */
int backend_cpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res, unsigned flags);
/* The same on a lock array the caller keeps between runs (a stream's:
 * engine_lock_array_words over the engine's held locks, every lock free
 * and every add counter 0 at the start, as each run leaves them), or on
 * one of its own where locks is NULL. */
int backend_cpu_run_on_locks(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                             unsigned flags, uint64_t *locks);

#ifdef __cplusplus
}
#endif

#endif /* BACKEND_H */
