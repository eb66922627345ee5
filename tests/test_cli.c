/* test_cli.c: behaviour of the prstm-run command line: options, exit statuses, messages, and the files it writes or leaves alone. */
/* mkdtemp, realpath, nftw and kill are POSIX; ask for them explicitly under -std=c11. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prstm.h"
#include "test_backend.h"
#include "test_child.h"
#include "test_paths.h"

/* A run that takes longer than this is hung; it is killed and the test fails. */
#define RUN_LIMIT_S 120

/* The child's stdout and stderr land in these files of its working folder. */
#define STDOUT_NAME "child.stdout"
#define STDERR_NAME "child.stderr"

/* The good configs' batch: 8 accounts of 10, two deposits, a withdrawal that
 * must wait for its deposit, a transfer, a balance read and one withdrawal
 * that no commit can ever fund. */
#define GOOD_TRANSACTIONS 6
#define GOOD_COMMITTED 5
#define GOOD_ABANDONED 1
#define GOOD_UNFUNDABLE_INDEX 5
#define GOOD_ACCOUNTS 8
#define GOOD_TOTAL (8 * 10 + 100 + 50 - 50)
static const unsigned long long good_final_state[GOOD_ACCOUNTS] = {50, 10, 70, 10, 10, 10, 10, 10};

/* What one run of the program left behind. */
typedef struct run_result {
  int status; /* the exit status; the test fails before this if a signal ended the child */
  char *out;  /* everything written on stdout, NUL-terminated */
  char *err;  /* everything written on stderr, NUL-terminated */
} run_result;

/* Each test runs in its own process, so these globals belong to one test. */
static char workdir[PATH_MAX];
static char program[PATH_MAX];
static char datadir[PATH_MAX];
static char clidir[PATH_MAX + 8];
static run_result last;

/* Resolves the program and the data folder to absolute paths, because the
 * child runs in the temporary folder where relative paths would break. */
static void setup(void) {
  cr_assert_not_null(realpath(test_run_path(), program), "cannot find prstm-run at '%s': %s", test_run_path(),
                     strerror(errno));
  cr_assert_not_null(realpath(test_data_dir(), datadir), "cannot find the test data at '%s': %s", test_data_dir(),
                     strerror(errno));
  snprintf(clidir, sizeof clidir, "%s/cli", datadir);
  test_make_scratch(workdir, sizeof workdir, "prstm-cli");
}

static void teardown(void) {
  free(last.out);
  free(last.err);
  last.out = last.err = NULL;
  if (workdir[0] != '\0') test_remove_tree(workdir);
}

TestSuite(cli, .init = setup, .fini = teardown);

/* Paths of files under tests/data/cli, and in the child's working folder. */
static const char *cli_data(const char *name) { return test_path(clidir, name); }
static const char *work_path(const char *name) { return test_path(workdir, name); }

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
  cr_assert_geq(fputs(text, f), 0, "cannot write %s", path);
  cr_assert_eq(fclose(f), 0);
}

/* Runs prstm-run with the NULL-terminated args in the working folder, waits
 * at most RUN_LIMIT_S seconds and collects its exit status and output. */
static const run_result *run_cli(const char *const *args) {
  char *argv[32];
  unsigned n = 0;
  argv[n++] = program;
  for (const char *const *a = args; *a != NULL; a++) {
    cr_assert_lt(n, sizeof argv / sizeof argv[0] - 1, "too many arguments");
    argv[n++] = (char *)*a;
  }
  argv[n] = NULL;

  int wstatus = 0;
  if (test_run_child(argv, workdir, work_path(STDOUT_NAME), work_path(STDERR_NAME), RUN_LIMIT_S, &wstatus) != 0)
    cr_assert_fail("prstm-run ran longer than %d s and was killed", RUN_LIMIT_S);
  cr_assert(WIFEXITED(wstatus), "prstm-run was ended by signal %d", WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);

  free(last.out);
  free(last.err);
  last.status = WEXITSTATUS(wstatus);
  last.out = test_slurp(work_path(STDOUT_NAME));
  last.err = test_slurp(work_path(STDERR_NAME));
  cr_assert_not_null(last.out, "the child's stdout was not captured");
  cr_assert_not_null(last.err, "the child's stderr was not captured");
  cr_assert(last.status != 126 && last.status != 127, "the program could not be run: %s", last.err);
  return &last;
}

#define RUN(...) run_cli((const char *const[]){__VA_ARGS__, NULL})

/* Checks the exit status and shows both streams when it is wrong. */
static void assert_status(const run_result *r, int want) {
  cr_assert_eq(r->status, want, "exit status %d, expected %d\nstdout:\n%s\nstderr:\n%s", r->status, want, r->out,
               r->err);
}

/* A message is exactly one non-empty line that the program signs. */
static void assert_one_line_message(const char *text) {
  size_t len = strlen(text);
  cr_assert_gt(len, 1, "expected a message on stderr, got nothing");
  cr_assert_eq(text[len - 1], '\n', "message '%s' does not end its line", text);
  cr_assert_eq(strchr(text, '\n'), text + len - 1, "message spans several lines:\n%s", text);
  cr_assert_eq(strncmp(text, "prstm-run: ", 11), 0, "message '%s' does not start with 'prstm-run: '", text);
}

