/* engine_internal.h: what the engine's translation units share and users never see. */
#ifndef ENGINE_INTERNAL_H
#define ENGINE_INTERNAL_H

#include "prstm.h"
#include "cmp_walk.h"
#include "txtable.h"

#include "parallel.h"
#include "ranges.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a verified run's threads counted, which the certificate compares
 * with the table: every recorded sequence number must be below
 * `sequences`, and the statuses must add up to the decisions counted, so
 * that a number recorded without being taken, or a row decided twice,
 * cannot pass. */
typedef struct engine_verify_counts {
  uint64_t sequences;
  uint64_t committed, failed, abandoned;
} engine_verify_counts;

struct prstm_engine {
  const prstm_workload *wl;
  prstm_options opt;
  prstm_word *words;
  uint64_t nwords;
  prstm_state_spec spec;
  int has_spec;
  /* Verification: the words before the last run, the batch it ran, and
   * what its threads counted (the sequence numbers they took, the rows
   * they decided), for the certificate to hold against the table. */
  prstm_word *initial;
  const prstm_batch *verify_batch;
  engine_verify_counts verify_counts;
  const prstm_worker_variant *verify_variant;
  /* Sequence numbers taken by the last execution on either backend (a
   * whole run, or one unit of a stream), and a chunked run's worker. */
  uint64_t last_run_sequences;
  const prstm_worker_variant *last_run_variant;
  /* A whole run that takes the delta path or nothing (hetero.c's first
   * choice): where the backend does not want the path for the batch, or
   * its proof refuses it, the run returns 0 with deltas_declined set,
   * having decided no row and left the state as it was. */
  int deltas_only, deltas_declined;
  /* The progress observer (prstm_engine_set_progress), or NULL. */
  prstm_progress_fn progress_fn;
  void *progress_user;
  /* The open stream (engine/stream.c), which owns the state until closed. */
  struct prstm_stream *stream;
  /* Snapshot types (snapshot.c): those whose rows the current whole run's
   * threads leave alone because the host ran them on the state the run
   * started from, and those the last verified run's replay must read the
   * same way; with the rows the host decided, which progress reports add to
   * the threads' counts. */
  uint64_t run_snapshot_types;
  uint64_t verify_snapshot_types;
  uint64_t snapshot_committed, snapshot_failed, snapshot_abandoned;
  /* A unit of a co-executed run (hetero.c) is an engine of its own, whose
   * runs mark the locks their decided rows read and wrote here (one byte a
   * lock, prstm_exec_ctx.read_marks); NULL in every other engine. */
  uint8_t *unit_read_marks, *unit_write_marks;
  /* A unit of a run over several units with contiguous ranges of locks
   * (multi.c) keeps only the span of its footprint instead (STM_SPAN_WORDS
   * words, prstm_exec_ctx.span); NULL in every other engine. */
  uint64_t *unit_span;
  /* A unit of a run whose units partition the state (multi.c) holds only
   * words [unit_held_lo, unit_held_hi) (its GPU's memory has no others,
   * and its rows may touch no others); both 0 in every other engine, which
   * holds every word. */
  uint64_t unit_held_lo, unit_held_hi;
  /* A CPU unit's run that another thread may cut short (hetero.c's probe):
   * while unit_deadline_armed, the run's wait loop looks every
   * WATCHDOG_FIRST_PAUSE_NS and stops the run once engine_now() passes
   * unit_stop_at_ns (nanoseconds; 0: no deadline yet), which the other
   * thread sets with __atomic_store_n; unit_stopped then says that it did.
   * All 0 in every other engine. */
  int unit_deadline_armed, unit_stopped;
  uint64_t unit_stop_at_ns;
  /* The GPU a unit's stream runs on (CUDA's device index); -1 elsewhere:
   * a stream runs on the calling thread's current device. */
  int unit_device;
  /* What the GPU backend keeps between whole runs (the pinned chunks its
   * large copies go through); NULL until a run on a GPU. */
  struct backend_gpu_keep *gpu_keep;
  char err[512];
};

/* When a run last reported progress, so that both backends report at the
 * same pace from their own wait loops. */
typedef struct engine_progress_clock {
  double start; /* when execution started, by engine_now */
  double last;  /* when the observer was last called */
} engine_progress_clock;

/* Calls the engine's observer with the counts of the published progress
 * words q (STM_Q_WORDS, read by the caller from host or device memory),
 * when PRSTM_PROGRESS_INTERVAL_MS passed since the last report or when
 * finished is set. Does nothing without an observer. */
void engine_progress_report(prstm_engine *e, const prstm_batch *b, const uint64_t *q, engine_progress_clock *clock,
                            int finished);

/* What a certificate checks: the rows of one run in one table, with their
 * outcomes, commit order and read hashes (a batch, or a stream's journal of
 * its batches), the state they started from and what the run counted. */
