/* skiplist_body.h: the skiplist's transaction bodies (insert, delete, search), written once for the GPU kernel and the CPU threads. */
#ifndef SKIPLIST_BODY_H
#define SKIPLIST_BODY_H

/* A walk validates one link a level, so the sets stay small and keep no
 * hash indexes (PRSTM_WIDE_SETS): clearing them cost each attempt more than
 * the searches they save. */
#include "prstm_tx.h"

/* Type indices, in the order of skiplist_types[] in skiplist.c. */
enum { SKIPLIST_INSERT = 0, SKIPLIST_DELETE = 1, SKIPLIST_SEARCH = 2 };

/* Failure reasons. Every type shares the first two, so a reason means the
 * same thing whichever type reports it. */
#define SKIPLIST_REASON_RANGE (PRSTM_REASON_USER + 0)   /* key (or height) out of range */
#define SKIPLIST_REASON_CORRUPT (PRSTM_REASON_USER + 1) /* the words are not a skiplist */
#define SKIPLIST_REASON_PRESENT (PRSTM_REASON_USER + 2) /* insert: the key is already there */
#define SKIPLIST_REASON_POOL (PRSTM_REASON_USER + 3)    /* insert: no node slot for this row */

/* State layout. A header of SKIPLIST_HEADER words describes the list, so the
 * bodies work on any size without compiled-in constants:
 *   [0] SKIPLIST_MAGIC, [1] levels, [2] nodes (head included), [3] first node
 *   index free for inserts (initial keys + 1).
 * Node i starts at word SKIPLIST_HEADER + i * (2 + levels):
 *   key, height, next[0], ..., next[levels - 1].
 * Node 0 is the head (key 0, height levels); nodes 1..initial keys hold the
 * initial keys. A link packs the successor's key above its index,
 * (key << 32) | index, with 0 as nil: node keys never change and nodes are
 * never reused, so the copy of the key in a link is always exact, and a
 * traversal step costs one read (the link) instead of two (the link, then the
 * successor's key). That halves the read set and its validation. */
#define SKIPLIST_HEADER 4u
#define SKIPLIST_MAGIC 0x736b69706c697374ull /* "skiplist" */
#define SKIPLIST_MAX_LEVELS 32u
#define SKIPLIST_KEY_MAX 0xffffffffull
#define SKIPLIST_INDEX_MASK 0xffffffffull

/* Read and write set entries per transaction. A walk validates one link a
 * level (skiplist_walk), an insert adds one read and at most 2 + 2 * levels
 * writes, a delete one read and two writes a level: about a hundred at most
 * with 32 levels. A transaction that does not fit fails with
 * PRSTM_REASON_CAPACITY, never overflows. */
#define SKIPLIST_CAPACITY 256

/* What a delete leaves in each link of the node it unlinks: index 0, which a
 * walk takes for the end of the level, with a key that no nil link (0)
 * carries. A walk that stops at an unlinked node reads this through
 * prstm_read and starts again (skiplist_walk); a transaction that had
 * validated a link of the node sees it changed. */
#define SKIPLIST_UNLINKED (SKIPLIST_KEY_MAX << 32)

PRSTM_INLINE uint64_t skiplist_link(uint64_t key, uint64_t index) { return key << 32 | index; }
PRSTM_INLINE uint64_t skiplist_link_index(uint64_t link) { return link & SKIPLIST_INDEX_MASK; }
PRSTM_INLINE uint64_t skiplist_link_key(uint64_t link) { return link >> 32; }

typedef struct skiplist_meta {
  uint64_t levels, nodes, first_free, stride;
} skiplist_meta;

/* Word address of node i's field: 0 key, 1 height, 2 + l next[l]. */
PRSTM_INLINE uint64_t skiplist_addr(const skiplist_meta *m, uint64_t node, uint64_t field) {
  return SKIPLIST_HEADER + node * m->stride + field;
}

/* Reads the header. No transaction writes it, so it costs no set entries.
 * Returns 0 when the words are not a skiplist of a size the bodies handle. */
