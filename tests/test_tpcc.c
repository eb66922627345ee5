/* test_tpcc.c: behaviour of the tpcc workload: NewOrder and Payment by TPC-C's rules row by row (stock replenishment, remote lines, the unused item's rollback, payment by last name), generated mixes verified and keeping the consistency conditions on the CPU backend and, where a GPU is, the GPU backend, the generator's shares and its independence of the core count, and the invariant catching broken tables, and backend auto's choice by warehouse count. */
/* The body header first: it compiles the adds (PRSTM_USES_ADD). */
#include "tpcc_body.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "prstm.h"
#include "test_backend.h"

#define GPU_THREADS 4096

static const prstm_workload *tpcc(void) {
  const prstm_workload *wl = prstm_workload_find("tpcc");
  cr_assert_not_null(wl, "tpcc is not a built-in workload");
  return wl;
}

typedef struct tpcc_run {
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
  tpcc_layout l;
} tpcc_run;

static void run_open(tpcc_run *r, prstm_backend backend, uint32_t threads, uint64_t warehouses, uint64_t customers,
                     uint64_t items, uint64_t slots) {
  test_need_backend(tpcc(), backend);
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, backend, threads, 1);
  test_open(tpcc(), &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(tpcc(), &s);
  test_set_knob(tpcc(), s.params, "warehouses", (double)warehouses);
  test_set_knob(tpcc(), s.params, "customers", (double)customers);
  test_set_knob(tpcc(), s.params, "items", (double)items);
  test_set_knob(tpcc(), s.params, "slots", (double)slots);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
  tpcc_layout_of(&r->l, warehouses, customers, items, slots);
  cr_assert_eq(r->engine->nwords, tpcc_words(&r->l), "the state does not have the layout's size");
}

/* A NewOrder of lines (supply warehouse, item, quantity). */
static void new_order(tpcc_run *r, uint64_t w, uint64_t d, uint64_t c, unsigned n, const uint64_t (*lines)[3]) {
  prstm_word args[5 + TPCC_MAX_LINES] = {w, d, c, 0, n};
  for (unsigned k = 0; k < n; k++) {
    args[3] |= lines[k][2] << (4 * k);
    args[5 + k] = tpcc_stock(&r->l, lines[k][0], lines[k][1]);
  }
  cr_assert_eq(prstm_batch_append_named(r->batch, "new_order", args, 5 + n), 0, "%s", prstm_batch_error(r->batch));
}

static void payment(tpcc_run *r, uint64_t w, uint64_t d, uint64_t cw, uint64_t cd, uint64_t who, uint64_t by_name,
                    uint64_t amount) {
  prstm_word args[7] = {w, d, cw, cd, who, by_name, amount};
  cr_assert_eq(prstm_batch_append_named(r->batch, "payment", args, 7), 0, "%s", prstm_batch_error(r->batch));
}

static prstm_word *word(tpcc_run *r, uint64_t at) { return &r->engine->words[at]; }

/* The quantity word follows TPC-C's rule for S_QUANTITY from every
 * population value, line after line: a quantity of at least qty + 10 drops
 * by qty, a smaller one drops by qty and gains 91 (the words only add, so
 * they reach far past 100 and the mod keeps the quantity between 10 and
 * 100). */
Test(tpcc_cpu, stock_quantity_word_follows_the_replenishment_rule) {
  uint64_t rng = 12345;
  for (uint64_t s0 = 10; s0 <= 100; s0++) {
    uint64_t q = TPCC_S_Q_OF(s0), s = s0;
    cr_assert_eq(TPCC_S_QUANTITY(q), s0);
    for (unsigned line = 0; line < 2000; line++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t qty = 1 + (rng >> 33) % 15;
      s = s >= qty + 10 ? s - qty : s - qty + 91;
      q += TPCC_S_Q_TAKE(qty);
      cr_assert_eq(TPCC_S_QUANTITY(q), s, "from %llu, line %u of %llu", (unsigned long long)s0, line,
                   (unsigned long long)qty);
    }
  }
}

