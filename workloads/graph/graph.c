/* graph.c: the graph workload's host side: types, knobs, the seeded CSR graph, round 0 and the frontier rounds, and the closure invariant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workload_util.h"
#include "graph_body.h"

PRSTM_CPU_WORKER(graph, graph_dispatch, GRAPH_CAPACITY)
PRSTM_GPU_WORKER_DECLARE(graph);

static const prstm_type_desc graph_types[] = {
    {"push",
     1,
     0,
     2,
     {{"vertex", PRSTM_ARG_UINT}, {"round", PRSTM_ARG_UINT}},
     {"no such vertex", "malformed graph state", "round out of range", NULL}},
    {"value", 0, 1, 1, {{"vertex", PRSTM_ARG_UINT}}, {"no such vertex", "malformed graph state", NULL}},
};

/* Knob indices, in the order of graph_params[]. */
enum { GRAPH_P_VERTICES = 0, GRAPH_P_EDGES, GRAPH_P_MAX_DEGREE, GRAPH_P_MAX_VALUE, GRAPH_P_SEED, GRAPH_NPARAMS };

static const prstm_param_desc graph_params[GRAPH_NPARAMS] = {
    {"vertices", PRSTM_PARAM_STATE, 1e6, 1, 4294967295.0, 1, "number of vertices"},
    {"edges", PRSTM_PARAM_STATE, 1e7, 0, 1e12, 1,
     "number of directed edges, random sources and targets; at most vertices times max_degree"},
    {"max_degree", PRSTM_PARAM_STATE, GRAPH_MAX_DEGREE, 1, GRAPH_MAX_DEGREE, 1,
     "largest out-degree a vertex gets; a push fits its sets up to 64"},
    {"max_value", PRSTM_PARAM_STATE, 10000, 1, 9007199254740992.0, 1,
     "initial values are drawn uniformly from 1 to max_value"},
    {"seed", PRSTM_PARAM_STATE, 1, 0, 9007199254740992.0, 1, "seed of the graph's edges and initial values"},
};

/* Uniform below n by a multiply instead of a division (n >= 1): the graph's
 * draws, unlike the other workloads' wl_below, which its seeds' graphs keep. */
static uint64_t graph_below(uint64_t *s, uint64_t n) { return (uint64_t)(((unsigned __int128)wl_rand(s) * n) >> 64); }
/* Vertex i's initial value depends on (seed, i) alone, so the invariant
 * regenerates it without replaying any other stream. */
static uint64_t graph_initial_value(uint64_t seed, uint64_t max_value, uint64_t i) {
  uint64_t s = seed ^ 0x5851f42d4c957f2dull;
  s += i * 0x9e3779b97f4a7c15ull;
  return 1 + graph_below(&s, max_value);
}

typedef struct graph_shape {
  uint64_t vertices, edges, max_degree, max_value, seed;
} graph_shape;

static int graph_shape_of(const prstm_state_spec *spec, graph_shape *g, char *err, size_t errlen) {
  g->vertices = (uint64_t)spec->params[GRAPH_P_VERTICES];
  g->edges = (uint64_t)spec->params[GRAPH_P_EDGES];
  g->max_degree = (uint64_t)spec->params[GRAPH_P_MAX_DEGREE];
  g->max_value = (uint64_t)spec->params[GRAPH_P_MAX_VALUE];
  g->seed = (uint64_t)spec->params[GRAPH_P_SEED];
  /* Library users fill the spec themselves, so the loader's ranges are checked again. */
  if (g->vertices < 1 || g->vertices > 4294967295ull || g->max_degree < 1 || g->max_degree > GRAPH_MAX_DEGREE ||
      g->max_value < 1) {
    snprintf(err, errlen, "state: vertices must be 1 to 4294967295, max_degree 1 to %d and max_value at least 1",
             GRAPH_MAX_DEGREE);
    return PRSTM_ECONFIG;
  }
  if (g->edges > g->vertices * g->max_degree) {
    snprintf(err, errlen, "state.edges (%llu) exceeds vertices times max_degree (%llu)", (unsigned long long)g->edges,
             (unsigned long long)(g->vertices * g->max_degree));
    return PRSTM_ECONFIG;
  }
  if (g->edges > 0 && g->vertices < 2) {
    snprintf(err, errlen, "state.edges needs at least 2 vertices: the graph has no self-loops");
    return PRSTM_ECONFIG;
  }
  return 0;
}

