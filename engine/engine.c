/* engine.c: the engine handle: options, state, a run (whole, or chunked through stream.c), rounds of runs, and results. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PRSTM_CHUNK_ROWS, the default of options.chunk_rows: a whole number of
 * rows, else 0. */
static uint64_t prstm_chunk_rows_env(void) {
  const char *v = getenv("PRSTM_CHUNK_ROWS");
  if (!v || !*v) return 0;
  char *end = NULL;
  unsigned long long n = strtoull(v, &end, 10);
  return end && *end == 0 ? (uint64_t)n : 0;
}

void prstm_options_init(prstm_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->backend = PRSTM_BACKEND_AUTO;
  opt->threads = 0;
  opt->lock_coverage = 1;
  opt->semantic = PRSTM_SEMANTIC_POSTPONE;
  opt->retry_limit = 100;
  opt->watchdog_s = 60;
  opt->chunk_rows = prstm_chunk_rows_env();
}

int prstm_engine_create(prstm_engine **out, const prstm_workload *wl, const prstm_options *opt) {
  if (!out || !wl || wl->ntypes == 0 || wl->ntypes > PRSTM_MAX_TYPES || wl->nvariants == 0 || wl->uses_add < 0 ||
      wl->uses_add > PRSTM_ADDS_UNREAD_ONLY)
    return PRSTM_EINVAL;
  prstm_engine *e = calloc(1, sizeof *e);
  if (!e) return PRSTM_ENOMEM;
  e->wl = wl;
  e->unit_device = -1;
  if (opt)
    e->opt = *opt;
  else
    prstm_options_init(&e->opt);
  *out = e;
  if (e->opt.lock_coverage == 0) return engine_fail(e, PRSTM_EINVAL, "lock_coverage must be at least 1");
  _Static_assert(PRSTM_MAX_THREADS == CMP_MAX_RANK, "a rank must fit the lock word's owner field");
  _Static_assert((int)TXTABLE_PENDING == (int)PRSTM_PENDING && (int)TXTABLE_COMMITTED == (int)PRSTM_COMMITTED &&
                     (int)TXTABLE_ABANDONED == (int)PRSTM_ABANDONED && (int)TXTABLE_FAILED == (int)PRSTM_FAILED,
                 "the table stores prstm_status values");
  _Static_assert((int)TXTABLE_REASON_CAPACITY == (int)PRSTM_REASON_CAPACITY &&
                     (int)TXTABLE_REASON_BAD_ADDRESS == (int)PRSTM_REASON_BAD_ADDRESS &&
                     (int)TXTABLE_REASON_RETRY_LIMIT == (int)PRSTM_REASON_RETRY_LIMIT &&
                     (int)TXTABLE_REASON_QUIESCENT == (int)PRSTM_REASON_QUIESCENT,
                 "the table stores the PRSTM_REASON_* values");
  _Static_assert((int)TXTABLE_REASON_AWAY < (int)PRSTM_REASON_USER, "the host's own reason is no workload's");
  _Static_assert(PRSTM_POLICY_PROGRESS_BATCH * 32 <= CMP_PACK_MASK,
                 "a warp's unpublished decisions fit a packed field");
  if (e->opt.threads > PRSTM_MAX_THREADS)
    return engine_fail(e, PRSTM_EINVAL, "threads must be at most %u", PRSTM_MAX_THREADS);
  if ((unsigned)e->opt.hetero_policy > (unsigned)PRSTM_HETERO_BALANCED)
    return engine_fail(e, PRSTM_EINVAL,
                       "hetero_policy must be PRSTM_HETERO_GPU_INVALIDATION, "
                       "PRSTM_HETERO_FAVOUR_FASTEST or PRSTM_HETERO_BALANCED");
  return 0;
}

void prstm_engine_destroy(prstm_engine *e) {
  if (!e) return;
  backend_gpu_keep_free(e->gpu_keep);
  free(e->words);
  free(e->initial);
  free(e);
}

const char *prstm_engine_error(const prstm_engine *e) { return e ? e->err : "no engine"; }
const prstm_workload *prstm_engine_workload(const prstm_engine *e) { return e ? e->wl : NULL; }

/* Only a request: each allocation of the columns records in the batch what
 * it got, and where no GPU gives pinned memory the batch is ordinary. */
