/* fuzz_jsonl.c: libFuzzer harness for prstm_load_jsonl: the input is a JSON Lines batch for the bank workload. */
#include "fuzz_common.h"
#include "loaders_internal.h"

#define FUZZ_NWORDS 64u

/* A line is blank when it holds only JSON whitespace; the first line may
 * start with a UTF-8 byte order mark (prstm_load_jsonl skips both). */
static int line_is_blank(const uint8_t *s, size_t n, unsigned long lineno) {
  size_t i = 0;
  if (lineno == 1 && n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) i = 3;
  for (; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

/* Line number of the k-th (0-based) non-blank line, or 0 when there is none;
 * *records gets the number of non-blank lines. */
static unsigned long nonblank_line(const uint8_t *data, size_t size, uint64_t k, uint64_t *records) {
  unsigned long lineno = 0, found = 0;
  uint64_t seen = 0;
  size_t start = 0;
  while (start < size) {
    const uint8_t *nl = memchr(data + start, '\n', size - start);
    size_t end = nl != NULL ? (size_t)(nl - data) + 1 : size;
    lineno++;
    if (!line_is_blank(data + start, end - start, lineno)) {
      if (seen == k) found = lineno;
      seen++;
    }
    start = end;
  }
  *records = seen;
  return found;
}

/* The offset just past line `lines` (1-based) of data, or size. */
static size_t after_line(const uint8_t *data, size_t size, unsigned long lines) {
  size_t at = 0;
  for (unsigned long l = 0; l < lines && at < size; l++) {
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    at = nl != NULL ? (size_t)(nl - data) + 1 : size;
  }
  return at;
}

/* Loads data into a new batch; returns the code, with the rows in *rows. */
static int load(const uint8_t *data, size_t size, const prstm_workload *bank, uint64_t *rows, char *err, size_t errlen,
                const char **path) {
  *path = fuzz_write_input("prstm-fuzz-jsonl", data, size);
  prstm_batch *b = NULL;
  if (prstm_batch_create(&b, bank) != 0) abort();
  int rc = prstm_load_jsonl(*path, bank, FUZZ_NWORDS, b, err, errlen);
  *rows = prstm_batch_size(b);
  if (rc == 0) fuzz_check_rows(b, bank, 0, FUZZ_NWORDS);
  prstm_batch_destroy(b);
  return rc;
}

/* The same file read by the strict path alone gives the same code, message
 * and rows as the load above, which takes the fast path where it is built. */
static void check_paths_agree(const uint8_t *data, size_t size, const prstm_workload *bank, int rc, const char *err) {
  const char *path = fuzz_write_input("prstm-fuzz-jsonl", data, size);
  prstm_batch *fast = NULL, *strict = NULL;
  if (prstm_batch_create(&fast, bank) != 0 || prstm_batch_create(&strict, bank) != 0) abort();
  char fast_err[2048] = "", strict_err[2048] = "";
  int fast_rc = loaders_load_jsonl_threads(path, bank, FUZZ_NWORDS, fast, 1, 1, fast_err, sizeof fast_err);
  int strict_rc = loaders_load_jsonl_threads(path, bank, FUZZ_NWORDS, strict, 1, 0, strict_err, sizeof strict_err);
  FUZZ_CHECK(fast_rc == rc && strcmp(fast_err, rc ? err : "") == 0, "one thread gives %s '%s', every core %s '%s'",
             prstm_err_name(fast_rc), fast_err, prstm_err_name(rc), err);
  FUZZ_CHECK(fast_rc == strict_rc && strcmp(fast_err, strict_err) == 0,
             "the fast path gives %s '%s', the strict path %s '%s'", prstm_err_name(fast_rc), fast_err,
             prstm_err_name(strict_rc), strict_err);
  FUZZ_CHECK(prstm_batch_size(fast) == prstm_batch_size(strict), "the fast path gives %llu rows, the strict path %llu",
             (unsigned long long)prstm_batch_size(fast), (unsigned long long)prstm_batch_size(strict));
  for (uint64_t r = 0; r < prstm_batch_size(fast); r++) {
    FUZZ_CHECK(prstm_batch_type(fast, r) == prstm_batch_type(strict, r), "row %llu: the paths give other types",
               (unsigned long long)r);
    for (unsigned c = 0; c < 3 + LOADERS_MAX_LIST && c < 16; c++)
      FUZZ_CHECK(prstm_batch_arg(fast, r, c) == prstm_batch_arg(strict, r, c),
                 "row %llu, column %u: the fast path gives %llu, the strict path %llu", (unsigned long long)r, c,
                 (unsigned long long)prstm_batch_arg(fast, r, c), (unsigned long long)prstm_batch_arg(strict, r, c));
  }
  prstm_batch_destroy(fast);
  prstm_batch_destroy(strict);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const prstm_workload *bank = prstm_workload_find("bank");
  if (bank == NULL) abort();
  char err[2048];
  const char *path = NULL;
  uint64_t rows = 0, records = 0;
  int rc = load(data, size, bank, &rows, err, sizeof err, &path);
  check_paths_agree(data, size, bank, rc, err);
  (void)nonblank_line(data, size, 0, &records);
  if (rc == 0) {
    FUZZ_CHECK(rows == records, "%llu rows from %llu records", (unsigned long long)rows, (unsigned long long)records);
    return 0;
  }
  fuzz_check_error(rc, err, path);
  FUZZ_CHECK(prstm_is_input_error(rc) || rc == PRSTM_ENOMEM, "error %s: %s", prstm_err_name(rc), err);
  /* A failed load appends nothing. */
  FUZZ_CHECK(rows == 0, "%llu rows appended by a failed load: %s", (unsigned long long)rows, err);
  /* "FILE:LINE: problem" or "FILE:LINE:COL: malformed JSON". */
  const char *p = err + strlen(path) + 1;
  char *endp;
  unsigned long line = strtoul(p, &endp, 10);
  FUZZ_CHECK(endp != p && *endp == ':' && line >= 1, "no line number: %s", err);
  /* PRSTM_FUZZ_NO_LINE_CHECK=1 turns these checks off, to look for other
   * bugs while a wrong line number is known and not yet fixed. */
  static int line_check = -1;
  if (line_check < 0) line_check = getenv("PRSTM_FUZZ_NO_LINE_CHECK") == NULL;
  if (!line_check || rc == PRSTM_ENOMEM) return 0;
  /* The reported line is the first bad one in file order: the lines before
   * it load whole, and with it the load fails there again. */
  char again[2048];
  uint64_t before_rows = 0, before_records = 0, with_rows = 0;
  const size_t cut = after_line(data, size, line - 1);
  (void)nonblank_line(data, cut, 0, &before_records);
  int before = load(data, cut, bank, &before_rows, again, sizeof again, &path);
  FUZZ_CHECK(before == 0 && before_rows == before_records,
             "the %lu lines before the reported one do not load whole (%s): %s", line - 1, prstm_err_name(before), err);
  int with = load(data, after_line(data, size, line), bank, &with_rows, again, sizeof again, &path);
  FUZZ_CHECK(with == rc && strncmp(again + strlen(path), err + strlen(path), 32) == 0,
             "the first %lu lines fail otherwise: '%s' against '%s'", line, again, err);
  return 0;
}
