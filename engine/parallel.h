/* parallel.h: a loop over [0, n) cut into ranges, one thread each, for the engine's and the built-in workloads' host passes, copies made that way, and threads kept for many copies in a row. */
#ifndef ENGINE_PARALLEL_H
#define ENGINE_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs fn over [0, n) cut into `parts` consecutive ranges, each on a
 * thread of its own (the first on the caller's), and returns when all are
 * done; fn gets its part's index and range. A thread that cannot start
 * leaves its range to the caller's thread. engine_parallel_parts gives the
 * parts worth starting: one a core, at most ENGINE_MAX_PARTS, and none
 * with fewer than min_per_part items. */
#define ENGINE_MAX_PARTS 64u
typedef void (*engine_part_fn)(void *arg, unsigned part, uint64_t from, uint64_t to);
unsigned engine_parallel_parts(uint64_t n, uint64_t min_per_part);
void engine_parallel_for(uint64_t n, unsigned parts, engine_part_fn fn, void *arg);

/* Memory that threads are about to write for the first time: huge pages
 * where the kernel grants them (madvise) for 8 MiB and more, since with 4
 * KiB pages every 4 KiB of a first write is a page fault, which the kernel
 * serialises between threads. Ordinary malloc below that. Freed by free();
 * NULL when out of memory. */
void *engine_alloc_first_touch(size_t bytes);
/* The same, zeroed on every core, for memory whose every page is needed at
 * once (a large lock array, or host memory the GPU's driver is about to
 * page-lock, which faults its pages in on one thread otherwise): of 8 MiB
 * and more, whole huge pages aligned to them, so that no other allocation
 * shares a page of it. Calloc below that. Freed by free(); NULL when out
 * of memory. */
void *engine_alloc_zeroed_pages(size_t bytes);
/* Writes zeros over [p, p + bytes) on every core, where that is 8 MiB or
 * more (below that, nothing): the first writes of memory about to be used,
 * each a page the kernel zeroes, then happen here in parallel instead of
 * one by one on whichever thread writes it next. Memory from calloc keeps
 * its zeros; engine_alloc_zeroed_pages gets them here. */
void engine_prefault_zeroed(void *p, size_t bytes);

/* A list of copies made as one run of bytes cut into `parts` ranges by
 * engine_parallel_for, so that a few long copies and many short ones are
 * shared out alike. A piece whose src is NULL is zero-filled.
 *
 * A piece with `wide` set narrows: src holds len / 8 64-bit values and dst
 * receives them as 32-bit values (len / 2 bytes), and a value that needs
 * more than 32 bits sets *wide to 1 (dst is then not a copy). A piece with
 * `widen` set does the reverse: src holds len / 8 32-bit values and dst
 * receives them as 64-bit ones (len bytes). The value whose first byte
 * (of the 8) falls in a part's range is that part's. */
typedef struct engine_copy {
  void *dst;
  const void *src;
  size_t len;
  int *wide;
  int widen;
} engine_copy;
void engine_parallel_copy(const engine_copy *pieces, size_t npieces, unsigned parts);
/* Bytes [from, to) of the pieces, taken as if they lay end to end, on the
 * calling thread: one part of such a copy. */
void engine_copy_range(const engine_copy *pieces, size_t npieces, uint64_t from, uint64_t to);

/* Argument columns as 32-bit values: elements [from, to) of the n-row
 * column-major table src (column c at src + c * stride) go to dst[0, to -
 * from), where element i is row i % n of column i / n, so that dst holds
 * the columns packed at stride n. Done on `parts` threads. Returns 1 when
 * every value fitted in 32 bits, 0 when one did not (dst then holds
 * nothing to use). */
int engine_parallel_narrow(uint32_t *dst, const uint64_t *src, uint64_t stride, uint64_t n, uint64_t from, uint64_t to,
                           unsigned parts);

/* Threads kept to share out many copies in a row with the caller
 * (copy_pool.c): engine_copy_pool_run takes the pieces as one run of bytes,
 * as engine_parallel_copy does, cut into 64 KiB chunks that the caller and
 * the helpers claim one at a time, and returns when all are copied; calls
 * must not overlap. engine_copy_pool_start sets a copy out to the helpers
 * alone and returns at once (a copy of 2^20 chunks or more is made there
 * and then, on every thread), so that the caller can do other work while
 * they copy; engine_copy_pool_finish then copies what nobody has claimed
 * yet and waits for the rest (the pieces, and what their `wide` flags point
 * to, must live until it returns). A start, a run or a close finishes the
 * copy out first. Open returns NULL for 0 helpers or when no thread could
 * be started (copy without it then). */
typedef struct engine_copy_pool engine_copy_pool;
engine_copy_pool *engine_copy_pool_open(unsigned helpers);
void engine_copy_pool_run(engine_copy_pool *pool, const engine_copy *pieces, size_t npieces);
void engine_copy_pool_start(engine_copy_pool *pool, const engine_copy *pieces, size_t npieces);
void engine_copy_pool_finish(engine_copy_pool *pool);
void engine_copy_pool_close(engine_copy_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* ENGINE_PARALLEL_H */
