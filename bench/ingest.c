/* ingest.c: the ingest experiment: one batch of bank transfers generated, written as JSON Lines and as a binary batch, then loaded back by each path, checked row for row and timed against a plain read of the same files; and every built-in generator timed on one thread and on every core, the two batches compared row for row. */
#define _GNU_SOURCE /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "loaders_internal.h"

const char ingest_csv_header[] = "experiment,input,rows,bytes,seconds,rows_per_s,mb_per_s,vs_read,status,note\n";

/* Reads a file to its end and throws the bytes away; returns the bytes
 * read, or -1. */
static int64_t ingest_read_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  static char buf[1 << 20];
  int64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return n < 0 ? -1 : total;
    }
    total += n;
  }
}

static int64_t ingest_folder_bytes;
static int ingest_read_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag != FTW_F) return 0;
  int64_t n = ingest_read_file(path);
  if (n < 0) return 1;
  ingest_folder_bytes += n;
  return 0;
}

static int ingest_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* 0 when a and b hold the same rows, every argument column included. */
static int ingest_same_batch(const prstm_batch *a, const prstm_batch *b) {
  const uint64_t n = prstm_batch_size(a);
  const unsigned cols = prstm_batch_columns(a);
  if (prstm_batch_size(b) != n || prstm_batch_columns(b) != cols) return -1;
  for (uint64_t i = 0; i < n; i++) {
    if (prstm_batch_type(b, i) != prstm_batch_type(a, i)) return -1;
    for (unsigned col = 0; col < cols; col++)
      if (prstm_batch_arg(b, i, col) != prstm_batch_arg(a, i, col)) return -1;
  }
  return 0;
}

typedef struct ingest_row {
  const char *input;
  uint64_t rows;
  int64_t bytes;
  double seconds, vs_read;
  int ok;
  char note[200];
} ingest_row;

static void ingest_write(FILE *f, const ingest_row *r) {
  fprintf(f, "ingest,%s,%" PRIu64 ",%" PRId64 ",%.6f,%.6g,%.6g,", r->input, r->rows, r->bytes, r->seconds,
          r->ok && r->seconds > 0 ? (double)r->rows / r->seconds : 0.0,
          r->ok && r->seconds > 0 && r->bytes > 0 ? (double)r->bytes / r->seconds / 1e6 : 0.0);
  if (r->vs_read > 0) fprintf(f, "%.4g", r->vs_read);
  fprintf(f, ",%s,%s\n", r->ok ? "ok" : "failed", r->note);
  fprintf(stderr, "prstm-bench: ingest %s: %" PRIu64 " rows in %.3f s%s%s\n", r->input, r->rows, r->seconds,
          r->ok ? "" : ": ", r->ok ? "" : r->note);
}

/* The loaders timed, each against the plain read of its files. */
typedef enum ingest_loader { INGEST_JSONL, INGEST_JSONL_STRICT, INGEST_BINARY } ingest_loader;

/* Loads `path` with one loader into a new batch, times it, checks it row
 * for row against the generated rows and writes its row of the CSV; returns
 * nonzero when the load failed or its rows differ. */
static int ingest_load(FILE *f, ingest_loader loader, const char *input, const char *path, const prstm_workload *wl,
                       uint64_t accounts, const prstm_batch *ref, const ingest_row *read) {
  ingest_row row = {input, prstm_batch_size(ref), read->bytes, 0, 0, 1, ""};
  char err[1024] = "";
  prstm_batch *b = NULL;
  int rc = prstm_batch_create(&b, wl);
  const double t = bench_now();
  if (!rc && loader == INGEST_JSONL) rc = prstm_load_jsonl(path, wl, accounts, b, err, sizeof err);
  if (!rc && loader == INGEST_JSONL_STRICT)
    rc = loaders_load_jsonl_threads(path, wl, accounts, b, 0, 0, err, sizeof err);
  if (!rc && loader == INGEST_BINARY) rc = prstm_load_batch_dir(path, wl, accounts, b, err, sizeof err);
  row.seconds = bench_now() - t;
  const int bad = rc || ingest_same_batch(ref, b) != 0;
  if (bad) {
    row.ok = 0;
    snprintf(row.note, sizeof row.note, "%.190s", rc ? err : "rows differ from the generated ones");
  } else {
    row.vs_read = read->seconds / row.seconds;
  }
  ingest_write(f, &row);
  prstm_batch_destroy(b);
  return bad;
}

