/* test_engine.c: the engine handle: backend choice and its fallback, refused runs, the GPU thread count a worker variant asks for, the rounds driver, the host's parallel copy and its pool of copying threads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parallel.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_bank_run.h"

Test(engine, gpu_backend_without_gpu_is_a_clear_error) {
  char why[256];
  if (prstm_gpu_available(prstm_workload_find("bank"), why, sizeof why))
    cr_skip_test("a GPU is usable here; the no-GPU path cannot be exercised");
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_GPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 4, 0);
  add(&r, "deposit", 0, 1, 0);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), PRSTM_ENOGPU);
  cr_assert(strstr(prstm_engine_error(r.engine), "no GPU is usable") != NULL, "%s", prstm_engine_error(r.engine));
  run_close(&r);
}

Test(engine, auto_backend_falls_back_to_cpu_with_a_reason) {
  char why[256];
  if (prstm_gpu_available(prstm_workload_find("bank"), why, sizeof why))
    cr_skip_test("a GPU is usable here; auto picks it");
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_AUTO, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 4, 0);
  add(&r, "deposit", 0, 1, 0);
  run_exec(&r);
  cr_assert_eq(r.res.backend, PRSTM_BACKEND_CPU);
  cr_assert_neq(r.res.fallback[0], 0);
  run_close(&r);
}

Test(engine, empty_batch_and_missing_state_are_refused) {
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), PRSTM_EINVAL, "no state yet");
  run_state(&r, 4, 0);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), PRSTM_ECONFIG);
  cr_assert(strstr(prstm_engine_error(r.engine), "empty") != NULL);
  run_close(&r);
}

/* A descriptor whose uses_add is none of PRSTM_ADDS_* is refused at
 * creation, before any lock array is sized by it. */
Test(engine, an_unknown_uses_add_is_refused) {
  prstm_workload wl = *prstm_workload_find("bank");
  prstm_engine *e = NULL;
  wl.uses_add = PRSTM_ADDS_UNREAD_ONLY + 1;
  cr_assert_eq(prstm_engine_create(&e, &wl, NULL), PRSTM_EINVAL);
  cr_assert_null(e);
  wl.uses_add = -1;
  cr_assert_eq(prstm_engine_create(&e, &wl, NULL), PRSTM_EINVAL);
  wl.uses_add = PRSTM_ADDS_UNREAD_ONLY;
  cr_assert_eq(prstm_engine_create(&e, &wl, NULL), 0);
  prstm_engine_destroy(e);
}

/* With the thread count left to the engine, a batch of two-account transfers
 * runs 512 threads an SM and a batch with a wider row (a multi-transfer of
 * four argument words: the next worker variant) the engine's 256. The SM
 * count is read from the run's device line, "NAME (S SMs, T threads)". The
 * transfers spread over 8 million accounts: on hot words the engine keeps
 * fewer in flight (test_deltas.c). */
Test(engine_gpu, default_threads_are_the_worker_variants_choice) {
  need_backend(PRSTM_BACKEND_GPU);
  uint32_t threads[2] = {0, 0};
  unsigned sms = 0;
  for (int wide = 0; wide < 2; wide++) {
    bank_run r;
    memset(&r, 0, sizeof r);
    prstm_options opt;
    test_options(&opt, PRSTM_BACKEND_GPU, 0, 1);
    opt.threads = 0;
    r.wl = prstm_workload_find("bank");
    test_open(r.wl, &opt, &r.engine, &r.batch);
    const prstm_word accounts = 8000000;
    run_state(&r, accounts, 1000);
    /* More rows than the default threads of any GPU up to 390 SMs: a batch
     * with fewer rows runs on fewer threads (below). */
    for (prstm_word i = 0; i < 200000; i++) add(&r, "transfer", i * 7919 % accounts, (i * 7919 + 1) % accounts, 1);
    if (wide) {
      prstm_word multi[4] = {5, 2, 1, 6}; /* to 5, amount 2, one source: 6 */
      cr_assert_eq(prstm_batch_append_named(r.batch, "transfer_multi", multi, 4), 0);
    }
    run_exec(&r);
    cr_assert_eq(r.res.backend, PRSTM_BACKEND_GPU);
    const char *p = strrchr(r.res.device, '(');
    cr_assert(p && sscanf(p, "(%u SMs", &sms) == 1 && sms > 0, "no SM count in '%s'", r.res.device);
    threads[wide] = r.res.threads;
    run_close(&r);
  }
  cr_assert_eq(threads[0], 512u * sms, "transfers: 512 an SM of %u SMs, ran %u threads", sms, threads[0]);
  cr_assert_eq(threads[1], 256u * sms, "a wider row: 256 an SM of %u SMs, ran %u threads", sms, threads[1]);
}

