/* main.c: prstm-run, the command line: load a JSON config, run its batch on the GPU or CPU backend, print a summary, write results. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* NVTX ranges around the CLI's own phases (load, verify), for Nsight
 * Systems; the engine marks transfer, execute and readback. Without NVTX in
 * the build they compile to nothing. */
#ifdef PRSTM_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define CLI_RANGE_PUSH(name) nvtxRangePushA(name)
#define CLI_RANGE_POP() nvtxRangePop()
#else
#define CLI_RANGE_PUSH(name) ((void)0)
#define CLI_RANGE_POP() ((void)0)
#endif

static const char usage_text[] =
    "usage: prstm-run CONFIG [options]\n"
    "\n"
    "Runs the batch of transactions a JSON config describes through PR-STM,\n"
    "prints a summary and writes the results file the config names.\n"
    "\n"
    "options:\n"
    "  --backend auto|gpu|cpu|hetero|multi\n"
    "                           where to run (default: the config's, else auto:\n"
    "                           the GPU when one is usable, else the CPU; the CPU\n"
    "                           also for a batch too hot for the GPU's STM that\n"
    "                           cannot take the delta path); hetero: the CPU and the\n"
    "                           GPU together, each on a replica of the state,\n"
    "                           reconciled after every round (docs/HETERO.md); multi:\n"
    "                           several GPUs, each owning a range of the words, rows\n"
    "                           routed to the GPU that owns them (docs/MULTIGPU.md)\n"
    "  --hetero-policy gpu-invalidation|favour-fastest|balanced\n"
    "                           backend hetero: whose part of a round is given up when\n"
    "                           the two units' parts conflict in both orders: the GPU's,\n"
    "                           the part that decided fewer rows, or each unit's in turn\n"
    "                           (default: engine.hetero_policy, else gpu-invalidation)\n"
    "  --hetero-period N        backend hetero: every round's rows, that is how often the\n"
    "                           units synchronise; 0 lets the period adapt to the\n"
    "                           conflicts (default: engine.hetero_period, else 0)\n"
    "  --units N                backend multi: the GPUs to run on (default: engine.units,\n"
    "                           else every GPU; sets of CPU threads, two by default,\n"
    "                           without a GPU or with fewer GPUs than N)\n"
    "  --partition-state        backend multi: each unit holds only its range of the\n"
    "                           words (a state as large as the GPUs' memory together),\n"
    "                           the host runs the rows that span ranges (default:\n"
    "                           engine.partition_state, else every unit a replica)\n"
    "  --threads N              executing threads (0: every core, or 256 per SM of a GPU,\n"
    "                           512 for bank batches without transfer_multi)\n"
    "  --lock-coverage N        consecutive words per lock (>= 1)\n"
    "  --results FILE           write the results JSON here (overrides output.results)\n"
    "  --final-state FILE       write the final shared words here (overrides output.final_state)\n"
    "                           (output paths are relative to the working directory;\n"
    "                           batch.file is relative to the config's folder)\n"
    "  --verify                 record the commit order, replay it serially on the CPU\n"
    "                           and check final state and every outcome (exit 3 if not)\n"
    "  --watchdog SECONDS       stop a run in which nothing commits or fails for this\n"
    "                           long (default 60; 0 turns the watchdog off)\n"
    "  --chunk-rows N           run the batch in chunks of at most N rows, carrying\n"
    "                           postponed transactions from chunk to chunk (default:\n"
    "                           engine.chunk_rows, else PRSTM_CHUNK_ROWS, else chunks\n"
    "                           only when the batch does not fit the GPU's memory;\n"
    "                           a chunked run is verified like any other)\n"
    "  --deltas auto|on|off     batches whose every type declares its steps (the bank's\n"
    "                           deposit, withdraw, transfer, transfer_multi, balance; ycsb's\n"
    "                           update of reads and read-modify-writes, read) run as sums where the\n"
    "                           batch order commits every row: auto when the batch has\n"
    "                           hot words, on whenever that holds, off never (default:\n"
    "                           engine.deltas, else auto)\n"
    "  --batch PATH             run this batch instead of the config's: a JSON Lines file, or a\n"
    "                           binary batch folder (relative to the working directory)\n"
    "  --save-batch DIR         write the config's batch (loaded or generated) into DIR as a\n"
    "                           binary batch (NumPy .npy columns and batch.json) and exit\n"
    "                           without running it\n"
    "  --outcomes PATH          write every transaction's outcome (index, status, reason,\n"
    "                           result): JSON Lines where PATH ends in .jsonl, else a\n"
    "                           folder of .npy columns (docs/BATCHES.md)\n"
    "  --quiet                  print nothing but errors (and no progress bar)\n"
    "  -h, --help               show this help and exit\n"
    "  -V, --version            show the version, and whether the GPU backend is built, and exit\n"
    "\n"
    "exit status: 0 the run completed (abandoned transactions are results),\n"
    "             1 runtime failure (no usable GPU for --backend gpu, CUDA error,\n"
    "               a state too large for the GPU's memory,\n"
    "               a run stopped by the watchdog,\n"
    "               violated invariant, unwritable output),\n"
    "             2 bad usage or input (the message names the file and the problem),\n"
    "             3 --verify found the run not equal to its serial replay.\n"
    "\n"
    "progress: when stderr is a terminal and the run has lasted more than a\n"
    "second, one line on stderr shows the share of transactions final, the\n"
    "committed and pending counts read live from the running threads or kernel,\n"
    "and the commit rate; it is erased before the summary. Nothing is drawn\n"
    "when stderr is not a terminal, or with --quiet.\n";

