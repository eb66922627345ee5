/* test_graph.c: the graph workload end to end: pushes, queries and their failures, set capacity at the degree limit, the frontier rounds to the fixed point, the closure invariant, the generator's knobs and prstm-run on a graph config. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_body.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_paths.h"

/* GPU runs use a few thousand threads (CPU runs: TEST_CPU_THREADS). */
#define GPU_THREADS 4096
/* A generated graph of a few thousand vertices settles in a handful of
 * rounds; far more means the frontier never empties. */
#define MAX_ROUNDS 64

/* GPU tests need a GPU that can run the graph. */
static void need_backend(prstm_backend backend) { test_need_backend(prstm_workload_find("graph"), backend); }

typedef struct graph_run {
  const prstm_workload *wl;
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;                                   /* the last round's */
  unsigned rounds;                                     /* rounds run so far */
  uint64_t committed, failed, abandoned, transactions; /* over all rounds */
} graph_run;

static void run_open(graph_run *r, prstm_backend backend, uint32_t threads, uint32_t coverage) {
  memset(r, 0, sizeof *r);
  r->wl = prstm_workload_find("graph");
  cr_assert_not_null(r->wl, "graph is not a built-in workload");
  prstm_options opt;
  test_options(&opt, backend, threads ? threads : test_threads(backend, GPU_THREADS), coverage);
  test_open(r->wl, &opt, &r->engine, &r->batch);
}

static void run_close(graph_run *r) { test_close(r->engine, r->batch); }

static prstm_state_spec graph_spec(const prstm_workload *wl, double vertices, double edges, double max_degree,
                                   double max_value, double seed) {
  prstm_state_spec s;
  prstm_state_spec_init(wl, &s);
  test_set_knob(wl, s.params, "vertices", vertices);
  test_set_knob(wl, s.params, "edges", edges);
  test_set_knob(wl, s.params, "max_degree", max_degree);
  test_set_knob(wl, s.params, "max_value", max_value);
  test_set_knob(wl, s.params, "seed", seed);
  return s;
}

/* A state laid out by hand: n vertices, the edges (src[i] -> dst[i]) in
 * source order, the initial values, and no change marks. */
static prstm_word *hand_graph(uint64_t n, uint64_t ne, const uint64_t *src, const uint64_t *dst, const uint64_t *values,
                              uint64_t *nwords) {
  *nwords = 3 * n + ne + 3;
  prstm_word *w = calloc((size_t)*nwords, sizeof *w);
  cr_assert_not_null(w);
  w[0] = n;
  w[1] = ne;
  for (uint64_t i = 0; i < ne; i++) {
    cr_assert(i == 0 || src[i - 1] <= src[i], "hand_graph wants the edges in source order");
    w[2 + src[i] + 1]++;
    w[3 + n + i] = dst[i];
  }
  for (uint64_t v = 0; v < n; v++) {
    w[2 + v + 1] += w[2 + v];
    w[3 + n + ne + v] = values[v];
  }
  return w;
}

static void add(graph_run *r, const char *type, prstm_word a0, prstm_word a1) {
  int t = prstm_type_find(r->wl, type);
  cr_assert_geq(t, 0, "unknown type %s", type);
  prstm_word args[2] = {a0, a1};
  cr_assert_eq(prstm_batch_append(r->batch, (unsigned)t, args, r->wl->types[t].nargs), 0);
}

/* One round: every transaction ends final and the run equals its serial replay. */
static void run_round(graph_run *r) {
  char what[32];
  snprintf(what, sizeof what, "round %u", r->rounds);
  test_run_verified(r->engine, r->batch, &r->res, what);
  r->rounds++;
  r->committed += r->res.committed;
  r->failed += r->res.failed;
  r->abandoned += r->res.abandoned;
  r->transactions += r->res.transactions;
}

static const prstm_word *state_of(graph_run *r, uint64_t *nv, uint64_t *ne) {
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(r->engine, &n);
  *nv = w[0];
  *ne = w[1];
  cr_assert(graph_layout_ok(n, *nv, *ne), "the state lost its graph layout");
  return w;
}

