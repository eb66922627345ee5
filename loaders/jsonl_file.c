/* jsonl_file.c: a JSON Lines batch file read on every core: the file mapped, cut at line ends into chunks, each chunk parsed into a batch of its own, the parts joined in file order, and the first error in file order reported. */
#define _GNU_SOURCE /* getline, mmap, sysconf */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loaders_internal.h"
#include "ranges.h"

/* Below this many bytes a chunk is not worth a thread of its own: a
 * megabyte is some 2 ms of one core with simdjson (15 ms with cJSON alone),
 * against tens of microseconds to start a thread. */
#define JSONL_MIN_CHUNK_BYTES (1u << 20)
#define JSONL_MAX_THREADS 256

/* One chunk of the file: whole lines from `text`, `len` bytes. */
typedef struct jsonl_chunk {
  const char *text;
  size_t len;
  int first; /* holds the file's first line */
  int fast;  /* read records with the fast path where it is built */
  const prstm_workload *wl;
  uint64_t nwords;
  prstm_batch *rows;   /* its records, in order */
  unsigned long lines; /* lines read (all of them, or up to the error's) */
  int rc;              /* its first error, or 0 */
  unsigned long col;   /* the error's column when the line is not JSON */
  char msg[LOADERS_KEYPATH_MAX + 320];
} jsonl_chunk;

/* Parses the chunk's lines into its batch and stops at its first error,
 * with `lines` then the error's line within the chunk. */
static void *jsonl_parse_chunk(void *arg) {
  jsonl_chunk *c = arg;
  /* Room for every line at once: grown by doubling instead, sixteen threads'
   * batches each mapped and copied their columns a dozen times, and every
   * large mapping stops the other threads' page faults meanwhile. */
  uint64_t lines = 1;
  for (const char *p = c->text, *end = c->text + c->len; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) lines++;
  prstm_batch_reserve(c->rows, lines, 0);
  size_t cap = 256;
  char *line = malloc(cap);
  if (line == NULL) {
    c->rc = PRSTM_ENOMEM;
    snprintf(c->msg, sizeof c->msg, "cannot read: %s", strerror(ENOMEM));
    return NULL;
  }
  loaders_jsonl_fast *fast = c->fast ? loaders_jsonl_fast_create() : NULL;
  size_t at = 0;
  while (at < c->len) {
    const char *start = c->text + at;
    const char *nl = memchr(start, '\n', c->len - at);
    size_t n = nl ? (size_t)(nl - start) + 1 : c->len - at;
    at += n;
    c->lines++;
    /* The parser needs a NUL after the record: each line is copied. */
    if (n + 1 > cap) {
      size_t bigger = cap;
      while (bigger < n + 1) bigger *= 2;
      char *grown = realloc(line, bigger);
      if (grown == NULL) {
        c->rc = PRSTM_ENOMEM;
        snprintf(c->msg, sizeof c->msg, "cannot read: %s", strerror(ENOMEM));
        break;
      }
      line = grown;
      cap = bigger;
    }
    memcpy(line, start, n);
    line[n] = '\0';
    c->rc = loaders_jsonl_line(line, n, c->first && c->lines == 1, fast, c->wl, c->nwords, c->rows, &c->col, c->msg,
                               sizeof c->msg);
    if (c->rc != 0) break;
  }
  loaders_jsonl_fast_destroy(fast);
  free(line);
  return NULL;
}

/* The message of an error on line `lineno` of path. */
static void jsonl_report(const char *path, unsigned long lineno, const jsonl_chunk *c, char *err, size_t errlen) {
  if (c->rc == PRSTM_ENOMEM && strncmp(c->msg, "cannot read", 11) == 0)
    loaders_errf(err, errlen, "%s: %s", path, c->msg);
  else if (c->col)
    loaders_errf(err, errlen, "%s:%lu:%lu: %s", path, lineno, c->col, c->msg);
  else
    loaders_errf(err, errlen, "%s:%lu: %s", path, lineno, c->msg);
}

/* A file that cannot be mapped (a pipe, a terminal): read line by line on
 * one thread. */
static int jsonl_read_stream(FILE *f, const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch,
                             int use_fast, char *err, size_t errlen) {
  char *line = NULL;
  size_t cap = 0;
  jsonl_chunk c;
  memset(&c, 0, sizeof c);
  int rc = 0;
  loaders_jsonl_fast *fast = use_fast ? loaders_jsonl_fast_create() : NULL;
  for (;;) {
    errno = 0;
    ssize_t got = getline(&line, &cap, f);
    if (got < 0) {
      /* getline returns -1 both at the end of the file and on an error;
       * ferror tells them apart. */
      if (ferror(f)) {
        int e = errno != 0 ? errno : EIO;
        loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
        rc = e == ENOMEM ? PRSTM_ENOMEM : PRSTM_EIO;
      }
      break;
    }
    c.lines++;
    rc = c.rc =
        loaders_jsonl_line(line, (size_t)got, c.lines == 1, fast, wl, nwords, batch, &c.col, c.msg, sizeof c.msg);
    if (rc != 0) {
      jsonl_report(path, c.lines, &c, err, errlen);
      break;
    }
  }
  loaders_jsonl_fast_destroy(fast);
  free(line);
  return rc;
}

