/* test_workload_gpu.cu: the probe workload's persistent kernel. */
#define PRSTM_USES_ADD 1 /* as test_workload.c */
#define PRSTM_USES_TICKETS 1
#include "test_workload.h"
#if !PRSTM_ADDS_COMPILED || !PRSTM_TICKETS_COMPILED
#error "test_workload.h must be the first include of prstm_tx.h here (PRSTM_USES_ADD, PRSTM_USES_TICKETS)"
#endif

PRSTM_GPU_WORKER(probe, probe_dispatch, PROBE_CAPACITY)

/* Host memory as CUDA sees it, for the tests of what a run page-locks:
 * 1 when p is page-locked (pinned or registered), 0 when ordinary, -1 when
 * CUDA cannot tell. */
extern "C" int test_host_pages_locked(const void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeHost;
}

/* Page-locks [p, p + bytes) as a caller of the library might; 0 on success. */
extern "C" int test_host_pages_lock(void *p, size_t bytes) {
  return cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess ? 0 : -1;
}

extern "C" int test_host_pages_unlock(void *p) { return cudaHostUnregister(p) == cudaSuccess ? 0 : -1; }
