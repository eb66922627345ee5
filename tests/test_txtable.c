/* test_txtable.c: the global transaction table: blocks of rows per thread, packed statuses, appends that grow the columns, and presorting. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"
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