typedef struct engine_verify_source {
  const prstm_batch *table;
  const uint64_t *row_number; /* the number prstm_row gave each row; NULL: its place in the table */
  const uint64_t *item;       /* streams: the batch each row came from, else NULL */
  const uint64_t *item_row;   /* streams: its row in that batch */
  const prstm_word *initial;
  const prstm_word *final; /* NULL: the engine's words */
  const engine_verify_counts *counts;
  const prstm_worker_variant *variant; /* the run's worker, whose set capacity the replay must share */
  uint64_t unchecked_types;            /* snapshot types the run ran on the host (snapshot.c) */
} engine_verify_source;
/* Replays the source and fills the report (verify.c). */
int engine_verify_rows(prstm_engine *e, const engine_verify_source *src, prstm_verify_report *rep);
void engine_verify_report_init(prstm_verify_report *rep);

/* The first worker variant whose max_columns covers ncols, or NULL. */
const prstm_worker_variant *engine_pick_variant(const prstm_workload *wl, uint32_t ncols);
/* A zeroed lock array of `words` words for a CPU run or replay (freed with
 * free); NULL when out of memory. A large one is zeroed on every core. */
uint64_t *engine_lock_array(uint64_t words);
/* Runs rows on one host thread in retry mode with no retries: each row ends
 * committed, failed, or abandoned when its body postponed. The serial
 * executor of verification, built from the workload's own CPU worker. */
int engine_run_serial(const prstm_workload *wl, const prstm_worker_variant *v, prstm_word *words, uint64_t nwords,
                      uint64_t lock_coverage, uint64_t unchecked_types, txtable_view *table, char *err, size_t errlen);

/* Snapshot types (prstm_type_desc.snapshot) in a whole run: their rows run
 * on the host, on the state the run starts from, before the threads run the
 * others, and take the first places in the commit order (snapshot.c). */
typedef struct engine_snapshot {
  uint64_t k;      /* rows run */
  uint64_t *row;   /* their rows in the batch */
  uint8_t *status; /* their outcomes, kept while the run overwrites the batch's columns */
  uint64_t *result, *seq, *read_hash;
  uint64_t committed, failed, abandoned;
} engine_snapshot;
/* The workload's snapshot types, as a mask over type indices. */
uint64_t engine_snapshot_types(const prstm_workload *wl);
/* Runs the batch's rows of `types` on the engine's state, writes their
 * outcomes into the batch and keeps them in s. */
int engine_snapshot_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, uint64_t types,
                        engine_snapshot *s);
/* After the run of the other rows: the snapshot rows' outcomes put back,
 * the other rows' places in the commit order moved after theirs, and their
 * decisions added to res. */
void engine_snapshot_finish(prstm_engine *e, prstm_batch *b, const engine_snapshot *s, prstm_results *res);
/* The snapshot rows made pending again (the batch runs another way). */
void engine_snapshot_undo(prstm_batch *b, const engine_snapshot *s);
void engine_snapshot_free(engine_snapshot *s);

