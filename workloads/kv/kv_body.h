/* kv_body.h: a set-associative key-value store in the shared words (get, set with eviction of the least recently set way, delete), written once for the GPU kernels and the CPU threads. */
#ifndef KV_BODY_H
#define KV_BODY_H

#include "prstm_tx.h"

/* State: a header, then `sets` sets of `ways` slots.
 *   word 0: sets, word 1: ways (never written)
 *   set s at KV_HEADER + s * (1 + KV_SLOT * ways): its clock (how many sets
 *   it has taken), then each slot's words: key + 1 (0: empty), value, and
 *   the clock of the set that last wrote it.
 * Keys and values are one word each; key k lives in set kv_set_of(k). */
/* The updates first, then the read-only get (batch.generate.read_only
 * gives the get its share). */
enum { KV_SET = 0, KV_DELETE = 1, KV_GET = 2 };
#define KV_HEADER 2u
#define KV_SLOT 3u
#define KV_MAX_WAYS 16u
/* What a get returns for a key the store does not hold. */
#define KV_MISS UINT64_MAX

/* A get reads its set's keys and one value; a set also the clock and the
 * stamps, and writes at most four words. */
#define KV_CAPACITY (2u * KV_MAX_WAYS + 2u)
#define KV_COLUMNS 2u

/* The set of key k: a mix of its bits, so that neighbouring (and hot)
 * keys land in different sets. */
PRSTM_INLINE uint64_t kv_set_of(uint64_t key, uint64_t sets) {
  uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) % sets;
}

PRSTM_INLINE uint64_t kv_set_base(uint64_t set, uint64_t ways) { return KV_HEADER + set * (1 + KV_SLOT * ways); }

/* The first word of key's set, from the header, and the ways a set;
 * returns 0 for a header that describes no store. */
PRSTM_INLINE int kv_locate(prstm_tx *tx, uint64_t key, uint64_t *base, uint64_t *ways) {
  const uint64_t sets = prstm_read_immutable(tx, 0);
  *ways = prstm_read_immutable(tx, 1);
  if (sets == 0 || *ways == 0 || *ways > KV_MAX_WAYS) return 0;
  *base = kv_set_base(kv_set_of(key, sets), *ways);
  return 1;
}

/* The way holding key in the set at base, or ways when none does. */
PRSTM_INLINE uint64_t kv_find(prstm_tx *tx, uint64_t base, uint64_t ways, uint64_t key) {
  for (uint64_t w = 0; w < ways && prstm_ok(tx); w++)
    if (prstm_read(tx, base + 1 + KV_SLOT * w) == key + 1) return w;
  return ways;
}

/* get(key): the value, or KV_MISS. Read-only: a hot key's gets never
 * conflict with one another. */
PRSTM_INLINE int kv_get(prstm_tx *tx) {
  const uint64_t key = prstm_arg(tx, 0);
  uint64_t base = 0, ways = 0;
  if (!kv_locate(tx, key, &base, &ways)) return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  const uint64_t w = kv_find(tx, base, ways, key);
  prstm_set_result(tx, w < ways ? prstm_read(tx, base + 1 + KV_SLOT * w + 1) : KV_MISS);
  return PRSTM_COMMIT;
}

/* set(key, value): updates the key's slot, else fills an empty one, else
 * evicts the way set longest ago (least recently set; gets do not count,
 * since they write nothing). */
PRSTM_INLINE int kv_set(prstm_tx *tx) {
  const uint64_t key = prstm_arg(tx, 0), value = prstm_arg(tx, 1);
  uint64_t base = 0, ways = 0;
  if (!kv_locate(tx, key, &base, &ways)) return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  const uint64_t clock = prstm_read(tx, base) + 1;
  uint64_t way = kv_find(tx, base, ways, key);
  if (way == ways) {
    /* The first empty way, else the oldest stamp. */
    uint64_t oldest = UINT64_MAX;
    for (uint64_t w = 0; w < ways && prstm_ok(tx); w++) {
      if (prstm_read(tx, base + 1 + KV_SLOT * w) == 0) {
        way = w;
        break;
      }
      const uint64_t stamp = prstm_read(tx, base + 1 + KV_SLOT * w + 2);
      if (stamp < oldest) {
        oldest = stamp;
        way = w;
      }
    }
    prstm_write(tx, base + 1 + KV_SLOT * way, key + 1);
  }
  prstm_write(tx, base + 1 + KV_SLOT * way + 1, value);
  prstm_write(tx, base + 1 + KV_SLOT * way + 2, clock);
  prstm_write(tx, base, clock);
  return PRSTM_COMMIT;
}

/* delete(key): empties the key's slot; a key the store does not hold
 * leaves it as it is (and commits). */
PRSTM_INLINE int kv_delete(prstm_tx *tx) {
  const uint64_t key = prstm_arg(tx, 0);
  uint64_t base = 0, ways = 0;
  if (!kv_locate(tx, key, &base, &ways)) return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  const uint64_t w = kv_find(tx, base, ways, key);
  if (w < ways) {
    prstm_write(tx, base + 1 + KV_SLOT * w, 0);
    prstm_write(tx, base + 1 + KV_SLOT * w + 1, 0);
    prstm_write(tx, base + 1 + KV_SLOT * w + 2, 0);
  }
  return PRSTM_COMMIT;
}

PRSTM_INLINE int kv_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case KV_GET:
      return kv_get(tx);
    case KV_SET:
      return kv_set(tx);
    case KV_DELETE:
      return kv_delete(tx);
    default:
      return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  }
}

#endif /* KV_BODY_H */
