/* test_bad_inputs.c: the catalogue of bad inputs (tests/data/bad/MANIFEST.tsv): every row runs prstm-run and must give its exit status, its one exact line on stderr, nothing on stdout and no file in the working folder. */
/* mkdtemp, realpath, nftw, kill and strdup are POSIX; ask for them explicitly under -std=c11. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_child.h"
#include "test_paths.h"

/* The manifest, relative to the data folder, and the placeholder its rows use
 * for the data folder's absolute path. */
#define MANIFEST_NAME "bad/MANIFEST.tsv"
#define DIR_TOKEN "@DIR@"
#define ARGS_PREFIX "ARGS:"

/* Fewer rows than this means the manifest was cut or misread, not a small catalogue. */
#define MIN_ROWS 30
#define MAX_ROWS 1024
#define MAX_ARGS 32

/* Every bad input is refused before any real work; a run this long is hung. */
#define RUN_LIMIT_S 60

/* One case of the manifest. */
typedef struct manifest_row {
  unsigned line;  /* its line in the manifest, for messages */
  char *what;     /* CASE: a path under the data folder, or ARGS:... */
  int exit_code;  /* EXIT */
  char *expected; /* STDERR, without its newline, @DIR@ not yet replaced */
} manifest_row;

/* The parsed manifest of this process. Criterion runs each test in a process
 * of its own, so every test parses the file itself and frees nothing. */
typedef struct manifest {
  char datadir[PATH_MAX];
  char path[PATH_MAX + 64];
  int readable;             /* 0 when the file could not be opened */
  char error[2 * PATH_MAX]; /* the first format error, "" when there is none */
  unsigned nrows;
  manifest_row rows[MAX_ROWS];
} manifest;

static manifest mf;

/* Records the first format error only: later ones are usually its echo. */
static void format_error(unsigned line, const char *fmt, const char *detail) {
  if (mf.error[0] != '\0') return;
  char what[256];
  snprintf(what, sizeof what, fmt, detail);
  snprintf(mf.error, sizeof mf.error, "%s:%u: %s", mf.path, line, what);
}

/* Parses one row "CASE<TAB>EXIT<TAB>STDERR"; returns 0, or -1 on a format error. */
static int parse_row(char *text, unsigned line, manifest_row *row) {
  char *tab1 = strchr(text, '\t');
  char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
  if (!tab1 || !tab2) {
    format_error(line, "expected CASE<TAB>EXIT<TAB>STDERR, got '%s'", text);
    return -1;
  }
  *tab1 = '\0';
  *tab2 = '\0';
  const char *what = text, *code = tab1 + 1, *expected = tab2 + 1;
  if (what[0] == '\0') {
    format_error(line, "empty CASE%s", "");
    return -1;
  }
  if (strncmp(what, ARGS_PREFIX, strlen(ARGS_PREFIX)) == 0) {
    const char *args = what + strlen(ARGS_PREFIX);
    size_t len = strlen(args);
    if (len > 0 && (args[0] == ' ' || args[len - 1] == ' ' || strstr(args, "  ") != NULL)) {
      format_error(line, "ARGS: arguments are separated by single spaces, with none empty: '%s'", what);
      return -1;
    }
  } else if (strchr(what, ' ') != NULL || what[0] == '/') {
    format_error(line, "a CASE path is relative to the data folder and holds no space: '%s'", what);
    return -1;
  }
  char *end = NULL;
  errno = 0;
  long v = strtol(code, &end, 10);
  if (code[0] < '0' || code[0] > '9' || errno != 0 || *end != '\0' || v > 255) {
    format_error(line, "EXIT must be a number from 0 to 255, got '%s'", code);
    return -1;
  }
  if (expected[0] == '\0') {
    format_error(line, "empty STDERR%s", "");
    return -1;
  }
  row->line = line;
  row->what = strdup(what);
  row->exit_code = (int)v;
  row->expected = strdup(expected);
  return row->what && row->expected ? 0 : -1;
}

/* Reads the manifest into mf. Never asserts: the parameter generator runs in
 * Criterion's runner, where a failed assertion has no test to fail. */