/* Generates workload `name`'s batch of about n rows (kmeans and graph: the
 * rows their state makes) on `threads` threads into a new *out, timed. */
static int ingest_generate(const char *name, uint64_t n, unsigned threads, prstm_batch **out, double *seconds,
                           char *err, size_t errlen) {
  const prstm_workload *wl = prstm_workload_find(name);
  *out = NULL;
  if (!wl || !wl->generate) {
    snprintf(err, errlen, "this build has no %s generator", name);
    return PRSTM_EUNKNOWN;
  }
  prstm_generate_spec g;
  prstm_state_spec s;
  prstm_generate_spec_init(wl, &g);
  prstm_state_spec_init(wl, &s);
  g.threads = threads;
  g.seed = 2026;
  int rc = 0;
  if (strcmp(name, "kmeans") == 0) {
    /* points x iterations rows */
    rc |= bench_set_param(wl, s.params, "points", (double)(n / 5 ? n / 5 : 1));
    rc |= bench_set_param(wl, s.params, "iterations", 5);
  } else if (strcmp(name, "graph") == 0) {
    /* a push per vertex, and the queries' share */
    rc |= bench_set_param(wl, s.params, "vertices", (double)n);
    rc |= bench_set_param(wl, s.params, "edges", (double)(4 * n));
  } else {
    g.transactions = n;
  }
  if (strcmp(name, "bank") == 0) {
    s.accounts = 2500000;
    g.semantic_ratio = 0.1; /* as configs/bank.json */
  }
  if (strcmp(name, "skiplist") == 0) rc |= bench_set_param(wl, s.params, "capacity", (double)(n + 10000));
  if (strcmp(name, "tpcc") == 0) rc |= bench_set_param(wl, s.params, "slots", (double)n);
  if (rc) {
    snprintf(err, errlen, "%s has no knob this experiment sets", name);
    return PRSTM_EUNKNOWN;
  }
  rc = prstm_batch_create(out, wl);
  const double t = bench_now();
  if (!rc) rc = wl->generate(&g, &s, *out, err, errlen);
  *seconds = bench_now() - t;
  return rc;
}

/* Every built-in generator on one thread and on every core: the two
 * batches must be the same, row for row, before either time counts. */
static int ingest_generators(FILE *f, uint64_t n) {
  static const char *const names[] = {"bank", "vacation", "skiplist", "kmeans", "graph", "tpcc", "ycsb", "kv"};
  int bad = 0;
  for (unsigned k = 0; k < sizeof names / sizeof names[0]; k++) {
    char one_name[64], all_name[64], err[512] = "";
    snprintf(one_name, sizeof one_name, "generate_%s_one_thread", names[k]);
    snprintf(all_name, sizeof all_name, "generate_%s", names[k]);
    prstm_batch *one = NULL, *all = NULL;
    ingest_row r1 = {one_name, 0, 0, 0, 0, 1, ""}, ra = {all_name, 0, 0, 0, 0, 1, ""};
    int rc = ingest_generate(names[k], n, 1, &one, &r1.seconds, err, sizeof err);
    if (!rc) rc = ingest_generate(names[k], n, 0, &all, &ra.seconds, err, sizeof err);
    if (!rc && ingest_same_batch(one, all) != 0) {
      snprintf(err, sizeof err, "the batch made on every core differs from the one made on one thread");
      rc = PRSTM_EUNKNOWN;
    }
    r1.rows = ra.rows = prstm_batch_size(one);
    if (rc) {
      r1.ok = ra.ok = 0;
      snprintf(r1.note, sizeof r1.note, "%.190s", err);
      snprintf(ra.note, sizeof ra.note, "%.190s", err);
      bad = 1;
    } else {
      snprintf(ra.note, sizeof ra.note, "%.3g times one thread", r1.seconds / ra.seconds);
    }
    ingest_write(f, &r1);
    ingest_write(f, &ra);
    prstm_batch_destroy(one);
    prstm_batch_destroy(all);
  }
  return bad;
}

