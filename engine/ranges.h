/* ranges.h: the NVTX ranges the library marks around the phases of a load and a run, for Nsight Systems. */
#ifndef ENGINE_RANGES_H
#define ENGINE_RANGES_H

/* Without NVTX in the build the ranges compile to nothing, and with it they
 * cost nothing unless a profiler (or an injection library) is attached.
 * Every push is popped on every path, errors included. */
#ifdef PRSTM_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define ENGINE_RANGE_PUSH(name) nvtxRangePushA(name)
#define ENGINE_RANGE_POP() nvtxRangePop()
#else
#define ENGINE_RANGE_PUSH(name) ((void)0)
#define ENGINE_RANGE_POP() ((void)0)
#endif

#endif /* ENGINE_RANGES_H */
