/* engine.c: the engine handle, backend choice and the CPU backend (pthreads running the shared worker). */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *prstm_strerror(int err) {
  switch (err) {
    case 0: return "success";
#define PRSTM_STRERROR_CASE(name, code, msg) \
  case PRSTM_##name: return msg;
    PRSTM_ERRNO_MAP(PRSTM_STRERROR_CASE)
#undef PRSTM_STRERROR_CASE
    default: return "unknown error";
  }
}

const char *prstm_err_name(int err) {
  switch (err) {
    case 0: return "0";
#define PRSTM_ERRNAME_CASE(name, code, msg) \
  case PRSTM_##name: return "PRSTM_" #name;
    PRSTM_ERRNO_MAP(PRSTM_ERRNAME_CASE)
#undef PRSTM_ERRNAME_CASE
    default: return "PRSTM_UNKNOWN_ERROR";
  }
}

int prstm_is_input_error(int err) {
  return err == PRSTM_EINVAL || err == PRSTM_EPARSE || err == PRSTM_ECONFIG || err == PRSTM_EUNKNOWN;
}

void prstm_host_yield(void) { sched_yield(); }

uint64_t prstm_host_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double prstm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int prstm_engine_fail(prstm_engine *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, sizeof e->err, fmt, ap);
  va_end(ap);
  return code;
}

static const prstm_workload *const builtin_workloads[] = {&prstm_workload_bank};

const prstm_workload *prstm_workload_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof builtin_workloads / sizeof builtin_workloads[0]; i++)
    if (strcmp(builtin_workloads[i]->name, name) == 0) return builtin_workloads[i];
  return NULL;
}

int prstm_type_find(const prstm_workload *wl, const char *name) {
  if (!wl || !name) return PRSTM_EINVAL;
  for (unsigned i = 0; i < wl->ntypes; i++)
    if (strcmp(wl->types[i].name, name) == 0) return (int)i;
  return PRSTM_EUNKNOWN;
}

const char *prstm_reason_string(const prstm_workload *wl, unsigned type, unsigned reason) {
  switch (reason) {
    case PRSTM_REASON_NONE: return "none";
    case PRSTM_REASON_CAPACITY: return "read or write set capacity exceeded";
    case PRSTM_REASON_BAD_ADDRESS: return "address out of range";
    case PRSTM_REASON_RETRY_LIMIT: return "semantic retry limit reached";
    case PRSTM_REASON_QUIESCENT: return "still blocked when no further commit was possible";
    default: break;
  }
  if (wl && type < wl->ntypes && reason >= PRSTM_REASON_USER) {
    unsigned k = reason - PRSTM_REASON_USER;
    for (unsigned i = 0; i <= k && i < 4; i++) {
      if (!wl->types[type].reasons[i]) break;
      if (i == k) return wl->types[type].reasons[i];
    }
  }
  return "unknown reason";
}

void prstm_options_init(prstm_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->backend = PRSTM_BACKEND_AUTO;
  opt->threads = 0;
  opt->lock_coverage = 1;
  opt->semantic = PRSTM_SEMANTIC_POSTPONE;
  opt->retry_limit = 100;
  opt->watchdog_s = 60;
}

int prstm_engine_create(prstm_engine **out, const prstm_workload *wl, const prstm_options *opt) {
  if (!out || !wl || wl->ntypes == 0 || wl->ntypes > PRSTM_MAX_TYPES || wl->nvariants == 0)
    return PRSTM_EINVAL;
  prstm_engine *e = calloc(1, sizeof *e);
  if (!e) return PRSTM_ENOMEM;
  e->wl = wl;
  if (opt)
    e->opt = *opt;
  else
    prstm_options_init(&e->opt);
  *out = e;
  if (e->opt.lock_coverage == 0)
    return prstm_engine_fail(e, PRSTM_EINVAL, "lock_coverage must be at least 1");
  if (e->opt.threads > PRSTM_MAX_THREADS)
    return prstm_engine_fail(e, PRSTM_EINVAL, "threads must be at most %u", PRSTM_MAX_THREADS);
  return 0;
}

void prstm_engine_destroy(prstm_engine *e) {
  if (!e) return;
  free(e->words);
  free(e->initial);
  free(e);
}