/* Asks the workload for the next round the way prstm-run does, and checks
 * the frontier: exactly the vertices the last round lowered (change mark
 * rounds + 1 after `rounds` rounds), each once, each a push of the next round.
 * Returns 0 when the frontier is empty. */
static int next_round(graph_run *r) {
  prstm_batch *next = NULL;
  char err[256] = "";
  cr_assert_eq(prstm_batch_create(&next, r->wl), 0);
  cr_assert_eq(r->wl->next_round(r->engine, r->batch, r->rounds - 1, next, err, sizeof err), 0, "%s", err);
  uint64_t nv, ne;
  const prstm_word *w = state_of(r, &nv, &ne);
  const prstm_word *changed = w + graph_changed_at(nv, ne);
  uint64_t expected = 0, n = prstm_batch_size(next);
  for (uint64_t v = 0; v < nv; v++) expected += changed[v] == r->rounds;
  cr_assert_eq(n, expected, "round %u: frontier of %llu pushes for %llu lowered vertices", r->rounds,
               (unsigned long long)n, (unsigned long long)expected);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t v = prstm_batch_arg(next, i, 0);
    cr_assert_eq(prstm_batch_type(next, i), GRAPH_PUSH);
    cr_assert_eq(prstm_batch_arg(next, i, 1), r->rounds, "a frontier push carries its round");
    cr_assert_eq(changed[v], r->rounds, "vertex %llu was not lowered in the last round", (unsigned long long)v);
    cr_assert(i == 0 || v > prev, "vertex %llu is pushed twice in one round", (unsigned long long)v);
    prev = v;
  }
  prstm_batch_destroy(r->batch);
  r->batch = next;
  return n != 0;
}

/* prstm_engine_run_rounds' callback: every round verified against its serial
 * replay, counted like run_round. */
static int verify_round(unsigned round, prstm_batch *batch, const prstm_results *res, void *user) {
  graph_run *r = user;
  cr_assert_eq(round, r->rounds);
  cr_assert_lt(round, MAX_ROUNDS, "no fixed point after %d rounds", MAX_ROUNDS);
  cr_assert_eq(res->committed + res->abandoned + res->failed, res->transactions, "round %u: every row final", round);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(r->engine, batch, &rep), 0, "%s", prstm_engine_error(r->engine));
  cr_assert(rep.ok, "round %u verification: %s", round, rep.message);
  r->rounds++;
  r->committed += res->committed;
  r->failed += res->failed;
  r->abandoned += res->abandoned;
  r->transactions += res->transactions;
  return 0;
}

/* Rounds until the frontier is empty, checking the frontier between them. */
static void run_to_fixed_point(graph_run *r) {
  do {
    cr_assert_lt(r->rounds, MAX_ROUNDS, "no fixed point after %d rounds", MAX_ROUNDS);
    run_round(r);
  } while (next_round(r));
}

static int invariant(graph_run *r, char *msg, size_t len) {
  return test_invariant(r->wl, r->engine, r->batch, msg, len);
}

static prstm_status status_of(graph_run *r, uint64_t i, unsigned *reason, prstm_word *result) {
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(r->batch, i, &st, reason, result), 0);
  return st;
}

static void generate(graph_run *r, const prstm_state_spec *s, double read_only, int presorted, uint64_t seed) {
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.seed = seed;
  g.read_only = read_only;
  g.presorted = presorted;
  char err[256] = "";
  cr_assert_eq(r->wl->generate(&g, s, r->batch, err, sizeof err), 0, "%s", err);
}

/* A random graph, pushes and value queries under many threads: the rounds
 * reach the fixed point, every vertex ends with the minimum initial value
 * over everything that reaches it, and no push overflows its sets. */
