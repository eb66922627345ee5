/* test_plugin.c: a custom workload (examples/seats) through both routes, and the errors of plugins that cannot be used. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prstm.h"
#include "test_paths.h"

/* The example's program and plugin and the test plugins (test_built_path). */
#define SEATS_PROGRAM test_built_path(PRSTM_SEATS_PROGRAM, "seats")
#define SEATS_PLUGIN test_built_path(PRSTM_SEATS_PLUGIN, "libseats.so")
#define WRONG_ABI_PLUGIN test_built_path(PRSTM_WRONG_ABI_PLUGIN, "libprstm_test_wrong_abi.so")
#define NO_ENTRY_PLUGIN test_built_path(PRSTM_NO_ENTRY_PLUGIN, "libprstm_test_no_entry.so")

static char workdir[64];

static void setup(void) {
  snprintf(workdir, sizeof workdir, "/tmp/prstm-test-plugin-XXXXXX");
  cr_assert_not_null(mkdtemp(workdir));
}

static void teardown(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
  if (system(cmd) != 0) cr_log_warn("could not remove %s", workdir);
}

static const char *work_path(const char *name) {
  static char buf[4][PATH_MAX];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", workdir, name);
  return b;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

/* Runs argv[0] with stdout and stderr in files of the work folder; returns
 * the exit status (or -1 when it did not exit normally). */
static int run(char *const argv[]) {
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    if (!freopen(work_path("stdout.txt"), "w", stdout) || !freopen(work_path("stderr.txt"), "w", stderr)) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A config for the seats plugin with the example's batch. */
static const char *seats_config(const char *plugin, const char *workload, const char *backend, const char *batch) {
  char text[4 * PATH_MAX];
  snprintf(text, sizeof text,
           "{\"plugin\": \"%s\",%s%s%s \"engine\": {\"backend\": \"%s\", \"threads\": %s, \"verify\": true},\n"
           " \"state\": {\"shows\": 2, \"seats\": 3, \"customers\": 8, \"booked\": 2},\n"
           " \"batch\": {\"file\": \"%s\"}}\n",
           plugin, workload ? " \"workload\": \"" : "", workload ? workload : "", workload ? "\"," : "", backend,
           strcmp(backend, "gpu") == 0 ? "1024" : "16", batch);
  const char *path = work_path("seats.json");
  write_file(path, text);
  return path;
}

static const char *seats_batch(void) {
  static char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/../../examples/seats/seats.jsonl", test_data_dir());
  return path;
}

static void need_gpu(void) {
  char why[256];
  if (prstm_gpu_available(NULL, why, sizeof why)) return;
  const char *req = getenv("PRSTM_REQUIRE_GPU");
  if (req && strcmp(req, "1") == 0) cr_assert_fail("PRSTM_REQUIRE_GPU=1 but no GPU is usable: %s", why);
  teardown(); /* a skipped test does not reach .fini */
  cr_skip_test("no usable GPU: %s", why);
}

/* The example batch's outcome counts are fixed whatever the interleaving: of
 * three bookings for one free seat and one released seat, two commit and
 * one waits until the end; see examples/seats/seats.jsonl. */
static void plugin_route(const char *backend) {
  const char *cfg = seats_config(SEATS_PLUGIN, NULL, backend, seats_batch());
  char *argv[] = {(char *)test_run_path(), (char *)cfg, "--quiet", "--results", (char *)work_path("r.json"), NULL};
  int rc = run(argv);
  cr_assert_eq(rc, 0, "exit %d: %s", rc, slurp(work_path("stderr.txt")));
  cJSON *r = cJSON_Parse(slurp(work_path("r.json")));
  cr_assert_not_null(r);
  cr_expect_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, "seats");
  cr_expect_str_eq(cJSON_GetObjectItem(r, "backend")->valuestring, backend);
  cr_expect_eq(cJSON_GetObjectItem(r, "committed")->valuedouble, 5);
  cr_expect_eq(cJSON_GetObjectItem(r, "abandoned")->valuedouble, 2);
  cr_expect_eq(cJSON_GetObjectItem(r, "failed")->valuedouble, 2);
  cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r, "invariant_ok")));
  cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r, "verify_ok")));
  cJSON_Delete(r);
}

