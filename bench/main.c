/* main.c: prstm-bench, the papers' experiments through the public API: options, the run's meta data, and the experiments selected. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

const char *const series_names[SERIES_COUNT] = {"update",
                                                "ro20",
                                                "unsorted",
                                                "presorted",
                                                "transfers",
                                                "skiplist",
                                                "kmeans",
                                                "graph",
                                                "accounts",
                                                "skew",
                                                "vacation",
                                                "wide",
                                                "tpcc",
                                                "tpcc-payment",
                                                "ycsb",
                                                "ycsb-chunks",
                                                "hetero-bank",
                                                "hetero-kv",
                                                "hetero-workloads",
                                                "hetero-policy-vacation",
                                                "hetero-policy-kmeans",
                                                "hetero-conflict",
                                                "hetero-period-bank",
                                                "hetero-period-vacation",
                                                "multigpu-bank",
                                                "multigpu-kv"};

static const char usage_text[] =
    "usage: prstm-bench [options] [EXPERIMENT...]\n"
    "\n"
    "Runs the papers' experiments on one batch per data point, through the\n"
    "engine (postpone and retry mode), a ceiling kernel, the CPU backend and a\n"
    "serial CPU replay, checks every run, and writes one CSV per experiment.\n"
    "\n"
    "experiments (default: all):\n"
    "  bank-accounts       bank throughput against accounts per transaction (2 to 128)\n"
    "  bank-coverage       bank throughput against lock coverage (1 to 1024)\n"
    "  bank-threads        bank throughput against thread count (960 to a full GPU)\n"
    "                      (each of the three all-update and with 20% read-only)\n"
    "  bank-size           engine and ceiling against batch size (10M to 400M transfers;\n"
    "                      without a GPU, the CPU backend on 1M to 16M)\n"
    "  semantic-bank       bank throughput against semantic ratio, presorted and not\n"
    "  semantic-vacation   vacation throughput against semantic ratio, presorted and not\n"
    "  workloads-threads   skiplist, kmeans and graph against thread count\n"
    "  workloads-coverage  skiplist, kmeans and graph against lock coverage\n"
    "  targets             the engine's targets against the ceiling and the CPU (targets.csv,\n"
    "                      runs in targets-runs.csv; docs/BENCHMARKS.md)\n"
    "  contention          hot spots: transfers on 16 to 10^7 accounts and at Zipfian skews\n"
    "                      to 1.2, with the delta path off, auto and on; kmeans, skiplist,\n"
    "                      graph, vacation and 16- and 64-account transfers; every run\n"
    "                      verified\n"
    "  ingest              one batch of transfers generated, then loaded as JSON Lines (the\n"
    "                      whole loader, and its strict cJSON path alone) and as a binary\n"
    "                      batch, each checked row for row and timed against a plain read\n"
    "                      of its files; and every built-in generator on one thread and\n"
    "                      on every core, the two batches compared (ingest.csv)\n"
    "  oltp                TPC-C (NewOrder and Payment half and half, and Payment alone) on\n"
    "                      1 to 256 warehouses; YCSB 9 reads + 1 write at Zipfian skews to\n"
    "                      1.2, and in chunks of 10,000 and 100,000 rows; GPU, CPU backend\n"
    "                      and one CPU thread, every point verified (docs/OLTP.md)\n"
    "  hetero              co-execution (the CPU and the GPU on one batch) against each alone\n"
    "                      and one CPU thread: transfers over 10^4 to 10^7 accounts, kv's\n"
    "                      mixes A, B and C, vacation and kmeans (also in rounds under each\n"
    "                      conflict policy); every point verified\n"
    "                      (docs/HETERO.md)\n"
    "  multigpu            one batch on 1, 2, 4 and 8 GPUs as far as the host has them (1 and\n"
    "                      2 sets of CPU threads without one) against one GPU, the CPU\n"
    "                      backend and one CPU thread: partitioned transfers and kv's mix\n"
    "                      A; every point verified (docs/MULTIGPU.md)\n"
    "  bank                the four bank-* experiments\n"
    "  semantic            semantic-bank and semantic-vacation\n"
    "  workloads           workloads-threads and workloads-coverage\n"
    "  all                 everything above\n"
    "\n"
    "options:\n"
    "  --out DIR               folder for the CSVs and meta.txt (default: bench-out)\n"
    "  --quick                 small sizes: every experiment in a few seconds on 2 cores\n"
    "  --backend auto|gpu|cpu  gpu: the GPU runners must run; cpu: they are written as\n"
    "                          unavailable; auto (default): GPU runners where a GPU is usable\n"
    "  --repeat N              timed runs per runner and point; the median counts (default 1)\n"
    "  --timeout-per-point S   no new run of a point starts after S seconds on it, and the\n"
    "                          engine's watchdog stops a run without progress for S seconds\n"
    "                          (default 300, 60 with --quick)\n"
    "  --max-time S            start no new point after S seconds in all; the points left\n"
    "                          are written as skipped and the exit status is 3 (default: no limit)\n"
    "  --transactions N        base batch size of the bank, vacation, skiplist, oltp, hetero\n"
    "                          and multigpu bank points (default 8000000, oltp 1000000, hetero\n"
    "                          4000000, multigpu 40000000; 20000 with --quick)\n"
    "  --runners LIST          comma-separated runners to run (default: all of them):\n"
    "                          gpu_postpone,gpu_retry,gpu_ceiling,cpu_postpone,cpu_retry,\n"
    "                          cpu_serial,cpu_plain, and in contention gpu_stm,gpu_deltas,\n"
    "                          cpu_stm,cpu_deltas (the delta path off and on), in hetero\n"
    "                          hetero (co-execution, the scheduler free to give a batch to\n"
    "                          one unit) and hetero_rounds (the units sharing every batch),\n"
    "                          and in multigpu multi (several units)\n"
    "  --series LIST           comma-separated series to run (default: all): update, ro20,\n"
    "                          unsorted, presorted, transfers, skiplist, kmeans, graph,\n"
    "                          accounts, skew, vacation, wide, tpcc, tpcc-payment, ycsb,\n"
    "                          ycsb-chunks, hetero-bank, hetero-kv, hetero-workloads,\n"
    "                          hetero-policy-vacation, hetero-policy-kmeans,\n"
    "                          hetero-conflict, hetero-period-bank, hetero-period-vacation,\n"
    "                          multigpu-bank, multigpu-kv; the\n"
    "                          points of other series are neither run nor written (targets\n"
    "                          always runs whole)\n"
    "  --cpu-threads N         threads of the CPU backend runners (default 0: every host core)\n"
    "  --seed N                seed of every generated batch (default 42)\n"
    "  --ceiling-locks direct|prelock\n"
    "                          the ceiling's lock traffic per account: direct (default), one\n"
    "                          CAS straight to the final lock, as the engine's commit takes on\n"
    "                          a transfer's first attempt; prelock, a pre-lock CAS and a\n"
    "                          final-lock CAS (the STM-shaped traffic)\n"
    "  --help                  show this help and exit\n"
    "\n"
    "exit status: 0 every run that ran passed its checks; 1 a run failed, violated its\n"
    "invariant or was cut by the per-point timeout (the CSVs say which), or --backend gpu\n"
    "and no usable GPU; 2 bad usage;\n"
    "3 --max-time left points unrun.\n"
    "docs/BENCHMARKS.md describes every CSV column.\n";

/* ---- main ---- */

