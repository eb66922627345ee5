/* txtable.c: building the global transaction table in host memory: append, grow, presort, outcomes. */
#include "txtable.h"

#include <stdlib.h>
#include <string.h>

#ifdef PRSTM_HAVE_CUDA
/* In engine/backend_gpu.cu: cudaHostAlloc, or NULL without a usable GPU. */
void *prstm_gpu_host_alloc(size_t bytes);
void prstm_gpu_host_free(void *p);
#endif

void *txtable_alloc_columns(size_t bytes, int want_pinned, int *pinned) {
  *pinned = 0;
  if (bytes == 0) bytes = 1;
#ifdef PRSTM_HAVE_CUDA
  if (want_pinned) {
    void *p = prstm_gpu_host_alloc(bytes);
    if (p) {
      *pinned = 1;
      return p;
    }
  }
#else
  (void)want_pinned;
#endif
  return malloc(bytes);
}

void txtable_free_columns(void *p, int pinned) {
  if (!p) return;
#ifdef PRSTM_HAVE_CUDA
  if (pinned) {
    prstm_gpu_host_free(p);
    return;
  }
#else
  (void)pinned;
#endif
  free(p);
}

static int batch_create(prstm_batch **out, const prstm_workload *wl, int pinned) {
  if (!out || !wl) return PRSTM_EINVAL;
  prstm_batch *b = calloc(1, sizeof *b);
  if (!b) return PRSTM_ENOMEM;
  b->wl = wl;
  b->pinned = pinned;
  *out = b;
  return 0;
}

int prstm_batch_create(prstm_batch **out, const prstm_workload *wl) { return batch_create(out, wl, 0); }

/* The request is kept in b->pinned until the first allocation, which then
 * records what it got: where no GPU is, the batch is an ordinary one. */
int prstm_batch_create_pinned(prstm_batch **out, const prstm_workload *wl) { return batch_create(out, wl, 1); }

int prstm_batch_pinned(const prstm_batch *b) { return b && b->pinned && b->cap > 0; }

void prstm_batch_destroy(prstm_batch *b) {
  if (!b) return;
  txtable_free_columns(b->type, b->pinned);
  txtable_free_columns(b->status, b->pinned);
  txtable_free_columns(b->args, b->pinned);
  free(b->result);
  free(b->seq);
  free(b);
}

uint64_t prstm_batch_size(const prstm_batch *b) { return b ? b->n : 0; }
const prstm_workload *prstm_batch_workload(const prstm_batch *b) { return b ? b->wl : NULL; }

/* Re-strides the columns for a new capacity or column count; columns are
 * moved one by one because their stride changes with the capacity. The new
 * buffers come from the same kind of memory as the batch asked for; a
 * pinned batch whose first allocation found no GPU becomes an ordinary one. */
static int txtable_reshape(prstm_batch *b, uint64_t cap, uint32_t ncols) {
  if (ncols && cap > UINT64_MAX / 8 / ncols) return PRSTM_ENOMEM;
  const int want = b->pinned;
  int got_args = 0, got_type = 0, got_status = 0;
  uint64_t *args = NULL;
  uint8_t *type = NULL, *status = NULL;
  if (ncols) args = txtable_alloc_columns((size_t)cap * ncols * sizeof *args, want, &got_args);
  type = txtable_alloc_columns((size_t)cap, want, &got_type);
  status = txtable_alloc_columns((size_t)cap, want, &got_status);
  if ((ncols && !args) || !type || !status || (ncols && got_args != got_type) || got_type != got_status) {
    /* Mixed kinds (pinned memory ran out halfway) are given back: every
     * column of a batch is of one kind. */
    txtable_free_columns(args, got_args);
    txtable_free_columns(type, got_type);
    txtable_free_columns(status, got_status);
    return PRSTM_ENOMEM;
  }
  if (ncols) memset(args, 0, (size_t)cap * ncols * sizeof *args);
  for (uint32_t c = 0; c < b->ncols; c++)
    memcpy(args + (uint64_t)c * cap, b->args + (uint64_t)c * b->cap, (size_t)b->n * sizeof *args);
  if (b->n) {
    memcpy(type, b->type, (size_t)b->n);
    memcpy(status, b->status, (size_t)b->n);
  }
  const int old_kind = b->pinned && b->cap > 0;
  txtable_free_columns(b->args, old_kind);
  txtable_free_columns(b->type, old_kind);
  txtable_free_columns(b->status, old_kind);
  b->args = args;
  b->type = type;
  b->status = status;
  b->ncols = ncols;
  b->cap = cap;
  b->pinned = got_type;
  return 0;
}

int prstm_batch_reserve(prstm_batch *b, uint64_t rows, unsigned ncols) {
  if (!b || ncols > PRSTM_MAX_COLUMNS) return PRSTM_EINVAL;
  if (rows <= b->cap && ncols <= b->ncols) return 0;
  return txtable_reshape(b, rows > b->cap ? rows : b->cap, ncols > b->ncols ? ncols : b->ncols);
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
