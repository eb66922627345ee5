/* cmp_priority.h: the static priority rule of PR-STM and the lock-word layout it is encoded in. */
#ifndef CMP_PRIORITY_H
#define CMP_PRIORITY_H

#include "prstm_port.h"

/* Lock word, 64 bits: version (37) | owner priority (25) | pre-locked | locked.
 * A 37-bit version cannot wrap within a batch (it would take 1.4e11 commits to
 * one lock), which closes the paper's 11-bit ABA window. */
#define PRSTM_LOCK_LOCKED 1ull
#define PRSTM_LOCK_PRELOCKED 2ull
#define PRSTM_LOCK_OWNER_SHIFT 2
#define PRSTM_LOCK_OWNER_BITS 25
#define PRSTM_LOCK_OWNER_MASK ((1ull << PRSTM_LOCK_OWNER_BITS) - 1)
#define PRSTM_LOCK_VERSION_SHIFT 27
#define PRSTM_RANK_BITS 21
/* Rank 2^21-1 is kept out so that every live priority is non-zero. */
#define PRSTM_MAX_THREADS ((1u << PRSTM_RANK_BITS) - 1)

PRSTM_INLINE uint64_t prstm_lock_version(uint64_t w) { return w >> PRSTM_LOCK_VERSION_SHIFT; }
PRSTM_INLINE uint64_t prstm_lock_owner(uint64_t w) {
  return (w >> PRSTM_LOCK_OWNER_SHIFT) & PRSTM_LOCK_OWNER_MASK;
}
PRSTM_INLINE int prstm_lock_is_locked(uint64_t w) { return (w & PRSTM_LOCK_LOCKED) != 0; }
PRSTM_INLINE int prstm_lock_is_prelocked(uint64_t w) { return (w & PRSTM_LOCK_PRELOCKED) != 0; }
PRSTM_INLINE uint64_t prstm_lock_make(uint64_t version, uint64_t owner, uint64_t flags) {
  return (version << PRSTM_LOCK_VERSION_SHIFT) | ((owner & PRSTM_LOCK_OWNER_MASK) << PRSTM_LOCK_OWNER_SHIFT) | flags;
}

/* The lock of a word: words [k * coverage, (k + 1) * coverage) share lock k.
 * Coverage 1, the default, skips the division: the GPU has no divide
 * instruction and runs a sequence of a dozen or more (a reciprocal and its
 * corrections), on the path from a read's address to its lock load. */
PRSTM_INLINE uint64_t prstm_lock_index(uint64_t addr, uint64_t coverage) {
  return coverage == 1 ? addr : addr / coverage;
}

/* Priority of an attempt: a higher semantic tag wins; between equal tags the
 * lower thread rank wins, as in the paper. Ranks are unique, so the priority
 * also names the owner of a lock. */
PRSTM_INLINE uint64_t prstm_priority(unsigned tag, uint32_t rank) {
  return ((uint64_t)(tag & 15u) << PRSTM_RANK_BITS) | (uint64_t)(PRSTM_MAX_THREADS - rank);
}

/* The rule itself: may an attempt of priority `mine` take a pre-lock held by
 * `holder`? Final locks are never taken. */
PRSTM_INLINE int prstm_may_steal(uint64_t mine, uint64_t holder) { return mine > holder; }

#endif /* CMP_PRIORITY_H */
