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
#include "parallel.h"
#include "ranges.h"
#include "txtable.h"

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
  prstm_batch *rows;   /* its records, in order: a batch of its own, or a window on the batch's rows */
  uint64_t counted;    /* its lines, counted before the parse (0: not yet) */
  unsigned long lines; /* lines read (all of them, or up to the error's) */
  int rc;              /* its first error, or 0 */
  unsigned long col;   /* the error's column when the line is not JSON */
  char msg[LOADERS_KEYPATH_MAX + 320];
} jsonl_chunk;

/* The lines of text, as the parse reads them: its newlines, plus one for
 * a last line without one (an upper bound on its records). Counting one
 * too many would leave a gap after each chunk's rows, which closing it
 * would move most of the table to fill. */
static uint64_t jsonl_count_lines(const char *text, size_t len) {
  uint64_t lines = len > 0 && text[len - 1] != '\n';
  for (const char *p = text, *end = text + len; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) lines++;
  return lines;
}

/* Parses the chunk's lines into its batch and stops at its first error,
 * with `lines` then the error's line within the chunk. */
static void *jsonl_parse_chunk(void *arg) {
  jsonl_chunk *c = arg;
  /* Room for every line at once: grown by doubling instead, sixteen threads'
   * batches each mapped and copied their columns a dozen times, and every
   * large mapping stops the other threads' page faults meanwhile. */
  if (!c->counted) {
    c->counted = jsonl_count_lines(c->text, c->len);
    prstm_batch_reserve(c->rows, c->counted, 0);
  }
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

/* Parses every chunk, each on a thread of its own (chunk 0 on this one; a
 * chunk whose thread cannot start runs here too, after the others have
 * been started), into its window (windowed) or into a batch of its own.
 * Returns PRSTM_ENOMEM when the chunks' batches cannot be made, else 0;
 * each chunk keeps its own first error. */
static int jsonl_parse_chunks(jsonl_chunk *chunks, unsigned n, int windowed, const prstm_workload *wl) {
  for (unsigned k = 0; k < n && !windowed; k++)
    if (prstm_batch_create(&chunks[k].rows, wl) != 0) return PRSTM_ENOMEM;
  pthread_t *tids = calloc(n, sizeof *tids);
  int *started = calloc(n, sizeof *started);
  for (unsigned k = 1; k < n && tids && started; k++)
    started[k] = pthread_create(&tids[k], NULL, jsonl_parse_chunk, &chunks[k]) == 0;
  for (unsigned k = 0; k < n; k++)
    if (!started || !started[k]) jsonl_parse_chunk(&chunks[k]);
  for (unsigned k = 1; k < n && started; k++)
    if (started[k]) pthread_join(tids[k], NULL);
  free(started);
  free(tids);
  return 0;
}

static void jsonl_count_part(void *arg, unsigned part, uint64_t from, uint64_t to) {
  (void)part;
  jsonl_chunk *chunks = arg;
  for (uint64_t k = from; k < to; k++) chunks[k].counted = jsonl_count_lines(chunks[k].text, chunks[k].len);
}

/* Lets the chunks parse straight into the batch: every chunk's lines are
 * counted (on every core), the batch is reserved for them after its base
 * rows, as wide as the file's first record (its columns 64-bit where a
 * value of that record needs it), and each chunk gets a window on
 * its lines' rows (txtable.h). Returns 0 when the windows are open, and
 * nonzero (nothing opened) when the chunks should parse into batches of
 * their own: a first line that is not a record, or no room. */
static int jsonl_open_windows(jsonl_chunk *chunks, unsigned n, prstm_batch *batch, uint64_t base) {
  const jsonl_chunk *c0 = &chunks[0];
  const char *nl = memchr(c0->text, '\n', c0->len);
  const size_t first_len = nl ? (size_t)(nl - c0->text) + 1 : c0->len;
  char *line = malloc(first_len + 1);
  prstm_batch *probe = NULL;
  if (line == NULL || prstm_batch_create(&probe, c0->wl) != 0) {
    free(line);
    return 1;
  }
  memcpy(line, c0->text, first_len);
  line[first_len] = '\0';
  unsigned long col = 0;
  char msg[LOADERS_KEYPATH_MAX + 320];
  int rc = loaders_jsonl_line(line, first_len, 1, NULL, c0->wl, c0->nwords, probe, &col, msg, sizeof msg);
  const unsigned ncols = prstm_batch_columns(probe);
  const int wide = probe->wide;
  if (rc == 0 && prstm_batch_size(probe) != 1) rc = 1;
  prstm_batch_destroy(probe);
  free(line);
  if (rc) return 1;
  engine_parallel_for(n, n, jsonl_count_part, chunks);
  uint64_t total = 0;
  for (unsigned k = 0; k < n; k++) total += chunks[k].counted;
  if (prstm_batch_reserve(batch, base + total, ncols) != 0 || (wide && txtable_widen(batch) != 0)) return 1;
  uint64_t at = base;
  for (unsigned k = 0; k < n; k++) {
    if (txtable_window_open(batch, at, chunks[k].counted, &chunks[k].rows) != 0) {
      for (unsigned j = 0; j < k; j++) {
        prstm_batch_destroy(chunks[j].rows);
        chunks[j].rows = NULL;
      }
      return 1;
    }
    at += chunks[k].counted;
  }
  return 0;
}

/* Whether a window refused a record (too wide for the batch's columns, a
 * value wider than 32 bits in narrow columns, or past its rows): its chunk's error is then no error of the file. */
static int jsonl_window_refused(const jsonl_chunk *chunks, unsigned n) {
  for (unsigned k = 0; k < n; k++)
    if (chunks[k].rc == PRSTM_ENOMEM) return 1;
  return 0;
}

/* Ends the windows. With keep, their rows become the batch's, each chunk's
 * moved down to close the gap the one before it left (blank lines make no
 * row); without, they are dropped and the batch keeps its rows. */
static void jsonl_close_windows(jsonl_chunk *chunks, unsigned n, prstm_batch *batch, int keep) {
  uint64_t at = prstm_batch_size(batch), to = at;
  for (unsigned k = 0; k < n; k++) {
    if (!keep) {
      prstm_batch_destroy(chunks[k].rows);
      chunks[k].rows = NULL;
      continue;
    }
    const uint64_t rows = txtable_window_close(batch, chunks[k].rows);
    chunks[k].rows = NULL;
    txtable_move_rows(batch, at, to, rows);
    at += chunks[k].counted;
    to += rows;
  }
  if (keep) txtable_set_rows(batch, to);
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
  if (chunks == NULL) {
    munmap(text, len);
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(ENOMEM));
    return PRSTM_ENOMEM;
  }
  for (unsigned k = 0; k < nchunks; k++) {
    jsonl_chunk *c = &chunks[k];
    c->text = text + start[k];
    c->len = start[k + 1] - start[k];
    c->first = k == 0;
    c->fast = fast;
    c->wl = wl;
    c->nwords = nwords;
  }
  const uint64_t base = prstm_batch_size(batch);
  ENGINE_RANGE_PUSH("parse");
  int windowed = jsonl_open_windows(chunks, nchunks, batch, base) == 0;
  int rc = jsonl_parse_chunks(chunks, nchunks, windowed, wl);
  if (rc == 0 && windowed && jsonl_window_refused(chunks, nchunks)) {
    /* A record wider than the first (or a window too short): the rows
     * are parsed again, each chunk into a batch of its own. */
    jsonl_close_windows(chunks, nchunks, batch, 0);
    windowed = 0;
    for (unsigned k = 0; k < nchunks; k++) {
      jsonl_chunk *c = &chunks[k];
      c->rc = 0;
      c->lines = 0;
      c->col = 0;
      c->msg[0] = '\0';
      c->counted = 0;
    }
    rc = jsonl_parse_chunks(chunks, nchunks, 0, wl);
  }
  ENGINE_RANGE_POP();
  if (rc) loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(ENOMEM));
  /* The first error in file order is the one reported, at its line in the
   * file: the lines of every chunk before it, plus its own. */
  unsigned long before = 0;
  for (unsigned k = 0; k < nchunks && rc == 0; k++) {
    if (chunks[k].rc != 0) {
      rc = chunks[k].rc;
      jsonl_report(path, before + chunks[k].lines, &chunks[k], err, errlen);
      break;
    }
    before += chunks[k].lines;
  }
  ENGINE_RANGE_PUSH("join");
  if (windowed) {
    /* The rows are in place; only the gaps that blank lines left close. */
    jsonl_close_windows(chunks, nchunks, batch, rc == 0);
  } else {
    uint64_t total = 0;
    for (unsigned k = 0; k < nchunks && rc == 0; k++) total += prstm_batch_size(chunks[k].rows);
    if (rc == 0 && total) prstm_batch_reserve(batch, base + total, 0);
    for (unsigned k = 0; k < nchunks && rc == 0; k++) {
      rc = prstm_batch_append_rows(batch, chunks[k].rows);
      if (rc) loaders_errf(err, errlen, "%s: %s", path, prstm_batch_error(batch));
    }
    for (unsigned k = 0; k < nchunks; k++) prstm_batch_destroy(chunks[k].rows);
  }
  ENGINE_RANGE_POP();
  free(chunks);
  munmap(text, len);
  return rc;
}

int prstm_load_jsonl(const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch, char *err,
                     size_t errlen) {
  return loaders_load_jsonl_threads(path, wl, nwords, batch, 0, 1, err, errlen);
}
