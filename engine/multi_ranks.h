/* multi_ranks.h: the processes of a multi-unit run that mpirun started: this process's rank among them, and broadcasts between them through MPI. */
#ifndef MULTI_RANKS_H
#define MULTI_RANKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the program initialised MPI and runs as one of several
 * processes (ranks); then *rank, *size, *local_rank (this rank's place
 * among the ranks on its host) and *local_size (the ranks on this host)
 * are set. 0 in a build without MPI or a process started alone. */
int multi_ranks_world(int *rank, int *size, int *local_rank, int *local_size);
/* Every rank calls it: *flag becomes 1 on every rank where it was nonzero
 * on all of them, else 0. PRSTM_EIO with a message when MPI fails. */
int multi_ranks_all(int *flag, char *err, size_t errlen);
/* Every rank calls it: *v becomes the least of the ranks' values. */
int multi_ranks_min(uint64_t *v, char *err, size_t errlen);
/* Every rank calls it with the same bytes: root's buf is copied into every
 * other rank's. PRSTM_EIO with a message when MPI fails. */
int multi_ranks_bcast(void *buf, uint64_t bytes, int root, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MULTI_RANKS_H */