static void generated_graph_reaches_closure(prstm_backend backend, uint32_t coverage, uint64_t vertices) {
  need_backend(backend);
  graph_run r;
  run_open(&r, backend, 0, coverage);
  prstm_state_spec s = graph_spec(r.wl, (double)vertices, (double)(5 * vertices), 16, 1000, 11 + coverage);
  cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0, "%s", prstm_engine_error(r.engine));
  generate(&r, &s, 0.1, 0, 3);
  char msg[512];
  /* The library's rounds driver, every round verified and counted. */
  prstm_results total;
  unsigned rounds = 0;
  prstm_batch *last = r.batch;
  cr_assert_eq(prstm_engine_run_rounds(r.engine, &last, verify_round, &r, &total, &rounds), 0, "%s",
               prstm_engine_error(r.engine));
  if (last != r.batch) {
    prstm_batch_destroy(r.batch);
    r.batch = last;
  }
  cr_assert_eq(rounds, r.rounds, "the driver counted %u rounds, the callback saw %u", rounds, r.rounds);
  cr_assert_eq(total.committed, r.committed);
  cr_assert(invariant(&r, msg, sizeof msg), "graph invariant: %s", msg);
  cr_assert_geq(r.rounds, 2, "a random graph needs a frontier round after round 0");
  cr_assert_eq(r.failed, 0, "no push fails on a generated graph (capacity, range)");
  cr_assert_eq(r.abandoned, 0, "nothing postpones, so nothing is abandoned");
  cr_assert_eq(r.committed, r.transactions);
  run_close(&r);
}

Test(graph, random_graph_reaches_the_sequential_closure_on_cpu) {
  generated_graph_reaches_closure(PRSTM_BACKEND_CPU, 1, 3000);
}
Test(graph, closure_holds_when_one_lock_covers_eight_words_on_cpu) {
  generated_graph_reaches_closure(PRSTM_BACKEND_CPU, 8, 2000);
}
Test(graph_gpu, random_graph_reaches_the_sequential_closure_on_gpu) {
  generated_graph_reaches_closure(PRSTM_BACKEND_GPU, 1, 20000);
}
Test(graph_gpu, closure_holds_when_one_lock_covers_eight_words_on_gpu) {
  generated_graph_reaches_closure(PRSTM_BACKEND_GPU, 8, 20000);
}

/* With one thread the table runs in order, so a chain whose minimum sits at
 * its far end and whose edges point back (11 -> 10 -> ... -> 0) moves the
 * minimum one link per round: 11 rounds lower something, the 12th finds an
 * empty frontier. Before that the values are no fixed point, and the
 * invariant (here without a state spec) says so. */
Test(graph, chain_against_table_order_takes_a_round_per_link) {
  enum { N = 12 };
  uint64_t src[N - 1], dst[N - 1], values[N];
  for (uint64_t i = 0; i < N - 1; i++) {
    src[i] = i + 1;
    dst[i] = i;
  }
  for (uint64_t v = 0; v < N; v++) values[v] = N + 1 - v; /* vertex 11 holds 2, the minimum */
  uint64_t nwords;
  prstm_word *w = hand_graph(N, N - 1, src, dst, values, &nwords);
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, 1);
  cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
  for (uint64_t v = 0; v < N; v++) add(&r, "push", v, 0);
  char msg[512];
  run_round(&r);
  cr_assert_not(invariant(&r, msg, sizeof msg), "one round cannot settle the chain, yet: %s", msg);
  while (next_round(&r)) run_round(&r);
  cr_assert_eq(r.rounds, N, "%u rounds", r.rounds);
  cr_assert(invariant(&r, msg, sizeof msg), "graph invariant: %s", msg);
  uint64_t nv, ne;
  const prstm_word *f = state_of(&r, &nv, &ne);
  for (uint64_t v = 0; v < N; v++) {
    cr_assert_eq(f[graph_values_at(nv, ne) + v], 2, "vertex %llu", (unsigned long long)v);
    /* Vertex 10 was lowered by round 0's push, vertex v by round 10 - v's. */
    cr_assert_eq(f[graph_changed_at(nv, ne) + v], v == N - 1 ? 0 : N - 1 - v, "mark of vertex %llu",
                 (unsigned long long)v);
  }
  free(w);
  run_close(&r);
}

