/* test_batch_dir.c: binary batches (NumPy .npy columns and batch.json): a saved batch loads back row for row; every damaged or foreign folder is refused with its file named and nothing appended; prstm_batch_append_columns. */
/* nftw and mkdtemp are POSIX; ask for them explicitly under -std=c11. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prstm.h"

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/prstm_test_batch_dir_XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_tmpdir(void) {
  if (tmpdir[0] != '\0') nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *in_tmp(const char *name) {
  static char bufs[4][512];
  static unsigned k;
  char *b = bufs[k++ % 4];
  snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
  return b;
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(data, 1, len, f), len);
  cr_assert_eq(fclose(f), 0);
}

static char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*len + 1);
  cr_assert_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  b[*len] = 0;
  return b;
}

/* A bank batch of every shape: deposits, withdrawals, transfers, balance
 * reads and transfers from lists of 1 to 5 sources, addresses up to
 * `accounts` - 1 and amounts wide enough for 4-byte columns. */
static prstm_batch *mixed_batch(uint64_t n, uint64_t accounts) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  uint64_t x = 99;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t a = (x >> 33) % accounts, c = (x >> 13) % accounts, amount = (x >> 40) % 100000;
    prstm_word args[8] = {a, c, amount};
    switch (i % 5) {
      case 0:
        args[1] = amount;
        cr_assert_eq(prstm_batch_append_named(b, "deposit", args, 2), 0);
        break;
      case 1:
        args[1] = amount;
        cr_assert_eq(prstm_batch_append_named(b, "withdraw", args, 2), 0);
        break;
      case 2:
        cr_assert_eq(prstm_batch_append_named(b, "transfer", args, 3), 0);
        break;
      case 3:
        cr_assert_eq(prstm_batch_append_named(b, "balance", args, 1), 0);
        break;
      default: {
        const unsigned count = 1 + (unsigned)(i / 5 % 5);
        args[1] = amount;
        args[2] = count;
        for (unsigned k = 0; k < count; k++) args[3 + k] = (a + k * 7) % accounts;
        cr_assert_eq(prstm_batch_append_named(b, "transfer_multi", args, 3 + count), 0);
      }
    }
  }
  return b;
}

static void assert_same_rows(const prstm_batch *a, const prstm_batch *b) {
  cr_assert_eq(prstm_batch_size(a), prstm_batch_size(b));
  cr_assert_eq(prstm_batch_columns(a), prstm_batch_columns(b));
  for (uint64_t i = 0; i < prstm_batch_size(a); i++) {
    cr_assert_eq(prstm_batch_type(a, i), prstm_batch_type(b, i), "row %llu: type", (unsigned long long)i);
    for (unsigned c = 0; c < prstm_batch_columns(a); c++)
      cr_assert_eq(prstm_batch_arg(a, i, c), prstm_batch_arg(b, i, c), "row %llu column %u", (unsigned long long)i, c);
  }
}

/* Saves a mixed batch into tmpdir/b and returns the folder. */
static const char *saved_batch(prstm_batch **out) {
  *out = mixed_batch(1000, 5000);
  const char *dir = in_tmp("b");
  char err[512];
  cr_assert_eq(prstm_save_batch_dir(dir, *out, err, sizeof err), 0, "%s", err);
  return dir;
}

/* Loads dir into a fresh bank batch over 5000 words; returns the code, the
 * message in err, and checks that a refusal appended nothing. */
static int load(const char *dir, char *err, size_t errlen) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  int rc = prstm_load_batch_dir(dir, wl, 5000, b, err, errlen);
  if (rc)
    cr_assert_eq(prstm_batch_size(b), 0, "a refused folder appended %llu rows",
                 (unsigned long long)prstm_batch_size(b));
  prstm_batch_destroy(b);
  return rc;
}

Test(batch_dir, saved_batch_loads_back_row_for_row, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *orig;
  const char *dir = saved_batch(&orig);
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *back = NULL;
  cr_assert_eq(prstm_batch_create(&back, wl), 0);
  char err[512];
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 5000, back, err, sizeof err), 0, "%s", err);
  assert_same_rows(orig, back);
  /* Appended after rows already there, like the other loaders. */
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 5000, back, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(back), 2000);
  cr_assert_eq(prstm_batch_arg(back, 1000 + 7, 0), prstm_batch_arg(orig, 7, 0));
  prstm_batch_destroy(orig);
  prstm_batch_destroy(back);
}