static void load_manifest(void) {
  memset(&mf, 0, sizeof mf);
  if (realpath(test_data_dir(), mf.datadir) == NULL) {
    snprintf(mf.error, sizeof mf.error, "cannot find the test data at '%s': %s", test_data_dir(), strerror(errno));
    return;
  }
  snprintf(mf.path, sizeof mf.path, "%s/%s", mf.datadir, MANIFEST_NAME);
  FILE *f = fopen(mf.path, "r");
  if (f == NULL) {
    snprintf(mf.error, sizeof mf.error, "cannot read %s: %s", mf.path, strerror(errno));
    return;
  }
  mf.readable = 1;
  char *text = NULL;
  size_t cap = 0;
  ssize_t got;
  unsigned line = 0;
  while ((got = getline(&text, &cap, f)) >= 0) {
    line++;
    size_t n = (size_t)got;
    if (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
    if (n > 0 && text[n - 1] == '\r') text[--n] = '\0';
    if (n == 0 || text[0] == '#') continue;
    if (mf.nrows == MAX_ROWS) {
      format_error(line, "too many rows; raise MAX_ROWS%s", "");
      break;
    }
    if (parse_row(text, line, &mf.rows[mf.nrows]) == 0) mf.nrows++;
  }
  free(text);
  fclose(f);
}

/* Replaces every @DIR@ of text by the data folder, into a new string. */
static char *expand(const char *text) {
  size_t dirlen = strlen(mf.datadir), toklen = strlen(DIR_TOKEN), count = 0;
  for (const char *p = strstr(text, DIR_TOKEN); p != NULL; p = strstr(p + toklen, DIR_TOKEN)) count++;
  char *out = malloc(strlen(text) + count * dirlen + 1);
  cr_assert_not_null(out);
  char *o = out;
  for (const char *p = text;;) {
    const char *hit = strstr(p, DIR_TOKEN);
    size_t keep = hit ? (size_t)(hit - p) : strlen(p);
    memcpy(o, p, keep);
    o += keep;
    if (!hit) break;
    memcpy(o, mf.datadir, dirlen);
    o += dirlen;
    p = hit + toklen;
  }
  *o = '\0';
  return out;
}

/* ---- running the program ---- */

/* Names the first entry of a folder, or returns 0 when it is empty. */
static int first_entry(const char *dir, char *name, size_t namelen) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot list %s: %s", dir, strerror(errno));
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(name, namelen, "%s", e->d_name);
    found = 1;
  }
  closedir(d);
  return found;
}

/* What one run left behind. */
typedef struct run_result {
  int exited;      /* 0 when a signal ended the program */
  int status;      /* its exit status, or the signal */
  char *out;       /* all of stdout */
  char *err;       /* all of stderr */
  char stray[256]; /* the first file found in the working folder, "" for none */
} run_result;

/* Runs argv in a fresh empty working folder, stdin from /dev/null and its
 * streams in files beside (not inside) that folder, so the working folder
 * only ever holds what the program itself created. */
static void run_program(char *const argv[], run_result *r) {
  memset(r, 0, sizeof *r);
  char root[PATH_MAX], work[PATH_MAX + 16], outp[PATH_MAX + 16], errp[PATH_MAX + 16];
  test_make_scratch(root, sizeof root, "prstm-bad");
  snprintf(work, sizeof work, "%s/work", root);
  snprintf(outp, sizeof outp, "%s/stdout", root);
  snprintf(errp, sizeof errp, "%s/stderr", root);
  cr_assert_eq(mkdir(work, 0700), 0, "cannot create %s: %s", work, strerror(errno));

  int wstatus = 0;
  if (test_run_child(argv, work, outp, errp, RUN_LIMIT_S, &wstatus) != 0) {
    test_remove_tree(root);
    cr_assert_fail("prstm-run ran longer than %d s and was killed", RUN_LIMIT_S);
  }
  r->exited = WIFEXITED(wstatus);
  r->status = r->exited ? WEXITSTATUS(wstatus) : WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : -1;
  r->out = test_slurp(outp);
  r->err = test_slurp(errp);
  if (!first_entry(work, r->stray, sizeof r->stray)) r->stray[0] = '\0';
  test_remove_tree(root);
  cr_assert_not_null(r->out, "the program's stdout was not captured");
  cr_assert_not_null(r->err, "the program's stderr was not captured");
  cr_assert(!(r->exited && (r->status == 126 || r->status == 127)), "the program could not be run: %s", r->err);
}

/* ---- the tests ---- */

/* Builds the argument vector of a row: the program, then either the data
 * file or the ARGS: list, with @DIR@ replaced. Returns the buffer the
 * arguments point into, for the caller to free. */
