/* prstm-stream-bench.c: measures a stream of bank-transfer or YCSB batches against the kernel alone and the pinned copy alone, and runs one huge batch through chunking; checks each workload's invariant. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prstm.h"

#ifdef PRSTM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static const char usage_text[] =
    "usage: prstm-stream-bench [options]\n"
    "\n"
    "Stream mode (default): makes BATCHES batches of SIZE rows (random two-account\n"
    "bank transfers over ACCOUNTS accounts, or with --workload ycsb YCSB\n"
    "transactions of 9 reads and 1 read-modify-write over RECORDS records, by the\n"
    "ycsb generator), then measures, in this one run:\n"
    "  kernel   the same batches run one by one with prstm_engine_run, counting\n"
    "           only the execution (the kernel's time, without any copy);\n"
    "  copy     the bytes a stream copies (a type byte, the argument words and a\n"
    "           status byte a row) host to device, from pinned memory, alone\n"
    "           (cudaMemcpyAsync, GPU only);\n"
    "  stream   the batches submitted to a stream and the stream closed, over its\n"
    "           whole wall and with the state resident (without the set-up that\n"
    "           takes the state to the GPU and gives it back);\n"
    "and prints each rate, and the stream's rate against the slower of kernel\n"
    "and copy. Single mode (--single N): one batch of N transfers through\n"
    "prstm_engine_run, chunked when it does not fit the GPU (or by\n"
    "--chunk-rows). Each run's invariant is checked (transfers: money conserved,\n"
    "every transaction final, every abandoned one unfundable; YCSB: every\n"
    "transaction committed and every record its first value plus its\n"
    "read-modify-writes), and the program exits 1 when one fails. Each engine is\n"
    "warmed up first (prstm_engine_warm_up), so the times leave out the GPU's\n"
    "start.\n"
    "\n"
    "options:\n"
    "  --workload W      bank (default) or ycsb\n"
    "  --batches N       batches in the stream (default 100)\n"
    "  --batch-size N    rows per batch (default 1000000)\n"
    "  --accounts N      bank: accounts (default 2500000)\n"
    "  --initial-balance N  bank: each account's money at the start (default 1000:\n"
    "                    some transfers then wait for money, and some never get it)\n"
    "  --records N       ycsb: records of one word (default 1000000)\n"
    "  --single N        single mode with N transfers (e.g. 200000000)\n"
    "  --chunk-rows N    the most rows of one run (options.chunk_rows; default:\n"
    "                    PRSTM_CHUNK_ROWS, else what fits the GPU)\n"
    "  --backend B       auto|gpu|cpu (default auto)\n"
    "  --threads N       executing threads (0: the engine's default: for transfers 512 per\n"
    "                    SM of a GPU, or every core)\n"
    "  --skip-kernel     leave out the kernel-alone measure\n"
    "  --pinned          build the batches in pinned memory (prstm_batch_create_pinned),\n"
    "                    which the GPU copies from directly, without a staging copy\n"
    "  --seed N          generator seed (default 1)\n"
    "  --help\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, int rc, const prstm_engine *e) {
  fprintf(stderr, "prstm-stream-bench: %s: %s: %s\n", what, prstm_strerror(rc), e ? prstm_engine_error(e) : "");
  return 1;
}

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t x = *s;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 32);
}

/* What a run measures: bank transfers, or YCSB transactions. */
typedef struct bench_workload {
  const prstm_workload *wl;
  int ycsb;
  uint64_t accounts, balance; /* bank */
  uint64_t records;           /* ycsb, one word a record */
} bench_workload;

/* Random transfers of 1 to 100 between two distinct accounts. */
static int make_batch(const prstm_workload *bank, unsigned transfer, uint64_t n, uint64_t accounts, uint64_t *seed,
                      int pinned, prstm_batch **out) {
  int rc = pinned ? prstm_batch_create_pinned(out, bank) : prstm_batch_create(out, bank);
  if (rc) return rc;
  /* Pinned memory is reserved at its size once: growing it by doubling
   * would allocate and copy pinned memory several times. */
  if (pinned) rc = prstm_batch_reserve(*out, n, 3);
  if (rc) return rc;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rng_next(seed), from = r % accounts, to = (r >> 32) % accounts;
    if (to == from) to = (to + 1) % accounts;
    prstm_word args[3] = {from, to, 1 + (rng_next(seed) % 100)};
    rc = prstm_batch_append(*out, transfer, args, 3);
    if (rc) return rc;
  }
  return 0;
}

