/* multi_ranks.c: the processes of a multi-unit run that mpirun started, found and linked through MPI; without MPI in the build, a process is always alone. */
#include "multi_ranks.h"

#include <stdio.h>

#include "prstm.h"

#ifdef PRSTM_HAVE_MPI
#include <mpi.h>

int multi_ranks_world(int *rank, int *size, int *local_rank, int *local_size) {
  int up = 0, down = 0;
  if (MPI_Initialized(&up) != MPI_SUCCESS || !up) return 0;
  if (MPI_Finalized(&down) != MPI_SUCCESS || down) return 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS || MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS)
    return 0;
  if (*size < 2) return 0;
  /* The ranks sharing this host share its cores. Every rank runs this
   * (each runs the same engine_run_multi), as a collective call needs. */
  MPI_Comm host;
  *local_rank = 0;
  *local_size = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) == MPI_SUCCESS) {
    MPI_Comm_rank(host, local_rank);
    MPI_Comm_size(host, local_size);
    MPI_Comm_free(&host);
  }
  return 1;
}

/* MPI's error rc as a message in err; PRSTM_EIO. */
static int multi_ranks_fail(int rc, const char *what, char *err, size_t errlen) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  snprintf(err, errlen, "%s failed: %s", what, msg);
  return PRSTM_EIO;
}

int multi_ranks_all(int *flag, char *err, size_t errlen) {
  int mine = *flag != 0, all = 0;
  int rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return multi_ranks_fail(rc, "MPI_Allreduce of the ranks' verdicts", err, errlen);
  *flag = all;
  return 0;
}

int multi_ranks_min(uint64_t *v, char *err, size_t errlen) {
  uint64_t least = 0;
  int rc = MPI_Allreduce(v, &least, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return multi_ranks_fail(rc, "MPI_Allreduce of the ranks' slots", err, errlen);
  *v = least;
  return 0;
}

int multi_ranks_bcast(void *buf, uint64_t bytes, int root, char *err, size_t errlen) {
  /* MPI counts in int: a large buffer goes in pieces of 1 GiB. */
  char *p = buf;
  while (bytes) {
    const uint64_t piece = bytes < (1ull << 30) ? bytes : (1ull << 30);
    int rc = MPI_Bcast(p, (int)piece, MPI_BYTE, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "MPI_Bcast of %llu bytes from rank %d", (unsigned long long)piece, root);
      return multi_ranks_fail(rc, what, err, errlen);
    }
    p += piece;
    bytes -= piece;
  }
  return 0;
}

#else

int multi_ranks_world(int *rank, int *size, int *local_rank, int *local_size) {
  (void)rank;
  (void)size;
  (void)local_rank;
  (void)local_size;
  return 0;
}

int multi_ranks_all(int *flag, char *err, size_t errlen) {
  (void)flag;
  snprintf(err, errlen, "this build of prstm has no MPI");
  return PRSTM_EINVAL;
}

int multi_ranks_min(uint64_t *v, char *err, size_t errlen) {
  (void)v;
  snprintf(err, errlen, "this build of prstm has no MPI");
  return PRSTM_EINVAL;
}

int multi_ranks_bcast(void *buf, uint64_t bytes, int root, char *err, size_t errlen) {
  (void)buf;
  (void)bytes;
  (void)root;
  snprintf(err, errlen, "this build of prstm has no MPI");
  return PRSTM_EINVAL;
}

#endif
