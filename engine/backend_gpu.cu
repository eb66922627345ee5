/* backend_gpu.cu: the GPU backend: device memory, upload, the checked cooperative launch of the persistent kernel, readback. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cuda_check.h"
#include "delta.h"
#include "footprint_log.h"
#include "parallel.h"
#include "watchdog.h"

/* Every CUDA call goes through cuda_check.h: a failure becomes PRSTM_ECUDA
 * with its message in err (the calling function's), never a silent result. */
#define GPU_CHECK(call) CUDA_CHECK(call, err, errlen)

static int gpu_probe(char *why, size_t whylen) {
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

/* The GPU memory prstm may take: what is free, capped by
 * PRSTM_GPU_MEMORY_LIMIT (bytes), which bounds prstm's share of a shared GPU
 * and lets the too-large path be exercised on any card. */
static int gpu_usable_memory(size_t *usable, char *err, size_t errlen) {
  size_t free_b = 0, total_b = 0;
  GPU_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const char *limit = getenv("PRSTM_GPU_MEMORY_LIMIT");
  if (limit && *limit) {
    unsigned long long cap = strtoull(limit, NULL, 10);
    if (cap < free_b) free_b = (size_t)cap;
  }
  *usable = free_b;
  return 0;
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
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, PRSTM_POLICY_BLOCK_THREADS, 0));
  *blocks = per_sm * sms;
  return 0;
}

extern "C" int prstm_gpu_kernel_max_threads(const void *kernel, uint32_t *max_threads, char *err, size_t errlen) {
  int blocks = 0;
  int rc = gpu_resident_blocks(kernel, &blocks, err, errlen);
  if (rc) return rc;
  *max_threads = (uint32_t)blocks * PRSTM_POLICY_BLOCK_THREADS;
  return 0;
}

/* The kernel's threads wait for each other at quiescence, so every block must
 * be resident at once: a cooperative launch guarantees that or fails. */
extern "C" int prstm_gpu_launch_kernel(const void *kernel, const prstm_exec_ctx *ctx, uint32_t threads, void *stream,
                                       char *err, size_t errlen) {
  const unsigned blocks = (threads + PRSTM_POLICY_BLOCK_THREADS - 1) / PRSTM_POLICY_BLOCK_THREADS;
  prstm_exec_ctx arg = *ctx;
  void *params[] = {&arg};
  const cudaError_t launched = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(PRSTM_POLICY_BLOCK_THREADS),
                                                           params, 0, (cudaStream_t)stream);
  if (launched == cudaSuccess) return 0;
  /* The residency checks that explain a refused launch run only then: made
   * before every launch, they were four CUDA calls a unit of a stream. */
  cudaGetLastError();
  int resident = 0;
  int rc = gpu_resident_blocks(kernel, &resident, err, errlen);
  if (rc) return rc;
  if (blocks > (unsigned)resident) {
    snprintf(err, errlen, "%u threads requested; this GPU keeps at most %u resident for this kernel", threads,
             (unsigned)resident * PRSTM_POLICY_BLOCK_THREADS);
    return PRSTM_EINVAL;
  }
  return cuda_check_error(launched, "cudaLaunchCooperativeKernel", __FILE__, __LINE__, err, errlen);
}

/* ---- a whole run's copies through pinned staging ---- */

/* A copy from pageable memory is staged by the driver a small piece at a
 * time on one thread. Large copies go instead through two pinned chunks:
 * every core fills one chunk while the GPU takes the other (and empties one
 * while the GPU fills the other on the way back). The chunks cost a pinned
 * allocation of a few milliseconds, so an engine takes them when it warms
 * up (prstm_engine_warm_up), for its first run that narrows its arguments
 * (gpu_copy_args_narrow), or once its whole runs have copied
 * PRSTM_POLICY_STAGED_COPY_MIN_BYTES (the larger way of each run, summed),
 * and keeps them for its later runs until it is destroyed. A copy of less
 * than PRSTM_POLICY_STAGED_COPY_LEAST_BYTES, or from or to memory that is
 * pinned already, goes direct. */
typedef struct gpu_staging {
  uint8_t *chunk[2];
  cudaEvent_t done[2]; /* the chunk's last copy on `stream` ended */
  cudaStream_t stream;
  size_t bytes; /* of each chunk; 0: every copy goes direct */
  unsigned next;
  /* Threads kept with the chunks that fill and empty them with the caller:
   * a thread started for each copy cost about what staging a few MiB
   * saved. NULL: each copy starts its own (engine_parallel_copy). */
  engine_copy_pool *pool;
} gpu_staging;

struct gpu_stream_handles;

/* What the GPU backend keeps on an engine between whole runs. */
struct backend_gpu_keep {
  gpu_staging staging;
  int device;      /* the GPU the staging's stream and events belong to */
  uint64_t copied; /* bytes the engine's whole runs copied, the larger way of each */
  int lent;        /* an open stream's pinned buffers lie in the chunks (gpu_stream_borrow_chunks) */
  /* A stream's CUDA streams and events, made by the warm-up on `device`
   * and lent to each open stream in turn (gpu_stream_handles_take); NULL
   * until then. */
  struct gpu_stream_handles *handles;
};

static void gpu_stream_handles_free(struct gpu_stream_handles *h);
static int gpu_stream_handles_lent(const struct gpu_stream_handles *h);

/* Pinned host memory of `bytes` made of ordinary huge pages, zeroed on
 * every core and then page-locked where they lie (cudaHostRegister): the
 * driver's own pinned memory (cudaHostAlloc) took about 0.7 s a GB on an
 * H200's host. NULL where either step fails, with the CUDA error cleared:
 * the caller then does without, or takes the driver's memory. */
static void *gpu_locked_pages_take(size_t bytes) {
  void *p = engine_alloc_zeroed_pages(bytes);
  if (p && cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return p;
  cudaGetLastError();
  free(p);
  return NULL;
}

/* Gives back memory of gpu_locked_pages_take (NULL: nothing). A failure
 * cannot be acted on and is cleared. */
static void gpu_locked_pages_give(void *p) {
  if (!p) return;
  if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
  free(p);
}

/* Takes the two pinned chunks (gpu_locked_pages_take: cudaMallocHost took
 * 35 to 50 ms for the two). Where they cannot be had, the copies go
 * direct: slower, not wrong. */
static int gpu_staging_open(gpu_staging *s, char *err, size_t errlen) {
  for (int k = 0; k < 2; k++) {
    s->chunk[k] = (uint8_t *)gpu_locked_pages_take(PRSTM_POLICY_STAGED_COPY_CHUNK);
    if (!s->chunk[k]) {
      gpu_locked_pages_give(s->chunk[0]);
      s->chunk[0] = NULL;
      return 0;
    }
  }
  s->bytes = PRSTM_POLICY_STAGED_COPY_CHUNK;
  const unsigned parts = engine_parallel_parts(PRSTM_POLICY_STAGED_COPY_CHUNK, PRSTM_POLICY_STAGED_COPY_BYTES_PER_PART);
  s->pool = parts > 1 ? engine_copy_pool_open(parts - 1) : NULL;
  GPU_CHECK(cudaStreamCreate(&s->stream));
  GPU_CHECK(cudaEventCreateWithFlags(&s->done[0], cudaEventDisableTiming));
  GPU_CHECK(cudaEventCreateWithFlags(&s->done[1], cudaEventDisableTiming));
  return 0;
}

static void gpu_staging_close(gpu_staging *s) {
  if (s->stream) cudaStreamSynchronize(s->stream);
  for (int k = 0; k < 2; k++) {
    if (s->done[k]) cudaEventDestroy(s->done[k]);
    gpu_locked_pages_give(s->chunk[k]);
  }
  if (s->stream) cudaStreamDestroy(s->stream);
  if (s->pool) engine_copy_pool_close(s->pool);
  memset(s, 0, sizeof *s);
}

void backend_gpu_keep_free(struct backend_gpu_keep *keep) {
  if (!keep) return;
  const int current = backend_gpu_current();
  if (keep->staging.stream || keep->handles) backend_gpu_make_current(keep->device);
  gpu_stream_handles_free(keep->handles);
  keep->handles = NULL;
  gpu_staging_close(&keep->staging);
  backend_gpu_make_current(current);
  free(keep);
}

/* The engine's keep, with its staging chunks on the current GPU when
 * `open_now` or once its runs have copied enough: chunks kept from another
 * GPU's runs are given back first. *keep is NULL where no keep could be
 * allocated (every copy then goes direct). */
static int gpu_keep_for(prstm_engine *e, uint64_t bytes, int open_now, struct backend_gpu_keep **out, char *err,
                        size_t errlen) {
  *out = NULL;
  if (!e->gpu_keep && (e->gpu_keep = (struct backend_gpu_keep *)calloc(1, sizeof *e->gpu_keep)) == NULL) return 0;
  struct backend_gpu_keep *keep = e->gpu_keep;
  int device = 0;
  GPU_CHECK(cudaGetDevice(&device));
  if (keep->staging.bytes && keep->device != device) {
    /* Chunks that hold an open stream's buffers, and handles an open
     * stream runs on, stay: this copy goes direct (a warm-up on another
     * GPU while a stream is open). */
    if (keep->lent || gpu_stream_handles_lent(keep->handles)) return 0;
    backend_gpu_make_current(keep->device);
    gpu_stream_handles_free(keep->handles);
    keep->handles = NULL;
    gpu_staging_close(&keep->staging);
    backend_gpu_make_current(device);
  }
  keep->copied += bytes;
  if (!keep->staging.bytes && (open_now || keep->copied >= PRSTM_POLICY_STAGED_COPY_MIN_BYTES)) {
    keep->device = device;
    int rc = gpu_staging_open(&keep->staging, err, errlen);
    if (rc) {
      gpu_staging_close(&keep->staging);
      return rc;
    }
  }
  *out = keep;
  return 0;
}

static void gpu_stream_handles_make(struct backend_gpu_keep *keep);

int backend_gpu_keep_staging(prstm_engine *e, char *err, size_t errlen) {
  struct backend_gpu_keep *keep = NULL;
  int rc = gpu_keep_for(e, 0, 1, &keep, err, errlen);
  /* A stream's own streams and events too: made at its open, they took
   * 0.4 to 0.5 ms of it (the process's first CUDA streams are the slow
   * ones), and their destruction some 50 µs of its close. */
  if (!rc && keep && keep->staging.bytes && !keep->handles) gpu_stream_handles_make(keep);
  return rc;
}

/* The staging for a run whose copies take `bytes` the larger way: the
 * engine's chunks (gpu_keep_for; open_now for a run that sends its
 * arguments through them, gpu_args_staged_worth), else `direct` (no
 * chunks: every copy direct). */
static int gpu_staging_for_run(prstm_engine *e, uint64_t bytes, int open_now, gpu_staging *direct, gpu_staging **out,
                               char *err, size_t errlen) {
  *out = direct;
  struct backend_gpu_keep *keep = NULL;
  int rc = gpu_keep_for(e, bytes, open_now, &keep, err, errlen);
  if (rc) return rc;
  if (keep && keep->staging.bytes) *out = &keep->staging;
  return 0;
}

/* memcpy on every core: the staging's kept threads, else threads of its own. */
static void gpu_host_copy_all(gpu_staging *s, void *dst, const void *src, size_t n) {
  const engine_copy piece = {dst, src, n, NULL};
  if (s->pool)
    engine_copy_pool_run(s->pool, &piece, 1);
  else
    engine_parallel_copy(&piece, 1, engine_parallel_parts(n, PRSTM_POLICY_STAGED_COPY_BYTES_PER_PART));
}

/* Whether the copy of n bytes from or to host memory p goes direct. */
static int gpu_staging_direct(const gpu_staging *s, const void *p, size_t n) {
  if (!s->bytes || n < PRSTM_POLICY_STAGED_COPY_LEAST_BYTES) return 1;
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 1;
  }
  return a.type != cudaMemoryTypeUnregistered;
}

/* The pieces a staged copy of n bytes goes in: a chunk, but for a copy of
 * less than four chunks a quarter of it (64 KiB multiples, at least
 * PRSTM_POLICY_STAGED_COPY_LEAST_BYTES), so that the link takes one piece
 * while the host's threads fill or empty the next: in one piece the two
 * took turns, and a stream's 8 MiB state spent about 0.2 ms each way on
 * the link alone. */
static size_t gpu_staging_piece(const gpu_staging *s, size_t n) {
  size_t piece = (n / 4 + 0xffffu) & ~(size_t)0xffffu;
  if (piece < PRSTM_POLICY_STAGED_COPY_LEAST_BYTES) piece = PRSTM_POLICY_STAGED_COPY_LEAST_BYTES;
  return piece < s->bytes ? piece : s->bytes;
}

/* Host to device: each chunk is filled once the GPU has taken what it held
 * before, and its copy is queued at once. Ends with every copy queued; the
 * caller synchronizes (gpu_upload's cudaDeviceSynchronize). */
static int gpu_copy_up(gpu_staging *s, void *dst, const void *src, size_t n, char *err, size_t errlen) {
  if (gpu_staging_direct(s, src, n)) {
    GPU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    return 0;
  }
  const size_t piece = gpu_staging_piece(s, n);
  for (size_t off = 0; off < n; off += piece, s->next ^= 1u) {
    const size_t m = n - off < piece ? n - off : piece;
    GPU_CHECK(cudaEventSynchronize(s->done[s->next]));
    gpu_host_copy_all(s, s->chunk[s->next], (const uint8_t *)src + off, m);
    GPU_CHECK(cudaMemcpyAsync((uint8_t *)dst + off, s->chunk[s->next], m, cudaMemcpyHostToDevice, s->stream));
    GPU_CHECK(cudaEventRecord(s->done[s->next], s->stream));
  }
  return 0;
}

/* Whether host memory [p, p + bytes) is page-locked already, to its last
 * byte (a pinned batch's, or the caller's own registration). */
