/* backend_cpu.c: the CPU backend: pthreads running the workload's shared worker over a batch, and a stream's units run one at a time on a working table. */
#define _GNU_SOURCE
#include "backend.h"
#include "delta.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watchdog.h"

/* Every thread waits at a gate until all exist, because a worker's block
 * and the termination count assume the full thread set; if one cannot be
 * created the others are sent home before touching the table. On the way
 * out each thread counts itself, and the last one wakes the watcher, which
 * would otherwise sleep out its pause (up to WATCHDOG_LAST_PAUSE_NS) past
 * the run's end. */
typedef struct cpu_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state; /* 0 wait, 1 run, 2 cancel */
  pthread_cond_t done_cv;
  uint32_t started, finished; /* threads created, and those whose worker returned */
} cpu_gate;

typedef struct cpu_thread_arg {
  const prstm_exec_ctx *ctx;
  prstm_cpu_worker_fn worker;
  cpu_gate *gate;
  uint32_t rank;
  double finished_at; /* engine_now() when its walk ended; read after the join */
} cpu_thread_arg;

static void *cpu_thread_main(void *p) {
  cpu_thread_arg *a = p;
  pthread_mutex_lock(&a->gate->mu);
  while (a->gate->state == 0) pthread_cond_wait(&a->gate->cv, &a->gate->mu);
  int run = a->gate->state == 1;
  pthread_mutex_unlock(&a->gate->mu);
  if (run) a->worker(a->ctx, a->rank);
  a->finished_at = engine_now();
  pthread_mutex_lock(&a->gate->mu);
  if (++a->gate->finished == a->gate->started) pthread_cond_signal(&a->gate->done_cv);
  pthread_mutex_unlock(&a->gate->mu);
  return NULL;
}

/* The watcher's pause: pause_ns, or less where the last thread finishes
 * first. */
static void cpu_gate_pause(cpu_gate *g, long pause_ns) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += pause_ns;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&g->mu);
  if (g->finished < g->started) pthread_cond_timedwait(&g->done_cv, &g->mu, &until);
  pthread_mutex_unlock(&g->mu);
}

static void cpu_gate_open(cpu_gate *g, int state) {
  pthread_mutex_lock(&g->mu);
  g->state = state;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static uint32_t cpu_threads(const prstm_engine *e) {
  if (e->opt.threads) return e->opt.threads;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (uint32_t)cores : 1;
}

uint32_t prstm_cpu_threads_max(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t most = (uint64_t)(cores > 0 ? cores : 1) * PRSTM_POLICY_CPU_THREADS_PER_CORE_MAX;
  if (most < PRSTM_POLICY_CPU_THREADS_MIN_MAX) most = PRSTM_POLICY_CPU_THREADS_MIN_MAX;
  return most > PRSTM_MAX_THREADS ? PRSTM_MAX_THREADS : (uint32_t)most;
}

int backend_cpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                    unsigned flags) {
  return backend_cpu_run_on_locks(e, b, v, res, flags, NULL);
}

/* The lock array of the words an engine holds (all, except a unit of a
 * partitioned state), zeroed. */
static uint64_t *cpu_lock_array(const prstm_engine *e, uint64_t *nlocks) {
  uint64_t lo = 0;
  const uint64_t held_lo = e->unit_held_hi ? e->unit_held_lo : 0;
  const uint64_t held_n = e->unit_held_hi ? e->unit_held_hi - e->unit_held_lo : e->nwords;
  *nlocks = engine_held_locks(held_lo, held_n, e->opt.lock_coverage, &lo);
  return engine_lock_array(engine_lock_array_words(e->wl, *nlocks));
}

