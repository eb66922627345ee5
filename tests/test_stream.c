/* test_stream.c: streams of batches (carry-over, abandonment only at close, done reports) and chunked runs, on the CPU backend and, where a GPU is, on the GPU backend. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bank_body.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_paths.h"
#include "test_workload.h"
#include "txtable.h"

#define CPU_THREADS 16
#define GPU_THREADS 4096

static const prstm_workload *bank(void) { return prstm_workload_find("bank"); }

/* A GPU test where no GPU is usable is skipped (test_backend.h). */
static void need_backend(prstm_backend backend) { test_need_backend(bank(), backend); }

/* chunk_rows 0 keeps the default (PRSTM_CHUNK_ROWS when set). */
static prstm_engine *open_engine_chunked(prstm_backend backend, const prstm_word *words, uint64_t nwords,
                                         uint64_t chunk_rows) {
  prstm_options opt;
  prstm_options_init(&opt);
  if (chunk_rows) opt.chunk_rows = chunk_rows;
  opt.backend = backend;
  opt.threads = backend == PRSTM_BACKEND_GPU ? GPU_THREADS : CPU_THREADS;
  opt.watchdog_s = 120;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, bank(), &opt), 0);
  cr_assert_eq(prstm_engine_set_state(e, words, nwords), 0, "%s", prstm_engine_error(e));
  return e;
}

static prstm_engine *open_engine(prstm_backend backend, const prstm_word *words, uint64_t nwords) {
  return open_engine_chunked(backend, words, nwords, 0);
}

/* A stream on e, which must open. */
static prstm_stream *open_stream(prstm_engine *e) {
  prstm_stream *s = NULL;
  cr_assert_eq(prstm_stream_open(e, &s), 0, "%s", prstm_engine_error(e));
  return s;
}

static void submit_ok(prstm_stream *s, prstm_batch *b) {
  cr_assert_eq(prstm_stream_submit(s, b), 0, "%s", prstm_stream_error(s));
}

static void close_ok(prstm_stream *s, prstm_stream_results *r) {
  cr_assert_eq(prstm_stream_close(s, r), 0, "%s", prstm_stream_error(s));
}

static void destroy_stream_and_engine(prstm_stream *s, prstm_engine *e) {
  prstm_stream_destroy(s);
  prstm_engine_destroy(e);
}

static prstm_batch *new_batch(void) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank()), 0);
  return b;
}

/* A batch asked for in pinned memory, which it gets exactly where a GPU is
 * usable (checked once it has rows). */
static prstm_batch *new_pinned_batch(void) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create_pinned(&b, bank()), 0);
  return b;
}

static void assert_pinned_where_a_gpu_is(const prstm_batch *b) {
  char why[256];
  int gpu = test_gpu_usable(bank(), why, sizeof why);
  cr_assert_eq(prstm_batch_pinned(b), gpu, "a pinned batch must be pinned exactly where a GPU is usable (%s)",
               gpu ? "usable" : why);
}

static void add(prstm_batch *b, unsigned type, prstm_word a0, prstm_word a1, prstm_word a2) {
  prstm_word args[3] = {a0, a1, a2};
  cr_assert_eq(prstm_batch_append(b, type, args, bank()->types[type].nargs), 0);
}

static uint64_t total_money(const prstm_engine *e) {
  uint64_t n = 0, total = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  for (uint64_t i = 0; i < n; i++) total += w[i];
  return total;
}

static prstm_status status_of(const prstm_batch *b, uint64_t i, unsigned *reason) {
  prstm_status st;
  cr_assert_eq(prstm_batch_outcome(b, i, &st, reason, NULL), 0);
  return st;
}

/* Records the done reports of a stream. */
typedef struct done_log {
  uint64_t count;
  uint64_t index[256];
  prstm_batch *batch[256];
} done_log;

static void on_done(uint64_t index, prstm_batch *batch, void *user) {
  done_log *log = user;
  cr_assert_lt(log->count, 256);
  /* Every transaction of a batch reported done is final. */
  for (uint64_t i = 0; i < prstm_batch_size(batch); i++) cr_assert_neq(status_of(batch, i, NULL), PRSTM_PENDING);
  log->index[log->count] = index;
  log->batch[log->count] = batch;
  log->count++;
}

/* Random transfers over a small bank, many of them short at first: money is
 * conserved across the stream, every transaction of every batch ends final,
 * each batch is reported done exactly once, and every abandoned transfer is
 * still unfundable on the final state. */
