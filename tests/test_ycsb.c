/* test_ycsb.c: behaviour of the ycsb workload: generated YCSB batches (read-modify-writes and blind writes, uniform and Zipfian keys, reads alongside) verified and keeping the invariant, reads' results, and clear failures, on the CPU backend and, where a GPU is, the GPU backend. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"
#include "delta.h"
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

static void run_open_deltas(yc_run *r, prstm_backend backend, uint64_t records, uint64_t fields,
                            prstm_deltas_mode deltas) {
  test_need_backend(ycsb(), backend);
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, backend, test_threads(backend, GPU_THREADS), 1);
  opt.deltas = deltas;
  test_open(ycsb(), &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(ycsb(), &s);
  test_set_knob(ycsb(), s.params, "records", (double)records);
  test_set_knob(ycsb(), s.params, "fields", (double)fields);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

static void run_open(yc_run *r, prstm_backend backend, uint64_t records, uint64_t fields) {
  run_open_deltas(r, backend, records, fields, PRSTM_DELTAS_AUTO);
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

/* Hot keys (Zipf 0.99) of 9 reads and 1 read-modify-write over 100,000
 * records (too many for the CPU's cached-state rule): the delta path takes
 * the batch, every row commits in batch order, the replay matches, and the
 * state is the one the STM ends in (read-modify-writes commute). */
static void hot_updates_commit_as_sums_in_batch_order(prstm_backend backend) {
  yc_run r[2];
  for (int stm = 0; stm < 2; stm++) {
    run_open_deltas(&r[stm], backend, 100000, 1, stm ? PRSTM_DELTAS_OFF : PRSTM_DELTAS_AUTO);
    generate(&r[stm], 50000, 10, 1, 0, 0.99, 0.0);
    run_checked(&r[stm]);
    cr_assert_eq(r[stm].res.path, stm ? PRSTM_PATH_STM : PRSTM_PATH_DELTAS, "%s: path %d", stm ? "off" : "auto",
                 (int)r[stm].res.path);
  }
  cr_assert_eq(r[0].res.aborts, 0);
  const prstm_word *a = prstm_engine_state(r[0].engine, NULL), *b = prstm_engine_state(r[1].engine, NULL);
  cr_assert_eq(memcmp(a, b, 100000 * sizeof *a), 0, "the path's state differs from the STM's");
  cr_assert_gt(a[0], 0, "record 0, the hottest, was read-modify-written");
  for (int k = 0; k < 2; k++) test_close(r[k].engine, r[k].batch);
}

/* A blind write is no step: with the path on, hot updates that write
 * blindly run through the STM, verified; with reads beside read-modify-
 * writes instead, the batch takes the path, and the replay finds every
 * read's sum. */
static void blind_writes_leave_hot_batches_to_the_stm_and_reads_do_not(prstm_backend backend) {
  for (int reads = 0; reads < 2; reads++) {
    yc_run r;
    run_open_deltas(&r, backend, 100000, 1, PRSTM_DELTAS_ON);
    generate(&r, 20000, 10, 1, !reads, 0.99, reads ? 0.3 : 0.0);
    run_checked(&r);
    cr_assert_eq(r.res.path, reads ? PRSTM_PATH_DELTAS : PRSTM_PATH_STM, "%s: path %d",
                 reads ? "reads" : "blind writes", (int)r.res.path);
    test_close(r.engine, r.batch);
  }
}

#define BOTH_BACKENDS(name)                         \
  Test(ycsb_cpu, name) { name(PRSTM_BACKEND_CPU); } \
  Test(ycsb_gpu, name, .timeout = 120) { name(PRSTM_BACKEND_GPU); }

BOTH_BACKENDS(nine_reads_and_a_read_modify_write)
BOTH_BACKENDS(hot_keys_blind_writes_and_reads)
BOTH_BACKENDS(reads_return_the_sum_of_their_words)
BOTH_BACKENDS(hot_updates_commit_as_sums_in_batch_order)
BOTH_BACKENDS(blind_writes_leave_hot_batches_to_the_stm_and_reads_do_not)

/* The path's fields: an update of exactly 32 operations (its last field in
 * the kinds' top bits) takes the path; one of 33 has an operation past the
 * kinds' 64 bits, and one with a kind of 3 a field that is no amount: each
 * leaves the batch to the STM, where they fail with their reasons. */
