/* multi_link.cu: NCCL communicators over the GPUs of a multi-unit run, and the broadcasts that merge their replicas. */
#include "multi_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "multi_ranks.h"
#include "prstm.h"

#ifdef PRSTM_HAVE_NCCL
#include <nccl.h>

#define MULTI_MAX_GPUS 64

/* The communicators this process holds: one for each of its GPUs. In
 * one process driving every GPU, communicator i stands for unit i; in a
 * rank, its one communicator stands for unit `rank` of `units`. */
struct multi_link {
  unsigned n;     /* communicators in this process */
  unsigned units; /* units in all, the broadcasts' roots */
  int device[MULTI_MAX_GPUS];
  ncclComm_t comm[MULTI_MAX_GPUS];
  cudaStream_t stream[MULTI_MAX_GPUS];
};

/* Returns PRSTM_ECUDA from the calling function when an NCCL call fails. */
#define NCCL_CHECK(call)                                                                                       \
  do {                                                                                                         \
    ncclResult_t nccl_rc_ = (call);                                                                            \
    if (nccl_rc_ != ncclSuccess) {                                                                             \
      snprintf(err, errlen, "%s failed: %s (%s:%d)", #call, ncclGetErrorString(nccl_rc_), __FILE__, __LINE__); \
      return PRSTM_ECUDA;                                                                                      \
    }                                                                                                          \
  } while (0)

extern "C" int multi_link_available(void) { return 1; }

/* A stream for each communicator, and NCCL's connections set up now: it
 * makes them at the first collective, tens of milliseconds, so one
 * broadcast of a word from every unit does it here. */
static int multi_link_connect(multi_link *l, char *err, size_t errlen) {
  for (unsigned i = 0; i < l->n; i++) {
    CUDA_CHECK(cudaSetDevice(l->device[i]), err, errlen);
    CUDA_CHECK(cudaStreamCreateWithFlags(&l->stream[i], cudaStreamNonBlocking), err, errlen);
  }
  uint64_t *word[MULTI_MAX_GPUS] = {NULL};
  int rc = 0;
  for (unsigned i = 0; i < l->n && !rc; i++) {
    rc = cuda_check_error(cudaSetDevice(l->device[i]), "cudaSetDevice", __FILE__, __LINE__, err, errlen);
    if (!rc)
      rc = cuda_check_error(cudaMalloc((void **)&word[i], sizeof(uint64_t)), "cudaMalloc", __FILE__, __LINE__, err,
                            errlen);
  }
  uint64_t lo[MULTI_MAX_GPUS] = {0}, hi[MULTI_MAX_GPUS];
  for (unsigned r = 0; r < l->units; r++) hi[r] = 1;
  if (!rc) rc = multi_link_exchange(l, word, lo, hi, err, errlen);
  for (unsigned i = 0; i < l->n; i++) {
    cudaSetDevice(l->device[i]);
    cudaFree(word[i]);
  }
  return rc;
}

static multi_link *multi_link_new(char *err, size_t errlen) {
  multi_link *l = (multi_link *)calloc(1, sizeof *l);
  if (!l) snprintf(err, errlen, "cannot allocate the GPUs' communicators");
  return l;
}

extern "C" int multi_link_open(multi_link **out, const int *devices, unsigned n, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0 || n > MULTI_MAX_GPUS) {
    snprintf(err, errlen, "a multi-unit run takes 1 to %d GPUs, not %u", MULTI_MAX_GPUS, n);
    return PRSTM_EINVAL;
  }
  multi_link *l = multi_link_new(err, errlen);
  if (!l) return PRSTM_ENOMEM;
  *out = l;
  for (unsigned i = 0; i < n; i++) l->device[i] = devices[i];
  /* One process drives every GPU, so ncclCommInitAll creates the
   * communicators together. */
  NCCL_CHECK(ncclCommInitAll(l->comm, (int)n, l->device));
  l->n = l->units = n;
  return multi_link_connect(l, err, errlen);
}

