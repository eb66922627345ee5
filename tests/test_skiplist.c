/* test_skiplist.c: behaviours of the skiplist workload (insert, delete, search) on the CPU backend with many more threads than cores and, where a GPU is, on the GPU backend. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_paths.h"
#include "skiplist_body.h"

/* GPU runs use a few thousand threads (CPU runs: TEST_CPU_THREADS). */
#define GPU_THREADS 2048

/* GPU tests need a GPU that can run the skiplist. */
static void need_backend(prstm_backend backend) { test_need_backend(prstm_workload_find("skiplist"), backend); }

typedef struct sl_run {
  const prstm_workload *wl;
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_state_spec spec;
  prstm_results res;
} sl_run;

static void set_knob(sl_run *r, const char *name, double v) { test_set_knob(r->wl, r->spec.params, name, v); }

/* A small list of `levels` levels: `initial` keys from 1 to key_range, room
 * for `capacity` nodes. */
static void run_open_shaped(sl_run *r, prstm_backend backend, uint32_t coverage, prstm_semantic_mode semantic,
                            uint64_t initial, uint64_t capacity, uint64_t key_range, uint64_t chunk_rows,
                            uint64_t levels) {
  memset(r, 0, sizeof *r);
  r->wl = prstm_workload_find("skiplist");
  cr_assert_not_null(r->wl, "the skiplist workload is not built in");
  prstm_options opt;
  test_options(&opt, backend, test_threads(backend, GPU_THREADS), coverage);
  opt.chunk_rows = chunk_rows;
  opt.semantic = semantic;
  opt.retry_limit = 20;
  test_open(r->wl, &opt, &r->engine, &r->batch);
  prstm_state_spec_init(r->wl, &r->spec);
  set_knob(r, "initial_keys", (double)initial);
  set_knob(r, "capacity", (double)capacity);
  set_knob(r, "key_range", (double)key_range);
  set_knob(r, "levels", (double)levels);
  set_knob(r, "seed", 5);
  cr_assert_eq(prstm_engine_init_state(r->engine, &r->spec), 0, "%s", prstm_engine_error(r->engine));
}

/* The same on the default 5 levels. */
static void run_open_chunked(sl_run *r, prstm_backend backend, uint32_t coverage, prstm_semantic_mode semantic,
                             uint64_t initial, uint64_t capacity, uint64_t key_range, uint64_t chunk_rows) {
  run_open_shaped(r, backend, coverage, semantic, initial, capacity, key_range, chunk_rows, 5);
}

static void run_open(sl_run *r, prstm_backend backend, uint32_t coverage, prstm_semantic_mode semantic,
                     uint64_t initial, uint64_t capacity, uint64_t key_range) {
  run_open_chunked(r, backend, coverage, semantic, initial, capacity, key_range, 0);
}

static void add(sl_run *r, unsigned type, uint64_t key, uint64_t height) {
  prstm_word args[2] = {key, height};
  cr_assert_eq(prstm_batch_append(r->batch, type, args, r->wl->types[type].nargs), 0);
}

static void generate(sl_run *r, uint64_t transactions, uint64_t seed, double read_only, double semantic_ratio,
                     int presorted) {
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.transactions = transactions;
  g.seed = seed;
  g.read_only = read_only;
  g.semantic_ratio = semantic_ratio;
  g.presorted = presorted;
  char err[256];
  cr_assert_eq(r->wl->generate(&g, &r->spec, r->batch, err, sizeof err), 0, "%s", err);
}

static void check_invariant(sl_run *r) {
  char msg[512];
  cr_assert(test_invariant(r->wl, r->engine, r->batch, msg, sizeof msg), "skiplist invariant: %s", msg);
}

static void run_exec(sl_run *r) {
  test_run_verified(r->engine, r->batch, &r->res, "run");
  check_invariant(r);
}

static void run_close(sl_run *r) { test_close(r->engine, r->batch); }