/* One thread, rows in order, on 2 warehouses of 20 customers and 50 items:
 * a NewOrder with a remote line takes order id 1 and the next takes 2; a
 * stock row of quantity 12 ordered 5 is replenished to 98 (12 - 5 + 91),
 * one of 40 ordered 5 drops to 35; the lines carry quantity times price;
 * a NewOrder naming the unused item
 * rolls back and writes nothing (its district's next id stays); a Payment
 * adds to the warehouse's and district's year-to-date and takes from the
 * customer's balance; a Payment by last name pays the middle customer of
 * that name; a NewOrder whose line is not a stock row, and a Payment of a
 * warehouse past the last, fail for their bad input, write nothing, and
 * leave the invariant holding. */
Test(tpcc_cpu, new_order_and_payment_follow_the_rules) {
  tpcc_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, 2, 20, 50, 16);
  const tpcc_layout *l = &r.l;
  *word(&r, tpcc_stock(l, 0, 7) + TPCC_S_Q) = TPCC_S_Q_OF(12);
  *word(&r, tpcc_stock(l, 1, 9) + TPCC_S_Q) = TPCC_S_Q_OF(40);
  /* Customers 3, 7 and 11 of district (1, 2) share name 700, 7 in the middle
   * of the index's run. */
  const uint64_t idx = tpcc_names(l, 1, 2);
  for (uint64_t c = 0; c < 20; c++) {
    prstm_word *info = word(&r, tpcc_customer(l, 1, 2, c) + TPCC_C_INFO);
    *info = (*info & 0xfffffu) | (c == 3 || c == 7 || c == 11 ? 700ull : c) << 20;
  }
  uint64_t k = 0;
  for (uint64_t name = 0; name < TPCC_NAMES; name++) {
    uint64_t count = 0;
    for (uint64_t c = 0; c < 20; c++)
      if ((*word(&r, tpcc_customer(l, 1, 2, c) + TPCC_C_INFO) >> 20) == name) {
        *word(&r, idx + TPCC_NAMES + k + count) = name == 700 ? (count == 0 ? 3 : count == 1 ? 7 : 11) : c;
        count++;
      }
    *word(&r, idx + name) = count ? k << 32 | count : 0;
    k += count;
  }
  const uint64_t price7 = *word(&r, l->item + 7), price9 = *word(&r, l->item + 9);
  const uint64_t lines_a[2][3] = {{0, 7, 5}, {1, 9, 5}};
  const uint64_t lines_b[1][3] = {{0, 7, 1}};
  const uint64_t lines_bad[2][3] = {{0, 8, 1}, {0, 50, 1}}; /* item 50: the unused item */
  new_order(&r, 0, 3, 4, 2, lines_a);                       /* 0 */
  new_order(&r, 0, 3, 5, 2, lines_bad);                     /* 1: rolls back */
  new_order(&r, 0, 3, 6, 1, lines_b);                       /* 2 */
  payment(&r, 0, 3, 0, 3, 4, 0, 12345);                     /* 3 */
  payment(&r, 1, 0, 1, 2, 700, 1, 500);                     /* 4: by name */
  const prstm_word off_stock[6] = {1, 1, 1, 1, 1, 5};       /* 5: its line is word 5, no stock row */
  cr_assert_eq(prstm_batch_append_named(r.batch, "new_order", off_stock, 6), 0, "%s", prstm_batch_error(r.batch));
  payment(&r, 2, 0, 0, 0, 1, 0, 100); /* 6: warehouse 2 of 2 */
  test_run_verified(r.engine, r.batch, &r.res, "tpcc");
  prstm_status st;
  unsigned reason = 0;
  cr_assert_eq(prstm_batch_outcome(r.batch, 1, &st, &reason, NULL), 0);
  cr_assert_eq(st, PRSTM_FAILED);
  cr_assert_eq(reason, TPCC_REASON_UNUSED_ITEM);
  cr_assert_eq(*word(&r, tpcc_slot(l, 1)), TPCC_SLOT_EMPTY, "the rolled back order left rows");
  for (uint64_t row = 5; row <= 6; row++) {
    cr_assert_eq(prstm_batch_outcome(r.batch, row, &st, &reason, NULL), 0);
    cr_assert_eq(st, PRSTM_FAILED, "row %llu", (unsigned long long)row);
    cr_assert_eq(reason, TPCC_REASON_INPUT, "row %llu", (unsigned long long)row);
    cr_assert_eq(*word(&r, tpcc_slot(l, row)), TPCC_SLOT_EMPTY, "row %llu wrote its slot", (unsigned long long)row);
  }
  cr_assert_eq(*word(&r, tpcc_district(l, 1, 1) + TPCC_D_NEXT_O_ID), 1, "the bad order took an order id");
  cr_assert_eq(*word(&r, tpcc_stock(l, 0, 8) + TPCC_S_YTD), 0, "the rolled back order took stock");
  cr_assert_eq(*word(&r, tpcc_district(l, 0, 3) + TPCC_D_NEXT_O_ID), 3, "two orders committed in district 3");
  cr_assert_eq(*word(&r, tpcc_slot(l, 0) + 1), 1);
  cr_assert_eq(*word(&r, tpcc_slot(l, 2) + 1), 2);
  /* Stock: 12 - 5 + 91 = 98, then 98 - 1; the remote line's row: 40 - 5. */
  const uint64_t s7 = tpcc_stock(l, 0, 7), s9 = tpcc_stock(l, 1, 9);
  cr_assert_eq(TPCC_S_QUANTITY(*word(&r, s7 + TPCC_S_Q)), 97);
  cr_assert_eq(*word(&r, s7 + TPCC_S_YTD), 6);
  cr_assert_eq(TPCC_S_ORDER_CNT(*word(&r, s7 + TPCC_S_COUNTS)), 2);
  cr_assert_eq(TPCC_S_REMOTE_CNT(*word(&r, s7 + TPCC_S_COUNTS)), 0);
  cr_assert_eq(TPCC_S_QUANTITY(*word(&r, s9 + TPCC_S_Q)), 35);
  cr_assert_eq(TPCC_S_ORDER_CNT(*word(&r, s9 + TPCC_S_COUNTS)), 1);
  cr_assert_eq(TPCC_S_REMOTE_CNT(*word(&r, s9 + TPCC_S_COUNTS)), 1, "a remote line counts as remote");
  cr_assert_eq(*word(&r, tpcc_slot(l, 0) + 3), TPCC_LINE_WORD(7, 0, 5, 5 * price7));
  cr_assert_eq(*word(&r, tpcc_slot(l, 0) + 4), TPCC_LINE_WORD(9, 1, 5, 5 * price9));
  cr_assert_eq(*word(&r, tpcc_slot(l, 0) + 2) >> 40, 0, "an order with a remote line is not all local");
  cr_assert_eq(*word(&r, tpcc_slot(l, 2) + 2) >> 40, 1);
  /* Payment by number. */
  cr_assert_eq(*word(&r, tpcc_warehouse(l, 0) + TPCC_W_YTD), 30000000 + 12345);
  cr_assert_eq(*word(&r, tpcc_district(l, 0, 3) + TPCC_D_YTD), 3000000 + 12345);
  cr_assert_eq(*word(&r, tpcc_customer(l, 0, 3, 4) + TPCC_C_BALANCE), (uint64_t)0 - 1000 - 12345);
  cr_assert_eq(*word(&r, tpcc_customer(l, 0, 3, 4) + TPCC_C_PAYMENT_CNT), 2);
  /* Payment by name: the middle of customers 3, 7, 11. */
  cr_assert_eq(*word(&r, tpcc_slot(l, 4) + 1), TPCC_HISTORY_CUSTOMER(1, 2, 7), "the history names customer 7");
  cr_assert_eq(*word(&r, tpcc_customer(l, 1, 2, 7) + TPCC_C_YTD), 1000 + 500);
  cr_assert_eq(*word(&r, tpcc_customer(l, 1, 2, 3) + TPCC_C_YTD), 1000);
  cr_assert_eq(*word(&r, tpcc_district(l, 1, 0) + TPCC_D_YTD), 3000000 + 500, "the home district takes the payment");
  char msg[512];
  cr_assert(test_invariant(tpcc(), r.engine, r.batch, msg, sizeof msg), "invariant: %s", msg);
  test_close(r.engine, r.batch);
}