/* Builds the state in O(V + E): each edge takes a source uniformly among the
 * vertices not yet at max_degree (a list with swap-removal keeps the draw
 * O(1) and exact), the degrees become the CSR offsets, then each vertex draws
 * its targets uniformly among the other vertices. */
static int graph_init_state(const prstm_state_spec *spec, prstm_word **words, uint64_t *nwords, char *err,
                            size_t errlen) {
  graph_shape g;
  int rc = graph_shape_of(spec, &g, err, errlen);
  if (rc) return rc;
  uint64_t n = 3 * g.vertices + g.edges + 1 + GRAPH_HEADER_WORDS;
  prstm_word *w = calloc((size_t)n, sizeof *w);
  uint32_t *open = malloc((size_t)g.vertices * sizeof *open);
  if (!w || !open) {
    free(w);
    free(open);
    snprintf(err, errlen, "cannot allocate a graph of %llu vertices and %llu edges (%llu words)",
             (unsigned long long)g.vertices, (unsigned long long)g.edges, (unsigned long long)n);
    return PRSTM_ENOMEM;
  }
  w[0] = g.vertices;
  w[1] = g.edges;
  prstm_word *offsets = w + graph_offsets_at();
  prstm_word *targets = w + graph_targets_at(g.vertices);
  prstm_word *values = w + graph_values_at(g.vertices, g.edges);
  /* Degrees are counted in offsets[v + 1], then summed into place. */
  uint64_t live = g.vertices;
  for (uint64_t v = 0; v < g.vertices; v++) open[v] = (uint32_t)v;
  uint64_t rng = g.seed ^ 0x243f6a8885a308d3ull;
  for (uint64_t i = 0; i < g.edges; i++) {
    uint64_t k = graph_below(&rng, live);
    uint32_t v = open[k];
    if (++offsets[v + 1] == g.max_degree) open[k] = open[--live];
  }
  free(open);
  for (uint64_t v = 0; v < g.vertices; v++) offsets[v + 1] += offsets[v];
  rng = g.seed ^ 0x13198a2e03707344ull;
  for (uint64_t v = 0; v < g.vertices; v++) {
    for (uint64_t i = offsets[v]; i < offsets[v + 1]; i++) {
      uint64_t t = graph_below(&rng, g.vertices - 1);
      targets[i] = t >= v ? t + 1 : t;
    }
  }
  for (uint64_t v = 0; v < g.vertices; v++) values[v] = graph_initial_value(g.seed, g.max_value, v);
  /* changed[] stays 0: no vertex has been lowered yet. */
  *words = w;
  *nwords = n;
  return 0;
}

/* Round 0, made in blocks on every core (wl_generate_blocks): slot s of
 * the batch is a value query when a permutation of the slots keyed by the
 * seed puts it below the number of queries, and a push otherwise; a push's
 * vertex is the count of pushes before it, so the pushes come in vertex
 * order. Each block starts from the pushes before it, counted block by
 * block on every core first. */
typedef struct graph_round0 {
  uint64_t vertices, queries, total, nblocks;
  wl_perm places;         /* slot s holds a query when pi(s) < queries */
  uint64_t *first_vertex; /* per block: the vertex of its first push */
} graph_round0;

static int graph_slot_is_query(const graph_round0 *z, uint64_t slot) {
  return z->queries && wl_perm_at(&z->places, slot) < z->queries;
}

/* Blocks [from, to): how many pushes each holds, in first_vertex. */
static void graph_count_pushes(void *arg, unsigned part, uint64_t from, uint64_t to) {
  graph_round0 *z = arg;
  (void)part;
  for (uint64_t b = from; b < to; b++) {
    const uint64_t lo = b * WL_BLOCK_ROWS, hi = lo + WL_BLOCK_ROWS < z->total ? lo + WL_BLOCK_ROWS : z->total;
    uint64_t pushes = 0;
    for (uint64_t s = lo; s < hi; s++) pushes += !graph_slot_is_query(z, s);
    z->first_vertex[b] = pushes;
  }
}

