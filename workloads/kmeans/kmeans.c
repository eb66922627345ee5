/* kmeans.c: the kmeans workload's host side: types, knobs, the points and initial centroids, the batch generator and the sequential k-means check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "kmeans_body.h"

PRSTM_CPU_WORKER(kmeans, kmeans_dispatch, KMEANS_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(kmeans);

#define KMEANS_TYPE(k)                                                                        \
  {                                                                                           \
    "assign" #k, 15 - (k), 0, 2, {{"x", PRSTM_ARG_UINT}, {"y", PRSTM_ARG_UINT}}, {            \
      "iteration or header not in the state", "coordinate beyond the state's coordinate_max", \
          "previous iteration holds more points than the state declares"                      \
    }                                                                                         \
  }

/* assign<k> is type index k - 1; see kmeans_body.h for why tags go down with k. */
static const prstm_type_desc kmeans_types[KMEANS_MAX_ITERATIONS] = {
    KMEANS_TYPE(1),  KMEANS_TYPE(2),  KMEANS_TYPE(3),  KMEANS_TYPE(4),  KMEANS_TYPE(5),
    KMEANS_TYPE(6),  KMEANS_TYPE(7),  KMEANS_TYPE(8),  KMEANS_TYPE(9),  KMEANS_TYPE(10),
    KMEANS_TYPE(11), KMEANS_TYPE(12), KMEANS_TYPE(13), KMEANS_TYPE(14), KMEANS_TYPE(15),
};

/* Knobs, all in the state section: init_state and generate both regenerate
 * the same points from them. The largest point count keeps every sum below
 * 2^57 at the largest coordinate. */
enum { KP_POINTS = 0, KP_CLUSTERS, KP_ITERATIONS, KP_COORD_MAX, KP_SEED, KP_COUNT };
#define KMEANS_MAX_POINTS 67108864.0
static const prstm_param_desc kmeans_params[KP_COUNT] = {
    {"points", PRSTM_PARAM_STATE, 1000000, 1, KMEANS_MAX_POINTS, 1, "2-D integer points to cluster"},
    {"clusters", PRSTM_PARAM_STATE, 16, 1, KMEANS_MAX_CLUSTERS, 1,
     "clusters; the initial centroids are the first `clusters` points"},
    {"iterations", PRSTM_PARAM_STATE, 5, 1, KMEANS_MAX_ITERATIONS, 1,
     "k-means iterations, one transaction per point each (one semantic tag per iteration, so at most 15)"},
    {"coordinate_max", PRSTM_PARAM_STATE, 1000000, 0, (double)KMEANS_MAX_COORD, 1,
     "coordinates are drawn uniformly from 0 to this value"},
    {"seed", PRSTM_PARAM_STATE, 1, 0, 9007199254740992.0, 1, "seed of the points (splitmix64)"},
};

typedef struct kmeans_knobs {
  uint64_t points, clusters, iterations, coord_max, seed;
} kmeans_knobs;

/* The loader checks the knobs of a config; a program calling the hooks
 * directly gets the same checks here. */
static int kmeans_knob(const prstm_state_spec *spec, unsigned i, uint64_t *out, char *err, size_t errlen) {
  const prstm_param_desc *d = &kmeans_params[i];
  double v = spec->params[i];
  if (!(v >= d->min && v <= d->max) || v != (double)(uint64_t)v) {
    snprintf(err, errlen, "state.%s: expected a whole number between %.17g and %.17g", d->name, d->min, d->max);
    return PRSTM_ECONFIG;
  }
  *out = (uint64_t)v;
  return 0;
}

static int kmeans_read_knobs(const prstm_state_spec *spec, kmeans_knobs *k, char *err, size_t errlen) {
  int rc;
  if ((rc = kmeans_knob(spec, KP_POINTS, &k->points, err, errlen)) != 0) return rc;
  if ((rc = kmeans_knob(spec, KP_CLUSTERS, &k->clusters, err, errlen)) != 0) return rc;
  if ((rc = kmeans_knob(spec, KP_ITERATIONS, &k->iterations, err, errlen)) != 0) return rc;
  if ((rc = kmeans_knob(spec, KP_COORD_MAX, &k->coord_max, err, errlen)) != 0) return rc;
  if ((rc = kmeans_knob(spec, KP_SEED, &k->seed, err, errlen)) != 0) return rc;
  if (k->clusters > k->points) {
    snprintf(err, errlen,
             "state.clusters (%llu) must not exceed state.points (%llu): the initial centroids are "
             "the first points",
             (unsigned long long)k->clusters, (unsigned long long)k->points);
    return PRSTM_ECONFIG;
  }
  return 0;
}