double engine_now(void);
/* Records a formatted message in the engine and returns code. */
int engine_fail(prstm_engine *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void engine_ctx_fill_common(const prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx);
/* Marks a context of one executing thread as alone on its state
 * (STM_SEMANTIC_LONE), and clears the mark otherwise; after any change of
 * ctx->nthreads. */
void engine_ctx_set_lone(prstm_exec_ctx *ctx);
/* Words of a run's lock array: the lock words, then, where the workload
 * uses prstm_add (PRSTM_ADDS_COUNTED), a counter of adds in flight per lock
 * (all zero at start). */
static inline uint64_t engine_lock_array_words(const prstm_workload *wl, uint64_t nlocks) {
  return wl->uses_add == PRSTM_ADDS_COUNTED ? 2 * nlocks : nlocks;
}
/* The locks over the words a context holds (prstm_exec_ctx.held_lo and
 * held_n): the first in *lock_lo, and how many. Every lock where the
 * context holds every word. */
static inline uint64_t engine_held_locks(uint64_t held_lo, uint64_t held_n, uint64_t coverage, uint64_t *lock_lo) {
  *lock_lo = held_lo / coverage;
  return (held_lo + held_n + coverage - 1) / coverage - *lock_lo;
}
/* Points ctx at a lock array of engine_lock_array_words(wl, n) words for
 * the n locks over its held words alone, indexed as the whole state's
 * locks are: the context points before the array by the locks it does not
 * hold, which its accesses never reach (stm_tx_holds). */
static inline void engine_ctx_set_held_locks(prstm_exec_ctx *ctx, const prstm_workload *wl, uint64_t *locks) {
  uint64_t lo = 0;
  const uint64_t n = engine_held_locks(ctx->held_lo, ctx->held_n, ctx->lock_coverage, &lo);
  ctx->locks = locks ? locks - lo : NULL;
  ctx->add_counts = wl->uses_add == PRSTM_ADDS_COUNTED && locks ? locks + n - lo : NULL;
}
/* Points ctx at a lock array of engine_lock_array_words(wl, ctx->nlocks) words. */
static inline void engine_ctx_set_locks(prstm_exec_ctx *ctx, const prstm_workload *wl, uint64_t *locks) {
  ctx->locks = locks;
  ctx->add_counts = wl->uses_add == PRSTM_ADDS_COUNTED && locks ? locks + ctx->nlocks : NULL;
}
void engine_results_add_stats(prstm_results *res, const stm_thread_stats *st);
/* Records the watchdog's message (how many rows were final) and returns
 * PRSTM_ESTALLED (watchdog.c). */
int engine_watchdog_error(prstm_engine *e, const prstm_batch *b);

/* How hot a batch's words are, from a sample of its rows (contention.c):
 * the words a row names are its arguments of kind address and address list,
 * so a workload whose types take their words from their arguments is
 * measured, and one whose bodies compute them is not (known is 0). */
typedef struct engine_contention {
  int known;
  uint64_t batch_rows;    /* rows of the batch: no more can be in flight */
  uint64_t rows, words;   /* rows sampled and the address words they named */
  double q;               /* the chance two of those words are the same */
  uint64_t hottest_count; /* how often the sample's most frequent word came */
  /* The same over the words met before commit, those not marked
   * PRSTM_ROW_WORD_AT_COMMIT: what aborts transactions in flight. */
  uint64_t abort_words;
  double abort_q;
  uint64_t hottest_abort_count;
} engine_contention;
void engine_contention_sample(const prstm_engine *e, const prstm_batch *b, engine_contention *c);
/* The batch row that sample row i of `rows` is, in a batch of n rows: every
 * row when rows is n, else runs of consecutive rows spread over the batch. */
uint64_t engine_contention_sample_row(uint64_t n, uint64_t rows, uint64_t i);
/* The words row r names as far as the host can tell: the workload's
 * row_words hook, else its address arguments; at most cap, 0 when none.
 * Addresses come without the hook's marks; the contention sample keeps
 * PRSTM_ROW_WORD_AT_COMMIT and leaves out the words marked
 * PRSTM_ROW_WORD_ADD. */
unsigned engine_row_words(const prstm_engine *e, const prstm_batch *b, uint64_t r, uint64_t *out, unsigned cap);
/* Conflicts a transaction meets on its words, on average, with `inflight`
 * transactions running at once: s * s * (inflight - 1) * q for s words a row. */
double engine_contention_conflicts(const engine_contention *c, uint32_t inflight);
/* The same two over the words met before commit alone: a word met only at
 * commit (a ticket's counter) aborts nobody, and its queue costs each
 * commit a few instructions under the counter's lock. What backend auto
 * and co-execution weigh against the CPU. */
double engine_contention_abort_conflicts(const engine_contention *c, uint32_t inflight);
double engine_contention_hottest_abort_inflight(const engine_contention *c, uint32_t inflight);
/* Transactions in flight at once on the hottest word. */
double engine_contention_hottest_inflight(const engine_contention *c, uint32_t inflight);
/* The most transactions worth running at once: those at which a transaction
 * meets PRSTM_POLICY_INFLIGHT_CONFLICTS others, in whole warps, at least one
 * warp, at most `most`; `most` when the contention is not known. */
uint32_t engine_contention_inflight(const engine_contention *c, uint32_t most);

/* With backend auto and a usable GPU: whether the batch is one the CPU
 * backend runs faster, an STM batch (no delta path) whose sampled words are
 * so hot that a GPU's threads would queue on them; writes why. */
int engine_auto_prefers_cpu(const prstm_engine *e, const prstm_batch *b, char *why, size_t whylen);
/* The same on a sample the caller already took. */
int engine_auto_prefers_cpu_sampled(const prstm_engine *e, const prstm_batch *b, const engine_contention *hot,
                                    char *why, size_t whylen);

/* Flags of one run on either backend. KEEP_POSTPONED: rows still postponed
 * at quiescence stay pending (a stream carries them over). QUIET: no
 * progress reports, because the stream around the run makes its own. */
#define ENGINE_RUN_KEEP_POSTPONED 1u
#define ENGINE_RUN_QUIET 2u
/* Runs one batch as a stream of chunks of at most unit_rows rows (0: as
 * many as the backend's memory allows), with carry-over between chunks and
 * abandonment only at the end (engine/stream.c). */
int engine_run_chunked(prstm_engine *e, prstm_batch *b, prstm_backend backend, const char *fallback, uint64_t unit_rows,
                       prstm_results *res);
/* Runs one batch co-executed by a CPU unit and a GPU unit (or a second CPU
 * unit where no GPU is usable), each on a replica of the state, reconciled
 * after every round (engine/hetero.c). */
int engine_run_hetero(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res);
/* Runs one batch on several units (GPUs, or sets of CPU threads where no
 * GPU is usable), each owning a range of the locks (engine/multi.c). */
int engine_run_multi(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res);

#ifdef __cplusplus
}
#endif

#endif /* ENGINE_INTERNAL_H */
