/* batch_dir.c: binary batches: a folder of NumPy .npy columns (type.npy, arg0.npy, ...) and a batch.json that names the workload and its types, read by mapping the files and written column by column. */
#define _GNU_SOURCE /* mmap, mkdir */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loaders_internal.h"
#include "txtable.h"

#define BATCH_DIR_FORMAT "prstm-batch"
#define BATCH_DIR_VERSION 1
#define BATCH_DIR_MANIFEST "batch.json"
/* A manifest is a few hundred bytes; anything far larger is not one. */
#define BATCH_DIR_MANIFEST_MAX (1u << 20)
#define BATCH_DIR_PATH_MAX 1100
/* Below this many rows a check is not worth a thread of its own. */
#define BATCH_DIR_CHECK_ROWS_PER_THREAD (1u << 20)
#define BATCH_DIR_MAX_THREADS 64

/* One mapped .npy column: its values start at `data`, `width` bytes each. */
typedef struct npy_column {
  char path[BATCH_DIR_PATH_MAX];
  void *map;
  size_t map_len;
  const void *data;
  unsigned width;
} npy_column;

static void npy_unmap(npy_column *c) {
  if (c->map && c->map != MAP_FAILED) munmap(c->map, c->map_len);
  c->map = NULL;
}

/* The value a row holds in a column, whatever its width. */
static uint64_t npy_value(const npy_column *c, uint64_t row) {
  switch (c->width) {
    case 8: {
      uint64_t v;
      memcpy(&v, (const char *)c->data + row * 8, 8);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, (const char *)c->data + row * 4, 4);
      return v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, (const char *)c->data + row * 2, 2);
      return v;
    }
    default:
      return ((const uint8_t *)c->data)[row];
  }
}

/* Finds `'key':` in a .npy header dict and returns what follows it, past
 * blanks, or NULL. */
static const char *npy_header_value(const char *dict, size_t len, const char *key) {
  char quoted[32];
  snprintf(quoted, sizeof quoted, "'%s':", key);
  const size_t k = strlen(quoted);
  for (size_t i = 0; i + k <= len; i++) {
    if (memcmp(dict + i, quoted, k) != 0) continue;
    const char *p = dict + i + k;
    while (p < dict + len && *p == ' ') p++;
    return p;
  }
  return NULL;
}

/* Maps one .npy file and checks it holds `rows` unsigned integers in one
 * dimension, little-endian, no more and no fewer bytes than that; `want_width`
 * 0 takes any width of 1, 2, 4 or 8 bytes. */