static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-') return PRSTM_EINVAL;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return PRSTM_EINVAL;
  *out = v;
  return 0;
}

static int parse_seconds(const char *s, double *out) {
  if (!s || !*s) return PRSTM_EINVAL;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno || *end || !(v > 0) || !isfinite(v)) return PRSTM_EINVAL;
  *out = v;
  return 0;
}

/* A comma-separated list of names from `names` (--runners, --series) as a
 * mask of their indices; `what` names one of them in the messages. */
static int parse_name_list(const char *option, const char *what, const char *s, const char *const *names,
                           unsigned count, unsigned *mask) {
  *mask = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned k = 0;
    while (k < count && strcmp(names[k], tok) != 0) k++;
    if (k == count) {
      fprintf(stderr, "prstm-bench: %s: unknown %s '%s' (see --help)\n", option, what, tok);
      return PRSTM_EINVAL;
    }
    *mask |= 1u << k;
  }
  if (!*mask) {
    fprintf(stderr, "prstm-bench: %s: name at least one %s\n", option, what);
    return PRSTM_EINVAL;
  }
  return 0;
}

/* Adds the experiments `name` selects to mask (bit i: bench_experiments[i]):
 * one by its name, or a group. */
static int select_experiment(const char *name, unsigned *mask) {
  static const struct {
    const char *name, *first;
    unsigned count;
  } groups[] = {{"bank", "bank-accounts", 4}, {"semantic", "semantic-bank", 2}, {"workloads", "workloads-threads", 2}};
  for (unsigned i = 0; i < bench_experiment_count; i++)
    if (strcmp(name, bench_experiments[i].name) == 0) return *mask |= 1u << i, 0;
  for (unsigned g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    if (strcmp(name, groups[g].name) != 0) continue;
    for (unsigned i = 0; i < bench_experiment_count; i++)
      if (strcmp(bench_experiments[i].name, groups[g].first) == 0)
        return *mask |= ((1u << groups[g].count) - 1) << i, 0;
  }
  if (strcmp(name, "all") == 0) return *mask |= (1u << bench_experiment_count) - 1, 0;
  fprintf(stderr, "prstm-bench: unknown experiment '%s' (see --help)\n", name);
  return PRSTM_EINVAL;
}