static prstm_status outcome(sl_run *r, uint64_t i, unsigned *reason, prstm_word *result) {
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(r->batch, i, &st, reason, result), 0);
  return st;
}

/* The initial keys, read off the state's level 0 (the list is sorted). */
static uint64_t initial_key(sl_run *r, uint64_t rank) {
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(r->engine, &n);
  skiplist_meta m = {w[1], w[2], w[3], 2 + w[1]};
  uint64_t x = 0;
  for (uint64_t i = 0; i <= rank; i++) x = skiplist_link_index(w[skiplist_addr(&m, x, 2)]);
  cr_assert_neq(x, 0, "the list has fewer than %llu keys", (unsigned long long)rank + 1);
  return w[skiplist_addr(&m, x, 0)];
}

static int present_now(sl_run *r, uint64_t key) {
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(r->engine, &n);
  skiplist_meta m = {w[1], w[2], w[3], 2 + w[1]};
  for (uint64_t x = skiplist_link_index(w[skiplist_addr(&m, 0, 2)]); x != 0;
       x = skiplist_link_index(w[skiplist_addr(&m, x, 2)]))
    if (w[skiplist_addr(&m, x, 0)] == key) return 1;
  return 0;
}

/* Generated inserts, deletes and searches with semantic pairs: the list stays
 * a valid skiplist with the key set of a sequential count, the replay agrees,
 * and the generator's key lives leave nothing failed or abandoned. */
static void random_mix_keeps_a_valid_skiplist(prstm_backend backend, uint32_t coverage, uint64_t initial,
                                              int presorted) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, initial, initial + 4000, 100000);
  generate(&r, 4000, 11 + coverage + initial, 0.2, 0.2, presorted);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 4000, "committed %llu, failed %llu, abandoned %llu",
               (unsigned long long)r.res.committed, (unsigned long long)r.res.failed,
               (unsigned long long)r.res.abandoned);
  run_close(&r);
}

/* A batch of several generator blocks (each made from its own stream, on
 * its own thread, with its own share of the initial keys): semantic pairs
 * split across blocks and every block's deletes are still served, so every
 * row commits, verified by the replay and the invariant. */
Test(skiplist_cpu, generated_blocks_commit_every_row) {
  sl_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 3000, 3000 + 200003, 1000000);
  generate(&r, 200003, 77, 0.2, 0.3, 0);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 200003, "committed %llu, failed %llu, abandoned %llu",
               (unsigned long long)r.res.committed, (unsigned long long)r.res.failed,
               (unsigned long long)r.res.abandoned);
  run_close(&r);
}

/* The generator gives the same batch, row for row, on one thread and on
 * several, with semantic pairs split across its blocks. */
static prstm_batch *generated_on(sl_run *r, unsigned threads) {
  prstm_generate_spec g;
  prstm_generate_spec_init(r->wl, &g);
  g.transactions = 200003; /* four blocks, the last one short */
  g.seed = 2026;
  g.read_only = 0.2;
  g.semantic_ratio = 0.3;
  g.threads = threads;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, r->wl), 0);
  char err[256];
  cr_assert_eq(r->wl->generate(&g, &r->spec, b, err, sizeof err), 0, "%s", err);
  return b;
}

Test(skiplist_generator, same_rows_whatever_the_thread_count) {
  sl_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 3000, 3000 + 200003, 1000000);
  prstm_batch *one = generated_on(&r, 1);
  cr_assert_eq(prstm_batch_size(one), 200003);
  for (unsigned threads = 2; threads <= 7; threads += 5) {
    prstm_batch *many = generated_on(&r, threads);
    char what[64];
    snprintf(what, sizeof what, "%u threads", threads);
    test_expect_same_rows(one, many, what);
    prstm_batch_destroy(many);
  }
  /* The blocks' streams differ: block 1 does not repeat block 0. */
  unsigned same = 0;
  for (uint64_t i = 0; i < 1000; i++) same += prstm_batch_arg(one, i, 0) == prstm_batch_arg(one, 65536 + i, 0);
  cr_assert_lt(same, 100, "block 1 repeats block 0 (%u of 1000 rows)", same);
  prstm_batch_destroy(one);
  run_close(&r);
}