static int npy_open(npy_column *c, uint64_t rows, unsigned want_width, char *err, size_t errlen) {
  int fd = open(c->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    loaders_errf(err, errlen, "%s: cannot read: %s", c->path, strerror(errno));
    return errno == ENOENT ? PRSTM_ECONFIG : PRSTM_EIO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    loaders_errf(err, errlen, "%s: not a regular file", c->path);
    close(fd);
    return PRSTM_ECONFIG;
  }
  c->map_len = (size_t)st.st_size;
  c->map = c->map_len ? mmap(NULL, c->map_len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (c->map == MAP_FAILED) {
    c->map = NULL;
    loaders_errf(err, errlen, "%s: cannot map: %s", c->path, strerror(errno));
    return PRSTM_EIO;
  }
  const unsigned char *m = c->map;
  /* The magic, a version of 1, 2 or 3, and the header's length (16 bits in
   * version 1, 32 bits after). */
  if (c->map_len < 10 || memcmp(m, "\x93NUMPY", 6) != 0) {
    loaders_errf(err, errlen, "%s: not a NumPy .npy file (no \\x93NUMPY magic)", c->path);
    return PRSTM_ECONFIG;
  }
  const unsigned major = m[6];
  if (major < 1 || major > 3) {
    loaders_errf(err, errlen, "%s: .npy format version %u.%u; this reader knows 1 to 3", c->path, major, m[7]);
    return PRSTM_ECONFIG;
  }
  size_t start = major == 1 ? 10 : 12;
  if (c->map_len < start) {
    loaders_errf(err, errlen, "%s: truncated .npy header", c->path);
    return PRSTM_ECONFIG;
  }
  const size_t hlen = major == 1 ? (size_t)m[8] | (size_t)m[9] << 8
                                 : (size_t)m[8] | (size_t)m[9] << 8 | (size_t)m[10] << 16 | (size_t)m[11] << 24;
  if (hlen > c->map_len - start) {
    loaders_errf(err, errlen, "%s: truncated .npy header", c->path);
    return PRSTM_ECONFIG;
  }
  const char *dict = (const char *)m + start;
  const char *descr = npy_header_value(dict, hlen, "descr");
  const char *order = npy_header_value(dict, hlen, "fortran_order");
  const char *shape = npy_header_value(dict, hlen, "shape");
  if (!descr || !order || !shape) {
    loaders_errf(err, errlen, "%s: .npy header without descr, fortran_order and shape", c->path);
    return PRSTM_ECONFIG;
  }
  const char *dict_end = dict + hlen;
  /* Unsigned integers, little-endian or of one byte: '<u8', '<u4', '<u2',
   * '|u1' (numpy's own spelling) or '<u1'. */
  unsigned width = 0;
  if (dict_end - descr >= 5 && descr[0] == '\'' && descr[4] == '\'' && descr[2] == 'u' &&
      (descr[1] == '<' || (descr[1] == '|' && descr[3] == '1')))
    width = descr[3] == '1' ? 1 : descr[3] == '2' ? 2 : descr[3] == '4' ? 4 : descr[3] == '8' ? 8 : 0;
  if (width == 0) {
    /* Quote the dtype as far as its closing quote, never past the header:
     * 'descr': may be the header's last bytes. */
    const size_t descr_len = (size_t)(dict_end - descr);
    const char *q = descr_len > 1 ? memchr(descr + 1, '\'', descr_len - 1) : NULL;
    const size_t shown = q ? (size_t)(q - descr + 1) : descr_len < 8 ? descr_len : 8;
    loaders_errf(err, errlen,
                 "%s: dtype %.*s: expected unsigned integers ('|u1', '<u2', '<u4' or '<u8'; numpy: dtype=np.uint64)",
                 c->path, shown ? (int)shown : 7, shown ? descr : "(empty)");
    return PRSTM_ECONFIG;
  }
  if (want_width && width != want_width) {
    loaders_errf(err, errlen, "%s: %u-byte values; this column holds %u-byte ones", c->path, width, want_width);
    return PRSTM_ECONFIG;
  }
  if (dict_end - order < 5 || memcmp(order, "False", 5) != 0) {
    loaders_errf(err, errlen, "%s: fortran_order must be False", c->path);
    return PRSTM_ECONFIG;
  }
  /* One dimension: "(N,)". */
  uint64_t n = 0;
  const char *p = shape;
  if (p >= dict_end || *p++ != '(') p = NULL;
  int digits = 0;
  while (p && p < dict_end && *p >= '0' && *p <= '9' && digits < 19) {
    n = n * 10 + (uint64_t)(*p++ - '0');
    digits++;
  }
  if (!p || digits == 0 || p + 2 > dict_end || p[0] != ',' || p[1] != ')') {
    const char *close_paren = memchr(shape, ')', (size_t)(dict_end - shape));
    const int shown = close_paren ? (int)(close_paren - shape + 1) : shape < dict_end ? 1 : 0;
    loaders_errf(err, errlen, "%s: shape %.*s: expected one dimension, (rows,)", c->path, shown ? shown : 7,
                 shown ? shape : "(empty)");
    return PRSTM_ECONFIG;
  }
  if (n != rows) {
    loaders_errf(err, errlen, "%s: %" PRIu64 " rows; batch.json says %" PRIu64, c->path, n, rows);
    return PRSTM_ECONFIG;
  }
  const size_t data_at = start + hlen;
  if ((uint64_t)(c->map_len - data_at) != rows * width) {
    loaders_errf(err, errlen, "%s: %zu bytes of values for %" PRIu64 " rows of %u bytes: %s", c->path,
                 c->map_len - data_at, rows, width,
                 (uint64_t)(c->map_len - data_at) < rows * width ? "truncated" : "bytes left over");
    return PRSTM_ECONFIG;
  }
  c->data = m + data_at;
  c->width = width;
  return 0;
}

/* The manifest: workload, rows, columns and the type names by the indices
 * type.npy uses, mapped to the workload's own indices. */
typedef struct batch_manifest {
  uint64_t rows;
  unsigned columns;
  unsigned ntypes;
  uint8_t type_of[256]; /* the workload's index of the file's type i */
  int identity;         /* type_of[i] == i for every i */
} batch_manifest;

static int manifest_read(const char *dir, const prstm_workload *wl, batch_manifest *mf, char *err, size_t errlen) {
  char path[BATCH_DIR_PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, BATCH_DIR_MANIFEST);
  struct stat st;
  if (stat(path, &st) != 0 && errno == ENOENT) {
    loaders_errf(err, errlen, "%s: no %s: not a binary batch folder (prstm-run --save-batch writes one)", dir,
                 BATCH_DIR_MANIFEST);
    return PRSTM_ECONFIG;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = loaders_read_text_file(path, &text, &len, err, errlen);
  if (rc) return rc;
  size_t fail = 0;
  cJSON *root = len <= BATCH_DIR_MANIFEST_MAX ? loaders_json_parse(text, len, &fail) : NULL;
  if (!root || !cJSON_IsObject(root)) {
    unsigned long line = 1, col = 1;
    loaders_json_position(text, fail, &line, &col);
    loaders_errf(err, errlen, "%s:%lu:%lu: not a JSON object", path, line, col);
    cJSON_Delete(root);
    free(text);
    return PRSTM_ECONFIG;
  }
  free(text);
  memset(mf, 0, sizeof *mf);
  rc = PRSTM_ECONFIG;
  static const char *const keys[] = {"format", "version", "workload", "rows", "columns", "types", NULL};
  for (const cJSON *k = root->child; k; k = k->next) {
    int known = 0;
    for (int i = 0; keys[i]; i++) known |= strcmp(k->string, keys[i]) == 0;
    if (!known) {
      loaders_errf(err, errlen, "%s: unknown key '%s'", path, k->string);
      goto out;
    }
  }
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *workload = cJSON_GetObjectItemCaseSensitive(root, "workload");
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
  const cJSON *columns = cJSON_GetObjectItemCaseSensitive(root, "columns");
  const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "types");
  uint64_t v = 0;
  if (!cJSON_IsString(format) || strcmp(format->valuestring, BATCH_DIR_FORMAT) != 0) {
    loaders_errf(err, errlen, "%s: format: expected \"%s\"", path, BATCH_DIR_FORMAT);
    goto out;
  }
  if (loaders_json_uint(version, &v) != 0 || v != BATCH_DIR_VERSION) {
    loaders_errf(err, errlen, "%s: version: expected %d (this build reads version %d)", path, BATCH_DIR_VERSION,
                 BATCH_DIR_VERSION);
    goto out;
  }
  if (!cJSON_IsString(workload)) {
    loaders_errf(err, errlen, "%s: workload: expected a string", path);
    goto out;
  }
  if (strcmp(workload->valuestring, wl->name) != 0) {
    loaders_errf(err, errlen, "%s: a batch of workload %s; the config runs %s", path, workload->valuestring, wl->name);
    goto out;
  }
  if (loaders_json_uint(rows, &mf->rows) != 0) {
    loaders_errf(err, errlen, "%s: rows: expected %s", path,
                 rows ? loaders_uint_expected(rows) : "a non-negative integer");
    goto out;
  }
  if (loaders_json_uint(columns, &v) != 0 || v > PRSTM_MAX_COLUMNS) {
    loaders_errf(err, errlen, "%s: columns: expected an integer from 0 to %d", path, PRSTM_MAX_COLUMNS);
    goto out;
  }
  mf->columns = (unsigned)v;
  if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) < 1 || cJSON_GetArraySize(types) > 256) {
    loaders_errf(err, errlen, "%s: types: expected an array of 1 to 256 type names", path);
    goto out;
  }
  mf->identity = 1;
  for (const cJSON *t = types->child; t; t = t->next, mf->ntypes++) {
    int found = -1;
    for (unsigned i = 0; cJSON_IsString(t) && i < wl->ntypes; i++)
      if (strcmp(wl->types[i].name, t->valuestring) == 0) found = (int)i;
    if (found < 0) {
      char names[512];
      loaders_type_names(wl, names, sizeof names);
      loaders_errf(err, errlen, "%s: types[%u]: %s%s%s is not a type of %s (known: %s)", path, mf->ntypes,
                   cJSON_IsString(t) ? "'" : "", cJSON_IsString(t) ? t->valuestring : "a non-string",
                   cJSON_IsString(t) ? "'" : "", wl->name, names);
      goto out;
    }
    mf->type_of[mf->ntypes] = (uint8_t)found;
    if ((unsigned)found != mf->ntypes) mf->identity = 0;
  }
  rc = 0;