static int make_engine(const bench_workload *w, const prstm_options *opt, prstm_engine **out) {
  int rc = prstm_engine_create(out, w->wl, opt);
  if (rc) return rc;
  prstm_state_spec spec;
  prstm_state_spec_init(w->wl, &spec);
  if (w->ycsb) {
    spec.params[prstm_param_find(w->wl, "records")] = (double)w->records;
  } else {
    spec.accounts = w->accounts;
    spec.initial_balance = w->balance;
  }
  rc = prstm_engine_init_state(*out, &spec);
  /* The GPU's context, kernels and pinned chunks are the engine's set-up,
   * as an embedding that streams small batches would take them: without
   * them a stream's first units pin their own staging, which took longer
   * than a stream of 200 batches of 10,000 rows executes. */
  return rc ? rc : prstm_engine_warm_up(*out);
}

/* YCSB batches, each from the workload's own generator (its defaults: 10
 * operations, the last a read-modify-write, keys uniform over the
 * records) with a seed of its own, made straight into the batch (pinned
 * where asked). */
static int make_ycsb_batches(const bench_workload *w, uint64_t batches, uint64_t size, uint64_t seed, int pinned,
                             prstm_batch **b) {
  prstm_generate_spec g;
  prstm_state_spec spec;
  prstm_generate_spec_init(w->wl, &g);
  prstm_state_spec_init(w->wl, &spec);
  spec.params[prstm_param_find(w->wl, "records")] = (double)w->records;
  g.transactions = size;
  int rc = 0;
  for (uint64_t k = 0; !rc && k < batches; k++) {
    char err[512] = "";
    g.seed = seed + k;
    rc = pinned ? prstm_batch_create_pinned(&b[k], w->wl) : prstm_batch_create(&b[k], w->wl);
    if (!rc) rc = w->wl->generate(&g, &spec, b[k], err, sizeof err);
    if (rc) fprintf(stderr, "prstm-stream-bench: ycsb generator: %s\n", err[0] ? err : prstm_strerror(rc));
  }
  return rc;
}

static int make_batches(const bench_workload *w, uint64_t batches, uint64_t size, uint64_t seed, int pinned,
                        prstm_batch **b) {
  if (w->ycsb) return make_ycsb_batches(w, batches, size, seed, pinned, b);
  int transfer = prstm_type_find(w->wl, "transfer");
  for (uint64_t k = 0; k < batches; k++) {
    int rc = make_batch(w->wl, (unsigned)transfer, size, w->accounts, &seed, pinned, &b[k]);
    if (rc) return rc;
  }
  return 0;
}

static unsigned __int128 total_money(const prstm_engine *e) {
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  unsigned __int128 t = 0;
  for (uint64_t i = 0; i < n; i++) t += w[i];
  return t;
}

/* Every row final, and each abandoned transfer unfundable on the final state. */
static int check_batch(const prstm_engine *e, const prstm_batch *b, uint64_t *committed, uint64_t *abandoned) {
  const prstm_word *w = prstm_engine_state(e, NULL);
  for (uint64_t i = 0, n = prstm_batch_size(b); i < n; i++) {
    prstm_status st;
    prstm_batch_outcome(b, i, &st, NULL, NULL);
    if (st == PRSTM_PENDING) return 0;
    if (st == PRSTM_COMMITTED) (*committed)++;
    if (st == PRSTM_ABANDONED) {
      (*abandoned)++;
      if (w[prstm_batch_arg(b, i, 0)] >= prstm_batch_arg(b, i, 2)) return 0;
    }
  }
  return 1;
}

/* YCSB: every row committed, and every record its first value (record r
 * starts as r) plus the committed read-modify-writes on it, which commute;
 * the batches have no blind writes. `what` names the run in messages. */
