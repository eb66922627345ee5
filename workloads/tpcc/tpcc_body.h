/* tpcc_body.h: TPC-C's NewOrder and Payment over fixed-capacity tables in the shared words, written once for the GPU kernels and the CPU threads. */
#ifndef TPCC_BODY_H
#define TPCC_BODY_H

/* Payment only adds to its warehouse's, district's and customer's totals,
 * and NewOrder to its stock rows: compiled so that those adds commit side
 * by side (with the descriptor's uses_add), which is what keeps hot items
 * and few warehouses from serialising them. Neither type reads a word that
 * either adds to, so every add is prstm_add_unread: no lock and no counter,
 * and the descriptor says so (PRSTM_ADDS_UNREAD_ONLY): the engine keeps no
 * counters of adds, and no commit checks one. A type that reads them
 * (TPC-C's Order-Status reads C_BALANCE, its Stock-Level S_QUANTITY) would
 * make those adds prstm_add, and the descriptor PRSTM_ADDS_COUNTED. */
#define PRSTM_USES_ADD 1
/* A NewOrder writes up to 64 words: its sets keep hash indexes, so that
 * each add finds its word, or its absence, in a slot or two. */
#define PRSTM_WIDE_SETS 1
/* A NewOrder numbers itself from its district's D_NEXT_O_ID with a ticket
 * (prstm_ticket), taken at commit: the NewOrders of a district then meet
 * over the counter only while they commit. */
#define PRSTM_USES_TICKETS 1
#include "prstm_tx.h"
#if !PRSTM_ADDS_COMPILED || !PRSTM_TICKETS_COMPILED
#error "tpcc_body.h must come before any other include of prstm_tx.h (PRSTM_USES_ADD, PRSTM_USES_TICKETS)"
#endif

/* State layout, all 64-bit words, identifiers from 0 (TPC-C's id minus one):
 *   header [0] warehouses W, [1] customers C a district, [2] items I,
 *          [3] slots S, then padding up to TPCC_HEADER_WORDS;
 *   warehouse w: TPCC_LINE words (one 128-byte line: it is the hottest
 *          row): W_YTD, W_TAX (basis points);
 *   district (w, d): TPCC_LINE words: D_YTD, D_NEXT_O_ID (from 1), D_TAX;
 *   customer (w, d, c): C_BALANCE (cents, two's complement), C_YTD_PAYMENT,
 *          C_PAYMENT_CNT, and an info word: C_DISCOUNT (basis points) in
 *          bits 0..15, C_CREDIT bad in bit 16, the C_LAST number in 20..31;
 *   item i, 0 <= i <= I: I_PRICE in cents; item I is the unused item (price
 *          0) that 1% of NewOrders name, so that they roll back;
 *   stock (w, i), 0 <= i <= I: the quantity word, S_YTD, and a word of
 *          counts: S_ORDER_CNT in bits 0..31, S_REMOTE_CNT in 32..63.
 *          TPC-C keeps a quantity between 10 and 100: an order line takes
 *          its quantity, plus 91 where fewer than 10 would remain, which is
 *          a step of -qty modulo 91 on S_QUANTITY - 10. The quantity word
 *          holds the population's S_QUANTITY - 10 in bits 0..6 and the sum
 *          of its order lines' steps, 91 - qty each, above them; S_QUANTITY
 *          is 10 + (the two added) mod 91. So every change of a stock row
 *          is an add (prstm_add_unread): the NewOrders that share an item
 *          commute, and none takes a stock row's lock;
 *   the last-name index of district (w, d): TPCC_NAMES words, name n's
 *          first entry << 32 | its count, then C customer numbers sorted by
 *          (C_LAST, C_FIRST): written once, read with prstm_read_immutable;
 *   slots: S rows of TPCC_SLOT words, row r of the batch inserting into
 *          slot r (its ORDER, NEW-ORDER and ORDER-LINE rows, or its HISTORY
 *          row), claimed by the row number so that inserts never conflict:
 *          no other row touches them, so they are written with
 *          prstm_write_private and take no lock.
 * Only D_NEXT_O_ID, the stock rows, the totals and the slots are written. */
enum { TPCC_NEW_ORDER = 0, TPCC_PAYMENT = 1 };

#define TPCC_DISTRICTS 10u
#define TPCC_NAMES 1000u /* C_LAST numbers 0 .. 999 */
#define TPCC_MAX_LINES 15u
#define TPCC_MIN_LINES 5u
#define TPCC_HEADER_WORDS 16u
#define TPCC_LINE 16u /* words a warehouse or district row fills */
#define TPCC_CUSTOMER 4u
#define TPCC_STOCK 3u
#define TPCC_SLOT (3u + TPCC_MAX_LINES)
#define TPCC_MAX_WAREHOUSES 1024u
#define TPCC_MAX_CUSTOMERS 100000u
#define TPCC_MAX_ITEMS 100000u

