/* test_loaders.c: behaviour of the JSON config, JSON Lines and atomic-write loaders, including every error message users see. */
/* nftw, mkdtemp and chmod are POSIX; ask for them explicitly under -std=c11. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prstm.h"
#include "loaders_internal.h"
#include "test_paths.h"

/* Bank type indices, as documented by the bank workload. */
enum { DEPOSIT = 0, WITHDRAW = 1, TRANSFER = 2, BALANCE = 3, TRANSFER_MULTI = 4 };

static char err[4096];

/* Paths of data files; a few rotating buffers let one assertion use two. */
static const char *data_path(const char *name) {
  static char bufs[4][1024];
  static unsigned k;
  char *b = bufs[k++ % 4];
  snprintf(b, sizeof bufs[0], "%s/loaders/%s", test_data_dir(), name);
  return b;
}

static const prstm_workload *bank(void) {
  const prstm_workload *wl = prstm_workload_find("bank");
  cr_assert_not_null(wl, "the bank workload is not built in");
  return wl;
}

static prstm_batch *new_batch(void) {
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, bank()), 0);
  cr_assert_not_null(b);
  return b;
}

/* Every message is one line that starts with the file it is about. */
static void assert_message(const char *file, const char *needle) {
  cr_assert_eq(strncmp(err, file, strlen(file)), 0, "message '%s' does not start with '%s'", err, file);
  cr_assert_null(strchr(err, '\n'), "message '%s' spans lines", err);
  cr_assert_not_null(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
}

/* Loads a config that must be rejected by prstm_config_load itself. */
static void expect_config_error(const char *name, int code, const char *needle) {
  prstm_config cfg;
  const char *path = data_path(name);
  err[0] = '\0';
  int rc = prstm_config_load(path, &cfg, err, sizeof err);
  cr_assert_eq(rc, code, "%s: got %d (%s), expected %d; message '%s'", name, rc, prstm_strerror(rc), code, err);
  assert_message(path, needle);
  /* A failed load leaves nothing to free, but freeing must still be safe. */
  prstm_config_free(&cfg);
}

/* Loads a config that parses, then must fail while filling its batch. */
static void expect_batch_error(const char *name, uint64_t nwords, int code, const char *file, const char *needle) {
  prstm_config cfg;
  int rc = prstm_config_load(data_path(name), &cfg, err, sizeof err);
  cr_assert_eq(rc, 0, "%s: %s", name, err);
  prstm_batch *b = new_batch();
  err[0] = '\0';
  rc = prstm_config_load_batch(&cfg, nwords, b, err, sizeof err);
  cr_assert_eq(rc, code, "%s: got %d (%s), expected %d; message '%s'", name, rc, prstm_strerror(rc), code, err);
  assert_message(file, needle);
  prstm_batch_destroy(b);
  prstm_config_free(&cfg);
}

/* Loads a JSON Lines file that must be rejected, against 8 words of state. */
static void expect_jsonl_error(const char *name, int code, const char *needle) {
  prstm_batch *b = new_batch();
  const char *path = data_path(name);
  err[0] = '\0';
  int rc = prstm_load_jsonl(path, bank(), 8, b, err, sizeof err);
  cr_assert_eq(rc, code, "%s: got %d (%s), expected %d; message '%s'", name, rc, prstm_strerror(rc), code, err);
  assert_message(path, needle);
  prstm_batch_destroy(b);
}

static void expect_row(const prstm_batch *b, uint64_t i, unsigned type, const prstm_word *args, unsigned nargs) {
  cr_assert_eq(prstm_batch_type(b, i), type, "row %llu: type %u, expected %u", (unsigned long long)i,
               prstm_batch_type(b, i), type);
  for (unsigned c = 0; c < nargs; c++)
    cr_assert_eq(prstm_batch_arg(b, i, c), args[c], "row %llu column %u: %llu, expected %llu", (unsigned long long)i, c,
                 (unsigned long long)prstm_batch_arg(b, i, c), (unsigned long long)args[c]);
}

/* ---- scratch folder for tests that write files ---- */

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/prstm_test_loaders_XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  chmod(path, 0700);
  return remove(path);
}

static void remove_tmpdir(void) {
  if (tmpdir[0] != '\0') nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tmp_path(const char *name) {
  static char bufs[4][512];
  static unsigned k;
  char *b = bufs[k++ % 4];
  snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
  return b;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  cr_assert_eq(fclose(f), 0);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

/* ================= configs that load ================= */

Test(loaders, inline_config_fills_every_section) {
  prstm_config cfg;
  int rc = prstm_config_load(data_path("valid_inline.json"), &cfg, err, sizeof err);
  cr_assert_eq(rc, 0, "%s", err);
  cr_assert_eq(cfg.workload, bank());
  cr_assert_str_eq(cfg.path, data_path("valid_inline.json"));
  cr_assert_eq(cfg.options.backend, PRSTM_BACKEND_CPU);
  cr_assert_eq(cfg.options.threads, 4);
  cr_assert_eq(cfg.options.lock_coverage, 2);
  cr_assert_eq(cfg.options.semantic, PRSTM_SEMANTIC_RETRY);
  cr_assert_eq(cfg.options.retry_limit, 7);
  cr_assert_eq(cfg.options.watchdog_s, 9);
  cr_assert_eq(cfg.options.chunk_rows, 3);
  cr_assert_eq(cfg.state.accounts, 8);
  cr_assert_eq(cfg.state.initial_balance, 100);
  cr_assert_eq(cfg.batch_kind, PRSTM_BATCH_INLINE);
  cr_assert_not_null(cfg.inline_json);
  cr_assert_str_eq(cfg.results_path, "out/results.json");
  cr_assert_str_eq(cfg.final_state_path, "");
  prstm_config_free(&cfg);
  cr_assert_null(cfg.inline_json);
}

Test(loaders, minimal_config_takes_documented_defaults) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_minimal.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_options def;
  prstm_options_init(&def);
  cr_assert_eq(cfg.options.backend, def.backend);
  cr_assert_eq(cfg.options.threads, def.threads);
  cr_assert_eq(cfg.options.lock_coverage, def.lock_coverage);
  cr_assert_eq(cfg.options.semantic, def.semantic);
  cr_assert_eq(cfg.options.retry_limit, def.retry_limit);
  cr_assert_eq(cfg.options.watchdog_s, def.watchdog_s);
  cr_assert_eq(cfg.options.chunk_rows, def.chunk_rows);
  cr_assert_eq(cfg.state.accounts, 1);
  cr_assert_eq(cfg.state.initial_balance, 0);
  cr_assert_str_eq(cfg.results_path, "");
  cr_assert_str_eq(cfg.final_state_path, "");
  prstm_config_free(&cfg);
}

Test(loaders, inline_batch_appends_args_in_declaration_order) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_inline.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_config_load_batch(&cfg, 8, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 4);
  expect_row(b, 0, DEPOSIT, (const prstm_word[]){1, 50}, 2);
  expect_row(b, 1, TRANSFER, (const prstm_word[]){1, 2, 30}, 3);
  expect_row(b, 2, BALANCE, (const prstm_word[]){2}, 1);
  /* An address list is its count followed by its entries. */
  expect_row(b, 3, TRANSFER_MULTI, (const prstm_word[]){0, 5, 3, 3, 4, 7}, 6);
  prstm_batch_destroy(b);
  prstm_config_free(&cfg);
}

