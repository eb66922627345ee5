/* kv.c: the kv workload's host side: types, knobs, the store's layout and preload, the YCSB-style generator (Zipfian keys) and the invariant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "kv_body.h"

PRSTM_CPU_WORKER(kv_all, kv_dispatch, KV_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(kv_all);

static const prstm_type_desc kv_types[] = {
    [KV_GET] = {.name = "get", .tag = 0, .read_only = 1, .nargs = 1, .args = {{"key", PRSTM_ARG_UINT}}},
    [KV_SET] = {.name = "set",
                .tag = 0,
                .read_only = 0,
                .nargs = 2,
                .args = {{"key", PRSTM_ARG_UINT}, {"value", PRSTM_ARG_UINT}}},
    [KV_DELETE] = {.name = "delete", .tag = 0, .read_only = 0, .nargs = 1, .args = {{"key", PRSTM_ARG_UINT}}},
};

enum { KP_SETS = 0, KP_WAYS, KP_PRELOAD, KP_KEYS, KP_SKEW, KP_COUNT };
static const prstm_param_desc kv_params[KP_COUNT] = {
    {"sets", PRSTM_PARAM_STATE, 131072, 1, 1e9, 1, "sets of the store"},
    {"ways", PRSTM_PARAM_STATE, 8, 1, KV_MAX_WAYS, 1, "slots a set (at most 16)"},
    {"preload", PRSTM_PARAM_STATE, 500000, 0, 1e10, 1,
     "keys 0 to preload - 1 set before the batch, value key + 2^62 (YCSB's load phase)"},
    {"keys", PRSTM_PARAM_GENERATE, 1000000, 1, 1e15, 1, "the key space of the generated rows: keys 0 to keys - 1"},
    {"skew", PRSTM_PARAM_GENERATE, 0.99, 0.0, 4.0, 0,
     "Zipfian skew of the keys (YCSB's theta: 0 uniform, 0.99 YCSB's default; key 0 the hottest)"},
};

/* The value a preloaded key starts with. */
#define KV_PRELOAD_VALUE(k) ((k) + (1ull << 62))

typedef struct kv_shape {
  uint64_t sets, ways;
} kv_shape;

static int kv_read_shape(const prstm_state_spec *spec, kv_shape *s, char *err, size_t errlen) {
  s->sets = (uint64_t)spec->params[KP_SETS];
  s->ways = (uint64_t)spec->params[KP_WAYS];
  if (s->sets < 1 || s->ways < 1 || s->ways > KV_MAX_WAYS) {
    snprintf(err, errlen, "state.sets and state.ways: expected at least 1 set and 1 to %u ways", KV_MAX_WAYS);
    return PRSTM_ECONFIG;
  }
  return 0;
}

/* The host's set, for the preload: the body's rules on a plain array. */
static void kv_set_direct(prstm_word *w, uint64_t sets, uint64_t ways, uint64_t key, uint64_t value) {
  const uint64_t base = kv_set_base(kv_set_of(key, sets), ways), clock = w[base] + 1;
  uint64_t way = ways, oldest = UINT64_MAX;
  for (uint64_t i = 0; i < ways && way == ways; i++)
    if (w[base + 1 + KV_SLOT * i] == key + 1) way = i;
  for (uint64_t i = 0; i < ways && way == ways; i++)
    if (w[base + 1 + KV_SLOT * i] == 0) way = i;
  if (way == ways)
    for (uint64_t i = 0; i < ways; i++)
      if (w[base + 1 + KV_SLOT * i + 2] < oldest) {
        oldest = w[base + 1 + KV_SLOT * i + 2];
        way = i;
      }
  w[base + 1 + KV_SLOT * way] = key + 1;
  w[base + 1 + KV_SLOT * way + 1] = value;
  w[base + 1 + KV_SLOT * way + 2] = clock;
  w[base] = clock;
}

/* The preload, on every core: each part takes a range of sets and inserts,
 * in key order, the keys that fall in them, so every set sees its keys in
 * the order one thread would give them, and the state is the same for any
 * thread count. */
typedef struct kv_preload_ctx {
  prstm_word *w;
  const kv_shape *s;
  uint64_t keys;
} kv_preload_ctx;

