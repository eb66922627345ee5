/* bank.c: the bank workload's host side: types, initial state, the papers' batch generator and the money invariant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "bank_body.h"

PRSTM_CPU_WORKER(bank_pair, bank_dispatch, BANK_PAIR_CAPACITY)
PRSTM_CPU_WORKER(bank_small, bank_dispatch, BANK_SMALL_CAPACITY)
PRSTM_CPU_WORKER(bank_wide, bank_dispatch, BANK_WIDE_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(bank_pair);
PRSTM_GPU_WORKER_DECLARE(bank_small);
PRSTM_GPU_WORKER_DECLARE(bank_wide);

static const prstm_type_desc bank_types[] = {
    {"deposit", 1, 0, 2, {{"account", PRSTM_ARG_ADDRESS}, {"amount", PRSTM_ARG_UINT}}, {"balance would overflow"}},
    {"withdraw", 0, 0, 2, {{"account", PRSTM_ARG_ADDRESS}, {"amount", PRSTM_ARG_UINT}}, {NULL}},
    {"transfer",
     0,
     0,
     3,
     {{"from", PRSTM_ARG_ADDRESS}, {"to", PRSTM_ARG_ADDRESS}, {"amount", PRSTM_ARG_UINT}},
     {"balance would overflow"}},
    {"balance", 0, 1, 1, {{"account", PRSTM_ARG_ADDRESS}}, {NULL}},
    {"transfer_multi",
     0,
     0,
     3,
     {{"to", PRSTM_ARG_ADDRESS}, {"amount", PRSTM_ARG_UINT}, {"from", PRSTM_ARG_ADDRESS_LIST}},
     {"balance would overflow"}},
    {"total", 0, 1, 0, {{NULL, PRSTM_ARG_UINT}}, {NULL}}, /* no arguments: the sum of every account */
};

/* Deposits, withdrawals and transfers declare their steps: their bodies in
 * bank_body.h read each account once, in this order, and write it back moved
 * by the amount, so hot batches of them may run as sums (docs/DESIGN-NOTES.md,
 * "Hot spots"). transfer_multi takes the amount from each source of its list
 * in turn, then reads its target once and adds the amount once a source.
 * A balance read reads its account and returns it; the total, a snapshot
 * query, stays opaque. */
static const prstm_type_steps bank_steps[] = {
    [BANK_DEPOSIT] = {1, {{0, 1, +1}}},
    [BANK_WITHDRAW] = {1, {{0, 1, -1}}},
    [BANK_TRANSFER] = {2, {{0, 2, -1}, {1, 2, +1}}},
    [BANK_BALANCE] = {1, {{0, 0, +1, PRSTM_DELTA_READ | PRSTM_DELTA_RESULT_SUM}}},
    [BANK_TRANSFER_MULTI] = {2, {{2, 1, -1}, {0, 1, +1, PRSTM_DELTA_TIMES_LIST}}},
    [BANK_TOTAL] = {0, {{0, 0, 0}}},
};

typedef struct bank_fill_ctx {
  prstm_word *w;
  prstm_word balance;
} bank_fill_ctx;

static void bank_fill_words(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  const bank_fill_ctx *c = arg;
  for (uint64_t i = from; i < to; i++) c->w[i] = c->balance;
}

static int bank_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                           size_t errlen) {
  if (spec->accounts == 0) {
    snprintf(err, errlen, "state.accounts must be at least 1");
    return PRSTM_ECONFIG;
  }
  prstm_word *w = engine_alloc_first_touch((size_t)spec->accounts * sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu accounts", (unsigned long long)spec->accounts);
    return PRSTM_ENOMEM;
  }
  /* Filled on every core: 2^28 accounts are 2 GB, whose first touch alone
   * takes a second on one thread. */
  bank_fill_ctx fill = {w, spec->initial_balance};
  engine_parallel_for(spec->accounts, engine_parallel_parts(spec->accounts, 1u << 20), bank_fill_words, &fill);
  *words = w;
  *nwords = spec->accounts;
  return 0;
}

#define BANK_NTYPES (BANK_TOTAL + 1)

/* The weight a mix's type adds to: transfer_multi counts as transfer, since
 * accounts_per_tx, not the mix, decides how wide a transfer is. */
static const unsigned bank_mix_fold[BANK_NTYPES] = {BANK_DEPOSIT, BANK_WITHDRAW, BANK_TRANSFER,
                                                    BANK_BALANCE, BANK_TRANSFER, BANK_TOTAL};

