/* test_kmeans.c: behaviour of the kmeans workload: iterations ordered by postponement, results equal to a sequential k-means, clear failures, on the CPU backend and, where a GPU is, the GPU backend. */
/* mkstemp and fdopen are POSIX; ask for them explicitly under -std=c11. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmeans_body.h"
#include "prstm.h"
#include "test_backend.h"

/* GPU runs use a few thousand threads (CPU runs: TEST_CPU_THREADS). */
#define GPU_THREADS 4096

/* GPU tests need a GPU that can run kmeans. */
static void need_backend(prstm_backend backend) { test_need_backend(prstm_workload_find("kmeans"), backend); }

typedef struct km_run {
  const prstm_workload *wl;
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
  prstm_state_spec state;
} km_run;

static const prstm_workload *km(void) {
  const prstm_workload *wl = prstm_workload_find("kmeans");
  cr_assert_not_null(wl, "kmeans is not a built-in workload");
  return wl;
}

static void set_knob(prstm_state_spec *s, const char *name, double v) { test_set_knob(km(), s->params, name, v); }

static void run_open(km_run *r, prstm_backend backend, uint32_t threads, uint32_t coverage) {
  memset(r, 0, sizeof *r);
  r->wl = km();
  prstm_options opt;
  test_options(&opt, backend, threads ? threads : test_threads(backend, GPU_THREADS), coverage);
  test_open(r->wl, &opt, &r->engine, &r->batch);
  prstm_state_spec_init(r->wl, &r->state);
}

/* A state from the knobs and the generated batch of points x iterations. */
static void run_generated(km_run *r, double points, double clusters, double iterations, double coord_max, uint64_t seed,
                          int presorted) {
  set_knob(&r->state, "points", points);
  set_knob(&r->state, "clusters", clusters);
  set_knob(&r->state, "iterations", iterations);
  set_knob(&r->state, "coordinate_max", coord_max);
  set_knob(&r->state, "seed", (double)seed);
  cr_assert_eq(prstm_engine_init_state(r->engine, &r->state), 0, "%s", prstm_engine_error(r->engine));
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.seed = seed * 31 + 5;
  g.presorted = presorted;
  char err[256];
  cr_assert_eq(r->wl->generate(&g, &r->state, r->batch, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(r->batch), (uint64_t)(points * iterations));
}

static void add(km_run *r, unsigned iteration, prstm_word x, prstm_word y) {
  prstm_word args[2] = {x, y};
  cr_assert_eq(prstm_batch_append(r->batch, iteration - 1, args, 2), 0);
}

static void run_exec(km_run *r) { test_run_verified(r->engine, r->batch, &r->res, "run"); }

static int invariant(km_run *r, char *msg, size_t len) { return test_invariant(r->wl, r->engine, r->batch, msg, len); }

static void run_close(km_run *r) { test_close(r->engine, r->batch); }

static prstm_status status_of(km_run *r, uint64_t i, unsigned *reason) {
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(r->batch, i, &st, reason, NULL), 0);
  return st;
}

/* A copy of the final words, to compare runs. */
static prstm_word *final_words(km_run *r, uint64_t *n) {
  const prstm_word *w = prstm_engine_state(r->engine, n);
  prstm_word *copy = malloc((size_t)*n * sizeof *copy);
  cr_assert_not_null(copy);
  memcpy(copy, w, (size_t)*n * sizeof *copy);
  return copy;
}

/* Generated points in shuffled order: every assign commits, later iterations
 * wait for earlier ones, and the result is a sequential k-means on the same
 * points. Whether an assign meets an unfinished iteration (a postponement)
 * depends on the schedule: a serial order, or one thread with the whole
 * table, sweeps iteration 1 to the end before iteration 2 and never
 * postpones, so the count is not asserted. */