/* push(0, round 4) on 0 -> 1, 0 -> 2, 2 -> 3 with values 5 9 3 7: only vertex
 * 1 holds more than 5, so only it is lowered and marked with round 5; vertex 3
 * is no neighbour of 0 and keeps 7. A value query then reads the new value. */
Test(graph, push_lowers_only_larger_neighbours_and_marks_the_next_round) {
  uint64_t src[] = {0, 0, 2}, dst[] = {1, 2, 3}, values[] = {5, 9, 3, 7};
  uint64_t nwords;
  prstm_word *w = hand_graph(4, 3, src, dst, values, &nwords);
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 1);
  cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
  add(&r, "push", 0, 4);
  run_round(&r);
  cr_assert_eq(status_of(&r, 0, NULL, NULL), PRSTM_COMMITTED);
  uint64_t nv, ne;
  const prstm_word *f = state_of(&r, &nv, &ne);
  const uint64_t want_values[] = {5, 5, 3, 7}, want_marks[] = {0, 5, 0, 0};
  for (unsigned v = 0; v < 4; v++) {
    cr_assert_eq(f[graph_values_at(nv, ne) + v], want_values[v], "value of vertex %u", v);
    cr_assert_eq(f[graph_changed_at(nv, ne) + v], want_marks[v], "mark of vertex %u", v);
  }
  cr_assert_eq(memcmp(f, w, (size_t)graph_values_at(nv, ne) * sizeof *w), 0, "the static graph is never written");
  prstm_batch_destroy(r.batch);
  cr_assert_eq(prstm_batch_create(&r.batch, r.wl), 0);
  add(&r, "value", 1, 0);
  add(&r, "value", 3, 0);
  run_round(&r);
  prstm_word got = 0;
  cr_assert_eq(status_of(&r, 0, NULL, &got), PRSTM_COMMITTED);
  cr_assert_eq(got, 5);
  cr_assert_eq(status_of(&r, 1, NULL, &got), PRSTM_COMMITTED);
  cr_assert_eq(got, 7);
  free(w);
  run_close(&r);
}

/* Arguments a loader cannot range-check (vertex ids are plain integers) fail
 * in the body with the graph's own reasons. */
Test(graph, unknown_vertex_and_last_round_fail_with_their_reasons) {
  uint64_t src[] = {0}, dst[] = {1}, values[] = {1, 2};
  uint64_t nwords;
  prstm_word *w = hand_graph(2, 1, src, dst, values, &nwords);
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 8, 1);
  cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
  add(&r, "push", 2, 0);
  add(&r, "value", 99, 0);
  add(&r, "push", 0, UINT64_MAX);
  add(&r, "push", 1, 0);
  run_round(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason, NULL), PRSTM_FAILED);
  cr_assert_eq(reason, GRAPH_REASON_NO_VERTEX);
  cr_assert_str_eq(prstm_reason_string(r.wl, GRAPH_PUSH, reason), "no such vertex");
  cr_assert_eq(status_of(&r, 1, &reason, NULL), PRSTM_FAILED);
  cr_assert_str_eq(prstm_reason_string(r.wl, GRAPH_VALUE, reason), "no such vertex");
  cr_assert_eq(status_of(&r, 2, &reason, NULL), PRSTM_FAILED);
  cr_assert_str_eq(prstm_reason_string(r.wl, GRAPH_PUSH, reason), "round out of range");
  cr_assert_eq(status_of(&r, 3, &reason, NULL), PRSTM_COMMITTED);
  uint64_t nv, ne;
  cr_assert_eq(state_of(&r, &nv, &ne)[graph_values_at(nv, ne) + 1], 2, "the failed push of 0 lowered nothing");
  free(w);
  run_close(&r);
}

/* A user's state whose offsets run backwards, or whose target names no
 * vertex, fails the push as malformed instead of looping over 2^64 edges or
 * reading a wild word. */