const char *prstm_engine_error(const prstm_engine *e) { return e ? e->err : "no engine"; }
const prstm_workload *prstm_engine_workload(const prstm_engine *e) { return e ? e->wl : NULL; }
const prstm_options *prstm_engine_options(const prstm_engine *e) { return e ? &e->opt : NULL; }

int prstm_engine_set_state(prstm_engine *e, const prstm_word *words, uint64_t nwords) {
  if (!e) return PRSTM_EINVAL;
  if (nwords == 0 || !words) return prstm_engine_fail(e, PRSTM_EINVAL, "state must hold at least one word");
  prstm_word *copy = malloc((size_t)nwords * sizeof *copy);
  if (!copy) return prstm_engine_fail(e, PRSTM_ENOMEM, "cannot allocate %llu state words", (unsigned long long)nwords);
  memcpy(copy, words, (size_t)nwords * sizeof *copy);
  free(e->words);
  e->words = copy;
  e->nwords = nwords;
  return 0;
}

int prstm_engine_init_state(prstm_engine *e, const prstm_state_spec *spec) {
  if (!e || !spec) return PRSTM_EINVAL;
  if (!e->wl->init_state)
    return prstm_engine_fail(e, PRSTM_EINVAL, "workload %s has no state initialiser", e->wl->name);
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

const prstm_state_spec *prstm_engine_state_spec(const prstm_engine *e) {
  return e && e->has_spec ? &e->spec : NULL;
}

int prstm_gpu_available(const prstm_workload *wl, char *why, size_t whylen) {
  if (wl && !wl->variants[0].gpu_launch) {
    snprintf(why, whylen, "workload %s has no GPU code in this build", wl->name);
    return 0;
  }
#ifdef PRSTM_HAVE_CUDA
  return prstm_gpu_probe(why, whylen);
#else
  snprintf(why, whylen, "this build of prstm has no CUDA support");
  return 0;
#endif
}

/* Fills the parts of the execution context that both backends share. */
void prstm_ctx_fill_common(const prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->nwords = e->nwords;
  ctx->lock_coverage = e->opt.lock_coverage;
  ctx->nlocks = (e->nwords + e->opt.lock_coverage - 1) / e->opt.lock_coverage;
  ctx->table.n = b->n;
  ctx->table.ncols = b->ncols;
  ctx->table.has_results = (uint32_t)b->has_read_only;
  for (unsigned t = 0; t < e->wl->ntypes; t++) ctx->type_tag[t] = (uint8_t)e->wl->types[t].tag;
  ctx->tag_mask = b->tag_mask;
  ctx->nthreads = threads;
  ctx->semantic = (uint32_t)e->opt.semantic;
  ctx->retry_limit = e->opt.retry_limit;
}

/* CPU backend: every thread waits at a gate until all exist, because a
 * worker's block and the termination count assume the full thread set; if one
 * cannot be created the others are sent home before touching the table. */
typedef struct cpu_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state; /* 0 wait, 1 run, 2 cancel */
} cpu_gate;

typedef struct cpu_thread_arg {
  const prstm_exec_ctx *ctx;
  prstm_cpu_worker_fn worker;
  cpu_gate *gate;
  uint32_t rank;
} cpu_thread_arg;

static void *cpu_thread_main(void *p) {
  cpu_thread_arg *a = p;
  pthread_mutex_lock(&a->gate->mu);
  while (a->gate->state == 0) pthread_cond_wait(&a->gate->cv, &a->gate->mu);
  int run = a->gate->state == 1;
  pthread_mutex_unlock(&a->gate->mu);
  if (run) a->worker(a->ctx, a->rank);
  return NULL;
}

