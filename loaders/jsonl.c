/* jsonl.c: JSON transaction records (one object per line, or inline in a config) turned into batch rows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loaders_internal.h"

void loaders_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  /* Messages quote keys and names from the input; a control character among
   * them would break the one-line message (or a terminal), so each is shown
   * as '?'. */
  for (char *p = err; *p != '\0'; p++)
    if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) *p = '?';
}

/* Offset of the first \u0000 escape inside a JSON string of text, or len.
 * cJSON decodes it into a NUL that silently cuts the string short ("dep\u0000x"
 * would read as "dep"), so such a string is refused instead. */
static size_t find_nul_escape(const char *text, size_t len) {
  int in_string = 0;
  for (size_t i = 0; i < len; i++) {
    if (!in_string) {
      if (text[i] == '"') in_string = 1;
      continue;
    }
    if (text[i] == '"') {
      in_string = 0;
    } else if (text[i] == '\\' && i + 1 < len) {
      if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0) return i;
      i++; /* the escaped character, which may be a quote */
    }
  }
  return len;
}

/* A UTF-8 byte order mark is invisible in editors, so a file that starts with
 * one must not be reported as malformed at a column the user cannot see. */
static size_t bom_length(const char *text, size_t len) {
  if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
    return 3;
  return 0;
}

int loaders_read_text_file(const char *path, char **text, size_t *len, char *err, size_t errlen) {
  *text = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    return PRSTM_EIO;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  if (buf == NULL) {
    fclose(f);
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(ENOMEM));
    return PRSTM_ENOMEM;
  }
  for (;;) {
    /* Keep one byte free for the terminating NUL the parser relies on. */
    if (cap - n < 2) {
      char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
      if (bigger == NULL) {
        free(buf);
        fclose(f);
        loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(ENOMEM));
        return PRSTM_ENOMEM;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  /* fread reports errors (EISDIR for a folder, EIO) only through ferror and
   * errno, so both are checked before the file is closed. */
  if (ferror(f)) {
    int e = errno != 0 ? errno : EIO;
    free(buf);
    fclose(f);
    loaders_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    return PRSTM_EIO;
  }
  fclose(f);
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}

size_t loaders_json_bom(const char *text, size_t len) { return bom_length(text, len); }

cJSON *loaders_json_parse(const char *text, size_t len, size_t *fail_offset) {
  /* cJSON stops at a NUL byte and would accept whatever came before it, so an
   * embedded NUL is reported as the place where the JSON goes wrong. */
  const char *nul = memchr(text, '\0', len);
  if (nul != NULL) {
    *fail_offset = (size_t)(nul - text);
    return NULL;
  }
  size_t nul_escape = find_nul_escape(text, len);
  if (nul_escape < len) {
    *fail_offset = nul_escape;
    return NULL;
  }
  const char *end = NULL;
  /* The length passed includes the terminating NUL: with
   * require_null_terminated cJSON checks that the NUL follows the value, which
   * rejects trailing garbage such as a second object. */
  cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
  if (root == NULL) {
    size_t off = len;
    if (end != NULL && end >= text && end <= text + len) off = (size_t)(end - text);
    *fail_offset = off;
  }
  return root;
}

void loaders_json_position(const char *text, size_t offset, unsigned long *line, unsigned long *col) {
  unsigned long l = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; i++) {
    if (text[i] == '\n') {
      l++;
      line_start = i + 1;
    }
  }
  *line = l;
  *col = (unsigned long)(offset - line_start) + 1;
}

int loaders_json_uint(const cJSON *item, uint64_t *out) {
  if (!cJSON_IsNumber(item)) return -1;
  double v = item->valuedouble;
  /* The comparisons also reject NaN; the cast round trip rejects fractions
   * without needing libm. */
  if (!(v >= 0.0 && v <= LOADERS_JSON_MAX_INT)) return -1;
  uint64_t u = (uint64_t)v;
  if ((double)u != v) return -1;
  *out = u;
  return 0;
}

const char *loaders_uint_expected(const cJSON *item) {
  if (cJSON_IsNumber(item) && item->valuedouble > LOADERS_JSON_MAX_INT && item->valuedouble < 1.8446744073709552e19 &&
      (double)(uint64_t)item->valuedouble == item->valuedouble)
    return "a non-negative integer of at most 9007199254740991 (JSON numbers beyond 2^53 - 1 lose digits)";
  return "a non-negative integer";
}

void loaders_type_names(const prstm_workload *wl, char *out, size_t outlen) {
  size_t at = 0;
  if (outlen) out[0] = 0;
  for (unsigned t = 0; t < wl->ntypes && at < outlen; t++)
    at += (size_t)snprintf(out + at, outlen - at, "%s%s", t ? ", " : "", wl->types[t].name);
}

const char *loaders_not_json_hint(const char *text, size_t len, int jsonl) {
  size_t i = 0;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
  /* Outside a string, JSON has no '/': where the parser stops at one, a
   * comment began there (or a character before). */
  if (i < len && text[i] == '/') return " (a comment: JSON has none; remove it)";
  if (jsonl && i < len && text[i] == '[')
    return " (a JSON array: a batch file holds one transaction object per line, JSON Lines, not an array)";
  return "";
}

