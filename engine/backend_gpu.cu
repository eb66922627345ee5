/* backend_gpu.cu: the GPU backend: device memory, upload, the checked cooperative launch of the persistent kernel, readback. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"

/* Every CUDA call goes through this: a failure becomes PRSTM_ECUDA with the
 * call, the runtime's message and where it happened, never a silent result. */
#define GPU_CHECK(call)                                                                         \
  do {                                                                                          \
    cudaError_t gpu_check_err_ = (call);                                                        \
    if (gpu_check_err_ != cudaSuccess) {                                                        \
      snprintf(err, errlen, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(gpu_check_err_), \
               __FILE__, __LINE__);                                                             \
      return PRSTM_ECUDA;                                                                       \
    }                                                                                           \
  } while (0)

extern "C" int prstm_gpu_probe(char *why, size_t whylen) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    if (rc == cudaErrorInsufficientDriver)
      snprintf(why, whylen, "no NVIDIA driver, or one older than this build's CUDA runtime");
    else
      snprintf(why, whylen, "%s", cudaGetErrorString(rc));
    cudaGetLastError();
    return 0;
  }
  if (count == 0) {
    snprintf(why, whylen, "no CUDA device found");
    return 0;
  }
  /* The persistent kernel needs cooperative launch; without it auto falls
   * back to the CPU rather than failing later. */
  int coop = 0;
  rc = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
  if (rc != cudaSuccess || !coop) {
    snprintf(why, whylen, "the GPU does not support cooperative launches, which the persistent kernel needs");
    cudaGetLastError();
    return 0;
  }
  return 1;
}

static int gpu_resident_blocks(const void *kernel, int *blocks, char *err, size_t errlen) {
  int dev = 0, sms = 0, per_sm = 0, coop = 0;
  GPU_CHECK(cudaGetDevice(&dev));
  GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  GPU_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) {
    snprintf(err, errlen, "the GPU does not support cooperative launches, which the persistent kernel needs");
    return PRSTM_ENOGPU;
  }
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, PRSTM_GPU_BLOCK_THREADS, 0));
  *blocks = per_sm * sms;
  return 0;
}

extern "C" int prstm_gpu_kernel_max_threads(const void *kernel, uint32_t *max_threads, char *err, size_t errlen) {
  int blocks = 0;
  int rc = gpu_resident_blocks(kernel, &blocks, err, errlen);
  if (rc) return rc;
  *max_threads = (uint32_t)blocks * PRSTM_GPU_BLOCK_THREADS;
  return 0;
}

/* The kernel's threads wait for each other at quiescence, so every block must
 * be resident at once: a cooperative launch guarantees that or fails. */
extern "C" int prstm_gpu_launch_kernel(const void *kernel, const prstm_exec_ctx *ctx, uint32_t threads, char *err,
                                       size_t errlen) {
  int resident = 0;
  int rc = gpu_resident_blocks(kernel, &resident, err, errlen);
  if (rc) return rc;
  unsigned blocks = (threads + PRSTM_GPU_BLOCK_THREADS - 1) / PRSTM_GPU_BLOCK_THREADS;
  if (blocks > (unsigned)resident) {
    snprintf(err, errlen, "%u threads requested; this GPU keeps at most %u resident for this kernel", threads,
             (unsigned)resident * PRSTM_GPU_BLOCK_THREADS);
    return PRSTM_EINVAL;
  }
  prstm_exec_ctx arg = *ctx;
  void *params[] = {&arg};
  GPU_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(PRSTM_GPU_BLOCK_THREADS), params, 0, 0));
  GPU_CHECK(cudaGetLastError());
  return 0;
}

/* Device buffers of one run, freed together on every path. */
typedef struct gpu_buffers {
  uint64_t *words, *locks, *args, *result, *seq, *quiesce;
  uint8_t *type, *status;
  prstm_thread_stats *stats;
  cudaEvent_t start, stop;
  cudaStream_t monitor;
  uint64_t *host_words; /* pinned: progress read and stop flag written while the kernel runs */
} gpu_buffers;