/* A delete placed before the insert of its key postpones and then commits. */
static void delete_before_its_insert_commits(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 200, 1000, 100000);
  /* Keys above the initial range are absent at the start. */
  for (uint64_t k = 0; k < 300; k++) add(&r, SKIPLIST_DELETE, 200000 + k, 0);
  for (uint64_t k = 0; k < 300; k++) add(&r, SKIPLIST_INSERT, 200000 + k, 1 + k % 5);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 600);
  for (uint64_t k = 0; k < 300; k++)
    cr_assert(!present_now(&r, 200000 + k), "key %llu survived its delete", (unsigned long long)(200000 + k));
  run_close(&r);
}

/* A delete of a key that nothing inserts is abandoned at quiescence, and the
 * replay confirms it is still blocked. */
static void delete_of_an_absent_key_is_abandoned(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 100, 1000, 1000);
  add(&r, SKIPLIST_DELETE, 5000, 0);
  add(&r, SKIPLIST_INSERT, 5001, 2);
  add(&r, SKIPLIST_DELETE, 5001, 0);
  add(&r, SKIPLIST_DELETE, 5001, 0); /* the key's second delete has no insert to wait for */
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(outcome(&r, 0, &reason, NULL), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(outcome(&r, 1, NULL, NULL), PRSTM_COMMITTED);
  cr_assert_eq(r.res.abandoned, 2);
  cr_assert_eq(r.res.committed, 2);
  cr_assert(!present_now(&r, 5001));
  run_close(&r);
}

/* An insert of a key already there fails with its reason; so does one of two
 * inserts of the same new key. */
static void insert_of_a_present_key_fails(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 300, 1000, 1000);
  uint64_t old = initial_key(&r, 17);
  add(&r, SKIPLIST_INSERT, old, 1);
  for (int i = 0; i < 64; i++) add(&r, SKIPLIST_INSERT, 7777, 1 + i % 5);
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(outcome(&r, 0, &reason, NULL), PRSTM_FAILED);
  cr_assert_eq(reason, SKIPLIST_REASON_PRESENT);
  cr_assert_str_eq(prstm_reason_string(r.wl, SKIPLIST_INSERT, reason), "key already present");
  cr_assert_eq(r.res.committed, 1, "exactly one insert of key 7777 commits");
  cr_assert_eq(r.res.failed, 64);
  cr_assert(present_now(&r, 7777));
  run_close(&r);
}

/* Searches report 1 for keys of the list and 0 for others, and write nothing. */
static void search_reports_presence(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 400, 1000, 800);
  uint64_t present[64];
  for (int i = 0; i < 64; i++) {
    present[i] = initial_key(&r, (uint64_t)i * 6);
    add(&r, SKIPLIST_SEARCH, present[i], 0);
    add(&r, SKIPLIST_SEARCH, 1000 + (uint64_t)i, 0); /* beyond key_range: never present */
  }
  run_exec(&r);
  for (uint64_t i = 0; i < 128; i++) {
    prstm_word result = 7;
    cr_assert_eq(outcome(&r, i, NULL, &result), PRSTM_COMMITTED);
    cr_assert_eq(result, i % 2 == 0 ? 1u : 0u, "search %llu of key %llu reported %llu", (unsigned long long)i,
                 (unsigned long long)prstm_batch_arg(r.batch, i, 0), (unsigned long long)result);
  }
  run_close(&r);
}

/* Inserts whose row has no node slot left fail with the pool reason; bad
 * keys and heights fail with the range reason. */
