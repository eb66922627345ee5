/* test_kv.c: behaviour of the kv workload: get, set and delete by the store's rules (a miss, an update, eviction of the way set longest ago), Zipfian mixes verified and keeping the invariant on the CPU backend and, where a GPU is, the GPU backend, and the invariant catching a broken store. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "kv_body.h"
#include "prstm.h"
#include "test_backend.h"

#define GPU_THREADS 4096

static const prstm_workload *kv(void) {
  const prstm_workload *wl = prstm_workload_find("kv");
  cr_assert_not_null(wl, "kv is not a built-in workload");
  return wl;
}

typedef struct kv_run {
  prstm_engine *engine;
  prstm_batch *batch;
  prstm_results res;
} kv_run;

static void run_open(kv_run *r, prstm_backend backend, uint32_t threads, uint64_t sets, uint64_t ways,
                     uint64_t preload) {
  test_need_backend(kv(), backend);
  memset(r, 0, sizeof *r);
  prstm_options opt;
  test_options(&opt, backend, threads, 1);
  test_open(kv(), &opt, &r->engine, &r->batch);
  prstm_state_spec s;
  prstm_state_spec_init(kv(), &s);
  test_set_knob(kv(), s.params, "sets", (double)sets);
  test_set_knob(kv(), s.params, "ways", (double)ways);
  test_set_knob(kv(), s.params, "preload", (double)preload);
  cr_assert_eq(prstm_engine_init_state(r->engine, &s), 0, "%s", prstm_engine_error(r->engine));
}

static void add(kv_run *r, const char *type, uint64_t key, uint64_t value) {
  prstm_word args[2] = {key, value};
  cr_assert_eq(prstm_batch_append_named(r->batch, type, args, strcmp(type, "set") == 0 ? 2 : 1), 0, "%s",
               prstm_batch_error(r->batch));
}

static prstm_word result_of(const kv_run *r, uint64_t row) {
  prstm_status st;
  prstm_word v = 0;
  cr_assert_eq(prstm_batch_outcome(r->batch, row, &st, NULL, &v), 0);
  cr_assert_eq(st, PRSTM_COMMITTED, "row %llu did not commit", (unsigned long long)row);
  return v;
}

/* One set of two ways, one thread, so rows run in order: a get of a key
 * never set misses; a set then a get finds the value; a third key evicts
 * the way set longest ago; a set of a held key updates it in place (and
 * makes it the newest); a delete empties the slot, and a delete of a
 * missing key commits and changes nothing. */
Test(kv_cpu, set_get_and_delete_follow_the_store_rules) {
  kv_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 1, 1, 2, 0);
  add(&r, "get", 1, 0);     /* 0: miss */
  add(&r, "set", 1, 10);    /* 1 */
  add(&r, "set", 2, 20);    /* 2 */
  add(&r, "get", 1, 0);     /* 3: 10 */
  add(&r, "set", 1, 11);    /* 4: update: key 1 is now the newest */
  add(&r, "set", 3, 30);    /* 5: evicts key 2, set longest ago */
  add(&r, "get", 2, 0);     /* 6: miss */
  add(&r, "get", 1, 0);     /* 7: 11 */
  add(&r, "get", 3, 0);     /* 8: 30 */
  add(&r, "delete", 3, 0);  /* 9 */
  add(&r, "get", 3, 0);     /* 10: miss */
  add(&r, "delete", 99, 0); /* 11: a key never held */
  add(&r, "set", 4, 40);    /* 12: takes the emptied way */
  add(&r, "get", 1, 0);     /* 13: 11, not evicted */
  test_run_verified(r.engine, r.batch, &r.res, "kv");
  static const struct {
    uint64_t row, value;
  } want[] = {{0, KV_MISS}, {3, 10}, {6, KV_MISS}, {7, 11}, {8, 30}, {10, KV_MISS}, {13, 11}};
  for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_assert_eq(result_of(&r, want[i].row), want[i].value, "row %llu", (unsigned long long)want[i].row);
  char msg[512];
  cr_assert(test_invariant(kv(), r.engine, r.batch, msg, sizeof msg), "invariant: %s", msg);
  test_close(r.engine, r.batch);
}