int cli_exit_status(int rc, cli_phase phase) {
  if (rc == PRSTM_ENOMEM) return EXIT_RUNTIME;
  if (phase == CLI_LOADING) return EXIT_INPUT;
  return prstm_is_input_error(rc) ? EXIT_INPUT : EXIT_RUNTIME;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *cli_backend_name(prstm_backend b) {
  return b == PRSTM_BACKEND_GPU      ? "gpu"
         : b == PRSTM_BACKEND_CPU    ? "cpu"
         : b == PRSTM_BACKEND_HETERO ? "hetero"
         : b == PRSTM_BACKEND_MULTI  ? "multi"
                                     : "auto";
}

const char *cli_deltas_name(prstm_deltas_mode m) {
  return m == PRSTM_DELTAS_ON ? "on" : m == PRSTM_DELTAS_OFF ? "off" : "auto";
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') return -1;
  *out = (uint64_t)v;
  return 0;
}

static int parse_uint(const char *s, uint32_t *out) {
  uint64_t v = 0;
  if (parse_u64(s, &v) || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

typedef struct cli_args {
  const char *config;
  const char *backend;
  const char *threads;
  const char *lock_coverage;
  const char *watchdog;
  const char *chunk_rows;
  const char *units;
  const char *deltas;
  const char *hetero_policy;
  const char *hetero_period;
  const char *results;
  const char *final_state;
  const char *batch;      /* --batch: a JSON Lines file or binary batch folder instead of the config's batch */
  const char *save_batch; /* --save-batch: write the batch as a binary batch folder and exit */
  const char *outcomes;   /* --outcomes: every transaction's outcome, JSON Lines or .npy columns */
  int quiet;
  int verify;
  int partition_state;
} cli_args;

/* Command-line options override the config's engine and output sections. */
static int apply_overrides(const cli_args *a, prstm_config *cfg) {
  if (a->backend) {
    if (strcmp(a->backend, "auto") == 0)
      cfg->options.backend = PRSTM_BACKEND_AUTO;
    else if (strcmp(a->backend, "gpu") == 0)
      cfg->options.backend = PRSTM_BACKEND_GPU;
    else if (strcmp(a->backend, "cpu") == 0)
      cfg->options.backend = PRSTM_BACKEND_CPU;
    else if (strcmp(a->backend, "hetero") == 0)
      cfg->options.backend = PRSTM_BACKEND_HETERO;
    else if (strcmp(a->backend, "multi") == 0)
      cfg->options.backend = PRSTM_BACKEND_MULTI;
    else {
      fprintf(stderr, "prstm-run: --backend: expected auto, gpu, cpu, hetero or multi, got '%s'\n", a->backend);
      return -1;
    }
  }
  if (a->threads) {
    /* Any whole number above the limit gets the limit, however large (one
     * that does not fit 64 bits included). */
    uint64_t t = 0;
    const int whole = a->threads[0] && strspn(a->threads, "0123456789") == strlen(a->threads);
    if (!whole) {
      fprintf(stderr, "prstm-run: --threads: expected a non-negative integer, got '%s'\n", a->threads);
      return -1;
    }
    if (parse_u64(a->threads, &t) || t > PRSTM_MAX_THREADS) {
      fprintf(stderr, "prstm-run: --threads: at most %u, got '%s'\n", PRSTM_MAX_THREADS, a->threads);
      return -1;
    }
    cfg->options.threads = (uint32_t)t;
  }
  if (a->lock_coverage &&
      (parse_uint(a->lock_coverage, &cfg->options.lock_coverage) || cfg->options.lock_coverage == 0)) {
    fprintf(stderr, "prstm-run: --lock-coverage: expected a positive integer, got '%s'\n", a->lock_coverage);
    return -1;
  }
  if (a->watchdog && parse_uint(a->watchdog, &cfg->options.watchdog_s)) {
    fprintf(stderr, "prstm-run: --watchdog: expected a whole number of seconds, got '%s'\n", a->watchdog);
    return -1;
  }
  if (a->chunk_rows && (parse_u64(a->chunk_rows, &cfg->options.chunk_rows) || cfg->options.chunk_rows == 0)) {
    fprintf(stderr, "prstm-run: --chunk-rows: expected a positive number of rows, got '%s'\n", a->chunk_rows);
    return -1;
  }
  if (a->units && (parse_uint(a->units, &cfg->options.units) || cfg->options.units == 0 || cfg->options.units > 64)) {
    fprintf(stderr, "prstm-run: --units: expected 1 to 64 units, got '%s'\n", a->units);
    return -1;
  }
  if (a->partition_state) cfg->options.partition_state = 1;
  if (a->deltas) {
    if (strcmp(a->deltas, "auto") == 0)
      cfg->options.deltas = PRSTM_DELTAS_AUTO;
    else if (strcmp(a->deltas, "on") == 0)
      cfg->options.deltas = PRSTM_DELTAS_ON;
    else if (strcmp(a->deltas, "off") == 0)
      cfg->options.deltas = PRSTM_DELTAS_OFF;
    else {
      fprintf(stderr, "prstm-run: --deltas: expected auto, on or off, got '%s'\n", a->deltas);
      return -1;
    }
  }
  if (a->hetero_policy) {
    if (strcmp(a->hetero_policy, "gpu-invalidation") == 0)
      cfg->options.hetero_policy = PRSTM_HETERO_GPU_INVALIDATION;
    else if (strcmp(a->hetero_policy, "favour-fastest") == 0)
      cfg->options.hetero_policy = PRSTM_HETERO_FAVOUR_FASTEST;
    else if (strcmp(a->hetero_policy, "balanced") == 0)
      cfg->options.hetero_policy = PRSTM_HETERO_BALANCED;
    else {
      fprintf(stderr, "prstm-run: --hetero-policy: expected gpu-invalidation, favour-fastest or balanced, got '%s'\n",
              a->hetero_policy);
      return -1;
    }
  }
  if (a->hetero_period && parse_u64(a->hetero_period, &cfg->options.hetero_period)) {
    fprintf(stderr, "prstm-run: --hetero-period: expected a number of rows (0: adaptive), got '%s'\n",
            a->hetero_period);
    return -1;
  }
  if (a->verify) cfg->options.verify = 1;
  if ((a->results && strlen(a->results) >= sizeof cfg->results_path) ||
      (a->final_state && strlen(a->final_state) >= sizeof cfg->final_state_path)) {
    fprintf(stderr, "prstm-run: %s: path too long (at most %zu bytes)\n", a->results ? "--results" : "--final-state",
            sizeof cfg->results_path - 1);
    return -1;
  }
  if (a->results) snprintf(cfg->results_path, sizeof cfg->results_path, "%s", a->results);
  if (a->batch) {
    if (strlen(a->batch) >= sizeof cfg->batch_file || !a->batch[0]) {
      fprintf(stderr, "prstm-run: --batch: expected a path of 1 to %zu bytes\n", sizeof cfg->batch_file - 1);
      return -1;
    }
    /* Relative to the working directory, like every path on the command line. */
    cfg->batch_kind = PRSTM_BATCH_FILE;
    snprintf(cfg->batch_file, sizeof cfg->batch_file, "%s", a->batch);
  }
  if (a->final_state) snprintf(cfg->final_state_path, sizeof cfg->final_state_path, "%s", a->final_state);
  return 0;
}

/* The folder of an output path must exist and take files: found before
 * the run, not after it. */
static int check_output_folder(const char *key, const char *path) {
  if (!path[0]) return 0;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = 0;
  else
    *slash = 0;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "prstm-run: %s: the folder '%s' of '%s' does not exist; nothing was run\n", key, dir, path);
    return -1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "prstm-run: %s: cannot write into the folder '%s'; nothing was run\n", key, dir);
    return -1;
  }
  return 0;
}