static int graph_make_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const graph_round0 *z = ctx;
  uint64_t vertex = z->first_vertex[first / WL_BLOCK_ROWS];
  int rc = 0;
  for (uint64_t slot = first; slot < first + rows && rc == 0; slot++) {
    prstm_word args[2];
    if (graph_slot_is_query(z, slot)) {
      args[0] = graph_below(rng, z->vertices);
      rc = txtable_append_generated(part, GRAPH_VALUE, args, 1);
    } else {
      args[0] = vertex++;
      args[1] = 0;
      rc = txtable_append_generated(part, GRAPH_PUSH, args, 2);
    }
  }
  return rc;
}

/* Round 0: push(v, 0) for every vertex in vertex order, and, with a
 * read-only share r, V r / (1 - r) value queries of random vertices at random
 * places among them (so the count is exact). The batch is sized by the
 * graph, so the generator keys that would size or shape it otherwise are
 * refused rather than ignored. */
static int graph_generate(const prstm_generate_spec *spec, const prstm_state_spec *state, prstm_batch *batch, char *err,
                          size_t errlen) {
  graph_shape g;
  int rc = graph_shape_of(state, &g, err, errlen);
  if (rc) return rc;
  if (spec->transactions != 0) {
    snprintf(err, errlen,
             "batch.generate.transactions does not apply to graph: round 0 is one push per vertex "
             "(state.vertices) plus the read_only share of value queries");
    return PRSTM_ECONFIG;
  }
  if (spec->nmix != 0) {
    snprintf(err, errlen, "batch.generate.mix does not apply to graph: use read_only for the share of value queries");
    return PRSTM_ECONFIG;
  }
  if (spec->semantic_ratio > 0) {
    snprintf(err, errlen, "batch.generate.semantic_ratio does not apply to graph: no push waits on another");
    return PRSTM_ECONFIG;
  }
  if (spec->read_only >= 1) {
    snprintf(err, errlen, "batch.generate.read_only must be below 1 for graph: round 0 pushes every vertex");
    return PRSTM_ECONFIG;
  }
  double ro = spec->read_only > 0 ? spec->read_only : 0.0;
  graph_round0 z;
  memset(&z, 0, sizeof z);
  z.vertices = g.vertices;
  z.queries = (uint64_t)llround((double)g.vertices * ro / (1.0 - ro));
  z.total = g.vertices + z.queries;
  z.nblocks = (z.total + WL_BLOCK_ROWS - 1) / WL_BLOCK_ROWS;
  wl_perm_init(&z.places, spec->seed ^ 0xa4093822299f31d0ull, z.total);
  z.first_vertex = malloc((size_t)z.nblocks * sizeof *z.first_vertex);
  if (!z.first_vertex) {
    snprintf(err, errlen, "cannot allocate the generator's table of %llu blocks", (unsigned long long)z.nblocks);
    return PRSTM_ENOMEM;
  }
  unsigned parts = engine_parallel_parts(z.nblocks, 1);
  if (spec->threads && spec->threads < parts) parts = spec->threads;
  engine_parallel_for(z.nblocks, parts, graph_count_pushes, &z);
  for (uint64_t b = 0, before = 0; b < z.nblocks; b++) {
    const uint64_t pushes = z.first_vertex[b];
    z.first_vertex[b] = before;
    before += pushes;
  }
  rc = wl_generate_blocks(batch, z.total, spec->seed, spec->threads, 2, graph_make_block, &z);
  free(z.first_vertex);
  return wl_generated(batch, rc, spec->presorted, err, errlen);
}

/* Reads the header of a state and checks that the layout fits it exactly;
 * when it does not, says so in why and returns 0. */
static int graph_header(const prstm_word *w, uint64_t nwords, uint64_t *nv, uint64_t *ne, char *why, size_t whylen) {
  if (w && nwords >= 3) {
    *nv = w[0];
    *ne = w[1];
    if (graph_layout_ok(nwords, *nv, *ne)) return 1;
  }
  snprintf(why, whylen, "the state is not a graph: its header does not match its %llu words",
           (unsigned long long)nwords);
  return 0;
}

