/* stm_port.h: the thin host/device layer (qualifiers, atomics, fences) under the shared PR-STM code. */
#ifndef STM_PORT_H
#define STM_PORT_H

#include <stdint.h>

#include "stm_policy.h"

/* The algorithm is written once and compiled by nvcc for the device and by a
 * C11 compiler for the CPU backend; these macros are the only difference. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STM_PORT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STM_PORT_SANITIZED 1
#endif
#endif

#if defined(__CUDACC__)
#define PRSTM_INLINE static __host__ __device__ __forceinline__
#elif defined(STM_PORT_SANITIZED)
/* Forced inlining puts a workload's bodies and the whole STM into one
 * worker function per workload; instrumented, that function takes GCC
 * minutes to compile. The compiler's own choice checks the same code. */
#define PRSTM_INLINE static inline
#else
#define PRSTM_INLINE static inline __attribute__((always_inline))
#endif

#if defined(__CUDA_ARCH__)
/* Device side: lock words and data bypass the non-coherent L1 through
 * explicitly scoped PTX loads and stores; fences are GPU-scope. Every word
 * these functions touch is in global memory (cudaMalloc), and the inline
 * atomics say so (.global). Without it ptxas emits a generic ATOM that
 * falls back, when the hardware reports the address as not global, to a
 * shared-memory CAS loop or a plain load and store of local memory. In the
 * engine's kernels that fallback ran on global addresses and handed one
 * commit sequence number to two transactions; test_graph's verified GPU
 * runs catch it (docs/DESIGN-NOTES.md, "Memory model"). */
