/* test_embed_api.c: the embedding API: a bank batch built in memory by type name, run on CPU threads, and its outcomes, results, state and invariant read back. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "prstm.h"
#include "test_backend.h"

/* Many more threads than cores, to shake out interleavings on tiny states. */
#define CPU_THREADS 16

static prstm_engine *bank_engine(uint64_t accounts, uint64_t initial_balance) {
  const prstm_workload *bank = prstm_workload_find("bank");
  cr_assert_not_null(bank, "the library lists the built-in bank workload");
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_CPU;
  opt.threads = CPU_THREADS;
  opt.verify = 1;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, bank, &opt), 0);
  prstm_state_spec spec;
  prstm_state_spec_init(bank, &spec);
  spec.accounts = accounts;
  spec.initial_balance = initial_balance;
  cr_assert_eq(prstm_engine_init_state(e, &spec), 0, "%s", prstm_engine_error(e));
  return e;
}

static prstm_batch *bank_batch(void) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, prstm_workload_find("bank")), 0);
  return b;
}

/* Runs the batch and checks it against its serial replay, so that every
 * readback below is of a run known to be serialisable. */
static prstm_results run_verified(prstm_engine *e, prstm_batch *b) {
  prstm_results res;
  cr_assert_eq(prstm_engine_run(e, b, &res), 0, "%s", prstm_engine_error(e));
  prstm_verify_report v;
  cr_assert_eq(prstm_engine_verify(e, b, &v), 0);
  cr_assert(v.ok, "%s", v.message);
  return res;
}

static prstm_status outcome(const prstm_batch *b, uint64_t i, unsigned *reason, prstm_word *result) {
  prstm_status st = PRSTM_PENDING;
  cr_assert_eq(prstm_batch_outcome(b, i, &st, reason, result), 0);
  return st;
}

static uint64_t total_money(const prstm_engine *e) {
  uint64_t n = 0, total = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  for (uint64_t i = 0; i < n; i++) total += w[i];
  return total;
}

Test(embed, batch_built_in_memory_preserves_total) {
  prstm_engine *e = bank_engine(16, 100);
  prstm_batch *b = bank_batch();
  uint64_t seed = 7;
  for (int i = 0; i < 5000; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    prstm_word t[3] = {(seed >> 33) % 16, (seed >> 45) % 16, 1 + (seed >> 20) % 60};
    cr_assert_eq(prstm_batch_append_named(b, "transfer", t, 3), 0);
  }
  cr_assert_eq(prstm_batch_size(b), 5000);
  prstm_results res = run_verified(e, b);

  uint64_t count[4] = {0};
  for (uint64_t i = 0; i < prstm_batch_size(b); i++) count[outcome(b, i, NULL, NULL)]++;
  cr_assert_eq(count[PRSTM_PENDING], 0, "no transaction is left pending");
  cr_assert_eq(count[PRSTM_COMMITTED], res.committed);
  cr_assert_eq(count[PRSTM_ABANDONED], res.abandoned);
  cr_assert_eq(count[PRSTM_FAILED], res.failed);
  cr_assert_gt(res.committed, 0);
  cr_assert_eq(total_money(e), 1600, "transfers move money and create none");
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, append_by_name_stores_type_and_arguments) {
  prstm_batch *b = bank_batch();
  const prstm_workload *bank = prstm_batch_workload(b);
  prstm_word t[3] = {3, 4, 5}, d[2] = {9, 77};
  cr_assert_eq(prstm_batch_append_named(b, "transfer", t, 3), 0);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  cr_assert_eq(prstm_batch_size(b), 2);
  cr_assert_eq(prstm_batch_type(b, 0), (unsigned)prstm_type_find(bank, "transfer"));
  cr_assert_eq(prstm_batch_type(b, 1), (unsigned)prstm_type_find(bank, "deposit"));
  for (unsigned c = 0; c < 3; c++) cr_assert_eq(prstm_batch_arg(b, 0, c), t[c]);
  cr_assert_eq(prstm_batch_arg(b, 1, 0), 9);
  cr_assert_eq(prstm_batch_arg(b, 1, 1), 77);
  prstm_batch_destroy(b);
}

Test(embed, append_by_name_refuses_unknown_type) {
  prstm_batch *b = bank_batch();
  prstm_word args[2] = {1, 2};
  cr_assert_str_empty(prstm_batch_error(b), "no refusal yet");
  cr_assert_eq(prstm_batch_append_named(b, "teleport", args, 2), PRSTM_EUNKNOWN);
  cr_assert_str_eq(prstm_batch_error(b), "unknown transaction type 'teleport' in workload bank");
  cr_assert_eq(prstm_batch_append_named(b, "Deposit", args, 2), PRSTM_EUNKNOWN, "type names are exact");
  cr_assert_eq(prstm_batch_size(b), 0, "a refused transaction is not appended");
  prstm_batch_destroy(b);
}

