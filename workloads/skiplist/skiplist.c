/* skiplist.c: the skiplist workload's host side (the 2020 paper's benchmark): types, knobs, initial list, batch generator and the structure-and-key-set invariant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "skiplist_body.h"

PRSTM_CPU_WORKER(skiplist, skiplist_dispatch, SKIPLIST_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(skiplist);

static const prstm_type_desc skiplist_types[] = {
    /* An insert may be the one a postponed delete waits for, so it goes first. */
    {"insert",
     1,
     0,
     2,
     {{"key", PRSTM_ARG_UINT}, {"height", PRSTM_ARG_UINT}},
     {"key or height out of range", "state is not a valid skiplist", "key already present",
      "no node slot for this row (beyond state.capacity, or already used)"}},
    {"delete", 0, 0, 1, {{"key", PRSTM_ARG_UINT}}, {"key out of range", "state is not a valid skiplist", NULL}},
    {"search", 0, 1, 1, {{"key", PRSTM_ARG_UINT}}, {"key out of range", "state is not a valid skiplist", NULL}},
};

/* The knobs. Everything the initial list depends on is in the state
 * section, because the generator rebuilds the initial key set to aim its
 * deletes at keys that are there. */
enum { SL_P_INITIAL_KEYS, SL_P_CAPACITY, SL_P_LEVELS, SL_P_KEY_RANGE, SL_P_BRANCHING, SL_P_SEED, SL_NPARAMS };
#define SL_KEY_RANGE_MAX 4294967295.0 /* SKIPLIST_KEY_MAX: a link holds a key in 32 bits */
static const prstm_param_desc skiplist_params[] = {
    {"initial_keys", PRSTM_PARAM_STATE, 5000, 0, 2147483647.0, 1, "keys in the list before the batch"},
    {"capacity", PRSTM_PARAM_STATE, 10000000, 1, 2147483647.0, 1,
     "nodes the state has room for, the initial ones included (the head is extra)"},
    {"levels", PRSTM_PARAM_STATE, 5, 1, SKIPLIST_MAX_LEVELS, 1, "levels of the skiplist"},
    {"key_range", PRSTM_PARAM_STATE, 100000000, 1, SL_KEY_RANGE_MAX, 1,
     "keys are drawn from 1 to key_range; inserts take fresh keys, so it must exceed initial keys + transactions"},
    {"branching", PRSTM_PARAM_STATE, 8, 2, 64, 1, "a node reaches the next level with probability 1/branching"},
    {"seed", PRSTM_PARAM_STATE, 1, 0, 9007199254740992.0, 1, "seed of the initial keys and heights"},
};

/* Geometric height: each further level with probability 1/branching. */
static uint64_t sl_height(uint64_t *s, uint64_t levels, uint64_t branching) {
  uint64_t h = 1;
  while (h < levels && wl_below(s, branching) == 0) h++;
  return h;
}

typedef struct sl_knobs {
  uint64_t initial_keys, capacity, levels, key_range, branching, seed;
} sl_knobs;

static int sl_knobs_read(const prstm_state_spec *spec, sl_knobs *k, char *err, size_t errlen) {
  k->initial_keys = (uint64_t)spec->params[SL_P_INITIAL_KEYS];
  k->capacity = (uint64_t)spec->params[SL_P_CAPACITY];
  k->levels = (uint64_t)spec->params[SL_P_LEVELS];
  k->key_range = (uint64_t)spec->params[SL_P_KEY_RANGE];
  k->branching = (uint64_t)spec->params[SL_P_BRANCHING];
  k->seed = (uint64_t)spec->params[SL_P_SEED];
  if (k->levels < 1 || k->levels > SKIPLIST_MAX_LEVELS || k->branching < 2 || k->capacity < 1 || k->key_range < 1 ||
      k->key_range > (uint64_t)SL_KEY_RANGE_MAX) {
    snprintf(err, errlen,
             "skiplist: state knobs out of range (levels 1 to %u, branching >= 2, capacity and "
             "key_range >= 1)",
             SKIPLIST_MAX_LEVELS);
    return PRSTM_ECONFIG;
  }
  if (k->initial_keys > k->key_range || k->initial_keys > k->capacity) {
    snprintf(err, errlen, "state.initial_keys (%llu) exceeds state.key_range (%llu) or state.capacity (%llu)",
             (unsigned long long)k->initial_keys, (unsigned long long)k->key_range, (unsigned long long)k->capacity);
    return PRSTM_ECONFIG;
  }
  return 0;
}

