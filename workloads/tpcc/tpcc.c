/* tpcc.c: the tpcc workload's host side: types, knobs, the tables' initial population, TPC-C's input generator (NURand) and the consistency conditions as the invariant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpcc_body.h"
#include "../workload_util.h"

PRSTM_CPU_WORKER(tpcc_all, tpcc_dispatch, TPCC_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(tpcc_all);

static const prstm_type_desc tpcc_types[] = {
    [TPCC_NEW_ORDER] = {.name = "new_order",
                        .tag = 0,
                        .read_only = 0,
                        .nargs = 5,
                        .args = {{"w", PRSTM_ARG_UINT},
                                 {"d", PRSTM_ARG_UINT},
                                 {"c", PRSTM_ARG_UINT},
                                 {"quantities", PRSTM_ARG_UINT},
                                 {"stock", PRSTM_ARG_ADDRESS_LIST}},
                        .reasons = {"unused item", "no slot", "bad input", NULL}},
    [TPCC_PAYMENT] = {.name = "payment",
                      .tag = 0,
                      .read_only = 0,
                      .nargs = 7,
                      .args = {{"w", PRSTM_ARG_UINT},
                               {"d", PRSTM_ARG_UINT},
                               {"c_w", PRSTM_ARG_UINT},
                               {"c_d", PRSTM_ARG_UINT},
                               {"customer", PRSTM_ARG_UINT},
                               {"by_name", PRSTM_ARG_UINT},
                               {"amount", PRSTM_ARG_UINT}},
                      .reasons = {"unused item", "no slot", "bad input", NULL}},
};

enum {
  TP_WAREHOUSES = 0,
  TP_CUSTOMERS,
  TP_ITEMS,
  TP_SLOTS,
  TP_SEED,
  TP_ROLLBACK,
  TP_REMOTE_LINE,
  TP_REMOTE_PAYMENT,
  TP_BY_NAME,
  TP_COUNT
};
static const prstm_param_desc tpcc_params[TP_COUNT] = {
    {"warehouses", PRSTM_PARAM_STATE, 4, 1, TPCC_MAX_WAREHOUSES, 1, "warehouses (TPC-C's scale; few: hot districts)"},
    {"customers", PRSTM_PARAM_STATE, 3000, 1, TPCC_MAX_CUSTOMERS, 1, "customers a district (TPC-C: 3000)"},
    {"items", PRSTM_PARAM_STATE, 100000, 1, TPCC_MAX_ITEMS, 1,
     "items, each stocked by every warehouse (TPC-C: 100000)"},
    {"slots", PRSTM_PARAM_STATE, 1000000, 0, 1e10, 1,
     "insert slots: row r of the batch inserts its order or history row into slot r (at least the batch's rows)"},
    {"seed", PRSTM_PARAM_STATE, 1, 0, 9007199254740991.0, 1, "seed of the initial population"},
    {"rollback", PRSTM_PARAM_GENERATE, 0.01, 0, 1, 0, "share of new orders naming the unused item (TPC-C: 0.01)"},
    {"remote_line", PRSTM_PARAM_GENERATE, 0.01, 0, 1, 0,
     "share of order lines supplied by another warehouse (TPC-C: 0.01)"},
    {"remote_payment", PRSTM_PARAM_GENERATE, 0.15, 0, 1, 0,
     "share of payments by a customer of another warehouse (TPC-C: 0.15)"},
    {"by_name", PRSTM_PARAM_GENERATE, 0.6, 0, 1, 0, "share of payments naming the customer by last name (TPC-C: 0.6)"},
};

/* TPC-C 2.1.6's constants C of NURand: C_LAST's at load and at run differ
 * by 66, within the range the specification allows. */
#define TPCC_C_LAST_LOAD 157u
#define TPCC_C_LAST_RUN 223u
#define TPCC_C_ID 259u
#define TPCC_C_ITEM 7911u

/* NURand(A, x, y) of TPC-C 2.1.6. */
static uint64_t tpcc_nurand(uint64_t *rng, uint64_t a, uint64_t x, uint64_t y, uint64_t c) {
  const uint64_t r1 = wl_below(rng, a + 1), r2 = x + wl_below(rng, y - x + 1);
  return (((r1 | r2) + c) % (y - x + 1)) + x;
}

/* Initial values (TPC-C 4.3.3.1), money in cents. */
#define TPCC_W_YTD_INITIAL 30000000u
#define TPCC_D_YTD_INITIAL 3000000u
#define TPCC_C_BALANCE_INITIAL ((uint64_t)0 - 1000u)
#define TPCC_C_YTD_INITIAL 1000u