PRSTM_INLINE int skiplist_meta_read(prstm_tx *tx, skiplist_meta *m) {
  if (prstm_nwords(tx) < SKIPLIST_HEADER) return 0;
  if (prstm_read_immutable(tx, 0) != SKIPLIST_MAGIC) return 0;
  m->levels = prstm_read_immutable(tx, 1);
  m->nodes = prstm_read_immutable(tx, 2);
  m->first_free = prstm_read_immutable(tx, 3);
  if (m->levels < 1 || m->levels > SKIPLIST_MAX_LEVELS) return 0;
  m->stride = 2 + m->levels;
  if (m->nodes < 1 || m->nodes > SKIPLIST_INDEX_MASK || m->first_free < 1) return 0;
  /* Written as a division so that a huge node count cannot wrap the product. */
  if ((prstm_nwords(tx) - SKIPLIST_HEADER) / m->stride < m->nodes) return 0;
  return 1;
}

/* Walks from the head down to level 0 towards key: for each level l, pred[l]
 * is the last node whose key is below key and link[l] its next[l] as read.
 * With stop_at_match the walk ends at the first level that shows the key
 * (a search needs no more); *found_level is that level, or -1 when the key
 * is absent. Without stop_at_match the walk always reaches level 0, and
 * *found_level is 0 or -1.
 *
 * The steps are taken by hints (prstm_read_immutable): only the link each
 * level stops at, pred[l]'s next[l], is read through prstm_read, so the read
 * set holds one link a level instead of the whole path (tens of links, and
 * the top level's were in every transaction's set: each commit there failed
 * most walks in flight). Validating those links alone proves the walk right
 * at commit. pred[l].next[l] unchanged means no node came between pred[l]
 * and link[l], that neither was unlinked (unlinking the successor rewrites
 * pred's link; unlinking pred rewrites pred's own links to
 * SKIPLIST_UNLINKED), and so that pred[l] is still on level l, just below
 * key, whatever the path that found it. A hint can be stale: a link read
 * through prstm_read that differs from its hint, or that shows the node
 * unlinked, restarts the attempt (prstm_restart), so a committed attempt
 * read exactly the links a walk on its snapshot reads (the serial replay's
 * read hash checks it).
 *
 * Returns 1 when the walk ended, 0 when the attempt is doomed (the caller
 * returns at once), -1 when the links are not a skiplist: keys must strictly
 * increase along a level, which also bounds the walk on any snapshot. Every
 * word a hint reads held a link of a valid list at some moment, so only a
 * broken state, confirmed by prstm_read, fails this way. */
PRSTM_INLINE int skiplist_walk(prstm_tx *tx, const skiplist_meta *m, uint64_t key, int stop_at_match, uint64_t *pred,
                               uint64_t *link, int *found_level) {
  uint64_t x = 0, xkey = 0;
  *found_level = -1;
  for (uint64_t lv = m->levels; lv-- > 0;) {
    uint64_t w;
    for (;;) {
      w = prstm_read_immutable(tx, skiplist_addr(m, x, 2 + lv));
      if (!prstm_ok(tx)) return 0;
      uint64_t succ = skiplist_link_index(w), skey = skiplist_link_key(w);
      if (succ == 0) break;
      if (succ >= m->nodes || skey <= xkey) {
        if (prstm_read(tx, skiplist_addr(m, x, 2 + lv)) != w) prstm_restart(tx);
        return prstm_ok(tx) ? -1 : 0;
      }
      if (skey >= key) break;
      x = succ;
      xkey = skey;
    }
    const uint64_t seen = prstm_read(tx, skiplist_addr(m, x, 2 + lv));
    if (seen != w || seen == SKIPLIST_UNLINKED) prstm_restart(tx);
    if (!prstm_ok(tx)) return 0;
    pred[lv] = x;
    link[lv] = w;
    if (skiplist_link_index(w) != 0 && skiplist_link_key(w) == key && (stop_at_match || lv == 0)) {
      *found_level = (int)lv;
      return 1;
    }
  }
  return 1;
}

/* insert(key, height): links a new node of `height` levels holding key.
 * The node is this row's own slot, first_free + row, so inserts need no
 * shared allocator word; the replay keeps the row numbers and so the slots. */