static void program_route(const char *flag) {
  char *argv[] = {(char *)SEATS_PROGRAM, (char *)flag, NULL};
  int rc = run(argv);
  const char *out = slurp(work_path("stdout.txt"));
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, slurp(work_path("stderr.txt")));
  cr_expect_not_null(strstr(out, "committed 5, abandoned 1, failed 1"), "%s", out);
  cr_expect_not_null(strstr(out, "invariant ok"), "%s", out);
  cr_expect_not_null(strstr(out, "verify ok"), "%s", out);
}

TestSuite(plugin, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(plugin_gpu, .init = setup, .fini = teardown, .timeout = 120);

Test(plugin, unmodified_prstm_run_runs_the_seats_plugin_on_the_cpu) { plugin_route("cpu"); }
Test(plugin_gpu, unmodified_prstm_run_runs_the_seats_plugin_on_the_gpu) {
  need_gpu();
  plugin_route("gpu");
}
Test(plugin, seats_built_into_its_own_program_runs_on_the_cpu) { program_route("--cpu"); }
Test(plugin_gpu, seats_built_into_its_own_program_runs_on_the_gpu) {
  need_gpu();
  program_route("--gpu");
}

static void expect_refused(const char *cfg, const char *fragment) {
  char *argv[] = {(char *)test_run_path(), (char *)cfg, "--quiet", NULL};
  int rc = run(argv);
  const char *err = slurp(work_path("stderr.txt"));
  cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
  cr_expect_not_null(strstr(err, fragment), "stderr '%s' lacks '%s'", err, fragment);
  cr_expect_eq(strchr(err, '\n'), err + strlen(err) - 1, "one line expected: %s", err);
}

Test(plugin, plugin_built_for_another_abi_is_refused_with_exit_2) {
  expect_refused(seats_config(WRONG_ABI_PLUGIN, NULL, "cpu", seats_batch()), "rebuild the plugin against it");
}

Test(plugin, library_without_plugin_entry_points_is_refused_with_exit_2) {
  expect_refused(seats_config(NO_ENTRY_PLUGIN, NULL, "cpu", seats_batch()), "not a prstm workload plugin");
}

Test(plugin, missing_plugin_file_is_refused_with_exit_2) {
  expect_refused(seats_config(work_path("libnothing.so"), NULL, "cpu", seats_batch()),
                 "cannot open shared object file");
}

Test(plugin, batch_naming_a_type_the_plugin_lacks_is_refused_with_exit_2) {
  const char *batch = work_path("bank.jsonl");
  write_file(batch, "{\"type\": \"transfer\", \"from\": 0, \"to\": 1, \"amount\": 1}\n");
  expect_refused(seats_config(SEATS_PLUGIN, NULL, "cpu", batch), "unknown transaction type 'transfer'");
}

Test(plugin, workload_name_that_disagrees_with_the_plugin_is_refused_with_exit_2) {
  expect_refused(seats_config(SEATS_PLUGIN, "bank", "cpu", seats_batch()),
                 "'bank' does not match the plugin's workload 'seats'");
}

Test(plugin, plugin_knob_out_of_range_is_refused_with_exit_2) {
  const char *cfg = seats_config(SEATS_PLUGIN, NULL, "cpu", seats_batch());
  static char text[1 << 16];
  const char *old = slurp(cfg);
  cr_assert_not_null(old);
  memcpy(text, old, strlen(old) + 1);
  char *at = strstr(text, "\"seats\": 3");
  cr_assert_not_null(at);
  memcpy(at, "\"seats\":-1", 10);
  write_file(cfg, text);
  expect_refused(cfg, "state.seats: expected a whole number between 0 and 1000000000");
}