static void stream_conserves_money(prstm_backend backend, int pinned) {
  need_backend(backend);
  enum { ACCOUNTS = 32, BATCHES = 12, PER_BATCH = 3000 };
  prstm_word words[ACCOUNTS];
  for (int i = 0; i < ACCOUNTS; i++) words[i] = 40;
  prstm_engine *e = open_engine(backend, words, ACCOUNTS);
  prstm_stream *s = open_stream(e);
  done_log log = {0};
  cr_assert_eq(prstm_stream_set_done(s, on_done, &log), 0);
  prstm_batch *b[BATCHES];
  uint64_t seed = 12345;
  for (int k = 0; k < BATCHES; k++) {
    b[k] = pinned ? new_pinned_batch() : new_batch();
    for (int i = 0; i < PER_BATCH; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t from = (seed >> 20) % ACCOUNTS, to = (seed >> 40) % ACCOUNTS, amount = 1 + (seed >> 8) % 60;
      add(b[k], BANK_TRANSFER, from, to, amount);
    }
    if (pinned) assert_pinned_where_a_gpu_is(b[k]);
    submit_ok(s, b[k]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.batches, BATCHES);
  cr_assert_eq(r.transactions, (uint64_t)BATCHES * PER_BATCH);
  cr_assert_eq(r.committed + r.abandoned + r.failed, r.transactions, "every transaction must end final");
  cr_assert_eq(r.failed, 0);
  cr_assert_gt(r.committed, 0);
  cr_assert_eq(r.backend, backend);
  /* Every unit's counters reach the totals: each executing thread sweeps
   * at least once a unit, and on 32 accounts of 40 many transfers wait. */
  cr_assert_geq(r.sweeps, r.runs, "%llu sweeps in %llu runs", (unsigned long long)r.sweeps, (unsigned long long)r.runs);
  cr_assert_gt(r.postponements, 0, "some transfer must have waited for money");
  cr_assert_eq(total_money(e), 40ull * ACCOUNTS, "transfers must conserve money");
  cr_assert_eq(log.count, BATCHES, "each batch is reported done once");
  int seen[BATCHES] = {0};
  for (uint64_t k = 0; k < log.count; k++) {
    cr_assert_lt(log.index[k], BATCHES);
    cr_assert_eq(log.batch[log.index[k]], b[log.index[k]]);
    cr_assert_eq(seen[log.index[k]]++, 0);
  }
  const prstm_word *w = prstm_engine_state(e, NULL);
  uint64_t committed = 0, abandoned = 0;
  for (int k = 0; k < BATCHES; k++) {
    for (uint64_t i = 0; i < PER_BATCH; i++) {
      unsigned reason = 0;
      prstm_status st = status_of(b[k], i, &reason);
      cr_assert(st == PRSTM_COMMITTED || st == PRSTM_ABANDONED);
      if (st == PRSTM_COMMITTED) committed++;
      if (st == PRSTM_ABANDONED) {
        abandoned++;
        cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
        cr_assert_lt(w[prstm_batch_arg(b[k], i, 0)], prstm_batch_arg(b[k], i, 2),
                     "an abandoned transfer must be unfundable on the final state");
      }
    }
  }
  cr_assert_eq(committed, r.committed);
  cr_assert_eq(abandoned, r.abandoned);
  for (int k = 0; k < BATCHES; k++) prstm_batch_destroy(b[k]);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, conserves_money_and_finishes_every_batch) { stream_conserves_money(PRSTM_BACKEND_CPU, 0); }
Test(stream_gpu, conserves_money_and_finishes_every_batch) { stream_conserves_money(PRSTM_BACKEND_GPU, 0); }
/* On the GPU, a pinned batch's rows go to the device straight from the
 * batch, and the rows carried over from earlier batches from the staging,
 * into the same unit. */
Test(stream_cpu, pinned_batches_conserve_money_and_finish) { stream_conserves_money(PRSTM_BACKEND_CPU, 1); }
Test(stream_gpu, pinned_batches_conserve_money_and_finish) { stream_conserves_money(PRSTM_BACKEND_GPU, 1); }

/* A withdrawal in the first batch, on an empty account, is funded by a
 * deposit in the second: it is carried over and commits. */
static void withdrawal_funded_by_later_batch_commits(prstm_backend backend) {
  need_backend(backend);
  prstm_word words[8] = {0};
  prstm_engine *e = open_engine(backend, words, 8);
  prstm_stream *s = open_stream(e);
  prstm_batch *b1 = new_batch(), *b2 = new_batch();
  add(b1, BANK_WITHDRAW, 3, 50, 0);
  add(b2, BANK_DEPOSIT, 3, 50, 0);
  submit_ok(s, b1);
  submit_ok(s, b2);
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(status_of(b1, 0, NULL), PRSTM_COMMITTED, "the carried withdrawal must commit");
  cr_assert_eq(status_of(b2, 0, NULL), PRSTM_COMMITTED);
  cr_assert_eq(r.committed, 2);
  cr_assert_eq(r.abandoned, 0);
  cr_assert_geq(r.carried, 1, "the withdrawal was pending at the end of its batch");
  cr_assert_eq(prstm_engine_state(e, NULL)[3], 0);
  prstm_batch_destroy(b1);
  prstm_batch_destroy(b2);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, withdrawal_funded_by_a_later_batch_commits) {
  withdrawal_funded_by_later_batch_commits(PRSTM_BACKEND_CPU);
}
Test(stream_gpu, withdrawal_funded_by_a_later_batch_commits) {
  withdrawal_funded_by_later_batch_commits(PRSTM_BACKEND_GPU);
}

/* Pinned batches of transfers on rich accounts, in units of 1,000 new rows
 * out of batches whose capacity (4,096) is not their size (2,500), so the
 * direct copy starts at offsets past 0 and reads columns at the batch's own
 * stride. Every transfer commits, so the final state is exact whatever the
 * order, and is compared word for word with the sums; a withdrawal from an
 * empty account in the first batch, funded by a deposit in the last, is
 * carried through the units in between, mixing carried and direct rows.
 * With `wide_carry`, its amount and the deposit's take 33 bits: the batches
 * between stay narrow, and their units, which carry a wide row, must take
 * it whole. */
static void pinned_chunks_reach_the_exact_state(prstm_backend backend, int wide_carry) {
  need_backend(backend);
  enum { ACCOUNTS = 64, BATCHES = 3, PER_BATCH = 2500, EMPTY = ACCOUNTS };
  prstm_word words[ACCOUNTS + 1], expected[ACCOUNTS + 1];
  for (int i = 0; i < ACCOUNTS; i++) words[i] = expected[i] = 1000000;
  words[EMPTY] = expected[EMPTY] = 0;
  prstm_engine *e = open_engine_chunked(backend, words, ACCOUNTS + 1, 1000);
  prstm_stream *s = open_stream(e);
  prstm_batch *b[BATCHES];
  uint64_t seed = 99;
  for (int k = 0; k < BATCHES; k++) {
    b[k] = new_pinned_batch();
    cr_assert_eq(prstm_batch_reserve(b[k], 4096, 3), 0);
    const prstm_word carried = wide_carry ? (1ull << 32) + 7 : 7;
    if (k == 0) add(b[k], BANK_WITHDRAW, EMPTY, carried, 0);
    for (int i = (k == 0); i < PER_BATCH - (k == BATCHES - 1); i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t from = (seed >> 20) % ACCOUNTS, to = (from + 1 + (seed >> 40) % (ACCOUNTS - 1)) % ACCOUNTS;
      uint64_t amount = 1 + (seed >> 8) % 60;
      add(b[k], BANK_TRANSFER, from, to, amount);
      expected[from] -= amount;
      expected[to] += amount;
    }
    if (k == BATCHES - 1) add(b[k], BANK_DEPOSIT, EMPTY, carried, 0);
    cr_assert_eq(b[k]->wide, wide_carry && (k == 0 || k == BATCHES - 1), "batch %d's width", k);
    assert_pinned_where_a_gpu_is(b[k]);
    submit_ok(s, b[k]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.unit_rows, 1000);
  cr_assert_eq(r.committed, (uint64_t)BATCHES * PER_BATCH, "every transfer, the withdrawal and the deposit commit");
  cr_assert_geq(r.carried, 1, "the withdrawal waited for its deposit");
  const prstm_word *w = prstm_engine_state(e, NULL);
  for (int i = 0; i <= ACCOUNTS; i++)
    cr_assert_eq(w[i], expected[i], "account %d: %llu, expected %llu", i, (unsigned long long)w[i],
                 (unsigned long long)expected[i]);
  /* Each row's own status, which a GPU reads back straight into the batch. */
  for (int k = 0; k < BATCHES; k++)
    for (uint64_t i = 0; i < PER_BATCH; i++)
      cr_assert_eq(status_of(b[k], i, NULL), PRSTM_COMMITTED, "batch %d row %llu", k, (unsigned long long)i);
  for (int k = 0; k < BATCHES; k++) prstm_batch_destroy(b[k]);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, pinned_chunks_reach_the_exact_state) { pinned_chunks_reach_the_exact_state(PRSTM_BACKEND_CPU, 0); }
Test(stream_gpu, pinned_chunks_reach_the_exact_state) { pinned_chunks_reach_the_exact_state(PRSTM_BACKEND_GPU, 0); }
Test(stream_cpu, narrow_pinned_chunks_carry_a_wide_row_whole) {
  pinned_chunks_reach_the_exact_state(PRSTM_BACKEND_CPU, 1);
}
Test(stream_gpu, narrow_pinned_chunks_carry_a_wide_row_whole) {
  pinned_chunks_reach_the_exact_state(PRSTM_BACKEND_GPU, 1);
}

/* Balance queries of accounts no transaction writes, among transfers on
 * other accounts, in units of 1,000 rows out of batches of 2,500: each query
 * commits with its account's exact balance, wherever its unit starts; a
 * withdrawal carried from the first batch to the last travels beside them.
 * On a warmed-up engine a GPU stream's buffers come from the engine's
 * pinned chunks, laid out as the device's: its units' results, progress
 * words and statuses come back in one copy, and a pinned batch's unit
 * without carried rows takes its types through the staging. */
static void read_only_results_come_back_through_the_stream(prstm_backend backend, int pinned, int warm) {
  need_backend(backend);
  enum { RICH = 32, QUIET = 32, BATCHES = 3, PER_BATCH = 2500, EMPTY = RICH + QUIET };
  prstm_word words[EMPTY + 1];
  for (int i = 0; i < RICH; i++) words[i] = 1000000;
  for (int i = RICH; i < EMPTY; i++) words[i] = 1000 + (prstm_word)i;
  words[EMPTY] = 0;
  prstm_engine *e = open_engine_chunked(backend, words, EMPTY + 1, 1000);
  if (warm) cr_assert_eq(prstm_engine_warm_up(e), 0, "%s", prstm_engine_error(e));
  prstm_stream *s = open_stream(e);
  prstm_batch *b[BATCHES];
  uint64_t seed = 7, asked = 0;
  for (int k = 0; k < BATCHES; k++) {
    b[k] = pinned ? new_pinned_batch() : new_batch();
    if (k == 0) add(b[k], BANK_WITHDRAW, EMPTY, 5, 0);
    for (int i = (k == 0); i < PER_BATCH - (k == BATCHES - 1); i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      if (i % 5 == 0) {
        add(b[k], BANK_BALANCE, RICH + (seed >> 33) % QUIET, 0, 0);
        asked++;
        continue;
      }
      uint64_t from = (seed >> 20) % RICH, to = (from + 1 + (seed >> 40) % (RICH - 1)) % RICH;
      add(b[k], BANK_TRANSFER, from, to, 1 + (seed >> 8) % 60);
    }
    if (k == BATCHES - 1) add(b[k], BANK_DEPOSIT, EMPTY, 5, 0);
    if (pinned) assert_pinned_where_a_gpu_is(b[k]);
    submit_ok(s, b[k]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.committed, (uint64_t)BATCHES * PER_BATCH, "every row commits");
  cr_assert_geq(r.carried, 1, "the withdrawal waited for its deposit");
  uint64_t queries = 0;
  for (int k = 0; k < BATCHES; k++) {
    for (uint64_t i = 0; i < PER_BATCH; i++) {
      prstm_status st;
      prstm_word result = 0;
      cr_assert_eq(prstm_batch_outcome(b[k], i, &st, NULL, &result), 0);
      cr_assert_eq(st, PRSTM_COMMITTED, "batch %d row %llu", k, (unsigned long long)i);
      if (prstm_batch_type(b[k], i) != BANK_BALANCE) continue;
      prstm_word account = prstm_batch_arg(b[k], i, 0);
      cr_assert_eq(result, words[account], "batch %d row %llu: balance of %llu read as %llu", k, (unsigned long long)i,
                   (unsigned long long)account, (unsigned long long)result);
      queries++;
    }
  }
  cr_assert_eq(queries, asked);
  cr_assert_gt(asked, 1000);
  for (int k = 0; k < BATCHES; k++) prstm_batch_destroy(b[k]);
  destroy_stream_and_engine(s, e);
}

/* A unit that cannot progress (a type that conflicts forever) stops the
 * stream with PRSTM_ESTALLED instead of hanging, also when the next batch is
 * submitted while it runs and needs pinned memory its slot does not hold yet
 * (on the GPU, freeing pinned memory waits for the whole GPU, so the stalled
 * unit is retired first, under the watchdog); the error is sticky. */
static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void stalled_unit_stops_the_stream(prstm_backend backend) {
  need_backend(backend);
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = backend;
  opt.threads = backend == PRSTM_BACKEND_GPU ? GPU_THREADS : CPU_THREADS;
  opt.watchdog_s = 1;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, &test_probe_workload, &opt), 0);
  prstm_word words[8] = {0};
  cr_assert_eq(prstm_engine_set_state(e, words, 8), 0, "%s", prstm_engine_error(e));
  prstm_stream *s = open_stream(e);
  prstm_batch *b[2];
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(prstm_batch_create(&b[k], &test_probe_workload), 0);
    for (int i = 0; i < 100; i++) {
      prstm_word one[1] = {(prstm_word)(i % 8)};
      cr_assert_eq(prstm_batch_append(b[k], PROBE_INCREMENT, one, 1), 0);
    }
  }
  prstm_word three[1] = {3};
  cr_assert_eq(prstm_batch_append(b[0], PROBE_LIVELOCK, three, 1), 0);
  double t0 = seconds_now();
  int rc = prstm_stream_submit(s, b[0]);
  if (rc == 0) rc = prstm_stream_submit(s, b[1]);
  prstm_stream_results r;
  if (rc == 0) rc = prstm_stream_close(s, &r);
  double took = seconds_now() - t0;
  cr_assert_eq(rc, PRSTM_ESTALLED, "got %d: %s", rc, prstm_stream_error(s));
  cr_assert(strstr(prstm_stream_error(s), "watchdog") != NULL, "%s", prstm_stream_error(s));
  cr_assert_lt(took, 30.0, "the watchdog took %.1f s", took);
  cr_assert_eq(prstm_stream_submit(s, b[1]), PRSTM_ESTALLED, "the error must be sticky");
  prstm_stream_destroy(s);
  for (int k = 0; k < 2; k++) prstm_batch_destroy(b[k]);
  prstm_engine_destroy(e);
}

Test(stream_cpu, stalled_unit_stops_the_stream) { stalled_unit_stops_the_stream(PRSTM_BACKEND_CPU); }
Test(stream_gpu, stalled_unit_stops_the_stream) { stalled_unit_stops_the_stream(PRSTM_BACKEND_GPU); }