int backend_cpu_run_on_locks(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                             unsigned flags, uint64_t *locks) {
  uint32_t threads = cpu_threads(e);
  if (threads > prstm_cpu_threads_max())
    return engine_fail(e, PRSTM_EINVAL, "threads: %u CPU threads; at most %u on this machine (64 a core)", threads,
                       prstm_cpu_threads_max());
  prstm_exec_ctx ctx;
  engine_ctx_fill_common(e, b, threads, &ctx);
  if (flags & ENGINE_RUN_KEEP_POSTPONED) ctx.semantic |= CMP_SEMANTIC_KEEP_POSTPONED;
  ctx.words = e->words;
  txtable_view_of(b, &ctx.table);
  uint64_t quiesce[STM_Q_WORDS] = {0};
  ctx.quiesce = quiesce;
  uint64_t nlocks = 0;
  uint64_t *own_locks = locks ? NULL : cpu_lock_array(e, &nlocks);
  engine_ctx_set_held_locks(&ctx, e->wl, locks ? locks : own_locks);
  ctx.stats = calloc(threads, sizeof *ctx.stats);
  pthread_t *tids = calloc(threads, sizeof *tids);
  cpu_thread_arg *args = calloc(threads, sizeof *args);
  int rc = 0;
  if (!ctx.locks || !ctx.stats || !tids || !args) {
    rc = engine_fail(e, PRSTM_ENOMEM, "cannot allocate %llu locks for %u threads", (unsigned long long)nlocks, threads);
    goto out;
  }
  cpu_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, PTHREAD_COND_INITIALIZER, 0, 0};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  uint32_t created = 0;
  for (; created < threads; created++) {
    args[created] = (cpu_thread_arg){&ctx, v->cpu_worker, &gate, created, 0.0};
    int err = pthread_create(&tids[created], &attr, cpu_thread_main, &args[created]);
    if (err) {
      rc = engine_fail(e, PRSTM_ETHREAD, "cannot create CPU thread %u of %u: %s", created + 1, threads, strerror(err));
      break;
    }
  }
  pthread_attr_destroy(&attr);
  pthread_mutex_lock(&gate.mu);
  gate.started = created;
  pthread_mutex_unlock(&gate.mu);
  ENGINE_RANGE_PUSH("execute");
  double t0 = engine_now();
  cpu_gate_open(&gate, rc ? 2 : 1);
  engine_progress_clock progress_clock = {t0, t0};
  uint64_t seen[STM_Q_WORDS] = {0};
  watchdog dog;
  watchdog_start(&dog, e->opt.watchdog_s, t0);
  if (!rc) {
    /* Watch the run: progress is published by the workers in batches. */
    long pause_ns = WATCHDOG_FIRST_PAUSE_NS;
    while (__atomic_load_n(&quiesce[STM_Q_FINISHED], __ATOMIC_ACQUIRE) < threads) {
      cpu_gate_pause(&gate, e->unit_deadline_armed ? WATCHDOG_FIRST_PAUSE_NS : pause_ns);
      pause_ns = watchdog_next_pause_ns(pause_ns);
      if (e->unit_deadline_armed && !e->unit_stopped) {
        const uint64_t stop_at = __atomic_load_n(&e->unit_stop_at_ns, __ATOMIC_ACQUIRE);
        /* A run whose threads all finished while the watcher slept was not
         * stopped, even past its deadline: its caller counts stops. */
        if (stop_at && engine_now() * 1e9 >= (double)stop_at &&
            __atomic_load_n(&quiesce[STM_Q_FINISHED], __ATOMIC_ACQUIRE) < threads) {
          e->unit_stopped = 1;
          __atomic_store_n(&quiesce[STM_Q_STOP], 1, __ATOMIC_RELEASE);
        }
      }
      seen[STM_Q_COMMITTED] = __atomic_load_n(&quiesce[STM_Q_COMMITTED], __ATOMIC_RELAXED);
      seen[STM_Q_FAILED] = __atomic_load_n(&quiesce[STM_Q_FAILED], __ATOMIC_RELAXED);
      seen[STM_Q_ABANDONED] = __atomic_load_n(&quiesce[STM_Q_ABANDONED], __ATOMIC_RELAXED);
      if (!(flags & ENGINE_RUN_QUIET)) engine_progress_report(e, b, seen, &progress_clock, 0);
      if (watchdog_tick(&dog, seen[STM_Q_COMMITTED] + seen[STM_Q_FAILED], engine_now()))
        __atomic_store_n(&quiesce[STM_Q_STOP], 1, __ATOMIC_RELEASE);
    }
  }
  for (uint32_t i = 0; i < created; i++) pthread_join(tids[i], NULL);
  /* The run ends when its last thread does, not when the watcher wakes:
   * measured that way, a short run on many cores was overstated. */
  double end = t0;
  for (uint32_t i = 0; i < created; i++)
    if (args[i].finished_at > end) end = args[i].finished_at;
  res->execute_s = (created ? end : engine_now()) - t0;
  ENGINE_RANGE_POP();
  if (rc) goto out;
  for (uint32_t i = 0; i < threads; i++) engine_results_add_stats(res, &ctx.stats[i]);
  e->last_run_sequences = quiesce[STM_Q_SEQUENCE];
  if (dog.stalled) {
    rc = engine_watchdog_error(e, b);
    goto out;
  }
  /* Every worker published its last counts before it finished. */
  if (!(flags & ENGINE_RUN_QUIET)) engine_progress_report(e, b, quiesce, &progress_clock, 1);
  res->threads = threads;
  res->backend = PRSTM_BACKEND_CPU;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(res->device, sizeof res->device, "CPU, %u threads on %ld cores", threads, cores);
out:
  free(own_locks);
  free(ctx.stats);
  free(tids);
  free(args);
  return rc;
}

