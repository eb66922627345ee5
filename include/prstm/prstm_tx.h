/* prstm_tx.h: the public body API of prstm: what a transaction type's code calls (arguments, reads, writes, outcomes) and the macros that make its CPU worker and GPU kernel. */
#ifndef PRSTM_TX_H
#define PRSTM_TX_H

/* A workload's body header includes this one; a program that only builds,
 * runs and reads batches needs prstm.h alone. The body API is inline code
 * compiled both by nvcc for the GPU and by a C11 compiler for the CPU, so
 * it brings the engine's core in with it (the headers of its detail folder:
 * the port layer, the lock word, the table view, the STM core, the
 * contention manager's walk); a body calls only what is documented here and
 * in docs/TUTORIAL.md:
 *
 *   prstm_arg(tx, i)              argument i of the transaction
 *   prstm_read(tx, addr)          a shared word, validated at commit
 *   prstm_write(tx, addr, v)      a buffered write, applied at commit
 *   prstm_write_private(tx, a, v) the same for a word no other transaction
 *                                 of the run touches (the row's own output):
 *                                 no lock
 *   prstm_add(tx, addr, d)        add d to a word at commit, without reading it:
 *                                 adds commute (PRSTM_USES_ADD, uses_add)
 *   prstm_add_unread(tx, a, d)    the same for a word no transaction of the run
 *                                 reads (a total kept for after it): no lock
 *   prstm_ticket(tx, c, dest)     dest = the counter word c, and c + 1, both
 *                                 taken at commit (PRSTM_USES_TICKETS)
 *   prstm_read_immutable(tx, a)   a word no transaction of the batch writes,
 *                                 or a written one as a hint (stm_core.h)
 *   prstm_set_result(tx, v)       a read-only type's result
 *   prstm_fail(tx, reason)        fail for good (PRSTM_REASON_USER + k)
 *   prstm_ok(tx)                  false once the attempt is doomed
 *   prstm_restart(tx)             end the attempt as a conflict does (a
 *                                 hint found stale); the engine retries it
 *   prstm_row(tx)                 the row in its batch, unique in the run
 *   prstm_nwords(tx)              the number of shared words
 *   PRSTM_COMMIT, PRSTM_POSTPONE  what a body returns (or prstm_fail's value)
 *   PRSTM_CPU_WORKER, PRSTM_GPU_WORKER, PRSTM_GPU_WORKER_DECLARE
 */
#include "prstm.h"
#include "stm_core.h"
#include "cmp_walk.h"

/* Adds commit side by side only in code compiled with PRSTM_USES_ADD
 * defined before the first include of this header, and only for a workload
 * whose descriptor sets uses_add; otherwise (either one missing) every
 * prstm_add is a read and a write, with the same outcome. A body header that
 * calls prstm_add defines it first thing, and can check that it came first:
 *   #define PRSTM_USES_ADD 1
 *   #include "prstm_tx.h"
 *   #if !PRSTM_ADDS_COMPILED
 *   #error "include this body header before anything that includes prstm_tx.h"
 *   #endif */
#define PRSTM_ADDS_COMPILED STM_ADDS

/* Tickets (prstm_ticket) are taken at commit only in code compiled with
 * PRSTM_USES_TICKETS defined before the first include of this header (no
 * flag on the descriptor: they need no memory of their own); elsewhere a
 * ticket is a read of its counter and two writes, with the same outcome.
 * PRSTM_TICKETS_COMPILED checks it, as PRSTM_ADDS_COMPILED does for adds. */
#define PRSTM_TICKETS_COMPILED STM_TICKETS

/* A body whose transactions read or write tens of words (TPC-C's NewOrder)
 * defines PRSTM_WIDE_SETS before the first include of this header too:
 * its read, write and lock sets then keep hash indexes, and a word is found
 * in a set in a slot or two instead of a search of the set. Small sets keep
 * none (clearing the indexes would cost every attempt more than the
 * searches); the outcome is the same either way. */

/* A body whose transactions write the words they read (a bank transfer)
 * may define PRSTM_FIRST_ATTEMPT_LOCKS before the first include of this
 * header: a row's first attempts then take each word's lock as they read
 * it, one atomic a word, and commit without validating. A word it only reads
 * is locked too, so bodies that read shared words they do not write (a
 * tax rate every order reads) should not define it. Not with
 * PRSTM_USES_ADD or PRSTM_USES_TICKETS; the outcome is the same either way
 * (docs/DESIGN-NOTES.md, "A transaction attempt"). */