static int tpcc_layout_of_spec(const prstm_state_spec *spec, tpcc_layout *l, char *err, size_t errlen) {
  const double *p = spec->params;
  if (p[TP_WAREHOUSES] < 1 || p[TP_WAREHOUSES] > TPCC_MAX_WAREHOUSES || p[TP_CUSTOMERS] < 1 ||
      p[TP_CUSTOMERS] > TPCC_MAX_CUSTOMERS || p[TP_ITEMS] < 1 || p[TP_ITEMS] > TPCC_MAX_ITEMS) {
    snprintf(err, errlen, "state.warehouses, customers and items: expected 1 to %u, %u and %u", TPCC_MAX_WAREHOUSES,
             TPCC_MAX_CUSTOMERS, TPCC_MAX_ITEMS);
    return PRSTM_ECONFIG;
  }
  tpcc_layout_of(l, (uint64_t)p[TP_WAREHOUSES], (uint64_t)p[TP_CUSTOMERS], (uint64_t)p[TP_ITEMS],
                 (uint64_t)p[TP_SLOTS]);
  return 0;
}

typedef struct tpcc_name_entry {
  uint64_t last, first, c;
} tpcc_name_entry;

static int tpcc_name_cmp(const void *a, const void *b) {
  const tpcc_name_entry *x = a, *y = b;
  if (x->last != y->last) return x->last < y->last ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return (x->c > y->c) - (x->c < y->c);
}

/* TPC-C's population, from state.seed: taxes, discounts, credit, last
 * names (the first 1000 customers of a district take names 0 to 999, the
 * rest NURand(255, 0, 999)), prices and quantities; every order table
 * starts empty (D_NEXT_O_ID 1), and item I is the unused item. */
