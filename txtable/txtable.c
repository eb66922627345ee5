/* txtable.c: building the global transaction table in host memory: append, grow, presort, outcomes. */
#include "txtable.h"

#include "parallel.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Host memory for a batch's columns: from the batch's pinned allocator
 * where it was asked for and gives some, else ordinary. *pinned says which
 * it got; free_columns gives it back the same way, so that pinned memory
 * never reaches free(). */
static void *alloc_columns(const txtable_allocator *pinned_alloc, size_t bytes, int want_pinned, int *pinned) {
  *pinned = 0;
  if (bytes == 0) bytes = 1;
  if (want_pinned && pinned_alloc) {
    void *p = pinned_alloc->alloc(bytes);
    if (p) {
      *pinned = 1;
      return p;
    }
  }
  /* Generators and parsers write a batch's columns first, on every core. */
  return engine_alloc_first_touch(bytes);
}

static void free_columns(const txtable_allocator *pinned_alloc, void *p, int pinned) {
  if (!p) return;
  if (pinned)
    pinned_alloc->free(p);
  else
    free(p);
}

int txtable_create(prstm_batch **out, const prstm_workload *wl, const txtable_allocator *pinned) {
  if (!out || !wl) return PRSTM_EINVAL;
  prstm_batch *b = calloc(1, sizeof *b);
  if (!b) return PRSTM_ENOMEM;
  b->wl = wl;
  b->pinned_alloc = pinned;
  *out = b;
  return 0;
}

int prstm_batch_create(prstm_batch **out, const prstm_workload *wl) { return txtable_create(out, wl, NULL); }

int prstm_batch_pinned(const prstm_batch *b) { return b && b->pinned; }

void prstm_batch_destroy(prstm_batch *b) {
  if (!b) return;
  if (b->window) {
    free(b); /* its rows belong to the batch it opened on */
    return;
  }
  free_columns(b->pinned_alloc, b->type, b->pinned);
  free_columns(b->pinned_alloc, b->status, b->pinned);
  free_columns(b->pinned_alloc, b->args, b->pinned);
  free(b->result);
  free(b->seq);
  free(b->read_hash);
  free(b);
}

uint64_t prstm_batch_size(const prstm_batch *b) { return b ? b->n : 0; }
const prstm_workload *prstm_batch_workload(const prstm_batch *b) { return b ? b->wl : NULL; }

/* The three columns of a batch, all of one kind of memory. */
typedef struct batch_columns {
  void *args;
  uint8_t *type, *status;
  int pinned;
} batch_columns;

/* Allocates the columns, pinned where wanted and possible. When pinned
 * memory runs out partway (the argument columns are the largest and come
 * first), everything is given back and taken again from ordinary memory:
 * a batch's columns are all of one kind, and a batch is never refused for
 * want of pinned memory. */
static int alloc_batch_columns(const txtable_allocator *pa, batch_columns *c, uint64_t cap, uint32_t ncols,
                               unsigned width) {
  for (int attempt = 0; attempt < 2; attempt++) {
    const int want = attempt == 0 && pa != NULL;
    int got_args = 0, got_type = 0, got_status = 0;
    c->args = ncols ? alloc_columns(pa, (size_t)cap * ncols * width, want, &got_args) : NULL;
    c->type = alloc_columns(pa, (size_t)cap, want, &got_type);
    c->status = alloc_columns(pa, (size_t)cap, want, &got_status);
    const int complete = (!ncols || c->args) && c->type && c->status;
    const int one_kind = (!ncols || got_args == got_type) && got_type == got_status;
    if (complete && one_kind) {
      c->pinned = got_type;
      return 0;
    }
    free_columns(pa, c->args, got_args);
    free_columns(pa, c->type, got_type);
    free_columns(pa, c->status, got_status);
    if (!want) break; /* ordinary memory failed: nothing else to try */
  }
  return PRSTM_ENOMEM;
}

/* Re-strides the columns for a new capacity, column count or width (wide:
 * 64-bit values); columns are moved one by one because their stride
 * changes with the capacity. Old buffers are given back with the kind they
 * were taken as (b->pinned). */
