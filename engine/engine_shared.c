/* engine_shared.c: what every part of the engine uses: errors and the clock, the execution context, progress reports, the choice of backend and worker variant, and the serial replay. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

double engine_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int engine_fail(prstm_engine *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, sizeof e->err, fmt, ap);
  va_end(ap);
  return code;
}

/* Fills the parts of the execution context that both backends share. */
void engine_ctx_fill_common(const prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->nwords = e->nwords;
  ctx->held_lo = e->unit_held_hi ? e->unit_held_lo : 0;
  ctx->held_n = e->unit_held_hi ? e->unit_held_hi - e->unit_held_lo : e->nwords;
  ctx->lock_coverage = e->opt.lock_coverage;
  ctx->nlocks = (e->nwords + e->opt.lock_coverage - 1) / e->opt.lock_coverage;
  ctx->table.n = b->n;
  ctx->table.ncols = b->ncols;
  ctx->table.has_results = (uint32_t)b->has_read_only;
  for (unsigned t = 0; t < e->wl->ntypes; t++) ctx->type_tag[t] = (uint8_t)e->wl->types[t].tag;
  ctx->tag_mask = b->tag_mask;
  /* A whole run whose snapshot rows the host ran: its threads leave them alone. */
  if (e->run_snapshot_types) {
    for (unsigned t = 0; t < e->wl->ntypes && t < 64; t++)
      if ((e->run_snapshot_types >> t) & 1u) ctx->type_tag[t] = CMP_TAG_NONE;
    ctx->tag_mask |= CMP_TAG_MASK_NONE;
  }
  ctx->nthreads = threads;
  ctx->semantic = (uint32_t)e->opt.semantic | (e->wl->uses_add != PRSTM_ADDS_NONE ? STM_SEMANTIC_ADDS : 0u);
  ctx->retry_limit = e->opt.retry_limit;
  /* Host memory: a GPU unit points its context at device marks instead. */
  ctx->read_marks = e->unit_read_marks;
  ctx->write_marks = e->unit_write_marks;
  ctx->span = e->unit_span;
  engine_ctx_set_lone(ctx);
}

/* Every backend runs a state of its own: the engine's words, or a unit's
 * replica, which nothing else reads or writes while its threads run. So a
 * run of one thread is alone on it. The serial replay of --verify never
 * sets it: it checks the runs with the full protocol. */
void engine_ctx_set_lone(prstm_exec_ctx *ctx) {
  ctx->semantic = (ctx->semantic & ~STM_SEMANTIC_LONE) | (ctx->nthreads == 1 ? STM_SEMANTIC_LONE : 0u);
}

void engine_progress_report(prstm_engine *e, const prstm_batch *b, const uint64_t *q, engine_progress_clock *clock,
                            int finished) {
  if (!e->progress_fn) return;
  double now = engine_now();
  if (!finished && now - clock->last < PRSTM_PROGRESS_INTERVAL_MS / 1000.0) return;
  clock->last = now;
  prstm_progress p;
  memset(&p, 0, sizeof p);
  p.transactions = b->n;
  /* Each word only grows, so counts built from them never decrease from one
   * report to the next, whatever order they were read in. */
  /* With the rows of snapshot types that the host decided before the run. */
  p.committed = q[STM_Q_COMMITTED] + e->snapshot_committed;
  p.decided = q[STM_Q_COMMITTED] + q[STM_Q_FAILED] + e->snapshot_committed + e->snapshot_failed;
  p.abandoned = q[STM_Q_ABANDONED] + e->snapshot_abandoned;
  uint64_t final = p.decided + p.abandoned;
  p.pending = final < b->n ? b->n - final : 0;
  p.elapsed_s = now - clock->start;
  p.finished = finished;
  e->progress_fn(&p, e->progress_user);
}