static void cpu_gate_open(cpu_gate *g, int state) {
  pthread_mutex_lock(&g->mu);
  g->state = state;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static int cpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  uint32_t threads = e->opt.threads;
  if (threads == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cores > 0 ? (uint32_t)cores : 1;
  }
  prstm_exec_ctx ctx;
  prstm_ctx_fill_common(e, b, threads, &ctx);
  ctx.words = e->words;
  ctx.table.stride = b->cap;
  ctx.table.type = b->type;
  ctx.table.status = b->status;
  ctx.table.args = b->args;
  ctx.table.result = b->result;
  ctx.table.seq = b->seq;
  uint64_t quiesce[PRSTM_Q_WORDS] = {0};
  ctx.quiesce = quiesce;
  ctx.locks = calloc((size_t)ctx.nlocks, sizeof *ctx.locks);
  ctx.stats = calloc(threads, sizeof *ctx.stats);
  pthread_t *tids = calloc(threads, sizeof *tids);
  cpu_thread_arg *args = calloc(threads, sizeof *args);
  int rc = 0;
  if (!ctx.locks || !ctx.stats || !tids || !args) {
    rc = prstm_engine_fail(e, PRSTM_ENOMEM, "cannot allocate %llu locks for %u threads",
                           (unsigned long long)ctx.nlocks, threads);
    goto out;
  }
  cpu_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  uint32_t created = 0;
  for (; created < threads; created++) {
    args[created] = (cpu_thread_arg){&ctx, v->cpu_worker, &gate, created};
    int err = pthread_create(&tids[created], &attr, cpu_thread_main, &args[created]);
    if (err) {
      rc = prstm_engine_fail(e, PRSTM_ETHREAD, "cannot create CPU thread %u of %u: %s", created + 1, threads,
                             strerror(err));
      break;
    }
  }
  pthread_attr_destroy(&attr);
  double t0 = prstm_now();
  cpu_gate_open(&gate, rc ? 2 : 1);
  int stalled = 0;
  if (!rc) {
    /* Watch the run: progress is published by the workers in batches; a
     * run that publishes none for watchdog_s seconds is told to stop. */
    uint64_t last = 0;
    double last_t = t0;
    while (__atomic_load_n(&quiesce[PRSTM_Q_FINISHED], __ATOMIC_ACQUIRE) < threads) {
      struct timespec pause_ts = {0, 20 * 1000 * 1000};
      nanosleep(&pause_ts, NULL);
      uint64_t now_progress = __atomic_load_n(&quiesce[PRSTM_Q_PROGRESS], __ATOMIC_RELAXED);
      double now = prstm_now();
      if (now_progress != last) {
        last = now_progress;
        last_t = now;
      } else if (e->opt.watchdog_s && !stalled && now - last_t > e->opt.watchdog_s) {
        stalled = 1;
        __atomic_store_n(&quiesce[PRSTM_Q_STOP], 1, __ATOMIC_RELEASE);
      }
    }
  }
  for (uint32_t i = 0; i < created; i++) pthread_join(tids[i], NULL);
  res->execute_s = prstm_now() - t0;
  if (rc) goto out;
  for (uint32_t i = 0; i < threads; i++) prstm_results_add_stats(res, &ctx.stats[i]);
  if (stalled) {
    rc = prstm_watchdog_error(e, b);
    goto out;
  }
  res->threads = threads;
  res->backend = PRSTM_BACKEND_CPU;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(res->device, sizeof res->device, "CPU, %u threads on %ld cores", threads, cores);
out:
  free(ctx.locks);
  free(ctx.stats);
  free(tids);
  free(args);
  return rc;
}

int prstm_watchdog_error(prstm_engine *e, const prstm_batch *b) {
  uint64_t final = 0;
  for (uint64_t i = 0; i < b->n; i++) final += (b->status[i] & PRSTM_STATUS_MASK) != PRSTM_PENDING;
  return prstm_engine_fail(e, PRSTM_ESTALLED,
                           "no transaction committed or failed for %u s, so the watchdog stopped the run "
                           "(%llu of %llu transactions were final; engine.watchdog_s sets the limit)",
                           e->opt.watchdog_s, (unsigned long long)final, (unsigned long long)b->n);
}

void prstm_results_add_stats(prstm_results *res, const prstm_thread_stats *st) {
  res->committed += st->committed;
  res->aborts += st->aborts;
  res->postponements += st->postponements;
  res->failed += st->failed;
  res->abandoned += st->abandoned;
  res->sweeps += st->sweeps;
}