static int txtable_reshape(prstm_batch *b, uint64_t cap, uint32_t ncols, int wide) {
  if (b->window) return PRSTM_ENOMEM;
  const unsigned width = wide ? 8u : 4u;
  if (ncols && cap > UINT64_MAX / width / ncols) return PRSTM_ENOMEM;
  batch_columns c;
  int rc = alloc_batch_columns(b->pinned_alloc, &c, cap, ncols, width);
  if (rc) return rc;
  /* Only the existing rows are written: rows from n on are filled by the
   * append that adds them, and nothing reads past n. A column the batch did
   * not have yet reads 0 for its existing rows, as appends write for the
   * columns a narrower row lacks. Zeroing the whole capacity instead touched
   * every page of it, twice the batch for a doubled capacity. */
  for (uint32_t col = 0; col < ncols; col++) {
    char *dst = (char *)c.args + (uint64_t)col * cap * width;
    if (col >= b->ncols) {
      memset(dst, 0, (size_t)b->n * width);
    } else if (wide == b->wide) {
      memcpy(dst, txtable_arg_at(b, col, 0), (size_t)b->n * width);
    } else {
      /* Widening (a batch never narrows): each value zero-extended. */
      const uint32_t *from = txtable_arg_at(b, col, 0);
      for (uint64_t r = 0; r < b->n; r++) ((uint64_t *)dst)[r] = from[r];
    }
  }
  if (b->n) {
    memcpy(c.type, b->type, (size_t)b->n);
    memcpy(c.status, b->status, (size_t)b->n);
  }
  free_columns(b->pinned_alloc, b->args, b->pinned);
  free_columns(b->pinned_alloc, b->type, b->pinned);
  free_columns(b->pinned_alloc, b->status, b->pinned);
  b->args = c.args;
  b->type = c.type;
  b->status = c.status;
  b->ncols = ncols;
  b->cap = cap;
  b->wide = wide;
  if (wide) b->wants_wide = 0;
  b->pinned = c.pinned;
  return 0;
}

int txtable_widen(prstm_batch *b) {
  if (b->wide) return 0;
  if (b->window) {
    b->wants_wide = 1;
    return PRSTM_ENOMEM;
  }
  return txtable_reshape(b, b->cap, b->ncols, 1);
}

int prstm_batch_reserve(prstm_batch *b, uint64_t rows, unsigned ncols) {
  if (!b || ncols > PRSTM_MAX_COLUMNS) return PRSTM_EINVAL;
  if (rows <= b->cap && ncols <= b->ncols) return 0;
  return txtable_reshape(b, rows > b->cap ? rows : b->cap, ncols > b->ncols ? ncols : b->ncols, b->wide);
}

/* Points window w at rows [first, first + rows) of dst, empty. */
static void txtable_window_point(prstm_batch *w, const prstm_batch *dst, uint64_t first, uint64_t rows) {
  w->type = dst->type + first;
  w->status = dst->status + first;
  w->args = dst->args ? txtable_arg_at(dst, 0, first) : NULL;
  w->n = 0;
  w->limit = rows;
}

int txtable_window_open(prstm_batch *dst, uint64_t first, uint64_t rows, prstm_batch **win) {
  if (!dst || !win || dst->window || first > dst->cap || rows > dst->cap - first) return PRSTM_EINVAL;
  prstm_batch *w = calloc(1, sizeof *w);
  if (!w) return PRSTM_ENOMEM;
  w->wl = dst->wl;
  w->cap = dst->cap; /* the column stride: a window's rows are dst's */
  w->ncols = dst->ncols;
  w->wide = dst->wide;
  w->window = 1;
  txtable_window_point(w, dst, first, rows);
  *win = w;
  return 0;
}

int txtable_window_move(const prstm_batch *dst, prstm_batch *win, uint64_t first, uint64_t rows, uint64_t *filled) {
  if (!dst || !win || !win->window || !filled || first > dst->cap || rows > dst->cap - first) return PRSTM_EINVAL;
  *filled = win->n;
  txtable_window_point(win, dst, first, rows);
  return 0;
}