/* The bank's own knob of batch.generate. */
enum { BANK_P_SKEW = 0, BANK_P_PARTITIONS, BANK_P_CROSS_SHARE, BANK_NPARAMS };
static const prstm_param_desc bank_params[BANK_NPARAMS] = {
    {"skew", PRSTM_PARAM_GENERATE, 0.0, 0.0, 4.0, 0,
     "Zipfian skew of the accounts random rows touch (YCSB's theta: 0 uniform, 0.99 YCSB's default; account 0 "
     "is the hottest)"},
    {"partitions", PRSTM_PARAM_GENERATE, 0.0, 0.0, 64.0, 1,
     "cut the accounts into this many equal ranges and keep every random row's accounts in the range of its "
     "first (0: no ranges), so that a run on as many GPUs, or a divisor of them, routes every row to one "
     "(backend multi)"},
    {"cross_share", PRSTM_PARAM_GENERATE, 0.0, 0.0, 1.0, 0,
     "with partitions, the share of random rows whose other accounts are drawn from all the accounts, not the "
     "first's range: rows that span the ranges, so that the units sharing the accounts (backend multi or "
     "hetero) meet on them"},
};

typedef struct bank_gen {
  const prstm_generate_spec *spec;
  uint64_t accounts, initial;
  uint64_t rng;
  const wl_zipf *zipf;        /* skewed draws of accounts, or NULL for uniform ones */
  double weight[BANK_NTYPES]; /* cumulative, by type index; transfer_multi's is transfer's (see bank_mix_fold) */
  prstm_batch *batch;
} bank_gen;

static uint64_t bank_amount(bank_gen *g) {
  return g->spec->amount_min + wl_below(&g->rng, g->spec->amount_max - g->spec->amount_min + 1);
}

/* Whether a transfer's other accounts leave its first's range (the
 * cross_share knob). Drawn only where asked, so that a batch without
 * crossing rows is the same as before the knob. */
static int bank_row_crosses(bank_gen *g) {
  const double cross = g->spec->params[BANK_P_CROSS_SHARE];
  return g->spec->params[BANK_P_PARTITIONS] > 1 && cross > 0 && wl_unit(&g->rng) < cross;
}

static uint64_t bank_other_account(bank_gen *g, uint64_t a, int crosses) {
  if (g->accounts < 2) return a;
  const uint64_t parts = (uint64_t)g->spec->params[BANK_P_PARTITIONS];
  if (parts > 1 && !g->zipf && !crosses) {
    /* Range p holds accounts [accounts * p / parts, accounts * (p + 1) / parts),
     * the ranges backend multi gives its units. */
    uint64_t p = a * parts / g->accounts;
    while (p + 1 < parts && a >= g->accounts * (p + 1) / parts) p++;
    while (p > 0 && a < g->accounts * p / parts) p--;
    const uint64_t lo = g->accounts * p / parts, hi = g->accounts * (p + 1) / parts;
    if (hi - lo < 2) return a;
    uint64_t b = lo + wl_below(&g->rng, hi - lo - 1);
    return b >= a ? b + 1 : b;
  }
  /* Skewed: another draw from the same law, a few times, before a uniform
   * one, so that a hot account's partners are hot too. */
  for (int tries = 0; g->zipf && tries < 8; tries++) {
    uint64_t b = wl_zipf_draw(g->zipf, &g->rng);
    if (b != a) return b;
  }
  uint64_t b = wl_below(&g->rng, g->accounts - 1);
  return b >= a ? b + 1 : b;
}

static uint64_t bank_account(bank_gen *g) {
  return g->zipf ? wl_zipf_draw(g->zipf, &g->rng) : wl_below(&g->rng, g->accounts);
}

/* One transaction drawn from the mix, touching random accounts. */
static int bank_emit_random(bank_gen *g) {
  unsigned type = wl_pick(&g->rng, g->weight, BANK_NTYPES);
  uint64_t a = bank_account(g);
  prstm_word args[PRSTM_MAX_COLUMNS];
  unsigned k = g->spec->accounts_per_tx;
  int crosses;
  switch (type) {
    case BANK_DEPOSIT:
    case BANK_WITHDRAW:
      args[0] = a;
      args[1] = bank_amount(g);
      return txtable_append_generated(g->batch, type, args, 2);
    case BANK_BALANCE:
      args[0] = a;
      return txtable_append_generated(g->batch, BANK_BALANCE, args, 1);
    case BANK_TOTAL:
      return txtable_append_generated(g->batch, BANK_TOTAL, NULL, 0);
    default:
      crosses = bank_row_crosses(g);
      if (k <= 2) {
        args[0] = a;
        args[1] = bank_other_account(g, a, crosses);
        args[2] = bank_amount(g);
        return txtable_append_generated(g->batch, BANK_TRANSFER, args, 3);
      }
      /* k accounts: k - 1 sources and one target, distinct where the state allows. */
      args[0] = a;
      args[1] = bank_amount(g);
      args[2] = k - 1;
      for (unsigned i = 0; i < k - 1; i++) {
        uint64_t s;
        int tries = 0;
        do {
          s = bank_other_account(g, a, crosses);
          int dup = 0;
          for (unsigned j = 0; j < i; j++) dup |= args[3 + j] == s;
          if (!dup) break;
        } while (++tries < 16);
        args[3 + i] = s;
      }
      return txtable_append_generated(g->batch, BANK_TRANSFER_MULTI, args, 3 + (k - 1));
  }
}

