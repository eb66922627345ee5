/* multi_ranks.c: the processes of a multi-unit run that mpirun started, found and linked through MPI; without MPI in the build, a process is always alone. */
#include "multi_ranks.h"

#include <stdio.h>

#include "prstm.h"

#ifdef PRSTM_HAVE_MPI
#include <mpi.h>

int multi_ranks_world(int *rank, int *size, int *local_size) {
  int up = 0, down = 0;
  if (MPI_Initialized(&up) != MPI_SUCCESS || !up) return 0;
  if (MPI_Finalized(&down) != MPI_SUCCESS || down) return 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS || MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS)
    return 0;
  if (*size < 2) return 0;
  /* The ranks sharing this host share its cores. Every rank runs this
   * (each runs the same engine_run_multi), as a collective call needs. */
  MPI_Comm host;
  *local_size = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) == MPI_SUCCESS) {
    MPI_Comm_size(host, local_size);
    MPI_Comm_free(&host);
  }
  return 1;
}

int multi_ranks_bcast(void *buf, uint64_t bytes, int root, char *err, size_t errlen) {
  /* MPI counts in int: a large buffer goes in pieces of 1 GiB. */
  char *p = buf;
  while (bytes) {
    const uint64_t piece = bytes < (1ull << 30) ? bytes : (1ull << 30);
    int rc = MPI_Bcast(p, (int)piece, MPI_BYTE, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, msg, &len);
      snprintf(err, errlen, "MPI_Bcast of %llu bytes from rank %d failed: %s", (unsigned long long)piece, root, msg);
      return PRSTM_EIO;
    }
    p += piece;
    bytes -= piece;
  }
  return 0;
}

#else

int multi_ranks_world(int *rank, int *size, int *local_size) {
  (void)rank;
  (void)size;
  (void)local_size;
  return 0;
}

int multi_ranks_bcast(void *buf, uint64_t bytes, int root, char *err, size_t errlen) {
  (void)buf;
  (void)bytes;
  (void)root;
  snprintf(err, errlen, "this build of prstm has no MPI");
  return PRSTM_EINVAL;
}

#endif