int prstm_engine_run(prstm_engine *e, prstm_batch *b, prstm_results *res) {
  if (!e || !b || !res) return PRSTM_EINVAL;
  e->err[0] = 0;
  memset(res, 0, sizeof *res);
  if (b->wl != e->wl)
    return prstm_engine_fail(e, PRSTM_EINVAL, "batch of workload %s given to an engine of workload %s",
                             b->wl->name, e->wl->name);
  if (!e->words) return prstm_engine_fail(e, PRSTM_EINVAL, "the engine has no state: set or init it first");
  if (b->n == 0) return prstm_engine_fail(e, PRSTM_ECONFIG, "batch is empty");
  const prstm_worker_variant *v = prstm_pick_variant(e->wl, b->ncols);
  if (!v)
    return prstm_engine_fail(e, PRSTM_ECONFIG, "batch rows have %u argument words; workload %s takes at most %u",
                             b->ncols, e->wl->name, e->wl->variants[e->wl->nvariants - 1].max_columns);
  int rc = txtable_prepare_run(b, e->opt.verify);
  if (rc) return prstm_engine_fail(e, rc, "cannot allocate the results and commit-order columns");
  e->verify_batch = NULL;
  free(e->initial);
  e->initial = NULL;
  if (e->opt.verify) {
    e->initial = malloc((size_t)e->nwords * sizeof *e->initial);
    if (!e->initial) return prstm_engine_fail(e, PRSTM_ENOMEM, "cannot keep the initial state for verification");
    memcpy(e->initial, e->words, (size_t)e->nwords * sizeof *e->initial);
  }
  res->transactions = b->n;
  res->lock_coverage = e->opt.lock_coverage;

  prstm_backend backend = e->opt.backend;
  if (backend != PRSTM_BACKEND_CPU) {
    char why[256];
    if (prstm_gpu_available(e->wl, why, sizeof why)) {
      backend = PRSTM_BACKEND_GPU;
    } else if (backend == PRSTM_BACKEND_GPU) {
      return prstm_engine_fail(e, PRSTM_ENOGPU, "backend gpu requested but no GPU is usable: %s", why);
    } else {
      backend = PRSTM_BACKEND_CPU;
      snprintf(res->fallback, sizeof res->fallback, "%s", why);
    }
  }
  if (backend == PRSTM_BACKEND_CPU) {
    rc = cpu_run(e, b, v, res);
  } else {
#ifdef PRSTM_HAVE_CUDA
    rc = prstm_gpu_run(e, b, v, res);
#else
    rc = prstm_engine_fail(e, PRSTM_ENOGPU, "this build of prstm has no CUDA support");
#endif
  }
  if (rc == 0 && e->opt.verify) e->verify_batch = b;
  return rc;
}

const prstm_worker_variant *prstm_pick_variant(const prstm_workload *wl, uint32_t ncols) {
  for (unsigned i = 0; i < wl->nvariants; i++)
    if (wl->variants[i].max_columns >= ncols) return &wl->variants[i];
  return NULL;
}

int prstm_run_serial(const prstm_workload *wl, const prstm_worker_variant *v, prstm_word *words, uint64_t nwords,
                     uint64_t lock_coverage, prstm_table_view *table, char *err, size_t errlen) {
  prstm_exec_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.words = words;
  ctx.nwords = nwords;
  ctx.lock_coverage = lock_coverage;
  ctx.nlocks = (nwords + lock_coverage - 1) / lock_coverage;
  ctx.table = *table;
  for (unsigned t = 0; t < wl->ntypes; t++) ctx.type_tag[t] = (uint8_t)wl->types[t].tag;
  ctx.tag_mask = 0xffffu;
  ctx.nthreads = 1;
  ctx.semantic = PRSTM_SEMANTIC_RETRY;
  ctx.retry_limit = 0;
  uint64_t quiesce[PRSTM_Q_WORDS] = {0};
  prstm_thread_stats stats;
  ctx.quiesce = quiesce;
  ctx.stats = &stats;
  ctx.locks = calloc((size_t)ctx.nlocks, sizeof *ctx.locks);
  if (!ctx.locks) {
    snprintf(err, errlen, "cannot allocate %llu locks for the serial replay", (unsigned long long)ctx.nlocks);
    return PRSTM_ENOMEM;
  }
  v->cpu_worker(&ctx, 0);
  free(ctx.locks);
  return 0;
}
