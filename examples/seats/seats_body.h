/* seats_body.h: the seat-booking example's transaction bodies, written once for the GPU kernel and the CPU threads. */
#ifndef SEATS_BODY_H
#define SEATS_BODY_H

#include "prstm_tx.h"

/* Type indices: seats_dispatch below and seats_types[] in seats.c use them. */
enum { SEATS_BOOK = 0, SEATS_RELEASE = 1, SEATS_FREE = 2 };
/* Reasons of our own start at PRSTM_REASON_USER; a type has at most 4. */
#define SEATS_REASON_NO_SUCH_SEAT (PRSTM_REASON_USER + 0)
#define SEATS_REASON_ALREADY_BOOKED (PRSTM_REASON_USER + 1)

/* The state: word 0 of show s is its free-seat count, then one word per
 * customer saying whether that customer holds a seat of the show:
 *   show s: [free][holds 0][holds 1] ... [holds customers-1]
 * The layout is fixed by the first two words of the state (see seats.c). */
#define SEATS_HEADER 2 /* word 0: shows, word 1: customers */

PRSTM_INLINE uint64_t seats_show_base(uint64_t customers, uint64_t show) {
  return SEATS_HEADER + show * (customers + 1);
}

/* Reads the layout and checks that (show, customer) exists. The layout words
 * are never written, so they cost no read-set entry. */
PRSTM_INLINE int seats_locate(prstm_tx *tx, uint64_t show, uint64_t customer, uint64_t *base, uint64_t *customers) {
  uint64_t shows = prstm_read_immutable(tx, 0);
  *customers = prstm_read_immutable(tx, 1);
  if (show >= shows || customer >= *customers) return 0;
  *base = seats_show_base(*customers, show);
  return 1;
}

/* book: take a seat; when the show is sold out the request waits on the
 * waitlist (it is postponed) until a release frees a seat. */
PRSTM_INLINE int seats_book(prstm_tx *tx) {
  uint64_t show = prstm_arg(tx, 0), customer = prstm_arg(tx, 1), base, customers;
  if (!seats_locate(tx, show, customer, &base, &customers)) return prstm_fail(tx, SEATS_REASON_NO_SUCH_SEAT);
  if (prstm_read(tx, base + 1 + customer)) return prstm_fail(tx, SEATS_REASON_ALREADY_BOOKED);
  uint64_t free_seats = prstm_read(tx, base);
  if (free_seats == 0) return PRSTM_POSTPONE; /* the waitlist */
  prstm_write(tx, base, free_seats - 1);
  prstm_write(tx, base + 1 + customer, 1);
  return PRSTM_COMMIT;
}

/* release: give a seat back. A release that finds no booking yet waits for
 * it; the higher tag lets releases run before the bookings they fund. */
PRSTM_INLINE int seats_release(prstm_tx *tx) {
  uint64_t show = prstm_arg(tx, 0), customer = prstm_arg(tx, 1), base, customers;
  if (!seats_locate(tx, show, customer, &base, &customers)) return prstm_fail(tx, SEATS_REASON_NO_SUCH_SEAT);
  if (!prstm_read(tx, base + 1 + customer)) return PRSTM_POSTPONE;
  prstm_write(tx, base + 1 + customer, 0);
  prstm_write(tx, base, prstm_read(tx, base) + 1);
  return PRSTM_COMMIT;
}

/* free: read-only, reports the free seats of a show. */
PRSTM_INLINE int seats_free(prstm_tx *tx) {
  uint64_t show = prstm_arg(tx, 0), base, customers;
  if (!seats_locate(tx, show, 0, &base, &customers)) return prstm_fail(tx, SEATS_REASON_NO_SUCH_SEAT);
  prstm_set_result(tx, prstm_read(tx, base));
  return PRSTM_COMMIT;
}

/* The dispatch function: the workers call it with each transaction's type
 * index, the position of its type in seats_types[]. A batch holds only the
 * workload's types (the loaders and prstm_batch_append check), so the
 * default case never runs. */
PRSTM_INLINE int seats_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case SEATS_BOOK:
      return seats_book(tx);
    case SEATS_RELEASE:
      return seats_release(tx);
    case SEATS_FREE:
      return seats_free(tx);
    default:
      return prstm_fail(tx, SEATS_REASON_NO_SUCH_SEAT);
  }
}

/* The set capacity: the most distinct words one transaction reads or writes
 * with prstm_read and prstm_write (prstm_read_immutable takes no entry). A
 * book or a release reads and writes two words, its show's free-seat count
 * and its customer's holds word; a free reads one. A transaction that needs
 * more entries fails with the reason "capacity". */
#define SEATS_CAPACITY 2

#endif /* SEATS_BODY_H */