static int check_ycsb(const prstm_engine *e, prstm_batch *const *b, uint64_t batches, const char *what,
                      uint64_t *committed) {
  uint64_t nwords = 0;
  const prstm_word *w = prstm_engine_state(e, &nwords);
  uint64_t *plus = calloc((size_t)nwords, sizeof *plus);
  if (!plus) return 0;
  const unsigned update = (unsigned)prstm_type_find(prstm_engine_workload(e), "update");
  int ok = 1;
  for (uint64_t k = 0; ok && k < batches; k++) {
    const unsigned ncols = prstm_batch_columns(b[k]);
    for (uint64_t i = 0, n = prstm_batch_size(b[k]); i < n; i++) {
      prstm_status st;
      prstm_batch_outcome(b[k], i, &st, NULL, NULL);
      if (st != PRSTM_COMMITTED) {
        printf("%s: batch %llu row %llu did not commit\n", what, (unsigned long long)k, (unsigned long long)i);
        ok = 0;
        break;
      }
      (*committed)++;
      if (prstm_batch_type(b[k], i) != update) continue;
      const uint64_t kinds = prstm_batch_arg(b[k], i, 0), ops = prstm_batch_arg(b[k], i, 1);
      for (uint64_t o = 0; o < ops && o + 2 < ncols; o++) {
        const uint64_t word = prstm_batch_arg(b[k], i, 2 + (unsigned)o);
        /* Kind 1 is a read-modify-write (docs/workloads/ycsb.md). */
        if (((kinds >> (2 * o)) & 3u) == 1u && word < nwords) plus[word]++;
      }
    }
  }
  for (uint64_t i = 0; ok && i < nwords; i++)
    if (w[i] != i + plus[i]) {
      printf("%s: record %llu holds %llu, expected %llu\n", what, (unsigned long long)i, (unsigned long long)w[i],
             (unsigned long long)(i + plus[i]));
      ok = 0;
    }
  free(plus);
  return ok;
}

#ifdef PRSTM_HAVE_CUDA
/* The pinned host-to-device copy alone: the bytes a stream copies per batch
 * (type and argument columns), from pinned memory, batch after batch on one
 * stream, timed by events. Returns seconds, or a negative value on error. */
static double pinned_copy_seconds(uint64_t bytes_per_batch, uint64_t batches) {
  void *host = NULL, *dev = NULL;
  cudaStream_t st = NULL;
  cudaEvent_t a = NULL, z = NULL;
  double secs = -1;
  if (cudaHostAlloc(&host, bytes_per_batch, cudaHostAllocDefault) != cudaSuccess) goto out;
  if (cudaMalloc(&dev, bytes_per_batch) != cudaSuccess) goto out;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) goto out;
  if (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&z) != cudaSuccess) goto out;
  memset(host, 1, bytes_per_batch);
  /* One copy first, so the measure does not include the link waking up. */
  if (cudaMemcpyAsync(dev, host, bytes_per_batch, cudaMemcpyHostToDevice, st) != cudaSuccess) goto out;
  if (cudaEventRecord(a, st) != cudaSuccess) goto out;
  for (uint64_t k = 0; k < batches; k++)
    if (cudaMemcpyAsync(dev, host, bytes_per_batch, cudaMemcpyHostToDevice, st) != cudaSuccess) goto out;
  if (cudaEventRecord(z, st) != cudaSuccess || cudaEventSynchronize(z) != cudaSuccess) goto out;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, a, z) != cudaSuccess) goto out;
  secs = ms / 1000.0;
out:
  if (secs < 0) fprintf(stderr, "prstm-stream-bench: pinned copy: %s\n", cudaGetErrorString(cudaGetLastError()));
  if (a) cudaEventDestroy(a);
  if (z) cudaEventDestroy(z);
  if (st) cudaStreamDestroy(st);
  cudaFree(dev);
  cudaFreeHost(host);
  return secs;
}
#endif

typedef struct done_count {
  uint64_t batches;
} done_count;

static void on_done(uint64_t index, prstm_batch *batch, void *user) {
  (void)index;
  (void)batch;
  ((done_count *)user)->batches++;
}

/* Checks the batches' outcomes and the engine's state after they ran:
 * transfers, the money as `before`, and with `stream` (one run over every
 * batch, which gives a transfer up only once nothing left can fund it)
 * every one final and every abandoned one unfundable on the final state;
 * YCSB, check_ycsb. Counts the committed and abandoned rows. */