static void write_meta(const bench_ctx *c, int argc, char **argv, const char *when) {
  FILE *m = fopen(c->meta_path, "a");
  if (!m) return;
  if (strcmp(when, "start") == 0) {
    char date[64];
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    struct utsname u;
    uname(&u);
    fprintf(m, "date: %s\ncommand:", date);
    for (int i = 0; i < argc; i++) fprintf(m, " %s", argv[i]);
    fprintf(m, "\nprstm: %s\nhost: %s %s %s; %ld cores\n", PRSTM_VERSION_STRING, u.nodename, u.sysname, u.machine,
            c->host_cores);
    FILE *cpu = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (cpu && fgets(line, sizeof line, cpu))
      if (strncmp(line, "model name", 10) == 0) {
        fprintf(m, "cpu: %s", strchr(line, ':') ? strchr(line, ':') + 2 : line);
        break;
      }
    if (cpu) fclose(cpu);
    fprintf(m, "gpu: %s\n",
            c->gpu_ok && c->o.backend != PRSTM_BACKEND_CPU ? "usable"
            : c->o.backend == PRSTM_BACKEND_CPU            ? "not used (--backend cpu)"
                                                           : c->gpu_why);
    fprintf(m, "mode: %s; repeat %u; timeout per point %.0f s; ceiling locks %s\n", c->o.quick ? "quick" : "full",
            c->o.repeat, c->o.timeout_point_s, c->o.ceiling_direct ? "direct" : "prelock");
  } else {
    if (c->gpu_device[0]) fprintf(m, "gpu device: %s\n", c->gpu_device);
    fprintf(m, "finished after %.1f s: %u failed or timed-out rows; %u points skipped\n", bench_now() - c->start,
            c->failures, c->skipped);
  }
  fclose(m);
}

/* Creates the GPU context and loads the kernels, the STM's and the delta
 * path's, before anything is timed, so that the first point's times do not
 * carry them (the runtime loads a kernel at its first launch). The delta
 * path's sort takes other kernels for a few rows than for many, so the
 * warm-up batch has as many steps as a hot point. */