/* A batch with fewer rows than the default threads runs on its rows
 * rounded up to a warp: a thread past the last row would only count itself
 * done. A thread count that was given is kept. */
Test(engine_gpu, small_batch_runs_on_as_many_threads_as_rows) {
  need_backend(PRSTM_BACKEND_GPU);
  const uint32_t given[2] = {0, 4096}, want[2] = {1024, 4096};
  for (int k = 0; k < 2; k++) {
    bank_run r;
    memset(&r, 0, sizeof r);
    prstm_options opt;
    test_options(&opt, PRSTM_BACKEND_GPU, 0, 1);
    opt.threads = given[k];
    r.wl = prstm_workload_find("bank");
    test_open(r.wl, &opt, &r.engine, &r.batch);
    const prstm_word accounts = 1000000;
    run_state(&r, accounts, 1000);
    for (prstm_word i = 0; i < 1000; i++) add(&r, "transfer", i * 7919 % accounts, (i * 7919 + 1) % accounts, 1);
    run_exec(&r);
    cr_assert_eq(r.res.committed, 1000);
    cr_assert_eq(r.res.threads, want[k], "engine.threads %u: ran %u threads for 1,000 rows", given[k], r.res.threads);
    run_close(&r);
  }
}

/* ---- prstm_engine_run_rounds ---- */

typedef struct rounds_seen {
  unsigned calls, stop_at;
  uint64_t transactions;
} rounds_seen;

static int count_round(unsigned round, prstm_batch *batch, const prstm_results *res, void *user) {
  rounds_seen *r = user;
  cr_assert_eq(round, r->calls, "rounds are reported in order");
  cr_assert_eq(res->transactions, prstm_batch_size(batch));
  r->calls++;
  r->transactions += res->transactions;
  return r->stop_at && r->calls == r->stop_at ? 42 : 0;
}

/* A single-round workload runs once, and the caller's batch comes back. */
Test(rounds, a_single_round_workload_runs_once_and_keeps_the_callers_batch) {
  bank_run r;
  run_open(&r, prstm_workload_find("bank"), PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100);
  run_state(&r, 4, 10);
  for (int i = 0; i < 50; i++) add(&r, "transfer", (prstm_word)i % 4, (prstm_word)(i + 1) % 4, 1);
  prstm_batch *b = r.batch;
  prstm_results total;
  unsigned rounds = 0;
  rounds_seen seen = {0, 0, 0};
  cr_assert_eq(prstm_engine_run_rounds(r.engine, &b, count_round, &seen, &total, &rounds), 0, "%s",
               prstm_engine_error(r.engine));
  cr_assert_eq(b, r.batch);
  cr_assert_eq(rounds, 1);
  cr_assert_eq(seen.calls, 1);
  cr_assert_eq(total.committed, 50);
  cr_assert_gt(total.wall_s, 0);
  cr_assert_geq(total.wall_s, total.execute_s);
  run_close(&r);
}

/* Opens a CPU engine on a random graph of the given size with its round-0
 * batch generated into *first. */
static void open_graph(uint32_t threads, double vertices, double edges, prstm_engine **e, prstm_batch **first) {
  const prstm_workload *wl = prstm_workload_find("graph");
  prstm_options opt;
  test_options(&opt, PRSTM_BACKEND_CPU, threads, 1);
  test_open(wl, &opt, e, first);
  prstm_state_spec s;
  prstm_state_spec_init(wl, &s);
  test_set_knob(wl, s.params, "vertices", vertices);
  test_set_knob(wl, s.params, "edges", edges);
  test_set_knob(wl, s.params, "max_degree", 8);
  cr_assert_eq(prstm_engine_init_state(*e, &s), 0, "%s", prstm_engine_error(*e));
  prstm_generate_spec g;
  prstm_generate_spec_init(wl, &g);
  char err[256] = "";
  cr_assert_eq(wl->generate(&g, &s, *first, err, sizeof err), 0, "%s", err);
}

