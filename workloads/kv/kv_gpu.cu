/* kv_gpu.cu: the kv persistent GPU kernel, instantiated from the shared bodies. */
#include "kv_body.h"

PRSTM_GPU_WORKER(kv_all, kv_dispatch, KV_CAPACITY)