extern "C" int multi_link_open_rank(multi_link **out, int device, int rank, unsigned units, char *err, size_t errlen) {
  *out = NULL;
  if (units == 0 || units > MULTI_MAX_GPUS || rank < 0 || (unsigned)rank >= units) {
    snprintf(err, errlen, "a multi-unit run takes 1 to %d GPU ranks, not rank %d of %u", MULTI_MAX_GPUS, rank, units);
    return PRSTM_EINVAL;
  }
  multi_link *l = multi_link_new(err, errlen);
  if (!l) return PRSTM_ENOMEM;
  *out = l;
  l->device[0] = device;
  /* Rank 0 makes the communicator's id and MPI hands it to the others;
   * from then on NCCL alone moves the words, between the GPUs of a host
   * and over its network transport between hosts. */
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  int rc = multi_ranks_bcast(&id, sizeof id, 0, err, errlen);
  if (rc) return rc;
  CUDA_CHECK(cudaSetDevice(device), err, errlen);
  NCCL_CHECK(ncclCommInitRank(&l->comm[0], (int)units, id, rank));
  l->n = 1;
  l->units = units;
  return multi_link_connect(l, err, errlen);
}

extern "C" int multi_link_exchange(multi_link *l, uint64_t *const *replica, const uint64_t *lo, const uint64_t *hi,
                                   char *err, size_t errlen) {
  /* The units' kernels ended before this is called (their waits returned),
   * so the exchange streams need no ordering against them. In-place
   * broadcasts: every GPU receives into the words the root sends from. */
  NCCL_CHECK(ncclGroupStart());
  for (unsigned r = 0; r < l->units; r++) {
    if (hi[r] <= lo[r]) continue;
    for (unsigned i = 0; i < l->n; i++) {
      uint64_t *at = replica[i] + lo[r];
      ncclResult_t rc = ncclBroadcast(at, at, (size_t)(hi[r] - lo[r]), ncclUint64, (int)r, l->comm[i], l->stream[i]);
      if (rc != ncclSuccess) {
        ncclGroupEnd();
        snprintf(err, errlen, "ncclBroadcast of %llu words from unit %u failed: %s",
                 (unsigned long long)(hi[r] - lo[r]), r, ncclGetErrorString(rc));
        return PRSTM_ECUDA;
      }
    }
  }
  NCCL_CHECK(ncclGroupEnd());
  for (unsigned i = 0; i < l->n; i++) {
    CUDA_CHECK(cudaSetDevice(l->device[i]), err, errlen);
    CUDA_CHECK(cudaStreamSynchronize(l->stream[i]), err, errlen);
  }
  return 0;
}

extern "C" void multi_link_close(multi_link *l) {
  if (!l) return;
  for (unsigned i = 0; i < l->n; i++) {
    cudaSetDevice(l->device[i]);
    if (l->stream[i]) cudaStreamDestroy(l->stream[i]);
    if (l->comm[i]) ncclCommDestroy(l->comm[i]);
  }
  free(l);
}

#else

extern "C" int multi_link_available(void) { return 0; }

extern "C" int multi_link_open(multi_link **out, const int *devices, unsigned n, char *err, size_t errlen) {
  (void)devices;
  (void)n;
  *out = NULL;
  snprintf(err, errlen, "this build of prstm has no NCCL, which units on several GPUs exchange their words through");
  return PRSTM_ENOGPU;
}

extern "C" int multi_link_open_rank(multi_link **out, int device, int rank, unsigned units, char *err, size_t errlen) {
  (void)device;
  (void)rank;
  (void)units;
  *out = NULL;
  snprintf(err, errlen, "this build of prstm has no NCCL, which units on several GPUs exchange their words through");
  return PRSTM_ENOGPU;
}

extern "C" int multi_link_exchange(multi_link *l, uint64_t *const *replica, const uint64_t *lo, const uint64_t *hi,
                                   char *err, size_t errlen) {
  (void)l;
  (void)replica;
  (void)lo;
  (void)hi;
  snprintf(err, errlen, "this build of prstm has no NCCL");
  return PRSTM_ENOGPU;
}

extern "C" void multi_link_close(multi_link *l) { (void)l; }

#endif