/* Point i is the i-th pair drawn from the seed's stream. The stream moves
 * by a fixed step per draw, so its place before draw 2i is known and any
 * point is drawn on its own, on any thread. */
static void kmeans_point(const kmeans_knobs *k, uint64_t i, uint64_t *x, uint64_t *y) {
  uint64_t rng = k->seed + 2 * i * 0x9e3779b97f4a7c15ull;
  *x = wl_below(&rng, k->coord_max + 1);
  *y = wl_below(&rng, k->coord_max + 1);
}

static uint64_t kmeans_nwords(const kmeans_knobs *k) { return KMEANS_STATE_WORDS(k->clusters, k->iterations); }

/* Header and iteration 0 (the first `clusters` points as centroids) into w,
 * whose other words are zero. */
static void kmeans_fill_initial(const kmeans_knobs *k, prstm_word *w) {
  w[KMEANS_H_POINTS] = k->points;
  w[KMEANS_H_CLUSTERS] = k->clusters;
  w[KMEANS_H_ITERATIONS] = k->iterations;
  w[KMEANS_H_COORD_MAX] = k->coord_max;
  for (uint64_t c = 0; c < k->clusters; c++) {
    uint64_t x, y;
    kmeans_point(k, c, &x, &y);
    w[KMEANS_WORD(k->clusters, 0, c, KMEANS_SUM_X)] = x;
    w[KMEANS_WORD(k->clusters, 0, c, KMEANS_SUM_Y)] = y;
    w[KMEANS_WORD(k->clusters, 0, c, KMEANS_COUNT)] = 1;
  }
}