static void generate(tpcc_run *r, uint64_t n, uint64_t seed, unsigned threads, double new_order_share) {
  prstm_generate_spec g;
  prstm_generate_spec_init(tpcc(), &g);
  g.transactions = n;
  g.seed = seed;
  g.threads = threads;
  g.nmix = 2;
  g.mix_names[0] = "new_order";
  g.mix_weights[0] = new_order_share;
  g.mix_names[1] = "payment";
  g.mix_weights[1] = 1 - new_order_share;
  char err[256];
  cr_assert_eq(tpcc()->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
}

/* Generated batches, hot (one warehouse: ten districts' next order ids and
 * one warehouse total for every row) and spread (eight warehouses), of both
 * mixes: every row commits or rolls back for its unused item, the replay
 * matches, and the consistency conditions hold. */
static void mixes_keep_the_conditions(prstm_backend backend) {
  static const struct {
    uint64_t warehouses;
    double new_order;
  } cases[] = {{1, 0.5}, {8, 0.5}, {1, 0.0}, {8, 1.0}};
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tpcc_run r;
    const uint64_t n = 20000;
    run_open(&r, backend, test_threads(backend, GPU_THREADS), cases[i].warehouses, 300, 2000, n);
    generate(&r, n, 7 + i, 0, cases[i].new_order);
    test_run_verified(r.engine, r.batch, &r.res, "tpcc");
    cr_assert_eq(r.res.committed + r.res.failed, n, "case %u: %llu abandoned", i, (unsigned long long)r.res.abandoned);
    if (cases[i].new_order > 0) cr_assert_gt(r.res.failed, 0, "case %u: no order rolled back", i);
    if (cases[i].new_order == 0) cr_assert_eq(r.res.failed, 0, "case %u: a payment failed", i);
    char msg[512];
    cr_assert(test_invariant(tpcc(), r.engine, r.batch, msg, sizeof msg), "case %u: invariant: %s", i, msg);
    test_close(r.engine, r.batch);
  }
}

