/* fuzz_npy.c: libFuzzer harness for prstm_load_batch_dir: the input is a binary batch folder for the bank workload, its files cut from the input at a marker line. */
#include "fuzz_common.h"

#include <ftw.h>
#include <sys/stat.h>

#define FUZZ_NWORDS 64u
/* The input's parts, in this order, are separated by this line; a part
 * the input lacks is a file the folder lacks. */
#define FUZZ_NPY_MARKER "|||\n"
static const char *const fuzz_npy_files[] = {"batch.json", "type.npy", "arg0.npy", "arg1.npy", "arg2.npy"};
#define FUZZ_NPY_NFILES (sizeof fuzz_npy_files / sizeof fuzz_npy_files[0])

static char fuzz_dir[64];

static int fuzz_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void fuzz_remove_dir(void) {
  if (fuzz_dir[0]) nftw(fuzz_dir, fuzz_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) fuzz_die(path);
  if (size && fwrite(data, 1, size, f) != size) fuzz_die(path);
  if (fclose(f) != 0) fuzz_die(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const prstm_workload *bank = prstm_workload_find("bank");
  if (bank == NULL) abort();
  if (!fuzz_dir[0]) {
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/prstm-fuzz-npy-XXXXXX");
    if (!mkdtemp(fuzz_dir)) fuzz_die("mkdtemp");
    atexit(fuzz_remove_dir);
  }
  const size_t mlen = strlen(FUZZ_NPY_MARKER);
  size_t at = 0;
  for (unsigned k = 0; k < FUZZ_NPY_NFILES; k++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir, fuzz_npy_files[k]);
    if (at > size) {
      unlink(path);
      continue;
    }
    const uint8_t *end = memmem(data + at, size - at, FUZZ_NPY_MARKER, mlen);
    const size_t n = end ? (size_t)(end - (data + at)) : size - at;
    fuzz_write_file(fuzz_npy_files[k], data + at, n);
    at = end ? at + n + mlen : size + 1;
  }
  prstm_batch *b = NULL;
  if (prstm_batch_create(&b, bank) != 0) abort();
  char err[2048] = "";
  int rc = prstm_load_batch_dir(fuzz_dir, bank, FUZZ_NWORDS, b, err, sizeof err);
  const uint64_t rows = prstm_batch_size(b);
  if (rc == 0) {
    fuzz_check_rows(b, bank, 0, FUZZ_NWORDS);
  } else {
    /* "DIR: problem", or "DIR/FILE: problem". */
    const size_t dl = strlen(fuzz_dir);
    FUZZ_CHECK(err[0] && strncmp(err, fuzz_dir, dl) == 0 && (err[dl] == ':' || err[dl] == '/'),
               "message does not name the folder: %s", err);
    FUZZ_CHECK(prstm_is_input_error(rc) || rc == PRSTM_ENOMEM || rc == PRSTM_EIO, "error %s: %s", prstm_err_name(rc),
               err);
    FUZZ_CHECK(rows == 0, "%llu rows appended by a failed load: %s", (unsigned long long)rows, err);
  }
  prstm_batch_destroy(b);
  return 0;
}
