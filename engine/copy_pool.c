/* copy_pool.c: threads kept for a stream's life that share out each unit's staging copy with the caller. */
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A stream fills the pinned staging of a small unit every few tens of
 * microseconds, while the GPU runs the unit before it. One core copies a
 * megabyte in about 125 us, more than a 10,000-row unit's kernel takes; a
 * thread started for each copy costs about as much as it saves. So the
 * helpers are started once and wait for the next copy: spinning for
 * ENGINE_COPY_POOL_SPIN_NS after each one, since the next comes soon while
 * units stream, then asleep on a condition variable.
 * A copy is cut into chunks of ENGINE_COPY_POOL_CHUNK bytes, which the
 * caller and the helpers claim one at a time from a shared counter: the
 * caller never waits for a helper still waking up, it copies the chunks
 * nobody has claimed itself, so a copy never takes longer than the
 * caller's own, and awake helpers shorten it. */
#define ENGINE_COPY_POOL_SPIN_NS 200000ull
#define ENGINE_COPY_POOL_CHUNK ((uint64_t)64 << 10)

/* The counter holds the copy's number, its count of chunks and the next
 * chunk to claim, in one word: a helper that wakes late for a copy already
 * done, or reads the word as the next copy is set out, claims nothing of
 * the next one, since its compare-and-swap names the copy it saw. A copy
 * of 2^20 chunks or more (64 GiB) goes to engine_parallel_copy instead. */
#define COPY_POOL_FIELD_BITS 20u
#define COPY_POOL_FIELD_MASK ((1ull << COPY_POOL_FIELD_BITS) - 1u)
#define COPY_POOL_COPY_SHIFT (2u * COPY_POOL_FIELD_BITS)

struct engine_copy_pool {
  unsigned helpers;
  pthread_t tids[ENGINE_MAX_PARTS];
  pthread_mutex_t mu;
  pthread_cond_t wake;
  _Atomic uint64_t claim; /* copy number, chunks, next chunk */
  _Atomic uint64_t done;  /* bytes of the current copy copied */
  int stop;               /* under mu: the helpers leave */
  uint64_t copies;        /* copies set out so far (the caller's) */
  const engine_copy *pieces;
  size_t npieces;
  uint64_t total;
  int out; /* a copy is set out that finish has not completed */
};

/* A hint to the core that this thread only spins. */
static void copy_pool_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t copy_pool_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Claims and copies chunks of copy number `copy` until none is left or
 * another copy was set out. A chunk claimed is not yet copied, so the
 * caller cannot have finished the copy and changed its description while
 * the chunk is copied. */
static void copy_pool_work(engine_copy_pool *p, uint64_t copy) {
  uint64_t c = atomic_load_explicit(&p->claim, memory_order_acquire);
  for (;;) {
    if (c >> COPY_POOL_COPY_SHIFT != copy) return;
    const uint64_t chunks = (c >> COPY_POOL_FIELD_BITS) & COPY_POOL_FIELD_MASK, chunk = c & COPY_POOL_FIELD_MASK;
    if (chunk >= chunks) return;
    if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel, memory_order_acquire))
      continue;
    const uint64_t from = chunk * ENGINE_COPY_POOL_CHUNK;
    const uint64_t to = from + ENGINE_COPY_POOL_CHUNK < p->total ? from + ENGINE_COPY_POOL_CHUNK : p->total;
    engine_copy_range(p->pieces, p->npieces, from, to);
    atomic_fetch_add_explicit(&p->done, to - from, memory_order_release);
    c = atomic_load_explicit(&p->claim, memory_order_acquire);
  }
}

/* Waits for a copy numbered other than `seen` or for the stop; returns the
 * number, or UINT64_MAX once stopped. */
static uint64_t copy_pool_next(engine_copy_pool *p, uint64_t seen) {
  const uint64_t until = copy_pool_clock_ns() + ENGINE_COPY_POOL_SPIN_NS;
  for (unsigned spin = 0;; spin++) {
    const uint64_t copy = atomic_load_explicit(&p->claim, memory_order_acquire) >> COPY_POOL_COPY_SHIFT;
    if (copy != seen) return copy;
    if ((spin & 63u) == 63u && copy_pool_clock_ns() > until) break;
    copy_pool_relax();
  }
  pthread_mutex_lock(&p->mu);
  uint64_t copy;
  while ((copy = atomic_load_explicit(&p->claim, memory_order_acquire) >> COPY_POOL_COPY_SHIFT) == seen && !p->stop)
    pthread_cond_wait(&p->wake, &p->mu);
  const int stop = p->stop;
  pthread_mutex_unlock(&p->mu);
  return stop ? UINT64_MAX : copy;
}

static void *copy_pool_main(void *arg) {
  engine_copy_pool *p = arg;
  uint64_t seen = 0;
  while ((seen = copy_pool_next(p, seen)) != UINT64_MAX) copy_pool_work(p, seen);
  return NULL;
}

engine_copy_pool *engine_copy_pool_open(unsigned helpers) {
  if (helpers == 0) return NULL;
  if (helpers > ENGINE_MAX_PARTS) helpers = ENGINE_MAX_PARTS;
  engine_copy_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  atomic_init(&p->claim, 0);
  atomic_init(&p->done, 0);
  for (unsigned i = 0; i < helpers; i++) {
    if (pthread_create(&p->tids[i], NULL, copy_pool_main, p) != 0) break;
    p->helpers++;
  }
  if (p->helpers == 0) {
    engine_copy_pool_close(p);
    return NULL;
  }
  return p;
}

void engine_copy_pool_start(engine_copy_pool *p, const engine_copy *pieces, size_t npieces) {
  engine_copy_pool_finish(p);
  uint64_t total = 0;
  for (size_t j = 0; j < npieces; j++) total += pieces[j].len;
  const uint64_t chunks = (total + ENGINE_COPY_POOL_CHUNK - 1) / ENGINE_COPY_POOL_CHUNK;
  if (chunks > COPY_POOL_FIELD_MASK) {
    engine_parallel_copy(pieces, npieces, p->helpers + 1);
    return;
  }
  if (total == 0) return;
  p->pieces = pieces;
  p->npieces = npieces;
  p->total = total;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  /* Copy numbers start at 1: the helpers start having seen 0. After 2^24
   * copies they come round again, which costs at most a helper that slept
   * through all of them the copy it wakes for. */
  const uint64_t copy = ++p->copies & ((1ull << (64u - COPY_POOL_COPY_SHIFT)) - 1u);
  const uint64_t word = copy << COPY_POOL_COPY_SHIFT | chunks << COPY_POOL_FIELD_BITS;
  /* The store under the mutex cannot fall between a sleeping helper's
   * check and its wait; its release orders the copy's description before
   * it. */
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->claim, word, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  p->out = 1;
}

void engine_copy_pool_finish(engine_copy_pool *p) {
  if (!p || !p->out) return;
  const uint64_t copy = p->copies & ((1ull << (64u - COPY_POOL_COPY_SHIFT)) - 1u);
  copy_pool_work(p, copy);
  while (atomic_load_explicit(&p->done, memory_order_acquire) != p->total) copy_pool_relax();
  p->out = 0;
}

void engine_copy_pool_run(engine_copy_pool *p, const engine_copy *pieces, size_t npieces) {
  engine_copy_pool_start(p, pieces, npieces);
  engine_copy_pool_finish(p);
}

void engine_copy_pool_close(engine_copy_pool *p) {
  if (!p) return;
  engine_copy_pool_finish(p);
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->helpers; i++) pthread_join(p->tids[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