Test(loaders, batch_file_is_resolved_next_to_the_config) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_file.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.batch_kind, PRSTM_BATCH_FILE);
  cr_assert_str_eq(cfg.batch_file, data_path("bank_small.jsonl"));
  /* Output paths are kept exactly as written, not resolved. */
  cr_assert_str_eq(cfg.results_path, "");
  cr_assert_str_eq(cfg.final_state_path, "final.json");
  prstm_config_free(&cfg);
}

Test(loaders, absolute_batch_file_is_kept_as_written, .init = make_tmpdir, .fini = remove_tmpdir) {
  char text[1024];
  snprintf(text, sizeof text, "{\"workload\": \"bank\", \"state\": {\"accounts\": 8}, \"batch\": {\"file\": \"%s\"}}",
           data_path("bank_small.jsonl"));
  write_text(tmp_path("abs.json"), text);
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(tmp_path("abs.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(cfg.batch_file, data_path("bank_small.jsonl"));
  prstm_config_free(&cfg);
}

Test(loaders, file_batch_skips_blank_lines) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_file.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_config_load_batch(&cfg, 8, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 4);
  expect_row(b, 0, DEPOSIT, (const prstm_word[]){0, 10}, 2);
  expect_row(b, 1, WITHDRAW, (const prstm_word[]){7, 3}, 2);
  expect_row(b, 2, TRANSFER_MULTI, (const prstm_word[]){2, 1, 4, 0, 1, 5, 6}, 7);
  /* Key order in the object does not matter; 2^53-1 is the largest integer. */
  expect_row(b, 3, DEPOSIT, (const prstm_word[]){3, 9007199254740991ull}, 2);
  prstm_batch_destroy(b);
  prstm_config_free(&cfg);
}

Test(loaders, generate_section_fills_the_spec) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_generate.json"), &cfg, err, sizeof err), 0, "%s", err);
  const prstm_generate_spec *g = &cfg.generate;
  cr_assert_eq(cfg.batch_kind, PRSTM_BATCH_GENERATE);
  cr_assert_eq(g->transactions, 500);
  cr_assert_eq(g->seed, 42);
  cr_assert_eq(g->accounts_per_tx, 3);
  cr_assert_eq(g->amount_min, 5);
  cr_assert_eq(g->amount_max, 9);
  cr_assert_float_eq(g->read_only, 0.25, 1e-12);
  cr_assert_float_eq(g->semantic_ratio, 0.5, 1e-12);
  cr_assert_eq(g->presorted, 1);
  cr_assert_eq(g->nmix, 3);
  cr_assert_str_eq(g->mix_names[0], "transfer");
  cr_assert_str_eq(g->mix_names[1], "balance");
  cr_assert_str_eq(g->mix_names[2], "deposit");
  cr_assert_float_eq(g->mix_weights[0], 3.0, 1e-12);
  cr_assert_float_eq(g->mix_weights[1], 1.5, 1e-12);
  cr_assert_float_eq(g->mix_weights[2], 0.0, 1e-12);
  cr_assert_eq(cfg.state.accounts, 64);
  cr_assert_eq(cfg.state.initial_balance, 1000);
  prstm_config_free(&cfg);
}

Test(loaders, generate_defaults_apply_when_keys_are_absent) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("generate_defaults.json"), &cfg, err, sizeof err), 0, "%s", err);
  const prstm_generate_spec *g = &cfg.generate;
  cr_assert_eq(g->transactions, 10);
  cr_assert_eq(g->seed, 1);
  cr_assert_eq(g->nmix, 0, "no mix means the workload's default mix");
  cr_assert_eq(g->accounts_per_tx, 2);
  cr_assert_eq(g->amount_min, 1);
  cr_assert_eq(g->amount_max, 100);
  cr_assert_lt(g->read_only, 0.0, "read_only not given is negative");
  cr_assert_float_eq(g->semantic_ratio, 0.0, 1e-12);
  cr_assert_eq(g->presorted, 0);
  prstm_config_free(&cfg);
}

Test(loaders, generated_batch_has_the_requested_size) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("generate_defaults.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_config_load_batch(&cfg, cfg.state.accounts, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 10);
  prstm_batch_destroy(b);
  prstm_config_free(&cfg);
}