Test(embed, append_by_name_refuses_wrong_argument_count) {
  prstm_batch *b = bank_batch();
  prstm_word args[4] = {1, 2, 3, 4};
  cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 2), PRSTM_EINVAL);
  cr_assert_str_eq(prstm_batch_error(b), "type transfer takes 3 argument words, got 2");
  cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 4), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", args, 3), PRSTM_EINVAL);
  cr_assert_str_eq(prstm_batch_error(b), "type deposit takes 2 argument words, got 3", "the last refusal's message");
  cr_assert_eq(prstm_batch_append_named(b, "balance", args, 0), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_size(b), 0);
  prstm_batch_destroy(b);
}

Test(embed, append_by_name_refuses_missing_pieces) {
  prstm_batch *b = bank_batch();
  prstm_word args[2] = {1, 2};
  cr_assert_eq(prstm_batch_append_named(NULL, "deposit", args, 2), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_append_named(b, NULL, args, 2), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", NULL, 2), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_size(b), 0);
  prstm_batch_destroy(b);
}

Test(embed, append_by_name_takes_an_address_list_as_count_then_entries) {
  prstm_engine *e = bank_engine(8, 100);
  prstm_batch *b = bank_batch();
  /* transfer_multi: to, amount, then the sources as a count and entries. */
  prstm_word ok[6] = {0, 5, 3, 1, 2, 3};
  prstm_word short_list[6] = {0, 5, 2, 1, 2, 3};
  prstm_word empty_list[3] = {0, 5, 0};
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", short_list, 6), PRSTM_EINVAL,
               "the count must match the entries given");
  cr_assert_str_eq(prstm_batch_error(b), "type transfer_multi: the from list says 2 entries, 3 follow");
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", empty_list, 3), PRSTM_EINVAL);
  cr_assert_str_eq(prstm_batch_error(b), "type transfer_multi: the from list is empty");
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", ok, 2), PRSTM_EINVAL, "the count is missing");
  cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", ok, 6), 0);
  cr_assert_eq(prstm_batch_size(b), 1);
  run_verified(e, b);
  cr_assert_eq(outcome(b, 0, NULL, NULL), PRSTM_COMMITTED);
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[0], 115);
  for (int a = 1; a <= 3; a++) cr_assert_eq(w[a], 95);
  cr_assert_eq(w[4], 100);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, read_only_results_and_final_state_are_read_back) {
  prstm_engine *e = bank_engine(4, 0);
  prstm_word initial[4] = {10, 20, 30, 40};
  cr_assert_eq(prstm_engine_set_state(e, initial, 4), 0);
  prstm_batch *b = bank_batch();
  prstm_word query[1] = {2}, deposit[2] = {0, 5}, move[3] = {3, 1, 15};
  cr_assert_eq(prstm_batch_append_named(b, "deposit", deposit, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "balance", query, 1), 0);
  cr_assert_eq(prstm_batch_append_named(b, "transfer", move, 3), 0);
  run_verified(e, b);
  prstm_word result = 0;
  cr_assert_eq(outcome(b, 1, NULL, &result), PRSTM_COMMITTED);
  cr_assert_eq(result, 30, "nothing else touches account 2, so its balance is read back as it was");
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  cr_assert_eq(n, 4);
  cr_assert_eq(w[0], 15);
  cr_assert_eq(w[1], 35);
  cr_assert_eq(w[2], 30);
  cr_assert_eq(w[3], 25);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, unfundable_withdrawal_is_abandoned_with_its_reason) {
  prstm_engine *e = bank_engine(4, 10);
  prstm_batch *b = bank_batch();
  prstm_word w[2] = {1, 41}; /* more than the whole bank holds */
  cr_assert_eq(prstm_batch_append_named(b, "withdraw", w, 2), 0);
  prstm_results res = run_verified(e, b);
  unsigned reason = 0;
  prstm_status st = outcome(b, 0, &reason, NULL);
  cr_assert_eq(st, PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_str_eq(prstm_status_name(st), "abandoned");
  cr_assert_str_eq(prstm_reason_string(prstm_batch_workload(b), prstm_batch_type(b, 0), reason),
                   "still blocked when no further commit was possible");
  cr_assert_eq(res.abandoned, 1);
  cr_assert_eq(total_money(e), 40);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, account_out_of_range_fails_with_bad_address) {
  prstm_engine *e = bank_engine(4, 10);
  prstm_batch *b = bank_batch();
  prstm_word d[2] = {99, 5}; /* the batch cannot know the state has 4 accounts */
  cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  run_verified(e, b);
  unsigned reason = 0;
  cr_assert_eq(outcome(b, 0, &reason, NULL), PRSTM_FAILED);
  cr_assert_eq(reason, PRSTM_REASON_BAD_ADDRESS);
  cr_assert_eq(total_money(e), 40);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, status_names_cover_every_status) {
  cr_assert_str_eq(prstm_status_name(PRSTM_PENDING), "pending");
  cr_assert_str_eq(prstm_status_name(PRSTM_COMMITTED), "committed");
  cr_assert_str_eq(prstm_status_name(PRSTM_ABANDONED), "abandoned");
  cr_assert_str_eq(prstm_status_name(PRSTM_FAILED), "failed");
  cr_assert_str_eq(prstm_status_name((prstm_status)42), "unknown status");
}

Test(embed, invariant_check_gives_the_workloads_verdict) {
  prstm_engine *e = bank_engine(4, 10);
  prstm_batch *b = bank_batch();
  prstm_word d[2] = {0, 7}, t[3] = {0, 1, 12};
  cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "transfer", t, 3), 0);
  run_verified(e, b);
  int ok = 0;
  char msg[256];
  cr_assert_eq(prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg), 0);
  cr_assert(ok, "%s", msg);
  cr_assert(strstr(msg, "total money 47 = initial 40 + deposits 7") != NULL, "%s", msg);

  /* Money lost behind the engine's back must be caught: the state pointer
   * is the engine's own copy, so writing through it models a broken run. */
  prstm_word *words = (prstm_word *)prstm_engine_state(e, NULL);
  words[3] -= 1;
  cr_assert_eq(prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg), 0);
  cr_assert_not(ok, "%s", msg);
  cr_assert(strstr(msg, "total money 46 != initial 40") != NULL, "%s", msg);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