PRSTM_INLINE uint64_t port_load_acquire(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
PRSTM_INLINE uint64_t port_load_relaxed(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
PRSTM_INLINE void port_store_relaxed(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
PRSTM_INLINE void port_store_release(uint64_t *p, uint64_t v) {
  asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* A row's type and arguments are read once per attempt and its status
 * written once: streaming accesses (evict first), so that the table does not
 * push the state and the lock words out of L2 (docs/PERFORMANCE.md, "Memory
 * traffic"). */
PRSTM_INLINE uint8_t port_table_load_u8(const uint8_t *p) { return __ldcs(p); }
PRSTM_INLINE uint64_t port_table_load_u64(const uint64_t *p) { return (uint64_t)__ldcs((const unsigned long long *)p); }
PRSTM_INLINE uint32_t port_table_load_u32(const uint32_t *p) { return __ldcs((const unsigned int *)p); }
PRSTM_INLINE void port_table_store_u8(uint8_t *p, uint8_t v) { __stcs(p, v); }
/* Sets a footprint mark (cmp_mark_footprint): many threads may store the
 * same 1 to the same byte, and none reads it while the kernel runs. */
PRSTM_INLINE void port_mark_u8(uint8_t *p) { *p = 1; }
/* A load by the only thread that reads or writes the word in this kernel
 * (STM_SEMANTIC_LONE): cached in L1, which a single thread's own stores
 * keep coherent for it, so a hot word costs an L1 hit instead of a trip to
 * L2. The L1 does not outlive the kernel, so a later kernel sees L2. */
PRSTM_INLINE uint64_t port_load_alone(const uint64_t *p) { return (uint64_t)__ldca((const unsigned long long *)p); }
/* Asks for the line of p in L1 without waiting for it (a thread alone
 * walking its table ahead of its loads). */
PRSTM_INLINE void port_prefetch_l1(const void *p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
PRSTM_INLINE int port_cas(uint64_t *p, uint64_t expected, uint64_t desired) {
  return atomicCAS((unsigned long long *)p, (unsigned long long)expected, (unsigned long long)desired) ==
         (unsigned long long)expected;
}
/* Compare-and-swap with acquire order: nothing after it (the data writes of
 * a commit) can become visible before the lock it takes. */
PRSTM_INLINE int port_cas_acquire(uint64_t *p, uint64_t expected, uint64_t desired) {
  uint64_t old;
  asm volatile("atom.acquire.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old)
               : "l"(p), "l"(expected), "l"(desired)
               : "memory");
  return old == expected;
}
/* Fetch-and-or with acquire order: an attempt that locks as it reads
 * (STM_EARLY_LOCKS) takes a lock word's locked bit with it, and its value
 * load must not move above the lock it takes. */
PRSTM_INLINE uint64_t port_fetch_or_acquire(uint64_t *p, uint64_t bits) {
  uint64_t old;
  asm volatile("atom.acquire.gpu.global.or.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(bits) : "memory");
  return old;
}
/* Sequentially consistent fence: orders the pre-lock stores before the
 * validation loads (the Dekker pattern between two committing transactions). */
PRSTM_INLINE void port_fence_sc(void) { asm volatile("fence.sc.gpu;" ::: "memory"); }
PRSTM_INLINE void port_fence_acq_rel(void) { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
/* Fetch-and-add with acquire and release order: used for the global counters
 * (commit sequence, finished threads) whose readers rely on what came before
 * the add and whose own later loads must not move above it. */
PRSTM_INLINE uint64_t port_fetch_add(uint64_t *p, uint64_t v) {
  port_fence_acq_rel();
  uint64_t old = (uint64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);
  port_fence_acq_rel();
  return old;
}
/* Fetch-and-add that is itself an acquire and a release, with no fence
 * around it: the commit sequence (stm_tx_take_sequence says why that is
 * the order it needs). */
PRSTM_INLINE uint64_t port_fetch_add_acq_rel(uint64_t *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
/* Fire-and-forget atomic adds (no value returned, so no round trip to wait
 * for): a commutative add's data and the counters of adds in flight. The
 * release form orders everything before it (the data and the new version)
 * before the count drops. */
PRSTM_INLINE void port_add_relaxed(uint64_t *p, uint64_t v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
PRSTM_INLINE void port_add_release(uint64_t *p, uint64_t v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
PRSTM_INLINE void port_pause(unsigned rounds) {
  __nanosleep(rounds < PRSTM_POLICY_PAUSE_MAX_NS / PRSTM_POLICY_PAUSE_NS ? PRSTM_POLICY_PAUSE_NS * rounds
                                                                         : PRSTM_POLICY_PAUSE_MAX_NS);
}
/* Wait of a thread whose last sweep found nothing it could do (the
 * PRSTM_POLICY_BACKOFF_* numbers say how long). */
PRSTM_INLINE void port_backoff(unsigned level, uint64_t sweep_ns) {
  uint64_t ns = PRSTM_POLICY_BACKOFF_MIN_NS << (level < 7u ? level : 7u);
  if (sweep_ns > ns / PRSTM_POLICY_BACKOFF_SWEEP_FACTOR) ns = sweep_ns * PRSTM_POLICY_BACKOFF_SWEEP_FACTOR;
  if (ns > PRSTM_POLICY_BACKOFF_MAX_NS) ns = PRSTM_POLICY_BACKOFF_MAX_NS;
  while (ns > 0) {
    unsigned part = ns > 1000000ull ? 1000000u : (unsigned)ns; /* __nanosleep's limit */
    __nanosleep(part);
    ns -= part;
  }
}
/* The lanes of a thread's warp that execute the walk: ranks are numbered
 * along the grid, so the warp holds ranks [rank & ~31, + 32) and those at or
 * above nthreads returned before the walk. */
PRSTM_INLINE unsigned port_warp_lanes(uint32_t rank, uint32_t nthreads) {
  const uint32_t left = nthreads - (rank & ~31u);
  return left >= 32u ? 0xffffffffu : (1u << left) - 1u;
}
PRSTM_INLINE uint32_t port_warp_lane(uint32_t rank) { return rank & 31u; }
/* Waits for every lane of `lanes` and leaves them converged. */
PRSTM_INLINE void port_warp_sync(unsigned lanes) { __syncwarp(lanes); }
PRSTM_INLINE int port_warp_any(unsigned lanes, int predicate) { return __any_sync(lanes, predicate); }
/* Lane 0's v, on every lane of `lanes` (lane 0 is always one of them). */
PRSTM_INLINE uint64_t port_warp_broadcast(unsigned lanes, uint64_t v) {
  return (uint64_t)__shfl_sync(lanes, (unsigned long long)v, 0);
}
/* The lanes of `lanes` whose predicate holds, as a mask. */
PRSTM_INLINE unsigned port_warp_ballot(unsigned lanes, int predicate) { return __ballot_sync(lanes, predicate); }
/* The sum of every lane's v, on lane 0. `lanes` is a prefix of the warp
 * (port_warp_lanes), so a lane adds what it reads only from a lane of it;
 * a read from a lane past the prefix is undefined and dropped. */
PRSTM_INLINE uint64_t port_warp_sum(unsigned lanes, uint32_t lane, uint64_t v) {
  for (uint32_t offset = 16; offset > 0; offset >>= 1) {
    const uint64_t other = (uint64_t)__shfl_down_sync(lanes, (unsigned long long)v, offset);
    if (lane + offset < 32u && ((lanes >> (lane + offset)) & 1u)) v += other;
  }
  return v;
}
PRSTM_INLINE unsigned port_popcount(unsigned v) { return (unsigned)__popc(v); }
/* Nanoseconds of the GPU's global timer (coarse, but shared by all SMs). */
PRSTM_INLINE uint64_t port_clock_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#else
/* Host side: GCC/Clang __atomic builtins with exactly the device's orders,
 * no stronger, so that the CPU backend (and ThreadSanitizer, which models
 * the atomics' orders) runs the protocol the GPU runs: atomicCAS is
 * relaxed, so port_cas is; atomicAdd between two acq_rel fences is written
 * the same way here. (x86 makes every read-modify-write a full barrier in
 * hardware; the compiler may still move plain accesses across a relaxed
 * one, as the GPU's may.) */
PRSTM_INLINE uint64_t port_load_acquire(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
PRSTM_INLINE uint64_t port_load_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
PRSTM_INLINE void port_store_relaxed(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
PRSTM_INLINE void port_store_release(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
PRSTM_INLINE uint8_t port_table_load_u8(const uint8_t *p) { return *p; }
PRSTM_INLINE uint64_t port_table_load_u64(const uint64_t *p) { return *p; }
PRSTM_INLINE uint32_t port_table_load_u32(const uint32_t *p) { return *p; }
PRSTM_INLINE void port_table_store_u8(uint8_t *p, uint8_t v) { *p = v; }
/* Relaxed, so that threads storing the same mark at once are no data race. */
PRSTM_INLINE void port_mark_u8(uint8_t *p) { __atomic_store_n(p, (uint8_t)1, __ATOMIC_RELAXED); }
PRSTM_INLINE uint64_t port_load_alone(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
PRSTM_INLINE void port_prefetch_l1(const void *p) { __builtin_prefetch(p); }
PRSTM_INLINE int port_cas(uint64_t *p, uint64_t expected, uint64_t desired) {
  return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
PRSTM_INLINE int port_cas_acquire(uint64_t *p, uint64_t expected, uint64_t desired) {
  return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE);
}
PRSTM_INLINE uint64_t port_fetch_or_acquire(uint64_t *p, uint64_t bits) {
  return __atomic_fetch_or(p, bits, __ATOMIC_ACQUIRE);
}
PRSTM_INLINE void port_fence_sc(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
PRSTM_INLINE void port_fence_acq_rel(void) { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
PRSTM_INLINE uint64_t port_fetch_add(uint64_t *p, uint64_t v) {
  port_fence_acq_rel();
  uint64_t old = __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  port_fence_acq_rel();
  return old;
}
PRSTM_INLINE uint64_t port_fetch_add_acq_rel(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
PRSTM_INLINE void port_add_relaxed(uint64_t *p, uint64_t v) { (void)__atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
PRSTM_INLINE void port_add_release(uint64_t *p, uint64_t v) { (void)__atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
/* CPU threads often outnumber cores in tests; a waiting thread gives its core away. */
#ifdef __cplusplus
extern "C"
#endif
    void
    port_host_yield(void);
PRSTM_INLINE void port_pause(unsigned rounds) {
  if (rounds > 2) port_host_yield();
}
PRSTM_INLINE void port_backoff(unsigned level, uint64_t sweep_ns) {
  (void)sweep_ns; /* a few host threads cannot saturate a cache line: yielding is enough */
  if (level > 0) port_host_yield();
}
/* A CPU thread is a warp of one lane. */
PRSTM_INLINE unsigned port_warp_lanes(uint32_t rank, uint32_t nthreads) {
  (void)rank;
  (void)nthreads;
  return 1u;
}
PRSTM_INLINE uint32_t port_warp_lane(uint32_t rank) {
  (void)rank;
  return 0u;
}
PRSTM_INLINE void port_warp_sync(unsigned lanes) { (void)lanes; }
PRSTM_INLINE int port_warp_any(unsigned lanes, int predicate) {
  (void)lanes;
  return predicate;
}
PRSTM_INLINE uint64_t port_warp_broadcast(unsigned lanes, uint64_t v) {
  (void)lanes;
  return v;
}
PRSTM_INLINE unsigned port_warp_ballot(unsigned lanes, int predicate) {
  (void)lanes;
  return predicate ? 1u : 0u;
}
PRSTM_INLINE uint64_t port_warp_sum(unsigned lanes, uint32_t lane, uint64_t v) {
  (void)lanes;
  (void)lane;
  return v;
}
PRSTM_INLINE unsigned port_popcount(unsigned v) { return (unsigned)__builtin_popcount(v); }
#ifdef __cplusplus
extern "C"
#endif
    uint64_t
    port_host_clock_ns(void);
PRSTM_INLINE uint64_t port_clock_ns(void) { return port_host_clock_ns(); }
#endif

#endif /* STM_PORT_H */
