/* kmeans_body.h: the k-means update stage as transactions (one type per iteration), written once for the GPU kernel and the CPU threads. */
#ifndef KMEANS_BODY_H
#define KMEANS_BODY_H

/* The assigns add to their cluster with prstm_add: compiled so that those
 * adds commit side by side (with the descriptor's uses_add). */
#define PRSTM_USES_ADD 1
#include "prstm_tx.h"
#if !PRSTM_ADDS_COMPILED
#error "kmeans_body.h must come before any other include of prstm_tx.h (PRSTM_USES_ADD)"
#endif

/* State layout, all 64-bit words:
 *   [0] points, [1] clusters, [2] iterations, [3] coordinate_max  (the header,
 *       written by init_state and never by a transaction), then padding up to
 *       word KMEANS_BASE;
 *   then for each iteration k = 0..iterations and each cluster c a cell of
 *   KMEANS_CELL_WORDS words whose first three are sum_x, sum_y, count, at
 *   KMEANS_WORD(clusters, k, c, field).
 * A cell fills one 128-byte line of its own: the clusters of an iteration are
 * the hottest words of the batch, and on a GPU accesses to one line serialise
 * in one L2 slice, so three clusters sharing a line would share its queue.
 * Iteration 0 holds the initial centroids (count 1, sum = the point) and is
 * never written either; iteration k >= 1 is filled by the assign<k> type. */
#define KMEANS_H_POINTS 0u
#define KMEANS_H_CLUSTERS 1u
#define KMEANS_H_ITERATIONS 2u
#define KMEANS_H_COORD_MAX 3u
#define KMEANS_HEADER 4u
#define KMEANS_BASE 16u
#define KMEANS_CELL_WORDS 16u
#define KMEANS_SUM_X 0u
#define KMEANS_SUM_Y 1u
#define KMEANS_COUNT 2u
#define KMEANS_WORD(clusters, k, c, field) \
  (KMEANS_BASE + ((uint64_t)(k) * (uint64_t)(clusters) + (uint64_t)(c)) * KMEANS_CELL_WORDS + (uint64_t)(field))
/* Words of a state with `iterations` iterations after the initial centroids. */
#define KMEANS_STATE_WORDS(clusters, iterations) KMEANS_WORD(clusters, (iterations) + 1u, 0u, 0u)

/* Semantic tags are per type, so each iteration is a type of its own:
 * assign<k> is type index k - 1 with tag 15 - k, and the earlier iteration,
 * on which the later one depends, always has the higher tag. */
#define KMEANS_MAX_ITERATIONS 15u
#define KMEANS_MAX_CLUSTERS 64u
/* The largest coordinate: two squared differences of 2^31 still fit in 64 bits. */
#define KMEANS_MAX_COORD 2147483647ull

/* The reasons of every assign type, PRSTM_REASON_USER + k. */
#define KMEANS_REASON_STATE (PRSTM_REASON_USER + 0)    /* iteration or header not in the state */
#define KMEANS_REASON_COORD (PRSTM_REASON_USER + 1)    /* point beyond coordinate_max */
#define KMEANS_REASON_OVERFULL (PRSTM_REASON_USER + 2) /* previous iteration has more points than declared */

/* Read set: the counts of the previous iteration (at most KMEANS_MAX_CLUSTERS);
 * the write set: the three adds to the cluster the point joins. One capacity
 * serves every batch, since the variant is chosen by argument columns and
 * every assign has the same two. */
#define KMEANS_CAPACITY (KMEANS_MAX_CLUSTERS + 3u)

/* Assigns point (x, y) to the nearest centroid of iteration k - 1 and adds it
 * to that cluster's sums and count in iteration k.
 *
 * The previous iteration is complete when its counts add up to the number of
 * points; until then this transaction depends semantically on the ones still
 * to commit there and postpones. Counts only grow and each is read at most as
 * large as it is now, so a sum of counts that reaches `points` proves every
 * count read is final, even when the reads were not one snapshot: the check
 * can use unvalidated reads first and postpone cheaply without a read set.
 * Once complete, the counts are read again through the read set: validating
 * them orders this transaction after the last committer of each cluster, so
 * the sums it then reads without locks (no transaction writes them again)
 * are final too. The replay of --verify runs the same code serially and
 * reaches the same decision, because a committed assign<k> follows every
 * assign<k-1> in the commit order.
 *
 * Centroid of cluster c in iteration j: (sum_x / count, sum_y / count) with
 * integer division; an empty cluster keeps its centroid of iteration j - 1
 * (iteration 0 is never empty). Nearest: smallest squared distance, ties to
 * the lowest cluster index. kmeans.c's sequential reference does the same. */