int loaders_json_check_keys(const cJSON *obj, const char *const *allowed, const char **bad, int *duplicate) {
  for (const cJSON *c = obj->child; c != NULL; c = c->next) {
    const char *key = c->string != NULL ? c->string : "";
    int known = 0;
    for (const char *const *a = allowed; *a != NULL; a++) {
      if (strcmp(*a, key) == 0) {
        known = 1;
        break;
      }
    }
    if (!known) {
      *bad = key;
      *duplicate = 0;
      return -1;
    }
    /* cJSON keeps both copies of a repeated key and lookups see only the
     * first, so a repeat would silently drop the user's second value. */
    for (const cJSON *p = obj->child; p != c; p = p->next) {
      if (p->string != NULL && strcmp(p->string, key) == 0) {
        *bad = key;
        *duplicate = 1;
        return -1;
      }
    }
  }
  return 0;
}

/* Joins a key path prefix and a key: "" + "amount" is "amount",
 * "batch.transactions[3]" + "amount" is "batch.transactions[3].amount". */
static void join_path(char *out, size_t outlen, const char *prefix, const char *key) {
  /* Called for every key of every record, so no printf: a JSON Lines file of
   * 20M records spent a few percent of its load formatting these paths. */
  size_t at = 0;
  for (const char *p = prefix; *p && at + 1 < outlen; p++) out[at++] = *p;
  if (prefix[0] && at + 1 < outlen) out[at++] = '.';
  for (const char *k = key; *k && at + 1 < outlen; k++) out[at++] = *k;
  if (outlen) out[at] = '\0';
}

/* Reads one address argument; where names the value in messages. */
static int tx_address(const cJSON *item, uint64_t nwords, const char *where, prstm_word *out, char *msg,
                      size_t msglen) {
  uint64_t v;
  if (loaders_json_uint(item, &v) != 0) {
    loaders_errf(msg, msglen, "%s: expected %s", where, loaders_uint_expected(item));
    return PRSTM_ECONFIG;
  }
  if (v >= nwords) {
    loaders_errf(msg, msglen, "%s %" PRIu64 " out of range (state has %" PRIu64 " words)", where, v, nwords);
    return PRSTM_ECONFIG;
  }
  *out = v;
  return 0;
}

