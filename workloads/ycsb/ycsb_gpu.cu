/* ycsb_gpu.cu: the ycsb persistent GPU kernels, instantiated from the shared bodies. */
#include "ycsb_body.h"

PRSTM_GPU_WORKER(ycsb_small, ycsb_dispatch, YCSB_SMALL_CAPACITY)
PRSTM_GPU_WORKER(ycsb_wide, ycsb_dispatch, YCSB_WIDE_CAPACITY)
