/* txtable.h: the host side of the global transaction table (prstm_batch) shared by the engine and the loaders. */
#ifndef TXTABLE_H
#define TXTABLE_H

#include "prstm.h"
#include "txtable_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Columns live in one buffer with stride `cap`, so the CPU backend executes
 * on the batch in place and the GPU backend uploads it column by column. */
struct prstm_batch {
  const prstm_workload *wl;
  uint64_t n, cap;
  uint32_t ncols;
  uint32_t tag_mask;  /* bit t: some row has semantic tag t */
  uint64_t type_mask; /* bit t: some row has type t */
  int has_read_only;
  uint8_t *type;
  uint8_t *status; /* packed status and reason (txtable_view.h) */
  /* The argument columns, column c's row r the value at c * cap + r, each
   * value 4 bytes while the batch is narrow (wide 0: every value so far fits
   * in 32 bits), 8 once a wider value came (txtable_widen). Most batches'
   * values are addresses and counts that fit: a narrow batch is half the
   * bytes to generate, to load and to copy to a GPU, which reads it as it
   * is (txtable_view's narrow_args). */
  void *args;
  int wide;
  uint64_t *result;    /* allocated by txtable_prepare_run when has_read_only */
  uint64_t *seq;       /* commit order, allocated by txtable_prepare_run when verifying */
  uint64_t *read_hash; /* what each decided row read, allocated with seq */
  /* How prstm_row numbers the rows (txtable_view): 0, 0 and NULL for a
   * caller's batch, whose rows are its own; a stream's working table gives
   * its rows their batch's numbers. */
  uint64_t row_base, ids_from;
  const uint64_t *row_id;
  const struct txtable_allocator *pinned_alloc; /* prstm_batch_create_pinned's; NULL for an ordinary batch */
  int pinned;                                   /* type, status and args are page-locked now */
  /* Ordinary columns page-locked in place for the length of one chunked run
   * on the GPU (backend_ops.batch_lock_pages): its units copy rows straight
   * from them, as from a pinned batch's. Still freed as ordinary memory. */
  int registered;
  /* A window (txtable_window_open) appends into rows of another batch, at
   * most `limit` of them, and never takes memory of its own. */
  int window;
  uint64_t limit;
  /* A window of a narrow batch refuses a value wider than 32 bits, which
   * would widen the batch under the other windows, and says so here; its
   * close passes it on to the batch, which the caller then widens. */
  int wants_wide;
  /* The most argument words of a row appended since it was last reset,
   * windows folding theirs in when closed: wl_generate_blocks resets it,
   * then narrows the batch's columns to it. */
  uint32_t widest;
  char err[256]; /* why the last append was refused (prstm_batch_error) */
};

/* Page-locked host memory for a batch's columns, as a backend gives it
 * (engine/backend_gpu.cu): alloc returns NULL where it has none to give,
 * and the batch then takes ordinary memory. */
typedef struct txtable_allocator {
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
} txtable_allocator;

/* A batch whose columns come from `pinned` where it gives memory (NULL: an
 * ordinary batch). */
int txtable_create(prstm_batch **out, const prstm_workload *wl, const txtable_allocator *pinned);

/* Makes the batch ready for a run: all rows pending, results allocated, and
 * the commit-order column when `verify`. */
int txtable_prepare_run(prstm_batch *batch, int verify);
/* The view the executing threads take of a batch in host memory: its
 * columns at stride cap, and its rows numbered as the batch says. */
void txtable_view_of(prstm_batch *batch, txtable_view *view);
/* Records why a call on the batch was refused (prstm_batch_error) and
 * returns code. */
