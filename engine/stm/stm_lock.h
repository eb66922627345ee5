/* stm_lock.h: the lock word of PR-STM (version, owner priority, pre-locked and locked bits), the lock of a word, and the rule that lets a higher priority take a pre-lock. */
#ifndef STM_LOCK_H
#define STM_LOCK_H

#include "stm_port.h"

/* Lock word, 64 bits: version (37) | owner priority (25) | pre-locked | locked.
 * A 37-bit version cannot wrap within a batch (it would take 1.4e11 commits to
 * one lock), which closes the paper's 11-bit ABA window. */
#define STM_LOCK_LOCKED 1ull
#define STM_LOCK_PRELOCKED 2ull
#define STM_LOCK_OWNER_SHIFT 2
#define STM_LOCK_OWNER_BITS 25
#define STM_LOCK_OWNER_MASK ((1ull << STM_LOCK_OWNER_BITS) - 1)
#define STM_LOCK_VERSION_SHIFT 27

PRSTM_INLINE uint64_t stm_lock_version(uint64_t w) { return w >> STM_LOCK_VERSION_SHIFT; }
PRSTM_INLINE uint64_t stm_lock_owner(uint64_t w) { return (w >> STM_LOCK_OWNER_SHIFT) & STM_LOCK_OWNER_MASK; }
PRSTM_INLINE int stm_lock_is_locked(uint64_t w) { return (w & STM_LOCK_LOCKED) != 0; }
PRSTM_INLINE int stm_lock_is_prelocked(uint64_t w) { return (w & STM_LOCK_PRELOCKED) != 0; }
PRSTM_INLINE uint64_t stm_lock_make(uint64_t version, uint64_t owner, uint64_t flags) {
  return (version << STM_LOCK_VERSION_SHIFT) | ((owner & STM_LOCK_OWNER_MASK) << STM_LOCK_OWNER_SHIFT) | flags;
}

/* The lock of a word: words [k * coverage, (k + 1) * coverage) share lock k.
 * Coverage 1, the default, skips the division: the GPU has no divide
 * instruction and runs a sequence of a dozen or more (a reciprocal and its
 * corrections), on the path from a read's address to its lock load. */
PRSTM_INLINE uint64_t stm_lock_index(uint64_t addr, uint64_t coverage) {
  return coverage == 1 ? addr : addr / coverage;
}

/* The priority rule itself: may an attempt of priority `mine` take a
 * pre-lock held by `holder`? A higher priority may; final locks are never
 * taken. How a priority is made from a semantic tag and a thread rank is the
 * contention manager's (cmp_priority.h). */
PRSTM_INLINE int stm_may_steal(uint64_t mine, uint64_t holder) { return mine > holder; }

#endif /* STM_LOCK_H */