/* Each column takes the narrowest width its values fit: addresses below
 * 5000 two bytes, list counts one, amounts below 100,000 four; the type
 * column one byte. The header is numpy's own (version 1.0, values aligned
 * to 64 bytes). */
Test(batch_dir, columns_are_written_in_the_narrowest_width, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *orig;
  const char *dir = saved_batch(&orig);
  static const struct {
    const char *file, *descr;
  } want[] = {{"type.npy", "'|u1'"}, {"arg0.npy", "'<u2'"}, {"arg1.npy", "'<u4'"}, {"arg3.npy", "'<u2'"}};
  for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
    size_t len;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, want[i].file);
    char *b = read_bytes(path, &len);
    cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0, "%s: magic", want[i].file);
    const size_t hlen = (unsigned char)b[8] | (size_t)(unsigned char)b[9] << 8;
    cr_assert_eq((10 + hlen) % 64, 0, "%s: values not aligned", want[i].file);
    cr_assert_not_null(strstr(b + 10, want[i].descr), "%s: %s not in %.*s", want[i].file, want[i].descr, (int)hlen,
                       b + 10);
    cr_assert_not_null(strstr(b + 10, "'shape': (1000,)"), "%s: shape", want[i].file);
    free(b);
  }
  prstm_batch_destroy(orig);
}

/* Damage one file of a saved folder and expect a refusal that names it. */
static void expect_refused(const char *file, const void *bytes, size_t len, const char *says) {
  prstm_batch *orig;
  const char *dir = saved_batch(&orig);
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (bytes)
    write_bytes(path, bytes, len);
  else
    cr_assert_eq(unlink(path), 0);
  char err[512] = "";
  int rc = load(dir, err, sizeof err);
  cr_assert_eq(rc, PRSTM_ECONFIG, "rc %d: %s", rc, err);
  cr_assert_not_null(strstr(err, file), "the message does not name %s: %s", file, err);
  cr_assert_not_null(strstr(err, says), "expected '%s' in: %s", says, err);
  prstm_batch_destroy(orig);
}

/* Rewrites a saved column through `edit` (the file's bytes, its length). */
static void expect_edit_refused(const char *file, void (*edit)(char *, size_t *), const char *says) {
  prstm_batch *orig;
  const char *dir = saved_batch(&orig);
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  size_t len;
  char *b = read_bytes(path, &len);
  b = realloc(b, len + 64);
  edit(b, &len);
  prstm_batch_destroy(orig);
  expect_refused(file, b, len, says);
  free(b);
}

static void cut_last_byte(char *b, size_t *len) {
  (void)b;
  (*len)--;
}
static void add_a_byte(char *b, size_t *len) { b[(*len)++] = 0; }
static void break_magic(char *b, size_t *len) {
  (void)len;
  b[1] = 'X';
}
static void signed_dtype(char *b, size_t *len) {
  (void)len;
  char *d = strstr(b + 10, "'<u");
  cr_assert_not_null(d);
  d[2] = 'i';
}
static void big_endian(char *b, size_t *len) {
  (void)len;
  char *d = strstr(b + 10, "'<u");
  cr_assert_not_null(d);
  d[1] = '>';
}
static void two_dimensions(char *b, size_t *len) {
  (void)len;
  char *d = strstr(b + 10, "(1000,)");
  cr_assert_not_null(d);
  memcpy(d, "(10,100)", 8); /* one byte of the padding after it */
}
static void fewer_rows(char *b, size_t *len) {
  (void)len;
  char *d = strstr(b + 10, "(1000,)");
  cr_assert_not_null(d);
  memcpy(d, "(0999,)", 7);
}
static void fortran_order(char *b, size_t *len) {
  (void)len;
  char *d = strstr(b + 10, "False");
  cr_assert_not_null(d);
  memcpy(d, "True ", 5);
}
static void header_past_the_end(char *b, size_t *len) {
  (void)len;
  b[9] = (char)0x7f;
}
static void newer_version(char *b, size_t *len) {
  (void)len;
  b[6] = 4;
}
/* Rewrites the header so that `last_key` is its last bytes, with nothing
 * after the colon; the old header's bytes stay in the file after it. */