static int kmeans_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                             size_t errlen) {
  kmeans_knobs k;
  int rc = kmeans_read_knobs(spec, &k, err, errlen);
  if (rc != 0) return rc;
  uint64_t n = kmeans_nwords(&k);
  prstm_word *w = calloc((size_t)n, sizeof *w);
  if (!w) {
    snprintf(err, errlen, "cannot allocate %llu state words", (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  kmeans_fill_initial(&k, w);
  *words = w;
  *nwords = n;
  return 0;
}

/* What every block of the batch shares: the knobs and the shuffle. */
typedef struct kmeans_rows {
  const kmeans_knobs *k;
  int presorted;
  wl_perm order; /* emitted row -> iteration-major row, unless presorted */
} kmeans_rows;

/* Rows [first, first + rows) in emitted order: row r of the
 * iteration-major order is iteration r / points + 1, point r % points. */
static int kmeans_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  (void)rng;
  const kmeans_rows *kr = ctx;
  const uint64_t points = kr->k->points;
  int rc = 0;
  for (uint64_t r = first; r < first + rows && rc == 0; r++) {
    const uint64_t at = kr->presorted ? r : wl_perm_at(&kr->order, r);
    uint64_t x, y;
    kmeans_point(kr->k, at % points, &x, &y);
    prstm_word args[2] = {x, y};
    rc = txtable_append_generated(part, (unsigned)(at / points), args, 2);
  }
  return rc;
}

/* The batch is points x iterations assigns, sized by the state's knobs:
 * batch.generate.transactions may be left out, and is refused when it says
 * another size. Presorted emits iteration after iteration (higher tags
 * first); otherwise the rows are shuffled with the generate seed, so that
 * dependent rows sit at every distance from the rows they depend on. The
 * rows are made on every core (batch.generate.threads). */
static int kmeans_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch,
                           char *err, size_t errlen) {
  kmeans_knobs k;
  int rc = kmeans_read_knobs(state, &k, err, errlen);
  if (rc != 0) return rc;
  uint64_t n = k.points * k.iterations;
  if (spec->transactions != 0 && spec->transactions != n) {
    snprintf(err, errlen,
             "transactions: kmeans generates points x iterations = %llu assigns; leave the key out "
             "or give exactly that (got %llu)",
             (unsigned long long)n, (unsigned long long)spec->transactions);
    return PRSTM_ECONFIG;
  }
  if (spec->nmix != 0) {
    snprintf(err, errlen, "mix: kmeans has one assign type per iteration and no mix");
    return PRSTM_ECONFIG;
  }
  if (spec->read_only > 0) {
    snprintf(err, errlen, "read_only: kmeans has no read-only type (got %g)", spec->read_only);
    return PRSTM_ECONFIG;
  }
  if (spec->semantic_ratio != 0) {
    snprintf(err, errlen,
             "semantic_ratio: in kmeans every assign after iteration 1 depends on the previous "
             "iteration; the ratio is not a knob (got %g)",
             spec->semantic_ratio);
    return PRSTM_ECONFIG;
  }
  kmeans_rows rows = {&k, spec->presorted, {0}};
  if (!spec->presorted) wl_perm_init(&rows.order, spec->seed, n);
  rc = wl_generate_blocks(batch, n, spec->seed, spec->threads, 2, kmeans_make_block, &rows);
  /* Presorted is already the emitted order, iteration after iteration. */
  return wl_generated(batch, rc, 0, err, errlen);
}

/* Centroids of iteration j of a complete table w (state layout), the empty
 * clusters keeping their previous centroid: the same rule as the body. */
static void kmeans_centroids(const prstm_word *w, uint64_t clusters, unsigned j, uint64_t *cx, uint64_t *cy) {
  for (uint64_t c = 0; c < clusters; c++) {
    unsigned i = j;
    uint64_t n = w[KMEANS_WORD(clusters, i, c, KMEANS_COUNT)];
    while (n == 0 && i > 0) n = w[KMEANS_WORD(clusters, --i, c, KMEANS_COUNT)];
    if (n == 0) n = 1;
    cx[c] = w[KMEANS_WORD(clusters, i, c, KMEANS_SUM_X)] / n;
    cy[c] = w[KMEANS_WORD(clusters, i, c, KMEANS_SUM_Y)] / n;
  }
}

static uint64_t kmeans_nearest(const uint64_t *cx, const uint64_t *cy, uint64_t clusters, uint64_t x, uint64_t y) {
  uint64_t best = 0, best_d = UINT64_MAX;
  for (uint64_t c = 0; c < clusters; c++) {
    uint64_t dx = x > cx[c] ? x - cx[c] : cx[c] - x, dy = y > cy[c] ? y - cy[c] : cy[c] - y;
    uint64_t d = dx > KMEANS_MAX_COORD || dy > KMEANS_MAX_COORD ? UINT64_MAX : dx * dx + dy * dy;
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

static const char *const kmeans_field_names[3] = {"sum_x", "sum_y", "count"};

/* The final state must equal a sequential k-means computed here from the
 * batch's own points: iteration 0 from the state knobs (or, for a state set
 * directly, the final words, which no transaction writes), then for each
 * iteration every assign<k> point joins its nearest centroid of k - 1 as
 * computed by this reference, not by the run. And the run must have
 * converged: every assign committed. */
static int kmeans_check_invariant(const prstm_engine *engine, const prstm_batch *b, int *ok, char *msg, size_t msglen) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  *ok = 0;
  if (w == NULL || nwords < KMEANS_HEADER) {
    snprintf(msg, msglen, "state of %llu words has no kmeans header", (unsigned long long)nwords);
    return 0;
  }
  kmeans_knobs k = {w[KMEANS_H_POINTS], w[KMEANS_H_CLUSTERS], w[KMEANS_H_ITERATIONS], w[KMEANS_H_COORD_MAX], 0};
  if (k.clusters == 0 || k.clusters > KMEANS_MAX_CLUSTERS || k.iterations == 0 ||
      k.iterations > KMEANS_MAX_ITERATIONS || nwords != kmeans_nwords(&k)) {
    snprintf(msg, msglen, "malformed kmeans header: %llu clusters, %llu iterations in %llu words",
             (unsigned long long)k.clusters, (unsigned long long)k.iterations, (unsigned long long)nwords);
    return 0;
  }
  kmeans_knobs sk;
  char err[256];
  if (spec != NULL && kmeans_read_knobs(spec, &sk, err, sizeof err) == 0) {
    if (sk.points != k.points || sk.clusters != k.clusters || sk.iterations != k.iterations ||
        sk.coord_max != k.coord_max) {
      snprintf(msg, msglen,
               "header (%llu points, %llu clusters, %llu iterations, max %llu) differs from the state knobs",
               (unsigned long long)k.points, (unsigned long long)k.clusters, (unsigned long long)k.iterations,
               (unsigned long long)k.coord_max);
      return 0;
    }
    k.seed = sk.seed;
  } else {
    spec = NULL;
  }
  prstm_word *ref = calloc((size_t)nwords, sizeof *ref);
  if (!ref) return PRSTM_ENOMEM;
  if (spec != NULL) {
    kmeans_fill_initial(&k, ref);
  } else {
    for (uint64_t i = 0; i < KMEANS_WORD(k.clusters, 1, 0, 0); i++) ref[i] = w[i];
  }
  uint64_t n = prstm_batch_size(b), committed = 0, abandoned = 0, failed = 0, foreign = 0;
  for (uint64_t r = 0; r < n; r++) {
    prstm_status st = PRSTM_PENDING;
    prstm_batch_outcome(b, r, &st, NULL, NULL);
    committed += st == PRSTM_COMMITTED;
    abandoned += st == PRSTM_ABANDONED;
    failed += st == PRSTM_FAILED;
    if (prstm_batch_type(b, r) >= k.iterations) foreign++;
  }
  uint64_t cx[KMEANS_MAX_CLUSTERS], cy[KMEANS_MAX_CLUSTERS];
  for (unsigned it = 1; it <= k.iterations; it++) {
    kmeans_centroids(ref, k.clusters, it - 1, cx, cy);
    for (uint64_t r = 0; r < n; r++) {
      if (prstm_batch_type(b, r) != it - 1) continue;
      uint64_t x = prstm_batch_arg(b, r, 0), y = prstm_batch_arg(b, r, 1);
      uint64_t c = kmeans_nearest(cx, cy, k.clusters, x, y);
      ref[KMEANS_WORD(k.clusters, it, c, KMEANS_SUM_X)] += x;
      ref[KMEANS_WORD(k.clusters, it, c, KMEANS_SUM_Y)] += y;
      ref[KMEANS_WORD(k.clusters, it, c, KMEANS_COUNT)] += 1;
    }
  }
  uint64_t differ = 0, first = 0;
  for (uint64_t i = 0; i < nwords; i++) {
    if (ref[i] == w[i]) continue;
    if (differ++ == 0) first = i;
  }
  *ok = differ == 0 && committed == n && foreign == 0;
  int len =
      snprintf(msg, msglen, "sequential k-means, %llu iterations x %llu clusters: ", (unsigned long long)k.iterations,
               (unsigned long long)k.clusters);
  size_t at = len > 0 && (size_t)len < msglen ? (size_t)len : 0;
  if (differ == 0) {
    len = snprintf(msg + at, msglen - at, "all %llu sums and counts match",
                   (unsigned long long)((k.iterations + 1) * k.clusters * 3u));
  } else if (first < KMEANS_BASE || (first - KMEANS_BASE) % KMEANS_CELL_WORDS > KMEANS_COUNT) {
    len = snprintf(msg + at, msglen - at, "%llu words differ, the first in the header or padding (word %llu)",
                   (unsigned long long)differ, (unsigned long long)first);
  } else {
    uint64_t cell = (first - KMEANS_BASE) / KMEANS_CELL_WORDS;
    len =
        snprintf(msg + at, msglen - at,
                 "%llu words differ, the first iteration %llu cluster %llu %s: %llu, "
                 "sequential %llu",
                 (unsigned long long)differ, (unsigned long long)(cell / k.clusters),
                 (unsigned long long)(cell % k.clusters), kmeans_field_names[(first - KMEANS_BASE) % KMEANS_CELL_WORDS],
                 (unsigned long long)w[first], (unsigned long long)ref[first]);
  }
  at = len > 0 && at + (size_t)len < msglen ? at + (size_t)len : at;
  snprintf(msg + at, msglen - at, "; %llu of %llu assigns committed (%llu abandoned, %llu failed)%s",
           (unsigned long long)committed, (unsigned long long)n, (unsigned long long)abandoned,
           (unsigned long long)failed, foreign ? "; some assigns name an iteration beyond the state" : "");
  free(ref);
  return 0;
}

const prstm_workload prstm_workload_kmeans = {
    .name = "kmeans",
    .ntypes = KMEANS_MAX_ITERATIONS,
    .types = kmeans_types,
    .nvariants = 1,
    .variants = {{.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = KMEANS_CAPACITY,
                  .cpu_worker = kmeans_cpu_worker,
                  PRSTM_GPU_HOOKS(kmeans)}},
    .init_state = kmeans_init_state,
    .generate = kmeans_generate,
    .check_invariant = kmeans_check_invariant,
    .config_keys = 0,
    .nparams = KP_COUNT,
    .params = kmeans_params,
    /* An assign adds its point to its cluster's sums and count: every cluster
     * is a hot word, and adds let the assigns of an iteration commit side by
     * side (kmeans_body.h). */
    .uses_add = PRSTM_ADDS_COUNTED,
};
