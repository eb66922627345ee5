/* delta_gpu.cu: the delta path on the GPU: the batch's steps sorted by word, each word's steps scanned and checked, then the sums applied. */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda_check.h"
#include "delta.h"

#define GPU_CHECK(call) CUDA_CHECK(call, err, errlen)

/* Set by any step the proof cannot take (an address out of range, an amount
 * too large) or any running value out of [0, 2^64). */
enum { DELTA_REFUSED_STEP = 1, DELTA_REFUSED_VALUE = 2 };

/* The table's argument columns as cmp_delta_step reads them. */
__device__ static txtable_view delta_view(const delta_gpu_table *t) {
  txtable_view v;
  memset(&v, 0, sizeof v);
  v.n = t->n;
  v.stride = t->n;
  v.ncols = t->ncols;
  v.narrow_args = t->narrow_args;
  v.args = (uint64_t *)t->args;
  return v;
}

/* Step slot e = r * slots + k of row r: its word as the sort key (nwords for
 * an empty slot, which sorts after every word) and its id. */
__global__ void delta_emit_kernel(delta_gpu_table t, cmp_delta_plan plan, uint32_t *keys, uint32_t *ids,
                                  uint32_t *refused) {
  const txtable_view v = delta_view(&t);
  const uint64_t total = t.n * plan.slots;
  for (uint64_t e = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; e < total; e += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t r = e / plan.slots;
    const unsigned k = (unsigned)(e % plan.slots);
    uint64_t word = t.nwords;
    int64_t delta = 0;
    int s = cmp_delta_step(&plan, &v, t.nwords, r, t.type[r], k, &word, &delta);
    if (s < 0) atomicOr(refused, DELTA_REFUSED_STEP);
    keys[e] = s > 0 ? (uint32_t)word : (uint32_t)t.nwords;
    ids[e] = (uint32_t)e;
  }
}

/* The signed amount of each sorted step, for the scan by word. */
__global__ void delta_gather_kernel(delta_gpu_table t, cmp_delta_plan plan, const uint32_t *keys, const uint32_t *ids,
                                    uint64_t total, int64_t *amounts) {
  const txtable_view v = delta_view(&t);
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total; i += (uint64_t)gridDim.x * blockDim.x) {
    int64_t delta = 0;
    if (keys[i] < t.nwords) {
      const uint64_t r = ids[i] / plan.slots;
      uint64_t word;
      cmp_delta_step(&plan, &v, t.nwords, r, t.type[r], ids[i] % plan.slots, &word, &delta);
    }
    amounts[i] = delta;
  }
}

/* Every step's value after it, from the word's initial value and the running
 * sum of its steps: one out of range refuses the proof. The value before the
 * step is what the body read there, kept by step id for the read hashes. */
__global__ void delta_check_kernel(delta_gpu_table t, const uint32_t *keys, const uint32_t *ids, const int64_t *amounts,
                                   const int64_t *sums, uint64_t total, uint64_t *read, uint32_t *refused) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total; i += (uint64_t)gridDim.x * blockDim.x) {
    const uint32_t w = keys[i];
    if (w >= t.nwords) continue;
    uint64_t after;
    if (!cmp_delta_value(t.words[w], sums[i], &after)) {
      atomicOr(refused, DELTA_REFUSED_VALUE);
      continue;
    }
    read[ids[i]] = after - (uint64_t)amounts[i];
  }
}

/* With the proof held: each word's last step writes its final value (only
 * that thread touches the word), and every row commits in batch order. */
__global__ void delta_apply_words_kernel(delta_gpu_table t, const uint32_t *keys, const int64_t *sums, uint64_t total,
                                         const uint32_t *refused) {
  if (*refused) return;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total; i += (uint64_t)gridDim.x * blockDim.x) {
    const uint32_t w = keys[i];
    if (w >= t.nwords || (i + 1 < total && keys[i + 1] == w)) continue;
    uint64_t after = 0;
    cmp_delta_value(t.words[w], sums[i], &after);
    t.words[w] = after;
  }
}

__global__ void delta_apply_rows_kernel(delta_gpu_table t, cmp_delta_plan plan, const uint64_t *read,
                                        const uint32_t *refused) {
  if (*refused) return;
  const txtable_view v = delta_view(&t);
  for (uint64_t r = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; r < t.n; r += (uint64_t)gridDim.x * blockDim.x) {
    t.status[r] = txtable_pack_status(TXTABLE_COMMITTED, TXTABLE_REASON_NONE);
    if (t.seq) t.seq[r] = r;
    const int result = t.result && plan.result_sum[t.type[r]];
    if (t.read_hash || result) {
      uint64_t h, sum;
      cmp_delta_row_reads(&plan, &v, t.nwords, r, t.type[r], read, &h, &sum);
      if (t.read_hash) t.read_hash[r] = h;
      if (result) t.result[r] = sum;
    }
  }
}

/* Device buffers of one proof, carved from one allocation: one cudaMalloc
 * and one cudaFree instead of nine of each, around kernels that take a few
 * milliseconds. */
typedef struct delta_buffers {
  void *block;
  uint32_t *keys_in, *keys_out, *ids_in, *ids_out, *refused;
  int64_t *amounts, *sums;
  uint64_t *read;
  void *temp;
  cudaEvent_t start, stop;
} delta_buffers;