/* Checks that need no work and save a long one: output folders, the
 * memory a state and a generated batch need at the least, and the CPU
 * backend's thread count. Returns -1 (after its message) when the run
 * cannot succeed. */
static int check_before_work(const prstm_config *cfg, const char *save_batch, const char *outcomes) {
  if (check_output_folder("output.results (--results)", cfg->results_path) ||
      check_output_folder("output.final_state (--final-state)", cfg->final_state_path))
    return -1;
  if (save_batch && check_output_folder("--save-batch", save_batch)) return -1;
  if (outcomes && check_output_folder("--outcomes", outcomes)) return -1;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (memory > 0 && (cfg->workload->config_keys & PRSTM_KEYS_BANK) && (double)cfg->state.accounts * 8.0 > memory) {
    fprintf(stderr, "prstm-run: %s: state.accounts: %llu accounts need %.1f GiB; this machine has %.1f GiB\n",
            cfg->path, (unsigned long long)cfg->state.accounts, (double)cfg->state.accounts * 8.0 / gib, memory / gib);
    return -1;
  }
  if (memory > 0 && cfg->batch_kind == PRSTM_BATCH_GENERATE) {
    /* A row's type and status bytes and the argument words of the type
     * with the fewest: a floor, not the whole cost. (A variant's
     * max_columns is the widest row it takes, up to PRSTM_MAX_COLUMNS,
     * not what a row costs.) */
    unsigned fewest = PRSTM_MAX_COLUMNS;
    for (unsigned t = 0; t < cfg->workload->ntypes; t++)
      if (cfg->workload->types[t].nargs < fewest) fewest = cfg->workload->types[t].nargs;
    const double row = 2.0 + 8.0 * fewest;
    if ((double)cfg->generate.transactions * row > memory) {
      fprintf(stderr,
              "prstm-run: %s: batch.generate.transactions: %llu rows need at least %.1f GiB; this machine has "
              "%.1f GiB\n",
              cfg->path, (unsigned long long)cfg->generate.transactions, (double)cfg->generate.transactions * row / gib,
              memory / gib);
      return -1;
    }
  }
  char why[256];
  const int on_cpu =
      cfg->options.backend == PRSTM_BACKEND_CPU ||
      (cfg->options.backend == PRSTM_BACKEND_AUTO && !prstm_gpu_available(cfg->workload, why, sizeof why));
  const uint32_t most = prstm_cpu_threads_max();
  if (on_cpu && cfg->options.threads > most) {
    fprintf(stderr, "prstm-run: %s: engine.threads (--threads): %u CPU threads; at most %u on this machine\n",
            cfg->path, cfg->options.threads, most);
    return -1;
  }
  return 0;
}