uint64_t txtable_window_close(prstm_batch *dst, prstm_batch *win) {
  if (!dst || !win || !win->window) return 0;
  const uint64_t n = win->n;
  dst->tag_mask |= win->tag_mask;
  dst->type_mask |= win->type_mask;
  if (win->widest > dst->widest) dst->widest = win->widest;
  if (win->has_read_only) dst->has_read_only = 1;
  if (win->wants_wide) dst->wants_wide = 1;
  free(win);
  return n;
}

void txtable_move_rows(prstm_batch *b, uint64_t from, uint64_t to, uint64_t n) {
  if (!b || from == to || n == 0) return;
  memmove(b->type + to, b->type + from, (size_t)n);
  memmove(b->status + to, b->status + from, (size_t)n);
  for (uint32_t c = 0; c < b->ncols; c++)
    memmove(txtable_arg_at(b, c, to), txtable_arg_at(b, c, from), (size_t)n * txtable_width(b));
}

int txtable_set_rows(prstm_batch *dst, uint64_t n) {
  if (!dst || dst->window || n > dst->cap) return PRSTM_EINVAL;
  dst->n = n;
  return 0;
}

void txtable_narrow_columns(prstm_batch *b, unsigned ncols) {
  if (b && !b->window && ncols < b->ncols) b->ncols = ncols;
}

int prstm_batch_clear(prstm_batch *b) {
  if (!b) return PRSTM_EINVAL;
  b->n = 0;
  b->tag_mask = 0;
  b->type_mask = 0;
  b->has_read_only = 0;
  free(b->result);
  free(b->seq);
  free(b->read_hash);
  b->result = NULL;
  b->seq = NULL;
  b->read_hash = NULL;
  return 0;
}

int txtable_fail(prstm_batch *b, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->err, sizeof b->err, fmt, ap);
  va_end(ap);
  return code;
}

const char *prstm_batch_error(const prstm_batch *b) { return b ? b->err : ""; }

int prstm_batch_append(prstm_batch *b, unsigned type, const prstm_word *args, unsigned nargs) {
  if (!b) return PRSTM_EINVAL;
  if (type >= b->wl->ntypes)
    return txtable_fail(b, PRSTM_EINVAL, "type index %u: workload %s has %u types", type, b->wl->name, b->wl->ntypes);
  if (nargs && !args) return txtable_fail(b, PRSTM_EINVAL, "%u argument words but no array", nargs);
  if (nargs > PRSTM_MAX_COLUMNS)
    return txtable_fail(b, PRSTM_EINVAL, "%u argument words; at most %u", nargs, (unsigned)PRSTM_MAX_COLUMNS);
  const prstm_type_desc *t = &b->wl->types[type];
  if (t->tag > PRSTM_MAX_TAG)
    return txtable_fail(b, PRSTM_EINVAL, "type %s: semantic tag %u; at most %u", t->name, t->tag,
                        (unsigned)PRSTM_MAX_TAG);
  const int widen = !b->wide && !txtable_fits_narrow(args, nargs);
  if (widen && b->window) {
    b->wants_wide = 1;
    return txtable_fail(b, PRSTM_ENOMEM, "a value wider than 32 bits in a window on a narrow batch");
  }
  if (b->n == b->cap || nargs > b->ncols || (b->window && b->n == b->limit) || widen) {
    uint64_t cap = b->n == b->cap ? (b->cap ? b->cap * 2 : 1024) : b->cap;
    int rc = txtable_reshape(b, cap, nargs > b->ncols ? nargs : b->ncols, b->wide || widen);
    if (rc)
      return txtable_fail(b, rc, "cannot %s the batch past %llu rows: out of memory", widen ? "widen" : "grow",
                          (unsigned long long)b->n);
  }
  txtable_put_row(b, type, t, args, nargs);
  return 0;
}

static int txtable_copy_rows(prstm_batch *b, uint64_t n, const uint8_t *types, const prstm_column *cols,
                             unsigned ncols);