/* With the thread count left to the engine, a GPU stream of two-account
 * transfers runs 512 threads an SM, as a single run of them does; the SM
 * count is read from the stream's device line, "NAME (S SMs, T threads)". */
Test(stream_gpu, default_threads_are_the_worker_variants_choice) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_word words[64];
  for (int i = 0; i < 64; i++) words[i] = 1000;
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_GPU;
  opt.threads = 0;
  opt.watchdog_s = 120;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, bank(), &opt), 0);
  cr_assert_eq(prstm_engine_set_state(e, words, 64), 0, "%s", prstm_engine_error(e));
  prstm_stream *s = open_stream(e);
  prstm_batch *b = new_batch();
  for (int i = 0; i < 1000; i++) add(b, BANK_TRANSFER, (prstm_word)i % 64, (prstm_word)(i + 1) % 64, 1);
  submit_ok(s, b);
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.committed, 1000);
  unsigned sms = 0;
  const char *p = strrchr(r.device, '(');
  cr_assert(p && sscanf(p, "(%u SMs", &sms) == 1 && sms > 0, "no SM count in '%s'", r.device);
  cr_assert_eq(r.threads, 512u * sms, "transfers: 512 an SM of %u SMs, ran %u threads", sms, r.threads);
  prstm_batch_destroy(b);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, read_only_results_come_back_through_the_stream) {
  read_only_results_come_back_through_the_stream(PRSTM_BACKEND_CPU, 0, 0);
}
Test(stream_gpu, read_only_results_come_back_through_the_stream) {
  read_only_results_come_back_through_the_stream(PRSTM_BACKEND_GPU, 0, 0);
}
Test(stream_gpu, read_only_results_come_back_through_a_stream_of_pinned_batches) {
  read_only_results_come_back_through_the_stream(PRSTM_BACKEND_GPU, 1, 0);
}
Test(stream_gpu, read_only_results_come_back_through_a_warmed_up_engines_stream) {
  read_only_results_come_back_through_the_stream(PRSTM_BACKEND_GPU, 0, 1);
}
Test(stream_gpu, read_only_results_come_back_through_a_warmed_up_engines_pinned_stream) {
  read_only_results_come_back_through_the_stream(PRSTM_BACKEND_GPU, 1, 1);
}

/* A withdrawal that no batch funds stays pending while the stream is open,
 * holds its batch back from the done report, and is abandoned (quiescent)
 * only at close; one that a later deposit only partly funds too. */