static void kv_preload_sets(void *arg, unsigned part, uint64_t lo, uint64_t hi) {
  (void)part;
  const kv_preload_ctx *c = arg;
  for (uint64_t k = 0; k < c->keys; k++) {
    const uint64_t set = kv_set_of(k, c->s->sets);
    if (set >= lo && set < hi) kv_set_direct(c->w, c->s->sets, c->s->ways, k, KV_PRELOAD_VALUE(k));
  }
}

static int kv_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err, size_t errlen) {
  kv_shape s;
  int rc = kv_read_shape(spec, &s, err, errlen);
  if (rc) return rc;
  const uint64_t n = KV_HEADER + s.sets * (1 + KV_SLOT * s.ways);
  prstm_word *w = calloc((size_t)n, sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  w[0] = s.sets;
  w[1] = s.ways;
  kv_preload_ctx ctx = {w, &s, (uint64_t)spec->params[KP_PRELOAD]};
  engine_parallel_for(s.sets, engine_parallel_parts(s.sets, 4096), kv_preload_sets, &ctx);
  *words = w;
  *nwords = n;
  return 0;
}

/* What every block of a generated batch shares, read only. */
typedef struct kv_blocks {
  double cumulative[3]; /* set, delete, get */
  uint64_t keys;
  const wl_zipf *zipf; /* skewed keys, or NULL for uniform ones */
} kv_blocks;

/* Rows [first, first + rows): a set's value is its row number plus one, so
 * every value names the row that set it. */
static int kv_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const kv_blocks *kb = ctx;
  int rc = 0;
  for (uint64_t t = 0; rc == 0 && t < rows; t++) {
    const unsigned type = wl_pick(rng, kb->cumulative, 3);
    prstm_word args[2];
    args[0] = kb->zipf ? wl_zipf_draw(kb->zipf, rng) : wl_below(rng, kb->keys);
    args[1] = first + t + 1;
    rc = txtable_append_generated(part, type, args, type == KV_SET ? 2 : 1);
  }
  return rc;
}

/* `transactions` rows of the mix (YCSB's workload A by default: half gets,
 * half sets), keys drawn from the Zipfian law over `keys` keys. */
