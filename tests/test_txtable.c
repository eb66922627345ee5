/* test_txtable.c: the global transaction table: blocks of rows per thread, packed statuses, appends that grow the columns, and presorting. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../workloads/workload_util.h"
#include "prstm.h"
#include "test_backend.h"
#include "test_workload.h"
#include "txtable.h"

Test(table, blocks_are_interleaved_and_cover_every_row_once) {
  uint64_t n = 1003;
  uint32_t threads = 64;
  uint64_t total = 0;
  for (uint32_t r = 0; r < threads; r++) total += txtable_block_size(n, r, threads);
  cr_assert_eq(total, n);
  cr_assert_eq(txtable_block_size(n, 0, threads), 16); /* rows 0, 64, ..., 960 */
  cr_assert_eq(txtable_block_size(n, 63, threads), 15);
  cr_assert_eq(txtable_block_size(5, 10, threads), 0);
}

Test(table, status_packs_reason_beside_the_finish_flag) {
  uint8_t s = txtable_pack_status(PRSTM_ABANDONED, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(s & TXTABLE_STATUS_MASK, PRSTM_ABANDONED);
  cr_assert_eq(s >> TXTABLE_REASON_SHIFT, PRSTM_REASON_QUIESCENT);
  cr_assert_eq(txtable_pack_status(PRSTM_PENDING, 0), 0, "a zero byte is the unset finish flag");
}

Test(table, append_grows_columns_and_keeps_earlier_rows) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  for (uint64_t i = 0; i < 5000; i++) {
    prstm_word args[1] = {i % 64};
    cr_assert_eq(prstm_batch_append(b, PROBE_INCREMENT, args, 1), 0);
  }
  prstm_word list[6] = {5, 1, 2, 3, 4, 5};
  cr_assert_eq(prstm_batch_append(b, PROBE_TOUCH, list, 6), 0);
  cr_assert_eq(prstm_batch_size(b), 5001);
  cr_assert_eq(b->ncols, 6);
  for (uint64_t i = 0; i < 5000; i++) {
    cr_assert_eq(prstm_batch_arg(b, i, 0), i % 64);
    cr_assert_eq(prstm_batch_arg(b, i, 5), 0);
  }
  cr_assert_eq(prstm_batch_arg(b, 5000, 5), 5);
  cr_assert_eq(prstm_batch_append(b, 99, list, 1), PRSTM_EINVAL);
  prstm_batch_destroy(b);
}

/* A batch keeps 32-bit columns while every value fits: a value of more than
 * 32 bits widens it once, every earlier value kept, and from then on it is
 * wide; presorting and reading a column work at either width. */
Test(table, a_batch_is_narrow_until_a_wide_value_widens_it) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  for (uint64_t i = 0; i < 3000; i++) {
    prstm_word args[2] = {i % 64, UINT32_MAX - i};
    cr_assert_eq(prstm_batch_append(b, i % 3 ? PROBE_INCREMENT : PROBE_SKEW, args, 2), 0);
  }
  cr_assert_eq(b->wide, 0, "values of 32 bits widened the batch");
  cr_assert_eq(txtable_width(b), 4);
  cr_assert_eq(prstm_batch_arg(b, 2999, 1), UINT32_MAX - 2999);
  prstm_word wide[2] = {1, (1ull << 32) | 7};
  cr_assert_eq(prstm_batch_append(b, PROBE_SKEW, wide, 2), 0);
  cr_assert_eq(b->wide, 1, "a value of 33 bits left the batch narrow");
  for (uint64_t i = 0; i < 3000; i++) {
    cr_assert_eq(prstm_batch_arg(b, i, 0), i % 64);
    cr_assert_eq(prstm_batch_arg(b, i, 1), UINT32_MAX - i, "row %llu lost its value", (unsigned long long)i);
  }
  cr_assert_eq(prstm_batch_arg(b, 3000, 1), (1ull << 32) | 7);
  prstm_word small[1] = {3};
  cr_assert_eq(prstm_batch_append(b, PROBE_INCREMENT, small, 1), 0);
  cr_assert_eq(b->wide, 1);
  cr_assert_eq(prstm_batch_column(b, 1)[3000], (1ull << 32) | 7);

  /* A narrow batch presorted, then read as a column: widened for good. */
  prstm_batch *n = NULL;
  cr_assert_eq(prstm_batch_create(&n, &test_probe_workload), 0);
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word args[1] = {1000 + i};
    cr_assert_eq(prstm_batch_append(n, i % 2 ? PROBE_INCREMENT : PROBE_SKEW, args, 1), 0);
  }
  cr_assert_eq(prstm_batch_presort(n), 0);
  const unsigned first = b->wl->types[PROBE_INCREMENT].tag > b->wl->types[PROBE_SKEW].tag ? 1 : 0;
  cr_assert_eq(prstm_batch_arg(n, 0, 0), 1000 + first, "presorted narrow columns: %llu",
               (unsigned long long)prstm_batch_arg(n, 0, 0));
  const prstm_word *col = prstm_batch_column(n, 0);
  cr_assert_eq(n->wide, 1);
  for (uint64_t i = 0; i < 100; i++) cr_assert_eq(col[i], prstm_batch_arg(n, i, 0));
  prstm_batch_destroy(n);
  prstm_batch_destroy(b);

  /* Widened up front, a batch takes a wide value without reallocating. */
  prstm_batch *p = NULL;
  cr_assert_eq(prstm_batch_create(&p, &test_probe_workload), 0);
  cr_assert_eq(prstm_batch_reserve(p, 16, 2), 0);
  cr_assert_eq(prstm_batch_widen(p), 0);
  cr_assert_eq(p->wide, 1);
  const void *columns = p->args;
  cr_assert_eq(prstm_batch_append(p, PROBE_SKEW, wide, 2), 0);
  cr_assert_eq(p->args, columns, "an append reallocated a batch widened up front");
  cr_assert_eq(prstm_batch_arg(p, 0, 1), (1ull << 32) | 7);
  cr_assert_eq(prstm_batch_widen(NULL), PRSTM_EINVAL);
  prstm_batch_destroy(p);
}