int prstm_batch_append_rows(prstm_batch *dst, const prstm_batch *src) {
  if (!dst || !src || dst == src) return PRSTM_EINVAL;
  if (src->wl != dst->wl)
    return txtable_fail(dst, PRSTM_EINVAL, "rows of workload %s appended to a batch of workload %s", src->wl->name,
                        dst->wl->name);
  if (src->n == 0) return 0;
  if (src->n > UINT64_MAX - dst->n) return txtable_fail(dst, PRSTM_ENOMEM, "too many rows");
  const uint64_t need = dst->n + src->n;
  if (need > dst->cap || src->ncols > dst->ncols || (dst->window && need > dst->limit)) {
    uint64_t cap = dst->cap ? dst->cap : 1024;
    while (cap < need) cap = cap > UINT64_MAX / 2 ? need : cap * 2;
    int rc = txtable_reshape(dst, cap, src->ncols > dst->ncols ? src->ncols : dst->ncols, dst->wide);
    if (rc) return txtable_fail(dst, rc, "cannot grow the batch to %llu rows: out of memory", (unsigned long long)need);
  }
  /* The source's columns at their width: copied on every core when large
   * (the parts of a generated or parsed batch joined in order). */
  prstm_column *cols = malloc((src->ncols ? src->ncols : 1) * sizeof *cols);
  if (!cols) return txtable_fail(dst, PRSTM_ENOMEM, "out of memory");
  for (uint32_t c = 0; c < src->ncols; c++) cols[c] = (prstm_column){txtable_arg_at(src, c, 0), txtable_width(src)};
  int rc = txtable_copy_rows(dst, src->n, src->type, cols, src->ncols);
  free(cols);
  if (rc == PRSTM_ENOMEM && dst->window)
    return txtable_fail(dst, rc, "a value wider than 32 bits in a window on a narrow batch");
  if (rc) return txtable_fail(dst, rc, "cannot widen the batch's columns: out of memory");
  dst->n = need;
  dst->tag_mask |= src->tag_mask;
  dst->type_mask |= src->type_mask;
  if (src->has_read_only) dst->has_read_only = 1;
  return 0;
}

/* Rows [lo, hi) of the appended rows, copied into the table from row
 * `base` on, their statuses zeroed: one thread's share of
 * txtable_copy_rows. Into narrow columns, an 8-byte value that does not
 * fit sets `high` (the copy is then made again, wide). */
typedef struct column_copy {
  prstm_batch *b;
  uint64_t base, lo, hi;
  const uint8_t *types;
  const prstm_column *cols;
  unsigned ncols;
  uint64_t high;
} column_copy;

/* Value i of a column of `width`-byte values. A column need not be aligned
 * to its width (a .npy file's data starts wherever its header ends), so
 * values are read byte-wise: memcpy of a fixed width compiles to one
 * unaligned load. */
static inline uint64_t column_value(const unsigned char *from, unsigned width, uint64_t i) {
  switch (width) {
    case 8: {
      uint64_t v;
      memcpy(&v, from + i * 8u, sizeof v);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, from + i * 4u, sizeof v);
      return v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, from + i * 2u, sizeof v);
      return v;
    }
    default:
      return from[i];
  }
}

/* m values of `width` bytes from `from` into `to`, 64-bit values where
 * wide, else 32-bit ones; returns the OR of the high halves of what did
 * not fit 32 bits. A column already at the table's width is one copy. */
static uint64_t column_values(void *to, int wide, const unsigned char *from, unsigned width, uint64_t m) {
  if (width == (wide ? 8u : 4u)) {
    memcpy(to, from, (size_t)m * width);
    return 0;
  }
  uint64_t high = 0;
  for (uint64_t i = 0; i < m; i++) {
    const uint64_t v = column_value(from, width, i);
    if (wide) {
      ((uint64_t *)to)[i] = v;
    } else {
      ((uint32_t *)to)[i] = (uint32_t)v;
      high |= v >> 32;
    }
  }
  return high;
}

