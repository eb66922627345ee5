/* unit.c: the units of a run spread over several executors: each an engine of its own with a replica and a backend stream, parts staged, run, and kept. */
#define _GNU_SOURCE
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int unit_rowlist_push(prstm_engine *e, unit_rowlist *l, uint64_t row) {
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? 2 * l->cap : 4096;
    uint64_t *r = realloc(l->row, (size_t)cap * sizeof *r);
    if (!r) return engine_fail(e, PRSTM_ENOMEM, "cannot keep %llu carried rows", (unsigned long long)cap);
    l->row = r;
    l->cap = cap;
  }
  l->row[l->n++] = row;
  return 0;
}

int unit_reserve_rows(prstm_engine *e, unit *u, uint64_t n) {
  if (n <= u->cap) return 0;
  uint64_t *r = realloc(u->rows, (size_t)n * sizeof *r);
  if (!r) return engine_fail(e, PRSTM_ENOMEM, "cannot plan a part of %llu rows", (unsigned long long)n);
  u->rows = r;
  u->cap = n;
  return 0;
}

const char *unit_name(const unit *u) { return u->is_gpu ? "GPU unit" : "CPU unit"; }

int unit_open(prstm_engine *e, unit *u, const unit_shape *shape, prstm_backend backend, uint32_t threads, int device,
              uint64_t held_lo, uint64_t held_hi) {
  prstm_options o = e->opt;
  o.backend = backend;
  o.threads = threads;
  o.chunk_rows = 0;
  u->b = shape->b;
  int rc = prstm_engine_create(&u->e, e->wl, &o);
  if (rc) return engine_fail(e, rc, "cannot create a unit: %s", u->e ? u->e->err : prstm_strerror(rc));
  u->e->unit_device = device;
  u->borrowed = held_hi != 0;
  if (u->borrowed) {
    /* No replica: a GPU unit copies its range up from e's words, and a CPU
     * unit runs on them in place, beside the other units' ranges. */
    u->e->words = e->words;
    u->e->unit_held_lo = held_lo;
    u->e->unit_held_hi = held_hi;
  } else {
    u->e->words = malloc((size_t)e->nwords * sizeof *u->e->words);
  }
  if (shape->span_only) {
    u->e->unit_span = malloc(STM_SPAN_WORDS * sizeof *u->e->unit_span);
    if (u->e->unit_span) unit_clear_footprint(u, 0);
  } else {
    u->e->unit_read_marks = calloc((size_t)shape->nlocks, 1);
    u->e->unit_write_marks = calloc((size_t)shape->nlocks, 1);
  }
  if (!u->e->words || !(u->e->unit_span || (u->e->unit_read_marks && u->e->unit_write_marks)))
    return engine_fail(e, PRSTM_ENOMEM, "cannot allocate a unit's replica of %llu words",
                       (unsigned long long)e->nwords);
  if (!u->borrowed) memcpy(u->e->words, e->words, (size_t)e->nwords * sizeof *u->e->words);
  u->e->nwords = e->nwords;
  u->ops = backend_of(backend);
  u->is_gpu = backend == PRSTM_BACKEND_GPU;
  backend_stream_shape st;
  memset(&st, 0, sizeof st);
  st.ncols = shape->b->ncols;
  st.results = shape->results;
  st.verify = e->opt.verify;
  st.limit_rows = shape->round_rows;
  st.first_rows = shape->round_rows;
  st.max_unit_rows = shape->max_unit_rows;
  rc = u->ops->stream_open(u->e, shape->v, &st, &u->bs, &u->info);
  if (rc) return engine_fail(e, rc, "%s: %s", unit_name(u), u->e->err);
  return 0;
}

void unit_close(unit *u) {
  if (u->bs) u->ops->stream_free(u->bs);
  u->bs = NULL;
  if (u->e) {
    free(u->e->unit_read_marks);
    free(u->e->unit_write_marks);
    free(u->e->unit_span);
    u->e->unit_read_marks = u->e->unit_write_marks = NULL;
    u->e->unit_span = NULL;
    if (u->borrowed) u->e->words = NULL;
    prstm_engine_destroy(u->e);
  }
  u->e = NULL;
  free(u->rows);
  u->rows = NULL;
}

