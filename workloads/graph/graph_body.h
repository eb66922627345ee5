/* graph_body.h: the graph workload's transaction bodies (push a vertex's value to its neighbours, read a value), written once for the GPU kernel and the CPU threads. */
#ifndef GRAPH_BODY_H
#define GRAPH_BODY_H

/* A push reads and writes a vertex's neighbours (up to GRAPH_MAX_DEGREE):
 * its sets keep membership filters. */
#define PRSTM_WIDE_SETS 1
#include "prstm_tx.h"

/* Type indices, in the order of graph_types[] in graph.c. */
enum { GRAPH_PUSH = 0, GRAPH_VALUE = 1 };

/* The graph's own failure reasons. */
#define GRAPH_REASON_NO_VERTEX (PRSTM_REASON_USER + 0)
#define GRAPH_REASON_MALFORMED (PRSTM_REASON_USER + 1)
#define GRAPH_REASON_ROUND (PRSTM_REASON_USER + 2)

/* State layout, all in 64-bit words, for V vertices and E edges:
 *   [0] V, [1] E                      header, never written
 *   [2, V + 3)        offsets[V + 1]  CSR: vertex v's edges are targets[offsets[v] .. offsets[v + 1])
 *   [V + 3, V + 3 + E) targets[E]     the edges' target vertices
 *   values[V]                         the vertices' current values
 *   changed[V]                        1 + the round of the push that last lowered the vertex, 0 if never
 * The header, offsets and targets are static, so bodies read them with
 * prstm_read_immutable: they cost no set capacity and no validation. */
#define GRAPH_HEADER_WORDS 2u
PRSTM_INLINE uint64_t graph_offsets_at(void) { return GRAPH_HEADER_WORDS; }
PRSTM_INLINE uint64_t graph_targets_at(uint64_t v) { return GRAPH_HEADER_WORDS + v + 1; }
PRSTM_INLINE uint64_t graph_values_at(uint64_t v, uint64_t e) { return GRAPH_HEADER_WORDS + v + 1 + e; }
PRSTM_INLINE uint64_t graph_changed_at(uint64_t v, uint64_t e) { return GRAPH_HEADER_WORDS + 2 * v + 1 + e; }
/* Whether a state of nwords words can hold the layout of a V-vertex, E-edge
 * graph exactly; written so that no sum can wrap. */
PRSTM_INLINE int graph_layout_ok(uint64_t nwords, uint64_t v, uint64_t e) {
  return v >= 1 && v <= nwords / 3 && e <= nwords && 3 * v + e + 1 + GRAPH_HEADER_WORDS == nwords;
}

/* The largest out-degree a push fits in its sets: it reads its own value and
 * every neighbour's (1 + d read entries) and writes the value and the change
 * round of each lowered neighbour (2 d write entries). */
#define GRAPH_MAX_DEGREE 64
#define GRAPH_CAPACITY (2 * GRAPH_MAX_DEGREE)

/* push(vertex, round): every out-neighbour holding a larger value than the
 * vertex takes the vertex's value, and records round + 1 as the round in
 * which it changed, so that the next round pushes it in turn. A user's state
 * may be malformed: offsets out of order or past the edges, or a target past
 * the vertices, fail the push instead of looping or reading wild words. */
PRSTM_INLINE int graph_push(prstm_tx *tx) {
  uint64_t vertex = prstm_arg(tx, 0), round = prstm_arg(tx, 1);
  uint64_t nv = prstm_read_immutable(tx, 0), ne = prstm_read_immutable(tx, 1);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  if (!graph_layout_ok(prstm_nwords(tx), nv, ne)) return prstm_fail(tx, GRAPH_REASON_MALFORMED);
  if (vertex >= nv) return prstm_fail(tx, GRAPH_REASON_NO_VERTEX);
  if (round == UINT64_MAX) return prstm_fail(tx, GRAPH_REASON_ROUND);
  uint64_t begin = prstm_read_immutable(tx, graph_offsets_at() + vertex);
  uint64_t end = prstm_read_immutable(tx, graph_offsets_at() + vertex + 1);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  if (begin > end || end > ne) return prstm_fail(tx, GRAPH_REASON_MALFORMED);
  uint64_t values = graph_values_at(nv, ne), changed = graph_changed_at(nv, ne);
  uint64_t mine = prstm_read(tx, values + vertex);
  for (uint64_t i = begin; i < end && prstm_ok(tx); i++) {
    uint64_t u = prstm_read_immutable(tx, graph_targets_at(nv) + i);
    if (!prstm_ok(tx)) break;
    if (u >= nv) return prstm_fail(tx, GRAPH_REASON_MALFORMED);
    /* A duplicate edge reads its own buffered write and lowers nothing twice;
     * a self-loop never finds a larger value. */
    if (prstm_read(tx, values + u) > mine) {
      prstm_write(tx, values + u, mine);
      prstm_write(tx, changed + u, round + 1);
    }
  }
  return PRSTM_COMMIT;
}

/* value(vertex): the read-only query; its result is the vertex's value. */
PRSTM_INLINE int graph_value(prstm_tx *tx) {
  uint64_t vertex = prstm_arg(tx, 0);
  uint64_t nv = prstm_read_immutable(tx, 0), ne = prstm_read_immutable(tx, 1);
  if (!prstm_ok(tx)) return PRSTM_COMMIT;
  if (!graph_layout_ok(prstm_nwords(tx), nv, ne)) return prstm_fail(tx, GRAPH_REASON_MALFORMED);
  if (vertex >= nv) return prstm_fail(tx, GRAPH_REASON_NO_VERTEX);
  prstm_set_result(tx, prstm_read(tx, graph_values_at(nv, ne) + vertex));
  return PRSTM_COMMIT;
}

PRSTM_INLINE int graph_dispatch(prstm_tx *tx, unsigned type) {
  switch (type) {
    case GRAPH_PUSH:
      return graph_push(tx);
    case GRAPH_VALUE:
      return graph_value(tx);
    default:
      return prstm_fail(tx, PRSTM_REASON_BAD_ADDRESS);
  }
}

#endif /* GRAPH_BODY_H */