static void result_equals_sequential_kmeans(prstm_backend backend) {
  need_backend(backend);
  km_run r;
  run_open(&r, backend, 0, 1);
  run_generated(&r, backend == PRSTM_BACKEND_GPU ? 20000 : 3000, 16, 5, 1000000, 11, 0);
  run_exec(&r);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 1, "invariant: %s", msg);
  cr_assert_eq(r.res.committed, r.res.transactions, "%s", msg);
  /* Every iteration holds every point. */
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(r.engine, &n);
  for (unsigned k = 1; k <= 5; k++) {
    uint64_t total = 0;
    for (unsigned c = 0; c < 16; c++) total += w[KMEANS_WORD(16, k, c, KMEANS_COUNT)];
    cr_assert_eq(total, r.res.transactions / 5, "iteration %u holds %llu points", k, (unsigned long long)total);
  }
  run_close(&r);
}

/* The final sums do not depend on the table order, the thread count or the
 * lock coverage: k-means is deterministic, and so must the run be. */
static void order_threads_and_coverage_do_not_change_the_result(prstm_backend backend) {
  need_backend(backend);
  prstm_word *first = NULL;
  uint64_t first_n = 0;
  static const uint32_t coverage[] = {1, 3, 64, 1};
  static const int presorted[] = {0, 1, 0, 1};
  for (int i = 0; i < 4; i++) {
    km_run r;
    uint32_t threads = backend == PRSTM_BACKEND_GPU ? 1024u << (i % 3) : 16u << i;
    run_open(&r, backend, threads, coverage[i]);
    run_generated(&r, 2000, 8, 4, 500, 99, presorted[i]);
    run_exec(&r);
    char msg[512];
    cr_assert_eq(invariant(&r, msg, sizeof msg), 1, "run %d: %s", i, msg);
    uint64_t n;
    prstm_word *w = final_words(&r, &n);
    if (first == NULL) {
      first = w;
      first_n = n;
    } else {
      cr_assert_eq(n, first_n);
      for (uint64_t j = 0; j < n; j++)
        cr_assert_eq(w[j], first[j], "run %d differs at word %llu", i, (unsigned long long)j);
      free(w);
    }
    run_close(&r);
  }
  free(first);
}

/* Many clusters on few distinct coordinates: duplicate centroids leave
 * clusters empty, which then keep their previous centroids, and the run
 * still matches the sequential computation. */
static void empty_clusters_still_match_sequential(prstm_backend backend) {
  need_backend(backend);
  km_run r;
  run_open(&r, backend, 0, 1);
  run_generated(&r, 400, 64, 6, 9, 5, 0);
  run_exec(&r);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 1, "%s", msg);
  uint64_t n = 0, empty = 0;
  const prstm_word *w = prstm_engine_state(r.engine, &n);
  for (unsigned c = 0; c < 64; c++) empty += w[KMEANS_WORD(64, 6, c, KMEANS_COUNT)] == 0;
  cr_assert_gt(empty, 0, "the test meant to leave some clusters empty");
  run_close(&r);
}

/* Iteration 2 without iteration 1 can never start: postponed, abandoned at
 * quiescence, and the run ends; the check reports the run did not converge. */
static void iteration_without_its_predecessor_is_abandoned(prstm_backend backend) {
  need_backend(backend);
  km_run r;
  run_open(&r, backend, 0, 1);
  set_knob(&r.state, "points", 100);
  set_knob(&r.state, "clusters", 4);
  set_knob(&r.state, "iterations", 3);
  cr_assert_eq(prstm_engine_init_state(r.engine, &r.state), 0);
  for (unsigned i = 0; i < 100; i++) add(&r, 1, i * 7, i * 13);
  for (unsigned i = 0; i < 100; i++) add(&r, 3, i * 7, i * 13);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 100);
  cr_assert_eq(r.res.abandoned, 100);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 150, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 0, "%s", msg);
  cr_assert(strstr(msg, "100 of 200 assigns committed (100 abandoned") != NULL, "%s", msg);
  run_close(&r);
}