/* A semantic pair: a withdrawal (or transfer) of extra + m that only the
 * deposit of m into the same account can fund; extra is the initial balance
 * for the first pair on an account and 0 for pairs that share it later, so
 * the account's money covers all of its pairs exactly. */
static int bank_emit_pair_member(bank_gen *g, uint64_t account, uint64_t amount, uint64_t extra, int funding,
                                 int as_transfer, uint64_t to) {
  prstm_word args[3];
  if (funding) {
    args[0] = account;
    args[1] = amount;
    return txtable_append_generated(g->batch, BANK_DEPOSIT, args, 2);
  }
  if (as_transfer) {
    args[0] = account;
    args[1] = to;
    args[2] = extra + amount;
    return txtable_append_generated(g->batch, BANK_TRANSFER, args, 3);
  }
  args[0] = account;
  args[1] = extra + amount;
  return txtable_append_generated(g->batch, BANK_WITHDRAW, args, 2);
}

/* What every block of a generated batch shares: the generator's settings
 * and tables, read only while the blocks are made. */
typedef struct bank_blocks {
  bank_gen base;
  wl_perm pairs; /* places each row's pair and member */
  uint64_t npairs;
  wl_pair_rows pair_rows; /* the members' rows, by block */
  uint64_t reserved;      /* accounts set apart for pairs */
  int transfers;          /* the mix has transfers, so a pair may be one */
} bank_blocks;

/* Rows [first, first + rows): random rows from the block's stream; pair p's
 * account, amount and shape from its own stream, so both members agree
 * without storing them, whichever blocks they fall in. */
static int bank_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const bank_blocks *bb = ctx;
  const prstm_generate_spec *spec = bb->base.spec;
  bank_gen g = bb->base;
  g.batch = part;
  g.rng = *rng;
  uint64_t *slots = malloc((size_t)(2 * rows + 1) * sizeof *slots), *partners = slots ? slots + rows : NULL;
  if (!slots) return PRSTM_ENOMEM;
  wl_pair_rows_slots(&bb->pair_rows, first, rows, slots, partners);
  int rc = 0;
  for (uint64_t i = first; i < first + rows && rc == 0; i++) {
    const uint64_t slot = slots[i - first];
    if (slot == WL_RANDOM_ROW) {
      rc = bank_emit_random(&g);
      continue;
    }
    const uint64_t reserved = bb->reserved, p = slot >> 1;
    uint64_t ps = spec->seed ^ (0xa5a5a5a5a5a5a5a5ull + p * 0x9e3779b97f4a7c15ull);
    uint64_t account = reserved ? g.accounts + p % reserved : wl_below(&ps, g.accounts);
    uint64_t amount = spec->amount_min + wl_below(&ps, spec->amount_max - spec->amount_min + 1);
    int as_transfer = bb->transfers && spec->accounts_per_tx <= 2 && (wl_rand(&ps) & 1);
    uint64_t to = g.accounts < 2 ? account : (account + 1 + wl_below(&ps, g.accounts - 1)) % g.accounts;
    uint64_t extra = !reserved || p < reserved ? g.initial : 0;
    rc = bank_emit_pair_member(&g, account, amount, extra, (int)(slot & 1), as_transfer, to);
  }
  free(slots);
  *rng = g.rng;
  return rc;
}

/* The most argument words a generated row has: a transfer's three, or a
 * transfer_multi's accounts beyond them. */
static unsigned bank_widest_row(const prstm_generate_spec *spec) {
  return spec->accounts_per_tx <= 2 ? 3u : (unsigned)spec->accounts_per_tx + 2u;
}

