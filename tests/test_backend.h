/* test_backend.h: what the engine and workload tests share: GPU tests that skip (or fail under PRSTM_REQUIRE_GPU=1) where no GPU is usable, an engine opened for an integration run, a run checked against its serial replay, and a workload's knobs and invariant. */
#ifndef TEST_BACKEND_H
#define TEST_BACKEND_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"

/* CPU runs use far more threads than the machine has cores, to shake out
 * interleavings; GPU runs use a few thousand threads (each test says how
 * many) on the same small states. */
#define TEST_CPU_THREADS 64

static inline uint32_t test_threads(prstm_backend backend, uint32_t gpu_threads) {
  return backend == PRSTM_BACKEND_GPU ? gpu_threads : TEST_CPU_THREADS;
}

/* A GPU test where no GPU is usable for wl is skipped with the reason, except
 * when PRSTM_REQUIRE_GPU=1 (as on the GPU machine), where it fails instead,
 * so that a GPU machine can never pass by skipping. Other backends run. */
static inline void test_need_backend(const prstm_workload *wl, prstm_backend backend) {
  if (backend != PRSTM_BACKEND_GPU) return;
  char why[256];
  if (prstm_gpu_available(wl, why, sizeof why)) return;
  const char *req = getenv("PRSTM_REQUIRE_GPU");
  if (req && strcmp(req, "1") == 0) cr_assert_fail("PRSTM_REQUIRE_GPU=1 but no GPU is usable: %s", why);
  cr_skip_test("no usable GPU: %s", why);
}

/* The options of an integration run on backend with threads and lock
 * coverage; verify is on, so that every run can be checked against its
 * serial replay, and the delta path off, so that the STM runs every batch
 * (test_deltas.c tests the path). The caller may change the rest before
 * opening. */
static inline void test_options(prstm_options *opt, prstm_backend backend, uint32_t threads, uint32_t coverage) {
  prstm_options_init(opt);
  opt->backend = backend;
  opt->threads = threads;
  opt->lock_coverage = coverage;
  opt->verify = 1;
  opt->deltas = PRSTM_DELTAS_OFF;
}

/* Whether a GPU is usable for wl, for a test that checks one thing where
 * there is a GPU and another where there is none. Under PRSTM_REQUIRE_GPU=1
 * a missing GPU fails the test instead, so that a GPU machine can never
 * pass by the no-GPU branch. */
static inline int test_gpu_usable(const prstm_workload *wl, char *why, size_t whylen) {
  if (prstm_gpu_available(wl, why, whylen)) return 1;
  const char *req = getenv("PRSTM_REQUIRE_GPU");
  if (req && strcmp(req, "1") == 0) cr_assert_fail("PRSTM_REQUIRE_GPU=1 but no GPU is usable: %s", why);
  return 0;
}

/* An engine for wl with opt, and an empty batch of wl's types. */
static inline void test_open(const prstm_workload *wl, const prstm_options *opt, prstm_engine **engine,
                             prstm_batch **batch) {
  cr_assert_eq(prstm_engine_create(engine, wl, opt), 0);
  cr_assert_eq(prstm_batch_create(batch, wl), 0);
}

static inline void test_close(prstm_engine *engine, prstm_batch *batch) {
  prstm_batch_destroy(batch);
  prstm_engine_destroy(engine);
}

/* An engine for wl on backend with its threads (gpu_threads on a GPU) and
 * lock coverage, over nwords zero words, and an empty batch. */
static inline void test_open_zeroed(const prstm_workload *wl, prstm_backend backend, uint32_t gpu_threads,
                                    uint32_t coverage, uint64_t nwords, prstm_engine **engine, prstm_batch **batch) {
  test_need_backend(wl, backend);
  prstm_options opt;
  test_options(&opt, backend, test_threads(backend, gpu_threads), coverage);
  test_open(wl, &opt, engine, batch);
  prstm_word *zeros = calloc(nwords, sizeof *zeros);
  cr_assert_eq(prstm_engine_set_state(*engine, zeros, nwords), 0);
  free(zeros);
}

