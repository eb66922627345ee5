/* multi_link.h: the exchanges between the GPUs of a multi-unit run, through NCCL. */
#ifndef MULTI_LINK_H
#define MULTI_LINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One NCCL communicator for each GPU of a multi-unit run that this
 * process drives (every GPU of the run, or a rank's one), each with a
 * stream of its own for the exchanges. */
typedef struct multi_link multi_link;

/* Opens the communicators over GPUs devices[0..n); PRSTM_ENOGPU with a
 * message where this build has no NCCL, PRSTM_ECUDA where NCCL fails. */
#ifdef PRSTM_HAVE_CUDA
/* Whether this build has NCCL: without it, units on several GPUs cannot
 * exchange their words, and backend multi runs on CPU units. */
int multi_link_available(void);
int multi_link_open(multi_link **out, const int *devices, unsigned n, char *err, size_t errlen);
/* The same for a process that mpirun started as unit `rank` of `units`,
 * each rank on a GPU of its own (device): the communicator's id goes from
 * rank 0 to the others through MPI, and every rank must call it. */
int multi_link_open_rank(multi_link **out, int device, int rank, unsigned units, char *err, size_t errlen);
/* For every unit r with hi[r] > lo[r]: words [lo[r], hi[r]) of unit r's
 * replica broadcast into the same words of every other unit's replica,
 * all in one NCCL group; returns once every copy is done. replica[i] is
 * the replica of this process's GPU i (in its memory): every unit's, in
 * one process; a rank's own. */
int multi_link_exchange(multi_link *l, uint64_t *const *replica, const uint64_t *lo, const uint64_t *hi, char *err,
                        size_t errlen);
void multi_link_close(multi_link *l);
#else
/* Without CUDA every unit runs on CPU threads and nothing opens a link. */
static inline int multi_link_exchange(multi_link *l, uint64_t *const *replica, const uint64_t *lo, const uint64_t *hi,
                                      char *err, size_t errlen) {
  (void)l, (void)replica, (void)lo, (void)hi, (void)err, (void)errlen;
  return -1;
}
static inline void multi_link_close(multi_link *l) { (void)l; }
#endif

#ifdef __cplusplus
}
#endif

#endif /* MULTI_LINK_H */