static void assert_contains(const char *text, const char *needle, const char *stream) {
  cr_assert_not_null(strstr(text, needle), "%s lacks '%s':\n%s", stream, needle, text);
}

/* Fails when the working folder holds anything but the captured streams and
 * the listed names (a NULL-terminated list, NULL for none): no results, no
 * final state and no temporary file of an atomic write. */
static void assert_workdir_holds_only(const char *const *allowed) {
  DIR *d = opendir(workdir);
  cr_assert_not_null(d, "cannot list %s: %s", workdir, strerror(errno));
  struct dirent *e;
  char stray[256] = "";
  while ((e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, STDOUT_NAME) == 0 ||
        strcmp(name, STDERR_NAME) == 0)
      continue;
    int ok = 0;
    for (const char *const *a = allowed; a != NULL && *a != NULL; a++)
      if (strcmp(name, *a) == 0) ok = 1;
    if (!ok && stray[0] == '\0') snprintf(stray, sizeof stray, "%s", name);
  }
  closedir(d);
  cr_assert_eq(stray[0], '\0', "the working folder holds an unexpected file '%s'", stray);
}

/* Bad usage: status 2, one signed line on stderr naming needle, nothing on stdout. */
static void assert_usage_error(const run_result *r, const char *needle) {
  assert_status(r, 2);
  cr_assert_str_empty(r->out, "stdout should be empty, got:\n%s", r->out);
  assert_one_line_message(r->err);
  assert_contains(r->err, needle, "stderr");
  assert_workdir_holds_only(NULL);
}

/* Runs a config from tests/data/cli that must be refused as bad input. Its
 * output section names results.json and final-state.json, relative to the
 * working folder, so neither may exist afterwards. file is the data file the
 * message must name first, usually the config itself. */
static void expect_input_error(const char *config, const char *file, const char *needle) {
  const run_result *r = RUN(cli_data(config), "--backend", "cpu");
  assert_status(r, 2);
  cr_assert_str_empty(r->out, "stdout should be empty, got:\n%s", r->out);
  assert_one_line_message(r->err);
  char prefix[PATH_MAX + 64];
  snprintf(prefix, sizeof prefix, "prstm-run: %s", cli_data(file));
  cr_assert_eq(strncmp(r->err, prefix, strlen(prefix)), 0, "message does not name %s first:\n%s", cli_data(file),
               r->err);
  assert_contains(r->err, needle, "stderr");
  assert_workdir_holds_only(NULL);
}

/* Parses a JSON file the program wrote; the caller deletes the tree. */
static cJSON *parse_json_file(const char *path) {
  char *text = test_slurp(path);
  cr_assert_not_null(text, "%s was not written", path);
  cJSON *root = cJSON_Parse(text);
  cr_assert_not_null(root, "%s is not valid JSON:\n%s", path, text);
  free(text);
  return root;
}

static double json_number(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  cr_assert_not_null(item, "key '%s' is missing", key);
  cr_assert(cJSON_IsNumber(item), "key '%s' is not a number", key);
  return item->valuedouble;
}

static const char *json_string(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  cr_assert_not_null(item, "key '%s' is missing", key);
  cr_assert(cJSON_IsString(item), "key '%s' is not a string", key);
  return item->valuestring;
}

/* Checks the results file of a run of the good batch on the given backend. */
static void assert_good_results(const char *path, const char *backend) {
  cJSON *root = parse_json_file(path);
  cr_assert_eq(json_number(root, "transactions"), GOOD_TRANSACTIONS);
  cr_assert_eq(json_number(root, "committed"), GOOD_COMMITTED);
  cr_assert_eq(json_number(root, "abandoned"), GOOD_ABANDONED);
  cr_assert_eq(json_number(root, "failed"), 0);
  /* The early withdrawal meets its missing deposit at least once. */
  cr_assert_geq(json_number(root, "postponements"), 1);
  cr_assert_geq(json_number(root, "sweeps"), 2, "the unfundable withdrawal takes a sweep after the last commit");
  /* Times are measured, not left at 0, and add up: loading and execution
   * are parts of the total; throughput is commits per second of execution. */
  const cJSON *times = cJSON_GetObjectItemCaseSensitive(root, "time_s");
  cr_assert(cJSON_IsObject(times), "time_s is not an object");
  double load = json_number(times, "load"), transfer = json_number(times, "transfer");
  double execute = json_number(times, "execute"), total = json_number(times, "total");
  cr_assert_gt(load, 0);
  cr_assert_gt(execute, 0);
  cr_assert_geq(transfer, 0);
  cr_assert_geq(total, load + execute + transfer, "total %g < load %g + transfer %g + execute %g", total, load,
                transfer, execute);
  double throughput = json_number(root, "throughput_tx_s");
  cr_assert_float_eq(throughput, GOOD_COMMITTED / execute, throughput * 1e-9 + 1e-9, "throughput %g", throughput);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "invariant_ok")), "invariant_ok is not true");
  cr_assert_str_eq(json_string(root, "backend"), backend);
  cr_assert_str_not_empty(json_string(root, "device"));
  cr_assert_str_eq(json_string(root, "prstm_version"), PRSTM_VERSION_STRING);
  /* The one abandoned transaction is the unfundable withdrawal. */
  const cJSON *sample = cJSON_GetObjectItemCaseSensitive(root, "abandoned_sample");
  cr_assert(cJSON_IsArray(sample), "abandoned_sample is not an array");
  cr_assert_eq(cJSON_GetArraySize(sample), 1);
  cr_assert_eq(json_number(cJSON_GetArrayItem(sample, 0), "index"), GOOD_UNFUNDABLE_INDEX);
  cr_assert_str_eq(json_string(cJSON_GetArrayItem(sample, 0), "type"), "withdraw");
  cJSON_Delete(root);
}

