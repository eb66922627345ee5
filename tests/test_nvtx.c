/* test_nvtx.c: prstm-run's NVTX ranges (load, transfer, execute, readback, verify), seen through an NVTX injection library that records them, without Nsight Systems. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "prstm.h"
#include "test_backend.h"
#include "test_child.h"
#include "test_paths.h"

#define RUN_LIMIT_S 120
#define MAX_RANGES 64

/* The recorder library (test_built_path). */
static const char *recorder_path(void) {
  return test_built_path(PRSTM_NVTX_RECORDER, "libprstm_test_nvtx_recorder.so");
}

static char workdir[PATH_MAX];
static char program[PATH_MAX];
static char config[PATH_MAX + 16];

static void setup(void) {
  cr_assert_not_null(realpath(test_run_path(), program), "cannot find prstm-run at '%s': %s", test_run_path(),
                     strerror(errno));
  char data[PATH_MAX];
  cr_assert_not_null(realpath(test_data_dir(), data), "cannot find the test data at '%s'", test_data_dir());
  snprintf(config, sizeof config, "%s/cli/good.json", data);
  test_make_scratch(workdir, sizeof workdir, "prstm-nvtx");
}

static void teardown(void) {
  if (workdir[0] != '\0') test_remove_tree(workdir);
}

/* A GPU test is skipped, where there is no GPU, before its scratch folder
 * is made: Criterion runs no .fini after a skip, so a folder made first
 * was left behind. */
static void setup_gpu(void) {
  test_need_backend(prstm_workload_find("bank"), PRSTM_BACKEND_GPU);
  setup();
}

TestSuite(nvtx, .init = setup, .fini = teardown);
TestSuite(nvtx_gpu, .init = setup_gpu, .fini = teardown);

/* What one recorded run pushed, in order, and whether every push was popped
 * with the depth never going below zero. */
typedef struct range_log {
  char names[MAX_RANGES][128];
  unsigned pushes, pops;
  int balanced;
} range_log;

/* Runs prstm-run on config `cfg` with the extra args, the recorder
 * injected (or not), and returns its exit status; *log gets the ranges. */
static int run_recorded_config(const char *cfg, const char *const *extra, int inject, range_log *log) {
  const char *log_path = test_path(workdir, "nvtx.log");
  char log_copy[PATH_MAX];
  snprintf(log_copy, sizeof log_copy, "%s", log_path);
  remove(log_copy);
  if (inject) {
    cr_assert_eq(setenv("NVTX_INJECTION64_PATH", recorder_path(), 1), 0);
    cr_assert_eq(setenv("PRSTM_NVTX_LOG", log_copy, 1), 0);
  } else {
    unsetenv("NVTX_INJECTION64_PATH");
    cr_assert_eq(setenv("PRSTM_NVTX_LOG", log_copy, 1), 0);
  }
  char *argv[16];
  unsigned n = 0;
  argv[n++] = program;
  argv[n++] = (char *)cfg;
  argv[n++] = "--quiet";
  for (const char *const *a = extra; *a; a++) argv[n++] = (char *)*a;
  argv[n] = NULL;
  char out[PATH_MAX], err[PATH_MAX];
  snprintf(out, sizeof out, "%s", test_path(workdir, "child.stdout"));
  snprintf(err, sizeof err, "%s", test_path(workdir, "child.stderr"));
  int wstatus = 0;
  if (test_run_child(argv, workdir, out, err, RUN_LIMIT_S, &wstatus) != 0)
    cr_assert_fail("prstm-run ran longer than %d s and was killed", RUN_LIMIT_S);
  cr_assert(WIFEXITED(wstatus), "prstm-run was ended by a signal");

  memset(log, 0, sizeof *log);
  log->balanced = 1;
  FILE *f = fopen(log_copy, "r");
  if (f) {
    char line[128];
    int depth = 0;
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      if (strncmp(line, "push ", 5) == 0) {
        if (log->pushes < MAX_RANGES) snprintf(log->names[log->pushes], sizeof log->names[0], "%s", line + 5);
        log->pushes++;
        depth++;
      } else if (strcmp(line, "pop") == 0) {
        log->pops++;
        if (--depth < 0) log->balanced = 0;
      }
    }
    fclose(f);
    if (depth != 0) log->balanced = 0;
  }
  return WEXITSTATUS(wstatus);
}

/* The same on the good config. */
static int run_recorded(const char *const *extra, int inject, range_log *log) {
  return run_recorded_config(config, extra, inject, log);
}

/* The first push of `name`, or MAX_RANGES where there is none. */
static unsigned first_push(const range_log *log, const char *name) {
  for (unsigned i = 0; i < log->pushes && i < MAX_RANGES; i++)
    if (strcmp(log->names[i], name) == 0) return i;
  return MAX_RANGES;
}

static int pushed(const range_log *log, const char *name) { return first_push(log, name) < MAX_RANGES; }