PRSTM_INLINE int kmeans_assign(prstm_tx *tx, unsigned k) {
  uint64_t points = prstm_read_immutable(tx, KMEANS_H_POINTS);
  uint64_t clusters = prstm_read_immutable(tx, KMEANS_H_CLUSTERS);
  uint64_t iterations = prstm_read_immutable(tx, KMEANS_H_ITERATIONS);
  uint64_t coord_max = prstm_read_immutable(tx, KMEANS_H_COORD_MAX);
  if (!prstm_ok(tx)) return PRSTM_COMMIT; /* doomed: the engine fails or retries it */
  if (clusters == 0 || clusters > KMEANS_MAX_CLUSTERS || k > iterations || iterations > KMEANS_MAX_ITERATIONS ||
      KMEANS_WORD(clusters, iterations + 1, 0, 0) > prstm_nwords(tx))
    return prstm_fail(tx, KMEANS_REASON_STATE);
  uint64_t x = prstm_arg(tx, 0), y = prstm_arg(tx, 1);
  if (x > coord_max || y > coord_max || x > KMEANS_MAX_COORD || y > KMEANS_MAX_COORD)
    return prstm_fail(tx, KMEANS_REASON_COORD);
  unsigned prev = k - 1;
  uint64_t counts[KMEANS_MAX_CLUSTERS];
  if (prev == 0) {
    for (uint64_t c = 0; c < clusters; c++)
      counts[c] = prstm_read_immutable(tx, KMEANS_WORD(clusters, 0, c, KMEANS_COUNT));
  } else {
    uint64_t total = 0;
    for (uint64_t c = 0; c < clusters; c++)
      total += prstm_read_immutable(tx, KMEANS_WORD(clusters, prev, c, KMEANS_COUNT));
    if (!prstm_ok(tx)) return PRSTM_COMMIT;
    if (total < points) return PRSTM_POSTPONE;
    total = 0;
    for (uint64_t c = 0; c < clusters && prstm_ok(tx); c++) {
      counts[c] = prstm_read(tx, KMEANS_WORD(clusters, prev, c, KMEANS_COUNT));
      total += counts[c];
    }
    if (!prstm_ok(tx)) return PRSTM_COMMIT;
    if (total < points) return PRSTM_POSTPONE;
    if (total > points) return prstm_fail(tx, KMEANS_REASON_OVERFULL);
  }
  uint64_t best = 0, best_d = UINT64_MAX;
  for (uint64_t c = 0; c < clusters && prstm_ok(tx); c++) {
    /* Walk back to the latest iteration where c had points; all of them are
     * complete and frozen, so their words need no read set. */
    unsigned j = prev;
    uint64_t n = counts[c];
    while (n == 0 && j > 0) {
      j--;
      n = prstm_read_immutable(tx, KMEANS_WORD(clusters, j, c, KMEANS_COUNT));
    }
    if (n == 0) n = 1; /* an iteration 0 with count 0 holds the centroid itself */
    uint64_t cx = prstm_read_immutable(tx, KMEANS_WORD(clusters, j, c, KMEANS_SUM_X)) / n;
    uint64_t cy = prstm_read_immutable(tx, KMEANS_WORD(clusters, j, c, KMEANS_SUM_Y)) / n;
    uint64_t dx = x > cx ? x - cx : cx - x, dy = y > cy ? y - cy : cy - y;
    /* A doomed or foreign centroid may be far out: saturate instead of wrapping. */
    uint64_t d = dx > KMEANS_MAX_COORD || dy > KMEANS_MAX_COORD ? UINT64_MAX : dx * dx + dy * dy;
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  /* The point joins its cluster by three commutative adds: assigns of one
   * iteration never read what they add to, so they do not conflict with each
   * other, however few the clusters (the workload's uses_add). The sums
   * cannot wrap: at most 2^26 points of coordinates below 2^31 an iteration
   * keep them below 2^57 (kmeans.c's knobs), and a batch would need more
   * than 2^33 assigns of one iteration to reach 2^64. */
  uint64_t ax = KMEANS_WORD(clusters, k, best, KMEANS_SUM_X);
  prstm_add(tx, ax, x);
  prstm_add(tx, ax + 1, y);
  prstm_add(tx, ax + 2, 1);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int kmeans_dispatch(prstm_tx *tx, unsigned type) {
  if (type < KMEANS_MAX_ITERATIONS) return kmeans_assign(tx, type + 1);
  return prstm_fail(tx, KMEANS_REASON_STATE);
}

#endif /* KMEANS_BODY_H */
