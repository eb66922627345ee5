/* ycsb_body.h: YCSB's transactions over a table of records (reads, read-modify-writes and blind writes of fields), written once for the GPU kernels and the CPU threads. */
#ifndef YCSB_BODY_H
#define YCSB_BODY_H

#include "prstm_tx.h"

/* State: `records` records of `fields` words each, record r's field f at word
 * r * fields + f. The state carries no header: the number of fields is
 * nwords / records, which the bodies do not know, so a transaction names its
 * fields by word: an operation on key k touches word k * fields + (i % fields)
 * for its i-th operation, and the generator writes keys as word addresses of
 * the record's first field (k * fields). */
enum { YCSB_UPDATE = 0, YCSB_READ = 1 };

/* An update's operations, two bits each in its `kinds` argument. */
enum { YCSB_OP_READ = 0, YCSB_OP_RMW = 1, YCSB_OP_WRITE = 2 };
#define YCSB_MAX_OPS 32u /* two bits each in a 64-bit argument */

#define YCSB_REASON_KIND (PRSTM_REASON_USER + 0) /* an operation of kind 3 */
#define YCSB_REASON_OPS (PRSTM_REASON_USER + 1)  /* more operations than an update takes */

/* Set capacities: a transaction touches at most one word an operation. */
#define YCSB_SMALL_COLUMNS 12u /* an update of 10 operations, a read of 11 */
#define YCSB_SMALL_CAPACITY 11u
/* The wide variant takes any row, so that an update of too many operations
 * fails with its reason instead of being refused as a batch. */
#define YCSB_WIDE_COLUMNS PRSTM_MAX_COLUMNS
#define YCSB_WIDE_CAPACITY (YCSB_MAX_OPS + 1u)

/* read: reads one field of each listed record (a list of word addresses,
 * each its record's field for that operation) and returns their sum. */
PRSTM_INLINE int ycsb_read(prstm_tx *tx) {
  /* Each operation's word address is loaded one operation ahead: a read
   * loads its lock word and then, once the lock is seen free, its value, so
   * an address loaded by the operation itself would put a third trip to
   * memory on every operation's dependent chain. */
  uint64_t count = prstm_arg(tx, 0), sum = 0;
  uint64_t next = count ? prstm_arg(tx, 1) : 0;
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) {
    const uint64_t word = next;
    if (i + 1 < count) next = prstm_arg(tx, 2 + (unsigned)i);
    sum += prstm_read(tx, word);
  }
  prstm_set_result(tx, sum);
  return PRSTM_COMMIT;
}

/* update: operation i on word keys[i], of the kind in bits 2i..2i+1 of
 * `kinds`: a read, a read-modify-write (the field plus one), or a blind
 * write (the field set to the transaction's row number plus one, which
 * depends on nothing the transaction read). */
PRSTM_INLINE int ycsb_update(prstm_tx *tx) {
  uint64_t kinds = prstm_arg(tx, 0), count = prstm_arg(tx, 1);
  if (count > YCSB_MAX_OPS) return prstm_fail(tx, YCSB_REASON_OPS);
  /* Addresses one operation ahead, as in ycsb_read. */
  uint64_t next = count ? prstm_arg(tx, 2) : 0;
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) {
    const uint64_t word = next;
    if (i + 1 < count) next = prstm_arg(tx, 3 + (unsigned)i);
    switch ((kinds >> (2 * i)) & 3u) {
      case YCSB_OP_READ:
        (void)prstm_read(tx, word);
        break;
      case YCSB_OP_RMW:
        prstm_write(tx, word, prstm_read(tx, word) + 1);
        break;
      case YCSB_OP_WRITE:
        prstm_write(tx, word, prstm_row(tx) + 1);
        break;
      default:
        return prstm_fail(tx, YCSB_REASON_KIND);
    }
  }
  return PRSTM_COMMIT;
}

PRSTM_INLINE int ycsb_dispatch(prstm_tx *tx, unsigned type) {
  return type == YCSB_READ ? ycsb_read(tx) : ycsb_update(tx);
}

#endif /* YCSB_BODY_H */