static void unfunded_withdrawal_abandoned_only_at_close(prstm_backend backend) {
  need_backend(backend);
  prstm_word words[16] = {0};
  prstm_engine *e = open_engine(backend, words, 16);
  prstm_stream *s = open_stream(e);
  done_log log = {0};
  cr_assert_eq(prstm_stream_set_done(s, on_done, &log), 0);
  prstm_batch *first = new_batch();
  add(first, BANK_WITHDRAW, 5, 100, 0); /* never funded */
  add(first, BANK_WITHDRAW, 6, 100, 0); /* funded by 60 only */
  add(first, BANK_DEPOSIT, 7, 10, 0);
  submit_ok(s, first);
  prstm_batch *later[4];
  for (int k = 0; k < 4; k++) {
    later[k] = new_batch();
    add(later[k], BANK_DEPOSIT, 8 + (unsigned)k, 5, 0);
    add(later[k], BANK_DEPOSIT, 6, 15, 0);
    submit_ok(s, later[k]);
  }
  /* Three batches later the first is still open: its withdrawals are pending. */
  cr_assert_eq(status_of(first, 0, NULL), PRSTM_PENDING);
  cr_assert_eq(status_of(first, 1, NULL), PRSTM_PENDING);
  for (uint64_t k = 0; k < log.count; k++) cr_assert_neq(log.batch[k], first, "the first batch is not done yet");
  prstm_stream_results r;
  close_ok(s, &r);
  unsigned reason = 0;
  cr_assert_eq(status_of(first, 0, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(status_of(first, 1, &reason), PRSTM_ABANDONED);
  cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(status_of(first, 2, NULL), PRSTM_COMMITTED);
  cr_assert_eq(r.abandoned, 2);
  cr_assert_eq(r.committed, 9);
  cr_assert_eq(log.count, 5);
  cr_assert_eq(log.batch[4], first, "the first batch is the last one done");
  const prstm_word *w = prstm_engine_state(e, NULL);
  cr_assert_eq(w[5], 0);
  cr_assert_eq(w[6], 60);
  prstm_batch_destroy(first);
  for (int k = 0; k < 4; k++) prstm_batch_destroy(later[k]);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, unfunded_withdrawal_is_abandoned_only_at_close) {
  unfunded_withdrawal_abandoned_only_at_close(PRSTM_BACKEND_CPU);
}
Test(stream_gpu, unfunded_withdrawal_is_abandoned_only_at_close) {
  unfunded_withdrawal_abandoned_only_at_close(PRSTM_BACKEND_GPU);
}

/* A batch whose outcomes do not depend on the order of execution: transfers
 * between rich accounts that can never run short, withdrawals from empty
 * accounts each funded by a deposit placed later in the batch, and
 * withdrawals that nothing funds. */
#define DET_RICH 64
#define DET_POOR 64
static prstm_batch *deterministic_batch(uint64_t n, uint64_t *unfunded) {
  prstm_batch *b = new_batch();
  uint64_t seed = 99;
  *unfunded = 0;
  for (uint64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = seed >> 33;
    if (i < n / 4 && r % 8 == 0) {
      add(b, BANK_WITHDRAW, DET_RICH + r % DET_POOR, 10, 0); /* funded by the matching deposit below */
    } else if (i < n / 2 && r % 50 == 1) {
      add(b, BANK_WITHDRAW, DET_RICH + r % DET_POOR, 1000000000, 0);
      (*unfunded)++;
    } else {
      add(b, BANK_TRANSFER, r % DET_RICH, (r >> 8) % DET_RICH, 1 + (r >> 16) % 100);
    }
  }
  /* One deposit per funded withdrawal, all in the last quarter. */
  uint64_t funded[DET_POOR] = {0};
  for (uint64_t i = 0; i < n / 4; i++)
    if (prstm_batch_type(b, i) == BANK_WITHDRAW && prstm_batch_arg(b, i, 1) == 10)
      funded[prstm_batch_arg(b, i, 0) - DET_RICH]++;
  for (uint64_t a = 0; a < DET_POOR; a++)
    for (uint64_t k = 0; k < funded[a]; k++) add(b, BANK_DEPOSIT, DET_RICH + a, 10, 0);
  return b;
}

static void deterministic_state(prstm_word *w) {
  for (int i = 0; i < DET_RICH; i++) w[i] = 1000000;
  for (int i = 0; i < DET_POOR; i++) w[DET_RICH + i] = 0;
}

typedef struct progress_log {
  uint64_t reports, finished, last_committed, last_transactions;
} progress_log;

static void on_progress(const prstm_progress *p, void *user) {
  progress_log *log = user;
  cr_assert_geq(p->committed, log->last_committed, "progress never goes back");
  log->reports++;
  log->finished += p->finished;
  log->last_committed = p->committed;
  log->last_transactions = p->transactions;
}

/* options.chunk_rows, or the PRSTM_CHUNK_ROWS environment variable that sets
 * its default, splits a batch into chunks: the chunked run ends with the
 * same outcomes, totals and final state as the whole run, satisfies the bank
 * invariant, and reports progress over the whole batch. */
typedef enum { CHUNKS_BY_OPTION, CHUNKS_BY_ENVIRONMENT } chunk_route;
static void chunked_run_matches_whole_run(prstm_backend backend, const char *chunk_rows, chunk_route route) {
  need_backend(backend);
  prstm_word words[DET_RICH + DET_POOR];
  deterministic_state(words);
  uint64_t unfunded = 0;
  prstm_batch *whole = deterministic_batch(20000, &unfunded);
  prstm_batch *chunked = deterministic_batch(20000, &unfunded);
  cr_assert_gt(unfunded, 0);

  prstm_engine *e1 = open_engine(backend, words, DET_RICH + DET_POOR);
  prstm_results r1;
  cr_assert_eq(prstm_engine_run(e1, whole, &r1), 0, "%s", prstm_engine_error(e1));

  prstm_engine *e2 = NULL;
  if (route == CHUNKS_BY_ENVIRONMENT) {
    cr_assert_eq(setenv("PRSTM_CHUNK_ROWS", chunk_rows, 1), 0);
    e2 = open_engine(backend, words, DET_RICH + DET_POOR);
  } else {
    e2 = open_engine_chunked(backend, words, DET_RICH + DET_POOR, strtoull(chunk_rows, NULL, 10));
  }
  cr_assert_eq(prstm_engine_options(e2)->chunk_rows, strtoull(chunk_rows, NULL, 10));
  progress_log plog = {0};
  cr_assert_eq(prstm_engine_set_progress(e2, on_progress, &plog), 0);
  prstm_results r2;
  cr_assert_eq(prstm_engine_run(e2, chunked, &r2), 0, "%s", prstm_engine_error(e2));
  unsetenv("PRSTM_CHUNK_ROWS");

  cr_assert(strstr(r2.device, "chunked") != NULL, "the run was chunked: %s", r2.device);
  /* The chunked run's stream took the state and gave it back, inside its
   * wall; a whole run has no stream to set up. */
  cr_assert(r2.setup_s > 0 && r2.setup_s < r2.wall_s, "set-up %g s of a %g s wall", r2.setup_s, r2.wall_s);
  cr_assert_eq(r1.setup_s, 0.0);
  cr_assert_eq(r2.transactions, r1.transactions);
  cr_assert_eq(r2.committed, r1.committed);
  cr_assert_eq(r2.abandoned, r1.abandoned);
  cr_assert_eq(r2.abandoned, unfunded);
  cr_assert_eq(r2.failed, 0);
  uint64_t n1 = 0, n2 = 0;
  const prstm_word *w1 = prstm_engine_state(e1, &n1), *w2 = prstm_engine_state(e2, &n2);
  cr_assert_eq(n1, n2);
  for (uint64_t i = 0; i < n1; i++) cr_assert_eq(w1[i], w2[i], "word %llu differs", (unsigned long long)i);
  for (uint64_t i = 0; i < prstm_batch_size(whole); i++)
    cr_assert_eq(status_of(whole, i, NULL), status_of(chunked, i, NULL), "row %llu differs", (unsigned long long)i);
  int ok = 0;
  char msg[512];
  cr_assert_eq(prstm_engine_check_invariant(e2, chunked, &ok, msg, sizeof msg), 0);
  cr_assert(ok, "bank invariant: %s", msg);
  cr_assert_eq(plog.finished, 1, "one finished report");
  cr_assert_eq(plog.last_committed, r2.committed);
  cr_assert_eq(plog.last_transactions, prstm_batch_size(chunked), "progress covers the whole batch");
  prstm_batch_destroy(whole);
  prstm_batch_destroy(chunked);
  prstm_engine_destroy(e1);
  prstm_engine_destroy(e2);
}

Test(stream_cpu, chunked_run_matches_the_whole_run) {
  chunked_run_matches_whole_run(PRSTM_BACKEND_CPU, "1000", CHUNKS_BY_OPTION);
}
/* Chunks smaller than the unfunded rows, so the close runs them in rounds. */
Test(stream_cpu, chunked_run_with_tiny_chunks_matches_the_whole_run) {
  chunked_run_matches_whole_run(PRSTM_BACKEND_CPU, "37", CHUNKS_BY_ENVIRONMENT);
}
Test(stream_gpu, chunked_run_matches_the_whole_run) {
  chunked_run_matches_whole_run(PRSTM_BACKEND_GPU, "1000", CHUNKS_BY_OPTION);
}
Test(stream_gpu, chunked_run_with_tiny_chunks_matches_the_whole_run) {
  chunked_run_matches_whole_run(PRSTM_BACKEND_GPU, "37", CHUNKS_BY_ENVIRONMENT);
}

/* A GPU stream stages a unit's argument columns as 32-bit values where
 * every one fits, and whole where one does not. Here a transfer of 2^32 + 1
 * (truncated, a transfer of 1 that would commit) sits in the middle chunk,
 * is postponed there for want of funds, and is carried through the later
 * units until the close abandons it: the chunked run must end exactly as
 * the whole run, with that row abandoned and every other committed. */
static void a_wide_argument_is_never_narrowed(prstm_backend backend) {
  need_backend(backend);
  enum { ACCOUNTS = 64, ROWS = 5000, WIDE_ROW = 2500 };
  prstm_word words[ACCOUNTS];
  for (int i = 0; i < ACCOUNTS; i++) words[i] = 1000000;
  prstm_batch *b[2];
  for (int k = 0; k < 2; k++) {
    b[k] = new_batch();
    uint64_t seed = 7;
    for (uint64_t i = 0; i < ROWS; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t r = seed >> 33;
      if (i == WIDE_ROW)
        add(b[k], BANK_TRANSFER, 3, 4, (1ull << 32) + 1);
      else
        add(b[k], BANK_TRANSFER, r % ACCOUNTS, (r >> 8) % ACCOUNTS, 1 + (r >> 16) % 100);
    }
  }
  prstm_engine *whole = open_engine(backend, words, ACCOUNTS);
  prstm_engine *chunked = open_engine_chunked(backend, words, ACCOUNTS, 1000);
  prstm_results r1, r2;
  cr_assert_eq(prstm_engine_run(whole, b[0], &r1), 0, "%s", prstm_engine_error(whole));
  cr_assert_eq(prstm_engine_run(chunked, b[1], &r2), 0, "%s", prstm_engine_error(chunked));
  cr_assert(strstr(r2.device, "chunked") != NULL, "the run was chunked: %s", r2.device);
  cr_assert_eq(status_of(b[1], WIDE_ROW, NULL), PRSTM_ABANDONED, "the transfer of 2^32 + 1 was not abandoned");
  cr_assert_eq(r2.committed, ROWS - 1);
  cr_assert_eq(r2.abandoned, 1);
  uint64_t n1 = 0, n2 = 0;
  const prstm_word *w1 = prstm_engine_state(whole, &n1), *w2 = prstm_engine_state(chunked, &n2);
  cr_assert_eq(n1, n2);
  for (uint64_t i = 0; i < n1; i++) cr_assert_eq(w1[i], w2[i], "word %llu differs", (unsigned long long)i);
  for (uint64_t i = 0; i < ROWS; i++)
    cr_assert_eq(status_of(b[0], i, NULL), status_of(b[1], i, NULL), "row %llu differs", (unsigned long long)i);
  for (int k = 0; k < 2; k++) prstm_batch_destroy(b[k]);
  prstm_engine_destroy(whole);
  prstm_engine_destroy(chunked);
}

Test(stream_cpu, a_wide_argument_is_never_narrowed) { a_wide_argument_is_never_narrowed(PRSTM_BACKEND_CPU); }
Test(stream_gpu, a_wide_argument_is_never_narrowed) { a_wide_argument_is_never_narrowed(PRSTM_BACKEND_GPU); }

/* What a GPU run page-locks of an ordinary batch: its progress reports
 * count the ones that saw the batch's argument columns (and, with
 * `columns`, its type and status columns too) page-locked. */
typedef struct pages_log {
  const prstm_batch *b;
  int columns;
  uint64_t reports, locked;
} pages_log;

static void on_progress_pages(const prstm_progress *p, void *user) {
  (void)p;
  pages_log *l = user;
  l->reports++;
  int locked = test_host_pages_locked(l->b->args) == 1;
  if (l->columns) locked &= test_host_pages_locked(l->b->type) == 1 && test_host_pages_locked(l->b->status) == 1;
  l->locked += (uint64_t)locked;
}

/* 1,300,000 transfers among 2^20 accounts: 15.6 MB of 32-bit arguments
 * (18.2 MB with the type and status columns), more than the
 * PRSTM_POLICY_LOCK_PAGES_MIN_BYTES a range must have to be locked, and
 * few conflicts at a GPU's threads. */
#define PAGES_ROWS 1300000u
#define PAGES_ACCOUNTS (1u << 20)

/* With wide_first, row 0 is a deposit of 2^33 instead: an argument that
 * does not fit in 32 bits, among the rows a whole GPU run looks at before
 * it narrows the columns. */
static prstm_batch *pages_batch_with(int wide_first) {
  prstm_batch *b = new_batch();
  uint64_t seed = 7;
  for (uint64_t i = 0; i < PAGES_ROWS; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    if (i == 0 && wide_first)
      add(b, BANK_DEPOSIT, 5, 1ull << 33, 0);
    else
      add(b, BANK_TRANSFER, (seed >> 33) % PAGES_ACCOUNTS, (seed >> 13) % PAGES_ACCOUNTS, 1 + (seed >> 58));
  }
  return b;
}

static prstm_batch *pages_batch(void) { return pages_batch_with(0); }

/* Runs `b` (pages_batch's rows) on a GPU engine, chunked in chunks of
 * chunk_rows or whole with 0, and checks its outcomes and final state
 * against the same rows run on the CPU backend. */
static void run_pages_with(prstm_batch *b, int wide_first, uint64_t chunk_rows, pages_log *log) {
  prstm_word *words = malloc(PAGES_ACCOUNTS * sizeof *words);
  cr_assert_not_null(words);
  for (uint64_t i = 0; i < PAGES_ACCOUNTS; i++) words[i] = 1000;
  prstm_batch *ref = pages_batch_with(wide_first);
  prstm_engine *cpu = open_engine(PRSTM_BACKEND_CPU, words, PAGES_ACCOUNTS);
  prstm_results r1, r2;
  cr_assert_eq(prstm_engine_run(cpu, ref, &r1), 0, "%s", prstm_engine_error(cpu));
  prstm_engine *gpu = open_engine_chunked(PRSTM_BACKEND_GPU, words, PAGES_ACCOUNTS, chunk_rows);
  cr_assert_eq(prstm_engine_set_progress(gpu, on_progress_pages, log), 0);
  cr_assert_eq(prstm_engine_run(gpu, b, &r2), 0, "%s", prstm_engine_error(gpu));
  cr_assert_eq(r2.backend, PRSTM_BACKEND_GPU);
  cr_assert_eq(strstr(r2.device, "chunked") != NULL, chunk_rows != 0, "chunked as asked: %s", r2.device);
  cr_assert_eq(r1.committed, PAGES_ROWS);
  cr_assert_eq(r2.committed, PAGES_ROWS);
  uint64_t n1 = 0, n2 = 0;
  const prstm_word *w1 = prstm_engine_state(cpu, &n1), *w2 = prstm_engine_state(gpu, &n2);
  cr_assert_eq(n1, n2);
  for (uint64_t i = 0; i < n1; i++)
    if (w1[i] != w2[i]) cr_assert_fail("word %llu differs", (unsigned long long)i);
  for (uint64_t i = 0; i < PAGES_ROWS; i++)
    if (status_of(b, i, NULL) != PRSTM_COMMITTED) cr_assert_fail("row %llu not committed", (unsigned long long)i);
  prstm_batch_destroy(ref);
  prstm_engine_destroy(cpu);
  prstm_engine_destroy(gpu);
  free(words);
}

static void run_pages(prstm_batch *b, uint64_t chunk_rows, pages_log *log) { run_pages_with(b, 0, chunk_rows, log); }

/* A whole GPU run of an ordinary batch whose arguments do not all fit in
 * 32 bits, on an engine without staging chunks, copies its large argument
 * columns from where they lie, page-locked while it runs (every progress
 * report sees them locked) and given back when it ends. */
Test(pages_gpu, whole_run_locks_large_ranges_only_while_it_runs) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_batch *b = pages_batch_with(1);
  cr_assert(!prstm_batch_pinned(b));
  cr_assert_eq(test_host_pages_locked(b->args), 0, "ordinary before the run");
  pages_log log = {b, 0, 0, 0};
  run_pages_with(b, 1, 0, &log);
  cr_assert_gt(log.reports, 0);
  cr_assert_eq(log.locked, log.reports, "%llu of %llu reports saw the arguments locked", (unsigned long long)log.locked,
               (unsigned long long)log.reports);
  cr_assert_eq(test_host_pages_locked(b->args), 0, "given back after the run");
  prstm_batch_destroy(b);
}

/* A narrow batch's arguments (every value fits in 32 bits) go up through
 * the engine's staging chunks instead (taken by the run, since this engine
 * did not warm up): no progress report sees them locked, and the outcomes
 * and state are the CPU backend's. */
Test(pages_gpu, whole_run_narrows_arguments_without_locking_them) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_batch *b = pages_batch();
  pages_log log = {b, 0, 0, 0};
  run_pages(b, 0, &log);
  cr_assert_gt(log.reports, 0);
  cr_assert_eq(log.locked, 0, "%llu of %llu reports saw the arguments locked", (unsigned long long)log.locked,
               (unsigned long long)log.reports);
  cr_assert_eq(test_host_pages_locked(b->args), 0);
  prstm_batch_destroy(b);
}