static int gpu_host_locked(const void *p, size_t bytes) {
  cudaPointerAttributes a;
  for (int k = 0; k < 2; k++) {
    if (cudaPointerGetAttributes(&a, (const char *)p + (k ? bytes - 1 : 0)) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    if (a.type == cudaMemoryTypeUnregistered) return 0;
  }
  return 1;
}

/* Whether the run should send its argument columns through the engine's
 * staging chunks, 32-bit: they are large enough for that to pay, and not
 * page-locked already (the GPU then takes them at the link's rate). A
 * narrow batch's go up as they are, copied into the chunks on every core
 * rather than page-locked in place. */
static int gpu_args_staged_worth(const prstm_batch *b) {
  if (b->ncols == 0 || 8 * (uint64_t)b->ncols * b->n < PRSTM_POLICY_NARROW_ARGS_MIN_BYTES) return 0;
  return !gpu_host_locked(b->args, txtable_width(b) * ((size_t)(b->ncols - 1) * b->cap + b->n));
}

/* Whether the run should narrow a wide batch's argument columns on the way
 * up (faster than every core narrows them, the GPU would take them at the
 * link's rate where they are page-locked already): staged, and the first
 * rows of every column fit in 32 bits (the copy itself checks every
 * value). */
static int gpu_args_narrow_worth(const prstm_batch *b) {
  if (!b->wide || !gpu_args_staged_worth(b)) return 0;
  const uint64_t rows = b->n < PRSTM_POLICY_NARROW_ARGS_SAMPLE_ROWS ? b->n : PRSTM_POLICY_NARROW_ARGS_SAMPLE_ROWS;
  uint64_t high = 0;
  for (uint32_t c = 0; c < b->ncols; c++)
    for (uint64_t r = 0; r < rows; r++) high |= txtable_get(b, c, r) >> 32;
  return high == 0;
}

/* Host to device, the argument columns as 32-bit values packed at stride
 * n (txtable_view's narrow_args): every core narrows a chunk's worth while
 * the GPU takes the other chunk. *narrow is 0 when a value needed 64 bits:
 * the caller then uploads the columns whole, over whatever this queued. */
static int gpu_copy_args_narrow(gpu_staging *s, uint32_t *dst, const prstm_batch *b, int *narrow, char *err,
                                size_t errlen) {
  const uint64_t total = (uint64_t)b->ncols * b->n, per_chunk = s->bytes / 4;
  const unsigned parts = engine_parallel_parts(per_chunk, PRSTM_POLICY_STAGED_COPY_BYTES_PER_PART / 8);
  *narrow = 0;
  for (uint64_t at = 0; at < total; at += per_chunk, s->next ^= 1u) {
    const uint64_t m = total - at < per_chunk ? total - at : per_chunk;
    GPU_CHECK(cudaEventSynchronize(s->done[s->next]));
    if (!engine_parallel_narrow((uint32_t *)s->chunk[s->next], (const uint64_t *)b->args, b->cap, b->n, at, at + m,
                                parts))
      return 0;
    GPU_CHECK(cudaMemcpyAsync(dst + at, s->chunk[s->next], 4 * m, cudaMemcpyHostToDevice, s->stream));
    GPU_CHECK(cudaEventRecord(s->done[s->next], s->stream));
  }
  *narrow = 1;
  return 0;
}

/* Device to host: the GPU fills one chunk while every core empties the one
 * it filled before. Returns with the whole copy in dst. */
static int gpu_copy_down(gpu_staging *s, void *dst, const void *src, size_t n, char *err, size_t errlen) {
  if (gpu_staging_direct(s, dst, n)) {
    GPU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
    return 0;
  }
  size_t filled_off = 0, filled = 0; /* the chunk s->next ^ 1 holds these bytes of the copy */
  const size_t piece = gpu_staging_piece(s, n);
  for (size_t off = 0;; off += piece) {
    const size_t m = off < n ? (n - off < piece ? n - off : piece) : 0;
    if (m) {
      GPU_CHECK(cudaMemcpyAsync(s->chunk[s->next], (const uint8_t *)src + off, m, cudaMemcpyDeviceToHost, s->stream));
      GPU_CHECK(cudaEventRecord(s->done[s->next], s->stream));
    }
    if (filled) {
      GPU_CHECK(cudaEventSynchronize(s->done[s->next ^ 1u]));
      gpu_host_copy_all(s, (uint8_t *)dst + filled_off, s->chunk[s->next ^ 1u], filled);
    }
    if (!m) return 0;
    filled_off = off;
    filled = m;
    s->next ^= 1u;
  }
}

/* ---- ordinary host memory page-locked in place for one run ---- */

/* The ranges a run page-locked itself, to be unlocked when it ends: never
 * one that was pinned or registered before (a pinned batch, a caller's own
 * registration), which stays as it was. */
#define GPU_LOCKED_MAX 8
typedef struct gpu_locked {
  void *p[GPU_LOCKED_MAX];
  unsigned n;
} gpu_locked;

/* Whether [p, p + bytes) is page-locked now: already, or by this call when
 * it has at least min_bytes. A range that cannot be locked (overlapping
 * another registration, or refused by the driver) is copied as pageable
 * memory, as before: not an error. */
static int gpu_lock_pages(gpu_locked *l, const void *p, size_t bytes, size_t min_bytes) {
  if (!p || bytes == 0) return 0;
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (a.type != cudaMemoryTypeUnregistered) {
    /* Locked already, by the caller, wholly or in part. The driver
     * refuses a copy that starts in a registered range and runs past its
     * end ("invalid argument"), so the range counts as locked only when its
     * last byte is registered too. */
    if (cudaPointerGetAttributes(&a, (const char *)p + bytes - 1) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return a.type != cudaMemoryTypeUnregistered;
  }
  if (bytes < min_bytes || l->n == GPU_LOCKED_MAX) return 0;
  /* Portable: a multi-unit run's other GPUs copy from it too. */
  if (cudaHostRegister((void *)p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  l->p[l->n++] = (void *)p;
  return 1;
}

/* Unlocks what gpu_lock_pages locked, last first. The memory is the
 * caller's either way, so a failure is cleared, not reported. */
static void gpu_unlock_pages(gpu_locked *l) {
  while (l->n)
    if (cudaHostUnregister(l->p[--l->n]) != cudaSuccess) cudaGetLastError();
}

/* The batch's columns a copy to the device reads in place: type, status
 * and the span of its argument columns (stride cap), each locked when it
 * has at least min_bytes. Returns whether all three are page-locked now. */
static int gpu_lock_batch_columns(gpu_locked *l, const prstm_batch *b, size_t min_bytes) {
  const size_t span = b->ncols ? txtable_width(b) * ((size_t)(b->ncols - 1) * b->cap + b->n) : 0;
  int all = gpu_lock_pages(l, b->type, b->n, min_bytes);
  all &= gpu_lock_pages(l, b->status, b->n, min_bytes);
  if (span) all &= gpu_lock_pages(l, b->args, span, min_bytes);
  return all;
}

/* Device buffers of one run, freed together on every path. */
typedef struct gpu_buffers {
  uint64_t *words, *locks, *args, *result, *seq, *read_hash, *quiesce;
  uint8_t *type, *status;
  cudaEvent_t start, stop;
  cudaStream_t monitor;
  uint64_t *host_words; /* pinned: progress read and stop flag written while the kernel runs */
  gpu_staging *staging; /* the run's large copies (gpu_copy_up, gpu_copy_down): the engine's, or direct */
  gpu_staging direct;   /* no chunks: every copy direct */
  gpu_locked locked;    /* host memory this run page-locked for its direct copies */
  int narrow_args;      /* args holds 32-bit values (a narrow batch's, or gpu_copy_args_narrow's) */
  int counted;          /* host_words holds the kernel's final progress words */
} gpu_buffers;

static void gpu_free(gpu_buffers *g) {
  cudaFree(g->words);
  cudaFree(g->locks);
  cudaFree(g->args);
  cudaFree(g->result);
  cudaFree(g->seq);
  cudaFree(g->read_hash);
  cudaFree(g->quiesce);
  cudaFree(g->type);
  cudaFree(g->status);
  if (g->start) cudaEventDestroy(g->start);
  if (g->stop) cudaEventDestroy(g->stop);
  if (g->monitor) cudaStreamDestroy(g->monitor);
  if (g->host_words) cudaFreeHost(g->host_words);
  gpu_unlock_pages(&g->locked);
  /* The staging stays the engine's; a failed run may leave copies queued on
   * it, which end before the chunks are filled again (their events). */
}

/* Waits for the kernel while watching its published progress through a
 * non-blocking stream; after watchdog_s seconds without progress it sets the
 * stop word, which every thread polls, and reports the stall. The same copy
 * of the progress words feeds the engine's progress observer. */
static int gpu_wait_watched(prstm_engine *e, const prstm_batch *b, gpu_buffers *g,
                            engine_progress_clock *progress_clock, int *stalled, char *err, size_t errlen) {
  GPU_CHECK(cudaStreamCreateWithFlags(&g->monitor, cudaStreamNonBlocking));
  GPU_CHECK(cudaMallocHost((void **)&g->host_words, (STM_Q_WORDS + 1) * sizeof(uint64_t)));
  uint64_t *seen = g->host_words;                    /* the progress words, as last copied */
  uint64_t *stop_flag = g->host_words + STM_Q_WORDS; /* the source of the stop word */
  watchdog dog;
  watchdog_start(&dog, e->opt.watchdog_s, engine_now());
  *stalled = 0;
  long pause_ns = WATCHDOG_FIRST_PAUSE_NS;
  double next_look = engine_now() + pause_ns * 1e-9;
  for (;;) {
    cudaError_t q = cudaEventQuery(g->stop);
    if (q == cudaSuccess) return 0;
    if (q != cudaErrorNotReady) GPU_CHECK(q);
    const struct timespec poll_ts = {0, WATCHDOG_END_POLL_NS};
    nanosleep(&poll_ts, NULL);
    if (engine_now() < next_look) continue;
    pause_ns = watchdog_next_pause_ns(pause_ns);
    next_look = engine_now() + pause_ns * 1e-9;
    GPU_CHECK(cudaMemcpyAsync(seen, g->quiesce, STM_Q_WORDS * sizeof(uint64_t), cudaMemcpyDeviceToHost, g->monitor));
    GPU_CHECK(cudaStreamSynchronize(g->monitor));
    engine_progress_report(e, b, seen, progress_clock, 0);
    if (watchdog_tick(&dog, seen[STM_Q_COMMITTED] + seen[STM_Q_FAILED], engine_now())) {
      *stalled = 1;
      *stop_flag = 1;
      GPU_CHECK(
          cudaMemcpyAsync(&g->quiesce[STM_Q_STOP], stop_flag, sizeof(uint64_t), cudaMemcpyHostToDevice, g->monitor));
      GPU_CHECK(cudaStreamSynchronize(g->monitor));
    }
  }
}

/* Allocates the run's device buffers and uploads the state and the table;
 * ctx then points into device memory. */
static int gpu_upload(prstm_engine *e, const prstm_batch *b, uint32_t threads, prstm_exec_ctx *ctx, gpu_buffers *g,
                      char *err, size_t errlen) {
  GPU_CHECK(cudaMalloc((void **)&g->words, 8 * e->nwords));
  const uint64_t lock_words = engine_lock_array_words(e->wl, ctx->nlocks);
  GPU_CHECK(cudaMalloc((void **)&g->locks, 8 * lock_words));
  const unsigned width = txtable_width(b);
  if (b->ncols) GPU_CHECK(cudaMalloc((void **)&g->args, (size_t)width * b->ncols * b->n));
  if (b->has_read_only) GPU_CHECK(cudaMalloc((void **)&g->result, 8 * b->n));
  if (b->seq) GPU_CHECK(cudaMalloc((void **)&g->seq, 8 * b->n));
  if (b->read_hash) GPU_CHECK(cudaMalloc((void **)&g->read_hash, 8 * b->n));
  GPU_CHECK(cudaMalloc((void **)&g->quiesce, 8 * STM_Q_WORDS));
  GPU_CHECK(cudaMalloc((void **)&g->type, b->n));
  GPU_CHECK(cudaMalloc((void **)&g->status, b->n));
  /* The largest of the run's two ways decides whether it stages its copies. */
  const uint64_t up = 8 * e->nwords + ((uint64_t)width * b->ncols + 1) * b->n,
                 down = 8 * e->nwords + (1 + 8 * (!!g->result + !!g->seq + !!g->read_hash)) * b->n;
  const int narrow_worth = gpu_args_narrow_worth(b);
  int rc = gpu_staging_for_run(e, up > down ? up : down, narrow_worth || (!b->wide && gpu_args_staged_worth(b)),
                               &g->direct, &g->staging, err, errlen);
  if (rc) return rc;
  /* The large ranges the run copies up or back (LOCK_PAGES_MIN_BYTES or
   * more) are page-locked where they lie where they do not go through the
   * engine's staging chunks in pieces (all of them without chunks; with
   * them, those smaller than a chunk), so that the copies go at the link's
   * rate instead of through the driver's small staging. Smaller ranges go
   * through the chunks from STAGED_COPY_LEAST_BYTES on (gpu_staging_direct). */
  const int staged = g->staging != &g->direct;
  const size_t least = PRSTM_POLICY_LOCK_PAGES_MIN_BYTES, most = staged ? g->staging->bytes - 1 : SIZE_MAX;
  if (!staged) gpu_lock_batch_columns(&g->locked, b, least);
  if (8 * e->nwords <= most) gpu_lock_pages(&g->locked, e->words, 8 * e->nwords, least);
  if (staged && b->n <= most) {
    gpu_lock_pages(&g->locked, b->type, b->n, least);
    gpu_lock_pages(&g->locked, b->status, b->n, least);
  }
  if (8 * b->n <= most) {
    gpu_lock_pages(&g->locked, b->result, b->result ? 8 * b->n : 0, least);
    gpu_lock_pages(&g->locked, b->seq, b->seq ? 8 * b->n : 0, least);
    gpu_lock_pages(&g->locked, b->read_hash, b->read_hash ? 8 * b->n : 0, least);
  }
  GPU_CHECK(cudaMemset(g->locks, 0, 8 * lock_words));
  if (g->result) GPU_CHECK(cudaMemset(g->result, 0, 8 * b->n));
  if (g->seq) GPU_CHECK(cudaMemset(g->seq, 0xff, 8 * b->n));
  if (g->read_hash) GPU_CHECK(cudaMemset(g->read_hash, 0, 8 * b->n));
  GPU_CHECK(cudaMemset(g->quiesce, 0, 8 * STM_Q_WORDS));
  GPU_CHECK(cudaMemset(g->status, 0, b->n));
  if ((rc = gpu_copy_up(g->staging, g->words, e->words, 8 * e->nwords, err, errlen)) != 0) return rc;
  if (narrow_worth && staged &&
      (rc = gpu_copy_args_narrow(g->staging, (uint32_t *)g->args, b, &g->narrow_args, err, errlen)) != 0)
    return rc;
  if (!b->wide) g->narrow_args = 1;
  for (uint32_t c = 0; c < b->ncols && (!b->wide || !g->narrow_args); c++)
    if ((rc = gpu_copy_up(g->staging, (char *)g->args + (size_t)c * b->n * width, txtable_arg_at(b, c, 0),
                          (size_t)width * b->n, err, errlen)) != 0)
      return rc;
  if ((rc = gpu_copy_up(g->staging, g->type, b->type, b->n, err, errlen)) != 0) return rc;
  GPU_CHECK(cudaDeviceSynchronize());

  ctx->words = g->words;
  engine_ctx_set_locks(ctx, e->wl, g->locks);
  ctx->table.type = g->type;
  ctx->table.status = g->status;
  ctx->table.args = g->args;
  ctx->table.narrow_args = (uint32_t)g->narrow_args;
  ctx->table.result = g->result;
  ctx->table.seq = g->seq;
  ctx->table.read_hash = g->read_hash;
  ctx->stats = NULL; /* the counts come from the progress words */
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
  double t0 = engine_now();
  engine_progress_clock progress_clock = {t0, t0};
  int rc = v->gpu_launch(ctx, threads, NULL, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaEventRecord(g->stop));
  rc = gpu_wait_watched(e, b, g, &progress_clock, stalled, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaEventSynchronize(g->stop));
  GPU_CHECK(cudaGetLastError());
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, g->start, g->stop));
  res->execute_s = ms / 1000.0;
  /* The final progress words hold the run's counts (gpu_readback), a
   * stopped run's too: its threads published theirs as they left. */
  GPU_CHECK(cudaMemcpy(g->host_words, g->quiesce, STM_Q_WORDS * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  g->counted = 1;
  if (*stalled) return 0;
  e->last_run_sequences = g->host_words[STM_Q_SEQUENCE];
  engine_progress_report(e, b, g->host_words, &progress_clock, 1);
  return 0;
}

/* Copies the final state and the table's outcomes back, and takes the
 * run's counts from its final progress words: every thread adds its
 * decisions, aborts, postponements and sweeps there as its walk ends
 * (cmp_walk_block), so the threads keep no counters of their own here
 * (80 bytes each, 2.7 to 5.4 MB at the default threads): copying and
 * summing them took 2 to 5 ms of a run's readback on an H200's host. */
static int gpu_readback(prstm_engine *e, prstm_batch *b, gpu_buffers *g, prstm_results *res, char *err, size_t errlen) {
  gpu_staging *s = g->staging;
  int rc = gpu_copy_down(s, e->words, g->words, 8 * e->nwords, err, errlen);
  if (!rc) rc = gpu_copy_down(s, b->status, g->status, b->n, err, errlen);
  if (!rc && g->result) rc = gpu_copy_down(s, b->result, g->result, 8 * b->n, err, errlen);
  if (!rc && g->seq) rc = gpu_copy_down(s, b->seq, g->seq, 8 * b->n, err, errlen);
  if (!rc && g->read_hash) rc = gpu_copy_down(s, b->read_hash, g->read_hash, 8 * b->n, err, errlen);
  if (rc) return rc;
  if (g->counted) {
    const uint64_t *q = g->host_words;
    res->committed += q[STM_Q_COMMITTED];
    res->failed += q[STM_Q_FAILED];
    res->abandoned += q[STM_Q_ABANDONED];
    res->aborts += q[STM_Q_ABORTS];
    res->postponements += q[STM_Q_POSTPONEMENTS];
    res->sweeps += q[STM_Q_SWEEPS];
  }
  return 0;
}

/* The thread count of a launch. An explicit count is kept (it must fit the
 * GPU at once). The default (threads 0) is not every resident thread, since
 * more threads in flight mostly add concurrent conflicts: it is the worker
 * variant's prstm_gpu_policy.threads_per_sm per SM (the bank's two-account
 * transfers gain from a full GPU; the other workloads lose), else
 * PRSTM_POLICY_THREADS_PER_SM, lowered to the policy's threads_max
 * (docs/PERFORMANCE.md, "Threads"). */
static int gpu_pick_threads(const prstm_engine *e, const prstm_worker_variant *v, uint32_t max_threads,
                            uint32_t *threads, char *err, size_t errlen) {
  if (e->opt.threads) {
    if (e->opt.threads > max_threads) {
      snprintf(err, errlen,
               "engine.threads (--threads) %u exceeds the %u threads this GPU keeps resident for workload %s: "
               "use at most %u, or 0 for the default",
               e->opt.threads, max_threads, e->wl->name, max_threads);
      return PRSTM_EINVAL;
    }
    *threads = e->opt.threads;
    return 0;
  }
  int sms = 0, dev = 0;
  GPU_CHECK(cudaGetDevice(&dev));
  GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const uint32_t per_sm = v->gpu.threads_per_sm ? v->gpu.threads_per_sm : PRSTM_POLICY_THREADS_PER_SM;
  /* In 64 bits: a plugin's threads_per_sm times the SMs could wrap. */
  const uint64_t want = (uint64_t)sms * per_sm;
  uint32_t t = want == 0 || want > max_threads ? max_threads : (uint32_t)want;
  if (v->gpu.threads_max && v->gpu.threads_max < t) t = v->gpu.threads_max;
  *threads = t;
  return 0;
}

/* The threads of a launch over n rows: a default count (no engine.threads
 * given) is lowered to the rows rounded up to a warp, since a thread past
 * the last row has an empty block and still counts itself done and
 * finished on the run's shared words: tens of thousands of idle threads
 * cost a small batch more than its transactions. An explicit count is
 * kept. */
static uint32_t gpu_threads_for_rows(int given, uint32_t threads, uint64_t n) {
  if (given) return threads;
  const uint64_t warps = (n + 31) / 32;
  return warps * 32 < threads ? (uint32_t)(warps ? warps * 32 : 32) : threads;
}

/* How hot a run's words are, which decides its path (deltas or the STM)
 * and, by default, how many STM transactions run at once. It reads the
 * engine and the batch and writes only the job, so it may run on a thread
 * of its own while the run's table goes up. */
typedef struct gpu_plan_job {
  const prstm_engine *e;
  const prstm_batch *b;
  uint32_t threads; /* the threads before the plan */
  engine_contention hot;
  cmp_delta_plan plan;
  int try_deltas;
  int sampled;
} gpu_plan_job;

static void *gpu_plan_main(void *arg) {
  gpu_plan_job *j = (gpu_plan_job *)arg;
  memset(&j->hot, 0, sizeof j->hot);
  j->sampled = j->e->opt.deltas != PRSTM_DELTAS_OFF || j->e->opt.threads == 0;
  if (j->sampled) engine_contention_sample(j->e, j->b, &j->hot);
  j->try_deltas = engine_delta_want(j->e, j->b, PRSTM_BACKEND_GPU, j->threads, &j->hot, &j->plan);
  return NULL;
}

/* The plan of a whole run on a thread of its own: the job lives with the
 * caller of gpu_run_checked, which joins the thread on every return. */
typedef struct gpu_planner {
  gpu_plan_job job;
  pthread_t thread;
  int running;
} gpu_planner;

static int gpu_run_checked(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res,
                           gpu_buffers *g, gpu_planner *planner, char *err, size_t errlen) {
  int rc;
  uint32_t max_threads = 0;
  rc = v->gpu_max_threads(&max_threads, err, errlen);
  if (rc) return rc;
  uint32_t threads = 0;
  rc = gpu_pick_threads(e, v, max_threads, &threads, err, errlen);
  if (rc) return rc;
  /* The plan runs beside the upload: on 16 cores the contention sample
   * took 1.3 to 4 ms of a 2M-row run, and nothing the upload does depends
   * on it. A deltas-only run plans first, since
   * most of those decline and upload nothing. */
  gpu_plan_job *job = &planner->job;
  memset(job, 0, sizeof *job);
  job->e = e;
  job->b = b;
  job->threads = threads;
  if (e->deltas_only) {
    ENGINE_RANGE_PUSH("plan");
    gpu_plan_main(job);
    ENGINE_RANGE_POP();
    if (!job->try_deltas) {
      e->deltas_declined = 1;
      return 0;
    }
  }
  prstm_exec_ctx ctx;
  engine_ctx_fill_common(e, b, threads, &ctx);
  ctx.table.stride = b->n;
  ctx.read_marks = ctx.write_marks = NULL; /* a co-executed unit runs streams only */
  ctx.span = NULL;

  cudaDeviceProp prop;
  GPU_CHECK(cudaGetDeviceProperties(&prop, 0));
  size_t free_b = 0;
  rc = gpu_usable_memory(&free_b, err, errlen);
  if (rc) return rc;
  uint64_t need = 8 * (e->nwords + engine_lock_array_words(e->wl, ctx.nlocks)) +
                  txtable_device_bytes(b, e->opt.verify) + 8 * STM_Q_WORDS;
  if (need > free_b) {
    snprintf(err, errlen,
             "the run needs %.1f MiB of GPU memory (state, locks and a table of %llu transactions); %s has %.1f MiB "
             "free for it: use a smaller batch or --backend cpu",
             need / 1048576.0, (unsigned long long)b->n, prop.name, free_b / 1048576.0);
    return PRSTM_ETOOBIG;
  }
  res->gpu_bytes = need;
  if (!e->deltas_only) {
    planner->running = pthread_create(&planner->thread, NULL, gpu_plan_main, job) == 0;
    if (!planner->running) {
      ENGINE_RANGE_PUSH("plan");
      gpu_plan_main(job);
      ENGINE_RANGE_POP();
    }
  }

  /* Each phase is one NVTX range, closed on its error paths too. */
  ENGINE_RANGE_PUSH("transfer");
  double t0 = engine_now();
  rc = gpu_upload(e, b, threads, &ctx, g, err, errlen);
  double upload_s = engine_now() - t0;
  ENGINE_RANGE_POP();
  if (rc) return rc;
  if (planner->running) {
    /* What the plan took beyond the upload. */
    ENGINE_RANGE_PUSH("plan");
    pthread_join(planner->thread, NULL);
    planner->running = 0;
    ENGINE_RANGE_POP();
  }
  if (job->sampled) res->hot_estimate = engine_contention_conflicts(&job->hot, threads);
  const int try_deltas = job->try_deltas;
  if (!try_deltas && e->opt.threads == 0) threads = engine_contention_inflight(&job->hot, threads);
  threads = gpu_threads_for_rows(e->opt.threads != 0, threads, b->n);
  ctx.nthreads = threads;
  engine_ctx_set_lone(&ctx);

  /* A batch of declared steps whose words are hot runs as sums where the
   * batch order commits every row (engine/delta.h); where the proof is
   * refused, the STM kernel runs on the state the proof left untouched. */
  int stalled = 0, on_deltas = 0;
  double deltas_s = 0;
  ENGINE_RANGE_PUSH("execute");
  if (try_deltas) {
    delta_gpu_table dt = {g->words, e->nwords, g->type, g->args,      b->ncols, (uint32_t)g->narrow_args,
                          b->n,     g->status, g->seq,  g->read_hash, g->result};
    float ms = 0;
    rc = delta_gpu_run(&dt, &job->plan, &on_deltas, &ms, err, errlen);
    deltas_s = ms / 1000.0;
  }
  if (rc == 0 && !on_deltas && e->deltas_only) {
    /* The refused proof left the words untouched, here and on the host. */
    ENGINE_RANGE_POP();
    e->deltas_declined = 1;
    return 0;
  }
  if (rc == 0 && !on_deltas) rc = gpu_execute(e, b, v, &ctx, threads, g, res, &stalled, err, errlen);
  res->execute_s += deltas_s;
  ENGINE_RANGE_POP();
  if (rc) return rc;

  ENGINE_RANGE_PUSH("readback");
  t0 = engine_now();
  rc = gpu_readback(e, b, g, res, err, errlen);
  double readback_s = engine_now() - t0;
  ENGINE_RANGE_POP();
  if (rc) return rc;
  if (stalled) return engine_watchdog_error(e, b);
  res->transfer_s = upload_s + readback_s;
  res->backend = PRSTM_BACKEND_GPU;
  if (on_deltas) {
    engine_delta_results(e, b, res);
    snprintf(res->device, sizeof res->device, "%.80s (%d SMs, delta path)", prop.name, prop.multiProcessorCount);
    return 0;
  }
  res->threads = threads;
  snprintf(res->device, sizeof res->device, "%.80s (%d SMs, %u threads)", prop.name, prop.multiProcessorCount, threads);
  return 0;
}

static int gpu_run(prstm_engine *e, prstm_batch *b, const prstm_worker_variant *v, prstm_results *res) {
  gpu_buffers g;
  memset(&g, 0, sizeof g);
  gpu_planner planner;
  memset(&planner, 0, sizeof planner);
  int rc = gpu_run_checked(e, b, v, res, &g, &planner, e->err, sizeof e->err);
  /* A run whose upload failed still waits for its plan: the plan writes
   * its job here and reads the batch, which the caller may free. */
  if (planner.running) pthread_join(planner.thread, NULL);
  ENGINE_RANGE_PUSH("free");
  gpu_free(&g);
  ENGINE_RANGE_POP();
  return rc;
}

/* ---- pinned host memory for batches (txtable/txtable.c) ---- */

/* Page-locked host memory, or NULL (with the CUDA error cleared) where no
 * GPU is usable: the caller then falls back to ordinary memory. */
static void *gpu_host_alloc(size_t bytes) {
  void *p = NULL;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return p;
}

/* A destroy cannot report a failure, and the memory is lost either way;
 * the error is cleared so that it does not surface in an unrelated call. */
static void gpu_host_free(void *p) {
  if (p && cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
}

/* The pinned memory of prstm_batch_create_pinned's batches. */
static const txtable_allocator gpu_pinned_allocator = {gpu_host_alloc, gpu_host_free};

/* ---- streams (engine/stream.c): two or eight slots, copies overlapping execution ---- */

/* One device table with its pinned host staging and readback. A unit's
 * rows are copied in and executed on the slot's execution stream, and read
 * back on the readback stream, so that slot k + 1 is filled while slot k
 * executes, and small units of different slots execute at once
 * (gpu_unit_overlaps). */
typedef struct gpu_slot {
  /* The slot's lead piece on the device: the room of a unit's results
   * (where the stream's workload has a read-only type), then its progress
   * words (quiesce), then its statuses (status = quiesce + STM_Q_WORDS). A
   * unit's results end where its progress words start, so that its
   * results, progress words and statuses are one range of the piece
   * (gpu_unit_lead_from): one copy clears them, and one reads them back,
   * where each CUDA call costs the host microseconds. */
  uint8_t *lead;
  uint8_t *type, *status;
  uint64_t *args, *quiesce, *row_id, *seq, *read_hash;
  uint8_t *h_type, *h_qs, *h_status; /* pinned; h_qs: h_q, then h_status */
  uint64_t *h_args, *h_result, *h_q, *h_row_id, *h_seq, *h_read_hash;
  /* Where the slot's pinned staging lies as its device memory does (zeros
   * as long as the lead piece, then the types, then the arguments:
   * gpu_slot_laid_out), a staged unit's copies are one copy from here;
   * NULL where its buffers were taken one by one. */
  uint8_t *h_lead;
  /* Where the slot's readback lies as its lead piece does (h_qs within it,
   * a unit's results just ahead of h_q), a unit's results, progress words
   * and statuses come back in one copy; NULL where h_qs and h_result were
   * taken apart. */
  uint8_t *h_back;
  /* The bytes each pinned buffer holds: each is allocated when a unit first
   * needs it (gpu_pinned_grow). */
  uint64_t type_bytes, args_bytes, status_bytes, result_bytes, row_id_bytes, seq_bytes, read_hash_bytes;
  cudaEvent_t copy_start, copy_end, exec_end, back;
  cudaEvent_t copied; /* the unit's copies ended: copy_end, or the kernel's start where nothing came between */
  /* The kernel's start, in two events used in turn by the slot's units, so
   * that the unit retired before this one still has its own when this one
   * is retired (gpu_unit_wait's union of kernel times). */
  cudaEvent_t exec_start[2];
  unsigned launches; /* units launched on the slot; the last one's start is exec_start[(launches - 1) & 1] */
  cudaStream_t exec; /* the slot's execution stream (blocking, like the legacy default stream) */
  int busy, results;
  uint64_t n;
} gpu_slot;

/* A stream's slots: two, a unit copying while another executes; eight
 * where its units are small enough to execute at once
 * (gpu_stream_open_checked). Of those, at most GPU_STREAM_LANES execute at
 * once: slot k's kernel waits for the kernel of the unit launched
 * GPU_STREAM_LANES units before it, so that it starts as that one ends,
 * its rows already copied, instead of once the host has seen that end,
 * retired that unit and launched the next. More kernels at once abort
 * each other on hot records. */
#define GPU_STREAM_SLOTS_MAX 8
#define GPU_STREAM_LANES 4
static_assert(GPU_STREAM_SLOTS_MAX <= BACKEND_STREAM_SLOTS_MAX, "the stream keeps a unit per slot");

/* The events of a slot, in the order gpu_slot_create_streams makes them. */
#define GPU_SLOT_EVENTS 6

/* A stream's CUDA streams and events, kept by the engine (its warm-up
 * makes them) and lent to one open stream at a time: the copy, readback
 * and monitor streams, and each slot's execution stream and events. A
 * stream that finds them lent, or on another GPU, makes its own. */
struct gpu_stream_handles {
  cudaStream_t copy, back, monitor;
  cudaStream_t exec[GPU_STREAM_SLOTS_MAX];
  cudaEvent_t events[GPU_STREAM_SLOTS_MAX][GPU_SLOT_EVENTS];
  int lent;
};

static int gpu_stream_handles_lent(const struct gpu_stream_handles *h) { return h && h->lent; }

static void gpu_stream_handles_free(struct gpu_stream_handles *h) {
  if (!h) return;
  for (int k = 0; k < GPU_STREAM_SLOTS_MAX; k++) {
    for (int i = 0; i < GPU_SLOT_EVENTS; i++)
      if (h->events[k][i]) cudaEventDestroy(h->events[k][i]);
    if (h->exec[k]) cudaStreamDestroy(h->exec[k]);
  }
  cudaStream_t *three[] = {&h->copy, &h->back, &h->monitor};
  for (int i = 0; i < 3; i++)
    if (*three[i]) cudaStreamDestroy(*three[i]);
  cudaGetLastError();
  free(h);
}

static int gpu_stream_handles_make_checked(struct gpu_stream_handles *h, char *err, size_t errlen) {
  GPU_CHECK(cudaStreamCreateWithFlags(&h->copy, cudaStreamNonBlocking));
  GPU_CHECK(cudaStreamCreateWithFlags(&h->back, cudaStreamNonBlocking));
  GPU_CHECK(cudaStreamCreateWithFlags(&h->monitor, cudaStreamNonBlocking));
  for (int k = 0; k < GPU_STREAM_SLOTS_MAX; k++) {
    /* As gpu_slot_create_streams: timed events but the readback's. */
    for (int i = 0; i < GPU_SLOT_EVENTS - 1; i++) GPU_CHECK(cudaEventCreate(&h->events[k][i]));
    GPU_CHECK(cudaEventCreateWithFlags(&h->events[k][GPU_SLOT_EVENTS - 1], cudaEventDisableTiming));
    GPU_CHECK(cudaStreamCreate(&h->exec[k]));
  }
  return 0;
}

/* Makes the keep's handles on the current GPU (the keep's). They only
 * spare a stream's open its own: a failure leaves none, its error cleared,
 * and each stream then makes its own, which reports an error that lasts. */
static void gpu_stream_handles_make(struct backend_gpu_keep *keep) {
  struct gpu_stream_handles *h = (struct gpu_stream_handles *)calloc(1, sizeof *h);
  if (!h) return;
  char err[256];
  if (gpu_stream_handles_make_checked(h, err, sizeof err)) {
    gpu_stream_handles_free(h);
    return;
  }
  keep->handles = h;
}
/* Pinned staging buffers of a stream: seven a slot, and the zeros. */
#define GPU_STAGING_BUFFERS (7 * GPU_STREAM_SLOTS_MAX + 1)

struct backend_stream {
  const prstm_worker_variant *v;
  uint32_t threads, ncols;
  int threads_given; /* engine.threads was given: every unit runs on all of them */
  int verify;        /* each unit records its commit order and read hashes */
  uint64_t rows;     /* rows of one slot */
  uint64_t *words, *locks;
  /* The device memory of the state, its locks, the slots' columns and the
   * shared commit counter, in one allocation (gpu_stream_carve). */
  uint8_t *arena;
  /* Aborts, postponements and sweeps of every unit retired so far, from
   * their progress words. */
  uint64_t aborts, postponements, sweeps;
  uint64_t nwords, lock_words; /* lock_words: engine_lock_array_words */
  /* The first word the stream holds: 0, except in a unit of a partitioned
   * state (engine/multi.c), which holds words [held_lo, held_lo + nwords)
   * and their locks alone. */
  uint64_t held_lo;
  gpu_slot slot[GPU_STREAM_SLOTS_MAX];
  unsigned nslots;
  cudaStream_t copy, back, monitor;
  /* The units of the slots may execute at once (gpu_unit_overlaps): each
   * slot's threads take ranks from slot * threads on, and, verified, every
   * unit takes its commit numbers from the one counter `sequence`. */
  int overlap;
  uint64_t *sequence;
  /* Execution time is the union of the units' kernels, which start in the
   * order they were launched: `last_start` is the start event of the unit
   * retired last (none before the first), and `union_ms` how far past it
   * the union of the kernels retired so far reaches. Each step is measured
   * between two nearby events, so a stream open for hours keeps the
   * resolution of one unit's. */
  cudaEvent_t last_start;
  double union_ms;
  /* The slot of the last unit that may not overlap others, while it may
   * still execute: the units launched after it wait for it too, so that it
   * runs alone. -1: none. */
  int alone_slot;
  uint64_t *h_watch; /* pinned: the progress words as the watchdog last saw them, then the stop word */
  uint8_t *h_zeros;  /* pinned zeros: the source of each unit's cleared statuses, results and progress words */
  uint64_t zero_bytes;
  uint64_t lead_bytes;  /* a slot's device memory ahead of its types (gpu_slot_lead_bytes) */
  uint64_t result_room; /* the results' room at the start of a slot's lead piece: 8 bytes a row, or none */
  /* The pinned buffers above that are ordinary memory page-locked by this
   * stream (gpu_pinned_take), not the driver's own. */
  void *registered[GPU_STAGING_BUFFERS];
  unsigned nregistered;
  /* The engine's two pinned chunks where the stream's pinned buffers were
   * carved from them (gpu_stream_borrow_chunks), each of borrowed_bytes;
   * NULL where every buffer is the stream's own. */
  uint8_t *borrowed[2];
  uint64_t borrowed_bytes;
  struct backend_gpu_keep *lent_from; /* the engine's keep, told at the free that its chunks are its own again */
  struct gpu_stream_handles *handles; /* the engine's streams and events, lent; NULL: the stream made its own */
  /* A unit of a co-executed run: its footprint marks on the device, the
   * read marks then the write marks, one byte a lock each; NULL otherwise. */
  uint8_t *marks;
  uint64_t nlocks;
  /* A unit of a run over several units: the span of its footprint on the
   * device (STM_SPAN_WORDS words); NULL otherwise. */
  uint64_t *span;
  /* A co-executed unit's reconciliation (gpu_log_compare): the other
   * unit's log or a list of locks (d_locks), this unit's written locks
   * (d_written, room for every lock), words of listed locks (d_compact)
   * and the comparison's flags on the device; the pinned halves that
   * uploads go through (h_put, two of PRSTM_POLICY_HETERO_LOG_CHUNK
   * bytes) and the pinned copies of what comes back. Taken at a unit's
   * first reconciliation, grown as rounds need. */
  uint64_t *d_locks, *d_written, *d_compact;
  uint64_t d_locks_bytes, d_compact_bytes;
  unsigned long long *d_flags;
  uint8_t *h_put;
  cudaEvent_t put_done[2];
  uint64_t *h_written, *h_compact;
  uint64_t h_written_bytes, h_compact_bytes;
  unsigned long long *h_flags;
  prstm_exec_ctx base;
  /* No staging: the state's copies go direct (gpu_stream_staging). */
  gpu_staging direct;
  /* The GPU the stream runs on: every operation makes it the calling
   * thread's current device first, so that one thread may drive the units
   * of several GPUs (engine/multi.c). */
  int device;
};

static void gpu_pinned_give(backend_stream *g, void *p);

static void gpu_stream_free(backend_stream *g) {
  if (!g) return;
  cudaSetDevice(g->device);
  /* A unit still in flight is told to stop, through the monitor stream
   * because the execution stream is busy with it, once its progress words
   * were zeroed by its own copy; then the device is drained before freeing. */
  for (int k = 0; k < GPU_STREAM_SLOTS_MAX; k++) {
    gpu_slot *sl = &g->slot[k];
    if (!sl->busy || !g->monitor || !g->h_watch) continue;
    if (cudaEventSynchronize(sl->copied) != cudaSuccess) continue;
    g->h_watch[STM_Q_WORDS] = 1;
    if (cudaMemcpyAsync(&sl->quiesce[STM_Q_STOP], &g->h_watch[STM_Q_WORDS], sizeof(uint64_t), cudaMemcpyHostToDevice,
                        g->monitor) == cudaSuccess)
      cudaStreamSynchronize(g->monitor);
  }
  cudaDeviceSynchronize();
  cudaGetLastError();
  /* Nothing reads or writes the borrowed buffers once the device is idle. */
  if (g->lent_from) g->lent_from->lent = 0;
  cudaFree(g->arena);
  for (int k = 0; k < GPU_STREAM_SLOTS_MAX; k++) {
    gpu_slot *sl = &g->slot[k];
    gpu_pinned_give(g, sl->h_row_id);
    gpu_pinned_give(g, sl->h_seq);
    gpu_pinned_give(g, sl->h_read_hash);
    gpu_pinned_give(g, sl->h_type);
    gpu_pinned_give(g, sl->h_qs);
    gpu_pinned_give(g, sl->h_args);
    gpu_pinned_give(g, sl->h_result);
    if (g->handles) continue; /* the engine's, kept for its next stream */
    cudaEvent_t *ev[] = {&sl->copy_start,    &sl->copy_end, &sl->exec_start[0],
                         &sl->exec_start[1], &sl->exec_end, &sl->back};
    for (unsigned i = 0; i < sizeof ev / sizeof ev[0]; i++)
      if (*ev[i]) cudaEventDestroy(*ev[i]);
    if (sl->exec) cudaStreamDestroy(sl->exec);
  }
  cudaFree(g->marks);
  cudaFree(g->span);
  cudaFree(g->d_locks);
  cudaFree(g->d_written);
  cudaFree(g->d_compact);
  cudaFree(g->d_flags);
  for (int k = 0; k < 2; k++)
    if (g->put_done[k]) cudaEventDestroy(g->put_done[k]);
  gpu_pinned_give(g, g->h_put);
  gpu_pinned_give(g, g->h_written);
  gpu_pinned_give(g, g->h_compact);
  gpu_pinned_give(g, g->h_flags);
  if (g->handles) {
    /* The device is idle (above): the next stream finds them free. */
    g->handles->lent = 0;
  } else {
    if (g->copy) cudaStreamDestroy(g->copy);
    if (g->back) cudaStreamDestroy(g->back);
    if (g->monitor) cudaStreamDestroy(g->monitor);
  }
  gpu_pinned_give(g, g->h_watch);
  gpu_pinned_give(g, g->h_zeros);
  free(g);
}

/* The staging the state goes up through at open and comes back through at
 * the end: the engine's pinned chunks, as for a whole run's copies
 * (gpu_staging_for_run), so that a large state moves at the link's rate
 * rather than pageable memory's. The state's copy up counts toward taking
 * them (`bytes`), as the larger way of a whole run does; the copy back
 * passes 0. A unit of a co-executed or multi-GPU run (a device of its own)
 * copies direct, as its rounds do, and so does a stream whose engine could
 * not take the chunks: they only speed the copy up, and a close must not
 * fail for them, with the stream's work on the device. */
static gpu_staging *gpu_stream_staging(prstm_engine *e, backend_stream *g, uint64_t bytes) {
  gpu_staging *out = &g->direct;
  if (e->unit_device >= 0) return out;
  char why[256];
  if (gpu_staging_for_run(e, bytes, 0, &g->direct, &out, why, sizeof why) != 0) return &g->direct;
  return out;
}

/* One piece of `bytes` of an allocation being laid out: from c->base
 * where it is set, else NULL while the pass only adds up the size. Pieces
 * start on 256-byte boundaries, as cudaMalloc's allocations do. */
typedef struct gpu_carver {
  uint8_t *base;
  size_t used;
} gpu_carver;

#define GPU_ROUND8(x) (((x) + 7u) & ~(uint64_t)7u)

/* The bytes gpu_carve gives a piece of `bytes`. */
static uint64_t gpu_carved(uint64_t bytes) { return (bytes + 255) & ~(uint64_t)255; }

static void *gpu_carve(gpu_carver *c, size_t bytes) {
  void *p = c->base ? c->base + c->used : NULL;
  c->used += gpu_carved(bytes);
  return p;
}

/* A slot's lead piece (the results' room, progress words and statuses,
 * ahead of its types) as carved: the offset of the types from the start of
 * the slot. */
static uint64_t gpu_slot_lead_bytes(const backend_stream *g) {
  return gpu_carved(g->result_room + 8 * STM_Q_WORDS + GPU_ROUND8(g->rows));
}

/* A unit of n rows' part of its slot's lead piece, [from, from + bytes):
 * its results where it has them, ending where the progress words start,
 * then the progress words and its n statuses. */
static uint64_t gpu_unit_lead_from(const backend_stream *g, uint64_t n, int results) {
  return g->result_room - (results ? 8 * n : 0);
}
static uint64_t gpu_unit_lead_bytes(uint64_t n, int results) { return (results ? 8 * n : 0) + 8 * STM_Q_WORDS + n; }

/* Lays the stream's device memory out from c->base (NULL: sizes it). One
 * allocation and one free instead of one for each column of each slot,
 * some twenty of each for a stream of four slots: each is a call that
 * costs the host tens of microseconds at a stream's open and close. */
static void gpu_stream_carve(backend_stream *g, gpu_carver *c) {
  const uint64_t r = g->rows;
  g->words = (uint64_t *)gpu_carve(c, 8 * g->nwords);
  g->locks = (uint64_t *)gpu_carve(c, 8 * g->lock_words);
  g->sequence = g->overlap && g->verify ? (uint64_t *)gpu_carve(c, sizeof(uint64_t)) : NULL;
  for (unsigned k = 0; k < g->nslots; k++) {
    gpu_slot *sl = &g->slot[k];
    /* The results' room, the progress words and the statuses in one
     * piece, so that one copy clears the three for a unit; then the types
     * and the arguments, so that where the staging lies the same way
     * (gpu_slot_laid_out) one copy also brings the unit's rows. */
    sl->lead = (uint8_t *)gpu_carve(c, gpu_slot_lead_bytes(g));
    sl->quiesce = c->base ? (uint64_t *)(sl->lead + g->result_room) : NULL;
    sl->status = c->base ? (uint8_t *)(sl->quiesce + STM_Q_WORDS) : NULL;
    sl->type = (uint8_t *)gpu_carve(c, r);
    sl->args = g->ncols ? (uint64_t *)gpu_carve(c, 8 * (size_t)g->ncols * r) : NULL;
    /* Carried rows' prstm_row numbers; a unit of carried rows alone fills
     * the whole slot at close. */
    sl->row_id = (uint64_t *)gpu_carve(c, 8 * r);
    sl->seq = g->verify ? (uint64_t *)gpu_carve(c, 8 * r) : NULL;
    sl->read_hash = g->verify ? (uint64_t *)gpu_carve(c, 8 * r) : NULL;
  }
}

/* A slot's events and execution stream. Its pinned staging and readback
 * columns are allocated when a unit first needs them (gpu_pinned_grow), or
 * carved from the engine's chunks (gpu_stream_borrow_chunks): a stream of
 * pinned batches copies its new rows from the batch's own memory, and
 * needs staging only for carried rows, often none, with a readback of its
 * units' progress words and statuses; allocated here, they took a third
 * of a short stream's time. */
static int gpu_slot_create_streams(gpu_slot *sl, char *err, size_t errlen) {
  GPU_CHECK(cudaEventCreate(&sl->copy_start));
  GPU_CHECK(cudaEventCreate(&sl->copy_end));
  GPU_CHECK(cudaEventCreate(&sl->exec_start[0]));
  GPU_CHECK(cudaEventCreate(&sl->exec_start[1]));
  GPU_CHECK(cudaEventCreate(&sl->exec_end));
  GPU_CHECK(cudaEventCreateWithFlags(&sl->back, cudaEventDisableTiming));
  GPU_CHECK(cudaStreamCreate(&sl->exec));
  return 0;
}

/* The slot's events and execution stream from the engine's handles, in
 * gpu_slot_create_streams' order. */
static void gpu_slot_take_streams(gpu_slot *sl, const struct gpu_stream_handles *h, unsigned k) {
  cudaEvent_t *ev[GPU_SLOT_EVENTS] = {&sl->copy_start,    &sl->copy_end, &sl->exec_start[0],
                                      &sl->exec_start[1], &sl->exec_end, &sl->back};
  for (int i = 0; i < GPU_SLOT_EVENTS; i++) *ev[i] = h->events[k][i];
  sl->exec = h->exec[k];
}

/* The engine's handles, where it holds them on the stream's GPU and no
 * other stream has them (the chunks' own condition:
 * gpu_stream_borrow_chunks); NULL where the stream must make its own. */
static struct gpu_stream_handles *gpu_stream_handles_take(prstm_engine *e, const backend_stream *g) {
  if (e->unit_device >= 0 || !e->gpu_keep) return NULL;
  struct backend_gpu_keep *keep = e->gpu_keep;
  if (!keep->handles || keep->handles->lent || keep->device != g->device) return NULL;
  keep->handles->lent = 1;
  return keep->handles;
}

/* The pinned host bytes a unit needs. One place, so that the check made
 * before retiring the other slots' units, the growth itself and the buffers
 * carved from the engine's chunks (gpu_stream_borrow_chunks) can never
 * disagree: a growth the check missed would free pinned memory behind a
 * running kernel, outside the watchdog. */
typedef struct gpu_unit_bytes {
  uint64_t type, args, status, result, row_id, seq, read_hash, zeros;
} gpu_unit_bytes;

static gpu_unit_bytes gpu_unit_needs(const backend_stream *g, const backend_unit *u) {
  gpu_unit_bytes b;
  b.type = u->staged;
  b.args = 8ull * g->ncols * u->staged;
  b.status = 8 * STM_Q_WORDS + u->n; /* the progress words, then every row's status */
  b.result = u->results ? 8 * u->n : 0;
  b.row_id = 8 * u->carried;
  b.seq = g->verify ? 8 * u->n : 0;
  b.read_hash = b.seq;
  b.zeros = gpu_unit_lead_bytes(u->n, u->results);
  return b;
}

/* Carves every slot's pinned buffers, at the most a unit can need, the
 * watchdog's words and the zeros out of the engine's two pinned chunks,
 * where the engine holds them on this GPU and they are large enough; else
 * the buffers are taken as units need them (gpu_pinned_grow). The chunks
 * are idle while a stream is open: the state goes up through them before
 * the first unit and comes back through them after the last unit's
 * outcomes were taken. Taking and freeing the driver's pinned memory cost
 * a stream of 10,000-row units milliseconds at its first units and its
 * close (about 0.15 ms to pin and 0.05 ms to free 200 KiB on an H200's
 * host; 1.1 ms for the watchdog's 80 bytes, after the warm-up's own small
 * pinned allocation). */
static void gpu_stream_borrow_chunks(prstm_engine *e, backend_stream *g, int results) {
  if (e->unit_device >= 0 || !e->gpu_keep) return;
  struct backend_gpu_keep *keep = e->gpu_keep;
  if (!keep->staging.bytes || keep->device != g->device) return;
  const uint64_t chunk = keep->staging.bytes;
  /* The most a unit of the slots' rows can need: new rows, carried rows
   * and results all at once. */
  backend_unit most;
  memset(&most, 0, sizeof most);
  most.n = most.staged = most.carried = g->rows;
  most.results = results;
  const gpu_unit_bytes need = gpu_unit_needs(g, &most);
#define GPU_BORROW_ROUND(x) (((x) + 63u) & ~(uint64_t)63u)
  const uint64_t watch = GPU_BORROW_ROUND(8 * (STM_Q_WORDS + 1));
  const uint64_t zeros = GPU_BORROW_ROUND(need.zeros);
  uint64_t sizes[7] = {GPU_BORROW_ROUND(need.type),     GPU_BORROW_ROUND(need.args),   GPU_BORROW_ROUND(need.status),
                       GPU_BORROW_ROUND(need.result),   GPU_BORROW_ROUND(need.row_id), GPU_BORROW_ROUND(need.seq),
                       GPU_BORROW_ROUND(need.read_hash)};
#undef GPU_BORROW_ROUND
  /* Each slot's staging lies as its device memory does (gpu_slot_laid_out):
   * zeros as long as the device's lead piece, then the types as long as
   * carved there, then the arguments. Its readback lies as the lead piece
   * does too (h_back), the progress words, statuses and results in it. */
  const uint64_t lead = g->lead_bytes;
  sizes[0] = gpu_carved(need.type);
  /* The statuses and results live in h_back, whose pieces hold what
   * gpu_unit_needs asks of them at the most. */
  if (lead - g->result_room < need.status || g->result_room < need.result) return;
  sizes[2] = sizes[3] = 0;
  uint64_t per_slot = 2 * lead;
  for (int i = 0; i < 7; i++) per_slot += sizes[i];
  /* Whole slots to a chunk: the watchdog's words, the zeros and as many
   * slots as fit in the first, the rest in the second. */
  if (watch + zeros > chunk || per_slot > chunk) return;
  const uint64_t first = (chunk - watch - zeros) / per_slot;
  if (first < g->nslots && (g->nslots - first) * per_slot > chunk) return;
  uint8_t *at[2] = {keep->staging.chunk[0], keep->staging.chunk[1]};
  g->h_watch = (uint64_t *)at[0];
  at[0] += watch;
  g->h_zeros = at[0];
  g->zero_bytes = zeros;
  memset(g->h_zeros, 0, zeros);
  at[0] += zeros;
  for (unsigned k = 0; k < g->nslots; k++) {
    gpu_slot *sl = &g->slot[k];
    uint8_t **p = &at[k < first ? 0 : 1];
    sl->h_lead = *p;
    memset(sl->h_lead, 0, lead);
    *p += lead;
    uint8_t **bufs[7] = {&sl->h_type,
                         (uint8_t **)&sl->h_args,
                         &sl->h_qs,
                         (uint8_t **)&sl->h_result,
                         (uint8_t **)&sl->h_row_id,
                         (uint8_t **)&sl->h_seq,
                         (uint8_t **)&sl->h_read_hash};
    uint64_t *have[7] = {&sl->type_bytes,   &sl->args_bytes, &sl->status_bytes,   &sl->result_bytes,
                         &sl->row_id_bytes, &sl->seq_bytes,  &sl->read_hash_bytes};
    for (int i = 0; i < 7; i++) {
      if (!sizes[i]) continue;
      *bufs[i] = *p;
      *have[i] = sizes[i];
      *p += sizes[i];
    }
    /* The readback, after the staging: the types follow the zeros. */
    sl->h_back = *p;
    *p += lead;
    sl->h_qs = sl->h_back + g->result_room;
    sl->status_bytes = lead - g->result_room;
    sl->result_bytes = g->result_room;
    sl->h_q = (uint64_t *)sl->h_qs;
    sl->h_status = sl->h_qs + 8 * STM_Q_WORDS;
  }
  g->borrowed[0] = keep->staging.chunk[0];
  g->borrowed[1] = keep->staging.chunk[1];
  g->borrowed_bytes = chunk;
  g->lent_from = keep;
  keep->lent = 1;
}

static int gpu_stream_open_checked(prstm_engine *e, backend_stream *g, int results, uint64_t want_rows,
                                   uint64_t *unit_rows, uint64_t *gpu_bytes, char *device, size_t device_len, char *err,
                                   size_t errlen) {
  GPU_CHECK(cudaSetDevice(g->device));
  uint32_t max_threads = 0;
  int rc = g->v->gpu_max_threads(&max_threads, err, errlen);
  if (rc) return rc;
  uint32_t threads = 0;
  rc = gpu_pick_threads(e, g->v, max_threads, &threads, err, errlen);
  if (rc) return rc;
  g->threads = threads;
  g->threads_given = e->opt.threads != 0;
  const uint64_t cov = e->opt.lock_coverage;
  g->held_lo = e->unit_held_hi ? e->unit_held_lo : 0;
  g->nwords = e->unit_held_hi ? e->unit_held_hi - e->unit_held_lo : e->nwords;
  uint64_t lock_lo = 0;
  g->lock_words = engine_lock_array_words(e->wl, engine_held_locks(g->held_lo, g->nwords, cov, &lock_lo));

  /* Units of different slots may execute at once where nothing needs them
   * one after another: a unit of a co-executed or partitioned run (marks,
   * span) hands its footprint over unit by unit, a thread alone on its
   * state (one thread) takes no lock, and every slot's ranks must fit the
   * lock word's owner field. A stream whose units will be small enough to
   * overlap (gpu_unit_overlaps) takes four slots, so that the host fills
   * and launches units while two execute; others take two. */
  g->overlap = !e->unit_read_marks && !e->unit_span && threads > 1 &&
               (uint64_t)GPU_STREAM_SLOTS_MAX * threads <= PRSTM_MAX_THREADS;
  g->nslots = g->overlap && !g->threads_given && want_rows * PRSTM_POLICY_STREAM_OVERLAP_SHARE <= threads
                  ? GPU_STREAM_SLOTS_MAX
                  : 2;

  cudaDeviceProp prop;
  GPU_CHECK(cudaGetDeviceProperties(&prop, g->device));
  size_t free_b = 0;
  rc = gpu_usable_memory(&free_b, err, errlen);
  if (rc) return rc;
  /* The state and locks stay; each slot takes a unit of new rows and as
   * many carried rows, hence two rows of table per slot per unit row, each
   * with room for a carried row's id and, verified, its place in the commit
   * order and its read hash. */
  uint64_t fixed = 8 * (g->nwords + g->lock_words) + g->nslots * 8ull * STM_Q_WORDS + 4 * sizeof(unsigned long long);
  uint64_t row_bytes = 2 + 8ull * g->ncols + (results ? 8 : 0) + 8 + (g->verify ? 16 : 0);
  uint64_t usable = free_b - free_b / 32; /* headroom for the allocator's rounding */
  const uint64_t table_rows = 2ull * g->nslots;
  if (fixed + table_rows * row_bytes > usable) {
    snprintf(err, errlen,
             "the state and locks need %.1f MiB of GPU memory, which leaves no room for a table on %s (%.1f MiB free "
             "for prstm): use fewer accounts, a larger lock_coverage, or --backend cpu",
             fixed / 1048576.0, prop.name, free_b / 1048576.0);
    return PRSTM_ETOOBIG;
  }
  uint64_t fit = (usable - fixed) / (table_rows * row_bytes);
  uint64_t rows = want_rows < fit ? want_rows : fit;
  if (rows == 0) rows = 1;
  g->rows = 2 * rows;
  *unit_rows = rows;
  *gpu_bytes = fixed + table_rows * row_bytes * rows;

  g->handles = gpu_stream_handles_take(e, g);
  if (g->handles) {
    g->copy = g->handles->copy;
    g->back = g->handles->back;
    g->monitor = g->handles->monitor;
  } else {
    GPU_CHECK(cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking));
    GPU_CHECK(cudaStreamCreateWithFlags(&g->back, cudaStreamNonBlocking));
    GPU_CHECK(cudaStreamCreateWithFlags(&g->monitor, cudaStreamNonBlocking));
  }
  gpu_carver carver = {NULL, 0};
  g->result_room = results ? 8 * g->rows : 0;
  g->lead_bytes = gpu_slot_lead_bytes(g);
  gpu_stream_carve(g, &carver);
  GPU_CHECK(cudaMalloc((void **)&g->arena, carver.used));
  carver = (gpu_carver){g->arena, 0};
  gpu_stream_carve(g, &carver);
  for (unsigned k = 0; k < g->nslots; k++) {
    if (g->handles) {
      gpu_slot_take_streams(&g->slot[k], g->handles, k);
      continue;
    }
    rc = gpu_slot_create_streams(&g->slot[k], err, errlen);
    if (rc) return rc;
  }
  rc =
      gpu_copy_up(gpu_stream_staging(e, g, 8 * g->nwords), g->words, e->words + g->held_lo, 8 * g->nwords, err, errlen);
  if (rc) return rc;
  /* Cleared once: every unit gives back every lock it took, so they are
   * free from one unit to the next. */
  GPU_CHECK(cudaMemset(g->locks, 0, 8 * g->lock_words));
  if (g->sequence) GPU_CHECK(cudaMemset(g->sequence, 0, sizeof(uint64_t)));
  g->alone_slot = -1;
  GPU_CHECK(cudaDeviceSynchronize());
  /* The state went up through the engine's chunks, if at all, and is on
   * the device: the chunks may now hold the slots' buffers. */
  gpu_stream_borrow_chunks(e, g, results);
  if (!g->h_watch) GPU_CHECK(cudaHostAlloc((void **)&g->h_watch, 8 * (STM_Q_WORDS + 1), cudaHostAllocDefault));
  if (!g->h_zeros) {
    /* Enough zeros for the progress words; gpu_stream_reserve_checked
     * grows them to what a unit's cleared columns need. */
    g->zero_bytes = 8 * STM_Q_WORDS;
    GPU_CHECK(cudaHostAlloc((void **)&g->h_zeros, g->zero_bytes, cudaHostAllocDefault));
    memset(g->h_zeros, 0, g->zero_bytes);
  }

  /* The parts of the context every unit shares; the table is set per unit. */
  prstm_batch none;
  memset(&none, 0, sizeof none);
  engine_ctx_fill_common(e, &none, threads, &g->base);
  /* A partitioned unit's words and locks are indexed as the whole state's
   * are: the context points before its memory by the words and locks it
   * does not hold, and its accesses never leave the held range
   * (stm_tx_holds), so nothing is read or written outside the memory. */
  g->base.words = g->words - g->held_lo;
  engine_ctx_set_held_locks(&g->base, e->wl, g->locks);
  g->base.read_marks = g->base.write_marks = NULL;
  if (e->unit_read_marks) {
    g->nlocks = g->base.nlocks;
    GPU_CHECK(cudaMalloc((void **)&g->marks, 2 * g->nlocks));
    GPU_CHECK(cudaMemset(g->marks, 0, 2 * g->nlocks));
    g->base.read_marks = g->marks;
    g->base.write_marks = g->marks + g->nlocks;
  }
  g->base.span = NULL;
  if (e->unit_span) {
    GPU_CHECK(cudaMalloc((void **)&g->span, 8 * STM_SPAN_WORDS));
    GPU_CHECK(cudaMemcpy(g->span, e->unit_span, 8 * STM_SPAN_WORDS, cudaMemcpyHostToDevice));
    g->base.span = g->span;
  }
  if (g->device)
    snprintf(device, device_len, "%.72s #%d (%d SMs, %u threads)", prop.name, g->device, prop.multiProcessorCount,
             threads);
  else
    snprintf(device, device_len, "%.80s (%d SMs, %u threads)", prop.name, prop.multiProcessorCount, threads);
  return 0;
}

static int gpu_stream_open(prstm_engine *e, const prstm_worker_variant *v, const backend_stream_shape *shape,
                           backend_stream **out, backend_stream_info *info) {
  backend_stream *g = (backend_stream *)calloc(1, sizeof *g);
  if (!g) return engine_fail(e, PRSTM_ENOMEM, "cannot allocate a GPU stream");
  g->v = v;
  g->device = e->unit_device;
  if (g->device < 0 && cudaGetDevice(&g->device) != cudaSuccess) {
    cudaGetLastError();
    g->device = 0;
  }
  g->ncols = shape->ncols;
  g->verify = shape->verify;
  /* Units the size of the first batch, within the limit, and at most
   * PRSTM_POLICY_STREAM_MAX_UNIT_ROWS new rows, so that the pinned staging
   * stays a few hundred MiB; fewer where the GPU's memory is short. */
  uint64_t want = shape->first_rows ? shape->first_rows : 1;
  if (shape->limit_rows && shape->limit_rows < want) want = shape->limit_rows;
  const uint64_t most = shape->max_unit_rows ? shape->max_unit_rows : PRSTM_POLICY_STREAM_MAX_UNIT_ROWS;
  if (want > most) want = most;
  int rc = gpu_stream_open_checked(e, g, shape->results, want, &info->unit_rows, &info->gpu_bytes, info->device,
                                   sizeof info->device, e->err, sizeof e->err);
  if (rc) {
    gpu_stream_free(g);
    return rc;
  }
  info->slot_rows = g->rows;
  info->threads = g->threads;
  info->slots = g->nslots;
  *out = g;
  return 0;
}

/* Pinned host memory of `bytes` for the stream's staging. A large buffer
 * is page-locked in place (gpu_locked_pages_take), which spares a
 * multi-unit run's staging of its share of a batch the driver's pinned
 * allocation before its first round; where the driver refuses to lock
 * it, and for a small one, the driver's own pinned memory. */
static int gpu_pinned_take(backend_stream *g, void **buf, uint64_t bytes, char *err, size_t errlen) {
  if (bytes >= PRSTM_POLICY_LOCK_PAGES_MIN_BYTES && g->nregistered < GPU_STAGING_BUFFERS) {
    void *p = gpu_locked_pages_take((size_t)bytes);
    if (p) {
      g->registered[g->nregistered++] = p;
      *buf = p;
      return 0;
    }
  }
  GPU_CHECK(cudaHostAlloc(buf, bytes, cudaHostAllocDefault));
  return 0;
}

/* Gives back a buffer of gpu_pinned_take (NULL: nothing). A failure cannot
 * be acted on and is cleared. */
static void gpu_pinned_give(backend_stream *g, void *p) {
  if (!p) return;
  for (int k = 0; k < 2; k++)
    if (g->borrowed[k] && (uint8_t *)p >= g->borrowed[k] && (uint8_t *)p < g->borrowed[k] + g->borrowed_bytes) return;
  for (unsigned i = 0; i < g->nregistered; i++) {
    if (g->registered[i] != p) continue;
    g->registered[i] = g->registered[--g->nregistered];
    gpu_locked_pages_give(p);
    return;
  }
  if (cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
}

/* Grows a pinned host buffer to at least `need` bytes: first to a
 * sixteenth of `most`, or four times `need` where that is less (and at
 * least `need`), then by doubling up to `most`, so that it is taken again a
 * few times per stream, not per unit: pinned allocation takes
 * milliseconds, and freeing waits for the whole GPU. The
 * contents are not kept: the caller knows that nothing reads the old buffer
 * any more, and that no unit is in flight (gpu_unit_would_grow). A
 * need of 0 takes nothing. */
static int gpu_pinned_grow(backend_stream *g, void **buf, uint64_t *have, uint64_t need, uint64_t most, char *err,
                           size_t errlen) {
  if (need <= *have) return 0;
  /* The floor applies to every growth, not only the first: the zeros
   * start with the progress words' 96 bytes, not 0. A small unit (a
   * co-executed run's probe, a stream of small batches) takes no more than
   * four times its need. */
  uint64_t want = 2 * *have;
  uint64_t least = most / 16;
  if (least > 4 * need) least = 4 * need;
  if (want < least) want = least;
  if (want > most) want = most;
  if (want < need) want = need;
  gpu_pinned_give(g, *buf);
  *buf = NULL;
  *have = 0;
  int rc = gpu_pinned_take(g, buf, want, err, errlen);
  if (rc) return rc;
  *have = want;
  return 0;
}

static int gpu_unit_would_grow(const backend_stream *g, unsigned slot, const backend_unit *u) {
  const gpu_slot *sl = &g->slot[slot];
  const gpu_unit_bytes need = gpu_unit_needs(g, u);
  return need.type > sl->type_bytes || need.args > sl->args_bytes || need.status > sl->status_bytes ||
         need.result > sl->result_bytes || need.row_id > sl->row_id_bytes || need.seq > sl->seq_bytes ||
         need.read_hash > sl->read_hash_bytes || need.zeros > g->zero_bytes;
}

static int gpu_stream_reserve_checked(backend_stream *g, gpu_slot *sl, const gpu_unit_bytes *need, char *err,
                                      size_t errlen) {
  int rc = gpu_pinned_grow(g, (void **)&sl->h_type, &sl->type_bytes, need->type, g->rows, err, errlen);
  if (!rc)
    rc = gpu_pinned_grow(g, (void **)&sl->h_args, &sl->args_bytes, need->args, 8ull * g->ncols * g->rows, err, errlen);
  if (!rc)
    rc =
        gpu_pinned_grow(g, (void **)&sl->h_qs, &sl->status_bytes, need->status, 8 * STM_Q_WORDS + g->rows, err, errlen);
  sl->h_q = (uint64_t *)sl->h_qs;
  sl->h_status = sl->h_qs ? sl->h_qs + 8 * STM_Q_WORDS : NULL;
  if (!rc) rc = gpu_pinned_grow(g, (void **)&sl->h_result, &sl->result_bytes, need->result, 8 * g->rows, err, errlen);
  if (!rc) rc = gpu_pinned_grow(g, (void **)&sl->h_row_id, &sl->row_id_bytes, need->row_id, 8 * g->rows, err, errlen);
  if (!rc) rc = gpu_pinned_grow(g, (void **)&sl->h_seq, &sl->seq_bytes, need->seq, 8 * g->rows, err, errlen);
  if (!rc)
    rc = gpu_pinned_grow(g, (void **)&sl->h_read_hash, &sl->read_hash_bytes, need->read_hash, 8 * g->rows, err, errlen);
  if (!rc && need->zeros > g->zero_bytes) {
    rc = gpu_pinned_grow(g, (void **)&g->h_zeros, &g->zero_bytes, need->zeros, 8 * g->rows, err, errlen);
    if (!rc) memset(g->h_zeros, 0, g->zero_bytes);
  }
  return rc;
}

static int gpu_unit_reserve(prstm_engine *e, backend_stream *g, unsigned slot, const backend_unit *u,
                            backend_staging *staging) {
  if (cudaSetDevice(g->device) != cudaSuccess)
    return engine_fail(e, PRSTM_ECUDA, "cannot select GPU %d: %s", g->device, cudaGetErrorString(cudaGetLastError()));
  if (u->n > g->rows || u->staged > u->n || u->carried > u->n)
    return engine_fail(e, PRSTM_EINVAL,
                       "a unit of %llu rows (%llu staged, %llu carried) exceeds the stream's slots of %llu",
                       (unsigned long long)u->n, (unsigned long long)u->staged, (unsigned long long)u->carried,
                       (unsigned long long)g->rows);
  gpu_slot *sl = &g->slot[slot];
  const gpu_unit_bytes need = gpu_unit_needs(g, u);
  int rc = gpu_stream_reserve_checked(g, sl, &need, e->err, sizeof e->err);
  if (rc) return rc;
  staging->type = sl->h_type;
  staging->args = sl->h_args;
  staging->stride = u->staged;
  staging->row_id = sl->h_row_id;
  /* Narrow columns unless direct rows come wide from their batch. */
  staging->narrow_ok = (!u->direct || u->direct->narrow) && g->ncols > 0;
  return 0;
}

/* The widest pitch a two-dimensional copy takes on every GPU of the
 * architectures built (cudaDeviceProp.memPitch is 2^31 - 1 on them). */
#define GPU_MAX_COPY_PITCH ((uint64_t)INT32_MAX)

/* Whether a unit of `threads` threads may execute while the units of other
 * slots still do. Only a unit that keeps its postponed rows pending
 * (ENGINE_RUN_KEEP_POSTPONED): a final unit abandons what is postponed at
 * its quiescence, which must then be the whole stream's. And only a small
 * one (at most 1 / PRSTM_POLICY_STREAM_OVERLAP_SHARE of the stream's
 * threads): a unit of that many rows leaves most of the GPU idle while its
 * last rows retry, where a large one fills it, and more threads in flight
 * there would only add conflicts. */
static int gpu_unit_overlaps(const backend_stream *g, const backend_unit *u, uint32_t threads) {
  return g->overlap && (u->flags & ENGINE_RUN_KEEP_POSTPONED) &&
         (uint64_t)threads * PRSTM_POLICY_STREAM_OVERLAP_SHARE <= g->threads;
}

/* Whether the slot's pinned staging lies as its device memory does: zeros
 * as long as the lead piece (results' room, progress words, statuses),
 * then the types (gpu_slot_types_laid_out), then the arguments
 * (gpu_slot_laid_out), each at the device's offsets (gpu_stream_carve,
 * gpu_stream_borrow_chunks). A staged unit's rows and clears are then one
 * copy instead of three, and a direct unit's clears and types one instead
 * of two: each a CUDA call of some microseconds of the host's time a
 * unit. */
static int gpu_slot_types_laid_out(const backend_stream *g, const gpu_slot *sl) {
  return sl->h_lead && sl->h_type == sl->h_lead + g->lead_bytes && sl->type == sl->lead + g->lead_bytes;
}

static int gpu_slot_laid_out(const backend_stream *g, const gpu_slot *sl) {
  const uint64_t tcap = gpu_carved(g->rows);
  return gpu_slot_types_laid_out(g, sl) &&
         (!g->ncols || ((uint8_t *)sl->h_args == sl->h_type + tcap && (uint8_t *)sl->args == sl->type + tcap));
}

static int gpu_stream_launch_checked(backend_stream *g, unsigned slot, const backend_unit *u, char *err,
                                     size_t errlen) {
  gpu_slot *sl = &g->slot[slot];
  const uint64_t n = u->n;
  const int results = u->results;
  const backend_direct_rows *direct = u->direct;
  const uint64_t d = direct ? direct->n : 0;
  /* The unit's results (where it has them), progress words and statuses:
   * [lead_from, lead_from + lead_n) of the slot's lead piece. */
  const uint64_t lead_from = gpu_unit_lead_from(g, n, results), lead_n = gpu_unit_lead_bytes(n, results);
  sl->n = n;
  sl->results = results;
  /* The unit's copies go on its slot's execution stream, ahead of its
   * kernel, which the stream orders after them without an event: the
   * slot's last unit was retired before, so nothing holds the stream. */
  cudaStream_t up = sl->exec;
  GPU_CHECK(cudaEventRecord(sl->copy_start, up));
  const int laid_out = d == 0 && gpu_slot_laid_out(g, sl);
  /* A direct unit's types go through the slot's staging where it lies as
   * the device does: a host copy of a byte a row, so that the types and the
   * clear are one CUDA call. Carried rows' types are in the staging's
   * first places, so only a unit without them. */
  const int types_staged = d != 0 && u->carried == 0 && gpu_slot_types_laid_out(g, sl);
  if (types_staged) memcpy(sl->h_type, direct->type, d);
  if (laid_out || types_staged) {
    /* The zeros ahead of the types clear the unit's results, progress
     * words and statuses; the room between them and the types goes along,
     * unread, and so do the types' room past the unit's rows with the
     * arguments. */
    const uint64_t rows_bytes = !laid_out  ? d
                                : g->ncols ? gpu_carved(g->rows) + (u->narrow_args ? 4 : 8) * (uint64_t)g->ncols * n
                                           : n;
    GPU_CHECK(cudaMemcpyAsync(sl->lead + lead_from, sl->h_lead + lead_from, g->lead_bytes - lead_from + rows_bytes,
                              cudaMemcpyHostToDevice, up));
  }
  if (laid_out) {
    /* Everything went in the copy above. */
  } else if (d == 0) {
    GPU_CHECK(cudaMemcpyAsync(sl->type, sl->h_type, n, cudaMemcpyHostToDevice, up));
    if (g->ncols)
      GPU_CHECK(cudaMemcpyAsync(sl->args, sl->h_args, (u->narrow_args ? 4 : 8) * (size_t)g->ncols * n,
                                cudaMemcpyHostToDevice, up));
  } else {
    /* The batch's rows go from its pinned columns to the device as they
     * are, one copy per column; the n - d carried rows after them come from
     * the staging, where the host packed them at column stride n - d. */
    const uint64_t carried = n - d;
    if (!types_staged) GPU_CHECK(cudaMemcpyAsync(sl->type, direct->type, d, cudaMemcpyHostToDevice, up));
    if (carried) GPU_CHECK(cudaMemcpyAsync(sl->type + d, sl->h_type, carried, cudaMemcpyHostToDevice, up));
    /* Every column's direct rows in one two-dimensional copy where the
     * pitches allow it: each CUDA call costs the host microseconds, and a
     * small unit of a wide batch made one per column. */
    const size_t w = u->narrow_args ? 4 : 8;
    const int one_copy = g->ncols > 1 && w * direct->stride <= GPU_MAX_COPY_PITCH && w * n <= GPU_MAX_COPY_PITCH;
    char *args = (char *)sl->args;
    const char *h_args = (const char *)sl->h_args, *from = (const char *)direct->args;
    if (one_copy)
      GPU_CHECK(cudaMemcpy2DAsync(args, w * n, from, w * direct->stride, w * d, g->ncols, cudaMemcpyHostToDevice, up));
    for (uint32_t c = 0; c < g->ncols; c++) {
      if (!one_copy)
        GPU_CHECK(cudaMemcpyAsync(args + w * c * n, from + w * c * direct->stride, w * d, cudaMemcpyHostToDevice, up));
      if (carried)
        GPU_CHECK(
            cudaMemcpyAsync(args + w * (c * n + d), h_args + w * c * carried, w * carried, cudaMemcpyHostToDevice, up));
    }
  }
  /* Cleared by copies from pinned zeros rather than memsets: a memset is a
   * kernel, which would wait for the SMs the running persistent kernel
   * holds, while a copy runs on a copy engine beside it. */
  if (!laid_out && !types_staged)
    GPU_CHECK(cudaMemcpyAsync(sl->lead + lead_from, g->h_zeros, lead_n, cudaMemcpyHostToDevice, up));
  if (u->carried) GPU_CHECK(cudaMemcpyAsync(sl->row_id, sl->h_row_id, 8 * u->carried, cudaMemcpyHostToDevice, up));

  /* The unit executes on its slot's stream, behind its copies; the
   * readback stream is non-blocking, so it runs beside it, and events
   * order what must be ordered. The locks stay as the last unit left them:
   * free. Between two units the GPU runs no other kernel or memset, except
   * a verified unit's below: each costs the host a call and the GPU a
   * launch, which a small unit does not dwarf. A unit that may not overlap
   * others waits for the kernels of every other slot to end. */
  const uint32_t threads = gpu_threads_for_rows(g->threads_given, g->threads, n);
  const int overlaps = gpu_unit_overlaps(g, u, threads);
  /* The slot's last unit was retired before this one is launched. */
  if (g->alone_slot == (int)slot) g->alone_slot = -1;
  /* The lane's last unit, launched GPU_STREAM_LANES units before, where
   * it still runs: this unit's kernel waits for it. */
  const gpu_slot *lane_before =
      overlaps && g->nslots > GPU_STREAM_LANES ? &g->slot[(slot + g->nslots - GPU_STREAM_LANES) % g->nslots] : NULL;
  if (lane_before && !lane_before->busy) lane_before = NULL;
  /* The copies' end is the kernel's start event, unless something comes
   * between them on the stream (waits for other slots' kernels, the
   * lane's last among them, or a verified unit's memset): then it has an
   * event of its own, so that a wait for the copies (gpu_unit_staging_wait,
   * the stop at a stream's free) never waits for kernels. */
  const int between = !overlaps || (g->alone_slot >= 0 && g->slot[g->alone_slot].busy) || g->verify || lane_before;
  sl->copied = between ? sl->copy_end : sl->exec_start[sl->launches & 1u];
  if (between) GPU_CHECK(cudaEventRecord(sl->copy_end, up));
  if (!overlaps) {
    for (unsigned k = 0; k < g->nslots; k++)
      if (k != slot && g->slot[k].busy) GPU_CHECK(cudaStreamWaitEvent(sl->exec, g->slot[k].exec_end, 0));
    g->alone_slot = (int)slot;
  } else if (g->alone_slot >= 0 && g->slot[g->alone_slot].busy) {
    GPU_CHECK(cudaStreamWaitEvent(sl->exec, g->slot[g->alone_slot].exec_end, 0));
  }
  if (lane_before) GPU_CHECK(cudaStreamWaitEvent(sl->exec, lane_before->exec_end, 0));
  /* Verified, a row decided without a number recorded must show as one:
   * the column starts as "none" (all ones) for every unit. */
  if (g->verify) GPU_CHECK(cudaMemsetAsync(sl->seq, 0xff, 8 * n, sl->exec));
  prstm_exec_ctx ctx = g->base;
  ctx.nthreads = threads;
  engine_ctx_set_lone(&ctx);
  ctx.table.n = n;
  ctx.table.stride = n;
  ctx.table.ncols = g->ncols;
  ctx.table.has_results = (uint32_t)results;
  ctx.table.type = sl->type;
  ctx.table.status = sl->status;
  ctx.table.args = sl->args;
  ctx.table.narrow_args = (uint32_t)u->narrow_args;
  ctx.table.result = results ? sl->quiesce - n : NULL;
  ctx.table.seq = g->verify ? sl->seq : NULL;
  ctx.table.read_hash = g->verify ? sl->read_hash : NULL;
  ctx.table.row_base = u->row_base;
  ctx.table.ids_from = n - u->carried;
  ctx.table.row_id = sl->row_id;
  ctx.tag_mask = u->tag_mask;
  ctx.stats = NULL; /* the counts come from the progress words */
  ctx.quiesce = sl->quiesce;
  if (g->overlap) {
    ctx.rank_base = slot * g->threads;
    ctx.sequence = g->sequence;
  }
  if (u->flags & ENGINE_RUN_KEEP_POSTPONED) ctx.semantic |= CMP_SEMANTIC_KEEP_POSTPONED;
  GPU_CHECK(cudaEventRecord(sl->exec_start[sl->launches & 1u], sl->exec));
  sl->launches++;
  int rc = g->v->gpu_launch(&ctx, threads, sl->exec, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaEventRecord(sl->exec_end, sl->exec));

  GPU_CHECK(cudaStreamWaitEvent(g->back, sl->exec_end, 0));
  /* Every row's status comes back, direct rows' too: into their batch
   * they would take a copy of their own, where the host's copy of a byte a
   * row (stream_take_outcomes) costs less than the call. */
  if (sl->h_back) {
    GPU_CHECK(cudaMemcpyAsync(sl->h_back + lead_from, sl->lead + lead_from, lead_n, cudaMemcpyDeviceToHost, g->back));
  } else {
    GPU_CHECK(cudaMemcpyAsync(sl->h_q, sl->quiesce, 8 * STM_Q_WORDS + n, cudaMemcpyDeviceToHost, g->back));
    if (results) GPU_CHECK(cudaMemcpyAsync(sl->h_result, sl->quiesce - n, 8 * n, cudaMemcpyDeviceToHost, g->back));
  }
  if (g->verify) {
    GPU_CHECK(cudaMemcpyAsync(sl->h_seq, sl->seq, 8 * n, cudaMemcpyDeviceToHost, g->back));
    GPU_CHECK(cudaMemcpyAsync(sl->h_read_hash, sl->read_hash, 8 * n, cudaMemcpyDeviceToHost, g->back));
  }
  /* The shared counter as it stands once this unit ended: it only grows,
   * and the stream keeps the largest it was told (stream_take_outcomes). */
  if (g->sequence)
    GPU_CHECK(
        cudaMemcpyAsync(&sl->h_q[STM_Q_SEQUENCE], g->sequence, sizeof(uint64_t), cudaMemcpyDeviceToHost, g->back));
  GPU_CHECK(cudaEventRecord(sl->back, g->back));
  sl->busy = 1;
  return 0;
}

/* Waits until the slot's last unit has been copied to the device: its
 * staging may then take the next unit's rows while that unit still
 * executes. The copy stream holds copies alone, so this wait ends whatever
 * the kernels do. */
static int gpu_unit_staging_wait(prstm_engine *e, backend_stream *g, unsigned slot) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  if (g->slot[slot].busy) GPU_CHECK(cudaEventSynchronize(g->slot[slot].copied));
  return 0;
}

static int gpu_unit_launch(prstm_engine *e, backend_stream *g, unsigned slot, const backend_unit *u) {
  if (cudaSetDevice(g->device) != cudaSuccess)
    return engine_fail(e, PRSTM_ECUDA, "cannot select GPU %d: %s", g->device, cudaGetErrorString(cudaGetLastError()));
  if (u->n > g->rows)
    return engine_fail(e, PRSTM_EINVAL, "a unit of %llu rows exceeds the stream's slots of %llu",
                       (unsigned long long)u->n, (unsigned long long)g->rows);
  if (u->results && !g->result_room)
    return engine_fail(e, PRSTM_EINVAL, "a unit with results in a stream opened without them");
  const uint64_t d = u->direct ? u->direct->n : 0;
  if (d && g->ncols && u->narrow_args != u->direct->narrow)
    return engine_fail(e, PRSTM_EINVAL, "a unit's staged columns must be as wide as its direct rows");
  if (d > u->n || d + u->staged != u->n || u->carried > u->staged)
    return engine_fail(e, PRSTM_EINVAL,
                       "a unit of %llu rows cannot take %llu rows from its batch and %llu from the staging "
                       "(%llu carried)",
                       (unsigned long long)u->n, (unsigned long long)d, (unsigned long long)u->staged,
                       (unsigned long long)u->carried);
  return gpu_stream_launch_checked(g, slot, u, e->err, sizeof e->err);
}

/* Waits for a slot's readback. A unit takes about a millisecond, so the wait
 * polls its event closely (a 20 ms sleep would idle the GPU between units);
 * every 20 ms it also reads the unit's progress words for the watchdog. */
static int gpu_stream_wait_checked(prstm_engine *e, backend_stream *g, gpu_slot *sl, int *stalled, char *err,
                                   size_t errlen) {
  uint64_t *seen = g->h_watch, *stop_flag = g->h_watch + STM_Q_WORDS;
  double start = engine_now(), next_look = start + 0.02;
  watchdog dog;
  watchdog_start(&dog, e->opt.watchdog_s, start);
  *stalled = 0;
  for (unsigned spin = 0;; spin++) {
    cudaError_t q = cudaEventQuery(sl->back);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) GPU_CHECK(q);
    double now = engine_now();
    if (now >= next_look) {
      next_look = now + 0.02;
      GPU_CHECK(cudaMemcpyAsync(seen, sl->quiesce, STM_Q_WORDS * sizeof(uint64_t), cudaMemcpyDeviceToHost, g->monitor));
      GPU_CHECK(cudaStreamSynchronize(g->monitor));
      if (watchdog_tick(&dog, seen[STM_Q_COMMITTED] + seen[STM_Q_FAILED], now)) {
        *stalled = 1;
        *stop_flag = 1;
        GPU_CHECK(
            cudaMemcpyAsync(&sl->quiesce[STM_Q_STOP], stop_flag, sizeof(uint64_t), cudaMemcpyHostToDevice, g->monitor));
        GPU_CHECK(cudaStreamSynchronize(g->monitor));
      }
    }
    if (spin < 2000) {
      sched_yield();
    } else {
      struct timespec pause_ts = {0, 50 * 1000};
      nanosleep(&pause_ts, NULL);
    }
  }
  return 0;
}

static int gpu_unit_wait(prstm_engine *e, backend_stream *g, unsigned slot, backend_outcomes *out, double *copy_s,
                         double *execute_s) {
  gpu_slot *sl = &g->slot[slot];
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  if (!sl->busy) return engine_fail(e, PRSTM_EINVAL, "no unit is in flight in slot %u", slot);
  int stalled = 0;
  int rc = gpu_stream_wait_checked(e, g, sl, &stalled, err, errlen);
  if (rc) return rc;
  sl->busy = 0;
  GPU_CHECK(cudaGetLastError());
  float copy_ms = 0, exec_ms = 0, gap_ms = 0;
  cudaEvent_t start = sl->exec_start[(sl->launches - 1) & 1u];
  GPU_CHECK(cudaEventElapsedTime(&copy_ms, sl->copy_start, sl->copied));
  GPU_CHECK(cudaEventElapsedTime(&exec_ms, start, sl->exec_end));
  *copy_s += copy_ms / 1000.0;
  /* Units are retired in the order they were launched, and their kernels
   * start in that order (their copies end in it, and a unit that runs alone
   * holds back those after it), so this kernel adds the part of its time
   * past the union so far: kernels that ran at once count once. */
  /* Two kernels that became ready together may start in either order, a
   * few nanoseconds apart: a gap the runtime will not measure counts as 0. */
  if (g->last_start && cudaEventElapsedTime(&gap_ms, g->last_start, start) != cudaSuccess) {
    cudaGetLastError();
    gap_ms = 0;
  }
  const double reach = g->last_start ? g->union_ms - gap_ms : 0; /* the union's end, past this start */
  *execute_s += (exec_ms > reach ? exec_ms - (reach > 0 ? reach : 0) : 0) / 1000.0;
  g->union_ms = exec_ms > reach ? exec_ms : reach;
  g->last_start = start;
  if (stalled) {
    uint64_t final = 0;
    for (uint64_t i = 0; i < sl->n; i++) final += sl->h_status[i] != 0;
    return engine_fail(e, PRSTM_ESTALLED,
                       "no transaction committed or failed for %u s, so the watchdog stopped the stream "
                       "(%llu of the %llu transactions of the running unit were final; engine.watchdog_s sets "
                       "the limit)",
                       e->opt.watchdog_s, (unsigned long long) final, (unsigned long long)sl->n);
  }
  memcpy(out->q, sl->h_q, STM_Q_WORDS * sizeof(uint64_t));
  g->aborts += sl->h_q[STM_Q_ABORTS];
  g->postponements += sl->h_q[STM_Q_POSTPONEMENTS];
  g->sweeps += sl->h_q[STM_Q_SWEEPS];
  out->status = sl->h_status;
  out->result = !sl->results ? NULL : sl->h_back ? sl->h_q - sl->n : sl->h_result;
  out->seq = g->verify ? sl->h_seq : NULL;
  out->read_hash = g->verify ? sl->h_read_hash : NULL;
  out->seq_shared = g->sequence != NULL;
  return 0;
}

static int gpu_stream_finish(prstm_engine *e, backend_stream *g, uint64_t *aborts, uint64_t *postponements,
                             uint64_t *sweeps) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  GPU_CHECK(cudaDeviceSynchronize());
  int rc = gpu_copy_down(gpu_stream_staging(e, g, 0), e->words + g->held_lo, g->words, 8 * g->nwords, err, errlen);
  if (rc) return rc;
  *aborts += g->aborts;
  *postponements += g->postponements;
  *sweeps += g->sweeps;
  return 0;
}

/* A unit of a co-executed run: its replica out and in, whole, and its marks
 * taken. The caller has no unit in flight, and the units' execution
 * streams are blocking ones, which the legacy default stream's copies here
 * wait for and hold back, so that order is the only one these copies need. */
static int gpu_state_read(prstm_engine *e, backend_stream *g, prstm_word *words, uint64_t from, uint64_t to) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  if (from > to || from < g->held_lo || to - g->held_lo > g->nwords)
    return engine_fail(e, PRSTM_EINVAL, "words %llu to %llu are not in the replica", (unsigned long long)from,
                       (unsigned long long)to);
  GPU_CHECK(cudaMemcpy(words + from, g->words + (from - g->held_lo), 8 * (to - from), cudaMemcpyDeviceToHost));
  return 0;
}

static int gpu_state_write(prstm_engine *e, backend_stream *g, const prstm_word *words, uint64_t from, uint64_t to) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  if (from > to || from < g->held_lo || to - g->held_lo > g->nwords)
    return engine_fail(e, PRSTM_EINVAL, "words %llu to %llu are not in the replica", (unsigned long long)from,
                       (unsigned long long)to);
  GPU_CHECK(cudaMemcpy(g->words + (from - g->held_lo), words + from, 8 * (to - from), cudaMemcpyHostToDevice));
  return 0;
}

