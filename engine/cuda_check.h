/* cuda_check.h: the one check of every CUDA call in prstm and its tools: a failure becomes PRSTM_ECUDA with the call, the runtime's message and where it happened. */
#ifndef CUDA_CHECK_H
#define CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>

#include "prstm.h"

/* 0 for cudaSuccess; otherwise writes "CALL failed: MESSAGE (FILE:LINE)"
 * into err, clears the runtime's sticky last error where it can be cleared,
 * and returns PRSTM_ECUDA. */
static inline int cuda_check_error(cudaError_t rc, const char *call, const char *file, int line, char *err,
                                   size_t errlen) {
  if (rc == cudaSuccess) return 0;
  snprintf(err, errlen, "%s failed: %s (%s:%d)", call, cudaGetErrorString(rc), file, line);
  cudaGetLastError();
  return PRSTM_ECUDA;
}

/* Returns PRSTM_ECUDA from the calling function when the call fails. */
#define CUDA_CHECK(call, err, errlen)                                                          \
  do {                                                                                         \
    int cuda_check_rc_ = cuda_check_error((call), #call, __FILE__, __LINE__, (err), (errlen)); \
    if (cuda_check_rc_) return cuda_check_rc_;                                                 \
  } while (0)

/* Sets rc to PRSTM_ECUDA and jumps to label when the call fails, for code
 * that must release what it holds on the way out. */
#define CUDA_CHECK_GOTO(call, err, errlen, rc, label)                                                   \
  do {                                                                                                  \
    if (((rc) = cuda_check_error((call), #call, __FILE__, __LINE__, (err), (errlen))) != 0) goto label; \
  } while (0)

#endif /* CUDA_CHECK_H */
