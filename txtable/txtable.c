/* txtable.c: building the global transaction table in host memory: append, grow, presort, outcomes. */
#include "txtable.h"

#include <stdlib.h>
#include <string.h>

int prstm_batch_create(prstm_batch **out, const prstm_workload *wl) {
  if (!out || !wl) return PRSTM_EINVAL;
  prstm_batch *b = calloc(1, sizeof *b);
  if (!b) return PRSTM_ENOMEM;
  b->wl = wl;
  *out = b;
  return 0;
}

void prstm_batch_destroy(prstm_batch *b) {
  if (!b) return;
  free(b->type);
  free(b->status);
  free(b->args);
  free(b->result);
  free(b->seq);
  free(b);
}

uint64_t prstm_batch_size(const prstm_batch *b) { return b ? b->n : 0; }
const prstm_workload *prstm_batch_workload(const prstm_batch *b) { return b ? b->wl : NULL; }

/* Re-strides the column buffer for a new capacity or column count; columns
 * are moved one by one because their stride changes with the capacity. */
static int txtable_reshape(prstm_batch *b, uint64_t cap, uint32_t ncols) {
  if (ncols && cap > UINT64_MAX / 8 / ncols) return PRSTM_ENOMEM;
  uint64_t *args = ncols ? calloc((size_t)cap * ncols, sizeof *args) : NULL;
  if (ncols && !args) return PRSTM_ENOMEM;
  for (uint32_t c = 0; c < b->ncols; c++)
    memcpy(args + (uint64_t)c * cap, b->args + (uint64_t)c * b->cap, (size_t)b->n * sizeof *args);
  free(b->args);
  b->args = args;
  b->ncols = ncols;
  if (cap != b->cap) {
    uint8_t *type = realloc(b->type, (size_t)cap);
    if (!type) return PRSTM_ENOMEM;
    b->type = type;
    uint8_t *status = realloc(b->status, (size_t)cap);
    if (!status) return PRSTM_ENOMEM;
    b->status = status;
    b->cap = cap;
  }
  return 0;
}

int prstm_batch_append(prstm_batch *b, unsigned type, const prstm_word *args, unsigned nargs) {
  if (!b || type >= b->wl->ntypes || (nargs && !args)) return PRSTM_EINVAL;
  if (nargs > PRSTM_MAX_COLUMNS) return PRSTM_EINVAL;
  const prstm_type_desc *t = &b->wl->types[type];
  if (t->tag > PRSTM_MAX_TAG) return PRSTM_EINVAL;
  if (b->n == b->cap || nargs > b->ncols) {
    uint64_t cap = b->n == b->cap ? (b->cap ? b->cap * 2 : 1024) : b->cap;
    int rc = txtable_reshape(b, cap, nargs > b->ncols ? nargs : b->ncols);
    if (rc) return rc;
  }
  uint64_t row = b->n++;
  b->type[row] = (uint8_t)type;
  b->status[row] = 0;
  for (uint32_t c = 0; c < b->ncols; c++) b->args[(uint64_t)c * b->cap + row] = c < nargs ? args[c] : 0;
  b->tag_mask |= 1u << t->tag;
  if (t->read_only) b->has_read_only = 1;
  return 0;
}

int prstm_batch_presort(prstm_batch *b) {
  if (!b) return PRSTM_EINVAL;
  if (b->n < 2) return 0;
  /* A counting sort by tag is stable and linear. */
  uint64_t start[PRSTM_MAX_TAG + 2] = {0};
  for (uint64_t i = 0; i < b->n; i++) start[PRSTM_MAX_TAG - b->wl->types[b->type[i]].tag + 1]++;
  for (int k = 1; k <= PRSTM_MAX_TAG + 1; k++) start[k] += start[k - 1];
  uint64_t *perm = malloc((size_t)b->n * sizeof *perm);
  uint8_t *bytes = malloc((size_t)b->n);
  uint64_t *col = malloc((size_t)b->n * sizeof *col);
  if (!perm || !bytes || !col) {
    free(perm);
    free(bytes);
    free(col);
    return PRSTM_ENOMEM;
  }
  for (uint64_t i = 0; i < b->n; i++) perm[start[PRSTM_MAX_TAG - b->wl->types[b->type[i]].tag]++] = i;
  for (uint64_t i = 0; i < b->n; i++) bytes[i] = b->type[perm[i]];
  memcpy(b->type, bytes, (size_t)b->n);
  for (uint64_t i = 0; i < b->n; i++) bytes[i] = b->status[perm[i]];
  memcpy(b->status, bytes, (size_t)b->n);
  for (uint32_t c = 0; c < b->ncols; c++) {
    uint64_t *src = b->args + (uint64_t)c * b->cap;
    for (uint64_t i = 0; i < b->n; i++) col[i] = src[perm[i]];
    memcpy(src, col, (size_t)b->n * sizeof *col);
  }
  free(perm);
  free(bytes);
  free(col);
  return 0;
}

int txtable_prepare_run(prstm_batch *b, int verify) {
  memset(b->status, 0, (size_t)b->n);
  free(b->seq);
  b->seq = NULL;
  if (verify) {
    b->seq = malloc((size_t)(b->cap ? b->cap : 1) * sizeof *b->seq);
    if (!b->seq) return PRSTM_ENOMEM;
    memset(b->seq, 0xff, (size_t)b->n * sizeof *b->seq);
  }
  if (b->has_read_only) {
    free(b->result);
    b->result = calloc((size_t)(b->cap ? b->cap : 1), sizeof *b->result);
    if (!b->result) return PRSTM_ENOMEM;
  }
  return 0;
}

uint64_t txtable_device_bytes(const prstm_batch *b, int verify) {
  uint64_t per_row = 2 + 8ull * b->ncols + (b->has_read_only ? 8 : 0) + (verify ? 8 : 0);
  return per_row * b->n;
}

int prstm_batch_outcome(const prstm_batch *b, uint64_t i, prstm_status *status, unsigned *reason,
                        prstm_word *result) {
  if (!b || i >= b->n) return PRSTM_EINVAL;
  uint8_t s = b->status[i];
  if (status) *status = (prstm_status)(s & PRSTM_STATUS_MASK);
  if (reason) *reason = s >> PRSTM_STATUS_REASON_SHIFT;
  if (result) *result = b->result ? b->result[i] : 0;
  return 0;
}

unsigned prstm_batch_type(const prstm_batch *b, uint64_t i) { return b && i < b->n ? b->type[i] : 0; }

prstm_word prstm_batch_arg(const prstm_batch *b, uint64_t i, unsigned col) {
  if (!b || i >= b->n || col >= b->ncols) return 0;
  return b->args[(uint64_t)col * b->cap + i];
}