out:
  cJSON_Delete(root);
  return rc;
}

/* Rows [lo, hi) of check_rows: one thread's share. */
typedef struct check_job {
  const prstm_workload *wl;
  uint64_t nwords;
  const batch_manifest *mf;
  const npy_column *type_col, *cols;
  uint64_t lo, hi;
  int rc;
  char err[512];
} check_job;

static void *check_range(void *arg) {
  check_job *j = arg;
  const prstm_workload *wl = j->wl;
  const batch_manifest *mf = j->mf;
  const npy_column *cols = j->cols, *type_col = j->type_col;
  const uint8_t *type = type_col->data;
  const uint64_t nwords = j->nwords;
  char *err = j->err;
  const size_t errlen = sizeof j->err;
  j->rc = 0;
  for (uint64_t r = j->lo; r < j->hi; r++) {
    if (type[r] >= mf->ntypes) {
      loaders_errf(err, errlen, "%s: row %" PRIu64 ": type index %u; batch.json names %u types", type_col->path, r,
                   type[r], mf->ntypes);
      j->rc = PRSTM_ECONFIG;
      return NULL;
    }
    const prstm_type_desc *d = &wl->types[mf->type_of[type[r]]];
    for (unsigned a = 0; a < d->nargs; a++) {
      const uint64_t v = npy_value(&cols[a], r);
      if (d->args[a].kind == PRSTM_ARG_ADDRESS && v >= nwords) {
        loaders_errf(err, errlen,
                     "%s: row %" PRIu64 ": %s: address %" PRIu64 " out of range (the state has %" PRIu64 " words)",
                     cols[a].path, r, d->args[a].name, v, nwords);
        j->rc = PRSTM_ECONFIG;
        return NULL;
      }
      if (d->args[a].kind != PRSTM_ARG_ADDRESS_LIST) continue;
      if (v == 0 || v > mf->columns - a - 1) {
        loaders_errf(err, errlen, "%s: row %" PRIu64 ": %s: a list of %" PRIu64 " addresses; expected 1 to %u",
                     cols[a].path, r, d->args[a].name, v, mf->columns - a - 1);
        j->rc = PRSTM_ECONFIG;
        return NULL;
      }
      for (uint64_t k = 0; k < v; k++) {
        const uint64_t w = npy_value(&cols[a + 1 + k], r);
        if (w >= nwords) {
          loaders_errf(err, errlen,
                       "%s: row %" PRIu64 ": %s[%" PRIu64 "]: address %" PRIu64 " out of range (the state has %" PRIu64
                       " words)",
                       cols[a + 1 + k].path, r, d->args[a].name, k, w, nwords);
          j->rc = PRSTM_ECONFIG;
          return NULL;
        }
      }
    }
  }
  return NULL;
}