static void header_ending_in(char *b, const char *keys_before, const char *last_key) {
  char h[256];
  const int n = snprintf(h, sizeof h, "{%s%s", keys_before, last_key);
  memcpy(b + 10, h, (size_t)n);
  b[8] = (char)n;
  b[9] = 0;
}
static void header_ends_in_descr(char *b, size_t *len) {
  (void)len;
  /* The old header's quoted dtype now lies just past the cut one. */
  memcpy(b + 10 + 60, "'<i2' ", 6);
  header_ending_in(b, "'fortran_order': False, 'shape': (1000,), ", "'descr':");
}
static void header_ends_in_shape(char *b, size_t *len) {
  (void)len;
  memcpy(b + 10 + 50, "(1000,) ", 8);
  header_ending_in(b, "'descr': '<u2', 'fortran_order': False, ", "'shape':");
}
static void address_out_of_range(char *b, size_t *len) {
  /* arg0 is two bytes a row; row 2 is a transfer, whose from must be below
   * 5000. */
  const size_t at = *len - 1000 * 2 + 2 * 2;
  b[at] = (char)0xff;
  b[at + 1] = (char)0xff;
}
static void type_past_the_names(char *b, size_t *len) { b[*len - 1000 + 5] = 9; }

Test(batch_dir, truncated_column_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg1.npy", cut_last_byte, "truncated");
}
Test(batch_dir, bytes_after_the_values_are_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg2.npy", add_a_byte, "left over");
}
Test(batch_dir, missing_column_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_refused("arg4.npy", NULL, 0, "cannot read");
}
Test(batch_dir, file_without_the_magic_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", break_magic, "magic");
}
Test(batch_dir, signed_dtype_is_refused_with_the_fix, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", signed_dtype, "np.uint64");
}
Test(batch_dir, big_endian_dtype_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg1.npy", big_endian, "unsigned integers");
}
Test(batch_dir, two_dimensions_are_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", two_dimensions, "one dimension");
}
Test(batch_dir, column_of_other_length_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", fewer_rows, "batch.json says 1000");
}
Test(batch_dir, fortran_order_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("type.npy", fortran_order, "fortran_order");
}
Test(batch_dir, header_past_the_end_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", header_past_the_end, "truncated .npy header");
}
Test(batch_dir, newer_npy_version_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", newer_version, "version 4");
}
/* A value missing at the header's end is reported as empty: nothing past
 * the header is read or quoted. */
Test(batch_dir, dtype_missing_at_the_header_end_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", header_ends_in_descr, "dtype (empty)");
}
Test(batch_dir, shape_missing_at_the_header_end_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", header_ends_in_shape, "shape (empty)");
}
Test(batch_dir, address_out_of_range_names_file_and_row, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("arg0.npy", address_out_of_range, "row 2: from: address 65535 out of range");
}
Test(batch_dir, type_index_past_the_names_is_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  expect_edit_refused("type.npy", type_past_the_names, "row 5: type index 9");
}

/* The manifest's refusals, each naming batch.json and the problem. */
static void expect_manifest_refused(const char *manifest, const char *says) {
  expect_refused("batch.json", manifest, strlen(manifest), says);
}

Test(batch_dir, manifest_problems_are_refused, .init = make_tmpdir, .fini = remove_tmpdir) {
  static const char *const good_types = "[\"deposit\", \"withdraw\", \"transfer\", \"balance\", \"transfer_multi\"]";
  char m[512];
  snprintf(m, sizeof m,
           "{\"format\": \"prstm-batch\", \"version\": 1, \"workload\": \"kmeans\", \"rows\": 1000, "
           "\"columns\": 8, \"types\": %s}",
           good_types);
  expect_manifest_refused(m, "a batch of workload kmeans; the config runs bank");
  snprintf(m, sizeof m,
           "{\"format\": \"prstm-batch\", \"version\": 2, \"workload\": \"bank\", \"rows\": 1000, "
           "\"columns\": 8, \"types\": %s}",
           good_types);
  expect_manifest_refused(m, "version: expected 1");
  snprintf(m, sizeof m,
           "{\"format\": \"npz\", \"version\": 1, \"workload\": \"bank\", \"rows\": 1000, "
           "\"columns\": 8, \"types\": %s}",
           good_types);
  expect_manifest_refused(m, "format");
  snprintf(m, sizeof m,
           "{\"format\": \"prstm-batch\", \"version\": 1, \"workload\": \"bank\", \"rows\": 1000, "
           "\"columns\": 8, \"types\": %s, \"extra\": 1}",
           good_types);
  expect_manifest_refused(m, "unknown key 'extra'");
  expect_manifest_refused(
      "{\"format\": \"prstm-batch\", \"version\": 1, \"workload\": \"bank\", \"rows\": 1000, "
      "\"columns\": 8, \"types\": [\"deposit\", \"steal\"]}",
      "'steal' is not a type of bank (known: deposit");
  expect_manifest_refused("{\"format\": \"prstm-batch\", ", "not a JSON object");
  /* Columns fewer than a used type's arguments. */
  snprintf(m, sizeof m,
           "{\"format\": \"prstm-batch\", \"version\": 1, \"workload\": \"bank\", \"rows\": 1000, "
           "\"columns\": 2, \"types\": %s}",
           good_types);
  expect_manifest_refused(m, "columns: 2, but row 2: type transfer takes 3 argument columns");
}