static int kv_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch, char *err,
                       size_t errlen) {
  (void)state;
  if (spec->semantic_ratio != 0) {
    snprintf(err, errlen, "semantic_ratio: kv's transactions have no semantic dependencies (got %g)",
             spec->semantic_ratio);
    return PRSTM_ECONFIG;
  }
  double w[3] = {0.5, 0.0, 0.5};
  kv_blocks blocks;
  memset(&blocks, 0, sizeof blocks);
  int rc;
  if ((rc = wl_mix_weights(spec, batch, w, 3, NULL, err, errlen)) != 0 ||
      (rc = wl_read_only_share(spec, w, 2, "set or delete", err, errlen)) != 0 ||
      (rc = wl_cumulate(w, blocks.cumulative, 3, err, errlen)) != 0)
    return rc;
  blocks.keys = (uint64_t)spec->params[KP_KEYS];
  wl_zipf zipf;
  const double skew = spec->params[KP_SKEW];
  if (skew > 0) {
    if (wl_zipf_init(&zipf, blocks.keys, skew, spec->threads) != 0) {
      snprintf(err, errlen, "cannot allocate the Zipfian table");
      return PRSTM_ENOMEM;
    }
    blocks.zipf = &zipf;
  }
  rc = wl_generate_blocks(batch, spec->transactions, spec->seed, spec->threads, 2, kv_make_block, &blocks);
  if (blocks.zipf) wl_zipf_free(&zipf);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

static int kv_pair_cmp(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Every set well formed (its clock at least every stamp, no key twice, each
 * key in the set it hashes to), and every value held one that a committed
 * set of that key wrote, or the key's preload value; every row committed. */
static int kv_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg, size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  *ok = 0;
  if (nwords < KV_HEADER || w[0] == 0 || w[1] == 0 || w[1] > KV_MAX_WAYS ||
      nwords != KV_HEADER + w[0] * (1 + KV_SLOT * w[1])) {
    snprintf(msg, msglen, "the header does not describe the state");
    return 0;
  }
  const uint64_t sets = w[0], ways = w[1], n = prstm_batch_size(batch);
  const uint64_t preload = spec ? (uint64_t)spec->params[KP_PRELOAD] : 0;
  /* The (key, value) pairs committed sets wrote, sorted for lookup. */
  uint64_t *pairs = malloc((size_t)(n ? n : 1) * 2 * sizeof *pairs);
  if (!pairs) {
    snprintf(msg, msglen, "cannot allocate the invariant's pairs");
    return PRSTM_ENOMEM;
  }
  uint64_t np = 0, committed = 0;
  for (uint64_t r = 0; r < n; r++) {
    prstm_status st;
    prstm_batch_outcome(batch, r, &st, NULL, NULL);
    if (st != PRSTM_COMMITTED) continue;
    committed++;
    if (prstm_batch_type(batch, r) != KV_SET) continue;
    pairs[2 * np] = prstm_batch_arg(batch, r, 0);
    pairs[2 * np + 1] = prstm_batch_arg(batch, r, 1);
    np++;
  }
  qsort(pairs, (size_t)np, 2 * sizeof *pairs, kv_pair_cmp);
  uint64_t held = 0;
  for (uint64_t s = 0; s < sets; s++) {
    const uint64_t base = kv_set_base(s, ways);
    for (uint64_t i = 0; i < ways; i++) {
      const uint64_t k1 = w[base + 1 + KV_SLOT * i], v = w[base + 1 + KV_SLOT * i + 1];
      const uint64_t stamp = w[base + 1 + KV_SLOT * i + 2];
      if (k1 == 0) continue;
      held++;
      const uint64_t key = k1 - 1;
      const char *why = NULL;
      if (kv_set_of(key, sets) != s)
        why = "is in another set than its own";
      else if (stamp > w[base] || stamp == 0)
        why = "has a stamp past its set's clock";
      for (uint64_t j = i + 1; !why && j < ways; j++)
        if (w[base + 1 + KV_SLOT * j] == k1) why = "is held twice";
      const uint64_t want[2] = {key, v};
      if (!why && !(spec && key < preload && v == KV_PRELOAD_VALUE(key)) &&
          !bsearch(want, pairs, (size_t)np, 2 * sizeof *pairs, kv_pair_cmp))
        why = "holds a value no committed set of it wrote";
      if (why) {
        snprintf(msg, msglen, "key %llu (set %llu, way %llu) %s", (unsigned long long)key, (unsigned long long)s,
                 (unsigned long long)i, why);
        free(pairs);
        return 0;
      }
    }
  }
  free(pairs);
  *ok = committed == n;
  snprintf(msg, msglen,
           "%llu of %llu transactions committed; %llu keys held in %llu sets of %llu ways, each in its "
           "own set once, with a value a committed set of it wrote%s",
           (unsigned long long)committed, (unsigned long long)n, (unsigned long long)held, (unsigned long long)sets,
           (unsigned long long)ways, spec ? " or its preload value" : "");
  return 0;
}

/* The sample's view of a row: a set or a delete writes its key's set (the
 * clock word stands for it); a get writes nothing, and gets do not conflict
 * with one another, so it names no word. */
static unsigned kv_row_words(const prstm_engine *engine, const prstm_batch *batch, uint64_t row, uint64_t *out,
                             unsigned cap) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  if (cap == 0 || prstm_batch_type(batch, row) == KV_GET || nwords < KV_HEADER || w[0] == 0 || w[1] == 0 ||
      w[1] > KV_MAX_WAYS)
    return 0;
  out[0] = kv_set_base(kv_set_of(prstm_batch_arg(batch, row, 0), w[0]), w[1]);
  return 1;
}

const prstm_workload prstm_workload_kv = {
    .name = "kv",
    .ntypes = sizeof kv_types / sizeof kv_types[0],
    .types = kv_types,
    .nvariants = 1,
    .variants = {{.max_columns = KV_COLUMNS,
                  .set_capacity = KV_CAPACITY,
                  .cpu_worker = kv_all_cpu_worker,
                  PRSTM_GPU_HOOKS(kv_all)}},
    .init_state = kv_init_state,
    .generate = kv_generate,
    .check_invariant = kv_check_invariant,
    .config_keys = 0,
    .nparams = KP_COUNT,
    .params = kv_params,
    .row_words = kv_row_words,
};