static void gpu_free(gpu_buffers *g) {
  cudaFree(g->words);
  cudaFree(g->locks);
  cudaFree(g->args);
  cudaFree(g->result);
  cudaFree(g->seq);
  cudaFree(g->quiesce);
  cudaFree(g->type);
  cudaFree(g->status);
  cudaFree(g->stats);
  if (g->start) cudaEventDestroy(g->start);
  if (g->stop) cudaEventDestroy(g->stop);
  if (g->monitor) cudaStreamDestroy(g->monitor);
  if (g->host_words) cudaFreeHost(g->host_words);
}

/* Waits for the kernel while watching its published progress through a
 * non-blocking stream; after watchdog_s seconds without progress it sets the
 * stop word, which every thread polls, and reports the stall. The same copy
 * of the progress words feeds the engine's progress observer. */
static int gpu_wait_watched(prstm_engine *e, const prstm_batch *b, gpu_buffers *g, prstm_progress_clock *progress_clock,
                            int *stalled, char *err, size_t errlen) {
  GPU_CHECK(cudaStreamCreateWithFlags(&g->monitor, cudaStreamNonBlocking));
  GPU_CHECK(cudaMallocHost((void **)&g->host_words, (PRSTM_Q_WORDS + 1) * sizeof(uint64_t)));
  uint64_t *seen = g->host_words;                   /* the progress words, as last copied */
  uint64_t *stop_flag = g->host_words + PRSTM_Q_WORDS; /* the source of the stop word */
  uint64_t last = 0;
  double last_t = prstm_now();
  *stalled = 0;
  for (;;) {
    cudaError_t q = cudaEventQuery(g->stop);
    if (q == cudaSuccess) return 0;
    if (q != cudaErrorNotReady) GPU_CHECK(q);
    struct timespec pause_ts = {0, 20 * 1000 * 1000};
    nanosleep(&pause_ts, NULL);
    GPU_CHECK(cudaMemcpyAsync(seen, g->quiesce, PRSTM_Q_WORDS * sizeof(uint64_t), cudaMemcpyDeviceToHost, g->monitor));
    GPU_CHECK(cudaStreamSynchronize(g->monitor));
    prstm_progress_report(e, b, seen, progress_clock, 0);
    double now = prstm_now();
    uint64_t decided = seen[PRSTM_Q_COMMITTED] + seen[PRSTM_Q_FAILED];
    if (decided != last) {
      last = decided;
      last_t = now;
    } else if (e->opt.watchdog_s && !*stalled && now - last_t > e->opt.watchdog_s) {
      *stalled = 1;
      *stop_flag = 1;
      GPU_CHECK(cudaMemcpyAsync(&g->quiesce[PRSTM_Q_STOP], stop_flag, sizeof(uint64_t), cudaMemcpyHostToDevice,
                                g->monitor));
      GPU_CHECK(cudaStreamSynchronize(g->monitor));
    }
  }
}

/* Allocates the run's device buffers and uploads the state and the table;
 * ctx then points into device memory. */