static void exhausted_pool_and_bad_arguments_fail_cleanly(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 50, 53, 100);
  add(&r, SKIPLIST_INSERT, 0, 1);          /* row 0: key 0 is the head's */
  add(&r, SKIPLIST_INSERT, 500, 0);        /* row 1: height 0 */
  add(&r, SKIPLIST_INSERT, 501, 6);        /* row 2: more than 5 levels */
  add(&r, SKIPLIST_INSERT, 502, 3);        /* row 3: beyond capacity */
  add(&r, SKIPLIST_SEARCH, 1ull << 33, 0); /* row 4: beyond 32-bit keys */
  add(&r, SKIPLIST_INSERT, 503, 3);        /* row 5: beyond capacity */
  run_exec(&r);
  unsigned expect[6] = {SKIPLIST_REASON_RANGE, SKIPLIST_REASON_RANGE, SKIPLIST_REASON_RANGE,
                        SKIPLIST_REASON_POOL,  SKIPLIST_REASON_RANGE, SKIPLIST_REASON_POOL};
  for (uint64_t i = 0; i < 6; i++) {
    unsigned reason = 0;
    cr_assert_eq(outcome(&r, i, &reason, NULL), PRSTM_FAILED, "row %llu", (unsigned long long)i);
    cr_assert_eq(reason, expect[i], "row %llu failed with %u", (unsigned long long)i, reason);
  }
  run_close(&r);
}

/* Crowded inserts and deletes on a four-key list: every transaction touches
 * the same few links, so conflicts are constant; nothing is lost. The keys
 * all land above the initial ones, so an insert may walk past every earlier
 * height-5 node on the top level (one key in five), and the links it stops
 * at are the ones the others change. */
#define CROWDED_INSERTS 1000u
static void crowded_neighbours_lose_nothing(prstm_backend backend, uint32_t coverage) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, coverage, PRSTM_SEMANTIC_POSTPONE, 4, 4 + 4 * CROWDED_INSERTS, 20000);
  for (uint64_t k = 0; k < CROWDED_INSERTS; k++) add(&r, SKIPLIST_INSERT, 30000 + k, 1 + k % 5);
  for (uint64_t k = 0; k < CROWDED_INSERTS; k += 2) add(&r, SKIPLIST_DELETE, 30000 + k, 0);
  run_exec(&r);
  const uint64_t rows = CROWDED_INSERTS + CROWDED_INSERTS / 2;
  for (uint64_t i = 0; i < rows; i++) {
    unsigned reason = 0;
    prstm_status st = outcome(&r, i, &reason, NULL);
    cr_assert_eq(st, PRSTM_COMMITTED, "row %llu ended %s with reason %u", (unsigned long long)i, prstm_status_name(st),
                 reason);
  }
  cr_assert_eq(r.res.committed, rows);
  for (uint64_t k = 0; k < CROWDED_INSERTS; k++)
    cr_assert_eq(present_now(&r, 30000 + k), (int)(k % 2), "key %llu", (unsigned long long)(30000 + k));
  run_close(&r);
}

/* A walk takes its steps by hints and validates one link a level, so its
 * read set does not grow with the walk: on a one-level list of 600 keys an
 * insert past the last key and a delete of the last key each walk about 600
 * links, and both commit. A walk that put every link in its read set would
 * fail them on the set capacity (SKIPLIST_CAPACITY, 256). */
static void long_walk_stays_within_the_set_capacity(prstm_backend backend) {
  need_backend(backend);
  sl_run r;
  run_open_shaped(&r, backend, 1, PRSTM_SEMANTIC_POSTPONE, 600, 700, 1000, 0, 1);
  const uint64_t last = initial_key(&r, 599);
  add(&r, SKIPLIST_INSERT, 1001, 1);
  add(&r, SKIPLIST_DELETE, last, 0);
  add(&r, SKIPLIST_SEARCH, 1001, 0);
  run_exec(&r);
  for (uint64_t i = 0; i < 3; i++) {
    unsigned reason = 0;
    prstm_status st = outcome(&r, i, &reason, NULL);
    cr_assert_eq(st, PRSTM_COMMITTED, "row %llu ended %s with reason %u", (unsigned long long)i, prstm_status_name(st),
                 reason);
  }
  cr_assert(present_now(&r, 1001));
  cr_assert(!present_now(&r, last));
  run_close(&r);
}