/* Checks a final-state file of the good batch: every balance, and their sum. */
static void assert_good_final_state(const char *path) {
  cJSON *root = parse_json_file(path);
  cr_assert_str_eq(json_string(root, "workload"), "bank");
  cr_assert_eq(json_number(root, "words"), GOOD_ACCOUNTS);
  const cJSON *state = cJSON_GetObjectItemCaseSensitive(root, "state");
  cr_assert(cJSON_IsArray(state), "state is not an array");
  cr_assert_eq(cJSON_GetArraySize(state), GOOD_ACCOUNTS);
  unsigned long long total = 0;
  for (int i = 0; i < GOOD_ACCOUNTS; i++) {
    const cJSON *w = cJSON_GetArrayItem(state, i);
    cr_assert(cJSON_IsNumber(w), "state[%d] is not a number", i);
    cr_assert_eq((unsigned long long)w->valuedouble, good_final_state[i], "account %d holds %.0f, expected %llu", i,
                 w->valuedouble, good_final_state[i]);
    total += (unsigned long long)w->valuedouble;
  }
  cr_assert_eq(total, GOOD_TOTAL, "the balances sum to %llu, expected %d", total, GOOD_TOTAL);
  cJSON_Delete(root);
}

/* Whether the GPU branch of a test applies (test_gpu_usable: under
 * PRSTM_REQUIRE_GPU=1 a missing GPU fails the test). */
static int gpu_available(char *why, size_t whylen) {
  const prstm_workload *wl = prstm_workload_find("bank");
  cr_assert_not_null(wl, "the bank workload is not built in");
  return test_gpu_usable(wl, why, whylen);
}

/* --help and --version answer without a config. */

Test(cli, help_exits_0_and_prints_usage_naming_every_option) {
  const run_result *r = RUN("--help");
  assert_status(r, 0);
  cr_assert_str_empty(r->err, "stderr should be empty, got:\n%s", r->err);
  cr_assert_eq(strncmp(r->out, "usage: prstm-run CONFIG", 23), 0, "help does not open with the usage:\n%s", r->out);
  static const char *const options[] = {"--backend", "--threads",  "--lock-coverage", "--results",      "--final-state",
                                        "--verify",  "--watchdog", "--chunk-rows",    "--deltas",       "--quiet",
                                        "--help",    "--version",  "--hetero-policy", "--hetero-period"};
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) assert_contains(r->out, options[i], "help");
  assert_contains(r->out, "exit status", "help");
  assert_workdir_holds_only(NULL);
}

Test(cli, version_exits_0_and_prints_the_version) {
  const run_result *r = RUN("--version");
  assert_status(r, 0);
  cr_assert_str_empty(r->err);
  cr_assert_eq(strncmp(r->out, "prstm-run " PRSTM_VERSION_STRING " (", 12 + strlen(PRSTM_VERSION_STRING)), 0,
               "version line: %s", r->out);
#ifdef PRSTM_HAVE_CUDA
  assert_contains(r->out, "GPU backend built for CUDA architectures", "--version");
#else
  assert_contains(r->out, "no GPU backend in this build", "--version");
#endif
}

Test(cli, short_h_and_v_are_help_and_version) {
  const run_result *r = RUN("-h");
  assert_status(r, 0);
  cr_assert_eq(strncmp(r->out, "usage: prstm-run CONFIG", 23), 0, "-h:\n%s", r->out);
  r = RUN("-V");
  assert_status(r, 0);
  cr_assert_eq(strncmp(r->out, "prstm-run ", 10), 0, "-V:\n%s", r->out);
}

/* Bad usage is refused with exit status 2 before anything runs. */

Test(cli, no_config_exits_2_with_one_line_and_no_stdout) {
  assert_usage_error(run_cli((const char *const[]){NULL}), "missing CONFIG");
}

Test(cli, two_configs_exit_2_naming_the_second) {
  const char *second = cli_data("good_file.json");
  assert_usage_error(RUN(cli_data("good.json"), second), second);
}

Test(cli, unknown_option_exits_2_naming_it) { assert_usage_error(RUN(cli_data("good.json"), "--bogus"), "'--bogus'"); }

Test(cli, option_without_value_exits_2_naming_it) {
  assert_usage_error(RUN(cli_data("good.json"), "--threads"), "--threads");
}

Test(cli, non_numeric_threads_exit_2_naming_the_value) {
  assert_usage_error(RUN(cli_data("good.json"), "--threads", "abc"), "--threads");
  assert_contains(last.err, "'abc'", "stderr");
}