/* Every row against the workload's argument kinds, as the JSON Lines loader
 * checks them: a type with its columns, addresses inside the state, a list
 * of at least one address that fits the columns. */
static int check_rows(const char *dir, const prstm_workload *wl, uint64_t nwords, const batch_manifest *mf,
                      const npy_column *type_col, const npy_column *cols, char *err, size_t errlen) {
  const uint8_t *type = type_col->data;
  for (unsigned t = 0; t < mf->ntypes; t++) {
    const prstm_type_desc *d = &wl->types[mf->type_of[t]];
    if (d->nargs > mf->columns) {
      /* Only a type some row uses needs its columns. */
      for (uint64_t r = 0; r < mf->rows; r++)
        if (type[r] == t) {
          loaders_errf(err, errlen, "%s/%s: columns: %u, but row %" PRIu64 ": type %s takes %u argument columns", dir,
                       BATCH_DIR_MANIFEST, mf->columns, r, d->name, d->nargs);
          return PRSTM_ECONFIG;
        }
    }
  }
  /* The rows on every core, each thread a range; the first error in row
   * order is the one reported, whatever the thread count. */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t nthreads = mf->rows / BATCH_DIR_CHECK_ROWS_PER_THREAD + 1;
  if (nthreads > (uint64_t)(cores > 0 ? cores : 1)) nthreads = (uint64_t)(cores > 0 ? cores : 1);
  if (nthreads > BATCH_DIR_MAX_THREADS) nthreads = BATCH_DIR_MAX_THREADS;
  check_job *jobs = calloc(nthreads, sizeof *jobs);
  pthread_t *tids = calloc(nthreads, sizeof *tids);
  int *started = calloc(nthreads, sizeof *started);
  if (!jobs || !tids || !started) {
    free(jobs);
    free(tids);
    free(started);
    loaders_errf(err, errlen, "%s: out of memory", dir);
    return PRSTM_ENOMEM;
  }
  for (uint64_t k = 0; k < nthreads; k++) {
    jobs[k] = (check_job){.wl = wl,
                          .nwords = nwords,
                          .mf = mf,
                          .type_col = type_col,
                          .cols = cols,
                          .lo = mf->rows * k / nthreads,
                          .hi = mf->rows * (k + 1) / nthreads};
    if (k > 0) started[k] = pthread_create(&tids[k], NULL, check_range, &jobs[k]) == 0;
  }
  check_range(&jobs[0]);
  for (uint64_t k = 1; k < nthreads; k++) {
    if (started[k])
      pthread_join(tids[k], NULL);
    else
      check_range(&jobs[k]);
  }
  int rc = 0;
  for (uint64_t k = 0; k < nthreads && !rc; k++)
    if (jobs[k].rc) {
      rc = jobs[k].rc;
      loaders_errf(err, errlen, "%s", jobs[k].err);
    }
  free(jobs);
  free(tids);
  free(started);
  return rc;
}