static void delta_free(delta_buffers *d) {
  cudaFree(d->block);
  if (d->start) cudaEventDestroy(d->start);
  if (d->stop) cudaEventDestroy(d->stop);
}

/* The next `bytes` of the block at *at, kept 256-byte aligned. */
static void *delta_carve(char *block, size_t *at, size_t bytes) {
  void *p = block + *at;
  *at += (bytes + 255) & ~(size_t)255;
  return p;
}

static int delta_gpu_run_checked(const delta_gpu_table *t, const cmp_delta_plan *plan, delta_buffers *d, int *applied,
                                 float *ms, char *err, size_t errlen) {
  const uint64_t total = t->n * plan->slots;
  /* Sort only the bits a word (or the empty slots' nwords) needs: a hot
   * state of a few words sorts in one pass. */
  int end_bit = 1;
  while (end_bit < 32 && (t->nwords >> end_bit) != 0) end_bit++;
  size_t sort_bytes = 0, scan_bytes = 0;
  GPU_CHECK(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, d->keys_in, d->keys_out, d->ids_in, d->ids_out,
                                            (int64_t)total, 0, end_bit));
  GPU_CHECK(cub::DeviceScan::InclusiveSumByKey(NULL, scan_bytes, d->keys_out, d->amounts, d->sums, (int64_t)total));
  const size_t temp_bytes = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
  /* Four 32-bit and three 64-bit arrays of a step each, the temporary
   * storage and each piece's alignment: where they do not fit, the STM runs
   * the batch. */
  const uint64_t need = total * (4 * 4 + 3 * 8) + temp_bytes + 4 + 10 * 256;
  size_t free_b = 0, total_b = 0;
  GPU_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need + (64ull << 20) > free_b) return 0;
  GPU_CHECK(cudaMalloc(&d->block, need));
  size_t at = 0;
  char *base = (char *)d->block;
  d->keys_in = (uint32_t *)delta_carve(base, &at, 4 * total);
  d->keys_out = (uint32_t *)delta_carve(base, &at, 4 * total);
  d->ids_in = (uint32_t *)delta_carve(base, &at, 4 * total);
  d->ids_out = (uint32_t *)delta_carve(base, &at, 4 * total);
  d->amounts = (int64_t *)delta_carve(base, &at, 8 * total);
  d->sums = (int64_t *)delta_carve(base, &at, 8 * total);
  d->read = (uint64_t *)delta_carve(base, &at, 8 * total);
  d->refused = (uint32_t *)delta_carve(base, &at, 4);
  d->temp = delta_carve(base, &at, temp_bytes ? temp_bytes : 1);
  GPU_CHECK(cudaMemset(d->refused, 0, 4));
  GPU_CHECK(cudaEventCreate(&d->start));
  GPU_CHECK(cudaEventCreate(&d->stop));

  int sms = 0;
  GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned block = 256, grid = (unsigned)sms * 8;
  GPU_CHECK(cudaEventRecord(d->start));
  delta_emit_kernel<<<grid, block>>>(*t, *plan, d->keys_in, d->ids_in, d->refused);
  GPU_CHECK(cudaGetLastError());
  size_t bytes = temp_bytes;
  GPU_CHECK(cub::DeviceRadixSort::SortPairs(d->temp, bytes, d->keys_in, d->keys_out, d->ids_in, d->ids_out,
                                            (int64_t)total, 0, end_bit));
  delta_gather_kernel<<<grid, block>>>(*t, *plan, d->keys_out, d->ids_out, total, d->amounts);
  GPU_CHECK(cudaGetLastError());
  bytes = temp_bytes;
  GPU_CHECK(cub::DeviceScan::InclusiveSumByKey(d->temp, bytes, d->keys_out, d->amounts, d->sums, (int64_t)total));
  delta_check_kernel<<<grid, block>>>(*t, d->keys_out, d->ids_out, d->amounts, d->sums, total, d->read, d->refused);
  GPU_CHECK(cudaGetLastError());
  delta_apply_rows_kernel<<<grid, block>>>(*t, *plan, d->read, d->refused);
  GPU_CHECK(cudaGetLastError());
  /* The words last: the rows' kernel does not read them, and each word is
   * read and written by one thread. */
  delta_apply_words_kernel<<<grid, block>>>(*t, d->keys_out, d->sums, total, d->refused);
  GPU_CHECK(cudaGetLastError());
  GPU_CHECK(cudaEventRecord(d->stop));
  uint32_t refused = 0;
  GPU_CHECK(cudaMemcpy(&refused, d->refused, 4, cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaEventElapsedTime(ms, d->start, d->stop));
  *applied = refused == 0;
  return 0;
}

extern "C" int delta_gpu_run(const delta_gpu_table *t, const cmp_delta_plan *plan, int *applied, float *ms, char *err,
                             size_t errlen) {
  delta_buffers d;
  memset(&d, 0, sizeof d);
  *applied = 0;
  *ms = 0;
  int rc = delta_gpu_run_checked(t, plan, &d, applied, ms, err, errlen);
  delta_free(&d);
  return rc;
}