/* Mix weights are relative: a mix that does not sum to 1 runs with each
 * type's weight over the sum, which a notice says instead of a surprise. */
static void note_mix_weights(const prstm_config *cfg) {
  if (cfg->batch_kind != PRSTM_BATCH_GENERATE || cfg->generate.nmix == 0) return;
  double sum = 0;
  for (unsigned i = 0; i < cfg->generate.nmix; i++) sum += cfg->generate.mix_weights[i];
  if (fabs(sum - 1.0) <= 1e-9) return;
  fprintf(stderr,
          "prstm-run: batch.generate.mix: the weights sum to %g, not 1: each type's share is its weight over %g\n", sum,
          sum);
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(int argc, char **argv, cli_args *a) {
  static const struct option longopts[] = {{"backend", required_argument, NULL, 'b'},
                                           {"threads", required_argument, NULL, 't'},
                                           {"lock-coverage", required_argument, NULL, 'l'},
                                           {"results", required_argument, NULL, 'r'},
                                           {"final-state", required_argument, NULL, 'f'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"verify", no_argument, NULL, 'v'},
                                           {"watchdog", required_argument, NULL, 'w'},
                                           {"chunk-rows", required_argument, NULL, 'c'},
                                           {"units", required_argument, NULL, 'u'},
                                           {"partition-state", no_argument, NULL, 'P'},
                                           {"deltas", required_argument, NULL, 'd'},
                                           {"hetero-policy", required_argument, NULL, 'H'},
                                           {"hetero-period", required_argument, NULL, 'R'},
                                           {"batch", required_argument, NULL, 'B'},
                                           {"save-batch", required_argument, NULL, 'S'},
                                           {"outcomes", required_argument, NULL, 'O'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
    switch (c) {
      case 'b':
        a->backend = optarg;
        break;
      case 't':
        a->threads = optarg;
        break;
      case 'l':
        a->lock_coverage = optarg;
        break;
      case 'r':
        a->results = optarg;
        break;
      case 'f':
        a->final_state = optarg;
        break;
      case 'd':
        a->deltas = optarg;
        break;
      case 'H':
        a->hetero_policy = optarg;
        break;
      case 'R':
        a->hetero_period = optarg;
        break;
      case 'B':
        a->batch = optarg;
        break;
      case 'S':
        a->save_batch = optarg;
        break;
      case 'O':
        a->outcomes = optarg;
        break;
      case 'q':
        a->quiet = 1;
        break;
      case 'v':
        a->verify = 1;
        break;
      case 'w':
        a->watchdog = optarg;
        break;
      case 'c':
        a->chunk_rows = optarg;
        break;
      case 'u':
        a->units = optarg;
        break;
      case 'P':
        a->partition_state = 1;
        break;
      case 'h':
        fputs(usage_text, stdout);
        return EXIT_OK;
      case 'V':
#ifdef PRSTM_RUN_COMMIT
#define CLI_COMMIT "commit " PRSTM_RUN_COMMIT "; "
#else
#define CLI_COMMIT ""
#endif
#ifdef PRSTM_RUN_GPU_ARCHITECTURES
        printf("prstm-run %s (%sGPU backend built for CUDA architectures %s)\n", PRSTM_VERSION_STRING, CLI_COMMIT,
               PRSTM_RUN_GPU_ARCHITECTURES);
#else
        printf("prstm-run %s (%sno GPU backend in this build: CPU only)\n", PRSTM_VERSION_STRING, CLI_COMMIT);
#endif
        return EXIT_OK;
      case ':':
        fprintf(stderr, "prstm-run: option %s needs a value (see --help)\n", argv[optind - 1]);
        return EXIT_INPUT;
      default:
        /* A short option names itself through optopt; a long one is the
         * argument just consumed. */
        if (optopt && strncmp(argv[optind - 1], "--", 2) != 0)
          fprintf(stderr, "prstm-run: unknown option '-%c' (see --help)\n", optopt);
        else
          fprintf(stderr, "prstm-run: unknown option '%s' (see --help)\n", argv[optind - 1]);
        return EXIT_INPUT;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "prstm-run: missing CONFIG (see --help)\n");
    return EXIT_INPUT;
  }
  if (optind + 1 < argc) {
    fprintf(stderr, "prstm-run: one CONFIG expected, got '%s' too (see --help)\n", argv[optind + 1]);
    return EXIT_INPUT;
  }
  a->config = argv[optind];
  /* Option values are checked before the config is read, so a bad option is
   * reported as such whatever the config holds. */
  prstm_config probe;
  memset(&probe, 0, sizeof probe);
  if (apply_overrides(a, &probe)) return EXIT_INPUT;
  return -1;
}

/* After each round of prstm_engine_run_rounds: the bar is erased, the
 * fallback noticed once, and with verify the round is replayed before the
 * next one replaces the engine's initial state; the first failing round
 * ends the run. */
typedef struct round_ctx {
  prstm_engine *e;
  const prstm_config *cfg;
  run_report *rep;
  progress_bar *bar;
  int quiet;
  int exit_status; /* set when the callback stops the rounds */
} round_ctx;

static int after_round(unsigned round, prstm_batch *b, const prstm_results *r, void *user) {
  round_ctx *c = user;
  progress_clear(c->bar);
  c->bar->round = round + 1;
  if (round == 0 && r->fallback[0] && !c->quiet) {
    if (r->backend == PRSTM_BACKEND_HETERO)
      fprintf(stderr, "prstm-run: hetero: %s\n", r->fallback);
    else if (r->backend == PRSTM_BACKEND_MULTI)
      fprintf(stderr, "prstm-run: multi: %s\n", r->fallback);
    else
      fprintf(stderr, "prstm-run: auto chose the CPU backend: %s\n", r->fallback);
  }
  if (!c->cfg->options.verify) return 0;
  run_report *rep = c->rep;
  prstm_verify_report v;
  CLI_RANGE_PUSH("verify");
  int rc = prstm_engine_verify(c->e, b, &v);
  CLI_RANGE_POP();
  if (rc) {
    fprintf(stderr, "prstm-run: verification could not run: %s\n", prstm_engine_error(c->e));
    c->exit_status = EXIT_RUNTIME;
    return 1;
  }
  uint64_t replayed = rep->verify.replayed + v.replayed;
  uint64_t checked = rep->verify.checked_blocked + v.checked_blocked;
  double replay_s = rep->verify.replay_s + v.replay_s;
  rep->verify = v;
  rep->verify.replayed = replayed;
  rep->verify.checked_blocked = checked;
  rep->verify.replay_s = replay_s;
  rep->verified = 1;
  if (v.ok && round > 0)
    snprintf(rep->verify.message, sizeof rep->verify.message,
             "%u rounds, each replayed serially in commit order: %llu transactions, final states and every "
             "outcome match; %llu abandoned still blocked",
             round + 1, (unsigned long long)replayed, (unsigned long long)checked);
  if (!v.ok) {
    if (round > 0) snprintf(rep->verify.message, sizeof rep->verify.message, "round %u: %.480s", round, v.message);
    c->exit_status = EXIT_OK; /* the verdict is reported as the run's */
    return 1;
  }
  return 0;
}

/* The GPU's start-up, on a thread of its own while this one loads the batch
 * (prstm_engine_warm_up). A failure is left to the run, which reports it. */
static void *warm_up_engine(void *engine) {
  CLI_RANGE_PUSH("warm-up");
  (void)prstm_engine_warm_up(engine);
  CLI_RANGE_POP();
  return NULL;
}

static int run(cli_args a, const cli_ranks *ranks) {
  int status;
  double t0 = cli_now();
  char err[1024] = "";
  prstm_config cfg;
  /* The load range spans the config, the initial state and the batch; it is
   * closed where loading ends, or at done: when loading failed. */
  CLI_RANGE_PUSH("load");
  int load_range_open = 1;
  int rc = prstm_config_load(a.config, &cfg, err, sizeof err);
  if (rc) {
    CLI_RANGE_POP();
    fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
    return cli_exit_status(rc, CLI_LOADING);
  }
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  status = EXIT_INPUT;
  if (apply_overrides(&a, &cfg) || check_before_work(&cfg, a.save_batch, a.outcomes)) goto done;
  if (ranks->size > 1) {
    /* Every rank runs the same config; rank 0 alone speaks and writes. */
    if (cfg.options.backend != PRSTM_BACKEND_MULTI || a.save_batch) {
      fprintf(stderr, "prstm-run: mpirun started %d ranks, which run backend multi alone (--backend multi)\n",
              ranks->size);
      goto done;
    }
    if (ranks->rank > 0) {
      a.quiet = 1;
      a.outcomes = NULL;
      cfg.results_path[0] = 0;
      cfg.final_state_path[0] = 0;
    }
  }
  if (!a.quiet) note_mix_weights(&cfg);

  CLI_RANGE_PUSH("state");
  rc = prstm_engine_create(&e, cfg.workload, &cfg.options);
  if (!rc) rc = prstm_engine_init_state(e, &cfg.state);
  CLI_RANGE_POP();
  if (rc) {
    fprintf(stderr, "prstm-run: %s: %s\n", cfg.path, e ? prstm_engine_error(e) : prstm_strerror(rc));
    status = cli_exit_status(rc, CLI_LOADING);
    goto done;
  }
  uint64_t nwords = 0;
  prstm_engine_state(e, &nwords);
  /* Ranks under mpirun run CPU units, and a conversion runs nothing. */
  pthread_t warm_thread;
  const int warming = cfg.options.backend != PRSTM_BACKEND_CPU && ranks->size <= 1 && !a.save_batch &&
                      pthread_create(&warm_thread, NULL, warm_up_engine, e) == 0;
  CLI_RANGE_PUSH("batch");
  rc = prstm_batch_create(&b, cfg.workload);
  if (!rc) rc = prstm_config_load_batch(&cfg, nwords, b, err, sizeof err);
  CLI_RANGE_POP();
  if (warming) pthread_join(warm_thread, NULL);
  if (rc) {
    fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
    status = cli_exit_status(rc, CLI_LOADING);
    goto done;
  }
  if (a.save_batch) {
    /* Conversion only: the batch as loaded, written as a binary batch. */
    CLI_RANGE_POP();
    load_range_open = 0;
    const double t_save = cli_now();
    rc = prstm_save_batch_dir(a.save_batch, b, err, sizeof err);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      status = EXIT_RUNTIME;
      goto done;
    }
    if (!a.quiet)
      printf(
          "prstm-run: saved %llu transactions of %s as a binary batch in %s (load %.3f s, save %.3f s); run it "
          "with --batch %s\n",
          (unsigned long long)prstm_batch_size(b), cfg.workload->name, a.save_batch, t_save - t0, cli_now() - t_save,
          a.save_batch);
    status = EXIT_OK;
    goto done;
  }
  run_report rep;
  memset(&rep, 0, sizeof rep);
  rep.load_s = cli_now() - t0;
  CLI_RANGE_POP();
  load_range_open = 0;

  /* The bar belongs to a person watching a terminal: a pipe or a file gets
   * none, and --quiet means quiet. */
  progress_bar bar;
  memset(&bar, 0, sizeof bar);
  bar.enabled = !a.quiet && isatty(STDERR_FILENO);
  if (bar.enabled) prstm_engine_set_progress(e, progress_draw, &bar);

  prstm_results r;
  round_ctx rounds = {e, &cfg, &rep, &bar, a.quiet, EXIT_OK};
  prstm_batch *last = b;
  bar.start = cli_now();
  CLI_RANGE_PUSH("run");
  rc = prstm_engine_run_rounds(e, &last, after_round, &rounds, &r, &rep.rounds);
  CLI_RANGE_POP();
  progress_clear(&bar);
  if (last != b) {
    /* The rounds' own batch replaces the configured one, which is done. */
    prstm_batch_destroy(b);
    b = last;
  }
  if (rc > 0 && rounds.exit_status != EXIT_OK) {
    status = rounds.exit_status;
    goto done;
  }
  if (rc < 0) {
    fprintf(stderr, "prstm-run: %s\n", prstm_engine_error(e));
    status = cli_exit_status(rc, CLI_RUNNING);
    goto done;
  }
  CLI_RANGE_PUSH("invariant");
  rc = cfg.workload->check_invariant(e, b, &rep.invariant_ok, rep.invariant, sizeof rep.invariant);
  CLI_RANGE_POP();
  if (rc) {
    fprintf(stderr, "prstm-run: invariant check failed to run: %s\n", prstm_strerror(rc));
    status = EXIT_RUNTIME;
    goto done;
  }
  rep.total_s = cli_now() - t0;
  if (!a.quiet) cli_print_summary(&cfg, &r, &rep);

  status = rep.invariant_ok ? EXIT_OK : EXIT_RUNTIME;
  if (!rep.invariant_ok) fprintf(stderr, "prstm-run: invariant violated: %s\n", rep.invariant);
  if (rep.verified && !rep.verify.ok) {
    fprintf(stderr, "prstm-run: verification failed: %s\n", rep.verify.message);
    status = EXIT_VERIFY;
  }
  CLI_RANGE_PUSH("write");
  if (cfg.results_path[0]) {
    char *text = cli_results_json(&cfg, e, b, &r, &rep);
    rc = text ? prstm_write_file_atomic(cfg.results_path, text, strlen(text), err, sizeof err) : PRSTM_ENOMEM;
    free(text);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      if (status == EXIT_OK) status = EXIT_RUNTIME;
    } else if (!a.quiet) {
      cli_print_written("results", cfg.results_path);
    }
  }
  if (a.outcomes) {
    const double t_out = cli_now();
    rc = prstm_save_outcomes(a.outcomes, b, err, sizeof err);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      if (status == EXIT_OK) status = EXIT_RUNTIME;
    } else if (!a.quiet) {
      char what[64];
      snprintf(what, sizeof what, "outcomes (%.3f s)", cli_now() - t_out);
      cli_print_written(what, a.outcomes);
    }
  }
  if (cfg.final_state_path[0]) {
    size_t len = 0;
    char *text = cli_final_state_json(&cfg, e, &len);
    rc = text ? prstm_write_file_atomic(cfg.final_state_path, text, len, err, sizeof err) : PRSTM_ENOMEM;
    free(text);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      if (status == EXIT_OK) status = EXIT_RUNTIME;
    } else if (!a.quiet) {
      cli_print_written("final state", cfg.final_state_path);
    }
  }
  CLI_RANGE_POP();
done:
  if (load_range_open) CLI_RANGE_POP();
  CLI_RANGE_PUSH("teardown");
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
  prstm_config_free(&cfg);
  CLI_RANGE_POP();
  return status;
}

int main(int argc, char **argv) {
  cli_args a;
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  cli_ranks ranks;
  if (cli_ranks_start(&ranks)) return EXIT_RUNTIME;
  status = run(a, &ranks);
  cli_ranks_end(&ranks, status);
  return status;
}
