/* setup-probe.cu: times what a GPU stream's set-up is made of (context, pinned and device allocations, state upload), to say where its set-up time goes. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include <sys/mman.h>
#include <time.h>

/* Every CUDA call is checked; the probe stops at the first failure, naming it. */
/* The engine's own check (cuda_check.h); this probe has nothing to release,
 * so a failure ends it. */
#define PROBE_CHECK(call)                                                                     \
  do {                                                                                        \
    char probe_err_[512];                                                                     \
    if (cuda_check_error((call), #call, __FILE__, __LINE__, probe_err_, sizeof probe_err_)) { \
      fprintf(stderr, "setup-probe: %s\n", probe_err_);                                       \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Ordinary memory made pinned by cudaHostRegister, after its first touch:
 * with `huge`, aligned to and advised for transparent huge pages, which
 * give the driver 512 times fewer pages to pin. Registered, it is copied to
 * the device buffer d (of at least `bytes`) at the link's rate, and the
 * whole round (register, copy, unregister) is what an engine would pay to
 * copy a caller's ordinary batch straight from its own memory. */
static void probe_register(size_t bytes, int huge, void *d) {
  double mib = (double)bytes / 1048576.0;
  void *p = NULL;
  if (posix_memalign(&p, huge ? (2u << 20) : 4096u, bytes) != 0) {
    fprintf(stderr, "setup-probe: cannot allocate %.0f MiB\n", mib);
    exit(1);
  }
  int advised = huge && madvise(p, bytes, MADV_HUGEPAGE) == 0;
  double t = now_s();
  memset(p, 1, bytes);
  double touch = now_s() - t;
  t = now_s();
  PROBE_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
  double reg = now_s() - t;
  t = now_s();
  PROBE_CHECK(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
  double up = now_s() - t;
  t = now_s();
  PROBE_CHECK(cudaHostUnregister(p));
  double unreg = now_s() - t;
  free(p);
  printf("%8.0f MiB  %s + touch %.4f s, cudaHostRegister %.4f s, upload %.4f s, cudaHostUnregister %.4f s\n", mib,
         !huge     ? "malloc"
         : advised ? "huge-page malloc"
                   : "huge-page malloc (madvise refused)",
         touch, reg, up, unreg);
}

/* Three ways to get `bytes` of pinned host memory, each timed with its first
 * touch (pages are only really there once written). */
static void probe_pinned(size_t bytes, void *d) {
  double mib = (double)bytes / 1048576.0;
  void *p = NULL;
  double t = now_s();
  PROBE_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  double alloc = now_s() - t;
  t = now_s();
  memset(p, 1, bytes);
  double touch = now_s() - t;
  t = now_s();
  PROBE_CHECK(cudaFreeHost(p));
  printf("%8.0f MiB  cudaHostAlloc %.4f s, first touch %.4f s, cudaFreeHost %.4f s\n", mib, alloc, touch, now_s() - t);
  probe_register(bytes, 0, d);
  probe_register(bytes, 1, d);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    printf(
        "usage: setup-probe\n\nTimes, on this machine's GPU: the CUDA context, pinned host memory of 16, 64\n"
        "and 160 MiB got three ways (registered memory also uploaded and unregistered),\n"
        "a 160 MiB device allocation and pageable upload, stream and event creation.\n"
        "No options.\n");
    return strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  double t = now_s();
  PROBE_CHECK(cudaFree(0));
  printf("CUDA context              %.4f s\n", now_s() - t);
  cudaDeviceProp prop;
  t = now_s();
  PROBE_CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("cudaGetDeviceProperties   %.4f s (%s)\n", now_s() - t, prop.name);
  size_t bytes = 160u << 20;
  void *d = NULL;
  t = now_s();
  PROBE_CHECK(cudaMalloc(&d, bytes));
  printf("cudaMalloc 160 MiB        %.4f s\n", now_s() - t);
  size_t sizes[] = {16u << 20, 64u << 20, 160u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) probe_pinned(sizes[i], d);

  void *src = malloc(bytes);
  if (!src) return 1;
  memset(src, 2, bytes);
  t = now_s();
  PROBE_CHECK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
  printf("pageable upload 160 MiB   %.4f s\n", now_s() - t);
  free(src);
  PROBE_CHECK(cudaFree(d));
  cudaStream_t s;
  cudaEvent_t ev;
  t = now_s();
  PROBE_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  PROBE_CHECK(cudaEventCreate(&ev));
  printf("stream + event creation   %.4f s\n", now_s() - t);
  PROBE_CHECK(cudaEventDestroy(ev));
  PROBE_CHECK(cudaStreamDestroy(s));
  return 0;
}