Test(cli, negative_threads_exit_2) { assert_usage_error(RUN(cli_data("good.json"), "--threads", "-1"), "--threads"); }

/* A thread count above the lock word's limit names that limit, however
 * large the number, also beyond 32 or 64 bits. */
Test(cli, threads_above_the_limit_name_the_limit_however_large) {
  const char *const counts[] = {"3000000", "5000000000", "99999999999999999999999"};
  for (unsigned i = 0; i < 3; i++) {
    assert_usage_error(RUN(cli_data("good.json"), "--threads", counts[i]), "--threads");
    assert_contains(last.err, "at most 2097151", "stderr");
  }
}

Test(cli, zero_lock_coverage_exits_2) {
  assert_usage_error(RUN(cli_data("good.json"), "--lock-coverage", "0"), "--lock-coverage");
}

Test(cli, zero_chunk_rows_exits_2_naming_the_value) {
  assert_usage_error(RUN(cli_data("good.json"), "--chunk-rows", "0"), "--chunk-rows");
  assert_contains(last.err, "'0'", "stderr");
}

Test(cli, unknown_deltas_mode_exits_2_naming_the_value) {
  assert_usage_error(RUN(cli_data("good.json"), "--deltas", "sideways"), "--deltas");
  assert_contains(last.err, "'sideways'", "stderr");
}

Test(cli, unknown_hetero_policy_exits_2_naming_the_value) {
  assert_usage_error(RUN(cli_data("good.json"), "--backend", "hetero", "--hetero-policy", "cpu-first"),
                     "--hetero-policy");
  assert_contains(last.err, "'cpu-first'", "stderr");
}

/* --hetero-policy replaces the config's policy: the results file of a
 * co-executed run names the one it ran under. */
Test(cli, hetero_policy_reaches_the_results_file) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "hetero", "--hetero-policy", "balanced");
  assert_status(r, 0);
  cJSON *root = parse_json_file(work_path("results.json"));
  const cJSON *co = cJSON_GetObjectItemCaseSensitive(root, "co_execution");
  const cJSON *policy = cJSON_GetObjectItemCaseSensitive(co, "policy");
  cr_assert(cJSON_IsString(policy), "co_execution.policy is not a string");
  cr_assert_str_eq(policy->valuestring, "balanced");
  cJSON_Delete(root);
}

Test(cli, bad_hetero_period_exits_2_naming_the_value) {
  assert_usage_error(RUN(cli_data("good.json"), "--backend", "hetero", "--hetero-period", "often"), "--hetero-period");
  assert_contains(last.err, "'often'", "stderr");
}

/* --hetero-period replaces the config's period: the results file of a
 * co-executed run gives the rows of its rounds. */
Test(cli, hetero_period_reaches_the_results_file) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "hetero", "--hetero-period", "4096");
  assert_status(r, 0);
  cJSON *root = parse_json_file(work_path("results.json"));
  const cJSON *co = cJSON_GetObjectItemCaseSensitive(root, "co_execution");
  const cJSON *period = cJSON_GetObjectItemCaseSensitive(co, "period_rows");
  cr_assert(cJSON_IsNumber(period), "co_execution.period_rows is not a number");
  cr_assert_eq(period->valuedouble, 4096);
  cJSON_Delete(root);
}

/* The summary says which path ran: the delta path on a batch of transfers
 * with --deltas on, the STM with --deltas off. */
Test(cli, summary_names_the_path_that_ran) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--deltas", "off");
  assert_status(r, 0);
  assert_contains(r->out, "  path               stm", "summary");
}

/* A chunked run has one commit order across its chunks: --verify checks it. */
Test(cli, chunk_rows_with_verify_runs_in_chunks_and_verifies_them) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--chunk-rows", "2", "--verify");
  assert_status(r, 0);
  assert_contains(r->out, "chunked: ", "the summary");
  assert_contains(r->out, "verify             ok: 5 transactions replayed", "the summary");
  cJSON *root = parse_json_file(work_path("results.json"));
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "verify_ok")), "verify_ok is not true");
  cJSON_Delete(root);
}

/* A chunked run says how much of its time took the state and gave it back,
 * and its rate without that; a whole run reports no such set-up. */
Test(cli, chunked_run_reports_its_set_up_apart) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--chunk-rows", "2");
  assert_status(r, 0);
  assert_contains(r->out, "  chunked run        ", "the summary");
  assert_contains(r->out, "with the state resident", "the summary");
  cJSON *root = parse_json_file(work_path("results.json"));
  const cJSON *times = cJSON_GetObjectItemCaseSensitive(root, "time_s");
  const double run = json_number(times, "run"), setup = json_number(times, "setup");
  cr_assert(setup > 0 && setup < run, "set-up %g s of a %g s run", setup, run);
  cr_assert_leq(run, json_number(times, "total"));
  cJSON_Delete(root);
  r = RUN(cli_data("good.json"), "--backend", "cpu");
  assert_status(r, 0);
  cr_assert(strstr(r->out, "chunked run") == NULL, "a whole run has no chunked line: %s", r->out);
  root = parse_json_file(work_path("results.json"));
  cr_assert_eq(json_number(cJSON_GetObjectItemCaseSensitive(root, "time_s"), "setup"), 0.0);
  cJSON_Delete(root);
}