/* The sets' indexes of a worker (STM_INDEXED), beside its sets. */
#if STM_INDEXED
#define PRSTM_WORKER_INDEXES(tx) \
  stm_index indexes[3];          \
  (tx).index = indexes
#else
#define PRSTM_WORKER_INDEXES(tx) ((void)0)
#endif

/* Instantiates a workload's worker with set capacity CAP: the one body of
 * code, compiled into the CPU backend by PRSTM_CPU_WORKER (a .c file) and into
 * a persistent kernel by PRSTM_GPU_WORKER (a .cu file). */
#define PRSTM_DEFINE_WORKER(NAME, DISPATCH, CAP)                                              \
  PRSTM_INLINE void NAME##_worker(const prstm_exec_ctx *ctx, uint32_t rank, uint32_t alone) { \
    stm_read_entry reads[CAP];                                                                \
    stm_write_entry writes[CAP];                                                              \
    stm_lock_entry locks[CAP];                                                                \
    prstm_tx tx;                                                                              \
    tx.ctx = ctx;                                                                             \
    tx.cap = (CAP);                                                                           \
    tx.alone = alone;                                                                         \
    tx.alone_word_locks = alone && ctx->lock_coverage == 1;                                   \
    tx.alone_narrow = alone && ctx->table.narrow_args;                                        \
    tx.reads = reads;                                                                         \
    tx.writes = writes;                                                                       \
    tx.locks = locks;                                                                         \
    PRSTM_WORKER_INDEXES(tx);                                                                 \
    cmp_walk_block(&tx, ctx, rank, DISPATCH);                                                 \
  }

/* As on the GPU (PRSTM_GPU_WORKER), the walk is made twice: with
 * prstm_tx.alone the constant 1 for a thread alone on its state
 * (STM_SEMANTIC_LONE), and the constant 0 for every other run. */
#define PRSTM_CPU_WORKER(NAME, DISPATCH, CAP)                        \
  PRSTM_DEFINE_WORKER(NAME, DISPATCH, CAP)                           \
  void NAME##_cpu_worker(const prstm_exec_ctx *ctx, uint32_t rank) { \
    if (ctx->semantic & STM_SEMANTIC_LONE)                           \
      NAME##_worker(ctx, rank, 1u);                                  \
    else                                                             \
      NAME##_worker(ctx, rank, 0u);                                  \
  }

/* Declares the GPU side of a worker made by PRSTM_GPU_WORKER(NAME, ...) in a
 * .cu file, for the host file that fills the workload's prstm_worker_variant
 * (NAME_gpu_launch, NAME_gpu_max_threads); a build without CUDA leaves them
 * out and the variant's GPU hooks NULL. */
#ifdef __cplusplus
#define PRSTM_GPU_WORKER_DECLARE(NAME)                                                                   \
  extern "C" int NAME##_gpu_launch(const prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err, \
                                   size_t errlen);                                                       \
  extern "C" int NAME##_gpu_max_threads(uint32_t *max_threads, char *err, size_t errlen)
#else
#define PRSTM_GPU_WORKER_DECLARE(NAME)                                                                        \
  int NAME##_gpu_launch(const prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err, size_t errlen); \
  int NAME##_gpu_max_threads(uint32_t *max_threads, char *err, size_t errlen)
#endif

/* The GPU hooks of a prstm_worker_variant whose worker a .cu file made with
 * PRSTM_GPU_WORKER(NAME, ...): where prstm_add_workload compiled the
 * workload's CUDA sources (it then defines PRSTM_HAVE_CUDA for the host
 * sources), its launcher and thread limit; elsewhere NULL, and the variant
 * runs on the CPU alone. In a designated initializer:
 *   {.max_columns = ..., .set_capacity = ..., .cpu_worker = NAME_cpu_worker, PRSTM_GPU_HOOKS(NAME)} */
#ifdef PRSTM_HAVE_CUDA
#define PRSTM_GPU_HOOKS(NAME) .gpu_launch = NAME##_gpu_launch, .gpu_max_threads = NAME##_gpu_max_threads
#else
#define PRSTM_GPU_HOOKS(NAME) .gpu_launch = NULL, .gpu_max_threads = NULL
#endif

