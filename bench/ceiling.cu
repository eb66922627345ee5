/* ceiling.cu: the ceiling kernel: a bank batch with the engine's memory traffic per transaction and no conflict handling, every CUDA call checked. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ceiling.h"
#include "cuda_check.h"

/* The kernel's threads per block, the engine's own block size, so that a
 * thread count means the same launch shape for both. */
#define CEILING_BLOCK_THREADS PRSTM_POLICY_BLOCK_THREADS

/* Every CUDA call is checked by the engine's own check (cuda_check.h): a
 * failure becomes PRSTM_ECUDA with the call, the runtime's message and the
 * line, and the buffers are freed. */
#define CEILING_CHECK(call) CUDA_CHECK_GOTO(call, err, errlen, rc, out)

/* The same for the releases on the way out, which must not jump: the first
 * failure is kept, and every buffer is still released. */
#define CEILING_RELEASE(call)                                                                               \
  do {                                                                                                      \
    int ceiling_rc_ = cuda_check_error((call), #call, __FILE__, __LINE__, release_err, sizeof release_err); \
    if (ceiling_rc_ && rc == 0) {                                                                           \
      snprintf(err, errlen, "%s", release_err);                                                             \
      rc = ceiling_rc_;                                                                                     \
    }                                                                                                       \
  } while (0)

typedef struct ceiling_args {
  uint64_t *words, *locks;
  const uint8_t *op;
  const uint64_t *args;
  uint8_t *status;
  uint64_t *sink;
  uint64_t n, lock_coverage, threads;
  int direct; /* one CAS an account, straight to the final lock, instead of two */
} ceiling_args;

/* Runs the statements for each slot i below `used`. The small variant's loop
 * is unrolled to its constant CAP, which keeps the slots in registers; the
 * wide one's stays a loop, so that 128 slots do not bloat the code. */
#define CEILING_FOR_SLOTS(i, used, ...)                                       \
  if constexpr (CAP <= 4) {                                                   \
    _Pragma("unroll") for (unsigned i = 0; i < (unsigned)CAP; i++) {          \
      if (i < (used)) {                                                       \
        __VA_ARGS__                                                           \
      }                                                                       \
    }                                                                         \
  } else {                                                                    \
    _Pragma("unroll 1") for (unsigned i = 0; i < (used); i++) { __VA_ARGS__ } \
  }

/* The accounts a row touches and what it adds to each (two's complement for
 * a withdrawal), in at most CAP slots. */
template <int CAP>
__device__ __forceinline__ unsigned ceiling_decode(const ceiling_args &a, uint64_t row, unsigned op, uint64_t *account,
                                                   uint64_t *delta) {
  const uint64_t n = a.n;
  switch (op) {
    case PRSTM_BENCH_OP_DEPOSIT:
      account[0] = port_table_load_u64(&a.args[row]);
      delta[0] = port_table_load_u64(&a.args[n + row]);
      return 1;
    case PRSTM_BENCH_OP_WITHDRAW:
      account[0] = port_table_load_u64(&a.args[row]);
      delta[0] = 0 - port_table_load_u64(&a.args[n + row]);
      return 1;
    case PRSTM_BENCH_OP_TRANSFER: {
      uint64_t amount = port_table_load_u64(&a.args[2 * n + row]);
      account[0] = port_table_load_u64(&a.args[row]);
      delta[0] = 0 - amount;
      account[1] = port_table_load_u64(&a.args[n + row]);
      delta[1] = amount;
      return 2;
    }
    case PRSTM_BENCH_OP_MULTI: {
      uint64_t amount = port_table_load_u64(&a.args[n + row]), count = port_table_load_u64(&a.args[2 * n + row]);
      if (count + 1 > (uint64_t)CAP) count = CAP - 1; /* the host picks CAP to cover every row */
      /* Slot k < count is a source, slot count the target; written in one
       * loop so that the small variant's slot indices stay constants. */
      CEILING_FOR_SLOTS(k, (unsigned)count + 1, {
        const int source = k < count;
        account[k] = port_table_load_u64(&a.args[source ? (3 + k) * n + row : row]);
        delta[k] = source ? 0 - amount : amount * count;
      })
      return (unsigned)count + 1;
    }
    default:
      account[0] = port_table_load_u64(&a.args[row]);
      delta[0] = 0;
      return 1;
  }
}

/* The table is read and its statuses written through the engine's streaming
 * accesses (port_table_load_u8/u64, port_table_store_u8), so that the
 * ceiling has every advantage the engine has.
 *
 * Per account: the lock word (acquire) and the value, as a PR-STM read; two
 * CAS on the lock, as pre-lock and final lock (one, straight to the final
 * lock, with `direct`: the engine's direct path); then one fence, the value's
 * update and the lock's release with a new version; then the finish flag.
 * The bank's own first attempts take each lock with one fetch-and-or at the
 * read and load no lock word (PRSTM_FIRST_ATTEMPT_LOCKS), so the engine now
 * sends L2 fewer requests a transfer than this kernel does.
 * Every CAS result is ignored: no transaction ever waits, retries or aborts.
 * The update is an atomic add rather than a store, so that the result is the
 * same in every interleaving and can be checked against the serial reference
 * word for word; an add whose result is unused costs the L2 what a store does. */
template <int CAP>
__global__ void __launch_bounds__(CEILING_BLOCK_THREADS) ceiling_kernel(ceiling_args a) {
  const uint64_t rank = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (rank >= a.threads) return;
  const uint64_t prio = cmp_priority(0, (uint32_t)rank);
  uint64_t sink = 0;
  for (uint64_t row = rank; row < a.n; row += a.threads) {
    unsigned op = port_table_load_u8(&a.op[row]);
    uint64_t account[CAP], delta[CAP], version[CAP];
    unsigned m = ceiling_decode<CAP>(a, row, op, account, delta);
    CEILING_FOR_SLOTS(i, m, {
      uint64_t w = port_load_acquire(&a.locks[stm_lock_index(account[i], a.lock_coverage)]);
      sink += w ^ port_load_relaxed(&a.words[account[i]]);
      version[i] = stm_lock_version(w);
    })
    if (op != PRSTM_BENCH_OP_BALANCE) {
      CEILING_FOR_SLOTS(i, m, {
        uint64_t *lw = &a.locks[stm_lock_index(account[i], a.lock_coverage)];
        if (!a.direct)
          port_cas(lw, stm_lock_make(version[i], 0, 0), stm_lock_make(version[i], prio, STM_LOCK_PRELOCKED));
        port_cas(lw, stm_lock_make(version[i], a.direct ? 0 : prio, a.direct ? 0 : STM_LOCK_PRELOCKED),
                 stm_lock_make(version[i], prio, STM_LOCK_LOCKED));
      })
      port_fence_acq_rel();
      CEILING_FOR_SLOTS(i, m, atomicAdd((unsigned long long *)&a.words[account[i]], (unsigned long long)delta[i]);)
      CEILING_FOR_SLOTS(i, m, {
        port_store_relaxed(&a.locks[stm_lock_index(account[i], a.lock_coverage)], stm_lock_make(version[i] + 1, 0, 0));
      })
    }
    port_table_store_u8(&a.status[row], PRSTM_COMMITTED);
  }
  /* The loads are volatile and stay anyway; the sink only makes their use
   * visible, and is written by no thread in practice. */
  if (sink == 0x9e3779b97f4a7c15ull) a.sink[0] = sink;
}

/* Threads the GPU keeps resident for a kernel: SMs times blocks per SM. */
template <int CAP>
static cudaError_t ceiling_full_threads(uint32_t *threads) {
  int dev = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ceiling_kernel<CAP>, CEILING_BLOCK_THREADS, 0);
  *threads = (uint32_t)(sms * per_sm) * CEILING_BLOCK_THREADS;
  return e;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

extern "C" unsigned prstm_bench_gpu_count(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (unsigned)count;
}

extern "C" int prstm_bench_ceiling_gpu(const prstm_bench_table *t, const prstm_word *initial, uint64_t nwords,
                                       uint32_t lock_coverage, uint32_t threads, int direct_locks,
                                       prstm_word *final_words, prstm_bench_ceiling_result *res, char *err,
                                       size_t errlen) {
  memset(res, 0, sizeof *res);
  int rc = 0;
  char release_err[512];
  ceiling_args a;
  memset(&a, 0, sizeof a);
  cudaEvent_t start = NULL, stop = NULL;
  uint8_t *op = NULL, *status = NULL, *host_status = NULL;
  uint64_t *args = NULL;
  const int wide = t->max_accounts > 4;
  const uint64_t nlocks = (nwords + lock_coverage - 1) / lock_coverage;
  int count = 0;
  cudaDeviceProp prop;
  float ms = 0;
  unsigned blocks = 0;
  double t0 = wall_now();
  if (lock_coverage == 0 || t->n == 0 || nwords == 0) {
    snprintf(err, errlen, "the ceiling needs rows, words and a lock coverage of at least 1");
    return PRSTM_EINVAL;
  }
  {
    cudaError_t probe = cudaGetDeviceCount(&count);
    if (probe != cudaSuccess || count == 0) {
      snprintf(err, errlen, "no usable GPU: %s", probe != cudaSuccess ? cudaGetErrorString(probe) : "no CUDA device");
      cudaGetLastError();
      return PRSTM_ENOGPU;
    }
  }
  CEILING_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (threads == 0) {
    if (wide)
      CEILING_CHECK(ceiling_full_threads<PRSTM_BENCH_MAX_ACCOUNTS>(&threads));
    else
      CEILING_CHECK(ceiling_full_threads<4>(&threads));
  }
  blocks = (threads + CEILING_BLOCK_THREADS - 1) / CEILING_BLOCK_THREADS;
  res->threads = threads;
  snprintf(res->device, sizeof res->device, "%.80s (%d SMs; %u threads)", prop.name, prop.multiProcessorCount, threads);

  CEILING_CHECK(cudaMalloc((void **)&a.words, 8 * nwords));
  CEILING_CHECK(cudaMalloc((void **)&a.locks, 8 * nlocks));
  CEILING_CHECK(cudaMalloc((void **)&op, t->n));
  CEILING_CHECK(cudaMalloc((void **)&args, 8 * t->n * t->ncols));
  CEILING_CHECK(cudaMalloc((void **)&status, t->n));
  CEILING_CHECK(cudaMalloc((void **)&a.sink, 8));
  res->gpu_bytes = 8 * nwords + 8 * nlocks + t->n + 8 * t->n * t->ncols + t->n + 8;
  CEILING_CHECK(cudaMemcpy(a.words, initial, 8 * nwords, cudaMemcpyHostToDevice));
  CEILING_CHECK(cudaMemset(a.locks, 0, 8 * nlocks));
  CEILING_CHECK(cudaMemcpy(op, t->op, t->n, cudaMemcpyHostToDevice));
  CEILING_CHECK(cudaMemcpy(args, t->args, 8 * t->n * t->ncols, cudaMemcpyHostToDevice));
  CEILING_CHECK(cudaMemset(status, 0, t->n));
  CEILING_CHECK(cudaMemset(a.sink, 0, 8));
  a.op = op;
  a.args = args;
  a.status = status;
  a.n = t->n;
  a.lock_coverage = lock_coverage;
  a.threads = threads;
  a.direct = direct_locks != 0;
  CEILING_CHECK(cudaEventCreate(&start));
  CEILING_CHECK(cudaEventCreate(&stop));
  CEILING_CHECK(cudaDeviceSynchronize());
  CEILING_CHECK(cudaEventRecord(start));
  if (wide)
    ceiling_kernel<PRSTM_BENCH_MAX_ACCOUNTS><<<blocks, CEILING_BLOCK_THREADS>>>(a);
  else
    ceiling_kernel<4><<<blocks, CEILING_BLOCK_THREADS>>>(a);
  CEILING_CHECK(cudaGetLastError());
  CEILING_CHECK(cudaEventRecord(stop));
  CEILING_CHECK(cudaEventSynchronize(stop));
  CEILING_CHECK(cudaGetLastError());
  CEILING_CHECK(cudaEventElapsedTime(&ms, start, stop));
  res->kernel_s = ms / 1000.0;
  CEILING_CHECK(cudaMemcpy(final_words, a.words, 8 * nwords, cudaMemcpyDeviceToHost));
  host_status = (uint8_t *)malloc((size_t)t->n);
  if (!host_status) {
    snprintf(err, errlen, "cannot allocate %llu finish flags", (unsigned long long)t->n);
    rc = PRSTM_ENOMEM;
    goto out;
  }
  CEILING_CHECK(cudaMemcpy(host_status, status, t->n, cudaMemcpyDeviceToHost));
  res->e2e_s = wall_now() - t0;
  for (uint64_t i = 0; i < t->n; i++) res->finished += host_status[i] == PRSTM_COMMITTED;
out:
  free(host_status);
  /* Releases are checked too; the first error is the one reported. */
  CEILING_RELEASE(start ? cudaEventDestroy(start) : cudaSuccess);
  CEILING_RELEASE(stop ? cudaEventDestroy(stop) : cudaSuccess);
  CEILING_RELEASE(cudaFree(a.words));
  CEILING_RELEASE(cudaFree(a.locks));
  CEILING_RELEASE(cudaFree(op));
  CEILING_RELEASE(cudaFree(args));
  CEILING_RELEASE(cudaFree(status));
  CEILING_RELEASE(cudaFree(a.sink));
  return rc;
}