Test(embed, invariant_check_refuses_what_it_cannot_judge) {
  prstm_engine *e = bank_engine(4, 10);
  const prstm_workload *other = prstm_workload_find("vacation");
  cr_assert_not_null(other, "the library lists the built-in vacation workload");
  prstm_batch *foreign = NULL;
  cr_assert_eq(prstm_batch_create(&foreign, other), 0);
  int ok = 1;
  char msg[256];
  cr_assert_eq(prstm_engine_check_invariant(e, foreign, &ok, msg, sizeof msg), PRSTM_EINVAL);
  cr_assert_not(ok);
  cr_assert(strstr(msg, "vacation") != NULL, "%s", msg);

  prstm_engine *stateless = NULL;
  cr_assert_eq(prstm_engine_create(&stateless, prstm_workload_find("bank"), NULL), 0);
  prstm_batch *b = bank_batch();
  ok = 1;
  cr_assert_eq(prstm_engine_check_invariant(stateless, b, &ok, msg, sizeof msg), PRSTM_EINVAL);
  cr_assert_not(ok);
  cr_assert(strstr(msg, "no state") != NULL, "%s", msg);
  cr_assert_eq(prstm_engine_check_invariant(e, b, NULL, msg, sizeof msg), PRSTM_EINVAL);
  prstm_batch_destroy(b);
  prstm_batch_destroy(foreign);
  prstm_engine_destroy(stateless);
  prstm_engine_destroy(e);
}

/* Two runs summed: counts and times add up, the largest GPU footprint stays,
 * and what names the first run (backend, threads, device) is kept. */
Test(embed, results_of_two_runs_add_up) {
  prstm_results total, second;
  memset(&total, 0, sizeof total);
  memset(&second, 0, sizeof second);
  total.transactions = 10, total.committed = 7, total.abandoned = 2, total.failed = 1;
  total.aborts = 5, total.postponements = 3, total.sweeps = 4;
  total.transfer_s = 0.5, total.execute_s = 1.0, total.setup_s = 0.125, total.gpu_bytes = 100, total.threads = 64;
  snprintf(total.device, sizeof total.device, "first");
  second.transactions = 20, second.committed = 20;
  second.aborts = 1, second.postponements = 2, second.sweeps = 6;
  second.transfer_s = 0.25, second.execute_s = 2.0, second.setup_s = 0.25, second.gpu_bytes = 50, second.threads = 8;
  snprintf(second.device, sizeof second.device, "second");
  prstm_results_add(&total, &second);
  cr_assert_eq(total.transactions, 30);
  cr_assert_eq(total.committed, 27);
  cr_assert_eq(total.abandoned, 2);
  cr_assert_eq(total.failed, 1);
  cr_assert_eq(total.aborts, 6);
  cr_assert_eq(total.postponements, 5);
  cr_assert_eq(total.sweeps, 10);
  cr_assert_float_eq(total.transfer_s, 0.75, 1e-12);
  cr_assert_float_eq(total.execute_s, 3.0, 1e-12);
  cr_assert_float_eq(total.setup_s, 0.375, 1e-12);
  cr_assert_eq(total.gpu_bytes, 100);
  cr_assert_eq(total.threads, 64);
  cr_assert_str_eq(total.device, "first");
}

