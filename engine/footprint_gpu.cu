/* footprint_gpu.cu: a co-executed round's reconciliation on the GPU: the first unit's address log compared with the GPU unit's marks, its written locks listed, and words moved by lock lists. */
#include "cuda_check.h"
#include "footprint_log.h"

#define GPU_CHECK(call) CUDA_CHECK(call, err, errlen)

enum { FOOTPRINT_BLOCK = 256, FOOTPRINT_MAX_BLOCKS = 4096 };

/* Blocks for n items, one an item per thread and a grid-stride loop past
 * FOOTPRINT_MAX_BLOCKS. */
static unsigned footprint_blocks(uint64_t n) {
  const uint64_t b = (n + FOOTPRINT_BLOCK - 1) / FOOTPRINT_BLOCK;
  return b == 0 ? 1u : (b > FOOTPRINT_MAX_BLOCKS ? (unsigned)FOOTPRINT_MAX_BLOCKS : (unsigned)b);
}

/* Each warp walks the marks together, so that one lane takes the places of
 * all its lanes' written locks with one atomic: a round may write under a
 * lock in four. */
__global__ void footprint_list_written_kernel(const uint8_t *write_marks, uint64_t nlocks, uint64_t *list,
                                              unsigned long long *flags) {
  const unsigned lane = threadIdx.x % 32;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < nlocks; base += stride) {
    const uint64_t l = base + threadIdx.x;
    const int wrote = l < nlocks && write_marks[l];
    const unsigned ballot = __ballot_sync(0xffffffffu, wrote);
    if (!ballot) continue;
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(&flags[1], (unsigned long long)__popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (!wrote) continue;
    const uint64_t at = first + (uint64_t)__popc(ballot & ((1u << lane) - 1u));
    list[at] = l;
  }
}

__global__ void footprint_compare_kernel(const uint64_t *log, uint64_t first, uint64_t n, uint64_t nwritten,
                                         const uint8_t *read_marks, const uint8_t *write_marks,
                                         unsigned long long *flags) {
  unsigned fails = 0;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t k = first + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < first + n; k += stride) {
    const uint64_t l = log[k];
    fails |= footprint_log_check(k < nwritten, read_marks[l], write_marks[l]);
  }
  if (fails) atomicOr(&flags[0], (unsigned long long)fails);
}

__global__ void footprint_gather_kernel(const uint64_t *lock, uint64_t n, const uint64_t *words, uint64_t nwords,
                                        uint64_t coverage, uint64_t *compact) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    const uint64_t l = lock[k], m = footprint_lock_words(l, coverage, nwords);
    for (uint64_t j = 0; j < m; j++) compact[k * coverage + j] = words[l * coverage + j];
  }
}

__global__ void footprint_scatter_kernel(const uint64_t *lock, uint64_t n, uint64_t *words, uint64_t nwords,
                                         uint64_t coverage, const uint64_t *compact) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    const uint64_t l = lock[k], m = footprint_lock_words(l, coverage, nwords);
    for (uint64_t j = 0; j < m; j++) words[l * coverage + j] = compact[k * coverage + j];
  }
}

int footprint_gpu_list_written(const uint8_t *write_marks, uint64_t nlocks, uint64_t *list, unsigned long long *flags,
                               cudaStream_t stream, char *err, size_t errlen) {
  if (!nlocks) return 0;
  footprint_list_written_kernel<<<footprint_blocks(nlocks), FOOTPRINT_BLOCK, 0, stream>>>(write_marks, nlocks, list,
                                                                                          flags);
  GPU_CHECK(cudaGetLastError());
  return 0;
}

int footprint_gpu_compare(const uint64_t *log, uint64_t first, uint64_t n, uint64_t nwritten, const uint8_t *read_marks,
                          const uint8_t *write_marks, unsigned long long *flags, cudaStream_t stream, char *err,
                          size_t errlen) {
  if (!n) return 0;
  footprint_compare_kernel<<<footprint_blocks(n), FOOTPRINT_BLOCK, 0, stream>>>(log, first, n, nwritten, read_marks,
                                                                                write_marks, flags);
  GPU_CHECK(cudaGetLastError());
  return 0;
}

int footprint_gpu_gather(const uint64_t *lock, uint64_t n, const uint64_t *words, uint64_t nwords, uint64_t coverage,
                         uint64_t *compact, cudaStream_t stream, char *err, size_t errlen) {
  if (!n) return 0;
  footprint_gather_kernel<<<footprint_blocks(n), FOOTPRINT_BLOCK, 0, stream>>>(lock, n, words, nwords, coverage,
                                                                               compact);
  GPU_CHECK(cudaGetLastError());
  return 0;
}

int footprint_gpu_scatter(const uint64_t *lock, uint64_t n, uint64_t *words, uint64_t nwords, uint64_t coverage,
                          const uint64_t *compact, cudaStream_t stream, char *err, size_t errlen) {
  if (!n) return 0;
  footprint_scatter_kernel<<<footprint_blocks(n), FOOTPRINT_BLOCK, 0, stream>>>(lock, n, words, nwords, coverage,
                                                                                compact);
  GPU_CHECK(cudaGetLastError());
  return 0;
}