static void *column_copy_rows(void *arg) {
  column_copy *j = arg;
  const uint64_t lo = j->lo, m = j->hi - j->lo;
  memcpy(j->b->type + j->base + lo, j->types + lo, (size_t)m);
  memset(j->b->status + j->base + lo, 0, (size_t)m);
  for (uint32_t c = 0; c < j->b->ncols; c++) {
    void *to = txtable_arg_at(j->b, c, j->base + lo);
    if (c >= j->ncols) {
      memset(to, 0, (size_t)m * txtable_width(j->b));
      continue;
    }
    const unsigned width = j->cols[c].width;
    j->high |= column_values(to, j->b->wide, (const unsigned char *)j->cols[c].data + lo * width, width, m);
  }
  return NULL;
}

/* Below this many rows (about 3 MB of a table of three argument columns) a
 * copy is not worth a thread of its own. */
#define TXTABLE_COPY_ROWS_PER_THREAD (1u << 17)
#define TXTABLE_COPY_MAX_THREADS 32

int prstm_batch_append_columns(prstm_batch *b, uint64_t n, const uint8_t *types, const prstm_column *cols,
                               unsigned ncols) {
  if (!b) return PRSTM_EINVAL;
  if (n == 0) return 0;
  if (!types) return txtable_fail(b, PRSTM_EINVAL, "%llu rows but no type column", (unsigned long long)n);
  if (ncols > PRSTM_MAX_COLUMNS)
    return txtable_fail(b, PRSTM_EINVAL, "%u argument columns; at most %u", ncols, (unsigned)PRSTM_MAX_COLUMNS);
  if (ncols && !cols) return txtable_fail(b, PRSTM_EINVAL, "%u argument columns but no array", ncols);
  for (unsigned c = 0; c < ncols; c++) {
    const unsigned w = cols[c].width;
    if (w != 1 && w != 2 && w != 4 && w != 8)
      return txtable_fail(b, PRSTM_EINVAL, "column %u: width %u bytes; expected 1, 2, 4 or 8", c, w);
    if (!cols[c].data) return txtable_fail(b, PRSTM_EINVAL, "column %u: no data", c);
  }
  /* Every type index first, so that a refusal appends nothing. */
  uint8_t seen[256] = {0};
  for (uint64_t i = 0; i < n; i++) seen[types[i]] = 1;
  uint32_t tag_mask = 0;
  uint64_t type_mask = 0;
  int has_read_only = 0;
  for (unsigned t = 0; t < 256; t++) {
    if (!seen[t]) continue;
    if (t >= b->wl->ntypes) {
      uint64_t row = 0;
      while (types[row] != t) row++;
      return txtable_fail(b, PRSTM_EINVAL, "row %llu: type index %u: workload %s has %u types", (unsigned long long)row,
                          t, b->wl->name, b->wl->ntypes);
    }
    const prstm_type_desc *d = &b->wl->types[t];
    if (d->tag > PRSTM_MAX_TAG)
      return txtable_fail(b, PRSTM_EINVAL, "type %s: semantic tag %u; at most %u", d->name, d->tag,
                          (unsigned)PRSTM_MAX_TAG);
    tag_mask |= 1u << d->tag;
    if (t < 64) type_mask |= 1ull << t;
    if (d->read_only) has_read_only = 1;
  }
  if (n > UINT64_MAX - b->n) return txtable_fail(b, PRSTM_ENOMEM, "too many rows");
  const uint64_t need = b->n + n;
  if (need > b->cap || ncols > b->ncols || (b->window && need > b->limit)) {
    uint64_t cap = b->cap ? b->cap : 1024;
    while (cap < need) cap = cap > UINT64_MAX / 2 ? need : cap * 2;
    int rc = txtable_reshape(b, cap, ncols > b->ncols ? ncols : b->ncols, b->wide);
    if (rc) return txtable_fail(b, rc, "cannot grow the batch to %llu rows: out of memory", (unsigned long long)need);
  }
  int rc = txtable_copy_rows(b, n, types, cols, ncols);
  if (rc == PRSTM_ENOMEM && b->window)
    return txtable_fail(b, rc, "a value wider than 32 bits in a window on a narrow batch");
  if (rc) return txtable_fail(b, rc, "cannot widen the batch's columns: out of memory");
  b->n = need;
  b->tag_mask |= tag_mask;
  b->type_mask |= type_mask;
  if (has_read_only) b->has_read_only = 1;
  return 0;
}