Test(cli, unknown_backend_exits_2_naming_it) {
  assert_usage_error(RUN(cli_data("good.json"), "--backend", "foo"), "'foo'");
  assert_contains(last.err, "--backend", "stderr");
}

Test(cli, missing_config_file_exits_2_naming_it) {
  const char *config = cli_data("no_such_config.json");
  assert_usage_error(RUN(config, "--backend", "cpu"), config);
}

/* Bad input: each config names results.json and final-state.json, and the
 * working folder must hold neither afterwards. */

Test(cli, malformed_config_exits_2_with_line_and_column_and_writes_nothing) {
  /* The trailing comma on line 5 makes the closing bracket on line 6, column
   * 3, the first byte that cannot be JSON. */
  char where[PATH_MAX + 64];
  snprintf(where, sizeof where, "%s:6:3: malformed JSON", cli_data("malformed.json"));
  expect_input_error("malformed.json", "malformed.json", where);
}

Test(cli, unknown_workload_exits_2_and_writes_nothing) {
  expect_input_error("unknown_workload.json", "unknown_workload.json", "unknown workload 'mint'");
}

Test(cli, unknown_transaction_type_exits_2_and_writes_nothing) {
  expect_input_error("unknown_type.json", "unknown_type.json",
                     "batch.transactions[1].type: unknown transaction type 'steal'");
}

Test(cli, missing_key_exits_2_and_writes_nothing) {
  expect_input_error("missing_key.json", "missing_key.json", "batch.transactions[1].amount: missing");
}

Test(cli, mistyped_key_exits_2_and_writes_nothing) {
  expect_input_error("mistyped_key.json", "mistyped_key.json", "state.accounts: expected a non-negative integer");
}

Test(cli, account_out_of_range_exits_2_and_writes_nothing) {
  expect_input_error("account_out_of_range.json", "account_out_of_range.json",
                     "batch.transactions[1].to 8 out of range");
}

Test(cli, negative_amount_exits_2_and_writes_nothing) {
  expect_input_error("negative_amount.json", "negative_amount.json",
                     "batch.transactions[0].amount: expected a non-negative integer");
}

Test(cli, non_integer_amount_exits_2_and_writes_nothing) {
  expect_input_error("fractional_amount.json", "fractional_amount.json",
                     "batch.transactions[0].amount: expected a non-negative integer");
}

Test(cli, empty_inline_batch_exits_2_and_writes_nothing) {
  expect_input_error("empty_batch.json", "empty_batch.json", "batch is empty");
}

/* Problems inside a batch file are reported against that file (found next to
 * the config), which is the file the user must fix. */

Test(cli, unreadable_batch_file_exits_2_naming_it_and_writes_nothing) {
  expect_input_error("missing_batch_file.json", "no_such_batch.jsonl", "cannot read");
}

Test(cli, empty_batch_file_exits_2_naming_it_and_writes_nothing) {
  expect_input_error("empty_batch_file.json", "empty.jsonl", "batch is empty");
}

Test(cli, bad_record_in_batch_file_exits_2_with_its_line_and_writes_nothing) {
  expect_input_error("bad_record_file.json", "bad_record.jsonl", "bad_record.jsonl:2: account 8 out of range");
}

Test(cli, bad_input_leaves_an_existing_results_file_intact) {
  /* A good run writes results.json; a later bad config naming the same file
   * must neither replace it nor leave a temporary file beside it. */
  assert_status(RUN(cli_data("good.json"), "--backend", "cpu", "--quiet"), 0);
  char *before = test_slurp(work_path("results.json"));
  cr_assert_not_null(before, "the good run wrote no results.json");
  const run_result *r = RUN(cli_data("unknown_type.json"), "--backend", "cpu");
  assert_status(r, 2);
  assert_one_line_message(r->err);
  char *after = test_slurp(work_path("results.json"));
  cr_assert_not_null(after, "results.json was removed");
  cr_assert_str_eq(after, before, "results.json changed");
  assert_workdir_holds_only((const char *const[]){"results.json", NULL});
  free(before);
  free(after);
}

Test(cli, bad_input_leaves_a_results_file_named_on_the_command_line_intact) {
  write_text(work_path("mine.json"), "{\"kept\": true}\n");
  const run_result *r = RUN(cli_data("negative_amount.json"), "--backend", "cpu", "--results", "mine.json",
                            "--final-state", "state.json");
  assert_status(r, 2);
  char *after = test_slurp(work_path("mine.json"));
  cr_assert_not_null(after, "mine.json was removed");
  cr_assert_str_eq(after, "{\"kept\": true}\n", "mine.json changed");
  free(after);
  assert_workdir_holds_only((const char *const[]){"mine.json", NULL});
}

/* Good configs run, print a summary and write their outputs. */