/* Columns appended at any width stay narrow where their values fit; an
 * 8-byte column with a wide value widens the batch, all values kept. A
 * window refuses a wide value, which its close passes on to the batch. */
Test(table, appended_columns_widen_the_batch_only_for_a_wide_value) {
  enum { N = 300000 }; /* several copying threads */
  uint8_t *types = calloc(N, 1);
  uint64_t *c8 = malloc(N * sizeof *c8);
  uint16_t *c2 = malloc(N * sizeof *c2);
  cr_assert(types && c8 && c2);
  for (uint64_t i = 0; i < N; i++) {
    types[i] = PROBE_SKEW;
    c8[i] = i * 7;
    c2[i] = (uint16_t)i;
  }
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  prstm_column cols[2] = {{c8, 8}, {c2, 2}};
  cr_assert_eq(prstm_batch_append_columns(b, N, types, cols, 2), 0);
  cr_assert_eq(b->wide, 0, "fitting 8-byte values widened the batch");
  c8[N - 5] = 1ull << 40;
  cr_assert_eq(prstm_batch_append_columns(b, N, types, cols, 2), 0);
  cr_assert_eq(b->wide, 1);
  cr_assert_eq(prstm_batch_size(b), 2 * N);
  for (uint64_t i = 0; i < 2 * N; i++) {
    const uint64_t k = i % N;
    const uint64_t want = i == N + N - 5 ? 1ull << 40 : k * 7;
    cr_assert_eq(prstm_batch_arg(b, i, 0), want, "row %llu", (unsigned long long)i);
    cr_assert_eq(prstm_batch_arg(b, i, 1), (uint16_t)k);
  }

  prstm_batch *d = NULL, *w = NULL;
  cr_assert_eq(prstm_batch_create(&d, &test_probe_workload), 0);
  cr_assert_eq(prstm_batch_reserve(d, 10, 1), 0);
  cr_assert_eq(txtable_window_open(d, 0, 10, &w), 0);
  prstm_word fits[1] = {5}, big[1] = {1ull << 33};
  cr_assert_eq(prstm_batch_append(w, PROBE_INCREMENT, fits, 1), 0);
  cr_assert_eq(prstm_batch_append(w, PROBE_INCREMENT, big, 1), PRSTM_ENOMEM, "a window widened its batch");
  cr_assert_eq(txtable_window_close(d, w), 1);
  cr_assert_eq(d->wants_wide, 1);
  cr_assert_eq(d->wide, 0);
  cr_assert_eq(txtable_set_rows(d, 1), 0);
  cr_assert_eq(txtable_widen(d), 0);
  cr_assert_eq(d->wants_wide, 0);
  cr_assert_eq(prstm_batch_arg(d, 0, 0), 5);
  prstm_batch_destroy(d);
  prstm_batch_destroy(b);
  free(types);
  free(c8);
  free(c2);
}

Test(table, presort_puts_higher_tags_first_and_is_stable) {
  const prstm_workload *bank = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank), 0);
  int deposit = prstm_type_find(bank, "deposit"), withdraw = prstm_type_find(bank, "withdraw");
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word args[2] = {i, i};
    cr_assert_eq(prstm_batch_append(b, (unsigned)(i % 3 == 0 ? deposit : withdraw), args, 2), 0);
  }
  cr_assert_eq(prstm_batch_presort(b), 0);
  uint64_t deposits = 34, last = 0;
  for (uint64_t i = 0; i < 100; i++) {
    cr_assert_eq((int)prstm_batch_type(b, i), i < deposits ? deposit : withdraw);
    uint64_t account = prstm_batch_arg(b, i, 0);
    if (i != deposits) cr_assert(i == 0 || account > last, "order within a tag must be kept");
    last = account;
  }
  prstm_batch_destroy(b);
}

