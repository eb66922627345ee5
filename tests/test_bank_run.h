/* test_bank_run.h: a bank run driven by a test: an engine and a batch on either backend, rows added by type name, the run verified against its serial replay. */
#ifndef TEST_BANK_RUN_H
#define TEST_BANK_RUN_H

#include <criterion/criterion.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"

/* GPU runs use a few thousand threads (CPU runs: TEST_CPU_THREADS). */
#define GPU_THREADS 4096

/* GPU tests need a GPU that can run the bank. */
static inline void need_backend(prstm_backend backend) { test_need_backend(prstm_workload_find("bank"), backend); }

static inline uint32_t threads_for(prstm_backend backend) { return test_threads(backend, GPU_THREADS); }

typedef struct bank_run {
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
  const prstm_workload *wl;
} bank_run;

static inline void run_open_threads(bank_run *r, const prstm_workload *wl, prstm_backend backend, uint32_t coverage,
                                    prstm_semantic_mode semantic, uint32_t retry_limit, uint32_t threads) {
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, backend, threads ? threads : threads_for(backend), coverage);
  opt.semantic = semantic;
  opt.retry_limit = retry_limit;
  r->wl = wl;
  test_open(wl, &opt, &r->engine, &r->batch);
}

static inline void run_open(bank_run *r, const prstm_workload *wl, prstm_backend backend, uint32_t coverage,
                            prstm_semantic_mode semantic, uint32_t retry_limit) {
  run_open_threads(r, wl, backend, coverage, semantic, retry_limit, 0);
}

static inline void run_state(bank_run *r, uint64_t accounts, uint64_t initial) {
  prstm_state_spec spec = {.accounts = accounts, .initial_balance = initial};
  cr_assert_eq(prstm_engine_init_state(r->engine, &spec), 0);
}

static inline void run_words(bank_run *r, const prstm_word *words, uint64_t n) {
  cr_assert_eq(prstm_engine_set_state(r->engine, words, n), 0);
}

static inline void add(bank_run *r, const char *type, prstm_word a0, prstm_word a1, prstm_word a2) {
  int t = prstm_type_find(r->wl, type);
  cr_assert_geq(t, 0, "unknown type %s", type);
  prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(r->batch, (unsigned)t, args, r->wl->types[t].nargs), 0);
}

static inline void run_exec(bank_run *r) { test_run_verified(r->engine, r->batch, &r->res, "run"); }

static inline void run_close(bank_run *r) { test_close(r->engine, r->batch); }

static inline prstm_status status_of(bank_run *r, uint64_t i, unsigned *reason) {
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(r->batch, i, &st, reason, NULL), 0);
  return st;
}

static inline void check_bank_invariant(bank_run *r) {
  char msg[512];
  cr_assert(test_invariant(r->wl, r->engine, r->batch, msg, sizeof msg), "bank invariant: %s", msg);
}

#endif /* TEST_BANK_RUN_H */