/* Copies n rows (their types, and ncols columns) into the table from row
 * b->n on, zeroing their statuses and the table's other columns there. A
 * large copy is made by several threads, each a range of rows of every
 * column: the copy is bound by memory, and by the page faults of a table
 * just grown, which one thread takes one at a time. A thread that cannot
 * start leaves its range to this one. Into a narrow batch, a value that
 * does not fit widens the batch and the copy is made again; a window
 * cannot widen, and returns PRSTM_ENOMEM (wants_wide set). */
static int txtable_copy_rows(prstm_batch *b, uint64_t n, const uint8_t *types, const prstm_column *cols,
                             unsigned ncols) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t nthreads = n / TXTABLE_COPY_ROWS_PER_THREAD + 1;
  if (nthreads > (uint64_t)(cores > 0 ? cores : 1)) nthreads = (uint64_t)(cores > 0 ? cores : 1);
  if (nthreads > TXTABLE_COPY_MAX_THREADS) nthreads = TXTABLE_COPY_MAX_THREADS;
  column_copy jobs[TXTABLE_COPY_MAX_THREADS];
  pthread_t tids[TXTABLE_COPY_MAX_THREADS];
  for (int attempt = 0; attempt < 2; attempt++) {
    int started[TXTABLE_COPY_MAX_THREADS] = {0};
    for (uint64_t k = 0; k < nthreads; k++) {
      jobs[k] = (column_copy){b, b->n, n * k / nthreads, n * (k + 1) / nthreads, types, cols, ncols, 0};
      if (k > 0) started[k] = pthread_create(&tids[k], NULL, column_copy_rows, &jobs[k]) == 0;
    }
    column_copy_rows(&jobs[0]);
    uint64_t high = jobs[0].high;
    for (uint64_t k = 1; k < nthreads; k++) {
      if (started[k])
        pthread_join(tids[k], NULL);
      else
        column_copy_rows(&jobs[k]);
      high |= jobs[k].high;
    }
    if (!high) return 0;
    int rc = txtable_widen(b);
    if (rc) return rc;
  }
  return 0;
}

int prstm_batch_presort(prstm_batch *b) {
  if (!b) return PRSTM_EINVAL;
  if (b->n < 2) return 0;
  /* A counting sort by tag is stable and linear. */
  uint64_t start[PRSTM_MAX_TAG + 2] = {0};
  for (uint64_t i = 0; i < b->n; i++) start[PRSTM_MAX_TAG - b->wl->types[b->type[i]].tag + 1]++;
  for (int k = 1; k <= PRSTM_MAX_TAG + 1; k++) start[k] += start[k - 1];
  uint64_t *perm = malloc((size_t)b->n * sizeof *perm);
  uint8_t *bytes = malloc((size_t)b->n);
  uint64_t *col = malloc((size_t)b->n * sizeof *col); /* room for a column of either width */
  if (!perm || !bytes || !col) {
    free(perm);
    free(bytes);
    free(col);
    return PRSTM_ENOMEM;
  }
  for (uint64_t i = 0; i < b->n; i++) perm[start[PRSTM_MAX_TAG - b->wl->types[b->type[i]].tag]++] = i;
  for (uint64_t i = 0; i < b->n; i++) bytes[i] = b->type[perm[i]];
  memcpy(b->type, bytes, (size_t)b->n);
  for (uint64_t i = 0; i < b->n; i++) bytes[i] = b->status[perm[i]];
  memcpy(b->status, bytes, (size_t)b->n);
  for (uint32_t c = 0; c < b->ncols; c++) {
    if (b->wide) {
      uint64_t *src = txtable_arg_at(b, c, 0);
      for (uint64_t i = 0; i < b->n; i++) col[i] = src[perm[i]];
    } else {
      uint32_t *src = txtable_arg_at(b, c, 0), *narrow = (uint32_t *)col;
      for (uint64_t i = 0; i < b->n; i++) narrow[i] = src[perm[i]];
    }
    memcpy(txtable_arg_at(b, c, 0), col, (size_t)b->n * txtable_width(b));
  }
  free(perm);
  free(bytes);
  free(col);
  return 0;
}