/* A window appends into rows of a reserved batch, refuses to run past its
 * rows or to widen the batch, and hands its types to the batch it closes
 * on; the batch's rows are its own once set. */
Test(table, windows_fill_reserved_rows_of_one_batch) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  prstm_word args[3] = {7, 8, 9};
  cr_assert_eq(prstm_batch_append(b, PROBE_SKEW, args, 2), 0);
  cr_assert_eq(prstm_batch_reserve(b, 1001, 2), 0);
  prstm_batch *w[2] = {NULL, NULL};
  cr_assert_eq(txtable_window_open(b, 1, 500, &w[0]), 0);
  cr_assert_eq(txtable_window_open(b, 501, 500, &w[1]), 0);
  for (unsigned k = 2; k-- > 0;)
    for (uint64_t i = 0; i < 500; i++) {
      prstm_word a[1] = {k * 500 + i};
      cr_assert_eq(prstm_batch_append(w[k], k ? PROBE_INCREMENT : PROBE_WILD, a, 1), 0);
    }
  cr_assert_eq(prstm_batch_append(w[0], PROBE_INCREMENT, args, 1), PRSTM_ENOMEM, "a window ran past its rows");
  cr_assert_eq(prstm_batch_size(b), 1, "rows became the batch's before the windows closed");
  prstm_batch *wide = NULL;
  cr_assert_eq(txtable_window_open(b, 0, 1, &wide), 0);
  cr_assert_eq(prstm_batch_append(wide, PROBE_MOVE, args, 3), PRSTM_ENOMEM, "a window widened the batch");
  prstm_batch_destroy(wide);
  cr_assert_eq(txtable_window_close(b, w[0]), 500);
  cr_assert_eq(txtable_window_close(b, w[1]), 500);
  cr_assert_eq(txtable_set_rows(b, 1001), 0);
  cr_assert_eq(prstm_batch_size(b), 1001);
  cr_assert_eq(prstm_batch_type(b, 0), PROBE_SKEW);
  cr_assert_eq(prstm_batch_arg(b, 0, 1), 8);
  for (uint64_t i = 0; i < 1000; i++) {
    cr_assert_eq(prstm_batch_type(b, 1 + i), i < 500 ? PROBE_WILD : PROBE_INCREMENT);
    cr_assert_eq(prstm_batch_arg(b, 1 + i, 0), i);
    cr_assert_eq(prstm_batch_arg(b, 1 + i, 1), 0);
  }
  const uint64_t want = (1ull << PROBE_SKEW) | (1ull << PROBE_WILD) | (1ull << PROBE_INCREMENT);
  cr_assert_eq(b->type_mask, want, "types %llx", (unsigned long long)b->type_mask);
  cr_assert_eq(txtable_window_open(b, b->cap - 1, 2, &wide), PRSTM_EINVAL, "a window past the reserved rows");
  prstm_batch_destroy(b);
}

/* A window moved to rows apart from the ones it filled fills those, reports
 * what it filled before, and hands the types of every range to the batch
 * when it closes; a move past the reserved rows is refused. */
Test(table, a_window_moves_between_ranges_and_closes_once) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
  cr_assert_eq(prstm_batch_reserve(b, 300, 2), 0);
  prstm_batch *w = NULL;
  uint64_t filled = 99;
  cr_assert_eq(txtable_window_open(b, 0, 100, &w), 0);
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word a[1] = {i};
    cr_assert_eq(prstm_batch_append(w, PROBE_WILD, a, 1), 0);
  }
  cr_assert_eq(txtable_window_move(b, w, 200, 100, &filled), 0);
  cr_assert_eq(filled, 100);
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word a[1] = {200 + i};
    cr_assert_eq(prstm_batch_append(w, PROBE_INCREMENT, a, 1), 0);
  }
  prstm_word a[1] = {0};
  cr_assert_eq(prstm_batch_append(w, PROBE_INCREMENT, a, 1), PRSTM_ENOMEM, "a moved window ran past its rows");
  cr_assert_eq(txtable_window_move(b, w, 250, 51, &filled), PRSTM_EINVAL, "a move past the reserved rows");
  prstm_batch *other = NULL;
  cr_assert_eq(txtable_window_open(b, 100, 100, &other), 0);
  for (uint64_t i = 0; i < 100; i++) {
    prstm_word x[1] = {100 + i};
    cr_assert_eq(prstm_batch_append(other, PROBE_WILD, x, 1), 0);
  }
  cr_assert_eq(txtable_window_close(b, other), 100);
  cr_assert_eq(txtable_window_close(b, w), 100);
  cr_assert_eq(txtable_set_rows(b, 300), 0);
  for (uint64_t i = 0; i < 300; i++) {
    cr_assert_eq(prstm_batch_arg(b, i, 0), i, "row %llu", (unsigned long long)i);
    cr_assert_eq(prstm_batch_type(b, i), i < 200 ? PROBE_WILD : PROBE_INCREMENT, "row %llu", (unsigned long long)i);
  }
  const uint64_t want = (1ull << PROBE_WILD) | (1ull << PROBE_INCREMENT);
  cr_assert_eq(b->type_mask, want, "types %llx", (unsigned long long)b->type_mask);
  prstm_batch_destroy(b);
}