static int bank_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch, char *err,
                         size_t errlen) {
  if (spec->transactions == 0 || state->accounts == 0) {
    snprintf(err, errlen, "transactions and state.accounts must be at least 1");
    return PRSTM_ECONFIG;
  }
  if (spec->accounts_per_tx < 1 || spec->accounts_per_tx > 128) {
    snprintf(err, errlen, "accounts_per_tx must be between 1 and 128");
    return PRSTM_ECONFIG;
  }
  if (spec->amount_min > spec->amount_max) {
    snprintf(err, errlen, "amount: min is larger than max");
    return PRSTM_ECONFIG;
  }
  bank_gen g;
  memset(&g, 0, sizeof g);
  g.spec = spec;
  g.accounts = state->accounts;
  g.initial = state->initial_balance;
  g.rng = spec->seed;
  g.batch = batch;
  /* Default mix: mostly transfers, some deposits and withdrawals. */
  double w[BANK_NTYPES] = {0.1, 0.1, 0.8, 0.0, 0.0, 0.0};
  int rc;
  if ((rc = wl_mix_weights(spec, batch, w, BANK_NTYPES, bank_mix_fold, err, errlen)) != 0 ||
      (rc = wl_read_only_share(spec, w, 3, "deposit, withdraw or transfer", err, errlen)) != 0 ||
      (rc = wl_cumulate(w, g.weight, BANK_NTYPES, err, errlen)) != 0)
    return rc;

  uint64_t n = spec->transactions;
  uint64_t npairs = (uint64_t)(spec->semantic_ratio * (double)n / 2.0);
  /* Pairs get accounts of their own at the top of the range, which random
   * traffic never touches, so every pair stays fundable: its conflicts are
   * the generated ones, not accidents of the mix. Where the state is too small
   * to set that many apart, pairs share accounts and some may be abandoned. */
  uint64_t reserved = npairs < state->accounts / 2 ? npairs : state->accounts / 2;
  g.accounts = state->accounts - reserved;
  /* Each pair takes two random rows; pairing the rows at random and putting
   * the dependent member first places the semantic conflicts unsorted, at
   * every distance. */
  bank_blocks blocks;
  memset(&blocks, 0, sizeof blocks);
  wl_perm_init(&blocks.pairs, spec->seed, n);
  blocks.npairs = npairs;
  wl_zipf zipf;
  const double skew = spec->params[BANK_P_SKEW];
  if (skew > 0) {
    if (wl_zipf_init(&zipf, g.accounts, skew, spec->threads) != 0) {
      snprintf(err, errlen, "cannot allocate the generator's Zipfian table");
      return PRSTM_ENOMEM;
    }
    g.zipf = &zipf;
  }
  blocks.base = g;
  blocks.reserved = reserved;
  blocks.transfers = w[BANK_TRANSFER] > 0;
  wl_pair_rows_init(&blocks.pair_rows, &blocks.pairs, npairs, n, spec->threads);
  rc = wl_generate_blocks(batch, n, spec->seed, spec->threads, bank_widest_row(spec), bank_make_block, &blocks);
  wl_pair_rows_free(&blocks.pair_rows);
  if (g.zipf) wl_zipf_free(&zipf);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

/* What a part of the invariant adds up: rows of the batch (bank_check_rows)
 * or words of the state (bank_sum_words). */
typedef struct bank_row_sums {
  unsigned __int128 deposits, withdrawals, total;
  uint64_t still_blocked_bad;
} bank_row_sums;

typedef struct bank_check_ctx {
  const prstm_batch *b;
  const prstm_word *w;
  bank_row_sums *sums; /* one a part */
} bank_check_ctx;

/* The state's words [lo, hi), summed into the part's total. */
static void bank_sum_words(void *arg, unsigned part, uint64_t lo, uint64_t hi) {
  const bank_check_ctx *c = arg;
  unsigned __int128 total = 0;
  for (uint64_t i = lo; i < hi; i++) total += c->w[i];
  c->sums[part].total = total;
}

static void bank_check_rows(void *arg, unsigned part, uint64_t lo, uint64_t hi) {
  const bank_check_ctx *c = arg;
  bank_row_sums *sum = &c->sums[part];
  for (uint64_t i = lo; i < hi; i++) {
    prstm_status st;
    unsigned reason = 0;
    prstm_batch_outcome(c->b, i, &st, &reason, NULL);
    unsigned t = prstm_batch_type(c->b, i);
    if (st == PRSTM_COMMITTED) {
      if (t == BANK_DEPOSIT) sum->deposits += prstm_batch_arg(c->b, i, 1);
      if (t == BANK_WITHDRAW) sum->withdrawals += prstm_batch_arg(c->b, i, 1);
    } else if (wl_abandoned_at_quiescence(st, reason)) {
      if (t == BANK_WITHDRAW && c->w[prstm_batch_arg(c->b, i, 0)] >= prstm_batch_arg(c->b, i, 1))
        sum->still_blocked_bad++;
      if (t == BANK_TRANSFER && c->w[prstm_batch_arg(c->b, i, 0)] >= prstm_batch_arg(c->b, i, 2))
        sum->still_blocked_bad++;
    }
  }
}

/* Total money equals the initial total plus committed deposits minus
 * committed withdrawals (transfers move money and create none); and every
 * abandoned withdrawal or transfer is still unfunded on the final state.
 * The rows are read on every core. */
static int bank_check_invariant(const prstm_engine *engine, const prstm_batch *b, int *ok, char *msg, size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  unsigned __int128 total = 0, initial = 0, deposits = 0, withdrawals = 0;
  bank_row_sums word_sums[ENGINE_MAX_PARTS];
  memset(word_sums, 0, sizeof word_sums);
  bank_check_ctx words_ctx = {NULL, w, word_sums};
  const unsigned word_parts = engine_parallel_parts(nwords, 1u << 20);
  engine_parallel_for(nwords, word_parts, bank_sum_words, &words_ctx);
  for (unsigned t = 0; t < word_parts; t++) total += word_sums[t].total;
  if (spec) initial = (unsigned __int128)spec->initial_balance * spec->accounts;
  /* The rows in parts of at least a block, each with its own sums, merged
   * in part order: exact, whatever the core count. */
  bank_row_sums parts[ENGINE_MAX_PARTS];
  memset(parts, 0, sizeof parts);
  bank_check_ctx ctx = {b, w, parts};
  const unsigned nparts = engine_parallel_parts(prstm_batch_size(b), WL_BLOCK_ROWS);
  engine_parallel_for(prstm_batch_size(b), nparts, bank_check_rows, &ctx);
  uint64_t still_blocked_bad = 0;
  for (unsigned t = 0; t < nparts; t++) {
    deposits += parts[t].deposits;
    withdrawals += parts[t].withdrawals;
    still_blocked_bad += parts[t].still_blocked_bad;
  }
  if (!spec) {
    /* Without a spec the initial total is unknown; derive nothing from it. */
    initial = total + withdrawals - deposits;
  }
  unsigned __int128 expected = initial + deposits - withdrawals;
  *ok = total == expected && still_blocked_bad == 0;
  snprintf(msg, msglen,
           "total money %llu %s initial %llu + deposits %llu - withdrawals %llu; %llu abandoned "
           "transactions fundable on the final state",
           (unsigned long long)total, total == expected ? "=" : "!=", (unsigned long long)initial,
           (unsigned long long)deposits, (unsigned long long)withdrawals, (unsigned long long)still_blocked_bad);
  return 0;
}

const prstm_workload prstm_workload_bank = {
    .name = "bank",
    .ntypes = sizeof bank_types / sizeof bank_types[0],
    .types = bank_types,
    .nvariants = 3,
    /* Rows of at most 3 words (every type but transfer_multi) run on the
     * pair variant with every thread the GPU keeps resident (512 an SM),
     * which commits the bank's configs faster than the engine's default
     * (docs/PERFORMANCE.md, "Threads"). The wider variants keep the
     * default: their sets live in thread-local memory. */
    .variants = {{.max_columns = BANK_PAIR_COLUMNS,
                  .set_capacity = BANK_PAIR_CAPACITY,
                  .cpu_worker = bank_pair_cpu_worker,
                  PRSTM_GPU_HOOKS(bank_pair),
                  .gpu = {.threads_per_sm = 512}},
                 {.max_columns = BANK_SMALL_COLUMNS,
                  .set_capacity = BANK_SMALL_CAPACITY,
                  .cpu_worker = bank_small_cpu_worker,
                  PRSTM_GPU_HOOKS(bank_small)},
                 {.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = BANK_WIDE_CAPACITY,
                  .cpu_worker = bank_wide_cpu_worker,
                  PRSTM_GPU_HOOKS(bank_wide)}},
    .init_state = bank_init_state,
    .generate = bank_generate,
    .check_invariant = bank_check_invariant,
    .config_keys = PRSTM_KEYS_BANK,
    .nparams = BANK_NPARAMS,
    .params = bank_params,
    .steps = bank_steps,
    /* total reads every account: a query on the state the run starts from. */
    .snapshot_types = 1ull << BANK_TOTAL,
};