#define BOTH_BACKENDS(name, body)                     \
  Test(kmeans_cpu, name) { body(PRSTM_BACKEND_CPU); } \
  Test(kmeans_gpu, name) { body(PRSTM_BACKEND_GPU); }

BOTH_BACKENDS(result_equals_sequential_kmeans, result_equals_sequential_kmeans)
BOTH_BACKENDS(order_threads_and_coverage_do_not_change_the_result, order_threads_and_coverage_do_not_change_the_result)
BOTH_BACKENDS(empty_clusters_still_match_sequential, empty_clusters_still_match_sequential)
BOTH_BACKENDS(iteration_without_its_predecessor_is_abandoned, iteration_without_its_predecessor_is_abandoned)

/* A state written by hand, worked out on paper: cluster 1 is empty after
 * iteration 1 and keeps its initial centroid (130, 0), which then wins point
 * A in iteration 2 over cluster 0's moved centroid (30, 150). */
Test(kmeans_cpu, empty_cluster_keeps_its_previous_centroid) {
  km_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 8, 1);
  prstm_word w[KMEANS_STATE_WORDS(2, 2)] = {2, 2, 2, 1000};
  w[KMEANS_WORD(2, 0, 0, KMEANS_COUNT)] = 1; /* centroid (0, 0) */
  w[KMEANS_WORD(2, 0, 1, KMEANS_SUM_X)] = 130;
  w[KMEANS_WORD(2, 0, 1, KMEANS_COUNT)] = 1; /* centroid (130, 0) */
  cr_assert_eq(prstm_engine_set_state(r.engine, w, sizeof w / sizeof w[0]), 0);
  add(&r, 2, 60, 0);  /* A, iteration 2 first in the table: it must wait */
  add(&r, 2, 0, 300); /* B */
  add(&r, 1, 60, 0);
  add(&r, 1, 0, 300);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 4);
  const prstm_word *f = prstm_engine_state(r.engine, NULL);
  static const prstm_word expect[2][2][3] = {{{60, 300, 2}, {0, 0, 0}}, {{0, 300, 1}, {60, 0, 1}}};
  for (unsigned k = 1; k <= 2; k++)
    for (unsigned c = 0; c < 2; c++)
      for (unsigned field = 0; field < 3; field++)
        cr_assert_eq(f[KMEANS_WORD(2, k, c, field)], expect[k - 1][c][field], "iteration %u cluster %u field %u", k, c,
                     field);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 1, "%s", msg);
  run_close(&r);
}

/* Ties go to the lowest cluster index: two identical centroids, and every
 * point joins cluster 0. */
Test(kmeans_cpu, ties_go_to_the_lowest_cluster) {
  km_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 4, 1);
  prstm_word w[KMEANS_STATE_WORDS(2, 1)] = {3, 2, 1, 100};
  for (unsigned c = 0; c < 2; c++) {
    w[KMEANS_WORD(2, 0, c, KMEANS_SUM_X)] = 50;
    w[KMEANS_WORD(2, 0, c, KMEANS_COUNT)] = 1;
  }
  cr_assert_eq(prstm_engine_set_state(r.engine, w, sizeof w / sizeof w[0]), 0);
  add(&r, 1, 40, 7);
  add(&r, 1, 60, 7);
  add(&r, 1, 50, 0);
  run_exec(&r);
  const prstm_word *f = prstm_engine_state(r.engine, NULL);
  cr_assert_eq(f[KMEANS_WORD(2, 1, 0, KMEANS_COUNT)], 3);
  cr_assert_eq(f[KMEANS_WORD(2, 1, 1, KMEANS_COUNT)], 0);
  cr_assert_eq(f[KMEANS_WORD(2, 1, 0, KMEANS_SUM_Y)], 14);
  run_close(&r);
}

