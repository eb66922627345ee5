/* bank_body.h: the bank's transaction bodies, written once for the GPU kernel and the CPU threads. */
#ifndef BANK_BODY_H
#define BANK_BODY_H

/* Every bank type writes the accounts it reads (balance and total aside,
 * which are rare in a batch), so a row's first attempts take each account's
 * lock as they read it (PRSTM_FIRST_ATTEMPT_LOCKS). */
#define PRSTM_FIRST_ATTEMPT_LOCKS 1
#include "prstm_tx.h"

/* Type indices, in the order of bank_types[] in bank.c. */
enum {
  BANK_DEPOSIT = 0,
  BANK_WITHDRAW = 1,
  BANK_TRANSFER = 2,
  BANK_BALANCE = 3,
  BANK_TRANSFER_MULTI = 4,
  BANK_TOTAL = 5
};
/* The bank's own failure reason. */
#define BANK_REASON_OVERFLOW (PRSTM_REASON_USER + 0)

/* Each account is one word holding its balance; balances are unsigned, so a
 * body that would take one below zero postpones instead. */
PRSTM_INLINE int bank_deposit(prstm_tx *tx) {
  uint64_t account = prstm_arg(tx, 0), amount = prstm_arg(tx, 1);
  uint64_t balance = prstm_read(tx, account);
  if (balance + amount < balance) return prstm_fail(tx, BANK_REASON_OVERFLOW);
  prstm_write(tx, account, balance + amount);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int bank_withdraw(prstm_tx *tx) {
  uint64_t account = prstm_arg(tx, 0), amount = prstm_arg(tx, 1);
  uint64_t balance = prstm_read(tx, account);
  if (balance < amount) return PRSTM_POSTPONE;
  prstm_write(tx, account, balance - amount);
  return PRSTM_COMMIT;
}

/* A transfer in the order its steps are written: the source read, checked
 * and written before the target is read. A transfer to its own account
 * takes it, so that it is a no-op and reads the values its declared steps
 * give (the delta path's read hash); so does one whose target is out of
 * range, so that a short source postpones it before the bad address fails
 * it. */
PRSTM_INLINE int bank_transfer_in_order(prstm_tx *tx, uint64_t from, uint64_t to, uint64_t amount) {
  uint64_t source = prstm_read(tx, from);
  if (source < amount) return PRSTM_POSTPONE;
  prstm_write(tx, from, source - amount);
  uint64_t target = prstm_read(tx, to);
  if (target + amount < target) return prstm_fail(tx, BANK_REASON_OVERFLOW);
  prstm_write(tx, to, target + amount);
  return PRSTM_COMMIT;
}

/* Otherwise both accounts are read before either is checked, so that the
 * second read need not wait for the first one's value; a short source
 * postpones before an overflowing target fails, as in order. (In a run
 * spread over units, a short transfer whose target another unit holds is
 * sent to the host, which postpones it, instead of being postponed here.) */
PRSTM_INLINE int bank_transfer(prstm_tx *tx) {
  uint64_t from = prstm_arg(tx, 0), to = prstm_arg(tx, 1), amount = prstm_arg(tx, 2);
  if (to == from || to >= prstm_nwords(tx)) return bank_transfer_in_order(tx, from, to, amount);
  uint64_t source = prstm_read(tx, from);
  uint64_t target = prstm_read(tx, to);
  if (source < amount) return PRSTM_POSTPONE;
  if (target + amount < target) return prstm_fail(tx, BANK_REASON_OVERFLOW);
  prstm_write(tx, from, source - amount);
  prstm_write(tx, to, target + amount);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int bank_balance(prstm_tx *tx) {
  prstm_set_result(tx, prstm_read(tx, prstm_arg(tx, 0)));
  return PRSTM_COMMIT;
}

/* The sum of every balance (TinySTM's read-all): a snapshot type, so it
 * runs on the state a whole run starts from with no read set and commits
 * whatever the load (prstm_type_desc.snapshot). Where it runs through the
 * STM instead (a chunked run, a stream), more accounts than its set holds
 * fail it for capacity. */
PRSTM_INLINE int bank_total(prstm_tx *tx) {
  uint64_t n = prstm_nwords(tx), sum = 0;
  for (uint64_t a = 0; a < n && prstm_ok(tx); a++) sum += prstm_read(tx, a);
  prstm_set_result(tx, sum);
  return PRSTM_COMMIT;
}

/* Moves `amount` from each account of the list to `to`; the papers' size sweep
 * uses it with 1 to 127 sources. A source named twice pays twice. */
PRSTM_INLINE int bank_transfer_multi(prstm_tx *tx) {
  uint64_t to = prstm_arg(tx, 0), amount = prstm_arg(tx, 1), count = prstm_arg(tx, 2);
  for (uint64_t i = 0; i < count && prstm_ok(tx); i++) {
    uint64_t from = prstm_arg(tx, 3 + (unsigned)i);
    uint64_t source = prstm_read(tx, from);
    if (!prstm_ok(tx)) break;
    if (source < amount) return PRSTM_POSTPONE;
    prstm_write(tx, from, source - amount);
  }
  uint64_t target = prstm_read(tx, to);
  for (uint64_t i = 0; i < count; i++) {
    if (target + amount < target) return prstm_fail(tx, BANK_REASON_OVERFLOW);
    target += amount;
  }
  prstm_write(tx, to, target);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int bank_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case BANK_DEPOSIT:
      return bank_deposit(tx);
    case BANK_WITHDRAW:
      return bank_withdraw(tx);
    case BANK_TRANSFER:
      return bank_transfer(tx);
    case BANK_BALANCE:
      return bank_balance(tx);
    case BANK_TRANSFER_MULTI:
      return bank_transfer_multi(tx);
    case BANK_TOTAL:
      return bank_total(tx);
    default:
      return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  }
}

/* Set capacities of the three instantiations. Rows of at most three
 * argument words (deposit, withdraw, transfer, balance) touch at most two
 * accounts, so the pair variant's sets hold two entries: 112 bytes a thread
 * instead of the small variant's 448, small enough for the GPU kernel to keep
 * them in shared memory (PRSTM_POLICY_SHARED_SET_MAX, docs/PERFORMANCE.md).
 * Transfers of up to 127 sources plus the target fit the wide one. */
#define BANK_PAIR_CAPACITY 2
#define BANK_PAIR_COLUMNS 3
#define BANK_SMALL_CAPACITY 8
#define BANK_SMALL_COLUMNS 4
#define BANK_WIDE_CAPACITY 136

#endif /* BANK_BODY_H */