Test(batch_dir, folder_without_a_manifest_says_what_it_is_not, .init = make_tmpdir, .fini = remove_tmpdir) {
  char err[512] = "";
  cr_assert_eq(load(tmpdir, err, sizeof err), PRSTM_ECONFIG);
  cr_assert_not_null(strstr(err, "not a binary batch folder"), "%s", err);
}

/* type.npy indexes the manifest's list, not the workload's: a folder
 * written by another program with its own order loads by name. */
Test(batch_dir, types_in_another_order_map_by_name, .init = make_tmpdir, .fini = remove_tmpdir) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *src = NULL;
  cr_assert_eq(prstm_batch_create(&src, wl), 0);
  /* Written as if "transfer" were type 0 and "deposit" type 1. */
  const uint8_t types[3] = {0, 1, 0};
  const uint64_t a0[3] = {1, 2, 3}, a1[3] = {4, 5, 6}, a2[3] = {7, 8, 9};
  const prstm_column cols[3] = {{a0, 8}, {a1, 8}, {a2, 8}};
  cr_assert_eq(prstm_batch_append_columns(src, 3, types, cols, 3), 0);
  const char *dir = in_tmp("o");
  char err[512];
  cr_assert_eq(prstm_save_batch_dir(dir, src, err, sizeof err), 0, "%s", err);
  const char *m =
      "{\"format\": \"prstm-batch\", \"version\": 1, \"workload\": \"bank\", \"rows\": 3, \"columns\": 3, "
      "\"types\": [\"transfer\", \"deposit\"]}";
  char path[600];
  snprintf(path, sizeof path, "%s/batch.json", dir);
  write_bytes(path, m, strlen(m));
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 100, b, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(wl->types[prstm_batch_type(b, 0)].name, "transfer");
  cr_assert_str_eq(wl->types[prstm_batch_type(b, 1)].name, "deposit");
  cr_assert_str_eq(wl->types[prstm_batch_type(b, 2)].name, "transfer");
  cr_assert_eq(prstm_batch_arg(b, 2, 1), 6);
  prstm_batch_destroy(src);
  prstm_batch_destroy(b);
}

/* A config whose batch.file names a folder runs the binary batch: the same
 * rows as the JSON Lines file it was converted from. */