/* Copies a part's rows into its staging, on every core for a large part:
 * a run of consecutive batch rows column by column, any other row by
 * itself. */
typedef struct fill_job {
  const prstm_batch *b;
  const uint64_t *rows;
  const backend_staging *st;
  txtable_view view;
} fill_job;

static void fill_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  const fill_job *j = arg;
  const prstm_batch *b = j->b;
  const backend_staging *st = j->st;
  for (uint64_t k = from; k < to;) {
    const uint64_t r = j->rows[k];
    uint64_t run = 1;
    while (k + run < to && j->rows[k + run] == r + run) run++;
    if (run == 1) {
      /* A row alone (a routed part's rows are scattered over the batch):
       * word by word, without a call per column. */
      st->type[k] = b->type[r];
      for (uint32_t c = 0; c < b->ncols; c++) st->args[(uint64_t)c * st->stride + k] = txtable_get(b, c, r);
      st->row_id[k] = txtable_row_number(&j->view, r);
      k++;
      continue;
    }
    memcpy(st->type + k, b->type + r, (size_t)run);
    for (uint32_t c = 0; c < b->ncols; c++) {
      uint64_t *dst = st->args + (uint64_t)c * st->stride + k;
      if (b->wide) {
        memcpy(dst, txtable_arg_at(b, c, r), (size_t)run * sizeof *dst);
      } else {
        const uint32_t *src = txtable_arg_at(b, c, r);
        for (uint64_t i = 0; i < run; i++) dst[i] = src[i];
      }
    }
    for (uint64_t i = 0; i < run; i++) st->row_id[k + i] = txtable_row_number(&j->view, r + i);
    k += run;
  }
}

int unit_stage(unit *u) {
  const prstm_batch *b = u->b;
  backend_unit *bu = &u->bu;
  memset(bu, 0, sizeof *bu);
  bu->n = bu->staged = bu->carried = u->n;
  bu->tag_mask = b->tag_mask;
  bu->results = b->has_read_only;
  bu->flags = ENGINE_RUN_QUIET | (u->final ? 0u : ENGINE_RUN_KEEP_POSTPONED);
  backend_staging st;
  const double t0 = engine_now();
  int rc = u->ops->unit_reserve(u->e, u->bs, 0, bu, &st);
  if (rc) return rc;
  fill_job job = {b, u->rows, &st, {0}};
  txtable_view_of((prstm_batch *)b, &job.view);
  engine_parallel_for(u->n, u->fill_parts ? engine_parallel_parts(u->n, PRSTM_POLICY_HETERO_ROWS_PER_PART) : 1,
                      fill_part, &job);
  u->busy_s = engine_now() - t0;
  return 0;
}

int unit_start(unit *u) {
  const double t0 = engine_now();
  int rc = u->ops->unit_launch(u->e, u->bs, 0, &u->bu);
  u->busy_s += engine_now() - t0;
  return rc;
}

int unit_launch(unit *u) {
  int rc = unit_stage(u);
  return rc ? rc : unit_start(u);
}

void *unit_launch_thread(void *p) {
  unit *u = p;
  u->rc = unit_launch(u);
  return NULL;
}

int unit_wait(prstm_engine *e, unit *u) {
  double copy_s = 0, execute_s = 0;
  int rc = u->ops->unit_wait(u->e, u->bs, 0, &u->out, &copy_s, &execute_s);
  if (rc) return engine_fail(e, rc, "%s: %s", unit_name(u), u->e->err);
  u->copy_s = copy_s;
  u->execute_s = execute_s;
  if (u->is_gpu) u->busy_s = copy_s + execute_s;
  return 0;
}

uint64_t unit_pending(const unit *u) {
  uint64_t pending = 0;
  for (uint64_t k = 0; k < u->n; k++) pending += u->out.status[k] == 0;
  return pending;
}

