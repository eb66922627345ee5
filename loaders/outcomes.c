/* outcomes.c: every transaction's outcome written after a run: JSON Lines (a file ending in .jsonl) or a folder of .npy columns. */
#define _GNU_SOURCE /* mkdir */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loaders_internal.h"

#define OUTCOMES_PATH_MAX 1100

/* Decimal digits of v at out; returns how many. */
static size_t outcomes_put_u64(char *out, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) out[i] = digits[n - 1 - i];
  return n;
}

static size_t outcomes_put_str(char *out, const char *s) {
  size_t n = strlen(s);
  memcpy(out, s, n);
  return n;
}

/* Writes s as the body of a JSON string: reasons are the workload's own
 * text, so quotes, backslashes and control characters are escaped. */
static size_t outcomes_put_json_text(char *out, const char *s, size_t room) {
  size_t n = 0;
  for (; *s && n + 7 < room; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(out + n, room - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  return n;
}

static int outcomes_jsonl(const char *path, const prstm_batch *b, char *err, size_t errlen) {
  const prstm_workload *wl = prstm_batch_workload(b);
  char tmp[OUTCOMES_PATH_MAX + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    loaders_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return PRSTM_EIO;
  }
  /* Lines are formatted by hand into a large buffer: printf's formatting
   * would be most of the time of ten million lines. */
  enum { BUF = 1 << 20, LINE_MAX = 512 };
  char *buf = malloc(BUF);
  int ok = buf != NULL;
  size_t used = 0;
  const uint64_t n = prstm_batch_size(b);
  for (uint64_t i = 0; ok && i < n; i++) {
    prstm_status status = PRSTM_PENDING;
    unsigned reason = 0;
    prstm_word result = 0;
    prstm_batch_outcome(b, i, &status, &reason, &result);
    char *o = buf + used;
    size_t k = outcomes_put_str(o, "{\"index\":");
    k += outcomes_put_u64(o + k, i);
    k += outcomes_put_str(o + k, ",\"status\":\"");
    k += outcomes_put_str(o + k, prstm_status_name(status));
    k += outcomes_put_str(o + k, "\",\"reason\":\"");
    k += outcomes_put_json_text(o + k, prstm_reason_string(wl, prstm_batch_type(b, i), reason), LINE_MAX - k - 64);
    k += outcomes_put_str(o + k, "\",\"result\":");
    k += outcomes_put_u64(o + k, result);
    k += outcomes_put_str(o + k, "}\n");
    used += k;
    if (used + LINE_MAX > BUF) {
      ok = fwrite(buf, 1, used, f) == used;
      used = 0;
    }
  }
  if (ok && used) ok = fwrite(buf, 1, used, f) == used;
  free(buf);
  return loaders_commit_tmp(f, ok, tmp, path, err, errlen);
}

static int outcomes_dir(const char *dir, const prstm_batch *b, char *err, size_t errlen) {
  int made = loaders_make_folder(dir, err, errlen);
  if (made) return made;
  const uint64_t n = prstm_batch_size(b);
  char path[OUTCOMES_PATH_MAX];
  /* The manifest last, as for a binary batch. */
  snprintf(path, sizeof path, "%s/outcomes.json", dir);
  unlink(path);
  static const struct {
    const char *file;
    unsigned width;
    loaders_npy_source src;
  } cols[] = {{"status.npy", 1, LOADERS_NPY_STATUS},
              {"reason.npy", 1, LOADERS_NPY_REASON},
              {"result.npy", 8, LOADERS_NPY_RESULT}};
  for (unsigned c = 0; c < 3; c++) {
    snprintf(path, sizeof path, "%s/%s", dir, cols[c].file);
    int rc = loaders_npy_write(path, n, cols[c].width, b, cols[c].src, 0, err, errlen);
    if (rc) return rc;
  }
  char text[256];
  int len = snprintf(text, sizeof text,
                     "{\"format\": \"prstm-outcomes\", \"version\": 1, \"workload\": \"%s\", \"rows\": %" PRIu64
                     ", \"status\": [\"pending\", \"committed\", \"abandoned\", \"failed\"]}\n",
                     prstm_batch_workload(b)->name, n);
  snprintf(path, sizeof path, "%s/outcomes.json", dir);
  return prstm_write_file_atomic(path, text, (size_t)len, err, errlen);
}

int prstm_save_outcomes(const char *path, const prstm_batch *batch, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!path || !batch || !path[0]) {
    loaders_errf(err, errlen, "prstm_save_outcomes: invalid argument");
    return PRSTM_EINVAL;
  }
  if (strlen(path) + 32 > OUTCOMES_PATH_MAX) {
    loaders_errf(err, errlen, "%s: path too long", path);
    return PRSTM_EINVAL;
  }
  const size_t len = strlen(path);
  if (len > 6 && strcmp(path + len - 6, ".jsonl") == 0) return outcomes_jsonl(path, batch, err, errlen);
  return outcomes_dir(path, batch, err, errlen);
}