int prstm_load_batch_dir(const char *dir, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch, char *err,
                         size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!dir || !wl || !batch) {
    loaders_errf(err, errlen, "prstm_load_batch_dir: invalid argument");
    return PRSTM_EINVAL;
  }
  if (prstm_batch_workload(batch) != wl) {
    loaders_errf(err, errlen, "%s: the batch is of another workload than %s", dir, wl->name);
    return PRSTM_EINVAL;
  }
  batch_manifest mf;
  int rc = manifest_read(dir, wl, &mf, err, errlen);
  if (rc) return rc;
  npy_column type_col;
  memset(&type_col, 0, sizeof type_col);
  npy_column *cols = calloc(mf.columns ? mf.columns : 1, sizeof *cols);
  prstm_column *view = calloc(mf.columns ? mf.columns : 1, sizeof *view);
  uint8_t *mapped_types = NULL;
  if (!cols || !view) {
    loaders_errf(err, errlen, "%s: out of memory", dir);
    rc = PRSTM_ENOMEM;
    goto out;
  }
  snprintf(type_col.path, sizeof type_col.path, "%s/type.npy", dir);
  rc = npy_open(&type_col, mf.rows, 1, err, errlen);
  for (unsigned c = 0; c < mf.columns && !rc; c++) {
    snprintf(cols[c].path, sizeof cols[c].path, "%s/arg%u.npy", dir, c);
    rc = npy_open(&cols[c], mf.rows, 0, err, errlen);
    view[c] = (prstm_column){cols[c].data, cols[c].width};
  }
  if (!rc) rc = check_rows(dir, wl, nwords, &mf, &type_col, cols, err, errlen);
  if (rc) goto out;
  /* The file's type indices are the manifest's order; the batch's are the
   * workload's. */
  const uint8_t *types = type_col.data;
  if (!mf.identity && mf.rows) {
    if ((mapped_types = malloc((size_t)mf.rows)) == NULL) {
      loaders_errf(err, errlen, "%s: out of memory", dir);
      rc = PRSTM_ENOMEM;
      goto out;
    }
    for (uint64_t r = 0; r < mf.rows; r++) mapped_types[r] = mf.type_of[types[r]];
    types = mapped_types;
  }
  /* Exactly the room the rows need, instead of the next power of two. */
  if (mf.rows) prstm_batch_reserve(batch, prstm_batch_size(batch) + mf.rows, mf.columns);
  rc = prstm_batch_append_columns(batch, mf.rows, types, view, mf.columns);
  if (rc) loaders_errf(err, errlen, "%s: %s", dir, prstm_batch_error(batch));