/* The chunks' start offsets: `threads` cuts of about equal size, each moved
 * to just after a line end, so every chunk holds whole lines. Returns how
 * many chunks there are (cuts that meet fold into one). */
static unsigned jsonl_cut(const char *text, size_t len, unsigned threads, size_t *start) {
  unsigned k = 0;
  start[k++] = 0;
  for (unsigned t = 1; t < threads; t++) {
    size_t at = len / threads * t + len % threads * t / threads;
    if (at <= start[k - 1]) continue;
    const char *nl = memchr(text + at - 1, '\n', len - (at - 1));
    if (nl == NULL) break;
    at = (size_t)(nl - text) + 1;
    if (at >= len) break;
    if (at > start[k - 1]) start[k++] = at;
  }
  start[k] = len;
  return k;
}

int loaders_load_jsonl_threads(const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch,
                               unsigned threads, int fast, char *err, size_t errlen) {
  if (path == NULL || wl == NULL || batch == NULL) {
    loaders_errf(err, errlen, "prstm_load_jsonl: invalid argument");
    return PRSTM_EINVAL;
  }
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    return PRSTM_EIO;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
    int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    fclose(f);
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    return PRSTM_EIO;
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    int rc = jsonl_read_stream(f, path, wl, nwords, batch, fast, err, errlen);
    fclose(f);
    return rc;
  }
  const size_t len = (size_t)st.st_size;
  char *text = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fileno(f), 0);
  if (text == MAP_FAILED) {
    int rc = jsonl_read_stream(f, path, wl, nwords, batch, fast, err, errlen);
    fclose(f);
    return rc;
  }
  fclose(f);
  madvise(text, len, MADV_SEQUENTIAL);

  if (threads == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t by_size = len / JSONL_MIN_CHUNK_BYTES;
    threads = cores > 0 ? (unsigned)cores : 1;
    if (by_size < threads) threads = by_size > 0 ? (unsigned)by_size : 1;
  }
  if (threads > JSONL_MAX_THREADS) threads = JSONL_MAX_THREADS;
  size_t start[JSONL_MAX_THREADS + 1];
  const unsigned nchunks = jsonl_cut(text, len, threads, start);
  jsonl_chunk *chunks = calloc(nchunks, sizeof *chunks);
  pthread_t *tids = calloc(nchunks, sizeof *tids);
  int rc = chunks && tids ? 0 : PRSTM_ENOMEM;
  unsigned made = 0;
  for (unsigned k = 0; k < nchunks && rc == 0; k++) {
    jsonl_chunk *c = &chunks[k];
    c->text = text + start[k];
    c->len = start[k + 1] - start[k];
    c->first = k == 0;
    c->fast = fast;
    c->wl = wl;
    c->nwords = nwords;
    rc = prstm_batch_create(&c->rows, wl);
  }
  ENGINE_RANGE_PUSH("parse");
  if (rc == 0) {
    /* Chunk 0 runs on this thread; a chunk whose thread cannot start runs
     * here too, after the others have been started. */
    int *started = calloc(nchunks, sizeof *started);
    for (unsigned k = 1; k < nchunks && started; k++)
      started[k] = pthread_create(&tids[k], NULL, jsonl_parse_chunk, &chunks[k]) == 0;
    for (unsigned k = 0; k < nchunks; k++)
      if (!started || !started[k]) jsonl_parse_chunk(&chunks[k]);
    for (unsigned k = 1; k < nchunks && started; k++)
      if (started[k]) pthread_join(tids[k], NULL);
    free(started);
    made = nchunks;
  } else {
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(ENOMEM));
  }
  ENGINE_RANGE_POP();
  /* The first error in file order is the one reported, at its line in the
   * file: the lines of every chunk before it, plus its own. */
  unsigned long before = 0;
  for (unsigned k = 0; k < made && rc == 0; k++) {
    if (chunks[k].rc != 0) {
      rc = chunks[k].rc;
      jsonl_report(path, before + chunks[k].lines, &chunks[k], err, errlen);
      break;
    }
    before += chunks[k].lines;
  }
  ENGINE_RANGE_PUSH("join");
  uint64_t total = 0;
  for (unsigned k = 0; k < made && rc == 0; k++) total += prstm_batch_size(chunks[k].rows);
  if (rc == 0 && total) prstm_batch_reserve(batch, prstm_batch_size(batch) + total, 0);
  for (unsigned k = 0; k < made && rc == 0; k++) {
    rc = prstm_batch_append_rows(batch, chunks[k].rows);
    if (rc) loaders_errf(err, errlen, "%s: %s", path, prstm_batch_error(batch));
  }
  for (unsigned k = 0; chunks && k < nchunks; k++) prstm_batch_destroy(chunks[k].rows);
  ENGINE_RANGE_POP();
  free(chunks);
  free(tids);
  munmap(text, len);
  return rc;
}

int prstm_load_jsonl(const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch, char *err,
                     size_t errlen) {
  return loaders_load_jsonl_threads(path, wl, nwords, batch, 0, 1, err, errlen);
}