/* A whole batch: on the delta path where its words are hot and the batch
 * order commits every row (engine/delta.h), else through the STM threads. */
static int cpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  cmp_delta_plan plan;
  engine_contention hot;
  memset(&hot, 0, sizeof hot);
  if (e->opt.deltas != PRSTM_DELTAS_OFF) {
    engine_contention_sample(e, b, &hot);
    res->hot_estimate = engine_contention_conflicts(&hot, cpu_threads(e));
  }
  double walk_s = 0; /* a refused walk's time counts as execution */
  if (engine_delta_want(e, b, PRSTM_BACKEND_CPU, cpu_threads(e), &hot, &plan)) {
    double t0 = engine_now();
    unsigned walkers = cpu_threads(e);
    int applied = engine_delta_run_cpu(e, b, &plan, &walkers);
    walk_s = engine_now() - t0;
    if (applied) {
      res->execute_s = walk_s;
      res->threads = walkers;
      res->backend = PRSTM_BACKEND_CPU;
      if (walkers == 1)
        snprintf(res->device, sizeof res->device, "CPU, delta path on one thread");
      else
        snprintf(res->device, sizeof res->device, "CPU, delta path on %u threads", walkers);
      engine_delta_results(e, b, res);
      return 0;
    }
  }
  if (e->deltas_only) {
    e->deltas_declined = 1;
    return 0;
  }
  int rc = backend_cpu_run(e, b, v, res, 0);
  res->execute_s += walk_s;
  return rc;
}

/* ---- streams: one unit at a time, on a working table ---- */

/* A unit runs to its end in unit_launch, on the engine's own words; its
 * outcomes wait in the working table until unit_wait hands them over. */
struct backend_stream {
  const prstm_worker_variant *v;
  backend_stream_shape shape;
  prstm_batch work; /* the working table the threads run on */
  uint64_t *row_id; /* the carried rows' ids */
  uint64_t row_id_cap;
  prstm_results last; /* the last unit's counts */
  uint64_t last_sequences;
  uint64_t aborts, postponements, sweeps;
  /* Its units' locks, kept from its first unit to its end as a GPU stream
   * keeps its own: every unit frees every lock it took and ends its adds,
   * so one zeroed array serves them all. Taken at the first unit, so that
   * a stream that runs none (the host's unit of a partitioned state whose
   * rows all stay on their units) takes no memory for them. */
  uint64_t *locks;
};

static int cpu_stream_open(prstm_engine *e, const prstm_worker_variant *v, const backend_stream_shape *shape,
                           backend_stream **out, backend_stream_info *info) {
  backend_stream *s = calloc(1, sizeof *s);
  if (!s) return engine_fail(e, PRSTM_ENOMEM, "cannot allocate a CPU stream");
  s->v = v;
  s->shape = *shape;
  s->work.wl = e->wl;
  /* The CPU has no device memory to fit: a unit takes what it is given. */
  info->unit_rows = shape->limit_rows ? shape->limit_rows : UINT64_MAX;
  info->slot_rows = shape->limit_rows ? 2 * shape->limit_rows : UINT64_MAX;
  info->threads = cpu_threads(e);
  info->gpu_bytes = 0;
  snprintf(info->device, sizeof info->device, "CPU, %u threads on %ld cores", info->threads,
           sysconf(_SC_NPROCESSORS_ONLN));
  *out = s;
  return 0;
}

static int cpu_unit_would_grow(const backend_stream *s, unsigned slot, const backend_unit *u) {
  (void)s;
  (void)slot;
  (void)u;
  return 0; /* growing host memory waits for nothing */
}

/* The working table of n rows: every column the threads read or write. */
static int cpu_unit_reserve(prstm_engine *e, backend_stream *s, unsigned slot, const backend_unit *u,
                            backend_staging *staging) {
  (void)slot;
  prstm_batch *w = &s->work;
  const uint32_t ncols = s->shape.ncols;
  if (w->cap < u->n || w->ncols != ncols) {
    uint64_t cap = w->cap ? w->cap : 1024;
    while (cap < u->n) cap *= 2;
    free(w->type);
    free(w->status);
    free(w->args);
    free(w->result);
    free(w->seq);
    free(w->read_hash);
    w->type = malloc((size_t)cap);
    w->status = malloc((size_t)cap);
    w->args = ncols ? malloc((size_t)cap * ncols * sizeof(uint64_t)) : NULL;
    w->result = s->shape.results ? malloc((size_t)cap * sizeof *w->result) : NULL;
    w->seq = s->shape.verify ? malloc((size_t)cap * sizeof *w->seq) : NULL;
    w->read_hash = s->shape.verify ? malloc((size_t)cap * sizeof *w->read_hash) : NULL;
    w->cap = cap;
    w->ncols = ncols;
    if (!w->type || !w->status || (ncols && !w->args) || (s->shape.results && !w->result) ||
        (s->shape.verify && (!w->seq || !w->read_hash))) {
      w->cap = 0;
      return engine_fail(e, PRSTM_ENOMEM, "cannot allocate a working table of %llu transactions",
                         (unsigned long long)cap);
    }
  }
  if (u->carried > s->row_id_cap) {
    uint64_t *ids = realloc(s->row_id, (size_t)u->carried * sizeof *ids);
    if (!ids)
      return engine_fail(e, PRSTM_ENOMEM, "cannot keep %llu carried transactions", (unsigned long long)u->carried);
    s->row_id = ids;
    s->row_id_cap = u->carried;
  }
  staging->type = w->type;
  staging->args = w->args;
  staging->stride = w->cap;
  /* 32-bit columns where every value fits: half the bytes to fill. */
  staging->narrow_ok = 1;
  staging->row_id = s->row_id;
  return 0;
}

