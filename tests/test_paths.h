/* test_paths.h: where the tests find their data and the prstm-run program, overridable when the build tree travels. */
#ifndef TEST_PATHS_H
#define TEST_PATHS_H

#include <stdio.h>
#include <stdlib.h>

/* Without the build's paths every test would fail to find the program or its
 * data, so the build stops instead of the tests failing for the wrong reason. */
#ifndef PRSTM_TEST_DATA_DIR
#error "PRSTM_TEST_DATA_DIR must be defined as the absolute path of tests/data"
#endif
#ifndef PRSTM_RUN_PATH
#error "PRSTM_RUN_PATH must be defined as the path of the prstm-run program"
#endif
#ifndef PRSTM_SOURCE_DIR
#error "PRSTM_SOURCE_DIR must be defined as the absolute path of the source tree"
#endif

/* The build writes absolute paths in; a copy of the tests run elsewhere (the
 * GPU machine) points them at its own tree with these variables. */
static inline const char *test_data_dir(void) {
  const char *env = getenv("PRSTM_TEST_DATA_DIR");
  return env && *env ? env : PRSTM_TEST_DATA_DIR;
}

static inline const char *test_run_path(void) {
  const char *env = getenv("PRSTM_RUN");
  return env && *env ? env : PRSTM_RUN_PATH;
}

/* The source tree (for the shipped configs/). */
static inline const char *test_source_dir(void) {
  const char *env = getenv("PRSTM_SOURCE_DIR");
  return env && *env ? env : PRSTM_SOURCE_DIR;
}

/* A program or plugin the build made: its compiled-in path, or, where the
 * tests travel with their programs and plugins flattened into one folder
 * (a GPU machine), `name` in the folder PRSTM_TEST_BIN_DIR names. */
static inline const char *test_built_path(const char *compiled, const char *name) {
  static char buf[4][4096];
  static int next;
  const char *dir = getenv("PRSTM_TEST_BIN_DIR");
  if (dir == NULL || *dir == '\0') return compiled;
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", dir, name);
  return b;
}

#endif /* TEST_PATHS_H */