/* Field offsets. */
enum { TPCC_W_YTD = 0, TPCC_W_TAX = 1 };
enum { TPCC_D_YTD = 0, TPCC_D_NEXT_O_ID = 1, TPCC_D_TAX = 2 };
enum { TPCC_C_BALANCE = 0, TPCC_C_YTD = 1, TPCC_C_PAYMENT_CNT = 2, TPCC_C_INFO = 3 };
enum { TPCC_S_Q = 0, TPCC_S_YTD = 1, TPCC_S_COUNTS = 2 };
/* S_QUANTITY from the quantity word (see the layout), and the counts from
 * theirs. */
#define TPCC_S_QUANTITY(q) (10u + (((q)&0x7fu) + ((q) >> 7)) % 91u)
#define TPCC_S_ORDER_CNT(v) ((v)&0xffffffffu)
#define TPCC_S_REMOTE_CNT(v) ((v) >> 32)
/* The quantity word of a stock row populated with S_QUANTITY s (10 to 100). */
#define TPCC_S_Q_OF(s) ((uint64_t)(s)-10u)
/* What one order line of quantity qty (1 to 15) adds to the quantity word,
 * and to the counts word (remote or not). */
#define TPCC_S_Q_TAKE(qty) ((91u - (uint64_t)(qty)) << 7)
#define TPCC_S_COUNTS_LINE(remote) (1ull + ((uint64_t)(remote) << 32))

/* A slot's first word: what it holds, and the warehouse and district. */
enum { TPCC_SLOT_EMPTY = 0, TPCC_SLOT_ORDER = 1, TPCC_SLOT_HISTORY = 2 };
#define TPCC_SLOT_HEAD(kind, w, d) ((uint64_t)(kind) | (uint64_t)(d) << 4 | (uint64_t)(w) << 8)
/* An order line in one word: item, supply warehouse, quantity, amount. */
#define TPCC_LINE_WORD(item, sw, qty, amount) \
  ((uint64_t)(item) | (uint64_t)(sw) << 17 | (uint64_t)(qty) << 28 | (uint64_t)(amount) << 32)
#define TPCC_LINE_ITEM(v) ((v)&0x1ffffu)
#define TPCC_LINE_SUPPLY(v) (((v) >> 17) & 0x7ffu)
#define TPCC_LINE_QTY(v) (((v) >> 28) & 0xfu)
#define TPCC_LINE_AMOUNT(v) ((v) >> 32)
/* A history row's customer in one word. */
#define TPCC_HISTORY_CUSTOMER(cw, cd, c) ((uint64_t)(c) | (uint64_t)(cd) << 20 | (uint64_t)(cw) << 24)

/* The type's own failure reasons. */
#define TPCC_REASON_UNUSED_ITEM (PRSTM_REASON_USER + 0) /* TPC-C's 1% rollback */
#define TPCC_REASON_FULL (PRSTM_REASON_USER + 1)        /* the row has no slot */
#define TPCC_REASON_INPUT (PRSTM_REASON_USER + 2)       /* an id out of range */

/* new_order: w, d, c, quantities (4 bits a line, line k at bits 4k), then
 * the list of its lines' stock rows; payment: w, d, c_w, c_d, customer (a
 * number, or a C_LAST number), by_name, amount. */
#define TPCC_COLUMNS (5u + TPCC_MAX_LINES)
/* Writes, the largest set: the district's next order id (the ticket),
 * three adds a line and the slot. */
#define TPCC_CAPACITY (4u + TPCC_STOCK * TPCC_MAX_LINES + TPCC_SLOT)

typedef struct tpcc_layout {
  uint64_t warehouses, customers, items, slots;
  uint64_t warehouse, district, customer, item, stock, names, slot;
} tpcc_layout;

/* The layout from the four sizes; the same arithmetic on the host and in
 * the bodies. */
PRSTM_INLINE void tpcc_layout_of(tpcc_layout *l, uint64_t warehouses, uint64_t customers, uint64_t items,
                                 uint64_t slots) {
  const uint64_t districts = warehouses * TPCC_DISTRICTS;
  l->warehouses = warehouses;
  l->customers = customers;
  l->items = items;
  l->slots = slots;
  l->warehouse = TPCC_HEADER_WORDS;
  l->district = l->warehouse + warehouses * TPCC_LINE;
  l->customer = l->district + districts * TPCC_LINE;
  l->item = l->customer + districts * customers * TPCC_CUSTOMER;
  l->stock = l->item + items + 1;
  l->names = l->stock + warehouses * (items + 1) * TPCC_STOCK;
  l->slot = l->names + districts * (TPCC_NAMES + customers);
}

