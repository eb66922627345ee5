/* backend.c: which backend runs a batch, and what a build without CUDA says about the GPU. */
#include "backend.h"

#include <stdio.h>

const backend_ops *backend_of(prstm_backend backend) {
  return backend == PRSTM_BACKEND_GPU ? backend_gpu_ops() : &backend_cpu_ops;
}

int backend_gpu_usable(const prstm_workload *wl, char *why, size_t whylen) {
  if (wl && !wl->variants[0].gpu_launch) {
    snprintf(why, whylen, "workload %s has no GPU code in this build", wl->name);
    return 0;
  }
#ifdef PRSTM_HAVE_CUDA
  return backend_gpu_probe(why, whylen);
#else
  snprintf(why, whylen, "this build of prstm has no CUDA support");
  return 0;
#endif
}

#ifndef PRSTM_HAVE_CUDA
const backend_ops *backend_gpu_ops(void) { return NULL; }
const txtable_allocator *backend_pinned_allocator(void) { return NULL; }
#endif
