/* skiplist_gpu.cu: the skiplist's persistent GPU kernel, instantiated from the shared bodies. */
#include "skiplist_body.h"

PRSTM_GPU_WORKER(skiplist, skiplist_dispatch, SKIPLIST_CAPACITY)
