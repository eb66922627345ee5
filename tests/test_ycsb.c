/* test_ycsb.c: behaviour of the ycsb workload: generated YCSB batches (read-modify-writes and blind writes, uniform and Zipfian keys, reads alongside) verified and keeping the invariant, reads' results, and clear failures, on the CPU backend and, where a GPU is, the GPU backend. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"
#include "engine_internal.h"
#include "ycsb_body.h"

#define GPU_THREADS 4096

static const prstm_workload *ycsb(void) {
  const prstm_workload *wl = prstm_workload_find("ycsb");
  cr_assert_not_null(wl, "ycsb is not a built-in workload");
  return wl;
}

typedef struct yc_run {
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
} yc_run;

static void run_open(yc_run *r, prstm_backend backend, uint64_t records, uint64_t fields) {
  test_need_backend(ycsb(), backend);
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, backend, test_threads(backend, GPU_THREADS), 1);
  test_open(ycsb(), &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(ycsb(), &s);
  test_set_knob(ycsb(), s.params, "records", (double)records);
  test_set_knob(ycsb(), s.params, "fields", (double)fields);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

static void generate(yc_run *r, uint64_t n, unsigned ops, unsigned writes, int blind, double skew, double reads) {
  prstm_generate_spec g;
  prstm_generate_spec_init(ycsb(), &g);
  g.transactions = n;
  g.seed = 17;
  test_set_knob(ycsb(), g.params, "ops", ops);
  test_set_knob(ycsb(), g.params, "writes", writes);
  test_set_knob(ycsb(), g.params, "blind", blind);
  test_set_knob(ycsb(), g.params, "skew", skew);
  if (reads > 0) {
    g.nmix = 2;
    g.mix_names[0] = "update";
    g.mix_weights[0] = 1 - reads;
    g.mix_names[1] = "read";
    g.mix_weights[1] = reads;
  }
  char err[256];
  cr_assert_eq(ycsb()->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
}

static void run_checked(yc_run *r) {
  test_run_verified(r->engine, r->batch, &r->res, "ycsb");
  char msg[512];
  cr_assert(test_invariant(ycsb(), r->engine, r->batch, msg, sizeof msg), "invariant: %s", msg);
  cr_assert_eq(r->res.committed, r->res.transactions, "%llu of %llu committed", (unsigned long long)r->res.committed,
               (unsigned long long)r->res.transactions);
}

/* YCSB's 9 reads and 1 read-modify-write over 2,000 records: every
 * transaction commits, the replay matches, and every word holds its first
 * value plus the read-modify-writes on it. */
static void nine_reads_and_a_read_modify_write(prstm_backend backend) {
  yc_run r;
  run_open(&r, backend, 2000, 1);
  generate(&r, 20000, 10, 1, 0, 0.0, 0.0);
  run_checked(&r);
  test_close(r.engine, r.batch);
}

/* Hot keys (Zipf 0.99) on records of 4 fields, 3 blind writes of 10
 * operations, and read-only transactions beside them: verified, and the
 * words only read-modify-written keep the invariant. */
static void hot_keys_blind_writes_and_reads(prstm_backend backend) {
  yc_run r;
  run_open(&r, backend, 500, 4);
  generate(&r, 20000, 10, 3, 1, 0.99, 0.3);
  run_checked(&r);
  test_close(r.engine, r.batch);
}

/* On a state nobody writes, a read returns the sum of the words it names
 * (word w starts as w). */
static void reads_return_the_sum_of_their_words(prstm_backend backend) {
  yc_run r;
  run_open(&r, backend, 1000, 2);
  generate(&r, 3000, 7, 0, 0, 0.5, 1.0);
  run_checked(&r);
  for (uint64_t i = 0; i < prstm_batch_size(r.batch); i++) {
    cr_assert_eq(prstm_batch_type(r.batch, i), YCSB_READ);
    uint64_t sum = 0;
    for (unsigned k = 0; k < 7; k++) sum += prstm_batch_arg(r.batch, i, 1 + k);
    prstm_word result = 0;
    cr_assert_eq(prstm_batch_outcome(r.batch, i, NULL, NULL, &result), 0);
    cr_assert_eq(result, sum, "row %llu read %llu, expected %llu", (unsigned long long)i, (unsigned long long)result,
                 (unsigned long long)sum);
  }
  test_close(r.engine, r.batch);
}

#define BOTH_BACKENDS(name)                         \
  Test(ycsb_cpu, name) { name(PRSTM_BACKEND_CPU); } \
  Test(ycsb_gpu, name, .timeout = 120) { name(PRSTM_BACKEND_GPU); }

BOTH_BACKENDS(nine_reads_and_a_read_modify_write)
BOTH_BACKENDS(hot_keys_blind_writes_and_reads)
BOTH_BACKENDS(reads_return_the_sum_of_their_words)

/* An operation of kind 3, and more than 32 operations, fail with their
 * reasons; the rest of the batch commits. */