int loaders_tx_from_json(const cJSON *obj, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch,
                         const char *prefix, char *msg, size_t msglen) {
  char where[LOADERS_KEYPATH_MAX];
  if (!cJSON_IsObject(obj)) {
    if (prefix[0] == '\0')
      loaders_errf(msg, msglen, "expected a JSON object%s",
                   cJSON_IsArray(obj) ? " (a JSON array: a batch file holds one transaction object per line, JSON "
                                        "Lines, not an array)"
                                      : "");
    else
      loaders_errf(msg, msglen, "%s: expected a JSON object", prefix);
    return PRSTM_ECONFIG;
  }

  /* The type comes first: it decides which other keys are allowed. */
  join_path(where, sizeof where, prefix, "type");
  const cJSON *type_item = cJSON_GetObjectItemCaseSensitive(obj, "type");
  if (type_item == NULL) {
    loaders_errf(msg, msglen, "%s: missing", where);
    return PRSTM_ECONFIG;
  }
  if (!cJSON_IsString(type_item) || type_item->valuestring == NULL) {
    loaders_errf(msg, msglen, "%s: expected a string", where);
    return PRSTM_ECONFIG;
  }
  int type = prstm_type_find(wl, type_item->valuestring);
  if (type < 0 || (unsigned)type >= wl->ntypes) {
    char names[512];
    loaders_type_names(wl, names, sizeof names);
    loaders_errf(msg, msglen, "%s: unknown transaction type '%s' (workload %s has: %s)", where, type_item->valuestring,
                 wl->name, names);
    return PRSTM_EUNKNOWN;
  }
  const prstm_type_desc *desc = &wl->types[type];
  /* A malformed type description is a bug of the workload, not of the input,
   * so it is reported as an invalid argument rather than a bad batch. */
  if (desc->nargs > PRSTM_MAX_ARGS) {
    loaders_errf(msg, msglen, "type '%s' declares %u arguments (at most %d)", desc->name, desc->nargs, PRSTM_MAX_ARGS);
    return PRSTM_EINVAL;
  }

  const char *allowed[PRSTM_MAX_ARGS + 2];
  allowed[0] = "type";
  for (unsigned a = 0; a < desc->nargs; a++) allowed[a + 1] = desc->args[a].name;
  allowed[desc->nargs + 1] = NULL;
  const char *bad = NULL;
  int dup = 0;
  if (loaders_json_check_keys(obj, allowed, &bad, &dup) != 0) {
    join_path(where, sizeof where, prefix, bad);
    loaders_errf(msg, msglen, "%s key '%s'", dup ? "duplicate" : "unknown", where);
    return PRSTM_ECONFIG;
  }

  prstm_word args[PRSTM_MAX_COLUMNS];
  unsigned nargs = 0;
  for (unsigned a = 0; a < desc->nargs; a++) {
    const prstm_arg_desc *ad = &desc->args[a];
    join_path(where, sizeof where, prefix, ad->name);
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, ad->name);
    if (item == NULL) {
      loaders_errf(msg, msglen, "%s: missing", where);
      return PRSTM_ECONFIG;
    }
    int rc;
    uint64_t v;
    switch (ad->kind) {
      case PRSTM_ARG_ADDRESS:
        rc = tx_address(item, nwords, where, &args[nargs], msg, msglen);
        if (rc != 0) return rc;
        nargs++;
        break;
      case PRSTM_ARG_UINT:
        if (loaders_json_uint(item, &v) != 0) {
          loaders_errf(msg, msglen, "%s: expected %s", where, loaders_uint_expected(item));
          return PRSTM_ECONFIG;
        }
        args[nargs++] = v;
        break;
      case PRSTM_ARG_ADDRESS_LIST: {
        if (a + 1 != desc->nargs) {
          loaders_errf(msg, msglen, "type '%s': address list '%s' is not the last argument", desc->name, ad->name);
          return PRSTM_EINVAL;
        }
        int count = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : -1;
        if (count <= 0) {
          loaders_errf(msg, msglen, "%s: expected a non-empty array of addresses", where);
          return PRSTM_ECONFIG;
        }
        if (count > LOADERS_MAX_LIST) {
          loaders_errf(msg, msglen, "%s: %d addresses (at most %d)", where, count, LOADERS_MAX_LIST);
          return PRSTM_ECONFIG;
        }
        args[nargs++] = (prstm_word)count;
        int i = 0;
        for (const cJSON *e = item->child; e != NULL; e = e->next, i++) {
          char entry[LOADERS_KEYPATH_MAX + 16];
          snprintf(entry, sizeof entry, "%s[%d]", where, i);
          rc = tx_address(e, nwords, entry, &args[nargs], msg, msglen);
          if (rc != 0) return rc;
          nargs++;
        }
        break;
      }
      default:
        loaders_errf(msg, msglen, "type '%s': argument '%s' has unknown kind %d", desc->name, ad->name, (int)ad->kind);
        return PRSTM_EINVAL;
    }
  }

  int rc = prstm_batch_append(batch, (unsigned)type, args, nargs);
  if (rc != 0) {
    if (prefix[0] == '\0')
      loaders_errf(msg, msglen, "cannot append transaction: %s", prstm_strerror(rc));
    else
      loaders_errf(msg, msglen, "%s: cannot append transaction: %s", prefix, prstm_strerror(rc));
  }
  return rc;
}

#ifndef PRSTM_HAVE_SIMDJSON
/* Without simdjson every record takes the strict path. */
loaders_jsonl_fast *loaders_jsonl_fast_create(void) { return NULL; }
void loaders_jsonl_fast_destroy(loaders_jsonl_fast *fast) { (void)fast; }
int loaders_jsonl_fast_record(loaders_jsonl_fast *fast, const char *text, size_t n, const prstm_workload *wl,
                              uint64_t nwords, unsigned *type, prstm_word *args, unsigned *nargs) {
  (void)fast, (void)text, (void)n, (void)wl, (void)nwords, (void)type, (void)args, (void)nargs;
  return 0;
}
#endif

/* JSON whitespace only: a line of spaces, tabs and line ends holds no record. */
static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

int loaders_jsonl_line(char *line, size_t n, int first_line, loaders_jsonl_fast *fast, const prstm_workload *wl,
                       uint64_t nwords, prstm_batch *batch, unsigned long *col, char *msg, size_t msglen) {
  *col = 0;
  /* Without its line end, a record that stops early is reported on its own
   * line, not at column 1 of the next one. */
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  /* Only the first line may start with a byte order mark. */
  size_t skip = first_line ? bom_length(line, n) : 0;
  if (is_blank(line + skip, n - skip)) return 0;
  if (fast != NULL) {
    unsigned type, nargs;
    prstm_word args[PRSTM_MAX_COLUMNS];
    if (loaders_jsonl_fast_record(fast, line + skip, n - skip, wl, nwords, &type, args, &nargs)) {
      int rc = prstm_batch_append(batch, type, args, nargs);
      if (rc != 0) loaders_errf(msg, msglen, "cannot append transaction: %s", prstm_strerror(rc));
      return rc;
    }
  }
  size_t off = 0;
  cJSON *obj = loaders_json_parse(line + skip, n - skip, &off);
  if (obj == NULL) {
    unsigned long l, c;
    loaders_json_position(line + skip, off, &l, &c);
    *col = c;
    loaders_errf(msg, msglen, "malformed JSON%s", loaders_not_json_hint(line + skip, n - skip, 1));
    return PRSTM_EPARSE;
  }
  int rc = loaders_tx_from_json(obj, wl, nwords, batch, "", msg, msglen);
  cJSON_Delete(obj);
  return rc;
}