/* A chunked GPU run of large units (here 200,000 rows, 5.2 MB, at least
 * PRSTM_POLICY_STREAM_STAGED_UNIT_MAX_BYTES) locks the whole batch, type
 * and status columns too, so that each unit copies its rows straight from
 * it, and gives it back. */
Test(pages_gpu, chunked_run_locks_the_batch_only_while_it_runs) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_batch *b = pages_batch();
  pages_log log = {b, 1, 0, 0};
  run_pages(b, 200000, &log);
  cr_assert_gt(log.reports, 0);
  cr_assert_eq(log.locked, log.reports, "%llu of %llu reports saw the batch locked", (unsigned long long)log.locked,
               (unsigned long long)log.reports);
  cr_assert_eq(b->registered, 0);
  cr_assert_eq(test_host_pages_locked(b->args), 0, "arguments given back");
  cr_assert_eq(test_host_pages_locked(b->type), 0, "types given back");
  cr_assert_eq(test_host_pages_locked(b->status), 0, "statuses given back");
  prstm_batch_destroy(b);
}

/* Units of middling size (here 100,000 rows, 2.6 MB) are staged by the
 * stream's copying threads where the host has the cores for them (four or
 * more): no progress report sees any column of the batch locked, and the
 * outcomes and state are the CPU backend's. With fewer cores the batch is
 * locked as for large units. */
Test(pages_gpu, chunked_run_of_middling_units_leaves_the_batch_pageable) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_batch *b = pages_batch();
  pages_log log = {b, 0, 0, 0};
  run_pages(b, 100000, &log);
  cr_assert_gt(log.reports, 0);
  const uint64_t want = sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 0 : log.reports;
  cr_assert_eq(log.locked, want, "%llu of %llu reports saw the arguments locked, where %llu should",
               (unsigned long long)log.locked, (unsigned long long)log.reports, (unsigned long long)want);
  cr_assert_eq(b->registered, 0);
  cr_assert_eq(test_host_pages_locked(b->args), 0, "arguments pageable after the run");
  prstm_batch_destroy(b);
}

/* Memory the caller page-locked itself is used as it is and stays locked
 * after the run, whole or chunked. */
Test(pages_gpu, callers_own_locked_memory_stays_locked) {
  need_backend(PRSTM_BACKEND_GPU);
  for (int chunked = 0; chunked < 2; chunked++) {
    prstm_batch *b = pages_batch();
    const size_t span = txtable_width(b) * ((size_t)(b->ncols - 1) * b->cap + b->n);
    cr_assert_eq(test_host_pages_lock(b->args, span), 0);
    pages_log log = {b, 0, 0, 0};
    run_pages(b, chunked ? 100000 : 0, &log);
    cr_assert_eq(test_host_pages_locked(b->args), 1, "still locked after a %s run", chunked ? "chunked" : "whole");
    cr_assert_eq(test_host_pages_unlock(b->args), 0);
    prstm_batch_destroy(b);
  }
}

/* A column of which the caller locked only the first bytes is not taken
 * for locked: the chunked run falls back to the staging and ends as any
 * other. */
Test(pages_gpu, column_locked_only_in_its_first_bytes_is_staged) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_batch *b = pages_batch();
  cr_assert_eq(test_host_pages_lock(b->status, 1), 0);
  pages_log log = {b, 0, 0, 0};
  run_pages(b, 100000, &log);
  cr_assert_eq(b->registered, 0);
  cr_assert_eq(test_host_pages_locked(b->args), 0, "arguments not left locked");
  cr_assert_eq(test_host_pages_locked(b->status), 1, "the caller's page stays locked");
  cr_assert_eq(test_host_pages_unlock(b->status), 0);
  prstm_batch_destroy(b);
}

/* A stream's carried rows exceed what one run takes: the close runs them in
 * rounds, commits what later deposits fund, and abandons the rest. */
Test(stream_cpu, close_in_rounds_commits_what_is_funded_and_abandons_the_rest) {
  cr_assert_eq(setenv("PRSTM_CHUNK_ROWS", "4", 1), 0);
  prstm_word words[64] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 64);
  prstm_stream *s = open_stream(e);
  prstm_batch *a = new_batch(), *b = new_batch();
  for (unsigned i = 0; i < 40; i++) add(a, BANK_WITHDRAW, i, 7, 0);
  for (unsigned i = 0; i < 40; i += 2) add(b, BANK_DEPOSIT, i, 7, 0);
  submit_ok(s, a);
  submit_ok(s, b);
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.unit_rows, 4);
  cr_assert_gt(r.runs, 15);
  for (unsigned i = 0; i < 40; i++) {
    unsigned reason = 0;
    prstm_status st = status_of(a, i, &reason);
    if (i % 2 == 0) {
      cr_assert_eq(st, PRSTM_COMMITTED, "withdrawal %u was funded", i);
    } else {
      cr_assert_eq(st, PRSTM_ABANDONED, "withdrawal %u was never funded", i);
      cr_assert_eq(reason, PRSTM_REASON_QUIESCENT);
    }
  }
  cr_assert_eq(r.committed, 40);
  cr_assert_eq(r.abandoned, 20);
  cr_assert_eq(total_money(e), 0);
  prstm_batch_destroy(a);
  prstm_batch_destroy(b);
  destroy_stream_and_engine(s, e);
  unsetenv("PRSTM_CHUNK_ROWS");
}

/* A batch reported done may be filled again and resubmitted; one still
 * running may not. */
Test(stream_cpu, a_done_batch_can_be_resubmitted_a_running_one_cannot) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = open_stream(e);
  done_log log = {0};
  prstm_stream_set_done(s, on_done, &log);
  prstm_batch *b = new_batch();
  add(b, BANK_DEPOSIT, 1, 5, 0);
  submit_ok(s, b);
  prstm_batch *blocked = new_batch();
  add(blocked, BANK_WITHDRAW, 2, 5, 0);
  submit_ok(s, blocked);
  cr_assert_eq(prstm_stream_submit(s, blocked), PRSTM_EINVAL, "a batch still running cannot be submitted again");
  cr_assert(strstr(prstm_stream_error(s), "still running") != NULL, "%s", prstm_stream_error(s));
  cr_assert_eq(log.count, 1, "the deposit's batch is done");
  cr_assert_eq(log.batch[0], b);
  cr_assert_eq(prstm_stream_submit(s, b), 0, "a done batch can run again");
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(prstm_engine_state(e, NULL)[1], 10);
  cr_assert_eq(r.batches, 3);
  cr_assert_eq(r.committed, 2);
  cr_assert_eq(r.abandoned, 1);
  prstm_batch_destroy(b);
  prstm_batch_destroy(blocked);
  destroy_stream_and_engine(s, e);
}

/* The done callback must not call into the stream: a submit, close or
 * set_done from inside it is refused with PRSTM_EINVAL, and the stream goes
 * on as if the call had not been made. */
typedef struct reentry {
  prstm_stream *s;
  prstm_batch *other;
  int submit_rc, close_rc, set_done_rc, calls;
  char why[256];
} reentry;

static void on_done_calls_back(uint64_t index, prstm_batch *batch, void *user) {
  (void)index;
  (void)batch;
  reentry *r = user;
  if (r->calls++) return;
  r->submit_rc = prstm_stream_submit(r->s, r->other);
  snprintf(r->why, sizeof r->why, "%s", prstm_stream_error(r->s));
  r->close_rc = prstm_stream_close(r->s, NULL);
  r->set_done_rc = prstm_stream_set_done(r->s, NULL, NULL);
}