Test(tpcc_cpu, mixes_keep_the_consistency_conditions) { mixes_keep_the_conditions(PRSTM_BACKEND_CPU); }
Test(tpcc_gpu, mixes_keep_the_consistency_conditions, .timeout = 180) { mixes_keep_the_conditions(PRSTM_BACKEND_GPU); }

/* The generator: the same rows on 1 and 3 threads; TPC-C's shares (1%
 * rollbacks, 1% remote lines, 15% remote payments, 60% by name, 5 to 15
 * lines) within a few points; and a batch larger than the slots refused. */
Test(tpcc_cpu, generator_draws_tpcc_inputs_on_any_core_count) {
  tpcc_run a, b;
  const uint64_t n = 200000;
  run_open(&a, PRSTM_BACKEND_CPU, 2, 4, 3000, 100000, n);
  run_open(&b, PRSTM_BACKEND_CPU, 2, 4, 3000, 100000, n);
  generate(&a, n, 3, 1, 0.5);
  generate(&b, n, 3, 3, 0.5);
  cr_assert_eq(prstm_batch_size(a.batch), n);
  uint64_t orders = 0, rollbacks = 0, lines = 0, remote_lines = 0, payments = 0, remote = 0, by_name = 0;
  for (uint64_t i = 0; i < n; i++) {
    cr_assert_eq(prstm_batch_type(a.batch, i), prstm_batch_type(b.batch, i));
    for (unsigned c = 0; c < 5 + TPCC_MAX_LINES; c++)
      cr_assert_eq(prstm_batch_arg(a.batch, i, c), prstm_batch_arg(b.batch, i, c), "row %llu differs",
                   (unsigned long long)i);
    if (prstm_batch_type(a.batch, i) == TPCC_NEW_ORDER) {
      const uint64_t w = prstm_batch_arg(a.batch, i, 0), nl = prstm_batch_arg(a.batch, i, 4);
      cr_assert(nl >= 5 && nl <= 15, "%llu lines", (unsigned long long)nl);
      orders++;
      for (unsigned k = 0; k < nl; k++) {
        const uint64_t idx = (prstm_batch_arg(a.batch, i, 5 + k) - a.l.stock) / TPCC_STOCK;
        rollbacks += idx % (a.l.items + 1) == a.l.items;
        remote_lines += idx / (a.l.items + 1) != w;
        lines++;
      }
    } else {
      payments++;
      remote += prstm_batch_arg(a.batch, i, 2) != prstm_batch_arg(a.batch, i, 0);
      by_name += prstm_batch_arg(a.batch, i, 5);
    }
  }
  cr_assert(orders > n * 0.48 && orders < n * 0.52, "%llu new orders", (unsigned long long)orders);
  cr_assert(rollbacks > orders * 0.008 && rollbacks < orders * 0.012, "%llu rollbacks", (unsigned long long)rollbacks);
  cr_assert(remote_lines > lines * 0.008 && remote_lines < lines * 0.012, "%llu remote lines",
            (unsigned long long)remote_lines);
  cr_assert(remote > payments * 0.14 && remote < payments * 0.16, "%llu remote payments", (unsigned long long)remote);
  cr_assert(by_name > payments * 0.58 && by_name < payments * 0.62, "%llu by name", (unsigned long long)by_name);
  /* One more row than slots. */
  prstm_generate_spec g;
  prstm_generate_spec_init(tpcc(), &g);
  g.transactions = 1;
  char err[256] = "";
  cr_assert_eq(tpcc()->generate(&g, prstm_engine_state_spec(a.engine), a.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "state.slots") != NULL, "%s", err);
  test_close(a.engine, a.batch);
  test_close(b.engine, b.batch);
}

