/* kmeans_gpu.cu: the kmeans persistent GPU kernel, instantiated from the shared bodies. */
#include "kmeans_body.h"

PRSTM_GPU_WORKER(kmeans, kmeans_dispatch, KMEANS_CAPACITY)