static void gpu_warm_up(const bench_ctx *c) {
  static const prstm_deltas_mode modes[2] = {PRSTM_DELTAS_OFF, PRSTM_DELTAS_ON};
  for (unsigned m = 0; m < 2; m++) {
    prstm_options opt;
    prstm_options_init(&opt);
    opt.backend = PRSTM_BACKEND_GPU;
    opt.deltas = modes[m];
    prstm_engine *e = NULL;
    prstm_batch *b = NULL;
    prstm_state_spec s;
    prstm_state_spec_init(&prstm_workload_bank, &s);
    s.accounts = 1000;
    s.initial_balance = 1000000;
    prstm_results r;
    int rc = prstm_engine_create(&e, &prstm_workload_bank, &opt);
    if (!rc) rc = prstm_engine_init_state(e, &s);
    if (!rc) rc = prstm_batch_create(&b, &prstm_workload_bank);
    const unsigned transfer = (unsigned)prstm_type_find(&prstm_workload_bank, "transfer");
    for (uint64_t i = 0; i < (m ? 200000u : 1u) && !rc; i++) {
      prstm_word args[3] = {i % 16, (i + 1) % 16, 1};
      rc = prstm_batch_append(b, transfer, args, 3);
    }
    if (!rc) rc = prstm_engine_run(e, b, &r);
    if (rc)
      fprintf(stderr, "prstm-bench: GPU warm-up run failed: %s\n", e ? prstm_engine_error(e) : prstm_strerror(rc));
    prstm_batch_destroy(b);
    prstm_engine_destroy(e);
  }
  (void)c;
}