int prstm_batch_create_pinned(prstm_batch **out, const prstm_workload *wl) {
  return txtable_create(out, wl, backend_pinned_allocator());
}
const prstm_options *prstm_engine_options(const prstm_engine *e) { return e ? &e->opt : NULL; }

int prstm_engine_set_state(prstm_engine *e, const prstm_word *words, uint64_t nwords) {
  if (!e) return PRSTM_EINVAL;
  if (e->stream) return engine_fail(e, PRSTM_EINVAL, "a stream is open on this engine: close it first");
  if (nwords == 0 || !words) return engine_fail(e, PRSTM_EINVAL, "state must hold at least one word");
  prstm_word *copy = malloc((size_t)nwords * sizeof *copy);
  if (!copy) return engine_fail(e, PRSTM_ENOMEM, "cannot allocate %llu state words", (unsigned long long)nwords);
  memcpy(copy, words, (size_t)nwords * sizeof *copy);
  free(e->words);
  e->words = copy;
  e->nwords = nwords;
  /* The words no longer come from a spec, so an invariant must not
   * regenerate the initial state from an old one. */
  e->has_spec = 0;
  return 0;
}

int prstm_engine_init_state(prstm_engine *e, const prstm_state_spec *spec) {
  if (!e || !spec) return PRSTM_EINVAL;
  if (e->stream) return engine_fail(e, PRSTM_EINVAL, "a stream is open on this engine: close it first");
  if (!e->wl->init_state) return engine_fail(e, PRSTM_EINVAL, "workload %s has no state initialiser", e->wl->name);
  prstm_word *words = NULL;
  uint64_t nwords = 0;
  int rc = e->wl->init_state(spec, &words, &nwords, e->err, sizeof e->err);
  if (rc) return rc;
  free(e->words);
  e->words = words;
  e->nwords = nwords;
  e->spec = *spec;
  e->has_spec = 1;
  return 0;
}

const prstm_word *prstm_engine_state(const prstm_engine *e, uint64_t *nwords) {
  if (!e) return NULL;
  if (nwords) *nwords = e->nwords;
  return e->words;
}

const prstm_state_spec *prstm_engine_state_spec(const prstm_engine *e) { return e && e->has_spec ? &e->spec : NULL; }

int prstm_engine_warm_up(prstm_engine *e) {
  if (!e) return PRSTM_EINVAL;
#ifdef PRSTM_HAVE_CUDA
  if (e->opt.backend == PRSTM_BACKEND_CPU) return 0;
  /* Messages stay local: the engine's own message buffer belongs to the
   * thread that uses the engine meanwhile. */
  char why[256];
  if (!backend_gpu_usable(e->wl, why, sizeof why)) return 0;
  const int first = backend_gpu_current();
  int devices = 1;
  if (e->opt.backend == PRSTM_BACKEND_MULTI) {
    devices = backend_gpu_count();
    /* More units than GPUs run on CPU threads: no GPU to start. */
    if (e->opt.units > 0 && (int)e->opt.units > devices) return 0;
    if (e->opt.units > 0) devices = (int)e->opt.units;
  }
  int rc = 0;
  for (int d = 0; d < devices && rc == 0; d++) {
    rc = backend_gpu_start(e->opt.backend == PRSTM_BACKEND_MULTI ? d : first, why, sizeof why);
    if (rc == 0) backend_gpu_warm(e->wl);
  }
  backend_gpu_make_current(first);
  /* A whole run or a stream on one GPU copies through the engine's pinned
   * chunks: taken here, they cost its first run nothing. Co-executed and
   * multi-GPU runs stage their own. */
  if (rc == 0 && (e->opt.backend == PRSTM_BACKEND_GPU || e->opt.backend == PRSTM_BACKEND_AUTO))
    rc = backend_gpu_keep_staging(e, why, sizeof why);
  return rc;
#else
  return 0;
#endif
}

int prstm_gpu_available(const prstm_workload *wl, char *why, size_t whylen) {
  return backend_gpu_usable(wl, why, whylen);
}

int prstm_engine_set_progress(prstm_engine *e, prstm_progress_fn fn, void *user) {
  if (!e) return PRSTM_EINVAL;
  e->progress_fn = fn;
  e->progress_user = fn ? user : NULL;
  return 0;
}