/* The invariant fails tables that break a condition: a district's next
 * order id past its orders (2), a warehouse total off its districts' (1),
 * and a stock row's year-to-date, quantity or counts off its order
 * lines. */
Test(tpcc_cpu, invariant_catches_broken_tables) {
  tpcc_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 2, 100, 1000, 5000);
  generate(&r, 5000, 9, 0, 0.5);
  test_run_verified(r.engine, r.batch, &r.res, "tpcc");
  char msg[512];
  cr_assert(test_invariant(tpcc(), r.engine, r.batch, msg, sizeof msg), "invariant: %s", msg);
  static const struct {
    int what;
    const char *expect;
  } breaks[] = {{0, "condition 2"}, {1, "condition 1"}, {2, "stock"}, {3, "ORDER-LINE"}, {4, "stock"}, {5, "stock"}};
  for (unsigned b = 0; b < sizeof breaks / sizeof breaks[0]; b++) {
    prstm_word *at = NULL;
    if (breaks[b].what == 0) at = word(&r, tpcc_district(&r.l, 1, 4) + TPCC_D_NEXT_O_ID);
    if (breaks[b].what == 1) at = word(&r, tpcc_warehouse(&r.l, 0) + TPCC_W_YTD);
    if (breaks[b].what == 2) at = word(&r, tpcc_stock(&r.l, 1, 0) + TPCC_S_YTD);
    if (breaks[b].what == 3)
      for (uint64_t row = 0; !at; row++)
        if (*word(&r, tpcc_slot(&r.l, row)) % 16 == TPCC_SLOT_ORDER) at = word(&r, tpcc_slot(&r.l, row) + 3);
    /* A quantity word that lost an order line's step, and one whose
     * count of order lines is off by one. */
    const uint64_t delta = breaks[b].what == 4 ? TPCC_S_Q_TAKE(3) : 1;
    if (breaks[b].what == 4) at = word(&r, tpcc_stock(&r.l, 0, 1) + TPCC_S_Q);
    if (breaks[b].what == 5) at = word(&r, tpcc_stock(&r.l, 1, 2) + TPCC_S_COUNTS);
    *at += delta;
    cr_assert_not(test_invariant(tpcc(), r.engine, r.batch, msg, sizeof msg), "break %u passed", b);
    cr_assert(strstr(msg, breaks[b].expect) != NULL, "break %u: %s", b, msg);
    *at -= delta;
  }
  cr_assert(test_invariant(tpcc(), r.engine, r.batch, msg, sizeof msg), "invariant after the repairs: %s", msg);
  test_close(r.engine, r.batch);
}