static int cpu_unit_launch(prstm_engine *e, backend_stream *s, unsigned slot, const backend_unit *u) {
  (void)slot;
  prstm_batch *w = &s->work;
  memset(w->status, 0, (size_t)u->n);
  if (w->result) memset(w->result, 0, (size_t)u->n * sizeof *w->result);
  if (w->seq) memset(w->seq, 0xff, (size_t)u->n * sizeof *w->seq);
  w->n = u->n;
  w->wide = !u->narrow_args;
  w->tag_mask = u->tag_mask;
  w->has_read_only = s->shape.results;
  w->row_base = u->row_base;
  w->ids_from = u->n - u->carried;
  w->row_id = s->row_id;
  memset(&s->last, 0, sizeof s->last);
  if (!s->locks) {
    uint64_t nlocks = 0;
    s->locks = cpu_lock_array(e, &nlocks);
    if (!s->locks)
      return engine_fail(e, PRSTM_ENOMEM,
                         "cannot allocate %llu locks (%.1f GiB) for a CPU stream: use a larger "
                         "lock_coverage",
                         (unsigned long long)nlocks,
                         8.0 * (double)engine_lock_array_words(e->wl, nlocks) / (1024.0 * 1024.0 * 1024.0));
  }
  int rc = backend_cpu_run_on_locks(e, w, s->v, &s->last, u->flags, s->locks);
  if (rc) return rc;
  s->last_sequences = e->last_run_sequences;
  s->aborts += s->last.aborts;
  s->postponements += s->last.postponements;
  s->sweeps += s->last.sweeps;
  return 0;
}

static int cpu_unit_wait(prstm_engine *e, backend_stream *s, unsigned slot, backend_outcomes *out, double *copy_s,
                         double *execute_s) {
  (void)e;
  (void)slot;
  (void)copy_s;
  memset(out, 0, sizeof *out);
  out->status = s->work.status;
  out->result = s->work.result;
  out->seq = s->work.seq;
  out->read_hash = s->work.read_hash;
  out->q[STM_Q_COMMITTED] = s->last.committed;
  out->q[STM_Q_FAILED] = s->last.failed;
  out->q[STM_Q_ABANDONED] = s->last.abandoned;
  out->q[STM_Q_SEQUENCE] = s->last_sequences;
  *execute_s += s->last.execute_s;
  return 0;
}

static int cpu_stream_finish(prstm_engine *e, backend_stream *s, uint64_t *aborts, uint64_t *postponements,
                             uint64_t *sweeps) {
  (void)e; /* the units ran on the engine's own words */
  *aborts += s->aborts;
  *postponements += s->postponements;
  *sweeps += s->sweeps;
  return 0;
}

static void cpu_stream_free(backend_stream *s) {
  if (!s) return;
  free(s->work.type);
  free(s->work.status);
  free(s->work.args);
  free(s->work.result);
  free(s->work.seq);
  free(s->work.read_hash);
  free(s->row_id);
  free(s->locks);
  free(s);
}

const backend_ops backend_cpu_ops = {
    .id = PRSTM_BACKEND_CPU,
    .run = cpu_run,
    .stream_slots = 1,
    .takes_direct_rows = 0,
    .staging_is_copy = 1,
    .stream_open = cpu_stream_open,
    .unit_would_grow = cpu_unit_would_grow,
    .unit_reserve = cpu_unit_reserve,
    .unit_launch = cpu_unit_launch,
    .unit_wait = cpu_unit_wait,
    .stream_finish = cpu_stream_finish,
    .stream_free = cpu_stream_free,
};

void port_host_yield(void) { sched_yield(); }

uint64_t port_host_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