void engine_results_add_stats(prstm_results *res, const stm_thread_stats *st) {
  res->committed += st->committed;
  res->aborts += st->aborts;
  res->postponements += st->postponements;
  res->failed += st->failed;
  res->abandoned += st->abandoned;
  res->sweeps += st->sweeps;
}

const prstm_worker_variant *engine_pick_variant(const prstm_workload *wl, uint32_t ncols) {
  for (unsigned i = 0; i < wl->nvariants; i++)
    if (wl->variants[i].max_columns >= ncols) return &wl->variants[i];
  return NULL;
}

/* engine_parallel_for: the calling thread takes the first part and each
 * other part gets a thread of its own; a thread that cannot be created
 * leaves its part to the caller, so the work is always done. */
typedef struct engine_part {
  engine_part_fn fn;
  void *arg;
  unsigned index;
  uint64_t from, to;
} engine_part;

static void *engine_part_main(void *p) {
  const engine_part *part = p;
  part->fn(part->arg, part->index, part->from, part->to);
  return NULL;
}

unsigned engine_parallel_parts(uint64_t n, uint64_t min_per_part) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t parts = cores < 1 ? 1 : (uint64_t)cores;
  if (parts > ENGINE_MAX_PARTS) parts = ENGINE_MAX_PARTS;
  if (min_per_part && n / min_per_part < parts) parts = n / min_per_part;
  return parts < 1 ? 1u : (unsigned)parts;
}

void engine_parallel_for(uint64_t n, unsigned parts, engine_part_fn fn, void *arg) {
  if (parts < 1) parts = 1;
  if (parts > ENGINE_MAX_PARTS) parts = ENGINE_MAX_PARTS;
  engine_part jobs[ENGINE_MAX_PARTS];
  pthread_t tids[ENGINE_MAX_PARTS];
  int started[ENGINE_MAX_PARTS] = {0};
  for (unsigned i = 0; i < parts; i++) {
    jobs[i] = (engine_part){fn, arg, i, n * i / parts, n * (i + 1) / parts};
    if (i > 0) started[i] = pthread_create(&tids[i], NULL, engine_part_main, &jobs[i]) == 0;
  }
  engine_part_main(&jobs[0]);
  for (unsigned i = 1; i < parts; i++) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      engine_part_main(&jobs[i]);
  }
}

/* engine_parallel_copy: each part copies its range of the pieces' bytes
 * (engine_copy_range). */
typedef struct engine_copy_list {
  const engine_copy *pieces;
  size_t npieces;
} engine_copy_list;

/* Narrows m values of s into d and returns the OR of their high halves,
 * which the caller tests once: the loop stays a plain narrowing copy that
 * the compiler vectorises. */
static uint64_t engine_narrow_stretch(uint32_t *d, const uint64_t *s, uint64_t m) {
  uint64_t high = 0;
  for (uint64_t k = 0; k < m; k++) {
    d[k] = (uint32_t)s[k];
    high |= s[k] >> 32;
  }
  return high;
}

/* Values [k0, k1) of a narrowing piece (engine_copy's wide); several parts
 * may find a wide value, and each stores the same 1. */
static void engine_narrow_values(const engine_copy *c, uint64_t k0, uint64_t k1) {
  uint32_t *d = (uint32_t *)c->dst;
  if (!c->src) {
    memset(d + k0, 0, (size_t)(k1 - k0) * sizeof *d);
    return;
  }
  if (engine_narrow_stretch(d + k0, (const uint64_t *)c->src + k0, k1 - k0))
    __atomic_store_n(c->wide, 1, __ATOMIC_RELAXED);
}

/* Values [k0, k1) of a widening piece (engine_copy's widen). */
static void engine_widen_values(const engine_copy *c, uint64_t k0, uint64_t k1) {
  uint64_t *d = (uint64_t *)c->dst;
  const uint32_t *s = (const uint32_t *)c->src;
  if (!s) {
    memset(d + k0, 0, (size_t)(k1 - k0) * sizeof *d);
    return;
  }
  for (uint64_t k = k0; k < k1; k++) d[k] = s[k];
}