Test(graph, malformed_graph_fails_the_push_instead_of_looping) {
  uint64_t src[] = {0, 1}, dst[] = {1, 0}, values[] = {1, 2, 3};
  uint64_t nwords;
  prstm_word *w = hand_graph(3, 2, src, dst, values, &nwords);
  w[2 + 1] = 2; /* offsets 0 2 1 1: vertex 1's edges end before they begin */
  w[2 + 2] = 1;
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 1);
  cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
  add(&r, "push", 1, 0);
  run_round(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason, NULL), PRSTM_FAILED);
  cr_assert_str_eq(prstm_reason_string(r.wl, GRAPH_PUSH, reason), "malformed graph state");
  run_close(&r);
  w[2 + 1] = 1; /* offsets in order again, but vertex 0's target is vertex 7 of 3 */
  w[2 + 2] = 2;
  w[3 + 3] = 7;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 1);
  cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
  add(&r, "push", 0, 0);
  run_round(&r);
  cr_assert_eq(status_of(&r, 0, &reason, NULL), PRSTM_FAILED);
  cr_assert_str_eq(prstm_reason_string(r.wl, GRAPH_PUSH, reason), "malformed graph state");
  free(w);
  run_close(&r);
}

/* A push of out-degree d needs 2 d write entries when it lowers every
 * neighbour: degree 64 (the generator's limit) fits and lowers all of them,
 * degree 65 fails with the engine's capacity reason and writes nothing. */
static void star_capacity(prstm_backend backend) {
  need_backend(backend);
  enum { D = GRAPH_MAX_DEGREE + 1 };
  for (uint64_t degree = D - 1; degree <= D; degree++) {
    uint64_t src[D], dst[D], values[D + 1];
    for (uint64_t i = 0; i < degree; i++) {
      src[i] = 0;
      dst[i] = i + 1;
    }
    values[0] = 1;
    for (uint64_t v = 1; v <= degree; v++) values[v] = 100 + v;
    uint64_t nwords;
    prstm_word *w = hand_graph(degree + 1, degree, src, dst, values, &nwords);
    graph_run r;
    run_open(&r, backend, backend == PRSTM_BACKEND_GPU ? 1024 : 8, 1);
    cr_assert_eq(prstm_engine_set_state(r.engine, w, nwords), 0);
    add(&r, "push", 0, 0);
    run_round(&r);
    unsigned reason = 0;
    uint64_t nv, ne;
    const prstm_word *f = state_of(&r, &nv, &ne);
    if (degree == GRAPH_MAX_DEGREE) {
      cr_assert_eq(status_of(&r, 0, &reason, NULL), PRSTM_COMMITTED, "degree 64 must fit (reason %u)", reason);
      for (uint64_t v = 1; v <= degree; v++) cr_assert_eq(f[graph_values_at(nv, ne) + v], 1);
    } else {
      cr_assert_eq(status_of(&r, 0, &reason, NULL), PRSTM_FAILED);
      cr_assert_eq(reason, PRSTM_REASON_CAPACITY);
      for (uint64_t v = 1; v <= degree; v++) cr_assert_eq(f[graph_values_at(nv, ne) + v], 100 + v);
    }
    free(w);
    run_close(&r);
  }
}
Test(graph, degree_64_fits_its_sets_and_degree_65_fails_for_capacity_on_cpu) { star_capacity(PRSTM_BACKEND_CPU); }
Test(graph_gpu, degree_64_fits_its_sets_and_degree_65_fails_for_capacity_on_gpu) { star_capacity(PRSTM_BACKEND_GPU); }

/* Corrupting one settled value (0, below every initial value, on a vertex
 * with out-edges) must be caught: the invariant can fail. */
Test(graph, invariant_catches_a_wrong_value) {
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 16, 1);
  prstm_state_spec s = graph_spec(r.wl, 500, 2000, 16, 100, 4);
  cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0, "%s", prstm_engine_error(r.engine));
  generate(&r, &s, 0, 0, 1);
  run_to_fixed_point(&r);
  char msg[512];
  cr_assert(invariant(&r, msg, sizeof msg), "graph invariant: %s", msg);
  uint64_t nv, ne, nwords = 0;
  const prstm_word *f = state_of(&r, &nv, &ne);
  prstm_engine_state(r.engine, &nwords);
  prstm_word *bad = malloc((size_t)nwords * sizeof *bad);
  cr_assert_not_null(bad);
  memcpy(bad, f, (size_t)nwords * sizeof *bad);
  uint64_t v = 0;
  while (v < nv && bad[graph_offsets_at() + v] == bad[graph_offsets_at() + v + 1]) v++;
  cr_assert_lt(v, nv, "some vertex has an out-edge");
  bad[graph_values_at(nv, ne) + v] = 0;
  cr_assert_eq(prstm_engine_set_state(r.engine, bad, nwords), 0);
  cr_assert_not(invariant(&r, msg, sizeof msg), "a value of 0 passed: %s", msg);
  free(bad);
  run_close(&r);
}