static char *row_argv(const manifest_row *row, char *argv[MAX_ARGS + 2], char *program) {
  unsigned n = 0;
  char *owned;
  argv[n++] = program;
  if (strncmp(row->what, ARGS_PREFIX, strlen(ARGS_PREFIX)) != 0) {
    size_t len = strlen(mf.datadir) + 1 + strlen(row->what) + 1;
    owned = malloc(len);
    cr_assert_not_null(owned);
    snprintf(owned, len, "%s/%s", mf.datadir, row->what);
    argv[n++] = owned;
  } else {
    owned = expand(row->what + strlen(ARGS_PREFIX));
    for (char *save = NULL, *tok = strtok_r(owned, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
      cr_assert_lt(n, MAX_ARGS + 1, "%s:%u: more than %d arguments", mf.path, row->line, MAX_ARGS);
      argv[n++] = tok;
    }
  }
  argv[n] = NULL;
  return owned;
}

/* The parameter of a row test: its place in the manifest. Plain numbers, so
 * nothing points into the runner's memory. */
typedef struct row_ref {
  unsigned index;
  unsigned line;
} row_ref;

static void free_refs(struct criterion_test_params *crp) { cr_free(crp->params); }

ParameterizedTestParameters(bad_inputs, row) {
  load_manifest();
  if (mf.nrows == 0) return cr_make_param_array(row_ref, NULL, 0);
  row_ref *refs = cr_malloc(sizeof *refs * mf.nrows);
  if (refs == NULL) return cr_make_param_array(row_ref, NULL, 0);
  for (unsigned i = 0; i < mf.nrows; i++) {
    refs[i].index = i;
    refs[i].line = mf.rows[i].line;
  }
  return cr_make_param_array(row_ref, refs, mf.nrows, free_refs);
}

/* One row: exit status, the exact line on stderr, empty stdout, an untouched
 * working folder. Each is an expectation, so a row reports all it gets wrong. */
ParameterizedTest(row_ref *ref, bad_inputs, row) {
  load_manifest();
  cr_assert_lt(ref->index, mf.nrows, "the manifest changed while the tests ran");
  const manifest_row *row = &mf.rows[ref->index];
  cr_assert_eq(row->line, ref->line, "the manifest changed while the tests ran");

  char program[PATH_MAX];
  cr_assert_not_null(realpath(test_run_path(), program), "cannot find prstm-run at '%s': %s", test_run_path(),
                     strerror(errno));
  char *argv[MAX_ARGS + 2];
  char *args = row_argv(row, argv, program);
  run_result r;
  run_program(argv, &r);
  free(args);

  char *line = expand(row->expected);
  size_t len = strlen(line);
  char *want = malloc(len + 2);
  cr_assert_not_null(want);
  memcpy(want, line, len);
  memcpy(want + len, "\n", 2);

  const char *where = mf.path;
  cr_expect(r.exited, "%s:%u (%s): prstm-run was ended by signal %d\nstderr:\n%s", where, row->line, row->what,
            r.status, r.err);
  cr_expect_eq(r.status, row->exit_code, "%s:%u (%s): exit status %d, expected %d\nstderr:\n%s", where, row->line,
               row->what, r.status, row->exit_code, r.err);
  cr_expect_str_eq(r.err, want, "%s:%u (%s): stderr differs\nexpected: %sgot:      %s", where, row->line, row->what,
                   want, r.err[0] ? r.err : "(nothing)\n");
  cr_expect_str_empty(r.out, "%s:%u (%s): stdout should be empty, got:\n%s", where, row->line, row->what, r.out);
  cr_expect_eq(r.stray[0], '\0', "%s:%u (%s): the working folder holds '%s' afterwards", where, row->line, row->what,
               r.stray);
  free(want);
  free(line);
  free(r.out);
  free(r.err);
}

/* An empty, unreadable or misread manifest would make every row test vanish
 * and the suite pass; this test fails instead. */
Test(bad_inputs, manifest_is_well_formed_and_lists_at_least_30_rows) {
  load_manifest();
  cr_assert(mf.readable, "%s", mf.error);
  cr_assert_str_empty(mf.error, "%s", mf.error);
  cr_assert_geq(mf.nrows, MIN_ROWS, "%s has %u rows; at least %d expected", mf.path, mf.nrows, MIN_ROWS);
}

/* Whether some row names bad/NAME, as its CASE or as an ARGS: argument. */
static int named_by_a_row(const char *name) {
  char want[PATH_MAX];
  snprintf(want, sizeof want, "bad/%s", name);
  size_t wlen = strlen(want);
  for (unsigned i = 0; i < mf.nrows; i++) {
    const char *what = mf.rows[i].what;
    for (const char *p = strstr(what, want); p != NULL; p = strstr(p + 1, want)) {
      int starts = p == what || p[-1] == '/' || p[-1] == ':' || p[-1] == ' ';
      int ends = p[wlen] == '\0' || p[wlen] == ' ';
      if (starts && ends) return 1;
    }
  }
  return 0;
}

/* A bad config added to the folder but not to the manifest would never run. */
Test(bad_inputs, every_bad_config_has_a_row) {
  load_manifest();
  cr_assert(mf.readable, "%s", mf.error);
  char bad[PATH_MAX + 8];
  snprintf(bad, sizeof bad, "%s/bad", mf.datadir);
  DIR *d = opendir(bad);
  cr_assert_not_null(d, "cannot list %s: %s", bad, strerror(errno));
  struct dirent *e;
  unsigned configs = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    configs++;
    cr_expect(named_by_a_row(e->d_name), "%s/%s is named by no row of %s", bad, e->d_name, mf.path);
  }
  closedir(d);
  cr_assert_geq(configs, MIN_ROWS, "%s holds only %u configs", bad, configs);
}