/* A multi-round workload (graph) runs round after round until its next
 * round is empty; the totals add every round's, and the last round's batch
 * comes back in place of the caller's, which stays the caller's. */
Test(rounds, a_multi_round_workload_runs_until_its_next_round_is_empty) {
  prstm_engine *e = NULL;
  prstm_batch *first = NULL;
  open_graph(8, 500, 2000, &e, &first);
  prstm_batch *last = first;
  prstm_results total;
  unsigned rounds = 0;
  rounds_seen seen = {0, 0, 0};
  cr_assert_eq(prstm_engine_run_rounds(e, &last, count_round, &seen, &total, &rounds), 0, "%s", prstm_engine_error(e));
  cr_assert_geq(rounds, 2, "a random graph takes a frontier round after round 0");
  cr_assert_eq(seen.calls, rounds);
  cr_assert_eq(total.transactions, seen.transactions, "the totals add every round");
  cr_assert_neq(last, first, "the last round's batch is the driver's");
  cr_assert_eq(prstm_batch_size(first), 500, "the caller's batch is left as it ran");
  prstm_batch_destroy(last);
  test_close(e, first);
}

/* A non-zero code from the callback stops the rounds and is returned. */
Test(rounds, the_callbacks_code_stops_the_rounds_and_is_returned) {
  prstm_engine *e = NULL;
  prstm_batch *first = NULL;
  open_graph(4, 300, 1200, &e, &first);
  prstm_batch *last = first;
  prstm_results total;
  unsigned rounds = 0;
  rounds_seen seen = {0, 1, 0};
  cr_assert_eq(prstm_engine_run_rounds(e, &last, count_round, &seen, &total, &rounds), 42);
  cr_assert_eq(rounds, 1);
  cr_assert_eq(last, first, "no later round was made");
  test_close(e, first);
}

/* The CPU backend refuses a thread count far beyond the cores before it
 * starts one thread: the run returns PRSTM_EINVAL and names the limit. */
Test(engine, cpu_threads_beyond_the_limit_are_refused) {
  bank_run r;
  run_open_threads(&r, prstm_workload_find("bank"), PRSTM_BACKEND_CPU, 1, PRSTM_SEMANTIC_POSTPONE, 100,
                   prstm_cpu_threads_max() + 1);
  run_state(&r, 4, 10);
  add(&r, "deposit", 0, 1, 0);
  cr_assert_eq(prstm_engine_run(r.engine, r.batch, &r.res), PRSTM_EINVAL);
  cr_assert(strstr(prstm_engine_error(r.engine), "at most") != NULL, "%s", prstm_engine_error(r.engine));
  run_close(&r);
}

/* Lays out pieces of the given lengths, from consecutive bytes of src to
 * places in dst each after a guard byte, piece j a zero-fill where (j +
 * shift) % every == every - 1, and writes into want what dst must hold
 * after the copy. Both start as 0xEE over `span` bytes, so that a byte
 * written out of place shows. */
static void plan_copy(engine_copy *pieces, const size_t *lens, int npieces, const unsigned char *src,
                      unsigned char *dst, unsigned char *want, size_t span, unsigned every, unsigned shift) {
  memset(dst, 0xEE, span);
  memset(want, 0xEE, span);
  size_t from = 0, to = 1;
  for (int j = 0; j < npieces; j++) {
    const int zero = ((unsigned)j + shift) % every == every - 1;
    pieces[j] = (engine_copy){dst + to, zero ? NULL : src + from, lens[j], NULL, 0};
    if (zero)
      memset(want + to, 0, lens[j]);
    else
      memcpy(want + to, src + from, lens[j]);
    from += lens[j];
    to += lens[j] + 2;
  }
}

/* Pieces of awkward lengths (empty ones, zero-fills, one longer than all the
 * rest together) copied in every number of parts: each destination byte is
 * written once, from its own source byte, and nothing around it is touched.
 * The GPU backend's staged copies and a stream's unit staging go this way. */