static int check_batches(const bench_workload *w, const prstm_engine *e, prstm_batch *const *b, uint64_t batches,
                         unsigned __int128 before, int stream, const char *what, uint64_t *committed,
                         uint64_t *abandoned) {
  if (w->ycsb) return check_ycsb(e, b, batches, what, committed);
  for (uint64_t k = 0; stream && k < batches; k++)
    if (!check_batch(e, b[k], committed, abandoned)) {
      printf("%s: batch %llu has a pending or fundable abandoned transaction\n", what, (unsigned long long)k);
      return 0;
    }
  if (total_money(e) != before) {
    printf("%s: money NOT conserved\n", what);
    return 0;
  }
  return 1;
}

static int stream_mode(const bench_workload *w, const prstm_options *opt, uint64_t batches, uint64_t size,
                       uint64_t seed, int skip_kernel, int pinned) {
  prstm_batch **b = calloc(batches, sizeof *b);
  if (!b) return fail("allocate", PRSTM_ENOMEM, NULL);
  double t0 = now_s();
  int brc = make_batches(w, batches, size, seed, pinned, b);
  if (brc) return fail("make batches", brc, NULL);
  if (w->ycsb)
    printf("generated %llu batches of %llu YCSB transactions over %llu records in %.2f s (%s memory)\n",
           (unsigned long long)batches, (unsigned long long)size, (unsigned long long)w->records, now_s() - t0,
           prstm_batch_pinned(b[0]) ? "pinned" : "ordinary");
  else
    printf("generated %llu batches of %llu transfers over %llu accounts in %.2f s (%s memory)\n",
           (unsigned long long)batches, (unsigned long long)size, (unsigned long long)w->accounts, now_s() - t0,
           prstm_batch_pinned(b[0]) ? "pinned" : "ordinary");
  uint64_t total = batches * size;
  int ok = 1;

  /* Kernel alone: the same batches, in the same order, from the same
   * initial state, one prstm_engine_run each; only execution counts. */
  double kernel_s = 0;
  if (!skip_kernel) {
    prstm_engine *e = NULL;
    int rc = make_engine(w, opt, &e);
    if (rc) return fail("engine", rc, e);
    unsigned __int128 before = total_money(e);
    for (uint64_t k = 0; k < batches; k++) {
      prstm_results r;
      rc = prstm_engine_run(e, b[k], &r);
      if (rc) return fail("kernel-alone run", rc, e);
      kernel_s += r.execute_s;
      if (k == 0) printf("device: %s\n", r.device);
    }
    uint64_t committed = 0, abandoned = 0;
    /* Each run gives up its own unfundable transfers, which a later batch
     * may fund: only the money is checked across them. */
    if (!check_batches(w, e, b, batches, before, 0, "kernel alone", &committed, &abandoned)) ok = 0;
    prstm_engine_destroy(e);
    printf("kernel alone: %llu transactions in %.4f s of execution: %.1f M tx/s\n", (unsigned long long)total, kernel_s,
           total / kernel_s / 1e6);
  }

  /* The stream. */
  prstm_engine *e = NULL;
  int rc = make_engine(w, opt, &e);
  if (rc) return fail("engine", rc, e);
  unsigned __int128 before = total_money(e);
  prstm_stream *s = NULL;
  done_count done = {0};
  double s0 = now_s();
  rc = prstm_stream_open(e, &s);
  if (rc) return fail("stream open", rc, e);
  prstm_stream_set_done(s, on_done, &done);
  for (uint64_t k = 0; k < batches; k++) {
    rc = prstm_stream_submit(s, b[k]);
    if (rc) return fail("stream submit", rc, e);
  }
  prstm_stream_results sr;
  rc = prstm_stream_close(s, &sr);
  if (rc) return fail("stream close", rc, e);
  double stream_s = now_s() - s0;
  prstm_stream_destroy(s);
  uint64_t committed = 0, abandoned = 0;
  const int held = check_batches(w, e, b, batches, before, 1, "stream", &committed, &abandoned);
  ok = ok && held && done.batches == batches && committed == sr.committed && abandoned == sr.abandoned;
  char unit[32] = "no limit";
  if (sr.unit_rows != UINT64_MAX) snprintf(unit, sizeof unit, "%llu", (unsigned long long)sr.unit_rows);
  printf("stream: %s; unit rows %s; runs %llu\n", sr.device, unit, (unsigned long long)sr.runs);
  printf(
      "stream: %llu committed, %llu abandoned, %llu failed, %llu carried (%llu carried runs); %s %s; "
      "%llu batches reported done\n",
      (unsigned long long)sr.committed, (unsigned long long)sr.abandoned, (unsigned long long)sr.failed,
      (unsigned long long)sr.carried, (unsigned long long)sr.carry_runs, w->ycsb ? "records" : "money",
      held ? (w->ycsb ? "as their read-modify-writes make them" : "conserved") : "NOT as expected",
      (unsigned long long)done.batches);
  printf("stream: wall %.4f s (set-up %.4f s), copy %.4f s, execute %.4f s\n", stream_s, sr.setup_s, sr.copy_s,
         sr.execute_s);
  double stream_rate = total / stream_s, steady_rate = total / (stream_s - sr.setup_s);
  printf("stream: %.1f M tx/s over the wall time; %.1f M tx/s without the set-up (the state resident)\n",
         stream_rate / 1e6, steady_rate / 1e6);
  double bound = skip_kernel ? 0 : total / kernel_s;
  const char *bound_name = "kernel";
#ifdef PRSTM_HAVE_CUDA
  if (sr.backend == PRSTM_BACKEND_GPU) {
    /* The bytes the stream copies per batch: per row a type byte, its
     * argument words (4 bytes each where every value of the batch fits in
     * 32 bits, as a batch then keeps them) and the status byte it clears by
     * a copy of zeros. */
    const unsigned ncols = prstm_batch_columns(b[0]);
    prstm_word high = 0;
    for (uint64_t i = 0; i < size; i++)
      for (unsigned c = 0; c < ncols; c++) high |= prstm_batch_arg(b[0], i, c) >> 32;
    uint64_t bytes = size * (1 + (high ? 8u : 4u) * (uint64_t)ncols + 1);
    double copy_s = pinned_copy_seconds(bytes, batches);
    if (copy_s > 0) {
      double copy_rate = total / copy_s;
      printf("copy alone: %llu bytes per batch, %.4f s: %.2f GB/s, %.1f M tx/s\n", (unsigned long long)bytes, copy_s,
             (double)bytes * batches / copy_s / 1e9, copy_rate / 1e6);
      if (bound == 0 || copy_rate < bound) {
        bound = copy_rate;
        bound_name = "copy";
      }
    } else {
      ok = 0;
    }
  }
#endif
  if (bound > 0)
    printf("ratio: stream / min(kernel, copy) = %.3f over the wall time, %.3f without the set-up (the slower is %s)\n",
           stream_rate / bound, steady_rate / bound, bound_name);
  printf("invariant: %s\n", ok ? "ok" : "VIOLATED");
  prstm_engine_destroy(e);
  for (uint64_t k = 0; k < batches; k++) prstm_batch_destroy(b[k]);
  free(b);
  return ok ? 0 : 1;
}