Test(ycsb, bad_updates_fail_with_their_reasons) {
  yc_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 100, 1);
  prstm_word bad_kind[4] = {3u << 2, 2, 5, 6};
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", bad_kind, 4), 0);
  prstm_word many[35] = {0, 33};
  for (unsigned i = 0; i < 33; i++) many[2 + i] = i;
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", many, 35), 0);
  prstm_word good[3] = {1, 1, 9};
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", good, 3), 0);
  test_run_verified(r.engine, r.batch, &r.res, "bad updates");
  unsigned reason = 0;
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(r.batch, 0, &st, &reason, NULL), 0);
  cr_assert_eq(st, PRSTM_FAILED);
  cr_assert_eq(reason, YCSB_REASON_KIND);
  cr_assert_eq(prstm_batch_outcome(r.batch, 1, &st, &reason, NULL), 0);
  cr_assert_eq(st, PRSTM_FAILED);
  cr_assert_eq(reason, YCSB_REASON_OPS);
  cr_assert_eq(prstm_batch_outcome(r.batch, 2, &st, NULL, NULL), 0);
  cr_assert_eq(st, PRSTM_COMMITTED);
  cr_assert_eq(prstm_engine_state(r.engine, NULL)[9], 10, "the read-modify-write added one to word 9");
  test_close(r.engine, r.batch);
}

/* The generator refuses what YCSB's transactions cannot be. */
Test(ycsb, generator_refuses_more_writes_than_operations_and_semantic_pairs) {
  yc_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 100, 1);
  prstm_generate_spec g;
  prstm_generate_spec_init(ycsb(), &g);
  g.transactions = 10;
  test_set_knob(ycsb(), g.params, "ops", 4);
  test_set_knob(ycsb(), g.params, "writes", 5);
  char err[256] = "";
  cr_assert_eq(ycsb()->generate(&g, prstm_engine_state_spec(r.engine), r.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert_str_eq(err, "writes: 5 of 4 operations; at most ops");
  test_set_knob(ycsb(), g.params, "writes", 1);
  g.semantic_ratio = 0.2;
  cr_assert_eq(ycsb()->generate(&g, prstm_engine_state_spec(r.engine), r.batch, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "semantic_ratio") != NULL, "%s", err);
  test_close(r.engine, r.batch);
}

/* --backend auto: on an H100 a Zipf 0.99 batch ran 0.06x the CPU backend
 * through the GPU's STM (docs/workloads/ycsb.md), so auto must send it to
 * the CPU; a uniform one, 32x faster on the GPU, must stay. The choice is
 * asked directly: it needs no GPU. */
Test(ycsb, auto_sends_hot_keys_to_the_cpu_and_keeps_uniform_ones) {
  for (int hot = 0; hot < 2; hot++) {
    yc_run r;
    memset(&r, 0, sizeof r);
    prstm_options opt;
    prstm_options_init(&opt);
    test_open(ycsb(), &opt, &r.engine, &r.batch);
    prstm_state_spec s;
    prstm_state_spec_init(ycsb(), &s);
    cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0);
    generate(&r, 200000, 10, 1, 0, hot ? 0.99 : 0.0, 0.0);
    char why[256] = "";
    const int cpu = engine_auto_prefers_cpu(r.engine, r.batch, why, sizeof why);
    cr_assert_eq(cpu, hot, "%s keys: auto %s (%s)", hot ? "Zipf 0.99" : "uniform",
                 cpu ? "chose the CPU" : "kept the GPU", why);
    test_close(r.engine, r.batch);
  }
}

/* The generator runs in blocks on as many threads as asked: one thread and
 * three give the same Zipfian batch of updates and reads, row for row. */
Test(ycsb, generated_rows_are_the_same_whatever_the_thread_count) {
  prstm_batch *b[2];
  for (unsigned k = 0; k < 2; k++) {
    yc_run r;
    run_open(&r, PRSTM_BACKEND_CPU, 100000, 4);
    prstm_generate_spec g;
    prstm_generate_spec_init(ycsb(), &g);
    g.transactions = 200003; /* four blocks, the last one short */
    g.seed = 99;
    g.threads = k ? 3 : 1;
    test_set_knob(ycsb(), g.params, "skew", 0.99);
    g.nmix = 2;
    g.mix_names[0] = "update";
    g.mix_weights[0] = 0.5;
    g.mix_names[1] = "read";
    g.mix_weights[1] = 0.5;
    char err[256];
    cr_assert_eq(ycsb()->generate(&g, prstm_engine_state_spec(r.engine), r.batch, err, sizeof err), 0, "%s", err);
    b[k] = r.batch;
    prstm_engine_destroy(r.engine);
  }
  cr_assert_eq(prstm_batch_size(b[0]), 200003);
  test_expect_same_rows(b[0], b[1], "1 thread against 3");
  prstm_batch_destroy(b[0]);
  prstm_batch_destroy(b[1]);
}