PRSTM_INLINE uint64_t tpcc_words(const tpcc_layout *l) { return l->slot + l->slots * TPCC_SLOT; }
PRSTM_INLINE uint64_t tpcc_warehouse(const tpcc_layout *l, uint64_t w) { return l->warehouse + w * TPCC_LINE; }
PRSTM_INLINE uint64_t tpcc_district(const tpcc_layout *l, uint64_t w, uint64_t d) {
  return l->district + (w * TPCC_DISTRICTS + d) * TPCC_LINE;
}
PRSTM_INLINE uint64_t tpcc_customer(const tpcc_layout *l, uint64_t w, uint64_t d, uint64_t c) {
  return l->customer + ((w * TPCC_DISTRICTS + d) * l->customers + c) * TPCC_CUSTOMER;
}
PRSTM_INLINE uint64_t tpcc_stock(const tpcc_layout *l, uint64_t w, uint64_t i) {
  return l->stock + (w * (l->items + 1) + i) * TPCC_STOCK;
}
PRSTM_INLINE uint64_t tpcc_names(const tpcc_layout *l, uint64_t w, uint64_t d) {
  return l->names + (w * TPCC_DISTRICTS + d) * (TPCC_NAMES + l->customers);
}
PRSTM_INLINE uint64_t tpcc_slot(const tpcc_layout *l, uint64_t r) { return l->slot + r * TPCC_SLOT; }

/* The layout from the state's header; 0 when the header describes none. */
PRSTM_INLINE int tpcc_read_layout(prstm_tx *tx, tpcc_layout *l) {
  const uint64_t w = prstm_read_immutable(tx, 0), c = prstm_read_immutable(tx, 1);
  const uint64_t i = prstm_read_immutable(tx, 2), s = prstm_read_immutable(tx, 3);
  if (w == 0 || w > TPCC_MAX_WAREHOUSES || c == 0 || c > TPCC_MAX_CUSTOMERS || i == 0 || i > TPCC_MAX_ITEMS) return 0;
  tpcc_layout_of(l, w, c, i, s);
  return tpcc_words(l) == prstm_nwords(tx);
}

/* NewOrder (TPC-C 2.4): takes the district's next order id, and for each
 * line the item's price and the stock row's quantity (less the quantity
 * ordered, plus 91 where fewer than 10 would remain: an add to the quantity
 * word, see the layout), year-to-date and counts; inserts the ORDER,
 * NEW-ORDER and ORDER-LINE rows into the row's slot. A line naming the unused item rolls the whole order back (a failure
 * with its own reason: nothing is written). The order's total (TPC-C's
 * output to the terminal) is not kept: results are read-only types'. */
PRSTM_INLINE int tpcc_new_order(prstm_tx *tx) {
  tpcc_layout l;
  if (!tpcc_read_layout(tx, &l)) return prstm_fail(tx, TPCC_REASON_INPUT);
  const uint64_t w = prstm_arg(tx, 0), d = prstm_arg(tx, 1), c = prstm_arg(tx, 2);
  const uint64_t quantities = prstm_arg(tx, 3), n = prstm_arg(tx, 4);
  if (w >= l.warehouses || d >= TPCC_DISTRICTS || c >= l.customers || n < 1 || n > TPCC_MAX_LINES)
    return prstm_fail(tx, TPCC_REASON_INPUT);
  const uint64_t row = prstm_row(tx);
  if (row >= l.slots) return prstm_fail(tx, TPCC_REASON_FULL);
  /* The items first: they are never written, and an unused one ends the
   * order before it touches a shared word. */
  for (uint64_t k = 0; k < n && prstm_ok(tx); k++) {
    const uint64_t at = prstm_arg(tx, 5 + (unsigned)k);
    const uint64_t qty = (quantities >> (4 * k)) & 0xfu;
    if (at < l.stock || at >= l.names || (at - l.stock) % TPCC_STOCK != 0 || qty == 0)
      return prstm_fail(tx, TPCC_REASON_INPUT);
    const uint64_t item = (at - l.stock) / TPCC_STOCK % (l.items + 1);
    if (prstm_read_immutable(tx, l.item + item) == 0) return prstm_fail(tx, TPCC_REASON_UNUSED_ITEM);
  }
  const uint64_t slot = tpcc_slot(&l, row);
  uint64_t all_local = 1;
  for (uint64_t k = 0; k < n && prstm_ok(tx); k++) {
    const uint64_t at = prstm_arg(tx, 5 + (unsigned)k), qty = (quantities >> (4 * k)) & 0xfu;
    const uint64_t sw = (at - l.stock) / TPCC_STOCK / (l.items + 1), item = (at - l.stock) / TPCC_STOCK % (l.items + 1);
    prstm_add_unread(tx, at + TPCC_S_Q, TPCC_S_Q_TAKE(qty));
    prstm_add_unread(tx, at + TPCC_S_YTD, qty);
    prstm_add_unread(tx, at + TPCC_S_COUNTS, TPCC_S_COUNTS_LINE(sw != w));
    if (sw != w) all_local = 0;
    const uint64_t amount = qty * prstm_read_immutable(tx, l.item + item);
    prstm_write_private(tx, slot + 3 + k, TPCC_LINE_WORD(item, sw, qty, amount));
  }
  /* The order id is the district's D_NEXT_O_ID, which goes up by one: a
   * ticket, taken at commit under the counter's lock, so that the
   * NewOrders of a district, which all meet that word, do not abort one
   * another over it from a read to their commit. Its destination, the
   * ORDER row's id, is the row's own like the rest of the slot: written
   * privately first, it takes no lock either. */
  prstm_write_private(tx, slot + 1, 0);
  prstm_ticket(tx, tpcc_district(&l, w, d) + TPCC_D_NEXT_O_ID, slot + 1);
  prstm_write_private(tx, slot, TPCC_SLOT_HEAD(TPCC_SLOT_ORDER, w, d));
  prstm_write_private(tx, slot + 2, c | n << 32 | all_local << 40);
  return PRSTM_COMMIT;
}