void engine_copy_range(const engine_copy *pieces, size_t npieces, uint64_t from, uint64_t to) {
  uint64_t at = 0;
  for (size_t j = 0; j < npieces && at < to; j++) {
    const engine_copy *c = &pieces[j];
    const uint64_t a = at, z = at + c->len;
    at = z;
    if (z <= from) continue;
    const uint64_t lo = a > from ? a : from, hi = z < to ? z : to;
    if (c->wide) {
      engine_narrow_values(c, (lo - a + 7) / 8, (hi - a + 7) / 8);
      continue;
    }
    if (c->widen) {
      engine_widen_values(c, (lo - a + 7) / 8, (hi - a + 7) / 8);
      continue;
    }
    char *d = (char *)c->dst + (lo - a);
    if (c->src)
      memcpy(d, (const char *)c->src + (lo - a), (size_t)(hi - lo));
    else
      memset(d, 0, (size_t)(hi - lo));
  }
}

static void engine_copy_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  const engine_copy_list *list = arg;
  (void)part;
  engine_copy_range(list->pieces, list->npieces, from, to);
}

void engine_parallel_copy(const engine_copy *pieces, size_t npieces, unsigned parts) {
  uint64_t total = 0;
  for (size_t j = 0; j < npieces; j++) total += pieces[j].len;
  engine_copy_list list = {pieces, npieces};
  engine_parallel_for(total, parts, engine_copy_part, &list);
}

/* engine_parallel_narrow: each part narrows its range of elements, one
 * column's stretch at a time, and records whether a high half was set. */
typedef struct engine_narrow_job {
  uint32_t *dst;
  const uint64_t *src;
  uint64_t stride, n, from;
  uint8_t wide[ENGINE_MAX_PARTS];
} engine_narrow_job;

static void engine_narrow_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  engine_narrow_job *j = arg;
  uint64_t high = 0;
  for (uint64_t i = j->from + from, end = j->from + to; i < end;) {
    const uint64_t col = i / j->n, row = i % j->n;
    const uint64_t m = j->n - row < end - i ? j->n - row : end - i;
    const uint64_t *s = j->src + col * j->stride + row;
    high |= engine_narrow_stretch(j->dst + (i - j->from), s, m);
    if (high) break;
    i += m;
  }
  j->wide[part] = high != 0;
}

int engine_parallel_narrow(uint32_t *dst, const uint64_t *src, uint64_t stride, uint64_t n, uint64_t from, uint64_t to,
                           unsigned parts) {
  if (to <= from || n == 0) return 1;
  if (parts < 1) parts = 1;
  if (parts > ENGINE_MAX_PARTS) parts = ENGINE_MAX_PARTS;
  engine_narrow_job job;
  memset(&job, 0, sizeof job);
  job.dst = dst;
  job.src = src;
  job.stride = stride;
  job.n = n;
  job.from = from;
  engine_parallel_for(to - from, parts, engine_narrow_part, &job);
  for (unsigned p = 0; p < parts; p++)
    if (job.wide[p]) return 0;
  return 1;
}

/* The lock array of a CPU run or replay (the locks, then the counters of
 * adds where the workload has them), zeroed before the clock starts. A
 * fresh calloc leaves the zeroing to first touch, and on a state of 10^8
 * words nearly every lock a transaction takes is then a page fault, which
 * the kernel serialises: the execution of a large state was bound by
 * faults, not by transactions, and did not scale with threads. A large
 * array gets huge pages where the kernel grants them (madvise) and is
 * zeroed by every core at once. */
#define ENGINE_LOCKS_PARALLEL_BYTES ((size_t)64 << 20)
#define ENGINE_HUGE_PAGE ((size_t)2 << 20)

#define ENGINE_FIRST_TOUCH_HUGE_BYTES ((size_t)8 << 20)

