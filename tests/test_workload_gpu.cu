/* test_workload_gpu.cu: the probe workload's persistent kernel. */
#include "test_workload.h"

PRSTM_GPU_WORKER(probe, probe_dispatch, PROBE_CAPACITY)