#if defined(__CUDACC__)
#ifdef __cplusplus
extern "C" {
#endif
/* In the library (engine/backend_gpu.cu): checked occupancy and cooperative
 * launch on `stream` (a cudaStream_t; NULL for the legacy default stream). */
int prstm_gpu_launch_kernel(const void *kernel, const prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err,
                            size_t errlen);
int prstm_gpu_kernel_max_threads(const void *kernel, uint32_t *max_threads, char *err, size_t errlen);
#ifdef __cplusplus
}
#endif
/* Each worker has two kernels: the walk of any number of threads, and the
 * same walk for one thread alone on its state (STM_SEMANTIC_LONE), in
 * which the STM's alone paths are compiled in and the locked ones are
 * not used; the launch picks by the run's flag. */
#define PRSTM_GPU_KERNEL_(KERNEL, DISPATCH, CAP, ALONE)                                         \
  __global__ void __launch_bounds__(PRSTM_POLICY_BLOCK_THREADS, PRSTM_POLICY_MIN_BLOCKS_PER_SM) \
      KERNEL(prstm_exec_ctx ctx) {                                                              \
    const uint32_t rank = (uint32_t)(blockIdx.x * blockDim.x + threadIdx.x);                    \
    enum {                                                                                      \
      SHARED_CAP = (CAP) <= PRSTM_POLICY_SHARED_SET_MAX ? (CAP) : 1,                            \
      LOCAL_CAP = (CAP) <= PRSTM_POLICY_SHARED_SET_MAX ? 1 : (CAP)                              \
    };                                                                                          \
    __shared__ stm_read_entry shared_reads[PRSTM_POLICY_BLOCK_THREADS * SHARED_CAP];            \
    __shared__ stm_write_entry shared_writes[PRSTM_POLICY_BLOCK_THREADS * SHARED_CAP];          \
    __shared__ stm_lock_entry shared_locks[PRSTM_POLICY_BLOCK_THREADS * SHARED_CAP];            \
    stm_read_entry local_reads[LOCAL_CAP];                                                      \
    stm_write_entry local_writes[LOCAL_CAP];                                                    \
    stm_lock_entry local_locks[LOCAL_CAP];                                                      \
    const int in_shared = (CAP) <= PRSTM_POLICY_SHARED_SET_MAX;                                 \
    prstm_tx tx;                                                                                \
    tx.ctx = &ctx;                                                                              \
    tx.cap = (CAP);                                                                             \
    tx.alone = (ALONE);                                                                         \
    tx.alone_word_locks = (ALONE) && ctx.lock_coverage == 1;                                    \
    tx.alone_narrow = (ALONE) && ctx.table.narrow_args;                                         \
    tx.reads = in_shared ? &shared_reads[threadIdx.x * SHARED_CAP] : local_reads;               \
    tx.writes = in_shared ? &shared_writes[threadIdx.x * SHARED_CAP] : local_writes;            \
    tx.locks = in_shared ? &shared_locks[threadIdx.x * SHARED_CAP] : local_locks;               \
    PRSTM_WORKER_INDEXES(tx);                                                                   \
    cmp_walk_block(&tx, &ctx, rank, DISPATCH);                                                  \
  }
#define PRSTM_GPU_WORKER(NAME, DISPATCH, CAP)                                                                  \
  PRSTM_GPU_KERNEL_(NAME##_kernel, DISPATCH, CAP, 0u)                                                          \
  PRSTM_GPU_KERNEL_(NAME##_alone_kernel, DISPATCH, CAP, 1u)                                                    \
  extern "C" int NAME##_gpu_launch(const prstm_exec_ctx *ctx, uint32_t threads, void *stream, char *err,       \
                                   size_t errlen) {                                                            \
    const void *kernel =                                                                                       \
        (ctx->semantic & STM_SEMANTIC_LONE) ? (const void *)NAME##_alone_kernel : (const void *)NAME##_kernel; \
    return prstm_gpu_launch_kernel(kernel, ctx, threads, stream, err, errlen);                                 \
  }                                                                                                            \
  extern "C" int NAME##_gpu_max_threads(uint32_t *max_threads, char *err, size_t errlen) {                     \
    return prstm_gpu_kernel_max_threads((const void *)NAME##_kernel, max_threads, err, errlen);                \
  }
#endif

#endif /* PRSTM_TX_H */
