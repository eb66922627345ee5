/* txtable_view.h: the global transaction table as the executing threads see it (SoA columns, one block per thread). */
#ifndef TXTABLE_VIEW_H
#define TXTABLE_VIEW_H

#include <stdint.h>
#include "stm_port.h"

/* Structure of arrays, so the threads of a warp read neighbouring rows of a
 * column in one transaction. Row i belongs to thread i % nthreads: blocks are
 * interleaved, which keeps a warp's accesses coalesced on every sweep. */
typedef struct txtable_view {
  uint64_t n;      /* rows */
  uint64_t stride; /* distance between two argument columns, >= n */
  uint32_t ncols;  /* argument columns */
  uint32_t has_results;
  /* Nonzero: the argument columns hold 32-bit values, column c at
   * (uint32_t *)args + c * stride, because every argument of the batch
   * fitted (a narrow batch, or a wide one that a GPU run narrowed on the
   * way up, halving the table's copy). */
  uint32_t narrow_args;
  uint8_t *type;       /* type index per row */
  uint8_t *status;     /* prstm_status in the low 2 bits, reason in the high 6: the finish flag */
  uint64_t *args;      /* column-major: args[col * stride + row] */
  uint64_t *result;    /* read-only results, NULL when the batch has no read-only type */
  uint64_t *seq;       /* commit order (verification), NULL when not recorded */
  uint64_t *read_hash; /* hash of the values each decided row read (verification), or NULL */
  /* The number prstm_row gives each row: its row in the batch (or, in a
   * stream, among all the stream's rows), whatever table it executes in.
   * Row r is numbered row_base + r, except that with row_id set, rows from
   * ids_from on take theirs from row_id[r - ids_from]: the rows a stream's
   * unit carries over from earlier units, or a replay's reordered rows. A
   * zeroed view numbers every row by its own place. */
  uint64_t row_base;
  uint64_t ids_from;
  const uint64_t *row_id;
} txtable_view;

/* Where argument col of row r lies among the columns, counted in values of
 * the columns' width (64 bits, or 32 with narrow_args). */
PRSTM_INLINE uint64_t txtable_arg_index(const txtable_view *t, uint64_t r, unsigned col) {
  return (uint64_t)col * t->stride + r;
}

/* The address of argument col of row r, at the columns' width. */
PRSTM_INLINE const void *txtable_arg_address(const txtable_view *t, uint64_t r, unsigned col) {
  const uint64_t at = txtable_arg_index(t, r, col);
  return t->narrow_args ? (const void *)((const uint32_t *)t->args + at) : (const void *)&t->args[at];
}

/* Argument col of row r, 0 past the table's columns, whether the columns
 * are 64-bit or narrow. */
PRSTM_INLINE uint64_t txtable_arg(const txtable_view *t, uint64_t r, unsigned col) {
  if (col >= t->ncols) return 0;
  const uint64_t at = txtable_arg_index(t, r, col);
  return t->narrow_args ? port_table_load_u32((const uint32_t *)t->args + at) : port_table_load_u64(&t->args[at]);
}

/* Argument col of row r, 0 past the table's columns, from columns known to
 * be 64-bit, or 32-bit: the walk of a thread alone takes the width once
 * (prstm_tx.alone_narrow) and then reads without loading the table's on
 * every read (that load and test cost such a walk 3.7% of its rate). */
PRSTM_INLINE uint64_t txtable_arg_wide(const txtable_view *t, uint64_t r, unsigned col) {
  if (col >= t->ncols) return 0;
  return port_table_load_u64(&t->args[txtable_arg_index(t, r, col)]);
}
PRSTM_INLINE uint64_t txtable_arg_narrow(const txtable_view *t, uint64_t r, unsigned col) {
  if (col >= t->ncols) return 0;
  return port_table_load_u32((const uint32_t *)t->args + txtable_arg_index(t, r, col));
}

/* The number of row r that prstm_row gives (see row_base above). */
PRSTM_INLINE uint64_t txtable_row_number(const txtable_view *t, uint64_t r) {
  return t->row_id && r >= t->ids_from ? t->row_id[r - t->ids_from] : t->row_base + r;
}

/* A row's status and the engine's own failure reasons as the table stores
 * them: the values of prstm_status and of the PRSTM_REASON_* of prstm.h,
 * which this layer sits below (engine.c checks that the two agree). */
enum { TXTABLE_PENDING = 0, TXTABLE_COMMITTED = 1, TXTABLE_ABANDONED = 2, TXTABLE_FAILED = 3 };
enum {
  TXTABLE_REASON_NONE = 0,
  TXTABLE_REASON_CAPACITY = 1,
  TXTABLE_REASON_BAD_ADDRESS = 2,
  TXTABLE_REASON_RETRY_LIMIT = 3,
  TXTABLE_REASON_QUIESCENT = 4,
  /* Not a failure: the row named a word its unit does not hold (a run whose
   * units partition the state), and the host runs it again elsewhere. */
  TXTABLE_REASON_AWAY = 5
};

#define TXTABLE_STATUS_MASK 3u
#define TXTABLE_REASON_SHIFT 2

PRSTM_INLINE uint8_t txtable_pack_status(unsigned status, unsigned reason) {
  return (uint8_t)((status & TXTABLE_STATUS_MASK) | (reason << TXTABLE_REASON_SHIFT));
}

/* Rows of thread `rank`'s block: rank, rank + T, rank + 2T, ... */
PRSTM_INLINE uint64_t txtable_block_size(uint64_t n, uint32_t rank, uint32_t nthreads) {
  return n > rank ? (n - rank + nthreads - 1) / nthreads : 0;
}

#endif /* TXTABLE_VIEW_H */
