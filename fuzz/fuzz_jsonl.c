/* fuzz_jsonl.c: libFuzzer harness for prstm_load_jsonl: the input is a JSON Lines batch for the bank workload. */
#include "fuzz_common.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write_input("prstm-fuzz-jsonl", data, size);
  const prstm_workload *bank = prstm_workload_find("bank");
  if (bank == NULL) abort();
  prstm_batch *b = NULL;
  if (prstm_batch_create(&b, bank) != 0) abort();
  char err[2048];
  int rc = prstm_load_jsonl(path, bank, FUZZ_NWORDS, b, err, sizeof err);
  uint64_t rows = prstm_batch_size(b), records = 0;
  /* Every line before the failing one was appended, so the failing line is
   * the (rows + 1)-th record. */
  unsigned long expect_line = nonblank_line(data, size, rows, &records);
  if (rc == 0) {
    FUZZ_CHECK(rows == records, "%llu rows from %llu records", (unsigned long long)rows, (unsigned long long)records);
  } else {
    fuzz_check_error(rc, err, path);
    FUZZ_CHECK(prstm_is_input_error(rc) || rc == PRSTM_ENOMEM, "error %s: %s", prstm_err_name(rc), err);
    FUZZ_CHECK(expect_line != 0, "error after all %llu records: %s", (unsigned long long)rows, err);
    /* "FILE:LINE: problem" or "FILE:LINE:COL: malformed JSON". */
    const char *p = err + strlen(path) + 1;
    char *endp;
    unsigned long line = strtoul(p, &endp, 10);
    FUZZ_CHECK(endp != p && *endp == ':', "no line number: %s", err);
    /* PRSTM_FUZZ_NO_LINE_CHECK=1 turns this check off, to look for other
     * bugs while a wrong line number is known and not yet fixed. */
    static int line_check = -1;
    if (line_check < 0) line_check = getenv("PRSTM_FUZZ_NO_LINE_CHECK") == NULL;
    FUZZ_CHECK(!line_check || line == expect_line, "reported line %lu, failing record is on line %lu: %s", line,
               expect_line, err);
  }
  fuzz_check_rows(b, bank, 0, FUZZ_NWORDS);
  prstm_batch_destroy(b);
  return 0;
}
