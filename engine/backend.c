/* backend.c: which backend runs a batch (the options' choice, or the CPU with the reason where no GPU is usable), and what a build without CUDA says about the GPU. */
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

int backend_choose(prstm_engine *e, prstm_backend *backend, char *fallback, size_t fallback_len) {
  *backend = e->opt.backend;
  if (fallback_len) fallback[0] = 0;
  if (*backend == PRSTM_BACKEND_HETERO || *backend == PRSTM_BACKEND_MULTI)
    return engine_fail(e, PRSTM_EINVAL,
                       "backend %s runs whole batches (prstm_engine_run); a stream or a chunked run takes backend "
                       "cpu, gpu or auto",
                       *backend == PRSTM_BACKEND_HETERO ? "hetero" : "multi");
  if (*backend == PRSTM_BACKEND_CPU) return 0;
  char why[256];
  if (backend_gpu_usable(e->wl, why, sizeof why)) {
    *backend = PRSTM_BACKEND_GPU;
    return 0;
  }
  if (*backend == PRSTM_BACKEND_GPU)
    return engine_fail(e, PRSTM_ENOGPU, "backend gpu requested but no GPU is usable: %s", why);
  *backend = PRSTM_BACKEND_CPU;
  snprintf(fallback, fallback_len, "%s", why);
  return 0;
}

#ifndef PRSTM_HAVE_CUDA
const backend_ops *backend_gpu_ops(void) { return NULL; }
void backend_gpu_keep_free(struct backend_gpu_keep *keep) { (void)keep; }
const txtable_allocator *backend_pinned_allocator(void) { return NULL; }
#endif