static int single_mode(const bench_workload *w, const prstm_options *opt, uint64_t n, uint64_t seed, int pinned) {
  const prstm_workload *bank = w->wl;
  const uint64_t accounts = w->accounts;
  int transfer = prstm_type_find(bank, "transfer");
  prstm_batch *b = NULL;
  double t0 = now_s();
  int rc = make_batch(bank, (unsigned)transfer, n, accounts, &seed, pinned, &b);
  if (rc) return fail("make batch", rc, NULL);
  printf("generated one batch of %llu transfers over %llu accounts in %.2f s (%s memory)\n", (unsigned long long)n,
         (unsigned long long)accounts, now_s() - t0, prstm_batch_pinned(b) ? "pinned" : "ordinary");
  prstm_engine *e = NULL;
  rc = make_engine(w, opt, &e);
  if (rc) return fail("engine", rc, e);
  unsigned __int128 before = total_money(e);
  prstm_results r;
  t0 = now_s();
  rc = prstm_engine_run(e, b, &r);
  double wall = now_s() - t0;
  if (rc) return fail("run", rc, e);
  uint64_t committed = 0, abandoned = 0;
  int final_ok = check_batch(e, b, &committed, &abandoned);
  int conserved = total_money(e) == before;
  int inv = 0;
  char msg[512] = "";
  prstm_engine_check_invariant(e, b, &inv, msg, sizeof msg);
  printf("device: %s\n", r.device);
  printf(
      "single: %llu transactions, %llu committed, %llu abandoned, %llu failed; transfer %.3f s, execute %.3f s, "
      "wall %.3f s; %.1f M tx/s of execution\n",
      (unsigned long long)r.transactions, (unsigned long long)r.committed, (unsigned long long)r.abandoned,
      (unsigned long long)r.failed, r.transfer_s, r.execute_s, wall, r.committed / r.execute_s / 1e6);
  printf("bank invariant: %s (%s)\n", inv ? "ok" : "VIOLATED", msg);
  int ok = final_ok && conserved && inv && committed == r.committed && abandoned == r.abandoned;
  printf("invariant: %s\n", ok ? "ok" : "VIOLATED");
  prstm_engine_destroy(e);
  prstm_batch_destroy(b);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  uint64_t batches = 100, size = 1000000, accounts = 2500000, single = 0, seed = 1, balance = 1000, records = 1000000;
  const char *workload = "bank";
  int skip_kernel = 0, pinned = 0;
  prstm_options opt;
  prstm_options_init(&opt);
  static const struct option longopts[] = {{"workload", required_argument, 0, 'w'},
                                           {"records", required_argument, 0, 'R'},
                                           {"batches", required_argument, 0, 'b'},
                                           {"batch-size", required_argument, 0, 'n'},
                                           {"accounts", required_argument, 0, 'a'},
                                           {"initial-balance", required_argument, 0, 'i'},
                                           {"single", required_argument, 0, 's'},
                                           {"chunk-rows", required_argument, 0, 'c'},
                                           {"backend", required_argument, 0, 'k'},
                                           {"threads", required_argument, 0, 't'},
                                           {"skip-kernel", no_argument, 0, 'K'},
                                           {"pinned", no_argument, 0, 'P'},
                                           {"seed", required_argument, 0, 'r'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    char *end = NULL;
    unsigned long long v = optarg ? strtoull(optarg, &end, 10) : 0;
    if (optarg && c != 'k' && c != 'w' && (end == optarg || *end)) {
      fprintf(stderr, "prstm-stream-bench: %s: expected a whole number\n", optarg);
      return 2;
    }
    switch (c) {
      case 'w':
        workload = optarg;
        break;
      case 'R':
        records = v;
        break;
      case 'b':
        batches = v;
        break;
      case 'n':
        size = v;
        break;
      case 'a':
        accounts = v;
        break;
      case 'i':
        balance = v;
        break;
      case 's':
        single = v;
        break;
      case 'c':
        opt.chunk_rows = v;
        break;
      case 't':
        opt.threads = (uint32_t)v;
        break;
      case 'K':
        skip_kernel = 1;
        break;
      case 'P':
        pinned = 1;
        break;
      case 'r':
        seed = v;
        break;
      case 'k':
        if (strcmp(optarg, "auto") == 0)
          opt.backend = PRSTM_BACKEND_AUTO;
        else if (strcmp(optarg, "gpu") == 0)
          opt.backend = PRSTM_BACKEND_GPU;
        else if (strcmp(optarg, "cpu") == 0)
          opt.backend = PRSTM_BACKEND_CPU;
        else {
          fprintf(stderr, "prstm-stream-bench: --backend: expected auto, gpu or cpu\n");
          return 2;
        }
        break;
      case 'h':
        fputs(usage_text, stdout);
        return 0;
      default:
        fputs(usage_text, stderr);
        return 2;
    }
  }
  bench_workload w = {NULL, 0, accounts, balance, records};
  if (strcmp(workload, "ycsb") == 0) {
    w.ycsb = 1;
  } else if (strcmp(workload, "bank") != 0) {
    fprintf(stderr, "prstm-stream-bench: --workload: expected bank or ycsb, got '%s'\n", workload);
    return 2;
  }
  if (w.ycsb && single) {
    fprintf(stderr, "prstm-stream-bench: --single runs bank transfers; leave out --workload ycsb\n");
    return 2;
  }
  if (optind < argc || batches == 0 || size == 0 || accounts < 2 || records == 0) {
    fputs(usage_text, stderr);
    return 2;
  }
  w.wl = prstm_workload_find(workload);
  if (!w.wl) return fail(workload, PRSTM_EUNKNOWN, NULL);
  if (single) return single_mode(&w, &opt, single, seed, pinned);
  return stream_mode(&w, &opt, batches, size, seed, skip_kernel, pinned);
}
