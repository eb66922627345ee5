/* test_workload_gpu.cu: the probe workload's persistent kernel. */
#define PRSTM_USES_ADD 1 /* as test_workload.c */
#include "test_workload.h"
#if !PRSTM_ADDS_COMPILED
#error "test_workload.h must be the first include of prstm_tx.h here (PRSTM_USES_ADD)"
#endif

PRSTM_GPU_WORKER(probe, probe_dispatch, PROBE_CAPACITY)