/* A delete leaves SKIPLIST_UNLINKED in the node's link on every level it
 * was on, so that a walk that stopped at the node and validated its link
 * there sees the link change: without the mark, unlinking a walk's
 * predecessor would leave that walk's read set intact, and an insert would
 * link its node after a node no longer in the list. */
static void delete_marks_every_link_of_its_node_unlinked(prstm_backend backend) {
  need_backend(backend);
  sl_run r;
  run_open(&r, backend, 1, PRSTM_SEMANTIC_POSTPONE, 300, 400, 100000);
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(r.engine, &nwords);
  const skiplist_meta m = {w[1], w[2], w[3], 2 + w[1]};
  /* The first node on level 1: on levels 0 and 1 at least. */
  const uint64_t node = skiplist_link_index(w[skiplist_addr(&m, 0, 3)]);
  cr_assert_neq(node, 0, "no initial node reaches level 1");
  const uint64_t key = w[skiplist_addr(&m, node, 0)], height = w[skiplist_addr(&m, node, 1)];
  add(&r, SKIPLIST_DELETE, key, 0);
  run_exec(&r);
  cr_assert_eq(r.res.committed, 1);
  cr_assert(!present_now(&r, key));
  w = prstm_engine_state(r.engine, &nwords);
  for (uint64_t lv = 0; lv < height; lv++)
    cr_assert_eq(w[skiplist_addr(&m, node, 2 + lv)], SKIPLIST_UNLINKED, "level %llu of %llu: link %#llx",
                 (unsigned long long)lv, (unsigned long long)height,
                 (unsigned long long)w[skiplist_addr(&m, node, 2 + lv)]);
  run_close(&r);
}

#define BOTH_BACKENDS(name, body)                       \
  Test(skiplist_cpu, name) { body(PRSTM_BACKEND_CPU); } \
  Test(skiplist_gpu, name) { body(PRSTM_BACKEND_GPU); }

static void t_random(prstm_backend b) {
  random_mix_keeps_a_valid_skiplist(b, 1, 500, 0);
  random_mix_keeps_a_valid_skiplist(b, 8, 500, 0);
  random_mix_keeps_a_valid_skiplist(b, 1, 20, 0);
}
static void t_presorted(prstm_backend b) { random_mix_keeps_a_valid_skiplist(b, 1, 500, 1); }
static void t_before(prstm_backend b) {
  delete_before_its_insert_commits(b, 1);
  delete_before_its_insert_commits(b, 8);
}
static void t_absent(prstm_backend b) {
  delete_of_an_absent_key_is_abandoned(b, 1);
  delete_of_an_absent_key_is_abandoned(b, 8);
}
static void t_present(prstm_backend b) {
  insert_of_a_present_key_fails(b, 1);
  insert_of_a_present_key_fails(b, 8);
}
static void t_search(prstm_backend b) {
  search_reports_presence(b, 1);
  search_reports_presence(b, 8);
}
static void t_pool(prstm_backend b) { exhausted_pool_and_bad_arguments_fail_cleanly(b, 1); }
static void t_crowded(prstm_backend b) {
  crowded_neighbours_lose_nothing(b, 1);
  crowded_neighbours_lose_nothing(b, 8);
}

/* Each insert claims node slot first_free + prstm_row, so the row number
 * must be the batch's in every chunk: a batch of 20,000 (500 initial keys,
 * room for 20,500 nodes, semantic ratio 0.3) commits every row unchunked,
 * and must do the same in chunks of any size, each run verified. With
 * rows renumbered per chunk, chunks of 5,000 once committed 12,206, failed
 * 4,103 inserts for want of a slot and abandoned the deletes behind them. */
