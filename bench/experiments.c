/* experiments.c: prstm-bench's experiments, the papers' sweeps, as a table: each makes its points, runs them and writes its CSV. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- Experiments ---- */

sizes sizes_of(const bench_opts *o) {
  sizes s;
  if (o->quick) {
    /* 100,000 accounts, not fewer: 2,000 transfers of 128 accounts on
     * 10,000 put each account into about 25 transactions at once, every
     * transaction conflicted with every other, and the GPU point ran past
     * the quick points' 60 s (docs/PERFORMANCE.md, "Limits"). */
    s = (sizes){100000, 20000, 10000, 5000, 1000, 2000, 10000};
  } else {
    s = (sizes){2500000, 8000000, 4000000, 1000000, 200000, 200000, 2000000};
  }
  if (o->transactions) {
    s.transactions = o->transactions;
    s.vacation_transactions = o->transactions;
    s.skiplist_transactions = o->transactions;
  }
  return s;
}

int bench_set_param(const prstm_workload *wl, double *params, const char *name, double v) {
  int i = prstm_param_find(wl, name);
  if (i < 0) {
    fprintf(stderr, "prstm-bench: workload %s has no knob '%s'\n", wl->name, name);
    return PRSTM_EUNKNOWN;
  }
  params[i] = v;
  return 0;
}

/* A point of workload wl with what every experiment's points share: the
 * workload's own state and generator defaults, the run's seed and CPU
 * threads, lock coverage 1, every runner. */
static void point_init(const bench_ctx *c, bench_point *p, const prstm_workload *wl, const char *experiment,
                       const char *series) {
  memset(p, 0, sizeof *p);
  p->experiment = experiment;
  p->series = series;
  p->wl = wl;
  prstm_state_spec_init(wl, &p->state);
  prstm_generate_spec_init(wl, &p->gen);
  p->gen.seed = c->o.seed;
  p->cpu_threads = c->o.cpu_threads;
  p->lock_coverage = 1;
  p->runners = RUNNERS_DEFAULT;
}

/* A bank point of 2-account transfers (or accounts_per_tx-wide ones) on the
 * configured accounts, no semantic pairs unless asked. */
bench_point bank_point(const bench_ctx *c, const char *experiment, const char *series, uint64_t transactions,
                       double read_only) {
  const sizes s = sizes_of(&c->o);
  bench_point p;
  point_init(c, &p, &prstm_workload_bank, experiment, series);
  p.state.accounts = s.bank_accounts;
  /* Balances no transfer of the batch can exhaust: the bank points
   * have no semantic conflicts unless semantic pairs are asked for (those
   * are built to need their deposit whatever the balance). With 1,000, the
   * 89M-transfer target batch left 1.2M transfers underfunded, and postpone
   * mode spent most of its time waiting for money that never came. */
  p.state.initial_balance = 1000000000;
  p.gen.transactions = transactions;
  p.gen.nmix = 1;
  p.gen.mix_names[0] = "transfer";
  p.gen.mix_weights[0] = 1.0;
  p.gen.accounts_per_tx = 2;
  p.gen.amount_min = 1;
  p.gen.amount_max = 100;
  p.gen.read_only = read_only;
  return p;
}

/* The most threads the GPU keeps resident for a workload's first (narrowest)
 * worker variant, the one every sweep's batch runs on (the bank's 2-account
 * transfers; the other workloads have one variant), or 0 without a GPU. */
uint32_t gpu_full_threads(const bench_ctx *c, const prstm_workload *wl) {
  if (!c->gpu_ok || c->o.backend == PRSTM_BACKEND_CPU || !wl->variants[0].gpu_max_threads) return 0;
  uint32_t t = 0;
  char err[256];
  if (wl->variants[0].gpu_max_threads(&t, err, sizeof err)) {
    fprintf(stderr, "prstm-bench: %s: %s\n", wl->name, err);
    return 0;
  }
  return t;
}

/* Thread counts of a sweep: 960 doubling (sparse: quadrupling) up to a full
 * GPU, and the full GPU itself as the last, where the GPU runners run; else
 * host threads, 1 doubling to twice the cores (with --quick, up to 4). */
static unsigned thread_sweep(const bench_ctx *c, const prstm_workload *wl, int sparse, uint32_t *out, int *on_gpu) {
  unsigned n = 0;
  uint32_t full = gpu_full_threads(c, wl);
  *on_gpu = full > 0;
  if (full) {
    for (uint32_t t = 960; t < full && n < 30; t *= sparse ? 4 : 2) out[n++] = t;
    out[n++] = full;
    return n;
  }
  uint32_t top = c->o.quick ? 4 : (uint32_t)(2 * c->host_cores);
  for (uint32_t t = 1; t <= top && n < 30; t *= 2) out[n++] = t;
  return n;
}