/* Runs the batch and checks what every integration run must show: the run
 * succeeded, every transaction ended final, and the serial replay of the
 * committed and failed transactions equals the run. `what` names the run in
 * the messages ("run", "round 3"). */
static inline void test_run_verified(prstm_engine *engine, prstm_batch *batch, prstm_results *res, const char *what) {
  int rc = prstm_engine_run(engine, batch, res);
  cr_assert_eq(rc, 0, "%s failed: %s", what, prstm_engine_error(engine));
  cr_assert_eq(res->committed + res->abandoned + res->failed, res->transactions, "%s: every transaction must end final",
               what);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(engine, batch, &rep), 0, "%s", prstm_engine_error(engine));
  cr_assert(rep.ok, "%s verification: %s", what, rep.message);
  cr_assert_eq(rep.replayed, res->committed + res->failed,
               "%s: the replay must cover every committed and failed "
               "transaction",
               what);
}

/* Sets wl's knob `name` in params (a state or generate spec's), which wl must have. */
static inline void test_set_knob(const prstm_workload *wl, double *params, const char *name, double value) {
  int i = prstm_param_find(wl, name);
  cr_assert_geq(i, 0, "%s has no knob %s", wl->name, name);
  params[i] = value;
}

/* wl's invariant on the engine's final state: returns its verdict (1 holds,
 * 0 violated), with its one-line message in msg. */
static inline int test_invariant(const prstm_workload *wl, const prstm_engine *engine, const prstm_batch *batch,
                                 char *msg, size_t msglen) {
  int ok = -1;
  msg[0] = '\0';
  cr_assert_eq(wl->check_invariant(engine, batch, &ok, msg, msglen), 0, "%s invariant could not be checked: %s",
               wl->name, msg);
  cr_assert(ok == 0 || ok == 1, "%s invariant gave no verdict: %s", wl->name, msg);
  return ok;
}

/* The invariant of wl holds after a run of batch on engine. */
static inline void test_expect_invariant(const prstm_workload *wl, const prstm_engine *engine,
                                         const prstm_batch *batch) {
  char msg[512];
  cr_assert(test_invariant(wl, engine, batch, msg, sizeof msg), "invariant: %s", msg);
}

/* Appends a row of type `type` with its first nargs (0 to 2) of a0, a1. */
static inline void test_append2(prstm_batch *batch, const char *type, prstm_word a0, prstm_word a1, unsigned nargs) {
  prstm_word args[2] = {a0, a1};
  cr_assert_eq(prstm_batch_append_named(batch, type, args, nargs), 0, "%s", prstm_batch_error(batch));
}

/* Batches a and b hold the same rows: sizes, column counts, every type and
 * every argument word; `what` names the comparison in a failure. */
static inline void test_expect_same_rows(const prstm_batch *a, const prstm_batch *b, const char *what) {
  cr_assert_eq(prstm_batch_size(b), prstm_batch_size(a), "%s: %llu rows against %llu", what,
               (unsigned long long)prstm_batch_size(b), (unsigned long long)prstm_batch_size(a));
  cr_assert_eq(prstm_batch_columns(b), prstm_batch_columns(a), "%s: column counts differ", what);
  for (uint64_t i = 0; i < prstm_batch_size(a); i++) {
    if (prstm_batch_type(a, i) != prstm_batch_type(b, i))
      cr_assert_fail("%s: row %llu's type differs", what, (unsigned long long)i);
    for (unsigned c = 0; c < prstm_batch_columns(a); c++)
      if (prstm_batch_arg(a, i, c) != prstm_batch_arg(b, i, c))
        cr_assert_fail("%s: row %llu column %u differs", what, (unsigned long long)i, c);
  }
}

#endif /* TEST_BACKEND_H */