static void chunked_runs_commit_what_the_whole_run_commits(prstm_backend backend) {
  need_backend(backend);
  const uint64_t sizes[] = {0, 5000, 3333, 777};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    sl_run r;
    run_open_chunked(&r, backend, 1, PRSTM_SEMANTIC_POSTPONE, 500, 20500, 100000000, sizes[k]);
    generate(&r, 20000, 42, 0.2, 0.3, 0);
    run_exec(&r);
    if (sizes[k]) cr_assert(strstr(r.res.device, "chunked") != NULL, "%s", r.res.device);
    cr_assert_eq(r.res.committed, 20000, "chunks of %llu: %llu committed, %llu failed, %llu abandoned",
                 (unsigned long long)sizes[k], (unsigned long long)r.res.committed, (unsigned long long)r.res.failed,
                 (unsigned long long)r.res.abandoned);
    run_close(&r);
  }
}

BOTH_BACKENDS(random_mix_keeps_a_valid_skiplist_and_key_set, t_random)
BOTH_BACKENDS(chunked_runs_commit_what_the_whole_run_commits, chunked_runs_commit_what_the_whole_run_commits)
BOTH_BACKENDS(presorted_batch_keeps_a_valid_skiplist, t_presorted)
BOTH_BACKENDS(delete_before_its_insert_postpones_then_commits, t_before)
BOTH_BACKENDS(delete_of_a_key_never_inserted_is_abandoned, t_absent)
BOTH_BACKENDS(insert_of_a_present_key_fails_with_its_reason, t_present)
BOTH_BACKENDS(search_reports_presence_without_writing, t_search)
BOTH_BACKENDS(exhausted_pool_and_bad_arguments_fail_cleanly, t_pool)
BOTH_BACKENDS(crowded_neighbours_lose_no_insert_or_delete, t_crowded)
BOTH_BACKENDS(long_walk_stays_within_the_set_capacity, long_walk_stays_within_the_set_capacity)
BOTH_BACKENDS(delete_marks_every_link_of_its_node_unlinked, delete_marks_every_link_of_its_node_unlinked)

/* Retry mode (the papers' comparator) gives up on a delete whose insert never
 * comes, with the retry-limit reason, and still commits the rest. */
Test(skiplist_cpu, retry_mode_gives_up_on_an_unserved_delete) {
  sl_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_RETRY, 100, 1000, 1000);
  add(&r, SKIPLIST_DELETE, 9999, 0);
  add(&r, SKIPLIST_INSERT, 4242, 3);
  run_exec(&r);
  unsigned reason = 0;
  cr_assert_eq(outcome(&r, 0, &reason, NULL), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_RETRY_LIMIT);
  cr_assert_eq(outcome(&r, 1, NULL, NULL), PRSTM_COMMITTED);
  run_close(&r);
}

/* The invariant is real: a key unlinked behind the engine's back, or two keys
 * out of order, are reported. */