static int tpcc_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                           size_t errlen) {
  tpcc_layout l;
  int rc = tpcc_layout_of_spec(spec, &l, err, errlen);
  if (rc) return rc;
  const uint64_t n = tpcc_words(&l);
  prstm_word *w = calloc((size_t)n, sizeof *w);
  tpcc_name_entry *names = malloc((size_t)l.customers * sizeof *names);
  if (!w || !names) {
    free(w);
    free(names);
    snprintf(err, errlen, "cannot allocate %llu words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  uint64_t rng = (uint64_t)spec->params[TP_SEED] ^ 0x7c3a9d2e51f08b64ull;
  w[0] = l.warehouses;
  w[1] = l.customers;
  w[2] = l.items;
  w[3] = l.slots;
  for (uint64_t i = 0; i < l.items; i++) w[l.item + i] = 100 + wl_below(&rng, 9901);
  for (uint64_t wh = 0; wh < l.warehouses; wh++) {
    w[tpcc_warehouse(&l, wh) + TPCC_W_YTD] = TPCC_W_YTD_INITIAL;
    w[tpcc_warehouse(&l, wh) + TPCC_W_TAX] = wl_below(&rng, 2001);
    for (uint64_t i = 0; i <= l.items; i++) w[tpcc_stock(&l, wh, i) + TPCC_S_Q] = TPCC_S_Q_OF(10 + wl_below(&rng, 91));
    for (uint64_t d = 0; d < TPCC_DISTRICTS; d++) {
      const uint64_t dist = tpcc_district(&l, wh, d);
      w[dist + TPCC_D_YTD] = TPCC_D_YTD_INITIAL;
      w[dist + TPCC_D_NEXT_O_ID] = 1;
      w[dist + TPCC_D_TAX] = wl_below(&rng, 2001);
      for (uint64_t c = 0; c < l.customers; c++) {
        const uint64_t at = tpcc_customer(&l, wh, d, c);
        const uint64_t last = c < TPCC_NAMES ? c : tpcc_nurand(&rng, 255, 0, TPCC_NAMES - 1, TPCC_C_LAST_LOAD);
        w[at + TPCC_C_BALANCE] = TPCC_C_BALANCE_INITIAL;
        w[at + TPCC_C_YTD] = TPCC_C_YTD_INITIAL;
        w[at + TPCC_C_PAYMENT_CNT] = 1;
        w[at + TPCC_C_INFO] = wl_below(&rng, 5001) | (uint64_t)(wl_below(&rng, 10) == 0) << 16 | last << 20;
        names[c] = (tpcc_name_entry){last, wl_rand(&rng), c};
      }
      /* The last-name index: each name's run of customers, by C_FIRST. */
      qsort(names, (size_t)l.customers, sizeof *names, tpcc_name_cmp);
      const uint64_t idx = tpcc_names(&l, wh, d);
      for (uint64_t k = 0; k < l.customers; k++) {
        w[idx + TPCC_NAMES + k] = names[k].c;
        if (k == 0 || names[k].last != names[k - 1].last) w[idx + names[k].last] = k << 32;
        w[idx + names[k].last]++;
      }
    }
  }
  free(names);
  *words = w;
  *nwords = n;
  return 0;
}

/* What every block of a generated batch shares, read only. */
typedef struct tpcc_blocks {
  tpcc_layout l;
  double cumulative[2];
  double rollback, remote_line, remote_payment, by_name;
} tpcc_blocks;

/* Another warehouse than w, uniform (w itself when there is no other). */
static uint64_t tpcc_other_warehouse(uint64_t *rng, uint64_t w, uint64_t warehouses) {
  if (warehouses < 2) return w;
  const uint64_t o = wl_below(rng, warehouses - 1);
  return o >= w ? o + 1 : o;
}

/* TPC-C 2.4.1 and 2.5.1's inputs, a terminal's home warehouse and district
 * drawn uniformly for each row. */
static int tpcc_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const tpcc_blocks *tb = ctx;
  const tpcc_layout *l = &tb->l;
  int rc = 0;
  (void)first;
  for (uint64_t t = 0; rc == 0 && t < rows; t++) {
    const unsigned type = wl_pick(rng, tb->cumulative, 2);
    const uint64_t w = wl_below(rng, l->warehouses), d = wl_below(rng, TPCC_DISTRICTS);
    prstm_word args[5 + TPCC_MAX_LINES];
    if (type == TPCC_NEW_ORDER) {
      const uint64_t c = tpcc_nurand(rng, 1023, 1, l->customers, TPCC_C_ID) - 1;
      const uint64_t n = TPCC_MIN_LINES + wl_below(rng, TPCC_MAX_LINES - TPCC_MIN_LINES + 1);
      const int rollback = wl_unit(rng) < tb->rollback;
      uint64_t items[TPCC_MAX_LINES], quantities = 0;
      for (uint64_t k = 0; k < n; k++) {
        /* Distinct items within an order. */
        uint64_t item;
        int again;
        do {
          item = tpcc_nurand(rng, 8191, 1, l->items, TPCC_C_ITEM) - 1;
          again = 0;
          for (uint64_t j = 0; j < k; j++) again |= items[j] == item;
        } while (again && l->items > TPCC_MAX_LINES);
        items[k] = item;
        if (rollback && k == n - 1) items[k] = l->items;
        const uint64_t sw = wl_unit(rng) < tb->remote_line ? tpcc_other_warehouse(rng, w, l->warehouses) : w;
        quantities |= (1 + wl_below(rng, 10)) << (4 * k);
        args[5 + k] = tpcc_stock(l, sw, items[k]);
      }
      args[0] = w;
      args[1] = d;
      args[2] = c;
      args[3] = quantities;
      args[4] = n;
      rc = txtable_append_generated(part, TPCC_NEW_ORDER, args, (unsigned)(5 + n));
    } else {
      uint64_t cw = w, cd = d;
      if (wl_unit(rng) < tb->remote_payment && l->warehouses > 1) {
        cw = tpcc_other_warehouse(rng, w, l->warehouses);
        cd = wl_below(rng, TPCC_DISTRICTS);
      }
      const int by_name = wl_unit(rng) < tb->by_name;
      /* Names 0 to 999 each have a customer only from 1000 customers a
       * district on; below that, names 0 to customers - 1 do. */
      const uint64_t names = l->customers < TPCC_NAMES ? l->customers : TPCC_NAMES;
      const uint64_t who = by_name ? tpcc_nurand(rng, 255, 0, TPCC_NAMES - 1, TPCC_C_LAST_RUN) % names
                                   : tpcc_nurand(rng, 1023, 1, l->customers, TPCC_C_ID) - 1;
      args[0] = w;
      args[1] = d;
      args[2] = cw;
      args[3] = cd;
      args[4] = who;
      args[5] = (uint64_t)by_name;
      args[6] = 100 + wl_below(rng, 500000 - 100 + 1);
      rc = txtable_append_generated(part, TPCC_PAYMENT, args, 7);
    }
  }
  return rc;
}

/* `transactions` rows of the mix (half NewOrder, half Payment by default). */
static int tpcc_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch, char *err,
                         size_t errlen) {
  if (spec->semantic_ratio != 0) {
    snprintf(err, errlen, "semantic_ratio: tpcc's transactions have no semantic dependencies (got %g)",
             spec->semantic_ratio);
    return PRSTM_ECONFIG;
  }
  if (spec->read_only >= 0) {
    snprintf(err, errlen, "read_only: tpcc's NewOrder and Payment both write; set the mix instead");
    return PRSTM_ECONFIG;
  }
  tpcc_blocks tb;
  memset(&tb, 0, sizeof tb);
  int rc = tpcc_layout_of_spec(state, &tb.l, err, errlen);
  if (rc) return rc;
  double weight[2] = {0.5, 0.5};
  if ((rc = wl_mix_weights(spec, batch, weight, 2, NULL, err, errlen)) != 0 ||
      (rc = wl_cumulate(weight, tb.cumulative, 2, err, errlen)) != 0)
    return rc;
  if (prstm_batch_size(batch) + spec->transactions > tb.l.slots) {
    snprintf(err, errlen,
             "state.slots: %llu slots for a batch of %llu rows; every row inserts into a slot of its own, so "
             "give state.slots at least the number of rows",
             (unsigned long long)tb.l.slots, (unsigned long long)(prstm_batch_size(batch) + spec->transactions));
    return PRSTM_ECONFIG;
  }
  tb.rollback = spec->params[TP_ROLLBACK];
  tb.remote_line = spec->params[TP_REMOTE_LINE];
  tb.remote_payment = spec->params[TP_REMOTE_PAYMENT];
  tb.by_name = spec->params[TP_BY_NAME];
  /* A NewOrder packs its lines' quantities 4 bits each, more than 32 bits
   * past eight lines: the batch is made wide at once rather than when the
   * first such row arrives, which would make every block again. */
  if (weight[0] > 0 && spec->transactions && (rc = txtable_widen(batch)) != 0)
    return wl_generated(batch, rc, 0, err, errlen);
  rc = wl_generate_blocks(batch, spec->transactions, spec->seed, spec->threads, 5 + TPCC_MAX_LINES, tpcc_make_block,
                          &tb);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

/* ---- The invariant ---- */

typedef struct tpcc_check {
  const prstm_word *w;
  tpcc_layout l;
  char *msg;
  size_t msglen;
  /* Expected totals from the committed rows. */
  uint64_t *w_ytd, *d_ytd, *c_ytd, *c_count, *s_ytd, *s_counts, *s_taken;
  uint64_t *order_ids; /* district << 40 | o_id of each committed order */
  uint64_t norders, new_orders, rolled_back, bad_input, payments, lines;
} tpcc_check;

static int tpcc_bad(tpcc_check *k, uint64_t row, const char *why) {
  snprintf(k->msg, k->msglen, "row %llu: %s", (unsigned long long)row, why);
  return 0;
}

/* A row its body must fail (`due`: the unused item's rollback, or bad
 * input) failed with that reason and wrote nothing. */
static int tpcc_failed_as_due(tpcc_check *k, uint64_t r, prstm_status st, unsigned reason, unsigned due) {
  if (st != PRSTM_FAILED || reason != due)
    return tpcc_bad(k, r,
                    due == TPCC_REASON_UNUSED_ITEM ? "a new order naming the unused item did not roll back"
                                                   : "a row with bad input (an id out of range, a line that is not a "
                                                     "stock row, a quantity of 0) did not fail for it");
  if (k->w[tpcc_slot(&k->l, r)] != TPCC_SLOT_EMPTY) return tpcc_bad(k, r, "a failed row left rows in its slot");
  if (due == TPCC_REASON_UNUSED_ITEM)
    k->rolled_back++;
  else
    k->bad_input++;
  return 1;
}

/* A NewOrder against its slot; 1 when it holds. The reason it must fail
 * for, if any, comes from the same checks in the same order as the body's. */
static int tpcc_check_new_order(tpcc_check *k, const prstm_batch *batch, uint64_t r, prstm_status st, unsigned reason) {
  const tpcc_layout *l = &k->l;
  const uint64_t w = prstm_batch_arg(batch, r, 0), d = prstm_batch_arg(batch, r, 1), c = prstm_batch_arg(batch, r, 2);
  const uint64_t quantities = prstm_batch_arg(batch, r, 3), n = prstm_batch_arg(batch, r, 4);
  const prstm_word *slot = &k->w[tpcc_slot(l, r)];
  unsigned due = 0;
  if (w >= l->warehouses || d >= TPCC_DISTRICTS || c >= l->customers || n < 1 || n > TPCC_MAX_LINES)
    due = TPCC_REASON_INPUT;
  for (uint64_t j = 0; !due && j < n; j++) {
    const uint64_t at = prstm_batch_arg(batch, r, 5 + (unsigned)j), qty = (quantities >> (4 * j)) & 0xfu;
    if (at < l->stock || at >= l->names || (at - l->stock) % TPCC_STOCK || qty == 0)
      due = TPCC_REASON_INPUT;
    else if ((at - l->stock) / TPCC_STOCK % (l->items + 1) == l->items)
      due = TPCC_REASON_UNUSED_ITEM;
  }
  if (due) return tpcc_failed_as_due(k, r, st, reason, due);
  if (st != PRSTM_COMMITTED) return tpcc_bad(k, r, "a new order that did not commit");
  if (slot[0] != TPCC_SLOT_HEAD(TPCC_SLOT_ORDER, w, d) || (slot[2] & 0xffffffffu) != c ||
      ((slot[2] >> 32) & 0xffu) != n)
    return tpcc_bad(k, r, "its ORDER row does not match it");
  uint64_t all_local = 1;
  for (uint64_t j = 0; j < TPCC_MAX_LINES; j++) {
    if (j >= n) {
      if (slot[3 + j] != 0) return tpcc_bad(k, r, "an ORDER-LINE row past O_OL_CNT");
      continue;
    }
    const uint64_t at = prstm_batch_arg(batch, r, 5 + (unsigned)j), qty = (quantities >> (4 * j)) & 0xfu;
    const uint64_t idx = (at - l->stock) / TPCC_STOCK, sw = idx / (l->items + 1), item = idx % (l->items + 1);
    if (slot[3 + j] != TPCC_LINE_WORD(item, sw, qty, qty * k->w[l->item + item]))
      return tpcc_bad(k, r, "an ORDER-LINE row does not match its line");
    if (sw != w) all_local = 0;
    k->s_ytd[idx] += qty;
    k->s_counts[idx] += TPCC_S_COUNTS_LINE(sw != w);
    k->s_taken[idx] += TPCC_S_Q_TAKE(qty);
    k->lines++;
  }
  if ((slot[2] >> 40) != all_local) return tpcc_bad(k, r, "O_ALL_LOCAL is wrong");
  k->order_ids[k->norders++] = (w * TPCC_DISTRICTS + d) << 40 | slot[1];
  k->new_orders++;
  return 1;
}

/* A Payment against its slot and totals, its bad input found as the body
 * finds it; 1 when it holds. */
static int tpcc_check_payment(tpcc_check *k, const prstm_batch *batch, uint64_t r, prstm_status st, unsigned reason) {
  const tpcc_layout *l = &k->l;
  const uint64_t w = prstm_batch_arg(batch, r, 0), d = prstm_batch_arg(batch, r, 1);
  const uint64_t cw = prstm_batch_arg(batch, r, 2), cd = prstm_batch_arg(batch, r, 3);
  const uint64_t who = prstm_batch_arg(batch, r, 4), by_name = prstm_batch_arg(batch, r, 5);
  const uint64_t amount = prstm_batch_arg(batch, r, 6);
  if (w >= l->warehouses || cw >= l->warehouses || d >= TPCC_DISTRICTS || cd >= TPCC_DISTRICTS || by_name > 1)
    return tpcc_failed_as_due(k, r, st, reason, TPCC_REASON_INPUT);
  uint64_t c = who;
  if (by_name) {
    /* The middle customer of the name, through the index that
     * tpcc_check_names has checked against the customers' names. */
    const uint64_t idx = tpcc_names(l, cw, cd);
    const uint64_t entry = who < TPCC_NAMES ? k->w[idx + who] : 0, count = entry & 0xffffffffu;
    if (count == 0) return tpcc_failed_as_due(k, r, st, reason, TPCC_REASON_INPUT);
    c = k->w[idx + TPCC_NAMES + (entry >> 32) + (count - 1) / 2];
  }
  if (c >= l->customers) return tpcc_failed_as_due(k, r, st, reason, TPCC_REASON_INPUT);
  if (st != PRSTM_COMMITTED) return tpcc_bad(k, r, "a payment did not commit");
  const prstm_word *slot = &k->w[tpcc_slot(l, r)];
  if (slot[0] != TPCC_SLOT_HEAD(TPCC_SLOT_HISTORY, w, d) || slot[1] != TPCC_HISTORY_CUSTOMER(cw, cd, c) ||
      slot[2] != amount)
    return tpcc_bad(k, r, "its HISTORY row does not match it");
  k->w_ytd[w] += amount;
  k->d_ytd[w * TPCC_DISTRICTS + d] += amount;
  k->c_ytd[(cw * TPCC_DISTRICTS + cd) * l->customers + c] += amount;
  k->c_count[(cw * TPCC_DISTRICTS + cd) * l->customers + c]++;
  k->payments++;
  return 1;
}

/* Each district's last-name index: its runs cover the customer list in
 * order, each customer once, and each run holds customers of its name. */
static int tpcc_check_names(tpcc_check *k) {
  const tpcc_layout *l = &k->l;
  unsigned char *seen = malloc((size_t)l->customers);
  if (!seen) {
    snprintf(k->msg, k->msglen, "cannot allocate the invariant's index check");
    return -1;
  }
  int holds = 1;
  for (uint64_t di = 0; holds && di < l->warehouses * TPCC_DISTRICTS; di++) {
    const prstm_word *idx = &k->w[tpcc_names(l, di / TPCC_DISTRICTS, di % TPCC_DISTRICTS)];
    memset(seen, 0, (size_t)l->customers);
    uint64_t next = 0;
    for (uint64_t name = 0; holds && name < TPCC_NAMES; name++) {
      const uint64_t off = idx[name] >> 32, count = idx[name] & 0xffffffffu;
      if (count && off != next) holds = 0;
      for (uint64_t j = 0; holds && j < count; j++) {
        const uint64_t c = off + j < l->customers ? idx[TPCC_NAMES + off + j] : l->customers;
        holds = c < l->customers && !seen[c] &&
                (k->w[tpcc_customer(l, di / TPCC_DISTRICTS, di % TPCC_DISTRICTS, c) + TPCC_C_INFO] >> 20) == name;
        if (holds) seen[c] = 1;
      }
      next += count;
    }
    if (holds && next != l->customers) holds = 0;
    if (!holds)
      snprintf(k->msg, k->msglen, "the last-name index of district %llu of warehouse %llu is wrong",
               (unsigned long long)(di % TPCC_DISTRICTS), (unsigned long long)(di / TPCC_DISTRICTS));
  }
  free(seen);
  return holds;
}

static int tpcc_u64_cmp(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The tables against the totals of the committed rows. */
static int tpcc_check_tables(tpcc_check *k) {
  const tpcc_layout *l = &k->l;
  const prstm_word *w = k->w;
  const uint64_t districts = l->warehouses * TPCC_DISTRICTS;
  qsort(k->order_ids, (size_t)k->norders, sizeof *k->order_ids, tpcc_u64_cmp);
  uint64_t at = 0;
  for (uint64_t wh = 0; wh < l->warehouses; wh++) {
    uint64_t d_sum = 0;
    for (uint64_t d = 0; d < TPCC_DISTRICTS; d++) {
      const uint64_t dist = tpcc_district(l, wh, d), di = wh * TPCC_DISTRICTS + d;
      d_sum += w[dist + TPCC_D_YTD];
      /* Conditions 2 and 3: the district's orders (all of them new orders,
       * as no Delivery runs) are exactly 1 .. D_NEXT_O_ID - 1, once each. */
      uint64_t expect = 1;
      for (; at < k->norders && (k->order_ids[at] >> 40) == di; at++, expect++)
        if ((k->order_ids[at] & ((1ull << 40) - 1)) != expect) {
          snprintf(k->msg, k->msglen,
                   "condition 2: district %llu of warehouse %llu has order ids that are not 1 to D_NEXT_O_ID - 1 "
                   "once each (order %llu where %llu was due)",
                   (unsigned long long)d, (unsigned long long)wh,
                   (unsigned long long)(k->order_ids[at] & ((1ull << 40) - 1)), (unsigned long long)expect);
          return 0;
        }
      if (w[dist + TPCC_D_NEXT_O_ID] != expect) {
        snprintf(k->msg, k->msglen, "condition 2: district %llu of warehouse %llu: D_NEXT_O_ID %llu, orders to %llu",
                 (unsigned long long)d, (unsigned long long)wh, (unsigned long long)w[dist + TPCC_D_NEXT_O_ID],
                 (unsigned long long)(expect - 1));
        return 0;
      }
      if (w[dist + TPCC_D_YTD] != TPCC_D_YTD_INITIAL + k->d_ytd[di]) {
        snprintf(k->msg, k->msglen,
                 "condition 9: D_YTD of district %llu of warehouse %llu is not the sum of its history",
                 (unsigned long long)d, (unsigned long long)wh);
        return 0;
      }
    }
    if (w[tpcc_warehouse(l, wh) + TPCC_W_YTD] != d_sum) {
      snprintf(k->msg, k->msglen, "condition 1: W_YTD of warehouse %llu is not the sum of its districts' D_YTD",
               (unsigned long long)wh);
      return 0;
    }
    if (w[tpcc_warehouse(l, wh) + TPCC_W_YTD] != TPCC_W_YTD_INITIAL + k->w_ytd[wh]) {
      snprintf(k->msg, k->msglen, "condition 8: W_YTD of warehouse %llu is not the sum of its history",
               (unsigned long long)wh);
      return 0;
    }
    for (uint64_t i = 0; i <= l->items; i++) {
      const uint64_t s = tpcc_stock(l, wh, i), idx = wh * (l->items + 1) + i;
      /* The quantity word: the population's S_QUANTITY - 10 below the
       * committed lines' steps. */
      const uint64_t q = w[s + TPCC_S_Q];
      if ((q & 0x7fu) > TPCC_S_Q_OF(100) || (q & ~(uint64_t)0x7fu) != k->s_taken[idx] ||
          w[s + TPCC_S_YTD] != k->s_ytd[idx] || w[s + TPCC_S_COUNTS] != k->s_counts[idx]) {
        snprintf(k->msg, k->msglen,
                 "stock of item %llu at warehouse %llu: quantity, year-to-date or counts do not match the "
                 "committed order lines",
                 (unsigned long long)i, (unsigned long long)wh);
        return 0;
      }
    }
  }
  for (uint64_t i = 0; i < districts * l->customers; i++) {
    const uint64_t c = l->customer + i * TPCC_CUSTOMER;
    if (w[c + TPCC_C_YTD] != TPCC_C_YTD_INITIAL + k->c_ytd[i] || w[c + TPCC_C_PAYMENT_CNT] != 1 + k->c_count[i] ||
        w[c + TPCC_C_BALANCE] + w[c + TPCC_C_YTD] != 0) {
      snprintf(k->msg, k->msglen,
               "customer %llu of district %llu: balance, year-to-date payment or payment count do not match "
               "its history",
               (unsigned long long)(i % l->customers), (unsigned long long)(i / l->customers));
      return 0;
    }
  }
  return 1;
}

/* TPC-C's consistency conditions 1 to 4 (with every order a new order, as
 * no Delivery runs), conditions 8 and 9, and more from the batch: every row
 * committed, or rolled back for the unused item it names, or failed for its
 * bad input (writing nothing either way); every slot holds
 * exactly its row's ORDER and ORDER-LINE rows or its HISTORY row; each
 * stock row's year-to-date and counts, and each customer's totals, are
 * those of the committed rows. */
static int tpcc_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg,
                                size_t msglen) {
  uint64_t nwords = 0;
  tpcc_check k;
  memset(&k, 0, sizeof k);
  k.w = prstm_engine_state(engine, &nwords);
  k.msg = msg;
  k.msglen = msglen;
  *ok = 0;
  const prstm_word *w = k.w;
  if (nwords < TPCC_HEADER_WORDS || w[0] < 1 || w[0] > TPCC_MAX_WAREHOUSES || w[1] < 1 || w[1] > TPCC_MAX_CUSTOMERS ||
      w[2] < 1 || w[2] > TPCC_MAX_ITEMS) {
    snprintf(msg, msglen, "the header does not describe the state");
    return 0;
  }
  tpcc_layout_of(&k.l, w[0], w[1], w[2], w[3]);
  const uint64_t n = prstm_batch_size(batch);
  if (tpcc_words(&k.l) != nwords) {
    snprintf(msg, msglen, "the header does not describe the state");
    return 0;
  }
  if (n > k.l.slots) {
    snprintf(msg, msglen,
             "%llu rows for %llu slots: rows from %llu on failed with no slot; give state.slots at least the "
             "batch's rows",
             (unsigned long long)n, (unsigned long long)k.l.slots, (unsigned long long)k.l.slots);
    return 0;
  }
  const uint64_t districts = k.l.warehouses * TPCC_DISTRICTS, stock = k.l.warehouses * (k.l.items + 1);
  k.w_ytd = calloc((size_t)k.l.warehouses, sizeof *k.w_ytd);
  k.d_ytd = calloc((size_t)districts, sizeof *k.d_ytd);
  k.c_ytd = calloc((size_t)(districts * k.l.customers), sizeof *k.c_ytd);
  k.c_count = calloc((size_t)(districts * k.l.customers), sizeof *k.c_count);
  k.s_ytd = calloc((size_t)stock, sizeof *k.s_ytd);
  k.s_counts = calloc((size_t)stock, sizeof *k.s_counts);
  k.s_taken = calloc((size_t)stock, sizeof *k.s_taken);
  k.order_ids = malloc((size_t)(n ? n : 1) * sizeof *k.order_ids);
  int rc = 0, holds = 1;
  if (!k.w_ytd || !k.d_ytd || !k.c_ytd || !k.c_count || !k.s_ytd || !k.s_counts || !k.s_taken || !k.order_ids) {
    snprintf(msg, msglen, "cannot allocate the invariant's totals");
    rc = PRSTM_ENOMEM;
    holds = 0;
  }
  if (holds) {
    const int names = tpcc_check_names(&k);
    if (names < 0) rc = PRSTM_ENOMEM;
    holds = names == 1;
  }
  for (uint64_t r = 0; holds && r < n; r++) {
    prstm_status st;
    unsigned reason = 0;
    prstm_batch_outcome(batch, r, &st, &reason, NULL);
    if (prstm_batch_type(batch, r) == TPCC_NEW_ORDER)
      holds = tpcc_check_new_order(&k, batch, r, st, reason);
    else
      holds = tpcc_check_payment(&k, batch, r, st, reason);
  }
  /* Slots past the batch stay empty. */
  for (uint64_t r = n; holds && r < k.l.slots; r++)
    if (w[tpcc_slot(&k.l, r)] != TPCC_SLOT_EMPTY) holds = tpcc_bad(&k, r, "a slot past the batch holds a row");
  if (holds) holds = tpcc_check_tables(&k);
  if (holds) {
    *ok = 1;
    char bad[96] = "";
    if (k.bad_input)
      snprintf(bad, sizeof bad, "; %llu rows failed for bad input and wrote nothing", (unsigned long long)k.bad_input);
    snprintf(msg, msglen,
             "%llu new orders committed (%llu order lines) and %llu rolled back for an unused item, %llu payments%s; "
             "consistency conditions 1 to 4, 8 and 9 hold, and stock and customers match the committed rows",
             (unsigned long long)k.new_orders, (unsigned long long)k.lines, (unsigned long long)k.rolled_back,
             (unsigned long long)k.payments, bad);
  }
  free(k.w_ytd);
  free(k.d_ytd);
  free(k.c_ytd);
  free(k.c_count);
  free(k.s_ytd);
  free(k.s_counts);
  free(k.s_taken);
  free(k.order_ids);
  return rc;
}

/* The sample's view of a row: a NewOrder takes its district's next order
 * id, the word every NewOrder of the district meets; as a ticket it meets
 * them only at commit (PRSTM_ROW_WORD_AT_COMMIT), so --backend auto counts
 * it and the GPU's threads in flight do not. Then come its lines' stock
 * rows (their first words), which it only adds to (PRSTM_ROW_WORD_ADD):
 * they meet nobody, but a unit set that routes rows by their words sees
 * them. A Payment only adds, and its slot is its own, so it names no
 * word. */
static unsigned tpcc_row_words(const prstm_engine *engine, const prstm_batch *batch, uint64_t row, uint64_t *out,
                               unsigned cap) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  if (cap == 0 || prstm_batch_type(batch, row) != TPCC_NEW_ORDER || nwords < TPCC_HEADER_WORDS || w[0] < 1 ||
      w[0] > TPCC_MAX_WAREHOUSES || w[1] < 1 || w[2] < 1)
    return 0;
  tpcc_layout l;
  tpcc_layout_of(&l, w[0], w[1], w[2], w[3]);
  const uint64_t wh = prstm_batch_arg(batch, row, 0), d = prstm_batch_arg(batch, row, 1);
  if (wh >= l.warehouses || d >= TPCC_DISTRICTS) return 0;
  out[0] = (tpcc_district(&l, wh, d) + TPCC_D_NEXT_O_ID) | PRSTM_ROW_WORD_AT_COMMIT;
  unsigned k = 1;
  const uint64_t n = prstm_batch_arg(batch, row, 4);
  for (uint64_t i = 0; i < n && i < TPCC_MAX_LINES && k < cap; i++)
    out[k++] = prstm_batch_arg(batch, row, 5 + (unsigned)i) | PRSTM_ROW_WORD_ADD;
  return k;
}

const prstm_workload prstm_workload_tpcc = {
    .name = "tpcc",
    .ntypes = sizeof tpcc_types / sizeof tpcc_types[0],
    .types = tpcc_types,
    .nvariants = 1,
    .variants = {{.max_columns = TPCC_COLUMNS,
                  .set_capacity = TPCC_CAPACITY,
                  .cpu_worker = tpcc_all_cpu_worker,
                  PRSTM_GPU_HOOKS(tpcc_all)}},
    .init_state = tpcc_init_state,
    .generate = tpcc_generate,
    .check_invariant = tpcc_check_invariant,
    .config_keys = 0,
    .nparams = TP_COUNT,
    .params = tpcc_params,
    .uses_add = PRSTM_ADDS_UNREAD_ONLY,
    .row_words = tpcc_row_words,
};