static void assert_ranges(const range_log *log, const char *const *want) {
  cr_assert_gt(log->pushes, 0, "no NVTX range was recorded: is the recorder loaded?");
  cr_assert(log->balanced, "the ranges do not nest: %u pushes, %u pops", log->pushes, log->pops);
  for (const char *const *w = want; *w; w++) cr_assert(pushed(log, *w), "no '%s' range was pushed", *w);
}

Test(nvtx, cpu_run_marks_every_phase) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "cpu", NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"load", "state", "batch", "run", "prepare", "execute", "invariant", "write",
                                            "teardown", NULL});
  cr_assert(!pushed(&log, "transfer"), "a CPU run has no host-to-device transfer");
  cr_assert(!pushed(&log, "warm-up"), "a CPU run starts no GPU");
}

Test(nvtx, verified_run_also_marks_verify) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "cpu", "--verify", NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"load", "execute", "verify", NULL});
}

Test(nvtx_gpu, gpu_run_marks_every_phase) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "gpu", NULL}, 1, &log), 0);
  assert_ranges(&log,
                (const char *const[]){"load", "warm-up", "plan", "transfer", "execute", "readback", "free", NULL});
  /* The contention sample runs beside the upload, and `plan` marks only
   * the wait for it once the table is up. */
  cr_assert_lt(first_push(&log, "transfer"), first_push(&log, "plan"),
               "a GPU run's plan is waited for after its transfer, not before it");
}

/* A chunked run goes through a stream: its opening, each unit's phases and
 * its close are marked inside the run range. The CPU backend page-locks
 * nothing. */
Test(nvtx, chunked_run_marks_the_stream_and_its_units) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "cpu", "--chunk-rows", "2", NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"run", "stream open", "unit fill", "unit launch", "unit wait",
                                            "unit outcomes", "stream finish", "stream free", NULL});
  cr_assert(!pushed(&log, "lock pages"), "the CPU backend page-locks no batch");
}

/* On the GPU a chunked run of small units copies them straight from the
 * batch, page-locked for the run, and marks that too. */
Test(nvtx_gpu, gpu_chunked_run_marks_the_stream_and_its_pages) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "gpu", "--chunk-rows", "2", NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"run", "lock pages", "stream open", "unit launch", "unit wait",
                                            "stream finish", "stream free", "unlock pages", NULL});
}

/* Units of middling size (here 50,000 transfers, 1.3 MB) are staged by the
 * stream's copying threads instead, where the host has the cores for them
 * (four or more): the batch is never page-locked, and each unit after the
 * first few is prepared while the one before it launches. */
Test(nvtx_gpu, gpu_chunked_run_of_middling_units_stages_them) {
  char cfg[PATH_MAX];
  snprintf(cfg, sizeof cfg, "%s", test_path(workdir, "middling.json"));
  FILE *f = fopen(cfg, "w");
  cr_assert_not_null(f, "cannot write %s", cfg);
  fputs(
      "{\"workload\": \"bank\", \"state\": {\"accounts\": 100000, \"initial_balance\": 1000},\n"
      " \"batch\": {\"generate\": {\"transactions\": 200000, \"seed\": 3, \"mix\": {\"transfer\": 1.0}}}}\n",
      f);
  fclose(f);
  range_log log;
  cr_assert_eq(
      run_recorded_config(cfg, (const char *const[]){"--backend", "gpu", "--chunk-rows", "50000", NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"run", "stream open", "unit fill", "unit launch", "unit wait", NULL});
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores >= 4) {
    cr_assert(!pushed(&log, "lock pages"), "units of 1.3 MB on a host of %ld cores are staged, not page-locked", cores);
    cr_assert(pushed(&log, "unit prefill"), "no unit of 1.3 MB was prepared while the one before it launched");
  } else {
    cr_assert(pushed(&log, "lock pages"), "no copying threads on a host of %ld cores, yet no page-locking", cores);
  }
}

/* A JSON Lines batch marks its parse and the join of its parts inside the
 * batch range. */
Test(nvtx, jsonl_batch_marks_parse_and_join) {
  char data[PATH_MAX], batch[PATH_MAX + 32];
  cr_assert_not_null(realpath(test_data_dir(), data), "cannot find the test data at '%s'", test_data_dir());
  snprintf(batch, sizeof batch, "%s/cli/good_batch.jsonl", data);
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "cpu", "--batch", batch, NULL}, 1, &log), 0);
  assert_ranges(&log, (const char *const[]){"load", "batch", "parse", "join", "run", NULL});
}

/* Without an injection library the ranges are no-ops: nothing is recorded. */
Test(nvtx, nothing_is_recorded_without_an_injection_library) {
  range_log log;
  cr_assert_eq(run_recorded((const char *const[]){"--backend", "cpu", NULL}, 0, &log), 0);
  cr_assert_eq(log.pushes, 0, "%u ranges were recorded with no injection library", log.pushes);
}