/* Round 0 pushes every vertex exactly once, with round 0, and adds value
 * queries for the read-only share; presorted puts the pushes (tag 1) first. */
Test(graph, round_zero_pushes_every_vertex_once_plus_the_read_only_share) {
  for (int presorted = 0; presorted <= 1; presorted++) {
    graph_run r;
    run_open(&r, PRSTM_BACKEND_CPU, 16, 1);
    prstm_state_spec s = graph_spec(r.wl, 1000, 4000, 8, 100, 2);
    generate(&r, &s, 0.2, presorted, 6);
    uint64_t n = prstm_batch_size(r.batch), queries = 0, last_push = 0, first_query = UINT64_MAX;
    cr_assert_eq(n, 1250, "1000 pushes and 250 queries make a read-only share of 0.2");
    char *seen = calloc(1000, 1);
    cr_assert_not_null(seen);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = prstm_batch_arg(r.batch, i, 0);
      cr_assert_lt(v, 1000);
      if (prstm_batch_type(r.batch, i) == GRAPH_VALUE) {
        queries++;
        if (first_query == UINT64_MAX) first_query = i;
        continue;
      }
      cr_assert_eq(prstm_batch_arg(r.batch, i, 1), 0);
      cr_assert_not(seen[v], "vertex %llu pushed twice", (unsigned long long)v);
      seen[v] = 1;
      last_push = i;
    }
    cr_assert_eq(queries, 250);
    if (presorted)
      cr_assert_lt(last_push, first_query, "presorted: every push before every query");
    else
      cr_assert_gt(last_push, first_query, "unsorted: queries mixed among the pushes");
    free(seen);
    run_close(&r);
  }
}

/* Round 0 of a graph of four generator blocks, made on 1, 2 and 7
 * threads: the same rows every time, the pushes in vertex order across the
 * blocks (each block starts from the pushes counted before it), and the
 * read-only share exact. */
static prstm_batch *round_zero_on(const prstm_workload *wl, const prstm_state_spec *s, unsigned threads) {
  prstm_generate_spec g;
  prstm_generate_spec_init(wl, &g);
  g.seed = 9;
  g.read_only = 0.2;
  g.threads = threads;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  char err[256] = "";
  cr_assert_eq(wl->generate(&g, s, b, err, sizeof err), 0, "%s", err);
  return b;
}

Test(graph_generator, round_zero_is_the_same_whatever_the_thread_count) {
  const prstm_workload *wl = prstm_workload_find("graph");
  prstm_state_spec s = graph_spec(wl, 200000, 400000, 8, 100, 2);
  prstm_batch *one = round_zero_on(wl, &s, 1);
  cr_assert_eq(prstm_batch_size(one), 250000, "200,000 pushes and 50,000 queries");
  uint64_t next = 0, queries = 0;
  for (uint64_t i = 0; i < 250000; i++) {
    if (prstm_batch_type(one, i) == GRAPH_VALUE) {
      queries++;
      continue;
    }
    cr_assert_eq(prstm_batch_arg(one, i, 0), next, "row %llu pushes vertex %llu, not %llu", (unsigned long long)i,
                 (unsigned long long)prstm_batch_arg(one, i, 0), (unsigned long long)next);
    next++;
  }
  cr_assert_eq(queries, 50000);
  for (unsigned threads = 2; threads <= 7; threads += 5) {
    prstm_batch *many = round_zero_on(wl, &s, threads);
    char what[64];
    snprintf(what, sizeof what, "%u threads", threads);
    test_expect_same_rows(one, many, what);
    prstm_batch_destroy(many);
  }
  prstm_batch_destroy(one);
}

