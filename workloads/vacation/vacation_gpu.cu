/* vacation_gpu.cu: the vacation workload's persistent GPU kernel, instantiated from the shared bodies. */
#include "vacation_body.h"

PRSTM_GPU_WORKER(vacation, vacation_dispatch, VACATION_CAPACITY)
