/* tpcc_gpu.cu: the tpcc persistent GPU kernel, instantiated from the shared bodies. */
#include "tpcc_body.h"

PRSTM_GPU_WORKER(tpcc_all, tpcc_dispatch, TPCC_CAPACITY)