int txtable_prepare_run(prstm_batch *b, int verify) {
  memset(b->status, 0, (size_t)b->n);
  free(b->seq);
  free(b->read_hash);
  b->seq = NULL;
  b->read_hash = NULL;
  if (verify) {
    b->seq = malloc((size_t)(b->cap ? b->cap : 1) * sizeof *b->seq);
    b->read_hash = calloc((size_t)(b->cap ? b->cap : 1), sizeof *b->read_hash);
    if (!b->seq || !b->read_hash) return PRSTM_ENOMEM;
    memset(b->seq, 0xff, (size_t)b->n * sizeof *b->seq);
  }
  if (b->has_read_only) {
    free(b->result);
    b->result = calloc((size_t)(b->cap ? b->cap : 1), sizeof *b->result);
    if (!b->result) return PRSTM_ENOMEM;
    /* The rows of this run are faulted in on every core now: a chunked run
     * writes each unit's results into the column, and there the first
     * write of each of its pages (a huge page zeroed by the kernel, on the
     * thread that launches the units) took most of a small unit's host
     * time. The rows past them stay untouched until written. */
    engine_prefault_zeroed(b->result, (size_t)b->n * sizeof *b->result);
  }
  return 0;
}

void txtable_view_of(prstm_batch *b, txtable_view *v) {
  memset(v, 0, sizeof *v);
  v->n = b->n;
  v->stride = b->cap;
  v->ncols = b->ncols;
  v->has_results = (uint32_t)b->has_read_only;
  v->type = b->type;
  v->status = b->status;
  v->args = b->args;
  v->narrow_args = !b->wide;
  v->result = b->result;
  v->seq = b->seq;
  v->read_hash = b->read_hash;
  v->row_base = b->row_base;
  v->ids_from = b->ids_from;
  v->row_id = b->row_id;
}

uint64_t txtable_device_bytes(const prstm_batch *b, int verify) {
  uint64_t per_row = 2 + (uint64_t)txtable_width(b) * b->ncols + (b->has_read_only ? 8 : 0) + (verify ? 16 : 0);
  return per_row * b->n;
}

int prstm_batch_outcome(const prstm_batch *b, uint64_t i, prstm_status *status, unsigned *reason, prstm_word *result) {
  if (!b || i >= b->n) return PRSTM_EINVAL;
  uint8_t s = b->status[i];
  if (status) *status = (prstm_status)(s & TXTABLE_STATUS_MASK);
  if (reason) *reason = s >> TXTABLE_REASON_SHIFT;
  if (result) *result = b->result ? b->result[i] : 0;
  return 0;
}

unsigned prstm_batch_type(const prstm_batch *b, uint64_t i) { return b && i < b->n ? b->type[i] : 0; }

prstm_word prstm_batch_arg(const prstm_batch *b, uint64_t i, unsigned col) {
  if (!b || i >= b->n || col >= b->ncols) return 0;
  return txtable_get(b, col, i);
}

unsigned prstm_batch_columns(const prstm_batch *b) { return b ? b->ncols : 0; }

int prstm_batch_widen(prstm_batch *b) {
  if (!b || b->window) return PRSTM_EINVAL;
  int rc = txtable_widen(b);
  return rc ? txtable_fail(b, rc, "cannot widen the batch's columns: out of memory") : 0;
}

/* A pointer to 64-bit words: a narrow batch is widened first. The batch
 * itself is the caller's (the const says that the rows do not change). */
const prstm_word *prstm_batch_column(const prstm_batch *b, unsigned col) {
  if (!b || col >= b->ncols) return NULL;
  if (!b->wide && txtable_widen((prstm_batch *)b) != 0) return NULL;
  return txtable_arg_at(b, col, 0);
}