/* The span's words when nothing was decided yet. */
static const uint64_t gpu_span_empty[STM_SPAN_WORDS] = {STM_SPAN_EMPTY_LO, 0, STM_SPAN_EMPTY_LO, 0};

static int gpu_footprint_take(prstm_engine *e, backend_stream *g) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  if (g->span && e->unit_span) {
    GPU_CHECK(cudaMemcpy(e->unit_span, g->span, 8 * STM_SPAN_WORDS, cudaMemcpyDeviceToHost));
    GPU_CHECK(cudaMemcpy(g->span, gpu_span_empty, 8 * STM_SPAN_WORDS, cudaMemcpyHostToDevice));
    return 0;
  }
  if (!g->marks || !e->unit_read_marks || !e->unit_write_marks)
    return engine_fail(e, PRSTM_EINVAL, "the GPU unit keeps no footprint marks");
  GPU_CHECK(cudaMemcpy(e->unit_read_marks, g->marks, g->nlocks, cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(e->unit_write_marks, g->marks + g->nlocks, g->nlocks, cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemset(g->marks, 0, 2 * g->nlocks));
  return 0;
}

/* Device memory of at least `need` bytes at *p, its contents not kept;
 * doubled as it grows, so that rounds take it a few times, not every time,
 * but never past `most`, the most any round can need. */
static int gpu_device_grow(void **p, uint64_t *have, uint64_t need, uint64_t most, char *err, size_t errlen) {
  if (need <= *have) return 0;
  uint64_t want = *have ? 2 * *have : 65536;
  if (want > most) want = most;
  if (want < need) want = need;
  cudaFree(*p);
  *p = NULL;
  *have = 0;
  GPU_CHECK(cudaMalloc(p, want));
  *have = want;
  return 0;
}

/* The bytes of the longest list of locks a round can move: every lock
 * once. */
static uint64_t gpu_list_most(const backend_stream *g) { return 8 * (g->nlocks ? g->nlocks : 1); }

/* What a unit's reconciliation needs before its first round: the flags,
 * the upload halves and their events, and room for every lock in the
 * list of its written ones. */
static int gpu_log_ready(backend_stream *g, char *err, size_t errlen) {
  if (g->d_flags) return 0;
  if (!g->marks || g->held_lo) {
    snprintf(err, errlen, "the GPU unit keeps no footprint marks of the whole state");
    return PRSTM_EINVAL;
  }
  /* Each step is taken once, so that a call after one that failed part of
   * the way takes only what is still missing. */
  if (!g->d_written) GPU_CHECK(cudaMalloc((void **)&g->d_written, gpu_list_most(g)));
  int rc = g->h_put ? 0 : gpu_pinned_take(g, (void **)&g->h_put, 2 * PRSTM_POLICY_HETERO_LOG_CHUNK, err, errlen);
  if (!rc && !g->h_flags) rc = gpu_pinned_take(g, (void **)&g->h_flags, 2 * sizeof *g->h_flags, err, errlen);
  if (rc) return rc;
  for (int k = 0; k < 2; k++)
    if (!g->put_done[k]) GPU_CHECK(cudaEventCreateWithFlags(&g->put_done[k], cudaEventDisableTiming));
  GPU_CHECK(cudaMalloc((void **)&g->d_flags, 2 * sizeof *g->d_flags));
  return 0;
}

/* Uploads bytes from host memory to dst through the two pinned halves on
 * the copy stream: the host fills one half while the other goes up. Where
 * `then` is given, each piece's entries of lock list dst, once up, are
 * compared on `compare_on` (the log's comparison, so that it runs while
 * the next piece goes up). Returns with the copies queued; the caller
 * waits for the copy stream. */
typedef struct gpu_log_compare_args {
  cudaStream_t on;
  uint64_t nwritten;
  const uint8_t *read_marks, *write_marks;
  unsigned long long *flags;
} gpu_log_compare_args;

/* Pieces of whole lock numbers: each piece's comparison starts at its
 * first entry. */
static_assert(PRSTM_POLICY_HETERO_LOG_CHUNK % 8 == 0, "the log's pieces must hold whole entries");

static int gpu_log_put(backend_stream *g, void *dst, const void *src, uint64_t bytes, const gpu_log_compare_args *then,
                       char *err, size_t errlen) {
  const uint64_t chunk = PRSTM_POLICY_HETERO_LOG_CHUNK;
  for (uint64_t off = 0, k = 0; off < bytes; off += chunk, k++) {
    const int half = (int)(k & 1);
    const uint64_t n = bytes - off < chunk ? bytes - off : chunk;
    /* The half's last piece, of this upload or the one before, must be up
     * before the host refills it. */
    GPU_CHECK(cudaEventSynchronize(g->put_done[half]));
    memcpy(g->h_put + half * chunk, (const uint8_t *)src + off, (size_t)n);
    GPU_CHECK(cudaMemcpyAsync((uint8_t *)dst + off, g->h_put + half * chunk, n, cudaMemcpyHostToDevice, g->copy));
    GPU_CHECK(cudaEventRecord(g->put_done[half], g->copy));
    if (!then) continue;
    GPU_CHECK(cudaStreamWaitEvent(then->on, g->put_done[half], 0));
    int rc = footprint_gpu_compare((const uint64_t *)dst, off / 8, n / 8, then->nwritten, then->read_marks,
                                   then->write_marks, then->flags, then->on, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

static int gpu_log_compare(prstm_engine *e, backend_stream *g, const uint64_t *lock, uint64_t nwritten, uint64_t n,
                           unsigned *fails, const uint64_t **written, uint64_t *nwritten_here) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  int rc = gpu_log_ready(g, err, errlen);
  if (!rc) rc = gpu_device_grow((void **)&g->d_locks, &g->d_locks_bytes, 8 * n, gpu_list_most(g), err, errlen);
  if (rc) return rc;
  const uint8_t *read_marks = g->marks, *write_marks = g->marks + g->nlocks;
  /* The unit's written locks are listed on one stream while the other
   * unit's log goes up and is compared, piece by piece, on another. */
  cudaStream_t list_on = g->slot[0].exec, compare_on = g->slot[1].exec;
  GPU_CHECK(cudaMemsetAsync(g->d_flags, 0, 2 * sizeof *g->d_flags, list_on));
  GPU_CHECK(cudaStreamSynchronize(list_on));
  rc = footprint_gpu_list_written(write_marks, g->nlocks, g->d_written, g->d_flags, list_on, err, errlen);
  const gpu_log_compare_args then = {compare_on, nwritten, read_marks, write_marks, g->d_flags};
  if (!rc) rc = gpu_log_put(g, g->d_locks, lock, 8 * n, &then, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaStreamSynchronize(compare_on));
  GPU_CHECK(cudaMemcpyAsync(g->h_flags, g->d_flags, 2 * sizeof *g->d_flags, cudaMemcpyDeviceToHost, list_on));
  GPU_CHECK(cudaStreamSynchronize(list_on));
  const uint64_t count = g->h_flags[1];
  rc = gpu_pinned_grow(g, (void **)&g->h_written, &g->h_written_bytes, 8 * count, 8 * g->nlocks, err, errlen);
  if (rc) return rc;
  if (count) GPU_CHECK(cudaMemcpyAsync(g->h_written, g->d_written, 8 * count, cudaMemcpyDeviceToHost, list_on));
  GPU_CHECK(cudaMemsetAsync(g->marks, 0, 2 * g->nlocks, list_on));
  GPU_CHECK(cudaStreamSynchronize(list_on));
  *fails = (unsigned)g->h_flags[0];
  *written = g->h_written;
  *nwritten_here = count;
  return 0;
}

/* What moving the words of n listed locks needs (locks_read, locks_write):
 * the lists' memory, room for their compact copy (*bytes of it) on the
 * device, and the list itself on its way up. */
static int gpu_locks_begin(prstm_engine *e, backend_stream *g, const uint64_t *lock, uint64_t n, uint64_t *bytes) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  GPU_CHECK(cudaSetDevice(g->device));
  *bytes = 8 * n * e->opt.lock_coverage;
  int rc = gpu_log_ready(g, err, errlen);
  if (!rc) rc = gpu_device_grow((void **)&g->d_locks, &g->d_locks_bytes, 8 * n, gpu_list_most(g), err, errlen);
  if (!rc)
    rc = gpu_device_grow((void **)&g->d_compact, &g->d_compact_bytes, *bytes, gpu_list_most(g) * e->opt.lock_coverage,
                         err, errlen);
  if (!rc) rc = gpu_log_put(g, g->d_locks, lock, 8 * n, NULL, err, errlen);
  return rc;
}

static int gpu_locks_read(prstm_engine *e, backend_stream *g, const uint64_t *lock, uint64_t n, prstm_word *compact) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  uint64_t bytes = 0;
  if (!n) return 0;
  int rc = gpu_locks_begin(e, g, lock, n, &bytes);
  if (!rc) rc = gpu_pinned_grow(g, (void **)&g->h_compact, &g->h_compact_bytes, bytes, 8 * g->nwords, err, errlen);
  if (rc) return rc;
  cudaStream_t on = g->slot[0].exec;
  GPU_CHECK(cudaStreamSynchronize(g->copy));
  rc = footprint_gpu_gather(g->d_locks, n, g->words, g->nwords, e->opt.lock_coverage, g->d_compact, on, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaMemcpyAsync(g->h_compact, g->d_compact, bytes, cudaMemcpyDeviceToHost, on));
  GPU_CHECK(cudaStreamSynchronize(on));
  memcpy(compact, g->h_compact, (size_t)bytes);
  return 0;
}

static int gpu_locks_write(prstm_engine *e, backend_stream *g, const uint64_t *lock, uint64_t n,
                           const prstm_word *compact) {
  char *err = e->err;
  size_t errlen = sizeof e->err;
  uint64_t bytes = 0;
  if (!n) return 0;
  int rc = gpu_locks_begin(e, g, lock, n, &bytes);
  if (!rc) rc = gpu_log_put(g, g->d_compact, compact, bytes, NULL, err, errlen);
  if (rc) return rc;
  cudaStream_t on = g->slot[0].exec;
  GPU_CHECK(cudaStreamSynchronize(g->copy));
  rc = footprint_gpu_scatter(g->d_locks, n, g->words, g->nwords, e->opt.lock_coverage, g->d_compact, on, err, errlen);
  if (rc) return rc;
  GPU_CHECK(cudaStreamSynchronize(on));
  return 0;
}

static uint64_t *gpu_state_device(backend_stream *g) { return g->words - g->held_lo; }

/* A chunked run's batch: locked whole or not at all, since a unit copies
 * its rows direct only from a batch marked registered, which this marks
 * where its type, status and argument columns are all page-locked (the
 * units read their statuses back through their slots; a whole run reads
 * them into the column). The narrow type and status columns are locked
 * whatever their size; the batch as a whole must earn it. */
static void *gpu_batch_lock_pages(prstm_batch *b) {
  if (b->pinned || ((uint64_t)txtable_width(b) * b->ncols + 2) * b->n < PRSTM_POLICY_LOCK_PAGES_MIN_BYTES) return NULL;
  gpu_locked *l = (gpu_locked *)calloc(1, sizeof *l);
  if (!l) return NULL;
  b->registered = gpu_lock_batch_columns(l, b, 0);
  if (!b->registered) {
    gpu_unlock_pages(l);
    free(l);
    return NULL;
  }
  return l;
}

static void gpu_batch_unlock_pages(prstm_batch *b, void *locked) {
  b->registered = 0;
  if (!locked) return;
  gpu_unlock_pages((gpu_locked *)locked);
  free(locked);
}

/* ---- the backend ---- */

static const backend_ops gpu_ops = {
    PRSTM_BACKEND_GPU,
    gpu_run,
    2, /* one unit copying while the other executes */
    1, /* a pinned batch's rows go straight to the device */
    0, /* the copy to the device is timed on it */
    gpu_stream_open,
    gpu_unit_would_grow,
    gpu_unit_reserve,
    gpu_unit_launch,
    gpu_unit_wait,
    gpu_stream_finish,
    gpu_stream_free,
    gpu_state_read,
    gpu_state_write,
    gpu_footprint_take,
    gpu_state_device,
    gpu_batch_lock_pages,
    gpu_batch_unlock_pages,
    gpu_unit_staging_wait,
    gpu_log_compare,
    gpu_locks_read,
    gpu_locks_write,
};

extern "C" const backend_ops *backend_gpu_ops(void) { return &gpu_ops; }

extern "C" int backend_gpu_probe(char *why, size_t whylen) { return gpu_probe(why, whylen); }

extern "C" int backend_gpu_current(void) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return dev;
}

