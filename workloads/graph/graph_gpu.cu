/* graph_gpu.cu: the graph's persistent GPU kernel, instantiated from the shared bodies. */
#include "graph_body.h"

PRSTM_GPU_WORKER(graph, graph_dispatch, GRAPH_CAPACITY)