int exp_ingest(bench_ctx *c) {
  char path[1300];
  snprintf(path, sizeof path, "%s/ingest.csv", c->o.out_dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "prstm-bench: cannot write %s: %s\n", path, strerror(errno));
    return PRSTM_EIO;
  }
  fputs(ingest_csv_header, f);
  const prstm_workload *wl = prstm_workload_find("bank");
  const uint64_t n = c->o.transactions ? c->o.transactions : c->o.quick ? 200000 : 20000000;
  const uint64_t accounts = c->o.quick ? 100000 : 2500000;
  prstm_generate_spec g;
  prstm_generate_spec_init(wl, &g);
  g.transactions = n;
  g.seed = c->o.seed;
  g.nmix = 1;
  g.mix_names[0] = "transfer";
  g.mix_weights[0] = 1.0;
  g.amount_min = 1;
  g.amount_max = 10;
  prstm_state_spec s;
  prstm_state_spec_init(wl, &s);
  s.accounts = accounts;
  s.initial_balance = 1000;
  char jsonl[1300], folder[1300], err[1024];
  snprintf(jsonl, sizeof jsonl, "%s/ingest.jsonl", c->o.out_dir);
  snprintf(folder, sizeof folder, "%s/ingest-batch", c->o.out_dir);
  int status = 0;
  prstm_batch *ref = NULL;

  /* Generated on every core. */
  ingest_row gen = {"generate", n, 0, 0, 0, 1, ""};
  double t = bench_now();
  int rc = prstm_batch_create(&ref, wl);
  if (!rc) rc = wl->generate(&g, &s, ref, err, sizeof err);
  gen.seconds = bench_now() - t;
  if (rc) {
    gen.ok = 0;
    snprintf(gen.note, sizeof gen.note, "generate: %.180s", err);
    ingest_write(f, &gen);
    prstm_batch_destroy(ref);
    fclose(f);
    return rc;
  }
  ingest_write(f, &gen);

  /* The same rows as JSON Lines (written, not timed) and as a binary batch. */
  FILE *j = fopen(jsonl, "w");
  for (uint64_t i = 0; j && i < n; i++)
    fprintf(j, "{\"type\":\"transfer\",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"amount\":%" PRIu64 "}\n",
            prstm_batch_arg(ref, i, 0), prstm_batch_arg(ref, i, 1), prstm_batch_arg(ref, i, 2));
  if (!j || fclose(j) != 0) {
    fprintf(stderr, "prstm-bench: cannot write %s: %s\n", jsonl, strerror(errno));
    prstm_batch_destroy(ref);
    fclose(f);
    return PRSTM_EIO;
  }
  ingest_row save = {"save_binary", n, 0, 0, 0, 1, ""};
  t = bench_now();
  rc = prstm_save_batch_dir(folder, ref, err, sizeof err);
  save.seconds = bench_now() - t;
  ingest_folder_bytes = 0;
  if (!rc && nftw(folder, ingest_read_entry, 8, FTW_PHYS) != 0) rc = PRSTM_EIO;
  save.bytes = ingest_folder_bytes;
  if (rc) {
    save.ok = 0;
    snprintf(save.note, sizeof save.note, "%.190s", err);
    status = rc;
  }
  ingest_write(f, &save);

  /* The plain reads first (the files are in the page cache now, as they
   * are for the loads), then each load, checked row for row. */
  ingest_row read_jsonl = {"read_jsonl", n, 0, 0, 0, 1, ""};
  t = bench_now();
  read_jsonl.bytes = ingest_read_file(jsonl);
  read_jsonl.seconds = bench_now() - t;
  read_jsonl.ok = read_jsonl.bytes > 0;
  ingest_write(f, &read_jsonl);
  int bad = ingest_load(f, INGEST_JSONL, "load_jsonl", jsonl, wl, accounts, ref, &read_jsonl);
  /* The same file through the strict path alone (cJSON on every core), which
   * is how every record was read before the fast path: the parser was chosen
   * by this ratio. */
  bad |= ingest_load(f, INGEST_JSONL_STRICT, "load_jsonl_strict", jsonl, wl, accounts, ref, &read_jsonl);

  ingest_row read_binary = {"read_binary", n, 0, 0, 0, 1, ""};
  ingest_folder_bytes = 0;
  t = bench_now();
  read_binary.ok = save.ok && nftw(folder, ingest_read_entry, 8, FTW_PHYS) == 0;
  read_binary.seconds = bench_now() - t;
  read_binary.bytes = ingest_folder_bytes;
  ingest_write(f, &read_binary);
  bad |= ingest_load(f, INGEST_BINARY, "load_binary", folder, wl, accounts, ref, &read_binary);
  bad |= ingest_generators(f, c->o.quick ? 100000 : 4000000);
  if (bad) status = PRSTM_EUNKNOWN;
  prstm_batch_destroy(ref);
  /* The files are as large as the batch: they go. */
  unlink(jsonl);
  nftw(folder, ingest_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  fclose(f);
  if (status) c->failures++;
  return status;
}