int txtable_fail(prstm_batch *batch, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Windows let several threads append into one batch without a copy: a
 * window is a batch whose appends fill rows [first, first + rows) of dst,
 * which dst must have room for (prstm_batch_reserve), with dst's columns; an
 * append past its rows or wider than dst's columns is refused (PRSTM_ENOMEM)
 * instead of growing anything. txtable_window_close gives back the window's
 * row count and adds its types and tags to dst's; txtable_set_rows then
 * makes dst's filled rows its own. Rows a window did not fill are not dst's
 * until then, and must be filled or left out (n ends before them). */
int txtable_window_open(prstm_batch *dst, uint64_t first, uint64_t rows, prstm_batch **win);
uint64_t txtable_window_close(prstm_batch *dst, prstm_batch *win);
/* Points an open window at rows [first, first + rows) of dst instead,
 * keeping the types and tags of the rows it filled, so that one thread can
 * fill ranges apart from each other and close the window once; *filled
 * gets the rows it filled where it pointed before. Changes nothing of dst. */
int txtable_window_move(const prstm_batch *dst, prstm_batch *win, uint64_t first, uint64_t rows, uint64_t *filled);
int txtable_set_rows(prstm_batch *dst, uint64_t n);
/* Leaves the batch ncols argument columns where it has more: the columns
 * past ncols are dropped, their memory kept until the batch next grows. */
void txtable_narrow_columns(prstm_batch *b, unsigned ncols);
/* Moves rows [from, from + n) of b's reserved rows to [to, to + n), every
 * column (to below from: closes the gap a window left short). */
void txtable_move_rows(prstm_batch *b, uint64_t from, uint64_t to, uint64_t n);
/* Bytes a table of this shape takes on the GPU (type, status, args at the
 * batch's width, results). */
uint64_t txtable_device_bytes(const prstm_batch *batch, int verify);

/* Bytes a value of the batch's argument columns takes: 4 while narrow. */
static inline unsigned txtable_width(const prstm_batch *b) { return b->wide ? 8u : 4u; }

/* The address of argument col of row r, at the columns' width. */
static inline void *txtable_arg_at(const prstm_batch *b, unsigned col, uint64_t r) {
  return (char *)b->args + ((uint64_t)col * b->cap + r) * txtable_width(b);
}

/* Argument col of row r (col below the batch's columns). */
static inline prstm_word txtable_get(const prstm_batch *b, unsigned col, uint64_t r) {
  const uint64_t at = (uint64_t)col * b->cap + r;
  return b->wide ? ((const uint64_t *)b->args)[at] : ((const uint32_t *)b->args)[at];
}

/* Whether every one of nargs values fits a narrow batch's columns. */
static inline int txtable_fits_narrow(const prstm_word *args, unsigned nargs) {
  prstm_word high = 0;
  for (unsigned c = 0; c < nargs; c++) high |= args[c] >> 32;
  return high == 0;
}

/* Makes the batch's columns 64-bit, its values kept: a reallocation and a
 * copy, once in a batch's life. A window cannot (other windows write into
 * the same columns): it sets wants_wide and returns PRSTM_ENOMEM. */
int txtable_widen(prstm_batch *b);

/* Writes row b->n from type `type` (described by t) and nargs argument
 * words, the batch having room for it (a row below cap, and below limit in
 * a window, nargs at most its columns, and the values fitting a narrow
 * batch): the part of prstm_batch_append after its checks. */
static inline void txtable_put_row(prstm_batch *b, unsigned type, const prstm_type_desc *t, const prstm_word *args,
                                   unsigned nargs) {
  const uint64_t row = b->n++;
  b->type[row] = (uint8_t)type;
  b->status[row] = 0;
  if (nargs > b->widest) b->widest = nargs;
  if (b->wide) {
    uint64_t *col = (uint64_t *)b->args + row;
    for (uint32_t c = 0; c < b->ncols; c++) col[(uint64_t)c * b->cap] = c < nargs ? args[c] : 0;
  } else {
    uint32_t *col = (uint32_t *)b->args + row;
    for (uint32_t c = 0; c < b->ncols; c++) col[(uint64_t)c * b->cap] = c < nargs ? (uint32_t)args[c] : 0;
  }
  b->tag_mask |= 1u << t->tag;
  if (type < 64) b->type_mask |= 1ull << type;
  if (t->read_only) b->has_read_only = 1;
}

/* A generator's append of a row it made itself, of one of its workload's
 * types and at most PRSTM_MAX_COLUMNS words: written in place while the
 * batch has room for it, and through prstm_batch_append (which grows or
 * widens the batch, or refuses the row) when not. A generator makes a row every few
 * tens of nanoseconds, and the call and the checks of a row it knows to be
 * valid were a tenth of that. */
static inline int txtable_append_generated(prstm_batch *b, unsigned type, const prstm_word *args, unsigned nargs) {
  if (b->n == b->cap || nargs > b->ncols || (b->window && b->n == b->limit) ||
      (!b->wide && !txtable_fits_narrow(args, nargs)))
    return prstm_batch_append(b, type, args, nargs);
  txtable_put_row(b, type, &b->wl->types[type], args, nargs);
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TXTABLE_H */