/* Wrong transactions fail with their own reasons instead of corrupting the
 * sums: a coordinate past coordinate_max, an iteration the state lacks, and
 * an iteration that received more points than the state declares. */
Test(kmeans_cpu, invalid_assigns_fail_with_their_reason) {
  km_run r;
  /* One thread sweeps iteration 1 completely before iteration 2, so the
   * overfull iteration is seen as such rather than at two of its points. */
  run_open(&r, PRSTM_BACKEND_CPU, 1, 1);
  set_knob(&r.state, "points", 2);
  set_knob(&r.state, "clusters", 1);
  set_knob(&r.state, "iterations", 2);
  set_knob(&r.state, "coordinate_max", 10);
  cr_assert_eq(prstm_engine_init_state(r.engine, &r.state), 0);
  add(&r, 1, 11, 0); /* 0: beyond coordinate_max */
  add(&r, 3, 1, 1);  /* 1: iteration 3 of a 2-iteration state */
  add(&r, 1, 1, 1);
  add(&r, 1, 2, 2);
  add(&r, 1, 3, 3); /* iteration 1 gets 3 of 2 points */
  add(&r, 2, 1, 1); /* 5: sees an overfull iteration 1 */
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(status_of(&r, 0, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, KMEANS_REASON_COORD);
  cr_assert_str_eq(prstm_reason_string(r.wl, 0, reason), "coordinate beyond the state's coordinate_max");
  cr_assert_eq(status_of(&r, 1, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, KMEANS_REASON_STATE);
  cr_assert_eq(status_of(&r, 5, &reason), PRSTM_FAILED);
  cr_assert_eq(reason, KMEANS_REASON_OVERFULL);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 0, "%s", msg);
  run_close(&r);
}

/* The check is not vacuous: one changed count after a correct run is caught
 * and named. */
Test(kmeans_cpu, invariant_catches_a_changed_count) {
  km_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 32, 1);
  run_generated(&r, 500, 4, 3, 100, 3, 1);
  run_exec(&r);
  char msg[512];
  cr_assert_eq(invariant(&r, msg, sizeof msg), 1, "%s", msg);
  prstm_word *w = (prstm_word *)prstm_engine_state(r.engine, NULL); /* test-only tampering */
  w[KMEANS_WORD(4, 2, 3, KMEANS_COUNT)] += 1;
  cr_assert_eq(invariant(&r, msg, sizeof msg), 0, "%s", msg);
  cr_assert(strstr(msg, "iteration 2 cluster 3 count") != NULL, "%s", msg);
  run_close(&r);
}

/* The generator sizes the batch itself and refuses keys that would mean
 * something else here; the state refuses more clusters than points. */
/* The generator makes its rows on as many threads as asked: one thread and
 * several give the same shuffled batch, row for row; the shuffle holds the
 * presorted batch's assigns, each once, out of iteration order. */
static prstm_batch *generated_on(unsigned threads, int presorted) {
  prstm_state_spec s;
  prstm_state_spec_init(km(), &s);
  set_knob(&s, "points", 50001); /* four iterations: four blocks, the last one short */
  set_knob(&s, "clusters", 8);
  set_knob(&s, "iterations", 4);
  set_knob(&s, "coordinate_max", 1000);
  set_knob(&s, "seed", 17);
  prstm_generate_spec g;
  prstm_generate_spec_init(km(), &g);
  g.seed = 23;
  g.threads = threads;
  g.presorted = presorted;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, km()), 0);
  char err[256];
  cr_assert_eq(km()->generate(&g, &s, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 50001 * 4);
  return b;
}

typedef struct km_row {
  prstm_word type, x, y;
} km_row;

static int km_row_cmp(const void *a, const void *b) {
  const km_row *p = a, *q = b;
  if (p->type != q->type) return p->type < q->type ? -1 : 1;
  if (p->x != q->x) return p->x < q->x ? -1 : 1;
  return p->y < q->y ? -1 : p->y > q->y;
}