extern "C" void backend_gpu_make_current(int device) {
  if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
}

extern "C" int backend_gpu_start(int device, char *err, size_t errlen) {
  GPU_CHECK(cudaSetDevice(device));
  /* Freeing nothing is the runtime's documented way to create the context. */
  GPU_CHECK(cudaFree(0));
  return 0;
}

extern "C" void backend_gpu_warm(const prstm_workload *wl) {
  /* A worker variant's kernel is loaded by its first occupancy query,
   * which every run and stream makes before its first launch (about a
   * millisecond on an H200 for a workload's kernel). A query that fails
   * here fails the run too, which reports it: nothing is reported here. */
  char why[256];
  for (unsigned i = 0; i < wl->nvariants; i++) {
    const prstm_worker_variant *v = &wl->variants[i];
    uint32_t max_threads = 0;
    if (v->gpu_max_threads) (void)v->gpu_max_threads(&max_threads, why, sizeof why);
  }
  /* The first pinned allocation of a process took about a millisecond
   * more than later ones; a stream makes its small ones at its open. */
  void *p = NULL;
  if (cudaHostAlloc(&p, 64, cudaHostAllocDefault) == cudaSuccess) cudaFreeHost(p);
  cudaGetLastError();
}

extern "C" int backend_gpu_count(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

extern "C" const txtable_allocator *backend_pinned_allocator(void) { return &gpu_pinned_allocator; }