void unit_clear_footprint(unit *u, uint64_t nlocks) {
  if (u->e->unit_span) {
    u->e->unit_span[STM_SPAN_LO] = u->e->unit_span[STM_SPAN_WRITE_LO] = STM_SPAN_EMPTY_LO;
    u->e->unit_span[STM_SPAN_HI] = u->e->unit_span[STM_SPAN_WRITE_HI] = 0;
    return;
  }
  memset(u->e->unit_read_marks, 0, (size_t)nlocks);
  memset(u->e->unit_write_marks, 0, (size_t)nlocks);
}

/* The status byte of a row sent away: failed, for a reason the host
 * never keeps. */
#define UNIT_AWAY txtable_pack_status(TXTABLE_FAILED, TXTABLE_REASON_AWAY)

/* Writes a kept part's outcomes into the batch, each row by itself. */
typedef struct keep_job {
  prstm_batch *b;
  const unit *u;
  uint64_t seq_base;
  uint64_t counts[ENGINE_MAX_PARTS][5]; /* by status, and sent away */
} keep_job;

static void keep_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  keep_job *j = arg;
  prstm_batch *b = j->b;
  const backend_outcomes *o = &j->u->out;
  uint64_t *count = j->counts[part];
  for (uint64_t k = from; k < to; k++) {
    const uint8_t st = o->status[k];
    if (st == UNIT_AWAY) {
      count[4]++;
      continue;
    }
    count[st & TXTABLE_STATUS_MASK]++;
    if (st == 0) continue;
    const uint64_t r = j->u->rows[k];
    b->status[r] = st;
    if (b->result && o->result) b->result[r] = o->result[k];
    if (b->seq && o->seq) b->seq[r] = o->seq[k] == UINT64_MAX ? UINT64_MAX : j->seq_base + o->seq[k];
    if (b->read_hash && o->read_hash) b->read_hash[r] = o->read_hash[k];
  }
}

int unit_keep(prstm_engine *e, prstm_batch *b, const unit *u, uint64_t seq_base, prstm_results *res, uint64_t *decided,
              unit_rowlist *carry, unit_rowlist *away) {
  keep_job *job = calloc(1, sizeof *job);
  if (!job) return engine_fail(e, PRSTM_ENOMEM, "cannot keep a part's outcomes");
  job->b = b;
  job->u = u;
  job->seq_base = seq_base;
  const unsigned parts = engine_parallel_parts(u->n, PRSTM_POLICY_HETERO_ROWS_PER_PART);
  engine_parallel_for(u->n, parts, keep_part, job);
  uint64_t c[5] = {0, 0, 0, 0, 0};
  for (unsigned p = 0; p < parts; p++)
    for (unsigned s = 0; s < 5; s++) c[s] += job->counts[p][s];
  free(job);
  res->committed += c[TXTABLE_COMMITTED];
  res->failed += c[TXTABLE_FAILED];
  res->abandoned += c[TXTABLE_ABANDONED];
  *decided = c[TXTABLE_COMMITTED] + c[TXTABLE_FAILED] + c[TXTABLE_ABANDONED];
  /* Pending is status 0 with reason 0: a zero byte. */
  const uint8_t *st = u->out.status, *p = st, *end = st + u->n;
  while ((p = memchr(p, 0, (size_t)(end - p))) != NULL) {
    int rc = unit_rowlist_push(e, carry, u->rows[p - st]);
    if (rc) return rc;
    p++;
  }
  if (!c[4]) return 0;
  if (!away)
    return engine_fail(e, PRSTM_EINVAL, "%s sent %llu rows away, and no unit takes them", unit_name(u),
                       (unsigned long long)c[4]);
  for (p = st; (p = memchr(p, UNIT_AWAY, (size_t)(end - p))) != NULL; p++) {
    int rc = unit_rowlist_push(e, away, u->rows[p - st]);
    if (rc) return rc;
  }
  return 0;
}