static int gpu_upload(const prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx,
                      gpu_buffers *g, char *err, size_t errlen) {
  GPU_CHECK(cudaMalloc((void **)&g->words, 8 * e->nwords));
  GPU_CHECK(cudaMalloc((void **)&g->locks, 8 * ctx->nlocks));
  if (b->ncols) GPU_CHECK(cudaMalloc((void **)&g->args, 8 * (size_t)b->ncols * b->n));
  if (b->has_read_only) GPU_CHECK(cudaMalloc((void **)&g->result, 8 * b->n));
  if (b->seq) GPU_CHECK(cudaMalloc((void **)&g->seq, 8 * b->n));
  GPU_CHECK(cudaMalloc((void **)&g->quiesce, 8 * PRSTM_Q_WORDS));
  GPU_CHECK(cudaMalloc((void **)&g->type, b->n));
  GPU_CHECK(cudaMalloc((void **)&g->status, b->n));
  GPU_CHECK(cudaMalloc((void **)&g->stats, sizeof(prstm_thread_stats) * threads));
  GPU_CHECK(cudaMemcpy(g->words, e->words, 8 * e->nwords, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemset(g->locks, 0, 8 * ctx->nlocks));
  for (uint32_t c = 0; c < b->ncols; c++)
    GPU_CHECK(cudaMemcpy(g->args + (size_t)c * b->n, b->args + (size_t)c * b->cap, 8 * b->n, cudaMemcpyHostToDevice));
  if (g->result) GPU_CHECK(cudaMemset(g->result, 0, 8 * b->n));
  if (g->seq) GPU_CHECK(cudaMemset(g->seq, 0xff, 8 * b->n));
  GPU_CHECK(cudaMemset(g->quiesce, 0, 8 * PRSTM_Q_WORDS));
  GPU_CHECK(cudaMemcpy(g->type, b->type, b->n, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemset(g->status, 0, b->n));
  GPU_CHECK(cudaMemset(g->stats, 0, sizeof(prstm_thread_stats) * threads));
  GPU_CHECK(cudaDeviceSynchronize());

  ctx->words = g->words;
  ctx->locks = g->locks;
  ctx->table.type = g->type;
  ctx->table.status = g->status;
  ctx->table.args = g->args;
  ctx->table.result = g->result;
  ctx->table.seq = g->seq;
  ctx->stats = g->stats;
  ctx->quiesce = g->quiesce;
  return 0;
}

/* Launches the persistent kernel and waits for it under the watchdog; on
 * success the observer gets the finished report, from the progress words
 * every thread published before it left. */
static int gpu_execute(prstm_engine *e, const prstm_batch *b, const prstm_worker_variant *v, const prstm_exec_ctx *ctx,
                       uint32_t threads, gpu_buffers *g, prstm_results *res, int *stalled, char *err, size_t errlen) {
  GPU_CHECK(cudaEventCreate(&g->start));
  GPU_CHECK(cudaEventCreate(&g->stop));
  GPU_CHECK(cudaEventRecord(g->start));
  double t0 = prstm_now();
  prstm_progress_clock progress_clock = {t0, t0};
  int rc = v->gpu_launch(ctx, threads, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaEventRecord(g->stop));
  rc = gpu_wait_watched(e, b, g, &progress_clock, stalled, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaEventSynchronize(g->stop));
  GPU_CHECK(cudaGetLastError());
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, g->start, g->stop));
  res->execute_s = ms / 1000.0;
  if (*stalled) return 0;
  GPU_CHECK(cudaMemcpy(g->host_words, g->quiesce, PRSTM_Q_WORDS * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  prstm_progress_report(e, b, g->host_words, &progress_clock, 1);
  return 0;
}

/* Copies the final state, the table's outcomes and the threads' counters back. */
static int gpu_readback(prstm_engine *e, prstm_batch *b, uint32_t threads, gpu_buffers *g, prstm_results *res,
                        char *err, size_t errlen) {
  GPU_CHECK(cudaMemcpy(e->words, g->words, 8 * e->nwords, cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(b->status, g->status, b->n, cudaMemcpyDeviceToHost));
  if (g->result) GPU_CHECK(cudaMemcpy(b->result, g->result, 8 * b->n, cudaMemcpyDeviceToHost));
  if (g->seq) GPU_CHECK(cudaMemcpy(b->seq, g->seq, 8 * b->n, cudaMemcpyDeviceToHost));
  prstm_thread_stats *stats = (prstm_thread_stats *)calloc(threads, sizeof *stats);
  if (!stats) {
    snprintf(err, errlen, "cannot allocate %u thread counters", threads);
    return PRSTM_ENOMEM;
  }
  cudaError_t crc = cudaMemcpy(stats, g->stats, sizeof *stats * threads, cudaMemcpyDeviceToHost);
  if (crc != cudaSuccess) {
    free(stats);
    GPU_CHECK(crc);
  }
  for (uint32_t i = 0; i < threads; i++) prstm_results_add_stats(res, &stats[i]);
  free(stats);
  return 0;
}

static int gpu_run_checked(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                           gpu_buffers *g, char *err, size_t errlen) {
  int rc;
  uint32_t max_threads = 0;
  rc = v->gpu_max_threads(&max_threads, err, errlen);
  if (rc) return rc;
  uint32_t threads = e->opt.threads ? e->opt.threads : max_threads;
  if (e->opt.threads == 0 && e->wl->gpu_threads_max && e->wl->gpu_threads_max < threads)
    threads = e->wl->gpu_threads_max;
  if (threads > max_threads) {
    snprintf(err, errlen, "engine.threads (--threads) %u exceeds the %u threads this GPU keeps resident for workload %s: "
             "use at most %u, or 0 for all of them", threads, max_threads, e->wl->name, max_threads);
    return PRSTM_EINVAL;
  }
  prstm_exec_ctx ctx;
  prstm_ctx_fill_common(e, b, threads, &ctx);
  ctx.table.stride = b->n;

  cudaDeviceProp prop;
  GPU_CHECK(cudaGetDeviceProperties(&prop, 0));
  size_t free_b = 0, total_b = 0;
  GPU_CHECK(cudaMemGetInfo(&free_b, &total_b));
  /* PRSTM_GPU_MEMORY_LIMIT (bytes) caps what prstm takes of a shared GPU,
   * and lets the too-large path be exercised on any card. */
  const char *limit = getenv("PRSTM_GPU_MEMORY_LIMIT");
  if (limit && *limit) {
    unsigned long long cap = strtoull(limit, NULL, 10);
    if (cap < free_b) free_b = (size_t)cap;
  }
  uint64_t need = 8 * (e->nwords + ctx.nlocks) + txtable_device_bytes(b, e->opt.verify) + sizeof(prstm_thread_stats) * threads +
                  8 * PRSTM_Q_WORDS;
  if (need > free_b) {
    snprintf(err, errlen,
             "the run needs %.1f MiB of GPU memory (state, locks and a table of %llu transactions); %s has %.1f MiB "
             "free for it: use a smaller batch or --backend cpu",
             need / 1048576.0, (unsigned long long)b->n, prop.name, free_b / 1048576.0);
    return PRSTM_ETOOBIG;
  }
  res->gpu_bytes = need;

  /* Each phase is one NVTX range, closed on its error paths too. */
  PRSTM_RANGE_PUSH("transfer");
  double t0 = prstm_now();
  rc = gpu_upload(e, b, threads, &ctx, g, err, errlen);
  double upload_s = prstm_now() - t0;
  PRSTM_RANGE_POP();
  if (rc) return rc;

  int stalled = 0;
  PRSTM_RANGE_PUSH("execute");
  rc = gpu_execute(e, b, v, &ctx, threads, g, res, &stalled, err, errlen);
  PRSTM_RANGE_POP();
  if (rc) return rc;

  PRSTM_RANGE_PUSH("readback");
  t0 = prstm_now();
  rc = gpu_readback(e, b, threads, g, res, err, errlen);
  double readback_s = prstm_now() - t0;
  PRSTM_RANGE_POP();
  if (rc) return rc;
  if (stalled) return prstm_watchdog_error(e, b);
  res->transfer_s = upload_s + readback_s;
  res->threads = threads;
  res->backend = PRSTM_BACKEND_GPU;
  snprintf(res->device, sizeof res->device, "%.80s (%d SMs, %u threads)", prop.name, prop.multiProcessorCount, threads);
  return 0;
}

extern "C" int prstm_gpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  gpu_buffers g;
  memset(&g, 0, sizeof g);
  int rc = gpu_run_checked(e, b, v, res, &g, e->err, sizeof e->err);
  gpu_free(&g);
  return rc;
}