/* Backend auto, asked without a GPU: TPC-C half and half stays on the GPU
 * at every warehouse count. Its NewOrders meet only on their districts'
 * tickets, at commit, and only add to their stock rows, so they abort
 * nobody in flight: the sample holds the counters alone, marked, and auto
 * weighs none of them, however few the warehouses (docs/OLTP.md). A
 * NewOrder's words, its counter first and its stock rows after it, still
 * reach the routers of several units unmarked. */
Test(tpcc_cpu, auto_keeps_tpcc_on_the_gpu_as_tickets_abort_nobody) {
  static const struct {
    uint64_t warehouses;
    int to_cpu;
  } cases[] = {{1, 0}, {16, 0}, {64, 0}, {512, 0}};
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tpcc_run r;
    run_open(&r, PRSTM_BACKEND_CPU, 2, cases[i].warehouses, 30, 1000, 100000);
    /* Auto's choice is made for a full GPU's threads, whatever this
     * engine was opened with. */
    r.engine->opt.backend = PRSTM_BACKEND_AUTO;
    r.engine->opt.threads = 0;
    generate(&r, 100000, 5, 0, 0.5);
    char why[512] = "";
    const int to_cpu = engine_auto_prefers_cpu(r.engine, r.batch, why, sizeof why);
    cr_assert_eq(to_cpu, cases[i].to_cpu, "%llu warehouses: auto %s the CPU (%s)",
                 (unsigned long long)cases[i].warehouses, to_cpu ? "chose" : "did not choose", why);
    if (to_cpu) cr_assert(strstr(why, "hot") != NULL, "reason: %s", why);
    engine_contention hot;
    engine_contention_sample(r.engine, r.batch, &hot);
    uint64_t new_orders = 0, lines_sampled = 0;
    cr_assert_eq(hot.rows, 16384);
    for (uint64_t k = 0; k < hot.rows; k++) {
      /* The sample's rows, spread over the batch as the sample spreads them. */
      const uint64_t at = engine_contention_sample_row(100000, hot.rows, k);
      if (prstm_batch_type(r.batch, at) == TPCC_NEW_ORDER) {
        new_orders++;
        lines_sampled += prstm_batch_arg(r.batch, at, 4);
      }
    }
    cr_assert_eq(hot.words, new_orders, "the stock rows, only added to, are left out of the sample");
    cr_assert_eq(hot.abort_words, 0, "a ticket aborts nobody in flight");
    cr_assert_gt(lines_sampled, new_orders);
    uint64_t row = 0, words[64];
    while (prstm_batch_type(r.batch, row) != TPCC_NEW_ORDER) row++;
    const uint64_t lines = prstm_batch_arg(r.batch, row, 4);
    cr_assert_eq(engine_row_words(r.engine, r.batch, row, words, 64), 1 + lines);
    cr_assert_eq(words[0], tpcc_district(&r.l, prstm_batch_arg(r.batch, row, 0), prstm_batch_arg(r.batch, row, 1)) +
                               TPCC_D_NEXT_O_ID);
    cr_assert_eq(words[lines], prstm_batch_arg(r.batch, row, 5 + (unsigned)lines - 1), "the last line's stock row");
    test_close(r.engine, r.batch);
  }
}