/* Reserving keeps every row and argument across the move to larger
 * columns, and refuses what no batch can hold. */
Test(embed, reserve_keeps_rows_and_arguments) {
  prstm_batch *b = bank_batch();
  prstm_word d[2] = {5, 70};
  for (int i = 0; i < 3000; i++) {
    d[0] = (prstm_word)i;
    cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  }
  cr_assert_eq(prstm_batch_reserve(b, 10000, 3), 0);
  cr_assert_eq(prstm_batch_size(b), 3000, "reserving adds no rows");
  prstm_word t[3] = {1, 2, 3};
  cr_assert_eq(prstm_batch_append_named(b, "transfer", t, 3), 0);
  for (uint64_t i = 0; i < 3000; i++) {
    cr_assert_eq(prstm_batch_arg(b, i, 0), i);
    cr_assert_eq(prstm_batch_arg(b, i, 1), 70);
    cr_assert_eq(prstm_batch_arg(b, i, 2), 0, "a deposit's third word reads as zero in the wider table");
  }
  for (unsigned c = 0; c < 3; c++) cr_assert_eq(prstm_batch_arg(b, 3000, c), t[c]);
  cr_assert_eq(prstm_batch_reserve(b, 10, 1), 0, "a smaller reservation keeps what is there");
  cr_assert_eq(prstm_batch_arg(b, 2999, 0), 2999);
  cr_assert_eq(prstm_batch_size(b), 3001);
  cr_assert_eq(prstm_batch_reserve(NULL, 10, 1), PRSTM_EINVAL);
  cr_assert_eq(prstm_batch_reserve(b, 10, PRSTM_MAX_COLUMNS + 1), PRSTM_EINVAL);
  prstm_batch_destroy(b);
}

/* A pinned batch holds the same rows as an ordinary one, grows the same way,
 * and runs the same; its memory is pinned exactly where a GPU is usable. */
Test(embed, pinned_batch_behaves_as_an_ordinary_one) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_batch *p = NULL;
  cr_assert_eq(prstm_batch_create_pinned(&p, bank), 0);
  cr_assert_eq(prstm_batch_pinned(p), 0, "an empty batch holds no memory yet");
  prstm_engine *e = bank_engine(16, 100);
  uint64_t seed = 11;
  for (int i = 0; i < 5000; i++) { /* past the first capacity of 1024 rows, so it grows */
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    prstm_word t[3] = {(seed >> 33) % 16, (seed >> 45) % 16, 1 + (seed >> 20) % 60};
    cr_assert_eq(prstm_batch_append_named(p, "transfer", t, 3), 0);
  }
  char why[256];
  int gpu = test_gpu_usable(bank, why, sizeof why);
  cr_assert_eq(prstm_batch_pinned(p), gpu, "pinned exactly where a GPU is usable (%s)", gpu ? "usable" : why);
  seed = 11;
  for (uint64_t i = 0; i < 5000; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    cr_assert_eq(prstm_batch_arg(p, i, 0), (seed >> 33) % 16);
    cr_assert_eq(prstm_batch_arg(p, i, 2), 1 + (seed >> 20) % 60);
  }
  prstm_results res = run_verified(e, p);
  cr_assert_eq(res.committed + res.abandoned + res.failed, 5000);
  cr_assert_eq(total_money(e), 1600);
  prstm_batch_destroy(p);
  prstm_engine_destroy(e);
}

/* A cleared batch has no rows and no outcomes, keeps its kind of memory,
 * and runs again with only its new rows: a balance query cleared away leaves
 * no results column behind, and the money moved is only the new rows'. */