/* The generator's YCSB mixes over a preloaded store with hot keys (Zipf
 * 0.99): every row commits, the replay matches, and the store keeps the
 * invariant; gets of preloaded keys that no row sets or deletes return
 * their preload value. */
static void generated(kv_run *r, uint64_t n, double set, double del, double get) {
  prstm_generate_spec g;
  prstm_generate_spec_init(kv(), &g);
  g.transactions = n;
  g.seed = 41;
  test_set_knob(kv(), g.params, "keys", 5000);
  test_set_knob(kv(), g.params, "skew", 0.99);
  g.nmix = 3;
  g.mix_names[0] = "set";
  g.mix_weights[0] = set;
  g.mix_names[1] = "delete";
  g.mix_weights[1] = del;
  g.mix_names[2] = "get";
  g.mix_weights[2] = get;
  char err[256];
  cr_assert_eq(kv()->generate(&g, prstm_engine_state_spec(r->engine), r->batch, err, sizeof err), 0, "%s", err);
}

static void zipfian_mixes_are_verified(prstm_backend backend) {
  static const double mixes[][3] = {{0.5, 0.0, 0.5}, {0.05, 0.0, 0.95}, {0.0, 0.0, 1.0}, {0.4, 0.2, 0.4}};
  for (unsigned m = 0; m < sizeof mixes / sizeof mixes[0]; m++) {
    kv_run r;
    run_open(&r, backend, test_threads(backend, GPU_THREADS), 512, 4, 1500);
    generated(&r, 30000, mixes[m][0], mixes[m][1], mixes[m][2]);
    test_run_verified(r.engine, r.batch, &r.res, "kv");
    cr_assert_eq(r.res.committed, 30000, "mix %u: %llu committed", m, (unsigned long long)r.res.committed);
    char msg[512];
    cr_assert(test_invariant(kv(), r.engine, r.batch, msg, sizeof msg), "mix %u: invariant: %s", m, msg);
    if (mixes[m][2] == 1.0) {
      /* Read only: every hit is a preload value, every key from 1500 on a miss. */
      for (uint64_t i = 0; i < 30000; i++) {
        const uint64_t key = prstm_batch_arg(r.batch, i, 0), v = result_of(&r, i);
        cr_assert(v == KV_MISS || v == key + (1ull << 62), "row %llu: get %llu returned %llu", (unsigned long long)i,
                  (unsigned long long)key, (unsigned long long)v);
        if (key >= 1500) cr_assert_eq(v, KV_MISS);
      }
    }
    test_close(r.engine, r.batch);
  }
}

Test(kv_cpu, zipfian_mixes_are_verified) { zipfian_mixes_are_verified(PRSTM_BACKEND_CPU); }
Test(kv_gpu, zipfian_mixes_are_verified, .timeout = 120) { zipfian_mixes_are_verified(PRSTM_BACKEND_GPU); }

/* The preload runs on every core, a range of sets each: the state is the
 * one a single thread gives, which is what the same keys' sets, run one
 * after another in key order on an empty store, leave (with more keys than
 * slots, so that ways are evicted). */
Test(kv_cpu, preload_on_every_core_matches_sets_in_key_order) {
  const uint64_t sets = 16384, ways = 4, keys = 150000;
  kv_run pre, one;
  run_open(&pre, PRSTM_BACKEND_CPU, 1, sets, ways, keys);
  run_open(&one, PRSTM_BACKEND_CPU, 1, sets, ways, 0);
  for (uint64_t k = 0; k < keys; k++) add(&one, "set", k, k + (1ull << 62));
  test_run_verified(one.engine, one.batch, &one.res, "sets in key order");
  cr_assert_eq(one.res.committed, keys);
  uint64_t na = 0, nb = 0;
  const prstm_word *a = prstm_engine_state(pre.engine, &na), *b = prstm_engine_state(one.engine, &nb);
  cr_assert_eq(na, nb);
  for (uint64_t i = 0; i < na; i++)
    if (a[i] != b[i])
      cr_assert_fail("word %llu: preload %llu, sets %llu", (unsigned long long)i, (unsigned long long)a[i],
                     (unsigned long long)b[i]);
  test_close(pre.engine, pre.batch);
  test_close(one.engine, one.batch);
}

/* The invariant fails a store whose value no committed set wrote, and one
 * holding a key in another set than its own. */
