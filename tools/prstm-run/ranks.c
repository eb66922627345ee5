/* ranks.c: prstm-run as one of several processes that mpirun started: MPI set up before the run and ended after it. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

#ifdef PRSTM_HAVE_MPI
#include <mpi.h>

/* The launchers' own variables: Open MPI's, then the PMI ones MPICH and
 * Slurm set. A program started alone has none and never touches MPI. */
static int started_by_a_launcher(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int cli_ranks_start(cli_ranks *r) {
  r->rank = 0;
  r->size = 1;
  r->mpi = 0;
  if (!started_by_a_launcher()) return 0;
  if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
    fprintf(stderr, "prstm-run: MPI_Init failed\n");
    return -1;
  }
  r->mpi = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r->size);
  return 0;
}

void cli_ranks_end(const cli_ranks *r, int status) {
  if (!r->mpi) return;
  /* A rank that failed may leave the others waiting in a broadcast: an
   * error ends every rank. */
  if (status != EXIT_OK && r->size > 1) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
}

#else

int cli_ranks_start(cli_ranks *r) {
  r->rank = 0;
  r->size = 1;
  r->mpi = 0;
  return 0;
}

void cli_ranks_end(const cli_ranks *r, int status) {
  (void)r;
  (void)status;
}

#endif