Test(parallel, copy_lands_every_piece_exactly_in_any_number_of_parts) {
  enum { NPIECES = 9 };
  const size_t lens[NPIECES] = {0, 1, 7, 4096, 0, 3, 1 << 16, 65537, 13};
  size_t total = 0;
  for (int j = 0; j < NPIECES; j++) total += lens[j];
  unsigned char *src = malloc(total), *dst = malloc(total + 2 * NPIECES), *want = malloc(total + 2 * NPIECES);
  cr_assert(src && dst && want);
  for (size_t i = 0; i < total; i++) src[i] = (unsigned char)(i * 131 + 7);
  const unsigned parts_to_try[] = {1, 2, 3, 7, 16, ENGINE_MAX_PARTS};
  for (unsigned t = 0; t < sizeof parts_to_try / sizeof *parts_to_try; t++) {
    engine_copy pieces[NPIECES];
    plan_copy(pieces, lens, NPIECES, src, dst, want, total + 2 * NPIECES, 3, 0);
    engine_parallel_copy(pieces, NPIECES, parts_to_try[t]);
    cr_assert(memcmp(dst, want, total + 2 * NPIECES) == 0, "the copy in %u parts differs", parts_to_try[t]);
  }
  free(src);
  free(dst);
  free(want);
}

/* Argument columns narrowed to 32 bits, in ranges that start and end
 * inside columns (as a staging chunk cuts them), in every number of parts:
 * each element lands at its place in the packed columns, nothing past the
 * range is written, and one value of 2^32 or more anywhere in the range
 * makes the call say no, whichever part meets it. The GPU backend uploads
 * a whole run's arguments this way (txtable_view's narrow_args). */
/* Prefaulting writes zeros over exactly its range, the last huge page cut
 * at the range's end, and nothing below 8 MiB. */
Test(parallel, prefault_zeroes_exactly_its_range) {
  const size_t bytes = ((size_t)9 << 20) + 12345, room = bytes + 4096;
  unsigned char *p = malloc(room);
  cr_assert(p);
  memset(p, 0xab, room);
  engine_prefault_zeroed(p, bytes);
  for (size_t i = 0; i < bytes; i += 4093) cr_assert_eq(p[i], 0, "byte %zu of the range not zeroed", i);
  cr_assert_eq(p[bytes - 1], 0, "the range's last byte not zeroed");
  for (size_t i = bytes; i < room; i++) cr_assert_eq(p[i], 0xab, "byte %zu past the range written", i);
  memset(p, 0xab, room);
  engine_prefault_zeroed(p, ((size_t)8 << 20) - 1);
  cr_assert_eq(p[0], 0xab, "a range below 8 MiB written");
  free(p);
  /* The zeroed pages a large lock array comes from use it too. */
  unsigned char *z = engine_alloc_zeroed_pages(bytes);
  cr_assert(z);
  for (size_t i = 0; i < bytes; i += 4093) cr_assert_eq(z[i], 0, "byte %zu of zeroed pages not zero", i);
  cr_assert_eq(z[bytes - 1], 0);
  free(z);
}