Test(skiplist_invariant, catches_a_lost_key_and_an_unsorted_level) {
  sl_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100, 1000, 1000);
  add(&r, SKIPLIST_INSERT, 5000, 1);
  run_exec(&r);
  prstm_engine *e = r.engine;
  skiplist_meta m = {e->words[1], e->words[2], e->words[3], 2 + e->words[1]};
  /* Unlink the first key at level 0 only when it is one level tall, so the
   * structure stays a valid skiplist and only the key set can tell. */
  uint64_t first = skiplist_link_index(e->words[skiplist_addr(&m, 0, 2)]);
  uint64_t second = skiplist_link_index(e->words[skiplist_addr(&m, first, 2)]);
  e->words[skiplist_addr(&m, first, 1)] = 1;
  for (uint64_t l = 1; l < m.levels; l++)
    if (skiplist_link_index(e->words[skiplist_addr(&m, 0, 2 + l)]) == first)
      e->words[skiplist_addr(&m, 0, 2 + l)] = e->words[skiplist_addr(&m, first, 2 + l)];
  uint64_t saved = e->words[skiplist_addr(&m, 0, 2)];
  e->words[skiplist_addr(&m, 0, 2)] = e->words[skiplist_addr(&m, first, 2)];
  char msg[512];
  cr_assert(!test_invariant(r.wl, e, r.batch, msg, sizeof msg), "a lost key passed: %s", msg);
  cr_assert(strstr(msg, "key set differs") != NULL, "%s", msg);
  /* Put it back, then swap the keys of the first two nodes. */
  e->words[skiplist_addr(&m, 0, 2)] = saved;
  uint64_t k1 = e->words[skiplist_addr(&m, first, 0)], k2 = e->words[skiplist_addr(&m, second, 0)];
  e->words[skiplist_addr(&m, first, 0)] = k2;
  e->words[skiplist_addr(&m, second, 0)] = k1;
  cr_assert(!test_invariant(r.wl, e, r.batch, msg, sizeof msg), "swapped keys passed: %s", msg);
  run_close(&r);
}

/* The paper's size (10 million nodes) starts at once: only the 5,000 initial
 * keys take work. */
Test(skiplist_state, full_size_state_initialises_quickly) {
  const prstm_workload *wl = prstm_workload_find("skiplist");
  prstm_state_spec spec;
  prstm_state_spec_init(wl, &spec);
  prstm_word *w = NULL;
  uint64_t n = 0;
  char err[256];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(wl->init_state(&spec, &w, &n, err, sizeof err), 0, "%s", err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  cr_assert_eq(n, SKIPLIST_HEADER + 10000001ull * 7);
  cr_assert_eq(w[1], 5);
  cr_assert_eq(w[3], 5001);
  cr_assert_lt(took, 2.0, "init_state took %.2f s", took);
  free(w);
}

/* Knobs that cannot work are refused with the knob named. */
Test(skiplist_state, impossible_knobs_are_refused) {
  const prstm_workload *wl = prstm_workload_find("skiplist");
  prstm_state_spec spec;
  prstm_state_spec_init(wl, &spec);
  spec.params[prstm_param_find(wl, "initial_keys")] = 50;
  spec.params[prstm_param_find(wl, "key_range")] = 40;
  prstm_word *w = NULL;
  uint64_t n = 0;
  char err[256] = "";
  cr_assert_eq(wl->init_state(&spec, &w, &n, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "initial_keys") != NULL, "%s", err);
  /* A batch larger than the free node slots. */
  spec.params[prstm_param_find(wl, "key_range")] = 100000;
  spec.params[prstm_param_find(wl, "capacity")] = 100;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  prstm_generate_spec g;
  prstm_generate_spec_init(wl, &g);
  g.transactions = 51;
  cr_assert_eq(wl->generate(&g, &spec, b, err, sizeof err), PRSTM_ECONFIG);
  cr_assert(strstr(err, "capacity") != NULL, "%s", err);
  prstm_batch_destroy(b);
}

/* The shipped config and the stress config load and name valid knobs. */
Test(skiplist_config, shipped_configs_load) {
  /* Found through test_data_dir, so the test also runs from a copied tree. */
  char paths[2][4096];
  snprintf(paths[0], sizeof paths[0], "%s/../../configs/skiplist.json", test_data_dir());
  snprintf(paths[1], sizeof paths[1], "%s/stress/skiplist-64-threads.json", test_data_dir());
  for (int i = 0; i < 2; i++) {
    prstm_config cfg;
    char err[512];
    cr_assert_eq(prstm_config_load(paths[i], &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(cfg.workload->name, "skiplist");
    prstm_config_free(&cfg);
  }
}