/* Generated blocks go straight into the batch's rows; a block wider than
 * the first makes the generator start again with a part per thread. Both
 * give the rows that one thread gives. */
static int probe_block(const void *ctx, prstm_batch *part, uint64_t first, uint64_t rows, uint64_t *rng) {
  const int widen = *(const int *)ctx;
  for (uint64_t i = first; i < first + rows; i++) {
    const prstm_word r = wl_rand(rng) % 64;
    if (widen == 2 && first >= 2 * WL_BLOCK_ROWS && i % 1000 == 0) {
      /* A value of more than 32 bits: the batch's columns become 64-bit. */
      prstm_word a[1] = {r | (1ull << 40)};
      int rc = txtable_append_generated(part, PROBE_INCREMENT, a, 1);
      if (rc) return rc;
    } else if (widen && first >= 2 * WL_BLOCK_ROWS && i % 1000 == 0) {
      prstm_word list[4] = {3, r, (r + 1) % 64, (r + 2) % 64};
      int rc = prstm_batch_append(part, PROBE_TOUCH, list, 4);
      if (rc) return rc;
    } else {
      prstm_word a[1] = {r};
      int rc = prstm_batch_append(part, PROBE_INCREMENT, a, 1);
      if (rc) return rc;
    }
  }
  return 0;
}

Test(table, generated_blocks_are_the_same_with_windows_or_parts) {
  for (int widen = 0; widen < 3; widen++) {
    prstm_batch *b[3];
    const unsigned threads[3] = {1, 3, 7};
    for (unsigned k = 0; k < 3; k++) {
      cr_assert_eq(prstm_batch_create(&b[k], &test_probe_workload), 0);
      prstm_word first[1] = {5};
      cr_assert_eq(prstm_batch_append(b[k], PROBE_INCREMENT, first, 1), 0);
      cr_assert_eq(wl_generate_blocks(b[k], 300007, 11, threads[k], 0, probe_block, &widen), 0);
      cr_assert_eq(prstm_batch_size(b[k]), 300008);
      cr_assert_eq(prstm_batch_columns(b[k]), widen == 1 ? 4u : 1u);
      cr_assert_eq(b[k]->wide, widen == 2, "%u threads, widen %d: wide %d", threads[k], widen, b[k]->wide);
    }
    for (unsigned k = 1; k < 3; k++) test_expect_same_rows(b[0], b[k], widen ? "widened" : "windows");
    cr_assert_eq(prstm_batch_arg(b[0], 0, 0), 5);
    for (unsigned k = 0; k < 3; k++) prstm_batch_destroy(b[k]);
  }
}

/* A generator that bounds its rows' width makes every block at once; the
 * batch is the one block 0 would have told, columns included, whether the
 * bound is exact, too wide (narrowed after) or too narrow (made again). */
Test(table, generated_blocks_with_a_width_bound_are_the_same_batch) {
  for (int widen = 0; widen < 3; widen++) {
    prstm_batch *ref = NULL;
    cr_assert_eq(prstm_batch_create(&ref, &test_probe_workload), 0);
    cr_assert_eq(wl_generate_blocks(ref, 300007, 11, 1, 0, probe_block, &widen), 0);
    const unsigned bounds[3] = {widen == 1 ? 4u : 1u, 6, 1};
    for (unsigned k = 0; k < 3; k++)
      for (unsigned threads = 1; threads <= 4; threads += 3) {
        prstm_batch *b = NULL;
        cr_assert_eq(prstm_batch_create(&b, &test_probe_workload), 0);
        cr_assert_eq(wl_generate_blocks(b, 300007, 11, threads, bounds[k], probe_block, &widen), 0);
        cr_assert_eq(prstm_batch_columns(b), prstm_batch_columns(ref), "bound %u, widen %d: %u columns, not %u",
                     bounds[k], widen, prstm_batch_columns(b), prstm_batch_columns(ref));
        cr_assert_eq(b->wide, widen == 2);
        test_expect_same_rows(ref, b, "bounded");
        prstm_batch_destroy(b);
      }
    prstm_batch_destroy(ref);
  }
}