Test(stream_cpu, done_callback_cannot_call_into_the_stream) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = open_stream(e);
  prstm_batch *first = new_batch(), *other = new_batch();
  add(first, BANK_DEPOSIT, 1, 5, 0);
  add(other, BANK_DEPOSIT, 2, 7, 0);
  reentry r = {s, other, 0, 0, 0, 0, ""};
  cr_assert_eq(prstm_stream_set_done(s, on_done_calls_back, &r), 0);
  submit_ok(s, first);
  /* A batch is reported done from the submit or close that retires its
   * unit, which may be a later one. */
  prstm_batch *filler[3];
  unsigned k = 0;
  for (; k < 3 && r.calls == 0; k++) {
    filler[k] = new_batch();
    add(filler[k], BANK_DEPOSIT, 3, 1, 0);
    submit_ok(s, filler[k]);
  }
  cr_assert_eq(r.calls, 1, "the first batch is reported done within a later submit");
  cr_assert_eq(r.submit_rc, PRSTM_EINVAL, "submit from the callback: got %d", r.submit_rc);
  cr_assert(strstr(r.why, "done callback") != NULL, "%s", r.why);
  cr_assert_eq(r.close_rc, PRSTM_EINVAL, "close from the callback: got %d", r.close_rc);
  cr_assert_eq(r.set_done_rc, PRSTM_EINVAL, "set_done from the callback: got %d", r.set_done_rc);
  /* Refused calls changed nothing: the stream is open, keeps its callback,
   * and runs the other batch when it is submitted from outside. */
  submit_ok(s, other);
  prstm_stream_results res;
  close_ok(s, &res);
  cr_assert_eq(r.calls, 2 + (int)k, "the callback stays set: every batch reported once");
  cr_assert_eq(res.batches, 2 + k);
  cr_assert_eq(res.committed, 2 + k);
  cr_assert_eq(prstm_engine_state(e, NULL)[1], 5);
  cr_assert_eq(prstm_engine_state(e, NULL)[2], 7);
  cr_assert_eq(prstm_engine_state(e, NULL)[3], k);
  for (unsigned i = 0; i < k; i++) prstm_batch_destroy(filler[i]);
  prstm_batch_destroy(first);
  prstm_batch_destroy(other);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, submit_after_close_is_an_error) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = open_stream(e);
  prstm_batch *b = new_batch();
  add(b, BANK_DEPOSIT, 1, 5, 0);
  submit_ok(s, b);
  cr_assert_eq(prstm_stream_close(s, NULL), 0);
  cr_assert_eq(prstm_stream_submit(s, b), PRSTM_EINVAL);
  cr_assert(strstr(prstm_stream_error(s), "closed") != NULL, "%s", prstm_stream_error(s));
  cr_assert_eq(prstm_stream_close(s, NULL), PRSTM_EINVAL, "a second close is an error");
  /* The engine is free again after close. */
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  cr_assert_eq(prstm_engine_state(e, NULL)[1], 10);
  prstm_batch_destroy(b);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, bad_arguments_are_refused) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = NULL;
  cr_assert_eq(prstm_stream_open(NULL, &s), PRSTM_EINVAL);
  cr_assert_eq(prstm_stream_open(e, NULL), PRSTM_EINVAL);
  cr_assert_eq(prstm_stream_submit(NULL, NULL), PRSTM_EINVAL);
  cr_assert_eq(prstm_stream_close(NULL, NULL), PRSTM_EINVAL);
  cr_assert_eq(prstm_stream_set_done(NULL, on_done, NULL), PRSTM_EINVAL);
  prstm_stream_destroy(NULL);

  /* An engine without state cannot stream. */
  prstm_engine *bare = NULL;
  cr_assert_eq(prstm_engine_create(&bare, bank(), NULL), 0);
  cr_assert_eq(prstm_stream_open(bare, &s), PRSTM_EINVAL);
  prstm_engine_destroy(bare);
  /* A stream is verified only on a verifying engine, and only once closed. */
  prstm_verify_report rep;
  cr_assert_eq(prstm_stream_verify(NULL, &rep), PRSTM_EINVAL);
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_CPU;
  opt.verify = 1;
  prstm_engine *verifying = NULL;
  cr_assert_eq(prstm_engine_create(&verifying, bank(), &opt), 0);
  cr_assert_eq(prstm_engine_set_state(verifying, words, 4), 0);
  cr_assert_eq(prstm_stream_open(verifying, &s), 0);
  cr_assert_eq(prstm_stream_verify(s, &rep), PRSTM_EINVAL, "a stream still open cannot be verified");
  cr_assert(strstr(prstm_engine_error(verifying), "closed") != NULL, "%s", prstm_engine_error(verifying));
  prstm_stream_destroy(s);
  prstm_engine_destroy(verifying);

  cr_assert_eq(prstm_stream_open(e, &s), 0);
  prstm_stream *second = NULL;
  cr_assert_eq(prstm_stream_open(e, &second), PRSTM_EINVAL, "one stream per engine");
  cr_assert_eq(prstm_stream_submit(s, NULL), PRSTM_EINVAL);
  /* While the stream is open the engine runs nothing else. */
  prstm_batch *b = new_batch();
  add(b, BANK_DEPOSIT, 1, 5, 0);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), PRSTM_EINVAL);
  cr_assert_eq(prstm_engine_set_state(e, words, 4), PRSTM_EINVAL);
  /* A batch of another workload. */
  prstm_batch *other = NULL;
  cr_assert_eq(prstm_batch_create(&other, prstm_workload_find("kmeans")), 0);
  cr_assert_eq(prstm_stream_submit(s, other), PRSTM_EINVAL);
  prstm_batch_destroy(other);
  /* The first batch sets the row width; a wider one later is refused. */
  submit_ok(s, b);
  prstm_batch *wide = new_batch();
  prstm_word multi[6] = {0, 1, 4, 1, 2, 3}; /* to 0, amount 1, four sources */
  cr_assert_eq(prstm_batch_append(wide, BANK_TRANSFER_MULTI, multi, 6), 0);
  cr_assert_eq(prstm_stream_submit(s, wide), PRSTM_EINVAL);
  cr_assert(strstr(prstm_stream_error(s), "argument words") != NULL, "%s", prstm_stream_error(s));
  /* A refused batch does not stop the stream. */
  cr_assert_eq(prstm_stream_close(s, NULL), 0, "%s", prstm_stream_error(s));
  cr_assert_eq(prstm_engine_state(e, NULL)[1], 5);
  cr_assert_eq(prstm_stream_verify(s, &rep), PRSTM_EINVAL, "a stream without verify recorded nothing");
  cr_assert(strstr(prstm_stream_error(s), "without verify") != NULL, "%s", prstm_stream_error(s));
  prstm_batch_destroy(wide);
  prstm_batch_destroy(b);
  destroy_stream_and_engine(s, e);
}

/* A stream given up without close keeps what already ran and frees the
 * engine for other runs. */
Test(stream_cpu, destroy_without_close_frees_the_engine) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = open_stream(e);
  prstm_batch *b = new_batch();
  add(b, BANK_DEPOSIT, 2, 9, 0);
  submit_ok(s, b);
  prstm_stream_destroy(s);
  cr_assert_eq(prstm_engine_state(e, NULL)[2], 9);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  cr_assert_eq(prstm_engine_state(e, NULL)[2], 18);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

/* An empty stream closes with zero totals, and an empty batch is done at once. */
Test(stream_cpu, empty_stream_and_empty_batch) {
  prstm_word words[4] = {0};
  prstm_engine *e = open_engine(PRSTM_BACKEND_CPU, words, 4);
  prstm_stream *s = open_stream(e);
  done_log log = {0};
  prstm_stream_set_done(s, on_done, &log);
  prstm_batch *empty = new_batch();
  submit_ok(s, empty);
  cr_assert_eq(log.count, 1);
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.batches, 1);
  cr_assert_eq(r.transactions, 0);
  cr_assert_eq(r.runs, 0);
  prstm_batch_destroy(empty);
  destroy_stream_and_engine(s, e);
}

/* ---- verified chunks and streams: one commit order across units ---- */

/* The options of a verified engine with the given chunk size. */
static prstm_engine *open_verified_engine(prstm_backend backend, uint32_t threads, const prstm_word *words,
                                          uint64_t nwords, uint64_t chunk_rows) {
  prstm_options opt;
  prstm_options_init(&opt);
  opt.chunk_rows = chunk_rows;
  opt.backend = backend;
  opt.threads = threads;
  opt.verify = 1;
  opt.watchdog_s = 120;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, bank(), &opt), 0);
  cr_assert_eq(prstm_engine_set_state(e, words, nwords), 0, "%s", prstm_engine_error(e));
  return e;
}

/* Semantic pairs whose outcome depends on the order of execution: on 1,000
 * rows over 16 empty accounts, withdrawals, deposits and transfers of
 * random amounts, so that which withdrawals end funded depends on which
 * deposits and transfers a chunk saw before them. */
static prstm_batch *order_dependent_batch(uint64_t n) {
  prstm_batch *b = new_batch();
  uint64_t seed = 12345;
  for (uint64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = seed >> 33;
    switch (r % 3) {
      case 0:
        add(b, BANK_WITHDRAW, r % 16, 1 + (r >> 8) % 40, 0);
        break;
      case 1:
        add(b, BANK_DEPOSIT, r % 16, 1 + (r >> 8) % 30, 0);
        break;
      default:
        add(b, BANK_TRANSFER, r % 16, (r >> 4) % 16, 1 + (r >> 8) % 20);
        break;
    }
  }
  return b;
}

/* A chunked run of such a batch, at chunk sizes that split it unevenly, is
 * certified by its serial replay across the chunks: serializable, and every
 * abandoned row blocked on the final state (nothing left could fund it). */
static void chunked_order_dependent_runs_are_certified(prstm_backend backend, uint32_t threads) {
  need_backend(backend);
  const uint64_t sizes[] = {0, 1, 37, 300, 999};
  uint64_t abandoned_somewhere = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    prstm_word words[16] = {0};
    prstm_engine *e = open_verified_engine(backend, threads, words, 16, sizes[k]);
    prstm_batch *b = order_dependent_batch(1000);
    prstm_results r;
    cr_assert_eq(prstm_engine_run(e, b, &r), 0, "chunk %llu: %s", (unsigned long long)sizes[k], prstm_engine_error(e));
    if (sizes[k] > 1)
      cr_assert(strstr(r.device, "chunked") != NULL, "chunk %llu: %s", (unsigned long long)sizes[k], r.device);
    prstm_verify_report rep;
    cr_assert_eq(prstm_engine_verify(e, b, &rep), 0, "%s", prstm_engine_error(e));
    cr_assert(rep.ok, "chunk %llu: %s", (unsigned long long)sizes[k], rep.message);
    cr_assert_eq(rep.replayed, r.committed + r.failed);
    cr_assert_eq(rep.checked_blocked, r.abandoned);
    cr_assert_eq(r.committed + r.abandoned + r.failed, 1000);
    abandoned_somewhere += r.abandoned;
    int ok = 0;
    char msg[512];
    cr_assert_eq(prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg), 0);
    cr_assert(ok, "chunk %llu: bank invariant: %s", (unsigned long long)sizes[k], msg);
    prstm_batch_destroy(b);
    prstm_engine_destroy(e);
  }
  cr_assert_gt(abandoned_somewhere, 0, "the batch must leave some withdrawal unfunded");
}