Test(cli, good_config_on_cpu_exits_0_with_summary_and_results) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--threads", "64");
  assert_status(r, 0);
  cr_assert_str_empty(r->err, "stderr should be empty, got:\n%s", r->err);
  assert_contains(r->out, "committed          5", "the summary");
  assert_contains(r->out, "abandoned          1", "the summary");
  assert_contains(r->out, "invariant          ok", "the summary");
  assert_contains(r->out, "results            results.json", "the summary");
  assert_good_results(work_path("results.json"), "cpu");

  /* The command line overrides the config's auto backend and its 2 threads. */
  cJSON *root = parse_json_file(work_path("results.json"));
  const cJSON *engine = cJSON_GetObjectItemCaseSensitive(root, "engine");
  cr_assert(cJSON_IsObject(engine), "engine is not an object");
  cr_assert_str_eq(json_string(engine, "backend_requested"), "cpu");
  cr_assert_eq(json_number(engine, "threads"), 64);
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(root, "fallback"), "a cpu run reports a fallback");
  cJSON_Delete(root);
  assert_workdir_holds_only((const char *const[]){"results.json", NULL});
}

Test(cli, lock_coverage_option_reaches_the_results) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--lock-coverage", "3", "--quiet");
  assert_status(r, 0);
  cJSON *root = parse_json_file(work_path("results.json"));
  cr_assert_eq(json_number(cJSON_GetObjectItemCaseSensitive(root, "engine"), "lock_coverage"), 3);
  cJSON_Delete(root);
  assert_good_results(work_path("results.json"), "cpu");
}

/* --partition-state gives backend multi's units their ranges of the state
 * alone: the summary and the results say so, and the run verifies with the
 * outcomes of any other backend. */
Test(cli, partition_state_option_partitions_the_multi_units_state) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "multi", "--units", "2", "--partition-state",
                            "--verify", "--final-state", "state.json");
  assert_status(r, 0);
  assert_contains(r->out, "units              2, state partitioned", "the summary");
  assert_contains(r->out, "verify             ok", "the summary");
  cJSON *root = parse_json_file(work_path("results.json"));
  const cJSON *multi = cJSON_GetObjectItemCaseSensitive(root, "multi");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(multi, "partitioned")), "multi.partitioned is not true");
  cr_assert_eq(json_number(multi, "away_rows"), 0);
  cr_assert_eq(json_number(root, "committed"), GOOD_COMMITTED);
  cr_assert_eq(json_number(root, "abandoned"), GOOD_ABANDONED);
  cJSON_Delete(root);
  assert_good_final_state(work_path("state.json"));
}

Test(cli, final_state_option_writes_balances_summing_to_the_expected_total) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--final-state", "state.json");
  assert_status(r, 0);
  assert_contains(r->out, "final state        state.json", "the summary");
  assert_good_final_state(work_path("state.json"));
  assert_workdir_holds_only((const char *const[]){"results.json", "state.json", NULL});
}

/* Chunks of two rows split the withdrawal from the deposit that funds it:
 * it is carried to a later chunk and commits there, the unfundable one is
 * abandoned only at the end, and every outcome and balance is as unchunked. */
Test(cli, chunk_rows_option_runs_in_chunks_with_the_same_outcomes_and_state) {
  const run_result *r =
      RUN(cli_data("good.json"), "--backend", "cpu", "--chunk-rows", "2", "--final-state", "state.json");
  assert_status(r, 0);
  assert_contains(r->out, "chunked: ", "the summary");
  assert_good_results(work_path("results.json"), "cpu");
  assert_good_final_state(work_path("state.json"));
}

/* The same through the config's engine.chunk_rows. */
Test(cli, config_chunk_rows_runs_in_chunks_with_the_same_outcomes_and_state) {
  const run_result *r = RUN(cli_data("good_chunked.json"), "--backend", "cpu", "--final-state", "state.json");
  assert_status(r, 0);
  assert_contains(r->out, "chunked: ", "the summary");
  assert_good_results(work_path("results.json"), "cpu");
  assert_good_final_state(work_path("state.json"));
}

Test(cli, chunk_rows_option_with_a_verified_config_verifies_the_chunked_run) {
  const run_result *r = RUN(cli_data("good_verified.json"), "--backend", "cpu", "--chunk-rows", "3");
  assert_status(r, 0);
  assert_contains(r->out, "chunked: ", "the summary");
  assert_contains(r->out, "verify             ok: ", "the summary");
}

/* ---- promises that only a broken workload can test ---- */

/* Writes a config of the test plugin "broken" (tests/plugins/broken.c) into
 * the working folder: its invariant holds or fails as `invariant` says, and
 * its batch is `count` inline transactions of `type` on counters 0 to 3. */
static const char *broken_config(int invariant, const char *type, unsigned count) {
  static char text[16384];
  size_t at = (size_t)snprintf(text, sizeof text,
                               "{\"plugin\": \"%s\", \"engine\": {\"backend\": \"cpu\", \"threads\": 4},\n"
                               " \"state\": {\"words\": 4, \"invariant\": %d},\n"
                               " \"batch\": {\"transactions\": [",
                               test_built_path(PRSTM_BROKEN_PLUGIN, "libprstm_test_broken.so"), invariant);
  for (unsigned i = 0; i < count; i++)
    at += (size_t)snprintf(text + at, sizeof text - at, "%s{\"type\": \"%s\", \"counter\": %u}", i ? ", " : "", type,
                           i % 4);
  snprintf(text + at, sizeof text - at, "]},\n \"output\": {\"results\": \"results.json\"}}\n");
  write_text(work_path("broken.json"), text);
  return work_path("broken.json");
}