Test(batch_dir, config_batch_file_may_name_a_folder, .init = make_tmpdir, .fini = remove_tmpdir) {
  const char *lines =
      "{\"type\": \"deposit\", \"account\": 1, \"amount\": 5}\n"
      "{\"type\": \"transfer\", \"from\": 1, \"to\": 2, \"amount\": 3}\n";
  write_bytes(in_tmp("b.jsonl"), lines, strlen(lines));
  const char *cfg_jsonl =
      "{\"workload\": \"bank\", \"state\": {\"accounts\": 4, \"initial_balance\": 0}, "
      "\"batch\": {\"file\": \"b.jsonl\"}}";
  const char *cfg_dir =
      "{\"workload\": \"bank\", \"state\": {\"accounts\": 4, \"initial_balance\": 0}, "
      "\"batch\": {\"file\": \"bdir\"}}";
  write_bytes(in_tmp("jsonl.json"), cfg_jsonl, strlen(cfg_jsonl));
  write_bytes(in_tmp("dir.json"), cfg_dir, strlen(cfg_dir));
  char err[512];
  prstm_config cfg;
  cr_assert_eq(prstm_config_load(in_tmp("jsonl.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_batch *a = NULL;
  cr_assert_eq(prstm_batch_create(&a, cfg.workload), 0);
  cr_assert_eq(prstm_config_load_batch(&cfg, 4, a, err, sizeof err), 0, "%s", err);
  prstm_config_free(&cfg);
  cr_assert_eq(prstm_save_batch_dir(in_tmp("bdir"), a, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_config_load(in_tmp("dir.json"), &cfg, err, sizeof err), 0, "%s", err);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, cfg.workload), 0);
  cr_assert_eq(prstm_config_load_batch(&cfg, 4, b, err, sizeof err), 0, "%s", err);
  prstm_config_free(&cfg);
  assert_same_rows(a, b);
  cr_assert_eq(prstm_batch_size(b), 2);
  prstm_batch_destroy(a);
  prstm_batch_destroy(b);
}

/* prstm_batch_append_columns widens narrow columns, fills the columns it
 * was not given with 0, and refuses (appending nothing) a type index the
 * workload lacks or a width other than 1, 2, 4 or 8. */
Test(batch_dir, append_columns_widens_and_refuses_whole) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  const uint8_t types[2] = {2, 2}, c0[2] = {1, 250};
  const uint16_t c1[2] = {2, 65000};
  const uint32_t c2[2] = {3, 4000000000u};
  const prstm_column cols[3] = {{c0, 1}, {c1, 2}, {c2, 4}};
  cr_assert_eq(prstm_batch_append_columns(b, 2, types, cols, 3), 0, "%s", prstm_batch_error(b));
  cr_assert_eq(prstm_batch_arg(b, 1, 0), 250);
  cr_assert_eq(prstm_batch_arg(b, 1, 1), 65000);
  cr_assert_eq(prstm_batch_arg(b, 1, 2), 4000000000u);
  const uint8_t bad[2] = {2, 63};
  cr_assert_eq(prstm_batch_append_columns(b, 2, bad, cols, 3), PRSTM_EINVAL);
  cr_assert_not_null(strstr(prstm_batch_error(b), "row 1: type index 63"), "%s", prstm_batch_error(b));
  const prstm_column odd[1] = {{c0, 3}};
  cr_assert_eq(prstm_batch_append_columns(b, 2, types, odd, 1), PRSTM_EINVAL);
  cr_assert_not_null(strstr(prstm_batch_error(b), "width 3"), "%s", prstm_batch_error(b));
  cr_assert_eq(prstm_batch_size(b), 2, "a refused append added rows");
  /* Fewer columns than the batch has: the rest read 0. */
  cr_assert_eq(prstm_batch_append_columns(b, 2, types, cols, 1), 0);
  cr_assert_eq(prstm_batch_arg(b, 3, 0), 250);
  cr_assert_eq(prstm_batch_arg(b, 3, 2), 0);
  prstm_batch_destroy(b);
}

Test(batch_dir, save_into_an_unwritable_place_fails_with_the_path, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *b = mixed_batch(10, 100);
  char err[512] = "";
  const char *dir = in_tmp("no/such/folder");
  cr_assert_eq(prstm_save_batch_dir(dir, b, err, sizeof err), PRSTM_EIO);
  cr_assert_not_null(strstr(err, "no/such/folder"), "%s", err);
  prstm_batch_destroy(b);
}

/* Large appends and checks run on several threads, each a range of rows:
 * every row lands in its place across the ranges' edges, and a load reports
 * the first bad row in row order, whichever thread met it. */
Test(batch_dir, append_columns_of_millions_of_rows_copies_every_row) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  const uint64_t n = 5000000;
  uint8_t *types = malloc(n), *c0 = malloc(n);
  uint16_t *c1 = malloc(n * 2);
  uint64_t *c2 = malloc(n * 8);
  cr_assert(types && c0 && c1 && c2);
  for (uint64_t i = 0; i < n; i++) {
    types[i] = (uint8_t)(i % 3);
    c0[i] = (uint8_t)i;
    c1[i] = (uint16_t)(i * 7);
    c2[i] = i * 0x9e3779b97f4a7c15ull;
  }
  const prstm_column cols[3] = {{c0, 1}, {c1, 2}, {c2, 8}};
  prstm_word first[3] = {1, 2, 3};
  cr_assert_eq(prstm_batch_append(b, 2, first, 3), 0);
  cr_assert_eq(prstm_batch_append_columns(b, n, types, cols, 3), 0, "%s", prstm_batch_error(b));
  cr_assert_eq(prstm_batch_size(b), n + 1);
  for (uint64_t i = 0; i < n; i++) {
    if (prstm_batch_type(b, i + 1) != types[i] || prstm_batch_arg(b, i + 1, 0) != c0[i] ||
        prstm_batch_arg(b, i + 1, 1) != c1[i] || prstm_batch_arg(b, i + 1, 2) != c2[i])
      cr_assert_fail("row %llu differs", (unsigned long long)i + 1);
  }
  cr_assert_eq(prstm_batch_arg(b, 0, 2), 3);
  free(types);
  free(c0);
  free(c1);
  free(c2);
  prstm_batch_destroy(b);
}