/* The batch is sized by the graph: the keys that would size or shape it
 * otherwise are refused, and so is a graph with more edges than its degree
 * limit allows. */
Test(graph, generator_refuses_knobs_that_do_not_apply) {
  graph_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 1);
  prstm_state_spec s = graph_spec(r.wl, 100, 300, 8, 100, 1);
  char err[256];
  prstm_generate_spec g;
  prstm_generate_spec_init(r.wl, &g);
  g.transactions = 10;
  cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "transactions"), "%s", err);
  prstm_generate_spec_init(r.wl, &g);
  g.semantic_ratio = 0.2;
  cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "semantic_ratio"), "%s", err);
  prstm_generate_spec_init(r.wl, &g);
  g.read_only = 1;
  cr_assert_eq(r.wl->generate(&g, &s, r.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "read_only"), "%s", err);
  cr_assert_eq(prstm_batch_size(r.batch), 0);
  s = graph_spec(r.wl, 100, 801, 8, 100, 1);
  cr_assert_eq(prstm_engine_init_state(r.engine, &s), PRSTM_ECONFIG);
  cr_assert(strstr(prstm_engine_error(r.engine), "max_degree"), "%s", prstm_engine_error(r.engine));
  run_close(&r);
}

/* The same seed builds the same graph; every vertex keeps within max_degree
 * and the edge count is exact, even when the degree limit is tight. */
Test(graph, seeded_graph_is_reproducible_and_keeps_its_degree_limit) {
  const prstm_workload *wl = prstm_workload_find("graph");
  prstm_state_spec s = graph_spec(wl, 300, 300 * 4, 4, 50, 77); /* every vertex at its limit */
  prstm_word *a = NULL, *b = NULL;
  uint64_t na = 0, nb = 0;
  char err[256];
  cr_assert_eq(wl->init_state(&s, &a, &na, err, sizeof err), 0, "%s", err);
  cr_assert_eq(wl->init_state(&s, &b, &nb, err, sizeof err), 0, "%s", err);
  cr_assert_eq(na, nb);
  cr_assert_eq(memcmp(a, b, (size_t)na * sizeof *a), 0);
  cr_assert(graph_layout_ok(na, 300, 1200));
  for (uint64_t v = 0; v < 300; v++) {
    cr_assert_eq(a[3 + v] - a[2 + v], 4, "vertex %llu", (unsigned long long)v);
    for (uint64_t i = a[2 + v]; i < a[3 + v]; i++) {
      cr_assert_lt(a[graph_targets_at(300) + i], 300);
      cr_assert_neq(a[graph_targets_at(300) + i], v, "no self-loops");
    }
    uint64_t x = a[graph_values_at(300, 1200) + v];
    cr_assert(x >= 1 && x <= 50);
  }
  free(a);
  free(b);
}

/* prstm-run drives the rounds itself: the results of the stress config say
 * more than one round ran, the invariant held and the replay matched. */
Test(graph, prstm_run_drives_the_rounds_of_a_config) {
  char results[] = "/tmp/prstm-graph-XXXXXX";
  int fd = mkstemp(results);
  cr_assert_geq(fd, 0);
  close(fd);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' '%s/stress/graph-64-threads.json' --quiet --results '%s'", test_run_path(),
           test_data_dir(), results);
  int status = system(cmd);
  FILE *f = fopen(results, "r");
  cr_assert_not_null(f);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  unlink(results);
  cr_assert_eq(status, 0, "prstm-run exited with %d: %s", status, text);
  const char *rounds = strstr(text, "\"rounds\":");
  cr_assert_not_null(rounds, "%s", text);
  cr_assert_gt(strtol(rounds + 9, NULL, 10), 1, "%s", text);
  cr_assert_not_null(strstr(text, "\"invariant_ok\":\ttrue"), "%s", text);
  cr_assert_not_null(strstr(text, "\"verify_ok\":\ttrue"), "%s", text);
}