static int sl_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The initial keys, sorted and distinct, a function of the state knobs only
 * (init_state, the generator and the invariant all rebuild the same set).
 * A dense draw walks the range once (selection sampling); a sparse one draws,
 * sorts and removes duplicates until enough keys are distinct. */
static int sl_initial_keys(const sl_knobs *k, uint64_t **out) {
  uint64_t n = k->initial_keys;
  uint64_t *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
  if (!keys) return PRSTM_ENOMEM;
  uint64_t rng = k->seed ^ 0x6b65797365740000ull; /* "keyset" */
  if (k->key_range <= 4 * n || k->key_range <= (1u << 24)) {
    uint64_t have = 0;
    for (uint64_t key = 1; key <= k->key_range && have < n; key++)
      if (wl_below(&rng, k->key_range - key + 1) < n - have) keys[have++] = key;
  } else {
    uint64_t have = 0;
    while (have < n) {
      for (uint64_t i = have; i < n; i++) keys[i] = 1 + wl_below(&rng, k->key_range);
      qsort(keys, (size_t)n, sizeof *keys, sl_cmp_u64);
      have = 0;
      for (uint64_t i = 0; i < n; i++)
        if (have == 0 || keys[i] != keys[have - 1]) keys[have++] = keys[i];
    }
  }
  *out = keys;
  return 0;
}

/* Only the header and the initial nodes take work: the pool of free nodes is
 * the zero pages calloc hands out, so even 10 million nodes start at once. */