void prstm_results_add(prstm_results *total, const prstm_results *run) {
  total->transactions += run->transactions;
  total->committed += run->committed;
  total->abandoned += run->abandoned;
  total->failed += run->failed;
  total->aborts += run->aborts;
  total->postponements += run->postponements;
  total->sweeps += run->sweeps;
  total->transfer_s += run->transfer_s;
  total->execute_s += run->execute_s;
  total->wall_s += run->wall_s;
  total->setup_s += run->setup_s;
  total->snapshot_rows += run->snapshot_rows;
  total->snapshot_s += run->snapshot_s;
  total->rounds += run->rounds;
  total->second_unit_rows += run->second_unit_rows;
  total->discarded_rows += run->discarded_rows;
  total->first_unit_discarded_rows += run->first_unit_discarded_rows;
  total->reordered_rounds += run->reordered_rounds;
  total->stopped_rounds += run->stopped_rounds;
  if (run->gpu_bytes > total->gpu_bytes) total->gpu_bytes = run->gpu_bytes;
}

static int engine_run(prstm_engine *e, prstm_batch *b, prstm_results *res);

int prstm_engine_run(prstm_engine *e, prstm_batch *b, prstm_results *res) {
  double t0 = engine_now();
  int rc = engine_run(e, b, res);
  if (res) res->wall_s = engine_now() - t0;
  return rc;
}

static int engine_run(prstm_engine *e, prstm_batch *b, prstm_results *res) {
  if (!e || !b || !res) return PRSTM_EINVAL;
  e->err[0] = 0;
  memset(res, 0, sizeof *res);
  if (e->stream) return engine_fail(e, PRSTM_EINVAL, "a stream is open on this engine: close it first");
  if (b->wl != e->wl)
    return engine_fail(e, PRSTM_EINVAL, "batch of workload %s given to an engine of workload %s", b->wl->name,
                       e->wl->name);
  if (!e->words) return engine_fail(e, PRSTM_EINVAL, "the engine has no state: set or init it first");
  if (b->n == 0) return engine_fail(e, PRSTM_ECONFIG, "batch is empty");
  const prstm_worker_variant *v = engine_pick_variant(e->wl, b->ncols);
  if (!v)
    return engine_fail(e, PRSTM_ECONFIG, "batch rows have %u argument words; workload %s takes at most %u", b->ncols,
                       e->wl->name, e->wl->variants[e->wl->nvariants - 1].max_columns);
  ENGINE_RANGE_PUSH("prepare");
  int rc = txtable_prepare_run(b, e->opt.verify);
  ENGINE_RANGE_POP();
  if (rc) return engine_fail(e, rc, "cannot allocate the results and commit-order columns");
  e->verify_batch = NULL;
  free(e->initial);
  e->initial = NULL;
  if (e->opt.verify) {
    e->initial = malloc((size_t)e->nwords * sizeof *e->initial);
    if (!e->initial) return engine_fail(e, PRSTM_ENOMEM, "cannot keep the initial state for verification");
    memcpy(e->initial, e->words, (size_t)e->nwords * sizeof *e->initial);
  }
  res->transactions = b->n;
  res->lock_coverage = e->opt.lock_coverage;
  e->verify_snapshot_types = 0;
  e->snapshot_committed = e->snapshot_failed = e->snapshot_abandoned = 0;

  if (e->opt.backend == PRSTM_BACKEND_HETERO || e->opt.backend == PRSTM_BACKEND_MULTI) {
    rc = e->opt.backend == PRSTM_BACKEND_HETERO ? engine_run_hetero(e, b, v, res) : engine_run_multi(e, b, v, res);
    if (rc == 0 && e->opt.verify) {
      e->verify_batch = b;
      e->verify_variant = v;
      e->verify_counts = (engine_verify_counts){e->last_run_sequences, res->committed, res->failed, res->abandoned};
    }
    return rc;
  }
  prstm_backend backend;
  rc = backend_choose(e, &backend, res->fallback, sizeof res->fallback);
  if (rc) return rc;
  /* Auto picks by the batch too: a hot batch the delta path cannot take
   * runs faster on the CPU backend (docs/PERFORMANCE.md, "Hot spots"). */
  if (e->opt.backend == PRSTM_BACKEND_AUTO && backend == PRSTM_BACKEND_GPU &&
      engine_auto_prefers_cpu(e, b, res->fallback, sizeof res->fallback))
    backend = PRSTM_BACKEND_CPU;
  /* chunk_rows runs a larger batch in chunks on either backend, so the
   * chunked path is tested without a GPU too. A chunked run has one commit
   * order across its chunks, so it is verified like any other. */
  uint64_t chunk = e->opt.chunk_rows;
  const prstm_worker_variant *ran = v;
  const backend_ops *ops = backend_of(backend);
  if (chunk && b->n > chunk) {
    rc = engine_run_chunked(e, b, backend, res->fallback, chunk, res);
    ran = e->last_run_variant;
  } else if (!ops) {
    rc = engine_fail(e, PRSTM_ENOGPU, "this build of prstm has no CUDA support");
  } else {
    /* Rows of snapshot types run first, on the host, on the state the run
     * starts from; the backend's threads then leave them alone. */
    engine_snapshot snap;
    memset(&snap, 0, sizeof snap);
    const uint64_t types = engine_snapshot_types(e->wl) & b->type_mask;
    const double snap_t0 = engine_now();
    rc = types ? engine_snapshot_run(e, b, v, types, &snap) : 0;
    res->snapshot_s = snap.k ? engine_now() - snap_t0 : 0;
    res->snapshot_rows = snap.k;
    if (rc == 0 && snap.k) {
      e->run_snapshot_types = types;
      e->snapshot_committed = snap.committed;
      e->snapshot_failed = snap.failed;
      e->snapshot_abandoned = snap.abandoned;
    }
    if (rc == 0) rc = ops->run(e, b, v, res);
    e->run_snapshot_types = 0;
    if (rc == 0 && snap.k) {
      engine_snapshot_finish(e, b, &snap, res);
      e->verify_snapshot_types = types;
    }
    e->snapshot_committed = e->snapshot_failed = e->snapshot_abandoned = 0;
    /* A batch whose table does not fit the device's memory runs as a
     * stream of chunks that do, instead of failing; its snapshot rows then
     * run through the STM with the others. */
    if (rc == PRSTM_ETOOBIG) {
      engine_snapshot_undo(b, &snap);
      e->snapshot_committed = e->snapshot_failed = e->snapshot_abandoned = 0;
      char fallback[sizeof res->fallback];
      memcpy(fallback, res->fallback, sizeof fallback);
      e->err[0] = 0;
      rc = engine_run_chunked(e, b, backend, fallback, 0, res);
      ran = e->last_run_variant;
    }
    engine_snapshot_free(&snap);
  }
  if (rc == 0 && e->opt.verify) {
    e->verify_batch = b;
    e->verify_variant = ran;
    e->verify_counts = (engine_verify_counts){e->last_run_sequences, res->committed, res->failed, res->abandoned};
  }
  return rc;
}