Test(stream_cpu, chunked_order_dependent_runs_are_certified_on_one_thread) {
  chunked_order_dependent_runs_are_certified(PRSTM_BACKEND_CPU, 1);
}
Test(stream_cpu, chunked_order_dependent_runs_are_certified_on_many_threads) {
  chunked_order_dependent_runs_are_certified(PRSTM_BACKEND_CPU, CPU_THREADS);
}
Test(stream_gpu, chunked_order_dependent_runs_are_certified) {
  chunked_order_dependent_runs_are_certified(PRSTM_BACKEND_GPU, GPU_THREADS);
}

/* Units of a pageable batch large enough for the stream's copying threads
 * (5,000 rows of 25 bytes; a host of four cores or more has them, and
 * test_nvtx sees those fills) are filled while the unit before them launches,
 * their carried rows taken from the queue as it stands then. The run must
 * still be certified: serializable across the units, every abandoned row
 * blocked on the final state, and the money conserved; and a deposit of
 * 2^32 + 1 in a later unit must arrive whole (its unit staged wide again).
 */
Test(stream_gpu, units_filled_ahead_are_certified) {
  need_backend(PRSTM_BACKEND_GPU);
  enum { ROWS = 40000, WIDE_ROW = 27000, ALONE = 16 };
  prstm_word words[ALONE + 1] = {0};
  prstm_engine *e = open_verified_engine(PRSTM_BACKEND_GPU, GPU_THREADS, words, ALONE + 1, 5000);
  /* Warmed up, the stream carves every slot's buffers out of the engine's
   * pinned chunks at the most a unit can need, so no slot must grow first
   * and every unit after the first is filled ahead. */
  cr_assert_eq(prstm_engine_warm_up(e), 0, "%s", prstm_engine_error(e));
  prstm_batch *b = order_dependent_batch(ROWS);
  /* The other rows use accounts 0 to 15 only. A wide batch, whose units
   * narrow what fits. */
  cr_assert_eq(txtable_widen(b), 0);
  b->type[WIDE_ROW] = BANK_DEPOSIT;
  ((uint64_t *)b->args)[WIDE_ROW] = ALONE;
  ((uint64_t *)b->args)[b->cap + WIDE_ROW] = (1ull << 32) + 1;
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  cr_assert(strstr(r.device, "chunked") != NULL, "%s", r.device);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(e, b, &rep), 0, "%s", prstm_engine_error(e));
  cr_assert(rep.ok, "%s", rep.message);
  cr_assert_eq(rep.replayed, r.committed + r.failed);
  cr_assert_eq(rep.checked_blocked, r.abandoned);
  cr_assert_eq(r.committed + r.abandoned + r.failed, ROWS);
  cr_assert_gt(r.abandoned, 0, "the batch must leave some withdrawal unfunded");
  cr_assert_eq(status_of(b, WIDE_ROW, NULL), PRSTM_COMMITTED);
  int ok = 0;
  char msg[512];
  cr_assert_eq(prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg), 0);
  cr_assert(ok, "bank invariant: %s", msg);
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  cr_assert_eq(w[ALONE], (1ull << 32) + 1, "the deposit of 2^32 + 1 arrived as %llu", (unsigned long long)w[ALONE]);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}

/* A verified stream of order-dependent batches in small units: one commit
 * order spans the batches and the units, and the certificate replays it
 * from the state at open, after the caller has emptied every batch. */