Test(parallel, narrow_packs_the_columns_and_refuses_a_wide_value) {
  enum { ROWS = 1000, COLS = 5, STRIDE = 1024 };
  uint64_t *src = calloc((size_t)COLS * STRIDE, sizeof *src);
  uint32_t *dst = malloc((size_t)COLS * ROWS * sizeof *dst + 64);
  cr_assert(src && dst);
  for (unsigned c = 0; c < COLS; c++)
    for (unsigned r = 0; r < ROWS; r++) src[(size_t)c * STRIDE + r] = 0xffffffffull - (c * 7919u + r * 31u);
  /* Past each column's rows, inside the stride: wide values the narrowing
   * must never read. */
  for (unsigned c = 0; c < COLS; c++) src[(size_t)c * STRIDE + ROWS] = 1ull << 40;
  const unsigned parts_to_try[] = {1, 2, 3, 7, 16, ENGINE_MAX_PARTS};
  const uint64_t ranges[][2] = {{0, COLS * ROWS}, {37, 2 * ROWS + 5}, {ROWS - 1, ROWS + 1}, {4 * ROWS, COLS * ROWS}};
  for (unsigned t = 0; t < sizeof parts_to_try / sizeof *parts_to_try; t++)
    for (unsigned k = 0; k < sizeof ranges / sizeof *ranges; k++) {
      const uint64_t from = ranges[k][0], to = ranges[k][1];
      memset(dst, 0xab, (size_t)COLS * ROWS * sizeof *dst + 64);
      cr_assert_eq(engine_parallel_narrow(dst, src, STRIDE, ROWS, from, to, parts_to_try[t]), 1,
                   "values below 2^32 refused (range %llu..%llu, %u parts)", (unsigned long long)from,
                   (unsigned long long)to, parts_to_try[t]);
      for (uint64_t i = from; i < to; i++)
        cr_assert_eq(dst[i - from], (uint32_t)src[(i / ROWS) * STRIDE + i % ROWS],
                     "element %llu (column %llu, row %llu) misplaced", (unsigned long long)i,
                     (unsigned long long)(i / ROWS), (unsigned long long)(i % ROWS));
      cr_assert_eq(dst[to - from], 0xababababu, "a word past the range was written");
    }
  /* One wide value, at the range's first element, in its middle and at its
   * last: refused in every number of parts. */
  const uint64_t wide_at[] = {0, 2 * ROWS + 17, COLS * ROWS - 1};
  for (unsigned w = 0; w < sizeof wide_at / sizeof *wide_at; w++) {
    uint64_t *v = &src[(wide_at[w] / ROWS) * STRIDE + wide_at[w] % ROWS];
    const uint64_t keep = *v;
    *v = 1ull << 32;
    for (unsigned t = 0; t < sizeof parts_to_try / sizeof *parts_to_try; t++)
      cr_assert_eq(engine_parallel_narrow(dst, src, STRIDE, ROWS, 0, COLS * ROWS, parts_to_try[t]), 0,
                   "2^32 at element %llu taken as narrow (%u parts)", (unsigned long long)wide_at[w], parts_to_try[t]);
    *v = keep;
  }
  free(src);
  free(dst);
}

/* Narrowing pieces (engine_copy's wide) among plain ones of odd lengths, as
 * a stream fills a GPU unit: a type column, then argument columns as 32-bit
 * values, one of them zero-filled. In every number of parts, and through a
 * pool of helpers, each value lands once at its place, nothing past a
 * column is written, and the flag stays clear; one value of 2^32 anywhere
 * sets it, whichever part meets it. */
static void narrow_pieces_check(unsigned parts, engine_copy_pool *pool) {
  enum { TYPE = 37, A = 1000, B = 70001, GUARD = 0xabababab };
  static uint64_t col_a[A], col_b[B];
  static unsigned char type_src[TYPE], type_dst[TYPE];
  static uint32_t dst[A + 1 + A + 1 + B + 1];
  for (unsigned i = 0; i < TYPE; i++) type_src[i] = (unsigned char)(i * 13 + 1);
  for (unsigned i = 0; i < A; i++) col_a[i] = 0xffffffffull - i * 7919u;
  for (unsigned i = 0; i < B; i++) col_b[i] = (uint64_t)i * 61417u % 0xfffffffbull;
  for (int wide_at = -1; wide_at < 3; wide_at++) {
    uint64_t *hit = wide_at == 0 ? &col_a[0] : wide_at == 1 ? &col_b[B / 2 + 3] : wide_at == 2 ? &col_b[B - 1] : NULL;
    const uint64_t keep = hit ? *hit : 0;
    if (hit) *hit = 1ull << 32;
    for (size_t i = 0; i < sizeof dst / sizeof *dst; i++) dst[i] = GUARD;
    int wide = 0;
    uint32_t *da = dst, *dz = dst + A + 1, *db = dst + 2 * A + 2;
    const engine_copy pieces[] = {{type_dst, type_src, TYPE, NULL, 0},
                                  {da, col_a, 8 * A, &wide, 0},
                                  {dz, NULL, 8 * A, &wide, 0},
                                  {db, col_b, 8 * B, &wide, 0}};
    if (pool)
      engine_copy_pool_run(pool, pieces, 4);
    else
      engine_parallel_copy(pieces, 4, parts);
    cr_assert_eq(wide, hit != NULL, "wide flag %d with a wide value at %d (%u parts, pool %d)", wide, wide_at, parts,
                 pool != NULL);
    if (hit) {
      *hit = keep;
      continue;
    }
    cr_assert(memcmp(type_dst, type_src, TYPE) == 0, "the plain piece differs (%u parts)", parts);
    for (unsigned i = 0; i < A; i++) {
      cr_assert_eq(da[i], (uint32_t)col_a[i], "value %u of the first column (%u parts)", i, parts);
      cr_assert_eq(dz[i], 0u, "value %u of the zeroed column (%u parts)", i, parts);
    }
    for (unsigned i = 0; i < B; i++) cr_assert_eq(db[i], (uint32_t)col_b[i], "value %u of the long column", i);
    cr_assert(da[A] == GUARD && dz[A] == GUARD && db[B] == GUARD, "a word past a column was written (%u parts)", parts);
  }
}