Test(kv_cpu, invariant_catches_a_broken_store) {
  kv_run r;
  run_open(&r, PRSTM_BACKEND_CPU, 2, 64, 4, 100);
  generated(&r, 5000, 0.5, 0.0, 0.5);
  test_run_verified(r.engine, r.batch, &r.res, "kv");
  char msg[512];
  cr_assert(test_invariant(kv(), r.engine, r.batch, msg, sizeof msg), "invariant: %s", msg);
  prstm_word *w = r.engine->words;
  /* The first held slot's value, changed. */
  uint64_t at = 0;
  for (uint64_t s = 0; s < 64 && !at; s++)
    for (uint64_t i = 0; i < 4 && !at; i++)
      if (w[kv_set_base(s, 4) + 1 + KV_SLOT * i]) at = kv_set_base(s, 4) + 1 + KV_SLOT * i;
  cr_assert(at, "no key held");
  w[at + 1] ^= 0x5555;
  cr_assert_not(test_invariant(kv(), r.engine, r.batch, msg, sizeof msg), "a changed value passed");
  cr_assert(strstr(msg, "no committed set") != NULL, "%s", msg);
  w[at + 1] ^= 0x5555;
  /* The key moved into the next set's first way. */
  const uint64_t key1 = w[at], set = (at - KV_HEADER) / (1 + KV_SLOT * 4), other = kv_set_base((set + 1) % 64, 4) + 1;
  const uint64_t saved[3] = {w[other], w[other + 1], w[other + 2]};
  w[other] = key1;
  w[other + 1] = w[at + 1];
  w[other + 2] = 1;
  cr_assert_not(test_invariant(kv(), r.engine, r.batch, msg, sizeof msg), "a key in another set passed");
  cr_assert(strstr(msg, "another set") != NULL, "%s", msg);
  memcpy(&w[other], saved, sizeof saved);
  test_close(r.engine, r.batch);
}

/* Backend auto sees the hot sets through the workload's row_words (the
 * keys are numbers, not addresses): a write-heavy Zipfian mix goes to the
 * CPU with the reason; gets alone on the same keys, or sets on uniform
 * keys, stay on the GPU. No GPU is needed to ask. */
Test(kv_cpu, auto_sees_hot_sets_through_row_words) {
  static const struct {
    double set, get, skew;
    int to_cpu;
  } cases[] = {{0.5, 0.5, 0.99, 1}, {0.0, 1.0, 0.99, 0}, {0.5, 0.5, 0.0, 0}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    kv_run r;
    run_open(&r, PRSTM_BACKEND_CPU, 2, 262144, 8, 0);
    prstm_engine_destroy(r.engine);
    prstm_options opt;
    test_options(&opt, PRSTM_BACKEND_AUTO, 0, 1);
    cr_assert_eq(prstm_engine_create(&r.engine, kv(), &opt), 0);
    prstm_state_spec s;
    prstm_state_spec_init(kv(), &s);
    test_set_knob(kv(), s.params, "sets", 262144);
    test_set_knob(kv(), s.params, "preload", 0);
    cr_assert_eq(prstm_engine_init_state(r.engine, &s), 0, "%s", prstm_engine_error(r.engine));
    prstm_generate_spec g;
    prstm_generate_spec_init(kv(), &g);
    g.transactions = 100000;
    test_set_knob(kv(), g.params, "keys", 2000000);
    test_set_knob(kv(), g.params, "skew", cases[k].skew);
    g.nmix = 2;
    g.mix_names[0] = "set";
    g.mix_weights[0] = cases[k].set;
    g.mix_names[1] = "get";
    g.mix_weights[1] = cases[k].get;
    char err[256];
    cr_assert_eq(kv()->generate(&g, prstm_engine_state_spec(r.engine), r.batch, err, sizeof err), 0, "%s", err);
    char why[256] = "";
    const int to_cpu = engine_auto_prefers_cpu(r.engine, r.batch, why, sizeof why);
    cr_assert_eq(to_cpu, cases[k].to_cpu, "case %u: auto %s the CPU (%s)", k, to_cpu ? "chose" : "did not choose", why);
    if (to_cpu) cr_assert(strstr(why, "hot") != NULL, "reason: %s", why);
    test_close(r.engine, r.batch);
  }
}
