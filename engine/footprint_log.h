/* footprint_log.h: a co-executed round's logs compared, the first unit's address log against the second unit's footprint marks, in one form for the host and the GPU. */
#ifndef FOOTPRINT_LOG_H
#define FOOTPRINT_LOG_H

#include <stdint.h>

#include "stm_port.h"

/* After a round, unit A (the CPU) holds an address log: the locks it wrote
 * under, then those it only read under. Unit B keeps a mark of a byte a lock
 * for its reads and another for its writes (HeterosTM's compressed log), on
 * its GPU where it has one, so that the comparison runs where the marks are
 * and only A's log and B's written words cross the link. */

/* The orders in which a round is not serialisable. */
enum {
  FOOTPRINT_A_FIRST_FAILS = 1u, /* B read or wrote under a lock that A wrote under */
  FOOTPRINT_B_FIRST_FAILS = 2u  /* A read or wrote under a lock that B wrote under */
};

/* One lock of A's log (a_wrote: A wrote under it; otherwise A only read)
 * against B's marks of it. Every lock of the log was read or written by A,
 * so B's write alone makes B-first fail. */
PRSTM_INLINE unsigned footprint_log_check(int a_wrote, uint8_t b_read, uint8_t b_wrote) {
  unsigned fails = b_wrote ? FOOTPRINT_B_FIRST_FAILS : 0u;
  if (a_wrote && (b_read | b_wrote)) fails |= FOOTPRINT_A_FIRST_FAILS;
  return fails;
}

/* The words under lock l: [l * coverage, min(l * coverage + coverage,
 * nwords)). In a compact copy of the words of a list of locks, the k-th
 * lock's words lie at [k * coverage, ...), whatever their number. */
PRSTM_INLINE uint64_t footprint_lock_words(uint64_t l, uint64_t coverage, uint64_t nwords) {
  const uint64_t from = l * coverage;
  return from >= nwords ? 0 : (nwords - from < coverage ? nwords - from : coverage);
}

#if defined(__CUDACC__)
#include <cuda_runtime.h>

/* The GPU's side (footprint_gpu.cu). flags[0] collects FOOTPRINT_* bits and
 * flags[1] counts B's written locks; the caller zeroes both first. Each
 * launch goes on `stream`, returns 0 or PRSTM_ECUDA with err set. */

/* Lists the locks B wrote under (list, room for nlocks, in no particular
 * order; flags[1] counts them). */
int footprint_gpu_list_written(const uint8_t *write_marks, uint64_t nlocks, uint64_t *list, unsigned long long *flags,
                               cudaStream_t stream, char *err, size_t errlen);
/* Compares entries [first, first + n) of A's log (the locks before
 * `nwritten` A wrote under) with B's marks. */
int footprint_gpu_compare(const uint64_t *log, uint64_t first, uint64_t n, uint64_t nwritten, const uint8_t *read_marks,
                          const uint8_t *write_marks, unsigned long long *flags, cudaStream_t stream, char *err,
                          size_t errlen);
/* The words under locks lock[0, n) of the replica into the compact copy
 * (gather) or from it (scatter). */
int footprint_gpu_gather(const uint64_t *lock, uint64_t n, const uint64_t *words, uint64_t nwords, uint64_t coverage,
                         uint64_t *compact, cudaStream_t stream, char *err, size_t errlen);
int footprint_gpu_scatter(const uint64_t *lock, uint64_t n, uint64_t *words, uint64_t nwords, uint64_t coverage,
                          const uint64_t *compact, cudaStream_t stream, char *err, size_t errlen);
#endif

#endif /* FOOTPRINT_LOG_H */