Test(embed, cleared_batch_runs_again_with_only_its_new_rows) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_engine *e = bank_engine(16, 100);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create_pinned(&b, bank), 0);
  cr_assert_eq(prstm_batch_reserve(b, 4096, 3), 0);
  const int pinned = prstm_batch_pinned(b);
  prstm_word d[2] = {3, 50}, q[1] = {3};
  /* The query is row 0, so that a results column left over from it would
   * show in the first new row. */
  cr_assert_eq(prstm_batch_append_named(b, "balance", q, 1), 0);
  for (int i = 0; i < 10; i++) cr_assert_eq(prstm_batch_append_named(b, "deposit", d, 2), 0);
  run_verified(e, b);
  cr_assert_eq(total_money(e), 16 * 100 + 10 * 50);
  prstm_word result = 0;
  cr_assert_eq(outcome(b, 0, NULL, &result), PRSTM_COMMITTED);
  cr_assert(result >= 100 && result <= 100 + 10 * 50 && (result - 100) % 50 == 0,
            "the query read the balance between deposits: %llu", (unsigned long long)result);

  cr_assert_eq(prstm_batch_clear(b), 0);
  cr_assert_eq(prstm_batch_size(b), 0);
  cr_assert_eq(prstm_batch_outcome(b, 0, NULL, NULL, NULL), PRSTM_EINVAL, "no row survives a clear");
  cr_assert_eq(prstm_batch_pinned(b), pinned, "a clear keeps the batch's memory");
  prstm_word t[3] = {3, 4, 200};
  for (int i = 0; i < 3; i++) cr_assert_eq(prstm_batch_append_named(b, "transfer", t, 3), 0);
  cr_assert_eq(prstm_batch_size(b), 3);
  prstm_results res = run_verified(e, b);
  cr_assert_eq(res.transactions, 3);
  cr_assert_eq(res.committed, 3);
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[3], 100 + 10 * 50 - 3 * 200);
  cr_assert_eq(w[4], 100 + 3 * 200);
  for (uint64_t i = 0; i < 3; i++) {
    result = 7;
    cr_assert_eq(outcome(b, i, NULL, &result), PRSTM_COMMITTED);
    cr_assert_eq(result, 0, "a batch without read-only rows has no results");
  }
  cr_assert_eq(prstm_batch_clear(NULL), PRSTM_EINVAL);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

/* prstm_engine_warm_up on a thread of its own. */
typedef struct warm_job {
  prstm_engine *engine;
  int rc;
} warm_job;

static void *warm_up_job(void *arg) {
  warm_job *job = arg;
  job->rc = prstm_engine_warm_up(job->engine);
  return NULL;
}

/* The GPU's start-up on a thread of its own while this one fills a batch, as
 * prstm-run does: it returns 0 on the CPU backend, the GPU backend (where a
 * GPU is usable) and auto, and the run after it commits every transfer and
 * is verified. */
Test(embed, warm_up_on_a_thread_while_the_batch_is_built) {
  const prstm_workload *bank = prstm_workload_find("bank");
  cr_assert_eq(prstm_engine_warm_up(NULL), PRSTM_EINVAL);
  char why[256];
  const int gpu = test_gpu_usable(bank, why, sizeof why);
  const prstm_backend backends[] = {PRSTM_BACKEND_CPU, PRSTM_BACKEND_AUTO, PRSTM_BACKEND_GPU};
  for (unsigned k = 0; k < 3; k++) {
    if (backends[k] == PRSTM_BACKEND_GPU && !gpu) continue;
    prstm_options opt;
    test_options(&opt, backends[k], test_threads(backends[k], 2048), 1);
    prstm_engine *e = NULL;
    prstm_batch *b = NULL;
    test_open(bank, &opt, &e, &b);
    prstm_state_spec spec;
    prstm_state_spec_init(bank, &spec);
    spec.accounts = 64;
    spec.initial_balance = 1000;
    cr_assert_eq(prstm_engine_init_state(e, &spec), 0, "%s", prstm_engine_error(e));
    warm_job job = {e, -1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, warm_up_job, &job), 0);
    uint64_t seed = 5;
    for (int i = 0; i < 20000; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      prstm_word w[3] = {(seed >> 33) % 64, (seed >> 45) % 64, 1 + (seed >> 20) % 9};
      cr_assert_eq(prstm_batch_append_named(b, "transfer", w, 3), 0);
    }
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(job.rc, 0, "backend %u: warm-up returned %d", (unsigned)backends[k], job.rc);
    prstm_results res = run_verified(e, b);
    cr_assert_eq(res.committed, 20000, "backend %u", (unsigned)backends[k]);
    cr_assert_eq(total_money(e), 64000);
    test_close(e, b);
  }
}
