/* fuzz_common.h: helpers shared by the libFuzzer harnesses: an input file the loaders can open by path, and checks that abort on a broken contract. */
#ifndef PRSTM_FUZZ_COMMON_H
#define PRSTM_FUZZ_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prstm.h"

/* The loaders take a path, so each input is written to one file that lives
 * for the whole process and is overwritten per input. An anonymous memory
 * file (memfd), opened through /proc/self/fd/N, leaves nothing behind when
 * the fuzzer crashes; where memfd_create is missing, a file under /tmp with
 * the pid in its name is used and removed at exit. */
typedef struct fuzz_file {
  int fd;
  char path[128];
} fuzz_file;

static fuzz_file fuzz_input = {-1, ""};

static void fuzz_remove_tmp(void) {
  if (strncmp(fuzz_input.path, "/tmp/", 5) == 0) unlink(fuzz_input.path);
}

static void fuzz_die(const char *what) {
  fprintf(stderr, "fuzz harness: %s: %s\n", what, strerror(errno));
  abort();
}

/* Writes data to the input file and returns its path. */
static const char *fuzz_write_input(const char *name, const uint8_t *data, size_t size) {
  if (fuzz_input.fd < 0) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd >= 0) {
      snprintf(fuzz_input.path, sizeof fuzz_input.path, "/proc/self/fd/%d", fd);
      /* /proc may be missing (some containers); fall back to /tmp then. */
      if (access(fuzz_input.path, R_OK) != 0) {
        close(fd);
        fd = -1;
      }
    }
    if (fd < 0) {
      snprintf(fuzz_input.path, sizeof fuzz_input.path, "/tmp/prstm-%s-%ld", name, (long)getpid());
      fd = open(fuzz_input.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) fuzz_die(fuzz_input.path);
      atexit(fuzz_remove_tmp);
    }
    fuzz_input.fd = fd;
  }
  if (ftruncate(fuzz_input.fd, 0) != 0) fuzz_die("ftruncate");
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fuzz_input.fd, data + done, size - done, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fuzz_die("pwrite");
    done += (size_t)n;
  }
  return fuzz_input.path;
}

/* A broken contract is reported like a crash, so that libFuzzer saves the
 * input and run.sh counts it. */
#define FUZZ_CHECK(cond, ...)                                                           \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "fuzz check failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                     \
      fputc('\n', stderr);                                                              \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

/* Every error message names the file first ("FILE: problem" or
 * "FILE:LINE: problem"), as the README promises. */
static void fuzz_check_error(int rc, const char *err, const char *file) {
  FUZZ_CHECK(rc < 0, "rc %d", rc);
  FUZZ_CHECK(err[0] != '\0', "error %s (%d) with an empty message", prstm_err_name(rc), rc);
  FUZZ_CHECK(strncmp(err, file, strlen(file)) == 0 && err[strlen(file)] == ':', "message does not start with '%s:': %s",
             file, err);
}

/* Checks every row of a loaded batch: a known type, and every address
 * argument below nwords, address lists included (count, then entries). */
static void fuzz_check_rows(const prstm_batch *b, const prstm_workload *wl, uint64_t from, uint64_t nwords) {
  uint64_t n = prstm_batch_size(b);
  for (uint64_t i = from; i < n; i++) {
    unsigned t = prstm_batch_type(b, i);
    FUZZ_CHECK(t < wl->ntypes, "row %llu has type %u", (unsigned long long)i, t);
    const prstm_type_desc *d = &wl->types[t];
    unsigned col = 0;
    for (unsigned a = 0; a < d->nargs; a++) {
      prstm_word v = prstm_batch_arg(b, i, col);
      switch (d->args[a].kind) {
        case PRSTM_ARG_ADDRESS:
          FUZZ_CHECK(v < nwords, "row %llu arg %s = %llu, state has %llu words", (unsigned long long)i, d->args[a].name,
                     (unsigned long long)v, (unsigned long long)nwords);
          col++;
          break;
        case PRSTM_ARG_ADDRESS_LIST:
          FUZZ_CHECK(v >= 1 && v <= PRSTM_MAX_COLUMNS - 3, "row %llu list %s has %llu entries", (unsigned long long)i,
                     d->args[a].name, (unsigned long long)v);
          col++;
          for (prstm_word k = 0; k < v; k++, col++) {
            prstm_word e = prstm_batch_arg(b, i, col);
            FUZZ_CHECK(e < nwords, "row %llu %s[%llu] = %llu, state has %llu words", (unsigned long long)i,
                       d->args[a].name, (unsigned long long)k, (unsigned long long)e, (unsigned long long)nwords);
          }
          break;
        default:
          col++;
          break;
      }
    }
  }
}

#endif /* PRSTM_FUZZ_COMMON_H */