/* A body that is not deterministic makes the replay differ from the run:
 * exit 3, the verdict in the summary and the results file. */
Test(cli, verification_mismatch_exits_3_and_is_reported) {
  const run_result *r = RUN(broken_config(1, "stamp", 40), "--verify");
  assert_status(r, 3);
  assert_contains(r->err, "prstm-run: verification failed: ", "stderr");
  assert_contains(r->out, "verify             FAILED: ", "the summary");
  cJSON *root = parse_json_file(work_path("results.json"));
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "verify_ok")), "verify_ok is not false");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "verify");
  cr_assert_str_not_empty(json_string(v, "message"));
  cr_assert(json_number(v, "first_transaction") >= 0 || json_number(v, "first_word") >= 0,
            "the report names neither a transaction nor a word");
  cJSON_Delete(root);
}

Test(cli, violated_invariant_exits_1_and_is_reported) {
  const run_result *r = RUN(broken_config(0, "bump", 40));
  assert_status(r, 1);
  assert_contains(r->err, "prstm-run: invariant violated: state.invariant is 0", "stderr");
  assert_contains(r->out, "invariant          VIOLATED", "the summary");
  cJSON *root = parse_json_file(work_path("results.json"));
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "invariant_ok")), "invariant_ok is not false");
  cr_assert_eq(json_number(root, "committed"), 40);
  cJSON_Delete(root);
}

/* A livelock: nothing ever commits, and --watchdog 1 stops the run. */
Test(cli, watchdog_stop_exits_1_and_writes_nothing) {
  const run_result *r = RUN(broken_config(1, "spin", 8), "--watchdog", "1");
  assert_status(r, 1);
  assert_one_line_message(r->err);
  assert_contains(r->err, "the watchdog stopped the run (0 of 8 transactions were final", "stderr");
  cr_assert(!exists(work_path("results.json")), "a stopped run wrote its results");
}

/* failed_sample lists the failed transactions with their index, type and
 * the reason their type gives. */
Test(cli, failed_sample_lists_failures_with_their_reasons) {
  const run_result *r = RUN(broken_config(1, "reject", 3));
  assert_status(r, 0);
  cJSON *root = parse_json_file(work_path("results.json"));
  cr_assert_eq(json_number(root, "failed"), 3);
  const cJSON *sample = cJSON_GetObjectItemCaseSensitive(root, "failed_sample");
  cr_assert(cJSON_IsArray(sample), "failed_sample is not an array");
  cr_assert_eq(cJSON_GetArraySize(sample), 3);
  for (int i = 0; i < 3; i++) {
    const cJSON *o = cJSON_GetArrayItem(sample, i);
    cr_assert_eq(json_number(o, "index"), i);
    cr_assert_str_eq(json_string(o, "type"), "reject");
    cr_assert_str_eq(json_string(o, "reason"), "rejected on purpose");
  }
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "abandoned_sample")), 0);
  cJSON_Delete(root);
}

Test(cli, results_option_overrides_the_configs_results_path) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--results", "elsewhere.json");
  assert_status(r, 0);
  assert_contains(r->out, "results            elsewhere.json", "the summary");
  assert_good_results(work_path("elsewhere.json"), "cpu");
  cr_assert(!exists(work_path("results.json")), "the config's results path was written too");
  assert_workdir_holds_only((const char *const[]){"elsewhere.json", NULL});
}

/* The results replace the old file by a rename, never by writing into it:
 * a reader of the old file keeps reading its old bytes. */
Test(cli, results_option_replaces_an_existing_file) {
  write_text(work_path("results.json"), "old\n");
  FILE *reader = fopen(work_path("results.json"), "rb");
  cr_assert_not_null(reader);
  struct stat before, after;
  cr_assert_eq(fstat(fileno(reader), &before), 0);
  assert_status(RUN(cli_data("good.json"), "--backend", "cpu", "--quiet"), 0);
  cr_assert_eq(stat(work_path("results.json"), &after), 0);
  cr_assert_neq(after.st_ino, before.st_ino, "results.json was written in place");
  char seen[16] = "";
  size_t got = fread(seen, 1, sizeof seen - 1, reader);
  seen[got] = '\0';
  cr_assert_str_eq(seen, "old\n", "the old file changed under its reader");
  fclose(reader);
  assert_good_results(work_path("results.json"), "cpu");
  assert_workdir_holds_only((const char *const[]){"results.json", NULL});
}

Test(cli, quiet_prints_nothing_and_still_writes_the_results) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--quiet");
  assert_status(r, 0);
  cr_assert_str_empty(r->out, "--quiet printed:\n%s", r->out);
  cr_assert_str_empty(r->err, "--quiet printed on stderr:\n%s", r->err);
  assert_good_results(work_path("results.json"), "cpu");
}