void *engine_alloc_first_touch(size_t bytes) {
  if (bytes < ENGINE_FIRST_TOUCH_HUGE_BYTES) return malloc(bytes ? bytes : 1);
  const size_t rounded = (bytes + ENGINE_HUGE_PAGE - 1) / ENGINE_HUGE_PAGE * ENGINE_HUGE_PAGE;
  void *p = NULL;
  if (rounded < bytes || posix_memalign(&p, ENGINE_HUGE_PAGE, rounded) != 0) return NULL;
  (void)madvise(p, rounded, MADV_HUGEPAGE); /* a hint: the memory works without it */
  return p;
}

/* Zeroes huge pages [from, to) of the range engine_prefault_zeroed was
 * given, the last one cut at its end. */
typedef struct engine_prefault_job {
  unsigned char *p;
  size_t bytes;
} engine_prefault_job;

static void engine_prefault_pages(void *arg, unsigned part, uint64_t from, uint64_t to) {
  const engine_prefault_job *j = arg;
  (void)part;
  const size_t lo = (size_t)from * ENGINE_HUGE_PAGE, hi = (size_t)to * ENGINE_HUGE_PAGE;
  memset(j->p + lo, 0, (hi < j->bytes ? hi : j->bytes) - lo);
}

void engine_prefault_zeroed(void *p, size_t bytes) {
  if (!p || bytes < ENGINE_FIRST_TOUCH_HUGE_BYTES) return;
  const size_t pages = (bytes + ENGINE_HUGE_PAGE - 1) / ENGINE_HUGE_PAGE;
  engine_prefault_job job = {p, bytes};
  engine_parallel_for(pages, engine_parallel_parts(pages, 1), engine_prefault_pages, &job);
}

void *engine_alloc_zeroed_pages(size_t bytes) {
  if (bytes < ENGINE_FIRST_TOUCH_HUGE_BYTES) return calloc(1, bytes ? bytes : 1);
  const size_t rounded = (bytes + ENGINE_HUGE_PAGE - 1) / ENGINE_HUGE_PAGE * ENGINE_HUGE_PAGE;
  if (rounded < bytes) return NULL;
  void *mem = engine_alloc_first_touch(rounded);
  engine_prefault_zeroed(mem, rounded);
  return mem;
}

uint64_t *engine_lock_array(uint64_t words) {
  const size_t bytes = (size_t)words * sizeof(uint64_t);
  if (bytes < ENGINE_LOCKS_PARALLEL_BYTES) return calloc((size_t)words, sizeof(uint64_t));
  return engine_alloc_zeroed_pages(bytes);
}

int engine_run_serial(const prstm_workload *wl, const prstm_worker_variant *v, prstm_word *words, uint64_t nwords,
                      uint64_t lock_coverage, uint64_t unchecked_types, txtable_view *table, char *err, size_t errlen) {
  prstm_exec_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.words = words;
  ctx.nwords = nwords;
  ctx.held_n = nwords;
  ctx.lock_coverage = lock_coverage;
  ctx.nlocks = (nwords + lock_coverage - 1) / lock_coverage;
  ctx.table = *table;
  for (unsigned t = 0; t < wl->ntypes; t++) ctx.type_tag[t] = (uint8_t)wl->types[t].tag;
  ctx.tag_mask = 0xffffu;
  ctx.unchecked_types = unchecked_types;
  ctx.nthreads = 1;
  ctx.semantic = PRSTM_SEMANTIC_RETRY;
  ctx.retry_limit = 0;
  uint64_t quiesce[STM_Q_WORDS] = {0};
  stm_thread_stats stats;
  ctx.quiesce = quiesce;
  ctx.stats = &stats;
  ctx.locks = engine_lock_array(ctx.nlocks);
  if (!ctx.locks) {
    snprintf(err, errlen, "cannot allocate %llu locks for the serial replay", (unsigned long long)ctx.nlocks);
    return PRSTM_ENOMEM;
  }
  v->cpu_worker(&ctx, 0);
  free(ctx.locks);
  return 0;
}