/* Payment (TPC-C 2.5): adds the amount to the warehouse's and district's
 * year-to-date and to the customer's year-to-date payment and count, takes
 * it from the customer's balance, and inserts the HISTORY row into the
 * row's slot. By name, the customer is the middle one (position n/2
 * rounded up) of the district's customers with that C_LAST, sorted by
 * C_FIRST; the index is never written. */
PRSTM_INLINE int tpcc_payment(prstm_tx *tx) {
  tpcc_layout l;
  if (!tpcc_read_layout(tx, &l)) return prstm_fail(tx, TPCC_REASON_INPUT);
  const uint64_t w = prstm_arg(tx, 0), d = prstm_arg(tx, 1), cw = prstm_arg(tx, 2), cd = prstm_arg(tx, 3);
  uint64_t c = prstm_arg(tx, 4);
  const uint64_t by_name = prstm_arg(tx, 5), amount = prstm_arg(tx, 6);
  if (w >= l.warehouses || cw >= l.warehouses || d >= TPCC_DISTRICTS || cd >= TPCC_DISTRICTS || by_name > 1)
    return prstm_fail(tx, TPCC_REASON_INPUT);
  if (by_name) {
    if (c >= TPCC_NAMES) return prstm_fail(tx, TPCC_REASON_INPUT);
    const uint64_t names = tpcc_names(&l, cw, cd), entry = prstm_read_immutable(tx, names + c);
    const uint64_t count = entry & 0xffffffffu;
    if (count == 0) return prstm_fail(tx, TPCC_REASON_INPUT);
    c = prstm_read_immutable(tx, names + TPCC_NAMES + (entry >> 32) + (count - 1) / 2);
  }
  if (c >= l.customers) return prstm_fail(tx, TPCC_REASON_INPUT);
  const uint64_t row = prstm_row(tx);
  if (row >= l.slots) return prstm_fail(tx, TPCC_REASON_FULL);
  const uint64_t cust = tpcc_customer(&l, cw, cd, c);
  prstm_add_unread(tx, tpcc_warehouse(&l, w) + TPCC_W_YTD, amount);
  prstm_add_unread(tx, tpcc_district(&l, w, d) + TPCC_D_YTD, amount);
  prstm_add_unread(tx, cust + TPCC_C_BALANCE, (uint64_t)0 - amount);
  prstm_add_unread(tx, cust + TPCC_C_YTD, amount);
  prstm_add_unread(tx, cust + TPCC_C_PAYMENT_CNT, 1);
  const uint64_t slot = tpcc_slot(&l, row);
  prstm_write_private(tx, slot, TPCC_SLOT_HEAD(TPCC_SLOT_HISTORY, w, d));
  prstm_write_private(tx, slot + 1, TPCC_HISTORY_CUSTOMER(cw, cd, c));
  prstm_write_private(tx, slot + 2, amount);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int tpcc_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case TPCC_NEW_ORDER:
      return tpcc_new_order(tx);
    case TPCC_PAYMENT:
      return tpcc_payment(tx);
    default:
      return prstm_fail(tx, TPCC_REASON_INPUT);
  }
}

#endif /* TPCC_BODY_H */
