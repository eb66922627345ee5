/* seats_body.h: the seat-booking example's transaction bodies, written once for the GPU kernel and the CPU threads. */
#ifndef SEATS_BODY_H
#define SEATS_BODY_H

#include "prstm_tx.h"

/* Type indices, in the order of seats_types[] in seats.c. */
enum { SEATS_BOOK = 0, SEATS_RELEASE = 1, SEATS_FREE = 2 };
/* Reasons of our own start at PRSTM_REASON_USER. */
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

/* Read, write and lock set entries per transaction: a book or release
 * touches two words. */
#define SEATS_CAPACITY 4

#endif /* SEATS_BODY_H */