Test(ycsb, update_fields_past_the_kinds_or_not_amounts_leave_the_path) {
  for (int bad = 0; bad < 3; bad++) {
    yc_run r;
    run_open_deltas(&r, PRSTM_BACKEND_CPU, 100, 1, PRSTM_DELTAS_ON);
    const unsigned ops = bad == 1 ? 33 : 32;
    prstm_word row[2 + 33] = {1ull << 62, ops}; /* the 32nd operation a read-modify-write */
    if (bad == 2) row[0] |= 3ull << 20;         /* the 11th of kind 3 */
    for (unsigned i = 0; i < ops; i++) row[2 + i] = (i * 7) % 100;
    cr_assert_eq(prstm_batch_append_named(r.batch, "update", row, 2 + ops), 0);
    test_run_verified(r.engine, r.batch, &r.res, "fields");
    prstm_status st;
    unsigned reason = 0;
    cr_assert_eq(prstm_batch_outcome(r.batch, 0, &st, &reason, NULL), 0);
    cr_assert_eq(r.res.path, bad ? PRSTM_PATH_STM : PRSTM_PATH_DELTAS, "case %d: path %d", bad, (int)r.res.path);
    cr_assert_eq(st, bad ? PRSTM_FAILED : PRSTM_COMMITTED, "case %d", bad);
    if (bad) cr_assert_eq(reason, bad == 1 ? YCSB_REASON_OPS : YCSB_REASON_KIND);
    if (!bad) cr_assert_eq(prstm_engine_state(r.engine, NULL)[(31 * 7) % 100], (31 * 7) % 100 + 1);
    test_close(r.engine, r.batch);
  }
}

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

/* The step decoder itself, under a plan made for a batch of one good row:
 * each entry's amount is its kind; a blind write's entry, a kind of 3 and an
 * entry past the kinds' 64 bits are steps the proof cannot take. */
Test(ycsb, each_list_entry_takes_its_own_field_as_its_amount) {
  yc_run r;
  run_open_deltas(&r, PRSTM_BACKEND_CPU, 100, 1, PRSTM_DELTAS_ON);
  prstm_word good[5] = {YCSB_OP_RMW << 2, 3, 10, 11, 12}; /* read, read-modify-write, read */
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", good, 5), 0);
  cmp_delta_plan plan;
  cr_assert_eq(engine_delta_plan(r.engine, r.batch, &plan), 1);
  prstm_word blind[4] = {YCSB_OP_WRITE << 2, 2, 20, 21}, kind3[4] = {3, 2, 30, 31}, many[2 + 33] = {0, 33};
  for (unsigned i = 0; i < 33; i++) many[2 + i] = i;
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", blind, 4), 0);
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", kind3, 4), 0);
  cr_assert_eq(prstm_batch_append_named(r.batch, "update", many, 35), 0);
  txtable_view v;
  txtable_view_of(r.batch, &v);
  uint64_t word;
  int64_t delta;
  for (unsigned k = 0; k < 3; k++) {
    cr_assert_eq(cmp_delta_step(&plan, &v, 100, 0, YCSB_UPDATE, k, &word, &delta), 1, "step %u", k);
    cr_assert_eq(word, 10 + k);
    cr_assert_eq(delta, k == 1 ? 1 : 0, "step %u moves %lld", k, (long long)delta);
  }
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 0, YCSB_UPDATE, 3, &word, &delta), 0, "three steps only");
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 1, YCSB_UPDATE, 0, &word, &delta), 1, "the blind row's read");
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 1, YCSB_UPDATE, 1, &word, &delta), -1, "a blind write");
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 2, YCSB_UPDATE, 0, &word, &delta), -1, "a kind of 3");
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 3, YCSB_UPDATE, 31, &word, &delta), 1, "the 32nd operation");
  cr_assert_eq(cmp_delta_step(&plan, &v, 100, 3, YCSB_UPDATE, 32, &word, &delta), -1, "the 33rd operation");
  cr_assert_eq(engine_delta_plan(r.engine, r.batch, &plan), 0, "the plan refuses the batch with them");
  test_close(r.engine, r.batch);
}

/* --backend auto: on an H100 a Zipf 0.99 batch ran 0.06x the CPU backend
 * through the GPU's STM (docs/workloads/ycsb.md), so auto must send such a
 * batch to the CPU when it cannot take the delta path (blind writes); hot
 * read-modify-writes take the GPU's delta path, and a uniform batch, 32x
 * faster on the GPU's STM, stays there too. The choice is asked directly:
 * it needs no GPU. */
Test(ycsb, auto_sends_hot_blind_writes_to_the_cpu_and_keeps_the_rest) {
  for (int k = 0; k < 3; k++) {
    const int hot = k > 0, blind = k == 2;
    yc_run r;
    memset(&r, 0, sizeof r);
    prstm_options opt;
    prstm_options_init(&opt);
    test_open(ycsb(), &opt, &r.engine, &r.batch);
    prstm_state_spec s;
    prstm_state_spec_init(ycsb(), &s);
    cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0);
    generate(&r, 200000, 10, 1, blind, hot ? 0.99 : 0.0, 0.0);
    char why[256] = "";
    const int cpu = engine_auto_prefers_cpu(r.engine, r.batch, why, sizeof why);
    cr_assert_eq(cpu, blind, "%s keys%s: auto %s (%s)", hot ? "Zipf 0.99" : "uniform", blind ? ", blind writes" : "",
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
