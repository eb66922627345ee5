/* loaders_internal.h: helpers shared by the config and JSON Lines loaders, not part of the public API. */
#ifndef LOADERS_INTERNAL_H
#define LOADERS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "prstm.h"

/* The largest integer a double holds exactly; cJSON stores every number as a
 * double, so anything above it may already have been rounded. */
#define LOADERS_JSON_MAX_INT 9007199254740991.0

/* Widest address list a transaction may carry: the table has PRSTM_MAX_COLUMNS
 * columns and the fixed arguments keep up to 8 of them. */
#define LOADERS_MAX_LIST (PRSTM_MAX_COLUMNS - 8)

/* Longest key path kept in messages; longer paths are cut, never overflowed. */
#define LOADERS_KEYPATH_MAX 256

/* Writes a formatted one-line message into err when there is room for one;
 * err may be NULL so that callers that do not want messages need no buffer. */
void loaders_errf(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Reads a whole file into a NUL-terminated buffer. On failure returns
 * PRSTM_EIO and writes "FILE: cannot read: strerror" into err. */
int loaders_read_text_file(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* Length of a UTF-8 byte order mark at the start of text (3), or 0. A mark is
 * invisible in editors, so callers skip it instead of reporting it. */
size_t loaders_json_bom(const char *text, size_t len);

/* Parses len bytes of text as one JSON value with nothing after it; text[len]
 * must be a NUL. On failure returns NULL and sets *fail_offset to the byte
 * offset where the parser stopped, so the caller can report a position. */
cJSON *loaders_json_parse(const char *text, size_t len, size_t *fail_offset);

/* Converts a byte offset of text into a 1-based line and column. */
void loaders_json_position(const char *text, size_t offset, unsigned long *line, unsigned long *col);

/* Stores a JSON number that is integral and in [0, 2^53-1] into *out;
 * returns 0 on success and -1 for anything else. */
int loaders_json_uint(const cJSON *item, uint64_t *out);
/* What a message says was expected where loaders_json_uint refused item:
 * a whole number above 2^53-1 is told the real limit. */
const char *loaders_uint_expected(const cJSON *item);
/* The names of the workload's types, comma-separated, for a message about
 * an unknown one. */
void loaders_type_names(const prstm_workload *wl, char *out, size_t outlen);
/* A hint for a line or file that is not JSON: a JSON array where JSON Lines
 * hold one object a line, or a comment; "" when none fits. */
const char *loaders_not_json_hint(const char *text, size_t len, int jsonl);

/* Checks the keys of an object: every key must be in allowed (a NULL-ended
 * list) and appear once. On failure returns -1 and points *bad at the
 * offending key and *duplicate at 1 when the key is repeated. */
int loaders_json_check_keys(const cJSON *obj, const char *const *allowed, const char **bad, int *duplicate);

/* Turns one JSON transaction object into prstm_batch_append(). Messages go
 * into msg without a file name and start with the key path, which is built
 * from prefix ("" for a JSON Lines record, "batch.transactions[3]" inline). */
int loaders_tx_from_json(const cJSON *obj, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch,
                         const char *prefix, char *msg, size_t msglen);

/* The fast path of the JSON Lines loader (jsonl_fast.cpp, built where
 * simdjson is found): one per thread, since it keeps its parser's buffers. */
typedef struct loaders_jsonl_fast loaders_jsonl_fast;
/* NULL where the fast path is not built or memory ran out: callers then take
 * the strict path alone. */
loaders_jsonl_fast *loaders_jsonl_fast_create(void);
void loaders_jsonl_fast_destroy(loaders_jsonl_fast *fast);
/* Reads one record (n bytes, no line end, no byte order mark) with simdjson.
 * Returns 1 with the row's type and argument words when the record is one
 * the strict path would take as it is, with the same words; 0 for anything
 * else, valid or not, which the caller then hands to the strict path, so that
 * what is accepted and every message stay the strict path's. */
int loaders_jsonl_fast_record(loaders_jsonl_fast *fast, const char *text, size_t n, const prstm_workload *wl,
                              uint64_t nwords, unsigned *type, prstm_word *args, unsigned *nargs);

/* One line of a JSON Lines batch, NUL-terminated and writable (n bytes,
 * line end included or not): blank lines hold nothing; otherwise its record
 * is appended to batch. `first_line`: the file's first line, which may start
 * with a byte order mark. `fast` (may be NULL) reads the record first where
 * it can. On an error returns its code with the message in msg, and with
 * *col set (from 1) when the line is not JSON; the caller prefixes the file
 * and line (jsonl_file.c). */
int loaders_jsonl_line(char *line, size_t n, int first_line, loaders_jsonl_fast *fast, const prstm_workload *wl,
                       uint64_t nwords, prstm_batch *batch, unsigned long *col, char *msg, size_t msglen);
/* prstm_load_jsonl on `threads` threads (0: the machine's cores, chunks of
 * at least a megabyte), with the fast path where it is built (`fast` 1) or
 * the strict path alone (0), for tests that split small files or compare the
 * two paths. */
int loaders_load_jsonl_threads(const char *path, const prstm_workload *wl, uint64_t nwords, prstm_batch *batch,
                               unsigned threads, int fast, char *err, size_t errlen);

/* Creates folder dir where it is missing; "DIR: cannot create the folder:
 * REASON" or "DIR: not a folder" (PRSTM_EIO) when it cannot be used. */
int loaders_make_folder(const char *dir, char *err, size_t errlen);
/* Closes f, written to the temporary file tmp, and renames it to path when
 * every write succeeded (ok); otherwise removes tmp and returns PRSTM_EIO
 * with "PATH: cannot write: REASON". */
int loaders_commit_tmp(FILE *f, int ok, const char *tmp, const char *path, char *err, size_t errlen);

/* What a .npy column written by loaders_npy_write holds, row by row. */
typedef enum loaders_npy_source {
  LOADERS_NPY_TYPE,   /* the row's type index */
  LOADERS_NPY_COLUMN, /* argument column col */
  LOADERS_NPY_STATUS, /* the outcome's prstm_status */
  LOADERS_NPY_REASON, /* the outcome's reason code */
  LOADERS_NPY_RESULT  /* the outcome's result word */
} loaders_npy_source;
/* Writes one column of the batch as a .npy file of `width`-byte unsigned
 * little-endian values (numpy's header, version 1.0), by way of a temporary
 * file renamed into place; "PATH: cannot write: REASON" on failure. */
int loaders_npy_write(const char *path, uint64_t rows, unsigned width, const prstm_batch *b, loaders_npy_source src,
                      unsigned col, char *err, size_t errlen);

#endif /* LOADERS_INTERNAL_H */
