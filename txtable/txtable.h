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
  uint8_t *status;     /* packed status and reason (txtable_view.h) */
  uint64_t *args;      /* args[col * cap + row] */
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
/* Bytes a table of this shape takes on the GPU (type, status, args, results). */
uint64_t txtable_device_bytes(const prstm_batch *batch, int verify);

/* Writes row b->n from type `type` (described by t) and nargs argument
 * words, the batch having room for it (a row below cap, and below limit in
 * a window, and nargs at most its columns): the part of
 * prstm_batch_append after its checks. */
static inline void txtable_put_row(prstm_batch *b, unsigned type, const prstm_type_desc *t, const prstm_word *args,
                                   unsigned nargs) {
  const uint64_t row = b->n++;
  b->type[row] = (uint8_t)type;
  b->status[row] = 0;
  if (nargs > b->widest) b->widest = nargs;
  for (uint32_t c = 0; c < b->ncols; c++) b->args[(uint64_t)c * b->cap + row] = c < nargs ? args[c] : 0;
  b->tag_mask |= 1u << t->tag;
  if (type < 64) b->type_mask |= 1ull << type;
  if (t->read_only) b->has_read_only = 1;
}

/* A generator's append of a row it made itself, of one of its workload's
 * types and at most PRSTM_MAX_COLUMNS words: written in place while the
 * batch has room for it, and through prstm_batch_append (which grows the
 * batch or refuses the row) when not. A generator makes a row every few
 * tens of nanoseconds, and the call and the checks of a row it knows to be
 * valid were a tenth of that. */
static inline int txtable_append_generated(prstm_batch *b, unsigned type, const prstm_word *args, unsigned nargs) {
  if (b->n == b->cap || nargs > b->ncols || (b->window && b->n == b->limit))
    return prstm_batch_append(b, type, args, nargs);
  txtable_put_row(b, type, &b->wl->types[type], args, nargs);
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TXTABLE_H */