int prstm_engine_run_rounds(prstm_engine *e, prstm_batch **batch, prstm_round_fn each, void *user, prstm_results *total,
                            unsigned *rounds) {
  if (!e || !batch || !*batch || !total) return PRSTM_EINVAL;
  prstm_batch *first = *batch, *b = first;
  char err[sizeof e->err] = "";
  int rc = 0;
  memset(total, 0, sizeof *total);
  if (rounds) *rounds = 0;
  for (unsigned round = 0;; round++) {
    prstm_results r;
    rc = prstm_engine_run(e, b, &r);
    if (rc) break;
    /* The first round's backend, device and thread count describe the run. */
    if (round == 0)
      *total = r;
    else
      prstm_results_add(total, &r);
    if (rounds) *rounds = round + 1;
    if (each && (rc = each(round, b, &r, user)) != 0) break;
    if (!e->wl->next_round) break;
    prstm_batch *next = NULL;
    rc = prstm_batch_create(&next, e->wl);
    if (!rc) rc = e->wl->next_round(e, b, round, next, err, sizeof err);
    if (rc) {
      prstm_batch_destroy(next);
      rc = engine_fail(e, rc, "round %u: %s", round + 1, err[0] ? err : prstm_strerror(rc));
      break;
    }
    if (prstm_batch_size(next) == 0) {
      prstm_batch_destroy(next);
      break;
    }
    if (b != first) prstm_batch_destroy(b);
    b = next;
  }
  *batch = b;
  return rc;
}