Test(loaders, config_free_is_safe_twice) {
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(data_path("valid_inline.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_not_null(cfg.inline_json, "an inline batch is kept parsed until the config is freed");
  prstm_config_free(&cfg);
  /* What a free gives back it forgets, which is what makes a second free
   * harmless (and ASan, in CI, would see a double free). */
  cr_assert_null(cfg.inline_json);
  cr_assert_null(cfg.plugin);
  prstm_config_free(&cfg);
  cr_assert_null(cfg.inline_json);
  prstm_config_free(NULL);
}

Test(loaders, windows_line_endings_are_accepted, .init = make_tmpdir, .fini = remove_tmpdir) {
  write_text(tmp_path("crlf.jsonl"),
             "{\"type\": \"balance\", \"account\": 1}\r\n\r\n"
             "{\"type\": \"balance\", \"account\": 2}\r\n");
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_load_jsonl(tmp_path("crlf.jsonl"), bank(), 8, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 2);
  expect_row(b, 1, BALANCE, (const prstm_word[]){2}, 1);
  prstm_batch_destroy(b);
}

/* ================= malformed and unreadable files ================= */

Test(loaders, malformed_json_reports_line_and_column) {
  expect_config_error("malformed.json", PRSTM_EPARSE, "malformed.json:3:27: malformed JSON");
}

Test(loaders, trailing_text_after_the_config_is_malformed) {
  expect_config_error("trailing_garbage.json", PRSTM_EPARSE, "trailing_garbage.json:2:1: malformed JSON");
}

Test(loaders, empty_config_file_is_malformed) {
  expect_config_error("empty_config.json", PRSTM_EPARSE, "empty_config.json:1:1: malformed JSON");
}

Test(loaders, config_must_be_an_object) {
  expect_config_error("not_object.json", PRSTM_ECONFIG, ": expected a JSON object");
}

Test(loaders, missing_config_file_cannot_be_read) {
  expect_config_error("does_not_exist.json", PRSTM_EIO, "does_not_exist.json: cannot read: No such file or directory");
}

Test(loaders, folder_given_as_config_cannot_be_read) {
  prstm_config cfg;
  int rc = prstm_config_load(test_data_dir(), &cfg, err, sizeof err);
  cr_assert_eq(rc, PRSTM_EIO, "got %d: %s", rc, err);
  assert_message(test_data_dir(), ": cannot read: Is a directory");
}

Test(loaders, unreadable_config_cannot_be_read, .init = make_tmpdir, .fini = remove_tmpdir) {
  /* root reads any file whatever its mode, so the case cannot be built.
   * Criterion runs no .fini after a skip: the folder goes first. */
  if (geteuid() == 0) {
    remove_tmpdir();
    cr_skip_test("running as root: permissions are not enforced");
  }
  write_text(tmp_path("locked.json"), "{}");
  cr_assert_eq(chmod(tmp_path("locked.json"), 0), 0);
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(tmp_path("locked.json"), &cfg, err, sizeof err), PRSTM_EIO);
  assert_message(tmp_path("locked.json"), ": cannot read: Permission denied");
}

Test(loaders, jsonl_malformed_line_reports_file_line_and_column) {
  expect_jsonl_error("malformed.jsonl", PRSTM_EPARSE, "malformed.jsonl:3:20: malformed JSON");
}

Test(loaders, jsonl_two_objects_on_one_line_are_malformed) {
  expect_jsonl_error("two_objects_one_line.jsonl", PRSTM_EPARSE, "two_objects_one_line.jsonl:1:35: malformed JSON");
}

Test(loaders, missing_jsonl_file_cannot_be_read) {
  expect_jsonl_error("does_not_exist.jsonl", PRSTM_EIO, "does_not_exist.jsonl: cannot read: No such file or directory");
}

Test(loaders, folder_given_as_jsonl_cannot_be_read) {
  prstm_batch *b = new_batch();
  int rc = prstm_load_jsonl(test_data_dir(), bank(), 8, b, err, sizeof err);
  cr_assert_eq(rc, PRSTM_EIO, "got %d: %s", rc, err);
  assert_message(test_data_dir(), ": cannot read: Is a directory");
  prstm_batch_destroy(b);
}

/* ================= config keys ================= */

Test(loaders, unknown_workload_is_unknown) {
  expect_config_error("unknown_workload.json", PRSTM_EUNKNOWN, ": workload: unknown workload 'casino'");
}

Test(loaders, missing_workload_is_reported) {
  expect_config_error("missing_workload.json", PRSTM_ECONFIG, ": workload: missing");
}

Test(loaders, unknown_engine_key_names_its_path) {
  expect_config_error("unknown_key_engine.json", PRSTM_ECONFIG, ": unknown key 'engine.thread'");
}

Test(loaders, unknown_top_level_key_is_rejected) {
  expect_config_error("unknown_key_top.json", PRSTM_ECONFIG, ": unknown key 'outputs'");
}

Test(loaders, unknown_deeply_nested_key_names_its_path) {
  expect_config_error("unknown_key_amount.json", PRSTM_ECONFIG, ": unknown key 'batch.generate.amount.maximum'");
}

Test(loaders, repeated_key_is_rejected) {
  expect_config_error("duplicate_key.json", PRSTM_ECONFIG, ": duplicate key 'state.accounts'");
}

Test(loaders, string_where_integer_expected_is_rejected) {
  expect_config_error("mistyped_threads.json", PRSTM_ECONFIG, ": engine.threads: expected a non-negative integer");
}

Test(loaders, fractional_integer_is_rejected) {
  expect_config_error("fractional_threads.json", PRSTM_ECONFIG, ": engine.threads: expected a non-negative integer");
}

Test(loaders, negative_integer_is_rejected) {
  expect_config_error("negative_retry_limit.json", PRSTM_ECONFIG,
                      ": engine.retry_limit: expected a non-negative integer");
}

Test(loaders, threads_beyond_32_bits_get_the_lock_word_limit) {
  expect_config_error("huge_threads.json", PRSTM_ECONFIG, ": engine.threads: must be at most 2097151");
}

Test(loaders, zero_lock_coverage_is_rejected) {
  expect_config_error("zero_lock_coverage.json", PRSTM_ECONFIG, ": engine.lock_coverage: must be at least 1");
}

Test(loaders, unknown_backend_is_rejected) {
  expect_config_error("bad_backend.json", PRSTM_ECONFIG,
                      ": engine.backend: expected 'auto', 'gpu', 'cpu', 'hetero' or 'multi'");
}

Test(loaders, unknown_semantic_mode_is_rejected) {
  expect_config_error("bad_semantic.json", PRSTM_ECONFIG, ": engine.semantic: expected 'postpone' or 'retry'");
}

Test(loaders, unknown_deltas_mode_is_rejected) {
  expect_config_error("bad_deltas.json", PRSTM_ECONFIG, ": engine.deltas: expected 'auto', 'on' or 'off'");
}

Test(loaders, hetero_rounds_is_read) {
  prstm_config cfg;
  err[0] = '\0';
  cr_assert_eq(prstm_config_load(data_path("hetero_rounds.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.options.backend, PRSTM_BACKEND_HETERO);
  cr_assert_eq(cfg.options.hetero_rounds, 1);
  prstm_config_free(&cfg);
}

Test(loaders, hetero_rounds_must_be_true_or_false) {
  expect_config_error("bad_hetero_rounds.json", PRSTM_ECONFIG, ": engine.hetero_rounds: expected true or false");
}

Test(loaders, hetero_policy_is_read) {
  prstm_config cfg;
  err[0] = '\0';
  cr_assert_eq(prstm_config_load(data_path("hetero_policy.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.options.hetero_policy, PRSTM_HETERO_FAVOUR_FASTEST);
  prstm_config_free(&cfg);
}

Test(loaders, hetero_period_is_read) {
  prstm_config cfg;
  err[0] = '\0';
  cr_assert_eq(prstm_config_load(data_path("hetero_period.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.options.hetero_period, 4096);
  prstm_config_free(&cfg);
}

Test(loaders, negative_hetero_period_is_rejected) {
  expect_config_error("bad_hetero_period.json", PRSTM_ECONFIG,
                      ": engine.hetero_period: expected a non-negative integer");
}

Test(loaders, unknown_hetero_policy_is_rejected) {
  expect_config_error("bad_hetero_policy.json", PRSTM_ECONFIG,
                      ": engine.hetero_policy: expected 'gpu-invalidation', 'favour-fastest' or 'balanced'");
}

Test(loaders, partition_state_is_read) {
  prstm_config cfg;
  err[0] = '\0';
  cr_assert_eq(prstm_config_load(data_path("partition_state.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.options.backend, PRSTM_BACKEND_MULTI);
  cr_assert_eq(cfg.options.partition_state, 1);
  prstm_config_free(&cfg);
}

Test(loaders, partition_state_must_be_true_or_false) {
  expect_config_error("bad_partition_state.json", PRSTM_ECONFIG, ": engine.partition_state: expected true or false");
}

Test(loaders, chunk_rows_with_verify_keeps_both) {
  prstm_config cfg;
  err[0] = '\0';
  cr_assert_eq(prstm_config_load(data_path("chunk_rows_with_verify.json"), &cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.options.chunk_rows, 1000);
  cr_assert_eq(cfg.options.verify, 1);
  prstm_config_free(&cfg);
}

Test(loaders, string_chunk_rows_is_rejected) {
  expect_config_error("string_chunk_rows.json", PRSTM_ECONFIG, ": engine.chunk_rows: expected a non-negative integer");
}

Test(loaders, engine_section_must_be_an_object) {
  expect_config_error("engine_not_object.json", PRSTM_ECONFIG, ": engine: expected an object");
}

Test(loaders, missing_accounts_is_reported) {
  expect_config_error("missing_accounts.json", PRSTM_ECONFIG, ": state.accounts: missing");
}

Test(loaders, zero_accounts_are_rejected) {
  expect_config_error("zero_accounts.json", PRSTM_ECONFIG, ": state.accounts: must be at least 1");
}

Test(loaders, missing_state_section_is_reported) {
  expect_config_error("missing_state.json", PRSTM_ECONFIG, ": state: missing");
}

Test(loaders, missing_batch_section_is_reported) {
  expect_config_error("missing_batch.json", PRSTM_ECONFIG, ": batch: missing");
}

Test(loaders, batch_with_two_sources_is_rejected) {
  expect_config_error("batch_two_kinds.json", PRSTM_ECONFIG,
                      ": batch: expected exactly one of 'transactions', 'file' or 'generate'");
}

Test(loaders, batch_without_a_source_is_rejected) {
  expect_config_error("batch_no_kind.json", PRSTM_ECONFIG, ": batch: expected exactly one of");
}

Test(loaders, inline_transactions_must_be_an_array) {
  expect_config_error("transactions_not_array.json", PRSTM_ECONFIG, ": batch.transactions: expected an array");
}

Test(loaders, output_path_must_be_a_string_or_null) {
  expect_config_error("output_not_string.json", PRSTM_ECONFIG, ": output.results: expected a path or null");
}

Test(loaders, overlong_path_is_rejected_not_truncated, .init = make_tmpdir, .fini = remove_tmpdir) {
  char text[4096], name[1100];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(text, sizeof text,
           "{\"workload\": \"bank\", \"state\": {\"accounts\": 8}, \"batch\": {\"file\": \"x\"},"
           " \"output\": {\"results\": \"%s\"}}",
           name);
  write_text(tmp_path("long.json"), text);
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(tmp_path("long.json"), &cfg, err, sizeof err), PRSTM_ECONFIG);
  assert_message(tmp_path("long.json"), ": output.results: path too long");
}

/* ================= generate ================= */

Test(loaders, generate_mix_with_unknown_type_is_unknown) {
  expect_config_error("generate_bad_mix.json", PRSTM_EUNKNOWN,
                      ": batch.generate.mix: unknown transaction type 'steal'");
}

Test(loaders, generate_mix_weight_must_be_non_negative) {
  expect_config_error("generate_negative_weight.json", PRSTM_ECONFIG,
                      ": batch.generate.mix.deposit: expected a non-negative number");
}

Test(loaders, generate_mix_of_zero_weights_is_rejected) {
  expect_config_error("generate_zero_weights.json", PRSTM_ECONFIG, ": batch.generate.mix: weights are all zero");
}

Test(loaders, generate_empty_mix_is_rejected) {
  expect_config_error("generate_empty_mix.json", PRSTM_ECONFIG, ": batch.generate.mix: expected at least one type");
}

Test(loaders, generate_amount_min_above_max_is_rejected) {
  expect_config_error("generate_min_above_max.json", PRSTM_ECONFIG, ": batch.generate.amount: min 10 exceeds max 3");
}

Test(loaders, generate_share_outside_unit_interval_is_rejected) {
  expect_config_error("generate_bad_ratio.json", PRSTM_ECONFIG,
                      ": batch.generate.read_only: expected a number between 0 and 1");
}

Test(loaders, generate_presorted_must_be_a_boolean) {
  expect_config_error("generate_bad_presorted.json", PRSTM_ECONFIG,
                      ": batch.generate.presorted: expected true or false");
}

Test(loaders, generate_zero_transactions_is_rejected) {
  expect_config_error("generate_zero_transactions.json", PRSTM_ECONFIG,
                      ": batch.generate.transactions: must be at least 1");
}

Test(loaders, generate_without_transactions_is_rejected) {
  expect_config_error("generate_missing_transactions.json", PRSTM_ECONFIG, ": batch.generate.transactions: missing");
}

Test(loaders, generate_for_a_workload_without_generator_is_rejected) {
  /* The bank has a generator, so a workload without one is built here. */
  static const prstm_workload nogen = {.name = "nogen"};
  prstm_config cfg;
  memset(&cfg, 0, sizeof cfg);
  snprintf(cfg.path, sizeof cfg.path, "nogen.json");
  cfg.workload = &nogen;
  cfg.batch_kind = PRSTM_BATCH_GENERATE;
  cfg.generate.transactions = 5;
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_config_load_batch(&cfg, 8, b, err, sizeof err), PRSTM_ECONFIG);
  assert_message("nogen.json", ": batch.generate: workload nogen has no generator");
  prstm_batch_destroy(b);
}

/* ================= batches from a config ================= */

Test(loaders, empty_inline_batch_is_rejected) {
  expect_batch_error("empty_inline.json", 8, PRSTM_ECONFIG, data_path("empty_inline.json"),
                     ": batch.transactions: batch is empty");
}

Test(loaders, jsonl_batch_of_blank_lines_is_rejected) {
  expect_batch_error("empty_file.json", 8, PRSTM_ECONFIG, data_path("empty.jsonl"), ": batch is empty");
}

Test(loaders, missing_batch_file_fails_when_the_batch_is_loaded) {
  expect_batch_error("missing_batch_file.json", 8, PRSTM_EIO, data_path("does_not_exist.jsonl"),
                     ": cannot read: No such file or directory");
}

Test(loaders, inline_negative_amount_names_index_and_key) {
  expect_batch_error("inline_negative_amount.json", 8, PRSTM_ECONFIG, data_path("inline_negative_amount.json"),
                     ": batch.transactions[3].amount: expected a non-negative integer");
}

Test(loaders, inline_unknown_type_is_unknown) {
  expect_batch_error("inline_unknown_type.json", 8, PRSTM_EUNKNOWN, data_path("inline_unknown_type.json"),
                     ": batch.transactions[0].type: unknown transaction type 'steal'");
}

Test(loaders, inline_account_out_of_range_is_rejected) {
  expect_batch_error("inline_out_of_range.json", 8, PRSTM_ECONFIG, data_path("inline_out_of_range.json"),
                     "batch.transactions[0].account 8 out of range (state has 8 words)");
}

Test(loaders, inline_transaction_must_be_an_object) {
  expect_batch_error("inline_not_object.json", 8, PRSTM_ECONFIG, data_path("inline_not_object.json"),
                     ": batch.transactions[1]: expected a JSON object");
}

/* ================= JSON Lines records ================= */

Test(loaders, jsonl_unknown_type_is_unknown) {
  expect_jsonl_error("unknown_type.jsonl", PRSTM_EUNKNOWN,
                     "unknown_type.jsonl:2: type: unknown transaction type 'steal'");
}

Test(loaders, jsonl_type_must_be_a_string) {
  expect_jsonl_error("type_not_string.jsonl", PRSTM_ECONFIG, ":1: type: expected a string");
}

Test(loaders, jsonl_missing_type_is_reported) {
  expect_jsonl_error("missing_type.jsonl", PRSTM_ECONFIG, ":1: type: missing");
}

Test(loaders, jsonl_missing_argument_is_named) {
  expect_jsonl_error("missing_key.jsonl", PRSTM_ECONFIG, "missing_key.jsonl:1: to: missing");
}

Test(loaders, jsonl_extra_key_is_rejected) {
  expect_jsonl_error("extra_key.jsonl", PRSTM_ECONFIG, ":1: unknown key 'memo'");
}

Test(loaders, jsonl_repeated_key_is_rejected) {
  expect_jsonl_error("duplicate_key.jsonl", PRSTM_ECONFIG, ":1: duplicate key 'amount'");
}

Test(loaders, jsonl_account_out_of_range_is_rejected) {
  expect_jsonl_error("out_of_range.jsonl", PRSTM_ECONFIG,
                     "out_of_range.jsonl:2: account 9 out of range (state has 8 words)");
}

Test(loaders, jsonl_negative_amount_is_rejected) {
  expect_jsonl_error("negative_amount.jsonl", PRSTM_ECONFIG, ":1: amount: expected a non-negative integer");
}

Test(loaders, jsonl_fractional_amount_is_rejected) {
  expect_jsonl_error("fractional_amount.jsonl", PRSTM_ECONFIG, ":1: amount: expected a non-negative integer");
}

Test(loaders, jsonl_string_amount_is_rejected) {
  expect_jsonl_error("string_amount.jsonl", PRSTM_ECONFIG, ":1: amount: expected a non-negative integer");
}

Test(loaders, jsonl_amount_beyond_2_pow_53_is_rejected) {
  expect_jsonl_error("huge_amount.jsonl", PRSTM_ECONFIG, ":1: amount: expected a non-negative integer");
}

Test(loaders, jsonl_empty_address_list_is_rejected) {
  expect_jsonl_error("list_empty.jsonl", PRSTM_ECONFIG, ":1: from: expected a non-empty array of addresses");
}

Test(loaders, jsonl_address_list_must_be_an_array) {
  expect_jsonl_error("list_not_array.jsonl", PRSTM_ECONFIG, ":1: from: expected a non-empty array of addresses");
}

Test(loaders, jsonl_address_list_entry_out_of_range_is_named) {
  expect_jsonl_error("list_out_of_range.jsonl", PRSTM_ECONFIG, ":1: from[2] 9 out of range (state has 8 words)");
}

Test(loaders, jsonl_record_must_be_an_object) {
  expect_jsonl_error("not_object.jsonl", PRSTM_ECONFIG, ":1: expected a JSON object");
}

/* Writes a transfer_multi record with n sources, padded so the line is far
 * longer than any fixed line buffer would be. */
static void write_long_record(const char *path, unsigned n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fprintf(f, "{\"type\": \"transfer_multi\", \"to\": 0, \"amount\": 1, \"from\": [");
  for (unsigned i = 0; i < n; i++) fprintf(f, "%s%u", i ? ", " : "", i % 8);
  fprintf(f, "]");
  for (int i = 0; i < 100000; i++) fputc(' ', f);
  fprintf(f, "}\n");
  cr_assert_eq(fclose(f), 0);
}

Test(loaders, jsonl_long_lines_are_read_whole, .init = make_tmpdir, .fini = remove_tmpdir) {
  const unsigned n = PRSTM_MAX_COLUMNS - 8;
  write_long_record(tmp_path("long.jsonl"), n);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_load_jsonl(tmp_path("long.jsonl"), bank(), 8, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 1);
  cr_assert_eq(prstm_batch_arg(b, 0, 2), n);
  cr_assert_eq(prstm_batch_arg(b, 0, 3 + n - 1), (n - 1) % 8);
  prstm_batch_destroy(b);
}

Test(loaders, jsonl_address_list_longer_than_the_table_is_rejected, .init = make_tmpdir, .fini = remove_tmpdir) {
  write_long_record(tmp_path("too_long.jsonl"), PRSTM_MAX_COLUMNS - 7);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_load_jsonl(tmp_path("too_long.jsonl"), bank(), 8, b, err, sizeof err), PRSTM_ECONFIG);
  assert_message(tmp_path("too_long.jsonl"), ":1: from: 1017 addresses (at most 1016)");
  prstm_batch_destroy(b);
}

/* ================= atomic writes ================= */

Test(loaders, write_atomic_creates_the_file, .init = make_tmpdir, .fini = remove_tmpdir) {
  const char *text = "{\"ok\": true}\n";
  cr_assert_eq(prstm_write_file_atomic(tmp_path("out.json"), text, strlen(text), err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(read_text(tmp_path("out.json")), text);
  cr_assert_eq(count_entries(tmpdir), 1, "a temporary file was left behind");
}

Test(loaders, write_atomic_replaces_an_existing_file, .init = make_tmpdir, .fini = remove_tmpdir) {
  write_text(tmp_path("out.json"), "old contents that are longer than the new ones\n");
  cr_assert_eq(prstm_write_file_atomic(tmp_path("out.json"), "new", 3, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(read_text(tmp_path("out.json")), "new");
  cr_assert_eq(count_entries(tmpdir), 1, "a temporary file was left behind");
}

/* The new contents go to a new file renamed over the old one, never into
 * the old file: a reader that opened the old file still reads all of its
 * old bytes, and the path names another inode afterwards. */
Test(loaders, write_atomic_never_writes_into_the_old_file, .init = make_tmpdir, .fini = remove_tmpdir) {
  const char *old = "old contents that are longer than the new ones\n";
  write_text(tmp_path("out.json"), old);
  FILE *reader = fopen(tmp_path("out.json"), "rb");
  cr_assert_not_null(reader);
  struct stat before, after;
  cr_assert_eq(fstat(fileno(reader), &before), 0);
  cr_assert_eq(prstm_write_file_atomic(tmp_path("out.json"), "new", 3, err, sizeof err), 0, "%s", err);
  cr_assert_eq(stat(tmp_path("out.json"), &after), 0);
  cr_assert_neq(after.st_ino, before.st_ino, "the path still names the old file: it was written in place");
  char seen[128] = "";
  size_t got = fread(seen, 1, sizeof seen - 1, reader);
  seen[got] = '\0';
  cr_assert_str_eq(seen, old, "the old file's bytes changed under its reader");
  fclose(reader);
  cr_assert_str_eq(read_text(tmp_path("out.json")), "new");
}

Test(loaders, write_atomic_of_nothing_creates_an_empty_file, .init = make_tmpdir, .fini = remove_tmpdir) {
  cr_assert_eq(prstm_write_file_atomic(tmp_path("empty"), "", 0, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(read_text(tmp_path("empty")), "");
}

Test(loaders, write_atomic_into_a_missing_folder_fails, .init = make_tmpdir, .fini = remove_tmpdir) {
  const char *path = tmp_path("no/such/folder/out.json");
  cr_assert_eq(prstm_write_file_atomic(path, "x", 1, err, sizeof err), PRSTM_EIO);
  cr_assert_not_null(strstr(err, "cannot write "), "%s", err);
  cr_assert_not_null(strstr(err, path), "%s", err);
  cr_assert_not_null(strstr(err, ": No such file or directory"), "%s", err);
}

Test(loaders, write_atomic_over_a_folder_fails_and_cleans_up, .init = make_tmpdir, .fini = remove_tmpdir) {
  cr_assert_eq(mkdir(tmp_path("target"), 0700), 0);
  cr_assert_eq(prstm_write_file_atomic(tmp_path("target"), "x", 1, err, sizeof err), PRSTM_EIO);
  cr_assert_not_null(strstr(err, "cannot write "), "%s", err);
  cr_assert_not_null(strstr(err, tmp_path("target")), "%s", err);
  cr_assert_eq(count_entries(tmpdir), 1, "the temporary file was not removed");
}

Test(loaders, write_atomic_through_a_symlink_keeps_the_link, .init = make_tmpdir, .fini = remove_tmpdir) {
  write_text(tmp_path("real.json"), "old");
  cr_assert_eq(symlink("real.json", tmp_path("link.json")), 0);
  cr_assert_eq(prstm_write_file_atomic(tmp_path("link.json"), "new", 3, err, sizeof err), 0, "%s", err);
  struct stat st;
  cr_assert_eq(lstat(tmp_path("link.json"), &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "the link was replaced by a file");
  cr_assert_str_eq(read_text(tmp_path("real.json")), "new");
  cr_assert_eq(count_entries(tmpdir), 2, "a temporary file was left behind");
}

Test(loaders, write_atomic_through_a_dangling_symlink_creates_its_target, .init = make_tmpdir, .fini = remove_tmpdir) {
  cr_assert_eq(symlink("made.json", tmp_path("link.json")), 0);
  cr_assert_eq(prstm_write_file_atomic(tmp_path("link.json"), "x", 1, err, sizeof err), 0, "%s", err);
  struct stat st;
  cr_assert_eq(lstat(tmp_path("link.json"), &st), 0);
  cr_assert(S_ISLNK(st.st_mode));
  cr_assert_str_eq(read_text(tmp_path("made.json")), "x");
}

Test(loaders, write_atomic_to_a_device_writes_in_place) {
  /* Renaming over /dev/null would replace the device (as root) with a file. */
  cr_assert_eq(prstm_write_file_atomic("/dev/null", "discarded", 9, err, sizeof err), 0, "%s", err);
  struct stat st;
  cr_assert_eq(stat("/dev/null", &st), 0);
  cr_assert(S_ISCHR(st.st_mode), "/dev/null is no longer a device");
}

/* ================= a batch file read on several threads ================= */

/* A JSON Lines text of `n` records of every shape the bank takes (a byte
 * order mark first, CRLF and LF ends, blank lines, an address list, no end
 * on the last line), deterministic in `seed`. */
static char *varied_jsonl(unsigned n, unsigned seed) {
  size_t cap = (size_t)n * 96 + 64, at = 0;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  at += (size_t)snprintf(text + at, cap - at, "\xEF\xBB\xBF");
  uint64_t s = seed;
  for (unsigned i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const unsigned r = (unsigned)(s >> 33);
    const char *end = i + 1 == n ? "" : r % 3 == 0 ? "\r\n" : "\n";
    switch (r % 5) {
      case 0:
        at += (size_t)snprintf(text + at, cap - at, "{\"type\": \"deposit\", \"account\": %u, \"amount\": %u}%s", r % 8,
                               i, end);
        break;
      case 1:
        at += (size_t)snprintf(text + at, cap - at,
                               "{\"type\": \"transfer\", \"from\": %u, \"to\": %u, \"amount\": %u}%s", r % 8,
                               (r >> 3) % 8, i, end);
        break;
      case 2:
        at += (size_t)snprintf(text + at, cap - at, "{\"type\": \"balance\", \"account\": %u}%s\n", r % 8, end);
        break;
      case 3:
        at += (size_t)snprintf(text + at, cap - at,
                               "{\"type\": \"transfer_multi\", \"to\": 0, \"amount\": %u, \"from\": [1, %u]}%s", i,
                               2 + r % 6, end);
        break;
      default:
        at += (size_t)snprintf(text + at, cap - at, "   {\"type\": \"withdraw\", \"account\": %u, \"amount\": %u}%s",
                               r % 8, i, end);
        break;
    }
  }
  return text;
}

/* Every thread count reads the same rows in the same order as one thread,
 * wherever the cuts fall (blank lines, CRLF, the last line without an end). */
Test(loaders, a_file_read_on_several_threads_gives_the_rows_of_one, .init = make_tmpdir, .fini = remove_tmpdir) {
  char *text = varied_jsonl(997, 7);
  write_text(tmp_path("varied.jsonl"), text);
  free(text);
  prstm_batch *one = new_batch();
  cr_assert_eq(loaders_load_jsonl_threads(tmp_path("varied.jsonl"), bank(), 8, one, 1, 1, err, sizeof err), 0, "%s",
               err);
  cr_assert_eq(prstm_batch_size(one), 997);
  for (unsigned threads = 2; threads <= 64; threads = threads * 2 + 1) {
    prstm_batch *many = new_batch();
    cr_assert_eq(loaders_load_jsonl_threads(tmp_path("varied.jsonl"), bank(), 8, many, threads, 1, err, sizeof err), 0,
                 "%u threads: %s", threads, err);
    cr_assert_eq(prstm_batch_size(many), 997, "%u threads", threads);
    for (uint64_t i = 0; i < 997; i++) {
      cr_assert_eq(prstm_batch_type(many, i), prstm_batch_type(one, i), "%u threads, row %llu", threads,
                   (unsigned long long)i);
      for (unsigned c = 0; c < 5; c++)
        cr_assert_eq(prstm_batch_arg(many, i, c), prstm_batch_arg(one, i, c), "%u threads, row %llu, column %u",
                     threads, (unsigned long long)i, c);
    }
    prstm_batch_destroy(many);
  }
  prstm_batch_destroy(one);
}

/* Rows of one width are parsed straight into the batch, each chunk into
 * its own rows; blank lines leave gaps that close when the chunks are
 * joined, so every thread count gives the rows in file order. A record
 * wider than the first (appended last) makes the load parse again into
 * parts, with the same result. */
Test(loaders, rows_parsed_in_place_close_the_gaps_of_blank_lines, .init = make_tmpdir, .fini = remove_tmpdir) {
  for (int wider = 0; wider < 2; wider++) {
    const unsigned n = 3001;
    size_t cap = (size_t)n * 96, at = 0;
    char *text = malloc(cap);
    cr_assert(text);
    for (unsigned i = 0; i < n; i++) {
      at +=
          (size_t)snprintf(text + at, cap - at, "{\"type\": \"transfer\", \"from\": %u, \"to\": %u, \"amount\": %u}%s",
                           i % 8, (i + 3) % 8, i + 1, i % 7 == 0 ? "\r\n" : "\n");
      if (i % 13 == 5) at += (size_t)snprintf(text + at, cap - at, i % 2 ? "\n" : "   \n");
    }
    if (wider)
      at += (size_t)snprintf(text + at, cap - at,
                             "{\"type\": \"transfer_multi\", \"to\": 0, \"amount\": 1, \"from\": [1, 2, 3]}\n");
    write_text(tmp_path("in_place.jsonl"), text);
    free(text);
    for (unsigned threads = 1; threads <= 64; threads = threads * 2 + 1) {
      prstm_batch *b = new_batch();
      cr_assert_eq(prstm_batch_append(b, BALANCE, (const prstm_word[]){5}, 1), 0);
      cr_assert_eq(loaders_load_jsonl_threads(tmp_path("in_place.jsonl"), bank(), 8, b, threads, 1, err, sizeof err), 0,
                   "%u threads: %s", threads, err);
      cr_assert_eq(prstm_batch_size(b), 1 + n + (unsigned)wider, "%u threads", threads);
      expect_row(b, 0, BALANCE, (const prstm_word[]){5}, 1);
      for (unsigned i = 0; i < n; i++)
        expect_row(b, 1 + i, TRANSFER, (const prstm_word[]){i % 8, (i + 3) % 8, i + 1}, 3);
      if (wider) expect_row(b, 1 + n, TRANSFER_MULTI, (const prstm_word[]){0, 1, 3, 1, 2, 3}, 6);
      prstm_batch_destroy(b);
    }
  }
}

/* Two bad lines in different chunks: the first in file order is reported,
 * at its line in the whole file, whatever the thread count. */
Test(loaders, the_first_bad_line_in_file_order_is_reported_at_its_line, .init = make_tmpdir, .fini = remove_tmpdir) {
  size_t cap = 600 * 64, at = 0;
  char *text = malloc(cap);
  for (unsigned i = 1; i <= 600; i++) {
    if (i == 250)
      at += (size_t)snprintf(text + at, cap - at, "{\"type\": \"deposit\", \"account\": 1, \"amount\": }\n");
    else if (i == 500)
      at += (size_t)snprintf(text + at, cap - at, "{\"type\": \"refund\", \"account\": 1}\n");
    else
      at += (size_t)snprintf(text + at, cap - at, "{\"type\": \"deposit\", \"account\": 1, \"amount\": %u}\n", i);
  }
  write_text(tmp_path("two_bad.jsonl"), text);
  free(text);
  for (unsigned threads = 1; threads <= 33; threads += 4) {
    prstm_batch *b = new_batch();
    err[0] = '\0';
    cr_assert_eq(loaders_load_jsonl_threads(tmp_path("two_bad.jsonl"), bank(), 8, b, threads, 1, err, sizeof err),
                 PRSTM_EPARSE, "%u threads: %s", threads, err);
    cr_assert(strstr(err, "two_bad.jsonl:250:45: malformed JSON") != NULL, "%u threads: %s", threads, err);
    cr_assert_eq(prstm_batch_size(b), 0, "%u threads: a failed load appends nothing", threads);
    prstm_batch_destroy(b);
  }
}

/* Rows appended to a batch that already holds some follow them. */
Test(loaders, a_file_read_on_several_threads_appends_after_the_rows_there, .init = make_tmpdir, .fini = remove_tmpdir) {
  char *text = varied_jsonl(300, 3);
  write_text(tmp_path("more.jsonl"), text);
  free(text);
  prstm_batch *b = new_batch();
  cr_assert_eq(prstm_batch_append(b, BALANCE, (const prstm_word[]){5}, 1), 0);
  cr_assert_eq(loaders_load_jsonl_threads(tmp_path("more.jsonl"), bank(), 8, b, 7, 1, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), 301);
  expect_row(b, 0, BALANCE, (const prstm_word[]){5}, 1);
  prstm_batch_destroy(b);
}

/* Loads `text` as a one-file batch with the fast path or the strict path
 * alone; returns the code, with the message in msg and the rows in *out. */
static int load_with_path(const char *text, int fast, prstm_batch **out, char *msg, size_t msglen) {
  write_text(tmp_path("path.jsonl"), text);
  *out = new_batch();
  msg[0] = '\0';
  return loaders_load_jsonl_threads(tmp_path("path.jsonl"), bank(), 8, *out, 1, fast, msg, msglen);
}

/* Records the fast path takes, and records it must leave to the strict path
 * (numbers the strict path reads through a double, escapes, repeated and
 * unknown keys, odd whitespace, bad JSON): both paths give the same rows, or
 * the same code and message, line for line. */
Test(loaders, the_fast_path_reads_every_record_as_the_strict_path_does, .init = make_tmpdir, .fini = remove_tmpdir) {
  static const char *const records[] = {
      "{\"type\":\"transfer\",\"from\":1,\"to\":2,\"amount\":3}",
      "{ \"amount\" : 9 , \"to\" : 7 , \"from\" : 0 , \"type\" : \"transfer\" }",
      "\t{\"type\":\"deposit\",\"account\":7,\"amount\":9007199254740991}  ",
      "{\"type\":\"deposit\",\"account\":7,\"amount\":9007199254740992}",
      "{\"type\":\"deposit\",\"account\":7,\"amount\":18446744073709551615}",
      "{\"type\":\"deposit\",\"account\":7,\"amount\":18446744073709551616}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1.0}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1e3}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1.5}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":-0}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":-1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":01}",
      "{\"type\":\"deposit\",\"account\":8,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":\"1\",\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1,\"amount\":2}",
      "{\"type\":\"deposit\",\"type\":\"deposit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1,\"note\":1}",
      "{\"type\":\"deposit\",\"account\":1}",
      "{\"type\":\"dep\\u006fsit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"dep\\u0000osit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\",\"acc\\u006funt\":1,\"amount\":1}",
      "{\"\\u0074ype\":\"deposit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"dep\\ud800osit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\\/\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\\u0000\":1}",
      "{\"type\":\"Deposit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1}{}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1}\v",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":true}",
      "{\"type\":7,\"account\":1,\"amount\":1}",
      "[{\"type\":\"deposit\",\"account\":1,\"amount\":1}]",
      "\"deposit\"",
      "{\"type\":\"balance\",\"account\":0}",
      "{\"type\":\"total\"}",
      "{\"type\":\"transfer_multi\",\"to\":1,\"amount\":2,\"from\":[3,4,5]}",
      "{\"type\":\"transfer_multi\",\"to\":1,\"amount\":2,\"from\":[]}",
      "{\"type\":\"transfer_multi\",\"to\":1,\"amount\":2,\"from\":[3,8]}",
      "{\"type\":\"transfer_multi\",\"to\":1,\"amount\":2,\"from\":[3,[4]]}",
      "{\"type\":\"transfer_multi\",\"from\":[3],\"to\":1,\"amount\":2}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1,\"\xff\":1}",
  };
  for (size_t i = 0; i < sizeof records / sizeof records[0]; i++) {
    char text[512], fast_msg[1024], strict_msg[1024];
    snprintf(text, sizeof text, "{\"type\":\"balance\",\"account\":3}\n%s\n", records[i]);
    prstm_batch *fast = NULL, *strict = NULL;
    int fast_rc = load_with_path(text, 1, &fast, fast_msg, sizeof fast_msg);
    int strict_rc = load_with_path(text, 0, &strict, strict_msg, sizeof strict_msg);
    cr_assert_eq(fast_rc, strict_rc, "record %zu (%s): fast %d '%s', strict %d '%s'", i, records[i], fast_rc, fast_msg,
                 strict_rc, strict_msg);
    cr_assert_str_eq(fast_msg, strict_msg, "record %zu (%s)", i, records[i]);
    cr_assert_eq(prstm_batch_size(fast), prstm_batch_size(strict), "record %zu (%s)", i, records[i]);
    for (uint64_t r = 0; r < prstm_batch_size(fast); r++) {
      cr_assert_eq(prstm_batch_type(fast, r), prstm_batch_type(strict, r), "record %zu (%s)", i, records[i]);
      for (unsigned c = 0; c < 6; c++)
        cr_assert_eq(prstm_batch_arg(fast, r, c), prstm_batch_arg(strict, r, c), "record %zu (%s), column %u", i,
                     records[i], c);
    }
    prstm_batch_destroy(fast);
    prstm_batch_destroy(strict);
  }
}

/* Where simdjson is built in, plain records take the fast path with their
 * words (names written with escapes too, decoded as cJSON decodes them), and
 * records it cannot take as they are (a number written 1.0, a repeated key,
 * a \u0000 in a name) are handed on rather than read. */
Test(loaders, the_fast_path_takes_plain_records_and_hands_on_the_rest) {
  loaders_jsonl_fast *fast = loaders_jsonl_fast_create();
#ifdef PRSTM_TEST_HAVE_SIMDJSON
  cr_assert_not_null(fast, "simdjson is built in, but the fast path did not start");
#else
  cr_assert_null(fast, "the fast path started in a build without simdjson");
  return;
#endif
  unsigned type = 99, nargs = 99;
  prstm_word args[PRSTM_MAX_COLUMNS];
  const char *plain = "{\"type\":\"transfer\",\"from\":1,\"to\":2,\"amount\":3}";
  cr_assert_eq(loaders_jsonl_fast_record(fast, plain, strlen(plain), bank(), 8, &type, args, &nargs), 1);
  cr_assert_eq(type, TRANSFER);
  cr_assert_eq(nargs, 3);
  cr_assert(args[0] == 1 && args[1] == 2 && args[2] == 3);
  const char *list = "{\"from\":[5,6],\"type\":\"transfer_multi\",\"amount\":4,\"to\":7}";
  cr_assert_eq(loaders_jsonl_fast_record(fast, list, strlen(list), bank(), 8, &type, args, &nargs), 1);
  cr_assert_eq(type, TRANSFER_MULTI);
  cr_assert_eq(nargs, 5);
  cr_assert(args[0] == 7 && args[1] == 4 && args[2] == 2 && args[3] == 5 && args[4] == 6);
  const char *escaped = "{\"type\":\"dep\\u006fsit\",\"acc\\u006funt\":3,\"amount\":4}";
  cr_assert_eq(loaders_jsonl_fast_record(fast, escaped, strlen(escaped), bank(), 8, &type, args, &nargs), 1);
  cr_assert(type == DEPOSIT && nargs == 2 && args[0] == 3 && args[1] == 4);
  static const char *const handed_on[] = {
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1.0}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":1,\"amount\":1}",
      "{\"type\":\"dep\\u0000osit\",\"account\":1,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":9,\"amount\":1}",
      "{\"type\":\"deposit\",\"account\":1,\"amount\":9007199254740992}",
  };
  for (size_t i = 0; i < sizeof handed_on / sizeof handed_on[0]; i++)
    cr_assert_eq(loaders_jsonl_fast_record(fast, handed_on[i], strlen(handed_on[i]), bank(), 8, &type, args, &nargs), 0,
                 "%s", handed_on[i]);
  loaders_jsonl_fast_destroy(fast);
}