out:
  npy_unmap(&type_col);
  for (unsigned c = 0; cols && c < mf.columns; c++) npy_unmap(&cols[c]);
  free(cols);
  free(view);
  free(mapped_types);
  return rc;
}

int loaders_npy_write(const char *path, uint64_t rows, unsigned width, const prstm_batch *b, loaders_npy_source src,
                      unsigned col, char *err, size_t errlen) {
  char header[128];
  int n = snprintf(header, sizeof header, "{'descr': '%cu%u', 'fortran_order': False, 'shape': (%" PRIu64 ",), }",
                   width == 1 ? '|' : '<', width, rows);
  /* Padded with spaces and a newline so that the values start at a multiple
   * of 64 bytes, as numpy writes it. */
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  char tmp[BATCH_DIR_PATH_MAX + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    loaders_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return PRSTM_EIO;
  }
  const size_t hlen = (size_t)n + pad + 1;
  unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
  if (ok) ok = fputc('\n', f) != EOF;
  enum { CHUNK = 1 << 16 };
  uint64_t *buf = malloc(CHUNK * sizeof *buf);
  if (!buf) ok = 0;
  const int has_column = src == LOADERS_NPY_COLUMN && col < prstm_batch_columns(b);
  for (uint64_t at = 0; ok && at < rows; at += CHUNK) {
    const uint64_t m = rows - at < CHUNK ? rows - at : CHUNK;
    unsigned char *out = (unsigned char *)buf;
    for (uint64_t i = 0; i < m; i++) {
      uint64_t v = 0;
      if (src == LOADERS_NPY_COLUMN) {
        v = has_column ? txtable_get(b, col, at + i) : 0;
      } else if (src == LOADERS_NPY_TYPE) {
        v = prstm_batch_type(b, at + i);
      } else {
        prstm_status status = PRSTM_PENDING;
        unsigned reason = 0;
        prstm_word result = 0;
        prstm_batch_outcome(b, at + i, &status, &reason, &result);
        v = src == LOADERS_NPY_STATUS ? (uint64_t)status : src == LOADERS_NPY_REASON ? reason : result;
      }
      /* Little-endian, as the header says, whatever the host. */
      for (unsigned k = 0; k < width; k++) out[i * width + k] = (unsigned char)(v >> (8 * k));
    }
    ok = fwrite(out, width, (size_t)m, f) == (size_t)m;
  }
  free(buf);
  return loaders_commit_tmp(f, ok, tmp, path, err, errlen);
}

