/* cmp_priority.h: the static priority of PR-STM: a higher semantic tag wins, then a lower thread rank. */
#ifndef CMP_PRIORITY_H
#define CMP_PRIORITY_H

#include "stm_lock.h"

/* A priority is the tag (4 bits) above the rank (21 bits), which fills the
 * lock word's 25 owner bits. Rank 2^21-1 is kept out so that every live
 * priority is non-zero: the engine runs at most PRSTM_MAX_THREADS threads
 * (prstm.h), which engine.c checks against CMP_RANK_BITS. */
#define CMP_RANK_BITS 21
#define CMP_MAX_RANK ((1u << CMP_RANK_BITS) - 1)

/* Priority of an attempt: a higher semantic tag wins; between equal tags the
 * lower thread rank wins, as in the paper. Ranks are unique, so the priority
 * also names the owner of a lock. */
PRSTM_INLINE uint64_t cmp_priority(unsigned tag, uint32_t rank) {
  return ((uint64_t)(tag & 15u) << CMP_RANK_BITS) | (uint64_t)(CMP_MAX_RANK - rank);
}

#endif /* CMP_PRIORITY_H */