Test(parallel, narrowing_pieces_land_every_value_and_flag_a_wide_one) {
  const unsigned parts_to_try[] = {1, 2, 3, 7, 16, ENGINE_MAX_PARTS};
  for (unsigned t = 0; t < sizeof parts_to_try / sizeof *parts_to_try; t++) narrow_pieces_check(parts_to_try[t], NULL);
  engine_copy_pool *pool = engine_copy_pool_open(3);
  cr_assert_not_null(pool);
  narrow_pieces_check(4, pool);
  engine_copy_pool_close(pool);
}

/* A stream's pool of copying threads lands every piece exactly, copy after
 * copy: back to back (its helpers spinning) and after a pause longer than
 * their spin (asleep, woken by the next copy), with one helper and with
 * many. Open refuses no helpers, and a NULL pool closes as nothing. */
Test(parallel, copy_pool_lands_every_piece_exactly_copy_after_copy, .timeout = 60) {
  enum { NPIECES = 5, ROUNDS = 40 };
  const size_t lens[NPIECES] = {1, 0, 70001, 4096, 13};
  size_t total = 0;
  for (int j = 0; j < NPIECES; j++) total += lens[j];
  unsigned char *src = malloc(total), *dst = malloc(total + 2 * NPIECES), *want = malloc(total + 2 * NPIECES);
  cr_assert(src && dst && want);
  cr_assert_null(engine_copy_pool_open(0), "a pool of no helpers is no pool");
  engine_copy_pool_close(NULL);
  const unsigned helpers_to_try[] = {1, 3, 7};
  for (unsigned h = 0; h < sizeof helpers_to_try / sizeof *helpers_to_try; h++) {
    engine_copy_pool *pool = engine_copy_pool_open(helpers_to_try[h]);
    cr_assert_not_null(pool, "no pool of %u helpers", helpers_to_try[h]);
    for (unsigned round = 0; round < ROUNDS; round++) {
      for (size_t i = 0; i < total; i++) src[i] = (unsigned char)(i * 131 + 7 * round + h);
      engine_copy pieces[NPIECES];
      plan_copy(pieces, lens, NPIECES, src, dst, want, total + 2 * NPIECES, 4, round);
      if (round % 8 == 7) {
        struct timespec pause = {0, 2 * 1000 * 1000}; /* 2 ms: the helpers fall asleep */
        nanosleep(&pause, NULL);
      }
      engine_copy_pool_run(pool, pieces, NPIECES);
      cr_assert(memcmp(dst, want, total + 2 * NPIECES) == 0, "copy %u with %u helpers differs", round,
                helpers_to_try[h]);
    }
    engine_copy_pool_close(pool);
  }
  free(src);
  free(dst);
  free(want);
}

/* State knobs that keep each workload's test state small; graph and
 * kmeans size their batch from the state, the others take 3,000 rows. */
static const struct {
  const char *workload, *knob;
  double value;
} lone_small_states[] = {
    {"graph", "vertices", 2000},   {"graph", "edges", 10000}, {"kmeans", "points", 600},
    {"skiplist", "capacity", 1e5}, {"tpcc", "slots", 20000},
};

/* A run of one executing thread is alone on its state and runs without
 * locks (STM_SEMANTIC_LONE): every built-in workload's generated batch
 * commits, fails, postpones and abandons on one thread exactly as the
 * full protocol's serial replay does (adds, unread adds, tickets, private
 * writes, semantic postponements), and its invariant holds. */