static int skiplist_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                               size_t errlen) {
  sl_knobs k;
  int rc = sl_knobs_read(spec, &k, err, errlen);
  if (rc) return rc;
  uint64_t nodes = k.capacity + 1, stride = 2 + k.levels;
  if (nodes > (SIZE_MAX / sizeof(prstm_word) - SKIPLIST_HEADER) / stride) {
    snprintf(err, errlen, "state.capacity %llu is too large for this machine", (unsigned long long)k.capacity);
    return PRSTM_ETOOBIG;
  }
  uint64_t n = SKIPLIST_HEADER + nodes * stride;
  prstm_word *w = calloc((size_t)n, sizeof *w);
  uint64_t *keys = NULL;
  if (!w || sl_initial_keys(&k, &keys) != 0) {
    free(w);
    snprintf(err, errlen, "cannot allocate a skiplist of %llu nodes (%llu words)", (unsigned long long)nodes,
             (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  skiplist_meta m = {k.levels, nodes, k.initial_keys + 1, stride};
  w[0] = SKIPLIST_MAGIC;
  w[1] = k.levels;
  w[2] = nodes;
  w[3] = k.initial_keys + 1;
  w[skiplist_addr(&m, 0, 1)] = k.levels;
  /* Node i holds the i-th smallest key; last[l] is the node linked last on level l. */
  uint64_t last[SKIPLIST_MAX_LEVELS] = {0};
  uint64_t rng = k.seed ^ 0x6865696768747300ull; /* "heights" */
  for (uint64_t i = 1; i <= k.initial_keys; i++) {
    uint64_t key = keys[i - 1], h = sl_height(&rng, k.levels, k.branching);
    w[skiplist_addr(&m, i, 0)] = key;
    w[skiplist_addr(&m, i, 1)] = h;
    for (uint64_t l = 0; l < h; l++) {
      w[skiplist_addr(&m, last[l], 2 + l)] = skiplist_link(key, i);
      last[l] = i;
    }
  }
  free(keys);
  *words = w;
  *nwords = n;
  return 0;
}

/* The generator follows every key through one life: a key is inserted at
 * most once (a fresh key, never in the list before), and deleted at most
 * once, after its insert in table order (or at any time if it was an
 * initial key). Keys are never reused, so whatever order the engine runs the
 * batch in, no insert finds its key present and every delete is eventually
 * served: a delete that runs before its insert meets a real semantic conflict
 * and postpones until the insert (higher tag) commits. Reusing keys instead
 * (insert, delete, insert again) makes the outcome hinge on the run's order:
 * with inserts swept first, most re-inserts fail and the deletes then empty
 * the list, which measures the mix, not the engine.
 *
 * The rows are made in blocks on every core (wl_generate_blocks), so nothing
 * a block draws may depend on another block:
 * - the fresh key of row r is the pi(r)-th key outside the initial set, pi a
 *   permutation of those keys, so rows never share one;
 * - each block owns a random share of the initial keys, and its deletes and
 *   half its searches draw from that share and the keys the block itself
 *   inserted (its live keys);
 * - a semantic pair's delete takes the fresh key of its own row, and its
 *   insert, the later row, the same key through the pair's permutation. */
typedef struct sl_blocks {
  sl_knobs k;
  double cum[3];        /* insert, delete, search */
  const uint64_t *keys; /* the initial keys, sorted */
  wl_perm fresh;        /* row -> rank among the keys outside the initial set */
  wl_perm shares;       /* spreads the initial keys over the blocks */
  wl_perm pairs;        /* places the semantic pairs */
  uint64_t npairs, nblocks;
  wl_pair_rows pair_rows; /* the pairs' rows */
  /* sl_outside_key's guide: for each bucket of 2^guide_shift ranks, the
   * number of initial keys with fewer keys outside the set below them
   * than the bucket's first rank (nguide + 1 entries, the last one every
   * key). About one bucket for every two keys, four bytes each: a quarter
   * of the memory of the keys themselves (initial_keys is below 2^31). */
  uint32_t *guide;
  uint64_t nguide;
  unsigned guide_shift;
} sl_blocks;

typedef struct sl_gen {
  const sl_blocks *sb;
  uint64_t rng;
  uint64_t *live; /* the block's live keys, in no order */
  uint64_t nlive;
  prstm_batch *batch;
} sl_gen;

/* The key of rank j among those of 1 .. key_range outside the sorted
 * initial keys: j + 1 plus the initial keys below it, that is the keys[i]
 * with keys[i] - 1 - i (how many keys outside the set lie below keys[i],
 * which never decreases) at most j. j's bucket of the guide bounds that
 * count on both sides, so the search covers the few keys of one bucket
 * where a search of every key took most of the generator's time. */
static uint64_t sl_outside_below(const uint64_t *keys, uint64_t i) { return keys[i] - 1 - i; }

static uint64_t sl_outside_key(const sl_blocks *sb, uint64_t j) {
  const uint64_t b = j >> sb->guide_shift; /* below nguide: j is below the ranks outside */
  /* Keys before guide[b] count (fewer outside keys lie below them than
   * the bucket's first rank, which j is at least); keys from guide[b + 1]
   * on do not (at least the next bucket's first rank lie below them, which
   * j is below). */
  uint64_t lo = sb->guide[b], hi = sb->guide[b + 1];
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (sl_outside_below(sb->keys, mid) <= j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return j + 1 + lo;
}

/* Builds sb->guide over the ranks of the keys outside the initial set, in
 * buckets of a power of two ranks, about one bucket for every two keys. */
static int sl_guide_init(sl_blocks *sb) {
  const uint64_t nkeys = sb->k.initial_keys, outside = sb->k.key_range - nkeys;
  unsigned shift = 0;
  while (shift < 63 && (outside >> shift) > (nkeys > 1 ? nkeys / 2 : 1)) shift++;
  sb->guide_shift = shift;
  sb->nguide = (outside >> shift) + 1;
  sb->guide = malloc((size_t)(sb->nguide + 1) * sizeof *sb->guide);
  if (!sb->guide) return PRSTM_ENOMEM;
  uint64_t i = 0;
  for (uint64_t b = 0; b < sb->nguide; b++) {
    while (i < nkeys && sl_outside_below(sb->keys, i) < (b << shift)) i++;
    sb->guide[b] = (uint32_t)i;
  }
  sb->guide[sb->nguide] = (uint32_t)nkeys;
  return 0;
}

static uint64_t sl_fresh_key(const sl_blocks *sb, uint64_t row) {
  return sl_outside_key(sb, wl_perm_at(&sb->fresh, row));
}

static int sl_emit(sl_gen *g, unsigned type, uint64_t key, uint64_t height) {
  prstm_word args[2] = {key, height};
  return txtable_append_generated(g->batch, type, args, type == SKIPLIST_INSERT ? 2 : 1);
}

static int sl_emit_insert(sl_gen *g, uint64_t row) {
  uint64_t key = sl_fresh_key(g->sb, row);
  g->live[g->nlive++] = key;
  return sl_emit(g, SKIPLIST_INSERT, key, sl_height(&g->rng, g->sb->k.levels, g->sb->k.branching));
}

static int sl_emit_random(sl_gen *g, uint64_t row) {
  const sl_knobs *k = &g->sb->k;
  unsigned type = wl_pick(&g->rng, g->sb->cum, 3);
  if (type == SKIPLIST_INSERT) return sl_emit_insert(g, row);
  if (type == SKIPLIST_DELETE) {
    /* A live key of the block; with none left, an insert keeps the batch
     * free of deletes that nothing could serve. */
    if (g->nlive == 0) return sl_emit_insert(g, row);
    uint64_t i = wl_below(&g->rng, g->nlive), key = g->live[i];
    g->live[i] = g->live[--g->nlive];
    return sl_emit(g, SKIPLIST_DELETE, key, 0);
  }
  /* Half the searches look for a live key, half for any key of the range
   * (mostly misses on a sparse range). */
  uint64_t key =
      g->nlive && (wl_rand(&g->rng) & 1) ? g->live[wl_below(&g->rng, g->nlive)] : 1 + wl_below(&g->rng, k->key_range);
  return sl_emit(g, SKIPLIST_SEARCH, key, 0);
}

/* Rows [first, first + rows), block first / WL_BLOCK_ROWS. */
static int sl_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const sl_blocks *sb = ctx;
  const uint64_t block = first / WL_BLOCK_ROWS, nkeys = sb->k.initial_keys;
  const uint64_t share_lo = nkeys * block / sb->nblocks, share_hi = nkeys * (block + 1) / sb->nblocks;
  sl_gen g = {sb, *rng, malloc((size_t)(share_hi - share_lo + rows) * sizeof(uint64_t)), 0, part};
  if (!g.live) return PRSTM_ENOMEM;
  for (uint64_t s = share_lo; s < share_hi; s++) g.live[g.nlive++] = sb->keys[wl_perm_at(&sb->shares, s)];
  uint64_t *slots = malloc((size_t)(2 * rows + 1) * sizeof *slots), *partners = slots ? slots + rows : NULL;
  int rc = slots ? 0 : PRSTM_ENOMEM;
  if (slots) wl_pair_rows_slots(&sb->pair_rows, first, rows, slots, partners);
  for (uint64_t i = first; i < first + rows && rc == 0; i++) {
    const uint64_t slot = slots[i - first];
    if (slot == WL_RANDOM_ROW)
      rc = sl_emit_random(&g, i);
    else if (slot & 1) /* the insert, after its delete */
      rc = sl_emit(&g, SKIPLIST_INSERT, sl_fresh_key(sb, partners[i - first]),
                   sl_height(&g.rng, sb->k.levels, sb->k.branching));
    else /* the delete: its key stays out of the live keys, so only its insert serves it */
      rc = sl_emit(&g, SKIPLIST_DELETE, sl_fresh_key(sb, i), 0);
  }
  free(slots);
  free(g.live);
  *rng = g.rng;
  return rc;
}

/* Refuses a batch of n rows that may each need one of what the knob `limit`
 * (state.<knob>) provides beyond the initial keys; need says what a row takes. */
static int sl_room_for_batch(const sl_knobs *k, uint64_t n, uint64_t limit, const char *need, const char *knob,
                             char *err, size_t errlen) {
  if (n <= limit - k->initial_keys) return 0;
  snprintf(err, errlen, "a batch of %llu transactions %s, but state.%s %llu leaves %llu beyond the %llu initial keys",
           (unsigned long long)n, need, knob, (unsigned long long)limit, (unsigned long long)(limit - k->initial_keys),
           (unsigned long long)k->initial_keys);
  return PRSTM_ECONFIG;
}

static int skiplist_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch,
                             char *err, size_t errlen) {
  sl_blocks sb;
  memset(&sb, 0, sizeof sb);
  int rc = sl_knobs_read(state, &sb.k, err, errlen);
  if (rc) return rc;
  uint64_t n = spec->transactions ? spec->transactions : 100000;
  /* Each row owns the node slot first_free + row, used only if it inserts,
   * and may take a fresh key. */
  if ((rc = sl_room_for_batch(&sb.k, n, sb.k.capacity, "needs as many free node slots", "capacity", err, errlen)) ||
      (rc = sl_room_for_batch(&sb.k, n, sb.k.key_range, "may need as many fresh keys", "key_range", err, errlen)))
    return rc;
  double w[3] = {0.4, 0.4, 0.2}; /* insert, delete, search */
  if ((rc = wl_mix_weights(spec, batch, w, 3, NULL, err, errlen)) != 0 ||
      (rc = wl_read_only_share(spec, w, 2, "insert or delete", err, errlen)) != 0 ||
      (rc = wl_cumulate(w, sb.cum, 3, err, errlen)) != 0)
    return rc;
  uint64_t *keys = NULL;
  if (sl_initial_keys(&sb.k, &keys) != 0) {
    snprintf(err, errlen, "cannot allocate the generator's tables for %llu keys",
             (unsigned long long)sb.k.initial_keys);
    return PRSTM_ENOMEM;
  }
  sb.keys = keys;
  if (sl_guide_init(&sb) != 0) {
    free(keys);
    snprintf(err, errlen, "cannot allocate the generator's tables for %llu keys",
             (unsigned long long)sb.k.initial_keys);
    return PRSTM_ENOMEM;
  }
  sb.nblocks = (n + WL_BLOCK_ROWS - 1) / WL_BLOCK_ROWS;
  sb.npairs = (uint64_t)(spec->semantic_ratio * (double)n / 2.0);
  wl_perm_init(&sb.fresh, spec->seed ^ 0x66726573686b6579ull, sb.k.key_range - sb.k.initial_keys); /* "freshkey" */
  wl_perm_init(&sb.shares, spec->seed ^ 0x7368617265730000ull, sb.k.initial_keys);                 /* "shares" */
  wl_perm_init(&sb.pairs, spec->seed, n);
  wl_pair_rows_init(&sb.pair_rows, &sb.pairs, sb.npairs, n, spec->threads);
  rc = wl_generate_blocks(batch, n, spec->seed, spec->threads, 2, sl_make_block, &sb);
  wl_pair_rows_free(&sb.pair_rows);
  free(sb.guide);
  free(keys);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

typedef struct sl_event {
  uint64_t key;
  int64_t delta; /* +1 initially present or inserted, -1 deleted */
} sl_event;

static int sl_cmp_event(const void *a, const void *b) {
  const sl_event *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

static int sl_find_key(const uint64_t *keys, uint64_t n, uint64_t key) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && keys[lo] == key;
}

/* Checks the structure: every level a strictly increasing list of valid
 * nodes, each node on level l of height > l, every level a sublist of level
 * 0 with exactly the nodes tall enough, links carrying their node's key.
 * Fills the level-0 keys in order. Returns 0, or writes why not into msg. */
static int sl_check_structure(const prstm_word *w, uint64_t nwords, const skiplist_meta *m, uint64_t *keys,
                              uint64_t *nkeys, uint64_t *level_size, char *msg, size_t msglen) {
  uint8_t *on0 = calloc((size_t)(m->nodes / 8 + 1), 1);
  uint64_t tall[SKIPLIST_MAX_LEVELS] = {0};
  int bad = 0;
  if (!on0) {
    snprintf(msg, msglen, "out of memory checking the skiplist");
    return -1;
  }
  if (w[skiplist_addr(m, 0, 0)] != 0 || w[skiplist_addr(m, 0, 1)] != m->levels) {
    snprintf(msg, msglen, "head node has key %llu and height %llu, expected 0 and %llu",
             (unsigned long long)w[skiplist_addr(m, 0, 0)], (unsigned long long)w[skiplist_addr(m, 0, 1)],
             (unsigned long long)m->levels);
    free(on0);
    return -1;
  }
  for (uint64_t l = 0; l < m->levels && !bad; l++) {
    uint64_t x = 0, xkey = 0, count = 0;
    for (;;) {
      uint64_t link = w[skiplist_addr(m, x, 2 + l)], succ = skiplist_link_index(link);
      if (succ == 0) break;
      uint64_t skey = skiplist_link_key(link);
      if (succ >= m->nodes || skiplist_addr(m, succ, 2 + m->levels) > nwords) {
        snprintf(msg, msglen, "level %llu: node %llu links to node %llu, beyond the %llu nodes", (unsigned long long)l,
                 (unsigned long long)x, (unsigned long long)succ, (unsigned long long)m->nodes);
        bad = 1;
        break;
      }
      uint64_t nkey = w[skiplist_addr(m, succ, 0)], h = w[skiplist_addr(m, succ, 1)];
      const char *why = NULL;
      if (skey != nkey)
        why = "the link's key differs from the node's key";
      else if (skey <= xkey)
        why = "keys do not strictly increase";
      else if (h <= l || h > m->levels)
        why = "the node's height does not reach this level";
      else if (l > 0 && !((on0[succ >> 3] >> (succ & 7)) & 1))
        why = "the node is not on level 0";
      if (why) {
        snprintf(msg, msglen, "level %llu: node %llu (key %llu, height %llu) after key %llu: %s", (unsigned long long)l,
                 (unsigned long long)succ, (unsigned long long)nkey, (unsigned long long)h, (unsigned long long)xkey,
                 why);
        bad = 1;
        break;
      }
      if (l == 0) {
        on0[succ >> 3] |= (uint8_t)(1u << (succ & 7));
        keys[count] = skey;
        for (uint64_t t = 0; t < h; t++) tall[t]++;
      }
      count++;
      x = succ;
      xkey = skey;
    }
    if (bad) break;
    /* Sublist of level 0 with only tall-enough nodes, and as many as there are: the same set. */
    if (count != tall[l]) {
      snprintf(msg, msglen, "level %llu holds %llu nodes but %llu nodes on level 0 are that tall",
               (unsigned long long)l, (unsigned long long)count, (unsigned long long)tall[l]);
      bad = 1;
    }
    level_size[l] = count;
    if (l == 0) *nkeys = count;
  }
  free(on0);
  return bad ? -1 : 0;
}

/* The structure is a valid skiplist, and its key set is what a sequential
 * replay gives: per key, present at the end = initially present + committed
 * inserts - committed deletes, each of them 0 or 1 (a set alternates insert
 * and delete of a key, whatever the order). Every abandoned delete is of a key
 * absent on the final state, and every committed search reports 0 or 1. */
static int skiplist_check_invariant(const prstm_engine *engine, const prstm_batch *b, int *ok, char *msg,
                                    size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  *ok = 0;
  skiplist_meta m;
  if (!w || nwords < SKIPLIST_HEADER || w[0] != SKIPLIST_MAGIC || w[1] < 1 || w[1] > SKIPLIST_MAX_LEVELS || w[2] < 1 ||
      w[2] > SKIPLIST_INDEX_MASK || (nwords - SKIPLIST_HEADER) / (2 + w[1]) < w[2]) {
    snprintf(msg, msglen, "the state is not a skiplist (bad header)");
    return 0;
  }
  m.levels = w[1];
  m.nodes = w[2];
  m.first_free = w[3];
  m.stride = 2 + m.levels;

  uint64_t n = prstm_batch_size(b), nkeys = 0, level_size[SKIPLIST_MAX_LEVELS] = {0};
  uint64_t *keys = malloc((size_t)m.nodes * sizeof *keys);
  sl_knobs k;
  uint64_t *initial = NULL, ninitial = 0;
  char kerr[256];
  int have_initial = spec && sl_knobs_read(spec, &k, kerr, sizeof kerr) == 0;
  if (have_initial) {
    if (sl_initial_keys(&k, &initial) != 0) have_initial = 0;
    ninitial = have_initial ? k.initial_keys : 0;
  }
  sl_event *ev = malloc((size_t)(ninitial + n + 1) * sizeof *ev);
  if (!keys || !ev) {
    free(keys);
    free(ev);
    free(initial);
    return PRSTM_ENOMEM;
  }
  if (sl_check_structure(w, nwords, &m, keys, &nkeys, level_size, msg, msglen) != 0) {
    free(keys);
    free(ev);
    free(initial);
    return 0;
  }

  uint64_t nev = 0, inserts = 0, deletes = 0, bad_abandoned = 0, bad_results = 0;
  for (uint64_t i = 0; i < ninitial; i++) ev[nev++] = (sl_event){initial[i], 1};
  free(initial);
  for (uint64_t i = 0; i < n; i++) {
    prstm_status st;
    unsigned reason = 0;
    prstm_word result = 0;
    prstm_batch_outcome(b, i, &st, &reason, &result);
    unsigned t = prstm_batch_type(b, i);
    uint64_t key = prstm_batch_arg(b, i, 0);
    if (st == PRSTM_COMMITTED && t == SKIPLIST_INSERT) {
      ev[nev++] = (sl_event){key, 1};
      inserts++;
    } else if (st == PRSTM_COMMITTED && t == SKIPLIST_DELETE) {
      ev[nev++] = (sl_event){key, -1};
      deletes++;
    } else if (st == PRSTM_COMMITTED && t == SKIPLIST_SEARCH) {
      bad_results += result > 1;
    } else if (wl_abandoned_at_quiescence(st, reason) && t == SKIPLIST_DELETE) {
      bad_abandoned += sl_find_key(keys, nkeys, key);
    }
  }
  qsort(ev, (size_t)nev, sizeof *ev, sl_cmp_event);
  /* Merge the per-key sums with the final keys, both sorted. */
  uint64_t i = 0, j = 0, checked = 0, bad_keys = 0, first_bad = 0;
  int64_t first_expect = 0, first_have = 0;
  while (i < nev || j < nkeys) {
    uint64_t key = i < nev && (j >= nkeys || ev[i].key <= keys[j]) ? ev[i].key : keys[j];
    int64_t sum = 0;
    for (; i < nev && ev[i].key == key; i++) sum += ev[i].delta;
    int64_t have = j < nkeys && keys[j] == key;
    j += (uint64_t)have;
    /* Without the state spec the initial set is unknown: then the initial
     * presence that the final one implies must itself be 0 or 1. */
    int64_t expect = have_initial ? sum : have;
    int good = have_initial ? (sum == have) : (have - sum >= 0 && have - sum <= 1);
    checked++;
    if (!good) {
      if (bad_keys++ == 0) {
        first_bad = key;
        first_expect = expect;
        first_have = have;
      }
    }
  }
  free(keys);
  free(ev);

  char levels[160] = "";
  size_t used = 0;
  for (uint64_t l = 0; l < m.levels && used < sizeof levels - 24; l++)
    used += (size_t)snprintf(levels + used, sizeof levels - used, "%s%llu", l ? "/" : "",
                             (unsigned long long)level_size[l]);
  *ok = bad_keys == 0 && bad_abandoned == 0 && bad_results == 0;
  if (bad_keys)
    snprintf(msg, msglen,
             "key set differs from the sequential count at %llu of %llu keys; first: key %llu is %s "
             "but initial + inserts - deletes = %lld",
             (unsigned long long)bad_keys, (unsigned long long)checked, (unsigned long long)first_bad,
             first_have ? "present" : "absent", (long long)first_expect);
  else
    snprintf(msg, msglen,
             "valid skiplist of %llu keys (levels %s); key set = %s%llu + inserts %llu - deletes %llu; "
             "%llu abandoned deletes of present keys; %llu bad search results",
             (unsigned long long)nkeys, levels, have_initial ? "initial " : "(no state spec) implied ",
             (unsigned long long)(have_initial ? ninitial : nkeys + deletes - inserts), (unsigned long long)inserts,
             (unsigned long long)deletes, (unsigned long long)bad_abandoned, (unsigned long long)bad_results);
  return 0;
}

const prstm_workload prstm_workload_skiplist = {
    .name = "skiplist",
    .ntypes = sizeof skiplist_types / sizeof skiplist_types[0],
    .types = skiplist_types,
    .nvariants = 1,
    .variants = {{.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = SKIPLIST_CAPACITY,
                  .cpu_worker = skiplist_cpu_worker,
                  PRSTM_GPU_HOOKS(skiplist)}},
    .init_state = skiplist_init_state,
    .generate = skiplist_generate,
    .check_invariant = skiplist_check_invariant,
    .config_keys = 0,
    .nparams = SL_NPARAMS,
    .params = skiplist_params,
};