FILE *bench_open_csv(const bench_ctx *c, const char *name) {
  char path[1300];
  snprintf(path, sizeof path, "%s/%s.csv", c->o.out_dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "prstm-bench: cannot write %s: %s\n", path, strerror(errno));
    return NULL;
  }
  fputs(bench_csv_header, f);
  return f;
}

static int exp_bank_accounts(bench_ctx *c) {
  FILE *f = bench_open_csv(c, "bank-accounts");
  if (!f) return PRSTM_EIO;
  const sizes s = sizes_of(&c->o);
  static const unsigned full[] = {2, 4, 8, 16, 32, 64, 128}, quick[] = {2, 16, 128};
  const unsigned *ks = c->o.quick ? quick : full;
  unsigned nk = c->o.quick ? 3 : 7;
  bench_row rows[R_COUNT];
  for (int ro = 0; ro < 2; ro++) {
    for (unsigned i = 0; i < nk; i++) {
      /* The same number of account touches per point, but never fewer rows
       * than a full GPU has threads (or, quick, than a small batch). */
      uint64_t n = s.transactions * 2 / ks[i], floor_n = c->o.quick ? 2000 : 1000000;
      if (n < floor_n) n = floor_n;
      bench_point p = bank_point(c, "bank-accounts", ro ? "ro20" : "update", n, ro ? 0.2 : 0.0);
      p.x_name = "accounts_per_tx";
      p.x = ks[i];
      p.gen.accounts_per_tx = ks[i];
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return 0;
}

static int exp_bank_coverage(bench_ctx *c) {
  FILE *f = bench_open_csv(c, "bank-coverage");
  if (!f) return PRSTM_EIO;
  const sizes s = sizes_of(&c->o);
  static const uint32_t full[] = {1, 4, 16, 64, 256, 1024}, quick[] = {1, 32, 1024};
  const uint32_t *cov = c->o.quick ? quick : full;
  unsigned ncov = c->o.quick ? 3 : 6;
  bench_row rows[R_COUNT];
  for (int ro = 0; ro < 2; ro++) {
    for (unsigned i = 0; i < ncov; i++) {
      bench_point p = bank_point(c, "bank-coverage", ro ? "ro20" : "update", s.transactions, ro ? 0.2 : 0.0);
      p.x_name = "lock_coverage";
      p.x = cov[i];
      p.lock_coverage = cov[i];
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return 0;
}

static int exp_bank_threads(bench_ctx *c) {
  FILE *f = bench_open_csv(c, "bank-threads");
  if (!f) return PRSTM_EIO;
  const sizes s = sizes_of(&c->o);
  uint32_t t[32];
  int on_gpu = 0;
  unsigned nt = thread_sweep(c, &prstm_workload_bank, 0, t, &on_gpu);
  bench_row rows[R_COUNT];
  for (int ro = 0; ro < 2; ro++) {
    for (unsigned i = 0; i < nt; i++) {
      bench_point p = bank_point(c, "bank-threads", ro ? "ro20" : "update", s.transactions, ro ? 0.2 : 0.0);
      p.x_name = on_gpu ? "gpu_threads" : "cpu_threads";
      p.x = t[i];
      if (on_gpu) {
        /* The last point is the full GPU, named explicitly: the engine's
         * default (threads 0) may be less (256 per SM for wider rows). */
        p.gpu_threads = t[i];
      } else {
        /* Without GPU runners the sweep is over the CPU backend's threads;
         * the serial replay stays the baseline. */
        p.cpu_threads = t[i];
      }
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return 0;
}

/* The engine and the ceiling against batch size, on the targets' transfers:
 * the engine commits more slowly on hundreds of millions of transfers than
 * on tens (docs/PERFORMANCE.md), and whether the
 * ceiling slows too decides how much of that belongs to the engine. Only
 * those two runners run with a GPU (a serial replay of 400M transfers
 * would take minutes a point); without one, the CPU backend on smaller
 * batches, so that the experiment still runs and checks everywhere. */
static int exp_bank_size(bench_ctx *c) {
  FILE *f = bench_open_csv(c, "bank-size");
  if (!f) return PRSTM_EIO;
  const int gpu = c->gpu_ok && c->o.backend != PRSTM_BACKEND_CPU;
  static const uint64_t on_gpu[] = {10000000, 40000000, 100000000, 200000000, 400000000},
                        on_cpu[] = {1000000, 4000000, 16000000}, quick[] = {20000, 50000, 200000};
  const uint64_t *ns = c->o.quick ? quick : gpu ? on_gpu : on_cpu;
  const unsigned count = c->o.quick ? 3 : gpu ? 5 : 3;
  bench_row rows[R_COUNT];
  for (unsigned i = 0; i < count; i++) {
    bench_point p = bank_point(c, "bank-size", "transfers", ns[i], 0.0);
    p.x_name = "transactions";
    p.x = (double)ns[i];
    p.runners = gpu ? RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_GPU_CEILING) : RUNNER_BIT(R_CPU_POSTPONE);
    run_point(c, &p, f, rows);
  }
  fclose(f);
  return 0;
}

static bench_point vacation_point(const bench_ctx *c, const char *experiment, const char *series, double ratio,
                                  int presorted) {
  const sizes s = sizes_of(&c->o);
  bench_point p;
  point_init(c, &p, prstm_workload_find("vacation"), experiment, series);
  if (c->o.quick) {
    bench_set_param(p.wl, p.state.params, "customers", 2000);
    bench_set_param(p.wl, p.state.params, "room_types", 50);
    bench_set_param(p.wl, p.state.params, "rooms", 20);
  }
  p.gen.transactions = s.vacation_transactions;
  p.gen.semantic_ratio = ratio;
  p.gen.presorted = presorted;
  p.x_name = "semantic_ratio";
  p.x = ratio;
  return p;
}

static int exp_semantic(bench_ctx *c, int vacation) {
  const char *name = vacation ? "semantic-vacation" : "semantic-bank";
  if (vacation && !prstm_workload_find("vacation")) {
    fprintf(stderr, "prstm-bench: %s: this build has no vacation workload\n", name);
    return PRSTM_EUNKNOWN;
  }
  FILE *f = bench_open_csv(c, name);
  if (!f) return PRSTM_EIO;
  const sizes s = sizes_of(&c->o);
  static const double full[] = {0, 0.1, 0.25, 0.5, 0.75, 1.0}, quick[] = {0, 0.5, 1.0};
  const double *ratios = c->o.quick ? quick : full;
  unsigned nr = c->o.quick ? 3 : 6;
  bench_row rows[R_COUNT];
  for (int presorted = 0; presorted < 2; presorted++) {
    for (unsigned i = 0; i < nr; i++) {
      bench_point p;
      if (vacation) {
        p = vacation_point(c, name, presorted ? "presorted" : "unsorted", ratios[i], presorted);
      } else {
        p = bank_point(c, name, presorted ? "presorted" : "unsorted", s.transactions, 0.0);
        p.x_name = "semantic_ratio";
        p.x = ratios[i];
        p.gen.semantic_ratio = ratios[i];
        p.gen.presorted = presorted;
      }
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return 0;
}

/* The three other workloads at the sizes of their papers' experiments, or
 * small ones with --quick; knobs are set by name so that a renamed knob is
 * an error, not a silent default. */
static int workload_point(const bench_ctx *c, const char *wl_name, bench_point *p) {
  const sizes s = sizes_of(&c->o);
  const prstm_workload *wl = prstm_workload_find(wl_name);
  if (!wl) {
    memset(p, 0, sizeof *p);
    fprintf(stderr, "prstm-bench: this build has no %s workload\n", wl_name);
    return PRSTM_EUNKNOWN;
  }
  point_init(c, p, wl, NULL, wl_name);
  int rc = 0;
  double *sp = p->state.params;
  if (strcmp(wl_name, "skiplist") == 0) {
    double initial = c->o.quick ? 500 : 5000, n = (double)s.skiplist_transactions;
    rc |= bench_set_param(p->wl, sp, "initial_keys", initial);
    rc |= bench_set_param(p->wl, sp, "capacity", initial + n + 1);
    p->gen.transactions = s.skiplist_transactions;
    p->gen.read_only = 0.2;
    p->gen.semantic_ratio = 0.1;
  } else if (strcmp(wl_name, "kmeans") == 0) {
    rc |= bench_set_param(p->wl, sp, "points", s.kmeans_points);
    rc |= bench_set_param(p->wl, sp, "iterations", c->o.quick ? 3 : 5);
  } else if (strcmp(wl_name, "graph") == 0) {
    rc |= bench_set_param(p->wl, sp, "vertices", s.graph_vertices);
    rc |= bench_set_param(p->wl, sp, "edges", s.graph_edges);
    rc |= bench_set_param(p->wl, sp, "seed", (double)c->o.seed);
  }
  return rc ? PRSTM_EUNKNOWN : 0;
}

static int exp_workloads(bench_ctx *c, int coverage) {
  const char *name = coverage ? "workloads-coverage" : "workloads-threads";
  FILE *f = bench_open_csv(c, name);
  if (!f) return PRSTM_EIO;
  static const char *const wls[] = {"skiplist", "kmeans", "graph"};
  static const uint32_t full[] = {1, 4, 16, 64, 256, 1024}, quick[] = {1, 16, 256};
  int status = 0;
  bench_row rows[R_COUNT];
  for (unsigned w = 0; w < 3; w++) {
    bench_point base;
    if (workload_point(c, wls[w], &base)) {
      status = PRSTM_EUNKNOWN;
      continue;
    }
    base.experiment = name;
    uint32_t xs[32];
    unsigned nx;
    int on_gpu = 0;
    if (coverage) {
      nx = c->o.quick ? 3 : 6;
      memcpy(xs, c->o.quick ? quick : full, nx * sizeof *xs);
    } else {
      nx = thread_sweep(c, base.wl, 1, xs, &on_gpu);
    }
    for (unsigned i = 0; i < nx; i++) {
      bench_point p = base;
      p.x = xs[i];
      if (coverage) {
        p.x_name = "lock_coverage";
        p.lock_coverage = xs[i];
      } else if (on_gpu) {
        p.x_name = "gpu_threads";
        p.gpu_threads = xs[i]; /* the last: a full GPU, named explicitly, as in bank-threads */
      } else {
        p.x_name = "cpu_threads";
        p.cpu_threads = xs[i];
      }
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return status;
}

/* contention: the engine at hot spots. Two-account transfers (amounts 1 to
 * 10 on balances of 10^6, so no semantic conflict) on 16 to 10^7 accounts,
 * and on 2.5M accounts at Zipfian skews up to 1.2; every runner on the same
 * batch of a point, with the delta path's pairs (the STM alone, the path
 * wherever its proof holds) beside the engine's default, every run
 * verified. Points hot enough to cost the STM alone minutes per run (fewer
 * than 1,000 accounts, skew above 0.9) take a tenth of the transfers. Then
 * the workloads whose types are opaque to the path (kmeans, skiplist,
 * graph, vacation) through the STM, and wide transfers of 16 and 64
 * accounts, which the path takes as lists of steps. */
static bench_point contention_bank(const bench_ctx *c, const char *series, uint64_t transactions, uint64_t accounts) {
  bench_point p = bank_point(c, "contention", series, transactions, 0.0);
  p.state.accounts = accounts;
  p.state.initial_balance = 1000000;
  p.gen.amount_min = 1;
  p.gen.amount_max = 10;
  p.runners = RUNNERS_ALL;
  p.verify = 1;
  return p;
}

static int exp_contention(bench_ctx *c) {
  FILE *f = bench_open_csv(c, "contention");
  if (!f) return PRSTM_EIO;
  const uint64_t full_n = c->o.transactions ? c->o.transactions : c->o.quick ? 20000 : 2000000, hot_n = full_n / 10;
  static const uint64_t full_accounts[] = {16, 64, 100, 1000, 10000, 100000, 1000000, 10000000},
                        quick_accounts[] = {16, 1000, 100000};
  static const double full_skew[] = {0.0, 0.5, 0.8, 0.99, 1.1, 1.2}, quick_skew[] = {0.0, 0.99, 1.2};
  const unsigned na = c->o.quick ? 3 : 8, ns = c->o.quick ? 3 : 6;
  bench_row rows[R_COUNT];
  int status = 0;
  for (unsigned i = 0; i < na; i++) {
    const uint64_t a = (c->o.quick ? quick_accounts : full_accounts)[i];
    bench_point p = contention_bank(c, "accounts", a < 1000 ? hot_n : full_n, a);
    p.x_name = "accounts";
    p.x = (double)a;
    run_point(c, &p, f, rows);
  }
  const uint64_t skew_accounts = c->o.quick ? 100000 : 2500000;
  for (unsigned i = 0; i < ns; i++) {
    const double theta = (c->o.quick ? quick_skew : full_skew)[i];
    bench_point p = contention_bank(c, "skew", theta > 0.9 ? hot_n : full_n, skew_accounts);
    p.x_name = "skew";
    p.x = theta;
    if (bench_set_param(p.wl, p.gen.params, "skew", theta)) status = PRSTM_EUNKNOWN;
    run_point(c, &p, f, rows);
  }
  static const char *const wls[] = {"kmeans", "skiplist", "graph"};
  for (unsigned w = 0; w < 3; w++) {
    bench_point p;
    if (workload_point(c, wls[w], &p)) {
      status = PRSTM_EUNKNOWN;
      continue;
    }
    p.experiment = "contention";
    p.x_name = "point";
    p.verify = 1;
    run_point(c, &p, f, rows);
  }
  bench_point v = vacation_point(c, "contention", "vacation", 0.0, 0);
  v.x_name = "point";
  v.x = 0;
  v.verify = 1;
  run_point(c, &v, f, rows);
  static const unsigned widths[] = {16, 64};
  for (unsigned i = 0; i < 2; i++) {
    bench_point wide = contention_bank(c, "wide", hot_n, 10000);
    wide.gen.accounts_per_tx = widths[i];
    /* Retry mode keeps the path off: through the STM, a 64-account point
     * runs for minutes on the GPU. */
    wide.runners = RUNNERS_DEFAULT & ~(RUNNER_BIT(R_GPU_RETRY) | RUNNER_BIT(R_CPU_RETRY));
    wide.x_name = "accounts_per_tx";
    wide.x = widths[i];
    run_point(c, &wide, f, rows);
  }
  fclose(f);
  return status;
}

/* oltp: the benchmarks GPU transaction engines are compared on. TPC-C's
 * NewOrder and Payment (half and half, and Payment alone) from 1 to 256
 * warehouses, where few warehouses are the hot case (every NewOrder of a
 * district takes its next order id); YCSB's 9 reads and 1 read-modify-write
 * over 1M records at Zipfian skews, and on uniform keys in chunks of 10,000
 * and 100,000 rows against the whole batch at once (the cost of a small
 * batch: its kernel's start, set-up, end and copies, in the end-to-end
 * rate). Every point runs on the GPU, the CPU backend and one CPU thread,
 * each run checked against the workload's invariant, and the GPU's run
 * once more verified against its serial replay. TPC-C points below 16
 * warehouses take a tenth of the transactions: there the GPU's STM runs
 * NewOrders at tens of thousands a second. */
static bench_point oltp_point(const bench_ctx *c, const prstm_workload *wl, const char *series, uint64_t transactions) {
  bench_point p;
  point_init(c, &p, wl, "oltp", series);
  p.gen.transactions = transactions;
  p.runners = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL);
  p.verify = 1;
  return p;
}

static int exp_oltp(bench_ctx *c) {
  const prstm_workload *tpcc = prstm_workload_find("tpcc"), *ycsb = prstm_workload_find("ycsb");
  if (!tpcc || !ycsb) {
    fprintf(stderr, "prstm-bench: this build lacks the tpcc or ycsb workload\n");
    return PRSTM_EUNKNOWN;
  }
  FILE *f = bench_open_csv(c, "oltp");
  if (!f) return PRSTM_EIO;
  const uint64_t n = c->o.transactions ? c->o.transactions : c->o.quick ? 20000 : 1000000;
  static const double full_wh[] = {1, 4, 16, 64, 256}, quick_wh[] = {1, 4};
  const unsigned nw = c->o.quick ? 2 : 5;
  bench_row rows[R_COUNT];
  int status = 0;
  for (unsigned mix = 0; mix < 2; mix++) {
    for (unsigned i = 0; i < nw; i++) {
      const double w = (c->o.quick ? quick_wh : full_wh)[i];
      const uint64_t rows_n = w < 16 && mix == 0 && !c->o.quick ? n / 10 : n;
      bench_point p = oltp_point(c, tpcc, mix == 0 ? "tpcc" : "tpcc-payment", rows_n);
      p.x_name = "warehouses";
      p.x = w;
      if (bench_set_param(tpcc, p.state.params, "warehouses", w) ||
          bench_set_param(tpcc, p.state.params, "slots", (double)rows_n) ||
          (c->o.quick && bench_set_param(tpcc, p.state.params, "items", 10000)))
        status = PRSTM_EUNKNOWN;
      p.gen.nmix = 2;
      p.gen.mix_names[0] = "new_order";
      p.gen.mix_weights[0] = mix == 0 ? 0.5 : 0.0;
      p.gen.mix_names[1] = "payment";
      p.gen.mix_weights[1] = mix == 0 ? 0.5 : 1.0;
      run_point(c, &p, f, rows);
    }
  }
  /* YCSB: 9 reads and 1 read-modify-write on 1M one-field records. */
  static const double full_skew[] = {0.0, 0.5, 0.99, 1.2}, quick_skew[] = {0.0, 0.99};
  for (unsigned i = 0; i < (c->o.quick ? 2u : 4u); i++) {
    const double theta = (c->o.quick ? quick_skew : full_skew)[i];
    bench_point p = oltp_point(c, ycsb, "ycsb", n);
    p.x_name = "skew";
    p.x = theta;
    if (bench_set_param(ycsb, p.state.params, "records", c->o.quick ? 100000 : 1000000) ||
        bench_set_param(ycsb, p.gen.params, "skew", theta))
      status = PRSTM_EUNKNOWN;
    run_point(c, &p, f, rows);
  }
  static const uint64_t chunks[] = {10000, 100000, 0};
  for (unsigned i = 0; i < 3; i++) {
    bench_point p = oltp_point(c, ycsb, "ycsb-chunks", n);
    p.x_name = "chunk_rows";
    p.x = (double)(chunks[i] ? chunks[i] : n);
    p.chunk_rows = chunks[i];
    /* The chunks are the GPU's question; the CPU runs the batch whole. */
    p.runners = RUNNER_BIT(R_GPU_POSTPONE);
    if (bench_set_param(ycsb, p.state.params, "records", c->o.quick ? 100000 : 1000000)) status = PRSTM_EUNKNOWN;
    run_point(c, &p, f, rows);
  }
  fclose(f);
  return status;
}

/* hetero: co-execution (the CPU and the GPU on one batch, each on a
 * replica), as its scheduler runs it and with the units sharing every batch
 * in rounds, against the GPU alone, the CPU backend alone and one CPU
 * thread, on the same batch. Bank transfers over 10^4 to 10^7 accounts (the
 * dataset's size: a larger one leaves fewer rows to wait for a later round
 * because a row of the CPU's touched their accounts); kv's mixes A, B and C
 * on Zipfian keys; and vacation and kmeans, whose bodies compute their
 * words, so that their rounds are split blindly, also in rounds under each
 * conflict policy; transfers of which a swept share span the units' ranges
 * (inter-unit conflicts); and the synchronisation period swept, fixed
 * against adaptive. Every point's runs are
 * checked against the workload's invariant and verified against their
 * serial replay. */
static bench_point hetero_point(const bench_ctx *c, const prstm_workload *wl, const char *series, uint64_t n) {
  bench_point p;
  point_init(c, &p, wl, "hetero", series);
  p.gen.transactions = n;
  p.runners = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL) |
              RUNNER_BIT(R_HETERO) | RUNNER_BIT(R_HETERO_ROUNDS);
  p.verify = 1;
  return p;
}

static int exp_hetero(bench_ctx *c) {
  const prstm_workload *kv = prstm_workload_find("kv");
  if (!kv || !prstm_workload_find("vacation") || !prstm_workload_find("kmeans")) {
    fprintf(stderr, "prstm-bench: this build lacks the kv, vacation or kmeans workload\n");
    return PRSTM_EUNKNOWN;
  }
  FILE *f = bench_open_csv(c, "hetero");
  if (!f) return PRSTM_EIO;
  const uint64_t n = c->o.transactions ? c->o.transactions : c->o.quick ? 20000 : 4000000;
  bench_row rows[R_COUNT];
  int status = 0;
  static const double full_accounts[] = {1e4, 1e5, 1e6, 1e7}, quick_accounts[] = {1e4, 1e5};
  for (unsigned i = 0; i < (c->o.quick ? 2u : 4u); i++) {
    bench_point p = bank_point(c, "hetero", "hetero-bank", n, 0.0);
    p.runners = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL) |
                RUNNER_BIT(R_HETERO) | RUNNER_BIT(R_HETERO_ROUNDS);
    p.verify = 1;
    p.state.accounts = (uint64_t)(c->o.quick ? quick_accounts : full_accounts)[i];
    p.x_name = "accounts";
    p.x = (double)p.state.accounts;
    run_point(c, &p, f, rows);
  }
  /* YCSB's mixes over the store: A 50% sets, B 5%, C gets alone. */
  static const double sets_share[] = {0.5, 0.05, 0.0};
  for (unsigned i = 0; i < 3; i++) {
    bench_point p = hetero_point(c, kv, "hetero-kv", n);
    p.gen.nmix = 2;
    p.gen.mix_names[0] = "get";
    p.gen.mix_weights[0] = 1.0 - sets_share[i];
    p.gen.mix_names[1] = "set";
    p.gen.mix_weights[1] = sets_share[i];
    p.x_name = "set_share";
    p.x = sets_share[i];
    if (c->o.quick &&
        (bench_set_param(kv, p.state.params, "sets", 4096) || bench_set_param(kv, p.state.params, "preload", 8000)))
      status = PRSTM_EUNKNOWN;
    run_point(c, &p, f, rows);
  }
  /* vacation at the semantic experiment's size, kmeans at the workloads
   * experiment's. */
  for (unsigned i = 0; i < 2; i++) {
    bench_point p;
    if (i == 0) {
      p = vacation_point(c, "hetero", "hetero-workloads", 0.0, 0);
    } else if (workload_point(c, "kmeans", &p) != 0) {
      status = PRSTM_EUNKNOWN;
      continue;
    }
    p.experiment = "hetero";
    p.series = "hetero-workloads";
    p.runners = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL) |
                RUNNER_BIT(R_HETERO) | RUNNER_BIT(R_HETERO_ROUNDS);
    p.verify = 1;
    /* x: 0 vacation, 1 kmeans (the workload column names it too). */
    p.x_name = "workload";
    p.x = i;
    run_point(c, &p, f, rows);
  }
  /* The conflict policies on the same two workloads, whose blindly split
   * rounds conflict: the units sharing every batch in rounds under each
   * policy (x 0 gpu-invalidation, 1 favour-fastest, 2 balanced), beside
   * the GPU, the CPU backend and one CPU thread once, at x 0. */
  static const char *const policy_series[] = {"hetero-policy-vacation", "hetero-policy-kmeans"};
  for (unsigned i = 0; i < 2; i++) {
    for (unsigned k = 0; k < 3; k++) {
      bench_point p;
      if (i == 0) {
        p = vacation_point(c, "hetero", policy_series[i], 0.0, 0);
      } else if (workload_point(c, "kmeans", &p) != 0) {
        status = PRSTM_EUNKNOWN;
        break;
      }
      p.experiment = "hetero";
      p.series = policy_series[i];
      p.runners = RUNNER_BIT(R_HETERO_ROUNDS);
      if (k == 0) p.runners |= RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL);
      p.verify = 1;
      p.hetero_policy = (prstm_hetero_policy)k;
      p.x_name = "policy";
      p.x = k;
      run_point(c, &p, f, rows);
    }
  }
  /* Inter-unit conflicts: transfers among 10^6 accounts [10^4] kept in 64
   * ranges of them, but for a share of rows (x) whose other account is
   * anywhere. Wherever the split between the units' ranges falls, those
   * rows are the ones that span it: each must run on the CPU's side, or
   * wait for a later round. */
  static const double full_cross[] = {0, 0.01, 0.05, 0.2, 0.5, 1}, quick_cross[] = {0, 0.5};
  const double bank_accounts = c->o.quick ? 1e4 : 1e6;
  for (unsigned i = 0; i < (c->o.quick ? 2u : 6u); i++) {
    bench_point p = bank_point(c, "hetero", "hetero-conflict", n, 0.0);
    p.runners = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL) |
                RUNNER_BIT(R_HETERO) | RUNNER_BIT(R_HETERO_ROUNDS);
    p.verify = 1;
    p.state.accounts = (uint64_t)bank_accounts;
    const double cross = (c->o.quick ? quick_cross : full_cross)[i];
    if (bench_set_param(&prstm_workload_bank, p.gen.params, "partitions", 64) ||
        bench_set_param(&prstm_workload_bank, p.gen.params, "cross_share", cross))
      status = PRSTM_EUNKNOWN;
    p.x_name = "cross_share";
    p.x = cross;
    run_point(c, &p, f, rows);
  }
  /* The synchronisation period: the units sharing every batch in rounds of
   * a fixed number of rows (x; 0 the adaptive period), on the conflict
   * series' transfers with 5% of them crossing (routed: no part is given
   * up) and on vacation (split blindly: its parts conflict), beside the
   * GPU, the CPU backend and one CPU thread once, at x 0. */
  static const double full_period[] = {0, 16384, 65536, 262144, 1048576, 4194304}, quick_period[] = {0, 4096};
  for (unsigned w = 0; w < 2; w++) {
    for (unsigned i = 0; i < (c->o.quick ? 2u : 6u); i++) {
      bench_point p;
      if (w == 0) {
        p = bank_point(c, "hetero", "hetero-period-bank", n, 0.0);
        p.state.accounts = (uint64_t)bank_accounts;
        if (bench_set_param(&prstm_workload_bank, p.gen.params, "partitions", 64) ||
            bench_set_param(&prstm_workload_bank, p.gen.params, "cross_share", 0.05))
          status = PRSTM_EUNKNOWN;
      } else {
        p = vacation_point(c, "hetero", "hetero-period-vacation", 0.0, 0);
      }
      p.runners = RUNNER_BIT(R_HETERO_ROUNDS);
      if (i == 0) p.runners |= RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL);
      p.verify = 1;
      p.hetero_period = (uint64_t)(c->o.quick ? quick_period : full_period)[i];
      p.x_name = "period_rows";
      p.x = (double)p.hetero_period;
      run_point(c, &p, f, rows);
    }
  }
  fclose(f);
  return status;
}

/* multigpu: one batch on several units (backend multi): 1, 2, 4 and 8
 * GPUs as far as the host has them (one and two sets of CPU threads where
 * it has none), against one GPU (the GPU backend), the CPU backend on every
 * core and one CPU thread, on the same batch; every run checked and
 * verified. Transfers among 10^6 accounts kept in eight ranges of them
 * (the bank's partitions knob), so that every row runs on one unit at any
 * of those counts; and kv's mix A (half gets, half sets), whose rows the
 * host routes by their set but whose bodies may read past it. The
 * baselines run once a series, at its one-unit point. */
static int exp_multigpu(bench_ctx *c) {
  const prstm_workload *kv = prstm_workload_find("kv");
  if (!kv) {
    fprintf(stderr, "prstm-bench: this build lacks the kv workload\n");
    return PRSTM_EUNKNOWN;
  }
  FILE *f = bench_open_csv(c, "multigpu");
  if (!f) return PRSTM_EIO;
  const uint64_t n = c->o.transactions ? c->o.transactions : c->o.quick ? 20000 : 40000000;
  const unsigned gpus = c->gpu_ok && c->o.backend != PRSTM_BACKEND_CPU ? prstm_bench_gpu_count() : 0;
  uint32_t units[4];
  unsigned count = 0;
  for (uint32_t u = 1; u <= 8 && count < 4; u *= 2)
    if (u <= (gpus ? gpus : 2)) units[count++] = u;
  bench_row rows[R_COUNT];
  int status = 0;
  const unsigned baselines = RUNNER_BIT(R_GPU_POSTPONE) | RUNNER_BIT(R_CPU_POSTPONE) | RUNNER_BIT(R_CPU_SERIAL);
  for (unsigned i = 0; i < count; i++) {
    bench_point p = bank_point(c, "multigpu", "multigpu-bank", n, 0.0);
    p.state.accounts = c->o.quick ? 10000 : 1000000;
    if (bench_set_param(&prstm_workload_bank, p.gen.params, "partitions", 8)) status = PRSTM_EUNKNOWN;
    p.units = units[i];
    p.x_name = "units";
    p.x = units[i];
    p.runners = RUNNER_BIT(R_MULTI) | (units[i] == 1 ? baselines : 0u);
    p.verify = 1;
    run_point(c, &p, f, rows);
  }
  for (unsigned i = 0; i < count; i++) {
    bench_point p = hetero_point(c, kv, "multigpu-kv", c->o.quick ? 20000 : 4000000);
    p.experiment = "multigpu";
    p.gen.nmix = 2;
    p.gen.mix_names[0] = "get";
    p.gen.mix_weights[0] = 0.5;
    p.gen.mix_names[1] = "set";
    p.gen.mix_weights[1] = 0.5;
    if (c->o.quick &&
        (bench_set_param(kv, p.state.params, "sets", 4096) || bench_set_param(kv, p.state.params, "preload", 8000)))
      status = PRSTM_EUNKNOWN;
    p.units = units[i];
    p.x_name = "units";
    p.x = units[i];
    p.runners = RUNNER_BIT(R_MULTI) | (units[i] == 1 ? baselines : 0u);
    run_point(c, &p, f, rows);
  }
  fclose(f);
  return status;
}

static int exp_semantic_bank(bench_ctx *c) { return exp_semantic(c, 0); }
static int exp_semantic_vacation(bench_ctx *c) { return exp_semantic(c, 1); }
static int exp_workloads_threads(bench_ctx *c) { return exp_workloads(c, 0); }
static int exp_workloads_coverage(bench_ctx *c) { return exp_workloads(c, 1); }

/* In the order they run; `prstm-bench NAME` selects by these names. */
const bench_experiment bench_experiments[] = {
    {"bank-accounts", exp_bank_accounts},
    {"bank-coverage", exp_bank_coverage},
    {"bank-threads", exp_bank_threads},
    {"bank-size", exp_bank_size},
    {"semantic-bank", exp_semantic_bank},
    {"semantic-vacation", exp_semantic_vacation},
    {"workloads-threads", exp_workloads_threads},
    {"workloads-coverage", exp_workloads_coverage},
    {"targets", exp_targets},
    {"contention", exp_contention},
    {"ingest", exp_ingest},
    {"oltp", exp_oltp},
    {"hetero", exp_hetero},
    {"multigpu", exp_multigpu},
};
const unsigned bench_experiment_count = sizeof bench_experiments / sizeof bench_experiments[0];