static void one_thread_runs_as_its_replay(prstm_backend backend) {
  for (unsigned i = 0; prstm_workload_at(i); i++) {
    const prstm_workload *wl = prstm_workload_at(i);
    test_need_backend(wl, backend);
    prstm_options opt;
    test_options(&opt, backend, 1, 1);
    prstm_engine *e = NULL;
    prstm_batch *b = NULL;
    test_open(wl, &opt, &e, &b);
    prstm_state_spec s;
    prstm_state_spec_init(wl, &s);
    if (wl->config_keys & PRSTM_KEYS_BANK) {
      s.accounts = 64;
      s.initial_balance = 20; /* some transfers wait for money, some never get it */
    }
    int sized_by_state = 0;
    for (unsigned k = 0; k < sizeof lone_small_states / sizeof lone_small_states[0]; k++)
      if (strcmp(wl->name, lone_small_states[k].workload) == 0) {
        test_set_knob(wl, s.params, lone_small_states[k].knob, lone_small_states[k].value);
        sized_by_state |= strcmp(wl->name, "graph") == 0 || strcmp(wl->name, "kmeans") == 0;
      }
    cr_assert_eq(prstm_engine_init_state(e, &s), 0, "%s: %s", wl->name, prstm_engine_error(e));
    prstm_generate_spec g;
    prstm_generate_spec_init(wl, &g);
    if (!sized_by_state) g.transactions = 3000;
    g.seed = 11;
    if (wl->config_keys & PRSTM_KEYS_BANK) g.semantic_ratio = 0.3; /* deposits before their withdrawals */
    char err[256];
    cr_assert_eq(wl->generate(&g, &s, b, err, sizeof err), 0, "%s: %s", wl->name, err);
    prstm_results res;
    test_run_verified(e, b, &res, wl->name);
    cr_assert_eq(res.threads, 1, "%s ran on %u threads", wl->name, res.threads);
    /* A workload of rounds holds its invariant only after the last. */
    if (!wl->next_round) test_expect_invariant(wl, e, b);
    test_close(e, b);
  }
}

Test(lone, one_cpu_thread_runs_every_workload_as_its_replay) { one_thread_runs_as_its_replay(PRSTM_BACKEND_CPU); }

Test(lone_gpu, one_gpu_thread_runs_every_workload_as_its_replay) { one_thread_runs_as_its_replay(PRSTM_BACKEND_GPU); }

/* A thread alone keys its read set by lock as any thread does. In a
 * chunked run the bank's total reads every account through the STM, on the
 * pair variant's sets of two entries: with two words to a lock, its four
 * accounts are two locks and it commits, as in the replay. Keyed by word,
 * as the lone walk keys them where each word has a lock of its own, it
 * would fail for capacity. */
static void lone_reads_share_a_lock_entry(prstm_backend backend) {
  const prstm_workload *wl = prstm_workload_find("bank");
  test_need_backend(wl, backend);
  prstm_options opt;
  test_options(&opt, backend, 1, 2);
  opt.chunk_rows = 2;
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  test_open(wl, &opt, &e, &b);
  const prstm_word words[4] = {10, 20, 30, 40};
  cr_assert_eq(prstm_engine_set_state(e, words, 4), 0);
  /* Three rows in chunks of two: the total runs with the STM's sets. */
  const prstm_word deposit[2] = {3, 5}, none[1] = {0};
  cr_assert_eq(prstm_batch_append_named(b, "deposit", deposit, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "total", none, 0), 0);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", deposit, 2), 0);
  prstm_results res;
  test_run_verified(e, b, &res, "a lone total under two-word locks");
  cr_assert_eq(res.threads, 1);
  cr_assert_eq(res.snapshot_rows, 0, "the total ran through the STM");
  prstm_status st;
  unsigned reason = 0;
  prstm_word total = 0;
  cr_assert_eq(prstm_batch_outcome(b, 1, &st, &reason, &total), 0);
  cr_assert_eq(st, PRSTM_COMMITTED, "status %d, reason %u", (int)st, reason);
  /* The replay checked the sum against the total's place in the order. */
  cr_assert(total == 100 || total == 105 || total == 110, "total %llu", (unsigned long long)total);
  test_close(e, b);
}

Test(lone, one_cpu_thread_keys_its_reads_by_lock) { lone_reads_share_a_lock_entry(PRSTM_BACKEND_CPU); }

Test(lone_gpu, one_gpu_thread_keys_its_reads_by_lock) { lone_reads_share_a_lock_entry(PRSTM_BACKEND_GPU); }