PRSTM_INLINE int skiplist_insert(prstm_tx *tx) {
  uint64_t key = prstm_arg(tx, 0), height = prstm_arg(tx, 1);
  skiplist_meta m;
  if (!skiplist_meta_read(tx, &m)) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  if (key < 1 || key > SKIPLIST_KEY_MAX || height < 1 || height > m.levels)
    return prstm_fail(tx, SKIPLIST_REASON_RANGE);
  uint64_t pred[SKIPLIST_MAX_LEVELS], link[SKIPLIST_MAX_LEVELS];
  int found = -1;
  int walked = skiplist_walk(tx, &m, key, 0, pred, link, &found);
  if (walked == 0) return PRSTM_COMMIT; /* doomed: the engine retries */
  if (walked < 0) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  if (found >= 0) return prstm_fail(tx, SKIPLIST_REASON_PRESENT);
  uint64_t row = prstm_row(tx);
  uint64_t node = m.first_free + row;
  if (row >= m.nodes || node >= m.nodes) return prstm_fail(tx, SKIPLIST_REASON_POOL);
  /* A slot already holding a node (a second batch on the same state reuses
   * row numbers) fails cleanly instead of corrupting the list. */
  if (prstm_read(tx, skiplist_addr(&m, node, 1)) != 0) {
    if (!prstm_ok(tx)) return PRSTM_COMMIT;
    return prstm_fail(tx, SKIPLIST_REASON_POOL);
  }
  prstm_write(tx, skiplist_addr(&m, node, 0), key);
  prstm_write(tx, skiplist_addr(&m, node, 1), height);
  for (uint64_t lv = 0; lv < height; lv++) {
    prstm_write(tx, skiplist_addr(&m, node, 2 + lv), link[lv]);
    prstm_write(tx, skiplist_addr(&m, pred[lv], 2 + lv), skiplist_link(key, node));
  }
  return PRSTM_COMMIT;
}

/* delete(key): unlinks the key's node at every level it is on, and marks
 * its links there SKIPLIST_UNLINKED (the node is not reused). A key that is
 * absent may be inserted by a later transaction of the batch: that is a
 * semantic conflict, so the delete postpones, and insert carries the higher
 * tag. */
PRSTM_INLINE int skiplist_delete(prstm_tx *tx) {
  uint64_t key = prstm_arg(tx, 0);
  skiplist_meta m;
  if (!skiplist_meta_read(tx, &m)) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  if (key < 1 || key > SKIPLIST_KEY_MAX) return prstm_fail(tx, SKIPLIST_REASON_RANGE);
  uint64_t pred[SKIPLIST_MAX_LEVELS], link[SKIPLIST_MAX_LEVELS];
  int found = -1;
  int walked = skiplist_walk(tx, &m, key, 0, pred, link, &found);
  if (walked == 0) return PRSTM_COMMIT;
  if (walked < 0) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  if (found < 0) return PRSTM_POSTPONE;
  uint64_t target = skiplist_link_index(link[0]);
  for (uint64_t lv = 0; lv < m.levels; lv++) {
    /* The node is on level lv exactly when its predecessor there links to it. */
    if (skiplist_link_index(link[lv]) != target) continue;
    uint64_t after = prstm_read(tx, skiplist_addr(&m, target, 2 + lv));
    if (!prstm_ok(tx)) return PRSTM_COMMIT;
    prstm_write(tx, skiplist_addr(&m, pred[lv], 2 + lv), after);
    prstm_write(tx, skiplist_addr(&m, target, 2 + lv), SKIPLIST_UNLINKED);
  }
  return PRSTM_COMMIT;
}

/* search(key), read-only: result 1 when the key is present, else 0. */
PRSTM_INLINE int skiplist_search(prstm_tx *tx) {
  uint64_t key = prstm_arg(tx, 0);
  skiplist_meta m;
  if (!skiplist_meta_read(tx, &m)) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  if (key < 1 || key > SKIPLIST_KEY_MAX) return prstm_fail(tx, SKIPLIST_REASON_RANGE);
  uint64_t pred[SKIPLIST_MAX_LEVELS], link[SKIPLIST_MAX_LEVELS];
  int found = -1;
  int walked = skiplist_walk(tx, &m, key, 1, pred, link, &found);
  if (walked == 0) return PRSTM_COMMIT;
  if (walked < 0) return prstm_fail(tx, SKIPLIST_REASON_CORRUPT);
  prstm_set_result(tx, found >= 0 ? 1u : 0u);
  return PRSTM_COMMIT;
}

PRSTM_INLINE int skiplist_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case SKIPLIST_INSERT:
      return skiplist_insert(tx);
    case SKIPLIST_DELETE:
      return skiplist_delete(tx);
    case SKIPLIST_SEARCH:
      return skiplist_search(tx);
    default:
      return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  }
}

#endif /* SKIPLIST_BODY_H */