static km_row *km_sorted_rows(const prstm_batch *b) {
  km_row *rows = malloc(prstm_batch_size(b) * sizeof *rows);
  cr_assert(rows);
  for (uint64_t i = 0; i < prstm_batch_size(b); i++)
    rows[i] = (km_row){prstm_batch_type(b, i), prstm_batch_arg(b, i, 0), prstm_batch_arg(b, i, 1)};
  qsort(rows, prstm_batch_size(b), sizeof *rows, km_row_cmp);
  return rows;
}

Test(kmeans_inputs, generated_rows_are_the_same_whatever_the_thread_count) {
  prstm_batch *one = generated_on(1, 0);
  for (unsigned threads = 2; threads <= 7; threads += 5) {
    prstm_batch *many = generated_on(threads, 0);
    char what[32];
    snprintf(what, sizeof what, "%u threads", threads);
    test_expect_same_rows(one, many, what);
    prstm_batch_destroy(many);
  }
  prstm_batch *presorted = generated_on(3, 1);
  const uint64_t n = prstm_batch_size(one);
  uint64_t descents = 0;
  for (uint64_t r = 1; r < n; r++) descents += prstm_batch_type(one, r) < prstm_batch_type(one, r - 1);
  cr_assert_gt(descents, n / 8, "the rows are barely shuffled: %llu descents", (unsigned long long)descents);
  km_row *a = km_sorted_rows(one), *b = km_sorted_rows(presorted);
  for (uint64_t r = 0; r < n; r++)
    if (km_row_cmp(&a[r], &b[r]) != 0)
      cr_assert_fail("sorted row %llu differs from the presorted batch's", (unsigned long long)r);
  free(a);
  free(b);
  prstm_batch_destroy(presorted);
  prstm_batch_destroy(one);
}

Test(kmeans_inputs, generator_and_state_refuse_inconsistent_knobs) {
  const prstm_workload *wl = km();
  prstm_state_spec s;
  prstm_state_spec_init(wl, &s);
  set_knob(&s, "points", 100);
  set_knob(&s, "iterations", 3);
  prstm_generate_spec g;
  prstm_generate_spec_init(wl, &g);
  prstm_batch *b;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  char err[256];
  g.transactions = 301;
  cr_assert_eq(wl->generate(&g, &s, b, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "300") != NULL, "%s", err);
  g.transactions = 300;
  cr_assert_eq(wl->generate(&g, &s, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 300);
  g.semantic_ratio = 0.5;
  cr_assert_eq(wl->generate(&g, &s, b, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "semantic_ratio") != NULL, "%s", err);
  prstm_batch_destroy(b);

  set_knob(&s, "clusters", 101);
  prstm_word *words = NULL;
  uint64_t n = 0;
  cr_assert_eq(wl->init_state(&s, &words, &n, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "clusters") != NULL, "%s", err);
  set_knob(&s, "clusters", 16);
  set_knob(&s, "iterations", 16);
  cr_assert_eq(wl->init_state(&s, &words, &n, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "iterations") != NULL, "%s", err);
}

/* A config asking for more iterations than semantic tags can order is
 * refused by the loader with the key and the range. */
Test(kmeans_inputs, config_with_sixteen_iterations_is_refused) {
  char path[] = "/tmp/prstm-kmeans-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  cr_assert_not_null(f);
  fputs(
      "{\"workload\": \"kmeans\", \"state\": {\"points\": 100, \"iterations\": 16},"
      " \"batch\": {\"generate\": {}}}",
      f);
  fclose(f);
  prstm_config cfg;
  char err[512];
  int rc = prstm_config_load(path, &cfg, err, sizeof err);
  unlink(path);
  cr_assert_eq(rc, PRSTM_ECONFIG, "%s", err);
  cr_assert(strstr(err, "state.iterations") != NULL && strstr(err, "15") != NULL, "%s", err);
}