/* After round r, the frontier is every vertex some push of round r lowered
 * (changed == r + 1); each is pushed once in round r + 1, since the scan
 * visits each vertex once. An empty frontier is the fixed point. */
static int graph_next_round(const prstm_engine *engine, const prstm_batch *done, unsigned round, prstm_batch *next,
                            char *err, size_t errlen) {
  (void)done;
  uint64_t nwords = 0, nv, ne;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  if (!graph_header(w, nwords, &nv, &ne, err, errlen)) return PRSTM_EINVAL;
  const prstm_word *changed = w + graph_changed_at(nv, ne);
  prstm_word args[2] = {0, (prstm_word)round + 1};
  for (uint64_t v = 0; v < nv; v++) {
    if (changed[v] != (prstm_word)round + 1) continue;
    args[0] = v;
    int rc = txtable_append_generated(next, GRAPH_PUSH, args, 2);
    if (rc) {
      snprintf(err, errlen, "cannot append the push of vertex %llu: %s", (unsigned long long)v, prstm_strerror(rc));
      return rc;
    }
  }
  return 0;
}

typedef struct graph_start {
  uint64_t value, vertex;
} graph_start;

static int graph_start_cmp(const void *a, const void *b) {
  const graph_start *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return x->vertex < y->vertex ? -1 : x->vertex > y->vertex;
}

/* The sequential answer, computed differently from the pushes: visit the
 * vertices in increasing initial value; each one not yet reached labels every
 * vertex it reaches (depth first, stopping at labelled vertices) with its
 * value. A labelled vertex was reached from a value no larger, and so was
 * everything it reaches, so each vertex ends with the minimum initial value
 * over all vertices that reach it, itself included. */
static int graph_closure(const prstm_word *init, uint64_t nv, uint64_t ne, prstm_word *label) {
  const prstm_word *offsets = init + graph_offsets_at();
  const prstm_word *targets = init + graph_targets_at(nv);
  const prstm_word *values = init + graph_values_at(nv, ne);
  graph_start *order = malloc((size_t)nv * sizeof *order);
  uint64_t *stack = malloc((size_t)nv * sizeof *stack);
  if (!order || !stack) {
    free(order);
    free(stack);
    return PRSTM_ENOMEM;
  }
  for (uint64_t v = 0; v < nv; v++) {
    order[v].value = values[v];
    order[v].vertex = v;
    label[v] = 0; /* values are at least 1, so 0 means not reached */
  }
  qsort(order, (size_t)nv, sizeof *order, graph_start_cmp);
  for (uint64_t k = 0; k < nv; k++) {
    uint64_t s = order[k].vertex, val = order[k].value, top = 0;
    if (label[s]) continue;
    label[s] = val;
    stack[top++] = s;
    while (top) {
      uint64_t x = stack[--top];
      for (uint64_t i = offsets[x]; i < offsets[x + 1]; i++) {
        uint64_t y = targets[i];
        if (!label[y]) {
          label[y] = val;
          stack[top++] = y;
        }
      }
    }
  }
  free(order);
  free(stack);
  return 0;
}

/* Without the state spec the initial values are unknown: the check is then
 * only that the final values are a fixed point (no edge leads to a larger
 * value), which every finished run must satisfy. */
static int graph_check_fixed_point(const prstm_word *w, uint64_t nv, uint64_t ne, int *ok, char *msg, size_t msglen) {
  const prstm_word *offsets = w + graph_offsets_at(), *targets = w + graph_targets_at(nv);
  const prstm_word *values = w + graph_values_at(nv, ne);
  uint64_t bad = 0, malformed = 0;
  for (uint64_t v = 0; v < nv; v++) {
    if (offsets[v] > offsets[v + 1] || offsets[v + 1] > ne) {
      malformed++;
      continue;
    }
    for (uint64_t i = offsets[v]; i < offsets[v + 1]; i++) {
      if (targets[i] >= nv)
        malformed++;
      else if (values[targets[i]] > values[v])
        bad++;
    }
  }
  *ok = bad == 0 && malformed == 0;
  snprintf(msg, msglen,
           "no state spec, initial values unknown: %llu of %llu edges lead to a larger value "
           "(fixed point %s); %llu malformed offsets or targets",
           (unsigned long long)bad, (unsigned long long)ne, bad ? "not reached" : "reached",
           (unsigned long long)malformed);
  return 0;
}

