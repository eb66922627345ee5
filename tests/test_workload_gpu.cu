/* test_workload_gpu.cu: the probe workload's persistent kernel. */
#define PRSTM_USES_ADD 1 /* as test_workload.c */
#define PRSTM_USES_TICKETS 1
#include "test_workload.h"
#if !PRSTM_ADDS_COMPILED || !PRSTM_TICKETS_COMPILED
#error "test_workload.h must be the first include of prstm_tx.h here (PRSTM_USES_ADD, PRSTM_USES_TICKETS)"
#endif

PRSTM_GPU_WORKER(probe, probe_dispatch, PROBE_CAPACITY)
