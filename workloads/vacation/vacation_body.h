/* vacation_body.h: the vacation workload's transaction bodies (book, cancel, free_rooms), written once for the GPU kernel and the CPU threads. */
#ifndef VACATION_BODY_H
#define VACATION_BODY_H

#include "prstm_tx.h"

/* Type indices, in the order of vacation_types[] in vacation.c. */
enum { VACATION_BOOK = 0, VACATION_CANCEL = 1, VACATION_FREE_ROOMS = 2 };

/* The workload's own failure reasons; their strings are per type, so the
 * numbers of book and of cancel overlap past the first. */
#define VACATION_REASON_NO_SUCH (PRSTM_REASON_USER + 0)       /* every type */
#define VACATION_REASON_ALREADY_HOLDS (PRSTM_REASON_USER + 1) /* book */
#define VACATION_REASON_OVER_CAPACITY (PRSTM_REASON_USER + 1) /* cancel */

/* The state is one array of words:
 *
 *   header (VACATION_HEADER words, never written):
 *     [0] room types T, [1] spacing S, [2] customers C, [3] slots K,
 *     [4] first word of the room-type records, [5] first word of the customers
 *   room type t (t < T) at types_base + t * S:
 *     [0] free rooms (written by book and cancel), [1] capacity (never written)
 *   customer c (c < C) at customers_base + c * K:
 *     K reservation slots; a slot holds room type + 1, or 0 when empty.
 *
 * Records are S words apart (the paper's 100), so that with a lock covering
 * several words two room types still rarely share a lock. Bodies read the
 * header and the capacities with prstm_read_immutable: no transaction writes
 * them, so they cost no read-set entry. */
#define VACATION_HEADER 8
#define VACATION_MAX_SLOTS 8

typedef struct vacation_layout {
  uint64_t types, spacing, customers, slots, types_base, customers_base;
} vacation_layout;

PRSTM_INLINE void vacation_read_layout(prstm_tx *tx, vacation_layout *l) {
  l->types = prstm_read_immutable(tx, 0);
  l->spacing = prstm_read_immutable(tx, 1);
  l->customers = prstm_read_immutable(tx, 2);
  l->slots = prstm_read_immutable(tx, 3);
  l->types_base = prstm_read_immutable(tx, 4);
  l->customers_base = prstm_read_immutable(tx, 5);
  /* A state that is not a vacation state (or is cut short) must not make a
   * body loop over a huge slot count: clamp, and let addresses fail. */
  if (l->slots > VACATION_MAX_SLOTS) l->slots = VACATION_MAX_SLOTS;
}

/* Scans the customer's slots: *held is the slot holding `type` (or K when
 * none), *empty the first empty slot (or K when none). */
PRSTM_INLINE void vacation_scan(prstm_tx *tx, const vacation_layout *l, uint64_t customer, uint64_t type,
                                uint64_t *held, uint64_t *empty) {
  uint64_t base = l->customers_base + customer * l->slots;
  *held = l->slots;
  *empty = l->slots;
  for (uint64_t i = 0; i < l->slots && prstm_ok(tx); i++) {
    uint64_t v = prstm_read(tx, base + i);
    if (v == type + 1 && *held == l->slots) *held = i;
    if (v == 0 && *empty == l->slots) *empty = i;
  }
}

/* book(customer, type): take a room of the type. A customer holding the
 * type already fails for good. A sold-out type postpones, because a cancel
 * of the same type can still free a room; so does a customer whose slots are
 * all taken, because a cancel of theirs can still free a slot. (Failing
 * instead would depend on the schedule: a thread attempts a block's cancels
 * before its books, so a customer's books of one sweep meet none of the
 * cancels placed between them, and a few percent of a generated batch
 * failed on full slots that a serial run never sees.) */
PRSTM_INLINE int vacation_book(prstm_tx *tx) {
  uint64_t customer = prstm_arg(tx, 0), type = prstm_arg(tx, 1);
  vacation_layout l;
  vacation_read_layout(tx, &l);
  if (customer >= l.customers || type >= l.types) return prstm_fail(tx, VACATION_REASON_NO_SUCH);
  uint64_t held, empty;
  vacation_scan(tx, &l, customer, type, &held, &empty);
  if (!prstm_ok(tx)) return PRSTM_COMMIT; /* doomed: the engine retries */
  if (held < l.slots) return prstm_fail(tx, VACATION_REASON_ALREADY_HOLDS);
  uint64_t record = l.types_base + type * l.spacing;
  uint64_t free_rooms = prstm_read(tx, record);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  /* Sold out, or no free slot: wait for a cancel. */
  if (free_rooms == 0 || empty == l.slots) return PRSTM_POSTPONE;
  prstm_write(tx, record, free_rooms - 1);
  prstm_write(tx, l.customers_base + customer * l.slots + empty, type + 1);
  return PRSTM_COMMIT;
}

/* cancel(customer, type): give the customer's room of the type back. A
 * cancel that finds no such booking postpones until the booking commits; its
 * higher tag lets cancels run before the sold-out bookings they fund. */
PRSTM_INLINE int vacation_cancel(prstm_tx *tx) {
  uint64_t customer = prstm_arg(tx, 0), type = prstm_arg(tx, 1);
  vacation_layout l;
  vacation_read_layout(tx, &l);
  if (customer >= l.customers || type >= l.types) return prstm_fail(tx, VACATION_REASON_NO_SUCH);
  uint64_t held, empty;
  vacation_scan(tx, &l, customer, type, &held, &empty);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  if (held == l.slots) return PRSTM_POSTPONE; /* no booking yet: wait for it */
  uint64_t record = l.types_base + type * l.spacing;
  uint64_t free_rooms = prstm_read(tx, record);
  uint64_t capacity = prstm_read_immutable(tx, record + 1);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  /* Only a state built inconsistently (given directly) can get here. */
  if (free_rooms >= capacity) return prstm_fail(tx, VACATION_REASON_OVER_CAPACITY);
  prstm_write(tx, record, free_rooms + 1);
  prstm_write(tx, l.customers_base + customer * l.slots + held, 0);
  return PRSTM_COMMIT;
}

/* free_rooms(type): read-only; reports the free rooms of a type. */
PRSTM_INLINE int vacation_free_rooms(prstm_tx *tx) {
  uint64_t type = prstm_arg(tx, 0);
  vacation_layout l;
  vacation_read_layout(tx, &l);
  if (type >= l.types) return prstm_fail(tx, VACATION_REASON_NO_SUCH);
  prstm_set_result(tx, prstm_read(tx, l.types_base + type * l.spacing));
  return PRSTM_COMMIT;
}

PRSTM_INLINE int vacation_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case VACATION_BOOK:
      return vacation_book(tx);
    case VACATION_CANCEL:
      return vacation_cancel(tx);
    case VACATION_FREE_ROOMS:
      return vacation_free_rooms(tx);
    default:
      return prstm_fail(tx, VACATION_REASON_NO_SUCH);
  }
}

/* Read, write and lock set entries per transaction: a book reads every slot
 * of its customer and the free-room word, and writes two words. */
#define VACATION_CAPACITY (VACATION_MAX_SLOTS + 4)

#endif /* VACATION_BODY_H */