/* Every vertex holds the minimum of its own initial value and the initial
 * values of every vertex that reaches it, exactly as the sequential closure
 * on the regenerated initial state says; a vertex carries a change round if
 * and only if its value went down; and the static graph is unchanged. */
static int graph_check_invariant(const prstm_engine *engine, const prstm_batch *b, int *ok, char *msg, size_t msglen) {
  (void)b;
  uint64_t nwords = 0, nv, ne;
  const prstm_word *w = prstm_engine_state(engine, &nwords);
  *ok = 0;
  if (!graph_header(w, nwords, &nv, &ne, msg, msglen)) return 0;
  const prstm_state_spec *spec = prstm_engine_state_spec(engine);
  if (!spec) return graph_check_fixed_point(w, nv, ne, ok, msg, msglen);
  prstm_word *init = NULL;
  uint64_t ninit = 0;
  char err[256];
  int rc = graph_init_state(spec, &init, &ninit, err, sizeof err);
  if (rc) {
    snprintf(msg, msglen, "cannot regenerate the initial graph: %s", err);
    return rc;
  }
  uint64_t static_words = graph_values_at(nv, ne);
  if (ninit != nwords || memcmp(init, w, (size_t)static_words * sizeof *w) != 0) {
    free(init);
    snprintf(msg, msglen, "the graph's static words (header, offsets, targets) differ from the state spec's graph");
    return 0;
  }
  prstm_word *label = malloc((size_t)nv * sizeof *label);
  if (!label || graph_closure(init, nv, ne, label) != 0) {
    free(init);
    free(label);
    snprintf(msg, msglen, "cannot allocate the sequential closure of %llu vertices", (unsigned long long)nv);
    return PRSTM_ENOMEM;
  }
  const prstm_word *start = init + graph_values_at(nv, ne), *values = w + graph_values_at(nv, ne);
  const prstm_word *changed = w + graph_changed_at(nv, ne);
  uint64_t equal = 0, lowered = 0, bad_marks = 0, first = UINT64_MAX, last_round = 0;
  for (uint64_t v = 0; v < nv; v++) {
    if (values[v] == label[v])
      equal++;
    else if (first == UINT64_MAX)
      first = v;
    if (values[v] < start[v]) lowered++;
    if ((changed[v] != 0) != (values[v] < start[v])) bad_marks++;
    if (changed[v] > last_round) last_round = changed[v];
  }
  *ok = equal == nv && bad_marks == 0;
  if (first == UINT64_MAX)
    snprintf(msg, msglen,
             "all %llu vertex values equal the sequential closure over %llu edges; %llu lowered, "
             "last lowered in round %llu; %llu change marks inconsistent",
             (unsigned long long)nv, (unsigned long long)ne, (unsigned long long)lowered,
             (unsigned long long)(last_round ? last_round - 1 : 0), (unsigned long long)bad_marks);
  else
    snprintf(msg, msglen,
             "%llu of %llu vertex values differ from the sequential closure (first: vertex %llu holds "
             "%llu, expected %llu); %llu lowered; %llu change marks inconsistent",
             (unsigned long long)(nv - equal), (unsigned long long)nv, (unsigned long long)first,
             (unsigned long long)values[first], (unsigned long long)label[first], (unsigned long long)lowered,
             (unsigned long long)bad_marks);
  free(init);
  free(label);
  return 0;
}

const prstm_workload prstm_workload_graph = {
    .name = "graph",
    .ntypes = sizeof graph_types / sizeof graph_types[0],
    .types = graph_types,
    .nvariants = 1,
    .variants = {{.max_columns = PRSTM_MAX_COLUMNS,
                  .set_capacity = GRAPH_CAPACITY,
                  .cpu_worker = graph_cpu_worker,
                  PRSTM_GPU_HOOKS(graph)}},
    .init_state = graph_init_state,
    .generate = graph_generate,
    .check_invariant = graph_check_invariant,
    .config_keys = 0,
    .nparams = GRAPH_NPARAMS,
    .params = graph_params,
    .next_round = graph_next_round,
};