static void verified_stream_is_certified(prstm_backend backend) {
  need_backend(backend);
  prstm_word words[16] = {0};
  prstm_engine *e =
      open_verified_engine(backend, backend == PRSTM_BACKEND_GPU ? GPU_THREADS : CPU_THREADS, words, 16, 64);
  prstm_stream *s = open_stream(e);
  prstm_batch *batches[5];
  for (int i = 0; i < 5; i++) {
    batches[i] = order_dependent_batch(150 + 70 * (uint64_t)i);
    submit_ok(s, batches[i]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  /* The certificate checks what the stream recorded, not the batches. */
  for (int i = 0; i < 5; i++) cr_assert_eq(prstm_batch_clear(batches[i]), 0);
  prstm_verify_report rep;
  cr_assert_eq(prstm_stream_verify(s, &rep), 0, "%s", prstm_stream_error(s));
  cr_assert(rep.ok, "%s", rep.message);
  cr_assert_eq(rep.replayed, r.committed + r.failed);
  cr_assert_eq(rep.checked_blocked, r.abandoned);
  cr_assert_gt(r.carried, 0, "some withdrawal waited for a later unit");
  cr_assert_gt(r.runs, 5, "the batches ran in units of 64 rows");
  for (int i = 0; i < 5; i++) prstm_batch_destroy(batches[i]);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, verified_stream_is_certified) { verified_stream_is_certified(PRSTM_BACKEND_CPU); }
Test(stream_gpu, verified_stream_is_certified) { verified_stream_is_certified(PRSTM_BACKEND_GPU); }

/* A warmed-up engine holds two pinned chunks, and a GPU stream of small
 * units carves its slots' pinned buffers (staging, readback, zeros) out of
 * them instead of allocating its own. Two verified streams in turn on one
 * such engine, with carried rows and balance reads (results), are each
 * certified, and each reads its balances back right: the second finds the
 * chunks as the first left them, the state having come back through them
 * after the first's last unit. */
Test(stream_gpu, a_warmed_engine_lends_its_pinned_chunks_to_each_stream) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_word words[16] = {0};
  prstm_engine *e = open_verified_engine(PRSTM_BACKEND_GPU, 0, words, 16, 64);
  cr_assert_eq(prstm_engine_warm_up(e), 0, "the engine did not warm up");
  for (int round = 0; round < 2; round++) {
    prstm_stream *s = open_stream(e);
    prstm_batch *batches[5];
    for (int i = 0; i < 5; i++) {
      batches[i] = order_dependent_batch(150 + 70 * (uint64_t)i + (uint64_t)round);
      /* A read of every account's balance after the batch's rows. */
      for (int a = 0; a < 16; a++) add(batches[i], BANK_BALANCE, (prstm_word)a, 0, 0);
      submit_ok(s, batches[i]);
    }
    prstm_stream_results r;
    close_ok(s, &r);
    prstm_verify_report rep;
    cr_assert_eq(prstm_stream_verify(s, &rep), 0, "%s", prstm_stream_error(s));
    cr_assert(rep.ok, "stream %d: %s", round, rep.message);
    cr_assert_eq(rep.replayed, r.committed + r.failed);
    cr_assert_gt(r.carried, 0, "some withdrawal waited for a later unit");
    cr_assert_gt(r.runs, 5, "the batches ran in units of 64 rows");
    /* A balance read is committed with the balance it read, which the
     * certificate checked against the replay; each is at most the money. */
    uint64_t reads = 0, money = total_money(e);
    for (int i = 0; i < 5; i++)
      for (uint64_t row = prstm_batch_size(batches[i]) - 16; row < prstm_batch_size(batches[i]); row++) {
        prstm_word value = 0;
        prstm_status st;
        cr_assert_eq(prstm_batch_outcome(batches[i], row, &st, NULL, &value), 0);
        if (st != PRSTM_COMMITTED) continue;
        reads++;
        cr_assert_leq(value, money, "stream %d: a balance of %llu read, more than all the money", round,
                      (unsigned long long)value);
      }
    cr_assert_eq(reads, 5 * 16, "stream %d: every balance read commits", round);
    for (int i = 0; i < 5; i++) prstm_batch_destroy(batches[i]);
    prstm_stream_destroy(s);
  }
  prstm_engine_destroy(e);
}

/* With the default thread count a unit of a few hundred rows takes a few
 * hundred threads, and the GPU executes it beside the other slot's unit.
 * Their commits interleave on the same accounts, so their numbers come
 * from one counter: a verified stream of such units of contended transfers
 * is certified, and conserves the money. */
Test(stream_gpu, units_that_execute_at_once_share_one_commit_order) {
  need_backend(PRSTM_BACKEND_GPU);
  enum { ACCOUNTS = 64, BATCHES = 8, ROWS = 4096 };
  prstm_word words[ACCOUNTS];
  for (int a = 0; a < ACCOUNTS; a++) words[a] = 1000;
  prstm_engine *e = open_verified_engine(PRSTM_BACKEND_GPU, 0, words, ACCOUNTS, 512);
  prstm_stream *s = open_stream(e);
  prstm_batch *batches[BATCHES];
  uint64_t seed = 99;
  for (int i = 0; i < BATCHES; i++) {
    batches[i] = new_batch();
    for (int k = 0; k < ROWS; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t r = seed >> 33;
      add(batches[i], BANK_TRANSFER, r % ACCOUNTS, (r >> 6) % ACCOUNTS, 1 + (r >> 12) % 5);
    }
    submit_ok(s, batches[i]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_gt(r.runs, 2 * BATCHES, "the batches ran in units of 512 rows");
  prstm_verify_report rep;
  cr_assert_eq(prstm_stream_verify(s, &rep), 0, "%s", prstm_stream_error(s));
  cr_assert(rep.ok, "%s", rep.message);
  cr_assert_eq(rep.replayed, r.committed + r.failed);
  cr_assert_eq(total_money(e), (uint64_t)ACCOUNTS * 1000);
  for (int i = 0; i < BATCHES; i++) prstm_batch_destroy(batches[i]);
  destroy_stream_and_engine(s, e);
}

/* Transfers among `accounts` accounts in a stream of a warmed-up engine
 * (which holds its pinned chunks), every other one into the state's last
 * tenth and each batch's first into its last word, leave the state the
 * serial replay leaves, every word of it, and
 * the money where it was: the state went up at the open and came back at
 * the close through the chunks. */
static void state_comes_back_whole(uint64_t accounts) {
  need_backend(PRSTM_BACKEND_GPU);
  enum { BATCHES = 6, ROWS = 20000 };
  prstm_word *words = malloc(accounts * sizeof *words);
  cr_assert_not_null(words);
  uint64_t money = 0;
  for (uint64_t a = 0; a < accounts; a++) money += words[a] = 1000 + a % 7;
  prstm_engine *e = open_verified_engine(PRSTM_BACKEND_GPU, 0, words, accounts, 10000);
  free(words);
  cr_assert_eq(prstm_engine_warm_up(e), 0, "the engine did not warm up");
  prstm_stream *s = open_stream(e);
  prstm_batch *batches[BATCHES];
  uint64_t seed = 7;
  for (int i = 0; i < BATCHES; i++) {
    batches[i] = new_batch();
    for (int k = 0; k < ROWS; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t r = seed >> 20;
      /* Each batch's first transfer pays the state's last word, so that a
       * copy that drops the end of the state is seen. */
      const uint64_t to = k == 0 ? accounts - 1 : k % 2 ? accounts - 1 - r % (accounts / 10) : (r >> 7) % accounts;
      add(batches[i], BANK_TRANSFER, r % accounts, to, 1 + r % 5);
    }
    submit_ok(s, batches[i]);
  }
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(r.committed + r.failed, (uint64_t)BATCHES * ROWS);
  prstm_verify_report rep;
  cr_assert_eq(prstm_stream_verify(s, &rep), 0, "%s", prstm_stream_error(s));
  cr_assert(rep.ok, "%s", rep.message);
  cr_assert_eq(total_money(e), money);
  for (int i = 0; i < BATCHES; i++) prstm_batch_destroy(batches[i]);
  destroy_stream_and_engine(s, e);
}

/* 6,000,000 accounts (48 MB): larger than a chunk, in pieces, the last
 * transfers past the first chunk. */
Test(stream_gpu, a_state_larger_than_a_pinned_chunk_comes_back_whole, .timeout = 120) {
  state_comes_back_whole(6000000);
}

/* 1,000,000 accounts (8 MB): smaller than a chunk, in four pieces of 2
 * MiB, which the chunks' threads fill and empty while the link takes the
 * piece before. */
Test(stream_gpu, a_state_smaller_than_a_pinned_chunk_comes_back_whole, .timeout = 120) {
  state_comes_back_whole(1000000);
}

/* Eight withdrawals from eight empty accounts in units of 4, then a batch
 * with the deposit that funds the first. The deposit's unit carries four
 * other withdrawals, so the funded one is still queued at the close: the
 * close must run it (it commits) before abandoning anything. */
static void close_runs_the_carried_rows_before_abandoning(prstm_backend backend) {
  need_backend(backend);
  prstm_word words[8] = {0};
  prstm_engine *e =
      open_verified_engine(backend, backend == PRSTM_BACKEND_GPU ? GPU_THREADS : CPU_THREADS, words, 8, 4);
  prstm_stream *s = open_stream(e);
  prstm_batch *withdrawals = new_batch(), *deposit = new_batch();
  for (prstm_word a = 0; a < 8; a++) add(withdrawals, BANK_WITHDRAW, a, 5, 0);
  add(deposit, BANK_DEPOSIT, 0, 5, 0);
  submit_ok(s, withdrawals);
  submit_ok(s, deposit);
  prstm_stream_results r;
  close_ok(s, &r);
  cr_assert_eq(status_of(withdrawals, 0, NULL), PRSTM_COMMITTED, "the funded withdrawal must commit at the close");
  for (uint64_t i = 1; i < 8; i++) cr_assert_eq(status_of(withdrawals, i, NULL), PRSTM_ABANDONED);
  cr_assert_eq(r.committed, 2);
  cr_assert_eq(r.abandoned, 7);
  prstm_verify_report rep;
  cr_assert_eq(prstm_stream_verify(s, &rep), 0, "%s", prstm_stream_error(s));
  cr_assert(rep.ok, "%s", rep.message);
  prstm_batch_destroy(withdrawals);
  prstm_batch_destroy(deposit);
  destroy_stream_and_engine(s, e);
}

Test(stream_cpu, close_runs_the_carried_rows_before_abandoning) {
  close_runs_the_carried_rows_before_abandoning(PRSTM_BACKEND_CPU);
}
Test(stream_gpu, close_runs_the_carried_rows_before_abandoning) {
  close_runs_the_carried_rows_before_abandoning(PRSTM_BACKEND_GPU);
}

/* ---- every workload, chunked at awkward sizes, certified ---- */

/* After each round of run_config_chunked: chunked where the batch is larger
 * than a chunk, and certified by its replay. */
typedef struct chunk_check {
  const char *name;
  uint64_t chunk_rows;
  prstm_engine *e;
} chunk_check;

static int chunked_round_verified(unsigned round, prstm_batch *b, const prstm_results *r, void *user) {
  const chunk_check *k = user;
  if (prstm_batch_size(b) > k->chunk_rows)
    cr_assert(strstr(r->device, "chunked") != NULL, "%s round %u: %s", k->name, round, r->device);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(k->e, b, &rep), 0, "%s", prstm_engine_error(k->e));
  cr_assert(rep.ok, "%s round %u, chunks of %llu: %s", k->name, round, (unsigned long long)k->chunk_rows, rep.message);
  return 0;
}

/* Runs a config's batch and every later round of its workload on backend,
 * in chunks of chunk_rows, each round verified against its serial replay and
 * the workload's invariant checked at the end. Returns the rows committed. */
static uint64_t run_config_chunked(const char *name, prstm_backend backend, uint32_t threads, uint64_t chunk_rows) {
  char path[1024], err[512] = "";
  snprintf(path, sizeof path, "%s/stress/%s", test_data_dir(), name);
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(path, &cfg, err, sizeof err), 0, "%s", err);
  cfg.options.backend = backend;
  cfg.options.threads = threads;
  cfg.options.chunk_rows = chunk_rows;
  cfg.options.verify = 1;
  cfg.options.watchdog_s = 120;
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_engine_create(&e, cfg.workload, &cfg.options), 0);
  cr_assert_eq(prstm_engine_init_state(e, &cfg.state), 0, "%s", prstm_engine_error(e));
  uint64_t nwords = 0;
  prstm_engine_state(e, &nwords);
  cr_assert_eq(prstm_batch_create(&b, cfg.workload), 0);
  cr_assert_eq(prstm_config_load_batch(&cfg, nwords, b, err, sizeof err), 0, "%s", err);
  chunk_check k = {name, chunk_rows, e};
  prstm_batch *last = b;
  prstm_results total;
  cr_assert_eq(prstm_engine_run_rounds(e, &last, chunked_round_verified, &k, &total, NULL), 0, "%s, chunks of %llu: %s",
               name, (unsigned long long)chunk_rows, prstm_engine_error(e));
  if (last != b) {
    prstm_batch_destroy(b);
    b = last;
  }
  const uint64_t committed = total.committed;
  int ok = 0;
  char msg[512];
  cr_assert_eq(prstm_engine_check_invariant(e, b, &ok, msg, sizeof msg), 0, "%s", msg);
  cr_assert(ok, "%s, chunks of %llu: invariant: %s", name, (unsigned long long)chunk_rows, msg);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
  prstm_config_free(&cfg);
  return committed;
}

/* One config of each workload (the skiplist's claims node slots by
 * prstm_row), chunked at sizes that divide nothing evenly. */
static const char *const every_workload[] = {"tiny-bank-coverage-8.json",    "multi-account-transfers.json",
                                             "vacation-sold-out-pairs.json", "kmeans-coverage-4.json",
                                             "skiplist-64-threads.json",     "graph-64-threads.json"};

static void every_workload_chunked_is_certified(prstm_backend backend, uint32_t threads) {
  need_backend(backend);
  const uint64_t sizes[] = {97, 1009, 4099};
  for (size_t w = 0; w < sizeof every_workload / sizeof every_workload[0]; w++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      run_config_chunked(every_workload[w], backend, threads, sizes[k]);
}

Test(stream_cpu, every_workload_chunked_at_awkward_sizes_is_certified, .timeout = 600) {
  every_workload_chunked_is_certified(PRSTM_BACKEND_CPU, 4);
}
Test(stream_gpu, every_workload_chunked_at_awkward_sizes_is_certified, .timeout = 600) {
  every_workload_chunked_is_certified(PRSTM_BACKEND_GPU, GPU_THREADS);
}

/* A batch whose table does not fit the GPU's memory (capped here by
 * PRSTM_GPU_MEMORY_LIMIT) runs in chunks that do, and a verified one is
 * verified across them. */
Test(stream_gpu, batch_too_large_for_the_gpu_runs_in_chunks_and_is_verified) {
  need_backend(PRSTM_BACKEND_GPU);
  prstm_word words[DET_RICH + DET_POOR];
  deterministic_state(words);
  uint64_t unfunded = 0;
  prstm_batch *b = deterministic_batch(200000, &unfunded);
  cr_assert_eq(setenv("PRSTM_GPU_MEMORY_LIMIT", "2000000", 1), 0);
  prstm_engine *e = open_verified_engine(PRSTM_BACKEND_GPU, GPU_THREADS, words, DET_RICH + DET_POOR, 0);
  prstm_results r;
  int rc = prstm_engine_run(e, b, &r);
  unsetenv("PRSTM_GPU_MEMORY_LIMIT");
  cr_assert_eq(rc, 0, "%s", prstm_engine_error(e));
  cr_assert(strstr(r.device, "chunked") != NULL, "a table of 200,000 rows fits in 2 MB? %s", r.device);
  cr_assert_eq(r.abandoned, unfunded);
  prstm_verify_report rep;
  cr_assert_eq(prstm_engine_verify(e, b, &rep), 0, "%s", prstm_engine_error(e));
  cr_assert(rep.ok, "%s", rep.message);
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
}