Test(cli, jsonl_batch_file_next_to_the_config_runs) {
  /* The working folder does not hold the batch file, so it can only be found
   * next to the config; the config also names a final state. */
  const run_result *r = RUN(cli_data("good_file.json"), "--backend", "cpu");
  assert_status(r, 0);
  cr_assert_str_empty(r->err, "stderr should be empty, got:\n%s", r->err);
  assert_contains(r->out, "invariant          ok", "the summary");
  assert_good_results(work_path("results.json"), "cpu");
  assert_good_final_state(work_path("final-state.json"));
  assert_workdir_holds_only((const char *const[]){"results.json", "final-state.json", NULL});
}

/* Checks before long work: a missing output folder, a generated batch
 * larger than the machine's memory and a CPU thread count far beyond its
 * cores are refused at once, exit 2, with nothing run or written. */
Test(cli, missing_output_folder_exits_2_before_the_run) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--quiet", "--results", "no/such/dir/r.json");
  assert_status(r, 2);
  cr_assert_str_empty(r->out);
  assert_one_line_message(r->err);
  assert_contains(r->err, "'no/such/dir' of 'no/such/dir/r.json' does not exist; nothing was run", "stderr");
  assert_workdir_holds_only(NULL);
}

Test(cli, batch_larger_than_memory_exits_2_at_once) {
  const run_result *r = RUN(cli_data("huge_generate.json"), "--backend", "cpu");
  assert_status(r, 2);
  cr_assert_str_empty(r->out);
  assert_one_line_message(r->err);
  assert_contains(r->err, "batch.generate.transactions: 1000000000000000 rows need at least", "stderr");
  assert_contains(r->err, "GiB; this machine has", "stderr");
  assert_workdir_holds_only(NULL);
}

Test(cli, cpu_threads_far_beyond_the_cores_exit_2_at_once) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "cpu", "--threads", "100000");
  assert_status(r, 2);
  cr_assert_str_empty(r->out);
  assert_one_line_message(r->err);
  assert_contains(r->err, "100000 CPU threads; at most", "stderr");
  assert_workdir_holds_only(NULL);
}

/* The backend options choose where the batch runs. */

Test(cli, gpu_backend_needs_a_usable_gpu) {
  char why[512] = "";
  const run_result *r = RUN(cli_data("good.json"), "--backend", "gpu");
  if (gpu_available(why, sizeof why)) {
    assert_status(r, 0);
    assert_contains(r->out, "invariant          ok", "the summary");
    assert_contains(r->out, "gpu memory", "the summary");
    assert_good_results(work_path("results.json"), "gpu");
  } else {
    /* Without a GPU it is a runtime failure, not bad input, and nothing is written. */
    assert_status(r, 1);
    cr_assert_str_empty(r->out, "stdout should be empty, got:\n%s", r->out);
    assert_one_line_message(r->err);
    assert_contains(r->err, "no GPU", "stderr");
    assert_workdir_holds_only(NULL);
  }
}

Test(cli, auto_backend_falls_back_to_the_cpu_with_a_notice) {
  char why[512] = "";
  const run_result *r = RUN(cli_data("good.json"), "--backend", "auto");
  assert_status(r, 0);
  assert_contains(r->out, "invariant          ok", "the summary");
  if (gpu_available(why, sizeof why)) {
    cr_assert_str_empty(r->err, "stderr should be empty on a GPU, got:\n%s", r->err);
    assert_good_results(work_path("results.json"), "gpu");
  } else {
    assert_one_line_message(r->err);
    assert_contains(r->err, "auto chose the CPU backend", "stderr");
    assert_good_results(work_path("results.json"), "cpu");
    /* The results keep the reason the GPU was passed over. */
    cJSON *root = parse_json_file(work_path("results.json"));
    cr_assert_str_not_empty(json_string(root, "fallback"));
    cJSON_Delete(root);
  }
}

Test(cli, quiet_auto_backend_prints_no_fallback_notice) {
  const run_result *r = RUN(cli_data("good.json"), "--backend", "auto", "--quiet");
  assert_status(r, 0);
  cr_assert_str_empty(r->out, "--quiet printed:\n%s", r->out);
  cr_assert_str_empty(r->err, "--quiet printed on stderr:\n%s", r->err);
}

/* Mix weights are relative: a mix that does not sum to 1 runs, and a notice
 * on stderr says how the shares are taken (not with --quiet). */
Test(cli, mix_weights_not_summing_to_1_are_noticed_as_relative) {
  write_text(work_path("mix.json"),
             "{\"workload\": \"bank\", \"engine\": {\"backend\": \"cpu\", \"threads\": 2},\n"
             " \"state\": {\"accounts\": 64, \"initial_balance\": 100},\n"
             " \"batch\": {\"generate\": {\"transactions\": 1000, \"mix\": {\"transfer\": 0.5, \"deposit\": 0.2}}},\n"
             " \"output\": {\"results\": \"results.json\"}}\n");
  const run_result *r = RUN(work_path("mix.json"));
  assert_status(r, 0);
  assert_contains(r->err, "batch.generate.mix: the weights sum to 0.7, not 1: each type's share is its weight over 0.7",
                  "stderr");
  r = RUN(work_path("mix.json"), "--quiet");
  assert_status(r, 0);
  cr_assert(strstr(r->err, "batch.generate.mix") == NULL, "--quiet printed the notice: %s", r->err);
}