int main(int argc, char **argv) {
  bench_ctx c;
  memset(&c, 0, sizeof c);
  c.o.out_dir = "bench-out";
  c.o.backend = PRSTM_BACKEND_AUTO;
  c.o.repeat = 1;
  c.o.runners = RUNNERS_ALL;
  c.o.seed = 42;
  /* The engine's commit takes a transfer's locks with one CAS each on the
   * first attempt, so the ceiling does too by default: the stricter ratio. */
  c.o.ceiling_direct = 1;
  static const struct option longopts[] = {{"out", required_argument, NULL, 'o'},
                                           {"quick", no_argument, NULL, 'q'},
                                           {"backend", required_argument, NULL, 'b'},
                                           {"repeat", required_argument, NULL, 'r'},
                                           {"timeout-per-point", required_argument, NULL, 't'},
                                           {"max-time", required_argument, NULL, 'm'},
                                           {"transactions", required_argument, NULL, 'n'},
                                           {"runners", required_argument, NULL, 'R'},
                                           {"series", required_argument, NULL, 'S'},
                                           {"cpu-threads", required_argument, NULL, 'c'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"ceiling-locks", required_argument, NULL, 'L'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  opterr = 0;
  int opt;
  uint64_t v;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    switch (opt) {
      case 'o':
        c.o.out_dir = optarg;
        break;
      case 'q':
        c.o.quick = 1;
        break;
      case 'b':
        if (strcmp(optarg, "auto") == 0)
          c.o.backend = PRSTM_BACKEND_AUTO;
        else if (strcmp(optarg, "gpu") == 0)
          c.o.backend = PRSTM_BACKEND_GPU;
        else if (strcmp(optarg, "cpu") == 0)
          c.o.backend = PRSTM_BACKEND_CPU;
        else {
          fprintf(stderr, "prstm-bench: --backend: expected auto, gpu or cpu, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'r':
        if (parse_u64(optarg, &v) || v == 0 || v > 1000) {
          fprintf(stderr, "prstm-bench: --repeat: expected a whole number from 1 to 1000, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        c.o.repeat = (unsigned)v;
        break;
      case 't':
        if (parse_seconds(optarg, &c.o.timeout_point_s)) {
          fprintf(stderr, "prstm-bench: --timeout-per-point: expected a positive number of seconds, got '%s'\n",
                  optarg);
          return EXIT_USAGE;
        }
        break;
      case 'm':
        if (parse_seconds(optarg, &c.o.max_time_s)) {
          fprintf(stderr, "prstm-bench: --max-time: expected a positive number of seconds, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'n':
        if (parse_u64(optarg, &c.o.transactions) || c.o.transactions < 1000) {
          fprintf(stderr, "prstm-bench: --transactions: expected a whole number of at least 1000, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'R':
        if (parse_name_list("--runners", "runner", optarg, runner_names, R_COUNT, &c.o.runners)) return EXIT_USAGE;
        break;
      case 'S':
        if (parse_name_list("--series", "series", optarg, series_names, SERIES_COUNT, &c.o.series)) return EXIT_USAGE;
        break;
      case 'c':
        if (parse_u64(optarg, &v) || v > PRSTM_MAX_THREADS) {
          fprintf(stderr, "prstm-bench: --cpu-threads: expected a whole number up to %u, got '%s'\n", PRSTM_MAX_THREADS,
                  optarg);
          return EXIT_USAGE;
        }
        c.o.cpu_threads = (uint32_t)v;
        break;
      case 's':
        if (parse_u64(optarg, &c.o.seed)) {
          fprintf(stderr, "prstm-bench: --seed: expected a non-negative whole number, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'L':
        if (strcmp(optarg, "prelock") == 0)
          c.o.ceiling_direct = 0;
        else if (strcmp(optarg, "direct") == 0)
          c.o.ceiling_direct = 1;
        else {
          fprintf(stderr, "prstm-bench: --ceiling-locks: expected prelock or direct, got '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'h':
        fputs(usage_text, stdout);
        return EXIT_OK;
      case ':':
        fprintf(stderr, "prstm-bench: option %s needs a value (see --help)\n", argv[optind - 1]);
        return EXIT_USAGE;
      default:
        fprintf(stderr, "prstm-bench: unknown option '%s' (see --help)\n", argv[optind - 1]);
        return EXIT_USAGE;
    }
  }
  unsigned experiments = 0;
  for (int i = optind; i < argc; i++)
    if (select_experiment(argv[i], &experiments)) return EXIT_USAGE;
  if (!experiments) experiments = (1u << bench_experiment_count) - 1;
  if (c.o.timeout_point_s <= 0) c.o.timeout_point_s = c.o.quick ? 60 : 300;

  c.host_cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (c.host_cores < 1) c.host_cores = 1;
  c.gpu_ok = prstm_gpu_available(&prstm_workload_bank, c.gpu_why, sizeof c.gpu_why);
  if (c.o.backend == PRSTM_BACKEND_GPU && !c.gpu_ok) {
    fprintf(stderr, "prstm-bench: --backend gpu, but no GPU is usable: %s\n", c.gpu_why);
    return EXIT_FAILED;
  }
  if (mkdir(c.o.out_dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "prstm-bench: cannot create %s: %s\n", c.o.out_dir, strerror(errno));
    return EXIT_FAILED;
  }
  snprintf(c.meta_path, sizeof c.meta_path, "%s/meta.txt", c.o.out_dir);
  remove(c.meta_path);
  c.start = bench_now();
  write_meta(&c, argc, argv, "start");
  if (c.gpu_ok && c.o.backend != PRSTM_BACKEND_CPU) gpu_warm_up(&c);

  int status = 0;
  for (unsigned x = 0; x < bench_experiment_count; x++) {
    if (!(experiments & (1u << x))) continue;
    fprintf(stderr, "prstm-bench: experiment %s (%.1f s so far)\n", bench_experiments[x].name, bench_now() - c.start);
    if (bench_experiments[x].run(&c)) status = EXIT_FAILED;
  }
  write_meta(&c, argc, argv, "end");
  fprintf(stderr, "prstm-bench: done in %.1f s: %u failed or timed-out rows, %u points skipped; CSVs in %s\n",
          bench_now() - c.start, c.failures, c.skipped, c.o.out_dir);
  if (status || c.failures) return EXIT_FAILED;
  return c.skipped ? EXIT_INCOMPLETE : EXIT_OK;
}