int prstm_save_batch_dir(const char *dir, const prstm_batch *batch, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!dir || !batch) {
    loaders_errf(err, errlen, "prstm_save_batch_dir: invalid argument");
    return PRSTM_EINVAL;
  }
  if (strlen(dir) + 32 > BATCH_DIR_PATH_MAX) {
    loaders_errf(err, errlen, "%s: path too long", dir);
    return PRSTM_EINVAL;
  }
  int made = loaders_make_folder(dir, err, errlen);
  if (made) return made;
  const prstm_workload *wl = prstm_batch_workload(batch);
  const uint64_t rows = prstm_batch_size(batch);
  /* The columns the rows use: as many as the widest type's arguments, or
   * an address list's entries. */
  const unsigned ncols = prstm_batch_columns(batch);
  char path[BATCH_DIR_PATH_MAX];
  /* The manifest goes last, so that a folder cut short by an error has
   * none and is refused, never half read. */
  snprintf(path, sizeof path, "%s/%s", dir, BATCH_DIR_MANIFEST);
  unlink(path);
  snprintf(path, sizeof path, "%s/type.npy", dir);
  int rc = loaders_npy_write(path, rows, 1, batch, LOADERS_NPY_TYPE, 0, err, errlen);
  for (unsigned c = 0; c < ncols && !rc; c++) {
    /* The narrowest width that holds the column's largest value. */
    uint64_t max = 0;
    for (uint64_t r = 0; r < rows; r++) max |= txtable_get(batch, c, r);
    const unsigned width = max <= UINT8_MAX ? 1 : max <= UINT16_MAX ? 2 : max <= UINT32_MAX ? 4 : 8;
    snprintf(path, sizeof path, "%s/arg%u.npy", dir, c);
    rc = loaders_npy_write(path, rows, width, batch, LOADERS_NPY_COLUMN, c, err, errlen);
  }
  if (rc) return rc;
  cJSON *root = cJSON_CreateObject();
  cJSON *types = cJSON_CreateArray();
  int ok = root && types;
  if (ok) {
    cJSON_AddItemToObject(root, "format", cJSON_CreateString(BATCH_DIR_FORMAT));
    cJSON_AddItemToObject(root, "version", cJSON_CreateNumber(BATCH_DIR_VERSION));
    cJSON_AddItemToObject(root, "workload", cJSON_CreateString(wl->name));
    cJSON_AddItemToObject(root, "rows", cJSON_CreateNumber((double)rows));
    cJSON_AddItemToObject(root, "columns", cJSON_CreateNumber(ncols));
    for (unsigned t = 0; t < wl->ntypes; t++) cJSON_AddItemToArray(types, cJSON_CreateString(wl->types[t].name));
    cJSON_AddItemToObject(root, "types", types);
    types = NULL;
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  cJSON_Delete(types);
  if (!text) {
    loaders_errf(err, errlen, "%s: out of memory", dir);
    return PRSTM_ENOMEM;
  }
  snprintf(path, sizeof path, "%s/%s", dir, BATCH_DIR_MANIFEST);
  size_t len = strlen(text);
  char *line = realloc(text, len + 2);
  if (!line) {
    free(text);
    loaders_errf(err, errlen, "%s: out of memory", dir);
    return PRSTM_ENOMEM;
  }
  line[len] = '\n';
  line[len + 1] = '\0';
  rc = prstm_write_file_atomic(path, line, len + 1, err, errlen);
  free(line);
  return rc;
}