/* A folder of n deposits on accounts below 100, except the rows in bad[],
 * which name account 5000. */
static const char *deposits_with_bad_rows(const char *name, uint64_t n, const uint64_t *bad, unsigned nbad) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  uint8_t *types = calloc(n, 1);
  uint16_t *account = malloc(n * 2);
  uint8_t *amount = malloc(n);
  cr_assert(types && account && amount);
  for (uint64_t i = 0; i < n; i++) {
    account[i] = (uint16_t)(i % 100);
    amount[i] = 1;
  }
  for (unsigned k = 0; k < nbad; k++) account[bad[k]] = 5000;
  const prstm_column cols[2] = {{account, 2}, {amount, 1}};
  cr_assert_eq(prstm_batch_append_columns(b, n, types, cols, 2), 0);
  const char *dir = in_tmp(name);
  char err[512];
  cr_assert_eq(prstm_save_batch_dir(dir, b, err, sizeof err), 0, "%s", err);
  free(types);
  free(account);
  free(amount);
  prstm_batch_destroy(b);
  return dir;
}

Test(batch_dir, first_bad_row_is_reported_whichever_thread_met_it, .init = make_tmpdir, .fini = remove_tmpdir) {
  const prstm_workload *wl = prstm_workload_find("bank");
  const uint64_t n = 3000000, both[2] = {1000000, 2500000}, late[1] = {2999999};
  char err[512] = "";
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  const char *dir = deposits_with_bad_rows("two", n, both, 2);
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 100, b, err, sizeof err), PRSTM_ECONFIG);
  cr_assert_not_null(strstr(err, "row 1000000: account: address 5000"), "%s", err);
  dir = deposits_with_bad_rows("late", n, late, 1);
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 100, b, err, sizeof err), PRSTM_ECONFIG);
  cr_assert_not_null(strstr(err, "row 2999999: account: address 5000"), "%s", err);
  cr_assert_eq(prstm_batch_size(b), 0);
  /* The same folder over a state that holds account 5000 loads whole. */
  cr_assert_eq(prstm_load_batch_dir(dir, wl, 5001, b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(prstm_batch_size(b), n);
  cr_assert_eq(prstm_batch_arg(b, 2999999, 0), 5000);
  cr_assert_eq(prstm_batch_arg(b, 2999998, 0), 2999998 % 100);
  prstm_batch_destroy(b);
}

/* A run with every outcome: a committed deposit, a balance read with its
 * result, a withdrawal nothing funds (abandoned) and a deposit that would
 * overflow (failed with the bank's reason). */
static prstm_batch *run_every_outcome(void) {
  const prstm_workload *wl = prstm_workload_find("bank");
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_CPU;
  opt.threads = 1;
  prstm_engine *e = NULL;
  cr_assert_eq(prstm_engine_create(&e, wl, &opt), 0);
  prstm_state_spec s = {.accounts = 4, .initial_balance = 10};
  cr_assert_eq(prstm_engine_init_state(e, &s), 0);
  prstm_batch *b = NULL;
  cr_assert_eq(prstm_batch_create(&b, wl), 0);
  prstm_word dep[2] = {1, 5}, bal[1] = {1}, wd[2] = {2, 1000}, over[2] = {3, UINT64_MAX};
  cr_assert_eq(prstm_batch_append_named(b, "deposit", dep, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "balance", bal, 1), 0);
  cr_assert_eq(prstm_batch_append_named(b, "withdraw", wd, 2), 0);
  cr_assert_eq(prstm_batch_append_named(b, "deposit", over, 2), 0);
  prstm_results r;
  cr_assert_eq(prstm_engine_run(e, b, &r), 0, "%s", prstm_engine_error(e));
  prstm_engine_destroy(e);
  return b;
}

Test(outcomes, jsonl_has_a_line_a_row_with_names, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *b = run_every_outcome();
  char err[512];
  const char *path = in_tmp("o.jsonl");
  cr_assert_eq(prstm_save_outcomes(path, b, err, sizeof err), 0, "%s", err);
  size_t len;
  char *text = read_bytes(path, &len);
  /* The balance read ran before or after the deposit: its result is 10 or 15. */
  const char *balance = strstr(text, "{\"index\":1,\"status\":\"committed\",\"reason\":\"none\",\"result\":1");
  cr_assert_not_null(balance, "%s", text);
  char want[1024];
  snprintf(want, sizeof want,
           "{\"index\":0,\"status\":\"committed\",\"reason\":\"none\",\"result\":0}\n%.*s\n"
           "{\"index\":2,\"status\":\"abandoned\",\"reason\":\"%s\",\"result\":0}\n"
           "{\"index\":3,\"status\":\"failed\",\"reason\":\"balance would overflow\",\"result\":0}\n",
           (int)(strchr(balance, '\n') - balance), balance,
           prstm_reason_string(prstm_batch_workload(b), 1, PRSTM_REASON_QUIESCENT));
  cr_assert_str_eq(text, want);
  free(text);
  prstm_batch_destroy(b);
}

Test(outcomes, folder_holds_numpy_columns, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *b = run_every_outcome();
  char err[512];
  const char *dir = in_tmp("od");
  cr_assert_eq(prstm_save_outcomes(dir, b, err, sizeof err), 0, "%s", err);
  static const struct {
    const char *file;
    unsigned width;
  } cols[] = {{"status.npy", 1}, {"reason.npy", 1}, {"result.npy", 8}};
  uint64_t got[3][4];
  for (unsigned c = 0; c < 3; c++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, cols[c].file);
    size_t len;
    char *f = read_bytes(path, &len);
    cr_assert_eq(memcmp(f, "\x93NUMPY\x01\x00", 8), 0);
    const size_t at = 10 + ((unsigned char)f[8] | (size_t)(unsigned char)f[9] << 8);
    cr_assert_eq(len, at + 4 * cols[c].width, "%s: %zu bytes", cols[c].file, len);
    cr_assert_not_null(strstr(f + 10, "'shape': (4,)"));
    for (unsigned r = 0; r < 4; r++) {
      uint64_t v = 0;
      for (unsigned k = 0; k < cols[c].width; k++)
        v |= (uint64_t)(unsigned char)f[at + r * cols[c].width + k] << (8 * k);
      got[c][r] = v;
    }
    free(f);
  }
  cr_assert_eq(got[0][0], PRSTM_COMMITTED);
  cr_assert_eq(got[0][2], PRSTM_ABANDONED);
  cr_assert_eq(got[0][3], PRSTM_FAILED);
  cr_assert_eq(got[1][2], PRSTM_REASON_QUIESCENT);
  cr_assert_eq(got[1][3], PRSTM_REASON_USER + 0);
  cr_assert(got[2][1] == 10 || got[2][1] == 15, "balance result %llu", (unsigned long long)got[2][1]);
  char path[600];
  snprintf(path, sizeof path, "%s/outcomes.json", dir);
  size_t len;
  char *m = read_bytes(path, &len);
  cr_assert_not_null(strstr(m, "\"format\": \"prstm-outcomes\""), "%s", m);
  cr_assert_not_null(strstr(m, "\"rows\": 4"), "%s", m);
  free(m);
  prstm_batch_destroy(b);
}

Test(outcomes, unwritable_path_fails_with_the_path, .init = make_tmpdir, .fini = remove_tmpdir) {
  prstm_batch *b = run_every_outcome();
  char err[512] = "";
  cr_assert_eq(prstm_save_outcomes(in_tmp("no/such.jsonl"), b, err, sizeof err), PRSTM_EIO);
  cr_assert_not_null(strstr(err, "no/such.jsonl: cannot write"), "%s", err);
  prstm_batch_destroy(b);
}
