/* prstm-run.c: the command line: load a JSON config, run its batch on the GPU or CPU backend, print a summary, write results. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "prstm.h"

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

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_INPUT = 2, EXIT_VERIFY = 3 };

static const char usage_text[] =
    "usage: prstm-run CONFIG [options]\n"
    "\n"
    "Runs the batch of transactions a JSON config describes through PR-STM,\n"
    "prints a summary and writes the results file the config names.\n"
    "\n"
    "options:\n"
    "  --backend auto|gpu|cpu   where to run (default: the config's, else auto:\n"
    "                           the GPU when one is usable, else the CPU)\n"
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
    "  --quiet                  print nothing but errors (and no progress bar)\n"
    "  --help                   show this help and exit\n"
    "  --version                show the version and exit\n"
    "\n"
    "exit status: 0 the run completed (abandoned transactions are results),\n"
    "             1 runtime failure (no usable GPU for --backend gpu, CUDA error,\n"
    "               a verified batch or a state too large for the GPU's memory,\n"
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

static const char *backend_name(prstm_backend b) {
  return b == PRSTM_BACKEND_GPU ? "gpu" : b == PRSTM_BACKEND_CPU ? "cpu" : "auto";
}

typedef struct cli_args {
  const char *config;
  const char *backend;
  const char *threads;
  const char *lock_coverage;
  const char *watchdog;
  const char *chunk_rows;
  const char *results;
  const char *final_state;
  int quiet;
  int verify;
} cli_args;

/* Command-line options override the config's engine and output sections. */
static int apply_overrides(const cli_args *a, prstm_config *cfg) {
  if (a->backend) {
    if (strcmp(a->backend, "auto") == 0) cfg->options.backend = PRSTM_BACKEND_AUTO;
    else if (strcmp(a->backend, "gpu") == 0) cfg->options.backend = PRSTM_BACKEND_GPU;
    else if (strcmp(a->backend, "cpu") == 0) cfg->options.backend = PRSTM_BACKEND_CPU;
    else {
      fprintf(stderr, "prstm-run: --backend: expected auto, gpu or cpu, got '%s'\n", a->backend);
      return -1;
    }
  }
  if (a->threads && parse_uint(a->threads, &cfg->options.threads)) {
    fprintf(stderr, "prstm-run: --threads: expected a non-negative integer, got '%s'\n", a->threads);
    return -1;
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
  if (a->verify) cfg->options.verify = 1;
  if (a->threads && cfg->options.threads > PRSTM_MAX_THREADS) {
    fprintf(stderr, "prstm-run: --threads: at most %u, got '%s'\n", PRSTM_MAX_THREADS, a->threads);
    return -1;
  }
  if ((a->results && strlen(a->results) >= sizeof cfg->results_path) ||
      (a->final_state && strlen(a->final_state) >= sizeof cfg->final_state_path)) {
    fprintf(stderr, "prstm-run: %s: path too long (at most %zu bytes)\n", a->results ? "--results" : "--final-state",
            sizeof cfg->results_path - 1);
    return -1;
  }
  if (a->results) snprintf(cfg->results_path, sizeof cfg->results_path, "%s", a->results);
  if (a->final_state) snprintf(cfg->final_state_path, sizeof cfg->final_state_path, "%s", a->final_state);
  return 0;
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(int argc, char **argv, cli_args *a) {
  static const struct option longopts[] = {
      {"backend", required_argument, NULL, 'b'}, {"threads", required_argument, NULL, 't'},
      {"lock-coverage", required_argument, NULL, 'l'}, {"results", required_argument, NULL, 'r'},
      {"final-state", required_argument, NULL, 'f'}, {"quiet", no_argument, NULL, 'q'},
      {"verify", no_argument, NULL, 'v'}, {"watchdog", required_argument, NULL, 'w'},
      {"chunk-rows", required_argument, NULL, 'c'},
      {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    switch (c) {
      case 'b': a->backend = optarg; break;
      case 't': a->threads = optarg; break;
      case 'l': a->lock_coverage = optarg; break;
      case 'r': a->results = optarg; break;
      case 'f': a->final_state = optarg; break;
      case 'q': a->quiet = 1; break;
      case 'v': a->verify = 1; break;
      case 'w': a->watchdog = optarg; break;
      case 'c': a->chunk_rows = optarg; break;
      case 'h': fputs(usage_text, stdout); return EXIT_OK;
      case 'V': printf("prstm-run %s\n", PRSTM_VERSION_STRING); return EXIT_OK;
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

typedef struct run_report {
  double load_s, total_s;
  unsigned rounds;
  int invariant_ok;
  char invariant[512];
  int verified;
  prstm_verify_report verify;
} run_report;

#define SAMPLE_LIMIT 100

/* Lists up to SAMPLE_LIMIT transactions of one status with their reasons. */
static cJSON *outcome_samples(const prstm_engine *e, const prstm_batch *b, prstm_status want) {
  cJSON *arr = cJSON_CreateArray();
  const prstm_workload *wl = prstm_engine_workload(e);
  uint64_t n = prstm_batch_size(b), listed = 0;
  for (uint64_t i = 0; i < n && listed < SAMPLE_LIMIT; i++) {
    prstm_status st;
    unsigned reason;
    prstm_batch_outcome(b, i, &st, &reason, NULL);
    if (st != want) continue;
    unsigned t = prstm_batch_type(b, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", (double)i);
    cJSON_AddStringToObject(o, "type", wl->types[t].name);
    cJSON_AddStringToObject(o, "reason", prstm_reason_string(wl, t, reason));
    cJSON_AddItemToArray(arr, o);
    listed++;
  }
  return arr;
}

static char *results_json(const prstm_config *cfg, const prstm_engine *e, const prstm_batch *b,
                          const prstm_results *r, const run_report *rep) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "prstm_version", PRSTM_VERSION_STRING);
  cJSON_AddStringToObject(root, "config", cfg->path);
  cJSON_AddStringToObject(root, "workload", cfg->workload->name);
  cJSON_AddNumberToObject(root, "transactions", (double)r->transactions);
  cJSON_AddNumberToObject(root, "rounds", rep->rounds);
  cJSON_AddNumberToObject(root, "committed", (double)r->committed);
  cJSON_AddNumberToObject(root, "abandoned", (double)r->abandoned);
  cJSON_AddNumberToObject(root, "failed", (double)r->failed);
  cJSON_AddNumberToObject(root, "aborts", (double)r->aborts);
  cJSON_AddNumberToObject(root, "postponements", (double)r->postponements);
  cJSON_AddNumberToObject(root, "sweeps", (double)r->sweeps);
  cJSON *t = cJSON_AddObjectToObject(root, "time_s");
  cJSON_AddNumberToObject(t, "load", rep->load_s);
  cJSON_AddNumberToObject(t, "transfer", r->transfer_s);
  cJSON_AddNumberToObject(t, "execute", r->execute_s);
  cJSON_AddNumberToObject(t, "total", rep->total_s);
  cJSON_AddNumberToObject(root, "throughput_tx_s", r->execute_s > 0 ? (double)r->committed / r->execute_s : 0);
  cJSON_AddBoolToObject(root, "invariant_ok", rep->invariant_ok);
  cJSON_AddStringToObject(root, "invariant", rep->invariant);
  if (rep->verified) {
    cJSON_AddBoolToObject(root, "verify_ok", rep->verify.ok);
    cJSON *v = cJSON_AddObjectToObject(root, "verify");
    cJSON_AddStringToObject(v, "message", rep->verify.message);
    cJSON_AddNumberToObject(v, "replayed", (double)rep->verify.replayed);
    cJSON_AddNumberToObject(v, "abandoned_checked", (double)rep->verify.checked_blocked);
    cJSON_AddNumberToObject(v, "first_transaction", (double)rep->verify.first_transaction);
    cJSON_AddNumberToObject(v, "first_word", (double)rep->verify.first_word);
    cJSON_AddNumberToObject(v, "replay_s", rep->verify.replay_s);
  }
  cJSON_AddStringToObject(root, "backend", backend_name(r->backend));
  cJSON_AddStringToObject(root, "device", r->device);
  if (r->fallback[0]) cJSON_AddStringToObject(root, "fallback", r->fallback);
  cJSON_AddNumberToObject(root, "gpu_bytes", (double)r->gpu_bytes);
  cJSON *eng = cJSON_AddObjectToObject(root, "engine");
  cJSON_AddStringToObject(eng, "backend_requested", backend_name(cfg->options.backend));
  cJSON_AddNumberToObject(eng, "threads", r->threads);
  cJSON_AddNumberToObject(eng, "lock_coverage", r->lock_coverage);
  cJSON_AddStringToObject(eng, "semantic", cfg->options.semantic == PRSTM_SEMANTIC_RETRY ? "retry" : "postpone");
  cJSON_AddNumberToObject(eng, "retry_limit", cfg->options.retry_limit);
  cJSON_AddItemToObject(root, "abandoned_sample", outcome_samples(e, b, PRSTM_ABANDONED));
  cJSON_AddItemToObject(root, "failed_sample", outcome_samples(e, b, PRSTM_FAILED));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

/* {"workload": ..., "words": N, "state": [w0, w1, ...]}, built by hand because
 * millions of numbers as cJSON nodes would cost far more memory. */
static char *final_state_json(const prstm_config *cfg, const prstm_engine *e, size_t *len) {
  uint64_t n = 0;
  const prstm_word *w = prstm_engine_state(e, &n);
  size_t cap = 128 + (size_t)n * 22;
  char *s = malloc(cap);
  if (!s) return NULL;
  size_t at = (size_t)snprintf(s, cap, "{\"workload\": \"%s\", \"words\": %llu, \"state\": [", cfg->workload->name,
                               (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++)
    at += (size_t)snprintf(s + at, cap - at, "%s%llu", i ? "," : "", (unsigned long long)w[i]);
  at += (size_t)snprintf(s + at, cap - at, "]}\n");
  *len = at;
  return s;
}

static void print_summary(const prstm_config *cfg, const prstm_results *r, const run_report *rep) {
  double thr = r->execute_s > 0 ? (double)r->committed / r->execute_s : 0;
  printf("prstm-run %s: %s (workload %s)\n", PRSTM_VERSION_STRING, cfg->path, cfg->workload->name);
  printf("  transactions       %llu\n", (unsigned long long)r->transactions);
  if (rep->rounds > 1) printf("  rounds             %u\n", rep->rounds);
  printf("  committed          %llu\n", (unsigned long long)r->committed);
  printf("  abandoned          %llu\n", (unsigned long long)r->abandoned);
  printf("  failed             %llu\n", (unsigned long long)r->failed);
  printf("  concurrent aborts  %llu\n", (unsigned long long)r->aborts);
  printf("  postponements      %llu\n", (unsigned long long)r->postponements);
  printf("  time               load %.3f s, transfer %.3f s, execute %.3f s, total %.3f s\n", rep->load_s,
         r->transfer_s, r->execute_s, rep->total_s);
  printf("  throughput         %.3f M committed tx/s of execution\n", thr / 1e6);
  printf("  invariant          %s: %s\n", rep->invariant_ok ? "ok" : "VIOLATED", rep->invariant);
  if (rep->verified)
    printf("  verify             %s: %s (replay %.3f s)\n", rep->verify.ok ? "ok" : "FAILED", rep->verify.message,
           rep->verify.replay_s);
  printf("  backend            %s: %s, lock_coverage %u, semantic %s\n", backend_name(r->backend), r->device,
         r->lock_coverage, cfg->options.semantic == PRSTM_SEMANTIC_RETRY ? "retry" : "postpone");
  if (r->backend == PRSTM_BACKEND_GPU)
    printf("  gpu memory         %.1f MiB (%.1f bytes per transaction in the table)\n", r->gpu_bytes / 1048576.0,
           r->transactions ? (double)r->gpu_bytes / (double)r->transactions : 0.0);
}

/* The progress bar: one line on stderr, redrawn in place with a carriage
 * return while the engine runs, and erased before anything else is printed.
 * Plain spaces erase it, not terminal escapes, so it works on any terminal. */
#define PROGRESS_DELAY_S 1.0 /* shorter runs show no bar at all */
#define PROGRESS_BAR_CELLS 20

typedef struct progress_bar {
  int enabled;    /* stderr is a terminal and --quiet was not given */
  double start;   /* when the first round began (transfer and execution) */
  unsigned round; /* the round being run, shown when there are several */
  size_t drawn;   /* characters of the line now on the terminal, 0 when none */
} progress_bar;

/* Writes n with a comma between each group of three digits. */
static void format_count(char *out, size_t outlen, uint64_t n) {
  char digits[32];
  int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
  size_t at = 0;
  for (int i = 0; i < len && at + 2 < outlen; i++) {
    if (i > 0 && (len - i) % 3 == 0) out[at++] = ',';
    out[at++] = digits[i];
  }
  out[at] = 0;
}

/* Columns of the terminal on stderr; 80 when it does not say. */
static size_t terminal_columns(void) {
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

static void progress_clear(progress_bar *bar) {
  if (!bar->drawn) return;
  fprintf(stderr, "\r%*s\r", (int)bar->drawn, "");
  fflush(stderr);
  bar->drawn = 0;
}

/* The engine's progress observer (prstm_engine_set_progress). */
static void progress_draw(const prstm_progress *p, void *user) {
  progress_bar *bar = user;
  if (p->finished || now_s() - bar->start <= PROGRESS_DELAY_S) return;
  uint64_t final = p->transactions - p->pending;
  double share = p->transactions ? (double)final / (double)p->transactions : 1.0;
  char committed[32], pending[32], round[32] = "";
  format_count(committed, sizeof committed, p->committed);
  format_count(pending, sizeof pending, p->pending);
  if (bar->round > 0) snprintf(round, sizeof round, "round %u ", bar->round + 1);
  /* The commit rate of this run so far, in a unit that keeps it readable. */
  double rate = p->elapsed_s > 0 ? (double)p->committed / p->elapsed_s : 0;
  const char *unit = rate >= 1e9 ? "G " : rate >= 1e6 ? "M " : rate >= 1e3 ? "k " : "";
  double scaled = rate >= 1e9 ? rate / 1e9 : rate >= 1e6 ? rate / 1e6 : rate >= 1e3 ? rate / 1e3 : rate;
  char counts[160];
  int counts_len = snprintf(counts, sizeof counts, " %3u%%  %s committed  %s pending  %.1f %stx/s",
                            (unsigned)(100.0 * share), committed, pending, scaled, unit);
  if (counts_len < 0) return;
  /* A line as wide as the terminal would wrap, and the carriage return
   * would then redraw only its last part: the bar gives up cells first (on
   * 80 columns, large counts leave it fewer than PROGRESS_BAR_CELLS), and
   * only a very narrow terminal cuts the counts. */
  size_t columns = terminal_columns();
  size_t fixed = strlen(round) + 2 + (size_t)counts_len;
  size_t cells = columns - 1 > fixed ? columns - 1 - fixed : 0;
  if (cells > PROGRESS_BAR_CELLS) cells = PROGRESS_BAR_CELLS;
  char line[256];
  size_t width = (size_t)snprintf(line, sizeof line, "%s", round);
  if (cells > 0) {
    size_t filled = (size_t)((double)cells * share);
    line[width++] = '[';
    for (size_t i = 0; i < cells; i++) line[width++] = i < filled ? '#' : ' ';
    line[width++] = ']';
  }
  width += (size_t)snprintf(line + width, sizeof line - width, "%s", counts);
  if (width > sizeof line - 1) width = sizeof line - 1;
  if (width > columns - 1) width = columns - 1;
  line[width] = 0;
  fprintf(stderr, "\r%s", line);
  if (bar->drawn > width) fprintf(stderr, "%*s", (int)(bar->drawn - width), "");
  fflush(stderr);
  if (width > bar->drawn) bar->drawn = width;
}

/* Runs the configured batch, then, for a multi-round workload, each round the
 * workload asks for until it asks for none. With verify, every round is
 * replayed before the next one replaces the engine's initial state; the first
 * failing round ends the run. Returns 0 or an exit status; *b is the last
 * round's batch. */
static int run_rounds(prstm_engine *e, const prstm_config *cfg, prstm_batch **b, prstm_results *total,
                      run_report *rep, int quiet, progress_bar *bar) {
  char err[1024] = "";
  int rc;
  memset(total, 0, sizeof *total);
  bar->start = now_s();
  for (unsigned round = 0;; round++) {
    prstm_results r;
    bar->round = round;
    rc = prstm_engine_run(e, *b, &r);
    progress_clear(bar);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", prstm_engine_error(e));
      return prstm_is_input_error(rc) ? EXIT_INPUT : EXIT_RUNTIME;
    }
    if (round == 0) {
      *total = r; /* the backend, device and thread count come from the first round */
      if (r.fallback[0] && !quiet)
        fprintf(stderr, "prstm-run: no usable GPU (%s); running on the CPU backend\n", r.fallback);
    } else {
      prstm_results_add(total, &r);
    }
    rep->rounds = round + 1;
    if (cfg->options.verify) {
      prstm_verify_report v;
      CLI_RANGE_PUSH("verify");
      rc = prstm_engine_verify(e, *b, &v);
      CLI_RANGE_POP();
      if (rc) {
        fprintf(stderr, "prstm-run: verification could not run: %s\n", prstm_engine_error(e));
        return EXIT_RUNTIME;
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
        if (round > 0) {
          snprintf(rep->verify.message, sizeof rep->verify.message, "round %u: %.480s", round, v.message);
        }
        return 0;
      }
    }
    if (!cfg->workload->next_round) return 0;
    prstm_batch *next = NULL;
    rc = prstm_batch_create(&next, cfg->workload);
    if (!rc) rc = cfg->workload->next_round(e, *b, round, next, err, sizeof err);
    if (rc) {
      fprintf(stderr, "prstm-run: round %u: %s\n", round + 1, err[0] ? err : prstm_strerror(rc));
      prstm_batch_destroy(next);
      return EXIT_RUNTIME;
    }
    if (prstm_batch_size(next) == 0) {
      prstm_batch_destroy(next);
      return 0;
    }
    prstm_batch_destroy(*b);
    *b = next;
  }
}

int main(int argc, char **argv) {
  cli_args a;
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;

  double t0 = now_s();
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
    return rc == PRSTM_ENOMEM ? EXIT_RUNTIME : EXIT_INPUT;
  }
  prstm_engine *e = NULL;
  prstm_batch *b = NULL;
  status = EXIT_INPUT;
  if (apply_overrides(&a, &cfg)) goto done;

  rc = prstm_engine_create(&e, cfg.workload, &cfg.options);
  if (!rc) rc = prstm_engine_init_state(e, &cfg.state);
  if (rc) {
    fprintf(stderr, "prstm-run: %s: %s\n", cfg.path, e ? prstm_engine_error(e) : prstm_strerror(rc));
    status = rc == PRSTM_ENOMEM ? EXIT_RUNTIME : EXIT_INPUT;
    goto done;
  }
  uint64_t nwords = 0;
  prstm_engine_state(e, &nwords);
  rc = prstm_batch_create(&b, cfg.workload);
  if (!rc) rc = prstm_config_load_batch(&cfg, nwords, b, err, sizeof err);
  if (rc) {
    fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
    status = rc == PRSTM_ENOMEM ? EXIT_RUNTIME : EXIT_INPUT;
    goto done;
  }
  run_report rep;
  memset(&rep, 0, sizeof rep);
  rep.load_s = now_s() - t0;
  CLI_RANGE_POP();
  load_range_open = 0;

  /* The bar belongs to a person watching a terminal: a pipe or a file gets
   * none, and --quiet means quiet. */
  progress_bar bar;
  memset(&bar, 0, sizeof bar);
  bar.enabled = !a.quiet && isatty(STDERR_FILENO);
  if (bar.enabled) prstm_engine_set_progress(e, progress_draw, &bar);

  prstm_results r;
  rc = run_rounds(e, &cfg, &b, &r, &rep, a.quiet, &bar);
  if (rc) {
    status = rc;
    goto done;
  }
  rc = cfg.workload->check_invariant(e, b, &rep.invariant_ok, rep.invariant, sizeof rep.invariant);
  if (rc) {
    fprintf(stderr, "prstm-run: invariant check failed to run: %s\n", prstm_strerror(rc));
    status = EXIT_RUNTIME;
    goto done;
  }
  rep.total_s = now_s() - t0;
  if (!a.quiet) print_summary(&cfg, &r, &rep);

  status = rep.invariant_ok ? EXIT_OK : EXIT_RUNTIME;
  if (!rep.invariant_ok) fprintf(stderr, "prstm-run: invariant violated: %s\n", rep.invariant);
  if (rep.verified && !rep.verify.ok) {
    fprintf(stderr, "prstm-run: verification failed: %s\n", rep.verify.message);
    status = EXIT_VERIFY;
  }
  if (cfg.results_path[0]) {
    char *text = results_json(&cfg, e, b, &r, &rep);
    rc = text ? prstm_write_file_atomic(cfg.results_path, text, strlen(text), err, sizeof err) : PRSTM_ENOMEM;
    free(text);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      if (status == EXIT_OK) status = EXIT_RUNTIME;
    } else if (!a.quiet) {
      printf("  results            %s\n", cfg.results_path);
    }
  }
  if (cfg.final_state_path[0]) {
    size_t len = 0;
    char *text = final_state_json(&cfg, e, &len);
    rc = text ? prstm_write_file_atomic(cfg.final_state_path, text, len, err, sizeof err) : PRSTM_ENOMEM;
    free(text);
    if (rc) {
      fprintf(stderr, "prstm-run: %s\n", err[0] ? err : prstm_strerror(rc));
      if (status == EXIT_OK) status = EXIT_RUNTIME;
    } else if (!a.quiet) {
      printf("  final state        %s\n", cfg.final_state_path);
    }
  }
done:
  if (load_range_open) CLI_RANGE_POP();
  prstm_batch_destroy(b);
  prstm_engine_destroy(e);
  prstm_config_free(&cfg);
  return status;
}
